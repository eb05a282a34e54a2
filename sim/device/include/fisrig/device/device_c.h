/*
 * The simulated drive's device side for C callers (the litex_sim module that sits on the
 * simulated transceiver's pins). One call per 150 MHz SATA clock cycle.
 *
 *   char err[256];
 *   void *dev = fisrig_device_new("tiny-1gb", "r_err_rate=0.001,hold_storm_rate=0.01,hold_storm_us=5",
 *                                 err, sizeof err);
 *   if (!dev) { fprintf(stderr, "%s\n", err); exit(1); }
 *   for (;;) fisrig_device_clock(dev, &pins_in, &pins_out);
 *   fisrig_device_stats(dev, stdout);
 *   fisrig_device_free(dev);
 */
#ifndef FISRIG_DEVICE_C_H
#define FISRIG_DEVICE_C_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fisrig/device/pins.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * profile: a built-in profile name ("tiny-1gb", "consumer-256gb", ...) or a .toml path.
 * faults:  NULL or "key=value,key=value": the fault knobs of fisrig/ssd/config.h
 *          (data_fis_crc_error_rate, r_err_rate, hold_storm_rate, hold_storm_us, busy_rate,
 *          busy_us, latency_outlier_rate, latency_outlier_us, unc, idnf,
 *          hang_after_commands, link_drop_after_commands, seed, boot_us: power-on to
 *          ready instead of the profile's power.boot_ms) and max_gen (the fastest SATA speed the device
 *          negotiates, 1..3; 3 unless given). Range lists keep their commas: "unc=1000+8,4096+1".
 * Returns NULL with a message in err (up to errlen bytes, NUL-terminated) when the
 * profile or a knob is bad.
 */
void *fisrig_device_new(const char *profile, const char *faults, char *err, size_t errlen);
void fisrig_device_clock(void *dev, const struct fisrig_pins_in *in, struct fisrig_pins_out *out);
void fisrig_device_free(void *dev);

/* Device and drive counters, one "name value" per line. */
void fisrig_device_stats(void *dev, FILE *out);
/* The same into buf (NUL-terminated, cut to buflen); returns the full length. */
size_t fisrig_device_stats_string(void *dev, char *buf, size_t buflen);
/* Cycles clocked so far; 1 once the link is up (OOB done, the host's SYNC seen). */
uint64_t fisrig_device_cycles(void *dev);
int fisrig_device_link_up(void *dev);

#ifdef __cplusplus
}
#endif

#endif /* FISRIG_DEVICE_C_H */
