/*
 * The rig's firmware on Zephyr: the portable core's VM (firmware/core) in the main thread,
 * the engine through its driver (src/fisrig_engine.c), and a shell on the UART (src/shell.c).
 * To the host it is the bare-metal firmware (fisrig/baremetal_if.h): the same boot header,
 * console lines, record ring and mailbox, so the host does not care which one runs.
 */
#include "runner.h"

int main(void) {
  runner_main(); /* never returns: it serves the host and the shell */
  return 0;
}
