// Frames, ALIGNs, CONT and HOLD on the wire, sent and received by the link pieces.
#include <gtest/gtest.h>

#include <random>

#include "fisrig/link/crc.h"
#include "fisrig/link/framing.h"

using namespace fisrig::link;

namespace {
std::vector<uint32_t> random_fis(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> f(n);
  for (auto& d : f) d = rng();
  f[0] = (f[0] & ~0xFFu) | 0x46;  // a Data FIS
  return f;
}
}  // namespace

TEST(LinkFraming, FrameIsSofScrambledPayloadCrcEof) {
  std::vector<uint32_t> fis = {0x00308027, 0xE1234567, 0x00000000, 0x00000002, 0x00000000};
  auto w = frame(fis);
  ASSERT_EQ(w.size(), 8u);
  EXPECT_EQ(w.front(), primitive(prim::kSof));
  EXPECT_EQ(w.back(), primitive(prim::kEof));
  // The first dword goes out XORed with the scrambler's first output, the CRC last.
  EXPECT_EQ(w[1].data, 0x00308027u ^ 0xC2D2768Du);
  Scrambler s;
  for (int i = 0; i < 5; ++i) s.next();
  EXPECT_EQ(w[6].data ^ s.next(), 0x319FFF6Fu);
}

TEST(LinkFraming, RoundTripThroughAlignsAndHolds) {
  auto fis = random_fis(2049, 1);  // a full 8 KiB Data FIS plus its header
  auto words = frame(fis);
  // The transmitter stalls now and then (HOLD) and its last stage inserts ALIGNs.
  std::vector<LinkWord> wire;
  AlignInserter align;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i % 300 == 150) {
      align.push(primitive(prim::kHold), wire);
      align.push(primitive(prim::kHold), wire);
    }
    align.push(words[i], wire);
  }
  size_t aligns = 0;
  for (auto& x : wire) aligns += x == primitive(prim::kAlign);
  EXPECT_EQ(aligns, 2 * ((wire.size() - aligns + 255) / 256));
  FrameReceiver rx;
  int frames = 0;
  for (auto& x : wire) frames += rx.push(x);
  ASSERT_EQ(frames, 1);
  EXPECT_TRUE(rx.frame().crc_ok);
  EXPECT_EQ(rx.frame().fis, fis);
}

TEST(LinkFraming, ACorruptedDwordFailsTheCrc) {
  auto fis = random_fis(100, 2);
  auto words = frame(fis);
  words[37].data ^= 1u << 9;
  FrameReceiver rx;
  bool ended = false;
  for (auto& x : words) ended |= rx.push(x);
  ASSERT_TRUE(ended);
  EXPECT_FALSE(rx.frame().crc_ok);
}

TEST(LinkFraming, RepeatedPrimitivesGoAsContAndJunk) {
  ContEncoder tx;
  std::vector<LinkWord> wire;
  for (int i = 0; i < 10; ++i) tx.push(prim::kSync, wire);
  tx.push(prim::kXRdy, wire);
  ASSERT_EQ(wire.size(), 11u);
  EXPECT_EQ(wire[0], primitive(prim::kSync));
  EXPECT_EQ(wire[1], primitive(prim::kSync));
  EXPECT_EQ(wire[2], primitive(prim::kCont));
  for (int i = 3; i < 10; ++i) EXPECT_FALSE(wire[i].k);  // junk, no K characters
  EXPECT_EQ(wire[3].data, 0xC2D2768Du);                // junk is the scrambler, reset at CONT
  EXPECT_EQ(wire[10], primitive(prim::kXRdy));
  FrameReceiver rx;
  for (int i = 0; i < 10; ++i) {
    rx.push(wire[i]);
    EXPECT_EQ(rx.current_primitive(), prim::kSync) << i;  // SYNC holds through CONT and junk
  }
  rx.push(wire[10]);
  EXPECT_EQ(rx.current_primitive(), prim::kXRdy);
  EXPECT_EQ(primitive_name(prim::kXRdy), "X_RDY");
  EXPECT_TRUE(primitive_name(0x12345678).empty());
}

// ---- the one-dword-per-cycle forms the RTL device side uses ----

TEST(LinkFraming, AlignDueEveryCycleMatchesTheBurstForm) {
  AlignInserter burst, cycle;
  std::vector<LinkWord> a, b;
  for (uint32_t i = 0; i < 1000; ++i) burst.push(LinkWord{i, false}, a);
  for (uint32_t i = 0; i < 1000;) {
    if (cycle.align_due()) b.push_back(primitive(prim::kAlign));
    else b.push_back(LinkWord{i++, false});
  }
  EXPECT_EQ(a, b);
  // A pair first, then a pair before every 256 dwords of payload.
  EXPECT_EQ(b[0], primitive(prim::kAlign));
  EXPECT_EQ(b[1], primitive(prim::kAlign));
  EXPECT_EQ(b[258], primitive(prim::kAlign));
  EXPECT_EQ(b[259], primitive(prim::kAlign));
  EXPECT_EQ(b[257], (LinkWord{255, false}));
}

TEST(LinkFraming, DataAfterJunkIsPrecededByThePrimitive) {
  // HOLDA, HOLDA, CONT, junk: before data resumes the HOLDA goes once more, or the
  // receiver would take the data for junk.
  ContEncoder tx;
  std::vector<LinkWord> wire;
  for (int i = 0; i < 6; ++i) tx.push(prim::kHolda, wire);
  EXPECT_TRUE(tx.in_junk());
  tx.data(LinkWord{0x11111111, false}, wire);
  tx.data(LinkWord{0x22222222, false}, wire);
  ASSERT_EQ(wire.size(), 9u);
  EXPECT_EQ(wire[6], primitive(prim::kHolda));
  EXPECT_FALSE(tx.in_junk());
  FrameReceiver rx;
  rx.push(primitive(prim::kSof));
  for (auto& w : wire) rx.push(w);
  ASSERT_EQ(rx.dwords(), 2u);  // junk dropped, both data dwords kept (descrambled)
  Scrambler s;
  EXPECT_EQ(rx.dword(0), 0x11111111u ^ s.next());
  EXPECT_TRUE(rx.data_flowing());
}

TEST(LinkFraming, RestartSendsThePrimitiveAgainAfterAligns) {
  ContEncoder tx;
  std::vector<LinkWord> wire;
  for (int i = 0; i < 5; ++i) wire.push_back(tx.next(prim::kXRdy));
  tx.restart();  // ALIGNs went out
  for (int i = 0; i < 4; ++i) wire.push_back(tx.next(prim::kXRdy));
  // X_RDY X_RDY CONT junk junk | X_RDY X_RDY CONT junk
  EXPECT_EQ(wire[2], primitive(prim::kCont));
  EXPECT_FALSE(wire[4].k);
  EXPECT_EQ(wire[5], primitive(prim::kXRdy));
  EXPECT_EQ(wire[6], primitive(prim::kXRdy));
  EXPECT_EQ(wire[7], primitive(prim::kCont));
  // A receiver that starts listening in the middle of the junk learns X_RDY at wire[5].
  FrameReceiver late;
  for (size_t i = 3; i < wire.size(); ++i) late.push(wire[i]);
  EXPECT_EQ(late.current_primitive(), prim::kXRdy);
}

TEST(LinkFraming, OversizeFramesFail) {
  auto fis = random_fis(40, 3);
  auto words = frame(fis);
  FrameReceiver rx;
  rx.set_limit(20);
  bool ended = false;
  for (auto& x : words) ended |= rx.push(x);
  ASSERT_TRUE(ended);
  EXPECT_TRUE(rx.frame().oversize);
  EXPECT_FALSE(rx.frame().crc_ok);
  // The next frame within the limit is fine again.
  auto small = random_fis(10, 4);
  for (auto& x : frame(small)) ended = rx.push(x);
  EXPECT_TRUE(rx.frame().crc_ok);
  EXPECT_EQ(rx.frame().fis, small);
}
