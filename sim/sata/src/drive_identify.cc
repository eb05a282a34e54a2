// IDENTIFY DEVICE data (ACS-3 word layout) and the general-purpose logs the drive serves.
#include <algorithm>
#include <cstring>

#include "fisrig/sata/drive.h"

namespace fisrig::drive {

namespace {

// ATA strings: space padded, two characters per word, first character in the high byte.
void put_string(std::array<uint16_t, 256>& w, int first, int words, const std::string& s) {
  for (int i = 0; i < words; ++i) {
    char a = size_t(2 * i) < s.size() ? s[2 * i] : ' ';
    char b = size_t(2 * i + 1) < s.size() ? s[2 * i + 1] : ' ';
    w[first + i] = uint16_t((uint8_t(a) << 8) | uint8_t(b));
  }
}

void put_u64(std::array<uint16_t, 256>& w, int first, int words, uint64_t v) {
  for (int i = 0; i < words; ++i) w[first + i] = uint16_t(v >> (16 * i));
}

void seal_checksum(std::vector<uint8_t>& page) {
  uint8_t sum = 0;
  for (size_t i = 0; i < 511; ++i) sum = uint8_t(sum + page[i]);
  page[511] = uint8_t(-sum);
}

}  // namespace

std::array<uint16_t, 256> Drive::identify_words() const {
  return identify_words(cfg(), {ssd_.visible_sectors(), ssd_.write_cache_enabled(), security_enabled_, smart_enabled_, link_gen_});
}

std::array<uint16_t, 256> Drive::new_drive_identify_words(const DriveConfig& cfg) {
  cfg.validate();
  // The constructor's and the members' first values (drive.h).
  return identify_words(cfg, {cfg.user_sectors, cfg.cache.enabled, false, true, cfg.interface.max_gen});
}

std::array<uint16_t, 256> Drive::identify_words(const DriveConfig& cfg, const IdentifyState& s) {
  std::array<uint16_t, 256> w{};
  uint64_t max_lba = s.visible_sectors;
  w[0] = 0x0040;  // ATA device, fixed
  w[1] = 16383;
  w[2] = 0xC837;  // device spun up, IDENTIFY complete
  w[3] = 16;
  w[6] = 63;
  put_string(w, 10, 10, cfg.identity.serial);
  put_string(w, 23, 4, cfg.identity.firmware);
  put_string(w, 27, 20, cfg.identity.model);
  w[47] = 0x8010;  // READ/WRITE MULTIPLE: 16 sectors
  w[49] = 0x2F00;  // LBA, DMA, IORDY, standby timer
  w[50] = 0x4000;
  w[53] = 0x0007;  // words 64-70 and 88 valid
  w[59] = 0x0110;
  put_u64(w, 60, 2, std::min<uint64_t>(max_lba, 0x0FFFFFFF));
  w[63] = 0x0007;  // multiword DMA 0-2 supported
  w[64] = 0x0003;  // PIO 3 and 4
  w[65] = w[66] = w[67] = w[68] = 120;
  // Deterministic read after TRIM (14), trimmed LBAs return zeros (5).
  w[69] = (1 << 14) | (1 << 5);
  w[75] = ata::kNcqDepth - 1;
  // SATA capabilities: NCQ (8) and every speed up to the drive's fastest (bit 1 Gen1, 2
  // Gen2, 3 Gen3); 77 bits 3:1 code the speed the link negotiated, bit 6 is SEND/RECEIVE
  // FPDMA QUEUED.
  w[76] = uint16_t((1 << 8) | (((1u << cfg.interface.max_gen) - 1) << 1));
  w[77] = uint16_t(((s.link_gen & 7) << 1) | (1 << 6));
  w[78] = 0x0000;
  w[79] = 0x0000;
  w[80] = 0x07F0;  // ATA/ATAPI-4 to ACS-3
  w[81] = 0x0000;
  // Command sets: NOP (14), look-ahead (6), write cache (5), PM (3), security (1), SMART
  // (0). Not READ/WRITE BUFFER (13, 12): the drive aborts them.
  w[82] = 0x406B;
  w[83] = 0x7400;  // FLUSH CACHE EXT, FLUSH CACHE, 48-bit
  // WRITE DMA FUA EXT (6), GPL (5); not SMART self-test (1) or SMART error logging (0):
  // SMART here is READ DATA, READ THRESHOLDS, RETURN STATUS, ENABLE and DISABLE.
  w[84] = 0x4060;
  w[85] = uint16_t((0x406B & ~(1 << 5) & ~(1 << 1) & ~1) | (s.cache_enabled ? 1 << 5 : 0) |
                   (s.security_enabled ? 1 << 1 : 0) | (s.smart_enabled ? 1 : 0));
  w[86] = 0xB400;
  w[87] = 0x4060;
  w[88] = 0x407F;  // UDMA 0-6 supported, 6 selected
  w[89] = uint16_t(std::min<uint32_t>(cfg.identity.security_erase_minutes / 2 + 1, 255));
  w[90] = w[89];
  put_u64(w, 100, 4, max_lba);
  w[105] = uint16_t(cfg.identity.dsm_max_blocks);
  w[106] = 0x4000;  // 512-byte logical and physical sectors
  w[119] = 0x4000;
  w[120] = 0x4000;
  // Security: supported; enabled when a password is set; enhanced erase not supported.
  w[128] = uint16_t(0x0001 | (s.security_enabled ? 0x0002 : 0));
  w[168] = 0x0003;  // 2.5 inch
  w[169] = 0x0001;  // DATA SET MANAGEMENT: TRIM
  w[217] = 0x0001;  // non-rotating medium
  w[222] = 0x107F;  // Serial ATA, SATA 1.0a to 3.0
  // Integrity word: signature A5h, and a checksum that makes all 512 bytes sum to zero.
  w[255] = 0x00A5;
  uint8_t sum = 0;
  for (int i = 0; i < 255; ++i) sum = uint8_t(sum + (w[i] & 0xFF) + (w[i] >> 8));
  sum = uint8_t(sum + 0xA5);
  w[255] = uint16_t((uint8_t(-sum) << 8) | 0xA5);
  return w;
}

std::vector<uint8_t> Drive::read_log_page(uint8_t log, uint16_t page) const {
  if (page != 0) return {};
  std::vector<uint8_t> p(512, 0);
  switch (log) {
    case ata::kLogDirectory:
      p[0] = 0x01;  // GPL version 1; then the page count of each log, by address
      p[2 * ata::kLogNcqError] = 1;
      p[2 * ata::kLogSataPhyEvents] = 1;
      p[2 * ata::kLogNcqSendReceive] = 1;
      return p;
    case ata::kLogNcqError: {
      if (ncq_log_.valid) {
        p[0] = uint8_t((ncq_log_.non_queued ? 0x80 : 0) | (ncq_log_.tag & 0x1F));
        p[2] = ncq_log_.status;
        p[3] = ncq_log_.error;
        p[4] = uint8_t(ncq_log_.lba);
        p[5] = uint8_t(ncq_log_.lba >> 8);
        p[6] = uint8_t(ncq_log_.lba >> 16);
        p[7] = 0x40;
        p[8] = uint8_t(ncq_log_.lba >> 24);
        p[9] = uint8_t(ncq_log_.lba >> 32);
        p[10] = uint8_t(ncq_log_.lba >> 40);
        p[12] = uint8_t(ncq_log_.count);
        p[13] = uint8_t(ncq_log_.count >> 8);
      } else {
        p[0] = 0x80;  // NQ set, tag 0: no queued command failed
      }
      seal_checksum(p);
      return p;
    }
    case ata::kLogSataPhyEvents: {
      // Counter entries: 16-bit id (bits 14:12 = size in words), then the value.
      struct Counter { uint16_t id; uint64_t value; };
      const Counter counters[] = {
          {0x001, stats_.icrc_failures},  {0x003, stats_.r_err_data},
          {0x005, stats_.r_err_non_data}, {0x00A, stats_.comresets},
      };
      size_t off = 4;
      for (const Counter& ctr : counters) {
        uint16_t id = uint16_t(0x2000 | ctr.id);  // 2 words = 32-bit value
        uint32_t v = uint32_t(std::min<uint64_t>(ctr.value, 0xFFFFFFFF));
        std::memcpy(&p[off], &id, 2);
        std::memcpy(&p[off + 2], &v, 4);
        off += 6;
      }
      seal_checksum(p);
      return p;
    }
    case ata::kLogNcqSendReceive:
      p[0] = 0x01;  // supported SEND/RECEIVE FPDMA subcommands: DATA SET MANAGEMENT
      p[4] = 0x01;  // DSM via SEND FPDMA QUEUED: TRIM
      return p;
    default:
      return {};
  }
}

}  // namespace fisrig::drive
