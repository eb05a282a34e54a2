// The device side and the host model on one simulated wire, with the register stages of
// the real datapath between them, clocked together; helpers that build commands and data.
#pragma once

#include <array>
#include <cstring>
#include <vector>

#include "fisrig/device/sata_device.h"
#include "fisrig/ssd/config.h"
#include "host_engine.h"
#include "host_link.h"

extern "C" {
#include "fisrig/pattern.h"
}

namespace fisrig::test {

namespace ata = drive::ata;

inline drive::DriveConfig tiny() { return drive::load_profile("tiny-1gb"); }

class Rig {
 public:
  static constexpr int kLatency = 3;  // cycles each way, as LiteSATA's datapath registers

  explicit Rig(drive::DriveConfig cfg = tiny(), HostLinkOptions o = {})
      : dev(std::move(cfg)), host(o), engine(host) {
    for (auto& p : to_dev_) p.power = FISRIG_PINS_ON;  // the rails are on from the start
    for (auto& p : to_host_) p.rx_idle = 1;
  }

  device::SataDevice dev;
  HostLink host;
  HostEngine engine;
  uint8_t pins = FISRIG_PINS_ON;  // the power pins the host drives (pins.h)
  uint64_t cycles = 0;
  // The pins at the device, cycle by cycle (device cycle = index), once trace is on.
  bool trace = false;
  std::vector<fisrig_pins_in> trace_in;
  std::vector<fisrig_pins_out> trace_out;

  void step() {
    fisrig_pins_in h{};
    host.clock(to_host_[pos_], h);
    h.power = pins;
    engine.clock();
    fisrig_pins_in in = to_dev_[pos_];
    to_dev_[pos_] = h;
    fisrig_pins_out o{};
    dev.clock(in, o);
    if (trace) {
      trace_in.push_back(in);
      trace_out.push_back(o);
    }
    to_host_[pos_] = o;
    pos_ = (pos_ + 1) % kLatency;
    ++cycles;
  }
  template <class F>
  bool run_until(F done, uint64_t max_cycles) {
    for (uint64_t i = 0; i < max_cycles; ++i) {
      if (done()) return true;
      step();
    }
    return done();
  }
  void run(uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) step();
  }
  // OOB, link up and the signature D2H.
  bool bring_up(uint64_t max_cycles = 2'000'000) {
    size_t sigs = engine.signatures.size();
    return run_until([&] { return host.connected() && engine.signatures.size() > sigs; }, max_cycles);
  }
  // Issues one command and runs until it is done.
  bool exec(HostCommand& c, uint64_t max_cycles = 3'000'000) {
    engine.issue(&c);
    return run_until([&] { return c.done; }, max_cycles);
  }

 private:
  std::array<fisrig_pins_in, kLatency> to_dev_{};
  std::array<fisrig_pins_out, kLatency> to_host_{};
  int pos_ = 0;
};

// ---- commands as the rig's engine issues them ----

inline HostCommand identify() {
  HostCommand c;
  c.command = ata::kIdentifyDevice;
  return c;
}
inline HostCommand read_dma(uint64_t lba, uint16_t n) {
  HostCommand c;
  c.command = ata::kReadDmaExt;
  c.lba = lba;
  c.count = n;
  return c;
}
inline HostCommand write_dma(uint64_t lba, uint16_t n, std::vector<uint8_t> data, bool fua = false) {
  HostCommand c;
  c.command = fua ? ata::kWriteDmaFuaExt : ata::kWriteDmaExt;
  c.lba = lba;
  c.count = n;
  c.out = std::move(data);
  return c;
}
inline HostCommand read_fpdma(uint8_t tag, uint64_t lba, uint16_t n) {
  HostCommand c;
  c.command = ata::kReadFpdmaQueued;
  c.lba = lba;
  c.features = n;
  c.count = uint16_t(tag << 3);
  c.queued = true;
  c.tag = tag;
  return c;
}
inline HostCommand write_fpdma(uint8_t tag, uint64_t lba, uint16_t n, std::vector<uint8_t> data) {
  HostCommand c = read_fpdma(tag, lba, n);
  c.command = ata::kWriteFpdmaQueued;
  c.out = std::move(data);
  return c;
}
inline HostCommand read_log(uint8_t log, uint16_t pages = 1) {
  HostCommand c;
  c.command = ata::kReadLogExt;
  c.lba = log;
  c.count = pages;
  return c;
}
// DSM TRIM with one 512-byte block of ranges (LBA 47:0, length 63:48).
inline std::vector<uint8_t> trim_ranges(std::vector<std::pair<uint64_t, uint16_t>> ranges) {
  std::vector<uint8_t> b(512, 0);
  for (size_t i = 0; i < ranges.size(); ++i) {
    uint64_t e = ranges[i].first | uint64_t(ranges[i].second) << 48;
    std::memcpy(&b[i * 8], &e, 8);
  }
  return b;
}
inline HostCommand trim(std::vector<std::pair<uint64_t, uint16_t>> ranges) {
  HostCommand c;
  c.command = ata::kDataSetManagement;
  c.features = 1;
  c.count = 1;
  c.out = trim_ranges(std::move(ranges));
  return c;
}
inline HostCommand trim_queued(uint8_t tag, std::vector<std::pair<uint64_t, uint16_t>> ranges) {
  HostCommand c = read_fpdma(tag, 0, 1);
  c.command = ata::kSendFpdmaQueued;
  c.aux = 1;
  c.out = trim_ranges(std::move(ranges));
  return c;
}

// ---- data the host's pattern generator sends ----

inline std::vector<uint8_t> pattern(int kind, uint64_t lba, uint32_t sectors, uint32_t data_word,
                                    uint8_t compress_pct = 100) {
  std::vector<uint8_t> out(size_t(sectors) * 512);
  uint32_t s[FISRIG_SECTOR_DWORDS];
  for (uint32_t i = 0; i < sectors; ++i) {
    fisrig_pattern_sector(kind, lba + i, data_word, compress_pct, s);
    std::memcpy(&out[size_t(i) * 512], s, 512);
  }
  return out;
}

}  // namespace fisrig::test
