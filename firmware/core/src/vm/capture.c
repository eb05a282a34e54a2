/* The VM's arming of the analyzer's capture (struct fisrig_op_capture, capture.h). A section of
   vm.c, compiled in its one translation unit (vm.c says why); linked after all the code and
   data the rig's CPU times were fitted to (FISRIG_VM_LATE). */

static const char capture_op_why[] FISRIG_VM_LATE_RODATA = "CAPTURE: an unknown operation or trigger, 0 windows, or too many payload dwords";
static const char capture_refused_why[] FISRIG_VM_LATE_RODATA = "the engine refused the capture (it has none)";

static FISRIG_VM_LATE const char *check_capture(struct cursor *c) {
  struct fisrig_op_capture k;
  op_at(c, &k, sizeof k);
  if (k.command == FISRIG_CAPTURE_STOP) return NULL;
  if (k.command != FISRIG_CAPTURE_ARM || k.trigger > FISRIG_TRIGGER_ERROR || !k.windows ||
      k.payload_dwords > FISRIG_CAPTURE_MAX_PAYLOAD_DWORDS) return capture_op_why;
  return NULL;
}

static FISRIG_VM_LATE enum fisrig_vm_status run_capture(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_capture capture;
  const struct fisrig_op_capture *op = op_at(c, &capture, sizeof capture);
  struct fisrig_cmd_desc d;
  struct fisrig_cpl_record done;
  enum fisrig_vm_status s = drain(vm, NULL);  /* armed with nothing in flight */
  if (s != FISRIG_VM_DONE) return s;
  memset(&d, 0, sizeof d);
  d.protocol = FISRIG_PROTO_CAPTURE;
  d.command = op->command;
  d.features = op->trigger;
  d.count = op->value;
  d.data_word = op->before_ticks;
  d.timeout_ticks = op->after_ticks;
  d.lba[0] = (uint8_t)op->windows;
  d.lba[1] = (uint8_t)(op->windows >> 8);
  d.lba[2] = (uint8_t)op->payload_dwords;
  d.lba[3] = (uint8_t)(op->payload_dwords >> 8);
  submit(vm, &d, FISRIG_RECORD_CAPTURE, NULL, 0);
  s = drain(vm, &done);
  if (s != FISRIG_VM_DONE) return s;
  if (done.result != FISRIG_RESULT_OK) {
    vm->error_offset = c->pc;
    vm->error_text = capture_refused_why;
    vm->last_failed = done;
    return FISRIG_VM_EXPECT_FAILED;
  }
  return FISRIG_VM_DONE;
}
