/* The VM's side of the engine's rings: records emitted, completions reaped, descriptors staged and sent.
   A section of vm.c, compiled in its one translation unit (vm.c says why). */

/* ---- rings ---- */

static FISRIG_VM_HOT int emit(struct fisrig_vm *vm, const struct fisrig_run_record *r) {
  return vm->sink.emit(vm->sink.ctx, r) != 0;
}

/* Whether the error policy (struct fisrig_op_policy) sends a command that ended with
   `result` again, only while a workload or trace runs, never after the plan's own cut.
   A command ended for another's sake goes again without spending one of its retries, as
   libata's EH does (ata_eh_qc_retry gives such a command its try back): only its own
   failures spend them, so each round of errors spends some command's retry and the
   rounds end. Its attempts are still bounded by what a record can say. */
static FISRIG_VM_INLINE int goes_again(struct fisrig_vm *vm, struct fisrig_vm_inflight *f, uint8_t result) {
  if (!vm->requeue_on || vm->on_error == FISRIG_ON_ERROR_FAIL || f->attempt >= FISRIG_POLICY_MAX_RETRIES)
    return 0;
  switch (result) {
    case FISRIG_RESULT_NCQ_ABORTED: return 1;
    case FISRIG_RESULT_LINK_LOST: return !vm->power_cut;
    case FISRIG_RESULT_ATA_ERROR: case FISRIG_RESULT_TIMEOUT: case FISRIG_RESULT_DATA_CRC:
    case FISRIG_RESULT_LENGTH: case FISRIG_RESULT_CHECK_FAILED:
      if (vm->on_error != FISRIG_ON_ERROR_RETRY || f->retried >= vm->retries) return 0;
      f->retried++;
      return 1;
    default: return 0;
  }
}

/* The phase the VM is in from now on, with the tick, for the current samples' phases. Only
   while the sampler runs: reading the counter costs the rig's CPU a bus access a MARK. */
static void remember_mark(struct fisrig_vm *vm) {
  vm->mark_marker[vm->marks % FISRIG_VM_MARK_HISTORY] = vm->marker;
  vm->mark_tick[vm->marks % FISRIG_VM_MARK_HISTORY] = vm->ops.now(vm->ops.ctx);
  vm->marks++;
}

/* The phase the VM was in at `tick` (the MARKs it remembers; before the oldest of them, the
   oldest's). */
static uint32_t marker_at(const struct fisrig_vm *vm, uint64_t tick) {
  uint32_t back, kept = vm->marks < FISRIG_VM_MARK_HISTORY ? vm->marks : FISRIG_VM_MARK_HISTORY;
  uint32_t i = 0;
  for (back = 1; back <= kept; ++back) {
    i = (vm->marks - back) % FISRIG_VM_MARK_HISTORY;
    if (vm->mark_tick[i] <= tick) return vm->mark_marker[i];
  }
  return kept ? vm->mark_marker[i] : vm->marker;
}

/* A current sampler's record, r.cpl, as one run record per phase its samples fell in:
   lba the first sample's index, lbas how many (program.h FISRIG_RECORD_CURRENT). */
static int emit_current(struct fisrig_vm *vm, struct fisrig_run_record *r) {
  struct fisrig_current_record c;
  uint32_t i, from = 0, m;
  memcpy(&c, &r->cpl, sizeof c);
  if (c.samples > FISRIG_CURRENT_SAMPLES) c.samples = FISRIG_CURRENT_SAMPLES;
  r->kind = FISRIG_RECORD_CURRENT;
  m = marker_at(vm, c.ts_first);
  for (i = 1; i <= c.samples; ++i) { /* a piece ends where the phase changes, or at the end */
    uint32_t next = i < c.samples ? marker_at(vm, c.ts_first + (uint64_t)i * c.period_ticks) : m;
    if (i < c.samples && next == m) continue;
    r->marker = m;
    r->lba = from;
    r->lbas = i - from;
    if (emit(vm, r)) return -1;
    from = i;
    m = next;
  }
  if (!c.samples) { /* nothing in it: still said (it carries what was dropped) */
    r->marker = m;
    return emit(vm, r);
  }
  return 0;
}

/* The engine's own record (user_tag FISRIG_USER_TAG_EVENT: no descriptor behind it), *ring,
   handed to the sink; returns 1 if it counts as news (a power or link event), 0 if not (a
   current sampler's samples), -1 when the sink refused it. Out of the completions' path,
   which it would make larger than the rig CPU's instruction cache. */
static FISRIG_VM_COLD int reap_event(struct fisrig_vm *vm, const struct fisrig_cpl_record *ring) {
  struct fisrig_run_record record, *r = &record;
  const struct fisrig_cpl_record *c = &r->cpl;
  memset(r, 0, sizeof *r);
  r->cpl = *ring;
  if (c->slot == FISRIG_EVENT_REC_CURRENT) {
    /* Samples, not news of a command: not counted, so that a waiting VM waits on (and a
       stuck engine is still found stuck while its sampler runs). */
    return emit_current(vm, r) ? -1 : 0;
  }
  /* The link's fall, not the cut: with staged rails the drive runs on after a cut
     until a rail it needs falls (its commands' LINK_LOST records say when). */
  if (c->result == FISRIG_RESULT_LINK_LOST && c->slot != FISRIG_EVENT_REC_POWER_CUT) vm->link_lost = 1;
  if (c->slot == FISRIG_EVENT_REC_POWER_CUT) vm->power_cut = 1; /* the plan's own: what it ends stays so */
  r->marker = vm->marker;
  r->kind = FISRIG_RECORD_POWER;
  if (c->slot == FISRIG_EVENT_REC_POWER_CUT) { /* the slots at the cut: program.h */
    struct fisrig_cut_record cut;
    memcpy(&cut, c, sizeof cut); /* the same bytes, read as what a cut's say */
    r->lba = (uint64_t)cut.slots_queued << 32 | cut.slots_issued;
    r->lbas = cut.slots_data;
    r->seq = cut.slots_done;
    memset(r->cpl.lba, 0, sizeof r->cpl.lba);
    r->cpl.check_errors = 0;
    r->cpl.sectors = r->cpl.data_dwords = 0;
  }
  return emit(vm, r) ? -1 : 1;
}

/* A command's completion that did not end OK: counted, kept, and sent again if the policy
   says so (its record says it will be). */
static FISRIG_VM_COLD void reap_failed(struct fisrig_vm *vm, struct fisrig_vm_inflight *f,
                                       struct fisrig_run_record *r) {
  const struct fisrig_cpl_record *c = &r->cpl;
  if (c->result == FISRIG_RESULT_LINK_LOST) vm->link_lost = 1;
  vm->errors++;
  vm->last_failed = *c;
  if (goes_again(vm, f, c->result)) { /* its record says it failed; it waits to go again */
    r->detail |= FISRIG_DETAIL_SENT_AGAIN;
    vm->requeue[vm->requeue_tail++ % FISRIG_VM_INFLIGHT] = (uint8_t)(c->user_tag % FISRIG_VM_INFLIGHT);
  } else {
    release(vm, c->user_tag % FISRIG_VM_INFLIGHT);
  }
}

/* Hands every completion record waiting in the ring to the sink; returns how many, or
   -1 when the sink refused one. *last gets the last record reaped.
   The rig's CPU runs this for every command at line rate: each store it makes is a bus
   write (VexRiscv's data cache writes through) and each read of the ring a bus read, so a
   completion is read once and its record built without clearing it first. */
static FISRIG_VM_HOT int reap(struct fisrig_vm *vm, struct fisrig_cpl_record *last) {
  uint32_t tail = vm->ops.cq_tail(vm->ops.ctx);
  int n = 0;
  while (vm->cq_head != tail) {
    const struct fisrig_cpl_record *c = &vm->ops.cq[vm->cq_head & (vm->ops.cq_entries - 1)];
    uint32_t user_tag = c->user_tag;
    struct fisrig_run_record here, *r;
    struct fisrig_vm_inflight *f;
    vm->cq_head++;
    if (user_tag == FISRIG_USER_TAG_EVENT) {
      int news = reap_event(vm, c);
      vm->ops.cq_consumed(vm->ops.ctx, vm->cq_head);
      if (news < 0) return -1;
      n += news;
      continue;
    }
    /* A command's record, built where the sink keeps it if it says where. */
    r = vm->sink.place ? vm->sink.place(vm->sink.ctx) : &here;
    if (!r) {
      vm->ops.cq_consumed(vm->ops.ctx, vm->cq_head);
      return -1;
    }
    r->cpl = *c;
    f = &vm->inflight[user_tag % FISRIG_VM_INFLIGHT];
    memcpy(&r->marker, &f->tail, sizeof f->tail);
    r->detail = (uint8_t)(f->tail.detail | f->attempt << FISRIG_DETAIL_ATTEMPT_SHIFT);
    if (vm->outstanding) vm->outstanding--;
    vm->commands++;
    vm->bytes += (uint64_t)r->cpl.sectors * 512u;
    if (r->cpl.result != FISRIG_RESULT_OK) {
      reap_failed(vm, f, r);
    } else {
      vm->recoveries_in_row = 0;
      release(vm, user_tag % FISRIG_VM_INFLIGHT);
    }
    if (last) *last = r->cpl;
    n++;
    if (r == &here ? emit(vm, r) : vm->sink.placed(vm->sink.ctx) != 0) {
      vm->ops.cq_consumed(vm->ops.ctx, vm->cq_head);
      return -1;
    }
  }
  /* Once for the lot: the ring has room for every command in flight and more. */
  vm->ops.cq_consumed(vm->ops.ctx, vm->cq_head);
  return n;
}

/* Waits for at least one completion. */
static FISRIG_VM_HOT enum fisrig_vm_status wait_some(struct fisrig_vm *vm, struct fisrig_cpl_record *last) {
  uint64_t start = vm->ops.now(vm->ops.ctx);
  for (;;) {
    int n = reap(vm, last);
    if (n < 0) return FISRIG_VM_RECORDS_LOST;
    if (n > 0) return FISRIG_VM_DONE;
    if (vm->ops.now(vm->ops.ctx) - start >= vm->stuck_ticks) return FISRIG_VM_ENGINE_STUCK;
    vm->ops.wait(vm->ops.ctx, start + vm->stuck_ticks);
  }
}

static enum fisrig_vm_status drain(struct fisrig_vm *vm, struct fisrig_cpl_record *last) {
  while (vm->outstanding) {
    enum fisrig_vm_status s = wait_some(vm, last);
    if (s != FISRIG_VM_DONE) return s;
  }
  return FISRIG_VM_DONE;
}

/* LBAs a DSM range list covers (its entries' counts: bits 63:48 of each). */
static FISRIG_VM_WARM_COLD uint32_t dsm_lbas(const uint8_t *block, uint32_t bytes) {
  uint32_t i, n = 0;
  for (i = 0; i + 8 <= bytes; i += 8) n += (uint32_t)block[i + 6] | (uint32_t)block[i + 7] << 8;
  return n;
}

/* LBAs a descriptor covers, for its run record: a DSM's ranges, a read's or write's count. */
static uint32_t lbas_of(const struct fisrig_cmd_desc *d, const uint8_t *data, uint32_t data_bytes) {
  if (d->command == FISRIG_ATA_DATA_SET_MANAGEMENT || d->command == FISRIG_ATA_SEND_FPDMA_QUEUED) return data ? dsm_lbas(data, data_bytes) : 0;
  return fisrig_desc_dma_sectors(d);
}

/* Sends in-flight entry idx's descriptor: the submission ring, then the doorbell. */
static FISRIG_VM_HOT void send(struct fisrig_vm *vm, uint32_t idx) {
  vm->ops.sq[vm->sq_tail & (vm->ops.sq_entries - 1)] = vm->inflight[idx].desc;
  vm->sq_tail++;
  vm->outstanding++;
  vm->ops.doorbell(vm->ops.ctx, vm->sq_tail);
}

/* d's data (data_bytes) into its in-flight entry's place in the data window (d->user_tag),
   which d then names. */
static FISRIG_VM_WARM_COLD void stage(struct fisrig_vm *vm, struct fisrig_cmd_desc *d, const uint8_t *data,
                                 uint32_t data_bytes) {
  memcpy(vm->ops.data_window + d->user_tag * FISRIG_VM_DSM_BYTES, data, data_bytes);
  d->data_source = FISRIG_DATA_RAM;
  d->data_word = d->user_tag * FISRIG_VM_DSM_BYTES;
}

/* A free in-flight entry for a new descriptor. Never none: a generator's queue depth is at
   most 32 (program.h), its commands waiting to go again at most as many, and a raw command
   goes alone. */
static struct fisrig_vm_inflight *claim(struct fisrig_vm *vm) {
  return &vm->inflight[vm->free_tags[--vm->free_count]];
}

/* Sends claimed entry f's descriptor (f->desc, filled), with what its record will say;
   `data` (data_bytes) is staged for it. */
static FISRIG_VM_HOT void submit_entry(struct fisrig_vm *vm, struct fisrig_vm_inflight *f, uint8_t kind,
                                       const uint8_t *data, uint32_t data_bytes) {
  struct fisrig_cmd_desc *d = &f->desc;
  uint32_t idx = (uint32_t)(f - vm->inflight);
  f->attempt = 0;
  f->retried = 0;
  f->tail.marker = vm->marker;
  f->tail.command = d->command;
  f->tail.protocol = d->protocol;
  f->tail.kind = kind;
  f->tail.lba = get_lba(d->lba);
  f->tail.lbas = lbas_of(d, data, data_bytes);
  /* A write of the integrity stamp: its sequence and whether it was FUA, for a
     power-loss verdict (which writes were acknowledged durable). */
  f->tail.seq = d->data_source == FISRIG_DATA_STAMP ? d->data_word : 0;
  f->tail.detail = (d->command == FISRIG_ATA_WRITE_DMA_FUA_EXT || (d->command == FISRIG_ATA_WRITE_FPDMA_QUEUED && (d->device & FISRIG_ATA_DEVICE_FUA)))
                       ? FISRIG_DETAIL_FUA : 0;
  d->user_tag = idx;
  if (data_bytes) stage(vm, d, data, data_bytes); /* it stays at idx's place while f is used */
  send(vm, idx);
}

/* Puts descriptor d in the submission ring; `data` (data_bytes) is staged for it. */
static FISRIG_VM_WARM void submit(struct fisrig_vm *vm, const struct fisrig_cmd_desc *d, uint8_t kind, const uint8_t *data,
                                  uint32_t data_bytes) {
  struct fisrig_vm_inflight *f = claim(vm);
  f->desc = *d;
  submit_entry(vm, f, kind, data, data_bytes);
}
