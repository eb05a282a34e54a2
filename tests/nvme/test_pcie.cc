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

TEST(NvmePcie, AByteTimeIsExactInWholeFractionsOfANsForEveryGenerationAndWidth) {
  // The link costs in 1/4096 ns, with no rounding: what the rate says, for every link a
  // profile may name.
  for (uint32_t gen = 1; gen <= 5; ++gen)
    for (uint32_t lanes = 1; lanes <= 16; lanes *= 2) {
      nvme::PcieConfig c;
      c.gen = gen, c.lanes = lanes;
      const double exact = double(nvme::PcieLink::per_byte(c)) / nvme::PcieLink::kTimeScale;
      EXPECT_NEAR(exact, 1.0 / nvme::PcieLink::bytes_per_ns(c), 1e-12) << "gen " << gen << " x" << lanes;
    }
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
  // The other direction is free; the ACK the four TLPs up drew (8 bytes, 2 ns) goes out
  // on it first, then the TLP.
  EXPECT_EQ(link.down(1000, 394), 1102);
  EXPECT_EQ(link.last_start(), 1002);
  EXPECT_EQ(link.down(2000, 394), 2100);  // nothing owed now
}

TEST(NvmePcie, ARunBookedAtOnceIsWhatItsTlpsBookedOneByOneAre) {
  // Two links with the same bookings; on one a run of TLPs goes at once (extend_down), on
  // the other a TLP at a time: the same ends, the same carried fraction and the same ACKs
  // owed after (the next TLPs either way end together).
  for (uint32_t gen : {3u, 4u}) {
    nvme::PcieConfig cfg;
    cfg.gen = gen;
    nvme::PcieLink once(cfg), each(cfg);
    SimTime t = 0;
    for (nvme::PcieLink* l : {&once, &each}) {
      t = l->down(5000, 276);                          // the run follows this one
      l->up(0, 24), l->up(100, 24), l->up(200, 24);  // 3 up: no ACK owed yet
      l->up(300, 24);                                  // the 4th: an ACK owed down, ahead of the run
    }
    SimTime end = 0, ends[7];
    ASSERT_TRUE(once.extend_down(t, 7, 7 * 276, end, ends));
    SimTime e = t;
    for (int i = 0; i < 7; ++i) {
      e = each.down(e, 276);
      EXPECT_EQ(ends[i], e) << "gen " << gen << " TLP " << i;
    }
    EXPECT_EQ(end, e);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(once.up(10000, 24), each.up(10000, 24)) << "an up TLP after, " << i;
    EXPECT_EQ(once.down(e, 276), each.down(e, 276));
    // A run that would not fit before a booking after it is refused, with nothing booked.
    once.down(e + 1000, 24);
    SimTime before = 0;
    EXPECT_FALSE(once.extend_down(once.down(e + 500, 0), 20, 20 * 276, before));
  }
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
