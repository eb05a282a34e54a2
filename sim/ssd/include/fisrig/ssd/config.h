// Drive configuration: the profile a drive is built from (identity, NAND geometry and
// timing, controller, cache, GC policy, power behaviour) and the per-run fault knobs.
// Profiles are TOML files; see sim/ssd/profiles/ and docs/drive-model.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "fisrig/ssd/sim_time.h"

namespace fisrig::drive {

struct LbaRange {
  uint64_t first = 0;
  uint64_t count = 0;
  bool overlaps(uint64_t lba, uint64_t n) const { return lba < first + count && first < lba + n; }
};

// The first sector of [lba, lba+n) inside any of the ranges, or lba+n if none.
inline uint64_t first_hit(const std::vector<LbaRange>& ranges, uint64_t lba, uint64_t n) {
  uint64_t hit = lba + n;
  for (const LbaRange& r : ranges)
    if (r.overlaps(lba, n)) hit = std::min(hit, std::max(lba, r.first));
  return hit;
}

// Faults the drive injects. Transaction-level knobs act in the Drive; the link-level
// ones (CRC, R_ERR, HOLD) are also read by the device-side link layer of the RTL rig.
struct FaultKnobs {
  double data_fis_crc_error_rate = 0;  // per Data FIS: the command fails with ICRC|ABRT
  double r_err_rate = 0;               // per FIS the host sends: R_ERR (H2D sent again, write data fails ICRC)
  double hold_storm_rate = 0;          // per Data FIS the device receives: it holds for hold_storm_ns
  SimTime hold_storm_ns = 0;
  double busy_rate = 0;                // per command: the device stays busy busy_ns longer
  SimTime busy_ns = 0;
  double latency_outlier_rate = 0;     // per command: completion delayed by outlier_ns
  SimTime latency_outlier_ns = 0;
  std::vector<LbaRange> unc;           // reads touching these fail UNC
  std::vector<LbaRange> idnf;          // any access touching these fails IDNF
  uint64_t hang_after_commands = 0;    // 0 = never; else the drive stops answering after N
  uint64_t link_drop_after_commands = 0;  // 0 = never; else after N it resets its link itself
  uint64_t seed = 1;
  // Power-on to ready instead of the profile's power.boot_ms (kNever: the profile's). The
  // rtl target boots its drive in 100 us: a profile's 200 ms is 30 M simulated cycles a cut.
  SimTime boot_ns = kNever;

  // Sets one knob from its profile/CLI name, e.g. ("busy_ns", "20000") or
  // ("unc", "1000+8,4096+1"). Throws std::invalid_argument naming the knob.
  void set(const std::string& name, const std::string& value);
};

struct NandGeometry {
  uint32_t channels = 8;
  uint32_t dies_per_channel = 4;
  uint32_t planes_per_die = 2;
  uint32_t blocks_per_plane = 2048;
  uint32_t pages_per_block = 256;
  uint32_t page_bytes = 8192;
  // Program/erase cycles a block is rated for: SMART's wear attribute counts down to it.
  uint32_t rated_pe_cycles = 3000;
  uint32_t dies() const { return channels * dies_per_channel; }
  uint64_t raw_bytes() const {
    return uint64_t{dies()} * planes_per_die * blocks_per_plane * pages_per_block * page_bytes;
  }
};

struct NandTiming {
  SimTime read_ns = 50 * kNsPerUs;
  SimTime program_ns = 1300 * kNsPerUs;
  SimTime erase_ns = 3 * kNsPerMs;
  double channel_mbps = 200;  // NAND bus, MB/s (1e6 bytes)
  // Page types. A cell holds bits_per_cell bits, each on its own page of the block (lower,
  // then middle, then upper), programmed in the shadow order (lower page of word line n+1
  // before the upper page of word line n: nand_page_type), so a page's index within its
  // block says its type. page_read_ns / page_program_ns give each type's time, lower page
  // first; empty, every page takes read_ns / program_ns.
  uint32_t bits_per_cell = 1;
  std::vector<SimTime> page_read_ns, page_program_ns;
  // Each read, program and erase takes its nominal time times a factor drawn from a
  // triangular distribution over [1 - spread, 1 + spread] (mean 1, mode 1), from the
  // drive's seed (FaultKnobs::seed), every operation on its own. 0: nominal times.
  double spread_pct = 0;
  // Each block's own speed: a draw T over [-1, 1] (triangular), its own for the drive's life
  // and shared by the blocks of a superblock (block n of every die), scales its programs of
  // page type i by 1 + block_spread_pct[i] / 100 x T (one value for every type, or one per
  // type, lower page first) and its erase by 1 + erase_spread_pct / 100 x T.
  std::vector<double> block_spread_pct;
  double erase_spread_pct = 0;
  // That share of reads (percent) fails its ECC and is read again at shifted reference
  // voltages (a read retry), costing read_retry_ns more on the die.
  double read_retry_pct = 0;
  SimTime read_retry_ns = 0;
  // A page programmed one bit a cell (the SLC cache, CacheConfig::slc_gb): its program time;
  // 0, the lower page's (page_program_ns[0], or program_ns). It reads as a lower page.
  SimTime slc_program_ns = 0;
};

struct ControllerConfig {
  SimTime command_overhead_ns = 2 * kNsPerUs;  // firmware time per command, serialised
  SimTime page_read_overhead_ns = 0;           // firmware time per NAND page read, serialised
  SimTime trim_range_ns = 2 * kNsPerUs;        // firmware time per DSM range entry
  bool compression = false;                    // SandForce-like: data shrinks before NAND
  uint32_t compression_slot_bytes = 1024;      // allocation unit when compressing
  // Percent of the logical pages a TRIM reads back as zeros but leaves mapped, the same
  // pages every time: SandForce SF-2281 firmware 5.0.0 to 5.0.2's broken TRIM, whose reads
  // stay slow after a TRIM (sandforce-trim-broken.txt). 0 on a drive whose TRIM works.
  double trim_keeps_mapped_pct = 0;
};

struct CacheConfig {
  bool enabled = true;         // power-on default; SET FEATURES changes it
  uint64_t bytes = 32u << 20;  // volatile write buffer
  bool flush_honest = true;    // false: FLUSH returns at once and drains nothing
  SimTime idle_flush_ns = 50 * kNsPerMs;  // a part-filled program unit is written after this idle
  // An SLC cache of this many GB of host data (0: none): host writes land in superblocks
  // programmed one bit a cell (NandTiming::slc_program_ns) while it has room and the free
  // pool is deeper than GC's floor, then straight in the native cells; idle time folds it
  // back into native cells (the Ftl), and the cache is there again. A drive full enough has
  // none left: the free pool decides, as a dynamic SLC cache's size shrinks with use.
  double slc_gb = 0;
};

struct GcConfig {
  uint32_t foreground_free_superblocks = 2;  // GC in the write path below this many free
  double background_target_free_pct = 2.5;  // idle GC builds the free pool up to this
  SimTime background_idle_ns = 100 * kNsPerMs;  // idle time before background GC starts
  double background_max_valid_pct = 95;      // idle GC skips victims fuller than this
  // true: a superblock reclaimed in the write path is erased one die at a time while the
  // host's programs wait (a single-threaded controller's GC; idle GC still erases every
  // die at once). false: each die erases when its queued work ends, the others program on.
  bool serial_erase = false;
};

struct InterfaceConfig {
  // The fastest SATA generation the drive supports: 1, 2 or 3 (1.5, 3, 6 Gb/s); IDENTIFY
  // word 76. The transaction-level link runs at it (the speed actually negotiated, word 77,
  // is the device side's to tell: Drive::set_link_gen).
  uint32_t max_gen = 3;
  double dwords_per_s() const { return max_gen == 1 ? 37.5e6 : max_gen == 2 ? 75e6 : 150e6; }
};

// The NVMe front end's part of a profile (sim/nvme): its PCIe link and its queues. A SATA
// drive's profile leaves it at its defaults, which the NVMe controller then takes.
struct NvmeInterfaceConfig {
  uint32_t pcie_gen = 3;             // 1..5: 2.5 to 32 GT/s a lane
  uint32_t pcie_lanes = 4;           // 1, 2, 4, 8 or 16
  uint32_t max_payload = 256;        // MPS, bytes: 128 to 4096, a power of 2
  uint32_t max_read_request = 512;   // MRRS, bytes: 128 to 4096, a power of 2
  // The host's memory read latency behind its root port (a read request's leaving to its
  // first completion's coming): a PC's is some hundreds of ns; the rig's own memory behind
  // its gateware root port answers within a few ticks (docs/nvme-rig.md).
  SimTime host_read_ns = 600;
  uint32_t io_queue_pairs = 64;      // what Number of Queues grants at most
  uint32_t max_queue_entries = 1024; // CAP.MQES + 1
  uint32_t mdts = 5;                 // largest transfer: 2^mdts pages of 4 KiB (Identify's MDTS)
  // Atomic Write Unit Power Fail, in blocks less one as Identify's AWUPF says it: a write of
  // at most awupf + 1 blocks lands whole or not at all across a cut. More than one block
  // takes power-loss protection (power.plp): without it the buffer loses a write's pages
  // one by one.
  uint32_t awupf = 0;
};

// What a cut does beyond losing the volatile cache. An honest drive (torn_reads_unc false
// and none of the lies below) keeps a prefix of what it was told, in order: every write
// acknowledged before a completed FLUSH survives. The lies are the power-fault failures
// Zheng et al. (FAST 2013) found in real SSDs, one knob each, so that a checker can be held
// to finding every one (docs/power-loss.md).
struct PowerConfig {
  // The rails the drive runs on, a bit each as the rig's power pins (engine_if.h's enum
  // fisrig_power_pin: 3.3 V 1, 5 V 2, 12 V 4): it loses power when one of them falls (or P3
  // is asserted) and has it back once all are on (and P3 released). A 2.5-inch SATA SSD
  // takes 5 V alone; an M.2 one 3.3 V; a 3.5-inch drive 5 V and 12 V.
  uint32_t rails = 0x2;
  SimTime boot_ns = 200 * kNsPerMs;  // power on to ready (after OOB)
  // Power-loss protection: capacitors hold the drive up after a cut until its buffer is on
  // NAND and its programs are done, so nothing it acknowledged is lost and nothing is torn
  // (an enterprise drive's; the lies below still apply to a drive that has them).
  bool plp = false;
  bool torn_reads_unc = true;        // a program cut mid-way reads UNC (else old data)
  bool reorders = false;             // persists later buffered units and loses earlier ones
  uint32_t misdirected_pages = 0;    // the last pages made durable before a cut landed one page on
  bool loses_map_segment = false;    // the mapping segment (4 MiB) of the last page made durable
                                     // before a cut is lost: its LBAs read zeros
  SimTime bit_errors_ns = 0;         // pages made durable this soon before a cut read a bit flipped
  uint32_t dies_after_cycles = 0;    // the drive never comes ready after this many cuts (0: never)
  // After this many cuts the drive comes back 8 MiB large (IDENTIFY's capacity 16,384
  // sectors, LBAs past it IDNF), as Intel's 320 series did after power loss in 2011 (its
  // "8MB bug"); 0: never.
  uint32_t shrinks_to_8mib_after_cycles = 0;
  // What the drive draws from its supply, by state, in mA (Drive::current_ma): idle, and
  // per die the NAND operation it runs (the garbage collector's reads, programs and erases
  // at gc_ma). A 2012-class 2.5-inch MLC SSD on 5 V: about 0.3 W idle and 3 to 4 W writing
  // on 8 dies.
  double idle_ma = 60, read_ma = 25, program_ma = 80, erase_ma = 60, gc_ma = 90;
};

struct IdentityConfig {
  std::string model = "fisrig simulated SSD";
  std::string serial = "FSR00000001";
  std::string firmware = "1.0";
  uint32_t dsm_max_blocks = 8;  // 512-byte blocks of TRIM ranges per command
  uint32_t security_erase_minutes = 2;
};

struct DriveConfig {
  std::string name = "default";
  IdentityConfig identity;
  uint64_t user_sectors = 0;  // LBA count (512-byte sectors)
  // capacity.op_pct: the spare over the user capacity, in percent, as reviews quote it; when
  // given (>= 0) it sets user_sectors from the raw NAND once the profile is read.
  double op_pct = -1;
  NandGeometry nand;
  NandTiming timing;
  ControllerConfig controller;
  CacheConfig cache;
  GcConfig gc;
  InterfaceConfig interface;
  NvmeInterfaceConfig nvme;
  PowerConfig power;
  FaultKnobs faults;

  uint64_t user_bytes() const { return user_sectors * 512; }
  // Spare capacity over user capacity, as the reviews quote over-provisioning.
  double over_provisioning() const {
    return double(nand.raw_bytes()) / double(user_bytes()) - 1.0;
  }
  // Throws ProfileError when the geometry or a setting cannot work.
  void validate() const;
};

// A profile the drive refuses: which key, where, and why.
class ProfileError : public std::runtime_error {
 public:
  ProfileError(std::string source, std::string key, int64_t line, const std::string& why);
  const std::string& key() const { return key_; }
  int64_t line() const { return line_; }
  const std::string& why() const { return why_; }

 private:
  std::string key_;
  int64_t line_;
  std::string why_;
};

// The same drive (dies, timing, spare fraction, policies, its SLC cache's share of the
// capacity) cut down to `user_gb` of user space, for runs that must be quick; blocks get
// 4x shorter so that a small drive still has enough superblocks for GC to behave as on the
// full one.
DriveConfig scale_capacity(DriveConfig config, double user_gb);

DriveConfig load_profile_file(const std::string& path);
DriveConfig parse_profile(const std::string& toml_text, const std::string& source_name);
// Finds a built-in profile by name (e.g. "consumer-256gb") or loads a path.
DriveConfig load_profile(const std::string& name_or_path);
std::vector<std::string> builtin_profile_names();
// Every key a profile may set ("nand.channels", ...), and every fault knob name.
std::vector<std::string> profile_key_names();
std::vector<std::string> fault_knob_names();

}  // namespace fisrig::drive
