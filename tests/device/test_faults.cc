// The link-level fault knobs on the wire: R_ERR answers, corrupted Data FIS CRCs, HOLD
// storms.
#include <gtest/gtest.h>

#include "rig.h"

using namespace fisrig;
using namespace fisrig::test;

namespace {
struct FaultTest : ::testing::Test {
  Rig r;
  void SetUp() override { ASSERT_TRUE(r.bring_up()); }
};
}  // namespace

TEST_F(FaultTest, RErrOnAWriteDataFisFailsItWithIcrc) {
  auto old = pattern(FISRIG_PATTERN_STAMP, 900, 32, 1);
  HostCommand w0 = write_dma(900, 32, old);
  ASSERT_TRUE(r.exec(w0));
  // Once the second Data FIS is asked for, every FIS from the host is answered R_ERR.
  HostCommand w = write_dma(900, 32, pattern(FISRIG_PATTERN_STAMP, 900, 32, 2));
  r.engine.issue(&w);
  ASSERT_TRUE(r.run_until([&] { return w.dma_activates == 2; }, 200000));
  r.dev.link_faults().r_err_rate = 1.0;
  ASSERT_TRUE(r.run_until([&] { return w.done; }, 2'000'000));
  r.dev.link_faults().r_err_rate = 0;
  EXPECT_EQ(w.status, 0x41);
  EXPECT_EQ(w.error, 0x84);  // ICRC | ABRT
  EXPECT_EQ(w.data_r_errs, 1u);
  EXPECT_EQ(w.dma_activates, 2u);  // no more data asked for after the R_ERR
  EXPECT_EQ(r.dev.counters().r_err_injected, 1u);
  EXPECT_EQ(r.host.counters.r_err_received, 1u);
  EXPECT_EQ(r.dev.drive().stats().icrc_failures, 1u);
  // Nothing of the failed write was stored.
  HostCommand rd = read_dma(900, 32);
  ASSERT_TRUE(r.exec(rd));
  EXPECT_EQ(rd.in, old);
}

TEST_F(FaultTest, RErrOnARegisterH2DIsResentByTheHost) {
  r.dev.link_faults().r_err_rate = 1.0;
  HostCommand c = identify();
  r.engine.issue(&c);
  r.run(3000);
  EXPECT_GE(c.h2d_resends, 2u);
  EXPECT_FALSE(c.done);
  EXPECT_EQ(r.dev.counters().commands, 0u);
  r.dev.link_faults().r_err_rate = 0;
  ASSERT_TRUE(r.run_until([&] { return c.done; }, 100000));
  EXPECT_EQ(c.status, 0x40);
  EXPECT_EQ(r.dev.counters().commands, 1u);
  EXPECT_EQ(r.dev.counters().r_err_sent, r.dev.counters().r_err_injected);
}

TEST_F(FaultTest, CorruptedDataFisCrcEndsARead) {
  auto data = pattern(FISRIG_PATTERN_LFSR, 128, 64, 3);
  HostCommand w = write_dma(128, 64, data);
  ASSERT_TRUE(r.exec(w));
  r.dev.drive().faults().data_fis_crc_error_rate = 1.0;  // the first Data FIS of a read
  HostCommand rd = read_dma(128, 64);
  ASSERT_TRUE(r.exec(rd));
  r.dev.drive().faults().data_fis_crc_error_rate = 0;
  EXPECT_EQ(rd.status, 0x41);
  EXPECT_EQ(rd.error, 0x84);
  EXPECT_EQ(rd.lba_out, 128u);
  EXPECT_EQ(rd.data_fises_in, 1u);  // that one, and no more
  EXPECT_EQ(rd.bad_crc_fises_in, 1u);
  EXPECT_EQ(r.host.counters.crc_errors, 1u);  // the host saw the bad CRC for real ...
  EXPECT_EQ(r.dev.counters().r_err_received, 1u);  // ... and answered R_ERR
  EXPECT_EQ(r.dev.counters().tx_crc_corrupted, 1u);
  // The next read is clean.
  HostCommand again = read_dma(128, 64);
  ASSERT_TRUE(r.exec(again));
  EXPECT_EQ(again.in, data);
}

TEST_F(FaultTest, CorruptedDataFisCrcOnAQueuedReadIsAnNcqError) {
  r.dev.drive().faults().data_fis_crc_error_rate = 1.0;
  HostCommand rd = read_fpdma(12, 6000, 40);
  ASSERT_TRUE(r.exec(rd));
  r.dev.drive().faults().data_fis_crc_error_rate = 0;
  EXPECT_TRUE(rd.ncq_failed);
  ASSERT_EQ(r.engine.ncq_errors.size(), 1u);
  EXPECT_EQ(r.engine.ncq_errors[0].error, 0x84);
  EXPECT_EQ(rd.bad_crc_fises_in, 1u);
  HostCommand log = read_log(0x10);
  ASSERT_TRUE(r.exec(log));
  EXPECT_EQ(log.in[0], 12);
  EXPECT_EQ(log.in[3], 0x84);
}

TEST_F(FaultTest, HoldStormWhileReceivingSlowsAWriteButKeepsItsData) {
  auto data = pattern(FISRIG_PATTERN_STAMP, 3000, 64, 21);
  HostCommand calm = write_dma(3000, 64, data);
  ASSERT_TRUE(r.exec(calm));
  uint64_t calm_cycles = calm.done_cycle - calm.h2d_cycle;

  r.dev.link_faults().hold_storm_rate = 1.0;
  r.dev.link_faults().hold_storm_ns = 20000;  // 20 us of HOLD per Data FIS
  auto data2 = pattern(FISRIG_PATTERN_STAMP, 3000, 64, 22);
  HostCommand stormy = write_dma(3000, 64, data2);
  ASSERT_TRUE(r.exec(stormy));
  r.dev.link_faults().hold_storm_rate = 0;
  EXPECT_EQ(stormy.status, 0x40);
  EXPECT_EQ(r.dev.counters().holds_sent, 4u * 4);  // four bursts in each of four Data FISes
  EXPECT_GE(r.dev.counters().hold_cycles_sent, 4u * device::us_cycles(20) - 8);
  EXPECT_GE(r.host.counters.holds_from_device, 4u * device::us_cycles(20) - 8 * 10);  // our HOLDA cycles
  EXPECT_GT(stormy.done_cycle - stormy.h2d_cycle, calm_cycles + device::us_cycles(70));
  HostCommand rd = read_dma(3000, 64);
  ASSERT_TRUE(r.exec(rd));
  EXPECT_EQ(rd.in, data2);
}
