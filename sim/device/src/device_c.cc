#include "fisrig/device/device_c.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <memory>
#include <string>

#include "fisrig/device/sata_device.h"
#include "fisrig/ssd/fault_list.h"

namespace {

using fisrig::device::SataDevice;

void set_error(char* err, size_t errlen, const std::string& msg) {
  if (!err || !errlen) return;
  size_t n = std::min(msg.size(), errlen - 1);
  std::memcpy(err, msg.data(), n);
  err[n] = '\0';
}

// The fault list (fisrig/ssd/fault_list.h), and max_gen beside the drive's knobs.
void apply_faults(fisrig::drive::DriveConfig& cfg, int& max_gen, const std::string& spec) {
  fisrig::drive::for_each_fault(spec, [&](const std::string& key, const std::string& value) {
    if (key == "max_gen") {
      if (value != "1" && value != "2" && value != "3") throw std::invalid_argument("max_gen: '" + value + "' is not 1, 2 or 3");
      max_gen = value[0] - '0';
    } else {
      cfg.faults.set(key, value);
    }
  });
}

SataDevice* dev(void* p) { return static_cast<SataDevice*>(p); }

}  // namespace

extern "C" {

void* fisrig_device_new(const char* profile, const char* faults, char* err, size_t errlen) {
  try {
    if (!profile || !*profile) throw std::invalid_argument("no profile given");
    fisrig::drive::DriveConfig cfg = fisrig::drive::load_profile(profile);
    int max_gen = 3;
    if (faults) apply_faults(cfg, max_gen, faults);
    cfg.validate();
    return new SataDevice(std::move(cfg), max_gen);
  } catch (const std::exception& e) {
    set_error(err, errlen, e.what());
  } catch (...) {
    set_error(err, errlen, "unknown error");
  }
  return nullptr;
}

void fisrig_device_clock(void* p, const struct fisrig_pins_in* in, struct fisrig_pins_out* out) {
  dev(p)->clock(*in, *out);
}

void fisrig_device_free(void* p) { delete dev(p); }

void fisrig_device_stats(void* p, FILE* out) {
  std::string s = dev(p)->stats_text();
  std::fwrite(s.data(), 1, s.size(), out);
}

size_t fisrig_device_stats_string(void* p, char* buf, size_t buflen) {
  std::string s = dev(p)->stats_text();
  if (buf && buflen) set_error(buf, buflen, s);
  return s.size();
}

uint64_t fisrig_device_cycles(void* p) { return dev(p)->cycle(); }

int fisrig_device_link_up(void* p) { return dev(p)->link_up() ? 1 : 0; }

}  // extern "C"
