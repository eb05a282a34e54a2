// TLPs to and from bytes and beats: tlp.h.
#include "fisrig/nvme/tlp.h"

namespace fisrig::nvme {

namespace {

void put32(std::vector<uint8_t>& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8)
    b.push_back(uint8_t(v >> s));
}

uint32_t get32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

bool known(uint8_t ft) {
  switch (ft) {
    case FISRIG_PCIE_TLP_MRD32: case FISRIG_PCIE_TLP_MRD64: case FISRIG_PCIE_TLP_MWR32: case FISRIG_PCIE_TLP_MWR64:
    case FISRIG_PCIE_TLP_CFGRD0: case FISRIG_PCIE_TLP_CFGWR0: case FISRIG_PCIE_TLP_CPL: case FISRIG_PCIE_TLP_CPLD:
      return true;
    default:
      return false;
  }
}

bool fail(std::string* why, std::string what) {
  if (why)
    *why = std::move(what);
  return false;
}

}  // namespace

std::vector<uint8_t> encode(const Tlp& t) {
  std::vector<uint8_t> b;
  b.reserve(t.header_bytes() + t.data.size());
  put32(b, uint32_t(t.fmt_type) << 24 | uint32_t(t.tc & 7) << 20 | uint32_t(t.td) << 15 | uint32_t(t.ep) << 14 |
               uint32_t(t.attr & 3) << 12 | (t.length & 0x3FF));
  if (t.is_completion()) {
    put32(b, uint32_t(t.completer_id) << 16 | uint32_t(t.status & 7) << 13 | uint32_t(t.bcm) << 12 |
                 (t.byte_count & 0xFFF));
    put32(b, uint32_t(t.requester_id) << 16 | uint32_t(t.tag) << 8 | (t.lower_address & 0x7F));
  } else {
    put32(b, uint32_t(t.requester_id) << 16 | uint32_t(t.tag) << 8 | uint32_t(t.last_be & 0xF) << 4 | (t.first_be & 0xF));
    if (t.is_config())
      put32(b, uint32_t(t.completer_id) << 16 | (uint32_t(t.address) & 0xFFC));
    else if (Tlp::four_dw(t.fmt_type))
      put32(b, uint32_t(t.address >> 32)), put32(b, uint32_t(t.address) & ~3u);
    else
      put32(b, uint32_t(t.address) & ~3u);
  }
  b.insert(b.end(), t.data.begin(), t.data.end());
  return b;
}

bool decode(const uint8_t* p, size_t n, Tlp& t, std::string* why) {
  t = Tlp{};
  if (n < 12 || n % 4)
    return fail(why, "a TLP of " + std::to_string(n) + " bytes: not whole dwords past a header");
  const uint32_t dw0 = get32(p);
  t.fmt_type = uint8_t(dw0 >> 24);
  if (!known(t.fmt_type))
    return fail(why, "a TLP of Fmt/Type " + std::to_string(t.fmt_type) + ": not one the rig's link carries");
  t.tc = (dw0 >> 20) & 7;
  t.td = dw0 >> 15 & 1;
  t.ep = dw0 >> 14 & 1;
  t.attr = (dw0 >> 12) & 3;
  t.length = dw0 & 0x3FF;
  const uint32_t header = t.header_bytes();
  if (n < header)
    return fail(why, "a TLP shorter than its header");
  const uint32_t dw1 = get32(p + 4), dw2 = get32(p + 8);
  if (t.is_completion()) {
    t.completer_id = uint16_t(dw1 >> 16);
    t.status = (dw1 >> 13) & 7;
    t.bcm = dw1 >> 12 & 1;
    t.byte_count = dw1 & 0xFFF;
    if (t.byte_count == 0)
      t.byte_count = 4096;
    t.requester_id = uint16_t(dw2 >> 16);
    t.tag = uint8_t(dw2 >> 8);
    t.lower_address = dw2 & 0x7F;
  } else {
    t.requester_id = uint16_t(dw1 >> 16);
    t.tag = uint8_t(dw1 >> 8);
    t.last_be = (dw1 >> 4) & 0xF;
    t.first_be = dw1 & 0xF;
    if (t.is_config()) {
      t.completer_id = uint16_t(dw2 >> 16);
      t.address = dw2 & 0xFFC;
    } else if (Tlp::four_dw(t.fmt_type)) {
      t.address = uint64_t(dw2) << 32 | (get32(p + 12) & ~3u);
    } else {
      t.address = dw2 & ~3u;
    }
  }
  const bool completion_without_data = t.fmt_type == FISRIG_PCIE_TLP_CPL;
  const uint32_t dwords = t.length == 0 && !completion_without_data ? 1024 : t.length;
  if (!completion_without_data)
    t.length = uint16_t(dwords == 1024 ? 0 : dwords);
  const size_t payload = t.has_data() ? size_t(dwords) * 4 : 0;
  if (n != header + payload)
    return fail(why, "a TLP of " + std::to_string(n) + " bytes whose header says " + std::to_string(header + payload));
  if (t.is_config() && (dwords != 1 || t.last_be != 0))
    return fail(why, "a configuration request of other than one dword");
  t.data.assign(p + header, p + n);
  return true;
}

std::vector<std::pair<uint64_t, uint8_t>> to_beats(const std::vector<uint8_t>& bytes) {
  std::vector<std::pair<uint64_t, uint8_t>> beats;
  for (size_t k = 0; k < bytes.size(); k += 8) {
    uint64_t dat = get32(&bytes[k]);
    uint8_t be = 0x0F;
    if (k + 8 <= bytes.size()) {
      dat |= uint64_t(get32(&bytes[k + 4])) << 32;
      be = 0xFF;
    }
    beats.emplace_back(dat, be);
  }
  return beats;
}

bool from_beats(const std::vector<std::pair<uint64_t, uint8_t>>& beats, std::vector<uint8_t>& bytes) {
  bytes.clear();
  for (const auto& [dat, be] : beats) {
    if (be != 0x0F && be != 0xFF)
      return false;
    put32(bytes, uint32_t(dat));
    if (be == 0xFF)
      put32(bytes, uint32_t(dat >> 32));
  }
  return true;
}

}  // namespace fisrig::nvme
