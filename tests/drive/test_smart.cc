// SMART (B0h) as IDENTIFY advertises it: READ DATA and READ THRESHOLDS in the layout SMART
// tools read, RETURN STATUS's C24Fh / 2CF4h, ENABLE / DISABLE OPERATIONS; attributes that
// follow the drive's own counters; nothing advertised that the drive does not do.
#include <gtest/gtest.h>

#include "drive_helpers.h"

using namespace fisrig;
using namespace fisrig::test;
namespace smart = drive::smart;

namespace {

constexpr uint64_t kKeyLba = uint64_t{smart::kKey} << 8;

AtaCommand smart_cmd(uint8_t sub, std::vector<uint8_t>* page = nullptr, uint64_t lba = kKeyLba) {
  AtaCommand c = simple(ata::kSmart, sub, lba, 1);
  c.pio_in = page;
  return c;
}

struct Entry {
  uint8_t id;
  uint16_t flags;
  uint8_t value, worst;
  uint64_t raw;
};
// The attribute entry with this id in a READ DATA page (id 0 if absent).
Entry entry(const std::vector<uint8_t>& p, uint8_t id) {
  for (size_t i = 0; i < 30; ++i) {
    const uint8_t* e = &p[2 + 12 * i];
    if (e[0] != id) continue;
    uint64_t raw = 0;
    for (int b = 5; b >= 0; --b) raw = raw << 8 | e[5 + b];
    return {e[0], uint16_t(e[1] | e[2] << 8), e[3], e[4], raw};
  }
  return {};
}

uint8_t sum(const std::vector<uint8_t>& p) {
  uint8_t s = 0;
  for (uint8_t b : p) s = uint8_t(s + b);
  return s;
}

uint16_t identify_word(Drive& d, int i) { return d.identify_words()[i]; }

}  // namespace

TEST(Smart, ReadDataFollowsTheDrivesCountersInTheCommonLayout) {
  Drive d(tiny());
  SimTime now = 0;
  ASSERT_TRUE(exec(d, write_dma(0, 256, 7), now).ok());
  ASSERT_TRUE(exec(d, write_dma(4096, 8, 8), now).ok());
  ASSERT_TRUE(exec(d, read_dma(0, 64), now).ok());
  ASSERT_TRUE(exec(d, simple(ata::kFlushCacheExt), now).ok());
  // Two and a half hours on, a cut, half an hour off, back on: 2 h powered, 2 power-ons.
  now += 150 * 60 * drive::kNsPerS;
  d.idle_until(now);
  d.power_off(now);
  now += 30 * 60 * drive::kNsPerS;
  d.power_on(now);
  now = d.ready_at();

  std::vector<uint8_t> p;
  Completion r = exec(d, smart_cmd(smart::kReadData, &p), now);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(p.size(), 512u);
  EXPECT_EQ(sum(p), 0) << "byte 511 is the checksum";
  EXPECT_EQ(p[0] | p[1] << 8, smart::kRevision);
  EXPECT_EQ(entry(p, 9).raw, 2u);    // power-on hours: simulated powered time
  EXPECT_EQ(entry(p, 12).raw, 2u);   // power cycles, the first start included
  EXPECT_EQ(entry(p, 174).raw, 1u);  // the cut
  EXPECT_EQ(entry(p, 241).raw, 264u);
  EXPECT_EQ(entry(p, 242).raw, 64u);
  EXPECT_EQ(entry(p, 199).raw, 0u);
  // Flushed: at least the host's sectors are in NAND (padding of part-filled units too).
  EXPECT_EQ(entry(p, 249).raw * 512, d.ssd().nand().counters().bytes_programmed);
  EXPECT_GE(entry(p, 249).raw, 264u);
  Entry wear = entry(p, 177);
  EXPECT_EQ(wear.value, 100);
  EXPECT_EQ(wear.flags & smart::kPreFailure, smart::kPreFailure);
  for (uint8_t id : {9, 12, 174, 199, 241, 242, 249}) {
    Entry e = entry(p, id);
    EXPECT_EQ(e.id, id);
    EXPECT_EQ(e.flags & smart::kPreFailure, 0) << int(id);
    EXPECT_EQ(e.value, 100) << int(id);
    EXPECT_EQ(e.worst, 100) << int(id);
  }
  // ACS-3 bytes 362-376: no off-line collection ever started, no self-test run, none of
  // either offered, no error log, no auto-save, no polling times.
  for (size_t i = 362; i <= 376; ++i) EXPECT_EQ(p[i], 0) << i;
  // PIO data-in: the PIO Setup's ending status closes it.
  EXPECT_EQ(r.sectors, 1u);
  EXPECT_LT(r.t_data_start, r.t_data_end);
  EXPECT_EQ(r.t_data_end, r.t_complete);
}

TEST(Smart, ReturnStatusSaysC24FhUntilTheRatedEnduranceIsUsedUp) {
  drive::DriveConfig cfg = tiny();
  cfg.nand.rated_pe_cycles = 1;  // one erase of every block wears it out
  Drive d(cfg);
  SimTime now = 0;
  Completion ok = exec(d, smart_cmd(smart::kReturnStatus), now);
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok.lba_is_output);
  EXPECT_EQ(ok.lba, 0xC24F00u);
  // SANITIZE BLOCK ERASE erases every block once.
  ASSERT_TRUE(exec(d, simple(ata::kSanitize, ata::kSanitizeBlockErase, ata::kSanitizeBlockEraseKey), now).ok());
  Completion worn = exec(d, smart_cmd(smart::kReturnStatus), now);
  ASSERT_TRUE(worn.ok());
  EXPECT_EQ(worn.lba, 0x2CF400u);
  std::vector<uint8_t> p, t;
  ASSERT_TRUE(exec(d, smart_cmd(smart::kReadData, &p), now).ok());
  EXPECT_EQ(entry(p, 177).raw, 1u);  // average erases per block
  EXPECT_EQ(entry(p, 177).value, 1);
  // READ THRESHOLDS: the same ids in the same slots, each with its threshold.
  ASSERT_TRUE(exec(d, smart_cmd(smart::kReadThresholds, &t), now).ok());
  ASSERT_EQ(t.size(), 512u);
  EXPECT_EQ(sum(t), 0);
  for (size_t i = 0; i < 30; ++i) {
    EXPECT_EQ(t[2 + 12 * i], p[2 + 12 * i]) << i;
    EXPECT_EQ(t[3 + 12 * i], p[2 + 12 * i] == 177 ? 1 : 0) << i;
  }
}

TEST(Smart, DisableAbortsAllButEnableAndOutlivesAPowerCycle) {
  Drive d(tiny());
  SimTime now = 0;
  std::vector<uint8_t> p;
  EXPECT_EQ(identify_word(d, 85) & 1, 1);  // SMART enabled
  ASSERT_TRUE(exec(d, smart_cmd(smart::kDisableOperations), now).ok());
  EXPECT_FALSE(d.smart_enabled());
  EXPECT_EQ(identify_word(d, 85) & 1, 0);
  d.power_off(now);
  d.power_on(now + drive::kNsPerMs);
  now = d.ready_at();
  for (uint8_t sub : {smart::kReadData, smart::kReadThresholds, smart::kReturnStatus, smart::kDisableOperations})
    EXPECT_EQ(exec(d, smart_cmd(sub, &p), now).error, ata::kErrorAbrt) << std::hex << int(sub);
  ASSERT_TRUE(exec(d, smart_cmd(smart::kEnableOperations), now).ok());
  EXPECT_EQ(identify_word(d, 85) & 1, 1);
  EXPECT_TRUE(exec(d, smart_cmd(smart::kReadData, &p), now).ok());
  // Without the C24Fh key, or a subcommand the drive does not offer: aborted.
  EXPECT_EQ(exec(d, smart_cmd(smart::kReadData, &p, 0), now).error, ata::kErrorAbrt);
  for (uint8_t sub : {0xD2, 0xD4, 0xD5, 0xD6})  // auto-save, off-line/self-test, logs
    EXPECT_EQ(exec(d, smart_cmd(sub, &p), now).error, ata::kErrorAbrt) << std::hex << int(sub);
}

TEST(Smart, IdentifyAdvertisesOnlyTheSmartThatIsThere) {
  Drive d(tiny());
  auto w = d.identify_words();
  EXPECT_EQ(w[82] & 1, 1);         // SMART feature set
  EXPECT_EQ(w[84] & 3, 0);         // no SMART self-test (1) or error logging (0)
  EXPECT_EQ(w[87] & 3, 0);
  EXPECT_EQ(w[82] & 0x3000, 0);    // nor READ/WRITE BUFFER, which the drive aborts
  EXPECT_EQ(w[85] & 0x3000, 0);
  SimTime now = 0;
  EXPECT_EQ(exec(d, simple(0xE4), now).error, ata::kErrorAbrt);  // READ BUFFER
  EXPECT_EQ(exec(d, simple(0xE8), now).error, ata::kErrorAbrt);  // WRITE BUFFER
}
