/*
 * What every build of the rig's firmware (bare metal on LiteX's libbase, and Zephyr) does the
 * same around the VM, so that the host cannot tell which one runs (fisrig/baremetal_if.h): where
 * the engine's rings and the record ring sit in the ring RAM, the record ring as the VM's
 * record sink, a run's outcome line, a record as a console line, and the mailbox a resident
 * firmware serves.
 */
#ifndef FISRIG_RIG_FIRMWARE_H
#define FISRIG_RIG_FIRMWARE_H

#include <stdint.h>

#include "fisrig/baremetal_if.h"
#include "fisrig/vm.h"

#define FISRIG_FW_SQ_ENTRIES 128u
#define FISRIG_FW_CQ_ENTRIES 128u

/* The engine's rings and the record ring's indexes live in the SoC's ring RAM, which the CPU
   never caches: the engine writes completions and the host the ring's head behind the data
   cache, which in main RAM had to be dropped whole before every look (VexRiscv has no
   per-line invalidate), taking everything else the VM had cached with it. The records
   themselves are in main RAM (baremetal_if.h). The mailbox is at FISRIG_MAILBOX_OFFSET,
   above them. */
struct fisrig_ring_ram {
  struct fisrig_cmd_desc sq[FISRIG_FW_SQ_ENTRIES];
  struct fisrig_cpl_record cq[FISRIG_FW_CQ_ENTRIES];
  struct fisrig_record_ring ring;
};
#ifdef __cplusplus
static_assert(sizeof(struct fisrig_ring_ram) <= FISRIG_MAILBOX_OFFSET, "the rings reach the mailbox");
#else
_Static_assert(sizeof(struct fisrig_ring_ram) <= FISRIG_MAILBOX_OFFSET, "the rings reach the mailbox");
#endif

/* The ring RAM's bytes a firmware needs (the mailbox's end). */
#define FISRIG_FW_RING_RAM_BYTES (FISRIG_MAILBOX_OFFSET + sizeof(struct fisrig_mailbox))

/* The record ring as the VM's record sink. The firmware waits while the host is behind
   (nothing is lost) and counts the ticks it waited; a non-zero *stop ends a wait (the record
   is then refused: the run stops). The records' place, their count and the tail are kept
   here too, in cached RAM: the ring's own words are uncached, a bus read each. */
struct fisrig_fw_ring {
  struct fisrig_record_ring *ring;
  uint64_t (*now)(void *ctx); /* the engine's counter (the ops' now) */
  void *now_ctx;
  volatile int *stop;         /* optional */
  uint64_t records;
  uint32_t waits;
  uint64_t wait_ticks;
  struct fisrig_run_record *rec;
  uint32_t entries;
  uint32_t tail;
};

/* The ring's records placed in [area, area + bytes) as baremetal_if.h says (the most records,
   a power of two, from the area's start rounded up to FISRIG_RECORD_RING_ALIGN), the ring
   emptied and the counts zeroed. The area is main RAM after the program. */
void fisrig_fw_ring_reset(struct fisrig_fw_ring *r, uint8_t *area, uint32_t bytes);
/* The same for a program of `program_bytes` at `program` with `room` bytes of main RAM from
   there (the boot header's program area): the records after it, none when it takes the room
   or more (the VM refuses such a program). Both firmwares place their ring so. */
void fisrig_fw_ring_place(struct fisrig_fw_ring *r, const uint8_t *program, uint32_t program_bytes, uint32_t room);
struct fisrig_record_sink fisrig_fw_ring_sink(struct fisrig_fw_ring *r);

/* A run's outcome as the JSON line fisrig-model prints (without the newline): what the VM
   did, the records handed on, the ticks the start was late, the waits for the host.
   Returns the line's length (as snprintf). */
struct fisrig_fw_run {
  enum fisrig_vm_status status;
  const char *error;          /* overrides the VM's error text when set */
  uint64_t records;
  uint64_t now_ns;            /* the counter at the end, in ns */
  uint32_t late_ticks;
  uint32_t ring_waits;
  uint64_t ring_wait_ticks;
};
int fisrig_fw_outcome_line(char *out, unsigned bytes, const struct fisrig_vm *vm, const struct fisrig_fw_run *run);

/* A record as the console line "R <its bytes in hex>" (FISRIG_RECORDS_TO_UART), NUL-ended,
   without the newline. */
#define FISRIG_FW_RECORD_LINE_BYTES (2u + 2u * sizeof(struct fisrig_run_record) + 1u)
void fisrig_fw_record_line(char out[FISRIG_FW_RECORD_LINE_BYTES], const struct fisrig_run_record *r);

/* What the CPU's buses did over a run (fisrig_hw.soc.bus_activity): the firmware's own
   profile, where its cycles go between cache fills and uncached ring and CSR accesses. Both
   builds read the counters around a run and print the difference a command as one line. */
struct fisrig_fw_bus {
  uint32_t ticks, ibus_words, ibus_busy, dbus_words, dbus_busy;
};
int fisrig_fw_bus_line(char *out, unsigned bytes, const struct fisrig_fw_bus *before,
                       const struct fisrig_fw_bus *after, uint64_t commands);

/* The mailbox (baremetal_if.h): open for programs; a GO taken (returns the program's size)
   or none yet (-1); then, once the ring is placed for it, RUNNING; a run's outcome handed back
   (DONE). */
void fisrig_fw_mailbox_open(struct fisrig_mailbox *mb, const struct fisrig_record_ring *ring, uint32_t program_room);
int32_t fisrig_fw_mailbox_take(const struct fisrig_mailbox *mb);
void fisrig_fw_mailbox_running(struct fisrig_mailbox *mb);
void fisrig_fw_mailbox_done(struct fisrig_mailbox *mb, const char *outcome);

/* The tick a mailbox run starts on (the tick gate's target), given the counter now: the first
   one at least `margin` ticks ahead in phase with a booted run's (FISRIG_RUN_PHASE_TICKS). */
uint64_t fisrig_fw_mailbox_start_tick(uint64_t now, uint32_t margin);

/* Decimal by hand: picolibc's integer printf may lack 64-bit conversions. */
const char *fisrig_fw_u64_text(uint64_t v, char buf[21]);

#endif /* FISRIG_RIG_FIRMWARE_H */
