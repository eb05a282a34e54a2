// The TLP device on the PHY stream's beats, for C callers: fisrig/nvme/device_c.h.
#include "fisrig/nvme/device_c.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>

#include "fisrig/nvme/tlp_device.h"
#include "fisrig/ssd/fault_list.h"

namespace {

using fisrig::nvme::TlpDevice;

struct BeatDevice {
  TlpDevice dev;
  fisrig::nvme::SimTime beat_ns;
  uint64_t cycles = 0;
  std::vector<std::pair<uint64_t, uint8_t>> rx;  // the rig's TLP coming in
  std::deque<std::pair<uint64_t, uint8_t>> tx;   // the device's TLP going out
  bool tx_first = true;
  uint64_t rx_tlps = 0, tx_tlps = 0, rx_bad_beats = 0;

  BeatDevice(fisrig::drive::DriveConfig cfg, fisrig::nvme::TlpDeviceConfig tc, fisrig::nvme::SimTime beat,
             fisrig::nvme::NvmeConfig nvme)
      : dev(std::move(cfg), tc, nvme), beat_ns(beat) {}

  void clock(const fisrig_pcie_beat& in, bool rig_took, fisrig_pcie_beat& out) {
    const fisrig::nvme::SimTime now = cycles * beat_ns;
    if (rig_took && !tx.empty()) {  // the beat presented since the last edge
      tx.pop_front();
      tx_first = false;
    }
    if (in.valid) {
      if (in.first) rx.clear();
      rx.emplace_back(in.dat, in.be);
      if (in.last) {
        std::vector<uint8_t> bytes;
        if (fisrig::nvme::from_beats(rx, bytes)) {
          dev.receive(bytes, now);  // its last byte is in at this edge
          ++rx_tlps;
        } else {
          ++rx_bad_beats;  // byte enables that are not whole dwords: not a TLP
        }
        rx.clear();
      }
    }
    if (tx.empty()) {
      std::vector<uint8_t> bytes;
      fisrig::nvme::SimTime start;
      if (dev.transmit(now, bytes, start)) {
        for (const auto& b : fisrig::nvme::to_beats(bytes)) tx.push_back(b);
        tx_first = true;
        ++tx_tlps;
      }
    }
    out = fisrig_pcie_beat{};
    if (!tx.empty()) {
      out.valid = 1;
      out.first = tx_first;
      out.last = tx.size() == 1;
      out.dat = tx.front().first;
      out.be = tx.front().second;
    }
    ++cycles;
  }
};

void set_error(char* err, size_t errlen, const std::string& msg) {
  if (!err || !errlen) return;
  size_t n = std::min(msg.size(), errlen - 1);
  std::memcpy(err, msg.data(), n);
  err[n] = '\0';
}

BeatDevice* dev(void* p) { return static_cast<BeatDevice*>(p); }

}  // namespace

extern "C" {

void* fisrig_nvme_device_new(const char* profile, const char* faults, unsigned gen, unsigned lanes, char* err,
                             size_t errlen) {
  try {
    if (!profile || !*profile) throw std::invalid_argument("no profile given");
    // A beat's 8 bytes on the link, in 1/4096 ns: a whole ns at Gen1 and Gen2 (8b/10b) x4, x8.
    fisrig::nvme::PcieConfig link;
    link.gen = gen, link.lanes = lanes;
    if (gen < 1 || gen > 2 || (lanes != 4 && lanes != 8))
      throw std::invalid_argument("Gen" + std::to_string(gen) + " x" + std::to_string(lanes) +
                                  ": the PHY stream's 64-bit beats take a whole ns at Gen1 or Gen2, x4 or x8");
    const uint64_t beat = 8ull * fisrig::nvme::PcieLink::per_byte(link);
    fisrig::drive::DriveConfig cfg = fisrig::drive::load_profile(profile);
    fisrig::nvme::NvmeConfig nvme;
    if (faults)
      fisrig::drive::for_each_fault(faults, [&](const std::string& k, const std::string& v) {
        if (k == "enable_us") {  // CC.EN to CSTS.RDY, instead of the controller's 1 ms
          const bool digits = !v.empty() && v.size() <= 8 && v.find_first_not_of("0123456789") == std::string::npos;
          const unsigned long us = digits ? std::stoul(v) : 0;
          if (!digits || us > 10'000'000) throw std::invalid_argument("enable_us: '" + v + "' is not 0 to 10000000");
          nvme.enable_ns = fisrig::nvme::SimTime(us) * 1000;
        } else {
          cfg.faults.set(k, v);
        }
      });
    cfg.validate();
    fisrig::nvme::TlpDeviceConfig tc;
    tc.gen = gen, tc.lanes = lanes;
    return new BeatDevice(std::move(cfg), tc, beat >> fisrig::nvme::PcieLink::kTimeShift, nvme);
  } catch (const std::exception& e) {
    set_error(err, errlen, e.what());
  } catch (...) {
    set_error(err, errlen, "unknown error");
  }
  return nullptr;
}

void fisrig_nvme_device_clock(void* p, const struct fisrig_pcie_beat* in, int rig_took, struct fisrig_pcie_beat* out) {
  dev(p)->clock(*in, rig_took != 0, *out);
}

void fisrig_nvme_device_free(void* p) { delete dev(p); }

void fisrig_nvme_device_power(void* p, int on) {
  BeatDevice& d = *dev(p);
  // A TLP half out goes to its end: the PHY stream has no link-down of its own yet to reset
  // the root port's TLP layer with, and a TLP cut in two would leave it mid-packet.
  d.dev.power(on != 0, d.cycles * d.beat_ns);
}

uint64_t fisrig_nvme_device_cycles(void* p) { return dev(p)->cycles; }

uint64_t fisrig_nvme_device_now_ns(void* p) { return dev(p)->cycles * dev(p)->beat_ns; }

size_t fisrig_nvme_device_stats_string(void* p, char* buf, size_t buflen) {
  BeatDevice& d = *dev(p);
  std::string s = "tlps_in " + std::to_string(d.rx_tlps) + "\ntlps_out " + std::to_string(d.tx_tlps) +
                  "\nbeats_not_whole_dwords " + std::to_string(d.rx_bad_beats) + "\nmalformed " +
                  std::to_string(d.dev.malformed()) + "\nunsupported " + std::to_string(d.dev.unsupported()) +
                  "\nbad_completions " + std::to_string(d.dev.bad_completions()) + "\nmsix_masked " +
                  std::to_string(d.dev.msix_masked()) + "\nwhile_off " + std::to_string(d.dev.while_off()) + "\n";
  if (buf && buflen) {
    size_t n = std::min(s.size(), buflen - 1);
    std::memcpy(buf, s.data(), n);
    buf[n] = '\0';
  }
  return s.size();
}

}  // extern "C"
