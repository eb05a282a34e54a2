// The raw command engine as a transaction-level model: the descriptor-ring interface of
// firmware/core/include/fisrig/engine_if.h implemented over the simulated drive, for the
// model target. It runs the VM's program at millions of commands per second and stamps
// the same phases the gateware stamps, on the same 150 MHz tick.
//
// FIS timing comes from the drive's wire model (every FIS costed in dwords with framing,
// handshakes and ALIGNs, host and device FISes sharing one wire); the engine adds the
// host's Register H2D, tag allocation, the one-non-queued-command rule, per-slot
// timeouts and the power controller. Its stamps are the ticks engine_if.h defines (a
// FIS's first dword, a data dword), placed inside each FIS's wire reservation as
// WireStamps says (docs/model-target.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <queue>
#include <unordered_map>
#include <vector>

#include "fisrig/sata/drive.h"
#include "current_sampler.h"
#include "pattern_styles.h"
#include "vm_cpu_time.h"
#include "wire_capture.h"
#include "wire_stamps.h"

extern "C" {
#include "fisrig/vm.h"
}

namespace fisrig::model {

using drive::SimTime;

class EngineModel {
 public:
  static constexpr uint32_t kSqEntries = 256;
  static constexpr uint32_t kCqEntries = 1024;
  static constexpr uint64_t kDefaultTimeoutTicks = FISRIG_DEFAULT_TIMEOUT_TICKS;  // as the gateware

  explicit EngineModel(drive::Drive& d);
  ~EngineModel() { drive_.log_data_fises(nullptr); }
  EngineModel(const EngineModel&) = delete;
  EngineModel& operator=(const EngineModel&) = delete;

  // The ops the VM drives the engine through.
  fisrig_engine_ops ops();

  uint64_t now_ticks() const { return ns_to_ticks(now_); }
  SimTime now_ns() const { return now_; }
  drive::Drive& drive() { return drive_; }

  // A tap for `fisrig raw`: the bytes every data-in command returned (sector data, log
  // pages, IDENTIFY), appended to `f` in completion order for commands that completed
  // without error. The rig's RAM window holds one 512-byte block per command, so what a
  // read returns is not kept anywhere else. Off (null) unless asked for.
  void capture_data_in(std::FILE* f) { capture_ = f; }
  // Reads into RAM (FISRIG_DATA_RAM) get the bytes the drive holds, as the gateware's
  // DMA puts them there (a verify pass decodes them). The drive keeps a content word per
  // sector, and a generated pattern's word is 1 + its data_word, so a word's bytes are the
  // integrity stamp at compress_pct 100 unless the write said otherwise: with
  // remember_write_styles on, the engine remembers the writes that did (LFSR data,
  // another compress_pct), one entry each, which runs without read-back do not need.
  void remember_write_styles(bool on) { styles_.remember(on); }
  // The analyzer's capture (capture.h, engine_capture.cc): its windows' entries to `f`
  // (capture.bin, after its header); finish_capture at the run's end writes a window still
  // open. Without a file, CAPTURE descriptors still arm and end OK, and nothing is kept.
  void capture_wire_to(std::FILE* f);
  void finish_capture();
  const WireCapture& wire_capture() const { return wire_capture_; }

 private:
  struct Slot {
    fisrig_cmd_desc desc{};
    uint64_t ts_submit = 0;
    uint64_t ts_h2d = 0;
    uint64_t generation = 0;  // completions of an earlier occupant are stale
    SimTime h2d_end = 0;      // its H2D's reservation end (R_OK): the device had it
    // As the drive booked it when it took the command: the end of the D2H that released it
    // (queued). The engine sends no H2D before it (queued_issue_time).
    SimTime accept_end = 0;
    uint64_t seq = 0;         // the drive's sequence number for its completion
    std::vector<drive::Drive::DataFis> fises;  // where its Data FISes end (a cut's record)
    std::vector<uint8_t> captured;  // capture_data_in: what the command returned
    // The protocol the drive answers its command with (protocol_mismatch.h), and where
    // that and the descriptor's disagree so that the drive's own status does not end it,
    // the record it ends with at its deadline: TIMEOUT (the engine's timeout and COMRESET,
    // with what crossed before), or OK/LENGTH at the D2H that released a queued command.
    uint8_t answer = 0;
    bool ends_prepared = false;
    fisrig_cpl_record ends_as{};
    // Its record when the drive fell quiet (quiet_from): what had crossed by then, ended
    // LINK_LOST when the rig sees the link fall.
    bool lost = false;
    fisrig_cpl_record lost_as{};
  };
  // The power controller's cut, armed for the count-th FIS event of a kind: as the
  // gateware's (engine/power.py, wire_tap.TapEvents), the events are counted in wire order
  // at the tick of their first dword (a Data FIS's first payload dword, each Data FIS one),
  // from the arming on, and the rails fall delay_ticks after the last one counted. The
  // drive books a command's FISes when it takes it, so each command's events are known
  // then and wait in `due` until the clock reaches them.
  struct Armed {
    bool on = false;
    uint16_t event = 0;
    uint32_t left = 0;
    uint64_t delay_ticks = 0;
    uint64_t from_tick = 0;
    uint64_t trigger_tick = 0;  // what the delay counts from (the cut's ts_trigger)
    SimTime cut_at = drive::kNever;
    std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<uint64_t>> due;
  };

  void doorbell(uint32_t tail);
  void issue_waiting();
  void range_list_from_generator(const fisrig_cmd_desc& d, drive::AtaCommand& cmd);
  // When the engine may take a queued descriptor and send its H2D, at or after now, by the
  // gateware's rule (engine/sequencer.py, can_queue): not before the D2H that released the
  // last queued command, and not while a command's data phase is open (from its DMA Setup
  // to its last Data FIS). The drive has booked every FIS of the commands it holds, so the
  // first such time is known now.
  SimTime queued_issue_time();
  void start(const fisrig_cmd_desc& d);
  void move_bookings(const std::vector<drive::LinkTiming::Move>& moves);
  // Ends a descriptor the engine does not start (refused, or no link) with `result`, now.
  void end_at_once(const fisrig_cmd_desc& d, uint8_t result);
  void render_sector(uint32_t word, uint64_t lba, uint8_t* out) const;
  void power(const fisrig_cmd_desc& d);
  void link(const fisrig_cmd_desc& d);
  void wait(uint64_t until_ticks);
  void wait_engine(uint64_t until_ticks);
  // The engine and the drive brought to `t`: every event before it handled (the VM's
  // clock ran ahead of them while it built descriptors and records).
  void run_until(SimTime t);
  SimTime next_event() const;  // the earliest event but a waiting descriptor's take (issue_at_)
  void process_next_event(SimTime next);
  void deliver(const drive::Completion& c);
  // A command whose descriptor's protocol disagrees with the drive's answer: its record
  // and deadline when the drive's status will not end it (protocol_mismatch.h).
  void prepare_mismatch_end(uint8_t s, const drive::Completion& c);
  // Ends a slot whose prepared end (not a timeout) is due by t; false if none.
  bool end_prepared(SimTime t);
  static uint32_t sectors_moved(const fisrig_cmd_desc& d, const drive::Completion& c);
  // The slot takes a command again: out of the busy count and the booked phases. A command
  // ended before its status (timeout, NCQ recovery) also changes when the next queued one
  // may go: those callers drop the cached issue time themselves.
  void free_slot(uint8_t s) {
    busy_mask_ &= ~(1u << s);
    if (deadlines_[s] == next_deadline_) next_deadline_known_ = false;
    deadlines_[s] = drive::kNever;
    if (phase_close_[s] > now_) drop_phase(s);
    if (nonqueued_slot_ == s) nonqueued_slot_ = -1;
  }
  void complete(uint8_t slot, fisrig_cpl_record r) {
    r.slot = slot;
    if (wire_capture_.on()) capture_record(r);
    push_cq(r);
  }
  // The capture (engine_capture.cc): a CAPTURE descriptor; a record's FISes, events and
  // triggers; an event of the rig's; the tick before which every FIS is known (no command
  // under way was taken before it).
  void capture_desc(const fisrig_cmd_desc& d);
  void capture_record(const fisrig_cpl_record& r);
  void capture_command(uint8_t slot, const fisrig_cpl_record& r);
  void capture_event(uint8_t event, uint64_t tick, uint8_t tag);
  uint64_t capture_settled() const;
  WireCapture wire_capture_;
  // The slots' state at a cut (engine_if.h's struct fisrig_cut_record).
  struct CutMasks {
    uint32_t issued = 0, queued = 0, data = 0;
  };
  void crossed_by(uint8_t slot, SimTime t, fisrig_cpl_record& r, CutMasks& m) const;
  // The cut's own record, with the slots' state at t, as the gateware's comes before the
  // records of the commands it ends.
  void write_cut_record(SimTime t, uint64_t trigger_tick);
  // Ends every command in a slot at t (the drive's power gone, COMRESET) with `result`
  // and what had crossed by then. Call it before the drive drops their completions.
  void lose_outstanding(SimTime t, uint8_t result);
  // The armed kind's events of a command the drive has booked (its H2D's first dword
  // tick, its completion while pending, its Data FISes) into armed_.due.
  void note_events(uint64_t h2d_tick, const drive::Completion* c, uint8_t protocol,
                   const std::vector<drive::Drive::DataFis>& fises);
  SimTime next_due() const { return armed_.due.empty() ? drive::kNever : ticks_to_ns(armed_.due.top()); }
  void cut_if_due(SimTime t);
  // NCQ error recovery, as the gateware does it (engine/sequencer.py, RECOVERED): the engine reads log
  // 10h itself, then ends the failing tag with the log's status, error and LBA and every
  // other queued command NCQ_ABORTED, at the log's last data dword.
  bool hold_for_recovery(uint8_t slot, const drive::Completion& c, const fisrig_cpl_record& r);
  void recovered(const drive::Completion& log);
  SimTime next_deadline() const;

  static void c_doorbell(void* ctx, uint32_t tail);
  static uint32_t c_sq_head(void* ctx);
  static uint32_t c_cq_tail(void* ctx);
  static void c_cq_consumed(void* ctx, uint32_t head);
  static uint64_t c_now(void* ctx);
  static void c_wait(void* ctx, uint64_t until);

  drive::Drive& drive_;
  WireStamps wire_;
  SimTime now_ = 0;
  // The VM's clock: the rig's CPU takes time to reap a completion and to build a
  // descriptor (VmCpuTime), and a descriptor reaches the engine when the CPU rings for it.
  SimTime cpu_ns_ = 0;
  // The CPU's last reap began here and ends at reap_to() (record_stall_ticks).
  SimTime reap_from_ = 0, reap_ns_ = 0;
  SimTime reap_to() const { return reap_from_ + reap_ns_; }
  // The ticks the sequencer's first record of a status at status_tick (of a command the
  // drive answered with `protocol`) waits beyond WireStamps::kRecordTicks: a queued read's
  // while the CPU reaps or builds descriptors (WireStamps::kRecordStallReapingTicks).
  uint64_t record_stall_ticks(uint64_t status_tick, uint8_t protocol) const;
  // The tick the sequencer has written every record of a status by (WireStamps).
  uint64_t records_until_ = 0;
  std::vector<fisrig_cmd_desc> sq_;
  std::vector<fisrig_cpl_record> cq_;
  std::vector<SimTime> cq_ns_;  // when each record went into the ring
  void push_cq(const fisrig_cpl_record& r) {
    cq_ns_[cq_tail_ & (kCqEntries - 1)] = now_;
    cq_[cq_tail_++ & (kCqEntries - 1)] = r;
  }
  std::vector<uint8_t> data_window_;
  uint32_t sq_head_ = 0, cq_tail_ = 0, cq_head_ = 0;
  std::vector<uint8_t> pio_in_;
  std::vector<uint8_t> range_list_;  // range_list_from_generator's
  std::deque<fisrig_cmd_desc> waiting_;  // fetched, not yet started (one non-queued at a time)
  Slot slots_[FISRIG_ENGINE_SLOTS];
  int nonqueued_slot_ = -1;
  // The busy slots, as bits and nowhere else: a walk over 32 slots of their size touched
  // 32 cache lines for the two or three in use.
  uint32_t busy_mask_ = 0;
  bool busy(int s) const { return busy_mask_ >> s & 1u; }
  // When each slot's command times out (kNever for a free slot), out of the slots, and the
  // earliest, kept until the slot that had it is freed: wait() asks for it at every event,
  // and the walk over the busy slots' deadlines was 4% of the main job's model time (perf;
  // all 32 busy at queue depth 32).
  SimTime deadlines_[FISRIG_ENGINE_SLOTS];
  mutable SimTime next_deadline_ = drive::kNever;
  mutable bool next_deadline_known_ = true;
  // The last queued command sent: its D2H releasing it ends accept_pending (its slot and
  // completion, as the drive holds it until its status).
  int accept_slot_ = -1;
  // A queued descriptor waits for queued_issue_time(): the engine takes it then (an event
  // for wait). The time stays known (issue_known_) until the slots' phases or the command
  // awaiting its accept change: a start, or commands ended before their status.
  SimTime issue_at_ = drive::kNever;
  SimTime issue_time_ = 0;
  bool issue_known_ = false;
  // The queued commands' data phases as the drive booked them, from the end of the DMA
  // Setup to the end of the last Data FIS: phases_[phase_head_, phase_tail_) in order of
  // their start. queued_issue_time merges them as intervals are merged, in that order, and
  // stops at the first phase that starts after the time it has reached; phases over by now
  // leave from the front. (Two can overlap, as in the 128 KiB fill of
  // model.instructions_per_cmd's run: an ended phase behind a longer one then waits for it
  // to leave, holding nothing back meanwhile.) It runs for every command: a walk over every
  // slot's phase, again after each move, took 342 of 7,718 instructions a command in
  // model.instructions_per_cmd (1,445 of 8,952 before the phases left the slots).
  struct BookedPhase {
    SimTime open, close;
    uint8_t slot;
  };
  static constexpr uint32_t kPhaseRoom = 2 * FISRIG_ENGINE_SLOTS;  // the ended ones go when full
  BookedPhase phases_[kPhaseRoom] = {};
  uint32_t phase_head_ = 0, phase_tail_ = 0;
  SimTime phase_close_[FISRIG_ENGINE_SLOTS] = {};  // each slot's last phase's end (0: dropped)
  void book_phase(uint8_t s, SimTime open, SimTime close);
  void drop_phase(uint8_t s);
  Armed armed_;
  // The power pins' staging (FISRIG_POWER_STAGE), as the gateware's power controller keeps
  // it; the drive's power goes when the first pin it needs (a rail of its profile's
  // power.rails, or P3) switches off after an edge, and comes back when the last is on.
  struct Staging {
    bool used[4] = {true, true, true, false};  // enum fisrig_power_pin
    uint64_t off_ticks[4] = {}, on_ticks[4] = {};
  };
  Staging stage_;
  SimTime loss_at_ = drive::kNever;  // an off edge's loss still to come
  // The link as the rig's PHY sees it (host_phy.h): up, falling at link_fall_at_ (the drive
  // went quiet: its power, or its port reset; what is sent meanwhile goes nowhere and ends at
  // the fall), down until link_up_at_ (the signature; kNever while the drive cannot answer).
  // A descriptor fails at once while it is down, as on the gateware. Each fall and rise is
  // an event record (FISRIG_EVENT_REC_LINK_DOWN, _UP).
  bool link_up_ = true;
  SimTime link_fall_at_ = drive::kNever, link_up_at_ = drive::kNever;
  // When the drive, powered on or its port reset by itself, sends COMINIT unasked: until
  // then it does not answer a COMRESET (sim/device's DeviceOob, kBooting).
  SimTime boots_until_ = 0;
  // A COMRESET, POWER ON or link wait waiting for the signature: its record, ended OK by
  // the signature or TIMEOUT at give_up.
  struct LinkWait {
    bool on = false;
    fisrig_cpl_record r{};
    SimTime give_up = drive::kNever;
  };
  LinkWait link_wait_;
  void link_event(uint8_t code, uint8_t result, uint64_t tick);  // a LINK_DOWN or LINK_UP record
  void comreset_link(SimTime t, uint64_t fall_ticks);  // the engine's COMRESET at t
  void quiet_from(SimTime t);   // the drive stops answering at t: the link falls when the rig sees it
  void link_fell(SimTime t);
  void link_came_up(SimTime t);
  void wait_for_link(const fisrig_cpl_record& r, const fisrig_cmd_desc& d);
  void link_wait_timed_out(SimTime t);
  SimTime next_link_event() const {
    return std::min({link_fall_at_, link_up_at_, link_wait_.on ? link_wait_.give_up : drive::kNever});
  }
  bool takes_power(int pin) const {
    return stage_.used[pin] && (pin == FISRIG_PIN_P3 || (drive_.config().power.rails >> pin & 1));
  }
  void off_edge(SimTime t);        // POWER OFF or a cut at t
  void lose_power(SimTime t);      // a pin the drive runs on fell at t: its commands end LINK_LOST
  SimTime power_back_at(SimTime t) const;  // POWER ON at t
  // The current sampler (FISRIG_POWER_SAMPLE, current_sampler.h).
  CurrentSampler sampler_;
  SimTime next_current_record() const { return sampler_.next_record(); }
  void sample(const fisrig_cmd_desc& d, fisrig_cpl_record& r);  // POWER SAMPLE
  // Takes the samples due by t (ticks at or before it), a record each time the buffer fills.
  void sample_through(SimTime t);
  auto sense() {
    return [this](SimTime at) { return drive_.sensed_ma(at); };
  }
  // A full ring drops a record, as the gateware's sampler does when the ring stays full.
  auto push_current() {
    return [this](const fisrig_cpl_record& c) { return cq_tail_ - cq_head_ < kCqEntries && (push_cq(c), true); };
  }
  std::vector<drive::Drive::DataFis> fis_log_;  // the drive's, for the command it takes next
  std::FILE* capture_ = nullptr;
  PatternStyles styles_;
  std::vector<uint32_t> read_words_;
  // An NCQ error being recovered: the log read in flight, the records it holds back and the
  // log as the drive will report it. Nothing new is issued meanwhile.
  static constexpr uint64_t kRecoveryTag = ~uint64_t(0);
  struct Recovery {
    bool on = false;
    drive::NcqErrorLog log;
    std::vector<std::pair<uint8_t, fisrig_cpl_record>> held;
    // For the capture: the error SDB's first dword and the log read's FISes.
    uint64_t sdb_tick = 0, h2d_tick = 0;
    std::vector<drive::Drive::DataFis> fises;
  };
  // The capture's entries of an NCQ error recovery: the error SDB (with the completion that
  // carried it), then the engine's READ LOG EXT 10h with what it read (`log`).
  void capture_error_sdb(const drive::Completion& c);
  void capture_log_read(const drive::Completion& log);
  Recovery recovery_;
  std::vector<uint8_t> log_page_;
};

}  // namespace fisrig::model
