// The NVM command set on namespace 1 (512-byte blocks, the SSD's sectors): Read, Write
// (FUA), Flush, Dataset Management (deallocate), Write Zeroes (with DEAC) and Compare.
#include <algorithm>
#include <cstring>

#include "fisrig/nvme/controller.h"

namespace fisrig::nvme {

namespace {
constexpr uint32_t kBlock = drive::kSectorBytes;
constexpr uint32_t kPerPage = drive::Ssd::kSectorsPerPage;
}  // namespace

void Controller::io(Cmd& c) {
  if (c.sqe.opcode == FISRIG_NVME_CMD_FLUSH) {
    // Namespace 1, or every namespace (FFFFFFFFh).
    if (c.sqe.nsid != 1 && c.sqe.nsid != 0xFFFFFFFF) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_NAMESPACE);
    c.t = ssd_.flush(c.t);
    return;
  }
  if (c.sqe.nsid != 1) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_NAMESPACE);
  switch (c.sqe.opcode) {
    case FISRIG_NVME_CMD_READ: return read(c);
    case FISRIG_NVME_CMD_WRITE: return write(c);
    case FISRIG_NVME_CMD_WRITE_ZEROES: return write_zeroes(c);
    case FISRIG_NVME_CMD_COMPARE: return compare(c);
    case FISRIG_NVME_CMD_DATASET_MANAGEMENT: return deallocate(c);
    default: return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_OPCODE);
  }
}

bool Controller::lba_range(Cmd& c, uint64_t& slba, uint32_t& blocks, bool moves_data) {
  slba = uint64_t(c.sqe.cdw11) << 32 | c.sqe.cdw10;
  blocks = (c.sqe.cdw12 & 0xFFFF) + 1;
  c.c.slba = slba;
  c.c.blocks = blocks;
  if (slba >= ssd_.visible_sectors() || blocks > ssd_.visible_sectors() - slba)
    return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_LBA_OUT_OF_RANGE), false;
  if (moves_data && uint64_t(blocks) * kBlock > mdts_bytes())  // past MDTS
    return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD), false;
  // The idnf fault knob: blocks the media cannot find, a media error over NVMe (a read's
  // Unrecovered Read Error, a write's Write Fault).
  if (drive::first_hit(ssd_.config().faults.idnf, slba, blocks) < slba + blocks) {
    ++media_errors_;
    return fail(c, FISRIG_NVME_SCT_MEDIA, c.sqe.opcode == FISRIG_NVME_CMD_WRITE || c.sqe.opcode == FISRIG_NVME_CMD_WRITE_ZEROES
                                              ? FISRIG_NVME_SC_WRITE_FAULT
                                              : FISRIG_NVME_SC_UNRECOVERED_READ_ERROR), false;
  }
  return true;
}

void Controller::write_blocks(Cmd& c, const drive::WritePayload& pl, uint64_t slba, uint32_t n, bool with_data,
                              bool copy) {
  drive::SsdWrite w = ssd_.begin_write(pl, slba, c.sqe.cdw12 & FISRIG_NVME_RW_FUA);
  const uint64_t end = slba + n, first = slba / kPerPage, last = (end - 1) / kPerPage;
  // The controller takes the data once its buffer has room for it.
  c.t = ssd_.admit(c.t, last - first + 1);
  if (with_data && !from_host(c, copy ? buf_.data() : nullptr, buf_.size())) return;
  for (uint64_t p = first; p <= last; ++p)
    ssd_.write_page(w, p, std::max(slba, p * kPerPage), std::min(end, (p + 1) * kPerPage), c.t);
  c.t = ssd_.end_write(w, n, c.t);
}

void Controller::read(Cmd& c) {
  uint64_t slba;
  uint32_t n;
  if (!lba_range(c, slba, n, true)) return;
  const uint64_t bad = ssd_.first_unreadable(slba, n);
  static thread_local std::vector<SimTime> ready, in_buffer;
  ssd_.read_pages(slba, bad, c.t, ready);
  buf_.assign(uint64_t(n) * kBlock, 0);
  if (mem_.renders()) {  // the host's patterns as it wrote them, the SSD's bytes otherwise
    static thread_local std::vector<uint32_t> words;
    words.resize(bad - slba);
    ssd_.read_content(slba, bad, drive::ReadSink{words.data(), nullptr});
    for (uint64_t i = 0; i < bad - slba; ++i)
      if (!mem_.render(words[i], slba + i, buf_.data() + i * kBlock)) ssd_.content().read_bytes(slba + i, buf_.data() + i * kBlock);
  } else {
    ssd_.read_content(slba, bad, drive::ReadSink{nullptr, buf_.data()});
  }
  ssd_.count_read(bad - slba);
  // When each 4 KiB of the host's buffer is in the controller: the SSD's pages it spans.
  const uint64_t bytes = (bad - slba) * kBlock, lead = (slba % kPerPage) * kBlock;
  in_buffer.assign((bytes + 4095) / 4096, c.t);
  for (uint64_t j = 0; j < in_buffer.size(); ++j)
    for (uint64_t p = (lead + 4096 * j) / 4096; p <= (lead + std::min(bytes, 4096 * (j + 1)) - 1) / 4096 && p < ready.size(); ++p)
      in_buffer[j] = std::max(in_buffer[j], ready[p]);
  // What reads back goes to the host up to the first unreadable block; the command then ends
  // Unrecovered Read Error.
  to_host(c, buf_.data(), bytes, &in_buffer);
  ++host_reads_;
  if (bad < slba + n && c.sc == FISRIG_NVME_SC_SUCCESS) {
    ++media_errors_;
    fail(c, FISRIG_NVME_SCT_MEDIA, FISRIG_NVME_SC_UNRECOVERED_READ_ERROR);
  }
}

void Controller::write(Cmd& c) {
  uint64_t slba;
  uint32_t n;
  if (!lba_range(c, slba, n, true)) return;
  buf_.resize(uint64_t(n) * kBlock);
  drive::WritePayload pl;
  pl.kind = drive::WritePayload::Kind::kLiteral;
  pl.bytes = buf_.data();
  drive::WritePayload generated;
  const bool described = mem_.pattern(c.sqe.prp1, generated) && drive::payload_ok(generated);
  write_blocks(c, described ? generated : pl, slba, n, true, !described);
  ++host_writes_;
}

void Controller::write_zeroes(Cmd& c) {
  uint64_t slba;
  uint32_t n;
  if (!lba_range(c, slba, n)) return;
  if (c.sqe.cdw12 & FISRIG_NVME_WRITE_ZEROES_DEAC) {
    // DLFEAT: deallocated blocks read zeros, so deallocating them is writing zeros.
    ssd_.deallocate(slba, n);
    c.t = ssd_.run_firmware(c.t, ssd_.config().controller.trim_range_ns);
    return;
  }
  drive::WritePayload pl;
  pl.kind = drive::WritePayload::Kind::kZeros;
  write_blocks(c, pl, slba, n, false);
}

void Controller::compare(Cmd& c) {
  uint64_t slba;
  uint32_t n;
  if (!lba_range(c, slba, n, true)) return;
  const uint64_t bad = ssd_.first_unreadable(slba, n);
  static thread_local std::vector<SimTime> ready;
  ssd_.read_pages(slba, bad, c.t, ready);
  if (!ready.empty()) c.t = std::max(c.t, *std::max_element(ready.begin(), ready.end()));
  ++host_reads_;  // Compare counts as a read (the SMART log's Host Read Commands)
  if (bad < slba + n) return ++media_errors_, fail(c, FISRIG_NVME_SCT_MEDIA, FISRIG_NVME_SC_UNRECOVERED_READ_ERROR);
  std::vector<uint8_t> host(uint64_t(n) * kBlock);
  if (!from_host(c, host.data(), host.size())) return;
  buf_.assign(host.size(), 0);
  ssd_.read_content(slba, slba + n, drive::ReadSink{nullptr, buf_.data()});
  if (buf_ != host) fail(c, FISRIG_NVME_SCT_MEDIA, FISRIG_NVME_SC_COMPARE_FAILURE);
}

void Controller::deallocate(Cmd& c) {
  uint32_t ranges = (c.sqe.cdw10 & 0xFF) + 1;
  if (ranges > nvme_.dsm_max_ranges) return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD);
  std::vector<uint8_t> list(ranges * FISRIG_NVME_DSM_RANGE_BYTES);
  if (!from_host(c, list.data(), list.size())) return;
  if (!(c.sqe.cdw11 & FISRIG_NVME_DSM_AD)) return;  // only attributes: nothing to do
  // Every range checked before any is deallocated: a bad list changes nothing.
  struct Range { uint64_t slba; uint32_t n; };
  std::vector<Range> rs;
  for (uint32_t i = 0; i < ranges; ++i) {
    Range r;
    std::memcpy(&r.n, list.data() + 16 * i + 4, 4);
    std::memcpy(&r.slba, list.data() + 16 * i + 8, 8);
    if (!r.n) continue;
    if (r.slba >= ssd_.visible_sectors() || r.n > ssd_.visible_sectors() - r.slba)
      return fail(c, FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_LBA_OUT_OF_RANGE);
    rs.push_back(r);
  }
  for (const Range& r : rs) {
    ssd_.deallocate(r.slba, r.n);
    c.c.blocks += r.n;
  }
  c.t = ssd_.run_firmware(c.t, ssd_.config().controller.trim_range_ns * rs.size());
}

}  // namespace fisrig::nvme
