// The simulated SATA SSD at transaction level: one ATA command in (its H2D fields and
// the simulated time it arrived), its completion out with the time of every phase. The
// Drive is the SATA front end (the ATA command set, IDENTIFY, NCQ, SMART, logs and the
// link's timing) over the SSD (sim/ssd: media, FTL, buffer, content, power), which it
// calls through ssd.h alone.
//
// Commands are processed when submitted; their completions come back in completion
// order through pop_completion(), which for NCQ is the drive's own out-of-order order.
// The RTL device side and the model target's engine both sit on this interface.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "fisrig/sata/ata.h"
#include "fisrig/sata/completion_queue.h"
#include "fisrig/sata/link_timing.h"
#include "fisrig/sata/smart.h"
#include "fisrig/ssd/config.h"
#include "fisrig/ssd/ssd.h"

namespace fisrig::drive {

// SATA Phy event counters (log 11h) and other things a test wants to know afterwards
// (what moved and the power cuts: the SSD's, ssd().stats()).
struct DriveStats {
  uint64_t commands = 0;
  uint64_t errors = 0;
  uint64_t ncq_errors = 0;
  uint64_t ncq_aborted = 0;
  uint64_t icrc_failures = 0;      // phy event 0x001
  uint64_t r_err_data = 0;         // 0x003/0x004
  uint64_t r_err_non_data = 0;     // 0x005
  uint64_t comresets = 0;          // 0x00A
  uint64_t link_drops = 0;         // the drive reset its port itself (link_drop_after_commands)
  uint64_t dropped_at_power_loss = 0;
  uint64_t ignored_while_off = 0;
  uint64_t ignored_while_hung = 0;
};

// What log 10h says about the last NCQ error.
struct NcqErrorLog {
  bool valid = false;
  bool non_queued = false;
  uint8_t tag = 0;
  uint8_t status = 0;
  uint8_t error = 0;
  uint64_t lba = 0;
  uint16_t count = 0;
};

class Drive {
 public:
  explicit Drive(DriveConfig config);

  // The host starts sending a Register H2D FIS at t: it waits for the wire, which the
  // device's own FISes share. Returns when the FIS has arrived (the time to submit at).
  // An H2D the device answers R_ERR (the r_err_rate knob, as sim/device's link does it to
  // every FIS the host sends) is sent again: it has arrived at the end of the second.
  //
  // `cut_in`: the H2D of a queued command whose releasing D2H the device sends at once
  // (submit it with AtaCommand::release_sent). Both go at the first instant at or after t
  // that the device is not sending, and what the device had booked after that moves later
  // (LinkTiming::cut_in), its completions' stamps with it: wire_moves() says how, for a
  // host that copied any. The rig's wire works so: at queue depth 32 the host's H2D went
  // in a gap too short for it and the release, and the device's next DMA Setup waited
  // (targets-agree-qd32's 128 KiB reads on rtl; the model waited for a gap that held both,
  // and let one command fewer in before each run of data phases). Without it, the H2D
  // waits for the first gap that holds it.
  SimTime receive_h2d(SimTime t, bool cut_in = false) {
    host_now_ = t;  // the host asks no earlier than this again: older wire history can go
    link_.retire_before(t);
    const SimTime h2d = link_.fis_ns(fis_dwords::kRegH2D);
    uint32_t sent = 1;
    if (chance(cfg().faults.r_err_rate)) {
      ++stats_.r_err_non_data;
      ++sent;
    }
    if (!cut_in) {
      moves_.clear();
      pulls_.clear();
      SimTime end = link_.reserve(t, h2d);
      return sent == 2 ? link_.reserve(end, h2d) : end;
    }
    SimTime start = link_.cut_in(t, sent * h2d + link_.fis_ns(fis_dwords::kRegD2H), moves_);
    pulls_.clear();
    if (!moves_.empty()) {
      apply_moves(moves_);
      if (coalesce_sdb_) share_pushed_statuses();
    }
    return start + sent * h2d;
  }
  // What the last receive_h2d moved on the wire (empty if nothing): the push, then each
  // pull of a status taken back after it (set_sdb_coalescing), in that order.
  const std::vector<LinkTiming::Move>& wire_moves() const { return moves_; }
  const std::vector<std::vector<LinkTiming::Move>>& wire_pulls() const { return pulls_; }
  // The command's Register H2D FIS was received at t. Its completion becomes available
  // through pop_completion(). Submitting while powered off or hung does nothing.
  void submit(const AtaCommand& cmd, SimTime t);
  // A hint that `cmd` comes next: starts loading the mapping entries it will touch, so
  // that a host with commands queued up overlaps their memory latency. Changes nothing.
  void prefetch(const AtaCommand& cmd) const { ssd_.prefetch_lba(cmd.lba); }
  // The same for a command at `lba`, for a host that has not built its AtaCommand yet.
  // Inline: the model target calls it for every command it starts.
  void prefetch_lba(uint64_t lba) const { ssd_.prefetch_lba(lba); }
  // The earliest pending completion; false when none is pending.
  bool pop_completion(Completion& out);
  SimTime next_completion_time() const;
  size_t pending() const { return pending_.size(); }
  // The sequence number the next submit()'s completion gets, and that completion while it
  // is pending (null once popped, dropped, or if the drive ignored the command). The RTL
  // device side sends a command's data when its data phase is due, before its
  // completion is; an NCQ error may still change the completion until it is popped.
  uint64_t next_completion_seq() const { return pending_.next_seq(); }
  const Completion* pending_completion(uint64_t seq) const { return pending_.find(seq); }
  // The same for the command submitted last, without the walk (the model target's engine).
  const Completion* last_submitted_completion(uint64_t seq) const { return pending_.find_last(seq); }
  // submit() then pop the command's completion (non-queued use, tools and tests).
  Completion execute(const AtaCommand& cmd, SimTime t);

  // Where each Data FIS of a command ends on the wire, for a host that must say what had
  // crossed when power was cut in mid-command (the model target's engine: the dwords and
  // data stamps of a LINK_LOST record, engine_if.h). submit() appends one entry per Data
  // FIS it books, in wire order, while a log is set; null turns it off.
  struct DataFis {
    uint64_t user_tag;
    SimTime start;    // its reservation's start (X_RDY)
    SimTime end;      // and end (R_OK)
    uint32_t dwords;  // its payload
  };
  void log_data_fises(std::vector<DataFis>* log) { fis_log_ = log; }

  // Lets idle time pass up to t (background GC, idle flush).
  void idle_until(SimTime t) { ssd_.idle_until(t); }
  // Rails off at t: the volatile cache and every unfinished command are lost.
  void power_off(SimTime t);
  // Rails on at t: ready (OOB done, signature sent) at ready_at().
  void power_on(SimTime t);
  // COMRESET at t: outstanding commands are dropped, the cache survives.
  void comreset(SimTime t);
  bool powered() const { return ssd_.powered(); }
  bool hung() const { return ssd_.hung(); }
  SimTime ready_at() const { return ready_at_; }
  // When the drive dropped its link of itself (the link_drop_after_commands knob: a
  // firmware that resets its SATA port), kNever if it has not since the host last asked:
  // its commands in flight are lost, and it sends COMINIT once ready_at() comes. The host
  // side (the model's engine, sim/device's OOB) takes it with link_drop_seen().
  SimTime link_drop_at() const { return link_drop_at_; }
  void link_drop_seen() { link_drop_at_ = kNever; }

  // What the drive draws and what the rig's current sense reads at t: the SSD's
  // (Ssd::current_ma, Ssd::sensed_ma).
  double current_ma(SimTime t) { return ssd_.current_ma(t); }
  uint16_t sensed_ma(SimTime t) { return ssd_.sensed_ma(t); }

  // The SATA speed the link came up at (1..3), which IDENTIFY word 77 reports; the device
  // side tells it at each link-up. Until then (and on the model target, whose link runs at
  // the drive's fastest speed) it is interface.max_gen.
  void set_link_gen(uint32_t gen) { link_gen_ = gen; }
  uint32_t link_gen() const { return link_gen_; }

  // How long the host takes from the end of the device's DMA Activate, DMA Setup or PIO
  // Setup on the wire to the start of its Data FIS, when the Drive books the host's data-out
  // itself (not when the device side carried it: AtaCommand::data_phase_done). 0, an ideal
  // host, unless the host says; the model target sets the rig's.
  void set_host_data_turnaround(SimTime ns) { host_turnaround_ = ns; }
  // Set Device Bits as the device side sends them (sim/device command_status.cc): a queued
  // command's good status that would go while another queued command's data phase is
  // ready waits for that phase (if it is under kSdbCoalesceNs old and the phase is of one
  // Data FIS, kSdbHoldMaxPhaseBytes), and then goes in one SDB with that command's. The Drive books a command's FISes when it takes it, so it
  // does this as it books the next command's DMA Setup: the status booked last, if it is
  // the last thing on the wire and the new data was ready when it would have gone, is
  // taken back and goes with the new command's. Off unless the host says: the device side
  // coalesces on its own wire; the model target turns it on.
  //
  // A queued read's data is ready, for this rule, when the device side would take it as
  // due: at the DMA Setup the Drive would book for it on a wire of the device's own FISes
  // (own_wire_: its DMA Setups, Data FISes and a Set Device Bits for every queued command,
  // none of the host's FISes, no status taken back), which is the wire the Drive keeps
  // inside sim/device (command_data.cc, data_due). On that wire a read's data goes after
  // the status before it, so a status waits for the next read's data only where the
  // host's FISes (a burst of H2Ds and their releases at the start of a run of data phases)
  // have put the real wire behind it by an SDB or more. Taking the data's readiness in the
  // controller instead, the model held every other 4 KiB read's status at queue depth 32
  // (1,468 shared SDBs of 3,000 reads on targets-agree-qd32 against the gateware's 299;
  // submit-to-status p50 43.3 against 36.6 us). The device side decides at the wire, after
  // the host's FISes went; the Drive books a read when it takes it, before the H2Ds that
  // follow it push the run back (receive_h2d's cut_in). So a push decides again: where a
  // status now starts at or after the next read's data is due on the device side's wire,
  // the status is taken back off the wire and goes with that read's, and what followed
  // comes an SDB earlier (share_pushed_statuses). On targets-agree-qd32 the gateware's
  // shared SDBs come at a run's start, the waiter's with the first read's; decided only at
  // booking the model's came at the run's end, and the 4 KiB reads' p99 from the H2D was
  // 64.80 against 57.47 us.
  void set_sdb_coalescing(bool on) { coalesce_sdb_ = on; }

  // IDENTIFY DEVICE's words, from what of the drive's state they report.
  struct IdentifyState {
    uint64_t visible_sectors;
    bool cache_enabled, security_enabled, smart_enabled;
    uint32_t link_gen;
  };
  static std::array<uint16_t, 256> identify_words(const DriveConfig& cfg, const IdentifyState& s);
  std::array<uint16_t, 256> identify_words() const;
  // A new drive's words (as Drive(cfg).identify_words()), its config checked as the
  // constructor checks it, without building one: building the 256 GB profile's tables takes
  // 0.9 s of page faults, and every run asks its drive's IDENTIFY first (fisrig-drive
  // identify). tests/drive/test_identify_speed.cc holds the two to each other.
  static std::array<uint16_t, 256> new_drive_identify_words(const DriveConfig& cfg);
  // SMART's attributes from the drive's counters, with power-on time up to `now`.
  std::vector<smart::Attribute> smart_attributes(SimTime now) const;
  bool smart_enabled() const { return smart_enabled_; }
  std::vector<uint8_t> read_log_page(uint8_t log, uint16_t page) const;  // empty if none

  // The SSD behind the front end (its media, mapping, buffer, content and counters).
  const Ssd& ssd() const { return ssd_; }
  Ssd& ssd() { return ssd_; }
  const DriveConfig& config() const { return ssd_.config(); }
  FaultKnobs& faults() { return ssd_.faults(); }
  // The drive's own wire costs: its phase times are the ends of FISes booked with them.
  const LinkTiming& link_timing() const { return link_; }
  bool write_cache_enabled() const { return ssd_.write_cache_enabled(); }
  const DriveStats& stats() const { return stats_; }
  const NcqErrorLog& ncq_error_log() const { return ncq_log_; }
  uint64_t user_sectors() const { return ssd_.user_sectors(); }
  // What it says it holds now (IDENTIFY, range checks): Ssd::visible_sectors.
  uint64_t visible_sectors() const { return ssd_.visible_sectors(); }

 private:
  struct Ctx;  // one command being processed
  void dispatch(Ctx& c);
  // The command's LBA range, or IDNF (past the end, or a fault knob's range).
  bool sectors_in_range(Ctx& c, uint64_t& lba, uint32_t& n);
  void do_read(Ctx& c);
  void do_write(Ctx& c);
  void do_dsm(Ctx& c, uint32_t blocks, bool trim);
  void do_flush(Ctx& c);
  void do_identify(Ctx& c);
  void do_read_log(Ctx& c);
  void do_set_features(Ctx& c);
  void do_security(Ctx& c);
  void do_sanitize(Ctx& c);
  void do_smart(Ctx& c);
  void pio_in_page(Ctx& c, const std::vector<uint8_t>& page);
  void pio_out_block(Ctx& c);
  void fail(Ctx& c, uint8_t error, uint64_t lba);
  void finish(Ctx& c);
  void push(const Completion& c);
  void raise_ncq_error(const Completion& failed);
  void reset_port(SimTime t);  // a COMRESET's effect: what is in flight dropped, ready 1 ms on
  bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  // A non-data FIS the device sends (the host answers R_OK: the fault knobs are the
  // device's, R_ERR on what it receives).
  SimTime send_fis(SimTime t, uint32_t dwords) { return link_.reserve(t, link_.fis_ns(dwords)); }
  // Everything the Drive keeps of wire times, moved as receive_h2d moved the wire.
  void apply_moves(const std::vector<LinkTiming::Move>& moves);
  // After a push (set_sdb_coalescing): the statuses the device side would now hold for the
  // next read's data, taken back and shared, in wire order (pulls_).
  void share_pushed_statuses();
  // A queued command's DMA Setup, not before `ready` (set_sdb_coalescing). `due`: when the
  // device side takes its data phase as due (a read's, on own_wire_), `ready` unless said.
  SimTime send_queued_setup(SimTime ready, uint64_t bytes, SimTime due = kNever);
  // The status taken back for a data phase goes when the command that took it ends (its
  // data phase is over): with that command's own SDB when it has one then (true), else alone.
  bool settle_deferred_sdb(Ctx& c);

  const DriveConfig& cfg() const { return ssd_.config(); }

  Ssd ssd_;
  LinkTiming link_;
  std::mt19937_64 rng_;

  bool security_enabled_ = false;
  bool erase_prepared_ = false;
  bool smart_enabled_ = true;  // kept across power cycles, as ACS-3 asks
  uint32_t link_gen_;
  SimTime ready_at_ = 0;
  SimTime link_drop_at_ = kNever;
  SimTime host_now_ = kNever;  // set by receive_h2d: commands then arrive after the host's now
  SimTime host_turnaround_ = 0;  // set_host_data_turnaround
  // The end of the last data phase booked on the wire (its last Data FIS): SATA has one
  // open at a time, and a queued write's DMA Setup waits for it (do_write).
  SimTime data_phase_end_ = 0;
  SimTime nonqueued_busy_until_ = 0;
  std::array<SimTime, ata::kNcqDepth> tag_busy_until_{};
  SimTime ncq_error_at_ = kNever;
  NcqErrorLog ncq_log_;
  uint64_t commands_seen_ = 0;
  CompletionQueue pending_;
  // set_sdb_coalescing: the good queued SDB booked last, and one taken back for a data phase.
  struct BookedSdb {
    SimTime start = 0, end = 0;
    SimTime oldest_due = 0;  // when its oldest status was first due to go
    uint32_t n = 0;          // its completions (0: none)
    uint64_t seqs[ata::kNcqDepth] = {};
  };
  bool coalesce_sdb_ = false;
  BookedSdb last_sdb_, deferred_sdb_;
  // set_sdb_coalescing: the device side's own wire, on which a queued read's data is due;
  // by tag, where it has a queued read's DMA Setup start (kNever: not a read) and the
  // command's SDB, and whether its status shares an SDB on the wire.
  LinkTiming own_wire_;
  std::array<SimTime, ata::kNcqDepth> own_due_{}, own_status_{};
  std::array<bool, ata::kNcqDepth> shares_sdb_{};
  std::vector<std::vector<LinkTiming::Move>> pulls_;
  DriveStats stats_;
  std::vector<DataFis>* fis_log_ = nullptr;
  std::vector<LinkTiming::Move> moves_;
  void log_fis(const Ctx& c, SimTime start, SimTime end, uint32_t dwords);
  // The Data FISes of `bytes` booked back to back as one reservation ending at `end`.
  void log_fises(const Ctx& c, SimTime end, uint64_t bytes);
};

}  // namespace fisrig::drive
