// Native command queuing: 32 tags in flight, DMA Setups in the drive's order, SDBs that
// complete several tags, queued TRIM, and the NCQ error protocol.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>

#include "rig.h"

using namespace fisrig;
using namespace fisrig::test;

namespace {
struct NcqTest : ::testing::Test {
  Rig r;
  void SetUp() override { ASSERT_TRUE(r.bring_up()); }
  bool run_all(std::vector<HostCommand>& cmds, uint64_t max = 5'000'000) {
    for (auto& c : cmds) r.engine.issue(&c);
    return r.run_until(
        [&] {
          for (auto& c : cmds)
            if (!c.done) return false;
          return true;
        },
        max);
  }
};
}  // namespace

TEST_F(NcqTest, ThirtyTwoTagsOutOfOrderWithSharedSdbs) {
  // Tags 0..15 read data that is on NAND (slow), tags 16..31 read what was never written
  // (no NAND read at all): the drive serves the second half first.
  // 1 KiB writes: each one's data takes ~2 us, so several complete within the device's
  // 5 us wait for company (a 4 KiB write's 7 us data phase outlasts it: its SDB goes alone).
  std::vector<HostCommand> writes;
  for (uint8_t t = 0; t < 32; ++t)
    writes.push_back(write_fpdma(t, 8192 + t * 64ull, 2, pattern(FISRIG_PATTERN_STAMP, 8192 + t * 64ull, 2, 100 + t)));
  ASSERT_TRUE(run_all(writes));
  for (auto& w : writes) {
    EXPECT_EQ(w.status, 0x40) << int(w.tag);
    EXPECT_TRUE(w.released);
    EXPECT_EQ(w.dma_activates, 1u);
  }
  // Writes complete while other tags move data: SDBs carry several tags.
  size_t max_tags = 0;
  for (uint32_t s : r.engine.sdb_sactive) max_tags = std::max<size_t>(max_tags, std::popcount(s));
  EXPECT_GT(max_tags, 1u);
  EXPECT_LT(r.engine.sdb_sactive.size(), 32u);
  EXPECT_EQ(r.dev.counters().sdb_tags, 32u);
  HostCommand flush;
  flush.command = ata::kFlushCacheExt;
  ASSERT_TRUE(r.exec(flush, 10'000'000));
  ASSERT_EQ(flush.status, 0x40);

  r.engine.setup_tags.clear();
  std::vector<HostCommand> reads;
  for (uint8_t t = 0; t < 32; ++t) reads.push_back(read_fpdma(t, t < 16 ? 8192 + t * 64ull : 500000 + t * 64ull, 8));
  ASSERT_TRUE(run_all(reads));
  ASSERT_EQ(r.engine.setup_tags.size(), 32u);
  // Not in issue order: tag 16 (nothing to read) goes before tag 15 (a NAND read).
  auto pos = [&](uint8_t tag) {
    return std::find(r.engine.setup_tags.begin(), r.engine.setup_tags.end(), tag) - r.engine.setup_tags.begin();
  };
  EXPECT_LT(pos(16), pos(15));
  EXPECT_LT(pos(31), pos(15));
  std::vector<uint8_t> sorted = r.engine.setup_tags;
  std::sort(sorted.begin(), sorted.end());
  for (uint8_t t = 0; t < 32; ++t) EXPECT_EQ(sorted[t], t);  // each tag exactly once
  for (uint8_t t = 0; t < 32; ++t) {
    const HostCommand& c = reads[t];
    EXPECT_EQ(c.status, 0x40) << int(t);
    if (t < 16) {
      std::vector<uint8_t> want = pattern(FISRIG_PATTERN_STAMP, 8192 + t * 64ull, 2, 100 + t);
      want.resize(8 * 512, 0);  // the 6 sectors after the write were never written
      EXPECT_EQ(c.in, want) << int(t);
    } else EXPECT_EQ(c.in, std::vector<uint8_t>(8 * 512, 0)) << int(t);
  }
  EXPECT_EQ(r.dev.counters().fis_sent[0x41], 64u);
  EXPECT_EQ(r.engine.protocol_errors, 0u);
  EXPECT_TRUE(r.dev.commands().idle());
}

// A status waits for company only behind a data phase of one Data FIS (8 KiB): 16 KiB
// writes' data phases (two Data FISes, 28 us each) do not hold it, so each SDB carries
// one tag, where 1 KiB writes share them (above).
TEST_F(NcqTest, AStatusDoesNotWaitBehindADataPhaseOfMoreThanOneDataFis) {
  std::vector<HostCommand> writes;
  for (uint8_t t = 0; t < 8; ++t)
    writes.push_back(write_fpdma(t, 8192 + t * 64ull, 32, pattern(FISRIG_PATTERN_STAMP, 8192 + t * 64ull, 32, 100 + t)));
  ASSERT_TRUE(run_all(writes));
  for (auto& w : writes) EXPECT_EQ(w.status, 0x40) << int(w.tag);
  ASSERT_EQ(r.engine.sdb_sactive.size(), 8u);
  for (uint32_t s : r.engine.sdb_sactive) EXPECT_EQ(std::popcount(s), 1) << std::hex << s;
  EXPECT_EQ(r.dev.counters().sdb_tags, 8u);
}

TEST_F(NcqTest, QueuedTrimThenReadZeros) {
  auto data = pattern(FISRIG_PATTERN_LFSR, 40000, 32, 7);
  HostCommand w = write_fpdma(3, 40000, 32, data);
  ASSERT_TRUE(r.exec(w));
  ASSERT_EQ(w.status, 0x40);
  HostCommand t = trim_queued(9, {{40008, 8}});
  ASSERT_TRUE(r.exec(t));
  EXPECT_EQ(t.status, 0x40);
  EXPECT_TRUE(t.released);
  EXPECT_EQ(t.dma_activates, 1u);
  HostCommand rd = read_fpdma(4, 40000, 32);
  ASSERT_TRUE(r.exec(rd));
  std::vector<uint8_t> want = data;
  std::fill(want.begin() + 8 * 512, want.begin() + 16 * 512, 0);
  EXPECT_EQ(rd.in, want);
  EXPECT_EQ(r.dev.drive().ssd().stats().sectors_trimmed, 8u);
}

TEST_F(NcqTest, ErrorSdbHaltsTheQueueUntilLog10hNamesTheTag) {
  r.dev.drive().faults().unc.push_back({20005, 1});
  std::vector<HostCommand> cmds;
  cmds.push_back(read_fpdma(2, 30000, 8));
  cmds.push_back(read_fpdma(7, 20000, 8));  // sector 20005 is unreadable
  cmds.push_back(read_fpdma(11, 31000, 8));
  ASSERT_TRUE(run_all(cmds));
  ASSERT_EQ(r.engine.ncq_errors.size(), 1u);
  EXPECT_EQ(r.engine.ncq_errors[0].status, 0x41);
  EXPECT_EQ(r.engine.ncq_errors[0].error, 0x40);  // UNC
  EXPECT_TRUE(cmds[1].ncq_failed || cmds[1].status == 0x41);
  EXPECT_EQ(r.dev.counters().ncq_errors, 1u);
  EXPECT_TRUE(r.dev.commands().halted());

  // The queue stays halted: a new queued command gets no DMA Setup.
  HostCommand late = read_fpdma(5, 30000, 8);
  r.engine.issue(&late);
  r.run(20000);
  EXPECT_TRUE(late.released);
  EXPECT_FALSE(late.done);
  EXPECT_EQ(late.data_fises_in, 0u);

  HostCommand log = read_log(0x10);
  // The host gives the late one up (it would time it out) and reads the log.
  r.engine.abandon();
  ASSERT_TRUE(r.exec(log));
  ASSERT_EQ(log.in.size(), 512u);
  EXPECT_EQ(log.in[0], 7);  // NQ = 0, tag 7
  EXPECT_EQ(log.in[2], 0x41);
  EXPECT_EQ(log.in[3], 0x40);
  uint64_t lba = log.in[4] | log.in[5] << 8 | log.in[6] << 16 | uint64_t(log.in[8]) << 24;
  EXPECT_EQ(lba, 20005u);
  EXPECT_FALSE(r.dev.commands().halted());

  // And the queue runs again, tag 7 included.
  std::vector<HostCommand> again;
  again.push_back(read_fpdma(7, 30000, 8));
  again.push_back(read_fpdma(2, 31000, 8));
  ASSERT_TRUE(run_all(again));
  EXPECT_EQ(again[0].status, 0x40);
  EXPECT_EQ(again[1].status, 0x40);
  EXPECT_EQ(again[0].in.size(), 8u * 512);
}
