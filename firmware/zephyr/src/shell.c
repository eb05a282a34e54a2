/*
 * The shell's `fisrig` commands on the UART: run, status, abort, version, selftest. The host
 * never needs them (it drives the firmware through the bridge alone); they are for a person at
 * the rig's console.
 */
#include <errno.h>
#include <string.h>
#include <zephyr/kernel.h>
#include <zephyr/version.h>
#include <zephyr/shell/shell.h>

#include "fisrig/engine_if.h"
#include "fisrig/program.h"
#include "fisrig_engine.h"
#include "runner.h"

static const struct device *const engine = DEVICE_DT_GET_ONE(fisrig_engine);

static int cmd_run(const struct shell *sh, size_t argc, char **argv) {
  enum fisrig_records_to to = FISRIG_RECORDS_TO_RING;
  if (argc > 1) {
    if (!strcmp(argv[1], "console")) {
      to = FISRIG_RECORDS_TO_UART;
    } else if (strcmp(argv[1], "ring")) {
      shell_error(sh, "fisrig run: records go to \"ring\" or \"console\", not \"%s\"", argv[1]);
      return -EINVAL;
    }
  }
  int rc = runner_request(to);
  if (rc) {
    shell_error(sh, "fisrig run: a program is running (fisrig abort stops it)");
    return rc;
  }
  shell_print(sh, "fisrig run: the program in main RAM, records to the %s", to == FISRIG_RECORDS_TO_RING ? "ring" : "console");
  return 0;
}

static int cmd_status(const struct shell *sh, size_t argc, char **argv) {
  ARG_UNUSED(argc);
  ARG_UNUSED(argv);
  static const char *const names[] = {"booting", "idle", "running"};
  struct runner_status s;
  struct fisrig_engine_counters c;
  runner_status(&s);
  fisrig_engine_counters(engine, &c);
  shell_print(sh, "state %s, runs %u, link %s, tick %llu", names[s.state], s.runs,
              fisrig_engine_link_ready(engine) ? "up" : "down", (unsigned long long)fisrig_engine_now(engine));
  shell_print(sh, "run: commands %llu, records %llu (to the %s), errors %llu", (unsigned long long)s.commands,
              (unsigned long long)s.records, s.records_to, (unsigned long long)s.errors);
  shell_print(sh, "engine: rx crc errors %u, R_ERRs sent %u, timeouts %u, ncq errors %u, events lost %u, cq stalls %u",
              c.rx_crc_errors, c.tx_r_errs, c.timeouts, c.ncq_errors, c.events_lost, c.cq_stalls);
  if (s.outcome[0]) shell_print(sh, "last outcome: %s", s.outcome);
  return 0;
}

static int cmd_abort(const struct shell *sh, size_t argc, char **argv) {
  ARG_UNUSED(argc);
  ARG_UNUSED(argv);
  if (runner_abort()) {
    shell_error(sh, "fisrig abort: nothing is running");
    return -EALREADY;
  }
  shell_print(sh, "fisrig abort: the run stops at its next command (its records are kept)");
  return 0;
}

static int cmd_version(const struct shell *sh, size_t argc, char **argv) {
  ARG_UNUSED(argc);
  ARG_UNUSED(argv);
  shell_print(sh, "fisrig firmware on Zephyr %s: program format %u, engine interface %u, run record %u bytes",
              KERNEL_VERSION_STRING, FISRIG_PROGRAM_VERSION, FISRIG_ENGINE_IF_VERSION,
              (unsigned)sizeof(struct fisrig_run_record));
  return 0;
}

static int cmd_selftest(const struct shell *sh, size_t argc, char **argv) {
  ARG_UNUSED(argc);
  ARG_UNUSED(argv);
  struct runner_status s;
  runner_status(&s);
  if (s.state == RUNNER_RUNNING) {
    shell_error(sh, "fisrig selftest: a program is running");
    return -EBUSY;
  }
  const char *what = "";
  int rc = fisrig_engine_selftest(engine, &what);
  if (rc) {
    shell_error(sh, "fisrig selftest: FAIL: %s", what);
    return rc;
  }
  shell_print(sh, "fisrig selftest: PASS (%s)", what);
  return 0;
}

SHELL_STATIC_SUBCMD_SET_CREATE(fisrig_cmds,
  SHELL_CMD_ARG(run, NULL, "run the program in main RAM again: fisrig run [ring|console]", cmd_run, 1, 1),
  SHELL_CMD_ARG(status, NULL, "the runner, the link, the engine's counters, the last outcome", cmd_status, 1, 0),
  SHELL_CMD_ARG(abort, NULL, "stop the running program", cmd_abort, 1, 0),
  SHELL_CMD_ARG(version, NULL, "the firmware's formats and Zephyr's version", cmd_version, 1, 0),
  SHELL_CMD_ARG(selftest, NULL, "the engine's counter, rings' registers, ring RAM and link", cmd_selftest, 1, 0),
  SHELL_SUBCMD_SET_END);
SHELL_CMD_REGISTER(fisrig, &fisrig_cmds, "the rig's firmware", NULL);
