/*
 * The bare-metal firmware's interface with the host that boots it on the rig SoC
 * (firmware/baremetal/main.c on one side, hw/fisrig_hw/soc/soc_build.py and
 * host/fisrig/targets/rig/soc_run.py on the other): where the host puts the program in main RAM, and
 * the ring the firmware hands the run records back through. Little-endian, 32-bit words.
 */
#ifndef FISRIG_BAREMETAL_IF_H
#define FISRIG_BAREMETAL_IF_H

#include <stdint.h>

#include "fisrig/program.h"

/*
 * Main RAM at boot: the firmware from 0, then at FISRIG_BOOT_PROGRAM_OFFSET this header and
 * right after it the compiled program (fisrig/program.h). The firmware is linked below the
 * offset; the host refuses a firmware image that does not fit under it. 192 KiB: the Zephyr
 * build (kernel, shell, the VM and its 32 KiB data window, its stacks) needs 139 KiB, the
 * bare-metal one 84 KiB; 128 KiB held only the latter. The simulated SoC's 512 KiB of main RAM
 * leaves 320 KiB for the program.
 */
#define FISRIG_BOOT_PROGRAM_OFFSET 0x30000u

struct fisrig_boot_header {
  uint32_t program_bytes; /* the program's size */
  uint32_t records_to;    /* enum fisrig_records_to */
};

/* Where the firmware sends the run records. */
enum fisrig_records_to {
  FISRIG_RECORDS_TO_UART = 0, /* as lines "R <the record in hex>" on the console (no bridge needed) */
  FISRIG_RECORDS_TO_RING = 1  /* into struct fisrig_record_ring, drained through the host bridge */
};

/*
 * The record ring: its indexes in the SoC's ring RAM (uncached on the CPU side; the host
 * bridge reaches it through a port of its own, so draining never holds the CPU), its records
 * in main RAM after the program (DRAM on a board, so a run whose host drains slowly, a UART
 * board's, keeps every record until the host takes it; issue 17, section 3). The firmware
 * places the records for each run (FISRIG_RECORD_RING_ALIGN below), writes `entries` and
 * `records_at`, then says where the ring is (on the console, "fisrig firmware: record ring at
 * 0x<address>", or in the mailbox's ring_at); it writes a record, then tail; the host reads
 * tail, takes records, writes head. Both indexes run free; a record's slot is
 * index & (entries - 1). The firmware waits while tail - head == entries, so nothing is lost;
 * it counts the ticks it waited, and the run's outcome reports them (ring_wait_ticks), since
 * the commands after a wait were issued when the host's pace let them.
 *
 * Where the records go (fisrig.targets.rig.soc_run.ring_entries computes the same): from the
 * program's end (the boot header's end plus program_bytes) rounded up to
 * FISRIG_RECORD_RING_ALIGN, as many records as the power of two that fits below main RAM's
 * end. In the simulated SoC's 512 KiB that is 2,048 records for a program under 100 KiB: a
 * QD32 random-read run at the link's 135k IOPS fills them in 15 ms of drive time, about 4 s of
 * the simulation's wall time, so a host held up for seconds (a loaded CI machine) still does
 * not make the firmware wait. A board's 1 GiB of DRAM holds 8,388,608 (62 s at that rate).
 * Main RAM is cached, but VexRiscv's data cache writes through and the host never writes the
 * records, so the RAM holds each record before the (uncached) tail says it is there.
 */
#define FISRIG_RECORD_RING_ALIGN 64u

struct fisrig_record_ring {
  uint32_t entries;       /* a power of two, written before the ring is announced (0: no room) */
  volatile uint32_t tail; /* records written: the firmware's */
  volatile uint32_t head; /* records taken: the host's */
  uint32_t records_at;    /* the records' address in main RAM (struct fisrig_run_record[entries]) */
};

/*
 * The first tick of a run on the rig SoC in simulation (fisrig_hw.soc.tick_gate): the firmware
 * waits for it before its program's first command, so a run starts on the same tick however
 * long the host took to boot it, and repeats tick for tick. 8 ms: the BIOS boots the
 * firmware at 3.7 ms (the host's "boot" is waiting before its prompt) and LiteSATA calls the
 * link ready at 5 ms; the 3 ms left are about a second of the simulation's wall time.
 */
#define FISRIG_RUN_START_TICK (8ull * FISRIG_TICK_HZ / 1000u)

/*
 * A run the mailbox starts (below) begins at the first tick, a little after the GO, that is
 * FISRIG_RUN_START_TICK modulo this: the same phase against the link's ALIGN pairs (LiteSATA
 * sends two every 256 dwords from link-up; a dword a tick at Gen3, one every two at Gen2) as a
 * booted run's. Without it the GO's wall time set the phase, and a one-command phase's latency
 * moved by up to 4 ticks between two runs of one plan (tests/rtl/test_board_target.py held the
 * board to the rtl target within 2% and failed so: IDENTIFY 1,093 against 1,066 ns).
 * 27 us at most.
 */
#define FISRIG_RUN_PHASE_TICKS 4096u

/*
 * A firmware booted with no program (program_bytes 0), or done with the program it was booted
 * with, stays resident and takes its programs through the host bridge alone, the way a board
 * is driven (`--target board`: no console needed once it is booted). Its mailbox sits at FISRIG_MAILBOX_OFFSET in the ring RAM, where
 * the bridge reaches it without holding the CPU. The firmware fills it and writes `magic`
 * last; then, for each run: the host puts the program in main RAM as at boot (after the boot
 * header at FISRIG_BOOT_PROGRAM_OFFSET) and its size in `program_bytes`, then sets `state`
 * to GO; the firmware places the record ring's records after the program and empties the
 * ring (tail and head 0), says RUNNING, runs it with
 * its records to the ring, writes the outcome line (the JSON the console also gets) and
 * says DONE. The host drains the ring as for a booted run and may send the next program once
 * it has read DONE and every record.
 */
#define FISRIG_MAILBOX_OFFSET 0x7000u
#define FISRIG_MAILBOX_MAGIC 0x47525346u /* "FSRG" */
#define FISRIG_OUTCOME_BYTES 1024u

enum fisrig_mailbox_state {
  FISRIG_MAILBOX_IDLE = 0,    /* the firmware waits for a program */
  FISRIG_MAILBOX_GO = 1,      /* the host: a program is in place */
  FISRIG_MAILBOX_RUNNING = 2, /* the firmware runs it */
  FISRIG_MAILBOX_DONE = 3     /* outcome written; the firmware waits for the next GO */
};

struct fisrig_mailbox {
  uint32_t magic;              /* FISRIG_MAILBOX_MAGIC once the firmware serves */
  volatile uint32_t state;     /* enum fisrig_mailbox_state */
  volatile uint32_t program_bytes;
  uint32_t ring_at;            /* the record ring's address (struct fisrig_record_ring) */
  uint32_t runs;               /* runs done since boot */
  uint32_t program_room;       /* the most program_bytes main RAM holds after the boot header */
  uint32_t reserved[2];
  char outcome[FISRIG_OUTCOME_BYTES]; /* the last run's outcome line, NUL-terminated */
};

typedef char fisrig_boot_header_is_8_bytes[sizeof(struct fisrig_boot_header) == 8 ? 1 : -1];

#endif /* FISRIG_BAREMETAL_IF_H */
