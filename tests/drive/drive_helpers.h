// Commands as a host builds them, for the drive's tests.
#pragma once

#include <cstring>
#include <vector>

#include "fisrig/sata/drive.h"

namespace fisrig::test {

using drive::AtaCommand;
using drive::Completion;
using drive::Drive;
using drive::SimTime;
namespace ata = drive::ata;

inline AtaCommand write_dma(uint64_t lba, uint32_t n, uint32_t word) {
  AtaCommand c;
  c.command = ata::kWriteDmaExt;
  c.lba = lba;
  c.count = uint16_t(n);
  c.payload.word = word;
  return c;
}
inline AtaCommand read_dma(uint64_t lba, uint32_t n, uint32_t* words = nullptr, uint8_t* bytes = nullptr) {
  AtaCommand c;
  c.command = ata::kReadDmaExt;
  c.lba = lba;
  c.count = uint16_t(n);
  c.sink.words = words;
  c.sink.bytes = bytes;
  return c;
}
inline AtaCommand write_fpdma(uint8_t tag, uint64_t lba, uint32_t n, uint32_t word, bool fua = false) {
  AtaCommand c;
  c.command = ata::kWriteFpdmaQueued;
  c.lba = lba;
  c.features = uint16_t(n);
  c.count = uint16_t(tag << 3);
  c.device = uint8_t(0x40 | (fua ? 0x80 : 0));
  c.payload.word = word;
  return c;
}
inline AtaCommand read_fpdma(uint8_t tag, uint64_t lba, uint32_t n, uint32_t* words = nullptr) {
  AtaCommand c;
  c.command = ata::kReadFpdmaQueued;
  c.lba = lba;
  c.features = uint16_t(n);
  c.count = uint16_t(tag << 3);
  c.sink.words = words;
  return c;
}
inline AtaCommand simple(uint8_t command, uint16_t features = 0, uint64_t lba = 0, uint16_t count = 0) {
  AtaCommand c;
  c.command = command;
  c.features = features;
  c.lba = lba;
  c.count = count;
  return c;
}

// DSM range list: 8-byte little-endian entries, LBA in bits 47:0 and length in 63:48.
struct RangeList {
  std::vector<uint8_t> bytes;
  explicit RangeList(uint32_t blocks = 1) : bytes(blocks * 512, 0) {}
  RangeList& add(uint32_t i, uint64_t lba, uint16_t n) {
    uint64_t e = lba | (uint64_t(n) << 48);
    std::memcpy(&bytes[i * 8], &e, 8);
    return *this;
  }
};
inline AtaCommand trim(const RangeList& r) {
  AtaCommand c = simple(ata::kDataSetManagement, 1, 0, uint16_t(r.bytes.size() / 512));
  c.data_out = r.bytes.data();
  c.data_out_bytes = uint32_t(r.bytes.size());
  return c;
}
inline AtaCommand trim_queued(uint8_t tag, const RangeList& r) {
  AtaCommand c = simple(ata::kSendFpdmaQueued, uint16_t(r.bytes.size() / 512), 0, uint16_t(tag << 3));
  c.aux = 1;  // TRIM; COUNT 12:8 = 0: the DSM subcommand
  c.data_out = r.bytes.data();
  c.data_out_bytes = uint32_t(r.bytes.size());
  return c;
}
inline AtaCommand read_log(uint8_t log, std::vector<uint8_t>* out, uint16_t pages = 1) {
  AtaCommand c = simple(ata::kReadLogExt, 0, log, pages);
  c.pio_in = out;
  return c;
}

// Runs one command to completion on the drive's clock; `now` follows it.
inline Completion exec(Drive& d, const AtaCommand& c, SimTime& now) {
  Completion done = d.execute(c, now);
  if (done.t_complete != drive::kNever) now = done.t_complete;
  return done;
}

constexpr SimTime d_us(uint64_t us) { return us * drive::kNsPerUs; }

inline drive::DriveConfig tiny() { return drive::load_profile("tiny-1gb"); }

}  // namespace fisrig::test
