/* The VM's program structure: each instruction's checks, loops and their steady-state rule, validation and execution.
   A section of vm.c, compiled in its one translation unit (vm.c says why). */

/* ---- program structure ---- */

/* Bytes from an instruction to the next: a trace's own entries follow its head's size. */
static uint64_t span_of(const uint8_t *p, uint32_t pc, const struct fisrig_op_head *head) {
  if (head->opcode == FISRIG_OP_TRACE && head->size >= sizeof(struct fisrig_op_trace)) {
    struct fisrig_op_trace t;
    memcpy(&t, p + pc, sizeof t);
    if (t.entries_at) return head->size;
    return (uint64_t)head->size + (uint64_t)t.entries * sizeof(struct fisrig_trace_entry);
  }
  return head->size;
}

static FISRIG_VM_NOINLINE const char *check_trace(struct cursor *c) {
  struct fisrig_op_trace t;
  uint32_t i;
  op_at(c, &t, sizeof t);
  if (t.queue_depth < 1 || t.queue_depth > FISRIG_ENGINE_SLOTS) return "queue depth must be 1..32";
  if (!t.ncq && t.queue_depth != 1) return "DMA (non-NCQ) traces run at queue depth 1";
  if (t.trims > FISRIG_TRIMS_SKIP) return "unknown trace TRIM mode";
  if (t.entries_at) {
    /* Another trace's entries: it must come before this one, be a trace with entries of
       its own, as many as this one says, and itself be checked (the walk met it). */
    struct fisrig_op_trace o;
    if (t.entries_at >= c->pc || c->pc - t.entries_at < sizeof o) return "trace entries_at is not an earlier trace";
    memcpy(&o, c->p + t.entries_at, sizeof o);
    if (o.head.opcode != FISRIG_OP_TRACE || o.entries_at || o.head.size != sizeof o || o.entries != t.entries ||
        (uint64_t)t.entries_at + sizeof o + (uint64_t)o.entries * sizeof(struct fisrig_trace_entry) > c->pc ||
        !trace_checked(c, t.entries_at))
      return "trace entries_at is not an earlier trace with that many entries";
    return NULL;
  }
  if (t.head.size != sizeof t) return "a trace with entries of its own is its head and them";
  remember_trace(c, c->pc);
  for (i = 0; i < t.entries; ++i) {
    struct fisrig_trace_entry e;
    memcpy(&e, c->p + c->pc + t.head.size + (uint64_t)i * sizeof e, sizeof e);
    if (e.op > FISRIG_TRACE_FLUSH) return "unknown trace operation";
    if (e.op == FISRIG_TRACE_FLUSH) continue;
    if (e.sectors < 1 || e.sectors > 65536) return "trace entry with 0 or over 65536 sectors";
    if (c->capacity && e.lba + e.sectors > c->capacity) return "trace entry past the end of the drive";
  }
  return NULL;
}

static const char trace_data_why[] FISRIG_VM_LATE_RODATA = "trace writes need a generated data source";

/* check_trace, and a generated source for the trace's writes: from RAM a write's data would be
   read at its sequence number (regression trace-writes-from-ram). Linked late (vm.c), so
   check_trace's code stays where the rig's CPU times were fitted. */
static FISRIG_VM_LATE const char *check_trace_op(struct cursor *c) {
  struct fisrig_op_trace t;
  const char *why = check_trace(c);
  if (why) return why;
  op_at(c, &t, sizeof t);
  if (t.data_source > FISRIG_DATA_LFSR || t.data_source == FISRIG_DATA_RAM) return trace_data_why;
  return NULL;
}

static const char *check_workload(struct cursor *c) {
  struct fisrig_op_workload workload;
  const struct fisrig_op_workload *w = op_at(c, &workload, sizeof workload);
  uint32_t i, weights = 0;
#if FISRIG_VM_NVME_PATH
  if (w->queues) return "a SATA workload has no queues";
#endif
  if (w->queue_depth < 1 || w->queue_depth > FISRIG_ENGINE_SLOTS) return "queue depth must be 1..32";
  if (!w->ncq && w->queue_depth != 1) return "DMA (non-NCQ) workloads run at queue depth 1";
/* What the workload draws, and when it stops: the same statements in the NVMe workload's
   check (vm/nvme.c), and here as they always were, so that the rig's SATA firmware is the
   same code to the byte (vm.h says why: even validation's cycles move every stamp). */
#include "workload_checks.inc"
}


static const char *check_raw(struct cursor *c) {
  struct fisrig_op_raw r;
  op_at(c, &r, sizeof r);
  if (r.data_bytes > FISRIG_VM_DSM_BYTES || sizeof r + r.data_bytes > r.head.size)
    return "RAW data-out larger than its instruction or 512 bytes";
  /* The VM stages data-out in the descriptor's own 512-byte block of the window; a COUNT
     that moves more would send the next blocks (or, past the window, the engine refuses). */
  if (r.data_bytes && fisrig_desc_ram_bytes(&r.desc) > FISRIG_VM_DSM_BYTES)
    return "RAW data-out moves more than the 512-byte block the VM stages";
  if (r.desc.protocol > FISRIG_PROTO_LINK) return "unknown protocol";
  /* Data from or to RAM that the VM does not stage itself must lie in the data window:
     the engine would DMA wherever data_word points (on the SoC, over the firmware). */
  if (r.desc.data_source == FISRIG_DATA_RAM && !r.data_bytes &&
      (uint64_t)r.desc.data_word + fisrig_desc_ram_bytes(&r.desc) > c->window)
    return "RAW data in RAM outside the data window";
  return NULL;
}

static const char *check_trim(struct cursor *c) {
  struct fisrig_op_trim t;
  op_at(c, &t, sizeof t);
  if (c->capacity && t.lba_start + t.sectors > c->capacity) return "TRIM range past the end of the drive";
  return NULL;
}

static const char *check_verify(struct cursor *c) {
  struct fisrig_op_verify v;
  op_at(c, &v, sizeof v);
  if (v.sectors_per_read < 1 || v.sectors_per_read > FISRIG_VERIFY_MAX_SECTORS) return "verify reads 1..8 sectors at a time";
  if (!v.sectors) return "empty verify span";
  if (c->capacity && v.lba_start + v.sectors > c->capacity) return "verify span past the end of the drive";
  return NULL;
}

static const char *check_policy(struct cursor *c) {
  struct fisrig_op_policy p;
  op_at(c, &p, sizeof p);
  if (p.on_error > FISRIG_ON_ERROR_RETRY) return "unknown error policy";
  if (p.retries > FISRIG_POLICY_MAX_RETRIES) return "more than 15 retries";
  return NULL;
}

static enum fisrig_vm_status run_policy(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_policy p;
  op_at(c, &p, sizeof p);
  vm->on_error = p.on_error;
  vm->retries = p.retries;
  vm->timeout_ticks = p.timeout_ticks;
  vm->link_timeout_ticks = p.link_timeout_ticks;
  return FISRIG_VM_DONE;
}

static const char *check_idle(struct cursor *c) {
  struct fisrig_op_idle idle;
  op_at(c, &idle, sizeof idle);
  return idle.ticks > FISRIG_IDLE_TICKS_MAX ? "an idle longer than the VM can time" : NULL;
}

static const char *check_loop(struct cursor *c) {
  struct fisrig_op_loop l;
  op_at(c, &l, sizeof l);
  if (++c->depth > (int)FISRIG_VM_LOOP_DEPTH) return "loops nested too deep";
  if (!l.steady_pc) return NULL;
  if (c->steady_depth) return "an until-steady loop inside another";
  if (l.steady_window < 2 || l.steady_window > FISRIG_VM_STEADY_WINDOW_MAX) return "steady window must be 2..8 passes";
  if (l.count < l.steady_window) return "an until-steady loop runs at least its window of passes";
  if (l.steady_pc <= c->pc) return "the tracked workload is not in the loop's body";
  c->steady_depth = c->depth;
  c->steady_loop_pc = c->pc;
  c->steady_found = 0;
  return NULL;
}

static const char *check_end_loop(struct cursor *c) {
  if (c->depth == c->steady_depth) {
    c->steady_depth = 0;
    if (!c->steady_found) return "the tracked workload is not in the loop's body";
  }
  return --c->depth < 0 ? "END_LOOP without LOOP" : NULL;
}

static FISRIG_VM_PHASE enum fisrig_vm_status run_end(struct fisrig_vm *vm, struct cursor *c) {
  c->next = c->size; /* nothing after END runs */
  return drain(vm, NULL);
}

static FISRIG_VM_PHASE enum fisrig_vm_status run_drain(struct fisrig_vm *vm, struct cursor *c) {
  (void)c;
  return drain(vm, NULL);
}

static FISRIG_VM_PHASE enum fisrig_vm_status run_mark(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_mark m;
  op_at(c, &m, sizeof m);
  vm->marker = m.marker;
  if (vm->sampling) remember_mark(vm);
  return FISRIG_VM_DONE;
}

static enum fisrig_vm_status run_loop(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_loop l;
  (void)vm;
  op_at(c, &l, sizeof l);
  if (!l.count) { /* skip the body */
    int d = 1;
    while (d && c->next < c->size) {
      struct fisrig_op_head h;
      memcpy(&h, c->p + c->next, sizeof h);
      d += h.opcode == FISRIG_OP_LOOP ? 1 : h.opcode == FISRIG_OP_END_LOOP ? -1 : 0;
      c->next += (uint32_t)span_of(c->p, c->next, &h);
    }
    return FISRIG_VM_DONE;
  }
  c->loop_pc[c->depth] = c->next;
  c->loop_left[c->depth++] = l.count;
  if (l.steady_pc) {
    c->steady_depth = c->depth;
    c->steady_loop_pc = c->pc;
    c->steady_passes = 0;
    c->steady_ran = 0;
  }
  return FISRIG_VM_DONE;
}

/* SNIA PTS's steady state over the last `n` figures y (oldest first): their range within
   range_pct of their mean, and the least-squares line's excursion across them within
   slope_pct of it. */
static int holds_steady(const double *y, uint32_t n, uint32_t range_pct, uint32_t slope_pct) {
  double mean = 0, lo = y[0], hi = y[0], sxy = 0, sxx = 0, xbar = (n - 1) / 2.0;
  uint32_t i;
  for (i = 0; i < n; ++i) {
    mean += y[i] / n;
    lo = y[i] < lo ? y[i] : lo;
    hi = y[i] > hi ? y[i] : hi;
  }
  for (i = 0; i < n; ++i) {
    sxy += (i - xbar) * (y[i] - mean);
    sxx += (i - xbar) * (i - xbar);
  }
  return mean > 0 && (hi - lo) * 100.0 <= range_pct * mean &&
         fabs(sxy / sxx) * (n - 1) * 100.0 <= slope_pct * mean;
}

/* The end of an until-steady loop's pass: its figure in a LOOP_PASS record, and whether the
   window it closes holds steady (then the loop ends). */
static enum fisrig_vm_status steady_pass(struct fisrig_vm *vm, struct cursor *c, int *steady) {
  struct fisrig_op_loop l = steady_loop(c);
  struct fisrig_run_record r;
  uint32_t n = l.steady_window, i;
  double iops = 0;
  if (c->steady_ran && c->steady_t1 > c->steady_t0)
    iops = (double)c->steady_commands * FISRIG_TICK_HZ / (double)(c->steady_t1 - c->steady_t0);
  for (i = 0; i + 1 < n; ++i) c->steady_iops[i] = c->steady_iops[i + 1];
  c->steady_iops[n - 1] = iops;
  c->steady_passes++;
  *steady = c->steady_passes >= n && holds_steady(c->steady_iops, n, l.steady_range_pct, l.steady_slope_pct);
  memset(&r, 0, sizeof r);
  r.kind = FISRIG_RECORD_LOOP_PASS;
  r.marker = vm->marker;
  r.cpl.status = (uint8_t)*steady; /* not an ATA status: a pass record has none */
  r.cpl.ts_submit = c->steady_ran ? c->steady_t0 : 0;
  r.cpl.ts_status = c->steady_ran ? c->steady_t1 : 0;
  r.lba = c->steady_ran ? c->steady_commands : 0;
  r.lbas = c->steady_passes;
  c->steady_ran = 0;
  return emit(vm, &r) ? FISRIG_VM_RECORDS_LOST : FISRIG_VM_DONE;
}

static enum fisrig_vm_status run_end_loop(struct fisrig_vm *vm, struct cursor *c) {
  int steady = 0;
  if (c->depth == c->steady_depth) {
    enum fisrig_vm_status s = steady_pass(vm, c, &steady);
    if (s != FISRIG_VM_DONE) return s;
  }
  if (!steady && --c->loop_left[c->depth - 1]) {
    c->next = c->loop_pc[c->depth - 1];
    return FISRIG_VM_DONE;
  }
  if (c->depth == c->steady_depth) c->steady_depth = 0;
  c->depth--;
  return FISRIG_VM_DONE;
}

/* What each opcode is: its smallest size, what to check beyond that (NULL: nothing; else
   NULL or why the instruction is wrong), and how it runs. A new instruction is one entry. */
struct op_desc {
  uint32_t min_size;
  const char *(*check)(struct cursor *c);
  enum fisrig_vm_status (*run)(struct fisrig_vm *vm, struct cursor *c);
};

static const struct op_desc op_table[] = {
  [FISRIG_OP_END] = {sizeof(struct fisrig_op_head), NULL, run_end},
  [FISRIG_OP_MARK] = {sizeof(struct fisrig_op_mark), NULL, run_mark},
  [FISRIG_OP_LOOP] = {sizeof(struct fisrig_op_loop), check_loop, run_loop},
  [FISRIG_OP_END_LOOP] = {sizeof(struct fisrig_op_head), check_end_loop, run_end_loop},
  [FISRIG_OP_IDLE] = {sizeof(struct fisrig_op_idle), check_idle, run_idle},
  [FISRIG_OP_RAW] = {sizeof(struct fisrig_op_raw), check_raw, run_raw},
  [FISRIG_OP_WORKLOAD] = {sizeof(struct fisrig_op_workload), check_workload, run_workload},
  [FISRIG_OP_TRIM] = {sizeof(struct fisrig_op_trim), check_trim, run_trim},
  [FISRIG_OP_DRAIN] = {sizeof(struct fisrig_op_head), NULL, run_drain},
#if FISRIG_VM_NVME_PATH /* on whichever engine the VM has (vm->nvme) */
  [FISRIG_OP_TRACE] = {sizeof(struct fisrig_op_trace), check_trace_op, run_any_trace},
  [FISRIG_OP_VERIFY] = {sizeof(struct fisrig_op_verify), check_verify, run_any_verify},
#else
  [FISRIG_OP_TRACE] = {sizeof(struct fisrig_op_trace), check_trace_op, run_trace},
  [FISRIG_OP_VERIFY] = {sizeof(struct fisrig_op_verify), check_verify, run_verify},
#endif
  [FISRIG_OP_POLICY] = {sizeof(struct fisrig_op_policy), check_policy, run_policy},
  [FISRIG_OP_SMART] = {sizeof(struct fisrig_op_smart), check_smart, run_smart},
  [FISRIG_OP_CAPTURE] = {sizeof(struct fisrig_op_capture), check_capture, run_capture},
#if FISRIG_VM_NVME_PATH
  [FISRIG_OP_NVME_RAW] = {sizeof(struct fisrig_op_nvme_raw), check_nvme_raw, run_nvme_raw},
  [FISRIG_OP_NVME_WORKLOAD] = {sizeof(struct fisrig_op_workload), check_nvme_workload, run_nvme_workload},
#endif
};

/* The opcode's entry, or NULL for an instruction this VM does not know. */
static const struct op_desc *op_of(uint8_t opcode) {
  if (opcode >= sizeof op_table / sizeof op_table[0] || !op_table[opcode].min_size) return NULL;
  return &op_table[opcode];
}

enum fisrig_vm_status fisrig_vm_validate(struct fisrig_vm *vm, const uint8_t *p, uint32_t size) {
  struct fisrig_program_header h;
  struct cursor c = {.p = p, .size = size, .pc = sizeof h};
  if (size < sizeof h) return bad(vm, 0, "shorter than a program header");
  memcpy(&h, p, sizeof h);
  if (h.magic != FISRIG_PROGRAM_MAGIC) return bad(vm, 0, "not a fisrig program");
  if (h.version != FISRIG_PROGRAM_VERSION) return bad(vm, 0, "program version not supported");
  if (h.size != size) return bad(vm, 0, "program size does not match");
  if (vm->ops.sq_entries < FISRIG_VM_INFLIGHT || (vm->ops.sq_entries & (vm->ops.sq_entries - 1)))
    return bad(vm, 0, "submission ring too small for the VM");
  if (vm->ops.data_window_bytes < FISRIG_VM_INFLIGHT * FISRIG_VM_DSM_BYTES)
    return bad(vm, 0, "data window too small for the VM");
  c.window = vm->ops.data_window_bytes;
  c.capacity = h.drive_sectors;
  while (c.pc < size) {
    struct fisrig_op_head head;
    const struct op_desc *op;
    const char *why;
    if (size - c.pc < sizeof head) return bad(vm, c.pc, "truncated instruction");
    memcpy(&head, p + c.pc, sizeof head);
    op = op_of(head.opcode);
    if (!op) return bad(vm, c.pc, "unknown instruction");
    if (head.size < op->min_size || head.size % 4 || span_of(p, c.pc, &head) > size - c.pc)
      return bad(vm, c.pc, "instruction size wrong");
    why = op->check ? op->check(&c) : NULL;
    if (why) return bad(vm, c.pc, why);
    if (head.opcode == FISRIG_OP_END) break;
    c.pc += (uint32_t)span_of(p, c.pc, &head);
  }
  if (c.depth) return bad(vm, c.pc, "LOOP without END_LOOP");
  vm->drive_sectors = h.drive_sectors;
  return FISRIG_VM_DONE;
}

static FISRIG_VM_PHASE enum fisrig_vm_status execute(struct fisrig_vm *vm, const uint8_t *p, uint32_t size) {
  struct cursor c = {.p = p, .size = size, .pc = sizeof(struct fisrig_program_header)};
  for (; c.pc < size; c.pc = c.next) {
    struct fisrig_op_head head;
    const struct op_desc *op;
    enum fisrig_vm_status s;
    memcpy(&head, p + c.pc, sizeof head);
    c.next = c.pc + (uint32_t)span_of(p, c.pc, &head);
    if (vm->stop_requested) return FISRIG_VM_STOPPED;
    op = op_of(head.opcode);
    if (!op) return bad(vm, c.pc, "unknown instruction");
    s = op->run(vm, &c);
    if (s != FISRIG_VM_DONE) return s;
  }
  return drain(vm, NULL);
}

enum fisrig_vm_status fisrig_vm_run(struct fisrig_vm *vm, const uint8_t *p, uint32_t size) {
  struct fisrig_run_record end;
  enum fisrig_vm_status s = fisrig_vm_validate(vm, p, size);
  vm->on_error = FISRIG_ON_ERROR_FAIL; /* until a POLICY says otherwise */
  vm->retries = 0;
  vm->timeout_ticks = vm->link_timeout_ticks = 0;
  vm->sampling = 0; /* compiled programs stop what they sample before they end */
  vm->marks = 0;
  if (s == FISRIG_VM_DONE) s = execute(vm, p, size);
  /* Whatever happened, wait for what is outstanding so no record taken is lost. */
  if (s != FISRIG_VM_ENGINE_STUCK && s != FISRIG_VM_RECORDS_LOST) drain(vm, NULL);
  memset(&end, 0, sizeof end);
  end.kind = FISRIG_RECORD_END;
  end.marker = vm->marker;
  end.cpl.result = (uint8_t)s;
  end.cpl.ts_submit = vm->ops.now(vm->ops.ctx);
  end.cpl.ts_status = end.cpl.ts_submit; /* an instant: no status time left latency negative */
  end.lba = vm->error_offset;
  if (s != FISRIG_VM_RECORDS_LOST) emit(vm, &end);
  return s;
}
