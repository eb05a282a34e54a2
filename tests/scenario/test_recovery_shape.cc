// The shapes the reviews in shared/seeds/ show, on drives scaled down so CI can run them:
// sequential writes fall on a tortured drive, come partly back with idle time and fully
// back after TRIM; a compressing drive's reads fall while its compressible writes hold.
#include <gtest/gtest.h>

#include <cmath>

#include "scenarios.h"

using namespace fisrig;

namespace {

drive::DriveConfig scaled(const std::string& profile, double gb) {
  return drive::scale_capacity(drive::load_profile(profile), gb);
}

// The review's 20 minutes of torture, scaled with the drive so that the same share of
// it is rewritten (the torture's IOPS do not shrink with the drive).
tools::RecoveryOptions short_run(double gb, double full_gb) {
  tools::RecoveryOptions o;
  o.torture_minutes = 20 * gb / full_gb;
  o.idle_minutes = 40;
  o.sweep.zones = 64;
  o.sweep.zone_bytes = 8 << 20;
  return o;
}

}  // namespace

TEST(RecoveryShape, TorturedIdleTrimmedAsTheReviewShows) {
  drive::Drive d(scaled("consumer-256gb", 8));
  tools::RecoveryFigures f = tools::torture_idle_trim(d, short_run(8, 256));
  double clean = f.clean.avg_mbps;
  // Clean: NAND-bound, below the Gen3 link's ~590 MB/s.
  EXPECT_GT(clean, 250);
  EXPECT_LT(clean, 600);
  EXPECT_LT(f.tortured.avg_mbps, 0.6 * clean);
  EXPECT_GT(f.idle_recovered.avg_mbps, f.tortured.avg_mbps);
  EXPECT_LT(f.idle_recovered.avg_mbps, clean);
  EXPECT_GE(f.trimmed.avg_mbps, 0.9 * clean);
  EXPECT_GT(f.write_amplification, 2.0);  // the torture made GC copy
  EXPECT_EQ(f.tortured.zone_mbps.size(), 64u);
}

TEST(RecoveryShape, CompressingDriveReadsFallWritesHold) {
  drive::Drive d(scaled("sandforce-240gb", 8));
  tools::RecoveryOptions o = short_run(8, 240);
  o.sweep.compress_pct = 25;
  o.data_compress_pct = 25;
  tools::CompressingFigures f = tools::compressing_states(d, o);
  EXPECT_LT(f.read_tortured.avg_mbps, 0.9 * f.read_clean.avg_mbps);
  // Compressible writes cost a quarter of the flash, so GC stays cheap: the consumer
  // drive falls below 60% here, the compressing one must not.
  EXPECT_GE(f.write_tortured.avg_mbps, 0.6 * f.write_clean.avg_mbps);
}
