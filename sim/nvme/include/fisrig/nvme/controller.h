// The simulated NVMe controller over the SSD (sim/ssd): NVMe's registers, the admin queue
// and the I/O queue pairs in the host's memory, their doorbells and phase tags, PRPs, round
// robin arbitration, and the admin and NVM commands it implements, each ending in the
// status the specification gives it (fisrig/nvme.h has every number).
//
// The host writes registers and doorbells at simulated times; run_until(t) fetches and
// executes what the doorbells made pending and posts each command's CQE in the host's
// memory. Every command's phases come back, in posting order, through pop_completion().
//
// Every TLP the commands cause crosses the PCIe link (pcie_link.h): the doorbell, the SQE's
// read request and completion, a PRP list's, the data (written to the host for a read,
// read from it for a write), the CQE and the MSI-X message.
//
// Not yet here: the NVMe profile keys (NvmeConfig's defaults stand for every profile), a
// command's abort once fetched, error log entries.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fisrig/nvme/host_memory.h"
#include "fisrig/nvme/pcie_link.h"
#include "fisrig/ssd/ssd.h"

extern "C" {
#include "fisrig/nvme.h"
}

namespace fisrig::nvme {

using drive::SimTime;

// What the controller takes beside the profile's [nvme] section (NvmeInterfaceConfig), which
// sets the link, the queues and MDTS.
struct NvmeConfig {
  uint8_t timeout_500ms = 20;         // CAP.TO: 10 s to ready
  uint32_t dsm_max_ranges = 256;
  SimTime enable_ns = 1000 * drive::kNsPerUs;    // CC.EN to CSTS.RDY
  SimTime shutdown_ns = 5000 * drive::kNsPerUs;  // CC.SHN normal to SHST complete, past the drain
  // The host's memory behind its root port: kProfileHostRead takes the profile's
  // (nvme.host_read_ns).
  static constexpr SimTime kProfileHostRead = ~SimTime(0);
  SimTime host_read_ns = kProfileHostRead;
  // The link is not the controller's to cost: it is the TLP interface's (tlp_device.h), which
  // fetches what a command needs before the controller sees its doorbell and sends what the
  // controller writes no sooner than on_host_write() says. Its own link then costs nothing
  // (PcieConfig's gen 0); host_read_ns is then 0 too (tlp_device.cc sets both).
  bool free_link = false;
};

// What the controller writes to the host's memory, and no sooner than when (on_host_write):
// a piece of a read's data (as the SSD has it), a CQE, the MSI-X message of the CQ's vector.
struct HostWrite {
  enum Kind : uint8_t { kData, kCqe, kMsix } kind = kData;
  uint64_t address = 0;
  uint32_t bytes = 0;
  uint16_t vector = 0;  // kMsix: the CQ's interrupt vector
  SimTime not_before = 0;
};

// One command's life, as the controller saw it.
struct NvmeCompletion {
  uint16_t sqid = 0, cid = 0;
  uint8_t opcode = 0;
  uint16_t status = 0;        // the CQE's status field, phase bit clear
  uint32_t dw0 = 0;
  uint64_t slba = 0;
  uint32_t blocks = 0;
  SimTime t_doorbell = 0;     // the SQ tail doorbell that made it visible: its TLP's end
  SimTime t_fetch = 0;        // its SQE in: the completion's end
  SimTime t_data_first = 0;   // its first data TLP's start and its last one's end (0: none)
  SimTime t_data_last = 0;
  SimTime t_cqe = 0;          // its CQE's TLP's end
  SimTime t_irq = 0;          // the MSI-X message's end
  uint64_t bytes = 0;         // data moved in its data TLPs, either way (not PRP lists)
  bool ok() const { return (status >> FISRIG_NVME_STATUS_SC_SHIFT & 0x7FF) == 0; }
};

// The host buffer of `bytes` PRP1 and PRP2 describe, as (address, length) pieces in order,
// PRP lists read from `mem`; false where an offset is not one the specification allows.
bool walk_prps(uint64_t prp1, uint64_t prp2, uint64_t bytes, HostMemory& mem,
               std::vector<std::pair<uint64_t, uint32_t>>& out);

// The link the profile's [nvme] section describes, with the rig's memory behind it.
PcieConfig pcie_of(const drive::NvmeInterfaceConfig& profile, SimTime host_read_ns);

class Controller {
 public:
  Controller(drive::DriveConfig config, HostMemory& memory, NvmeConfig nvme = {});

  // Registers, by BAR0 offset; writes take effect at t.
  uint32_t read32(uint32_t offset) const;
  uint64_t read64(uint32_t offset) const;
  void write32(uint32_t offset, uint32_t value, SimTime t);
  void write64(uint32_t offset, uint64_t value, SimTime t);
  // The profile's NVMe side.
  const drive::NvmeInterfaceConfig& profile() const { return ssd_.config().nvme; }
  uint32_t mdts_bytes() const { return 4096u << profile().mdts; }
  // A volatile write cache: one the drive has and power-loss protection does not keep.
  static bool vwc_present(const drive::DriveConfig& cfg) { return !cfg.power.plp; }
  bool vwc_present() const { return vwc_present(ssd_.config()); }
  // The doorbells' offsets for queue `qid`.
  uint32_t sq_doorbell(uint16_t qid) const { return FISRIG_NVME_REG_DOORBELLS + (2u * qid << (2 + dstrd_)); }
  uint32_t cq_doorbell(uint16_t qid) const { return FISRIG_NVME_REG_DOORBELLS + ((2u * qid + 1) << (2 + dstrd_)); }

  // Fetches and executes every command the doorbells made visible by t.
  void run_until(SimTime t);
  // The earliest time something is due (a CQE to post, a command to fetch), kNever if
  // nothing is: a host with nothing else to do runs to it.
  SimTime next_event() const;
  bool pop_completion(NvmeCompletion& out);
  bool has_completions() const { return !done_.empty(); }
  // When queue qid's last SQ tail doorbell write reached the controller (its TLP's end).
  SimTime sq_doorbell_at(uint16_t qid) const { return qid < sqs_.size() ? sqs_[qid].doorbell_at : 0; }
  // The TLPs of the kinds in `kinds` (a bit per TlpKind) from here on, each its end as
  // booked, into watched() (a cut at a TLP of a kind: the engine takes them from there; 0
  // stops). Bookings come in no order of time, but never before the time they are made at.
  enum TlpKind : uint32_t { kTlpDoorbell = 1, kTlpSqe = 2, kTlpData = 4, kTlpCqe = 8 };
  void watch_tlps(uint32_t kinds) {
    watch_ = kinds;
    watched_.clear();
  }
  std::vector<SimTime>& watched() { return watched_; }
  // The commands fetched whose CQE the host has not had yet, as they stand (their stamps
  // past the present are bookings): what a cut finds in flight.
  std::vector<NvmeCompletion> fetched() const;
  // Each write to the host's memory as it is booked (HostWrite; none is called without it).
  void on_host_write(std::function<void(const HostWrite&)> f) { host_write_ = std::move(f); }
  // Queue qid's SQ as the controller has it (not live: no such queue, or not made).
  struct SqView {
    bool live = false;
    uint64_t base = 0;
    uint32_t size = 0, tail = 0;
  };
  SqView sq(uint16_t qid) const {
    if (qid >= sqs_.size() || !sqs_[qid].live) return {};
    return {true, sqs_[qid].base, sqs_[qid].size, sqs_[qid].tail};
  }
  // Doorbell writes the controller ignored (past a queue's end, a queue that is not there):
  // the asynchronous event it reports (Invalid Doorbell Write Value).
  uint32_t invalid_doorbell_writes() const { return invalid_doorbells_; }

  // CSTS as of the latest time the host gave (a register write or run_until).
  uint32_t csts() const;
  bool ready() const { return csts() & FISRIG_NVME_CSTS_RDY; }
  uint32_t shutdown_status() const { return (csts() >> FISRIG_NVME_CSTS_SHST_SHIFT) & 3; }
  // Rails off at t: the volatile write cache is lost unless a shutdown completed first
  // (counted as an unsafe shutdown otherwise); on again at t, the controller disabled.
  void power_off(SimTime t);
  void power_on(SimTime t);
  // When the SSD is up after the last power on (a PCI function answers CRS until then).
  SimTime boot_done() const { return boot_done_; }
  uint64_t unsafe_shutdowns() const { return unsafe_shutdowns_; }
  // TLPs the link sent again: a receiver found its LCRC bad and NAKed it (the fault knobs
  // data_fis_crc_error_rate and r_err_rate, docs/nvme.md), which the link layer recovers.
  uint64_t replays() const { return replays_; }
  const drive::Ssd& ssd() const { return ssd_; }
  drive::Ssd& ssd() { return ssd_; }
  const NvmeConfig& config() const { return nvme_; }

  // Identify's pages (4,096 bytes each), from the controller's state; and a new drive's, from
  // its profile alone, without building it (fisrig identify --protocol nvme: a 1 TB drive's
  // tables take seconds and gigabytes), which tests/nvme/test_admin.cc holds to the built one's.
  std::vector<uint8_t> identify_controller() const;
  std::vector<uint8_t> identify_namespace(uint32_t nsid) const;
  static std::vector<uint8_t> identify_controller(const drive::DriveConfig& cfg);
  static std::vector<uint8_t> identify_namespace(uint64_t visible_blocks, uint32_t awupf);
  std::vector<uint8_t> smart_log(SimTime now) const;

 private:
  struct Sq {
    bool live = false;
    uint64_t base = 0;
    uint32_t size = 0;  // entries
    uint32_t head = 0, tail = 0;
    uint16_t cqid = 0;
    SimTime doorbell_at = 0;
  };
  struct Cq {
    bool live = false;
    uint64_t base = 0;
    uint32_t size = 0;
    uint32_t head = 0, tail = 0;
    bool phase = true;
    uint32_t users = 0;  // SQs that post to it
    std::deque<std::pair<fisrig_nvme_cqe, NvmeCompletion>> held;  // waiting for room
    bool interrupts = true;  // IEN: an MSI-X message after each CQE
    uint16_t vector = 0;     // IV
  };
  struct Cmd {
    fisrig_nvme_sqe sqe;
    uint16_t sqid;
    NvmeCompletion c;
    uint16_t sc = FISRIG_NVME_SC_SUCCESS;
    uint8_t sct = FISRIG_NVME_SCT_GENERIC;
    SimTime t = 0;  // where the controller has got to with it
    bool held = false;  // an Asynchronous Event Request: completes at an event
    uint16_t sqhd = 0;  // its SQ's head once it was fetched (its CQE says so)
    uint16_t cqid = 0;  // the CQ its SQ posted to when it was fetched
    bool cqe_booked = false;  // its CQE's TLPs are on the link (t: their end), else t is when it is ready
  };

  void enable(SimTime t);
  void disable(SimTime t);  // controller reset: every queue gone, CSTS.RDY 0
  void shutdown(SimTime t);
  void fail(Cmd& c, uint8_t sct, uint8_t sc) {
    c.sct = sct;
    c.sc = sc;
  }
  void execute(Cmd& c);  // the fault knobs' firmware time and delay around run
  void run(Cmd& c);
  // A command done at c.t: its CQE is posted once run_until reaches that time.
  void finish(Cmd& c);
  void book_cqe(Cmd& c);
  void post(Cmd& c);
  void drain(Cq& q, SimTime t);
  void write_cqe(Cq& q, fisrig_nvme_cqe& e, const NvmeCompletion& c);  // into the CQ's tail, its phase set
  // Admin (admin.cc).
  void admin(Cmd& c);
  void create_cq(Cmd& c);
  void create_sq(Cmd& c);
  void delete_sq(Cmd& c);
  void delete_cq(Cmd& c);
  void identify(Cmd& c);
  void get_log_page(Cmd& c);
  void set_features(Cmd& c);
  void get_features(Cmd& c);
  void format(Cmd& c, bool sanitize);
  // An event for the host: the oldest outstanding Asynchronous Event Request completes
  // with `dw0` (type, information, log page), none if none is outstanding.
  void async_event(SimTime t, uint32_t dw0);
  // NVM (io.cc).
  void io(Cmd& c);
  // The command's blocks (SLBA, NLB), checked against the namespace and, for a command that
  // moves data, MDTS.
  bool lba_range(Cmd& c, uint64_t& slba, uint32_t& blocks, bool moves_data = false);
  // The blocks written through the buffer into the SSD, with the host's data (from_host)
  // or without (zeros).
  void write_blocks(Cmd& c, const drive::WritePayload& pl, uint64_t slba, uint32_t n, bool with_data,
                    bool copy = true);
  void read(Cmd& c);
  void write(Cmd& c);
  void write_zeroes(Cmd& c);
  void compare(Cmd& c);
  void deallocate(Cmd& c);
  // The host buffer of `bytes` the command's PRPs describe, as (address, length) pieces in
  // order (prp.cc); false with the command failed where they are not valid.
  bool prp_pieces(Cmd& c, uint64_t bytes, std::vector<std::pair<uint64_t, uint32_t>>& out);
  // The data moved, and its TLPs booked: to the host from `ready` (or page by page of the
  // SSD from ready[i], 4 KiB each), from the host from c.t; both set the command's data
  // stamps and to_host's and from_host's c.t to the last TLP's end.
  void to_host(Cmd& c, const uint8_t* data, uint64_t bytes, const std::vector<SimTime>* ready = nullptr);
  // `data` null: the TLPs only (a buffer the host described as a pattern: HostMemory::pattern).
  bool from_host(Cmd& c, uint8_t* data, uint64_t bytes);
  // A PRP list's read (request up, completion down), where the command has one: when it is in.
  SimTime fetch_prp_list(const Cmd& c, uint64_t bytes, SimTime t);

  drive::Ssd ssd_;
  HostMemory& mem_;
  NvmeConfig nvme_;
  PcieLink link_;
  uint32_t dstrd_ = 0;
  uint32_t cc_ = 0, csts_ = 0, aqa_ = 0;
  uint64_t asq_ = 0, acq_ = 0;
  std::vector<Sq> sqs_;
  std::vector<Cq> cqs_;
  // The live SQs with commands the controller has not fetched (head short of tail), by id:
  // what fetching, arbitration and next_event() look at (of the profile's queue pairs a
  // host uses a few), kept as heads and tails move and made again when a queue comes or goes.
  std::vector<uint16_t> pending_sqs_;
  void list_pending_sqs() {
    pending_sqs_.clear();
    for (size_t q = 0; q < sqs_.size(); ++q)
      if (sqs_[q].live && sqs_[q].head != sqs_[q].tail) pending_sqs_.push_back(uint16_t(q));
  }
  void update_pending(uint16_t q) {
    auto it = std::lower_bound(pending_sqs_.begin(), pending_sqs_.end(), q);
    const bool in = it != pending_sqs_.end() && *it == q, want = sqs_[q].live && sqs_[q].head != sqs_[q].tail;
    if (want && !in) pending_sqs_.insert(it, q);
    else if (!want && in) pending_sqs_.erase(it);
  }
  // When the next command can be fetched: its doorbell in, the controller ready and done
  // with the one before (kNever: none pending).
  SimTime next_fetch() const {
    SimTime t = drive::kNever;
    for (uint16_t q : pending_sqs_) t = std::min(t, sqs_[q].doorbell_at);
    return t == drive::kNever ? t : std::max({t, ready_at_, busy_until_});
  }
  uint16_t granted_queues_ = 0;  // Number of Queues, once set: I/O SQs and CQs the host may make
  bool queues_granted_ = false;
  SimTime ready_at_ = drive::kNever;
  SimTime boot_done_ = 0;  // the SSD up after the last power on: CSTS.RDY no sooner
  SimTime busy_until_ = 0;  // the controller's command processing, in order
  uint32_t rr_next_ = 0;    // round robin's next SQ
  uint32_t arbitration_ = 0;  // the Arbitration feature as set
  std::vector<Cmd> aers_;     // outstanding Asynchronous Event Requests
  // Commands done whose CQE is not yet posted: kept in cmds_ (free_cmds_: the unused), due
  // by a heap of (time, finish order, index) in inflight_, so the heap moves 24 bytes, not
  // a Cmd.
  struct Due {
    SimTime t;
    uint64_t seq;
    uint32_t index;
  };
  struct Later {  // a type, not a function's address, so the heap's compares are inlined
    bool operator()(const Due& a, const Due& b) const { return a.t != b.t ? a.t > b.t : a.seq > b.seq; }
  };
  std::vector<Cmd> cmds_;
  std::vector<uint32_t> free_cmds_;
  std::vector<Due> inflight_;
  void drop_inflight() {
    inflight_.clear();
    cmds_.clear();
    free_cmds_.clear();
  }
  uint64_t next_seq_ = 0;
  uint32_t invalid_doorbells_ = 0;
  uint64_t unsafe_shutdowns_ = 0;
  uint64_t host_reads_ = 0, host_writes_ = 0, media_errors_ = 0;  // the SMART log's counts
  // The fault knobs (the profile's [faults], drawn from its seed): docs/nvme.md says what
  // each means over NVMe.
  bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  std::mt19937_64 rng_;
  uint64_t commands_seen_ = 0;  // since the last reset, for hang_after_commands and link_drop_after_commands
  uint64_t replays_ = 0;
  bool enabled_ = false;                 // CC.EN taken, the admin queues good
  SimTime now_ = 0;                      // the latest time the host gave
  SimTime shutdown_done_ = drive::kNever;  // when CC.SHN's shutdown completes
  std::deque<NvmeCompletion> done_;
  uint32_t watch_ = 0;
  std::vector<SimTime> watched_;
  void watched(uint32_t kind, SimTime end) {
    if (watch_ & kind) watched_.push_back(end);
  }
  std::vector<uint8_t> buf_;
  std::function<void(const HostWrite&)> host_write_;
};

}  // namespace fisrig::nvme
