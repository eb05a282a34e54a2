/*
 * The rig's firmware, bare metal on LiteX's libbase (the build the RTL simulation runs):
 * the portable core's VM (firmware/core) against the engine's rings in the ring RAM,
 * handing every run record to the host as it comes (below).
 *
 * The host puts the compiled program in main RAM as fisrig/baremetal_if.h lays it out and
 * starts this from the BIOS (`boot <main_ram>`); the program's first command waits for
 * FISRIG_RUN_START_TICK, so a run repeats tick for tick however long that took. Records go
 * where the boot header asks (the ring or the console, baremetal_if.h), in the order the VM
 * emits them, and the run's outcome ends it on the console: the JSON line fisrig-model
 * prints, with the late start and the waits for the host that make a run not the one asked.
 * Booted with no program it goes straight to serving programs through the bridge's mailbox
 * (baremetal_if.h; `--target board`), and after a booted program's run it does the same.
 */
#include <generated/csr.h>
#include <generated/mem.h>
#include <stdint.h>
#include <stdio.h>
#include <system.h>

#include "fisrig/baremetal_if.h"
#include "fisrig/vm.h"

#include "fisrig/rig_firmware.h"

#define RINGS ((struct fisrig_ring_ram *)RING_RAM_BASE)
_Static_assert(FISRIG_FW_RING_RAM_BYTES <= RING_RAM_SIZE, "the mailbox does not fit the ring RAM");
static struct fisrig_mailbox *const mailbox = (struct fisrig_mailbox *)(RING_RAM_BASE + FISRIG_MAILBOX_OFFSET);

static uint8_t data_window[FISRIG_VM_INFLIGHT * FISRIG_VM_DSM_BYTES] __attribute__((aligned(32)));
static struct fisrig_vm vm;

/* Linked right after the hot functions (linker.ld), within the 4 KiB instruction cache:
   wait() runs on every poll of a queue-depth-1 workload, and where main() or vm.c's other
   code pushed it, it shared reap()'s lines (4 KiB commands at QD1 2 to 3.5% slower on rtl
   than the model's fitted CPU times). data_in, sq_head and emit_to_uart, which a run does
   not call per command, stay before it in their old order: the model's QD1 CPU times
   (sim/model/vm_cpu_time.h) were fitted with wait at this address. */
#define ENGINE_OP __attribute__((section(".text.ops")))

void isr(void);
void isr(void) {} /* nothing here raises interrupts */

static __attribute__((hot)) uint64_t now(void *ctx) {
  (void)ctx;
  rig_ts_latch_write(1);
  return rig_ts_read();
}

/* The record ring, and how long the firmware waited for the host to make room in it. */
static struct fisrig_fw_ring records = {.ring = &RINGS->ring, .now = now, .stop = &vm.stop_requested};

/* The engine DMAs read data into the data window behind the data cache (a verify pass's
   read-back): drop the cache before the VM looks. */
static ENGINE_OP void data_in(void *ctx) {
  (void)ctx;
  flush_cpu_dcache();
}

static __attribute__((hot)) void doorbell(void *ctx, uint32_t sq_tail) {
  (void)ctx;
  rings_sq_tail_write(sq_tail);
}

static ENGINE_OP uint32_t sq_head(void *ctx) {
  (void)ctx;
  return rings_sq_head_read();
}

static __attribute__((hot)) uint32_t cq_tail(void *ctx) {
  (void)ctx;
  return rings_cq_tail_read();
}

static __attribute__((hot)) void cq_consumed(void *ctx, uint32_t cq_head) {
  (void)ctx;
  rings_cq_head_write(cq_head);
}

static ENGINE_OP void wait(void *ctx, uint64_t until) {
  (void)ctx;
  (void)until; /* the VM polls; the engine needs nothing from the CPU meanwhile */
}

/* Holds the CPU until the counter reads `tick` (fisrig_hw.soc.tick_gate): everything after starts
   on that tick, however long the host took to send the BIOS its "boot". Returns the ticks it
   was late (0: on time). */
static uint32_t start_at(uint64_t tick) {
  volatile uint32_t *gate = (volatile uint32_t *)TICK_GATE_BASE;
  gate[0] = (uint32_t)tick;
  gate[1] = (uint32_t)(tick >> 32);
  return gate[2];
}

static uint64_t uart_records;

static ENGINE_OP int emit_to_uart(void *ctx, const struct fisrig_run_record *r) {
  (void)ctx;
  char line[FISRIG_FW_RECORD_LINE_BYTES];
  fisrig_fw_record_line(line, r);
  puts(line);
  ++uart_records;
  return 0;
}

/* The CPU's bus counters now (rig_firmware.h's struct fisrig_fw_bus). */
static struct fisrig_fw_bus bus_counts(void) {
  struct fisrig_fw_bus c = {(uint32_t)now(0), 0, 0, 0, 0};
#ifdef CSR_CPU_BUS_BASE
  c.ibus_words = cpu_bus_ibus_words_read();
  c.ibus_busy = cpu_bus_ibus_busy_read();
  c.dbus_words = cpu_bus_dbus_words_read();
  c.dbus_busy = cpu_bus_dbus_busy_read();
#endif
  return c;
}

/* The engine's rings empty and where they are, whatever the BIOS or a last run left. */
static void setup_rings(void) {
  rings_enable_write(0);
  rings_sq_base_write((uint32_t)(uintptr_t)RINGS->sq);
  rings_sq_entries_write(FISRIG_FW_SQ_ENTRIES);
  rings_cq_base_write((uint32_t)(uintptr_t)RINGS->cq);
  rings_cq_entries_write(FISRIG_FW_CQ_ENTRIES);
  rings_data_base_write((uint32_t)(uintptr_t)data_window);
  rings_data_bytes_write(sizeof data_window); /* the engine refuses RAM data past it */
  rings_sq_tail_write(0);
  rings_cq_head_write(0);
  rings_enable_write(1);
}

/* Runs a program and prints its outcome (the JSON line fisrig-model prints) into `out`. */
#define PROGRAM_ROOM (MAIN_RAM_SIZE - FISRIG_BOOT_PROGRAM_OFFSET - sizeof(struct fisrig_boot_header))

static void run(const struct fisrig_engine_ops *ops, const struct fisrig_record_sink *sink,
                const uint8_t *program, uint32_t size, uint32_t late, char *out, unsigned out_bytes) {
  uart_records = 0;
  fisrig_vm_init(&vm, ops, sink);
  struct fisrig_fw_bus before = bus_counts();
  enum fisrig_vm_status st = size > PROGRAM_ROOM ? FISRIG_VM_BAD_PROGRAM : fisrig_vm_run(&vm, program, size);
  struct fisrig_fw_bus after = bus_counts();
  char profile[200];
  fisrig_fw_bus_line(profile, sizeof profile, &before, &after, vm.commands);
  printf("%s\n", profile);
  struct fisrig_fw_run r = {st, size > PROGRAM_ROOM ? "program too large" : 0,
                            records.records + uart_records, fisrig_ticks_to_ns(now(0)), late,
                            records.waits, records.wait_ticks};
  fisrig_fw_outcome_line(out, out_bytes, &vm, &r);
  printf("%s\n", out);
}

/* Resident: opens the mailbox (baremetal_if.h) the first time, waits for the host's GO,
   readies the ring for its program and holds the CPU until the run's first tick; returns the
   program's size and sets the ticks the start was late. */
static uint32_t take_program(const uint8_t *program, uint32_t *late) {
  static int serving; /* the mailbox opens once, after a booted run if there was one */
  if (!serving) {
    fisrig_fw_mailbox_open(mailbox, records.ring, PROGRAM_ROOM);
    printf("fisrig firmware: resident, mailbox at 0x%08lx\n", (unsigned long)(uintptr_t)mailbox);
    serving = 1;
  }
  int32_t size;
  while ((size = fisrig_fw_mailbox_take(mailbox)) < 0) {
  }
  flush_cpu_dcache(); /* the program came through the bridge, behind the data cache */
  fisrig_fw_ring_place(&records, program, (uint32_t)size, PROGRAM_ROOM);
  fisrig_fw_mailbox_running(mailbox);
  setup_rings();
  /* 512 ticks: the call and the gate's store take under 100 (the profile's line) */
  *late = start_at(fisrig_fw_mailbox_start_tick(now(0), 512));
  return (uint32_t)size;
}

int main(void) {
  const struct fisrig_boot_header *boot =
      (const struct fisrig_boot_header *)(MAIN_RAM_BASE + FISRIG_BOOT_PROGRAM_OFFSET);
  const uint8_t *program = (const uint8_t *)(boot + 1);
  uint32_t size = boot->program_bytes;
  uint32_t to = boot->records_to;
  const struct fisrig_engine_ops ops = {
    .ctx = 0, .sq = RINGS->sq, .sq_entries = FISRIG_FW_SQ_ENTRIES, .cq = RINGS->cq,
    .cq_entries = FISRIG_FW_CQ_ENTRIES, .data_window = data_window,
    .data_window_bytes = sizeof data_window, .doorbell = doorbell, .sq_head = sq_head,
    .cq_tail = cq_tail, .cq_consumed = cq_consumed, .now = now, .wait = wait, .data_in = data_in,
  };
  const struct fisrig_record_sink to_ring = fisrig_fw_ring_sink(&records);
  const struct fisrig_record_sink to_uart = {0, emit_to_uart, 0, 0};
  const struct fisrig_record_sink sink = to == FISRIG_RECORDS_TO_RING ? to_ring : to_uart;

  uint64_t booted = now(0);
  printf("fisrig firmware: program of %lu bytes\n", (unsigned long)size);
  fisrig_fw_ring_place(&records, program, size, PROGRAM_ROOM);
  if (to == FISRIG_RECORDS_TO_RING && size)
    printf("fisrig firmware: record ring at 0x%08lx, %lu records at 0x%08lx\n", (unsigned long)(uintptr_t)records.ring,
           (unsigned long)records.entries, (unsigned long)records.ring->records_at);
  setup_rings();

  /* The drive is powered at reset: its signature arrives as the engine's first event
     record once LiteSATA calls the link ready (5 ms). A program starts on a live link. */
  uint64_t give_up = now(0) + 20ull * FISRIG_TICK_HZ / 1000;
  while (!(rig_link_ready_read() && cq_tail(0) != 0) && now(0) < give_up) {
  }
  printf("fisrig firmware: link %s\n", rig_link_ready_read() ? "up" : "down");
  rings_cq_head_write(rings_cq_tail_read());
  uint32_t late = 0;
  if (size) {
    /* Printed before the gate, where the console's time does not matter: how much of the
       start tick's margin this boot used. */
    printf("fisrig firmware: booted at tick %lu, waiting for tick %lu\n", (unsigned long)booted,
           (unsigned long)FISRIG_RUN_START_TICK);
    late = start_at(FISRIG_RUN_START_TICK);
  }
  /* The booted program's run, then the mailbox's, from this one call of run(): a run from a
     second call site (a resident loop of its own) had its stack frame elsewhere against the
     data cache's sets, and took 60 more data words and 94 more CPU cycles a command
     (8,568 against 8,474 on targets-agree), its QD1 4 KiB phases 3 to 6% fewer IOPS than
     the same program booted. A board booted with whatever its RAM held at the boot header
     (a refused program) still goes on to take the host's programs. */
  static char booted_outcome[FISRIG_OUTCOME_BYTES];
  for (int resident = !size;; resident = 1) {
    if (resident) size = take_program(program, &late);
    run(&ops, resident ? &to_ring : &sink, program, size, late,
        resident ? mailbox->outcome : booted_outcome, FISRIG_OUTCOME_BYTES);
    if (resident) fisrig_fw_mailbox_done(mailbox, mailbox->outcome);
  }
}
