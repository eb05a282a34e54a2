// The NVMe engine as a transaction-level model: the descriptor-ring interface of
// engine_if.h (FISRIG_PROTO_NVME descriptors, NVMe completion records) over the simulated
// NVMe controller (sim/nvme), for the model target. The split is the one part 2 builds in
// gateware: the engine owns the admin queue and its I/O queue pairs in the rig's memory
// (nvme_rig_memory.h), writes each descriptor's SQE with its own command identifier and
// PRPs to the slot's data buffer, rings the doorbells, takes the CQEs and MSI-X messages,
// and writes one record per descriptor with the stamps engine_if.h defines at the rig's
// PCIe link, where pcie_link.h puts each TLP.
//
// Beside the commands: POWER OFF, ON, a cut at a time or a TLP of a kind, the current
// sampler (POWER SAMPLE), and LINK COMRESET (a controller
// reset: CC.EN cleared, the queues made again) and WAIT_UP (CSTS.RDY and the queues), one
// ring entry each as for SATA. A command past its timeout ends TIMEOUT and the engine
// resets the controller, as the SATA engine sends a COMRESET: the commands in flight end
// LINK_LOST, with what they had.
#pragma once

#include <cstdio>
#include <deque>
#include <functional>
#include <queue>
#include <vector>

#include "current_sampler.h"
#include "fisrig/nvme/queue_host.h"
#include "nvme_rig_memory.h"
#include "wire_stamps.h"

extern "C" {
#include "fisrig/vm.h"
}

namespace fisrig::model {

class NvmeEngineModel {
 public:
  static constexpr uint32_t kSqEntries = 1024;  // 32-byte entries: an NVMe descriptor takes three
  static constexpr uint32_t kCqEntries = 1024;
  static constexpr uint32_t kDataWindowBytes = FISRIG_NVME_DATA_MAX;
  static constexpr uint32_t kSlots = NvmeRigMemory::kSlots;
  static constexpr uint16_t kMaxIoQueues = FISRIG_NVME_ENGINE_QUEUES;  // I/O queue pairs it makes at most
  static constexpr uint32_t kMaxQueueEntries = FISRIG_NVME_ENGINE_QUEUE_ENTRIES;  // and their entries

  explicit NvmeEngineModel(drive::DriveConfig cfg);
  NvmeEngineModel(const NvmeEngineModel&) = delete;
  NvmeEngineModel& operator=(const NvmeEngineModel&) = delete;

  fisrig_engine_ops ops();
  // The I/O queue pairs the engine made (qids 1..io_queues()) and their entries.
  uint16_t io_queues() const { return io_queues_; }
  uint16_t queue_entries() const { return queue_entries_; }
  uint64_t now_ticks() const { return ns_to_ticks(now_); }
  SimTime now_ns() const { return now_; }
  nvme::Controller& controller() { return host_.ctrl; }
  const nvme::Controller& controller() const { return host_.ctrl; }
  // As EngineModel's: the bytes every data-in command returned, in completion order, for
  // commands that completed successfully (`fisrig raw`).
  void capture_data_in(std::FILE* f) { capture_ = f; }
  // As EngineModel's: remember writes whose pattern is not the stamp at 100% (read-back).
  void remember_write_styles(bool on) { host_.mem.styles.remember(on); }

 private:
  struct Slot {
    bool busy = false;
    fisrig_nvme_desc_head head{};
    uint8_t opcode = 0;
    uint64_t ts_submit = 0, ts_doorbell = 0;
    uint64_t deadline = 0;  // ticks
    uint64_t generation = 0;  // its starts so far: a deadline of an earlier one is stale
  };
  // The slots' deadlines as (tick, generation << 8 | slot): those that come in order (a
  // workload's, one timeout for all) in a FIFO, the others in a heap, earliest on top; an
  // entry goes stale when its slot ends, and leaves when it comes to the front (a heap's
  // push and pop for every command were 3% of the NVMe model's time).
  using Deadline = std::pair<uint64_t, uint64_t>;
  mutable std::deque<Deadline> deadlines_in_order_;
  mutable std::priority_queue<Deadline, std::vector<Deadline>, std::greater<Deadline>> deadlines_;
  // The slot whose deadline is the earliest, kSlots if none is busy.
  uint32_t earliest_deadline() const;

  void doorbell(uint32_t tail);
  void start(const fisrig_nvme_desc_head& h, fisrig_nvme_sqe s, uint64_t ts_submit);
  void ring_started();
  void power(const fisrig_cmd_desc& d, uint64_t ts_submit);
  void link(const fisrig_cmd_desc& d, uint64_t ts_submit);
  // Every event up to t handled: CQEs taken, timeouts, a cut due.
  void run_until(SimTime t) { run_events(t, next_event()); }
  // The same from `next`, next_event() as the caller found it; returns next_event() after
  // (without looking again where nothing that moves it happened).
  SimTime run_events(SimTime t, SimTime next);
  // Where the last run_events left things (the time it ran to and the next event), until
  // something moves them (a doorbell): a doorbell right after needs no run of its own.
  struct Settled {
    SimTime at = drive::kNever, next = 0;
  } settled_;
  void step(SimTime next);
  SimTime next_event() const;
  bool collect();  // true if a completion came
  void finish(uint32_t s, const nvme::NvmeCompletion& c);
  void free_slot(uint32_t s);
  // Slot s's command ends now with `result` and the stamps it had (submit, doorbell).
  void end_slot(uint32_t s, uint8_t result);
  // Every command in flight ends with `result` and the stamps it had.
  void lose_all(uint8_t result);
  void cut(SimTime t, uint64_t trigger_tick);
  // CC.EN, CSTS.RDY, Number of Queues and the I/O queue pairs, in simulated time from now;
  // false if the controller did not come ready within CAP.TO.
  bool bring_up();
  void reset_controller();
  // A record of a one-entry descriptor (POWER, LINK) or of one the engine ends at once.
  void end_desc(uint32_t user_tag, uint8_t result, uint64_t ts_submit);
  void end_nvme_at_once(const fisrig_nvme_desc_head& h, uint8_t result, uint64_t ts_submit);
  void push(const fisrig_cpl_record& r);
  template <class R>
  void push_as(const R& r) {
    fisrig_cpl_record c;
    static_assert(sizeof c == sizeof r, "a record is 80 bytes");
    std::memcpy(&c, &r, sizeof c);
    push(c);
  }

  static void c_doorbell(void* ctx, uint32_t tail);
  static uint32_t c_sq_head(void* ctx);
  static uint32_t c_cq_tail(void* ctx);
  static void c_cq_consumed(void* ctx, uint32_t head);
  static uint64_t c_now(void* ctx);
  static void c_wait(void* ctx, uint64_t until);

  nvme::QueueHostOn<NvmeRigMemory> host_;
  SimTime now_ = 0;
  bool up_ = false;  // the controller ready and the engine's queues made
  uint16_t io_queues_ = 0, queue_entries_ = 0;
  std::vector<fisrig_cmd_desc> sq_;
  std::vector<fisrig_cpl_record> cq_;
  std::deque<fisrig_cpl_record> held_;  // records waiting for room in the ring
  uint32_t sq_head_ = 0, cq_tail_ = 0, cq_head_ = 0;
  std::vector<uint8_t> window_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> started_;  // slots put on their queues, not yet rung for
  SimTime cut_at_ = drive::kNever;
  uint64_t cut_trigger_tick_ = 0;
  // A cut armed at the count-th TLP of a kind (engine_if.h enum fisrig_tlp_event): the
  // controller's bookings of the kind since the arming, earliest on top; each one's end
  // comes off once the clock reaches it, and the count-th sets cut_at_ its delay later.
  struct TlpArm {
    uint32_t left = 0;  // TLPs still to come (0: none armed)
    uint64_t delay_ticks = 0;
    SimTime since = 0;
  } tlp_arm_;
  std::priority_queue<SimTime, std::vector<SimTime>, std::greater<SimTime>> tlp_ends_;
  void arm_at_tlp(const fisrig_cmd_desc& d, uint64_t ts);
  // The current sampler (FISRIG_POWER_SAMPLE) on the SSD behind the controller; a record
  // that finds the ring full is dropped, as the gateware's sampler drops it.
  CurrentSampler sampler_;
  void sample_through(SimTime t);
  auto sense() {
    return [this](SimTime at) { return host_.ctrl.ssd().sensed_ma(at); };
  }
  auto push_current() {
    return [this](const fisrig_cpl_record& c) { return cq_tail_ - cq_head_ < kCqEntries && held_.empty() && (push(c), true); };
  }
  // The controller's new bookings into tlp_ends_, and those the clock has reached counted.
  bool count_tlps();  // true while armed (its TLPs' ends are events)
  void disarm();
  std::vector<uint8_t> buffer_;
  std::vector<nvme::NvmeCompletion> had_;  // by slot, while a cut ends what was in flight
  std::FILE* capture_ = nullptr;
};

}  // namespace fisrig::model
