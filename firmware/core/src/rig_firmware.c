/* What the bare-metal and the Zephyr firmware do the same around the VM (fisrig/rig_firmware.h). */
#include "fisrig/rig_firmware.h"

#include <stdio.h>
#include <string.h>

/* The record sink's place and placed run for every command: marked hot, they are linked with
   the VM's other per-command code, in the instruction cache together (firmware/baremetal's
   linker.ld, firmware/zephyr's hot_text.ld). */
#if defined(__GNUC__)
#define FISRIG_FW_HOT __attribute__((hot))
#define FISRIG_FW_COLD __attribute__((cold, noinline))
#else
#define FISRIG_FW_HOT
#define FISRIG_FW_COLD
#endif

void fisrig_fw_ring_reset(struct fisrig_fw_ring *r, uint8_t *area, uint32_t bytes) {
  uintptr_t at = ((uintptr_t)area + FISRIG_RECORD_RING_ALIGN - 1) & ~(uintptr_t)(FISRIG_RECORD_RING_ALIGN - 1);
  uint32_t skip = (uint32_t)(at - (uintptr_t)area);
  uint32_t fit = bytes > skip ? (bytes - skip) / (uint32_t)sizeof(struct fisrig_run_record) : 0;
  uint32_t entries = fit ? 1u : 0u;
  while (entries && entries <= fit / 2) entries <<= 1;
  r->rec = (struct fisrig_run_record *)at;
  r->entries = entries;
  r->tail = 0;
  r->ring->entries = entries;
  r->ring->records_at = (uint32_t)at;
  r->ring->tail = 0;
  r->ring->head = 0;
  r->records = 0;
  r->waits = 0;
  r->wait_ticks = 0;
}

void fisrig_fw_ring_place(struct fisrig_fw_ring *r, const uint8_t *program, uint32_t program_bytes, uint32_t room) {
  uint32_t used = program_bytes < room ? program_bytes : room;
  fisrig_fw_ring_reset(r, (uint8_t *)(uintptr_t)program + used, room - used);
}

/* The host is behind (or there is no room at all): wait for it to take a record, counting
   the ticks. */
static FISRIG_FW_COLD int wait_for_host(struct fisrig_fw_ring *r) {
  uint64_t t0 = r->now(r->now_ctx);
  while (r->tail - r->ring->head >= r->entries) {
    if (r->stop && *r->stop) return -1;
  }
  r->wait_ticks += r->now(r->now_ctx) - t0;
  ++r->waits;
  return 0;
}

/* With no room at all (entries 0) a record waits until the run is stopped. */
static FISRIG_FW_HOT struct fisrig_run_record *ring_place(void *ctx) {
  struct fisrig_fw_ring *r = ctx;
  if (r->tail - r->ring->head >= r->entries && wait_for_host(r)) return 0;
  return &r->rec[r->tail & (r->entries - 1u)];
}

static FISRIG_FW_HOT int ring_placed(void *ctx) {
  struct fisrig_fw_ring *r = ctx;
  r->ring->tail = ++r->tail; /* after the record: the stores reach the bus in order */
  ++r->records;
  return 0;
}

static int ring_emit(void *ctx, const struct fisrig_run_record *rec) {
  struct fisrig_run_record *slot = ring_place(ctx);
  if (!slot) return -1;
  *slot = *rec;
  return ring_placed(ctx);
}

struct fisrig_record_sink fisrig_fw_ring_sink(struct fisrig_fw_ring *r) {
  struct fisrig_record_sink s = {r, ring_emit, ring_place, ring_placed};
  return s;
}

const char *fisrig_fw_u64_text(uint64_t v, char buf[21]) {
  char *p = buf + 20;
  *p = 0;
  do {
    *--p = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  return p;
}

int fisrig_fw_outcome_line(char *out, unsigned bytes, const struct fisrig_vm *vm, const struct fisrig_fw_run *run) {
  char b[5][21];
  const char *error = run->error ? run->error : vm->error_text ? vm->error_text : "";
  return snprintf(out, bytes,
                  "{\"status\": \"%s\", \"records\": %s, \"commands\": %s, \"errors\": %s, "
                  "\"sim_ns\": %s, \"wall_s\": 0, \"error_offset\": %lu, \"error\": \"%s\", "
                  "\"start_late_ticks\": %lu, \"ring_waits\": %lu, \"ring_wait_ticks\": %s}",
                  fisrig_vm_status_name(run->status), fisrig_fw_u64_text(run->records, b[0]),
                  fisrig_fw_u64_text(vm->commands, b[1]), fisrig_fw_u64_text(vm->errors, b[2]),
                  fisrig_fw_u64_text(run->now_ns, b[3]), (unsigned long)vm->error_offset, error,
                  (unsigned long)run->late_ticks, (unsigned long)run->ring_waits,
                  fisrig_fw_u64_text(run->ring_wait_ticks, b[4]));
}

int fisrig_fw_bus_line(char *out, unsigned bytes, const struct fisrig_fw_bus *before,
                       const struct fisrig_fw_bus *after, uint64_t commands) {
  uint32_t n = commands ? (uint32_t)commands : 1u;
  return snprintf(out, bytes,
                  "fisrig firmware: cpu cycles a command %lu; instruction bus %lu words, %lu cycles busy; "
                  "data bus %lu words, %lu cycles busy",
                  (unsigned long)((after->ticks - before->ticks) / n),
                  (unsigned long)((after->ibus_words - before->ibus_words) / n),
                  (unsigned long)((after->ibus_busy - before->ibus_busy) / n),
                  (unsigned long)((after->dbus_words - before->dbus_words) / n),
                  (unsigned long)((after->dbus_busy - before->dbus_busy) / n));
}

void fisrig_fw_record_line(char out[FISRIG_FW_RECORD_LINE_BYTES], const struct fisrig_run_record *r) {
  static const char hex[] = "0123456789abcdef";
  const uint8_t *b = (const uint8_t *)r;
  char *p = out;
  *p++ = 'R';
  *p++ = ' ';
  for (unsigned i = 0; i < sizeof *r; ++i) {
    *p++ = hex[b[i] >> 4];
    *p++ = hex[b[i] & 15];
  }
  *p = 0;
}

void fisrig_fw_mailbox_open(struct fisrig_mailbox *mb, const struct fisrig_record_ring *ring, uint32_t program_room) {
  mb->state = FISRIG_MAILBOX_IDLE;
  mb->program_bytes = 0;
  mb->ring_at = (uint32_t)(uintptr_t)ring;
  mb->runs = 0;
  mb->program_room = program_room;
  mb->outcome[0] = 0;
  mb->magic = FISRIG_MAILBOX_MAGIC; /* last: the host takes the magic as "serving" */
}

int32_t fisrig_fw_mailbox_take(const struct fisrig_mailbox *mb) {
  return mb->state == FISRIG_MAILBOX_GO ? (int32_t)mb->program_bytes : -1;
}

void fisrig_fw_mailbox_running(struct fisrig_mailbox *mb) {
  mb->state = FISRIG_MAILBOX_RUNNING;
}

uint64_t fisrig_fw_mailbox_start_tick(uint64_t now, uint32_t margin) {
  uint64_t earliest = now + margin;
  /* Unsigned and a power of two: right also when `earliest` is before the start tick. */
  uint64_t behind = (earliest - FISRIG_RUN_START_TICK) % FISRIG_RUN_PHASE_TICKS;
  return behind ? earliest + (FISRIG_RUN_PHASE_TICKS - behind) : earliest;
}

void fisrig_fw_mailbox_done(struct fisrig_mailbox *mb, const char *outcome) {
  if (outcome != mb->outcome) {
    strncpy(mb->outcome, outcome, FISRIG_OUTCOME_BYTES - 1);
    mb->outcome[FISRIG_OUTCOME_BYTES - 1] = 0;
  }
  ++mb->runs;
  mb->state = FISRIG_MAILBOX_DONE;
}
