/* The VM's generators: a workload's draws (sizes, LBAs, zipf) and its commands, and a trace replayed.
   A section of vm.c, compiled in its one translation unit (vm.c says why). */

/* A rank in [0, n) with P(rank k) ~ 1 / (k+1)^theta: the continuous power law, inverted. */
static FISRIG_VM_COLD uint64_t zipf_rank(uint64_t *rng, uint64_t n, double theta) {
  double u = (double)(rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
  double x;
  if (theta > 0.999 && theta < 1.001) x = pow((double)n, u);
  else x = pow(((pow((double)n, 1.0 - theta) - 1.0) * u + 1.0), 1.0 / (1.0 - theta));
  if (x < 1.0) x = 1.0;
  return (uint64_t)x - 1 < n ? (uint64_t)x - 1 : n - 1;
}

/* A workload's divisors, fixed for its run (divide.h: a 64-bit division costs the rig's
   CPU hundreds of cycles). */
struct workload_divisors {
  struct fisrig_divisor weight_total, hundred, blocks[8]; /* blocks of each transfer size */
};

static FISRIG_VM_PHASE void workload_divisors_init(struct workload_divisors *dv, const struct fisrig_op_workload *w) {
  uint32_t total = 0, i;
  for (i = 0; i < w->sizes; ++i) {
    total += w->size_weight[i];
    dv->blocks[i] = fisrig_divisor_of(w->lba_span / w->size_sectors[i]);
  }
  dv->weight_total = fisrig_divisor_of(total);
  dv->hundred = fisrig_divisor_of(100u);
}

/* The next draw of a generator's sequence, modulo d: one copy of the arithmetic for every
   draw a command takes (inlined at each, the loop outgrew the rig CPU's instruction cache). */
static FISRIG_VM_HOT FISRIG_VM_NOINLINE uint64_t draw(uint64_t *rng, const struct fisrig_divisor *d) {
  return fisrig_modulo(rng_next(rng), d);
}

/* The index of a transfer size, drawn by weight. */
static FISRIG_VM_HOT uint32_t pick_size(const struct fisrig_op_workload *w, const struct workload_divisors *dv,
                          uint64_t *rng) {
  uint32_t i, r;
  if (w->sizes == 1) { /* the draw says nothing: the sequence moves on without its division */
    rng_skip(rng);
    return 0;
  }
  r = (uint32_t)draw(rng, &dv->weight_total);
  for (i = 0; i < w->sizes; ++i) {
    if (r < w->size_weight[i]) return i;
    r -= w->size_weight[i];
  }
  return 0;
}

/* How generated commands are issued: queued or not, what writes carry, how TRIMs go. */
struct issue_mode {
  uint8_t ncq, fua, data_source, compress_pct, trims;
};

/* A generator's TRIM of [lba, lba + sectors): one DSM, its range list staged. */
static FISRIG_VM_COLD void issue_trim(struct fisrig_vm *vm, const struct issue_mode *m, uint64_t lba,
                                      uint32_t sectors) {
  struct fisrig_cmd_desc d;
  uint8_t block[FISRIG_VM_DSM_BYTES];
  uint64_t at = lba;
  /* A DSM among NCQ commands: the engine holds it until every slot is free and the
     commands after it until it ends (docs/model-target.md), so no drain is needed. */
  trim_desc(&d, m->ncq && m->trims == FISRIG_TRIMS_AS_QUEUE);
  d.timeout_ticks = vm->timeout_ticks;
  dsm_block(block, &at, lba + sectors);
  put_lba(d.lba, lba);
  submit(vm, &d, FISRIG_RECORD_COMMAND, block, sizeof block);
}

/* A generator's FLUSH: not queued, so the queue empties first. */
static FISRIG_VM_COLD enum fisrig_vm_status issue_flush(struct fisrig_vm *vm) {
  struct fisrig_cmd_desc d;
  if (vm->outstanding) {
    enum fisrig_vm_status s = drain(vm, NULL);
    if (s != FISRIG_VM_DONE) return s;
  }
  memset(&d, 0, sizeof d);
  d.device = 0x40;
  d.timeout_ticks = vm->timeout_ticks;
  d.protocol = FISRIG_PROTO_NON_DATA;
  d.command = FISRIG_ATA_FLUSH_CACHE_EXT;
  submit(vm, &d, FISRIG_RECORD_COMMAND, NULL, 0);
  return FISRIG_VM_DONE;
}

/* Issues one read, write, TRIM or FLUSH; returns the bytes of data it moves. */
static FISRIG_VM_HOT uint64_t issue(struct fisrig_vm *vm, const struct issue_mode *m, uint8_t op, uint64_t lba,
                      uint32_t sectors, enum fisrig_vm_status *status) {
  struct fisrig_vm_inflight *f;
  struct fisrig_cmd_desc *d;
  *status = FISRIG_VM_DONE;
  if (op == FISRIG_TRACE_TRIM) {
    issue_trim(vm, m, lba, sectors);
    return 0;
  }
  if (op == FISRIG_TRACE_FLUSH) {
    *status = issue_flush(vm);
    return 0;
  }
  /* A read or write: its descriptor made where it stays while in flight, not copied there
     (each store a bus write on the rig's CPU). */
  f = claim(vm);
  d = &f->desc;
  /* Every field, not a memset first: the compiler merges these into word stores, and a
     call of memset would sit outside the hot code (firmware/baremetal/linker.ld). */
  d->features = d->count = d->aux = 0;
  d->device = 0x40;
  d->icc = d->control = d->flags = 0;
  d->data_source = d->compress_pct = 0;
  d->data_word = 0;
  d->timeout_ticks = vm->timeout_ticks;
  if (op == FISRIG_TRACE_READ) {
    d->protocol = m->ncq ? FISRIG_PROTO_FPDMA_IN : FISRIG_PROTO_DMA_IN;
    d->command = m->ncq ? FISRIG_ATA_READ_FPDMA_QUEUED : FISRIG_ATA_READ_DMA_EXT;
  } else {
    d->protocol = m->ncq ? FISRIG_PROTO_FPDMA_OUT : FISRIG_PROTO_DMA_OUT;
    d->command = m->ncq ? FISRIG_ATA_WRITE_FPDMA_QUEUED : (m->fua ? FISRIG_ATA_WRITE_DMA_FUA_EXT : FISRIG_ATA_WRITE_DMA_EXT);
    if (m->ncq && m->fua) d->device |= FISRIG_ATA_DEVICE_FUA;
    d->data_source = m->data_source;
    d->compress_pct = m->compress_pct;
    d->data_word = ++vm->write_seq;
  }
  if (m->ncq) d->features = (uint16_t)sectors; /* 65536 is 0 in both fields */
  else d->count = (uint16_t)sectors;
  put_lba(d->lba, lba);
  submit_entry(vm, f, FISRIG_RECORD_COMMAND, NULL, 0);
  return (uint64_t)sectors * 512u;
}

/* A zipf-distributed LBA: hot blocks spread over the span rather than packed at its start. */
static FISRIG_VM_COLD uint64_t zipf_lba(uint64_t *rng, const struct fisrig_divisor *blocks, double theta) {
  return fisrig_modulo(zipf_rank(rng, blocks->n, theta) * 0x9E3779B97F4A7C15ull, blocks);
}

/* A workload's commands, drawn and issued until its stop (the loop the rig's CPU runs for
   every command; run_workload below sets it up). *issued counts them. */
static FISRIG_VM_HOT FISRIG_VM_NOINLINE enum fisrig_vm_status workload_commands(struct fisrig_vm *vm, const struct fisrig_op_workload *w,
                                                             const struct workload_divisors *dv,
                                                             const struct issue_mode *mode, uint64_t t0,
                                                             double theta, uint64_t *issued) {
  uint64_t rng = ((uint64_t)w->seed << 1) | 1u;
  uint64_t bytes = 0, seq_next = 0;
  enum fisrig_vm_status s = FISRIG_VM_DONE;
  int one_op = w->read_pct >= 100 || (w->read_pct == 0 && w->trim_pct == 0 && w->flush_pct == 0);
  for (;;) {
    int more = !((w->stop_commands && *issued >= w->stop_commands) ||
                 (w->stop_bytes && bytes >= w->stop_bytes) ||
                 (w->stop_ticks && vm->ops.now(vm->ops.ctx) - t0 >= w->stop_ticks));
    enum next_step n = next_step(vm, more, w->queue_depth, w->ncq, &s);
    if (n == NEXT_END) break;
    if (n == NEXT_NEW) {
      uint32_t size = pick_size(w, dv, &rng), sectors = w->size_sectors[size];
      const struct fisrig_divisor *blocks = &dv->blocks[size];
      uint64_t lba;
      uint32_t r = 0;
      uint8_t op;
      if (one_op) rng_skip(&rng); /* its draw says nothing: the sequence moves on, undivided */
      else r = (uint32_t)draw(&rng, &dv->hundred);
      op = r < w->read_pct                                            ? FISRIG_TRACE_READ
                   : r < (uint32_t)w->read_pct + w->trim_pct                  ? FISRIG_TRACE_TRIM
                   : r < (uint32_t)w->read_pct + w->trim_pct + w->flush_pct ? FISRIG_TRACE_FLUSH
                                                                              : FISRIG_TRACE_WRITE;
      if (w->pattern == FISRIG_PATTERN_SEQUENTIAL) {
        if (seq_next + sectors > w->lba_span) seq_next = 0;
        lba = w->lba_start + seq_next;
        seq_next += sectors;
      } else if (w->pattern == FISRIG_PATTERN_ZIPF) {
        lba = w->lba_start + zipf_lba(&rng, blocks, theta) * sectors;
      } else {
        lba = w->lba_start + draw(&rng, blocks) * sectors;
      }
      bytes += issue(vm, mode, op, lba, sectors, &s);
      if (s != FISRIG_VM_DONE) break;
      ++*issued;
    }
  }
  return s;
}

/* The seed a workload draws from: its own, or mixed with the passes of the loops around it
   (FISRIG_WORKLOAD_SEED_PER_PASS; a loop's passes left tell its passes apart). */
static uint32_t workload_seed(const struct fisrig_op_workload *w, const struct cursor *c) {
  uint32_t seed = w->seed;
  int d;
  if (!(w->flags & FISRIG_WORKLOAD_SEED_PER_PASS)) return seed;
  for (d = 0; d < c->depth; ++d) seed = (seed ^ c->loop_left[d]) * 0x9E3779B1u;
  return seed;
}

static FISRIG_VM_PHASE enum fisrig_vm_status run_workload(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_workload workload;
  const struct fisrig_op_workload *w = op_at(c, &workload, sizeof workload);
  uint64_t issued = 0;
  uint64_t t0 = vm->ops.now(vm->ops.ctx);
  struct workload_divisors dv;
  struct issue_mode mode;
  enum fisrig_vm_status s;
  mode.ncq = w->ncq;
  mode.fua = w->fua;
  mode.data_source = w->data_source;
  mode.compress_pct = w->compress_pct;
  mode.trims = FISRIG_TRIMS_AS_QUEUE;
  workload.seed = workload_seed(w, c); /* w is `workload`, op_at's copy */
  generator_begin(vm); /* the plan's cut ends it once the link falls; a link lost otherwise is recovered */
  workload_divisors_init(&dv, w);
  s = generator_end(vm, workload_commands(vm, w, &dv, &mode, t0, w->zipf_theta_milli / 1000.0, &issued));
  if (s != FISRIG_VM_DONE) return s;
  if (c->steady_depth && steady_loop(c).steady_pc == c->pc) { /* what its loop measures */
    c->steady_ran = 1;
    c->steady_commands = issued;
    c->steady_t0 = t0;
    c->steady_t1 = vm->ops.now(vm->ops.ctx);
  }
  return FISRIG_VM_DONE;
}

static enum fisrig_vm_status run_trace(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_trace trace;
  const struct fisrig_op_trace *t = op_at(c, &trace, sizeof trace);
  const uint8_t *entries = t->entries_at ? c->p + t->entries_at + sizeof(struct fisrig_op_trace)
                                         : c->p + c->pc + t->head.size;
  uint32_t next = 0;
  struct issue_mode mode;
  mode.ncq = t->ncq;
  mode.fua = 0;
  mode.data_source = t->data_source;
  mode.compress_pct = t->compress_pct;
  mode.trims = t->trims;
  enum fisrig_vm_status s = FISRIG_VM_DONE;
  generator_begin(vm);
  for (;;) {
    enum next_step n = next_step(vm, next < t->entries, t->queue_depth, t->ncq, &s);
    if (n == NEXT_END) break;
    if (n == NEXT_NEW) {
      struct fisrig_trace_entry e;
      memcpy(&e, entries + (uint64_t)next * sizeof e, sizeof e);
      if (e.op == FISRIG_TRACE_TRIM && t->trims == FISRIG_TRIMS_SKIP) {
        next++;
        continue;
      }
      issue(vm, &mode, e.op, e.lba, e.sectors, &s);
      if (s != FISRIG_VM_DONE) break;
      next++;
    }
  }
  return generator_end(vm, s);
}
