// Native Command Queueing: 32 tags at once, the drive's own completion order, and the
// NCQ error path (abort everything, halt, log 10h, resume).
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <set>

#include "drive_helpers.h"

using namespace fisrig;
using namespace fisrig::test;

namespace {

Drive written_drive(drive::DriveConfig cfg, SimTime& now) {
  Drive d(cfg);
  for (uint64_t lba = 0; lba < (1u << 20); lba += 2048) exec(d, write_dma(lba, 2048, uint32_t(1 + lba)), now);
  exec(d, simple(ata::kFlushCacheExt), now);
  return d;
}

// Log 10h as ACS-3 lays it out.
struct NcqLog {
  uint8_t tag;
  bool nq;
  uint8_t status, error;
  uint64_t lba;
};
NcqLog read_ncq_log(Drive& d, SimTime& now) {
  std::vector<uint8_t> p;
  Completion c = exec(d, read_log(ata::kLogNcqError, &p), now);
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(p.size(), 512u);
  uint8_t sum = 0;
  for (uint8_t b : p) sum = uint8_t(sum + b);
  EXPECT_EQ(sum, 0) << "log 10h checksum";
  uint64_t lba = uint64_t(p[4]) | uint64_t(p[5]) << 8 | uint64_t(p[6]) << 16 | uint64_t(p[8]) << 24 |
                 uint64_t(p[9]) << 32 | uint64_t(p[10]) << 40;
  return NcqLog{uint8_t(p[0] & 0x1F), (p[0] & 0x80) != 0, p[2], p[3], lba};
}

}  // namespace

TEST(Ncq, ThirtyTwoTagsOutOfOrder) {
  SimTime now = 0;
  Drive d = written_drive(tiny(), now);
  std::mt19937_64 rng(3);
  std::vector<std::vector<uint32_t>> data(32, std::vector<uint32_t>(8));
  std::vector<uint64_t> lbas(32);
  for (uint8_t tag = 0; tag < 32; ++tag) {
    lbas[tag] = (rng() % ((1u << 20) / 8)) * 8;
    d.submit(read_fpdma(tag, lbas[tag], 8, data[tag].data()), now);
  }
  EXPECT_EQ(d.pending(), 32u);
  std::vector<uint8_t> order;
  SimTime last = 0;
  Completion c;
  while (d.pop_completion(c)) {
    ASSERT_TRUE(c.ok());
    EXPECT_TRUE(c.queued);
    EXPECT_GE(c.t_complete, last);
    last = c.t_complete;
    order.push_back(c.tag);
  }
  ASSERT_EQ(order.size(), 32u);
  EXPECT_EQ(std::set<uint8_t>(order.begin(), order.end()).size(), 32u);
  std::vector<uint8_t> submitted(32);
  std::iota(submitted.begin(), submitted.end(), 0);
  EXPECT_NE(order, submitted);  // random reads finish in the NAND's order, not the host's
  for (uint8_t tag = 0; tag < 32; ++tag)
    for (uint32_t s = 0; s < 8; ++s) EXPECT_EQ(data[tag][s], uint32_t(1 + lbas[tag] / 2048 * 2048));
}

TEST(Ncq, ErrorAbortsTheQueueUntilLog10hIsRead) {
  drive::DriveConfig cfg = tiny();
  cfg.faults.unc = {{5000, 8}};
  SimTime now = 0;
  Drive d = written_drive(cfg, now);
  // The failing read goes first, so the long reads behind it are still moving data when
  // it fails (each command's data goes out after one DMA Setup, not interleaved).
  d.submit(read_fpdma(9, 4999, 4), now);  // touches the UNC range at 5000
  for (uint8_t tag = 0; tag < 8; ++tag) d.submit(read_fpdma(tag, 20000 + tag * 4096, 256), now);
  std::vector<Completion> done;
  Completion c;
  while (d.pop_completion(c)) done.push_back(c);
  ASSERT_EQ(done.size(), 9u);
  const Completion* failed = nullptr;
  int aborted = 0;
  for (const Completion& x : done) {
    if (x.tag == 9) failed = &x;
    else if (x.aborted_by_ncq_error) {
      ++aborted;
      EXPECT_EQ(x.error, ata::kErrorAbrt);
      EXPECT_EQ(x.status & ata::kStatusErr, ata::kStatusErr);
    }
  }
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->error, ata::kErrorUnc);
  EXPECT_EQ(failed->lba, 5000u);
  EXPECT_GT(aborted, 0);  // the long reads were still outstanding when it failed
  now = std::max(now, done.back().t_complete);

  // Halted: new queued commands are aborted until the log is read.
  Completion refused = exec(d, read_fpdma(1, 0, 8), now);
  EXPECT_TRUE(refused.aborted_by_ncq_error);
  NcqLog log = read_ncq_log(d, now);
  EXPECT_EQ(log.tag, 9);
  EXPECT_FALSE(log.nq);
  EXPECT_EQ(log.status, ata::kStatusDrdy | ata::kStatusErr);
  EXPECT_EQ(log.error, ata::kErrorUnc);
  EXPECT_EQ(log.lba, 5000u);
  EXPECT_TRUE(exec(d, read_fpdma(1, 0, 8), now).ok());  // the queue runs again
}

// The host reads log 10h as soon as the error SDB arrives: neither a second failure behind
// the first nor a queued command sent into the halted queue may still hold a tag then
// (either would make the log read a non-queued intruder, and abort it).
TEST(Ncq, LogReadRightAfterTheErrorFindsNoTagBusy) {
  drive::DriveConfig cfg = tiny();
  cfg.faults.unc = {{5000, 8}, {90000, 8}};
  SimTime now = 0;
  Drive d = written_drive(cfg, now);
  d.submit(read_fpdma(9, 4999, 4), now);
  d.submit(read_fpdma(3, 89000, 1024), now);  // fails too, later than tag 9
  Completion c;
  SimTime error_at = drive::kNever;
  while (d.pop_completion(c)) {
    if (c.tag == 3) {
      EXPECT_TRUE(c.aborted_by_ncq_error);  // overtaken: aborted when tag 9's error went out
      EXPECT_EQ(c.error, ata::kErrorAbrt);
    }
    if (c.tag == 9) error_at = c.t_complete;
  }
  ASSERT_NE(error_at, drive::kNever);
  now = error_at + d_us(1);
  d.submit(read_fpdma(5, 0, 8), now);  // into the halted queue
  now += d_us(1);
  NcqLog log = read_ncq_log(d, now);
  EXPECT_EQ(log.tag, 9);
  EXPECT_EQ(log.error, ata::kErrorUnc);
  ASSERT_TRUE(d.pop_completion(c));
  EXPECT_EQ(c.tag, 5);
  EXPECT_TRUE(c.aborted_by_ncq_error);
}

TEST(Ncq, TagAlreadyInUseIsAnNcqError) {
  SimTime now = 0;
  Drive d = written_drive(tiny(), now);
  d.submit(read_fpdma(4, 0, 256), now);
  d.submit(read_fpdma(4, 4096, 8), now + 10);
  Completion a, b;
  ASSERT_TRUE(d.pop_completion(a));
  ASSERT_TRUE(d.pop_completion(b));
  EXPECT_FALSE(a.ok());
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(d.stats().ncq_errors, 1u);
}

TEST(Ncq, NonQueuedCommandWhileQueuedOutstandingIsAborted) {
  SimTime now = 0;
  Drive d = written_drive(tiny(), now);
  for (uint8_t tag = 0; tag < 4; ++tag) d.submit(read_fpdma(tag, tag * 4096, 256), now);
  Completion flush = d.execute(simple(ata::kFlushCacheExt), now + 100);
  EXPECT_EQ(flush.error, ata::kErrorAbrt);
  now = flush.t_complete;
  Completion c;
  int aborted = 0;
  while (d.pop_completion(c)) {
    aborted += c.aborted_by_ncq_error;
    EXPECT_EQ(c.t_complete, flush.t_complete);  // aborted when the error was reported
  }
  EXPECT_EQ(aborted, 4);
  NcqLog log = read_ncq_log(d, now);
  EXPECT_TRUE(log.nq);  // the failing command was not a queued one
}

TEST(Ncq, FuaWriteCompletesOnlyWhenDurable) {
  Drive d(tiny());
  SimTime now = 0;
  Completion plain = exec(d, write_fpdma(0, 0, 8, 1), now);
  Completion fua = exec(d, write_fpdma(1, 4096, 8, 2, true), now);
  EXPECT_LT(plain.t_complete - plain.t_arrive, d_us(50));
  EXPECT_GT(fua.t_complete - fua.t_arrive, d.config().timing.program_ns);
}

namespace {
// Clean-drive NCQ reads (4 KiB unless told) sent at t = 0, 1, 2 ... ns (no NAND: each is
// ready after the controller's overhead, one after another), as the Drive completes them.
std::vector<Completion> clean_reads(bool coalesce, int n, uint32_t sectors = 8) {
  Drive d(tiny());
  d.set_sdb_coalescing(coalesce);
  for (int i = 0; i < n; ++i) d.submit(read_fpdma(uint8_t(i), uint64_t(i) * sectors, sectors), SimTime(i));
  std::vector<Completion> out(static_cast<size_t>(n));
  Completion c;
  while (d.pop_completion(c)) out[c.tag] = c;
  return out;
}

// The same reads sent as the model target's engine sends them: an H2D wins the wire at the
// first idle instant and the device releases it at once (Drive::receive_h2d's cut_in,
// AtaCommand::release_sent). The first goes at 0, the second just before the first read's
// DMA Setup: it and its release push that data phase, and all after it, back on the wire
// (not on the device side's own wire: Drive::set_sdb_coalescing); the rest arrive with it.
std::vector<Completion> pushed_reads(bool coalesce, int n, uint32_t sectors = 8) {
  Drive d(tiny());
  d.set_sdb_coalescing(coalesce);
  const SimTime setup = d.link_timing().fis_ns(drive::fis_dwords::kDmaSetup);
  SimTime arrive = 0;
  for (int i = 0; i < n; ++i) {
    AtaCommand cmd = read_fpdma(uint8_t(i), uint64_t(i) * sectors, sectors);
    cmd.release_sent = true;
    const uint64_t seq = d.next_completion_seq();
    if (i < 2) arrive = d.receive_h2d(arrive, true);
    d.submit(cmd, arrive);
    if (i == 0) arrive = d.pending_completion(seq)->t_data_start - setup - 1;  // the next H2D's
  }
  std::vector<Completion> out(static_cast<size_t>(n));
  Completion c;
  while (d.pop_completion(c)) out[c.tag] = c;
  return out;
}
}  // namespace

// Set Device Bits as the RTL device side sends them (sim/device command_status.cc), when the
// host asks (the model target does): a good status that would go while the next command's
// data phase is due waits for that phase, and both go in one SDB at its end. The device
// side takes a read's data as due where the Drive inside it books the read's DMA Setup on a
// wire of the device's own FISes (an SDB for every command, none of the host's FISes), so
// after the status before it: a status waits only where the host's FISes have put the wire
// an SDB or more behind that one. Without sharing each status goes at its own data's end
// and the next data phase after it.
TEST(Ncq, AStatusWaitsForTheNextDueDataPhaseAndSharesItsSdb) {
  const drive::LinkTiming wire(tiny().interface);
  const SimTime sdb = wire.fis_ns(drive::fis_dwords::kSetDeviceBits);
  const SimTime setup = wire.fis_ns(drive::fis_dwords::kDmaSetup);

  std::vector<Completion> apart = clean_reads(false, 2);
  EXPECT_EQ(apart[0].t_complete, apart[0].t_data_end + sdb);
  EXPECT_EQ(apart[1].t_data_start, apart[0].t_complete + setup);  // ready before, waits for the SDB
  // Nothing of the host's on the wire: the second read's data is due after the first's
  // status, which goes alone, though the data was in the controller long before.
  std::vector<Completion> alone = clean_reads(true, 2);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(alone[i].t_complete, apart[i].t_complete);

  std::vector<Completion> pushed = pushed_reads(false, 2);
  EXPECT_GT(pushed[0].t_data_end, apart[0].t_data_end + sdb);  // the H2D pushed it an SDB and more
  std::vector<Completion> shared = pushed_reads(true, 2);
  EXPECT_EQ(shared[0].t_data_end, pushed[0].t_data_end);
  EXPECT_EQ(shared[1].t_data_start, shared[0].t_data_end + setup);  // goes where the status was
  EXPECT_EQ(shared[1].t_complete, shared[1].t_data_end + sdb);
  EXPECT_EQ(shared[0].t_complete, shared[1].t_complete);  // one SDB for both
  EXPECT_GT(shared[0].t_complete - sdb, shared[0].t_data_end + drive::kSdbCoalesceNs);  // it waited a whole phase
  EXPECT_EQ(shared[1].t_complete, pushed[1].t_complete - sdb);  // the wire carried one SDB fewer
}

// Only a data phase of one Data FIS holds a status back: behind a 128 KiB one (16 Data FISes)
// it would wait the whole transfer, so it goes at its own data's end, as without sharing.
TEST(Ncq, AStatusDoesNotWaitBehindADataPhaseOfMoreThanOneDataFis) {
  const drive::LinkTiming wire(tiny().interface);
  const SimTime sdb = wire.fis_ns(drive::fis_dwords::kSetDeviceBits);
  std::vector<Completion> apart = pushed_reads(false, 2, 256);
  std::vector<Completion> c = pushed_reads(true, 2, 256);
  EXPECT_EQ(c[0].t_complete, c[0].t_data_end + sdb);
  EXPECT_LT(c[0].t_complete, c[1].t_complete);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(c[i].t_complete, apart[i].t_complete);
  std::vector<Completion> one_fis = pushed_reads(true, 2, 16);  // 8 KiB: still shares
  EXPECT_EQ(one_fis[0].t_complete, one_fis[1].t_complete);
}

// A status waits at most once: one already held back (over kSdbCoalesceNs old when it would
// go) goes before the next due data phase, as the device side sends it; so statuses pair up
// while the wire stays an SDB or more behind the device side's own (each pair makes up one).
TEST(Ncq, AStatusHeldBackOnceGoesBeforeTheNextDataPhase) {
  const drive::LinkTiming wire(tiny().interface);
  const SimTime sdb = wire.fis_ns(drive::fis_dwords::kSetDeviceBits);
  const SimTime setup = wire.fis_ns(drive::fis_dwords::kDmaSetup);
  std::vector<Completion> c = pushed_reads(true, 4);
  EXPECT_EQ(c[0].t_complete, c[1].t_complete);
  EXPECT_EQ(c[2].t_data_start, c[1].t_complete + setup);  // after the pair's SDB
  EXPECT_EQ(c[2].t_complete, c[3].t_complete);
  EXPECT_EQ(c[3].t_complete, c[3].t_data_end + sdb);
}

// The host's FIS wins the wire at the first instant the device is not sending (as on the
// rig's wire), however soon the device's next booked FIS starts; what it pushes moves
// later as far as the gaps after it do not absorb.
TEST(LinkTiming, AHostFisCutsInAtTheFirstIdleInstantAndPushesWhatFollows) {
  drive::LinkTiming w(tiny().interface);
  w.reserve(100, 50);   // [100, 150)
  w.reserve(160, 40);   // [160, 200)
  w.reserve(210, 10);   // [210, 220)
  w.reserve(400, 10);   // [400, 410)
  std::vector<drive::LinkTiming::Move> moves;
  // Busy at 120: it goes at 150, the end of that FIS; 30 dwords' time push [160, 200) by 20
  // to [180, 220), the 10 of gap before [210, 220) take 10 of those 20 off it.
  EXPECT_EQ(w.cut_in(120, 30, moves), 150);
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(moves[0].from, 160);
  EXPECT_EQ(moves[0].to, 200);
  EXPECT_EQ(moves[0].by, 20);
  EXPECT_EQ(moves[1].from, 210);
  EXPECT_EQ(moves[1].by, 10);
  EXPECT_EQ(drive::LinkTiming::moved(moves, 140), 140);  // before it: where it was
  EXPECT_EQ(drive::LinkTiming::moved(moves, 200), 220);
  EXPECT_EQ(drive::LinkTiming::moved(moves, 215), 225);
  EXPECT_EQ(drive::LinkTiming::moved(moves, 300), 300);  // in the gap that absorbed it
  EXPECT_EQ(w.first_fit(100, 1), 230);  // [100, 230) is one busy stretch now
  EXPECT_EQ(w.free_at(), 410);
  // Idle at 300: it goes at once, and nothing needed to move.
  EXPECT_EQ(w.cut_in(300, 20, moves), 300);
  EXPECT_TRUE(moves.empty());
  EXPECT_EQ(w.first_fit(250, 60), 320);
}

// A queued H2D the host sends (with its release) into a gap too short for both: it goes, and
// the data phase the drive had booked after the gap moves later, its completion's stamps
// with it; waiting for a gap that holds it, it went after that command's status instead.
TEST(Ncq, AQueuedH2dInAShortGapGoesAndMovesTheBookedDataPhase) {
  const drive::LinkTiming wire(tiny().interface);
  const SimTime h2d = wire.fis_ns(drive::fis_dwords::kRegH2D);
  const SimTime d2h = wire.fis_ns(drive::fis_dwords::kRegD2H);
  const SimTime setup = wire.fis_ns(drive::fis_dwords::kDmaSetup);
  for (bool cut_in : {false, true}) {
    Drive d(tiny());
    AtaCommand first = read_fpdma(0, 0, 8);
    first.release_sent = cut_in;
    SimTime arrive = d.receive_h2d(0, cut_in);
    uint64_t seq = d.next_completion_seq();
    d.submit(first, arrive);
    const Completion before = *d.pending_completion(seq);
    EXPECT_EQ(before.t_accept, arrive + d2h);
    // The host's next H2D starts 10 ns before the DMA Setup would.
    SimTime t = before.t_data_start - setup - 10;
    SimTime second = d.receive_h2d(t, cut_in);
    const Completion& after = *d.pending_completion(seq);
    if (cut_in) {
      EXPECT_EQ(second, t + h2d);
      SimTime by = h2d + d2h - 10;
      ASSERT_EQ(d.wire_moves().size(), 1u);
      EXPECT_EQ(d.wire_moves()[0].by, by);
      EXPECT_EQ(after.t_data_start, before.t_data_start + by);
      EXPECT_EQ(after.t_data_end, before.t_data_end + by);
      EXPECT_EQ(after.t_complete, before.t_complete + by);
      AtaCommand next = read_fpdma(1, 64, 8);
      next.release_sent = true;
      uint64_t seq2 = d.next_completion_seq();
      d.submit(next, second);
      EXPECT_EQ(d.pending_completion(seq2)->t_accept, second + d2h);  // released at once
      EXPECT_GE(d.pending_completion(seq2)->t_data_start, after.t_complete + setup);
    } else {
      EXPECT_TRUE(d.wire_moves().empty());
      EXPECT_EQ(after.t_complete, before.t_complete);
      EXPECT_EQ(second, before.t_complete + h2d);  // after the whole booked command
    }
  }
}
