// The enumeration's plan (fisrig/pcie_enum.h) as the rig gives it: the function at 1:0.0,
// a 1 MiB window at `window_base`, 256-byte payloads, a second for the function to be ready,
// `vectors` MSI-X entries whose messages go to `msix_address`.
#pragma once

extern "C" {
#include "fisrig/pcie_enum.h"
}

namespace fisrig::test {

inline fisrig_pcie_plan rig_plan(uint64_t window_base, uint16_t vectors, uint32_t msix_address = 0x0010'0FF0) {
  fisrig_pcie_plan p{};
  p.bus = 1;
  p.window_base = window_base;
  p.window_bytes = 1 << 20;
  p.max_payload = 256;
  p.msix_address = msix_address;
  p.msix_vectors = vectors;
  p.ready_timeout_us = 1'000'000;
  return p;
}

}  // namespace fisrig::test
