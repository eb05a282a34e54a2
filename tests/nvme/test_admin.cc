// The admin commands: Identify's pages, the logs, the features, Format NVM and Sanitize.
#include "nvme_host.h"

namespace fisrig::test {
namespace {

std::vector<uint8_t> identify(NvmeHost& h, uint32_t cns, uint32_t nsid, int* status = nullptr) {
  fisrig_nvme_sqe s = sqe(FISRIG_NVME_ADMIN_IDENTIFY, nsid);
  s.cdw10 = cns, s.prp1 = kData;
  h.mem.write(kData, std::vector<uint8_t>(4096, 0xEE).data(), 4096);
  int st = h.status(h.admin(s));
  if (status) *status = st;
  std::vector<uint8_t> page(4096);
  h.mem.read(kData, page.data(), 4096);
  return page;
}
std::string text(const std::vector<uint8_t>& p, size_t at, size_t n) { return std::string(p.begin() + long(at), p.begin() + long(at + n)); }
uint64_t le(const std::vector<uint8_t>& p, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(p[at + i]) << (8 * i);
  return v;
}

TEST(NvmeAdmin, IdentifyControllerSaysWhatTheControllerIs) {
  NvmeHost h;
  const drive::IdentityConfig& id = h.ctrl.ssd().config().identity;
  auto p = identify(h, FISRIG_NVME_CNS_CONTROLLER, 0);
  EXPECT_EQ(text(p, 4, id.serial.size()), id.serial);
  EXPECT_EQ(text(p, 24, id.model.size()), id.model);
  EXPECT_EQ(p[24 + id.model.size()], ' ');  // space padded
  EXPECT_EQ(p[77], 5);                       // MDTS
  EXPECT_EQ(p[512], 0x66);
  EXPECT_EQ(p[513], 0x44);
  EXPECT_EQ(le(p, 516, 4), 1u);              // NN
  EXPECT_EQ(le(p, 520, 2), 0x0Du);           // ONCS: Compare, DSM, Write Zeroes
  EXPECT_EQ(p[525] & 1, 1);                  // VWC
}

TEST(NvmeAdmin, IdentifyNamespaceSaysItsSizeAndThatDeallocatedBlocksReadZeros) {
  NvmeHost h;
  auto p = identify(h, FISRIG_NVME_CNS_NAMESPACE, 1);
  EXPECT_EQ(le(p, 0, 8), h.ctrl.ssd().visible_sectors());
  EXPECT_EQ(p[33] & 7, 1);                   // DLFEAT: reads zeros
  EXPECT_EQ((le(p, 128, 4) >> 16) & 0xFF, 9u);  // LBAF0: 512-byte blocks
  int st;
  identify(h, FISRIG_NVME_CNS_NAMESPACE, 2, &st);
  EXPECT_EQ(st, NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_NAMESPACE));
  auto list = identify(h, FISRIG_NVME_CNS_ACTIVE_NAMESPACES, 0);
  EXPECT_EQ(le(list, 0, 4), 1u);
  EXPECT_EQ(le(list, 4, 4), 0u);
  identify(h, 0x55, 0, &st);
  EXPECT_EQ(st, NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD));
}

TEST(NvmeAdmin, TheSmartLogCountsWhatWasWritten) {
  NvmeHost h;
  h.make_io_queues(1, 8);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_WRITE, 256 * i, 256, kData, kData + 0x100000))), 0);
  fisrig_nvme_sqe s = sqe(FISRIG_NVME_ADMIN_GET_LOG_PAGE, 0xFFFFFFFF);
  s.cdw10 = FISRIG_NVME_LOG_SMART | (512 / 4 - 1) << 16, s.prp1 = kData + 0x200000;
  ASSERT_EQ(h.status(h.admin(s)), 0);
  std::vector<uint8_t> log(512);
  h.mem.read(kData + 0x200000, log.data(), 512);
  EXPECT_EQ(le(log, 48, 8), 2u);   // 1,024 blocks written: two data units of 1,000, rounded up
  EXPECT_EQ(le(log, 80, 8), 4u);   // host write commands
  EXPECT_EQ(le(log, 144, 8), 0u);  // no unsafe shutdown yet
  s.cdw10 = 0x7E | 127u << 16;
  EXPECT_EQ(h.status(h.admin(s)), NvmeHost::sc(FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_INVALID_LOG_PAGE));
}

TEST(NvmeAdmin, TheWriteCacheFeatureTurnsTheCacheOffAndOn) {
  NvmeHost h;
  fisrig_nvme_sqe s = sqe(FISRIG_NVME_ADMIN_SET_FEATURES);
  s.cdw10 = FISRIG_NVME_FEAT_VOLATILE_WRITE_CACHE, s.cdw11 = 0;
  ASSERT_EQ(h.status(h.admin(s)), 0);
  EXPECT_FALSE(h.ctrl.ssd().write_cache_enabled());
  fisrig_nvme_sqe g = sqe(FISRIG_NVME_ADMIN_GET_FEATURES);
  g.cdw10 = FISRIG_NVME_FEAT_VOLATILE_WRITE_CACHE;
  EXPECT_EQ(h.admin(g).dw0, 0u);
  s.cdw11 = 1;
  ASSERT_EQ(h.status(h.admin(s)), 0);
  EXPECT_EQ(h.admin(g).dw0, 1u);
  fisrig_nvme_sqe pm = sqe(FISRIG_NVME_ADMIN_SET_FEATURES);
  pm.cdw10 = FISRIG_NVME_FEAT_POWER_MANAGEMENT, pm.cdw11 = 1;  // no power state 1
  EXPECT_EQ(h.status(h.admin(pm)), NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD));
}

TEST(NvmeAdmin, FormatAndSanitizeEraseEveryBlock) {
  NvmeHost h;
  h.make_io_queues(1, 8);
  std::vector<uint8_t> ones(4096, 0xA5), back(4096);
  for (uint8_t op : {FISRIG_NVME_ADMIN_FORMAT_NVM, FISRIG_NVME_ADMIN_SANITIZE}) {
    h.mem.write(kData, ones.data(), 4096);
    ASSERT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_WRITE, 0, 8, kData))), 0);
    fisrig_nvme_sqe f = sqe(op, 1);
    f.cdw10 = op == FISRIG_NVME_ADMIN_FORMAT_NVM ? 1u << 9 : 2u;  // user data erase / block erase
    ASSERT_EQ(h.status(h.admin(f)), 0);
    ASSERT_EQ(h.status(h.run(1, rw(FISRIG_NVME_CMD_READ, 0, 8, kData + 0x10000))), 0);
    h.mem.read(kData + 0x10000, back.data(), 4096);
    EXPECT_EQ(back, std::vector<uint8_t>(4096, 0)) << int(op);
  }
  fisrig_nvme_sqe crypto = sqe(FISRIG_NVME_ADMIN_FORMAT_NVM, 1);
  crypto.cdw10 = 2u << 9;  // cryptographic erase: not offered
  EXPECT_EQ(h.status(h.admin(crypto)), NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD));
  fisrig_nvme_sqe lbaf = sqe(FISRIG_NVME_ADMIN_FORMAT_NVM, 1);
  lbaf.cdw10 = 1;  // LBA format 1: there is none
  EXPECT_EQ(h.status(h.admin(lbaf)), NvmeHost::sc(FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_INVALID_FORMAT));
}

TEST(NvmeAdmin, ANewDrivesIdentifyFromItsProfileIsTheBuiltDrives) {
  for (const char* name : {"tiny-1gb", "fast-1gb", "plp-honest"}) {
    drive::DriveConfig cfg = drive::load_profile(name);
    NvmeHost h(cfg);
    EXPECT_EQ(nvme::Controller::identify_controller(cfg), identify(h, FISRIG_NVME_CNS_CONTROLLER, 0)) << name;
    EXPECT_EQ(nvme::Controller::identify_namespace(cfg.user_sectors, cfg.nvme.awupf), identify(h, FISRIG_NVME_CNS_NAMESPACE, 1)) << name;
  }
}

}  // namespace
}  // namespace fisrig::test
