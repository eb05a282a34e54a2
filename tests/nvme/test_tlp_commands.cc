// Commands through the simulated controller at its link's TLP interface (tlp_device.h), with
// a host played at the link as the rig's root port and memory will be: it answers the
// device's reads from its memory after a read latency, takes its writes, and sees MSI-X
// messages arrive. The controller enumerated and brought up, I/O queues made by admin
// commands, then writes and reads of 4 KiB and 128 KiB (a PRP list) whose data crosses the
// link both ways and reads back the same; the TLPs' order per command (SQE fetch, data, CQE,
// MSI-X), their sizes (Max_Read_Request_Size, Max_Payload_Size), and nothing malformed.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "fisrig/nvme/queue_host.h"
#include "fisrig/nvme/tlp_device.h"
#include "config_tlp.h"
#include "rig_plan.h"

extern "C" {
#include "fisrig/nvme.h"
#include "fisrig/pcie_enum.h"
}

namespace {

using namespace fisrig::nvme;

constexpr uint64_t kBar = 0x4000'0000, kAsq = 0x10000, kAcq = 0x11000, kSq1 = 0x20000, kCq1 = 0x21000;
constexpr uint32_t kMsiAddress = 0x0F00'0000;
constexpr SimTime kReadLatency = 600;  // the rig's memory behind its root port, as the model's

fisrig::drive::DriveConfig tiny(SimTime boot_ns = fisrig::drive::kNever) {
  fisrig::drive::DriveConfig c = fisrig::drive::load_profile("tiny-1gb");
  c.faults.boot_ns = boot_ns;
  return c;
}

struct Host {
  explicit Host(fisrig::drive::DriveConfig cfg = tiny()) : dev(std::move(cfg)) {}
  TlpDevice dev;
  SparseMemory mem;
  SimTime now = 1000;
  std::multimap<SimTime, std::vector<uint8_t>> to_dev;  // by the time the TLP's last byte reaches the device
  std::vector<std::pair<SimTime, uint32_t>> msix;        // messages: arrival, data
  std::vector<std::pair<SimTime, Tlp>> from_dev;         // every TLP the device sent, at its start
  std::map<uint8_t, Tlp> cpls;                           // completions to the host's own reads, by tag
  SimTime last_cqe_in = 0;                               // when the last CQE's write was in
  uint8_t tag = 0;
  uint16_t sq_tail[2] = {0, 0}, cq_head[2] = {0, 0};
  bool phase[2] = {true, true};

  SimTime down_free = 0;  // where the last TLP to the device ends on the link

  static SimTime wire(size_t bytes) { return SimTime((bytes + 8) / 2); }  // Gen2 x4: 0.5 ns a byte
  // A TLP to the device from `ready` on, after the one before it on the link: when it is in.
  void down(std::vector<uint8_t> b, SimTime ready) {
    down_free = std::max(ready, down_free) + wire(b.size());
    to_dev.emplace(down_free, std::move(b));
  }
  void to_device(const Tlp& t) { down(encode(t), now); }
  // The device's TLP, its first byte at `start`: the host takes it when its last is in.
  void take(SimTime start, const Tlp& t) {
    from_dev.emplace_back(start, t);
    const SimTime in = start + wire(encode(t).size());
    if (t.fmt_type == FISRIG_PCIE_TLP_MWR32 || t.fmt_type == FISRIG_PCIE_TLP_MWR64) {
      if (t.address == kMsiAddress)
        msix.emplace_back(in, t.dword(0));
      else
        mem.write(t.address, t.data.data(), t.data.size());
      if (t.data.size() == FISRIG_NVME_CQE_BYTES && (t.address & ~0xFFFull) == (t.address >= kCq1 ? kCq1 : kAcq))
        last_cqe_in = in;
    } else if (t.fmt_type == FISRIG_PCIE_TLP_MRD32 || t.fmt_type == FISRIG_PCIE_TLP_MRD64) {
      Tlp c;
      c.fmt_type = FISRIG_PCIE_TLP_CPLD;
      c.length = t.length;
      c.requester_id = t.requester_id;
      c.tag = t.tag;
      c.byte_count = uint16_t(t.length * 4);
      c.lower_address = uint8_t(t.address & 0x7F);
      c.data.resize(t.length * 4u);
      mem.read(t.address, c.data.data(), c.data.size());
      down(encode(c), in + kReadLatency);
    } else if (t.is_completion()) {
      cpls[t.tag] = t;
    }
  }
  // Time runs to `until`: TLPs reach the device and the device's reach the host as they come.
  void run(SimTime until) {
    while (now < until) {
      SimTime next = std::min({until, dev.next_event(), to_dev.empty() ? until : to_dev.begin()->first});
      now = std::max(next, now + 1);
      while (!to_dev.empty() && to_dev.begin()->first <= now) {
        dev.receive(to_dev.begin()->second, to_dev.begin()->first);
        to_dev.erase(to_dev.begin());
      }
      std::vector<uint8_t> b;
      SimTime start;
      while (dev.transmit(now, b, start)) {
        Tlp t;
        ASSERT_TRUE(decode(b.data(), b.size(), t));
        take(start, t);
      }
    }
  }
  // Requests of the host's own, answered.
  Tlp request(Tlp t) {
    t.tag = tag++;
    to_device(t);
    for (int k = 0; k < 100 && !cpls.count(t.tag); ++k)
      run(now + 100);
    EXPECT_TRUE(cpls.count(t.tag));
    Tlp c = cpls[t.tag];
    cpls.erase(t.tag);
    return c;
  }
  void write32(uint64_t address, uint32_t value) {
    Tlp t;
    t.fmt_type = FISRIG_PCIE_TLP_MWR32;
    t.length = 1;
    t.first_be = 0xF;
    t.address = address;
    append_le32(t.data, value);
    to_device(t);
    run(now + 50);
  }
  uint32_t read32(uint64_t address) {
    Tlp t;
    t.fmt_type = FISRIG_PCIE_TLP_MRD32;
    t.length = 1;
    t.first_be = 0xF;
    t.address = address;
    return request(t).dword(0);
  }
  static unsigned cfg(void* ctx, bool write, uint8_t bus, uint8_t d, uint8_t f, uint16_t offset, uint32_t* value) {
    Host& h = *static_cast<Host*>(ctx);
    Tlp c = h.request(fisrig::test::config_request(write, uint16_t(bus << 8 | d << 3 | f), offset, 0, write ? *value : 0));
    if (!write && c.status == FISRIG_PCIE_CPL_SC)
      *value = c.dword(0);
    return c.status;
  }
  static unsigned cfg_read(void* ctx, uint8_t b, uint8_t d, uint8_t f, uint16_t o, uint32_t* v) {
    return cfg(ctx, false, b, d, f, o, v);
  }
  static unsigned cfg_write(void* ctx, uint8_t b, uint8_t d, uint8_t f, uint16_t o, uint32_t v) {
    return cfg(ctx, true, b, d, f, o, &v);
  }
  static void mem_write(void* ctx, uint64_t a, uint32_t v) { static_cast<Host*>(ctx)->write32(a, v); }
  static void delay(void* ctx, uint32_t us) {
    Host& h = *static_cast<Host*>(ctx);
    h.run(h.now + SimTime(us) * 1000);
  }

  void bring_up() {
    fisrig_pcie_ops ops{this, cfg_read, cfg_write, mem_write, delay};
    fisrig_pcie_plan p = fisrig::test::rig_plan(kBar, 2, kMsiAddress);
    fisrig_pcie_function f;
    ASSERT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_OK);
    ASSERT_EQ(f.bar0, kBar);
    write32(kBar + FISRIG_NVME_REG_AQA, 15u << 16 | 15u);
    write32(kBar + FISRIG_NVME_REG_ASQ, uint32_t(kAsq));
    write32(kBar + FISRIG_NVME_REG_ASQ + 4, 0);
    write32(kBar + FISRIG_NVME_REG_ACQ, uint32_t(kAcq));
    write32(kBar + FISRIG_NVME_REG_ACQ + 4, 0);
    write32(kBar + FISRIG_NVME_REG_CC, FISRIG_NVME_CC_EN | 6u << FISRIG_NVME_CC_IOSQES_SHIFT | 4u << FISRIG_NVME_CC_IOCQES_SHIFT);
    for (int k = 0; k < 50 && !(read32(kBar + FISRIG_NVME_REG_CSTS) & FISRIG_NVME_CSTS_RDY); ++k)
      run(now + 100'000);
    ASSERT_TRUE(read32(kBar + FISRIG_NVME_REG_CSTS) & FISRIG_NVME_CSTS_RDY);
    fisrig_nvme_sqe s{};
    s.opcode = FISRIG_NVME_ADMIN_SET_FEATURES;
    s.cdw10 = FISRIG_NVME_FEAT_NUMBER_OF_QUEUES;
    s.cdw11 = 0;  // one SQ and one CQ
    ASSERT_EQ(command(0, s).status >> 1, 0);
    s = {};
    s.opcode = FISRIG_NVME_ADMIN_CREATE_IO_CQ;
    s.prp1 = kCq1;
    s.cdw10 = 63u << 16 | 1;
    s.cdw11 = 1u << 16 | 2 | 1;  // vector 1, interrupts, contiguous
    ASSERT_EQ(command(0, s).status >> 1, 0);
    s = {};
    s.opcode = FISRIG_NVME_ADMIN_CREATE_IO_SQ;
    s.prp1 = kSq1;
    s.cdw10 = 63u << 16 | 1;
    s.cdw11 = 1u << 16 | 1;
    ASSERT_EQ(command(0, s).status >> 1, 0);
  }
  // One command on queue qid: its SQE written, the tail rung, its CQE waited for (and the
  // head rung after it).
  fisrig_nvme_cqe command(uint16_t qid, fisrig_nvme_sqe s, SimTime* latency = nullptr) {
    const uint64_t sq = qid ? kSq1 : kAsq, cq = qid ? kCq1 : kAcq;
    const uint16_t entries = qid ? 64 : 16;
    s.cid = uint16_t(0x100 * qid + sq_tail[qid]);
    mem.write(sq + uint64_t(sq_tail[qid]) * 64, &s, sizeof s);
    sq_tail[qid] = uint16_t((sq_tail[qid] + 1) % entries);
    const SimTime rung = now;
    write32(kBar + FISRIG_NVME_REG_DOORBELLS + 8u * qid, sq_tail[qid]);
    last_cqe_in = 0;
    fisrig_nvme_cqe e{};
    for (int k = 0; k < 20'000; ++k) {
      mem.read(cq + uint64_t(cq_head[qid]) * 16, &e, sizeof e);
      if (bool(e.status & FISRIG_NVME_STATUS_P) == phase[qid])
        break;
      run(now + 1000);
    }
    EXPECT_EQ(bool(e.status & FISRIG_NVME_STATUS_P), phase[qid]) << "no CQE";
    EXPECT_EQ(e.cid, s.cid);
    if (latency)
      *latency = last_cqe_in - rung;  // the doorbell's first byte out to the CQE's last in
    if (++cq_head[qid] == entries)
      cq_head[qid] = 0, phase[qid] = !phase[qid];
    write32(kBar + FISRIG_NVME_REG_DOORBELLS + 8u * qid + 4, cq_head[qid]);
    e.status &= uint16_t(~FISRIG_NVME_STATUS_P);
    return e;
  }
  static fisrig_nvme_sqe rw(uint8_t opcode, uint64_t slba, uint32_t blocks, uint64_t prp1, uint64_t prp2) {
    fisrig_nvme_sqe s{};
    s.opcode = opcode;
    s.nsid = 1;
    s.cdw10 = uint32_t(slba);
    s.cdw12 = blocks - 1;
    s.prp1 = prp1;
    s.prp2 = prp2;
    return s;
  }
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t k = 0; k < n; ++k)
    v[k] = uint8_t(k * 7 + seed + (k >> 9));
  return v;
}

TEST(TlpCommands, AdminAndIoCommandsMoveTheirDataOverTheLinkBothWays) {
  Host h;
  h.bring_up();
  // 4 KiB: PRP1 alone.
  std::vector<uint8_t> small = pattern(4096, 3), back(4096);
  h.mem.write(0x40000, small.data(), small.size());
  EXPECT_EQ(h.command(1, Host::rw(FISRIG_NVME_CMD_WRITE, 100, 8, 0x40000, 0)).status, 0);
  EXPECT_EQ(h.command(1, Host::rw(FISRIG_NVME_CMD_READ, 100, 8, 0x50000, 0)).status, 0);
  h.mem.read(0x50000, back.data(), back.size());
  EXPECT_EQ(back, small);
  // 128 KiB at an offset in its first page: PRP1, then a PRP list of 32 entries.
  const uint64_t offset = 512, bytes = 128 * 1024;
  std::vector<uint8_t> big = pattern(bytes, 9), got(bytes);
  auto list = [&](uint64_t list_at, uint64_t pages_at) {
    for (uint64_t k = 0; k < 32; ++k) {
      uint64_t page = pages_at + (k + 1) * 4096;
      h.mem.write(list_at + 8 * k, &page, 8);
    }
  };
  list(0x60000, 0x100000);
  uint64_t off = 0;
  for (uint64_t a = 0x100000 + offset; off < bytes; a = (a / 4096 + 1) * 4096) {
    uint64_t n = std::min<uint64_t>(bytes - off, 4096 - a % 4096);
    h.mem.write(a, big.data() + off, n);
    off += n;
  }
  EXPECT_EQ(h.command(1, Host::rw(FISRIG_NVME_CMD_WRITE, 2048, 256, 0x100000 + offset, 0x60000)).status, 0);
  list(0x61000, 0x200000);
  EXPECT_EQ(h.command(1, Host::rw(FISRIG_NVME_CMD_READ, 2048, 256, 0x200000 + offset, 0x61000)).status, 0);
  off = 0;
  for (uint64_t a = 0x200000 + offset; off < bytes; a = (a / 4096 + 1) * 4096) {
    uint64_t n = std::min<uint64_t>(bytes - off, 4096 - a % 4096);
    h.mem.read(a, got.data() + off, n);
    off += n;
  }
  size_t differ = 0;
  while (differ < bytes && got[differ] == big[differ])
    ++differ;
  EXPECT_EQ(differ, bytes) << "the 128 KiB read back differs from its byte " << differ;

  // Every TLP well formed and of the sizes set: reads of at most MRRS, writes of at most MPS.
  EXPECT_EQ(h.dev.malformed(), 0u);
  EXPECT_EQ(h.dev.unsupported(), 0u);
  EXPECT_EQ(h.dev.bad_completions(), 0u);
  EXPECT_EQ(h.dev.msix_masked(), 0u);
  size_t reads = 0, writes = 0;
  for (const auto& [t, tlp] : h.from_dev) {
    if (tlp.fmt_type == FISRIG_PCIE_TLP_MRD32) {
      ++reads;
      EXPECT_LE(tlp.length * 4u, 256u);
    }
    if (tlp.fmt_type == FISRIG_PCIE_TLP_MWR32) {
      ++writes;
      EXPECT_LE(tlp.data.size(), 256u);
    }
    if (tlp.is_memory()) {
      EXPECT_LE((tlp.address & 0xFFF) + tlp.length * 4u, 4096u) << "no request crosses a 4 KiB boundary";
    }
  }
  // 7 commands' SQEs; 4 KiB and 128 KiB of write data in 256-byte reads; the 128 KiB write's
  // and read's lists of 32 entries (256 bytes), a read each: 7 + 16 + 512 + 2.
  EXPECT_EQ(reads, 7u + 16 + 512 + 2);
  // The reads' data in writes of 256 bytes, none across a page: 16 for 4 KiB, 512 for 128 KiB
  // (its first page's 3.5 KiB in 14, 31 pages in 16 each, its last 512 bytes in 2); 7 CQEs; 7
  // MSI-X messages.
  EXPECT_EQ(h.msix.size(), 7u);
  for (size_t k = 0; k < h.msix.size(); ++k)
    EXPECT_EQ(h.msix[k].second, k < 3 ? 0u : 1u);  // the admin queue's vector, then queue 1's
  EXPECT_EQ(writes, 7u + 7 + 16 + 512);
}

TEST(TlpCommands, ACommandsTlpsComeInOrder) {
  Host h;
  h.bring_up();
  std::vector<uint8_t> data = pattern(4096, 5);
  h.mem.write(0x40000, data.data(), data.size());
  ASSERT_EQ(h.command(1, Host::rw(FISRIG_NVME_CMD_WRITE, 7, 8, 0x40000, 0)).status, 0);
  const size_t first = h.from_dev.size();
  SimTime latency = 0;
  ASSERT_EQ(h.command(1, Host::rw(FISRIG_NVME_CMD_READ, 7, 8, 0x50000, 0), &latency).status, 0);
  // The read's own TLPs: its SQE's read request, 16 data writes of 256 bytes, the CQE, the
  // MSI-X message, each after the one before.
  std::vector<std::pair<SimTime, Tlp>> mine(h.from_dev.begin() + std::ptrdiff_t(first), h.from_dev.end());
  ASSERT_EQ(mine.size(), 1u + 16 + 1 + 1);
  EXPECT_EQ(mine[0].second.fmt_type, FISRIG_PCIE_TLP_MRD32);
  EXPECT_EQ(mine[0].second.address, kSq1 + 64);
  for (int k = 1; k <= 16; ++k) {
    EXPECT_EQ(mine[size_t(k)].second.address, 0x50000u + 256u * (k - 1));
    EXPECT_EQ(mine[size_t(k)].second.data.size(), 256u);
  }
  EXPECT_EQ(mine[17].second.address, kCq1 + 16);
  EXPECT_EQ(mine[17].second.data.size(), 16u);
  EXPECT_EQ(mine[18].second.address, kMsiAddress);
  for (size_t k = 1; k < mine.size(); ++k)
    EXPECT_GE(mine[k].first, mine[k - 1].first);
  // Doorbell to CQE: the SSD's read of 4 KiB (from its write cache, just written) and the
  // link's time, under a millisecond.
  EXPECT_GT(latency, 2'000u);
  EXPECT_LT(latency, 1'000'000u);
}

}  // namespace

namespace {

// The same commands on the part-1 controller over its own link, costed TLP by TLP
// (pcie_link.h), set as the rig sets the link (Gen2 x4, 256-byte payloads and reads) with
// the rig's memory's read latency: each command's time from its doorbell to its CQE
// within 2% of the TLP device's, whose TLPs really cross (the targets agree, at the device).
TEST(TlpCommands, TakeTheTimeThePartOneModelGivesTheSameCommandsOnTheSameLink) {
  Host h;
  h.bring_up();
  fisrig::drive::DriveConfig profile = fisrig::drive::load_profile("tiny-1gb");
  profile.nvme.pcie_gen = 2, profile.nvme.pcie_lanes = 4;
  profile.nvme.max_payload = 256, profile.nvme.max_read_request = 256;
  NvmeConfig cfg;
  cfg.host_read_ns = kReadLatency;
  QueueHost model(profile, cfg);
  ASSERT_EQ(model.make_io_queues(1, 64), 0);
  // Buffers: 128 KiB at a page's start with a PRP list, then 4 KiB.
  for (uint64_t k = 0; k < 32; ++k) {
    uint64_t page = 0x100000 + (k + 1) * 4096;
    h.mem.write(0x60000 + 8 * k, &page, 8);
    model.mem.write(0x60000 + 8 * k, &page, 8);
  }
  std::vector<uint8_t> data = pattern(128 * 1024, 1);
  h.mem.write(0x100000, data.data(), data.size());
  model.mem.write(0x100000, data.data(), data.size());
  struct Case {
    const char* what;
    fisrig_nvme_sqe sqe;
  } cases[] = {
      {"128 KiB write", Host::rw(FISRIG_NVME_CMD_WRITE, 4096, 256, 0x100000, 0x60000)},
      {"128 KiB read", Host::rw(FISRIG_NVME_CMD_READ, 4096, 256, 0x100000, 0x60000)},
      {"4 KiB write", Host::rw(FISRIG_NVME_CMD_WRITE, 9000, 8, 0x100000, 0)},
      {"4 KiB read", Host::rw(FISRIG_NVME_CMD_READ, 9000, 8, 0x100000, 0)},
      {"4 KiB read, not written", Host::rw(FISRIG_NVME_CMD_READ, 500'000, 8, 0x100000, 0)},
  };
  for (const Case& c : cases) {
    h.run(h.now + 200'000);  // both idle before it
    SimTime tlp = 0;
    ASSERT_EQ(h.command(1, c.sqe, &tlp).status, 0) << c.what;
    model.now += 200'000;
    model.ctrl.run_until(model.now);
    const SimTime rung = model.now;
    fisrig_nvme_cqe e{};
    ASSERT_TRUE(model.run(1, c.sqe, e)) << c.what;
    NvmeCompletion done, last;
    while (model.ctrl.pop_completion(done))
      last = done;
    const SimTime part1 = last.t_cqe - rung;
    EXPECT_NEAR(double(tlp), double(part1), 0.02 * double(part1)) << c.what << ": TLP device " << tlp << " ns, part 1 "
                                                                  << part1 << " ns";
  }
}

}  // namespace

namespace {

// The rails cut with a write in the volatile cache: nothing is answered while they are off
// (a config read gets no completion), the function answers CRS after they are on until the
// SSD is up, then the rig enumerates and brings the controller up again; the write is lost
// and the cut counted unsafe, as part 1's controller has it.
TEST(TlpCommands, APowerCutSilencesTheDeviceAndItComesBackAsAfterAReset) {
  Host h(tiny(2'000'000));  // up 2 ms after power on
  h.bring_up();
  std::vector<uint8_t> data = pattern(4096, 11), back(4096);
  h.mem.write(0x40000, data.data(), data.size());
  ASSERT_EQ(h.command(1, Host::rw(FISRIG_NVME_CMD_WRITE, 100, 8, 0x40000, 0)).status, 0);
  h.dev.power(false, h.now);
  Tlp id = fisrig::test::config_request(false, 0x0100, 0, 200);
  h.to_device(id);
  h.run(h.now + 100'000);
  EXPECT_FALSE(h.cpls.count(200)) << "no answer with the rails off";
  EXPECT_EQ(h.dev.while_off(), 1u);
  h.dev.power(true, h.now);
  id.tag = 201;
  h.to_device(id);
  h.run(h.now + 10'000);
  ASSERT_TRUE(h.cpls.count(201));
  EXPECT_EQ(h.cpls[201].status, FISRIG_PCIE_CPL_CRS);
  h.sq_tail[0] = h.sq_tail[1] = h.cq_head[0] = h.cq_head[1] = 0;
  h.phase[0] = h.phase[1] = true;
  h.mem.write(kAcq, std::vector<uint8_t>(16 * 16, 0).data(), 16 * 16);  // the queues' memory, fresh
  h.mem.write(kCq1, std::vector<uint8_t>(64 * 16, 0).data(), 64 * 16);
  h.bring_up();  // enumerated again (CRS until 2 ms), enabled, queues made
  h.mem.write(0x50000, std::vector<uint8_t>(4096, 0xEE).data(), 4096);
  ASSERT_EQ(h.command(1, Host::rw(FISRIG_NVME_CMD_READ, 100, 8, 0x50000, 0)).status, 0);
  h.mem.read(0x50000, back.data(), back.size());
  EXPECT_NE(back, data) << "the volatile cache's write survived the cut";
  EXPECT_EQ(h.dev.controller().unsafe_shutdowns(), 1u);
  EXPECT_EQ(h.dev.malformed(), 0u);
}

}  // namespace
