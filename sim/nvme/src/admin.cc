// The admin commands: queue creation and deletion, Identify, Get Log Page, Set and Get
// Features, Abort, Asynchronous Event Request, Format NVM and Sanitize.
#include <algorithm>

#include "fisrig/nvme/controller.h"

namespace fisrig::nvme {

namespace {
constexpr uint32_t kAsyncEventLimit = 4;  // AERL + 1
}

void Controller::admin(Cmd& c) {
  switch (c.sqe.opcode) {
    case FISRIG_NVME_ADMIN_CREATE_IO_CQ: return create_cq(c);
    case FISRIG_NVME_ADMIN_CREATE_IO_SQ: return create_sq(c);
    case FISRIG_NVME_ADMIN_DELETE_IO_SQ: return delete_sq(c);
    case FISRIG_NVME_ADMIN_DELETE_IO_CQ: return delete_cq(c);
    case FISRIG_NVME_ADMIN_IDENTIFY: return identify(c);
    case FISRIG_NVME_ADMIN_GET_LOG_PAGE: return get_log_page(c);
    case FISRIG_NVME_ADMIN_SET_FEATURES: return set_features(c);
    case FISRIG_NVME_ADMIN_GET_FEATURES: return get_features(c);
    case FISRIG_NVME_ADMIN_ABORT:
      // Every command runs to its end once fetched: there is none left to abort (dw0 bit 0).
      c.c.dw0 = 1;
      return;
    case FISRIG_NVME_ADMIN_ASYNC_EVENT_REQUEST:
      if (aers_.size() >= kAsyncEventLimit)
        return fail(c, FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_ASYNC_EVENT_LIMIT_EXCEEDED);
      c.held = true;  // completes when an event comes (async_event)
      return;
    case FISRIG_NVME_ADMIN_FORMAT_NVM: return format(c, false);
    case FISRIG_NVME_ADMIN_SANITIZE: return format(c, true);
    default: return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_OPCODE);
  }
}

void Controller::create_cq(Cmd& c) {
  uint32_t qid = c.sqe.cdw10 & 0xFFFF, size = (c.sqe.cdw10 >> 16) + 1;
  if (qid == 0 || qid > granted_queues_ || cqs_[qid].live)
    return fail(c, FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_INVALID_QUEUE_IDENTIFIER);
  if (size < 2 || size > profile().max_queue_entries)
    return fail(c, FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_INVALID_QUEUE_SIZE);
  // CAP.CQR: physically contiguous, page aligned; CC.IOCQES the 16-byte entry.
  if (!(c.sqe.cdw11 & 1) || c.sqe.prp1 % 4096 || ((cc_ >> FISRIG_NVME_CC_IOCQES_SHIFT) & 0xF) != 4)
    return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);
  cqs_[qid] = Cq{true, c.sqe.prp1, size, 0, 0, true, 0, {}, bool(c.sqe.cdw11 & 2), uint16_t(c.sqe.cdw11 >> 16)};
}

void Controller::create_sq(Cmd& c) {
  uint32_t qid = c.sqe.cdw10 & 0xFFFF, size = (c.sqe.cdw10 >> 16) + 1, cqid = c.sqe.cdw11 >> 16;
  if (qid == 0 || qid > granted_queues_ || sqs_[qid].live)
    return fail(c, FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_INVALID_QUEUE_IDENTIFIER);
  if (size < 2 || size > profile().max_queue_entries)
    return fail(c, FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_INVALID_QUEUE_SIZE);
  if (cqid == 0 || cqid >= cqs_.size() || !cqs_[cqid].live)
    return fail(c, FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_COMPLETION_QUEUE_INVALID);
  if (!(c.sqe.cdw11 & 1) || c.sqe.prp1 % 4096 || ((cc_ >> FISRIG_NVME_CC_IOSQES_SHIFT) & 0xF) != 6)
    return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);
  sqs_[qid] = Sq{true, c.sqe.prp1, size, 0, 0, uint16_t(cqid), c.t};
  list_pending_sqs();
  ++cqs_[cqid].users;
}

void Controller::delete_sq(Cmd& c) {
  uint32_t qid = c.sqe.cdw10 & 0xFFFF;
  if (qid == 0 || qid >= sqs_.size() || !sqs_[qid].live)
    return fail(c, FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_INVALID_QUEUE_IDENTIFIER);
  Sq& s = sqs_[qid];
  // What the host had submitted and the controller not fetched ends aborted, in order.
  while (s.head != s.tail) {
    Cmd a{};
    mem_.read(s.base + uint64_t(s.head) * FISRIG_NVME_SQE_BYTES, &a.sqe, sizeof a.sqe);
    s.head = (s.head + 1) % s.size;
    a.sqid = uint16_t(qid);
    a.c.sqid = a.sqid, a.c.cid = a.sqe.cid, a.c.opcode = a.sqe.opcode;
    a.c.t_doorbell = s.doorbell_at;
    a.t = a.c.t_fetch = c.t;
    a.sqhd = uint16_t(s.head);
    a.cqid = s.cqid;
    fail(a, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_ABORTED_SQ_DELETION);
    finish(a);
  }
  --cqs_[s.cqid].users;
  s = Sq{};
  list_pending_sqs();
}

void Controller::delete_cq(Cmd& c) {
  uint32_t qid = c.sqe.cdw10 & 0xFFFF;
  if (qid == 0 || qid >= cqs_.size() || !cqs_[qid].live)
    return fail(c, FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_INVALID_QUEUE_IDENTIFIER);
  if (cqs_[qid].users) return fail(c, FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_INVALID_QUEUE_DELETION);
  cqs_[qid] = Cq{};
}

void Controller::identify(Cmd& c) {
  uint32_t cns = c.sqe.cdw10 & 0xFF;
  std::vector<uint8_t> page;
  if (cns == FISRIG_NVME_CNS_CONTROLLER) {
    page = identify_controller();
  } else if (cns == FISRIG_NVME_CNS_NAMESPACE) {
    if (c.sqe.nsid != 1) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_NAMESPACE);
    page = identify_namespace(c.sqe.nsid);
  } else if (cns == FISRIG_NVME_CNS_ACTIVE_NAMESPACES) {
    // The active namespaces above NSID, ascending: ours is 1.
    page.assign(FISRIG_NVME_IDENTIFY_BYTES, 0);
    if (c.sqe.nsid >= 0xFFFFFFFE) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_NAMESPACE);
    if (c.sqe.nsid < 1) page[0] = 1;
  } else {
    return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);
  }
  to_host(c, page.data(), page.size());
}

void Controller::get_log_page(Cmd& c) {
  uint32_t lid = c.sqe.cdw10 & 0xFF;
  uint64_t dwords = ((uint64_t(c.sqe.cdw11 & 0xFFFF) << 16) | (c.sqe.cdw10 >> 16)) + 1;
  uint64_t offset = uint64_t(c.sqe.cdw13) << 32 | c.sqe.cdw12;
  std::vector<uint8_t> log;
  if (lid == FISRIG_NVME_LOG_SMART) log = smart_log(c.t);
  else if (lid == FISRIG_NVME_LOG_ERROR) log.assign(64, 0);  // no error entries kept yet: one empty
  else if (lid == FISRIG_NVME_LOG_FIRMWARE_SLOT) {
    log.assign(512, 0);
    log[0] = 1;  // AFI: slot 1 active
    const std::string& fw = ssd_.config().identity.firmware;
    for (size_t i = 0; i < 8; ++i) log[8 + i] = i < fw.size() ? uint8_t(fw[i]) : ' ';
  } else {
    return fail(c, FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_INVALID_LOG_PAGE);
  }
  if (offset % 4 || offset >= log.size()) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);
  std::vector<uint8_t> out(dwords * 4, 0);
  std::copy(log.begin() + long(offset), log.begin() + long(std::min<uint64_t>(log.size(), offset + out.size())), out.begin());
  to_host(c, out.data(), out.size());
}

void Controller::set_features(Cmd& c) {
  uint32_t fid = c.sqe.cdw10 & 0xFF, v = c.sqe.cdw11;
  switch (fid) {
    case FISRIG_NVME_FEAT_NUMBER_OF_QUEUES: {
      uint32_t nsq = (v & 0xFFFF) + 1, ncq = (v >> 16) + 1;
      if ((v & 0xFFFF) == 0xFFFF || (v >> 16) == 0xFFFF) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);
      // Once I/O queues exist the count cannot change (a controller reset clears it).
      bool any = std::any_of(sqs_.begin() + 1, sqs_.end(), [](const Sq& q) { return q.live; }) ||
                 std::any_of(cqs_.begin() + 1, cqs_.end(), [](const Cq& q) { return q.live; });
      if (any) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_COMMAND_SEQUENCE_ERROR);
      granted_queues_ = uint16_t(std::min<uint32_t>({nsq, ncq, profile().io_queue_pairs}));
      queues_granted_ = true;
      c.c.dw0 = uint32_t(granted_queues_ - 1) << 16 | uint32_t(granted_queues_ - 1);
      return;
    }
    case FISRIG_NVME_FEAT_VOLATILE_WRITE_CACHE:
      if (!vwc_present()) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);
      if (v & 1) ssd_.enable_write_cache();
      else c.t = ssd_.disable_write_cache(c.t);
      return;
    case FISRIG_NVME_FEAT_ARBITRATION:
      arbitration_ = v;  // round robin: only the burst is kept, and each turn takes one command
      return;
    case FISRIG_NVME_FEAT_POWER_MANAGEMENT:
      if ((v & 0x1F) != 0) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);  // PS0 only (NPSS 0)
      return;
    default:
      return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);
  }
}

void Controller::get_features(Cmd& c) {
  switch (c.sqe.cdw10 & 0xFF) {
    case FISRIG_NVME_FEAT_NUMBER_OF_QUEUES: {
      uint32_t n = queues_granted_ ? granted_queues_ : profile().io_queue_pairs;
      c.c.dw0 = (n - 1) << 16 | (n - 1);
      return;
    }
    case FISRIG_NVME_FEAT_VOLATILE_WRITE_CACHE:
      if (!vwc_present()) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);
      c.c.dw0 = ssd_.write_cache_enabled() ? 1 : 0;
      return;
    case FISRIG_NVME_FEAT_ARBITRATION: c.c.dw0 = arbitration_; return;
    case FISRIG_NVME_FEAT_POWER_MANAGEMENT: c.c.dw0 = 0; return;
    default: return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);
  }
}

void Controller::format(Cmd& c, bool sanitize) {
  if (sanitize) {
    uint32_t action = c.sqe.cdw10 & 7;
    if (action == 1) return;  // exit failure mode: there is none
    if (action != 2) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);  // block erase only (SANICAP)
  } else {
    if (c.sqe.nsid != 1 && c.sqe.nsid != 0xFFFFFFFF) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_NAMESPACE);
    uint32_t lbaf = c.sqe.cdw10 & 0xF, ses = (c.sqe.cdw10 >> 9) & 7;
    if (lbaf != 0) return fail(c, FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_INVALID_FORMAT);
    if (ses > 1) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);  // no cryptographic erase
  }
  // Every format erases the user data here: each block reads zeros after it.
  c.t = ssd_.erase_all(c.t);
}

void Controller::async_event(SimTime t, uint32_t dw0) {
  if (aers_.empty()) return;
  Cmd a = aers_.front();
  aers_.erase(aers_.begin());
  a.c.dw0 = dw0;
  a.t = std::max(a.t, t);
  finish(a);
}

}  // namespace fisrig::nvme
