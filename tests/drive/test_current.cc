// What the drive draws from its supply by state (power.*_ma, Drive::current_ma): idle, and
// per die the NAND operation it runs, as a power module on its rail would sample it.
#include <gtest/gtest.h>

#include "drive_helpers.h"

using namespace fisrig::drive;
using namespace fisrig::test;

TEST(Current, IdleAProgramAReadAndNothingWithoutPower) {
  Drive d(tiny());
  const PowerConfig& p = d.config().power;
  EXPECT_DOUBLE_EQ(d.current_ma(0), p.idle_ma);  // tracking starts here
  SimTime now = 0;
  exec(d, write_dma(0, 32, 1), now);
  // FLUSH programs the cached unit on one die and ends when it is durable (1.3 ms).
  Completion f = exec(d, simple(ata::kFlushCacheExt), now);
  EXPECT_DOUBLE_EQ(d.current_ma(f.t_complete - d_us(100)), p.idle_ma + p.program_ma);
  EXPECT_DOUBLE_EQ(d.current_ma(f.t_complete + d_us(10)), p.idle_ma);
  // After a power cycle the cache is empty: a read goes to the NAND (50 us on one die).
  d.power_off(f.t_complete + d_us(20));
  EXPECT_DOUBLE_EQ(d.current_ma(f.t_complete + d_us(30)), 0.0);
  d.power_on(f.t_complete + d_us(40));
  now = d.ready_at();
  Completion r = exec(d, read_dma(0, 32), now);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(d.current_ma((r.t_arrive + r.t_complete) / 2), p.idle_ma + p.read_ma);
  EXPECT_DOUBLE_EQ(d.current_ma(r.t_complete + d_us(10)), p.idle_ma);
}

TEST(Current, AnEraseOfEveryDieAndTheProfileSaysHowMuch) {
  DriveConfig cfg = tiny();
  cfg.power.idle_ma = 10;
  cfg.power.erase_ma = 7;
  Drive d(cfg);
  EXPECT_DOUBLE_EQ(d.current_ma(0), 10.0);
  SimTime now = 0;
  // SANITIZE BLOCK ERASE erases every block: every die erasing at once (3 ms a block).
  Completion s = exec(d, simple(ata::kSanitize, ata::kSanitizeBlockErase, ata::kSanitizeBlockEraseKey), now);
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(d.current_ma(s.t_arrive + d_us(1000)), 10.0 + 7.0 * d.ssd().nand().dies());
}

// The garbage collector's operations draw gc_ma, whatever they are (the FTL opens a
// NandBackend::GcScope in collect_one and for its relocation units' programs); ones queued
// behind another on a die draw from when they start; a power cut ends what runs.
TEST(Current, GcOperationsQueuedOperationsAndACut) {
  NandGeometry g;
  g.channels = 1;
  g.dies_per_channel = 2;
  NandTiming timing;  // read 50 us, program 1.3 ms, erase 3 ms
  NandBackend n(g, timing, 1);
  n.keep_activity(true);
  const std::array<double, 4> ma = {1, 10, 100, 1000};  // read, program, erase, GC
  SimTime programmed = n.program(0, 0, 0);              // die 0: 0 to 1.3 ms
  SimTime read = n.read(0, 0, 0);                       // queued behind it: 1.3 to 1.35 ms
  {
    NandBackend::GcScope gc(n);
    n.erase(1, d_us(100));                              // die 1, GC's: 0.1 to 3.1 ms
  }
  EXPECT_EQ(programmed, d_us(1300));
  EXPECT_EQ(read, d_us(1350));
  EXPECT_DOUBLE_EQ(n.draw_ma(d_us(50), ma), 10);
  EXPECT_DOUBLE_EQ(n.draw_ma(d_us(200), ma), 10 + 1000);
  EXPECT_DOUBLE_EQ(n.draw_ma(d_us(1320), ma), 1 + 1000);
  n.reset_time(d_us(2000));                             // the cut: the erase ends there
  EXPECT_DOUBLE_EQ(n.draw_ma(d_us(2000), ma), 0);
}
