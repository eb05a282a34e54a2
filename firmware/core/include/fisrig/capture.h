/*
 * The analyzer's capture: what crossed the rig's transceiver pins, both ways, as a protocol
 * analyzer lists it (docs/capture.md). One definition for the model target's engine (which
 * makes the entries from its transaction-level view, marked modelled), the gateware's
 * capture, and the host, which turns capture.bin into capture.parquet.
 *
 * A capture is armed by a descriptor (protocol FISRIG_PROTO_CAPTURE, engine_if.h): from
 * then on the capture keeps the last `before` ticks of the wire; when its trigger fires it
 * keeps `after` ticks more, and the window (trigger entry first, then every entry of the
 * window in tick order) goes to the capture stream. Armed for several windows, the next
 * trigger is looked for once a window has closed. Each entry is stamped on the engine's
 * tick (FISRIG_TICK_HZ), as the records are, at the dword engine_if.h names: a FIS's type
 * dword, a primitive run's first primitive.
 */
#ifndef FISRIG_CAPTURE_H
#define FISRIG_CAPTURE_H

#include <stdint.h>

/* capture.bin: this header, then struct fisrig_capture_entry after entry; a killed run leaves
   at most a torn last entry. */
#define FISRIG_CAPTURE_FILE_MAGIC 0x43525346u /* "FSRC" */
#define FISRIG_CAPTURE_FILE_VERSION 1u

struct fisrig_capture_file_header {
  uint32_t magic;        /* FISRIG_CAPTURE_FILE_MAGIC */
  uint32_t version;      /* FISRIG_CAPTURE_FILE_VERSION */
  uint32_t entry_bytes;  /* sizeof(struct fisrig_capture_entry) */
  uint32_t reserved;     /* zero */
};

/* A CAPTURE descriptor's command (engine_if.h's struct fisrig_cmd_desc): ARM takes the
   trigger in features (enum fisrig_capture_trigger) and its value in count, the pre-trigger
   depth in data_word (ticks), the post-trigger depth in timeout_ticks, how many windows in
   lba[0] and lba[1] (0 is one), and the payload dwords in lba[2] and lba[3] (each FIS's
   dwords kept past its first FISRIG_CAPTURE_HEADER_DWORDS, as FISRIG_CAPTURE_PAYLOAD entries;
   0 keeps none, at most FISRIG_CAPTURE_MAX_PAYLOAD_DWORDS); STOP ends what is armed, a window
   open ending at once. */
enum fisrig_capture_op {
  FISRIG_CAPTURE_ARM = 1,
  FISRIG_CAPTURE_STOP = 2
};

/* What fires a capture's trigger; its tick is the entry that fired it. */
enum fisrig_capture_trigger {
  FISRIG_TRIGGER_ARMED = 0,     /* the arming itself: the window starts there */
  FISRIG_TRIGGER_FIS = 1,       /* a FIS of type `value` (its type byte), either way */
  FISRIG_TRIGGER_COMMAND = 2,   /* a Register H2D whose COMMAND is `value` */
  FISRIG_TRIGGER_TAG = 3,       /* a queued command's Register H2D for NCQ tag `value` */
  FISRIG_TRIGGER_R_ERR = 4,     /* a frame answered R_ERR, either way */
  FISRIG_TRIGGER_TIMEOUT = 5,   /* a command's timeout: its record's end */
  FISRIG_TRIGGER_POWER_CUT = 6, /* the power controller's cut */
  FISRIG_TRIGGER_RESULT = 7,    /* a command whose record ends with enum fisrig_result `value`:
                                   at its status FIS (its end when it has none) */
  FISRIG_TRIGGER_ERROR = 8      /* a command whose record ends other than OK: as RESULT */
};

enum fisrig_capture_kind {
  FISRIG_CAPTURE_FIS = 0,       /* a frame: its first header dwords, `count` its dwords from
                                   the type dword to the last before CRC */
  FISRIG_CAPTURE_PRIMITIVE = 1, /* a run of one primitive (`type`, enum fisrig_primitive),
                                   `count` of them; CONT and its filler within the run counted */
  FISRIG_CAPTURE_EVENT = 2,     /* not a dword of the wire: the rig's own (`type`,
                                   enum fisrig_capture_event) */
  FISRIG_CAPTURE_TRIGGER = 3,   /* a window's first entry: where its trigger fired (`type` the
                                   enum fisrig_capture_trigger, header[0] its value,
                                   header[1] and [2] the window's first tick, low half first,
                                   header[3] and [4] its last, header[5] the entries the
                                   capture dropped, never stalling the wire, header[6] the
                                   triggers that came while the gateware held the window for
                                   the host (it looks for none then): 0 on the model) */
  FISRIG_CAPTURE_PAYLOAD = 4    /* up to 7 more dwords of the FIS of its direction that began
                                   last before it (an arming's payload dwords): `count` the
                                   index of header[0] in that FIS (its type dword 0, so 7, 14,
                                   ...), `type` how many of header[] it filled (1 to 7), `tick`
                                   header[0]'s; descrambled as the FIS's first dwords are. It
                                   can hold the frame's CRC: the FIS's own `count` says where
                                   the FIS ends. The gateware's alone: the model target keeps
                                   no dwords past a FIS's header */
};

/* An entry's direction (dir). */
#define FISRIG_CAPTURE_TO_DEVICE 0u /* host to device: what the rig sent */
#define FISRIG_CAPTURE_TO_HOST 1u   /* device to host: what the drive sent */

/* flags */
#define FISRIG_CAPTURE_MODELLED 0x01u  /* from the model target's transaction-level view, not a
                                          tap on the pins: where a FIS's dwords would cross */
#define FISRIG_CAPTURE_BAD 0x02u       /* the frame's receiver answered R_ERR (its CRC, or a
                                          fault knob) */
#define FISRIG_CAPTURE_CUT_SHORT 0x04u /* a frame without its EOF (power cut, link loss); a
                                          window the run ended before its last tick */
#define FISRIG_CAPTURE_CONT 0x08u      /* a primitive run the sender shortened with CONT: its
                                          count takes in CONT and the scrambled filler after it */
#define FISRIG_CAPTURE_NO_TAG 0xFFu    /* tag: the entry belongs to no command slot */

/* The rig's own events (kind FISRIG_CAPTURE_EVENT). */
enum fisrig_capture_event {
  FISRIG_CAPTURE_EVENT_POWER_CUT = 1, /* the power controller cut the rails */
  FISRIG_CAPTURE_EVENT_LINK_DOWN = 2,
  FISRIG_CAPTURE_EVENT_LINK_UP = 3,
  FISRIG_CAPTURE_EVENT_COMRESET = 4,
  FISRIG_CAPTURE_EVENT_TIMEOUT = 5    /* a slot's command timed out (tag its slot) */
};

/* SATA's primitives (SATA 3.x 7.4), as an analyzer names them. */
enum fisrig_primitive {
  FISRIG_PRIM_ALIGN = 1,
  FISRIG_PRIM_CONT = 2,
  FISRIG_PRIM_DMAT = 3,
  FISRIG_PRIM_EOF = 4,
  FISRIG_PRIM_HOLD = 5,
  FISRIG_PRIM_HOLDA = 6,
  FISRIG_PRIM_PMACK = 7,
  FISRIG_PRIM_PMNAK = 8,
  FISRIG_PRIM_PMREQ_P = 9,
  FISRIG_PRIM_PMREQ_S = 10,
  FISRIG_PRIM_R_ERR = 11,
  FISRIG_PRIM_R_IP = 12,
  FISRIG_PRIM_R_OK = 13,
  FISRIG_PRIM_R_RDY = 14,
  FISRIG_PRIM_SOF = 15,
  FISRIG_PRIM_SYNC = 16,
  FISRIG_PRIM_WTRM = 17,
  FISRIG_PRIM_X_RDY = 18
};

/* The FIS's dwords an entry keeps: every dword of the FISes but Data (a DMA Setup has 7);
   a Data FIS's type dword and its first payload dwords. */
#define FISRIG_CAPTURE_HEADER_DWORDS 7u
/* An arming's payload dwords at most: the rest of the longest FIS, a Data FIS of 8 KiB and its
   type dword (SATA 3.x 10.5.12). */
#define FISRIG_CAPTURE_MAX_PAYLOAD_DWORDS 2042u

/* One entry, 48 bytes. */
struct fisrig_capture_entry {
  uint64_t tick;     /* its first dword at the pins */
  uint8_t kind;      /* enum fisrig_capture_kind */
  uint8_t dir;       /* FISRIG_CAPTURE_TO_DEVICE or _TO_HOST */
  uint8_t type;      /* a FIS's type byte, enum fisrig_primitive, enum fisrig_capture_event,
                        enum fisrig_capture_trigger, or a payload entry's dwords */
  uint8_t flags;     /* FISRIG_CAPTURE_MODELLED, _BAD, _CUT_SHORT, _CONT */
  uint16_t window;   /* which window of the run (from 0) */
  uint8_t tag;       /* the engine slot (NCQ: the tag) the FIS belongs to, or FISRIG_CAPTURE_NO_TAG */
  uint8_t reserved;
  uint32_t count;    /* a FIS's dwords; a primitive run's primitives; a payload entry's first
                        dword's index in its FIS */
  uint32_t header[FISRIG_CAPTURE_HEADER_DWORDS]; /* a FIS's first dwords as they crossed;
                                                    0 past its end */
};

typedef char fisrig_capture_entry_is_48_bytes[sizeof(struct fisrig_capture_entry) == 48 ? 1 : -1];

#endif /* FISRIG_CAPTURE_H */
