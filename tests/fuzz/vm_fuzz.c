/*
 * libFuzzer target: the firmware VM (firmware/core/src/vm.c) decoding and running any bytes
 * as a program, against an engine that behaves as the fuzzer's first bytes say.
 *
 * Input: 4 bytes of engine behaviour, then the program.
 *   byte 0: bit 0 fetch lazily (descriptors wait in the ring until the VM waits),
 *           bit 1 the engine hangs (never completes anything: the VM must give up, not spin),
 *           bit 2 patch the program header's size to the input's (reach the instructions),
 *           bit 3 commands' records built in place (the sink's place and placed, vm.h),
 *           bits 4-7 completion latency: 1 << n ticks
 *   byte 1: every n-th completion fails (its result cycles through the non-OK ones); 0 none
 *   byte 2: every n-th completion is preceded by an engine event record (power cut); 0 none
 *   byte 3: descriptors after which the platform asks the VM to stop: 64 x (1 + n)
 * A run that submits nothing for a second of CPU time (loops of billions of passes with
 * nothing in them) is asked to stop then too, as the host stops a runaway plan: the VM
 * checks for a stop at every instruction.
 *
 * Besides the sanitizers' findings (address, undefined behaviour), the harness aborts when
 * the VM breaks what its platforms rely on:
 *   - it never has more descriptors in the submission ring than the ring holds;
 *   - a descriptor's staged data lies inside the data window;
 *   - every run ends with exactly one END record, the last, carrying the status returned;
 *   - no record is lost: every completion the engine posted reaches the sink (unless the
 *     VM gave up on a stuck engine, when what is still in flight cannot come back);
 *   - a program that fails validation submits nothing.
 */
#define _POSIX_C_SOURCE 200809L /* sigaction and setitimer under -std=c99 */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <stdlib.h>
#include <string.h>

#include "fisrig/vm.h"

#define SQ_ENTRIES 256u
#define CQ_ENTRIES 1024u
#define WINDOW_BYTES (FISRIG_VM_INFLIGHT * FISRIG_VM_DSM_BYTES)

struct engine {
  struct fisrig_cmd_desc sq[SQ_ENTRIES];
  struct fisrig_cpl_record cq[CQ_ENTRIES];
  uint8_t window[WINDOW_BYTES];
  uint32_t fetched, sq_tail_seen, cq_tail, cq_head;
  uint64_t now;
  /* fetched, not yet completed: a FIFO of sq indexes with their completion times */
  uint32_t pending[SQ_ENTRIES];
  uint64_t done_at[SQ_ENTRIES];
  uint32_t pending_head, pending_tail;
  /* behaviour */
  int lazy, hang;
  uint64_t latency;
  uint32_t fail_every, event_every, stop_after;
  /* counts */
  uint64_t completions, posted_commands, descriptors;
  struct fisrig_vm *vm;
};

struct sink {
  uint64_t commands, ends, records;
  uint8_t last_kind, end_result;
};

#define CHECK(cond) \
  do {              \
    if (!(cond)) abort(); \
  } while (0)

/* The rig's counter, compared as the VM compares it: modulo 2^64 (a program's idle may take
   it near the wrap, and a wait's deadline past it: regression workload-after-the-longest-idle). */
static int before(uint64_t a, uint64_t b) { return (int64_t)(a - b) < 0; }

static void post(struct engine *e, struct fisrig_cpl_record r) {
  CHECK(e->cq_tail - e->cq_head < CQ_ENTRIES); /* the VM reaps before it can overrun */
  e->cq[e->cq_tail++ & (CQ_ENTRIES - 1)] = r;
}

static void fetch(struct engine *e) {
  while (e->fetched != e->sq_tail_seen) {
    const struct fisrig_cmd_desc *d = &e->sq[e->fetched & (SQ_ENTRIES - 1)];
    /* The engine's rule (engine_if.h's fisrig_desc_ram_bytes, the gateware's
       outside_window): the bytes a descriptor moves lie in the window, so one that moves none
       may name its end (regression raw-no-data-naming-the-window-end), and a RAW op's staged
       data-out moves no more than its 512-byte block (raw-staged-data-moving-more-than-its-block). */
    if (d->data_source == FISRIG_DATA_RAM)
      CHECK((uint64_t)d->data_word + fisrig_desc_ram_bytes(d) <= WINDOW_BYTES);
    CHECK(e->pending_tail - e->pending_head < SQ_ENTRIES);
    e->pending[e->pending_tail & (SQ_ENTRIES - 1)] = e->fetched & (SQ_ENTRIES - 1);
    e->done_at[e->pending_tail & (SQ_ENTRIES - 1)] = e->now + e->latency;
    e->pending_tail++;
    e->fetched++;
  }
}

/* Completes what is due by now. */
static void complete_due(struct engine *e) {
  static const uint8_t failures[] = {FISRIG_RESULT_ATA_ERROR, FISRIG_RESULT_NCQ_ABORTED, FISRIG_RESULT_TIMEOUT,
                                     FISRIG_RESULT_LINK_LOST, FISRIG_RESULT_CHECK_FAILED, FISRIG_RESULT_REFUSED,
                                     FISRIG_RESULT_DATA_CRC, FISRIG_RESULT_LENGTH};
  if (e->hang) return;
  while (e->pending_head != e->pending_tail && !before(e->now, e->done_at[e->pending_head & (SQ_ENTRIES - 1)])) {
    const struct fisrig_cmd_desc *d = &e->sq[e->pending[e->pending_head & (SQ_ENTRIES - 1)]];
    struct fisrig_cpl_record r;
    e->pending_head++;
    e->completions++;
    if (e->event_every && e->completions % e->event_every == 0) {
      memset(&r, 0, sizeof r);
      r.user_tag = FISRIG_USER_TAG_EVENT;
      r.slot = FISRIG_EVENT_REC_POWER_CUT;
      r.result = FISRIG_RESULT_LINK_LOST;
      r.ts_submit = r.ts_status = e->now;
      post(e, r);
    }
    memset(&r, 0, sizeof r);
    r.user_tag = d->user_tag;
    r.ts_submit = e->now - e->latency;
    r.ts_status = e->now;
    r.sectors = d->count;
    r.data_dwords = (uint32_t)d->count * 128u;
    if (e->fail_every && e->completions % e->fail_every == 0) {
      r.result = failures[(e->completions / e->fail_every) % sizeof failures];
      r.status = 0x51;
      r.error = 0x04;
    }
    post(e, r);
    e->posted_commands++;
  }
}

static void engine_doorbell(void *ctx, uint32_t tail) {
  struct engine *e = ctx;
  CHECK(tail - e->fetched <= SQ_ENTRIES); /* never more than the ring holds */
  e->descriptors += tail - e->sq_tail_seen;
  e->sq_tail_seen = tail;
  if (e->descriptors >= e->stop_after) e->vm->stop_requested = 1;
  if (!e->lazy) fetch(e);
}

static uint32_t engine_sq_head(void *ctx) { return ((struct engine *)ctx)->fetched; }

static uint32_t engine_cq_tail(void *ctx) {
  struct engine *e = ctx;
  complete_due(e);
  return e->cq_tail;
}

static void engine_cq_consumed(void *ctx, uint32_t head) {
  struct engine *e = ctx;
  CHECK(head - e->cq_head <= e->cq_tail - e->cq_head); /* the VM consumes only what was posted */
  e->cq_head = head;
}

static uint64_t engine_now(void *ctx) { return ((struct engine *)ctx)->now; }

static void engine_wait(void *ctx, uint64_t until) {
  struct engine *e = ctx;
  uint64_t next = until;
  fetch(e);
  if (!e->hang && e->pending_head != e->pending_tail && before(e->done_at[e->pending_head & (SQ_ENTRIES - 1)], next))
    next = e->done_at[e->pending_head & (SQ_ENTRIES - 1)];
  if (before(e->now, next)) e->now = next;
  else e->now++; /* time passes while a platform waits */
}

static int sink_emit(void *ctx, const struct fisrig_run_record *r) {
  struct sink *s = ctx;
  CHECK(s->ends == 0); /* nothing after the END record */
  s->records++;
  s->last_kind = r->kind;
  if (r->kind == FISRIG_RECORD_END) {
    s->ends++;
    s->end_result = r->cpl.result;
  } else if (r->kind == FISRIG_RECORD_STAMP) {
    /* a verify pass's finding: a run of at most one read's sectors, of a known finding */
    CHECK(r->detail >= FISRIG_FOUND_STAMP && r->detail <= FISRIG_FOUND_UNREADABLE);
    CHECK(r->lbas >= 1 && r->lbas <= FISRIG_VERIFY_MAX_SECTORS);
  } else if (r->kind == FISRIG_RECORD_IDENTIFY) {
    /* its IDENTIFY command has a record of its own */
  } else if (r->kind == FISRIG_RECORD_SMART) {
    /* a SMART reading's attribute: its SMART READ DATA has a record of its own */
    CHECK(r->lbas >= 1 && r->lbas <= 255 && r->detail <= 1);
  } else if (r->kind != FISRIG_RECORD_LOOP_PASS && r->cpl.user_tag != FISRIG_USER_TAG_EVENT) {
    s->commands++;
  }
  return 0;
}

/* The same checks for a record built in place (vm.h's place and placed, as the rig's
   firmware takes them): a slot poisoned before each. */
static struct fisrig_run_record slot;
static struct fisrig_run_record *sink_place(void *ctx) {
  (void)ctx;
  memset(&slot, 0xA5, sizeof slot);
  return &slot;
}

static int sink_placed(void *ctx) { return sink_emit(ctx, &slot); }

/* A second of this process's CPU time in one run, and the platform asks the VM to stop
   (ITIMER_VIRTUAL: libFuzzer's own -timeout takes SIGALRM). */
static struct fisrig_vm *volatile stop_vm;
static void stop_on_alarm(int sig) {
  (void)sig;
  if (stop_vm) stop_vm->stop_requested = 1;
}
static void arm_stop(struct fisrig_vm *vm, long seconds) {
  static int installed;
  struct itimerval t;
  if (!installed) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = stop_on_alarm;
    sigaction(SIGVTALRM, &sa, NULL);
    installed = 1;
  }
  stop_vm = vm;
  memset(&t, 0, sizeof t);
  t.it_value.tv_sec = seconds;
  setitimer(ITIMER_VIRTUAL, &t, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct engine e;
  static struct fisrig_vm vm;
  static uint8_t program[1 << 20];
  struct sink s;
  struct fisrig_engine_ops ops;
  struct fisrig_record_sink sink = {&s, sink_emit, 0, 0};
  enum fisrig_vm_status status, valid;
  uint32_t n;

  if (size < 4 || size - 4 > sizeof program) return 0;
  memset(&e, 0, sizeof e);
  memset(&s, 0, sizeof s);
  e.lazy = data[0] & 1;
  e.hang = data[0] >> 1 & 1;
  if (data[0] >> 3 & 1) { /* commands' records built in place */
    sink.place = sink_place;
    sink.placed = sink_placed;
  }
  e.latency = (uint64_t)1 << (data[0] >> 4);
  e.fail_every = data[1];
  e.event_every = data[2];
  e.stop_after = 64u * (1u + data[3]);
  e.vm = &vm;
  n = (uint32_t)(size - 4);
  memcpy(program, data + 4, n);
  if (data[0] & 4 && n >= sizeof(struct fisrig_program_header))
    memcpy(program + offsetof(struct fisrig_program_header, size), &n, sizeof n);

  memset(&ops, 0, sizeof ops);
  ops.ctx = &e;
  ops.sq = e.sq;
  ops.sq_entries = SQ_ENTRIES;
  ops.cq = e.cq;
  ops.cq_entries = CQ_ENTRIES;
  ops.data_window = e.window;
  ops.data_window_bytes = WINDOW_BYTES;
  ops.doorbell = engine_doorbell;
  ops.sq_head = engine_sq_head;
  ops.cq_tail = engine_cq_tail;
  ops.cq_consumed = engine_cq_consumed;
  ops.now = engine_now;
  ops.wait = engine_wait;

  fisrig_vm_init(&vm, &ops, &sink);
  valid = fisrig_vm_validate(&vm, program, n);
  fisrig_vm_init(&vm, &ops, &sink);
  arm_stop(&vm, 1);
  status = fisrig_vm_run(&vm, program, n);
  arm_stop(NULL, 0);

  CHECK(status <= FISRIG_VM_STOPPED);
  CHECK(status != FISRIG_VM_RECORDS_LOST); /* this sink never refuses */
  CHECK(s.ends == 1 && s.last_kind == FISRIG_RECORD_END && s.end_result == status);
  if (valid != FISRIG_VM_DONE) CHECK(status == FISRIG_VM_BAD_PROGRAM && e.descriptors == 0);
  if (status == FISRIG_VM_BAD_PROGRAM || status == FISRIG_VM_EXPECT_FAILED) CHECK(vm.error_text != NULL);
  if (status != FISRIG_VM_ENGINE_STUCK) {
    CHECK(!e.hang || e.descriptors == 0);        /* a hung engine is found out */
    CHECK(s.commands == e.posted_commands);      /* no record lost */
    CHECK(e.posted_commands == e.descriptors);   /* every descriptor waited for */
    CHECK(e.cq_head == e.cq_tail);
  }
  return 0;
}
