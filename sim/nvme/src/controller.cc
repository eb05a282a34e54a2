// The controller's registers, enable, reset and shutdown, the doorbells, round robin
// arbitration over the submission queues and the posting of completions.
#include "fisrig/nvme/controller.h"

#include <algorithm>

namespace fisrig::nvme {

namespace {
uint32_t field(uint64_t v, uint32_t shift, uint32_t bits) { return uint32_t(v >> shift) & ((1u << bits) - 1); }
}  // namespace

namespace {
NvmeConfig resolved(NvmeConfig n, const drive::DriveConfig& profile) {
  if (n.host_read_ns == NvmeConfig::kProfileHostRead) n.host_read_ns = profile.nvme.host_read_ns;
  return n;
}
}  // namespace

Controller::Controller(drive::DriveConfig config, HostMemory& memory, NvmeConfig nvme)
    : ssd_(std::move(config)), mem_(memory), nvme_(resolved(nvme, ssd_.config())),
      link_(nvme_.free_link ? PcieConfig{0, 1, pcie_of(ssd_.config().nvme, 0).max_payload,
                                         pcie_of(ssd_.config().nvme, 0).max_read_request, 0}
                            : pcie_of(ssd_.config().nvme, nvme_.host_read_ns)),
      rng_(ssd_.config().faults.seed) {
  sqs_.resize(size_t(profile().io_queue_pairs) + 1);
  cqs_.resize(size_t(profile().io_queue_pairs) + 1);
}

PcieConfig pcie_of(const drive::NvmeInterfaceConfig& p, SimTime host_read_ns) {
  return PcieConfig{p.pcie_gen, p.pcie_lanes, p.max_payload, p.max_read_request, host_read_ns};
}

uint64_t Controller::read64(uint32_t offset) const {
  switch (offset) {
    case FISRIG_NVME_REG_CAP:
      return uint64_t(profile().max_queue_entries - 1) << FISRIG_NVME_CAP_MQES_SHIFT |
             uint64_t(1) << FISRIG_NVME_CAP_CQR_SHIFT |
             uint64_t(nvme_.timeout_500ms) << FISRIG_NVME_CAP_TO_SHIFT |
             uint64_t(dstrd_) << FISRIG_NVME_CAP_DSTRD_SHIFT |
             uint64_t(1) << FISRIG_NVME_CAP_CSS_SHIFT;  // the NVM command set; 4 KiB pages only
    case FISRIG_NVME_REG_ASQ: return asq_;
    case FISRIG_NVME_REG_ACQ: return acq_;
    default: return read32(offset);
  }
}

uint32_t Controller::read32(uint32_t offset) const {
  switch (offset) {
    case FISRIG_NVME_REG_CAP: return uint32_t(read64(offset));
    case FISRIG_NVME_REG_CAP + 4: return uint32_t(read64(FISRIG_NVME_REG_CAP) >> 32);
    case FISRIG_NVME_REG_VS: return 0x00020000;  // 2.0.0
    case FISRIG_NVME_REG_CC: return cc_;
    case FISRIG_NVME_REG_CSTS: return csts();
    case FISRIG_NVME_REG_AQA: return aqa_;
    case FISRIG_NVME_REG_ASQ: return uint32_t(asq_);
    case FISRIG_NVME_REG_ASQ + 4: return uint32_t(asq_ >> 32);
    case FISRIG_NVME_REG_ACQ: return uint32_t(acq_);
    case FISRIG_NVME_REG_ACQ + 4: return uint32_t(acq_ >> 32);
    default: return 0;  // reserved and write-only registers read 0
  }
}

void Controller::write64(uint32_t offset, uint64_t value, SimTime t) {
  write32(offset, uint32_t(value), t);
  write32(offset + 4, uint32_t(value >> 32), t);
}

uint32_t Controller::csts() const {
  // RDY once the enable is done; SHST says occurring until the shutdown is.
  uint32_t v = csts_;
  if (ready_at_ != drive::kNever && now_ >= ready_at_) v |= FISRIG_NVME_CSTS_RDY;
  if (shutdown_done_ != drive::kNever)
    v |= (now_ >= shutdown_done_ ? FISRIG_NVME_SHST_COMPLETE : FISRIG_NVME_SHST_OCCURRING) << FISRIG_NVME_CSTS_SHST_SHIFT;
  return v;
}

void Controller::write32(uint32_t offset, uint32_t value, SimTime t) {
  if (!ssd_.powered()) return;
  now_ = std::max(now_, t);
  if (offset >= FISRIG_NVME_REG_DOORBELLS) {
    uint32_t index = (offset - FISRIG_NVME_REG_DOORBELLS) >> (2 + dstrd_);
    uint32_t qid = index / 2;
    bool sq = index % 2 == 0;
    if (!enabled_ || qid >= sqs_.size() || !(sq ? sqs_[qid].live : cqs_[qid].live) ||
        value >= (sq ? sqs_[qid].size : cqs_[qid].size)) {
      // The write is ignored, and reported: an error event (type 0), Invalid Doorbell Write
      // Value (01h), in the error information log (01h).
      ++invalid_doorbells_;
      if (enabled_) async_event(t, 0x01u << 16 | 0x01u << 8);
      return;
    }
    // The doorbell is a 4-byte memory write from the host.
    SimTime in = link_.down(t, PcieLink::tlp_bytes(kMemHeader, 4));
    if (sq) {
      run_until(t);  // what was visible before goes first
      sqs_[qid].tail = value;
      sqs_[qid].doorbell_at = in;
      update_pending(uint16_t(qid));
      watched(kTlpDoorbell, in);
    } else {
      cqs_[qid].head = value;
      drain(cqs_[qid], in);
    }
    return;
  }
  switch (offset) {
    case FISRIG_NVME_REG_CC: {
      const uint32_t was = cc_;
      cc_ = value;
      if (!(was & FISRIG_NVME_CC_EN) && (value & FISRIG_NVME_CC_EN)) enable(t);
      else if ((was & FISRIG_NVME_CC_EN) && !(value & FISRIG_NVME_CC_EN)) disable(t);
      uint32_t shn = field(value, FISRIG_NVME_CC_SHN_SHIFT, 2);
      if (shn != FISRIG_NVME_SHN_NONE && field(was, FISRIG_NVME_CC_SHN_SHIFT, 2) == FISRIG_NVME_SHN_NONE) shutdown(t);
      return;
    }
    case FISRIG_NVME_REG_AQA: aqa_ = value; return;
    case FISRIG_NVME_REG_ASQ: asq_ = (asq_ & ~0xFFFFFFFFull) | value; return;
    case FISRIG_NVME_REG_ASQ + 4: asq_ = (asq_ & 0xFFFFFFFFull) | uint64_t(value) << 32; return;
    case FISRIG_NVME_REG_ACQ: acq_ = (acq_ & ~0xFFFFFFFFull) | value; return;
    case FISRIG_NVME_REG_ACQ + 4: acq_ = (acq_ & 0xFFFFFFFFull) | uint64_t(value) << 32; return;
    default: return;  // read-only and reserved registers ignore writes
  }
}

void Controller::enable(SimTime t) {
  // The admin queues must be there, page aligned, and the page size and command set ones
  // this controller has (4 KiB, NVM). Otherwise the controller fails. (The I/O queues'
  // entry sizes are checked when one is made: create_cq, create_sq.)
  uint32_t asqs = field(aqa_, FISRIG_NVME_AQA_ASQS_SHIFT, 12) + 1, acqs = field(aqa_, FISRIG_NVME_AQA_ACQS_SHIFT, 12) + 1;
  bool ok = asqs >= 2 && acqs >= 2 && asqs <= profile().max_queue_entries && acqs <= profile().max_queue_entries &&
            asq_ % 4096 == 0 && acq_ % 4096 == 0 && field(cc_, FISRIG_NVME_CC_MPS_SHIFT, 4) == 0 &&
            field(cc_, FISRIG_NVME_CC_CSS_SHIFT, 3) == 0;
  if (!ok) {
    csts_ |= FISRIG_NVME_CSTS_CFS;
    return;
  }
  cqs_[0] = Cq{true, acq_, acqs, 0, 0, true, 1, {}};
  sqs_[0] = Sq{true, asq_, asqs, 0, 0, 0, t};
  list_pending_sqs();
  ready_at_ = std::max(t + nvme_.enable_ns, boot_done_);  // kNever: the cuts killed the SSD
  busy_until_ = ready_at_;
  enabled_ = true;
  csts_ = 0;
  shutdown_done_ = drive::kNever;
}

void Controller::disable(SimTime t) {
  run_until(t);
  ssd_.set_hung(false);  // a controller reset ends a hang
  commands_seen_ = 0;
  for (Sq& q : sqs_) q = Sq{};
  pending_sqs_.clear();
  for (Cq& q : cqs_) q = Cq{};
  queues_granted_ = false;
  granted_queues_ = 0;
  aers_.clear();
  drop_inflight();  // commands not yet answered are gone with the queues
  link_.reset();
  csts_ = 0;
  enabled_ = false;
  ready_at_ = drive::kNever;
}

void Controller::shutdown(SimTime t) {
  run_until(t);
  // Normal or abrupt, the controller makes what it has acknowledged durable: the volatile
  // write cache is drained before SHST says complete.
  shutdown_done_ = ssd_.flush(t) + nvme_.shutdown_ns;
  busy_until_ = std::max(busy_until_, shutdown_done_);
}

void Controller::power_off(SimTime t) {
  if (!ssd_.powered()) return;
  // Unsafe unless a shutdown had completed (CSTS.SHST complete) before the rails fell.
  if (shutdown_done_ == drive::kNever || t < shutdown_done_) ++unsafe_shutdowns_;
  ssd_.power_off(t);
  commands_seen_ = 0;
  for (Sq& q : sqs_) q = Sq{};
  pending_sqs_.clear();
  for (Cq& q : cqs_) q = Cq{};
  cc_ = csts_ = 0;
  enabled_ = false;
  shutdown_done_ = drive::kNever;
  ready_at_ = drive::kNever;
  queues_granted_ = false;
  granted_queues_ = 0;
  aers_.clear();
  drop_inflight();  // commands not yet answered are gone with the queues
  link_.reset();
}

void Controller::power_on(SimTime t) {
  SimTime up = ssd_.power_on(t);
  boot_done_ = up;
  busy_until_ = std::max(busy_until_, up);
}

void Controller::run_until(SimTime t) {
  now_ = std::max(now_, t);
  // A hung controller (hang_after_commands) fetches and answers nothing until a reset.
  if (!enabled_ || ready_at_ > t || ssd_.hung()) return;
  // Nothing is booked on the link before t, or before the next fetch's time: a command's
  // TLPs are booked when it is fetched (its CQE's when that is ready, later still). A
  // controller whose firmware is milliseconds behind its doorbells (a full drive's GC)
  // fetches at busy_until_, not at the doorbell: bounded by the doorbell, the link's book
  // kept those milliseconds, thousands of intervals (docs/performance.md).
  link_.retire_before(std::min(t, next_fetch()));
  for (;;) {
    // Round robin over every SQ with a command visible by t, the admin queue among them.
    const uint32_t n = uint32_t(sqs_.size()), pending = uint32_t(pending_sqs_.size());
    uint32_t pick = n, from = 0;
    while (from < pending && pending_sqs_[from] < rr_next_) ++from;  // the first at or after rr_next_
    for (uint32_t i = 0; i < pending && pick == n; ++i) {
      uint32_t q = pending_sqs_[(from + i) % pending];
      if (sqs_[q].doorbell_at <= t) pick = q;
    }
    if (pick == n) break;
    Sq& s = sqs_[pick];
    const SimTime fetch = std::max({s.doorbell_at, ready_at_, busy_until_});
    if (fetch > t) break;  // the next fetch is past t: the next run_until takes it
    const drive::FaultKnobs& f = ssd_.config().faults;
    if (f.hang_after_commands && commands_seen_ >= f.hang_after_commands) {
      ssd_.set_hung(true);
      break;
    }
    if (f.link_drop_after_commands && commands_seen_ >= f.link_drop_after_commands) {
      // The link went down under the controller: fatal (CSTS.CFS) until the host resets it.
      csts_ |= FISRIG_NVME_CSTS_CFS;
      enabled_ = false;
      break;
    }
    // A command fetched: counted, and round robin moves past its queue (not before: a
    // queue passed over while the controller was busy lost its turn).
    ++commands_seen_;
    rr_next_ = (pick + 1) % n;
    Cmd c{};
    mem_.read(s.base + uint64_t(s.head) * FISRIG_NVME_SQE_BYTES, &c.sqe, sizeof c.sqe);
    s.head = (s.head + 1) % s.size;
    update_pending(uint16_t(pick));
    c.sqid = uint16_t(pick);
    c.sqhd = uint16_t(s.head);
    c.cqid = s.cqid;
    c.c.sqid = c.sqid;
    c.c.cid = c.sqe.cid;
    c.c.opcode = c.sqe.opcode;
    c.c.t_doorbell = s.doorbell_at;
    // The SQE: the controller's read request up, the host's 64-byte completion down.
    SimTime request = link_.up(fetch, PcieLink::tlp_bytes(kMemHeader, 0));
    c.t = c.c.t_fetch = link_.down(request + nvme_.host_read_ns, PcieLink::tlp_bytes(kCplHeader, FISRIG_NVME_SQE_BYTES));
    watched(kTlpSqe, c.t);
    ssd_.arrive(c.t);  // idle work (background GC, the idle flush) up to the fetch
    execute(c);
    ssd_.busy_until(c.t);
    if (c.held) aers_.push_back(c);
    else finish(c);
  }
  // The CQEs due by t, in the order they come due.
  while (!inflight_.empty() && inflight_.front().t <= t) {
    std::pop_heap(inflight_.begin(), inflight_.end(), Later{});
    Due& due = inflight_.back();
    Cmd& c = cmds_[due.index];
    if (!c.cqe_booked) {  // its CQE is ready: its TLPs go on the link now, and it is posted at their end
      book_cqe(c);
      due.t = c.t;
      std::push_heap(inflight_.begin(), inflight_.end(), Later{});
      continue;
    }
    free_cmds_.push_back(due.index);
    inflight_.pop_back();
    post(c);
  }
}

SimTime Controller::next_event() const {
  if (ssd_.hung()) return drive::kNever;  // nothing is due from a hung controller (run_until)
  SimTime t = inflight_.empty() ? drive::kNever : inflight_.front().t;
  return enabled_ ? std::min(t, next_fetch()) : t;
}

void Controller::finish(Cmd& c) {
  c.cqe_booked = false;
  uint32_t i;
  if (free_cmds_.empty()) {
    i = uint32_t(cmds_.size());
    cmds_.push_back(c);
  } else {
    i = free_cmds_.back();
    free_cmds_.pop_back();
    cmds_[i] = c;
  }
  inflight_.push_back(Due{c.t, next_seq_++, i});  // finish order, for CQEs due at one time
  std::push_heap(inflight_.begin(), inflight_.end(), Later{});
}

void Controller::book_cqe(Cmd& c) {
  // The CQE (a 16-byte write) and the MSI-X message (4 bytes) after it, up the link, booked
  // when the CQE is ready, in time order with the rest (booked when the command was fetched,
  // a write's CQE milliseconds ahead of the traffic booked after it made the link's book
  // thousands of intervals long: docs/performance.md).
  c.t = link_.up(c.t, PcieLink::tlp_bytes(kMemHeader, FISRIG_NVME_CQE_BYTES));
  watched(kTlpCqe, c.t);
  c.c.t_irq = link_.up(c.t, PcieLink::tlp_bytes(kMemHeader, 4));
  c.cqe_booked = true;
}

void Controller::execute(Cmd& c) {
  const drive::FaultKnobs& f = ssd_.config().faults;
  SimTime overhead = ssd_.config().controller.command_overhead_ns;
  if (chance(f.busy_rate)) overhead += f.busy_ns;
  c.t = ssd_.run_firmware(c.t, overhead);
  run(c);
  if (chance(f.latency_outlier_rate)) c.t += f.latency_outlier_ns;  // the CQE goes late
}

void Controller::run(Cmd& c) {
  if ((c.sqe.flags >> 6) != 0) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);  // SGLs: not supported
  if ((c.sqe.flags & 3) != 0) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);   // fused: not supported
  if (c.sqid == 0) admin(c);
  else io(c);
}

void Controller::post(Cmd& c) {
  Cq& q = cqs_[c.cqid];
  c.c.status = fisrig_nvme_status(c.sct, c.sc, c.sc != FISRIG_NVME_SC_SUCCESS);
  c.c.t_cqe = c.t;
  if (!q.live) return;  // its queue pair was deleted under it
  fisrig_nvme_cqe e{};
  e.dw0 = c.c.dw0;
  e.sqhd = c.sqhd;
  e.sqid = c.sqid;
  e.cid = c.sqe.cid;
  e.status = c.c.status;
  if (q.held.empty() && (q.tail + 1) % q.size != q.head) return write_cqe(q, e, c.c);  // room: posted now
  q.held.push_back({e, c.c});
  drain(q, c.t);
}

void Controller::write_cqe(Cq& q, fisrig_nvme_cqe& e, const NvmeCompletion& c) {
  e.status = uint16_t(e.status | (q.phase ? FISRIG_NVME_STATUS_P : 0));
  mem_.write(q.base + uint64_t(q.tail) * FISRIG_NVME_CQE_BYTES, &e, sizeof e);
  if (host_write_) {
    host_write_({HostWrite::kCqe, q.base + uint64_t(q.tail) * FISRIG_NVME_CQE_BYTES, FISRIG_NVME_CQE_BYTES, 0, c.t_cqe});
    if (q.interrupts) host_write_({HostWrite::kMsix, 0, 4, q.vector, c.t_cqe});
  }
  if (++q.tail == q.size) q.tail = 0, q.phase = !q.phase;
  done_.push_back(c);
}

void Controller::drain(Cq& q, SimTime t) {
  // The controller posts no entry into a full CQ: it waits for the host's head doorbell.
  while (!q.held.empty() && (q.tail + 1) % q.size != q.head) {
    auto& [e, c] = q.held.front();
    c.t_cqe = std::max(c.t_cqe, t);
    write_cqe(q, e, c);
    q.held.pop_front();
  }
}

std::vector<NvmeCompletion> Controller::fetched() const {
  std::vector<NvmeCompletion> out;
  for (const Due& d : inflight_) {
    const Cmd& c = cmds_[d.index];
    out.push_back(c.c);
    out.back().t_cqe = c.t;
  }
  for (const Cq& q : cqs_)
    for (const auto& [e, c] : q.held) out.push_back(c);
  return out;
}

bool Controller::pop_completion(NvmeCompletion& out) {
  if (done_.empty()) return false;
  out = done_.front();
  done_.pop_front();
  return true;
}

}  // namespace fisrig::nvme
