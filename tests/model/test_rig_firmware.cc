// What the bare-metal and the Zephyr firmware share around the VM (firmware/core's
// rig_firmware.c): the record ring as a record sink, its waits for the host, the outcome and
// record lines, the mailbox a resident firmware serves. Built natively; the rig runs the same C.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

extern "C" {
#include "fisrig/rig_firmware.h"
}

namespace {

// The host's side of the ring for a test: each look at the clock moves it on 10 ticks and,
// when the ring is full, takes one record (as a host draining it would meanwhile).
struct Host {
  fisrig_record_ring* ring;
  uint64_t tick = 1000;
  uint32_t takes = 0;
  static uint64_t now(void* ctx) {
    auto* h = static_cast<Host*>(ctx);
    if (h->ring->tail - h->ring->head >= h->ring->entries) {
      h->ring->head = h->ring->head + 1;
      ++h->takes;
    }
    return h->tick += 10;
  }
};

fisrig_run_record record_of(uint32_t seq) {
  fisrig_run_record r;
  std::memset(&r, 0, sizeof r);
  r.seq = seq;
  r.lba = 0x0102030405060708ull + seq;
  return r;
}

// Main RAM after a program, for a test: 64-byte aligned storage, the area starting `skew`
// bytes into it.
struct Area {
  std::unique_ptr<fisrig_run_record[]> store;
  uint8_t* at;
  uint32_t bytes;
  Area(uint32_t records, uint32_t skew)
      : store(new fisrig_run_record[records + 2]),
        at(reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(store.get()) + 63) & ~uintptr_t{63}) + skew),
        bytes(records * static_cast<uint32_t>(sizeof(fisrig_run_record))) {}
};

TEST(RigFirmware, TheRecordsGoAfterTheProgramAlignedAsManyAsThePowerOfTwoThatFits) {
  auto ring = std::make_unique<fisrig_record_ring>();
  fisrig_fw_ring r{};
  r.ring = ring.get();
  Area area(300, 8);  // 300 records' bytes from 8 past a 64-byte boundary: 299 fit once aligned
  fisrig_fw_ring_reset(&r, area.at, area.bytes);
  EXPECT_EQ(ring->entries, 256u);
  EXPECT_EQ(r.entries, 256u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r.rec), reinterpret_cast<uintptr_t>(area.at) + 56);
  EXPECT_EQ(ring->records_at, static_cast<uint32_t>(reinterpret_cast<uintptr_t>(r.rec)));
  EXPECT_EQ(ring->tail, 0u);
  EXPECT_EQ(ring->head, 0u);
  // Exactly 256 once aligned still holds 256; one byte short, 128.
  fisrig_fw_ring_reset(&r, area.at + 56, 256 * sizeof(fisrig_run_record));
  EXPECT_EQ(ring->entries, 256u);
  fisrig_fw_ring_reset(&r, area.at + 56, 256 * sizeof(fisrig_run_record) - 1);
  EXPECT_EQ(ring->entries, 128u);
  // Less than a record after the rounding (a program that fills main RAM): no room.
  fisrig_fw_ring_reset(&r, area.at, 56 + sizeof(fisrig_run_record) - 1);
  EXPECT_EQ(ring->entries, 0u);
  fisrig_fw_ring_reset(&r, area.at, 0);
  EXPECT_EQ(ring->entries, 0u);
}

TEST(RigFirmware, TheRingIsPlacedAfterTheProgramInItsRoom) {
  auto ring = std::make_unique<fisrig_record_ring>();
  fisrig_fw_ring r{};
  r.ring = ring.get();
  Area area(300, 0);  // the program area, from a 64-byte boundary
  // A 56-byte program: the records from the next boundary (area + 64), 256 of them.
  fisrig_fw_ring_place(&r, area.at, 56, area.bytes);
  EXPECT_EQ(ring->entries, 256u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r.rec), reinterpret_cast<uintptr_t>(area.at) + 64);
  // A room a byte short of that: 128.
  fisrig_fw_ring_place(&r, area.at, 56, 64 + 256 * sizeof(fisrig_run_record) - 1);
  EXPECT_EQ(ring->entries, 128u);
  // A program that takes the room, or claims more than it: no records, and nothing past the room.
  fisrig_fw_ring_place(&r, area.at, area.bytes, area.bytes);
  EXPECT_EQ(ring->entries, 0u);
  fisrig_fw_ring_place(&r, area.at, area.bytes + 4096, area.bytes);
  EXPECT_EQ(ring->entries, 0u);
}

TEST(RigFirmware, TheRecordRingTakesRecordsInOrderAndWaitsForTheHostWhenFull) {
  auto ring = std::make_unique<fisrig_record_ring>();
  Host host{ring.get()};
  fisrig_fw_ring r{};
  r.ring = ring.get();
  r.now = Host::now;
  r.now_ctx = &host;
  Area area(64, 0);
  fisrig_fw_ring_reset(&r, area.at, area.bytes);
  ASSERT_EQ(ring->entries, 64u);
  fisrig_record_sink sink = fisrig_fw_ring_sink(&r);
  const uint32_t n = 64 + 5;
  for (uint32_t i = 0; i < n; ++i) {
    if (i % 2) {
      fisrig_run_record rec = record_of(i);
      ASSERT_EQ(sink.emit(sink.ctx, &rec), 0) << i;
    } else {
      fisrig_run_record* slot = sink.place(sink.ctx);
      ASSERT_NE(slot, nullptr) << i;
      *slot = record_of(i);
      ASSERT_EQ(sink.placed(sink.ctx), 0) << i;
    }
  }
  EXPECT_EQ(ring->tail, n);
  EXPECT_EQ(r.records, n);
  // The five past a full ring each waited for the host to take one, a look at the clock
  // before and one after: 10 ticks each.
  EXPECT_EQ(r.waits, 5u);
  EXPECT_EQ(host.takes, 5u);
  EXPECT_EQ(r.wait_ticks, 50u);
  const auto* rec = reinterpret_cast<const fisrig_run_record*>(area.at);
  for (uint32_t i = n - 64; i < n; ++i) EXPECT_EQ(rec[i % 64].seq, i);
}

TEST(RigFirmware, AStopEndsAWaitForTheHostAndTheRecordIsRefused) {
  auto ring = std::make_unique<fisrig_record_ring>();
  volatile int stop = 0;
  auto never_drains = [](void*) -> uint64_t { return 7; };
  fisrig_fw_ring r{};
  r.ring = ring.get();
  r.now = never_drains;
  r.stop = &stop;
  Area area(16, 0);
  fisrig_record_sink sink = fisrig_fw_ring_sink(&r);
  fisrig_run_record rec = record_of(1);
  for (uint32_t bytes : {area.bytes, 0u}) {  // full, and nobody takes any; and no room at all
    fisrig_fw_ring_reset(&r, area.at, bytes);
    ring->tail = ring->entries;
    r.tail = ring->entries;
    stop = 1;
    EXPECT_EQ(sink.place(sink.ctx), nullptr) << bytes;
    EXPECT_NE(sink.emit(sink.ctx, &rec), 0) << bytes;
    EXPECT_EQ(ring->tail, ring->entries) << bytes;
    EXPECT_EQ(r.waits, 0u) << bytes;  // a wait that ended in a stop is not one the run waited out
  }
}

TEST(RigFirmware, TheOutcomeLineIsTheModelsJsonWithTheWaits) {
  fisrig_vm vm;
  std::memset(&vm, 0, sizeof vm);
  vm.commands = 5000000000ull;
  vm.errors = 3;
  vm.error_offset = 12;
  vm.error_text = "expected status 0x50";
  fisrig_fw_run run{FISRIG_VM_EXPECT_FAILED, nullptr, 18446744073709551615ull, 0, 2, 4, 123456789012ull};
  char out[FISRIG_OUTCOME_BYTES];
  int n = fisrig_fw_outcome_line(out, sizeof out, &vm, &run);
  EXPECT_EQ(std::string(out),
            "{\"status\": \"expect_failed\", \"records\": 18446744073709551615, \"commands\": 5000000000, "
            "\"errors\": 3, \"sim_ns\": 0, \"wall_s\": 0, \"error_offset\": 12, \"error\": \"expected status 0x50\", "
            "\"start_late_ticks\": 2, \"ring_waits\": 4, \"ring_wait_ticks\": 123456789012}");
  EXPECT_EQ(n, static_cast<int>(std::strlen(out)));
  run.error = "program too large";
  fisrig_fw_outcome_line(out, sizeof out, &vm, &run);
  EXPECT_NE(std::string(out).find("\"error\": \"program too large\""), std::string::npos);
}

TEST(RigFirmware, ARecordLineIsItsBytesInHex) {
  fisrig_run_record r = record_of(0x11223344);
  char line[FISRIG_FW_RECORD_LINE_BYTES];
  fisrig_fw_record_line(line, &r);
  std::string s(line);
  ASSERT_EQ(s.size(), 2 + 2 * sizeof r);
  EXPECT_EQ(s.substr(0, 2), "R ");
  const auto* b = reinterpret_cast<const uint8_t*>(&r);
  for (size_t i = 0; i < sizeof r; ++i)
    EXPECT_EQ(std::stoul(s.substr(2 + 2 * i, 2), nullptr, 16), b[i]) << i;
}

TEST(RigFirmware, TheBusProfileIsADifferenceACommandAcrossTheCountersWrap) {
  fisrig_fw_bus before{0xFFFFFF00u, 10, 20, 30, 40};
  fisrig_fw_bus after{0x00000F00u + 0xFFFFFF00u + 0x100u, 10 + 400, 20 + 800, 30 + 1200, 40 + 1600};
  char out[200];
  fisrig_fw_bus_line(out, sizeof out, &before, &after, 4);
  EXPECT_EQ(std::string(out),
            "fisrig firmware: cpu cycles a command 1024; instruction bus 100 words, 200 cycles busy; "
            "data bus 300 words, 400 cycles busy");
  fisrig_fw_bus_line(out, sizeof out, &before, &before, 0);  // no command: no division by zero
  EXPECT_NE(std::string(out).find("cpu cycles a command 0;"), std::string::npos);
}

TEST(RigFirmware, TheMailboxTakesAGoOnlyAndHandsTheOutcomeBack) {
  auto ring = std::make_unique<fisrig_record_ring>();
  fisrig_mailbox mb;
  std::memset(&mb, 0xEE, sizeof mb);
  fisrig_fw_mailbox_open(&mb, ring.get(), 4096);
  EXPECT_EQ(mb.magic, FISRIG_MAILBOX_MAGIC);
  EXPECT_EQ(mb.state, FISRIG_MAILBOX_IDLE);
  EXPECT_EQ(mb.ring_at, static_cast<uint32_t>(reinterpret_cast<uintptr_t>(ring.get())));
  EXPECT_EQ(mb.program_room, 4096u);
  EXPECT_EQ(mb.runs, 0u);
  EXPECT_EQ(fisrig_fw_mailbox_take(&mb), -1);  // nothing asked
  mb.program_bytes = 300;
  mb.state = FISRIG_MAILBOX_GO;
  // Taken, but the host sees GO until the firmware has placed the ring for the program.
  EXPECT_EQ(fisrig_fw_mailbox_take(&mb), 300);
  EXPECT_EQ(mb.state, FISRIG_MAILBOX_GO);
  fisrig_fw_mailbox_running(&mb);
  EXPECT_EQ(mb.state, FISRIG_MAILBOX_RUNNING);
  EXPECT_EQ(fisrig_fw_mailbox_take(&mb), -1);  // running: no second take
  std::string long_outcome(FISRIG_OUTCOME_BYTES + 50, 'x');
  fisrig_fw_mailbox_done(&mb, long_outcome.c_str());
  EXPECT_EQ(mb.state, FISRIG_MAILBOX_DONE);
  EXPECT_EQ(mb.runs, 1u);
  EXPECT_EQ(std::strlen(mb.outcome), FISRIG_OUTCOME_BYTES - 1u);  // cut, never past the mailbox
}

TEST(RigFirmware, AMailboxRunStartsInPhaseWithABootedRun) {
  const uint64_t p = FISRIG_RUN_PHASE_TICKS;
  const uint64_t booted = FISRIG_RUN_START_TICK;
  // In phase: a whole number of phases after the booted run's tick, at least the margin ahead.
  for (uint64_t now : {booted + 1, booted + p - 512, booted + p - 511, booted + 123456789, uint64_t{5}}) {
    uint64_t t = fisrig_fw_mailbox_start_tick(now, 512);
    EXPECT_EQ((t - booted) % p, 0u) << now;
    EXPECT_GE(t, now + 512) << now;
    EXPECT_LT(t, now + 512 + p) << now;  // the first such tick, never a phase more
  }
  EXPECT_EQ(fisrig_fw_mailbox_start_tick(booted + p - 512, 512), booted + p);  // exactly on it
  EXPECT_EQ(fisrig_fw_mailbox_start_tick(booted + p - 511, 512), booted + 2 * p);
}

}  // namespace
