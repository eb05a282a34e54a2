// Identify Controller and Namespace, and the SMART / health log, from the drive's profile
// and the SSD's state (byte offsets of NVMe Base 2.0, figures 275 and 207; NVM Command Set
// 1.0, figure 97).
#include <algorithm>
#include <cstring>
#include <string>

#include "fisrig/nvme/controller.h"

namespace fisrig::nvme {

namespace {
void put(std::vector<uint8_t>& p, size_t at, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) p[at + i] = uint8_t(v >> (8 * i));
}
// An ASCII field, left justified, padded with spaces.
void put_text(std::vector<uint8_t>& p, size_t at, const std::string& s, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) p[at + i] = i < s.size() ? uint8_t(s[i]) : ' ';
}
// A 128-bit counter (the SMART log's), from 64 bits.
void put128(std::vector<uint8_t>& p, size_t at, uint64_t v) { put(p, at, v, 8); }
}  // namespace

std::vector<uint8_t> Controller::identify_controller() const { return identify_controller(ssd_.config()); }

std::vector<uint8_t> Controller::identify_namespace(uint32_t) const { return identify_namespace(ssd_.visible_sectors(), profile().awupf); }

std::vector<uint8_t> Controller::identify_controller(const drive::DriveConfig& cfg) {
  const drive::IdentityConfig& id = cfg.identity;
  const drive::NvmeInterfaceConfig& nvme = cfg.nvme;
  std::vector<uint8_t> p(FISRIG_NVME_IDENTIFY_BYTES, 0);
  put(p, 0, FISRIG_NVME_SIM_VENDOR_ID, 2);  // VID, as the PCI function's
  put(p, 2, FISRIG_NVME_SIM_VENDOR_ID, 2);  // SSVID
  put_text(p, 4, id.serial, 20);   // SN
  put_text(p, 24, id.model, 40);   // MN
  put_text(p, 64, id.firmware, 8); // FR
  p[72] = 0;                       // RAB
  p[77] = uint8_t(nvme.mdts);      // MDTS: 2^mdts pages of 4 KiB
  put(p, 78, 1, 2);                // CNTLID
  put(p, 80, 0x00020000, 4);       // VER 2.0.0
  put(p, 88, 1000000, 4);          // RTD3E: 1 s to enter D3 (a normal shutdown's bound)
  p[111] = 1;                      // CNTRLTYPE: I/O controller
  put(p, 256, 1u << 1, 2);         // OACS: Format NVM
  p[258] = 3;                      // ACL: 4 Aborts
  p[259] = 3;                      // AERL: 4 Asynchronous Event Requests
  p[260] = 1u << 0 | 1u << 1;      // FRMW: slot 1 read-only, one slot
  p[261] = 1u << 2;                // LPA: extended data (NUMDU) for Get Log Page
  p[263] = 0;                      // NPSS: one power state
  put(p, 266, 353, 2);             // WCTEMP: 80 C, in kelvin
  put(p, 268, 358, 2);             // CCTEMP: 85 C
  put(p, 280, cfg.user_sectors * drive::kSectorBytes, 8);  // TNVMCAP (low 64 of 128 bits)
  put(p, 328, 1u << 1, 4);         // SANICAP: Block Erase
  p[512] = 0x66;                   // SQES: 64 bytes
  p[513] = 0x44;                   // CQES: 16 bytes
  put(p, 514, nvme.max_queue_entries, 2);  // MAXCMD
  put(p, 516, 1, 4);               // NN: one namespace
  put(p, 520, 1u << 0 | 1u << 2 | 1u << 3, 2);  // ONCS: Compare, Dataset Management, Write Zeroes
  p[524] = 0;                      // FNA: a format erases the namespace it names
  p[525] = vwc_present(cfg) ? 1 : 0;  // VWC: a volatile write cache (not one power-loss protection keeps)
  put(p, 526, nvme.awupf, 2);      // AWUN: the controller runs one command at a time, so at
                                   // least what a power fail keeps whole (AWUPF <= AWUN)
  put(p, 528, nvme.awupf, 2);      // AWUPF: blocks less one a cut keeps whole (the profile's)
  put(p, 536, 0, 2);               // ACWU
  put(p, 540, 0, 4);               // SGLS: no SGLs
  const std::string nqn = "nqn.2026-12.org.fisrig:" + id.serial;  // SUBNQN, NUL padded
  std::memcpy(p.data() + 768, nqn.data(), std::min<size_t>(nqn.size(), 255));
  put(p, 2048, 900, 2);            // PSD0's MP: 9.00 W
  return p;
}

std::vector<uint8_t> Controller::identify_namespace(uint64_t blocks, uint32_t awupf) {
  std::vector<uint8_t> p(FISRIG_NVME_IDENTIFY_BYTES, 0);
  put(p, 0, blocks, 8);   // NSZE
  put(p, 8, blocks, 8);   // NCAP
  put(p, 16, blocks, 8);  // NUSE: every block counts as allocated (no thin provisioning)
  p[24] = 1u << 1;        // NSFEAT: NAWUN, NAWUPF and NACWU are the namespace's
  p[25] = 0;              // NLBAF: one format
  p[26] = 0;              // FLBAS: format 0
  p[33] = 0x1 | 1u << 3;  // DLFEAT: deallocated blocks read zeros; Write Zeroes may deallocate
  put(p, 34, awupf, 2);   // NAWUN: as AWUN
  put(p, 36, awupf, 2);   // NAWUPF: as AWUPF
  put(p, 128, uint32_t(9) << 16, 4);  // LBAF0: no metadata, 2^9-byte blocks, best performance
  return p;
}

std::vector<uint8_t> Controller::smart_log(SimTime now) const {
  const drive::SsdStats& s = ssd_.stats();
  std::vector<uint8_t> p(512, 0);
  put(p, 1, 313, 2);  // composite temperature: 40 C, in kelvin
  p[3] = 100;         // available spare
  p[4] = 10;          // its threshold
  // Data units of 1,000 512-byte blocks, rounded up.
  put128(p, 32, (s.sectors_read + 999) / 1000);
  put128(p, 48, (s.sectors_written + 999) / 1000);
  put128(p, 64, host_reads_);
  put128(p, 80, host_writes_);
  put128(p, 112, 1 + s.power_cycles);                     // power cycles
  put128(p, 128, ssd_.powered_ns(now) / (3600 * drive::kNsPerS));  // power-on hours
  put128(p, 144, unsafe_shutdowns_);
  put128(p, 160, media_errors_);
  return p;
}

}  // namespace fisrig::nvme
