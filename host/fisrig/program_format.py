"""The rig's binary formats, as firmware/core/include/fisrig/{engine_if,program}.h define them.

Those headers are the contract; this module mirrors them field for field (little-endian)
and tests/host/test_formats.py checks the sizes against the C compiler's.
"""
from __future__ import annotations

import struct

import numpy as np

TICK_HZ = 150_000_000
NS_PER_TICK = 1e9 / TICK_HZ

PROGRAM_MAGIC = 0x50525346  # "FSRP"
PROGRAM_VERSION = 1
ENGINE_IF_VERSION = 1
RECORDS_MAGIC = 0x52525346  # "FSRR"

# enum fisrig_opcode
OP_END, OP_MARK, OP_LOOP, OP_END_LOOP, OP_IDLE, OP_RAW, OP_WORKLOAD, OP_TRIM, OP_DRAIN, OP_TRACE = range(10)
# enum fisrig_trace_op
TRACE_OPS = {"R": 0, "W": 1, "T": 2, "F": 3}
TRACE_ENTRY = np.dtype([("lba", "<u8"), ("sectors", "<u4"), ("op", "u1"), ("pad", "V3")])
assert TRACE_ENTRY.itemsize == 16

# enum fisrig_protocol
PROTO = {"non_data": 0, "pio_in": 1, "pio_out": 2, "dma_in": 3, "dma_out": 4,
         "fpdma_in": 5, "fpdma_out": 6, "power": 7, "link": 8}
# enum fisrig_data_source
DATA = {"none": 0, "ram": 1, "zeros": 2, "stamp": 3, "lfsr": 4}
# enum fisrig_pattern
PATTERN = {"sequential": 0, "uniform": 1, "zipf": 2}
# enum fisrig_power_op / fisrig_fis_event / fisrig_link_op
POWER_OFF, POWER_ON, POWER_OFF_AT_EVENT = 1, 2, 3
FIS_EVENT = {"h2d": 1, "d2h": 2, "sdb": 3, "data": 4, "dma_setup": 5}
LINK_COMRESET, LINK_WAIT_UP = 1, 2
# enum fisrig_result
RESULTS = ["ok", "ata_error", "ncq_aborted", "timeout", "link_lost", "check_failed", "refused"]
RESULT = {name: i for i, name in enumerate(RESULTS)}
ANY_RESULT = 0xFF
# enum fisrig_record_kind
RECORD_KINDS = ["command", "power", "link", "end"]
# enum fisrig_vm_status (the END record's result)
VM_STATUS = ["done", "bad_program", "expect_failed", "engine_stuck", "records_lost", "stopped"]
EVENT_USER_TAG = 0xFFFFFFFF

_HEAD = struct.Struct("<BBH")
_DESC = struct.Struct("<BBHHBB6sHBBBBIII")
_EXPECT = struct.Struct("<BBBBB3x")
_WORKLOAD = struct.Struct("<BBBBBBBBBBBBIIQQQQQ8I8I")
_HEADER = struct.Struct("<IHHIIQ")

assert _DESC.size == 32 and _HEADER.size == 24 and _WORKLOAD.size == 124


def desc(protocol: str, command: int, *, features: int = 0, count: int = 0, lba: int = 0,
         device: int = 0x40, icc: int = 0, aux: int = 0, control: int = 0, data: str = "none",
         compress_pct: int = 100, flags: int = 0, data_word: int = 0, timeout_ticks: int = 0) -> bytes:
    """One 32-byte command descriptor (struct fisrig_cmd_desc); user_tag is the VM's."""
    return _DESC.pack(PROTO[protocol], command, features, count, device, icc,
                      lba.to_bytes(6, "little"), aux, control, DATA[data], compress_pct, flags,
                      data_word, 0, timeout_ticks)


def _op(opcode: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    return _HEAD.pack(opcode, 0, _HEAD.size + len(body)) + body


def op_mark(marker: int) -> bytes:
    return _op(OP_MARK, struct.pack("<I", marker))


def op_loop(count: int) -> bytes:
    return _op(OP_LOOP, struct.pack("<I", count))


def op_end_loop() -> bytes:
    return _op(OP_END_LOOP, b"")


def op_idle(ticks: int) -> bytes:
    return _op(OP_IDLE, struct.pack("<IQ", 0, ticks))


def op_raw(descriptor: bytes, *, result: int = ANY_RESULT, status_mask: int = 0, status_value: int = 0,
           error_mask: int = 0, error_value: int = 0, data_out: bytes = b"") -> bytes:
    body = _EXPECT.pack(result, status_mask, status_value, error_mask, error_value)
    return _op(OP_RAW, body + struct.pack("<I", len(data_out)) + descriptor + data_out)


def op_workload(*, pattern: str, queue_depth: int, ncq: bool, data: str, compress_pct: int,
                read_pct: int, trim_pct: int, flush_pct: int, fua: bool, seed: int,
                zipf_theta: float, lba_start: int, lba_span: int, stop_commands: int,
                stop_bytes: int, stop_ticks: int, sizes: list[tuple[int, int]]) -> bytes:
    sectors = [s for s, _ in sizes] + [0] * (8 - len(sizes))
    weights = [w for _, w in sizes] + [0] * (8 - len(sizes))
    body = _WORKLOAD.pack(PATTERN[pattern], queue_depth, int(ncq), DATA[data], compress_pct,
                          read_pct, trim_pct, flush_pct, int(fua), 0, len(sizes), 0, seed,
                          int(round(zipf_theta * 1000)), lba_start, lba_span, stop_commands,
                          stop_bytes, stop_ticks, *sectors, *weights)
    return _op(OP_WORKLOAD, body)


def op_trim(lba_start: int, sectors: int, queued: bool) -> bytes:
    return _op(OP_TRIM, struct.pack("<B3xQQ", int(queued), lba_start, sectors))


def op_trace(entries: np.ndarray, *, queue_depth: int, ncq: bool, data: str = "stamp",
             compress_pct: int = 100) -> bytes:
    """A trace replay: the fixed part, then the entries (not counted in the head's size)."""
    fixed = _HEAD.pack(OP_TRACE, 0, 12) + struct.pack("<BBBBI", queue_depth, int(ncq), DATA[data],
                                                        compress_pct, len(entries))
    return fixed + np.ascontiguousarray(entries.astype(TRACE_ENTRY)).tobytes()


def op_drain() -> bytes:
    return _op(OP_DRAIN, b"")


def program(ops: list[bytes], drive_sectors: int) -> bytes:
    body = b"".join(ops) + _op(OP_END, b"")
    size = _HEADER.size + len(body)
    return _HEADER.pack(PROGRAM_MAGIC, PROGRAM_VERSION, 0, size, 0, drive_sectors) + body


# struct fisrig_run_record (96 bytes): the completion record plus what the command was.
RECORD_DTYPE = np.dtype([
    ("user_tag", "<u4"), ("slot", "u1"), ("result", "u1"), ("status", "u1"), ("error", "u1"),
    ("d2h_lba", "V6"), ("check_errors", "<u2"), ("sectors", "<u4"), ("reserved", "<u4"),
    ("ts_submit", "<u8"), ("ts_h2d", "<u8"), ("ts_accept", "<u8"), ("ts_setup", "<u8"),
    ("ts_data_first", "<u8"), ("ts_data_last", "<u8"), ("ts_status", "<u8"),
    ("marker", "<u4"), ("command", "u1"), ("protocol", "u1"), ("kind", "u1"), ("pad", "u1"),
    ("lba", "<u8"),
])
assert RECORD_DTYPE.itemsize == 96
RECORDS_HEADER = struct.Struct("<IIII")
