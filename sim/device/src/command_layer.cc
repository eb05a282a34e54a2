// Commands in (Register H2D) and into the Drive, and the choice of the next FIS to send.
// Completions and the status FISes that end commands are in command_status.cc, the data
// phases in command_data.cc.
#include <algorithm>
#include <cstring>

#include "fisrig/device/command_layer.h"

namespace fisrig::device {

namespace ata = drive::ata;
using drive::Completion;
using drive::SimTime;

namespace {
constexpr uint8_t kStatusReleased = ata::kStatusDrdy;  // queued command accepted, bus free
constexpr uint8_t kSignatureStatus = 0x50;
constexpr uint8_t kSignatureError = 0x01;

uint32_t sectors_of(const fis::H2D& h, bool queued) {
  uint32_t n = queued ? h.features : h.count;
  return n ? n : 65536;
}
}  // namespace

CommandLayer::CommandLayer(drive::Drive& drive, PatternCodec& codec, DeviceCounters& counters)
    : drive_(drive), codec_(codec), counters_(counters) {}

bool CommandLayer::idle() const {
  for (const Slot& s : slots_)
    if (s.phase != Phase::kFree) return false;
  return true;
}

void CommandLayer::reset() {
  for (Slot& s : slots_) {
    s.phase = Phase::kFree;
    ++s.generation;  // completions of earlier occupants are stale
  }
  release_len_ = status_len_ = 0;
  active_ = -1;
  halted_ = signature_due_ = resend_ = false;
  retries_ = 0;
  wake_ = 0;
  Completion c;
  while (drive_.pop_completion(c)) {
  }
}

// ---- FISes from the host ----

void CommandLayer::on_fis(const uint32_t* f, size_t n, bool ok, uint64_t cycle) {
  wake_ = 0;
  if (!n) return;
  switch (fis::type_of(f[0])) {
    case fis::kRegH2D: {
      fis::H2D h;
      if (!ok) return;  // answered R_ERR: the host sends it again or gives up
      if (!fis::parse_h2d(f, n, h)) {
        ++counters_.protocol_errors;
        return;
      }
      if (h.c) take_command(h, cycle);  // C = 0: a Device Control update, nothing to do
      return;
    }
    case fis::kData:
      return host_data(f + 1, n - 1, ok, cycle);
    default:
      if (ok) ++counters_.protocol_errors;
  }
}

void CommandLayer::take_command(const fis::H2D& h, uint64_t cycle) {
  Protocol proto = protocol_of(h.command, h.features);
  bool queued = is_queued(proto);
  uint8_t idx = queued ? uint8_t((h.count >> 3) & 0x1F) : kNonQueued;
  Slot& s = slots_[idx];
  if (s.phase != Phase::kFree) {
    ++counters_.protocol_errors;  // a busy tag, or a second non-queued command
    return;
  }
  ++counters_.commands;
  if (!queued) halted_ = false;  // the host recovers from an NCQ error with a non-queued command
  s.proto = proto;
  s.h2d = h;
  s.lba = h.lba;
  s.sectors = sectors_of(h, queued);
  s.data_started = s.data_done = s.transfer_failed = s.popped = s.ignored = false;
  s.total_bytes = s.done_bytes = 0;
  s.bad_fis_at = ~0u;
  s.sector_read = h.command == ata::kReadDmaExt || h.command == ata::kReadFpdmaQueued;
  s.has_literal = false;
  ++s.generation;
  if (is_data_out(proto) && wants_data(s)) {
    s.phase = Phase::kAwaitData;
    s.total_bytes = data_out_bytes(s);
    s.ready_ns = cycle_ns(cycle) + drive_.config().controller.command_overhead_ns;
    if (queued && !drive_.hung()) releases_[(release_head_ + release_len_++) % releases_.size()] = idx;
    return;
  }
  submit(idx, cycle);
  if (queued && !s.ignored) releases_[(release_head_ + release_len_++) % releases_.size()] = idx;
}

uint32_t CommandLayer::data_out_bytes(const Slot& s) const {
  switch (s.h2d.command) {
    case ata::kDataSetManagement:
      return (s.h2d.count ? s.h2d.count : 65536u) * ata::kSectorBytes;
    case ata::kSendFpdmaQueued:
      return s.sectors * ata::kSectorBytes;  // FEATURES: 512-byte blocks of ranges
    case ata::kSecuritySetPassword:
    case ata::kSecurityEraseUnit:
      return ata::kSectorBytes;
    default:
      return s.sectors * ata::kSectorBytes;
  }
}

// False when the Drive will refuse the command without looking at its data: then it is
// submitted at once and its status goes out without a data phase, as a drive would.
bool CommandLayer::wants_data(const Slot& s) const {
  if (s.proto == Protocol::kPioOut) return true;
  bool queued = is_queued(s.proto);
  bool queued_outstanding = false;
  for (uint8_t t = 0; t < kNonQueued; ++t) queued_outstanding |= slots_[t].phase != Phase::kFree;
  if (!queued && queued_outstanding) return false;  // aborts it and the queue
  if (queued && (halted_ || slots_[kNonQueued].phase != Phase::kFree)) return false;
  const fis::H2D& h = s.h2d;
  if (h.command == ata::kDataSetManagement || h.command == ata::kSendFpdmaQueued) {
    bool trim = queued ? (h.aux & 1) : (h.features & 1);
    bool subcommand_ok = !queued || ((h.count >> 8) & 0x1F) == 0;
    uint32_t blocks = data_out_bytes(s) / ata::kSectorBytes;
    return trim && subcommand_ok && blocks <= drive_.config().identity.dsm_max_blocks;
  }
  uint64_t lba = s.lba & 0xFFFFFFFFFFFFull;
  if (lba + s.sectors > drive_.user_sectors()) return false;  // IDNF
  for (const drive::LbaRange& r : drive_.config().faults.idnf)
    if (r.overlaps(lba, s.sectors)) return false;
  return true;
}

void CommandLayer::submit(uint8_t idx, uint64_t cycle) {
  Slot& s = slots_[idx];
  const fis::H2D& h = s.h2d;
  drive::AtaCommand cmd;
  cmd.command = h.command;
  cmd.features = h.features;
  cmd.lba = h.lba;
  cmd.count = h.count;
  cmd.device = h.device;
  cmd.icc = h.icc;
  cmd.control = h.control;
  cmd.aux = h.aux;
  cmd.user_tag = idx | uint64_t(s.generation) << 8;

  bool write = h.command == ata::kWriteDmaExt || h.command == ata::kWriteDmaFuaExt ||
               h.command == ata::kWriteFpdmaQueued;
  if (s.sector_read) {
    s.words.resize(s.sectors);
    cmd.sink.words = s.words.data();
    // Literal sectors read back as their bytes; only then does the Drive copy bytes out.
    uint64_t lba = s.lba & 0xFFFFFFFFFFFFull;
    uint64_t end = std::min<uint64_t>(lba + s.sectors, drive_.user_sectors());
    if (drive_.ssd().content().literal_sectors())
      for (uint64_t x = lba; x < end && !s.has_literal; ++x) s.has_literal = drive_.ssd().content().word(x) == drive::kLiteralWord;
    if (s.has_literal) {
      s.bytes.resize(size_t(s.sectors) * ata::kSectorBytes);
      cmd.sink.bytes = s.bytes.data();
    }
  } else if (is_data_in(s.proto)) {
    s.pio.clear();
    cmd.pio_in = &s.pio;  // IDENTIFY, log pages
  } else if (write) {
    cmd.payload.kind = drive::WritePayload::Kind::kZeros;  // no data taken: the Drive refuses it anyway
    if (s.data_done && !s.transfer_failed) {
      // One content for the whole command if every sector agrees, else literal bytes.
      const uint32_t* dw = reinterpret_cast<const uint32_t*>(s.bytes.data());
      PatternCodec::Content first = codec_.classify(s.lba, dw);
      bool same = first.kind != drive::WritePayload::Kind::kLiteral;
      for (uint32_t i = 1; i < s.sectors && same; ++i) same = codec_.classify(s.lba + i, dw + i * kSectorDwords) == first;
      if (same) {
        cmd.payload.kind = first.kind;
        cmd.payload.word = first.word;
        cmd.payload.compress_pct = first.compress_pct;
      } else {
        cmd.payload.kind = drive::WritePayload::Kind::kLiteral;
        cmd.payload.bytes = s.bytes.data();
      }
    }
  } else if (s.data_done && !s.transfer_failed) {
    cmd.data_out = s.bytes.data();  // DSM range list
    cmd.data_out_bytes = s.total_bytes;
  }

  // A data-out command whose data crossed the wire: the Drive must not book it again.
  cmd.data_phase_done = s.data_done;
  cmd.release_sent = idx != kNonQueued;  // next_fis sends it first, before anything else
  s.seq = drive_.next_completion_seq();
  // The Drive's data CRC fault stays for reads; a write's data has all arrived (R_OK)
  // unless the link answered R_ERR, and then the Drive fails it as for its own fault.
  double& crc_rate = drive_.faults().data_fis_crc_error_rate;
  double keep = crc_rate;
  if (write) crc_rate = s.transfer_failed ? 1.0 : 0.0;
  drive_.submit(cmd, cycle_ns(cycle));
  crc_rate = keep;
  s.ignored = drive_.pending_completion(s.seq) == nullptr;
  s.phase = Phase::kExecuting;
  if (!is_data_in(s.proto)) s.data_started = s.data_done = true;
  wake_ = 0;
}

void CommandLayer::finish_data_out(uint8_t idx, uint64_t cycle) {
  Slot& s = slots_[idx];
  s.data_done = true;
  if (s.proto == Protocol::kPioOut && s.transfer_failed) {
    // The password block was lost: the device fails the command itself.
    s.phase = Phase::kExecuting;
    s.popped = true;
    s.done = Completion{};
    s.done.command = s.h2d.command;
    s.done.status = ata::kStatusDrdy | ata::kStatusErr;
    s.done.error = ata::kErrorIcrc | ata::kErrorAbrt;
    status_push(idx);
    return;
  }
  submit(idx, cycle);
}

// ---- FISes to the host ----

bool CommandLayer::next_fis(TxFrame& out, uint64_t cycle) {
  SimTime now = cycle_ns(cycle);
  pop_completions(now);
  if (resend_) {
    resend_ = false;
    ++counters_.retransmits;
    return true;  // the frame is still as it was
  }
  out.corrupt_crc = false;
  last_was_data_ = false;
  SimTime next = drive_.next_completion_time();
  SimTime lead = drive_.link_timing().fis_ns(drive::fis_dwords::kRegD2H);
  uint64_t wake = first_cycle_at(next == drive::kNever ? next : next > lead ? next - lead : 0);
  for (uint32_t i = 0; i < status_len_; ++i)  // taken, their status not yet due
    wake = std::min(wake, first_cycle_at(slots_[status_[(status_head_ + i) % status_.size()]].popped_ns));
  if (signature_due_) {
    // Nothing goes before the signature, and it waits for the Drive to be ready.
    if (now < drive_.ready_at()) {
      wake_ = std::min(wake, first_cycle_at(drive_.ready_at()));
      return false;
    }
    signature_due_ = false;
    out.n = fis::reg_d2h(out.dw, kSignatureStatus, kSignatureError, false, 1, 1);
    return true;
  }
  if (release_len_) {
    release_head_ = (release_head_ + 1) % releases_.size();
    --release_len_;
    out.n = fis::reg_d2h(out.dw, kStatusReleased, 0, false);
    return true;
  }
  if (active_ >= 0) {
    if (continue_phase(out)) return true;
    if (active_ >= 0) {
      wake_ = wake;  // waiting for the host's data
      return false;
    }
  }
  // A young good status yields to a due data phase of one Data FIS (and then shares the
  // next SDB); a longer phase waits for it (drive::kSdbHoldMaxPhaseBytes).
  int due = due_phase(now);
  if (build_status(out, now, due >= 0 && phase_bytes(uint8_t(due)) <= drive::kSdbHoldMaxPhaseBytes)) return true;
  if (due >= 0 && start_phase(out, uint8_t(due))) return true;
  if (build_status(out, now, false)) return true;
  // Nothing due: sleep until the next completion or data phase can be.
  for (const Slot& s : slots_) {
    if (s.phase == Phase::kAwaitData && !halted_) {
      wake = std::min(wake, first_cycle_at(s.ready_ns));
    } else if (s.phase == Phase::kExecuting && is_data_in(s.proto) && !s.data_started) {
      if (const Completion* c = completion(s); c && c->t_data_start) wake = std::min(wake, first_cycle_at(data_due(s, *c)));
    }
  }
  wake_ = std::max(wake, cycle + 1);
  return false;
}

}  // namespace fisrig::device
