// The device's transport and ATA command layers over the transaction-level Drive: FISes in
// from the link, FISes out to it, commands into Drive::submit() and completions out of it.
//
// Timing. The Drive computes every phase of a command in ns (t_accept, t_data_start,
// t_data_end, t_complete) as if the wire were free and idle. Here those are "not before"
// times on the real cycle clock (cycle n = n * 20 / 3 ns): a FIS goes out when its Drive
// time has passed and the link is free, so the RTL's real wire adds its own time.
//  - Reads, IDENTIFY, logs, non-data commands: submitted when the Register H2D arrives.
//    Their data goes out once t_data_start has passed (NCQ: DMA Setup + Data FISes per tag,
//    in the order of the tags' t_data_start), their status once t_complete has.
//  - Writes, DSM TRIM, SECURITY with data: the Drive needs the data at submit(), so the
//    device asks for it itself (first DMA Activate / DMA Setup / PIO Setup not before the
//    H2D plus the profile's command overhead) and submits when the last Data FIS has
//    arrived, at that cycle's time, marked data_phase_done: the Drive books no accept,
//    overhead or data of its own for it (only its buffer's room and FUA can hold the
//    status back), and the status goes no earlier than the Drive says.
//  - NCQ: a Register D2H with status 40h releases the bus right after each queued H2D
//    (before any other FIS; the Drive books it nowhere: AtaCommand::release_sent);
//    one data phase at a time; each DMA Setup (A = 0) is followed by a DMA Activate
//    before each of the host's Data FISes. Completed tags whose data is done go out
//    together in one Set Device Bits (a completion waits up to 5 us for company while
//    other tags' data phases are ready to go, never longer). A failed queued command is an SDB with ERR and the
//    error register; the queue is halted (no more DMA Setups; the tags the Drive aborted
//    get no FIS, the host infers them) until the next non-queued command (READ LOG EXT
//    10h, whose page names the tag, as the Drive keeps it).
//  - Data FIS CRC fault (the Drive's data_fis_crc_error_rate, decided per Data FIS of a
//    read): the device sends exactly that Data FIS with a corrupted CRC, no more data,
//    and the Drive's ICRC|ABRT status.
//  - A host Data FIS answered R_ERR (bad CRC, or the r_err_rate fault): the command takes
//    no more data and fails with ICRC|ABRT (writes: the Drive fails it as for its own data
//    CRC fault, at the command's first LBA; DSM: ABRT, its range list being lost; PIO out:
//    the device answers ICRC|ABRT itself). A Register H2D answered R_ERR is dropped: the
//    host sends it again or times out. A non-data FIS the host answers R_ERR is sent again
//    (up to three times).
//  - Data: the pattern codec turns received sectors into the Drive's content words and
//    back. A write whose sectors are all one content (zeros, or one pattern word) is one
//    kZeros/kWord submit; a write mixing contents goes as literal bytes.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "fisrig/device/ata_protocol.h"
#include "fisrig/device/counters.h"
#include "fisrig/device/fis.h"
#include "fisrig/device/link_layer.h"
#include "fisrig/device/pattern_codec.h"
#include "fisrig/device/sata_clock.h"
#include "fisrig/sata/drive.h"

namespace fisrig::device {

class CommandLayer {
 public:
  static constexpr uint32_t kSlots = 33;  // NCQ tags 0..31, then the non-queued command
  static constexpr uint8_t kNonQueued = 32;
  static constexpr uint32_t kMaxRetransmits = 3;
  // A queued completion waits up to this long for others to share its Set Device Bits
  // while a data phase of one Data FIS is ready to go (with nothing else to do, or only a
  // longer phase, it goes at once).
  static constexpr drive::SimTime kSdbCoalesceNs = drive::kSdbCoalesceNs;

  CommandLayer(drive::Drive& drive, PatternCodec& codec, DeviceCounters& counters);

  // A FIS from the host; ok is false when the link answered it R_ERR.
  void on_fis(const uint32_t* f, size_t n, bool ok, uint64_t cycle);
  // The FIS last built went (R_OK) or did not (R_ERR, aborted).
  void on_sent(bool ok);
  // When the link can take a FIS: builds the next one that is due into `out`.
  bool next_fis(TxFrame& out, uint64_t cycle);
  // No FIS can be due before this cycle (next_fis need not be asked earlier).
  uint64_t wake_cycle() const { return wake_; }
  // Link up: the signature Register D2H is due (once the Drive is ready).
  void link_up() { signature_due_ = true, wake_ = 0; }
  // Drops every command (after Drive::comreset or power_off) and stale completions.
  void reset();

  bool idle() const;      // no command outstanding
  bool halted() const { return halted_; }

 private:
  enum class Phase : uint8_t { kFree, kAwaitData, kDataOut, kExecuting };
  enum class Step : uint8_t { kSetup, kActivate, kWaitHost, kData };
  struct Slot {
    Phase phase = Phase::kFree;
    Protocol proto = Protocol::kNonData;
    fis::H2D h2d;
    uint64_t lba = 0;
    uint32_t sectors = 0;
    uint32_t generation = 0;
    drive::SimTime ready_ns = 0;  // data-out: asks for data no earlier
    // The data phase.
    Step step = Step::kData;
    bool data_started = false;
    bool data_done = false;
    uint32_t total_bytes = 0;
    uint32_t done_bytes = 0;
    uint32_t bad_fis_at = ~0u;  // data-in: offset of the Data FIS to send with a bad CRC
    bool transfer_failed = false;
    // The Drive's side.
    uint64_t seq = 0;
    bool ignored = false;  // the Drive did not take it (hung): it never completes
    bool popped = false;
    drive::SimTime popped_ns = 0;
    drive::Completion done{};
    bool sector_read = false;
    bool has_literal = false;
    std::vector<uint32_t> words;  // sector reads: content words
    std::vector<uint8_t> bytes;   // data-out bytes; literal sectors of a read
    std::vector<uint8_t> pio;     // IDENTIFY and log pages
  };

  // Intake.
  void take_command(const fis::H2D& h, uint64_t cycle);
  bool wants_data(const Slot& s) const;
  uint32_t data_out_bytes(const Slot& s) const;
  void submit(uint8_t idx, uint64_t cycle);
  void host_data(const uint32_t* payload, size_t dwords, bool ok, uint64_t cycle);
  void finish_data_out(uint8_t idx, uint64_t cycle);
  void pop_completions(drive::SimTime now);
  void drop_unsubmitted_queued();
  void abort_queue();
  const drive::Completion* completion(const Slot& s) const {
    return s.popped ? &s.done : drive_.pending_completion(s.seq);
  }

  // FISes out.
  bool build_status(TxFrame& out, drive::SimTime now, bool coalesce);
  // The slot whose data phase is due first at `now`, or -1; and its bytes.
  int due_phase(drive::SimTime now);
  uint32_t phase_bytes(uint8_t idx) const;
  bool start_phase(TxFrame& out, uint8_t idx);
  bool continue_phase(TxFrame& out);
  void end_phase();
  uint32_t data_in_total(const Slot& s, const drive::Completion& c) const;
  // When a FIS the Drive booked on its own wire is due on the real one: the Drive's times
  // are the ends of those bookings (t_complete: the status FIS's; t_data_start: a setup
  // FIS's), so the FIS starts one FIS length earlier. Sending it at the end paid it twice.
  drive::SimTime status_due(const drive::Completion& c) const;
  drive::SimTime data_due(const Slot& s, const drive::Completion& c) const;
  void fill_data(const Slot& s, uint32_t offset, uint32_t bytes, uint32_t* out) const;
  void free_slot(uint8_t idx) { slots_[idx].phase = Phase::kFree; }
  void status_push(uint8_t idx) { status_[(status_head_ + status_len_++) % status_.size()] = idx; }

  drive::Drive& drive_;
  PatternCodec& codec_;
  DeviceCounters& counters_;
  std::array<Slot, kSlots> slots_;
  std::array<uint8_t, 64> releases_{};  // queued tags owed a releasing D2H, in arrival order
  uint32_t release_head_ = 0, release_len_ = 0;
  std::array<uint8_t, 64> status_{};    // slots whose completion popped, in that order
  uint32_t status_head_ = 0, status_len_ = 0;
  int active_ = -1;  // the slot whose data phase is under way
  bool halted_ = false;
  bool signature_due_ = false;
  bool resend_ = false;
  bool last_was_data_ = false;
  uint32_t retries_ = 0;
  uint64_t wake_ = 0;
};

}  // namespace fisrig::device
