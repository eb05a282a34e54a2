// A TLP as the rig's PCIe link carries it (PCI Express Base 4.0, 2.2): its header's fields and
// its payload, to and from its bytes in wire order, and those bytes to and from the 64-bit
// beats of LitePCIe's PHY stream (each dword as a header field's value, the TLP's first byte
// in bits 31..24: hw/fisrig_hw/pcie/beats.py's form). The simulated controller's link side
// reads and writes TLPs with this alone; tests/hw/test_tlp_codec.py holds it to
// cocotbext-pcie's codec, field by field, both ways. Numbers are fisrig/pcie.h's.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include "fisrig/pcie.h"
}

namespace fisrig::nvme {

struct Tlp {
  uint8_t fmt_type = 0;  // FISRIG_PCIE_TLP_*: DW0's bits 31..24
  uint8_t tc = 0, attr = 0;
  bool td = false, ep = false;  // a digest follows (never here); poisoned
  uint16_t length = 0;          // dwords: of the payload, or asked for by a read (1 to 1024)
  uint16_t requester_id = 0;    // bus << 8 | device << 3 | function
  uint16_t completer_id = 0;    // a completion's completer; a configuration request's target
  uint8_t tag = 0;
  uint8_t first_be = 0, last_be = 0;  // requests
  uint64_t address = 0;         // a memory request's; a configuration request's register byte offset
  uint8_t status = 0;           // completions: FISRIG_PCIE_CPL_*
  bool bcm = false;
  uint16_t byte_count = 0;      // completions: 1 to 4096
  uint8_t lower_address = 0;
  std::vector<uint8_t> data;    // the payload as it crosses (a register's value little-endian)

  static bool has_data(uint8_t fmt_type) { return fmt_type & 0x40; }
  static bool four_dw(uint8_t fmt_type) { return fmt_type & 0x20; }
  bool has_data() const { return has_data(fmt_type); }
  bool is_completion() const { return fmt_type == FISRIG_PCIE_TLP_CPL || fmt_type == FISRIG_PCIE_TLP_CPLD; }
  bool is_config() const { return fmt_type == FISRIG_PCIE_TLP_CFGRD0 || fmt_type == FISRIG_PCIE_TLP_CFGWR0; }
  bool is_memory() const { return (fmt_type & 0x9F) == 0; }
  uint32_t header_bytes() const { return four_dw(fmt_type) ? 16 : 12; }
  // A memory write's dword at `k` of its payload, little-endian (a register's value).
  uint32_t dword(size_t k) const {
    return k * 4 + 4 <= data.size() ? uint32_t(data[4 * k]) | uint32_t(data[4 * k + 1]) << 8 |
                                          uint32_t(data[4 * k + 2]) << 16 | uint32_t(data[4 * k + 3]) << 24
                                    : 0;
  }
};

// A register's value appended to a payload as it crosses, little-endian.
inline void append_le32(std::vector<uint8_t>& data, uint32_t value) {
  for (int k = 0; k < 4; ++k)
    data.push_back(uint8_t(value >> (8 * k)));
}

// The TLP's bytes in wire order: its header, then its payload.
std::vector<uint8_t> encode(const Tlp& t);
// The TLP in `n` bytes; false, with what is wrong with them in `why`, for bytes that are not
// one TLP of the kinds the rig's link carries (fisrig/pcie.h's) or whose payload is not the
// length its header says.
bool decode(const uint8_t* bytes, size_t n, Tlp& out, std::string* why = nullptr);

// A TLP's bytes (whole dwords) as (dat, be) beats of 64 bits, and back; from_beats is false
// for a beat whose byte enables are not whole dwords from the low one up.
std::vector<std::pair<uint64_t, uint8_t>> to_beats(const std::vector<uint8_t>& bytes);
bool from_beats(const std::vector<std::pair<uint64_t, uint8_t>>& beats, std::vector<uint8_t>& bytes);

}  // namespace fisrig::nvme
