// The simulated drive (sim/device) on a Verilated top's transceiver pins (pins.h, exported by
// fisrig_hw.phy.sim_phy.SimSATATransceiver under the same names): one call a cycle, between the
// falling edge's eval and the rising edge's. Shared by every Verilator runner that puts a
// host on the drive (rig_core_runner.cpp: the rig; litesata_host_runner.cpp: stock LiteSATA),
// so that both see the drive through exactly the same cut.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include "fisrig/device/device_c.h"
#include "fisrig/device/pins.h"
#include "fisrig/link/primitives.h"

namespace fisrig::rtl {

// What crossed the pins in one direction this cycle, as a person reads a SATA trace.
inline std::string wire_word(uint32_t data, uint8_t charisk, uint8_t idle) {
  namespace p = fisrig::link::prim;
  static const std::pair<uint32_t, const char*> names[] = {
      {p::kAlign, "ALIGN"}, {p::kCont, "CONT"}, {p::kSync, "SYNC"}, {p::kRRdy, "R_RDY"},
      {p::kROk, "R_OK"}, {p::kRErr, "R_ERR"}, {p::kRIp, "R_IP"}, {p::kXRdy, "X_RDY"},
      {p::kWtrm, "WTRM"}, {p::kSof, "SOF"}, {p::kEof, "EOF"}, {p::kHold, "HOLD"},
      {p::kHolda, "HOLDA"}};
  if (idle) return "idle";
  if (charisk & 1)
    for (auto [code, name] : names)
      if (code == data) return name;
  char hex[16];
  std::snprintf(hex, sizeof hex, charisk & 1 ? "K%08x" : "%08x", data);
  return hex;
}

// Clocks the drive on what the host drives this cycle (the top's TX pins after the falling
// edge's eval) and puts the drive's answer on the RX pins, which the transceiver's RX
// register takes at the coming rising edge. `out` keeps the drive's pins between calls
// (start it with rx_idle = 1). With `trace`, prints "w <cycle> <tx> <rx>" first.
template <class Top>
void clock_device(void* dev, Top& top, fisrig_pins_out& out, bool trace, uint64_t cycle) {
  fisrig_pins_in in{};
  in.tx_data = top.tx_data;
  in.tx_charisk = top.tx_charisk;
  in.tx_idle = top.tx_idle;
  in.tx_cominit = top.tx_cominit;
  in.tx_comwake = top.tx_comwake;
  in.power = top.power;  // the top drives the rails (the rig: its power controller)
  in.dword_gap = top.dword_gap;
  if (trace)
    std::printf("w %llu %s %s\n", (unsigned long long)cycle,
                wire_word(in.tx_data, in.tx_charisk, in.tx_idle).c_str(),
                wire_word(top.rx_data, top.rx_charisk, top.rx_idle).c_str());
  fisrig_device_clock(dev, &in, &out);
  top.rx_data = out.rx_data;
  top.rx_charisk = out.rx_charisk;
  top.rx_idle = out.rx_idle;
  top.rx_cominit = out.rx_cominit;
  top.rx_comwake = out.rx_comwake;
  top.current_ma = out.current_ma;
}

}  // namespace fisrig::rtl
