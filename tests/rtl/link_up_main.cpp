// LiteSATA's PHY control, datapath and link layer (Verilator) against the simulated drive's
// device side (sim/device) at the transceiver pins: OOB, ALIGN lock, LiteSATA's 5 ms
// stability wait, then the drive's signature FIS. Prints the link-up cycle and the
// device's counters; exits 0 only if the link came up.
#include <cstdint>
#include <cstdio>

#include "Vrig_core.h"
#include "fisrig/device/device_c.h"
#include "fisrig/device/pins.h"

int main() {
  char err[256];
  void* dev = fisrig_device_new("tiny-1gb", "boot_us=100", err, sizeof err);
  if (!dev) {
    std::printf("device: %s\n", err);
    return 1;
  }
  Vrig_core top;
  top.sys_rst = 1;
  fisrig_pins_out out{};
  out.rx_idle = 1;
  uint64_t up_at = 0;
  for (uint64_t cycle = 0; cycle < 2000000; ++cycle) {
    if (cycle == 10) top.sys_rst = 0;
    top.rx_data = out.rx_data;
    top.rx_charisk = out.rx_charisk;
    top.rx_idle = out.rx_idle;
    top.rx_cominit = out.rx_cominit;
    top.rx_comwake = out.rx_comwake;
    top.sys_clk = 0;
    top.eval();
    // The pins as the gateware drives them in this cycle, answered for the next one.
    fisrig_pins_in in{};
    in.tx_data = top.tx_data;
    in.tx_charisk = top.tx_charisk;
    in.tx_idle = top.tx_idle;
    in.tx_cominit = top.tx_cominit;
    in.tx_comwake = top.tx_comwake;
    in.power = top.power;  // the rig's power controller drives the rails
    fisrig_device_clock(dev, &in, &out);
    top.sys_clk = 1;
    top.eval();
    if (top.link_ready && !up_at) up_at = cycle;
    if (up_at && cycle > up_at + 20000) break;
  }
  std::printf("link_ready_cycle %llu\n", (unsigned long long)up_at);
  fisrig_device_stats(dev, stdout);
  fisrig_device_free(dev);
  return up_at ? 0 : 2;
}
