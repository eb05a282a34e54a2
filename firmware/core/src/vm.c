/* The program VM: instruction decoding, the workload generators, and the descriptor rings. */
#include "fisrig/vm.h"

#include "fisrig/ata.h"
#include "fisrig/divide.h"
#include "fisrig/pattern.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define DSM_ENTRIES_PER_BLOCK 64u
#define DSM_MAX_RANGE 0xFFFFu

/* ---- small helpers ---- */

/* Paths a line-rate workload never takes, kept out of the way of those it does: the rig
   CPU's instruction cache (VexRiscv, 4 KiB, direct-mapped) holds the hot ones only if they
   are few and together. */
#if defined(__GNUC__)
#define FISRIG_VM_COLD __attribute__((cold, noinline))
#define FISRIG_VM_HOT __attribute__((hot))
#define FISRIG_VM_NOINLINE __attribute__((noinline))
/* A TRIM instruction's per-command path: linked right after the hot functions
   (baremetal/linker.ld), so what vm.c's other code grows by does not move it in the cache.
   A check added to validation moved it by 16 bytes and made the rig's TRIMs 2.7% slower
   than the model's CPU times fitted to it (sim/model/vm_cpu_time.h). */
#define FISRIG_VM_WARM __attribute__((noinline, section(".text.warm")))
/* Called from the hot submit_entry on a TRIM's only: still cold there (its branch goes to
   submit_entry's cold part), with the TRIM path in the cache. */
#define FISRIG_VM_WARM_COLD __attribute__((cold, noinline, section(".text.warm")))
/* What runs once a phase, as it starts (a workload's setup, the instruction loop): linked
   after the cold parts (baremetal/linker.ld), so that plain code added (a check, another
   instruction) does not move it; hot, warm or cold code that grows still does. Where it lies in the cache decides when a phase's first command goes, and at queue
   depth 32 with 128 KiB writes that decided whether every status from one on was held
   behind the next command's data phase (p99.9 447.7 or 671.4 us on rtl). */
#define FISRIG_VM_PHASE __attribute__((noinline, section(".text.phase")))
#else
#define FISRIG_VM_NOINLINE
#define FISRIG_VM_COLD
#define FISRIG_VM_HOT
#define FISRIG_VM_WARM
#define FISRIG_VM_WARM_COLD
#define FISRIG_VM_PHASE
#endif

_Static_assert(offsetof(struct fisrig_run_record, marker) == sizeof(struct fisrig_cpl_record) &&
                   sizeof(struct fisrig_run_record) - offsetof(struct fisrig_run_record, marker) ==
                       sizeof(struct fisrig_vm_record_tail) &&
                   offsetof(struct fisrig_run_record, lba) - offsetof(struct fisrig_run_record, marker) ==
                       offsetof(struct fisrig_vm_record_tail, lba) &&
                   offsetof(struct fisrig_run_record, seq) - offsetof(struct fisrig_run_record, marker) ==
                       offsetof(struct fisrig_vm_record_tail, seq),
               "a command's record tail is laid out as the run record's");

/* xorshift64*: fast, and the same sequence on every platform. rng_skip moves it on as a
   draw whose value is not needed (a workload of one size or one operation). */
static FISRIG_VM_HOT FISRIG_VM_NOINLINE void rng_skip(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
}

static uint64_t rng_next(uint64_t *s) {
  rng_skip(s);
  return *s * 0x2545F4914F6CDD1Dull;
}

/* Straight-line, both: with a loop's 64-bit shifts each cost the rig's CPU about 50
   instructions a command. */
static void put_lba(uint8_t lba[6], uint64_t v) {
  uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
  lba[0] = (uint8_t)lo;
  lba[1] = (uint8_t)(lo >> 8);
  lba[2] = (uint8_t)(lo >> 16);
  lba[3] = (uint8_t)(lo >> 24);
  lba[4] = (uint8_t)hi;
  lba[5] = (uint8_t)(hi >> 8);
}

static uint64_t get_lba(const uint8_t lba[6]) {
  uint32_t lo = (uint32_t)lba[0] | (uint32_t)lba[1] << 8 | (uint32_t)lba[2] << 16 | (uint32_t)lba[3] << 24;
  uint32_t hi = (uint32_t)lba[4] | (uint32_t)lba[5] << 8;
  return (uint64_t)hi << 32 | lo;
}

static enum fisrig_vm_status bad(struct fisrig_vm *vm, uint32_t offset, const char *why) {
  vm->error_offset = offset;
  vm->error_text = why;
  return FISRIG_VM_BAD_PROGRAM;
}

const char *fisrig_vm_status_name(enum fisrig_vm_status status) {
  switch (status) {
    case FISRIG_VM_DONE: return "done";
    case FISRIG_VM_BAD_PROGRAM: return "bad_program";
    case FISRIG_VM_EXPECT_FAILED: return "expect_failed";
    case FISRIG_VM_ENGINE_STUCK: return "engine_stuck";
    case FISRIG_VM_RECORDS_LOST: return "records_lost";
    case FISRIG_VM_STOPPED: return "stopped";
  }
  return "unknown";
}

void fisrig_vm_init(struct fisrig_vm *vm, const struct fisrig_engine_ops *ops,
                    const struct fisrig_record_sink *sink) {
  memset(vm, 0, sizeof *vm);
  vm->ops = *ops;
  vm->sink = *sink;
  /* Longer than any command's own timeout (the default is the longest a descriptor can have)
     and the COMRESET recovery after one: an engine that times a command out is not stuck. */
  vm->stuck_ticks = 2 * FISRIG_DEFAULT_TIMEOUT_TICKS;
  /* The rings outlive a run: start where the engine is, not at zero. */
  vm->sq_tail = ops->sq_head(ops->ctx);
  vm->cq_head = ops->cq_tail(ops->ctx);
  for (vm->free_count = 0; vm->free_count < FISRIG_VM_INFLIGHT; ++vm->free_count)
    vm->free_tags[vm->free_count] = (uint8_t)(FISRIG_VM_INFLIGHT - 1 - vm->free_count);
}

/* In-flight entry idx is free again. */
static void release(struct fisrig_vm *vm, uint32_t idx) {
  vm->free_tags[vm->free_count++] = (uint8_t)idx;
}

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
static int goes_again(struct fisrig_vm *vm, struct fisrig_vm_inflight *f, uint8_t result) {
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

/* ---- the error policy: commands sent again, a lost link recovered ---- */

static int requeue_waiting(const struct fisrig_vm *vm) { return vm->requeue_head != vm->requeue_tail; }

/* The oldest command waiting to go again goes, its attempt one more. */
static FISRIG_VM_COLD void resend(struct fisrig_vm *vm) {
  uint32_t idx = vm->requeue[vm->requeue_head++ % FISRIG_VM_INFLIGHT];
  struct fisrig_vm_inflight *f = &vm->inflight[idx];
  f->attempt++;
  send(vm, idx);
}

/* Commands that were to go again and will not (the instruction ended): their records
   said how they failed. */
static void drop_requeued(struct fisrig_vm *vm) {
  while (requeue_waiting(vm)) release(vm, vm->requeue[vm->requeue_head++ % FISRIG_VM_INFLIGHT]);
}

/* One LINK descriptor (a LINK record), waited for; its completion in *done. */
static enum fisrig_vm_status link_op(struct fisrig_vm *vm, uint8_t op, struct fisrig_cpl_record *done) {
  struct fisrig_cmd_desc d;
  memset(&d, 0, sizeof d);
  d.protocol = FISRIG_PROTO_LINK;
  d.command = op;
  d.timeout_ticks = vm->link_timeout_ticks;
  submit(vm, &d, FISRIG_RECORD_LINK, NULL, 0);
  return drain(vm, done);
}

/* A link lost without the plan's cut, nothing outstanding: wait for it to come back (the
   engine resets the drive itself after a timeout, and its PHY goes through OOB again after
   a fall: a second reset would cost the drive another power-on handshake), and reset it
   with a COMRESET when it does not come back within the policy's link timeout. Each is a
   LINK record. A link that falls again and again with no command ending OK between is given
   up (the instruction ends, link_lost still set). */
static FISRIG_VM_COLD enum fisrig_vm_status recover_link(struct fisrig_vm *vm) {
  struct fisrig_cpl_record done;
  enum fisrig_vm_status s;
  if (vm->recoveries_in_row >= FISRIG_VM_RECOVERIES_MAX) return FISRIG_VM_DONE;
  vm->recoveries_in_row++;
  s = link_op(vm, FISRIG_LINK_WAIT_UP, &done);
  if (s == FISRIG_VM_DONE && done.result != FISRIG_RESULT_OK) s = link_op(vm, FISRIG_LINK_COMRESET, &done);
  if (s == FISRIG_VM_DONE && done.result == FISRIG_RESULT_OK) vm->link_lost = 0;
  return s;
}

/* What a generator (workload, trace) does next, its queue depth and mode given and `more`
   saying whether it has new commands to draw: a new one (NEXT_NEW), something else done
   (a command sent again, the link recovered, a completion waited for: NEXT_AGAIN), or the
   end (NEXT_END; *s says whether the run goes on). */
enum next_step { NEXT_NEW, NEXT_AGAIN, NEXT_END };

static FISRIG_VM_HOT enum next_step next_step(struct fisrig_vm *vm, int more, uint32_t queue_depth, int ncq,
                                enum fisrig_vm_status *s) {
  /* After the plan's cut the drive may run on (staged rails) until its link falls: the
     generator goes on until then, and ends there. */
  int halt = (vm->power_cut && vm->link_lost) || vm->stop_requested;
  int room = vm->outstanding < queue_depth && (ncq || vm->outstanding == 0);
  *s = FISRIG_VM_DONE;
  if (vm->link_lost && !halt) {
    if (!vm->outstanding) { /* everything in flight has ended: recover, or give up */
      *s = recover_link(vm);
      return *s != FISRIG_VM_DONE || vm->link_lost ? NEXT_END : NEXT_AGAIN;
    }
  } else if (!halt && room && requeue_waiting(vm)) {
    resend(vm);
    return NEXT_AGAIN;
  } else if (!halt && room && more) {
    return NEXT_NEW;
  } else if (!vm->outstanding && (halt || !requeue_waiting(vm))) {
    return NEXT_END;
  }
  *s = wait_some(vm, NULL);
  return *s == FISRIG_VM_DONE ? NEXT_AGAIN : NEXT_END;
}

/* A generator starts: its commands follow the policy, nothing lost or cut yet. */
static void generator_begin(struct fisrig_vm *vm) {
  vm->link_lost = 0;
  vm->power_cut = 0;
  vm->recoveries_in_row = 0;
  vm->requeue_on = 1;
}

static enum fisrig_vm_status generator_end(struct fisrig_vm *vm, enum fisrig_vm_status s) {
  drop_requeued(vm);
  vm->requeue_on = 0;
  if (s != FISRIG_VM_DONE) return s;
  return vm->stop_requested ? FISRIG_VM_STOPPED : FISRIG_VM_DONE;
}

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

/* ---- the verify pass (struct fisrig_op_verify) ---- */

static uint32_t le32(const uint8_t *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint32_t popcount32(uint32_t x) {
  uint32_t n = 0;
  for (; x; x &= x - 1) n++;
  return n;
}

/* What one sector read back holds (enum fisrig_finding), the write sequence its stamp
   carries, the LBA it names and, for a damaged stamp, its bits that differ from the whole
   stamp of that LBA and sequence. */
struct finding {
  uint8_t what;
  uint32_t seq;
  uint64_t lba;
  uint32_t bits;
};

static struct finding decode_sector(const uint8_t *data, uint64_t lba) {
  struct finding f;
  uint32_t w[FISRIG_SECTOR_DWORDS], i, any = 0, crc = FISRIG_CRC_SEED, pct;
  for (i = 0; i < FISRIG_SECTOR_DWORDS; ++i) any |= w[i] = le32(data + 4 * i);
  memset(&f, 0, sizeof f);
  f.lba = lba;
  if (!any) {
    f.what = FISRIG_FOUND_ZEROS;
    return f;
  }
  pct = (w[1] >> 16) & 0xFFu;
  if (w[1] >> 24 != FISRIG_STAMP_MAGIC || pct > 100) {
    f.what = FISRIG_FOUND_FOREIGN;
    return f;
  }
  f.seq = w[2];
  f.lba = (uint64_t)w[0] | (uint64_t)(w[1] & 0xFFFFu) << 32;
  crc = fisrig_crc32_dwords(crc, w, FISRIG_SECTOR_DWORDS - 1);
  if (crc == w[FISRIG_SECTOR_DWORDS - 1]) {
    f.what = f.lba == lba ? FISRIG_FOUND_STAMP : FISRIG_FOUND_OTHER_LBA;
    return f;
  }
  if (f.lba != lba) { /* a header that names another LBA and a failed CRC: not a stamp */
    f.what = FISRIG_FOUND_FOREIGN;
    f.lba = lba;
    f.seq = 0;
    return f;
  }
  {
    uint32_t good[FISRIG_SECTOR_DWORDS], bits = 0;
    fisrig_pattern_sector(FISRIG_PATTERN_STAMP, lba, f.seq, (uint8_t)pct, good);
    for (i = 0; i < FISRIG_SECTOR_DWORDS; ++i) bits += popcount32(good[i] ^ w[i]);
    f.what = FISRIG_FOUND_DAMAGED;
    f.bits = bits > 0xFFFFu ? 0xFFFFu : bits;
  }
  return f;
}

/* Sectors [lba, lba + n) of one read: each run of sectors with one finding (a stamp run:
   one sequence, the LBAs it names rising with them) as a STAMP record. A damaged sector is
   a record of its own (its bit count is its own). */
static enum fisrig_vm_status emit_findings(struct fisrig_vm *vm, const struct fisrig_cpl_record *read,
                                           uint64_t lba, uint32_t n) {
  struct fisrig_run_record r;
  struct finding run, f;
  uint32_t i, len = 0;
  int failed = read->result != FISRIG_RESULT_OK;
  memset(&r, 0, sizeof r);
  r.cpl = *read;
  r.marker = vm->marker;
  r.kind = FISRIG_RECORD_STAMP;
  r.command = FISRIG_ATA_READ_DMA_EXT;
  r.protocol = FISRIG_PROTO_DMA_IN;
  if (failed) {
    r.detail = FISRIG_FOUND_UNREADABLE;
    r.lba = lba;
    r.lbas = n;
    return emit(vm, &r) ? FISRIG_VM_RECORDS_LOST : FISRIG_VM_DONE;
  }
  if (vm->ops.data_in) vm->ops.data_in(vm->ops.ctx);
  memset(&run, 0, sizeof run);
  for (i = 0; i <= n; ++i) {
    int joins = 0;
    if (i < n) {
      f = decode_sector(vm->ops.data_window + (uint64_t)i * 512u, lba + i);
      joins = len && f.what == run.what && f.what != FISRIG_FOUND_DAMAGED && f.seq == run.seq &&
              f.lba == run.lba + len;
    }
    if (len && !joins) {
      r.detail = run.what;
      r.seq = run.seq;
      r.lba = lba + i - len;
      r.lbas = len;
      put_lba(r.cpl.lba, run.lba);
      r.cpl.check_errors = (uint16_t)run.bits;
      if (emit(vm, &r)) return FISRIG_VM_RECORDS_LOST;
      len = 0;
    }
    if (i < n) {
      if (!len) run = f;
      len++;
    }
  }
  return FISRIG_VM_DONE;
}

static enum fisrig_vm_status run_verify(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_verify verify;
  const struct fisrig_op_verify *op = op_at(c, &verify, sizeof verify);
  uint64_t lba = op->lba_start, end = op->lba_start + op->sectors;
  struct fisrig_cmd_desc d;
  struct fisrig_cpl_record done;
  enum fisrig_vm_status s = drain(vm, NULL);
  if (s != FISRIG_VM_DONE) return s;
  if (op->identify) {
    struct fisrig_run_record r;
    uint32_t crc = FISRIG_CRC_SEED, i;
    memset(&d, 0, sizeof d);
    d.protocol = FISRIG_PROTO_PIO_IN;
    d.command = FISRIG_ATA_IDENTIFY_DEVICE;
    d.count = 1;
    d.data_source = FISRIG_DATA_RAM;
    d.timeout_ticks = op->timeout_ticks;
    memset(vm->ops.data_window, 0, 512);
    submit(vm, &d, FISRIG_RECORD_COMMAND, NULL, 0);
    s = drain(vm, &done);
    if (s != FISRIG_VM_DONE) return s;
    memset(&r, 0, sizeof r);
    r.cpl = done;
    r.marker = vm->marker;
    r.kind = FISRIG_RECORD_IDENTIFY;
    r.command = FISRIG_ATA_IDENTIFY_DEVICE;
    r.protocol = FISRIG_PROTO_PIO_IN;
    if (done.result == FISRIG_RESULT_OK) {
      const uint8_t *w = vm->ops.data_window;
      if (vm->ops.data_in) vm->ops.data_in(vm->ops.ctx);
      r.lba = (uint64_t)le32(w + 200) | (uint64_t)(le32(w + 204) & 0xFFFFu) << 32; /* words 100-103 */
      for (i = 0; i < FISRIG_SECTOR_DWORDS; ++i) crc = fisrig_crc32_step(crc, le32(w + 4 * i));
      r.seq = crc;
    }
    if (emit(vm, &r)) return FISRIG_VM_RECORDS_LOST;
  }
  while (lba < end) {
    uint32_t n = end - lba < op->sectors_per_read ? (uint32_t)(end - lba) : op->sectors_per_read;
    memset(&d, 0, sizeof d);
    d.protocol = FISRIG_PROTO_DMA_IN;
    d.command = FISRIG_ATA_READ_DMA_EXT;
    d.device = 0x40;
    d.count = (uint16_t)n;
    d.data_source = FISRIG_DATA_RAM; /* at data_word 0: nothing else is in flight */
    d.timeout_ticks = op->timeout_ticks;
    put_lba(d.lba, lba);
    submit(vm, &d, FISRIG_RECORD_COMMAND, NULL, 0);
    s = drain(vm, &done);
    if (s != FISRIG_VM_DONE) return s;
    s = emit_findings(vm, &done, lba, n);
    if (s != FISRIG_VM_DONE) return s;
    lba += n;
    if (vm->stop_requested) return FISRIG_VM_STOPPED;
  }
  return FISRIG_VM_DONE;
}

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

static const char *check_trace(struct cursor *c) {
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

static const char *check_workload(struct cursor *c) {
  struct fisrig_op_workload workload;
  const struct fisrig_op_workload *w = op_at(c, &workload, sizeof workload);
  uint32_t i, weights = 0;
  if (w->queue_depth < 1 || w->queue_depth > FISRIG_ENGINE_SLOTS) return "queue depth must be 1..32";
  if (!w->ncq && w->queue_depth != 1) return "DMA (non-NCQ) workloads run at queue depth 1";
  if (w->sizes < 1 || w->sizes > 8) return "1..8 transfer sizes";
  if (w->flags & ~(uint32_t)FISRIG_WORKLOAD_SEED_PER_PASS) return "unknown workload flags";
  for (i = 0; i < w->sizes; ++i) {
    if (w->size_sectors[i] < 1 || w->size_sectors[i] > 65536) return "transfer size must be 1..65536 sectors";
    if (w->size_sectors[i] > w->lba_span) return "transfer size larger than the LBA span";
    weights += w->size_weight[i];
  }
  if (!weights) return "transfer size weights are all zero";
  if ((uint32_t)w->read_pct + w->trim_pct + w->flush_pct > 100) return "read + trim + flush over 100%";
  if (!w->stop_commands && !w->stop_bytes && !w->stop_ticks) return "no stop condition";
  if (!w->lba_span) return "empty LBA span";
  if (c->capacity && w->lba_start + w->lba_span > c->capacity) return "LBA span past the end of the drive";
  if (w->pattern > FISRIG_PATTERN_ZIPF) return "unknown access pattern";
  if (w->data_source > FISRIG_DATA_LFSR || w->data_source == FISRIG_DATA_RAM)
    return "workload writes need a generated data source";
  if (c->steady_depth && steady_loop(c).steady_pc == c->pc) c->steady_found = 1;
  return NULL;
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
  [FISRIG_OP_TRACE] = {sizeof(struct fisrig_op_trace), check_trace, run_trace},
  [FISRIG_OP_VERIFY] = {sizeof(struct fisrig_op_verify), check_verify, run_verify},
  [FISRIG_OP_POLICY] = {sizeof(struct fisrig_op_policy), check_policy, run_policy},
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
