// ATA command set constants and the transaction-level command/completion records.
//
// One AtaCommand is what a Register H2D FIS carries (every field, unparsed), plus a
// description of the data a write brings. A Completion is what the device answers with
// (the D2H register or Set Device Bits contents) and when each phase happened.
#pragma once

#include <cstdint>
#include <vector>

#include "fisrig/ssd/content.h"
#include "fisrig/ssd/sim_time.h"

extern "C" {
#include "fisrig/ata.h"
}

namespace fisrig::drive {

namespace ata {
// Command opcodes, status and error bits, log addresses: the firmware core's fisrig/ata.h.
constexpr uint8_t kDataSetManagement = FISRIG_ATA_DATA_SET_MANAGEMENT;
constexpr uint8_t kReadDmaExt = FISRIG_ATA_READ_DMA_EXT;
constexpr uint8_t kReadLogExt = FISRIG_ATA_READ_LOG_EXT;
constexpr uint8_t kWriteDmaExt = FISRIG_ATA_WRITE_DMA_EXT;
constexpr uint8_t kWriteDmaFuaExt = FISRIG_ATA_WRITE_DMA_FUA_EXT;
constexpr uint8_t kReadLogDmaExt = FISRIG_ATA_READ_LOG_DMA_EXT;
constexpr uint8_t kReadFpdmaQueued = FISRIG_ATA_READ_FPDMA_QUEUED;
constexpr uint8_t kWriteFpdmaQueued = FISRIG_ATA_WRITE_FPDMA_QUEUED;
constexpr uint8_t kSendFpdmaQueued = FISRIG_ATA_SEND_FPDMA_QUEUED;
constexpr uint8_t kSmart = FISRIG_ATA_SMART;  // subcommand in FEATURES: smart.h
constexpr uint8_t kSanitize = FISRIG_ATA_SANITIZE;
constexpr uint8_t kFlushCache = FISRIG_ATA_FLUSH_CACHE;
constexpr uint8_t kIdentifyDevice = FISRIG_ATA_IDENTIFY_DEVICE;
constexpr uint8_t kFlushCacheExt = FISRIG_ATA_FLUSH_CACHE_EXT;
constexpr uint8_t kSetFeatures = FISRIG_ATA_SET_FEATURES;
constexpr uint8_t kSecuritySetPassword = FISRIG_ATA_SECURITY_SET_PASSWORD;
constexpr uint8_t kSecurityErasePrepare = FISRIG_ATA_SECURITY_ERASE_PREPARE;
constexpr uint8_t kSecurityEraseUnit = FISRIG_ATA_SECURITY_ERASE_UNIT;

constexpr uint8_t kStatusBsy = FISRIG_ATA_STATUS_BSY;
constexpr uint8_t kStatusDrdy = FISRIG_ATA_STATUS_DRDY;
constexpr uint8_t kStatusDf = FISRIG_ATA_STATUS_DF;
constexpr uint8_t kStatusDrq = FISRIG_ATA_STATUS_DRQ;
constexpr uint8_t kStatusErr = FISRIG_ATA_STATUS_ERR;

constexpr uint8_t kErrorIcrc = FISRIG_ATA_ERROR_ICRC;
constexpr uint8_t kErrorUnc = FISRIG_ATA_ERROR_UNC;
constexpr uint8_t kErrorIdnf = FISRIG_ATA_ERROR_IDNF;
constexpr uint8_t kErrorAbrt = FISRIG_ATA_ERROR_ABRT;

// SET FEATURES subcommands.
constexpr uint8_t kFeatureEnableWriteCache = 0x02;
constexpr uint8_t kFeatureSetTransferMode = 0x03;
constexpr uint8_t kFeatureEnableSataFeature = 0x10;
constexpr uint8_t kFeatureDisableWriteCache = 0x82;
constexpr uint8_t kFeatureDisableSataFeature = 0x90;

// SANITIZE BLOCK ERASE EXT: feature and the LBA signature ACS-3 requires ("BkEr").
constexpr uint16_t kSanitizeBlockErase = FISRIG_ATA_SANITIZE_BLOCK_ERASE;
constexpr uint64_t kSanitizeBlockEraseKey = FISRIG_ATA_SANITIZE_BLOCK_ERASE_KEY;

// Log addresses served by READ LOG EXT.
constexpr uint8_t kLogDirectory = FISRIG_LOG_DIRECTORY;
constexpr uint8_t kLogNcqError = FISRIG_LOG_NCQ_ERROR;
constexpr uint8_t kLogSataPhyEvents = FISRIG_LOG_SATA_PHY_EVENTS;
constexpr uint8_t kLogNcqSendReceive = FISRIG_LOG_NCQ_SEND_RECEIVE;

constexpr uint32_t kSectorBytes = drive::kSectorBytes;  // the SSD's logical block
constexpr uint32_t kNcqDepth = 32;
}  // namespace ata

// The Register H2D FIS fields, as the host sets them; nothing is interpreted up front.
struct AtaCommand {
  uint8_t command = 0;
  uint16_t features = 0;  // FEATURES(15:0)
  uint64_t lba = 0;       // 48 bits
  uint16_t count = 0;     // COUNT(15:0)
  uint8_t device = 0x40;  // bit 6 = LBA mode; bit 7 = FUA for FPDMA
  uint8_t icc = 0;
  uint8_t control = 0;
  uint16_t aux = 0;       // AUXILIARY(15:0) (SEND FPDMA QUEUED: bit 0 = TRIM)

  WritePayload payload;          // data-out commands with sector data
  const uint8_t* data_out = nullptr;  // data-out commands with structured data (DSM ranges)
  uint32_t data_out_bytes = 0;
  // Data-out commands whose data phase already happened on a real wire (the RTL device
  // side, sim/device): the device accepted the command, spent the controller's command
  // overhead, asked for the data and took it; the submit time is when the last Data FIS
  // arrived. The Drive then books no accept D2H, overhead, DMA Setup/Activate or Data FIS
  // of its own: booking them again made a write's status come one transfer late
  // (28 us for 16 KiB at Gen3, measured by an independent host before this flag).
  bool data_phase_done = false;
  // A queued command whose releasing Register D2H went right after its H2D: the RTL
  // device side sent it on its real wire (sim/device), or the model target's engine had
  // the Drive book it with the H2D (Drive::receive_h2d's cut_in). The Drive takes it as
  // sent at the arrival and books it on none of its own wire. Booked there, it went into
  // the Drive's first gap, which at queue depth 32 was after every data phase the Drive
  // had booked (50 us for 4 KiB reads at Gen3), and the command's data was due that late:
  // the device side's wire stood idle before it and a burst of H2Ds went in, which made
  // the rtl target's QD32 4 KiB reads a data phase slower than the model's
  // (targets-agree-qd32: p50 36.4 against 30.0 us; 29.7 against 29.7 now).
  bool release_sent = false;
  // The host runs a protocol that sends this write no data (the model target's engine,
  // for a raw command sent under another protocol: sim/model/protocol_mismatch.h):
  // the Drive books its request for the data (DMA Activate) and takes and writes
  // nothing; the engine keeps the command waiting for its timeout, as the rig does.
  bool host_sends_no_data = false;
  // A queued write's host has its next Register H2D waiting when the device's DMA Setup
  // ends: the host's link wins the wire then (the device needs two idle SYNCs before its
  // X_RDY, LiteSATA's host one), so the next command's H2D and the D2H that releases it go
  // between this command's DMA Setup and its DMA Activate, as the gateware's run shows
  // them (docs/model-target.md). The model target's engine sets it; this long is left.
  SimTime host_fis_after_setup_ns = 0;
  // Of that, how long the wire stays idle before the host's H2D can start (the host takes
  // in the DMA Setup first): booked as busy, so the H2D goes after it.
  SimTime host_idle_after_setup_ns = 0;
  ReadSink sink;                 // data-in commands
  std::vector<uint8_t>* pio_in = nullptr;  // IDENTIFY / logs: receives the bytes if set

  uint64_t user_tag = 0;  // returned untouched in the completion
};

// The phases of one command as the device sees them, all on the drive's clock (ns).
struct Completion {
  uint64_t user_tag = 0;
  uint8_t command = 0;
  bool queued = false;
  uint8_t tag = 0;        // NCQ tag, or 0
  uint8_t status = 0;
  uint8_t error = 0;
  uint64_t lba = 0;       // D2H LBA: the first failing sector on an error
  bool lba_is_output = false;  // the D2H carries lba on success too (SMART RETURN STATUS)
  uint32_t sectors = 0;   // sectors the command covered
  SimTime t_arrive = 0;   // Register H2D received
  SimTime t_accept = 0;   // NCQ: D2H (BSY clear) sent; otherwise = t_arrive
  SimTime t_data_start = 0;  // DMA Setup/Activate or first data FIS (0 if no data)
  SimTime t_data_end = 0;    // last data dword (0 if no data)
  // When the wire reservation of the command's first Data FIS begins (its X_RDY), 0 if
  // none. t_data_start is the end of the DMA Setup/Activate or PIO Setup before it; the
  // Data FIS waits for the wire after that, so the model target's engine, which stamps the
  // data's first dword on the wire (engine_if.h), needs the FIS's own start.
  SimTime t_data_fis = 0;
  SimTime t_complete = 0;    // D2H or Set Device Bits sent
  bool aborted_by_ncq_error = false;
  bool ok() const { return (status & ata::kStatusErr) == 0; }
};

}  // namespace fisrig::drive
