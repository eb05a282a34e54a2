// SMART (ATA B0h): the attributes the simulated drive reports, built from its own counters,
// and the 512-byte structures SMART READ DATA and READ ATTRIBUTE THRESHOLDS return.
//
// The attribute table is vendor specific in ACS-3; it uses the layout every SMART tool
// reads (smartctl, hdparm's and the kernel's decoders): a 2-byte revision, then 30 entries
// of 12 bytes. The bytes ACS-3 does define (362-376: off-line data collection and
// self-test status and capabilities, 511: checksum) say what this drive does: no off-line
// data collection, no self-tests, no error log, so IDENTIFY advertises none of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fisrig/ssd/sim_time.h"

extern "C" {
#include "fisrig/ata.h"
}

namespace fisrig::drive::smart {

// Subcommands, in FEATURES(7:0).
constexpr uint8_t kReadData = FISRIG_SMART_READ_DATA;
constexpr uint8_t kReadThresholds = FISRIG_SMART_READ_THRESHOLDS;
constexpr uint8_t kEnableOperations = FISRIG_SMART_ENABLE_OPERATIONS;
constexpr uint8_t kDisableOperations = FISRIG_SMART_DISABLE_OPERATIONS;
constexpr uint8_t kReturnStatus = FISRIG_SMART_RETURN_STATUS;
// LBA(23:8): the key every SMART command carries, which RETURN STATUS also answers with
// while no threshold is exceeded; and its answer when one is.
constexpr uint32_t kKey = FISRIG_SMART_KEY;
constexpr uint32_t kThresholdExceeded = 0x2CF4;

// Attribute flags (the common layout's status flags word).
constexpr uint16_t kPreFailure = 0x0001;
constexpr uint16_t kOnline = 0x0002;
constexpr uint16_t kErrorRate = 0x0008;
constexpr uint16_t kEventCount = 0x0010;
constexpr uint16_t kSelfPreserving = 0x0020;

// The attributes, by the ids SSD makers use for them.
constexpr uint8_t kPowerOnHours = 9;
constexpr uint8_t kPowerCycles = 12;
constexpr uint8_t kUnexpectedPowerLoss = 174;
constexpr uint8_t kWearLeveling = 177;       // raw: average erases per block
constexpr uint8_t kInterfaceCrcErrors = 199;
constexpr uint8_t kHostSectorsWritten = FISRIG_SMART_HOST_SECTORS_WRITTEN;  // raw: 512-byte LBAs
constexpr uint8_t kHostSectorsRead = 242;
constexpr uint8_t kNandSectorsWritten = FISRIG_SMART_NAND_SECTORS_WRITTEN;  // raw: 512-byte units programmed into NAND

// The structures' layout.
constexpr size_t kPageBytes = 512;
constexpr size_t kTableOffset = FISRIG_SMART_TABLE_OFFSET;  // after the 2-byte revision
constexpr size_t kEntryBytes = FISRIG_SMART_ENTRY_BYTES;  // id, flags (2), value, worst, raw (6), reserved
constexpr size_t kMaxAttributes = FISRIG_SMART_MAX_ATTRIBUTES;
constexpr uint16_t kRevision = 0x0001;
constexpr size_t kOfflineStatus = 362;       // 00h: off-line data collection never started
constexpr size_t kSelfTestStatus = 363;      // 00h: no self-test has ever been run
constexpr size_t kOfflineCapability = 367;   // 00h: none of the off-line/self-test commands
constexpr size_t kSmartCapability = 368;     // 2 bytes
constexpr size_t kErrorLogCapability = 370;  // 00h: no SMART error log
constexpr size_t kChecksum = 511;            // the 512 bytes sum to zero

struct Attribute {
  uint8_t id = 0;
  uint16_t flags = 0;
  uint8_t value = 100;  // normalised, 1..253, higher is better
  uint8_t worst = 100;
  uint64_t raw = 0;     // 48 bits
  uint8_t threshold = 0;  // a pre-failure attribute at or below it says the drive fails
};

// What the drive knows that the attributes report.
struct Counters {
  SimTime powered_ns = 0;          // summed over every power-on period, up to now
  uint64_t power_ons = 0;          // including the first
  uint64_t unexpected_power_losses = 0;
  uint64_t host_sectors_written = 0;
  uint64_t host_sectors_read = 0;
  uint64_t nand_bytes_programmed = 0;
  uint64_t block_erases = 0;       // physical blocks erased, summed
  uint64_t blocks = 0;             // physical blocks
  uint32_t rated_pe_cycles = 1;
  uint64_t interface_crc_errors = 0;
};

std::vector<Attribute> attributes(const Counters& c);
std::vector<uint8_t> data_page(const std::vector<Attribute>& attrs);
std::vector<uint8_t> thresholds_page(const std::vector<Attribute>& attrs);
// RETURN STATUS: a pre-failure attribute's value is at or below its (non-zero) threshold.
bool threshold_exceeded(const std::vector<Attribute>& attrs);

}  // namespace fisrig::drive::smart
