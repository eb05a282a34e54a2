/* The VM's simple instructions: the cursor over a program, RAW, TRIM and IDLE.
   A section of vm.c, compiled in its one translation unit (vm.c says why). */

/* ---- instructions ---- */

/* Where a program is being checked or run: what validators and executors see. */
struct cursor {
  const uint8_t *p;
  uint32_t size, pc;
  uint32_t next;      /* execution: the instruction after this one */
  uint64_t capacity;  /* validation: the drive's sectors (0 = not checked) */
  uint32_t window;    /* validation: the platform's data window, bytes */
  int depth;          /* loops open */
  uint32_t loop_pc[FISRIG_VM_LOOP_DEPTH], loop_left[FISRIG_VM_LOOP_DEPTH];
  /* The one "until steady" loop open (struct fisrig_op_loop): its depth (0: none), its
     instruction, the passes it ran, and the tracked workload's IOPS of the last passes. */
  int steady_depth;
  uint32_t steady_loop_pc, steady_passes;
  int steady_found;   /* validation: the tracked WORKLOAD was met in the body */
  /* execution: the tracked WORKLOAD's last run in this pass (ran: it did) */
  int steady_ran;
  uint64_t steady_commands, steady_t0, steady_t1;
  double steady_iops[FISRIG_VM_STEADY_WINDOW_MAX];
  /* Validation: where the traces with entries of their own are, so that a trace that
     replays one (entries_at) is known to point at a checked instruction. */
  uint32_t traces, trace_pc[FISRIG_VM_TRACES_SHARED];
};

static void remember_trace(struct cursor *c, uint32_t pc) {
  if (c->traces < FISRIG_VM_TRACES_SHARED) c->trace_pc[c->traces++] = pc;
}

static int trace_checked(const struct cursor *c, uint32_t pc) {
  uint32_t i;
  for (i = 0; i < c->traces; ++i)
    if (c->trace_pc[i] == pc) return 1;
  return 0;
}

/* The loop instruction of the until-steady loop open at the cursor. */
static struct fisrig_op_loop steady_loop(const struct cursor *c) {
  struct fisrig_op_loop l;
  memcpy(&l, c->p + c->steady_loop_pc, sizeof l);
  return l;
}

/* The instruction at the cursor, copied out: a program's bytes need not be aligned. */
static const void *op_at(const struct cursor *c, void *op, uint32_t bytes) {
  memcpy(op, c->p + c->pc, bytes);
  return op;
}

static int expect_holds(const struct fisrig_expect *e, const struct fisrig_cpl_record *c) {
  if (e->result != 0xFF && e->result != c->result) return 0;
  if ((c->status & e->status_mask) != e->status_value) return 0;
  if ((c->error & e->error_mask) != e->error_value) return 0;
  return 1;
}

static enum fisrig_vm_status run_raw(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_raw raw;
  const struct fisrig_op_raw *op = op_at(c, &raw, sizeof raw);
  struct fisrig_cpl_record done;
  struct fisrig_cmd_desc d = op->desc;
  enum fisrig_vm_status s = drain(vm, NULL);
  uint8_t kind = d.protocol == FISRIG_PROTO_POWER ? FISRIG_RECORD_POWER
                 : d.protocol == FISRIG_PROTO_LINK ? FISRIG_RECORD_LINK
                                                   : FISRIG_RECORD_COMMAND;
  if (s != FISRIG_VM_DONE) return s;
  if (d.protocol == FISRIG_PROTO_POWER && d.command == FISRIG_POWER_SAMPLE) {
    /* The phase the samples start in, at or before their first tick. */
    vm->sampling = d.count == 1;
    if (vm->sampling) remember_mark(vm);
  }
  submit(vm, &d, kind, c->p + c->pc + sizeof raw, op->data_bytes);
  s = drain(vm, &done);
  if (s != FISRIG_VM_DONE) return s;
  if (!expect_holds(&op->expect, &done)) {
    vm->error_offset = c->pc;
    vm->error_text = "expectation not met";
    vm->last_failed = done;
    return FISRIG_VM_EXPECT_FAILED;
  }
  return FISRIG_VM_DONE;
}

/* One DSM range block: [lba, lba + n) as entries of at most 65535 sectors. */
static FISRIG_VM_WARM uint32_t dsm_block(uint8_t *block, uint64_t *lba, uint64_t end) {
  uint32_t i;
  memset(block, 0, FISRIG_VM_DSM_BYTES);
  for (i = 0; i < DSM_ENTRIES_PER_BLOCK && *lba < end; ++i) {
    uint64_t n = end - *lba < DSM_MAX_RANGE ? end - *lba : DSM_MAX_RANGE;
    uint64_t e = *lba | (n << 48);
    int b;
    for (b = 0; b < 8; ++b) block[i * 8 + b] = (uint8_t)(e >> (8 * b));
    *lba += n;
  }
  return i;
}

static void trim_desc(struct fisrig_cmd_desc *d, int queued) {
  memset(d, 0, sizeof *d);
  d->device = 0x40;
  if (queued) {
    d->protocol = FISRIG_PROTO_FPDMA_OUT;
    d->command = FISRIG_ATA_SEND_FPDMA_QUEUED;
    d->features = 1; /* one 512-byte block of ranges */
    d->aux = 1;      /* DSM subcommand (COUNT 12:8 = 0) with TRIM */
  } else {
    d->protocol = FISRIG_PROTO_DMA_OUT;
    d->command = FISRIG_ATA_DATA_SET_MANAGEMENT;
    d->features = 1; /* TRIM */
    d->count = 1;
  }
}

static FISRIG_VM_WARM enum fisrig_vm_status run_trim(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_trim trim;
  const struct fisrig_op_trim *op = op_at(c, &trim, sizeof trim);
  uint64_t lba = op->lba_start, end = op->lba_start + op->sectors;
  uint8_t block[FISRIG_VM_DSM_BYTES];
  enum fisrig_vm_status s = drain(vm, NULL);
  if (s != FISRIG_VM_DONE) return s;
  while (lba < end) {
    struct fisrig_cmd_desc d;
    uint64_t first = lba;
    trim_desc(&d, op->queued);
    dsm_block(block, &lba, end);
    put_lba(d.lba, first); /* not used by the drive; labels the record */
    submit(vm, &d, FISRIG_RECORD_COMMAND, block, sizeof block);
    s = drain(vm, NULL);
    if (s != FISRIG_VM_DONE) return s;
    if (vm->stop_requested) return FISRIG_VM_STOPPED;
  }
  return FISRIG_VM_DONE;
}

static enum fisrig_vm_status run_idle(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_idle idle;
  const struct fisrig_op_idle *op = op_at(c, &idle, sizeof idle);
  enum fisrig_vm_status s = drain(vm, NULL);
  uint64_t until;
  if (s != FISRIG_VM_DONE) return s;
  until = vm->ops.now(vm->ops.ctx) + op->ticks;
  /* Modulo 2^64, as every time the VM compares: an idle after a long one still ends. */
  while ((int64_t)(until - vm->ops.now(vm->ops.ctx)) > 0) {
    if (vm->stop_requested) return FISRIG_VM_STOPPED;
    /* The engine's own records (the current sampler's every 120 us, a link's fall) come
       while nothing is outstanding: taken as they come, so that a long idle does not fill
       the completion ring and lose samples. */
    if (reap(vm, NULL) < 0) return FISRIG_VM_RECORDS_LOST;
    vm->ops.wait(vm->ops.ctx, until);
  }
  if (reap(vm, NULL) < 0) return FISRIG_VM_RECORDS_LOST;
  return FISRIG_VM_DONE;
}
