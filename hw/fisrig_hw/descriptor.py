"""The engine interface's records as bit fields, and its constants, for the gateware and
its benches: firmware/core/include/fisrig/engine_if.h is the definition, and every number
here comes from it through fisrig_hw.contract (generated from the headers by the C
compiler; tests/host/test_contract.py fails when it is stale)."""

from enum import IntEnum

from fisrig_hw import contract as _c  # underscored: engine/sequencer.py star-imports this beside migen's C

DESC_BITS = 8 * _c.SIZES["fisrig_cmd_desc"]
CPL_DWORDS = _c.SIZES["fisrig_cpl_record"] // 4

# struct fisrig_cmd_desc / fisrig_cpl_record: name -> (byte offset, bytes)
DESC_FIELDS = {name: (off, n) for name, (off, n, _) in _c.FIELDS["fisrig_cmd_desc"].items()}
CPL_FIELDS = {name: (off, n) for name, (off, n, _) in _c.FIELDS["fisrig_cpl_record"].items()}
# A power cut's record (struct fisrig_cut_record): the slots' state as four 32-bit masks.
CUT_MASKS = {name: (off, n) for name, (off, n, _) in _c.FIELDS["fisrig_cut_record"].items()
             if name.startswith("slots_")}
CUT_TRIGGER = _c.FIELDS["fisrig_cut_record"]["ts_trigger"][0]  # its byte offset
# The timestamps in record order: index = phase number in the engine's timestamp memory.
PHASES = [name for name in CPL_FIELDS if name.startswith("ts_")]
PH_SUBMIT, PH_H2D, PH_ACCEPT, PH_SETUP, PH_DATA_FIRST, PH_DATA_LAST, PH_STATUS = range(7)
assert PHASES == ["ts_submit", "ts_h2d", "ts_accept", "ts_setup", "ts_data_first", "ts_data_last", "ts_status"]

TICK_HZ = _c.FISRIG_TICK_HZ
SLOTS = _c.FISRIG_ENGINE_SLOTS
# A slot's timeout when its descriptor says 0 (engine_if.h says why 30 s).
DEFAULT_TIMEOUT_TICKS = _c.FISRIG_DEFAULT_TIMEOUT_TICKS

# enum fisrig_protocol, one member a protocol (Protocol.FPDMA_IN); plans spell them in lower
# case (program_format.PROTO).
Protocol = IntEnum("Protocol", {m[len("FISRIG_PROTO_"):]: getattr(_c, m) for m in _c.ENUMS["fisrig_protocol"]})

DATA_NONE, DATA_RAM, DATA_ZEROS = _c.FISRIG_DATA_NONE, _c.FISRIG_DATA_RAM, _c.FISRIG_DATA_ZEROS
DATA_STAMP, DATA_LFSR = _c.FISRIG_DATA_STAMP, _c.FISRIG_DATA_LFSR
FLAG_CHECK = _c.FISRIG_DESC_CHECK

RESULT_OK, RESULT_ATA_ERROR = _c.FISRIG_RESULT_OK, _c.FISRIG_RESULT_ATA_ERROR
RESULT_NCQ_ABORTED, RESULT_TIMEOUT = _c.FISRIG_RESULT_NCQ_ABORTED, _c.FISRIG_RESULT_TIMEOUT
RESULT_LINK_LOST, RESULT_CHECK_FAILED = _c.FISRIG_RESULT_LINK_LOST, _c.FISRIG_RESULT_CHECK_FAILED
RESULT_REFUSED = _c.FISRIG_RESULT_REFUSED
RESULT_DATA_CRC, RESULT_LENGTH = _c.FISRIG_RESULT_DATA_CRC, _c.FISRIG_RESULT_LENGTH

POWER_OFF, POWER_ON, POWER_OFF_AT_EVENT = _c.FISRIG_POWER_OFF, _c.FISRIG_POWER_ON, _c.FISRIG_POWER_OFF_AT_EVENT
POWER_STAGE, POWER_SAMPLE = _c.FISRIG_POWER_STAGE, _c.FISRIG_POWER_SAMPLE
CURRENT_PERIOD_TICKS, CURRENT_SAMPLES = _c.FISRIG_CURRENT_PERIOD_TICKS, _c.FISRIG_CURRENT_SAMPLES
# The power pins (enum fisrig_power_pin): bit 1 << pin of the pins the rig drives.
PIN_3V3, PIN_5V, PIN_12V, PIN_P3 = _c.FISRIG_PIN_3V3, _c.FISRIG_PIN_5V, _c.FISRIG_PIN_12V, _c.FISRIG_PIN_P3
PINS = 4
PINS_ON = (1 << PIN_3V3) | (1 << PIN_5V) | (1 << PIN_12V)  # as the rig starts: rails on, P3 released
LINK_COMRESET, LINK_WAIT_UP = _c.FISRIG_LINK_COMRESET, _c.FISRIG_LINK_WAIT_UP
EVENT_H2D, EVENT_D2H, EVENT_SDB = _c.FISRIG_EVENT_H2D, _c.FISRIG_EVENT_D2H, _c.FISRIG_EVENT_SDB
EVENT_DATA, EVENT_DMA_SETUP, EVENT_TIME = _c.FISRIG_EVENT_DATA, _c.FISRIG_EVENT_DMA_SETUP, _c.FISRIG_EVENT_TIME

USER_TAG_EVENT = _c.FISRIG_USER_TAG_EVENT
# An engine event record's slot field says what happened.
EV_POWER_CUT, EV_LINK_DOWN = _c.FISRIG_EVENT_REC_POWER_CUT, _c.FISRIG_EVENT_REC_LINK_DOWN
EV_LINK_UP, EV_CURRENT = _c.FISRIG_EVENT_REC_LINK_UP, _c.FISRIG_EVENT_REC_CURRENT


def struct_field(raw, struct, name):
    """A field of one of the headers' structs (contract.FIELDS's name) in its bits `raw`."""
    off, n, _ = _c.FIELDS[struct][name]
    return raw[8 * off:8 * (off + n)]


def desc_field(raw, name):
    return struct_field(raw, "fisrig_cmd_desc", name)


def pack_struct(struct, **kw):
    """One of the headers' structs (contract.FIELDS's name) as its bytes, the fields named set
    and the rest 0 (the benches' helper)."""
    b = bytearray(_c.SIZES[struct])
    for name, v in kw.items():
        off, n, _ = _c.FIELDS[struct][name]
        b[off:off + n] = int(v).to_bytes(n, "little")
    return bytes(b)


def pack_desc(**kw):
    """A descriptor as 32 bytes."""
    return pack_struct("fisrig_cmd_desc", **kw)


def unpack_cpl(b):
    return {name: int.from_bytes(b[off:off + n], "little") for name, (off, n) in CPL_FIELDS.items()}


CURRENT_FIELDS = {name: (off, n) for name, (off, n, _) in _c.FIELDS["fisrig_current_record"].items()}


def unpack_current(b):
    """A current sampler's record (struct fisrig_current_record): its samples in mA, the
    tick of the first, the period between them and the records dropped before it."""
    f = CURRENT_FIELDS
    get = lambda name: int.from_bytes(b[f[name][0]:f[name][0] + f[name][1]], "little")
    at = f["ma"][0]
    return {"ma": [int.from_bytes(b[at + 2 * i:at + 2 * i + 2], "little") for i in range(get("samples"))],
            "ts_first": get("ts_first"), "period_ticks": get("period_ticks"), "dropped": get("dropped")}


def unpack_cut(b):
    """A power cut's record's masks (bit n: slot n) and its ts_trigger, by name."""
    out = {name: int.from_bytes(b[off:off + n], "little") for name, (off, n) in CUT_MASKS.items()}
    out["ts_trigger"] = int.from_bytes(b[CUT_TRIGGER:CUT_TRIGGER + 8], "little")
    return out
