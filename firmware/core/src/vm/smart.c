/* The VM's SMART reading (struct fisrig_op_smart): SMART READ DATA into the data window, a
   record for each attribute asked. A section of vm.c, compiled in its one translation unit
   (vm.c says why); linked after all the code and data the rig's CPU times were fitted to
   (FISRIG_VM_LATE). */

/* ---- a SMART reading (struct fisrig_op_smart) ---- */

static const char smart_count_why[] FISRIG_VM_LATE_RODATA = "a SMART reading asks for 1..8 attributes";
static const char smart_id_why[] FISRIG_VM_LATE_RODATA = "SMART attribute id 0 is an empty table entry";

static FISRIG_VM_LATE const char *check_smart(struct cursor *c) {
  struct fisrig_op_smart m;
  uint32_t i;
  op_at(c, &m, sizeof m);
  if (m.count < 1 || m.count > FISRIG_SMART_MAX_IDS) return smart_count_why;
  for (i = 0; i < m.count; ++i)
    if (!m.ids[i]) return smart_id_why;
  return NULL;
}

/* The raw value (48 bits) of attribute `id` in a SMART READ DATA page; 0 and *found 0 when
   the table has none. */
static FISRIG_VM_LATE uint64_t smart_raw(const uint8_t *page, uint8_t id, int *found) {
  uint32_t i, b;
  for (i = 0; i < FISRIG_SMART_MAX_ATTRIBUTES; ++i) {
    const uint8_t *e = page + FISRIG_SMART_TABLE_OFFSET + i * FISRIG_SMART_ENTRY_BYTES;
    uint64_t raw = 0;
    if (e[0] != id) continue;
    for (b = 0; b < 6; ++b) raw |= (uint64_t)e[FISRIG_SMART_RAW_OFFSET + b] << (8 * b);
    *found = 1;
    return raw;
  }
  *found = 0;
  return 0;
}

static FISRIG_VM_LATE enum fisrig_vm_status run_smart(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_smart smart;
  const struct fisrig_op_smart *op = op_at(c, &smart, sizeof smart);
  struct fisrig_cmd_desc d;
  struct fisrig_cpl_record done;
  uint32_t i;
  enum fisrig_vm_status s;
  s = drain(vm, NULL);
  if (s != FISRIG_VM_DONE) return s;
  memset(&d, 0, sizeof d);
  d.protocol = FISRIG_PROTO_PIO_IN;
  d.command = FISRIG_ATA_SMART;
  d.features = FISRIG_SMART_READ_DATA;
  d.count = 1;
  put_lba(d.lba, (uint64_t)FISRIG_SMART_KEY << 8);
  d.data_source = FISRIG_DATA_RAM;
  d.timeout_ticks = op->timeout_ticks;
  memset(vm->ops.data_window, 0, 512);
  submit(vm, &d, FISRIG_RECORD_COMMAND, NULL, 0);
  s = drain(vm, &done);
  if (s != FISRIG_VM_DONE) return s;
  if (done.result == FISRIG_RESULT_OK && vm->ops.data_in) vm->ops.data_in(vm->ops.ctx);
  for (i = 0; i < op->count; ++i) {
    struct fisrig_run_record r;
    int found = 0;
    memset(&r, 0, sizeof r);
    r.cpl = done;
    r.marker = vm->marker;
    r.kind = FISRIG_RECORD_SMART;
    r.command = FISRIG_ATA_SMART;
    r.protocol = FISRIG_PROTO_PIO_IN;
    r.lbas = op->ids[i];
    if (done.result == FISRIG_RESULT_OK) r.lba = smart_raw(vm->ops.data_window, op->ids[i], &found);
    r.detail = (uint8_t)!found;
    if (emit(vm, &r)) return FISRIG_VM_RECORDS_LOST;
  }
  return FISRIG_VM_DONE;
}
