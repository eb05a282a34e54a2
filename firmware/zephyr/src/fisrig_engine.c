/*
 * The Zephyr driver of the rig's engine (fisrig_engine.h; binding dts/bindings/fisrig,engine.yaml).
 *
 * The VM calls the ring accessors for every command, so each instance gets its own, with the
 * CSR addresses as constants from the devicetree (an address loaded from a config struct
 * would cost a load a call on the hot path, which the bare-metal build does not pay). The
 * engine raises no interrupt: the VM polls its completion ring.
 */
#define DT_DRV_COMPAT fisrig_engine

#include "fisrig_engine.h"

#include <errno.h>
#include <soc.h>
#include <zephyr/device.h>
#include <zephyr/kernel.h>

#define REG(inst, name) DT_INST_REG_ADDR_BY_NAME(inst, name)
#define REG_OR_0(inst, name) COND_CODE_1(DT_INST_REG_HAS_NAME(inst, name), (REG(inst, name)), (0))

struct fisrig_engine_config {
  const struct fisrig_engine_ops *ops; /* the instance's accessors; its rings, its window */
  mem_addr_t ts_latch, ts, link_ready, enable, sq_base, sq_entries, cq_base, cq_entries;
  mem_addr_t sq_tail, cq_tail, cq_head, data_base, data_bytes;
  mem_addr_t rx_crc_errors, tx_r_errs, timeouts, ncq_errors, events_lost, cq_stalls;
  mem_addr_t ibus_words, ibus_busy, dbus_words, dbus_busy; /* 0: the SoC has no bus counters */
  uintptr_t ring_ram, tick_gate, program;
  uint32_t ring_ram_bytes, program_bytes;
};

/* The engine DMAs read data into the data window behind the data cache (a verify pass's
   read-back): drop the cache before the VM looks. VexRiscv's data cache has no per-line
   invalidate; this is its flush-all instruction (LiteX's flush_cpu_dcache). */
static void data_in(void *ctx) {
  ARG_UNUSED(ctx);
  __asm__ volatile(".word(0x500F)" ::: "memory");
}

/* Hot: the VM calls it between its looks at the completion ring, and from elsewhere in the
   image it evicted a line of the per-command path on each call. */
static __attribute__((hot)) void wait(void *ctx, uint64_t until) {
  ARG_UNUSED(ctx);
  ARG_UNUSED(until); /* the VM polls; the engine needs nothing from the CPU meanwhile */
}

#define FISRIG_ENGINE_DEFINE(inst)                                                                      \
  BUILD_ASSERT(DT_INST_REG_SIZE_BY_NAME(inst, ring_ram) >= FISRIG_FW_RING_RAM_BYTES,                    \
               "the ring RAM is too small for the rings and the mailbox");                              \
  static uint8_t data_window_##inst[FISRIG_VM_INFLIGHT * FISRIG_VM_DSM_BYTES] __aligned(32);            \
  static __attribute__((hot)) uint64_t now_##inst(void *ctx) {                                          \
    ARG_UNUSED(ctx);                                                                                    \
    litex_write32(1, REG(inst, rig_ts_latch));                                                          \
    return litex_read64(REG(inst, rig_ts));                                                             \
  }                                                                                                     \
  static __attribute__((hot)) void doorbell_##inst(void *ctx, uint32_t tail) {                          \
    ARG_UNUSED(ctx);                                                                                    \
    litex_write32(tail, REG(inst, rings_sq_tail));                                                      \
  }                                                                                                     \
  static uint32_t sq_head_##inst(void *ctx) {                                                           \
    ARG_UNUSED(ctx);                                                                                    \
    return litex_read32(REG(inst, rings_sq_head));                                                      \
  }                                                                                                     \
  static __attribute__((hot)) uint32_t cq_tail_##inst(void *ctx) {                                      \
    ARG_UNUSED(ctx);                                                                                    \
    return litex_read32(REG(inst, rings_cq_tail));                                                      \
  }                                                                                                     \
  static __attribute__((hot)) void cq_consumed_##inst(void *ctx, uint32_t head) {                       \
    ARG_UNUSED(ctx);                                                                                    \
    litex_write32(head, REG(inst, rings_cq_head));                                                      \
  }                                                                                                     \
  static const struct fisrig_engine_ops ops_##inst = {                                                  \
    .ctx = 0,                                                                                           \
    .sq = ((struct fisrig_ring_ram *)DT_INST_REG_ADDR_BY_NAME(inst, ring_ram))->sq,                     \
    .sq_entries = FISRIG_FW_SQ_ENTRIES,                                                                 \
    .cq = ((struct fisrig_ring_ram *)DT_INST_REG_ADDR_BY_NAME(inst, ring_ram))->cq,                     \
    .cq_entries = FISRIG_FW_CQ_ENTRIES,                                                                 \
    .data_window = data_window_##inst,                                                                  \
    .data_window_bytes = sizeof data_window_##inst,                                                     \
    .doorbell = doorbell_##inst,                                                                        \
    .sq_head = sq_head_##inst,                                                                          \
    .cq_tail = cq_tail_##inst,                                                                          \
    .cq_consumed = cq_consumed_##inst,                                                                  \
    .now = now_##inst,                                                                                  \
    .wait = wait,                                                                                       \
    .data_in = data_in,                                                                                 \
  };                                                                                                    \
  static const struct fisrig_engine_config config_##inst = {                                            \
    .ops = &ops_##inst,                                                                                 \
    .ts_latch = REG(inst, rig_ts_latch), .ts = REG(inst, rig_ts),                                       \
    .link_ready = REG(inst, rig_link_ready), .enable = REG(inst, rings_enable),                         \
    .sq_base = REG(inst, rings_sq_base), .sq_entries = REG(inst, rings_sq_entries),                     \
    .cq_base = REG(inst, rings_cq_base), .cq_entries = REG(inst, rings_cq_entries),                     \
    .sq_tail = REG(inst, rings_sq_tail), .cq_tail = REG(inst, rings_cq_tail),                           \
    .cq_head = REG(inst, rings_cq_head), .data_base = REG(inst, rings_data_base),                       \
    .data_bytes = REG(inst, rings_data_bytes), .rx_crc_errors = REG(inst, rig_rx_crc_errors),           \
    .tx_r_errs = REG(inst, rig_tx_r_errs), .timeouts = REG(inst, rig_timeouts),                         \
    .ncq_errors = REG(inst, rig_ncq_errors), .events_lost = REG(inst, rig_events_lost),                 \
    .cq_stalls = REG(inst, rings_cq_stalls),                                                            \
    .ibus_words = REG_OR_0(inst, cpu_bus_ibus_words), .ibus_busy = REG_OR_0(inst, cpu_bus_ibus_busy),   \
    .dbus_words = REG_OR_0(inst, cpu_bus_dbus_words), .dbus_busy = REG_OR_0(inst, cpu_bus_dbus_busy),   \
    .ring_ram = REG(inst, ring_ram), .ring_ram_bytes = DT_INST_REG_SIZE_BY_NAME(inst, ring_ram),        \
    .tick_gate = REG(inst, tick_gate),                                                                  \
    .program = REG(inst, program), .program_bytes = DT_INST_REG_SIZE_BY_NAME(inst, program),            \
  };                                                                                                    \
  DEVICE_DT_INST_DEFINE(inst, fisrig_engine_init, NULL, NULL, &config_##inst, POST_KERNEL,              \
                        CONFIG_KERNEL_INIT_PRIORITY_DEVICE, NULL);

static const struct fisrig_engine_config *cfg(const struct device *dev) { return dev->config; }

void fisrig_engine_rings_reset(const struct device *dev) {
  const struct fisrig_engine_config *c = cfg(dev);
  litex_write32(0, c->enable);
  litex_write32((uint32_t)(uintptr_t)c->ops->sq, c->sq_base);
  litex_write32(c->ops->sq_entries, c->sq_entries);
  litex_write32((uint32_t)(uintptr_t)c->ops->cq, c->cq_base);
  litex_write32(c->ops->cq_entries, c->cq_entries);
  litex_write32((uint32_t)(uintptr_t)c->ops->data_window, c->data_base);
  litex_write32(c->ops->data_window_bytes, c->data_bytes); /* the engine refuses RAM data past it */
  litex_write32(0, c->sq_tail);
  litex_write32(0, c->cq_head);
  litex_write32(1, c->enable);
}

static int fisrig_engine_init(const struct device *dev) {
  fisrig_engine_rings_reset(dev);
  return 0;
}

void fisrig_engine_bind(const struct device *dev, struct fisrig_engine_ops *ops) { *ops = *cfg(dev)->ops; }

struct fisrig_ring_ram *fisrig_engine_ring_ram(const struct device *dev) {
  return (struct fisrig_ring_ram *)cfg(dev)->ring_ram;
}

struct fisrig_mailbox *fisrig_engine_mailbox(const struct device *dev) {
  return (struct fisrig_mailbox *)(cfg(dev)->ring_ram + FISRIG_MAILBOX_OFFSET);
}

const struct fisrig_boot_header *fisrig_engine_boot_header(const struct device *dev) {
  return (const struct fisrig_boot_header *)cfg(dev)->program;
}

uint32_t fisrig_engine_program_room(const struct device *dev) {
  return cfg(dev)->program_bytes - sizeof(struct fisrig_boot_header);
}

uint64_t fisrig_engine_now(const struct device *dev) { return cfg(dev)->ops->now(0); }

bool fisrig_engine_link_ready(const struct device *dev) { return litex_read32(cfg(dev)->link_ready) != 0; }

uint32_t fisrig_engine_cq_tail(const struct device *dev) { return litex_read32(cfg(dev)->cq_tail); }

void fisrig_engine_cq_consume_all(const struct device *dev) {
  litex_write32(litex_read32(cfg(dev)->cq_tail), cfg(dev)->cq_head);
}

uint32_t fisrig_engine_start_at(const struct device *dev, uint64_t tick) {
  volatile uint32_t *gate = (volatile uint32_t *)cfg(dev)->tick_gate;
  gate[0] = (uint32_t)tick;
  gate[1] = (uint32_t)(tick >> 32);
  return gate[2];
}

void fisrig_engine_counters(const struct device *dev, struct fisrig_engine_counters *out) {
  const struct fisrig_engine_config *c = cfg(dev);
  out->rx_crc_errors = litex_read32(c->rx_crc_errors);
  out->tx_r_errs = litex_read32(c->tx_r_errs);
  out->timeouts = litex_read32(c->timeouts);
  out->ncq_errors = litex_read32(c->ncq_errors);
  out->events_lost = litex_read32(c->events_lost);
  out->cq_stalls = litex_read32(c->cq_stalls);
}

bool fisrig_engine_bus(const struct device *dev, struct fisrig_fw_bus *out) {
  const struct fisrig_engine_config *c = cfg(dev);
  *out = (struct fisrig_fw_bus){(uint32_t)fisrig_engine_now(dev), 0, 0, 0, 0};
  if (!c->ibus_words) return false;
  out->ibus_words = litex_read32(c->ibus_words);
  out->ibus_busy = litex_read32(c->ibus_busy);
  out->dbus_words = litex_read32(c->dbus_words);
  out->dbus_busy = litex_read32(c->dbus_busy);
  return true;
}

int fisrig_engine_selftest(const struct device *dev, const char **what) {
  const struct fisrig_engine_config *c = cfg(dev);
  uint64_t t0 = fisrig_engine_now(dev);
  k_busy_wait(10);
  if (fisrig_engine_now(dev) <= t0) {
    *what = "the engine's counter does not move";
    return -EIO;
  }
  if (litex_read32(c->sq_base) != (uint32_t)(uintptr_t)c->ops->sq ||
      litex_read32(c->cq_base) != (uint32_t)(uintptr_t)c->ops->cq ||
      litex_read32(c->sq_entries) != c->ops->sq_entries || litex_read32(c->cq_entries) != c->ops->cq_entries) {
    *what = "the rings' registers do not hold what was written";
    return -EIO;
  }
  /* The ring RAM's words between the rings and the mailbox are nobody's. */
  volatile uint32_t *spare = (volatile uint32_t *)(c->ring_ram + sizeof(struct fisrig_ring_ram));
  unsigned words = (FISRIG_MAILBOX_OFFSET - sizeof(struct fisrig_ring_ram)) / 4u;
  if (words > 64u) words = 64u;
  for (unsigned i = 0; i < words; ++i) spare[i] = 0xA5C30000u ^ (i * 0x01010101u);
  for (unsigned i = 0; i < words; ++i) {
    if (spare[i] != (0xA5C30000u ^ (i * 0x01010101u))) {
      *what = "the ring RAM does not read back what was written";
      return -EIO;
    }
  }
  if (!fisrig_engine_link_ready(dev)) {
    *what = "the SATA link is down";
    return -ENOTCONN;
  }
  *what = "engine, ring RAM and link";
  return 0;
}

DT_INST_FOREACH_STATUS_OKAY(FISRIG_ENGINE_DEFINE)
