// The PCIe link's costs, TLP by TLP (docs/nvme.md has the arithmetic).
#include "nvme_host.h"

namespace fisrig::test {
namespace {

TEST(NvmePcie, TheLinksRateAndATlpsBytes) {
  nvme::PcieConfig gen3;
  EXPECT_NEAR(nvme::PcieLink::bytes_per_ns(gen3), 8.0 * 4 * 128 / 130 / 8, 1e-12);  // 3.938 GB/s
  nvme::PcieConfig gen4 = gen3;
  gen4.gen = 4;
  EXPECT_NEAR(nvme::PcieLink::bytes_per_ns(gen4), 2 * nvme::PcieLink::bytes_per_ns(gen3), 1e-12);
  // A 256-byte memory write with a 64-bit address: 16 header + 256 + 8 framing and LCRC.
  EXPECT_EQ(nvme::PcieLink::tlp_bytes(nvme::kMemHeader, 256), 280u);
  // 280 / 3.938 = 71.09 ns: whole ns a TLP, the fraction carried to the next.
  nvme::PcieLink link(gen3);
  SimTime end = 0;
  for (int i = 0; i < 11; ++i) end = link.up(end, 280);
  EXPECT_EQ(end, 782);  // 11 x 71.09 = 782.0
}

TEST(NvmePcie, TheLinkKeepsEachDirectionsTlpsApartAndFillsGaps) {
  nvme::PcieLink link(nvme::PcieConfig{});
  // 394 bytes are 100.04 ns at Gen3 x4, 197 bytes 50.02.
  EXPECT_EQ(link.up(1000, 394), 1100);
  EXPECT_EQ(link.up(1000, 394), 1200);  // after the first
  EXPECT_EQ(link.up(0, 197), 50);       // a gap before it
  EXPECT_EQ(link.last_start(), 0);
  EXPECT_EQ(link.up(950, 394), 1300);   // no room before 1000: after both
  EXPECT_EQ(link.last_start(), 1200);
  EXPECT_EQ(link.down(1000, 394), 1100);  // the other direction is free
}

// One read of `blocks` never written (no NAND read: its data is ready at once), alone on
// the link: its data TLPs go back to back.
NvmeCompletion lone_read(uint32_t gen, uint32_t blocks) {
  drive::DriveConfig cfg = drive::load_profile("tiny-1gb");
  cfg.nvme.pcie_gen = gen;
  NvmeHost h(cfg);
  h.make_io_queues(1, 8);
  std::vector<uint64_t> list;
  for (uint64_t i = 1; i < blocks * 512 / 4096; ++i) list.push_back(kData + i * 4096);
  h.mem.write(kData + 0x800000, list.data(), list.size() * 8);
  h.submit(1, rw(FISRIG_NVME_CMD_READ, 4096, blocks, kData, kData + 0x800000));
  h.ctrl.run_until(h.now + drive::kNsPerS);
  NvmeCompletion c;
  while (h.ctrl.pop_completion(c)) {
  }
  return c;
}

TEST(NvmePcie, A128KiBReadsDataGoesAtTheLinksRate) {
  NvmeCompletion c = lone_read(3, 256);
  EXPECT_EQ(c.status, 0);
  // 512 memory writes of 280 bytes on the wire, 71.09 ns each at Gen3 x4.
  EXPECT_NEAR(double(c.t_data_last - c.t_data_first), 512 * 280 / 3.9384615, 1.0);
  // Then the CQE (16 + 16 + 8 bytes: 10.2 ns) and the MSI-X message (16 + 4 + 8: 7.1 ns).
  EXPECT_NEAR(double(c.t_cqe - c.t_data_last), 10.2, 1.0);
  EXPECT_NEAR(double(c.t_irq - c.t_cqe), 7.1, 1.0);
  // The SQE came over the link: the doorbell, then the request up and the 64-byte
  // completion down after the host's read latency.
  EXPECT_GE(c.t_fetch - c.t_doorbell, nvme::PcieConfig{}.host_read_ns);
  // Gen4 x4: twice the rate, 35.55 ns a TLP.
  NvmeCompletion g4 = lone_read(4, 256);
  EXPECT_NEAR(double(g4.t_data_last - g4.t_data_first), 512 * 280 / 7.876923, 1.0);
}

}  // namespace
}  // namespace fisrig::test
