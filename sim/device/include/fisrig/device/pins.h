/*
 * The simulated transceiver's pins: the contract between the rig's gateware (LiteSATA's
 * PHY control and datapath, simulated in Verilator) and the simulated drive's device
 * side. One sample per 150 MHz SATA clock cycle (Gen3: one 32-bit dword per cycle,
 * 6.667 ns; Gen2 a dword every 2nd cycle, Gen1 every 4th, marked by dword_gap).
 * C-compatible, so that the litex_sim module (C) shares it.
 */
#ifndef FISRIG_DEVICE_PINS_H
#define FISRIG_DEVICE_PINS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the host (the SoC) drives, sampled at this rising edge. */
struct fisrig_pins_in {
  uint32_t tx_data;    /* host -> device dword */
  uint8_t tx_charisk;  /* bit 0: byte 0 is a K character (primitives 0b0001, data 0) */
  uint8_t tx_idle;     /* host transmitter in electrical idle (tx_data meaningless) */
  uint8_t tx_cominit;  /* 1 for one cycle: the host starts COMRESET (bursts for 384 cycles) */
  uint8_t tx_comwake;  /* 1 for one cycle: the host starts COMWAKE (192 cycles) */
  uint8_t power;       /* the power pins (the rig's power controller): FISRIG_PINS_* bits */
  uint8_t dword_gap;   /* 1 on a cycle that carries no dword either way: the host's transceiver
                          runs at Gen2 (every 2nd cycle carries one) or Gen1 (every 4th); 0 at Gen3 */
};

/* What the device drives for the next cycle (held through dword gaps). */
struct fisrig_pins_out {
  uint32_t rx_data;
  uint8_t rx_charisk;
  uint8_t rx_idle;     /* 1 while the device's transmitter is in electrical idle or off */
  uint8_t rx_cominit;  /* 1 while the host's receiver detects the device's COMINIT (384 cycles) */
  uint8_t rx_comwake;  /* 1 while the host detects the device's COMWAKE (192 cycles) */
  uint16_t current_ma; /* what the drive draws from its rails, in mA, as the rig's current sense
                          (a shunt and ADC on a board) reads it: a new conversion every
                          FISRIG_CURRENT_PIN_CYCLES; 0 without power */
};

/* The power pins, a bit each (engine_if.h's enum fisrig_power_pin, bit 1 << pin: the
   device side holds the two to each other). A rail's bit is 1 while it is on; P3's while
   the rig asserts Power Disable. */
#define FISRIG_PINS_3V3 0x1u
#define FISRIG_PINS_5V 0x2u
#define FISRIG_PINS_12V 0x4u
#define FISRIG_PINS_P3 0x8u
#define FISRIG_PINS_ON 0x7u /* as the rig starts: the three rails on, P3 not asserted */

/* The current pins' conversion rate: one every 128 cycles (0.85 us, 1.17 MS/s), so a 4 us
   sample is at most that old, as an ADC's conversion would be. */
#define FISRIG_CURRENT_PIN_CYCLES 128u

#define FISRIG_COMRESET_CYCLES 384u /* a COMRESET/COMINIT burst sequence, 2.56 us */
#define FISRIG_COMWAKE_CYCLES 192u  /* a COMWAKE burst sequence, 1.28 us */
#define FISRIG_ALIGN_TIMEOUT_CYCLES 8190u /* 54.6 us (2048 Gen1 dwords): a device that has not
                                             seen the host's ALIGN by then tries the next
                                             lower speed */

#ifdef __cplusplus
}
#endif

#endif /* FISRIG_DEVICE_PINS_H */
