/*
 * The Zephyr driver of the rig's engine (devicetree `fisrig,engine`, dts/bindings): what the
 * portable core's VM needs of it (struct fisrig_engine_ops, fisrig/vm.h) and what the
 * firmware around the VM reads and sets (the counter, the link, the tick gate, the rings, the
 * program area the host writes).
 */
#ifndef FISRIG_ZEPHYR_ENGINE_H
#define FISRIG_ZEPHYR_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include <zephyr/device.h>

#include "fisrig/rig_firmware.h"
#include "fisrig/vm.h"

/* The engine's error counters (its rig_* CSRs), as `fisrig status` shows them. */
struct fisrig_engine_counters {
  uint32_t rx_crc_errors, tx_r_errs, timeouts, ncq_errors, events_lost, cq_stalls;
};

/* The VM's view of the engine: its rings (emptied, enabled) and data window. */
void fisrig_engine_bind(const struct device *dev, struct fisrig_engine_ops *ops);
/* The rings emptied and enabled again, whatever the last run left. */
void fisrig_engine_rings_reset(const struct device *dev);
/* The ring RAM: the engine's rings, the record ring, the mailbox (rig_firmware.h). */
struct fisrig_ring_ram *fisrig_engine_ring_ram(const struct device *dev);
struct fisrig_mailbox *fisrig_engine_mailbox(const struct device *dev);
/* Main RAM's program area: the boot header, then the program (baremetal_if.h). */
const struct fisrig_boot_header *fisrig_engine_boot_header(const struct device *dev);
uint32_t fisrig_engine_program_room(const struct device *dev);
uint64_t fisrig_engine_now(const struct device *dev);
bool fisrig_engine_link_ready(const struct device *dev);
/* Completions the engine has written since the rings were reset (the link's event records
   among them). */
uint32_t fisrig_engine_cq_tail(const struct device *dev);
void fisrig_engine_cq_consume_all(const struct device *dev);
/* Holds the CPU until the counter reads `tick` (fisrig_hw.soc.tick_gate); the ticks late. */
uint32_t fisrig_engine_start_at(const struct device *dev, uint64_t tick);
void fisrig_engine_counters(const struct device *dev, struct fisrig_engine_counters *c);
/* The CPU's bus counters and the engine's counter's low word now (rig_firmware.h); false
   (and the counter alone) on a SoC built without the counters. */
bool fisrig_engine_bus(const struct device *dev, struct fisrig_fw_bus *c);
/* Reads back what it writes in the ring RAM's free words and checks the counter moves and
   the rings' registers hold: 0, or a negative errno with *what naming the check. */
int fisrig_engine_selftest(const struct device *dev, const char **what);

#endif /* FISRIG_ZEPHYR_ENGINE_H */
