/* The VM's NVMe commands (program.h FISRIG_OP_NVME_*), for a platform whose engine is an NVMe
   one: descriptors of three ring entries (engine_if.h struct fisrig_nvme_desc_head and the
   SQE), in flight in their own table (vm.h struct fisrig_vm_nvme), a raw command and a
   workload over several queues. POWER and LINK descriptors stay one entry, as for SATA, and
   go through the SATA path's table. A section of vm.c, compiled in its one translation unit
   (vm.c says why); plain code, linked after the SATA path's hot, warm, cold and phase parts,
   which it leaves where they are (firmware/baremetal/linker.ld). */

/* ---- NVMe ---- */


FISRIG_VM_NVME void fisrig_vm_nvme_init(struct fisrig_vm *vm, struct fisrig_vm_nvme *n, uint16_t queues, uint16_t queue_entries) {
  memset(n, 0, sizeof *n);
  n->queues = queues;
  n->queue_entries = queue_entries;
  for (n->free_count = 0; n->free_count < FISRIG_VM_NVME_INFLIGHT; ++n->free_count)
    n->free_tags[n->free_count] = (uint8_t)(FISRIG_VM_NVME_INFLIGHT - 1 - n->free_count);
  vm->nvme = n;
}

static FISRIG_VM_NVME struct fisrig_nvme_desc_head nvme_head_of(const struct fisrig_vm_nvme_inflight *f) {
  struct fisrig_nvme_desc_head h;
  memcpy(&h, &f->base.desc, sizeof h);
  return h;
}

static FISRIG_VM_NVME void nvme_release(struct fisrig_vm_nvme *n, uint32_t idx) { n->free_tags[n->free_count++] = (uint8_t)idx; }

/* A free in-flight entry: never none, a workload keeps at most FISRIG_VM_NVME_INFLIGHT in
   flight and waiting to go again together (check_nvme_workload), a raw command goes alone. */
static FISRIG_VM_NVME uint32_t nvme_claim(struct fisrig_vm_nvme *n) { return n->free_tags[--n->free_count]; }

/* Hands every completion waiting in the ring to the sink, as reap does for SATA's; returns
   how many, or -1 when the sink refused one. *last gets the last command's. */
static FISRIG_VM_NVME int nvme_reap(struct fisrig_vm *vm, struct fisrig_cpl_record *last) {
  struct fisrig_vm_nvme *n = vm->nvme;
  uint32_t tail = vm->ops.cq_tail(vm->ops.ctx);
  int count = 0;
  while (vm->cq_head != tail) {
    const struct fisrig_cpl_record *c = &vm->ops.cq[vm->cq_head & (vm->ops.cq_entries - 1)];
    struct fisrig_run_record r;
    struct fisrig_vm_nvme_inflight *f;
    uint32_t idx;
    vm->cq_head++;
    if ((c->user_tag & ~(uint32_t)(FISRIG_VM_NVME_INFLIGHT - 1)) != FISRIG_VM_NVME_TAG) {
      /* The engine's own record. (A LINK or POWER descriptor, in the SATA path's table, goes
         only with no NVMe command in flight, and drain takes its record.) */
      int news = reap_event(vm, c);
      if (news < 0) {
        vm->ops.cq_consumed(vm->ops.ctx, vm->cq_head);
        return -1;
      }
      count += news;
      continue;
    }
    idx = c->user_tag & (FISRIG_VM_NVME_INFLIGHT - 1);
    f = &n->inflight[idx];
    r.cpl = *c;
    memcpy(&r.marker, &f->base.tail, sizeof f->base.tail);
    r.detail = (uint8_t)(f->base.tail.detail | f->base.attempt << FISRIG_DETAIL_ATTEMPT_SHIFT);
    if (n->outstanding) n->outstanding--;
    if (n->queue_outstanding[nvme_head_of(f).qid]) n->queue_outstanding[nvme_head_of(f).qid]--;
    vm->commands++;
    vm->bytes += (uint64_t)c->sectors * 512u; /* the record's blocks (engine_if.h) */
    if (c->result != FISRIG_RESULT_OK) {
      if (c->result == FISRIG_RESULT_LINK_LOST) vm->link_lost = 1;
      vm->errors++;
      vm->last_failed = *c;
      if (goes_again(vm, &f->base, c->result)) {
        r.detail |= FISRIG_DETAIL_SENT_AGAIN;
        n->requeue[n->requeue_tail++ % FISRIG_VM_NVME_INFLIGHT] = (uint8_t)idx;
      } else {
        nvme_release(n, idx);
      }
    } else {
      vm->recoveries_in_row = 0;
      nvme_release(n, idx);
    }
    if (last) *last = r.cpl;
    count++;
    if (emit(vm, &r)) {
      vm->ops.cq_consumed(vm->ops.ctx, vm->cq_head);
      return -1;
    }
  }
  vm->ops.cq_consumed(vm->ops.ctx, vm->cq_head);
  return count;
}

static FISRIG_VM_NVME enum fisrig_vm_status nvme_wait_some(struct fisrig_vm *vm, struct fisrig_cpl_record *last) {
  uint64_t start = vm->ops.now(vm->ops.ctx);
  for (;;) {
    int got = nvme_reap(vm, last);
    if (got < 0) return FISRIG_VM_RECORDS_LOST;
    if (got > 0) return FISRIG_VM_DONE;
    if (vm->ops.now(vm->ops.ctx) - start >= vm->stuck_ticks) return FISRIG_VM_ENGINE_STUCK;
    vm->ops.wait(vm->ops.ctx, start + vm->stuck_ticks);
  }
}

static FISRIG_VM_NVME enum fisrig_vm_status nvme_drain(struct fisrig_vm *vm, struct fisrig_cpl_record *last) {
  while (vm->nvme->outstanding) {
    enum fisrig_vm_status s = nvme_wait_some(vm, last);
    if (s != FISRIG_VM_DONE) return s;
  }
  return FISRIG_VM_DONE;
}

/* In-flight entry idx's descriptor into the submission ring (three entries, once the
   engine has taken enough of what is there), then the doorbell. */
static FISRIG_VM_NVME enum fisrig_vm_status nvme_send(struct fisrig_vm *vm, uint32_t idx) {
  struct fisrig_vm_nvme *n = vm->nvme;
  const struct fisrig_vm_nvme_inflight *f = &n->inflight[idx];
  const uint32_t mask = vm->ops.sq_entries - 1;
  uint64_t start = vm->ops.now(vm->ops.ctx);
  while (vm->sq_tail - vm->ops.sq_head(vm->ops.ctx) + FISRIG_NVME_DESC_ENTRIES > vm->ops.sq_entries) {
    if (vm->ops.now(vm->ops.ctx) - start >= vm->stuck_ticks) return FISRIG_VM_ENGINE_STUCK;
    vm->ops.wait(vm->ops.ctx, start + vm->stuck_ticks);
  }
  vm->ops.sq[vm->sq_tail++ & mask] = f->base.desc;
  memcpy(&vm->ops.sq[vm->sq_tail++ & mask], (const uint8_t *)&f->sqe, sizeof(struct fisrig_cmd_desc));
  memcpy(&vm->ops.sq[vm->sq_tail++ & mask], (const uint8_t *)&f->sqe + sizeof(struct fisrig_cmd_desc),
         sizeof(struct fisrig_cmd_desc));
  n->outstanding++;
  n->queue_outstanding[nvme_head_of(f).qid]++;
  vm->ops.doorbell(vm->ops.ctx, vm->sq_tail);
  return FISRIG_VM_DONE;
}

/* What an NVM command covers, for its record: an I/O read, write, compare or write zeroes
   its SLBA and NLB + 1; a deallocate its first range's (the VM's own have one). */
static FISRIG_VM_NVME void nvme_tail(struct fisrig_vm *vm, struct fisrig_vm_nvme_inflight *f, uint8_t kind, const uint8_t *dsm) {
  const struct fisrig_nvme_desc_head h = nvme_head_of(f);
  const struct fisrig_nvme_sqe *s = &f->sqe;
  struct fisrig_vm_record_tail *t = &f->base.tail;
  uint8_t op = s->opcode;
  f->base.attempt = f->base.retried = 0;
  t->marker = vm->marker;
  t->command = op;
  t->protocol = FISRIG_PROTO_NVME;
  t->kind = kind;
  t->lba = 0;
  t->lbas = 0;
  t->detail = 0;
  t->seq = 0;
  if (h.qid && (op == FISRIG_NVME_CMD_READ || op == FISRIG_NVME_CMD_WRITE || op == FISRIG_NVME_CMD_COMPARE ||
                op == FISRIG_NVME_CMD_WRITE_ZEROES)) {
    t->lba = (uint64_t)s->cdw11 << 32 | s->cdw10;
    t->lbas = (s->cdw12 & 0xFFFFu) + 1u;
    if (op == FISRIG_NVME_CMD_WRITE && (s->cdw12 & FISRIG_NVME_RW_FUA)) t->detail = FISRIG_DETAIL_FUA;
    if (op == FISRIG_NVME_CMD_WRITE && h.data_source == FISRIG_DATA_STAMP) t->seq = h.data_word;
  } else if (h.qid && op == FISRIG_NVME_CMD_DATASET_MANAGEMENT && dsm) {
    uint32_t i;
    for (i = 0; i < 4; ++i) t->lbas |= (uint32_t)dsm[4 + i] << (8 * i);
    for (i = 0; i < 8; ++i) t->lba |= (uint64_t)dsm[8 + i] << (8 * i);
  }
}

static FISRIG_VM_NVME const char *check_nvme_raw(struct cursor *c) {
  struct fisrig_op_nvme_raw r;
  op_at(c, &r, sizeof r);
  if (r.data_bytes > FISRIG_VM_NVME_RAW_BYTES || sizeof r + r.data_bytes > r.head.size)
    return "NVMe RAW data-out larger than its instruction or 4,096 bytes";
  if (r.desc.protocol != FISRIG_PROTO_NVME) return "NVMe RAW with a descriptor of another protocol";
  if (r.desc.data_bytes > FISRIG_NVME_DATA_MAX) return "NVMe RAW data over the engine's 2 MiB";
  if (r.data_bytes > r.desc.data_bytes) return "NVMe RAW data-out larger than the command's data";
  if (r.desc.data_source == FISRIG_DATA_RAM && r.desc.data_bytes > c->window)
    return "NVMe RAW data in RAM larger than the data window";
  if (r.desc.data_source > FISRIG_DATA_LFSR) return "unknown data source";
  return NULL;
}

static FISRIG_VM_NVME enum fisrig_vm_status nvme_refused(struct fisrig_vm *vm, const struct cursor *c) {
  return bad(vm, c->pc, "an NVMe instruction, and this rig's engine is not an NVMe one");
}

static FISRIG_VM_NVME enum fisrig_vm_status run_nvme_raw(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_nvme_raw raw;
  const struct fisrig_op_nvme_raw *op = op_at(c, &raw, sizeof raw);
  const uint8_t *data = c->p + c->pc + sizeof raw;
  struct fisrig_nvme_desc_head h = op->desc;
  struct fisrig_cpl_record done;
  struct fisrig_nvme_cpl_record cpl;
  struct fisrig_vm_nvme_inflight *f;
  uint32_t idx;
  enum fisrig_vm_status s;
  if (!vm->nvme) return nvme_refused(vm, c);
  if (h.qid > vm->nvme->queues) return bad(vm, c->pc, "NVMe RAW on a queue the engine does not have");
  s = drain(vm, NULL);
  if (s == FISRIG_VM_DONE) s = nvme_drain(vm, NULL);
  if (s != FISRIG_VM_DONE) return s;
  idx = nvme_claim(vm->nvme);
  f = &vm->nvme->inflight[idx];
  h.user_tag = FISRIG_VM_NVME_TAG | idx;
  if (h.data_source == FISRIG_DATA_RAM) h.data_word = 0; /* the window's start: data-out, or data-in */
  if (op->data_bytes) memcpy(vm->ops.data_window, data, op->data_bytes);
  memcpy(&f->base.desc, &h, sizeof h);
  f->sqe = op->sqe;
  nvme_tail(vm, f, FISRIG_RECORD_COMMAND, op->data_bytes >= FISRIG_NVME_DSM_RANGE_BYTES ? data : NULL);
  s = nvme_send(vm, idx);
  if (s == FISRIG_VM_DONE) s = nvme_drain(vm, &done);
  if (s != FISRIG_VM_DONE) return s;
  if (vm->ops.data_in) vm->ops.data_in(vm->ops.ctx);
  memcpy(&cpl, &done, sizeof cpl);
  if ((op->expect_result != 0xFF && op->expect_result != cpl.result) ||
      (cpl.status & op->status_mask) != op->status_value) {
    vm->error_offset = c->pc;
    vm->error_text = "expectation not met";
    vm->last_failed = done;
    return FISRIG_VM_EXPECT_FAILED;
  }
  return FISRIG_VM_DONE;
}

static FISRIG_VM_NVME const char *check_nvme_workload(struct cursor *c) {
  struct fisrig_op_workload workload;
  const struct fisrig_op_workload *w = op_at(c, &workload, sizeof workload);
  uint32_t i, weights = 0;
  if (w->queues < 1) return "an NVMe workload needs a queue or more";
  if (w->queue_depth < 1) return "queue depth must be 1 or more";
  if ((uint32_t)w->queues * w->queue_depth > FISRIG_VM_NVME_INFLIGHT)
    return "queues x queue depth over the 256 NVMe commands the VM keeps in flight";
  if (w->ncq) return "an NVMe workload has no NCQ";
  if (c->window < FISRIG_VM_NVME_INFLIGHT * FISRIG_VM_DSM_BYTES) return "data window too small for an NVMe workload";
  for (i = 0; i < w->sizes && i < 8; ++i)
    if (w->size_sectors[i] > FISRIG_NVME_DATA_MAX / 512u) return "NVMe transfer over the engine's 2 MiB";
#include "workload_checks.inc"
}

/* One NVMe read, write, deallocate or flush on queue qid; the bytes of data it moves. */
static FISRIG_VM_NVME uint64_t nvme_issue(struct fisrig_vm *vm, const struct issue_mode *m, uint16_t qid, uint8_t op, uint64_t lba,
                           uint32_t blocks, enum fisrig_vm_status *s) {
  struct fisrig_vm_nvme *n = vm->nvme;
  uint32_t idx = nvme_claim(n);
  struct fisrig_vm_nvme_inflight *f = &n->inflight[idx];
  struct fisrig_nvme_desc_head h;
  struct fisrig_nvme_sqe *q = &f->sqe;
  uint8_t *range = NULL;
  uint64_t moved = 0;
  memset(&h, 0, sizeof h);
  memset(q, 0, sizeof *q);
  h.protocol = FISRIG_PROTO_NVME;
  h.qid = qid;
  h.user_tag = FISRIG_VM_NVME_TAG | idx;
  h.timeout_ticks = vm->timeout_ticks;
  q->nsid = 1;
  if (op == FISRIG_TRACE_FLUSH) {
    q->opcode = FISRIG_NVME_CMD_FLUSH;
  } else if (op == FISRIG_TRACE_TRIM) { /* one range, staged in idx's block of the window */
    uint32_t i;
    range = vm->ops.data_window + idx * FISRIG_VM_DSM_BYTES;
    memset(range, 0, FISRIG_NVME_DSM_RANGE_BYTES);
    for (i = 0; i < 4; ++i) range[4 + i] = (uint8_t)(blocks >> (8 * i));
    for (i = 0; i < 8; ++i) range[8 + i] = (uint8_t)(lba >> (8 * i));
    q->opcode = FISRIG_NVME_CMD_DATASET_MANAGEMENT;
    q->cdw11 = FISRIG_NVME_DSM_AD;
    h.data_source = FISRIG_DATA_RAM;
    h.data_word = idx * FISRIG_VM_DSM_BYTES;
    h.data_bytes = FISRIG_NVME_DSM_RANGE_BYTES;
  } else {
    q->opcode = op == FISRIG_TRACE_READ ? FISRIG_NVME_CMD_READ : FISRIG_NVME_CMD_WRITE;
    q->cdw10 = (uint32_t)lba;
    q->cdw11 = (uint32_t)(lba >> 32);
    q->cdw12 = blocks - 1u;
    h.data_bytes = blocks * 512u;
    if (op == FISRIG_TRACE_WRITE) {
      if (m->fua) q->cdw12 |= FISRIG_NVME_RW_FUA;
      h.data_source = m->data_source;
      h.compress_pct = m->compress_pct;
      h.data_word = ++vm->write_seq;
    }
    moved = (uint64_t)blocks * 512u;
  }
  memcpy(&f->base.desc, &h, sizeof h);
  nvme_tail(vm, f, FISRIG_RECORD_COMMAND, range);
  *s = nvme_send(vm, idx);
  return moved;
}

/* The queue after `from` (round robin over 1..queues) with room under `depth`, 0 if none. */
static FISRIG_VM_NVME uint16_t nvme_queue_with_room(const struct fisrig_vm_nvme *n, uint16_t queues, uint32_t depth, uint16_t from) {
  uint16_t i;
  for (i = 1; i <= queues; ++i) {
    uint16_t q = (uint16_t)((from + i - 1) % queues + 1);
    if (n->queue_outstanding[q] < depth) return q;
  }
  return 0;
}

/* What an NVMe generator sends next (a workload's draws, a trace's entries): next() gives
   the command's op (enum fisrig_trace_op), LBA and blocks, or 0 when there are no more; it
   is asked only when a queue has room for what it gives. */
struct nvme_source {
  int (*next)(struct fisrig_vm *vm, void *ctx, uint8_t *op, uint64_t *lba, uint32_t *blocks);
  void *ctx;
};

/* A generator's commands over `queues` I/O queues each kept `depth` deep, round robin: what
   failed for another's sake goes again on its own queue (the policy), a lost link is
   recovered once what was in flight has ended, a cut of the plan's or a stop ends it.
   *issued: the commands it drew. */
static FISRIG_VM_NVME enum fisrig_vm_status nvme_generate(struct fisrig_vm *vm, const struct issue_mode *mode, uint16_t queues,
                                                          uint32_t depth, const struct nvme_source *src, uint64_t *issued) {
  struct fisrig_vm_nvme *n = vm->nvme;
  uint16_t last_q = 0;
  int more = 1;
  enum fisrig_vm_status s = FISRIG_VM_DONE;
  *issued = 0;
  generator_begin(vm);
  for (;;) {
    int halt = (vm->power_cut && vm->link_lost) || vm->stop_requested;
    uint16_t q = halt ? 0 : nvme_queue_with_room(n, queues, depth, last_q);
    if (vm->link_lost && !halt) {
      if (!n->outstanding) { /* everything in flight has ended: recover, or give up */
        s = recover_link(vm);
        if (s != FISRIG_VM_DONE || vm->link_lost) break;
        continue;
      }
    } else if (!halt && n->requeue_head != n->requeue_tail &&
               n->queue_outstanding[nvme_head_of(&n->inflight[n->requeue[n->requeue_head % FISRIG_VM_NVME_INFLIGHT]]).qid] <
                   depth) { /* the oldest to go again, on its own queue once that has room */
      uint32_t idx = n->requeue[n->requeue_head++ % FISRIG_VM_NVME_INFLIGHT];
      n->inflight[idx].base.attempt++;
      s = nvme_send(vm, idx);
      if (s != FISRIG_VM_DONE) break;
      continue;
    } else if (q && more) {
      uint8_t op;
      uint64_t lba;
      uint32_t blocks;
      more = src->next(vm, src->ctx, &op, &lba, &blocks);
      if (!more) continue;
      nvme_issue(vm, mode, q, op, lba, blocks, &s);
      if (s != FISRIG_VM_DONE) break;
      last_q = q;
      ++*issued;
      continue;
    } else if (!n->outstanding) {
      break;
    }
    s = nvme_wait_some(vm, NULL);
    if (s != FISRIG_VM_DONE) break;
  }
  while (n->requeue_head != n->requeue_tail) nvme_release(n, n->requeue[n->requeue_head++ % FISRIG_VM_NVME_INFLIGHT]);
  if (s == FISRIG_VM_DONE || s == FISRIG_VM_STOPPED) s = nvme_drain(vm, NULL);
  return generator_end(vm, s);
}

/* A workload's draws (struct fisrig_op_workload), as the SATA path's workload draws them. */
struct nvme_draws {
  const struct fisrig_op_workload *w;
  struct workload_divisors dv;
  uint64_t rng, t0, issued, bytes, seq_next;
  double theta;
  int one_op;
};

static FISRIG_VM_NVME int nvme_draw(struct fisrig_vm *vm, void *ctx, uint8_t *op, uint64_t *lba, uint32_t *blocks) {
  struct nvme_draws *d = ctx;
  const struct fisrig_op_workload *w = d->w;
  uint32_t size, r = 0;
  if ((w->stop_commands && d->issued >= w->stop_commands) || (w->stop_bytes && d->bytes >= w->stop_bytes) ||
      (w->stop_ticks && vm->ops.now(vm->ops.ctx) - d->t0 >= w->stop_ticks))
    return 0;
  size = pick_size(w, &d->dv, &d->rng);
  *blocks = w->size_sectors[size];
  if (d->one_op) rng_skip(&d->rng);
  else r = (uint32_t)draw(&d->rng, &d->dv.hundred);
  *op = r < w->read_pct                                                ? FISRIG_TRACE_READ
        : r < (uint32_t)w->read_pct + w->trim_pct                      ? FISRIG_TRACE_TRIM
        : r < (uint32_t)w->read_pct + w->trim_pct + w->flush_pct ? FISRIG_TRACE_FLUSH
                                                                       : FISRIG_TRACE_WRITE;
  if (w->pattern == FISRIG_PATTERN_SEQUENTIAL) {
    if (d->seq_next + *blocks > w->lba_span) d->seq_next = 0;
    *lba = w->lba_start + d->seq_next;
    d->seq_next += *blocks;
  } else if (w->pattern == FISRIG_PATTERN_ZIPF) {
    *lba = w->lba_start + zipf_lba(&d->rng, &d->dv.blocks[size], d->theta) * *blocks;
  } else {
    *lba = w->lba_start + draw(&d->rng, &d->dv.blocks[size]) * *blocks;
  }
  if (*op == FISRIG_TRACE_READ || *op == FISRIG_TRACE_WRITE) d->bytes += (uint64_t)*blocks * 512u;
  d->issued++;
  return 1;
}

static FISRIG_VM_NVME enum fisrig_vm_status run_nvme_workload(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_workload workload;
  const struct fisrig_op_workload *w = op_at(c, &workload, sizeof workload);
  struct nvme_draws d;
  struct nvme_source src;
  struct issue_mode mode;
  uint64_t issued;
  enum fisrig_vm_status s;
  if (!vm->nvme) return nvme_refused(vm, c);
  if (w->queues > vm->nvme->queues || w->queue_depth >= vm->nvme->queue_entries)
    return bad(vm, c->pc, "more queues, or a deeper queue, than the NVMe engine has");
  s = drain(vm, NULL);
  if (s != FISRIG_VM_DONE) return s;
  memset(&d, 0, sizeof d);
  d.w = w;
  d.t0 = vm->ops.now(vm->ops.ctx);
  d.theta = w->zipf_theta_milli / 1000.0;
  d.one_op = w->read_pct >= 100 || (w->read_pct == 0 && w->trim_pct == 0 && w->flush_pct == 0);
  mode.ncq = 1;
  mode.fua = w->fua;
  mode.data_source = w->data_source;
  mode.compress_pct = w->compress_pct;
  mode.trims = FISRIG_TRIMS_AS_QUEUE;
  workload.seed = workload_seed(w, c);
  d.rng = ((uint64_t)workload.seed << 1) | 1u;
  workload_divisors_init(&d.dv, w);
  src.next = nvme_draw;
  src.ctx = &d;
  s = nvme_generate(vm, &mode, w->queues, w->queue_depth, &src, &issued);
  if (s != FISRIG_VM_DONE) return s;
  if (c->steady_depth && steady_loop(c).steady_pc == c->pc) {
    c->steady_ran = 1;
    c->steady_commands = issued;
    c->steady_t0 = d.t0;
    c->steady_t1 = vm->ops.now(vm->ops.ctx);
  }
  return FISRIG_VM_DONE;
}

/* A trace's entries in order (struct fisrig_op_trace), its TRIMs left out if it says so. */
struct nvme_trace_entries {
  const uint8_t *entries;
  uint32_t count, next;
  uint8_t skip_trims;
};

static FISRIG_VM_NVME int nvme_trace_next(struct fisrig_vm *vm, void *ctx, uint8_t *op, uint64_t *lba, uint32_t *blocks) {
  struct nvme_trace_entries *t = ctx;
  struct fisrig_trace_entry e;
  (void)vm;
  for (;;) {
    if (t->next >= t->count) return 0;
    memcpy(&e, t->entries + (uint64_t)t->next++ * sizeof e, sizeof e);
    if (!(e.op == FISRIG_TRACE_TRIM && t->skip_trims)) break;
  }
  *op = e.op;
  *lba = e.lba;
  *blocks = e.sectors;
  return 1;
}

/* A trace replayed over NVMe (struct fisrig_op_trace, its `queues` I/O queues each
   queue_depth deep): its TRIMs deallocates (queued, as NVMe has them) unless it skips them. */
static FISRIG_VM_NVME enum fisrig_vm_status run_nvme_trace(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_trace trace;
  const struct fisrig_op_trace *t = op_at(c, &trace, sizeof trace);
  struct nvme_trace_entries e;
  struct nvme_source src;
  struct issue_mode mode;
  uint64_t issued;
  uint32_t i;
  uint16_t queues = t->queues ? t->queues : 1;
  enum fisrig_vm_status s;
  e.entries = t->entries_at ? c->p + t->entries_at + sizeof(struct fisrig_op_trace) : c->p + c->pc + t->head.size;
  e.count = t->entries;
  e.next = 0;
  e.skip_trims = t->trims == FISRIG_TRIMS_SKIP;
  if (queues > vm->nvme->queues || t->queue_depth >= vm->nvme->queue_entries ||
      (uint32_t)queues * t->queue_depth > FISRIG_VM_NVME_INFLIGHT)
    return bad(vm, c->pc, "more queues, or a deeper queue, than the NVMe engine has");
  for (i = 0; i < e.count; ++i) {
    struct fisrig_trace_entry x;
    memcpy(&x, e.entries + (uint64_t)i * sizeof x, sizeof x);
    if (x.op != FISRIG_TRACE_FLUSH && x.op != FISRIG_TRACE_TRIM && x.sectors > FISRIG_NVME_DATA_MAX / 512u)
      return bad(vm, c->pc, "a trace entry over the NVMe engine's 2 MiB");
  }
  s = drain(vm, NULL);
  if (s != FISRIG_VM_DONE) return s;
  mode.ncq = 1;
  mode.fua = 0;
  mode.data_source = t->data_source;
  mode.compress_pct = t->compress_pct;
  mode.trims = FISRIG_TRIMS_AS_QUEUE;
  src.next = nvme_trace_next;
  src.ctx = &e;
  return nvme_generate(vm, &mode, queues, t->queue_depth, &src, &issued);
}

/* A trace on whichever engine the VM has. */
static FISRIG_VM_NVME enum fisrig_vm_status run_any_trace(struct fisrig_vm *vm, struct cursor *c) {
  return vm->nvme ? run_nvme_trace(vm, c) : run_trace(vm, c);
}

/* One NVMe command of the VM's own at queue depth 1 (the verify pass's): the window's start
   its data, its record the command's; *done the engine's record. */
static FISRIG_VM_NVME enum fisrig_vm_status nvme_one(struct fisrig_vm *vm, const struct fisrig_nvme_sqe *sqe, uint16_t qid,
                                                     uint32_t bytes, uint32_t timeout_ticks, struct fisrig_cpl_record *done) {
  uint32_t idx = nvme_claim(vm->nvme);
  struct fisrig_vm_nvme_inflight *f = &vm->nvme->inflight[idx];
  struct fisrig_nvme_desc_head h;
  enum fisrig_vm_status s;
  memset(&h, 0, sizeof h);
  h.protocol = FISRIG_PROTO_NVME;
  h.qid = qid;
  h.user_tag = FISRIG_VM_NVME_TAG | idx;
  h.data_source = FISRIG_DATA_RAM; /* at data_word 0: nothing else is in flight */
  h.data_bytes = bytes;
  h.timeout_ticks = timeout_ticks;
  memcpy(&f->base.desc, &h, sizeof h);
  f->sqe = *sqe;
  nvme_tail(vm, f, FISRIG_RECORD_COMMAND, NULL);
  s = nvme_send(vm, idx);
  return s == FISRIG_VM_DONE ? nvme_drain(vm, done) : s;
}

/* The verify pass (struct fisrig_op_verify) over NVMe: Identify Namespace first (an IDENTIFY
   record: its NSZE and a checksum of the page, so that a drive that comes back as another is
   seen), then Reads on queue 1, sectors_per_read blocks at a time, each sector's finding as
   the SATA pass says it (emit_findings). */
static FISRIG_VM_NVME enum fisrig_vm_status run_nvme_verify(struct fisrig_vm *vm, const struct fisrig_op_verify *op) {
  uint64_t lba = op->lba_start, end = op->lba_start + op->sectors;
  struct fisrig_nvme_sqe q;
  struct fisrig_cpl_record done;
  enum fisrig_vm_status s = drain(vm, NULL);
  if (s == FISRIG_VM_DONE) s = nvme_drain(vm, NULL);
  if (s != FISRIG_VM_DONE) return s;
  if (op->identify) {
    struct fisrig_run_record r;
    uint32_t crc = FISRIG_CRC_SEED, i;
    memset(&q, 0, sizeof q);
    q.opcode = FISRIG_NVME_ADMIN_IDENTIFY;
    q.nsid = 1;
    q.cdw10 = FISRIG_NVME_CNS_NAMESPACE;
    memset(vm->ops.data_window, 0, FISRIG_NVME_IDENTIFY_BYTES);
    s = nvme_one(vm, &q, 0, FISRIG_NVME_IDENTIFY_BYTES, op->timeout_ticks, &done);
    if (s != FISRIG_VM_DONE) return s;
    memset(&r, 0, sizeof r);
    r.cpl = done;
    r.marker = vm->marker;
    r.kind = FISRIG_RECORD_IDENTIFY;
    r.command = FISRIG_NVME_ADMIN_IDENTIFY;
    r.protocol = FISRIG_PROTO_NVME;
    if (done.result == FISRIG_RESULT_OK) {
      const uint8_t *w = vm->ops.data_window;
      if (vm->ops.data_in) vm->ops.data_in(vm->ops.ctx);
      r.lba = (uint64_t)le32(w) | (uint64_t)le32(w + 4) << 32; /* NSZE */
      for (i = 0; i < FISRIG_NVME_IDENTIFY_BYTES / 4; ++i) crc = fisrig_crc32_step(crc, le32(w + 4 * i));
      r.seq = crc;
    }
    if (emit(vm, &r)) return FISRIG_VM_RECORDS_LOST;
  }
  while (lba < end) {
    uint32_t n = end - lba < op->sectors_per_read ? (uint32_t)(end - lba) : op->sectors_per_read;
    memset(&q, 0, sizeof q);
    q.opcode = FISRIG_NVME_CMD_READ;
    q.nsid = 1;
    q.cdw10 = (uint32_t)lba;
    q.cdw11 = (uint32_t)(lba >> 32);
    q.cdw12 = n - 1u;
    s = nvme_one(vm, &q, 1, n * 512u, op->timeout_ticks, &done);
    if (s != FISRIG_VM_DONE) return s;
    s = emit_findings(vm, &done, lba, n);
    if (s != FISRIG_VM_DONE) return s;
    lba += n;
    if (vm->stop_requested) return FISRIG_VM_STOPPED;
  }
  return FISRIG_VM_DONE;
}

/* The verify pass on whichever engine the VM has. */
static FISRIG_VM_NVME enum fisrig_vm_status run_any_verify(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_verify verify;
  if (vm->nvme) return run_nvme_verify(vm, op_at(c, &verify, sizeof verify));
  return run_verify(vm, c);
}
