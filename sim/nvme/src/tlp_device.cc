// The controller at its link's TLP interface: tlp_device.h.
#include "fisrig/nvme/tlp_device.h"

#include <algorithm>

namespace fisrig::nvme {

TlpDevice::TlpDevice(drive::DriveConfig drive, TlpDeviceConfig cfg, NvmeConfig nvme)
    : cfg_(cfg),
      ctrl_(std::make_unique<Controller>(std::move(drive), mirror_, nvme)),
      fn_(PciFunction(uint16_t(std::min<uint32_t>(ctrl_->profile().io_queue_pairs + 1, PciFunction::kMsixMaxEntries)), 2,
                      cfg.gen, cfg.lanes)) {
  PcieConfig link;
  link.gen = cfg.gen;
  link.lanes = cfg.lanes;
  per_byte_ = PcieLink::per_byte(link);
}

void TlpDevice::receive(const std::vector<uint8_t>& bytes, SimTime t) {
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
    ++unsupported_;  // a completion for no request of the device's: it makes none yet
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
    d = {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
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
    d.insert(d.end(), {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)});
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
  ctrl_->write32(offset, value, t);
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
