// Frame Information Structures as the device side sends and receives them (Serial ATA
// 3.x, 10.5): type codes (fisrig/ata.h's), the Register H2D fields it reads and the device-to-host FISes
// it builds. Field positions are the same as the gateware's (hw/fisrig_hw/engine/fis.py).
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {
#include "fisrig/ata.h"
}

namespace fisrig::device::fis {

constexpr uint8_t kRegH2D = FISRIG_FIS_REG_H2D;
constexpr uint8_t kRegD2H = FISRIG_FIS_REG_D2H;
constexpr uint8_t kDmaActivate = FISRIG_FIS_DMA_ACTIVATE;
constexpr uint8_t kDmaSetup = FISRIG_FIS_DMA_SETUP;
constexpr uint8_t kData = FISRIG_FIS_DATA;
constexpr uint8_t kPioSetup = FISRIG_FIS_PIO_SETUP;
constexpr uint8_t kSetDeviceBits = FISRIG_FIS_SET_DEVICE_BITS;

constexpr uint32_t kMaxDataDwords = 2048;                // 8 KiB per Data FIS
constexpr uint32_t kMaxFisDwords = 1 + kMaxDataDwords;  // a Data FIS with its header
constexpr uint32_t kMaxDataBytes = kMaxDataDwords * 4;

constexpr uint8_t type_of(uint32_t dword0) { return uint8_t(dword0); }

// The Register H2D fields (every one, unparsed).
struct H2D {
  bool c = false;  // 1: a command; 0: a Device Control register update
  uint8_t command = 0;
  uint16_t features = 0;
  uint64_t lba = 0;
  uint8_t device = 0;
  uint16_t count = 0;
  uint8_t icc = 0;
  uint8_t control = 0;
  uint16_t aux = 0;  // dword 4 (SATA 3.1 AUXILIARY; 0 from hosts that send it as reserved)
};

// False unless f is a Register H2D of 5 dwords (LiteSATA and the rig's engine send 5).
inline bool parse_h2d(const uint32_t* f, size_t n, H2D& h) {
  if (n != 5 || type_of(f[0]) != kRegH2D) return false;
  h.c = (f[0] >> 15) & 1;
  h.command = uint8_t(f[0] >> 16);
  h.features = uint16_t((f[0] >> 24) | ((f[2] >> 24) << 8));
  h.lba = (f[1] & 0xFFFFFFu) | (uint64_t(f[2] & 0xFFFFFFu) << 24);
  h.device = uint8_t(f[1] >> 24);
  h.count = uint16_t(f[3]);
  h.icc = uint8_t(f[3] >> 16);
  h.control = uint8_t(f[3] >> 24);
  h.aux = uint16_t(f[4]);
  return true;
}

// Builders: each writes its FIS into out[] and returns its length in dwords.

// Register D2H: status and error, LBA and count (the signature, or a failing LBA).
inline uint32_t reg_d2h(uint32_t* out, uint8_t status, uint8_t error, bool interrupt, uint64_t lba = 0,
                        uint16_t count = 0, uint8_t device = 0) {
  out[0] = kRegD2H | uint32_t(interrupt) << 14 | uint32_t(status) << 16 | uint32_t(error) << 24;
  out[1] = uint32_t(lba & 0xFFFFFF) | uint32_t(device) << 24;
  out[2] = uint32_t((lba >> 24) & 0xFFFFFF);
  out[3] = count;
  out[4] = 0;
  return 5;
}

// DMA Activate: the host may send one Data FIS.
inline uint32_t dma_activate(uint32_t* out) {
  out[0] = kDmaActivate;
  return 1;
}

// DMA Setup (first-party DMA, NCQ): D = 1 device to host; A (auto-activate) left 0, so a
// write's Data FISes each wait for a DMA Activate; buffer identifier low = the tag.
inline uint32_t dma_setup(uint32_t* out, bool to_host, uint8_t tag, uint32_t bytes) {
  out[0] = kDmaSetup | uint32_t(to_host) << 13;
  out[1] = tag & 0x1Fu;
  out[2] = 0;
  out[3] = 0;
  out[4] = 0;  // buffer offset
  out[5] = bytes;
  out[6] = 0;
  return 7;
}

// PIO Setup: status before the DRQ block, E_Status after it, the block's byte count.
inline uint32_t pio_setup(uint32_t* out, bool to_host, uint8_t status, uint8_t e_status, uint16_t bytes,
                          uint64_t lba = 0, uint16_t count = 0) {
  out[0] = kPioSetup | uint32_t(to_host) << 13 | 1u << 14 | uint32_t(status) << 16;
  out[1] = uint32_t(lba & 0xFFFFFF);
  out[2] = uint32_t((lba >> 24) & 0xFFFFFF);
  out[3] = count | uint32_t(e_status) << 24;
  out[4] = bytes;
  return 5;
}

// Set Device Bits: I = 1, status bits 6:4 and 2:0 (7 and 3 are not carried), error, and
// the SActive bits of the queued commands it completes.
inline uint32_t set_device_bits(uint32_t* out, uint8_t status, uint8_t error, uint32_t sactive) {
  out[0] = kSetDeviceBits | 1u << 14 | uint32_t(status & 0x07) << 16 | uint32_t((status >> 4) & 0x07) << 20 |
           uint32_t(error) << 24;
  out[1] = sactive;
  return 2;
}

}  // namespace fisrig::device::fis
