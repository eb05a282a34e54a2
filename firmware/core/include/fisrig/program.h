/*
 * The compiled test program the host uploads and the rig's VM runs (portable C99).
 *
 * A program is a header followed by instructions. Every instruction starts with a 4-byte
 * head (opcode, reserved, total size in bytes, little-endian) so that a VM can refuse an
 * instruction it does not know by name instead of misreading the rest. The host's
 * compiler (host/fisrig/compile/) is the only writer; the layouts below are its contract.
 */
#ifndef FISRIG_PROGRAM_H
#define FISRIG_PROGRAM_H

#include <stdint.h>

#include "fisrig/engine_if.h"
#include "fisrig/nvme.h"

#define FISRIG_PROGRAM_MAGIC 0x50525346u /* "FSRP" */
#define FISRIG_PROGRAM_VERSION 2u

struct fisrig_program_header {
  uint32_t magic;
  uint16_t version;
  uint16_t flags;        /* zero */
  uint32_t size;         /* bytes, header included */
  uint32_t reserved;
  uint64_t drive_sectors; /* the capacity the program was compiled for (0 = not checked) */
};

enum fisrig_opcode {
  FISRIG_OP_END = 0,
  FISRIG_OP_MARK = 1,      /* struct fisrig_op_mark: label the records that follow */
  FISRIG_OP_LOOP = 2,      /* struct fisrig_op_loop: run the body count times */
  FISRIG_OP_END_LOOP = 3,  /* head only */
  FISRIG_OP_IDLE = 4,      /* struct fisrig_op_idle: nothing outstanding, then wait */
  FISRIG_OP_RAW = 5,       /* struct fisrig_op_raw: one descriptor, with an expectation */
  FISRIG_OP_WORKLOAD = 6,  /* struct fisrig_op_workload: a generator */
  FISRIG_OP_TRIM = 7,      /* struct fisrig_op_trim: DSM TRIM of an LBA range */
  FISRIG_OP_DRAIN = 8,     /* head only: wait until nothing is outstanding */
  FISRIG_OP_TRACE = 9,     /* struct fisrig_op_trace, then its entries: a trace replay */
  FISRIG_OP_VERIFY = 10,   /* struct fisrig_op_verify: read a span back, say what each sector holds */
  FISRIG_OP_POLICY = 11,   /* struct fisrig_op_policy: what the commands that follow do on an error */
  /* An NVMe engine's (engine_if.h FISRIG_PROTO_NVME): refused where the platform has none. */
  FISRIG_OP_NVME_RAW = 12,     /* struct fisrig_op_nvme_raw: one NVMe command, with an expectation */
  FISRIG_OP_NVME_WORKLOAD = 13, /* struct fisrig_op_workload over `queues` I/O queues */
  FISRIG_OP_SMART = 14,    /* struct fisrig_op_smart: read SMART attributes, a record each */
  FISRIG_OP_CAPTURE = 15   /* struct fisrig_op_capture: arm or stop the analyzer's capture */
};

struct fisrig_op_head {
  uint8_t opcode;
  uint8_t reserved;
  uint16_t size; /* bytes, head included */
};

struct fisrig_op_mark {
  struct fisrig_op_head head;
  uint32_t marker; /* the phase label the host maps to a name */
};

/*
 * A loop runs its body `count` times; with `steady_pc` set it is SNIA PTS's "until steady
 * state": after each pass it takes the IOPS of the tracked WORKLOAD (the one at program
 * offset steady_pc, inside the body: its completions over its ticks, as run_workload
 * measured them) and stops once the last `steady_window` passes hold steady: max - min
 * within steady_range_pct of their mean, and the least-squares line's excursion across
 * the window (|slope| x (window - 1)) within steady_slope_pct of it; `count` is then
 * the most passes it runs. The VM says which pass held (fisrig_vm.steady_*), and the
 * LOOP_PASS records carry every pass's figure, so the report shows the window it saw.
 */
struct fisrig_op_loop {
  struct fisrig_op_head head;
  uint32_t count;
  uint32_t steady_pc;       /* 0: a plain loop */
  uint8_t steady_window;    /* passes in the window (2..FISRIG_VM_STEADY_WINDOW_MAX) */
  uint8_t steady_range_pct;
  uint8_t steady_slope_pct;
  uint8_t reserved;
};

/* The longest idle (about 1,950 years): the VM compares ticks modulo 2^64, which holds for
   an interval under half of it. */
#define FISRIG_IDLE_TICKS_MAX 0x7fffffffffffffffull

struct fisrig_op_idle {
  struct fisrig_op_head head;
  uint32_t reserved;
  uint64_t ticks; /* at most FISRIG_IDLE_TICKS_MAX */
};

/* What a RAW descriptor must end with; a miss ends the run (FISRIG_VM_EXPECT_FAILED). */
struct fisrig_expect {
  uint8_t result;       /* enum fisrig_result, or 0xFF = any */
  uint8_t status_mask;  /* (status & mask) == value */
  uint8_t status_value;
  uint8_t error_mask;   /* (error & mask) == value */
  uint8_t error_value;
  uint8_t reserved[3];
};

struct fisrig_op_raw {
  struct fisrig_op_head head;
  struct fisrig_expect expect;
  uint32_t data_bytes;  /* data-out bytes that follow the descriptor (DSM ranges, passwords) */
  struct fisrig_cmd_desc desc;
  /* then data_bytes of data-out, padded to 4 bytes */
};

/*
 * One NVMe command (FISRIG_OP_NVME_RAW): the descriptor's head and SQE go to the engine as
 * written but for what the engine owns (engine_if.h: the command identifier, and the PRPs
 * unless the head says FISRIG_NVME_DESC_OWN_PRP); its data-out (data_bytes, at most
 * FISRIG_VM_NVME_RAW_BYTES) follows and is staged at the data window's start, where a
 * data-in command's data lands (data_source RAM, data_word 0). The expectation is on the
 * result and the CQE's status field (phase bit clear).
 */
struct fisrig_op_nvme_raw {
  struct fisrig_op_head head;
  uint8_t expect_result;   /* enum fisrig_result, or 0xFF = any */
  uint8_t reserved;
  uint16_t status_mask;    /* (status & mask) == value */
  uint16_t status_value;
  uint16_t reserved2;
  uint32_t data_bytes;
  struct fisrig_nvme_desc_head desc;
  struct fisrig_nvme_sqe sqe;
  /* then data_bytes of data-out, padded to 4 bytes */
};
#define FISRIG_VM_NVME_RAW_BYTES 4096u /* a DSM's 256 ranges */

enum fisrig_pattern { FISRIG_PATTERN_SEQUENTIAL = 0, FISRIG_PATTERN_UNIFORM = 1, FISRIG_PATTERN_ZIPF = 2 };

enum fisrig_workload_flags {
  /* Its seed mixed with the pass of each loop around it: every pass draws new LBAs, as each
     round of the SNIA PTS does (without it, each pass repeats the last one's). */
  FISRIG_WORKLOAD_SEED_PER_PASS = 1
};

/*
 * A workload generator: commands of a mix over an LBA span, kept queue_depth deep, until
 * a stop condition. Transfer sizes are drawn from up to 8 (sectors, weight) pairs.
 */
struct fisrig_op_workload {
  struct fisrig_op_head head;
  uint8_t pattern;      /* enum fisrig_pattern */
  uint8_t queue_depth;  /* 1..32 */
  uint8_t ncq;          /* 1: FPDMA QUEUED; 0: DMA EXT one at a time */
  uint8_t data_source;  /* enum fisrig_data_source for writes */
  uint8_t compress_pct;
  uint8_t read_pct;     /* percent reads ... */
  uint8_t trim_pct;     /* ... TRIMs (one range of the transfer size) ... */
  uint8_t flush_pct;    /* ... FLUSH CACHE EXT; the rest writes */
  uint8_t fua;          /* writes with FUA */
  uint8_t flags;        /* enum fisrig_workload_flags */
  uint8_t sizes;        /* transfer-size pairs used, 1..8 */
  uint8_t queues;       /* NVME_WORKLOAD: I/O queues 1..n, each kept queue_depth deep
                           (ncq, then, is 0); WORKLOAD: 0 */
  uint32_t seed;
  uint32_t zipf_theta_milli; /* zipf skew x1000 (pattern ZIPF) */
  uint64_t lba_start;
  uint64_t lba_span;    /* sectors */
  uint64_t stop_commands; /* 0 = no limit; at least one stop is set */
  uint64_t stop_bytes;
  uint64_t stop_ticks;
  uint32_t size_sectors[8];
  uint32_t size_weight[8];
};

struct fisrig_op_trim {
  struct fisrig_op_head head;
  uint8_t queued;       /* SEND FPDMA QUEUED rather than DATA SET MANAGEMENT */
  uint8_t reserved[3];
  uint64_t lba_start;
  uint64_t sectors;
};

/*
 * A trace replayed command by command at a queue depth. head.size covers this struct
 * only; the entries follow it (entries x 16 bytes), so a 37-million-command trace is one
 * instruction. A trace with entries_at set has none of its own: it replays the entries
 * of the earlier TRACE at that program offset (the JEDEC test replays one 600 MB trace
 * four ways; four copies would not fit a program's 4 GB, nor the host's memory).
 */
struct fisrig_op_trace {
  struct fisrig_op_head head;
  uint8_t queue_depth;  /* 1..32 */
  uint8_t ncq;
  uint8_t data_source;  /* for writes */
  uint8_t compress_pct;
  uint32_t entries;
  uint8_t trims;        /* enum fisrig_trace_trims: how the trace's TRIM entries are sent */
  uint8_t queues;       /* over an NVMe engine: its I/O queues, each queue_depth deep (0:
                           one), its TRIMs deallocates; ncq 1. A SATA engine's VM ignores it */
  uint8_t reserved[2];
  uint32_t entries_at;  /* 0: the entries follow; else the offset of the TRACE that has them */
};

/* What a trace does with its TRIM entries: the JEDEC test runs each trace with and without. */
enum fisrig_trace_trims {
  FISRIG_TRIMS_AS_QUEUE = 0,  /* SEND FPDMA QUEUED in an NCQ replay, DSM in a DMA one */
  FISRIG_TRIMS_DSM = 1,       /* DATA SET MANAGEMENT always (not queued: the queue drains first) */
  FISRIG_TRIMS_SKIP = 2       /* left out: the same trace "without TRIM" */
};

enum fisrig_trace_op { FISRIG_TRACE_READ = 0, FISRIG_TRACE_WRITE = 1, FISRIG_TRACE_TRIM = 2, FISRIG_TRACE_FLUSH = 3 };

struct fisrig_trace_entry {
  uint64_t lba;
  uint32_t sectors;     /* 1..65536 (ignored for FLUSH) */
  uint8_t op;           /* enum fisrig_trace_op */
  uint8_t reserved[3];
};

/*
 * A power-loss test's read-back: after the drive is back, read [lba_start, lba_start +
 * sectors) at queue depth 1, sectors_per_read at a time, into the data window, and say of
 * every sector what it holds (STAMP records: runs of sectors with one finding), so that the
 * host can tell intact, lost, shorn, misdirected and corrupted sectors apart from the data
 * alone (pattern.h's integrity stamp). With identify set, IDENTIFY DEVICE goes first and
 * an IDENTIFY record gives the capacity and a checksum of the page, so that a drive that
 * comes back as another (capacity, identity) is seen. A read that fails is one STAMP
 * record UNREADABLE for its sectors; the pass goes on.
 */
#define FISRIG_VERIFY_MAX_SECTORS 8u /* a read's data lands in the data window at offset 0 */

struct fisrig_op_verify {
  struct fisrig_op_head head;
  uint8_t identify;         /* 1: IDENTIFY DEVICE first */
  uint8_t sectors_per_read; /* 1..FISRIG_VERIFY_MAX_SECTORS */
  uint8_t reserved[2];
  uint64_t lba_start;
  uint64_t sectors;
  uint32_t timeout_ticks;   /* each read's (0 = the engine's default) */
  uint32_t reserved2;
};

/*
 * A reading of the drive's SMART attributes (SATA): once nothing is outstanding, SMART READ
 * DATA into the data window, and a SMART record for each of the `count` attribute ids asked,
 * with the raw value the drive's table gives it. A phase's write amplification is the growth
 * of attribute 249 (NAND writes) over 241's (host writes) between two readings around it,
 * as reviewers read it from a real drive (host/fisrig/analysis/smart.py).
 */
#define FISRIG_SMART_MAX_IDS 8u

/*
 * The analyzer's capture (capture.h): the VM sends the engine a CAPTURE descriptor (engine_if.h
 * FISRIG_PROTO_CAPTURE) with nothing in flight, and its record (FISRIG_RECORD_CAPTURE); an
 * engine that refuses it ends the run (FISRIG_VM_EXPECT_FAILED).
 */
struct fisrig_op_capture {
  struct fisrig_op_head head;
  uint8_t command;        /* enum fisrig_capture_op */
  uint8_t trigger;        /* enum fisrig_capture_trigger */
  uint8_t value;          /* the trigger's value (a FIS type, an opcode, a tag, a result) */
  uint8_t reserved;
  uint16_t windows;       /* ARM: how many windows, at least 1 */
  uint16_t payload_dwords; /* ARM: each FIS's dwords kept past its first 7 (capture.h), at most
                              FISRIG_CAPTURE_MAX_PAYLOAD_DWORDS */
  uint32_t before_ticks;  /* the pre-trigger depth */
  uint32_t after_ticks;   /* the post-trigger depth */
};

struct fisrig_op_smart {
  struct fisrig_op_head head;
  uint8_t count;                      /* 1..FISRIG_SMART_MAX_IDS */
  uint8_t reserved[3];
  uint8_t ids[FISRIG_SMART_MAX_IDS];  /* the attribute ids, each 1..255 */
  uint32_t timeout_ticks;             /* SMART READ DATA's (0 = the engine's default) */
  uint32_t reserved2;
};

/*
 * What a workload's or a trace's commands do when one does not end OK, and how long each
 * may take, from this instruction on (the VM starts with FAIL, no retries and the engine's
 * default timeout). Every attempt has its record,
 * whatever the policy: a command sent again is a new record whose detail carries its
 * attempt (FISRIG_DETAIL_ATTEMPT). Commands a plan's own power cut ended are never sent
 * again (the verify pass after it is the point). Whatever the policy, a link lost without
 * the plan cutting the power (a drive that dropped it, or the engine's COMRESET after a
 * timeout) is recovered before the instruction goes on: the VM lets what is outstanding
 * end, waits for the link (LINK WAIT_UP, link_timeout_ticks), sends a COMRESET if it
 * did not come back, and goes on (each a LINK record); a link not had back ends the
 * instruction, and the plan goes on with the next.
 */
enum fisrig_on_error {
  FISRIG_ON_ERROR_FAIL = 0,    /* a command that did not end OK stays failed */
  FISRIG_ON_ERROR_REQUEUE = 1, /* commands ended for another's sake go again: NCQ_ABORTED (an
                                  NCQ error of another tag), LINK_LOST (a link lost, or the
                                  engine's COMRESET after another's timeout); as libata's
                                  EH, without spending a retry (at most 15 sends more) */
  FISRIG_ON_ERROR_RETRY = 2    /* those, and the failing command itself, `retries` times:
                                  ATA_ERROR, TIMEOUT, DATA_CRC, LENGTH, CHECK_FAILED
                                  (REFUSED never: the rig refused it, it would again) */
};

/* The most a command is sent again, for any reason: its attempt fits the record's detail
   bits 7:4. */
#define FISRIG_POLICY_MAX_RETRIES 15u

struct fisrig_op_policy {
  struct fisrig_op_head head;
  uint8_t on_error;   /* enum fisrig_on_error */
  uint8_t retries;    /* RETRY: times a command's own failure goes again (0..15) */
  uint8_t reserved[2];
  uint32_t timeout_ticks; /* each generated command's (descriptor timeout_ticks; 0: the engine's) */
  uint32_t link_timeout_ticks; /* a lost link's wait and COMRESET, each (0: the engine's) */
};

/* What a verify pass found in a run of sectors (the STAMP record's finding). */
enum fisrig_finding {
  FISRIG_FOUND_NONE = 0,       /* not a STAMP record */
  FISRIG_FOUND_STAMP = 1,      /* this LBA's whole stamp (CRC good): seq is its write sequence */
  FISRIG_FOUND_ZEROS = 2,      /* all zeros: never written, trimmed or unmapped */
  FISRIG_FOUND_OTHER_LBA = 3,  /* another LBA's whole stamp: cpl.lba is the LBA it names */
  FISRIG_FOUND_DAMAGED = 4,    /* this LBA's stamp header with a failed CRC: seq as it reads,
                                  cpl.check_errors the bits that differ from that stamp
                                  (65535 at most) */
  FISRIG_FOUND_FOREIGN = 5,    /* neither zeros nor a stamp */
  FISRIG_FOUND_UNREADABLE = 6  /* the read failed: cpl has its result, status and error */
};

/*
 * One record per completed descriptor, in the record ring the host drains: the engine's
 * completion record plus what the command was and which phase it belonged to.
 */
struct fisrig_run_record {
  struct fisrig_cpl_record cpl;
  uint32_t marker;
  uint8_t command;
  uint8_t protocol;
  uint8_t kind;         /* enum fisrig_record_kind */
  uint8_t detail;       /* STAMP records: enum fisrig_finding; commands: their attempt
                           (FISRIG_DETAIL_ATTEMPT_*) and, writes, FISRIG_DETAIL_FUA if FUA */
  uint64_t lba;         /* the command's LBA */
  uint32_t lbas;        /* LBAs the command covers: its sector count, or the total of a DSM
                           TRIM's ranges (cpl.sectors counts the range list's blocks moved) */
  uint32_t seq;         /* writes of the integrity stamp: their write sequence (data_word);
                           STAMP records: the sequence the stamps read back carry (pattern.h's
                           dword 2); IDENTIFY records: the page's CRC; 0 otherwise */
};

#define FISRIG_DETAIL_FUA 1u /* a write command's detail: it was FUA (durable when acknowledged) */
/* A workload's or trace's command record: detail bits 7:4 are its attempt, 0 for the first
   send, n for the nth time the error policy sent it again (struct fisrig_op_policy), and
   FISRIG_DETAIL_SENT_AGAIN says this attempt failed and the command goes again (a record
   without it that did not end OK is the command's last word). */
#define FISRIG_DETAIL_SENT_AGAIN 2u
#define FISRIG_DETAIL_ATTEMPT_SHIFT 4u
#define FISRIG_DETAIL_ATTEMPT_MASK 0xF0u

enum fisrig_record_kind {
  FISRIG_RECORD_COMMAND = 0,
  FISRIG_RECORD_POWER = 1,    /* a POWER descriptor's, or the engine's event record (cpl.user_tag
                                 FISRIG_USER_TAG_EVENT, cpl.slot its FISRIG_EVENT_REC_*); a power
                                 cut's carries the slots at the cut (struct fisrig_cut_record):
                                 lba = slots_issued | slots_queued << 32, lbas = slots_data,
                                 seq = slots_done, and its cpl's sectors and data_dwords are 0 */
  FISRIG_RECORD_LINK = 2,
  FISRIG_RECORD_END = 3,  /* the last record of a run: cpl.result holds the enum fisrig_vm_status,
                             lba the offset of the instruction that failed */
  FISRIG_RECORD_LOOP_PASS = 4, /* an until-steady loop's pass (struct fisrig_op_loop): lbas its
                                 number (from 1), lba the tracked workload's commands, cpl.ts_submit
                                 and ts_status its first and last ticks (0 when it did not run),
                                 cpl.status 1 when the window this pass closes held steady (a
                                 pass has no ATA status), cpl.result ok */
  FISRIG_RECORD_STAMP = 5,    /* a verify pass's finding (struct fisrig_op_verify) for lbas
                                 sectors from lba; cpl has the read's stamps */
  FISRIG_RECORD_IDENTIFY = 6, /* a verify pass's IDENTIFY: lba the capacity (words 100-103), seq
                                 the CRC (pattern.h's) of its 512 bytes; cpl is its completion */
  FISRIG_RECORD_CURRENT = 7,  /* the current sampler's (FISRIG_POWER_SAMPLE): cpl is a struct
                                 fisrig_current_record, of which this record gives the samples
                                 lbas from index lba, those taken in the phase `marker` (the VM
                                 says one sampler record in as many as the phases its samples
                                 fell in, by the ticks of the MARKs it ran); the other fields 0 */
  FISRIG_RECORD_SMART = 8,    /* a SMART reading's attribute (struct fisrig_op_smart): lbas its
                                 id, lba its raw value (48 bits), detail 1 when the drive's
                                 table has no such attribute (or SMART READ DATA failed: cpl is
                                 its completion) */
  FISRIG_RECORD_CAPTURE = 9   /* a CAPTURE instruction's (struct fisrig_op_capture): its
                                 descriptor's record; the capture's entries go to their own
                                 stream, not this ring */
};

/*
 * records.bin, the raw record stream a target writes as it goes (the model target's runner
 * and the host for the rtl target): this header, then struct fisrig_run_record after
 * struct fisrig_run_record; a killed run leaves at most a torn last record.
 */
#define FISRIG_RECORDS_FILE_MAGIC 0x52525346u /* "FSRR" */
#define FISRIG_RECORDS_FILE_VERSION 2u /* 2: the record's lbas */

struct fisrig_records_file_header {
  uint32_t magic;         /* FISRIG_RECORDS_FILE_MAGIC */
  uint32_t version;       /* FISRIG_RECORDS_FILE_VERSION */
  uint32_t record_bytes;  /* sizeof(struct fisrig_run_record) */
  uint32_t reserved;      /* zero */
};

typedef char fisrig_nvme_raw_is_112_bytes[sizeof(struct fisrig_op_nvme_raw) == 112 ? 1 : -1];
typedef char fisrig_record_is_104_bytes[sizeof(struct fisrig_run_record) == 104 ? 1 : -1];
typedef char fisrig_trace_entry_is_16_bytes[sizeof(struct fisrig_trace_entry) == 16 ? 1 : -1];

#endif /* FISRIG_PROGRAM_H */
