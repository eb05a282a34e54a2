#include "host_driver.h"

#include <algorithm>
#include <cstring>

namespace fisrig::tools {

namespace ata = drive::ata;

namespace {
std::string describe(const Completion& c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "command %02Xh at LBA %llu failed: status %02Xh error %02Xh",
                c.command, (unsigned long long)c.lba, c.status, c.error);
  return buf;
}
}  // namespace

RunTotals HostDriver::run(uint32_t qd, const std::function<bool(AtaCommand&)>& next, SimTime until) {
  RunTotals r;
  r.start = now_;
  std::vector<uint8_t> free_tags;
  for (int t = int(std::min<uint32_t>(qd, 32)) - 1; t >= 0; --t) free_tags.push_back(uint8_t(t));
  uint32_t outstanding = 0;
  // One command is generated ahead, so the drive can prefetch what it will touch.
  AtaCommand cmd, ahead;
  bool more = next(ahead);
  if (more) d_.prefetch(ahead);
  while (true) {
    while (more && outstanding < qd && now_ < until) {
      cmd = ahead;
      more = next(ahead);
      if (more) d_.prefetch(ahead);
      bool queued = cmd.command == ata::kReadFpdmaQueued || cmd.command == ata::kWriteFpdmaQueued ||
                    cmd.command == ata::kSendFpdmaQueued;
      if (queued) {
        cmd.count = uint16_t((cmd.count & ~0xF8u) | (uint32_t(free_tags.back()) << 3));
        free_tags.pop_back();
      }
      d_.submit(cmd, now_);
      ++outstanding;
      if (!queued) break;  // a non-queued command owns the device until it completes
    }
    if (!outstanding) break;
    Completion c;
    if (!d_.pop_completion(c)) throw std::runtime_error("drive stopped answering");
    --outstanding;
    if (c.queued) free_tags.push_back(c.tag);
    if (!c.ok()) throw std::runtime_error(describe(c));
    now_ = std::max(now_, c.t_complete);
    ++r.commands;
    r.bytes += uint64_t(c.sectors) * ata::kSectorBytes;
  }
  r.end = now_;
  return r;
}

Completion HostDriver::one(const AtaCommand& cmd) {
  Completion c = d_.execute(cmd, now_);
  if (c.t_complete == drive::kNever) throw std::runtime_error("drive stopped answering");
  now_ = std::max(now_, c.t_complete);
  return c;
}

void HostDriver::idle(SimTime duration) {
  now_ += duration;
  d_.idle_until(now_);
}

AtaCommand HostDriver::write(uint64_t lba, uint32_t sectors, bool ncq, uint32_t word, uint8_t compress_pct) {
  AtaCommand c;
  c.lba = lba;
  if (ncq) {
    c.command = ata::kWriteFpdmaQueued;
    c.features = uint16_t(sectors);
  } else {
    c.command = ata::kWriteDmaExt;
    c.count = uint16_t(sectors);
  }
  c.payload.kind = drive::WritePayload::Kind::kWord;
  c.payload.word = word;
  c.payload.compress_pct = compress_pct;
  return c;
}

AtaCommand HostDriver::read(uint64_t lba, uint32_t sectors, bool ncq) {
  AtaCommand c;
  c.lba = lba;
  if (ncq) {
    c.command = ata::kReadFpdmaQueued;
    c.features = uint16_t(sectors);
  } else {
    c.command = ata::kReadDmaExt;
    c.count = uint16_t(sectors);
  }
  return c;
}

void HostDriver::secure_erase() {
  AtaCommand pw;
  pw.command = ata::kSecuritySetPassword;
  AtaCommand prep;
  prep.command = ata::kSecurityErasePrepare;
  AtaCommand erase;
  erase.command = ata::kSecurityEraseUnit;
  for (const AtaCommand* c : {&pw, &prep, &erase}) {
    Completion done = one(*c);
    if (!done.ok()) throw std::runtime_error(describe(done));
  }
}

void HostDriver::trim_all() {
  const uint32_t blocks = d_.config().identity.dsm_max_blocks;
  const uint32_t entries = blocks * 64;
  std::vector<uint8_t> list(blocks * ata::kSectorBytes);
  uint64_t lba = 0, end = d_.user_sectors();
  while (lba < end) {
    std::fill(list.begin(), list.end(), 0);
    for (uint32_t i = 0; i < entries && lba < end; ++i) {
      uint64_t n = std::min<uint64_t>(0xFFFF, end - lba);
      uint64_t e = lba | (n << 48);
      std::memcpy(&list[i * 8], &e, 8);
      lba += n;
    }
    AtaCommand c;
    c.command = ata::kDataSetManagement;
    c.features = 1;
    c.count = uint16_t(blocks);
    c.data_out = list.data();
    c.data_out_bytes = uint32_t(list.size());
    Completion done = one(c);
    if (!done.ok()) throw std::runtime_error(describe(done));
  }
}

}  // namespace fisrig::tools
