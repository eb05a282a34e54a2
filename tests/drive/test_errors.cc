// Errors as ATA defines them, and the fault knobs that provoke them.
#include <gtest/gtest.h>

#include "drive_helpers.h"

using namespace fisrig;
using namespace fisrig::test;

TEST(Errors, PastTheEndIsIdnf) {
  Drive d(tiny());
  SimTime now = 0;
  const uint64_t end = d.user_sectors();
  std::vector<uint8_t> log;
  for (const AtaCommand& c : {read_dma(end - 4, 8), write_dma(end, 1, 1), read_fpdma(2, end - 1, 2),
                              write_fpdma(3, end - 8, 16, 1)}) {
    Completion r = exec(d, c, now);
    EXPECT_EQ(r.status, ata::kStatusDrdy | ata::kStatusErr) << std::hex << int(c.command);
    EXPECT_EQ(r.error, ata::kErrorIdnf);
    exec(d, read_log(ata::kLogNcqError, &log), now);  // a queued failure halts the queue till then
  }
  EXPECT_TRUE(exec(d, read_dma(end - 8, 8), now).ok());  // the last sectors are fine
}

TEST(Errors, IdnfAndUncKnobsNameTheFirstBadSector) {
  drive::DriveConfig cfg = tiny();
  cfg.faults.set("idnf", "7000+4");
  cfg.faults.set("unc", "9000+2");
  Drive d(cfg);
  SimTime now = 0;
  Completion a = exec(d, read_dma(6990, 16), now);
  EXPECT_EQ(a.error, ata::kErrorIdnf);
  EXPECT_EQ(a.lba, 7000u);
  Completion b = exec(d, write_dma(8992, 16, 5), now);
  EXPECT_TRUE(b.ok());  // UNC is a read error
  Completion c = exec(d, read_dma(8992, 16), now);
  EXPECT_EQ(c.error, ata::kErrorUnc);
  EXPECT_EQ(c.lba, 9000u);
  EXPECT_GT(c.t_data_end, 0u);  // the good sectors before it were sent
}

TEST(Errors, UnsupportedThingsAreAborted) {
  Drive d(tiny());
  SimTime now = 0;
  EXPECT_EQ(exec(d, simple(0xFF), now).error, ata::kErrorAbrt);
  EXPECT_EQ(exec(d, simple(ata::kSetFeatures, 0x66), now).error, ata::kErrorAbrt);
  EXPECT_EQ(exec(d, simple(ata::kSecurityEraseUnit), now).error, ata::kErrorAbrt);  // no PREPARE
  EXPECT_EQ(exec(d, simple(ata::kReadLogExt, 0, 0x42, 1), now).error, ata::kErrorAbrt);  // no such log
  AtaCommand send = simple(ata::kSendFpdmaQueued, 1, 0, uint16_t(2 << 8));  // subcommand 2
  EXPECT_EQ(exec(d, send, now).error, ata::kErrorAbrt);
  EXPECT_EQ(exec(d, simple(ata::kSanitize, ata::kSanitizeBlockErase, 0x1234), now).error, ata::kErrorAbrt);
}

TEST(Errors, SecureEraseAndSanitizeReturnToClean) {
  Drive d(tiny());
  SimTime now = 0;
  ASSERT_TRUE(exec(d, write_dma(0, 64, 3), now).ok());
  for (uint8_t op : {ata::kSecuritySetPassword, ata::kSecurityErasePrepare, ata::kSecurityEraseUnit})
    ASSERT_TRUE(exec(d, simple(op), now).ok());
  uint32_t w = 1;
  exec(d, read_dma(0, 1, &w), now);
  EXPECT_EQ(w, 0u);
  EXPECT_EQ(d.ssd().ftl().free_superblocks(), d.ssd().ftl().superblocks());
  ASSERT_TRUE(exec(d, write_dma(0, 64, 4), now).ok());
  ASSERT_TRUE(exec(d, simple(ata::kSanitize, ata::kSanitizeBlockErase, ata::kSanitizeBlockEraseKey), now).ok());
  exec(d, read_dma(0, 1, &w), now);
  EXPECT_EQ(w, 0u);
}

TEST(Errors, HungDriveAnswersNothingUntilComreset) {
  drive::DriveConfig cfg = tiny();
  cfg.faults.hang_after_commands = 2;
  Drive d(cfg);
  SimTime now = 0;
  EXPECT_TRUE(exec(d, read_dma(0, 8), now).ok());
  EXPECT_TRUE(exec(d, read_dma(0, 8), now).ok());
  Completion hung = d.execute(read_dma(0, 8), now);
  EXPECT_EQ(hung.t_complete, drive::kNever);
  EXPECT_TRUE(d.hung());
  d.comreset(now + drive::kNsPerMs);
  now = d.ready_at();
  EXPECT_FALSE(d.hung());
  EXPECT_TRUE(exec(d, read_dma(0, 8), now).ok());
}

// The knob is a read's: the device sends a Data FIS with a bad CRC. A write's data fails
// when the device answers it R_ERR (r_err_rate), as sim/device's link does.
TEST(Errors, DataFisCrcErrorsAreIcrcAndCounted) {
  drive::DriveConfig cfg = tiny();
  cfg.faults.data_fis_crc_error_rate = 1.0;
  Drive d(cfg);
  SimTime now = 0;
  EXPECT_TRUE(exec(d, write_dma(0, 32, 1), now).ok());
  Completion w = exec(d, read_dma(0, 32), now);
  EXPECT_EQ(w.error, ata::kErrorIcrc | ata::kErrorAbrt);
  EXPECT_EQ(w.lba, 0u);  // the first Data FIS failed
  std::vector<uint8_t> log;
  d.faults().data_fis_crc_error_rate = 0;
  ASSERT_TRUE(exec(d, read_log(ata::kLogSataPhyEvents, &log), now).ok());
  // First counter: id 0x001 (command failed, ICRC), 32-bit value.
  uint16_t id = uint16_t(log[4] | log[5] << 8);
  uint32_t value = uint32_t(log[6] | log[7] << 8 | log[8] << 16 | log[9] << 24);
  EXPECT_EQ(id & 0x0FFF, 0x001);
  EXPECT_EQ(value, 1u);
}

// r_err_rate: the device answers R_ERR to what the host sends. An H2D goes again (it has
// arrived a FIS later); a write's Data FIS ends the command ICRC|ABRT; reads are untouched.
TEST(Errors, RErrResendsAnH2dAndFailsAWritesData) {
  drive::DriveConfig cfg = tiny();
  cfg.faults.r_err_rate = 1.0;
  Drive d(cfg), clean(tiny());
  EXPECT_EQ(d.receive_h2d(0), 2 * clean.receive_h2d(0));
  SimTime now = 0;
  Completion w = exec(d, write_dma(0, 32, 1), now);
  EXPECT_EQ(w.error, ata::kErrorIcrc | ata::kErrorAbrt);
  EXPECT_TRUE(exec(d, read_dma(0, 32), now).ok());
}

TEST(Errors, BusyAndOutlierKnobsDelayCompletions) {
  drive::DriveConfig slow = tiny();
  slow.faults.set("busy_rate", "1");
  slow.faults.set("busy_us", "500");
  slow.faults.set("latency_outlier_rate", "1");
  slow.faults.set("latency_outlier_us", "2000");
  Drive fast(tiny()), d(slow);
  SimTime a = 0, b = 0;
  Completion x = exec(fast, read_dma(0, 8), a);
  Completion y = exec(d, read_dma(0, 8), b);
  EXPECT_EQ((y.t_complete - y.t_arrive) - (x.t_complete - x.t_arrive), d_us(2500));
}

TEST(Errors, IdentifyWordsFollowAcs3) {
  Drive d(tiny());
  SimTime now = 0;
  std::vector<uint8_t> id;
  AtaCommand c = simple(ata::kIdentifyDevice);
  c.pio_in = &id;
  Completion r = exec(d, c, now);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(id.size(), 512u);
  auto word = [&](int i) { return uint16_t(id[2 * i] | id[2 * i + 1] << 8); };
  std::string model;
  for (int i = 27; i < 47; ++i) {
    model += char(word(i) >> 8);
    model += char(word(i) & 0xFF);
  }
  EXPECT_EQ(model.substr(0, 18), "fisrig SIM-T1 tiny");
  uint64_t lba48 = uint64_t(word(100)) | uint64_t(word(101)) << 16 | uint64_t(word(102)) << 32;
  EXPECT_EQ(lba48, d.user_sectors());
  EXPECT_EQ(word(75), 31);
  EXPECT_EQ(word(76) & 0x010E, 0x010E);
  EXPECT_EQ(word(169) & 1, 1);
  EXPECT_EQ(word(69) & 0x4020, 0x4020);
  EXPECT_EQ(word(105), d.config().identity.dsm_max_blocks);
  EXPECT_EQ(word(217), 1);
  EXPECT_EQ(word(255) & 0xFF, 0xA5);
  uint8_t sum = 0;
  for (uint8_t b : id) sum = uint8_t(sum + b);
  EXPECT_EQ(sum, 0);
  EXPECT_LE(r.t_arrive, r.t_data_start);
  EXPECT_LT(r.t_data_start, r.t_data_end);
  EXPECT_LE(r.t_data_end, r.t_complete);
}
