// SMART attributes from the drive's counters, and the READ DATA / READ THRESHOLDS pages.
#include "fisrig/sata/smart.h"

#include <algorithm>

namespace fisrig::drive::smart {

namespace {

// Counters that only count: their normalised value stays at 100 and says nothing.
constexpr uint16_t kCounterFlags = kOnline | kEventCount | kSelfPreserving;

std::vector<uint8_t> page_with_revision() {
  std::vector<uint8_t> p(kPageBytes, 0);
  p[0] = uint8_t(kRevision);
  p[1] = uint8_t(kRevision >> 8);
  return p;
}

void seal(std::vector<uint8_t>& p) {
  uint8_t sum = 0;
  for (size_t i = 0; i < kChecksum; ++i) sum = uint8_t(sum + p[i]);
  p[kChecksum] = uint8_t(-sum);
}

}  // namespace

std::vector<Attribute> attributes(const Counters& c) {
  constexpr uint64_t kRawMax = (uint64_t{1} << 48) - 1;
  auto counter = [&](uint8_t id, uint64_t raw, uint16_t flags = kCounterFlags) {
    Attribute a;
    a.id = id;
    a.flags = flags;
    a.raw = std::min(raw, kRawMax);
    return a;
  };
  // Wear: the share of the rated program/erase cycles used, counted down from 100. The
  // count only grows, so the worst value is the current one. At 1 (99% used) the drive
  // says it is failing.
  uint64_t rated_erases = c.blocks * c.rated_pe_cycles;
  uint64_t used_pct = rated_erases ? c.block_erases * 100 / rated_erases : 0;
  Attribute wear = counter(kWearLeveling, c.blocks ? c.block_erases / c.blocks : 0,
                           kPreFailure | kOnline | kEventCount);
  wear.value = wear.worst = uint8_t(100 - std::min<uint64_t>(used_pct, 99));
  wear.threshold = 1;
  return {
      counter(kPowerOnHours, c.powered_ns / (3600 * kNsPerS)),
      counter(kPowerCycles, c.power_ons),
      // The drive takes no shutdown notice (no STANDBY IMMEDIATE): every loss is unexpected.
      counter(kUnexpectedPowerLoss, c.unexpected_power_losses),
      wear,
      counter(kInterfaceCrcErrors, c.interface_crc_errors, kCounterFlags | kErrorRate),
      counter(kHostSectorsWritten, c.host_sectors_written),
      counter(kHostSectorsRead, c.host_sectors_read),
      counter(kNandSectorsWritten, c.nand_bytes_programmed / 512),
  };
}

std::vector<uint8_t> data_page(const std::vector<Attribute>& attrs) {
  std::vector<uint8_t> p = page_with_revision();
  for (size_t i = 0; i < attrs.size() && i < kMaxAttributes; ++i) {
    const Attribute& a = attrs[i];
    uint8_t* e = &p[kTableOffset + i * kEntryBytes];
    e[0] = a.id;
    e[1] = uint8_t(a.flags);
    e[2] = uint8_t(a.flags >> 8);
    e[3] = a.value;
    e[4] = a.worst;
    for (int b = 0; b < 6; ++b) e[FISRIG_SMART_RAW_OFFSET + b] = uint8_t(a.raw >> (8 * b));
  }
  // 362-376 stay zero: nothing collected off-line, no self-test run or offered, no error
  // log, no attribute auto-save, no polling times.
  seal(p);
  return p;
}

std::vector<uint8_t> thresholds_page(const std::vector<Attribute>& attrs) {
  std::vector<uint8_t> p = page_with_revision();
  for (size_t i = 0; i < attrs.size() && i < kMaxAttributes; ++i) {
    p[kTableOffset + i * kEntryBytes] = attrs[i].id;
    p[kTableOffset + i * kEntryBytes + 1] = attrs[i].threshold;
  }
  seal(p);
  return p;
}

bool threshold_exceeded(const std::vector<Attribute>& attrs) {
  return std::any_of(attrs.begin(), attrs.end(), [](const Attribute& a) {
    return (a.flags & kPreFailure) && a.threshold && a.value <= a.threshold;
  });
}

}  // namespace fisrig::drive::smart
