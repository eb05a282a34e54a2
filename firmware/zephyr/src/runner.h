/*
 * The firmware's one runner of programs (src/runner.c): the portable core's VM on the engine,
 * in the main thread. It runs the program the host booted it with, then serves: a program
 * the host gives through the mailbox (as the bare-metal build does), or one the shell asks
 * for. The shell reads its state and asks it to stop.
 */
#ifndef FISRIG_ZEPHYR_RUNNER_H
#define FISRIG_ZEPHYR_RUNNER_H

#include <stdint.h>

#include "fisrig/baremetal_if.h"

enum runner_state { RUNNER_BOOTING = 0, RUNNER_IDLE = 1, RUNNER_RUNNING = 2 };

struct runner_status {
  enum runner_state state;
  uint32_t runs;           /* runs ended since boot */
  uint64_t commands;       /* the running (or last) run's, so far */
  uint64_t records;
  uint64_t errors;
  const char *records_to;  /* "ring" or "console" */
  const char *outcome;     /* the last run's outcome line ("" before one) */
};

void runner_main(void);
void runner_status(struct runner_status *s);
/* The program in main RAM's program area (boot header, then program: the host's last), run
   again with its records to `to`: 0, or -EBUSY while a run is on. */
int runner_request(enum fisrig_records_to to);
/* Asks the running program to stop (the VM ends it cleanly, its records kept): 0, or
   -EALREADY when nothing runs. */
int runner_abort(void);

#endif /* FISRIG_ZEPHYR_RUNNER_H */
