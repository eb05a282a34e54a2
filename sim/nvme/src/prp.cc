// PRPs: a command's host buffer as PRP1, PRP2 and PRP lists across page boundaries.
#include "fisrig/nvme/controller.h"

namespace fisrig::nvme {

namespace {
constexpr uint64_t kPage = 4096;  // CC.MPS 0: the only page size this controller takes
}

bool walk_prps(uint64_t prp1, uint64_t prp2, uint64_t bytes, HostMemory& mem,
               std::vector<std::pair<uint64_t, uint32_t>>& out) {
  out.clear();
  if (!bytes) return true;
  if (prp1 % 4) return false;
  uint64_t first = std::min(bytes, kPage - prp1 % kPage);
  out.emplace_back(prp1, uint32_t(first));
  uint64_t left = bytes - first;
  if (!left) return true;
  if (left <= kPage) {
    // PRP2 is the second (and last) page.
    if (prp2 % kPage) return false;
    out.emplace_back(prp2, uint32_t(left));
    return true;
  }
  // PRP2 points at a PRP list; a list's last entry chains to the next list when more pages
  // remain than the rest of that list holds.
  if (prp2 % 8) return false;
  uint64_t list = prp2;
  while (left) {
    uint64_t entries_here = (kPage - list % kPage) / 8;
    uint64_t pages_left = (left + kPage - 1) / kPage;
    uint64_t take = pages_left <= entries_here ? pages_left : entries_here - 1;
    for (uint64_t i = 0; i < take; ++i) {
      uint64_t page;
      mem.read(list + 8 * i, &page, 8);
      if (page % kPage) return false;
      uint64_t n = std::min(left, kPage);
      out.emplace_back(page, uint32_t(n));
      left -= n;
    }
    if (!left) break;
    mem.read(list + 8 * take, &list, 8);
    if (list % 8) return false;
  }
  return true;
}

bool Controller::prp_pieces(Cmd& c, uint64_t bytes, std::vector<std::pair<uint64_t, uint32_t>>& out) {
  if (!walk_prps(c.sqe.prp1, c.sqe.prp2, bytes, mem_, out))
    return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_PRP_OFFSET), false;
  return true;
}

SimTime Controller::fetch_prp_list(const Cmd& c, uint64_t bytes, SimTime t) {
  // A list is there when the buffer runs past PRP1's page and the next one: its entries
  // (a page after PRP1's each) are read in one request a list page; a list page holds 512
  // entries, or 511 and the address of the next when more remain.
  uint64_t first = std::min(bytes, kPage - c.sqe.prp1 % kPage);
  if (bytes - first <= kPage) return t;
  uint64_t entries = (bytes - first + kPage - 1) / kPage;
  while (entries) {
    uint64_t n = entries <= kPage / 8 ? entries : kPage / 8 - 1;
    uint32_t list_bytes = uint32_t(8 * (entries <= kPage / 8 ? n : n + 1));
    SimTime request = link_.up(t, PcieLink::tlp_bytes(kMemHeader, 0));
    t = link_.down(request + nvme_.host_read_ns, PcieLink::tlp_bytes(kCplHeader, list_bytes));
    entries -= n;
  }
  return t;
}

void Controller::to_host(Cmd& c, const uint8_t* data, uint64_t bytes, const std::vector<SimTime>* ready) {
  static thread_local std::vector<std::pair<uint64_t, uint32_t>> pieces;
  if (!prp_pieces(c, bytes, pieces)) return;
  for (auto [addr, n] : pieces) {
    mem_.write(addr, data, n);
    data += n;
  }
  // Memory writes of at most MPS bytes, in order, each once its data is in the controller.
  const uint32_t mps = link_.config().max_payload;
  SimTime from = fetch_prp_list(c, bytes, c.t), end = from;
  const bool paged = ready && !ready->empty();
  if (host_write_) {  // each piece (within a page of the buffer) no sooner than the SSD has its page
    uint64_t off = 0;
    for (auto [addr, n] : pieces) {
      const size_t page = paged ? std::min<size_t>((off + n - 1) / kPage, ready->size() - 1) : 0;
      host_write_({HostWrite::kData, addr, n, 0, paged ? std::max(from, (*ready)[page]) : from});
      off += n;
    }
  }
  // A TLP at a time where one is watched or may be sent again; otherwise the rest of a page
  // (of the buffer: its data is in at once) goes on the link at once when it can follow the
  // last TLP back to back (PcieLink::extend_up).
  const bool one_by_one = (watch_ & kTlpData) || ssd_.config().faults.data_fis_crc_error_rate > 0;
  for (uint64_t off = 0; off < bytes; off += mps) {
    uint32_t n = uint32_t(std::min<uint64_t>(mps, bytes - off));
    const size_t page = paged ? std::min<size_t>(off / kPage, ready->size() - 1) : 0;
    SimTime at = std::max(end, paged ? (*ready)[page] : from);
    if (!one_by_one && off && at == end) {
      const uint64_t stop = paged && page + 1 < ready->size() ? (off / kPage + 1) * kPage : bytes, rest = stop - off;
      const uint32_t tlps = uint32_t((rest + mps - 1) / mps);
      if (link_.extend_up(end, tlps, tlps * uint64_t(kMemHeader + kFraming) + rest, end)) {
        off = stop - mps;  // the loop's step takes it to stop
        continue;
      }
    }
    end = link_.up(at, PcieLink::tlp_bytes(kMemHeader, n));
    if (!off) c.c.t_data_first = link_.last_start();
    watched(kTlpData, end);
    // data_fis_crc_error_rate: the host's receiver finds the TLP's LCRC bad and NAKs it;
    // the controller sends it again.
    if (chance(ssd_.config().faults.data_fis_crc_error_rate)) ++replays_, end = link_.up(end, PcieLink::tlp_bytes(kMemHeader, n));
  }
  c.c.t_data_last = end;
  c.c.bytes += bytes;
  c.t = std::max(c.t, end);
}

bool Controller::from_host(Cmd& c, uint8_t* data, uint64_t bytes) {
  static thread_local std::vector<std::pair<uint64_t, uint32_t>> pieces;
  if (!prp_pieces(c, bytes, pieces)) return false;
  for (auto [addr, n] : pieces) {
    if (!data) break;
    mem_.read(addr, data, n);
    data += n;
  }
  // Read requests of at most MRRS bytes, back to back up the link; the host answers each
  // after its read latency with completions of at most MPS bytes, down the link in order.
  const uint32_t mps = link_.config().max_payload, mrrs = link_.config().max_read_request;
  const uint32_t requests = uint32_t((bytes + mrrs - 1) / mrrs), request_bytes = PcieLink::tlp_bytes(kMemHeader, 0);
  static thread_local std::vector<SimTime> asked;  // each request's end
  asked.resize(requests);
  SimTime t = fetch_prp_list(c, bytes, c.t), end = t;
  if (requests) {
    asked[0] = link_.up(t, request_bytes);
    SimTime last;
    if (requests > 1 && !link_.extend_up(asked[0], requests - 1, uint64_t(requests - 1) * request_bytes, last, &asked[1]))
      for (uint32_t r = 1; r < requests; ++r) asked[r] = link_.up(asked[r - 1], request_bytes);
  }
  // A TLP at a time where one is watched or may be sent again; otherwise what follows a
  // TLP back to back goes on the link at once (PcieLink::extend_down).
  const drive::FaultKnobs& f = ssd_.config().faults;
  const bool one_by_one = (watch_ & kTlpData) || f.r_err_rate > 0 || f.hold_storm_rate > 0;
  auto tlps_of = [mps](uint64_t len) { return uint32_t((len + mps - 1) / mps); };
  const uint64_t last_len = bytes - uint64_t(requests - 1) * mrrs;  // the last request's (requests > 0)
  for (uint32_t r = 0; r < requests; ++r) {
    const uint64_t len = r + 1 < requests ? mrrs : last_len;
    for (uint64_t k = 0; k < len; k += mps) {
      uint32_t n = uint32_t(std::min<uint64_t>(mps, len - k));
      const SimTime at = std::max(asked[r] + nvme_.host_read_ns, end);
      if (!one_by_one && at == end && (r || k)) {
        // Right behind the last: the rest of this request's completions, or every one left
        // where every request is in by now (each then follows the one before).
        const bool all = asked[requests - 1] + nvme_.host_read_ns <= end;
        uint64_t rest = len - k;
        uint32_t tlps = tlps_of(rest);
        if (all && r + 1 < requests) {
          rest = bytes - uint64_t(r) * mrrs - k;
          tlps += (requests - r - 2) * tlps_of(mrrs) + tlps_of(last_len);
        }
        if (link_.extend_down(end, tlps, tlps * uint64_t(kCplHeader + kFraming) + rest, end)) {
          if (all) r = requests;  // every one booked
          break;
        }
      }
      end = link_.down(at, PcieLink::tlp_bytes(kCplHeader, n));
      if (!r && !k) c.c.t_data_first = link_.last_start();
      watched(kTlpData, end);
      // r_err_rate: the controller NAKs a completion it received bad; the host replays it.
      // hold_storm_rate: the controller withholds flow-control credit for hold_storm_ns.
      if (chance(f.r_err_rate)) ++replays_, end = link_.down(end, PcieLink::tlp_bytes(kCplHeader, n));
      if (chance(f.hold_storm_rate)) end += f.hold_storm_ns;
    }
  }
  c.c.t_data_last = end;
  c.c.bytes += bytes;
  c.t = std::max(c.t, end);
  return true;
}

}  // namespace fisrig::nvme
