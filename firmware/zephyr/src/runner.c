/*
 * The runner (runner.h): boot as the bare-metal firmware does (its console lines, the wait for
 * the link, the run's first tick from the tick gate), the booted program's run, then a
 * resident loop serving the mailbox and the shell. Only this thread touches the VM and the
 * engine's rings; the shell reads the status below and sets the VM's stop request.
 */
#include "runner.h"

#include <errno.h>
#include <string.h>
#include <zephyr/kernel.h>
#include <zephyr/version.h>
#include <zephyr/shell/shell.h>
#include <zephyr/shell/shell_uart.h>
#include <zephyr/sys/printk.h>

#include "fisrig/rig_firmware.h"
#include "fisrig/vm.h"
#include "fisrig_engine.h"

static const struct device *const engine = DEVICE_DT_GET_ONE(fisrig_engine);
/* The counter at the firmware's first instruction (src/first_tick.S). */
__noinit uint64_t fisrig_first_tick;
static struct fisrig_vm vm;
static struct fisrig_fw_ring records;
static uint64_t console_records;
static char outcome[FISRIG_OUTCOME_BYTES];
static volatile enum runner_state state;
static volatile uint32_t runs;
static volatile enum fisrig_records_to running_to;
/* Once the shell runs, its prompt may be on the console's last line: the runner's lines
   start on a line of their own (the host parses the booted run's, printed before it). */
static const char *line_start = "";
/* The shell's request: -1 none, else where the records go. */
static atomic_t requested = ATOMIC_INIT(-1);

static int emit_to_console(void *ctx, const struct fisrig_run_record *r) {
  ARG_UNUSED(ctx);
  char line[FISRIG_FW_RECORD_LINE_BYTES];
  fisrig_fw_record_line(line, r);
  printk("%s\n", line);
  ++console_records;
  return 0;
}

/* Runs `size` bytes of program from the program area, records to `to`, late_ticks after its
   first tick; the outcome line into `out` (and the console). */
static void run(uint32_t size, enum fisrig_records_to to, uint32_t late_ticks, char *out) {
  const struct fisrig_boot_header *boot = fisrig_engine_boot_header(engine);
  struct fisrig_engine_ops ops;
  const struct fisrig_record_sink to_console = {0, emit_to_console, 0, 0};
  struct fisrig_record_sink sink = to == FISRIG_RECORDS_TO_RING ? fisrig_fw_ring_sink(&records) : to_console;
  uint32_t room = fisrig_engine_program_room(engine);

  fisrig_engine_bind(engine, &ops);
  console_records = 0;
  running_to = to;
  fisrig_vm_init(&vm, &ops, &sink);
  state = RUNNER_RUNNING;
  struct fisrig_fw_bus before, after;
  fisrig_engine_bus(engine, &before);
  enum fisrig_vm_status st =
      size > room ? FISRIG_VM_BAD_PROGRAM : fisrig_vm_run(&vm, (const uint8_t *)(boot + 1), size);
  if (fisrig_engine_bus(engine, &after)) { /* the bare-metal firmware's profile line */
    char profile[200];
    fisrig_fw_bus_line(profile, sizeof profile, &before, &after, vm.commands);
    printk("%s%s\n", line_start, profile);
  }
  /* Stopped while it waited for the host to drain the ring: the record it waited to write
     was refused (the VM's records_lost), not lost. */
  if (vm.stop_requested && st == FISRIG_VM_RECORDS_LOST) st = FISRIG_VM_STOPPED;
  struct fisrig_fw_run r = {st, size > room ? "program too large" : 0, records.records + console_records,
                            fisrig_ticks_to_ns(fisrig_engine_now(engine)), late_ticks, records.waits,
                            records.wait_ticks};
  fisrig_fw_outcome_line(out, FISRIG_OUTCOME_BYTES, &vm, &r);
  printk("%s%s\n", line_start, out);
  if (out != outcome) strncpy(outcome, out, sizeof outcome - 1);
  ++runs;
  state = RUNNER_IDLE;
}

/* A new run's rings for a program of `size` bytes: the engine's emptied, the record ring's
   records placed in main RAM after the program (baremetal_if.h) and its counts zeroed. */
static void fresh_rings(uint32_t size) {
  const struct fisrig_boot_header *boot = fisrig_engine_boot_header(engine);
  fisrig_fw_ring_place(&records, (const uint8_t *)(boot + 1), size, fisrig_engine_program_room(engine));
  fisrig_engine_rings_reset(engine);
}

static void say_where_the_ring_is(void) {
  printk("fisrig firmware: record ring at 0x%08lx, %lu records at 0x%08lx\n", (unsigned long)(uintptr_t)records.ring,
         (unsigned long)records.entries, (unsigned long)records.ring->records_at);
}

void runner_main(void) {
  const struct fisrig_boot_header *boot = fisrig_engine_boot_header(engine);
  struct fisrig_mailbox *mailbox = fisrig_engine_mailbox(engine);
  uint32_t size = boot->program_bytes;
  enum fisrig_records_to to = boot->records_to == FISRIG_RECORDS_TO_RING ? FISRIG_RECORDS_TO_RING
                                                                         : FISRIG_RECORDS_TO_UART;
  struct fisrig_engine_ops ops;

  fisrig_engine_bind(engine, &ops);
  records = (struct fisrig_fw_ring){.ring = &fisrig_engine_ring_ram(engine)->ring, .now = ops.now,
                                    .stop = &vm.stop_requested};
  uint64_t booted = fisrig_engine_now(engine);
  printk("fisrig firmware: program of %u bytes (Zephyr %s)\n", size, KERNEL_VERSION_STRING);
  fresh_rings(size);
  if (to == FISRIG_RECORDS_TO_RING && size) say_where_the_ring_is();

  /* The drive is powered at reset: its signature arrives as the engine's first event
     record once LiteSATA calls the link ready (5 ms). A program starts on a live link. */
  uint64_t give_up = fisrig_engine_now(engine) + 20ull * FISRIG_TICK_HZ / 1000;
  while (!(fisrig_engine_link_ready(engine) && fisrig_engine_cq_tail(engine) != 0) &&
         fisrig_engine_now(engine) < give_up) {
  }
  printk("fisrig firmware: link %s\n", fisrig_engine_link_ready(engine) ? "up" : "down");
  fisrig_engine_cq_consume_all(engine);
  if (size) {
    /* Printed before the gate, where the console's time does not matter: how much of the
       start tick's margin this boot used. */
    printk("fisrig firmware: booted at tick %lu, waiting for tick %lu\n", (unsigned long)booted,
           (unsigned long)FISRIG_RUN_START_TICK);
    uint32_t late = fisrig_engine_start_at(engine, FISRIG_RUN_START_TICK);
    run(size, to, late, outcome);
  }

  /* Resident: the host's programs through the mailbox, the shell's on request. */
  fisrig_fw_mailbox_open(mailbox, records.ring, fisrig_engine_program_room(engine));
  state = RUNNER_IDLE;
  printk("fisrig firmware: resident, mailbox at 0x%08lx\n", (unsigned long)(uintptr_t)mailbox);
  shell_start(shell_backend_uart_get_ptr()); /* after the booted run: its lines are whole */
  line_start = "\n";
  /* The shell (above this thread) has printed its prompt: zephyr.boot_ms_sim. */
  uint64_t shell_tick = fisrig_engine_now(engine);
  printk("%sfisrig firmware: shell at tick %llu, %llu ticks after the first instruction\n",
         line_start, (unsigned long long)shell_tick, (unsigned long long)(shell_tick - fisrig_first_tick));
  for (;;) {
    int32_t given = fisrig_fw_mailbox_take(mailbox);
    if (given >= 0) {
      ops.data_in(ops.ctx); /* the program came through the bridge, behind the data cache */
      fresh_rings((uint32_t)given);
      fisrig_fw_mailbox_running(mailbox);
      /* In phase with a booted run (baremetal_if.h's FISRIG_RUN_PHASE_TICKS), as the
         bare-metal firmware starts its mailbox runs */
      uint64_t start = fisrig_fw_mailbox_start_tick(fisrig_engine_now(engine), 512);
      run((uint32_t)given, FISRIG_RECORDS_TO_RING, fisrig_engine_start_at(engine, start), mailbox->outcome);
      fisrig_fw_mailbox_done(mailbox, mailbox->outcome);
      continue;
    }
    atomic_val_t asked = atomic_set(&requested, -1);
    if (asked >= 0) {
      ops.data_in(ops.ctx);
      fresh_rings(boot->program_bytes);
      printk("%s", line_start); /* the prompt's line ends; the run's lines follow */
      if (asked == FISRIG_RECORDS_TO_RING) say_where_the_ring_is();
      run(boot->program_bytes, (enum fisrig_records_to)asked, 0, outcome);
      continue;
    }
    k_msleep(1);
  }
}

void runner_status(struct runner_status *s) {
  s->state = state;
  s->runs = runs;
  s->commands = vm.commands;
  s->records = records.records + console_records;
  s->errors = vm.errors;
  s->records_to = running_to == FISRIG_RECORDS_TO_RING ? "ring" : "console";
  s->outcome = outcome;
}

int runner_request(enum fisrig_records_to to) {
  if (state != RUNNER_IDLE) return -EBUSY;
  return atomic_cas(&requested, -1, (atomic_val_t)to) ? 0 : -EBUSY;
}

int runner_abort(void) {
  if (state != RUNNER_RUNNING) return -EALREADY;
  vm.stop_requested = 1;
  return 0;
}
