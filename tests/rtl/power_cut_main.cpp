// A power cut in the middle of queued writes, through the whole SATA path in Verilator:
// the engine arms the power controller to cut the rails 100 ticks after the 3rd Data FIS,
// eight 64-sector queued STAMP writes go out, the cut lands, the link goes down; then POWER
// ON, the drive boots, OOB and LiteSATA's link come back; then the same LBAs are read back
// checked. Phases wait for the previous phase's records, as the firmware would. Prints one
// line per record as commands_main.cpp does.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <vector>

#include "Vrig_core.h"
#include "fisrig/device/device_c.h"
#include "fisrig/device/pins.h"
#include "fisrig/engine_if.h"

static fisrig_cmd_desc desc(uint8_t proto, uint8_t cmd, uint64_t lba, uint16_t n, uint8_t src,
                            uint32_t word, uint32_t tag, uint8_t flags = 0) {
  fisrig_cmd_desc d{};
  d.protocol = proto;
  d.command = cmd;
  d.device = 0x40;
  for (int i = 0; i < 6; ++i) d.lba[i] = uint8_t(lba >> (8 * i));
  if (proto == FISRIG_PROTO_FPDMA_IN || proto == FISRIG_PROTO_FPDMA_OUT)
    d.features = n;
  else
    d.count = n;
  d.data_source = src;
  d.compress_pct = 100;
  d.data_word = word;
  d.user_tag = tag;
  d.flags = flags;
  return d;
}

int main() {
  char err[256];
  void* dev = fisrig_device_new("tiny-1gb", "boot_us=100", err, sizeof err);
  if (!dev) {
    std::printf("device: %s\n", err);
    return 1;
  }
  std::vector<std::deque<fisrig_cmd_desc>> phases(3);
  fisrig_cmd_desc arm{};
  arm.protocol = FISRIG_PROTO_POWER;
  arm.command = FISRIG_POWER_OFF_AT_EVENT;
  arm.features = FISRIG_EVENT_DATA;
  arm.count = 3;
  arm.timeout_ticks = 100;
  arm.user_tag = 1;
  phases[0].push_back(arm);
  for (uint32_t i = 0; i < 8; ++i)
    phases[0].push_back(desc(FISRIG_PROTO_FPDMA_OUT, 0x61, 4096 + 64 * i, 64, FISRIG_DATA_STAMP, 5, 100 + i));
  fisrig_cmd_desc on{};
  on.protocol = FISRIG_PROTO_POWER;
  on.command = FISRIG_POWER_ON;
  on.user_tag = 2;
  phases[1].push_back(on);
  for (uint32_t i = 0; i < 8; ++i)
    phases[2].push_back(desc(FISRIG_PROTO_FPDMA_IN, 0x60, 4096 + 64 * i, 64, FISRIG_DATA_STAMP, 5, 200 + i,
                             FISRIG_DESC_CHECK));
  size_t phase = 0;
  size_t phase_records[3] = {9, 1, 8};
  size_t seen_in_phase = 0;
  std::deque<fisrig_cmd_desc> todo = phases[0];
  const size_t expected = 18;

  Vrig_core top;
  top.sys_rst = 1;
  top.data_base = 0;
  top.cpl_ready = 1;
  top.ram_wr_ready = 1;
  top.ram_rd_addr_ready = 1;
  top.ram_rd_data_valid = 0;
  std::vector<uint32_t> ram(4096);
  std::vector<uint32_t> rec;
  size_t records = 0;
  fisrig_pins_out out{};
  out.rx_idle = 1;
  uint64_t up_at = 0;
  for (uint64_t cycle = 0; cycle < 20000000 && records < expected; ++cycle) {
    if (cycle == 10) top.sys_rst = 0;
    top.rx_data = out.rx_data;
    top.rx_charisk = out.rx_charisk;
    top.rx_idle = out.rx_idle;
    top.rx_cominit = out.rx_cominit;
    top.rx_comwake = out.rx_comwake;
    // Descriptors once the drive's signature has had time to arrive.
    bool offer = up_at && cycle > up_at + 5000 && !todo.empty();
    top.desc_valid = offer;
    if (offer) std::memcpy(top.desc_raw.data(), &todo.front(), 32);
    top.sys_clk = 0;
    top.eval();
    bool took = offer && top.desc_ready;
    if (top.cpl_valid) rec.push_back(top.cpl_data);
    if (top.ram_wr_valid && top.ram_wr_address < ram.size()) ram[top.ram_wr_address] = top.ram_wr_data;
    bool rec_done = top.cpl_valid && top.cpl_last;
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
    if (took) todo.pop_front();
    if (top.link_ready && !up_at) up_at = cycle;
    if (rec_done) {
      fisrig_cpl_record r;
      std::memcpy(&r, rec.data(), sizeof r);
      rec.clear();
      if (r.user_tag != FISRIG_USER_TAG_EVENT) {  // events (cut, link down, link up) are extra
        ++records;
        if (++seen_in_phase == phase_records[phase] && phase < 2) {
          todo = phases[++phase];
          seen_in_phase = 0;
        }
      }
      std::printf("rec %u %u %u %u %u %u %u %llu %llu %llu %llu %llu %llu %llu\n", r.user_tag, r.slot, r.result,
                  r.status, r.error, r.sectors, r.check_errors, (unsigned long long)r.ts_submit,
                  (unsigned long long)r.ts_h2d, (unsigned long long)r.ts_accept, (unsigned long long)r.ts_setup,
                  (unsigned long long)r.ts_data_first, (unsigned long long)r.ts_data_last,
                  (unsigned long long)r.ts_status);
    }
  }
  std::printf("records %zu\n", records);
  fisrig_device_stats(dev, stdout);
  fisrig_device_free(dev);
  return records == expected ? 0 : 2;
}
