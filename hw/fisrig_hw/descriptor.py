"""The engine interface's records as bit fields: firmware/core/include/fisrig/engine_if.h
is the definition; a test checks these offsets against the C structs."""


DESC_BITS = 256
CPL_DWORDS = 20  # 80-byte completion record

# struct fisrig_cmd_desc: name -> (byte offset, bytes)
DESC_FIELDS = {
    "protocol": (0, 1), "command": (1, 1), "features": (2, 2), "count": (4, 2),
    "device": (6, 1), "icc": (7, 1), "lba": (8, 6), "aux": (14, 2), "control": (16, 1),
    "data_source": (17, 1), "compress_pct": (18, 1), "flags": (19, 1), "data_word": (20, 4),
    "user_tag": (24, 4), "timeout_ticks": (28, 4),
}

# struct fisrig_cpl_record: name -> (byte offset, bytes)
CPL_FIELDS = {
    "user_tag": (0, 4), "slot": (4, 1), "result": (5, 1), "status": (6, 1), "error": (7, 1),
    "lba": (8, 6), "check_errors": (14, 2), "sectors": (16, 4), "reserved": (20, 4),
    "ts_submit": (24, 8), "ts_h2d": (32, 8), "ts_accept": (40, 8), "ts_setup": (48, 8),
    "ts_data_first": (56, 8), "ts_data_last": (64, 8), "ts_status": (72, 8),
}
# The timestamps in record order: index = phase number in the engine's timestamp memory.
PHASES = ["ts_submit", "ts_h2d", "ts_accept", "ts_setup", "ts_data_first", "ts_data_last",
          "ts_status"]
PH_SUBMIT, PH_H2D, PH_ACCEPT, PH_SETUP, PH_DATA_FIRST, PH_DATA_LAST, PH_STATUS = range(7)

PROTO_NON_DATA, PROTO_PIO_IN, PROTO_PIO_OUT, PROTO_DMA_IN, PROTO_DMA_OUT = 0, 1, 2, 3, 4
PROTO_FPDMA_IN, PROTO_FPDMA_OUT, PROTO_POWER, PROTO_LINK = 5, 6, 7, 8

DATA_NONE, DATA_RAM, DATA_ZEROS, DATA_STAMP, DATA_LFSR = 0, 1, 2, 3, 4
FLAG_CHECK = 0x01

RESULT_OK, RESULT_ATA_ERROR, RESULT_NCQ_ABORTED, RESULT_TIMEOUT = 0, 1, 2, 3
RESULT_LINK_LOST, RESULT_CHECK_FAILED, RESULT_REFUSED = 4, 5, 6

POWER_OFF, POWER_ON, POWER_OFF_AT_EVENT = 1, 2, 3
LINK_COMRESET, LINK_WAIT_UP = 1, 2
EVENT_H2D, EVENT_D2H, EVENT_SDB, EVENT_DATA, EVENT_DMA_SETUP = 1, 2, 3, 4, 5

USER_TAG_EVENT = 0xFFFFFFFF
# An engine event record's slot field says what happened (engine_if.h).
EV_POWER_CUT, EV_LINK_DOWN, EV_LINK_UP = 0xF0, 0xF1, 0xF2


def desc_field(raw, name):
    off, n = DESC_FIELDS[name]
    return raw[8 * off:8 * (off + n)]


def pack_desc(**kw):
    """A descriptor as 32 bytes (the benches' helper)."""
    b = bytearray(32)
    for name, v in kw.items():
        off, n = DESC_FIELDS[name]
        b[off:off + n] = int(v).to_bytes(n, "little")
    return bytes(b)


def unpack_cpl(b):
    return {name: int.from_bytes(b[off:off + n], "little") for name, (off, n) in CPL_FIELDS.items()}
