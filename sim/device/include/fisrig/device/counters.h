// What the device side counts, for tests and for the RTL simulation's end-of-run report.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace fisrig::device {

struct DeviceCounters {
  uint64_t cycles = 0;
  uint64_t link_ups = 0;        // OOB done and the host's first primitive after its ALIGNs
  uint64_t link_gen = 0;        // the speed negotiated at the last link-up (1, 2, 3)
  uint64_t comresets = 0;       // COMRESETs taken (while powered and booted)
  uint64_t power_offs = 0;
  uint64_t power_ons = 0;
  uint64_t cominits_sent = 0;   // answers to COMRESET and unsolicited ones at power-on
  std::array<uint64_t, 256> fis_sent{};      // by FIS type; counted when the host answered R_OK
  std::array<uint64_t, 256> fis_received{};  // by FIS type; counted when answered R_OK
  uint64_t r_ok_sent = 0;
  uint64_t r_err_sent = 0;       // every R_ERR the device answered (bad CRC, fault, oversize)
  uint64_t r_err_injected = 0;   // of which the r_err_rate fault
  uint64_t r_err_received = 0;   // the host answered R_ERR to a device FIS
  uint64_t rx_crc_errors = 0;    // host FISes with a bad CRC
  uint64_t tx_crc_corrupted = 0; // Data FISes sent with a corrupted CRC (data_fis_crc_error_rate)
  uint64_t retransmits = 0;      // non-data FISes sent again after R_ERR
  uint64_t holds_sent = 0;       // HOLD bursts the device sent as receiver (hold storm)
  uint64_t hold_cycles_sent = 0;
  uint64_t holds_received = 0;   // HOLD bursts from the host while the device transmitted
  uint64_t holda_cycles_sent = 0;
  uint64_t conts_received = 0;   // CONT primitives from the host
  uint64_t frames_aborted = 0;   // SYNC from the other side in the middle of a frame
  uint64_t commands = 0;         // Register H2D commands taken
  uint64_t protocol_errors = 0;  // FISes that fit no command (reported, then ignored)
  uint64_t sdb_sent = 0;         // Set Device Bits FISes (each may complete several tags)
  uint64_t sdb_tags = 0;         // tags completed by them
  uint64_t ncq_errors = 0;       // error SDBs sent

  // One "name value" line per counter (FIS types by name, non-zero ones only).
  std::string text() const;
};

}  // namespace fisrig::device
