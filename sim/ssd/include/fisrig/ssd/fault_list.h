// A fault list as the device sides' C APIs take it (sim/device's device_c.h, sim/nvme's
// device_c.h): "key=value,key=value", a piece without '=' continuing the value before it (a
// range list's commas: "unc=1000+8,4096+1"). Each pair goes to `take`, in order;
// std::invalid_argument for a piece that is not key=value.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace fisrig::drive {

inline void for_each_fault(const std::string& spec,
                           const std::function<void(const std::string& key, const std::string& value)>& take) {
  std::string key, value;
  auto flush = [&] {
    if (!key.empty()) take(key, value);
    key.clear();
  };
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string piece = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    if (piece.empty()) continue;
    size_t eq = piece.find('=');
    if (eq == std::string::npos) {
      if (key.empty()) throw std::invalid_argument("fault '" + piece + "' is not key=value");
      value += "," + piece;
      continue;
    }
    flush();
    key = piece.substr(0, eq);
    value = piece.substr(eq + 1);
  }
  flush();
}

}  // namespace fisrig::drive
