/*
 * The raw command engine's interface: the one definition that the gateware (hw/), the
 * firmware (firmware/core) and the model target's engine (sim/model) all implement or use.
 *
 * Like an NVMe queue pair: the CPU writes 32-byte command descriptors into a submission
 * ring in RAM and writes the new tail to the doorbell; the engine fetches them into its
 * 32 slots, runs the FIS sequence each protocol needs, and writes one completion record
 * per descriptor into the completion ring, with the time of every phase on the engine's
 * free-running counter. The CPU never sits in the per-FIS path.
 *
 * Every multi-byte field is little-endian. Times are ticks of the SATA clock domain's
 * 64-bit counter: FISRIG_TICK_HZ (150 MHz, the Gen3 dword clock), whatever the negotiated speed.
 */
#ifndef FISRIG_ENGINE_IF_H
#define FISRIG_ENGINE_IF_H

#include <stddef.h>
#include <stdint.h>

#define FISRIG_ENGINE_IF_VERSION 1u
#define FISRIG_ENGINE_SLOTS 32u
#define FISRIG_TICK_HZ 150000000ull /* timestamp counter rate */
/* One tick in ns as an exact fraction, 1e9 / FISRIG_TICK_HZ = 20/3: 64-bit tick counts
   convert in integers (a double would lose ns past 2^53) without overflowing. */
#define FISRIG_TICK_NS_NUM 20ull
#define FISRIG_TICK_NS_DEN 3ull
/* A slot's timeout when its descriptor says 0: the 30 s a Linux host gives a command by
   default (the SCSI disk timeout libata's disks run under, /sys/block/sdX/device/timeout),
   so a drive that is slow but within what a host tolerates is not cut short by the rig.
   It is over the 28.6 s a descriptor's 32-bit timeout_ticks can say. */
#define FISRIG_DEFAULT_TIMEOUT_TICKS (30ull * FISRIG_TICK_HZ)

/* How the engine sequences a descriptor's FISes (descriptor.protocol). */
enum fisrig_protocol {
  FISRIG_PROTO_NON_DATA = 0,  /* H2D, then D2H (FLUSH, SET FEATURES, SECURITY ...) */
  FISRIG_PROTO_PIO_IN = 1,    /* H2D, PIO Setup + Data per DRQ block (IDENTIFY, READ LOG EXT) */
  FISRIG_PROTO_PIO_OUT = 2,   /* H2D, PIO Setup, Data, ... D2H */
  FISRIG_PROTO_DMA_IN = 3,    /* H2D, Data FISes, D2H (READ DMA EXT, READ LOG DMA EXT) */
  FISRIG_PROTO_DMA_OUT = 4,   /* H2D, DMA Activate + Data per FIS, D2H (WRITE DMA EXT, DSM) */
  FISRIG_PROTO_FPDMA_IN = 5,  /* NCQ: H2D, D2H, DMA Setup, Data..., SDB (READ FPDMA QUEUED) */
  FISRIG_PROTO_FPDMA_OUT = 6, /* NCQ: H2D, D2H, DMA Setup, Data..., SDB (WRITE / SEND FPDMA) */
  FISRIG_PROTO_POWER = 7,     /* not a command: a power-controller operation, see below */
  FISRIG_PROTO_LINK = 8,      /* not a command: COMRESET / wait for link up */
  FISRIG_PROTO_NVME = 9,      /* an NVMe engine's command: struct fisrig_nvme_desc (three entries) */
  FISRIG_PROTO_CAPTURE = 10   /* not a command: the analyzer's capture (capture.h's enum
                                 fisrig_capture_op); its record ends OK at once, REFUSED by an
                                 engine without a capture */
};

/* Where write data comes from and what read data is checked against (data_source). */
enum fisrig_data_source {
  FISRIG_DATA_NONE = 0,     /* no data phase, or read data discarded */
  FISRIG_DATA_RAM = 1,      /* DMA to/from main RAM at data_word (byte offset in the data window) */
  FISRIG_DATA_ZEROS = 2,    /* all-zero sectors */
  FISRIG_DATA_STAMP = 3,    /* integrity stamp: LBA + write sequence (data_word) + CRC; compress_pct
                               sets how much of each sector is incompressible LFSR, the rest zeros */
  FISRIG_DATA_LFSR = 4      /* incompressible LFSR seeded by data_word and the LBA */
};

/* descriptor.flags */
#define FISRIG_DESC_CHECK 0x01u   /* read data is checked against data_source/data_word */
#define FISRIG_DESC_NO_CPL 0x02u  /* reserved: every descriptor currently completes */

/* POWER descriptors: command selects the operation; the rest as listed. */
enum fisrig_power_op {
  FISRIG_POWER_OFF = 1,          /* rails off now */
  FISRIG_POWER_ON = 2,           /* rails on now (the link comes up by itself) */
  FISRIG_POWER_OFF_AT_EVENT = 3, /* rails off timeout_ticks after the count-th FIS of kind
                                    features (enum fisrig_fis_event), counted from now; with
                                    FISRIG_EVENT_TIME, timeout_ticks after the arming itself
                                    (its record's ts_submit) */
  FISRIG_POWER_STAGE = 4,        /* how pin `features` (enum fisrig_power_pin) takes the power
                                    edges from now on: count 1, it switches (0: it stays as
                                    the rig starts it: a rail on, P3 not asserted);
                                    timeout_ticks after an off edge (POWER_OFF, a cut) a rail
                                    goes off and P3 is asserted, data_word ticks after an on
                                    edge (POWER_ON) a rail comes on and P3 is released. An
                                    edge drops what the one before still had to do. Until
                                    staged, the three rails switch at the edge, P3 never. */
  FISRIG_POWER_SAMPLE = 5        /* the drive's supply current, as a power module samples it:
                                    count 1 starts (again), one sample every timeout_ticks
                                    (0: FISRIG_CURRENT_PERIOD_TICKS) from this descriptor's
                                    tick on, FISRIG_CURRENT_SAMPLES to an event record
                                    (struct fisrig_current_record); count 0 stops, and the
                                    samples taken since the last record go out in one */
};
/* A power module's sample period: Quarch's power analysis modules sample at 250 kS/s. */
#define FISRIG_CURRENT_PERIOD_TICKS 600u /* 4 us */
#define FISRIG_CURRENT_SAMPLES 30u       /* to a record: one every 120 us at 4 us */
/* The rig's power pins: the drive's three rails and SATA 3.3's P3 Power Disable pin (a
   drive held disabled while it is asserted). A pin mask has bit 1 << pin; the simulated
   drive's pins (sim/device pins.h, FISRIG_PINS_*) are the same bits. */
enum fisrig_power_pin {
  FISRIG_PIN_3V3 = 0,
  FISRIG_PIN_5V = 1,
  FISRIG_PIN_12V = 2,
  FISRIG_PIN_P3 = 3
};
enum fisrig_fis_event {
  FISRIG_EVENT_H2D = 1,
  FISRIG_EVENT_D2H = 2,
  FISRIG_EVENT_SDB = 3,
  FISRIG_EVENT_DATA = 4,
  FISRIG_EVENT_DMA_SETUP = 5,
  FISRIG_EVENT_TIME = 6        /* no FIS: a cut at a time, timeout_ticks after the arming */
};
/* An NVMe engine's POWER_OFF_AT_EVENT kinds (features): the count-th TLP of the kind whose
   end crossed the rig's PCIe link after the arming, its end the tick the delay counts from
   (FISRIG_EVENT_TIME as above). Only TLPs of commands sent after the arming count: the VM
   arms a cut with no command in flight. */
enum fisrig_tlp_event {
  FISRIG_EVENT_DOORBELL = 7,   /* an SQ tail doorbell's write, at the controller */
  FISRIG_EVENT_SQE = 8,        /* an SQE's completion (the controller's fetch), at the controller */
  FISRIG_EVENT_DATA_TLP = 9,   /* a data TLP either way (a replayed one once) */
  FISRIG_EVENT_CQE = 10        /* a CQE's write, at the rig */
};
/* LINK descriptors */
enum fisrig_link_op {
  FISRIG_LINK_COMRESET = 1,     /* COMRESET, OOB, wait for the signature D2H */
  FISRIG_LINK_WAIT_UP = 2       /* wait until the link is up (timeout_ticks, 0 = default) */
};

/*
 * Command descriptor: 32 bytes in the submission ring. Every Register H2D field is here
 * and goes to the drive as written: the engine interprets only protocol and, for NCQ,
 * fills in its own tag (COUNT bits 7:3) from the slot it picks.
 */
struct fisrig_cmd_desc {
  uint8_t protocol;     /* enum fisrig_protocol */
  uint8_t command;      /* COMMAND */
  uint16_t features;    /* FEATURES 15:0 */
  uint16_t count;       /* COUNT 15:0 */
  uint8_t device;       /* DEVICE */
  uint8_t icc;          /* ICC */
  uint8_t lba[6];       /* LBA 47:0 */
  uint16_t aux;         /* AUXILIARY 15:0 */
  uint8_t control;      /* CONTROL */
  uint8_t data_source;  /* enum fisrig_data_source */
  uint8_t compress_pct; /* FISRIG_DATA_STAMP: percent of each sector that is incompressible */
  uint8_t flags;        /* FISRIG_DESC_* */
  uint32_t data_word;   /* stamp write sequence, LFSR seed, or RAM offset */
  uint32_t user_tag;    /* returned untouched in the completion record */
  uint32_t timeout_ticks; /* 0 = the engine's default; a slot past it completes as TIMEOUT */
};

/* What became of a descriptor (completion.result). */
enum fisrig_result {
  FISRIG_RESULT_OK = 0,
  FISRIG_RESULT_ATA_ERROR = 1,     /* the device reported ERR: see status and error */
  FISRIG_RESULT_NCQ_ABORTED = 2,   /* aborted by another command's NCQ error */
  FISRIG_RESULT_TIMEOUT = 3,       /* no answer within timeout_ticks */
  FISRIG_RESULT_LINK_LOST = 4,     /* COMRESET, link down or power cut before it ended */
  FISRIG_RESULT_CHECK_FAILED = 5,  /* read data did not match (check_errors sectors) */
  FISRIG_RESULT_REFUSED = 6,       /* the engine refused it: a protocol or LINK/POWER operation it
                                      does not know, or data in RAM past the data window the
                                      CPU gave it (rings data_bytes); nothing went on the wire */
  /* The device's status said success, but the transfer did not: an exerciser reports what
     moved, whatever the drive claims. (An ERR status stays ATA_ERROR.) */
  FISRIG_RESULT_DATA_CRC = 7,      /* a Data FIS of the command failed its CRC: the host
                                      answered the device's R_ERR, or the device ours */
  FISRIG_RESULT_LENGTH = 8         /* a DMA or FPDMA command moved other than the sectors it
                                      asked for (data_dwords says what moved) */
};

/*
 * Completion record: 80 bytes in the completion ring, one per descriptor, in completion
 * order. A phase the command did not have is 0.
 *
 * Every stamp but ts_submit is a tick at which a dword crossed the rig's transceiver pins
 * (the host's side of the wire), in either direction: "the FIS" is its first dword (its
 * FIS type, the one after SOF); "a data dword" is one of a Data FIS's payload dwords (not
 * its type dword, not its CRC). Primitives (ALIGN, HOLD, CONT and its filler) are not
 * dwords of a FIS. At Gen2 and Gen1 a dword takes 2 and 4 ticks: the stamp is the tick it
 * began. The gateware takes them at a tap beside the link layer and takes away the
 * transceiver's fixed pipeline (hw/fisrig_hw/engine/wire_tap.py); the model target computes them
 * from its FIS-by-FIS costs (docs/model-target.md); tests/rtl/test_wire_stamps.py holds the
 * gateware to these definitions with a monitor on the pins, under back-pressure too.
 *
 *   ts_submit      the engine took the descriptor from the submission ring
 *   ts_h2d         the Register H2D, in the transmission the device accepted (R_OK)
 *   ts_accept      NCQ: the D2H that released the command
 *   ts_setup       the command's first DMA Setup, DMA Activate or PIO Setup
 *   ts_data_first  the first data dword of the command's first Data FIS, either way
 *   ts_data_last   the last data dword of its last Data FIS
 *   ts_status      the D2H or Set Device Bits that completed it; PIO in: its last data dword
 *                  (the PIO Setup before that Data FIS carried the ending status)
 *
 * Stamps come from whole frames (SOF to EOF): a Data FIS cut short by a power cut or a link
 * loss leaves its command without data stamps; the cut's own record and the power
 * controller's trigger tick say where the wire was.
 */
struct fisrig_cpl_record {
  uint32_t user_tag;
  uint8_t slot;         /* engine slot; for NCQ commands also the tag */
  uint8_t result;       /* enum fisrig_result */
  uint8_t status;       /* ATA STATUS of the D2H or SDB */
  uint8_t error;        /* ATA ERROR */
  uint8_t lba[6];       /* LBA of the D2H (the first failing sector on an error) */
  uint16_t check_errors;/* sectors that failed the data check */
  uint32_t sectors;     /* whole sectors moved (data_dwords / 128) */
  uint32_t data_dwords; /* data dwords moved in this command's Data FISes, either way */
  uint64_t ts_submit;   /* each as defined above */
  uint64_t ts_h2d;
  uint64_t ts_accept;
  uint64_t ts_setup;
  uint64_t ts_data_first;
  uint64_t ts_data_last;
  uint64_t ts_status;
};

/*
 * A record the engine writes on its own (a power edge, a link going down or up) carries
 * this user_tag; its ts_status is when it happened, result LINK_LOST for a cut.
 */
#define FISRIG_USER_TAG_EVENT 0xFFFFFFFFu
/* An event record says what happened in its slot field (the model target writes power
 * cuts only: it has no link to fall). */
#define FISRIG_EVENT_REC_POWER_CUT 0xF0u
#define FISRIG_EVENT_REC_LINK_DOWN 0xF1u
#define FISRIG_EVENT_REC_LINK_UP 0xF2u /* the signature D2H after power-on or COMRESET */
#define FISRIG_EVENT_REC_CURRENT 0xF3u /* the drive's current (struct fisrig_current_record) */

/*
 * A power cut's record (slot FISRIG_EVENT_REC_POWER_CUT) is a completion record whose
 * LBA, check_errors, sectors and data_dwords bytes hold the state of the 32 slots at the
 * cut's tick, on the counter that timed the cut: four masks, bit n for slot n. Each says
 * what the rig had seen of the command in the slot by then, from whole frames as the
 * stamps are:
 *   slots_issued  the device had accepted its Register H2D (R_OK)
 *   slots_queued  NCQ: the D2H that released it had come (the device held the command)
 *   slots_data    a whole Data FIS of it had crossed the wire, either way
 *   slots_done    its status had come and its record had not yet gone out (it follows
 *                 the cut's record, with the result the status gave)
 * A command whose record went out before the cut's is not in them; every one issued and
 * not done ends in a LINK_LOST record after it, with the stamps and the data dwords it had
 * by the cut: a frame counts once the device answered it (R_OK or R_ERR), so what the rig
 * sent into a drive whose power had gone does not.
 */
struct fisrig_cut_record {
  uint32_t user_tag;     /* FISRIG_USER_TAG_EVENT */
  uint8_t slot;          /* FISRIG_EVENT_REC_POWER_CUT */
  uint8_t result;        /* FISRIG_RESULT_LINK_LOST */
  uint8_t status;
  uint8_t error;
  uint32_t slots_issued; /* where a completion record has lba[0..3] */
  uint32_t slots_queued; /* lba[4..5], check_errors */
  uint32_t slots_data;   /* sectors */
  uint32_t slots_done;   /* data_dwords */
  uint64_t ts_submit;    /* the cut's tick */
  uint64_t ts_trigger;   /* where ts_h2d is: the tick the cut counted its delay from (the
                            count-th FIS's first dword, a Data FIS's first payload dword;
                            for FISRIG_EVENT_TIME the arming) */
  uint64_t ts_unused[4]; /* 0 */
  uint64_t ts_status;    /* the cut's tick */
};

/*
 * An NVMe engine's cut record: the same as struct fisrig_cut_record but that its engine has
 * 256 slots, so its four words count commands where SATA's are masks: sent (their doorbell
 * rung), fetched (their SQE in the controller), with data (their first data TLP begun), and
 * done (their CQE written, their record not yet out); each ends in a LINK_LOST record after
 * it, with the stamps it had by the cut, as SATA's.
 */
struct fisrig_nvme_cut_record {
  uint32_t user_tag;     /* FISRIG_USER_TAG_EVENT */
  uint8_t slot;          /* FISRIG_EVENT_REC_POWER_CUT */
  uint8_t result;        /* FISRIG_RESULT_LINK_LOST */
  uint8_t status;
  uint8_t error;
  uint32_t cmds_sent;
  uint32_t cmds_fetched;
  uint32_t cmds_data;
  uint32_t cmds_done;
  uint64_t ts_submit;    /* the cut's tick */
  uint64_t ts_trigger;   /* the count-th TLP's end (enum fisrig_tlp_event); for
                            FISRIG_EVENT_TIME the arming */
  uint64_t ts_unused[4]; /* 0 */
  uint64_t ts_status;    /* the cut's tick */
};

/*
 * The current sampler's record (slot FISRIG_EVENT_REC_CURRENT, FISRIG_POWER_SAMPLE): the
 * drive's supply current in mA at ts_first and every period after it, as the rig's current
 * sense reads it (on a board a shunt and ADC on the drive's rails; in simulation the drive's
 * own figure, Drive::current_ma, on the device's current pins, sim/device pins.h). A record
 * holds `samples` of them, FISRIG_CURRENT_SAMPLES but for the last before a stop. Records
 * follow each other without a gap while the sampler runs; when the completion ring stays
 * full while the sampler has two records waiting, it drops the newer and says so in the
 * next one's `dropped`: samples are lost, never made up.
 */
struct fisrig_current_record {
  uint32_t user_tag;     /* FISRIG_USER_TAG_EVENT */
  uint8_t slot;          /* FISRIG_EVENT_REC_CURRENT */
  uint8_t result;        /* FISRIG_RESULT_OK */
  uint8_t samples;       /* how many of ma[] hold samples (where status is) */
  uint8_t dropped;       /* records the sampler dropped since it sent the last one (at most
                            255): the gap before ts_first is lost samples, not a stop */
  uint16_t ma[FISRIG_CURRENT_SAMPLES]; /* where lba .. ts_data_first are */
  uint32_t period_ticks; /* between two samples */
  uint64_t ts_first;     /* where ts_status is: the tick of ma[0] */
};

/* The rings' sizes are powers of two; indexes run free and wrap by masking. */
struct fisrig_ring_regs {
  uint32_t sq_base, sq_entries; /* submission ring in RAM */
  uint32_t cq_base, cq_entries; /* completion ring in RAM */
  uint32_t sq_tail;             /* doorbell: written by the CPU */
  uint32_t sq_head;             /* read-only: descriptors fetched */
  uint32_t cq_tail;             /* read-only: records written */
  uint32_t cq_head;             /* written by the CPU: records consumed */
};

/*
 * An NVMe engine's command descriptor (FISRIG_PROTO_NVME): three consecutive entries of the
 * submission ring, 96 bytes, the first a head laid out as a struct fisrig_cmd_desc is where
 * their fields are the same (protocol, data_source, compress_pct, flags, data_word,
 * user_tag, timeout_ticks), the other two the 64-byte SQE (fisrig/nvme.h's struct
 * fisrig_nvme_sqe) as the plan built it. The engine owns the NVMe queues, in the rig's
 * memory: it puts the SQE on queue `qid` (0 the admin queue) with its own command
 * identifier (the slot it picks) and, but for FISRIG_NVME_DESC_OWN_PRP, PRP1 and PRP2 (and
 * a PRP list) describing its data buffer of data_bytes there, rings the doorbell, and
 * takes the CQE and the MSI-X message. The opcode's bits 1:0 say the data's direction, as
 * NVMe's standard opcodes do (01b to the controller, 10b from it).
 *
 * The data buffer, by data_source: a write's is the generated pattern (ZEROS, STAMP, LFSR,
 * as for SATA, one 512-byte block to a sector) or data_bytes from the data window at
 * data_word (RAM: a DSM's ranges, a raw command's payload); a read's goes to the data
 * window at data_word (RAM), is checked against the pattern (FISRIG_DESC_CHECK), or is
 * dropped (NONE).
 */
#define FISRIG_NVME_DESC_ENTRIES 3u
#define FISRIG_NVME_DESC_OWN_PRP 0x01u /* nvme_flags: PRP1/PRP2 as the SQE has them (raw) */
struct fisrig_nvme_desc_head {
  uint8_t protocol;      /* FISRIG_PROTO_NVME */
  uint8_t nvme_flags;    /* FISRIG_NVME_DESC_* */
  uint16_t qid;          /* the queue: 0 admin, 1.. the engine's I/O queue pairs */
  uint32_t data_bytes;   /* the data buffer's size: 0 none; at most FISRIG_NVME_DATA_MAX */
  uint8_t reserved[9];
  uint8_t data_source;   /* enum fisrig_data_source */
  uint8_t compress_pct;
  uint8_t flags;         /* FISRIG_DESC_* */
  uint32_t data_word;
  uint32_t user_tag;
  uint32_t timeout_ticks;
};
/* A command's data buffer at most: the 2 MiB an MDTS of 9 allows (512 4 KiB pages). */
#define FISRIG_NVME_DATA_MAX (2u << 20)
/* The I/O queue pairs an NVMe engine makes at most (the controller's Number of Queues may
   grant fewer), and the entries of each (fewer where CAP.MQES says so). */
#define FISRIG_NVME_ENGINE_QUEUES 16u
#define FISRIG_NVME_ENGINE_QUEUE_ENTRIES 256u
/* The NVMe engine's map of the rig's memory as the controller addresses it (bus addresses,
   all below 4 GB, where a device uses 32-bit TLPs): the admin queues, I/O queue pair q's CQ at
   IO_QUEUES + q MiB and its SQ 512 KiB after, every MSI-X message at MSIX (its data the
   vector: the firmware's enumeration writes the table so, fisrig/pcie_enum.h), slot s's PRP
   list at LISTS + 4 KiB * s and its data buffer at DATA + FISRIG_NVME_DATA_MAX * s. The model
   target's engine lays its memory out the same (sim/model/nvme_rig_memory.h). */
#define FISRIG_NVME_RIG_ASQ 0x00010000u
#define FISRIG_NVME_RIG_ACQ 0x00020000u
#define FISRIG_NVME_RIG_MSIX 0x00030000u
#define FISRIG_NVME_RIG_IO_QUEUES 0x00100000u
#define FISRIG_NVME_RIG_LISTS 0x08000000u
#define FISRIG_NVME_RIG_DATA 0x10000000u
#define FISRIG_NVME_RIG_ADMIN_ENTRIES 32u

/*
 * An NVMe engine's completion record: 80 bytes, as a struct fisrig_cpl_record where the
 * fields are the same (user_tag, slot, result, check_errors, data_dwords, ts_submit,
 * ts_data_first, ts_data_last), in completion order.
 *
 * Every stamp but ts_submit is a tick at which a TLP crossed the rig's PCIe link (its
 * pins, the rig being the root complex), either way: the stamp of a TLP the rig sends is
 * the tick its last symbol left (the controller has it whole then), of one it receives the
 * tick its last symbol came, but ts_data_first: the first symbol of the first data TLP.
 * A data TLP is a memory write from the controller (a read's data) or a completion with
 * data from the rig (a write's); sim/nvme's pcie_link.h costs each with its framing, and
 * the model target's engine stamps them where that puts them.
 *
 *   ts_submit      the engine took the descriptor from the submission ring
 *   ts_doorbell    the SQ tail doorbell's memory write that made its SQE visible
 *   ts_sqe         the completion that took its SQE to the controller
 *   ts_irq         the MSI-X message after its CQE (0: none came, the vector masked)
 *   ts_data_first  the first symbol of its first data TLP, either way
 *   ts_data_last   the last symbol of its last data TLP
 *   ts_cqe         its CQE's memory write (where ts_status is: the command's end)
 */
struct fisrig_nvme_cpl_record {
  uint32_t user_tag;
  uint8_t slot;          /* engine slot: the command identifier it gave the SQE */
  uint8_t result;        /* enum fisrig_result; ATA_ERROR: the CQE's status is not Successful */
  uint16_t status;       /* the CQE's status field, phase bit clear: SC << 1, SCT << 9, DNR */
  uint32_t dw0;          /* the CQE's dword 0 (command specific) */
  uint16_t qid;          /* the queue it went on */
  uint16_t check_errors; /* blocks that failed the data check */
  uint32_t blocks;       /* whole 512-byte blocks of data moved (data_dwords / 128) */
  uint32_t data_dwords;  /* data dwords moved in its data TLPs, either way */
  uint64_t ts_submit;
  uint64_t ts_doorbell;
  uint64_t ts_sqe;
  uint64_t ts_irq;
  uint64_t ts_data_first;
  uint64_t ts_data_last;
  uint64_t ts_cqe;
};

/* Ticks to ns, rounded to the nearest ns (reports, run outcomes). */
static inline uint64_t fisrig_ticks_to_ns(uint64_t ticks) {
  return (ticks * FISRIG_TICK_NS_NUM + FISRIG_TICK_NS_DEN / 2) / FISRIG_TICK_NS_DEN;
}

/* Sectors a DMA or FPDMA descriptor moves (a count of 0 is 65536); 0 for other protocols. */
static inline uint32_t fisrig_desc_dma_sectors(const struct fisrig_cmd_desc *d) {
  uint32_t n;
  switch (d->protocol) {
    case FISRIG_PROTO_DMA_IN: case FISRIG_PROTO_DMA_OUT: n = d->count; break;
    case FISRIG_PROTO_FPDMA_IN: case FISRIG_PROTO_FPDMA_OUT: n = d->features; break;
    default: return 0;
  }
  return n ? n : 65536u;
}

/* Bytes a descriptor's data takes in RAM (data_source FISRIG_DATA_RAM, from data_word): its
   DMA sectors, or for PIO its COUNT of DRQ blocks (at least the one IDENTIFY moves). The VM
   keeps a program's data inside its window by it, and the engine refuses a descriptor past
   the window by it (engine/descriptor_checks.py counts the same in gateware). */
static inline uint64_t fisrig_desc_ram_bytes(const struct fisrig_cmd_desc *d) {
  if (d->protocol == FISRIG_PROTO_PIO_IN || d->protocol == FISRIG_PROTO_PIO_OUT)
    return 512u * (uint64_t)(d->count ? d->count : 1u);
  return 512u * (uint64_t)fisrig_desc_dma_sectors(d);
}

/* Layout checks that hold in C99 and C++ alike: a negative array size fails to build. */
typedef char fisrig_desc_is_32_bytes[sizeof(struct fisrig_cmd_desc) == 32 ? 1 : -1];
typedef char fisrig_cpl_is_80_bytes[sizeof(struct fisrig_cpl_record) == 80 ? 1 : -1];
typedef char fisrig_cut_is_a_cpl[sizeof(struct fisrig_cut_record) == sizeof(struct fisrig_cpl_record) ? 1 : -1];
typedef char fisrig_cut_masks_where_cpl_says[offsetof(struct fisrig_cut_record, slots_issued) == offsetof(struct fisrig_cpl_record, lba) &&
                                             offsetof(struct fisrig_cut_record, slots_data) == offsetof(struct fisrig_cpl_record, sectors) &&
                                             offsetof(struct fisrig_cut_record, slots_done) == offsetof(struct fisrig_cpl_record, data_dwords) &&
                                             offsetof(struct fisrig_cut_record, ts_trigger) == offsetof(struct fisrig_cpl_record, ts_h2d) &&
                                             offsetof(struct fisrig_cut_record, ts_status) == offsetof(struct fisrig_cpl_record, ts_status) ? 1 : -1];
typedef char fisrig_current_is_a_cpl[sizeof(struct fisrig_current_record) == sizeof(struct fisrig_cpl_record) &&
                                     offsetof(struct fisrig_current_record, ts_first) == offsetof(struct fisrig_cpl_record, ts_status) ? 1 : -1];
typedef char fisrig_nvme_head_is_a_desc[sizeof(struct fisrig_nvme_desc_head) == sizeof(struct fisrig_cmd_desc) &&
                                        offsetof(struct fisrig_nvme_desc_head, data_source) == offsetof(struct fisrig_cmd_desc, data_source) &&
                                        offsetof(struct fisrig_nvme_desc_head, data_word) == offsetof(struct fisrig_cmd_desc, data_word) &&
                                        offsetof(struct fisrig_nvme_desc_head, user_tag) == offsetof(struct fisrig_cmd_desc, user_tag) &&
                                        offsetof(struct fisrig_nvme_desc_head, timeout_ticks) == offsetof(struct fisrig_cmd_desc, timeout_ticks) ? 1 : -1];
typedef char fisrig_nvme_cpl_is_a_cpl[sizeof(struct fisrig_nvme_cpl_record) == sizeof(struct fisrig_cpl_record) &&
                                      offsetof(struct fisrig_nvme_cpl_record, check_errors) == offsetof(struct fisrig_cpl_record, check_errors) &&
                                      offsetof(struct fisrig_nvme_cpl_record, blocks) == offsetof(struct fisrig_cpl_record, sectors) &&
                                      offsetof(struct fisrig_nvme_cpl_record, ts_data_first) == offsetof(struct fisrig_cpl_record, ts_data_first) &&
                                      offsetof(struct fisrig_nvme_cpl_record, ts_cqe) == offsetof(struct fisrig_cpl_record, ts_status) ? 1 : -1];
typedef char fisrig_nvme_cut_is_a_cut[sizeof(struct fisrig_nvme_cut_record) == sizeof(struct fisrig_cut_record) &&
                                      offsetof(struct fisrig_nvme_cut_record, cmds_done) == offsetof(struct fisrig_cut_record, slots_done) &&
                                      offsetof(struct fisrig_nvme_cut_record, ts_trigger) == offsetof(struct fisrig_cut_record, ts_trigger) ? 1 : -1];
typedef char fisrig_tick_ns_is_exact[FISRIG_TICK_NS_NUM * FISRIG_TICK_HZ == FISRIG_TICK_NS_DEN * 1000000000ull ? 1 : -1];

#endif /* FISRIG_ENGINE_IF_H */
