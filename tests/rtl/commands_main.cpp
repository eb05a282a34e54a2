// The whole SATA path in Verilator without a CPU: this harness plays the ring front end
// (descriptors in, records out, a RAM for DMA writes) for the raw command engine, which
// runs LiteSATA's link and PHY against the simulated drive at the transceiver pins.
// Prints one line per record: "rec user_tag slot result status error sectors check_errors
// ts_submit ts_h2d ts_accept ts_setup ts_data_first ts_data_last ts_status", then
// "identify_model <text>" and the device's counters.
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
  std::deque<fisrig_cmd_desc> todo;
  todo.push_back(desc(FISRIG_PROTO_PIO_IN, 0xEC, 0, 0, FISRIG_DATA_RAM, 0, 1));
  for (uint32_t i = 0; i < 32; ++i)
    todo.push_back(desc(FISRIG_PROTO_FPDMA_OUT, 0x61, 1000 + 16 * i, 16, FISRIG_DATA_STAMP, 77, 100 + i));
  for (uint32_t i = 0; i < 32; ++i)
    todo.push_back(desc(FISRIG_PROTO_FPDMA_IN, 0x60, 1000 + 16 * i, 16, FISRIG_DATA_STAMP, 77, 200 + i,
                        FISRIG_DESC_CHECK));
  todo.push_back(desc(FISRIG_PROTO_DMA_IN, 0x25, 1000, 64, FISRIG_DATA_STAMP, 77, 300, FISRIG_DESC_CHECK));
  todo.push_back(desc(FISRIG_PROTO_DMA_IN, 0x25, 1000, 64, FISRIG_DATA_STAMP, 78, 301, FISRIG_DESC_CHECK));
  todo.push_back(desc(FISRIG_PROTO_NON_DATA, 0xEA, 0, 0, FISRIG_DATA_NONE, 0, 400));
  const size_t expected = todo.size();

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
  for (uint64_t cycle = 0; cycle < 40000000 && records < expected; ++cycle) {
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
      if (r.user_tag != FISRIG_USER_TAG_EVENT) ++records;  // the link-up event is extra
      std::printf("rec %u %u %u %u %u %u %u %llu %llu %llu %llu %llu %llu %llu\n", r.user_tag, r.slot, r.result,
                  r.status, r.error, r.sectors, r.check_errors, (unsigned long long)r.ts_submit,
                  (unsigned long long)r.ts_h2d, (unsigned long long)r.ts_accept, (unsigned long long)r.ts_setup,
                  (unsigned long long)r.ts_data_first, (unsigned long long)r.ts_data_last,
                  (unsigned long long)r.ts_status);
    }
  }
  // IDENTIFY words 27..46: the model number, two characters a word, high byte first.
  char model[41] = {};
  for (int i = 0; i < 20; ++i) {
    uint16_t w = uint16_t(ram[(27 + i) / 2] >> (16 * ((27 + i) % 2)));
    model[2 * i] = char(w >> 8);
    model[2 * i + 1] = char(w & 0xFF);
  }
  std::printf("identify_model %s\n", model);
  std::printf("records %zu\n", records);
  fisrig_device_stats(dev, stdout);
  fisrig_device_free(dev);
  return records == expected ? 0 : 2;
}
