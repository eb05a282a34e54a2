// The NVM commands over the SSD: data through PRPs, deallocation, Write Zeroes, Compare,
// the volatile write cache across a power cut, and every status their checks give.
#include <numeric>

#include "nvme_host.h"

namespace fisrig::test {
namespace {

constexpr int kOk = 0;

std::vector<uint8_t> pattern(size_t bytes, uint8_t seed) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = uint8_t(seed + i * 7 + (i >> 9));
  return v;
}

// A buffer at `addr` + `offset` of `bytes` laid out over scattered pages, described by PRP1
// and a PRP list (chained when it runs past one page of entries): what a driver builds.
struct Prps {
  uint64_t prp1, prp2;
  std::vector<uint64_t> pages;  // where each piece went, in order
};
Prps scatter(NvmeHost& h, uint64_t bytes, uint64_t offset) {
  Prps p{};
  uint64_t first = std::min<uint64_t>(bytes, 4096 - offset);
  p.prp1 = kData + 0x100000 + offset;  // page 0x1100
  p.pages.push_back(p.prp1);
  uint64_t left = bytes - first;
  std::vector<uint64_t> rest;
  for (uint64_t i = 0; left; ++i, left -= std::min<uint64_t>(left, 4096)) rest.push_back(kData + 0x400000 + (2 * i + 1) * 4096);
  p.pages.insert(p.pages.end(), rest.begin(), rest.end());
  if (rest.size() == 1) p.prp2 = rest[0];
  else if (rest.size() > 1) {
    // Lists of 4 entries (the last chaining) at 0x2000000, 0x2001000, ...: a list may end
    // anywhere in a page; here each starts 4 KiB - 32 bytes in, so its fourth slot chains.
    uint64_t list = kData + 0x1000000 + 4096 - 32;
    p.prp2 = list;
    for (size_t i = 0; i < rest.size();) {
      size_t room = 4, take = rest.size() - i <= room ? rest.size() - i : room - 1;
      for (size_t k = 0; k < take; ++k) h.mem.write(list + 8 * k, &rest[i + k], 8);
      i += take;
      if (i < rest.size()) {
        uint64_t next = list + 0x1000;
        h.mem.write(list + 8 * take, &next, 8);
        list = next;
      }
    }
  }
  return p;
}

TEST(NvmeIo, AWriteReadsBackThroughPrpListsAcrossPages) {
  NvmeHost h;
  h.make_io_queues(1, 64);
  const uint32_t blocks = 128;  // 64 KiB, starting 512 bytes into a page: 17 pieces
  auto data = pattern(blocks * 512, 3);
  Prps w = scatter(h, data.size(), 512);
  size_t at = 0;
  for (uint64_t a : w.pages) {
    size_t n = std::min<size_t>(data.size() - at, 4096 - a % 4096);
    h.mem.write(a, data.data() + at, n);
    at += n;
  }
  ASSERT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_WRITE, 1000, blocks, w.prp1, w.prp2))), kOk);
  // Read back into one contiguous buffer (PRP2 a list again: 16 more pages).
  std::vector<uint64_t> list;
  for (int i = 1; i <= 16; ++i) list.push_back(kData + 0x3000000 + i * 4096ull);
  h.mem.write(kData + 0x2800000, list.data(), list.size() * 8);
  ASSERT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, 1000, blocks, kData + 0x3000000 + 3584, kData + 0x2800000))), kOk);
  std::vector<uint8_t> back(data.size());
  h.mem.read(kData + 0x3000000 + 3584, back.data(), back.size());
  EXPECT_EQ(back, data);
}

TEST(NvmeIo, ABadPrpOffsetIsRefused) {
  NvmeHost h;
  h.make_io_queues(1, 8);
  EXPECT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, 0, 8, kData + 2))),  // not dword aligned
            NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_PRP_OFFSET));
  EXPECT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, 0, 16, kData, kData + 0x10008))),  // second page not aligned
            NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_PRP_OFFSET));
}

TEST(NvmeIo, DeallocatedBlocksAndWriteZeroesReadZeros) {
  NvmeHost h;
  h.make_io_queues(1, 16);
  auto data = pattern(8 * 4096, 9);
  h.mem.write(kData, data.data(), 4096);
  for (uint64_t i = 0; i < 8; ++i) {
    h.mem.write(kData + 0x10000 + 4096 * i, data.data() + 4096 * i, 4096);
    ASSERT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_WRITE, 64 * i, 8, kData + 0x10000 + 4096 * i))), kOk);
  }
  // Deallocate block 64..71 (one range) and write zeroes over 128..135 with DEAC, 192.. without.
  uint8_t range[16] = {};
  uint32_t n = 8;
  uint64_t slba = 64;
  std::memcpy(range + 4, &n, 4);
  std::memcpy(range + 8, &slba, 8);
  h.mem.write(kData + 0x80000, range, 16);
  fisrig_nvme_sqe dsm = sqe(FISRIG_NVME_CMD_DATASET_MANAGEMENT, 1);
  dsm.cdw10 = 0, dsm.cdw11 = FISRIG_NVME_DSM_AD, dsm.prp1 = kData + 0x80000;
  ASSERT_EQ(h.status(h.run(1, dsm)), kOk);
  fisrig_nvme_sqe wz = rw(FISRIG_NVME_CMD_WRITE_ZEROES, 128, 8, 0);
  wz.cdw12 |= FISRIG_NVME_WRITE_ZEROES_DEAC;
  ASSERT_EQ(h.status(h.run(1, wz)), kOk);
  ASSERT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_WRITE_ZEROES, 192, 8, 0))), kOk);
  std::vector<uint8_t> zeros(4096, 0), back(4096);
  for (uint64_t lba : {64, 128, 192}) {
    h.mem.write(kData + 0x90000, pattern(4096, 1).data(), 4096);
    ASSERT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, lba, 8, kData + 0x90000))), kOk);
    h.mem.read(kData + 0x90000, back.data(), 4096);
    EXPECT_EQ(back, zeros) << lba;
  }
  ASSERT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, 0, 8, kData + 0x90000))), kOk);
  h.mem.read(kData + 0x90000, back.data(), 4096);
  EXPECT_EQ(back, std::vector<uint8_t>(data.begin(), data.begin() + 4096));  // untouched
  EXPECT_EQ(h.ctrl.ssd().ftl().valid_slots() > 0, true);
}

TEST(NvmeIo, CompareSaysWhetherTheBlocksMatch) {
  NvmeHost h;
  h.make_io_queues(1, 8);
  auto data = pattern(4096, 5);
  h.mem.write(kData, data.data(), 4096);
  ASSERT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_WRITE, 8, 8, kData))), kOk);
  EXPECT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_COMPARE, 8, 8, kData))), kOk);
  data[100] ^= 1;
  h.mem.write(kData, data.data(), 4096);
  EXPECT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_COMPARE, 8, 8, kData))),
            NvmeHost::sc(FISRIG_NVME_SCT_MEDIA, FISRIG_NVME_SC_COMPARE_FAILURE));
}

TEST(NvmeIo, EveryCheckEndsInItsStatus) {
  NvmeHost h;
  h.make_io_queues(1, 16);
  const uint64_t blocks = h.ctrl.ssd().visible_sectors();
  EXPECT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, blocks - 4, 8, kData))),
            NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_LBA_OUT_OF_RANGE));
  fisrig_nvme_sqe ns = rw(FISRIG_NVME_CMD_READ, 0, 8, kData);
  ns.nsid = 2;
  EXPECT_EQ(h.status(h.run(1, ns)), NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_NAMESPACE));
  EXPECT_EQ(h.status(h.run(1, sqe(0x7F, 1))), NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_OPCODE));
  fisrig_nvme_sqe sgl = rw(FISRIG_NVME_CMD_READ, 0, 8, kData);
  sgl.flags = 1u << 6;  // PSDT: an SGL, which this controller does not take
  EXPECT_EQ(h.status(h.run(1, sgl)), NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD));
  EXPECT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, 0, 1024, kData))),  // past MDTS (128 KiB)
            NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD));
  // A failing status says Do Not Retry.
  fisrig_nvme_cqe e = h.run(1, rw(FISRIG_NVME_CMD_READ, blocks, 1, kData));
  EXPECT_TRUE(e.status & FISRIG_NVME_STATUS_DNR);
}

TEST(NvmeIo, AnUnreadableBlockEndsTheReadUnrecovered) {
  NvmeHost h;
  h.ctrl.ssd().faults().set("unc", "100+1");
  h.make_io_queues(1, 8);
  EXPECT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, 96, 8, kData))),
            NvmeHost::sc(FISRIG_NVME_SCT_MEDIA, FISRIG_NVME_SC_UNRECOVERED_READ_ERROR));
  EXPECT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, 104, 8, kData))), kOk);
}

// What a cut keeps: the write cache's contents are lost without a flush or a normal
// shutdown, and the SMART log counts the unsafe shutdown.
std::vector<uint8_t> after_a_cut(bool shutdown_first, uint64_t* unsafe) {
  NvmeHost h;
  h.make_io_queues(1, 8);
  auto data = pattern(4096, 11);
  h.mem.write(kData, data.data(), 4096);
  EXPECT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_WRITE, 4096, 8, kData))), kOk);
  if (shutdown_first) {
    h.ctrl.write32(FISRIG_NVME_REG_CC, h.ctrl.read32(FISRIG_NVME_REG_CC) | FISRIG_NVME_SHN_NORMAL << FISRIG_NVME_CC_SHN_SHIFT, h.now);
    EXPECT_EQ(h.ctrl.shutdown_status(), FISRIG_NVME_SHST_OCCURRING);  // the cache drains first
    for (int ms = 0; ms < 10000 && h.ctrl.shutdown_status() != FISRIG_NVME_SHST_COMPLETE; ++ms)
      h.ctrl.run_until(h.now += drive::kNsPerMs);
    EXPECT_EQ(h.ctrl.shutdown_status(), FISRIG_NVME_SHST_COMPLETE);
  }
  h.ctrl.power_off(h.now + drive::kNsPerUs);
  h.now += drive::kNsPerS;
  h.ctrl.power_on(h.now);
  h.now += drive::kNsPerS;
  h.enable();
  h.make_io_queues(1, 8);
  EXPECT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, 4096, 8, kData + 0x10000))), kOk);
  std::vector<uint8_t> back(4096);
  h.mem.read(kData + 0x10000, back.data(), 4096);
  *unsafe = h.ctrl.unsafe_shutdowns();
  return back;
}

TEST(NvmeIo, PowerLossProtectionMeansNoVolatileCacheAndNothingLost) {
  drive::DriveConfig cfg = drive::load_profile("tiny-1gb");
  cfg.power.plp = true;
  NvmeHost h(cfg);
  h.make_io_queues(1, 8);
  EXPECT_EQ(h.ctrl.identify_controller()[525], 0);  // VWC: none volatile
  fisrig_nvme_sqe vwc = sqe(FISRIG_NVME_ADMIN_SET_FEATURES);
  vwc.cdw10 = FISRIG_NVME_FEAT_VOLATILE_WRITE_CACHE, vwc.cdw11 = 0;
  EXPECT_EQ(h.status(h.admin(vwc)), NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD));
  auto data = pattern(4096, 13);
  h.mem.write(kData, data.data(), 4096);
  ASSERT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_WRITE, 4096, 8, kData))), kOk);
  h.ctrl.power_off(h.now + drive::kNsPerUs);  // no shutdown: still counted unsafe
  h.ctrl.power_on(h.now += drive::kNsPerS);
  h.now += drive::kNsPerS;
  h.enable();
  h.make_io_queues(1, 8);
  ASSERT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, 4096, 8, kData + 0x10000))), kOk);
  std::vector<uint8_t> back(4096);
  h.mem.read(kData + 0x10000, back.data(), 4096);
  EXPECT_EQ(back, data);
  EXPECT_EQ(h.ctrl.unsafe_shutdowns(), 1u);
}

// The enterprise profile (power-loss protection, AWUPF 7) cut down to 48 GB (its superblocks are 1 GiB), with a 4 KiB
// write done and a 128 KiB one (B) submitted: B's data crosses the link from `first` to
// `last` (its data TLPs, from a twin that ran it whole).
struct WriteInFlight {
  SimTime first = 0, last = 0, cqe = 0;
};
drive::DriveConfig enterprise() {
  return drive::scale_capacity(drive::load_profile("enterprise-tlc-nvme-1920gb"), 48);
}
void write_a_then_submit_b(NvmeHost& h) {
  h.make_io_queues(1, 8);
  auto a = pattern(4096, 21), b = pattern(128 * 1024, 22);
  h.mem.write(kData, a.data(), a.size());
  ASSERT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_WRITE, 0, 8, kData))), kOk);
  h.mem.write(kData + 0x100000, b.data(), b.size());
  // B's PRP list: 31 more pages after PRP1's.
  std::vector<uint64_t> list;
  for (uint64_t i = 1; i < 32; ++i) list.push_back(kData + 0x100000 + i * 4096);
  h.mem.write(kData + 0x200000, list.data(), list.size() * 8);
  h.submit(1, rw(FISRIG_NVME_CMD_WRITE, 64, 256, kData + 0x100000, kData + 0x200000));
}
WriteInFlight twin() {
  NvmeHost h(enterprise());
  write_a_then_submit_b(h);
  WriteInFlight w;
  h.ctrl.run_until(h.now + drive::kNsPerS);
  NvmeCompletion c;
  while (h.ctrl.pop_completion(c))
    if (c.blocks == 256) w = WriteInFlight{c.t_data_first, c.t_data_last, c.t_cqe};
  return w;
}
// After a cut at `t` and the drive back: blocks 0..7 (A) and 64..319 (B).
std::pair<std::vector<uint8_t>, std::vector<uint8_t>> cut_at(SimTime t) {
  NvmeHost h(enterprise());
  write_a_then_submit_b(h);
  h.ctrl.run_until(t);
  h.ctrl.power_off(t);
  h.ctrl.power_on(h.now = t + drive::kNsPerS);
  h.now += drive::kNsPerS;
  h.enable();
  h.make_io_queues(1, 8);
  std::pair<std::vector<uint8_t>, std::vector<uint8_t>> back{std::vector<uint8_t>(4096), std::vector<uint8_t>(4096)};
  EXPECT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, 0, 8, kData + 0x400000))), kOk);
  h.mem.read(kData + 0x400000, back.first.data(), 4096);
  // B's first and last 4 KiB: a write lands whole or not at all.
  std::vector<uint8_t> b(8192);
  EXPECT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, 64, 8, kData + 0x500000))), kOk);
  EXPECT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, 312, 8, kData + 0x600000))), kOk);
  h.mem.read(kData + 0x500000, b.data(), 4096);
  h.mem.read(kData + 0x600000, b.data() + 4096, 4096);
  back.second = b;
  EXPECT_EQ(h.ctrl.unsafe_shutdowns(), 1u);
  return back;
}

TEST(NvmeIo, TheEnterpriseProfileAdvertisesItsAtomicWritesAndNoVolatileCache) {
  NvmeHost h(enterprise());
  auto ctrl = h.ctrl.identify_controller(), ns = h.ctrl.identify_namespace(1);
  EXPECT_EQ(ctrl[525], 0);  // VWC
  EXPECT_EQ(ctrl[528] | ctrl[529] << 8, 7);  // AWUPF: 8 blocks, 4 KiB
  EXPECT_EQ(ctrl[526] | ctrl[527] << 8, 7);  // AWUN
  EXPECT_EQ(ns[36] | ns[37] << 8, 7);        // NAWUPF
  EXPECT_EQ(h.ctrl.profile().io_queue_pairs, 128u);
}

TEST(NvmeIo, PowerLossProtectionKeepsWhatCameAndNothingThatHadNot) {
  const WriteInFlight w = twin();
  ASSERT_GT(w.last, w.first);
  auto a = pattern(4096, 21), b = pattern(128 * 1024, 22);
  std::vector<uint8_t> b_ends(b.begin(), b.begin() + 4096);
  b_ends.insert(b_ends.end(), b.end() - 4096, b.end());
  const std::vector<uint8_t> zeros(8192, 0);
  // Cut while B's data crosses: A (acknowledged, never flushed) stays; none of B is there.
  auto mid = cut_at((w.first + w.last) / 2);
  EXPECT_EQ(mid.first, a);
  EXPECT_EQ(mid.second, zeros);
  // Cut once B's data is in and before its CQE: the capacitors put all of it on NAND.
  ASSERT_LT(w.last + 1, w.cqe);
  auto after = cut_at(w.last + 1);
  EXPECT_EQ(after.first, a);
  EXPECT_EQ(after.second, b_ends);
}

TEST(NvmeIo, AtomicWritesBeyondABlockTakePowerLossProtection) {
  drive::DriveConfig cfg = drive::load_profile("tiny-1gb");
  cfg.nvme.awupf = 7;
  EXPECT_THROW(cfg.validate(), drive::ProfileError);
  cfg.power.plp = true;
  EXPECT_NO_THROW(cfg.validate());
  cfg.nvme.awupf = 256;  // past MDTS 5's 128 KiB
  EXPECT_THROW(cfg.validate(), drive::ProfileError);
}

TEST(NvmeIo, ANormalShutdownKeepsTheCacheAndACutWithoutOneLosesIt) {
  uint64_t unsafe = 0;
  EXPECT_EQ(after_a_cut(true, &unsafe), pattern(4096, 11));
  EXPECT_EQ(unsafe, 0u);
  EXPECT_EQ(after_a_cut(false, &unsafe), std::vector<uint8_t>(4096, 0));
  EXPECT_EQ(unsafe, 1u);
}

}  // namespace
}  // namespace fisrig::test
