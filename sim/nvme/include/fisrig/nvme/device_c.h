/*
 * The simulated NVMe controller at its link's TLP interface (fisrig/nvme/tlp_device.h) for C
 * callers: the litex_sim module or Verilator runner that sits on the rig's PCIe PHY stream
 * (LitePCIe's phy_layout: 64-bit beats, hw/fisrig_hw/pcie/beats.py's form). One call per
 * beat time: 4 ns at Gen2 x4, the 7-series hard block's 64-bit stream at 250 MHz.
 *
 *   char err[256];
 *   void *dev = fisrig_nvme_device_new("tiny-1gb", "busy_rate=0.01,busy_us=50", 2, 4, err, sizeof err);
 *   if (!dev) { fprintf(stderr, "%s\n", err); exit(1); }
 *   for (;;) fisrig_nvme_device_clock(dev, &from_rig, to_rig.valid && rig_ready, &to_rig);
 *   fisrig_nvme_device_free(dev);
 */
#ifndef FISRIG_NVME_DEVICE_C_H
#define FISRIG_NVME_DEVICE_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A beat of the PHY stream: dat's dword k in bits 32k+31..32k, the TLP's first byte of each
 * dword in its bits 31..24; be a bit a byte. */
struct fisrig_pcie_beat {
  uint8_t valid, first, last;
  uint8_t be;
  uint64_t dat;
};

/*
 * profile: a built-in profile name or a .toml path; faults: NULL or "key=value,...", the fault
 * knobs of fisrig/ssd/config.h (fisrig/ssd/fault_list.h's form) and enable_us (CC.EN to
 * CSTS.RDY instead of the controller's 1 ms: a simulation's shortcut); gen, lanes: the link, whose
 * 64-bit beats must each take a whole number of ns (Gen1 or Gen2, x4 or x8: the rig's PHYs).
 * Returns NULL with a message in err (up to errlen bytes, NUL-terminated) when something is bad.
 */
void *fisrig_nvme_device_new(const char *profile, const char *faults, unsigned gen, unsigned lanes, char *err,
                             size_t errlen);
/*
 * One beat time, as a clock edge: in is the rig's beat toward the device (taken when valid:
 * the device is always ready); rig_took says whether the rig took the beat `out` held after
 * the call before (its valid and the rig's ready at this edge); out is the beat the device
 * presents until the next edge (the same one again when it was not taken).
 */
void fisrig_nvme_device_clock(void *dev, const struct fisrig_pcie_beat *in, int rig_took, struct fisrig_pcie_beat *out);
void fisrig_nvme_device_free(void *dev);
/* The rails off (on = 0) or on at this beat time (the rig's power controller): off, the
 * device answers nothing and what it had to send goes (a TLP half out is finished: the
 * stream has no link-down yet); on, its function answers CRS until the SSD is up. */
void fisrig_nvme_device_power(void *dev, int on);
/* Beat times clocked so far, and the time they make in ns. */
uint64_t fisrig_nvme_device_cycles(void *dev);
uint64_t fisrig_nvme_device_now_ns(void *dev);
/* Counters, one "name value" per line, into buf (NUL-terminated, cut to buflen); the full length. */
size_t fisrig_nvme_device_stats_string(void *dev, char *buf, size_t buflen);

#ifdef __cplusplus
}
#endif

#endif /* FISRIG_NVME_DEVICE_C_H */
