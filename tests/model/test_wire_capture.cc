// WireCapture (sim/model/wire_capture.h): the model target's capture windows. Entries come in
// any order (a command's FISes when its record is written); the window is the earliest
// trigger's, bounded by the arming and its depths, in tick order, and goes out only once
// nothing before its end can still come; windows follow one another without overlap.
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "wire_capture.h"

extern "C" {
#include "fisrig/ata.h"
}

using fisrig::model::WireCapture;

namespace {

fisrig_capture_entry fis(uint64_t tick, uint8_t type) {
  fisrig_capture_entry e{};
  e.tick = tick;
  e.kind = FISRIG_CAPTURE_FIS;
  e.type = type;
  e.tag = 0;
  e.header[0] = type;
  return e;
}

fisrig_cmd_desc arm(uint16_t trigger, uint16_t value, uint32_t before, uint32_t after, uint8_t windows = 1) {
  fisrig_cmd_desc d{};
  d.protocol = FISRIG_PROTO_CAPTURE;
  d.command = FISRIG_CAPTURE_ARM;
  d.features = trigger;
  d.count = value;
  d.data_word = before;
  d.timeout_ticks = after;
  d.lba[0] = windows;
  return d;
}

// What the capture wrote to its file: the entries of every window.
struct Written {
  std::FILE* f = std::tmpfile();
  ~Written() { std::fclose(f); }
  std::vector<fisrig_capture_entry> entries() {
    std::fflush(f);
    std::vector<fisrig_capture_entry> out;
    std::rewind(f);
    fisrig_capture_entry e;
    while (std::fread(&e, sizeof e, 1, f) == 1) out.push_back(e);
    return out;
  }
};

}  // namespace

TEST(WireCapture, TheEarliestTriggerWinsWhateverOrderItsEntriesCameIn) {
  Written w;
  WireCapture c;
  c.write_to(w.f);
  ASSERT_TRUE(c.take(arm(FISRIG_TRIGGER_FIS, FISRIG_FIS_SET_DEVICE_BITS, 10, 20), 100));
  c.add(fis(90, FISRIG_FIS_SET_DEVICE_BITS));  // before the arming: not kept, fires nothing
  c.add(fis(150, FISRIG_FIS_SET_DEVICE_BITS));
  c.add(fis(139, FISRIG_FIS_REG_H2D));
  c.add(fis(130, FISRIG_FIS_SET_DEVICE_BITS));  // found later, on the wire earlier: it fires
  c.add(fis(119, FISRIG_FIS_DATA));              // before the window's start (130 - 10)
  c.settle(150);                                 // 130 + 20 may still get entries
  EXPECT_TRUE(w.entries().empty());
  c.add(fis(151, FISRIG_FIS_DATA));              // past the window's end
  c.settle(151);
  std::vector<fisrig_capture_entry> got = w.entries();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].kind, FISRIG_CAPTURE_TRIGGER);
  EXPECT_EQ(got[0].tick, 130u);
  EXPECT_EQ(got[0].header[1], 120u);  // the window's first tick
  EXPECT_EQ(got[0].header[3], 150u);  // and its last
  EXPECT_EQ(got[1].tick, 130u);
  EXPECT_EQ(got[2].tick, 139u);
  EXPECT_EQ(got[3].tick, 150u);
  EXPECT_FALSE(c.on());  // one window asked
}

TEST(WireCapture, ANewArmingKeepsTheWindowThatHadFiredCutShort) {
  Written w;
  WireCapture c;
  c.write_to(w.f);
  ASSERT_TRUE(c.take(arm(FISRIG_TRIGGER_FIS, FISRIG_FIS_SET_DEVICE_BITS, 10, 100), 0));
  c.add(fis(40, FISRIG_FIS_REG_H2D));
  c.add(fis(50, FISRIG_FIS_SET_DEVICE_BITS));  // fires; its window runs to 150
  ASSERT_TRUE(c.take(arm(FISRIG_TRIGGER_FIS, FISRIG_FIS_REG_H2D, 0, 10), 60));  // before 150: cut short
  c.add(fis(70, FISRIG_FIS_REG_H2D));
  c.finish(200);
  std::vector<fisrig_capture_entry> got = w.entries();
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0].kind, FISRIG_CAPTURE_TRIGGER);
  EXPECT_EQ(got[0].tick, 50u);
  EXPECT_TRUE(got[0].flags & FISRIG_CAPTURE_CUT_SHORT);
  EXPECT_EQ(got[1].tick, 40u);
  EXPECT_EQ(got[2].tick, 50u);
  EXPECT_EQ(got[3].kind, FISRIG_CAPTURE_TRIGGER);  // the new arming's window
  EXPECT_EQ(got[3].tick, 70u);
  EXPECT_EQ(got[3].window, 1u);
  EXPECT_FALSE(got[3].flags & FISRIG_CAPTURE_CUT_SHORT);
}

TEST(WireCapture, WindowsFollowOneAnotherAndAResultTriggerPastAnOpenWindowWaits) {
  Written w;
  WireCapture c;
  c.write_to(w.f);
  ASSERT_TRUE(c.take(arm(FISRIG_TRIGGER_ERROR, 0, 5, 10, 2), 0));
  for (uint64_t t = 1; t < 100; t += 3) c.add(fis(t, FISRIG_FIS_DATA));
  c.fire(FISRIG_TRIGGER_ERROR, 0, 40);
  c.fire(FISRIG_TRIGGER_ERROR, 0, 45);  // inside the first window: not a window of its own
  c.fire(FISRIG_TRIGGER_ERROR, 0, 70);  // past it: the second window's
  c.settle(100);
  c.settle(100);
  std::vector<fisrig_capture_entry> got = w.entries();
  std::vector<uint64_t> triggers;
  uint64_t last_end = 0;
  for (const auto& e : got) {
    if (e.kind != FISRIG_CAPTURE_TRIGGER) continue;
    triggers.push_back(e.tick);
    EXPECT_GT(uint64_t(e.header[1]), last_end);
    last_end = e.header[3];
  }
  EXPECT_EQ(triggers, (std::vector<uint64_t>{40, 70}));
  for (const auto& e : got)
    if (e.kind == FISRIG_CAPTURE_FIS) {
      EXPECT_TRUE((e.tick >= 35 && e.tick <= 50) || (e.tick >= 65 && e.tick <= 80));
    }
  EXPECT_EQ(got.back().window, 1);
}

TEST(WireCapture, SetDeviceBitsOfOneTickAreOneFisWithTheirBitsTogether) {
  Written w;
  WireCapture c;
  c.write_to(w.f);
  ASSERT_TRUE(c.take(arm(FISRIG_TRIGGER_ARMED, 0, 0, 50), 10));
  fisrig_capture_entry a = fis(20, FISRIG_FIS_SET_DEVICE_BITS), b = a;
  a.header[1] = 1u << 3, a.tag = 3;
  b.header[1] = 1u << 7, b.tag = 7;
  a.dir = b.dir = FISRIG_CAPTURE_TO_HOST;
  c.add(a);
  c.add(b);
  c.finish(30);  // the run ends before the window does: it goes out, cut short
  std::vector<fisrig_capture_entry> got = w.entries();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].flags & FISRIG_CAPTURE_CUT_SHORT);
  EXPECT_EQ(got[1].header[1], (1u << 3) | (1u << 7));
  EXPECT_EQ(got[1].tag, FISRIG_CAPTURE_NO_TAG);
}

TEST(WireCapture, AnArmingItDoesNotKnowIsRefused) {
  WireCapture c;
  EXPECT_FALSE(c.take(arm(FISRIG_TRIGGER_ERROR + 1, 0, 0, 0), 0));
  fisrig_cmd_desc d = arm(0, 0, 0, 0);
  d.command = 9;
  EXPECT_FALSE(c.take(d, 0));
  EXPECT_FALSE(c.on());
}
