"""The Python side of the C headers' contract (firmware/core/include/fisrig/*.h): the
generated constants and layouts are current, and every writer and reader in Python puts
each field where the C compiler's offsetof says, with its sizeof."""
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fisrig import program_format as pf
from fisrig_hw import contract as c
from fisrig_hw import descriptor

REPO = Path(__file__).resolve().parents[2]


def test_generated_contract_is_current():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_contract.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def distinct(size, seed):
    """A value of `size` bytes whose every byte is different from the other fields'."""
    return int.from_bytes(bytes((seed * 16 + i + 1) & 0xFF for i in range(size)), "little")


def field(blob, struct_name, path, base=0):
    off, size, _ = c.FIELDS[struct_name][path]
    return int.from_bytes(blob[base + off:base + off + size], "little")


DESC_ARGS = {"protocol": "fpdma_out", "command": 0x61, "features": 0x1234, "count": 0x5678,
             "device": 0x9A, "icc": 0xBC, "lba": 0x0102_0304_0506, "aux": 0x7788, "control": 0x99,
             "data": "lfsr", "compress_pct": 0x55, "flags": 0x66, "data_word": 0x1122_3344,
             "timeout_ticks": 0xAABB_CCDD}
DESC_C = {"protocol": pf.PROTO["fpdma_out"], "command": 0x61, "features": 0x1234, "count": 0x5678,
          "device": 0x9A, "icc": 0xBC, "lba": 0x0102_0304_0506, "aux": 0x7788, "control": 0x99,
          "data_source": c.FISRIG_DATA_LFSR, "compress_pct": 0x55, "flags": 0x66,
          "data_word": 0x1122_3344, "user_tag": 0, "timeout_ticks": 0xAABB_CCDD}


def test_descriptor_writers_put_every_field_at_its_offset():
    assert set(DESC_C) == set(c.FIELDS["fisrig_cmd_desc"])
    raw = pf.desc(**DESC_ARGS)
    assert len(raw) == c.SIZES["fisrig_cmd_desc"]
    assert {name: field(raw, "fisrig_cmd_desc", name) for name in DESC_C} == DESC_C
    # the gateware benches' packer and the engine's bit slices
    values = {name: distinct(size, i) for i, (name, (_, size, _)) in enumerate(c.FIELDS["fisrig_cmd_desc"].items())}
    packed = descriptor.pack_desc(**values)
    assert {name: field(packed, "fisrig_cmd_desc", name) for name in values} == values
    bits = int.from_bytes(packed, "little")
    for name, (off, size) in descriptor.DESC_FIELDS.items():
        assert (bits >> 8 * off) & ((1 << 8 * size) - 1) == values[name]
    assert descriptor.DESC_BITS == 8 * c.SIZES["fisrig_cmd_desc"]


def test_completion_reader_takes_every_field_from_its_offset():
    raw = bytearray(c.SIZES["fisrig_cpl_record"])
    values = {}
    for i, (name, (off, size, _)) in enumerate(c.FIELDS["fisrig_cpl_record"].items()):
        values[name] = distinct(size, i)
        raw[off:off + size] = values[name].to_bytes(size, "little")
    assert descriptor.unpack_cpl(bytes(raw)) == values
    assert descriptor.CPL_DWORDS * 4 == len(raw)


def test_program_header_and_every_op():
    prog = pf.program([pf.op_mark(0x1122_3344)], drive_sectors=0x0102_0304_0506_0708)
    assert field(prog, "fisrig_program_header", "magic") == c.FISRIG_PROGRAM_MAGIC
    assert field(prog, "fisrig_program_header", "version") == c.FISRIG_PROGRAM_VERSION
    assert field(prog, "fisrig_program_header", "size") == len(prog)
    assert field(prog, "fisrig_program_header", "drive_sectors") == 0x0102_0304_0506_0708
    mark = c.SIZES["fisrig_program_header"]
    assert field(prog, "fisrig_op_mark", "head.opcode", mark) == c.FISRIG_OP_MARK
    assert field(prog, "fisrig_op_mark", "head.size", mark) == c.SIZES["fisrig_op_mark"]
    assert field(prog, "fisrig_op_mark", "marker", mark) == 0x1122_3344

    cases = {
        "fisrig_op_loop": (pf.op_loop(0x0A0B_0C0D, steady_pc=0x01020304, steady_window=5, steady_range_pct=20,
                                      steady_slope_pct=10),
                           {"count": 0x0A0B_0C0D, "steady_pc": 0x01020304, "steady_window": 5,
                            "steady_range_pct": 20, "steady_slope_pct": 10}),
        "fisrig_op_idle": (pf.op_idle(0x0102_0304_0506_0708), {"ticks": 0x0102_0304_0506_0708}),
        "fisrig_op_trim": (pf.op_trim(0x0102_0304_0506, 0x0A0B_0C0D_0E0F, True),
                           {"queued": 1, "lba_start": 0x0102_0304_0506, "sectors": 0x0A0B_0C0D_0E0F}),
        "fisrig_op_verify": (pf.op_verify(0x0102_0304_0506, 0x0A0B_0C0D_0E0F, sectors_per_read=7, identify=True,
                                          timeout_ticks=0x1122_3344),
                             {"identify": 1, "sectors_per_read": 7, "lba_start": 0x0102_0304_0506,
                              "sectors": 0x0A0B_0C0D_0E0F, "timeout_ticks": 0x1122_3344, "reserved2": 0}),
        "fisrig_op_capture": (pf.op_capture(c.FISRIG_CAPTURE_ARM, 7, 0xA1, 0x0102, 0x1122_3344, 0x5566_7788, 0x0304),
                              {"command": c.FISRIG_CAPTURE_ARM, "trigger": 7, "value": 0xA1, "windows": 0x0102,
                               "before_ticks": 0x1122_3344, "after_ticks": 0x5566_7788, "payload_dwords": 0x0304,
                               "reserved": 0}),
    }
    for name, (blob, want) in cases.items():
        assert len(blob) == c.SIZES[name] == field(blob, name, "head.size"), name
        assert {k: field(blob, name, k) for k in want} == want, name
    assert len(pf.op_end_loop()) == len(pf.op_drain()) == c.SIZES["fisrig_op_head"]


def test_raw_op_carries_its_expectation_and_descriptor():
    blob = pf.op_raw(pf.desc(**DESC_ARGS), result=0x11, status_mask=0x22, status_value=0x33,
                     error_mask=0x44, error_value=0x55, data_out=b"\x01\x02\x03")
    name = "fisrig_op_raw"
    assert field(blob, name, "head.size") == len(blob) == c.SIZES[name] + 4  # 3 data bytes, padded
    assert [field(blob, name, "expect." + k) for k in
            ("result", "status_mask", "status_value", "error_mask", "error_value")] == [0x11, 0x22, 0x33, 0x44, 0x55]
    assert field(blob, name, "data_bytes") == 3
    assert {k: field(blob, name, "desc." + k) for k in DESC_C} == DESC_C
    assert blob[c.SIZES[name]:c.SIZES[name] + 3] == b"\x01\x02\x03"


def test_workload_op_puts_every_field_at_its_offset():
    sizes = [(8 + i, 100 + i) for i in range(8)]
    blob = pf.op_workload(pattern="zipf", queue_depth=31, ncq=True, data="stamp", compress_pct=41,
                          read_pct=42, trim_pct=43, flush_pct=44, fua=True, seed=0x0102_0304,
                          zipf_theta=1.234, lba_start=0x0A0B_0C0D_0E0F, lba_span=0x1A1B_1C1D_1E1F,
                          stop_commands=0x2A2B_2C2D_2E2F, stop_bytes=0x3A3B_3C3D_3E3F,
                          stop_ticks=0x4A4B_4C4D_4E4F, sizes=sizes, seed_per_pass=True)
    name = "fisrig_op_workload"
    assert len(blob) == c.SIZES[name] == field(blob, name, "head.size")
    want = {"head.opcode": c.FISRIG_OP_WORKLOAD, "pattern": c.FISRIG_PATTERN_ZIPF, "queue_depth": 31,
            "ncq": 1, "data_source": c.FISRIG_DATA_STAMP, "compress_pct": 41, "read_pct": 42,
            "trim_pct": 43, "flush_pct": 44, "fua": 1, "flags": c.FISRIG_WORKLOAD_SEED_PER_PASS, "sizes": 8,
            "seed": 0x0102_0304, "zipf_theta_milli": 1234, "lba_start": 0x0A0B_0C0D_0E0F,
            "lba_span": 0x1A1B_1C1D_1E1F, "stop_commands": 0x2A2B_2C2D_2E2F,
            "stop_bytes": 0x3A3B_3C3D_3E3F, "stop_ticks": 0x4A4B_4C4D_4E4F}
    assert {k: field(blob, name, k) for k in want} == want
    off, size, n = c.FIELDS[name]["size_sectors"]
    assert list(struct.unpack_from(f"<{n}I", blob, off)) == [s for s, _ in sizes]
    off, size, n = c.FIELDS[name]["size_weight"]
    assert list(struct.unpack_from(f"<{n}I", blob, off)) == [w for _, w in sizes]


def test_trace_op_and_its_entries():
    entries = np.zeros(2, dtype=pf.TRACE_ENTRY)
    entries["lba"], entries["sectors"], entries["op"] = [0x0102_0304_0506, 7], [0x0A0B_0C0D, 8], [2, 3]
    blob = pf.op_trace(entries, queue_depth=17, ncq=True, data="zeros", compress_pct=9)
    name = "fisrig_op_trace"
    assert field(blob, name, "head.size") == c.SIZES[name]
    want = {"head.opcode": c.FISRIG_OP_TRACE, "queue_depth": 17, "ncq": 1,
            "data_source": c.FISRIG_DATA_ZEROS, "compress_pct": 9, "entries": 2,
            "trims": c.FISRIG_TRIMS_AS_QUEUE, "entries_at": 0}
    assert {k: field(blob, name, k) for k in want} == want
    again = pf.op_trace(2, queue_depth=1, ncq=False, trims="skip", entries_at=0x1234)
    assert len(again) == c.SIZES[name]  # no entries of its own
    want = {"head.size": c.SIZES[name], "queue_depth": 1, "ncq": 0, "entries": 2,
            "trims": c.FISRIG_TRIMS_SKIP, "entries_at": 0x1234}
    assert {k: field(again, name, k) for k in want} == want
    first = c.SIZES[name]
    assert pf.TRACE_ENTRY.itemsize == c.SIZES["fisrig_trace_entry"]
    assert field(blob, "fisrig_trace_entry", "lba", first) == 0x0102_0304_0506
    assert field(blob, "fisrig_trace_entry", "sectors", first) == 0x0A0B_0C0D
    assert field(blob, "fisrig_trace_entry", "op", first) == 2


def test_trace_entries_made_in_the_ops_buffer_are_taken_as_they_lie():
    """pf.trace_entries' entries become their TRACE op without a copy, and the op is the one
    entries from anywhere else give; a slice of them is not theirs whole, and is copied."""
    mine = pf.trace_entries(3)
    mine["lba"], mine["sectors"], mine["op"] = [5, 6, 7], [1, 2, 3], [2, 3, 2]
    plain = np.zeros(3, dtype=pf.TRACE_ENTRY)
    plain[:] = mine
    op = pf.op_trace(mine, queue_depth=4, ncq=True)
    assert np.frombuffer(op, dtype=pf.TRACE_ENTRY, offset=c.SIZES["fisrig_op_trace"]).ctypes.data == mine.ctypes.data
    assert op == pf.op_trace(plain, queue_depth=4, ncq=True)
    part = pf.op_trace(mine[1:], queue_depth=4, ncq=True)
    assert part == pf.op_trace(plain[1:], queue_depth=4, ncq=True) and len(part) < len(op)


def test_record_dtype_reads_every_field_from_its_offset():
    assert pf.RECORD_DTYPE.itemsize == c.SIZES["fisrig_run_record"]
    raw = bytearray(c.SIZES["fisrig_run_record"])
    values = {}
    for i, (path, (off, size, _)) in enumerate(c.FIELDS["fisrig_run_record"].items()):
        values[path] = distinct(size, i)
        raw[off:off + size] = values[path].to_bytes(size, "little")
    rec = np.frombuffer(bytes(raw), dtype=pf.RECORD_DTYPE)[0]
    python_name = {"cpl.lba": "d2h_lba", "cpl.reserved": "reserved"}
    for path, v in values.items():
        got = rec[python_name.get(path, path.split(".")[-1])]
        assert (int.from_bytes(bytes(got), "little") if isinstance(got, np.void) else int(got)) == v, path
    assert pf.RECORDS_HEADER.size == c.SIZES["fisrig_records_file_header"]


def test_boot_image_and_record_ring(tmp_path):
    soc_build = pytest.importorskip("fisrig_hw.soc.soc_build")
    from fisrig.targets.rig import soc_run
    firmware = tmp_path / "firmware.bin"
    firmware.write_bytes(b"\x13\x00\x00\x00")
    words = soc_build.main_ram_image(firmware, b"\xAA" * 5, soc_build.RECORDS_TO_UART).split()
    image = b"".join(int(w, 16).to_bytes(4, "little") for w in words)
    boot = c.FISRIG_BOOT_PROGRAM_OFFSET
    assert field(image, "fisrig_boot_header", "program_bytes", boot) == 5
    assert field(image, "fisrig_boot_header", "records_to", boot) == c.FISRIG_RECORDS_TO_UART
    assert image[boot + c.SIZES["fisrig_boot_header"]:][:5] == b"\xAA" * 5
    ring = c.FIELDS["fisrig_record_ring"]
    assert (soc_run.RING_ENTRIES, soc_run.RING_TAIL, soc_run.RING_HEAD, soc_run.RING_RECORDS_AT) == tuple(
        ring[f][0] for f in ("entries", "tail", "head", "records_at"))


def test_the_host_places_the_record_ring_as_the_firmware_does():
    """soc_run.ring_entries against the cases tests/model/test_rig_firmware.cc holds
    fisrig_fw_ring_reset to (the program's end is 8 bytes past a 64-byte boundary when the
    program is empty); every board run also checks the firmware's ring against it
    (board_run.run refuses a ring of another size: tests/rtl/test_board_target.py)."""
    pytest.importorskip("fisrig_hw.soc.soc_build")  # soc_run imports LiteX, as above
    from fisrig.targets.rig import soc_run
    rec = soc_run.RECORD_BYTES
    assert soc_run.ring_entries(0, 300 * rec) == 256        # 299 fit once aligned
    assert soc_run.ring_entries(56, 56 + 256 * rec) == 256  # ends on the boundary: exactly 256
    assert soc_run.ring_entries(56, 56 + 256 * rec - 1) == 128
    assert soc_run.ring_entries(0, 56 + rec - 1) == 0       # no room for one
    assert soc_run.ring_entries(5000, 4000) == 0            # a program too large: no room
    # The simulated SoC's 512 KiB of main RAM: 2,048 records for a program under 100 KiB.
    room = 0x80000 - c.FISRIG_BOOT_PROGRAM_OFFSET - c.SIZES["fisrig_boot_header"]
    assert soc_run.ring_entries(100_000, room) == 2048 and soc_run.ring_entries(200_000, room) == 1024


def test_one_tick_and_one_default_timeout():
    assert pf.TICK_HZ == descriptor.TICK_HZ == c.FISRIG_TICK_HZ
    assert pf.NS_PER_TICK * pf.TICK_HZ == pytest.approx(1e9, rel=1e-15)
    assert c.FISRIG_TICK_NS_NUM * c.FISRIG_TICK_HZ == c.FISRIG_TICK_NS_DEN * 10**9
    assert descriptor.DEFAULT_TIMEOUT_TICKS == 30 * c.FISRIG_TICK_HZ  # Linux's 30 s (engine_if.h)
