// A write's data crosses the wire once: the status of a write follows its last Data FIS by
// about the controller's own work, not by another transfer. Before the Drive learnt that
// the device side had already moved the data (AtaCommand::data_phase_done), it booked the
// DMA Activates and Data FISes again on its own wire model after the submit: an
// independent host (stock LiteSATA's BIST) measured 292 MB/s of non-queued writes against
// 588 MB/s of reads at Gen3 on fast-1gb, and the status came ~28 us after the R_OK of a
// 16 KiB write.
#include <gtest/gtest.h>

#include "rig.h"

using namespace fisrig;
using namespace fisrig::test;

namespace {
drive::DriveConfig fast() { return drive::load_profile("fast-1gb"); }

// Cycles from the H2D to the status of one command on a fresh rig.
struct Timed {
  uint64_t cycles;
  HostCommand c;
};
Timed timed(Rig& r, HostCommand c) {
  EXPECT_TRUE(r.exec(c));
  EXPECT_EQ(c.status, 0x40);
  return {c.done_cycle - c.h2d_cycle, c};
}
}  // namespace

TEST(WriteTiming, NonQueuedWriteTakesAboutAsLongAsTheSameRead) {
  Rig r(fast());
  ASSERT_TRUE(r.bring_up());
  const uint16_t n = 256;  // 128 KiB: 16 Data FISes each way
  auto data = pattern(FISRIG_PATTERN_STAMP, 4096, n, 7, 100);
  Timed w = timed(r, write_dma(4096, n, data));
  Timed rd = timed(r, read_dma(4096, n));
  EXPECT_EQ(rd.c.in, data);
  // A write has a DMA Activate before each Data FIS (11 dwords each) where a read has none:
  // 16 x 11 dwords, about 1% of 33,000. Twice the transfer (the old booking) is 100%.
  double ratio = double(w.cycles) / double(rd.cycles);
  EXPECT_GT(ratio, 0.97) << "write " << w.cycles << " cycles, read " << rd.cycles;
  EXPECT_LT(ratio, 1.05) << "write " << w.cycles << " cycles, read " << rd.cycles;
}

TEST(WriteTiming, QueuedWriteStatusFollowsItsLastDataFis) {
  Rig r(fast());
  ASSERT_TRUE(r.bring_up());
  const uint16_t n = 32;  // 16 KiB
  auto data = pattern(FISRIG_PATTERN_STAMP, 8192, n, 9, 100);
  Timed w = timed(r, write_fpdma(3, 8192, n, data));
  Timed rd = timed(r, read_fpdma(4, 8192, n));
  EXPECT_EQ(rd.c.in, data);
  // 16 KiB at Gen3 is about 4,150 dwords of Data FISes: 28 us. The old double booking
  // added all of it again to the write.
  double ratio = double(w.cycles) / double(rd.cycles);
  EXPECT_LT(ratio, 1.1) << "write " << w.cycles << " cycles, read " << rd.cycles;
  EXPECT_GT(ratio, 0.9) << "write " << w.cycles << " cycles, read " << rd.cycles;
}
