// The controller at its link's TLP interface: tlp_device.h.
#include "fisrig/nvme/tlp_device.h"

#include <algorithm>

namespace fisrig::nvme {

namespace {
NvmeConfig over_the_link(NvmeConfig n) {
  n.free_link = true;  // the link here is the real one, and the rig's memory answers through it
  n.host_read_ns = 0;
  return n;
}
constexpr uint64_t kPage = 4096;

// The bytes of a command's buffer (its PRPs describe them), and whether they come from the
// host (a write's, a Compare's, a Dataset Management range list) or go to it, for the
// commands this controller has that move data.
uint64_t buffer_bytes(uint16_t qid, const fisrig_nvme_sqe& e, bool& from_host) {
  from_host = false;
  if (qid == 0) {
    if (e.opcode == FISRIG_NVME_ADMIN_IDENTIFY)
      return 4096;
    if (e.opcode == FISRIG_NVME_ADMIN_GET_LOG_PAGE)
      return ((uint64_t(e.cdw11 & 0xFFFF) << 16 | e.cdw10 >> 16) + 1) * 4;
    return 0;
  }
  switch (e.opcode) {
    case FISRIG_NVME_CMD_WRITE:
    case FISRIG_NVME_CMD_COMPARE:
      from_host = true;
      return uint64_t((e.cdw12 & 0xFFFF) + 1) * 512;
    case FISRIG_NVME_CMD_READ:
      return uint64_t((e.cdw12 & 0xFFFF) + 1) * 512;
    case FISRIG_NVME_CMD_DATASET_MANAGEMENT:
      from_host = true;
      return uint64_t((e.cdw10 & 0xFF) + 1) * 16;
    default:
      return 0;
  }
}
}  // namespace

TlpDevice::TlpDevice(drive::DriveConfig drive, TlpDeviceConfig cfg, NvmeConfig nvme)
    : cfg_(cfg),
      ctrl_(std::make_unique<Controller>(std::move(drive), mirror_, over_the_link(nvme))),
      fn_(PciFunction(uint16_t(std::min<uint32_t>(ctrl_->profile().io_queue_pairs + 1, PciFunction::kMsixMaxEntries)), 2,
                      cfg.gen, cfg.lanes)) {
  PcieConfig link;
  link.gen = cfg.gen;
  link.lanes = cfg.lanes;
  per_byte_ = PcieLink::per_byte(link);
  queues_.resize(size_t(ctrl_->profile().io_queue_pairs) + 1);
  ctrl_->on_host_write([this](const HostWrite& w) { host_write(w); });
}

void TlpDevice::power(bool on, SimTime t) {
  if (on == powered_)
    return;
  powered_ = on;
  if (!on) {
    ctrl_->power_off(t);
    reset_commands();
    out_.clear();  // what was due out never goes
    link_free_ = std::max<SimTime>(link_free_, t << PcieLink::kTimeShift);
    return;
  }
  ctrl_->power_on(t);
  fn_.reset(ctrl_->boot_done());
}

void TlpDevice::receive(const std::vector<uint8_t>& bytes, SimTime t) {
  if (!powered_) {
    ++while_off_;
    return;
  }
  ctrl_->run_until(t);  // the controller's time moves on with the link's (CSTS.RDY, a shutdown)
  Tlp tlp;
  if (!decode(bytes.data(), bytes.size(), tlp)) {
    ++malformed_;
    return;
  }
  if (tlp.is_config())
    config(tlp, t);
  else if (tlp.is_memory())
    memory(tlp, t);
  else
    completion(tlp, t);
}

void TlpDevice::config(const Tlp& t, SimTime in) {
  if (t.completer_id != cfg_.id) {  // another function: none there
    ++unsupported_;
    complete(t, FISRIG_PCIE_CPL_UR, {}, in + cfg_.config_ns);
    return;
  }
  const uint16_t offset = uint16_t(t.address);
  if (t.fmt_type == FISRIG_PCIE_TLP_CFGWR0) {
    complete(t, uint8_t(fn_.config_write(offset, t.dword(0), t.first_be, in)), {}, in + cfg_.config_ns);
    return;
  }
  uint32_t v = 0;
  const unsigned s = fn_.config_read(offset, v, in);
  std::vector<uint8_t> d;
  if (s == FISRIG_PCIE_CPL_SC)
    append_le32(d, v);
  complete(t, uint8_t(s), d, in + cfg_.config_ns);
}

void TlpDevice::memory(const Tlp& t, SimTime in) {
  const uint32_t dwords = t.length ? t.length : 1024;
  const bool write = Tlp::has_data(t.fmt_type);
  // A register access is 1 or 2 whole dwords (a 64-bit register as two, or one 8-byte write).
  const bool whole = t.first_be == 0xF && (dwords == 1 ? t.last_be == 0 : t.last_be == 0xF);
  if (!fn_.bar0_hit(t.address, dwords * 4)) {
    ++unsupported_;
    if (!write)
      complete(t, FISRIG_PCIE_CPL_UR, {}, in + cfg_.register_ns);
    return;
  }
  if (dwords > 2 || !whole) {
    ++malformed_;
    if (!write)
      complete(t, FISRIG_PCIE_CPL_UR, {}, in + cfg_.register_ns);
    return;
  }
  const uint32_t offset = uint32_t(t.address - fn_.bar0());
  if (write) {
    for (uint32_t k = 0; k < dwords; ++k)
      bar_write(offset + 4 * k, t.dword(k), in);
    return;
  }
  std::vector<uint8_t> d;
  for (uint32_t k = 0; k < dwords; ++k) {
    const uint32_t v = bar_read(offset + 4 * k);
    append_le32(d, v);
  }
  complete(t, FISRIG_PCIE_CPL_SC, d, in + cfg_.register_ns);
}

uint32_t TlpDevice::bar_read(uint32_t offset) {
  uint32_t v = 0;
  if (fn_.msix_read(offset, v))
    return v;
  return ctrl_->read32(offset);
}

void TlpDevice::bar_write(uint32_t offset, uint32_t value, SimTime t) {
  if (fn_.msix_write(offset, value))
    return;
  if (offset >= FISRIG_NVME_REG_DOORBELLS) {
    const uint32_t stride = 4u << ((ctrl_->read64(FISRIG_NVME_REG_CAP) >> FISRIG_NVME_CAP_DSTRD_SHIFT) & 0xF);
    const uint32_t index = (offset - FISRIG_NVME_REG_DOORBELLS) / stride;
    if (index % 2 == 0 && (offset - FISRIG_NVME_REG_DOORBELLS) % stride == 0)
      return doorbell(uint16_t(index / 2), value, t);
  }
  if (offset == FISRIG_NVME_REG_CC && !(value & FISRIG_NVME_CC_EN))
    reset_commands();  // a controller reset: the queues go, and what was being fetched for them
  ctrl_->write32(offset, value, t);
}

void TlpDevice::reset_commands() {
  for (Queue& q : queues_)
    q = Queue{};
  reads_.clear();  // a late completion for one is an unexpected one
  waiting_.clear();
}

void TlpDevice::doorbell(uint16_t qid, uint32_t tail, SimTime t) {
  const Controller::SqView v = ctrl_->sq(qid);
  if (!v.live || tail >= v.size || qid >= queues_.size())
    return ctrl_->write32(ctrl_->sq_doorbell(qid), tail, t);  // the controller's to refuse and report
  Queue& q = queues_[qid];
  if (!q.started || q.base != v.base || q.size != v.size || q.released != v.tail) {  // a new queue (or made again)
    q = Queue{};
    q.started = true;
    q.base = v.base, q.size = v.size;
    q.fetched = q.released = v.tail;
  }
  // Each new SQE fetched by a read of its own, as the controller fetches one command at a time.
  while (q.fetched != tail) {
    Slot s;
    s.index = q.fetched;
    s.reads_out = 1;
    q.slots.push_back(s);
    read(qid, s.index, q.base + uint64_t(s.index) * FISRIG_NVME_SQE_BYTES, FISRIG_NVME_SQE_BYTES, t);
    q.fetched = (q.fetched + 1) % q.size;
  }
}

void TlpDevice::read(uint16_t qid, uint32_t index, uint64_t address, uint32_t bytes, SimTime t) {
  Read r{qid, index, address, bytes, 0};
  if (reads_.size() == 256) {  // every tag out: it goes when one comes back
    waiting_.emplace_back(r, t);
    return;
  }
  while (reads_.count(next_tag_))
    ++next_tag_;
  const uint8_t tag = next_tag_++;
  reads_[tag] = r;
  Tlp req;
  req.fmt_type = address >> 32 ? FISRIG_PCIE_TLP_MRD64 : FISRIG_PCIE_TLP_MRD32;
  req.length = uint16_t(bytes / 4 % 1024);
  req.requester_id = cfg_.id;
  req.tag = tag;
  req.first_be = 0xF;
  req.last_be = bytes > 4 ? 0xF : 0;
  req.address = address;
  out_.emplace(t, encode(req));
}

TlpDevice::Slot* TlpDevice::slot(uint16_t qid, uint32_t index) {
  for (Slot& s : queues_[qid].slots)
    if (s.index == index)
      return &s;
  return nullptr;
}

void TlpDevice::completion(const Tlp& c, SimTime in) {
  auto it = c.requester_id == cfg_.id ? reads_.find(c.tag) : reads_.end();
  const bool successful_without_data = c.status == FISRIG_PCIE_CPL_SC && c.fmt_type != FISRIG_PCIE_TLP_CPLD;
  if (it == reads_.end() || successful_without_data) {
    ++bad_completions_;  // for no read of the device's, or a read's answered with no data
    return;
  }
  Read& r = it->second;
  bool done = true;
  if (c.status != FISRIG_PCIE_CPL_SC || c.ep) {
    ++bad_completions_;  // the read ends here; the command goes on with what did come
  } else {
    const uint32_t n = std::min<uint32_t>(uint32_t(c.data.size()), r.bytes - r.got);
    if (n)
      mirror_.write(r.address + r.got, c.data.data(), n);
    r.got += n;
    done = r.got >= r.bytes;
  }
  if (!done)
    return;  // more completions of it to come
  const Read finished = r;
  reads_.erase(it);
  if (!waiting_.empty()) {  // a tag is free
    auto [w, t] = waiting_.front();
    waiting_.pop_front();
    read(w.qid, w.index, w.address, w.bytes, std::max(t, in));
  }
  Slot* s = slot(finished.qid, finished.index);
  if (s && s->reads_out && --s->reads_out == 0)
    advance(finished.qid, *s, in);
}

// A PRP list page's entries the command uses: all of the page (the last one then chains to
// the next page) or, in the list's last page, to the buffer's end.
static uint64_t list_entries(uint64_t list, uint64_t pages_left, bool& chains) {
  const uint64_t here = (kPage - list % kPage) / 8;
  chains = pages_left > here;
  return chains ? here : pages_left;
}

void TlpDevice::advance(uint16_t qid, Slot& s, SimTime t) {
  Queue& q = queues_[qid];
  fisrig_nvme_sqe e;
  mirror_.read(q.base + uint64_t(s.index) * FISRIG_NVME_SQE_BYTES, &e, sizeof e);
  bool chains = false;
  if (s.stage == Slot::kSqe) {
    // Its buffer's PRP list is read for a command either way (the controller needs it to
    // know where the data goes); its data only for one that takes it from the host.
    s.bytes = buffer_bytes(qid, e, s.from_host);
    s.covered = std::min<uint64_t>(s.bytes, kPage - e.prp1 % kPage);  // PRP1's page
    const bool list = s.bytes && e.prp1 % 4 == 0 && s.bytes - s.covered > kPage && e.prp2 % 8 == 0;
    s.stage = list ? Slot::kList : Slot::kData;
    s.list = e.prp2;
  } else if (s.stage == Slot::kList) {  // a list page is in: the next one, if it chains
    const uint64_t n = list_entries(s.list, (s.bytes - s.covered + kPage - 1) / kPage, chains);
    if (chains) {
      s.covered += (n - 1) * kPage;
      uint64_t next;
      mirror_.read(s.list + 8 * (n - 1), &next, 8);
      s.list = next;
      s.stage = next % 8 ? Slot::kData : Slot::kList;  // an offset the controller refuses: no more to read
    } else {
      s.stage = Slot::kData;
    }
  } else {
    s.stage = Slot::kReady;
  }
  const uint32_t mrrs = fn_.max_read_request();
  if (s.stage == Slot::kList) {
    const uint64_t bytes = 8 * list_entries(s.list, (s.bytes - s.covered + kPage - 1) / kPage, chains);
    for (uint64_t off = 0; off < bytes; off += mrrs, ++s.reads_out)
      read(qid, s.index, s.list + off, uint32_t(std::min<uint64_t>(mrrs, bytes - off)), t);
    return;
  }
  if (s.stage == Slot::kData) {
    std::vector<std::pair<uint64_t, uint32_t>> pieces;
    if (s.bytes && s.from_host && walk_prps(e.prp1, e.prp2, s.bytes, mirror_, pieces))
      for (auto [addr, n] : pieces)
        for (uint32_t off = 0; off < n; off += mrrs, ++s.reads_out)
          read(qid, s.index, addr + off, std::min(mrrs, n - off), t);
    if (s.reads_out)
      return;
    s.stage = Slot::kReady;  // nothing to read (or PRPs the controller will refuse)
  }
  s.ready_at = t;
  release(qid);
}

void TlpDevice::release(uint16_t qid) {
  Queue& q = queues_[qid];
  while (!q.slots.empty() && q.slots.front().stage == Slot::kReady) {
    const Slot s = q.slots.front();
    q.slots.pop_front();
    q.released = (s.index + 1) % q.size;
    ctrl_->write32(ctrl_->sq_doorbell(qid), q.released, s.ready_at);
  }
}

void TlpDevice::host_write(const HostWrite& w) {
  if (w.kind == HostWrite::kMsix) {
    const PciFunction::MsixMessage m = fn_.msix(w.vector);
    if (m.masked) {
      ++msix_masked_;
      return;
    }
    std::vector<uint8_t> d;
    append_le32(d, m.data);
    memory_write(m.address, std::move(d), w.not_before);
    return;
  }
  // A read's data or a CQE: memory writes of at most Max_Payload_Size, none across a 4 KiB
  // boundary, their bytes as the controller wrote them.
  const uint32_t mps = fn_.max_payload();
  for (uint32_t off = 0; off < w.bytes;) {
    const uint64_t at = w.address + off;
    const uint32_t n = uint32_t(std::min<uint64_t>({mps, w.bytes - off, kPage - at % kPage}));
    std::vector<uint8_t> d(n);
    mirror_.read(at, d.data(), n);
    memory_write(at, std::move(d), w.not_before);
    off += n;
  }
}

void TlpDevice::memory_write(uint64_t address, std::vector<uint8_t> data, SimTime due) {
  Tlp w;
  w.fmt_type = address >> 32 ? FISRIG_PCIE_TLP_MWR64 : FISRIG_PCIE_TLP_MWR32;
  w.length = uint16_t(data.size() / 4 % 1024);
  w.requester_id = cfg_.id;
  w.first_be = 0xF;
  w.last_be = data.size() > 4 ? 0xF : 0;
  w.address = address;
  w.data = std::move(data);
  out_.emplace(due, encode(w));
}

void TlpDevice::complete(const Tlp& request, uint8_t status, const std::vector<uint8_t>& data, SimTime due) {
  Tlp c;
  c.fmt_type = data.empty() ? FISRIG_PCIE_TLP_CPL : FISRIG_PCIE_TLP_CPLD;
  c.tc = request.tc;
  c.attr = request.attr;
  c.length = uint16_t(data.size() / 4);
  c.completer_id = cfg_.id;
  c.status = status;
  // A configuration request's completion counts its one dword; a memory read's, what was
  // asked (all of it: one completion answers it).
  c.byte_count = uint16_t(request.is_config() ? 4 : (request.length ? request.length : 1024) * 4);
  c.requester_id = request.requester_id;
  c.tag = request.tag;
  c.lower_address = request.is_config() ? 0 : uint8_t(request.address & 0x7F);
  c.data = data;
  out_.emplace(due, encode(c));
}

SimTime TlpDevice::next_out() const {
  if (out_.empty())
    return drive::kNever;
  const SimTime free = (link_free_ + PcieLink::kTimeScale - 1) >> PcieLink::kTimeShift;
  return std::max(out_.begin()->first, free);
}

bool TlpDevice::transmit(SimTime until, std::vector<uint8_t>& tlp, SimTime& start) {
  if (!powered_)
    return false;
  ctrl_->run_until(until);  // what the controller has due by then (CQEs: their writes queue here)
  const SimTime at = next_out();
  if (at == drive::kNever || at > until)
    return false;
  tlp = std::move(out_.begin()->second);
  out_.erase(out_.begin());
  start = at;
  link_free_ = (at << PcieLink::kTimeShift) + uint64_t(per_byte_) * PcieLink::tlp_bytes(0, uint32_t(tlp.size()));
  return true;
}

}  // namespace fisrig::nvme
