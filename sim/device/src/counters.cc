#include <cstdio>

#include "fisrig/device/counters.h"
#include "fisrig/device/fis.h"

namespace fisrig::device {

namespace {
const char* fis_name(unsigned type) {
  switch (type) {
    case fis::kRegH2D: return "reg_h2d";
    case fis::kRegD2H: return "reg_d2h";
    case fis::kDmaActivate: return "dma_activate";
    case fis::kDmaSetup: return "dma_setup";
    case fis::kData: return "data";
    case fis::kPioSetup: return "pio_setup";
    case fis::kSetDeviceBits: return "set_device_bits";
    default: return nullptr;
  }
}
}  // namespace

std::string DeviceCounters::text() const {
  std::string s;
  char line[96];
  auto put = [&](const char* name, uint64_t v) {
    std::snprintf(line, sizeof line, "%s %llu\n", name, static_cast<unsigned long long>(v));
    s += line;
  };
  put("cycles", cycles);
  put("link_ups", link_ups);
  put("link_gen", link_gen);
  put("comresets", comresets);
  put("power_offs", power_offs);
  put("power_ons", power_ons);
  put("cominits_sent", cominits_sent);
  put("commands", commands);
  for (const char* dir : {"sent", "received"}) {
    const auto& by_type = dir[0] == 's' ? fis_sent : fis_received;
    for (unsigned t = 0; t < 256; ++t) {
      if (!by_type[t]) continue;
      char name[48];
      if (const char* n = fis_name(t)) std::snprintf(name, sizeof name, "fis_%s.%s", dir, n);
      else std::snprintf(name, sizeof name, "fis_%s.type_%02x", dir, t);
      put(name, by_type[t]);
    }
  }
  put("sdb_sent", sdb_sent);
  put("sdb_tags", sdb_tags);
  put("ncq_errors", ncq_errors);
  put("r_ok_sent", r_ok_sent);
  put("r_err_sent", r_err_sent);
  put("r_err_injected", r_err_injected);
  put("r_err_received", r_err_received);
  put("rx_crc_errors", rx_crc_errors);
  put("tx_crc_corrupted", tx_crc_corrupted);
  put("retransmits", retransmits);
  put("holds_sent", holds_sent);
  put("hold_cycles_sent", hold_cycles_sent);
  put("holds_received", holds_received);
  put("holda_cycles_sent", holda_cycles_sent);
  put("conts_received", conts_received);
  put("frames_aborted", frames_aborted);
  put("protocol_errors", protocol_errors);
  return s;
}

}  // namespace fisrig::device
