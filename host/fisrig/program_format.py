"""The rig's binary formats, as firmware/core/include/fisrig/{engine_if,program,vm}.h define them.

Those headers are the contract. Every constant here comes from them through
fisrig_hw.contract (generated from the headers by the C compiler), and so do the record
dtypes; the writers below pack field after field, and tests/host/test_contract.py checks
every field each writer puts against the C compiler's offsetof and sizeof.
"""
from __future__ import annotations

import struct

import numpy as np

from fisrig_hw import contract as _c
from fisrig_hw.descriptor import Protocol

TICK_HZ = _c.FISRIG_TICK_HZ
TICK_NS_NUM, TICK_NS_DEN = _c.FISRIG_TICK_NS_NUM, _c.FISRIG_TICK_NS_DEN  # a tick is NUM/DEN ns exactly
NS_PER_TICK = TICK_NS_NUM / TICK_NS_DEN

PROGRAM_MAGIC = _c.FISRIG_PROGRAM_MAGIC
PROGRAM_VERSION = _c.FISRIG_PROGRAM_VERSION
ENGINE_IF_VERSION = _c.FISRIG_ENGINE_IF_VERSION
RECORDS_MAGIC = _c.FISRIG_RECORDS_FILE_MAGIC
RECORDS_VERSION = _c.FISRIG_RECORDS_FILE_VERSION


def _names(enum: str, prefix: str) -> list[str]:
    """An enum's members in value order, lower case without the prefix: the names runs,
    records and reports spell (FISRIG_RESULT_ATA_ERROR -> "ata_error")."""
    members = sorted(_c.ENUMS[enum], key=lambda m: getattr(_c, m))
    assert [getattr(_c, m) for m in members] == list(range(len(members))), enum
    return [m[len(prefix):].lower() for m in members]


def _dtype(struct_name: str, rename: dict[str, str]) -> np.dtype:
    """A struct as a numpy dtype at the C compiler's offsets; a field is named by its last
    component unless renamed (byte arrays are opaque: V<n>)."""
    names, formats, offsets = [], [], []
    for path, (offset, size, elements) in _c.FIELDS[struct_name].items():
        names.append(rename.get(path, path.split(".")[-1]))
        formats.append(f"<u{size}" if elements == 1 else f"V{size}")
        offsets.append(offset)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": _c.SIZES[struct_name]})


# enum fisrig_opcode
(OP_END, OP_MARK, OP_LOOP, OP_END_LOOP, OP_IDLE, OP_RAW, OP_WORKLOAD, OP_TRIM, OP_DRAIN,
 OP_TRACE, OP_VERIFY, OP_POLICY) = (_c.FISRIG_OP_END, _c.FISRIG_OP_MARK, _c.FISRIG_OP_LOOP,
                                    _c.FISRIG_OP_END_LOOP, _c.FISRIG_OP_IDLE, _c.FISRIG_OP_RAW,
                                    _c.FISRIG_OP_WORKLOAD, _c.FISRIG_OP_TRIM, _c.FISRIG_OP_DRAIN,
                                    _c.FISRIG_OP_TRACE, _c.FISRIG_OP_VERIFY, _c.FISRIG_OP_POLICY)
# enum fisrig_on_error, by the names plans use ("fail", "requeue", "retry")
ON_ERROR = {name: i for i, name in enumerate(_names("fisrig_on_error", "FISRIG_ON_ERROR_"))}
MAX_RETRIES = _c.FISRIG_POLICY_MAX_RETRIES
# enum fisrig_trace_op, by the letter a trace file uses
TRACE_OPS = {"R": _c.FISRIG_TRACE_READ, "W": _c.FISRIG_TRACE_WRITE, "T": _c.FISRIG_TRACE_TRIM,
             "F": _c.FISRIG_TRACE_FLUSH}
TRACE_ENTRY = _dtype("fisrig_trace_entry", {"reserved": "pad"})

# enum fisrig_protocol (fisrig_hw.descriptor.Protocol), by the names plans use ("fpdma_in")
PROTO = {p.name.lower(): p for p in Protocol}
# Those a SATA descriptor may say (a raw step's or `fisrig raw`'s protocol): every one but
# NVMe's, whose descriptor is another (engine_if.h's struct fisrig_nvme_desc_head).
SATA_PROTO = {name: p for name, p in PROTO.items() if p not in (Protocol.NVME, Protocol.CAPTURE)}
# enum fisrig_data_source / fisrig_pattern, by the names plans use
DATA = {name: i for i, name in enumerate(_names("fisrig_data_source", "FISRIG_DATA_"))}
PATTERN = {name: i for i, name in enumerate(_names("fisrig_pattern", "FISRIG_PATTERN_"))}
# enum fisrig_power_op / fisrig_fis_event / fisrig_link_op
POWER_OFF, POWER_ON, POWER_OFF_AT_EVENT = _c.FISRIG_POWER_OFF, _c.FISRIG_POWER_ON, _c.FISRIG_POWER_OFF_AT_EVENT
FIS_EVENT = {m[len("FISRIG_EVENT_"):].lower(): getattr(_c, m) for m in _c.ENUMS["fisrig_fis_event"]}
# An NVMe engine's (enum fisrig_tlp_event: "doorbell", "sqe", "data", "cqe"), and a time.
TLP_EVENT = {m[len("FISRIG_EVENT_"):].lower().removesuffix("_tlp"): getattr(_c, m) for m in _c.ENUMS["fisrig_tlp_event"]}
TLP_EVENT["time"] = FIS_EVENT["time"]
POWER_STAGE, POWER_SAMPLE = _c.FISRIG_POWER_STAGE, _c.FISRIG_POWER_SAMPLE
CURRENT_PERIOD_TICKS, CURRENT_SAMPLES = _c.FISRIG_CURRENT_PERIOD_TICKS, _c.FISRIG_CURRENT_SAMPLES
# The rig's power pins by the names plans give them (enum fisrig_power_pin: "3v3", "5v",
# "12v", "p3").
POWER_PINS = {m[len("FISRIG_PIN_"):].lower(): getattr(_c, m) for m in _c.ENUMS["fisrig_power_pin"]}
LINK_COMRESET, LINK_WAIT_UP = _c.FISRIG_LINK_COMRESET, _c.FISRIG_LINK_WAIT_UP
CAPTURE_ARM = _c.FISRIG_CAPTURE_ARM  # a CAPTURE descriptor's command (capture.h)
CAPTURE_MAX_PAYLOAD_DWORDS = _c.FISRIG_CAPTURE_MAX_PAYLOAD_DWORDS  # an arming's payload dwords at most
# enum fisrig_result
RESULTS = _names("fisrig_result", "FISRIG_RESULT_")
RESULT = {name: i for i, name in enumerate(RESULTS)}
ANY_RESULT = 0xFF  # struct fisrig_expect.result: any
# enum fisrig_record_kind
RECORD_KINDS = _names("fisrig_record_kind", "FISRIG_RECORD_")
# enum fisrig_finding (a STAMP record's detail): "stamp", "zeros", "other_lba", ...
FINDINGS = _names("fisrig_finding", "FISRIG_FOUND_")
DETAIL_FUA = _c.FISRIG_DETAIL_FUA
DETAIL_SENT_AGAIN = _c.FISRIG_DETAIL_SENT_AGAIN
DETAIL_ATTEMPT_SHIFT, DETAIL_ATTEMPT_MASK = _c.FISRIG_DETAIL_ATTEMPT_SHIFT, _c.FISRIG_DETAIL_ATTEMPT_MASK
VERIFY_MAX_SECTORS = _c.FISRIG_VERIFY_MAX_SECTORS
# enum fisrig_vm_status (the END record's result), as fisrig_vm_status_name spells them
VM_STATUS = _names("fisrig_vm_status", "FISRIG_VM_")
EVENT_USER_TAG = _c.FISRIG_USER_TAG_EVENT
EVENT_POWER_CUT = _c.FISRIG_EVENT_REC_POWER_CUT  # the engine's record of a cut: its tag (slot)
EVENT_LINK_DOWN, EVENT_LINK_UP = _c.FISRIG_EVENT_REC_LINK_DOWN, _c.FISRIG_EVENT_REC_LINK_UP  # the link's fall, its signature

_HEAD = struct.Struct("<BBH")
_DESC = struct.Struct("<BBHHBB6sHBBBBIII")
_EXPECT = struct.Struct("<BBBBB3x")
_WORKLOAD = struct.Struct("<BBBBBBBBBBBBIIQQQQQ8I8I")
_HEADER = struct.Struct("<IHHIIQ")

assert (_HEAD.size, _DESC.size, _EXPECT.size, _HEADER.size, _WORKLOAD.size + _HEAD.size) == (
    _c.SIZES["fisrig_op_head"], _c.SIZES["fisrig_cmd_desc"], _c.SIZES["fisrig_expect"],
    _c.SIZES["fisrig_program_header"], _c.SIZES["fisrig_op_workload"])


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


def op_loop(count: int, *, steady_pc: int = 0, steady_window: int = 0, steady_range_pct: int = 0,
            steady_slope_pct: int = 0) -> bytes:
    """A loop of `count` passes; with steady_pc (the program offset of a WORKLOAD in its
    body) it ends early once that workload's IOPS holds steady (struct fisrig_op_loop)."""
    return _op(OP_LOOP, struct.pack("<IIBBBx", count, steady_pc, steady_window, steady_range_pct,
                                    steady_slope_pct))


def op_end_loop() -> bytes:
    return _op(OP_END_LOOP, b"")


def op_idle(ticks: int) -> bytes:
    return _op(OP_IDLE, struct.pack("<IQ", 0, ticks))


def op_raw(descriptor: bytes, *, result: int = ANY_RESULT, status_mask: int = 0, status_value: int = 0,
           error_mask: int = 0, error_value: int = 0, data_out: bytes = b"") -> bytes:
    body = _EXPECT.pack(result, status_mask, status_value, error_mask, error_value)
    return _op(OP_RAW, body + struct.pack("<I", len(data_out)) + descriptor + data_out)


# An NVMe engine's (engine_if.h struct fisrig_nvme_desc_head, nvme.h struct fisrig_nvme_sqe,
# program.h struct fisrig_op_nvme_raw).
OP_NVME_RAW, OP_NVME_WORKLOAD = _c.FISRIG_OP_NVME_RAW, _c.FISRIG_OP_NVME_WORKLOAD
OP_SMART, SMART_MAX_IDS = _c.FISRIG_OP_SMART, _c.FISRIG_SMART_MAX_IDS
OP_CAPTURE = _c.FISRIG_OP_CAPTURE
NVME_QUEUES, NVME_QUEUE_ENTRIES = _c.FISRIG_NVME_ENGINE_QUEUES, _c.FISRIG_NVME_ENGINE_QUEUE_ENTRIES
NVME_INFLIGHT = _c.FISRIG_VM_NVME_INFLIGHT
NVME_RAW_BYTES = _c.FISRIG_VM_NVME_RAW_BYTES
NVME_DATA_MAX = _c.FISRIG_NVME_DATA_MAX
_NVME_HEAD = struct.Struct("<BBHI9xBBBIII")
_SQE = struct.Struct("<BBHIIIQQQ6I")
_NVME_RAW = struct.Struct("<BxHHxxI")


def nvme_desc(qid: int, *, data_bytes: int = 0, data: str = "none", data_word: int = 0, flags: int = 0,
              compress_pct: int = 100, timeout_ticks: int = 0, own_prp: bool = False) -> bytes:
    """An NVMe descriptor's head (32 bytes); user_tag is the VM's."""
    return _NVME_HEAD.pack(Protocol.NVME, _c.FISRIG_NVME_DESC_OWN_PRP if own_prp else 0, qid, data_bytes,
                           DATA[data], compress_pct, flags, data_word, 0, timeout_ticks)


def sqe(opcode: int, *, flags: int = 0, nsid: int = 0, cdw2: int = 0, cdw3: int = 0, mptr: int = 0,
        prp1: int = 0, prp2: int = 0, cdw10: int = 0, cdw11: int = 0, cdw12: int = 0, cdw13: int = 0,
        cdw14: int = 0, cdw15: int = 0) -> bytes:
    """A 64-byte submission queue entry; its command identifier is the engine's."""
    return _SQE.pack(opcode, flags, 0, nsid, cdw2, cdw3, mptr, prp1, prp2, cdw10, cdw11, cdw12, cdw13, cdw14, cdw15)


def op_nvme_raw(head: bytes, entry: bytes, *, result: int = ANY_RESULT, status_mask: int = 0,
                status_value: int = 0, data_out: bytes = b"") -> bytes:
    """One NVMe command with its expectation on the result and the CQE's status field."""
    return _op(OP_NVME_RAW, _NVME_RAW.pack(result, status_mask, status_value, len(data_out)) + head + entry + data_out)


def op_workload(*, pattern: str, queue_depth: int, ncq: bool, data: str, compress_pct: int,
                read_pct: int, trim_pct: int, flush_pct: int, fua: bool, seed: int,
                zipf_theta: float, lba_start: int, lba_span: int, stop_commands: int,
                stop_bytes: int, stop_ticks: int, sizes: list[tuple[int, int]],
                seed_per_pass: bool = False, queues: int = 0) -> bytes:
    """A workload: a SATA one (queues 0), or an NVMe one over `queues` I/O queues."""
    sectors = [s for s, _ in sizes] + [0] * (8 - len(sizes))
    weights = [w for _, w in sizes] + [0] * (8 - len(sizes))
    body = _WORKLOAD.pack(PATTERN[pattern], queue_depth, int(ncq), DATA[data], compress_pct,
                          read_pct, trim_pct, flush_pct, int(fua),
                          _c.FISRIG_WORKLOAD_SEED_PER_PASS if seed_per_pass else 0, len(sizes), queues, seed,
                          int(round(zipf_theta * 1000)), lba_start, lba_span, stop_commands,
                          stop_bytes, stop_ticks, *sectors, *weights)
    return _op(OP_NVME_WORKLOAD if queues else OP_WORKLOAD, body)


def op_trim(lba_start: int, sectors: int, queued: bool) -> bytes:
    return _op(OP_TRIM, struct.pack("<B3xQQ", int(queued), lba_start, sectors))


# enum fisrig_trace_trims, by the names plans use
TRIMS = {"as_queue": _c.FISRIG_TRIMS_AS_QUEUE, "dsm": _c.FISRIG_TRIMS_DSM, "skip": _c.FISRIG_TRIMS_SKIP}
_TRACE = struct.Struct("<BBBBIBB2xI")


def trace_entries(n: int) -> np.ndarray:
    """n zeroed trace entries laid out where a TRACE op holds them, in an op's buffer of its
    own: op_trace takes such entries as they lie, where any others are copied in (the
    JEDEC pass's generated 37.7 M entries, 600 MB, were made and then copied once more)."""
    op = bytearray(_HEAD.size + _TRACE.size + n * TRACE_ENTRY.itemsize)
    return np.frombuffer(op, dtype=TRACE_ENTRY, offset=_HEAD.size + _TRACE.size)


def _op_holding(entries: np.ndarray) -> bytearray | None:
    """The op buffer `entries` came from trace_entries in, whole, or None."""
    view = entries.base if isinstance(entries, np.ndarray) else None
    op = view.obj if isinstance(view, memoryview) else None
    if not isinstance(op, bytearray) or len(op) != _HEAD.size + _TRACE.size + entries.nbytes:
        return None
    at = entries.ctypes.data - np.frombuffer(op, dtype=np.uint8).ctypes.data
    return op if at == _HEAD.size + _TRACE.size else None


def op_trace(entries: np.ndarray | int, *, queue_depth: int, ncq: bool, data: str = "stamp",
             compress_pct: int = 100, trims: str = "as_queue", entries_at: int = 0, queues: int = 0) -> bytes:
    """A trace replay: the fixed part, then the entries (not counted in the head's size);
    or, with entries_at (the program offset of an earlier trace op) and `entries` its
    number of entries, a replay of that trace's entries. `queues`: an NVMe engine's I/O
    queues (0 over SATA)."""
    n = entries if entries_at else len(entries)
    fixed = _HEAD.pack(OP_TRACE, 0, _HEAD.size + _TRACE.size) + _TRACE.pack(
        queue_depth, int(ncq), DATA[data], compress_pct, n, TRIMS[trims], queues, entries_at)
    if entries_at:
        return fixed
    # The entries go straight into the op's buffer: the JEDEC pass's 37.7 M entries (600 MB)
    # were copied three times more on their way (astype, tobytes, the concatenation).
    op = _op_holding(entries)
    if op is None:
        op = bytearray(len(fixed) + n * TRACE_ENTRY.itemsize)
        np.frombuffer(op, dtype=TRACE_ENTRY, offset=len(fixed))[:] = entries
    op[:len(fixed)] = fixed
    return op


def op_policy(on_error: str, retries: int, timeout_ticks: int = 0, link_timeout_ticks: int = 0) -> bytes:
    """What the commands of the workloads and traces that follow do on an error, their
    timeout and a lost link's (struct fisrig_op_policy)."""
    return _op(OP_POLICY, struct.pack("<BB2xII", ON_ERROR[on_error], retries, timeout_ticks, link_timeout_ticks))


def op_verify(lba_start: int, sectors: int, *, sectors_per_read: int = VERIFY_MAX_SECTORS,
              identify: bool = True, timeout_ticks: int = 0) -> bytes:
    """A verify pass over [lba_start, lba_start + sectors) (struct fisrig_op_verify)."""
    return _op(OP_VERIFY, struct.pack("<BB2xQQII", int(identify), sectors_per_read, lba_start, sectors,
                                      timeout_ticks, 0))


def op_smart(ids: list[int], timeout_ticks: int = 0) -> bytes:
    """A SMART reading of attributes `ids` (struct fisrig_op_smart)."""
    return _op(OP_SMART, struct.pack(f"<B3x{SMART_MAX_IDS}sII", len(ids), bytes(ids).ljust(SMART_MAX_IDS, b"\0"),
                                     timeout_ticks, 0))


def op_capture(command: int, trigger: int = 0, value: int = 0, windows: int = 1, before_ticks: int = 0,
               after_ticks: int = 0, payload_dwords: int = 0) -> bytes:
    """Arms (CAPTURE_ARM) or stops the analyzer's capture (struct fisrig_op_capture, capture.h)."""
    return _op(OP_CAPTURE, struct.pack("<BBBxHHII", command, trigger, value, windows, payload_dwords, before_ticks,
                                       after_ticks))


def op_drain() -> bytes:
    return _op(OP_DRAIN, b"")


HEADER_BYTES = _HEADER.size


def program_parts(ops: list[bytes], drive_sectors: int) -> list[bytes]:
    """The program as its pieces in order: the header, `ops`, the END instruction. A run
    writes them to program.bin one after another (write_program); `program` joins them."""
    end = _op(OP_END, b"")
    size = _HEADER.size + sum(map(len, ops)) + len(end)
    return [_HEADER.pack(PROGRAM_MAGIC, PROGRAM_VERSION, 0, size, 0, drive_sectors), *ops, end]


def program(ops: list[bytes], drive_sectors: int) -> bytes:
    # One join, the header in it: joining the body, then adding the header to it, copied
    # a 600 MB trace program twice.
    return b"".join(program_parts(ops, drive_sectors))


def write_program(parts: list[bytes], path) -> None:
    """program_parts' pieces written to `path`, none copied: the JEDEC test's 600 MB trace
    program, joined first, was a fresh 600 MB (0.6 s of joining, as long again of page
    faults on this VM) before the file's own writing."""
    with open(path, "wb") as f:
        for part in parts:
            f.write(part)


# struct fisrig_run_record: the completion record (its LBA as d2h_lba) plus what the command was.
RECORD_DTYPE = _dtype("fisrig_run_record", {"cpl.lba": "d2h_lba"})
# struct fisrig_current_record, what a CURRENT record's cpl holds
CURRENT_DTYPE = _dtype("fisrig_current_record", {})
RECORD_CURRENT = _c.FISRIG_RECORD_CURRENT
# struct fisrig_records_file_header, records.bin's start
RECORDS_HEADER = struct.Struct("<IIII")
assert RECORDS_HEADER.size == _c.SIZES["fisrig_records_file_header"]
