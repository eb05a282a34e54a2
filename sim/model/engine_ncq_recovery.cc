// The engine model's NCQ error recovery, as the gateware's (engine/sequencer.py, RECOVERED).
#include "engine_model.h"

#include "descriptor_fields.h"

namespace fisrig::model {

// The failing queued command and those the error aborted: their records wait for the
// engine's log read, which the first of them starts when the error SDB is in (the gateware
// sends it as soon as no FIS is pending). Their slots stay taken until then.
bool EngineModel::hold_for_recovery(uint8_t s, const drive::Completion& c, const fisrig_cpl_record& r) {
  if (!recovery_.on) {
    const drive::NcqErrorLog& log = drive_.ncq_error_log();
    if (!log.valid) return false;  // no error to read back: the record stands as it is
    recovery_.on = true;
    recovery_.log = log;
    recovery_.held.clear();
    drive::AtaCommand cmd;
    cmd.command = ata::kReadLogExt;
    cmd.lba = ata::kLogNcqError;
    cmd.count = 1;
    cmd.device = 0x40;
    cmd.user_tag = kRecoveryTag;
    log_page_.clear();
    cmd.pio_in = &log_page_;
    SimTime arrive = drive_.receive_h2d(std::max(now_, c.t_complete) + ticks_to_ns(WireStamps::kNcqRecoveryTicks));
    uint64_t seq = drive_.next_completion_seq();
    drive_.submit(cmd, arrive);
    recovery_.sdb_tick = wire_.first_dword(c.t_complete, drive::fis_dwords::kSetDeviceBits);
    recovery_.h2d_tick = wire_.first_dword(arrive, drive::fis_dwords::kRegH2D);
    if (wire_capture_.on()) {
      recovery_.fises = fis_log_;
      capture_error_sdb(c);
    }
    if (armed_.left)
      note_events(wire_.first_dword(arrive, drive::fis_dwords::kRegH2D), drive_.pending_completion(seq),
                  FISRIG_PROTO_PIO_IN, fis_log_);
    fis_log_.clear();
  }
  recovery_.held.emplace_back(s, r);
  return true;
}

// The log is in: the failing tag ends ATA_ERROR with the log's status, error and LBA, every
// other held command NCQ_ABORTED (all of them if the log read failed, or the error was a
// non-queued command's), stamped where the gateware's RECOVERED writes them.
void EngineModel::recovered(const drive::Completion& log) {
  if (!recovery_.on) return;  // a power cut or COMRESET ended the held commands already
  const drive::NcqErrorLog& e = recovery_.log;
  uint64_t at = log.t_data_end ? wire_.last_data_dword(log.t_data_end) : ns_to_ticks(log.t_complete);
  if (wire_capture_.on()) capture_log_read(log);
  for (auto& [s, r] : recovery_.held) {
    bool failing = log.ok() && !e.non_queued && s == e.tag;
    if (failing) {
      r.result = FISRIG_RESULT_ATA_ERROR;
      r.status = e.status;
      r.error = e.error;
      put_lba(r.lba, e.lba);
    } else {
      // As the gateware's sweep: the status and error of the error SDB that ended it.
      r.result = FISRIG_RESULT_NCQ_ABORTED;
      r.status = e.status;
      r.error = e.error;
    }
    r.ts_status = at;
    free_slot(s);
    issue_known_ = false;
    complete(s, r);
  }
  recovery_ = Recovery{};
}

}  // namespace fisrig::model
