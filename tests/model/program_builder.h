// Builds VM programs in tests, field by field as host/fisrig's compiler lays them out.
#pragma once

#include <cstring>
#include <vector>

extern "C" {
#include "fisrig/program.h"
}

namespace fisrig::test {

class ProgramBuilder {
 public:
  explicit ProgramBuilder(uint64_t drive_sectors = 0) : bytes_(sizeof(fisrig_program_header)) {
    sectors_ = drive_sectors;
  }
  template <class Op>
  ProgramBuilder& add(Op op, uint8_t opcode, const void* extra = nullptr, uint32_t extra_bytes = 0) {
    fisrig_op_head head{};
    head.opcode = opcode;
    head.size = uint16_t(sizeof op + ((extra_bytes + 3) & ~3u));
    std::memcpy(&op, &head, sizeof head);  // every instruction starts with its head
    size_t at = bytes_.size();
    bytes_.resize(at + head.size, 0);
    std::memcpy(&bytes_[at], &op, sizeof op);
    if (extra_bytes) std::memcpy(&bytes_[at + sizeof op], extra, extra_bytes);
    return *this;
  }
  ProgramBuilder& mark(uint32_t m) {
    fisrig_op_mark op{};
    op.marker = m;
    return add(op, FISRIG_OP_MARK);
  }
  ProgramBuilder& idle_ticks(uint64_t t) {
    fisrig_op_idle op{};
    op.ticks = t;
    return add(op, FISRIG_OP_IDLE);
  }
  ProgramBuilder& raw(const fisrig_cmd_desc& d, fisrig_expect e = any(), const void* data = nullptr,
                      uint32_t bytes = 0) {
    fisrig_op_raw op{};
    op.desc = d;
    op.expect = e;
    op.data_bytes = bytes;
    return add(op, FISRIG_OP_RAW, data, bytes);
  }
  ProgramBuilder& workload(const fisrig_op_workload& w) { return add(w, FISRIG_OP_WORKLOAD); }
  ProgramBuilder& nvme_workload(const fisrig_op_workload& w) { return add(w, FISRIG_OP_NVME_WORKLOAD); }
  // One NVMe command on queue qid, its expectation on the result and the CQE's status.
  ProgramBuilder& nvme_raw(uint16_t qid, const fisrig_nvme_sqe& s, uint32_t data_bytes = 0,
                           uint8_t data_source = FISRIG_DATA_NONE, uint32_t data_word = 0, uint8_t flags = 0,
                           uint8_t expect_result = 0xFF, uint16_t status_mask = 0, uint16_t status_value = 0,
                           const void* data_out = nullptr, uint32_t data_out_bytes = 0) {
    fisrig_op_nvme_raw op{};
    op.desc.protocol = FISRIG_PROTO_NVME;
    op.desc.qid = qid;
    op.desc.data_bytes = data_bytes;
    op.desc.data_source = data_source;
    op.desc.data_word = data_word;
    op.desc.flags = flags;
    op.sqe = s;
    op.expect_result = expect_result;
    op.status_mask = status_mask;
    op.status_value = status_value;
    op.data_bytes = data_out_bytes;
    return add(op, FISRIG_OP_NVME_RAW, data_out, data_out_bytes);
  }
  ProgramBuilder& trim(uint64_t lba, uint64_t n, bool queued) {
    fisrig_op_trim op{};
    op.lba_start = lba;
    op.sectors = n;
    op.queued = queued;
    return add(op, FISRIG_OP_TRIM);
  }
  ProgramBuilder& verify(uint64_t lba, uint64_t n, uint8_t per_read = FISRIG_VERIFY_MAX_SECTORS,
                         bool identify = true) {
    fisrig_op_verify op{};
    op.lba_start = lba;
    op.sectors = n;
    op.sectors_per_read = per_read;
    op.identify = identify;
    return add(op, FISRIG_OP_VERIFY);
  }
  ProgramBuilder& loop(uint32_t n) {
    fisrig_op_loop op{};
    op.count = n;
    return add(op, FISRIG_OP_LOOP);
  }
  // A loop that ends once the WORKLOAD at offset `tracked` (see at()) holds steady.
  ProgramBuilder& loop_until_steady(uint32_t most, uint32_t tracked, uint8_t window, uint8_t range_pct,
                                    uint8_t slope_pct) {
    fisrig_op_loop op{};
    op.count = most;
    op.steady_pc = tracked;
    op.steady_window = window;
    op.steady_range_pct = range_pct;
    op.steady_slope_pct = slope_pct;
    return add(op, FISRIG_OP_LOOP);
  }
  ProgramBuilder& end_loop() { return add(fisrig_op_head{}, FISRIG_OP_END_LOOP); }
  // A trace with its entries, or (entries_at set) a replay of an earlier one's.
  ProgramBuilder& trace(const std::vector<fisrig_trace_entry>& entries, uint8_t qd, bool ncq, uint8_t trims,
                        uint32_t entries_at = 0, uint8_t queues = 0) {
    fisrig_op_trace op{};
    op.queue_depth = qd;
    op.queues = queues;
    op.ncq = ncq;
    op.data_source = FISRIG_DATA_STAMP;
    op.compress_pct = 100;
    op.entries = uint32_t(entries.size());
    op.trims = trims;
    op.entries_at = entries_at;
    add(op, FISRIG_OP_TRACE);
    if (!entries_at) {
      size_t at = bytes_.size();
      bytes_.resize(at + entries.size() * sizeof(fisrig_trace_entry));
      std::memcpy(&bytes_[at], entries.data(), entries.size() * sizeof(fisrig_trace_entry));
    }
    return *this;
  }
  // The offset the next instruction will have.
  uint32_t at() const { return uint32_t(bytes_.size()); }
  std::vector<uint8_t> build() {
    add(fisrig_op_head{}, FISRIG_OP_END);
    fisrig_program_header h{};
    h.magic = FISRIG_PROGRAM_MAGIC;
    h.version = FISRIG_PROGRAM_VERSION;
    h.size = uint32_t(bytes_.size());
    h.drive_sectors = sectors_;
    std::memcpy(bytes_.data(), &h, sizeof h);
    return bytes_;
  }

  static fisrig_expect any() {
    fisrig_expect e{};
    e.result = 0xFF;
    return e;
  }
  static fisrig_expect ok() {
    fisrig_expect e{};
    e.result = FISRIG_RESULT_OK;
    return e;
  }
  static fisrig_cmd_desc desc(uint8_t protocol, uint8_t command, uint64_t lba, uint16_t count,
                              uint16_t features = 0) {
    fisrig_cmd_desc d{};
    d.protocol = protocol;
    d.command = command;
    d.count = count;
    d.features = features;
    d.device = 0x40;
    for (int i = 0; i < 6; ++i) d.lba[i] = uint8_t(lba >> (8 * i));
    return d;
  }
  static fisrig_op_workload random_4k(uint8_t qd, bool ncq, uint8_t read_pct, uint64_t commands,
                                      uint64_t span) {
    fisrig_op_workload w{};
    w.pattern = FISRIG_PATTERN_UNIFORM;
    w.queue_depth = qd;
    w.ncq = ncq;
    w.data_source = FISRIG_DATA_STAMP;
    w.compress_pct = 100;
    w.read_pct = read_pct;
    w.sizes = 1;
    w.size_sectors[0] = 8;
    w.size_weight[0] = 1;
    w.seed = 1;
    w.lba_span = span;
    w.stop_commands = commands;
    return w;
  }

 private:
  std::vector<uint8_t> bytes_;
  uint64_t sectors_ = 0;
};

}  // namespace fisrig::test
