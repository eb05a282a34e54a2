"""The trace formats fisrig replays (fisrig.trace, docs/traces.md): each read right on small
files with known answers, auto-detected, every kind of bad line named by its number, and
blkparse's real output.

blkparse's real output: blktrace itself needs root and a block device, which CI does not
give, but blkparse (Debian's blktrace package, scripts/bootstrap.sh) reads a binary trace
from files; the test writes one event by event in the kernel's layout (struct blk_io_trace,
/usr/include/linux/blktrace_api.h) and lets blkparse print it. The hand-written blkparse
lines follow its default format (blkparse_fmt.c: "%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s ")."""
from __future__ import annotations

import shutil
import struct
import subprocess

import numpy as np
import pytest

from fisrig import traces as trace
from fisrig.traces import blkparse as trace_blkparse
from fisrig.plan import PlanError

R, W, T, F = (trace.pf.TRACE_OPS[k] for k in "RWTF")
CAP = 1 << 24  # sectors: 8 GiB


def rows(entries):
    return [(int(e["lba"]), int(e["sectors"]), int(e["op"])) for e in entries]


def write(tmp_path, text, name="t"):
    p = tmp_path / name
    p.write_text(text)
    return p


def refused(path, line, what, fmt="auto", capacity=CAP):
    with pytest.raises(PlanError) as e:
        trace.read(path, capacity, fmt)
    assert e.value.line == line, str(e.value)
    assert what in str(e.value), str(e.value)
    assert str(path) in str(e.value)
    return str(e.value)


# --- ops ----------------------------------------------------------------------------------

def test_ops_lines(tmp_path):
    p = write(tmp_path, "W,1413224,16\nT,4096,2048\nF,0,0\nr,8,8\n")
    t = trace.read(p, CAP)
    assert t.format == "ops" and t.seconds is None
    assert rows(t.entries) == [(1413224, 16, W), (4096, 2048, T), (0, 0, F), (8, 8, R)]
    # comments and blank lines: the careful reader, the same answer
    p = write(tmp_path, "# a trace\n\nW,1413224,16  # a write\nT,4096,2048\nF,0,0\nr,8,8\n", "c")
    assert rows(trace.load(p, CAP)) == [(1413224, 16, W), (4096, 2048, T), (0, 0, F), (8, 8, R)]


def test_ops_is_strict_about_sizes(tmp_path):
    refused(write(tmp_path, "W,0,8\nT,0,65537\n"), 2, "a command moves 1 to 65536")


# --- csv ----------------------------------------------------------------------------------

CSV = "time,op,lba,length\n0.000000,W,0,8\n0.000512,trim,64,2048\n0.001000,F,0,0\n0.001800,read,8,16\n"
CSV_ROWS = [(0, 8, W), (64, 2048, T), (0, 0, F), (8, 16, R)]


def test_csv_with_its_header(tmp_path):
    t = trace.read(write(tmp_path, CSV), CAP)
    assert t.format == "csv" and rows(t.entries) == CSV_ROWS
    assert t.seconds == pytest.approx(0.0018)


@pytest.mark.parametrize("text", [
    "Time, OP, LBA, Length\n0,w,0,8\n0.0005,Trim,64,2048\n0.001,flush,99,7\n0.0018,R,8,16\n",  # case, blanks; a flush's lba unused
    "op,lba,length,time\nW,0,8,0\nT,64,2048,0.0005\nF,0,0,0.001\nR,8,16,0.0018\n",           # any order
    "time,op,lba,bytes\n0,W,0,4096\n0.0005,T,0x40,1048576\n0.001,F,0,0\n0.0018,R,8,8192\n",   # bytes; 0x hex
    "# made by hand\n\n# time in seconds\ntime,op,lba,length\n0,W,0,8\n0.0005,T,64,2048\n0.001,F,0,0\n0.0018,R,8,16\n",
    "time,op,lba,length\n0,W,0,8\n# a comment after the header: the careful reader\n0.0005,T,64,2048\n\n"
    "0.001,F,0,0\n0.0018,R,8,16\n",
])
def test_csv_variants_read_the_same(tmp_path, text):
    t = trace.read(write(tmp_path, text), CAP)
    assert t.format == "csv" and rows(t.entries) == CSV_ROWS


def test_csv_command_over_65536_sectors_is_split(tmp_path):
    t = trace.read(write(tmp_path, "time,op,lba,length\n0,T,1000,200000\n1,W,0,8\n"), CAP)
    assert rows(t.entries) == [(1000, 65536, T), (66536, 65536, T), (132072, 65536, T), (197608, 3392, T), (0, 8, W)]
    assert any("over 65,536 sectors" in n and n.endswith(": 1") for n in t.notes)


def test_csv_fast_and_careful_paths_agree(tmp_path):
    rng = np.random.default_rng(2)
    n = 5000
    ops = rng.choice(list("RWTF"), n)
    lba = rng.integers(0, CAP - 256, n)
    size = rng.integers(1, 256, n)
    body = "".join(f"{i / 1000},{o},{a},{s}\n" for i, (o, a, s) in enumerate(zip(ops, lba, size)))
    fast = trace.read(write(tmp_path, "time,op,lba,length\n" + body, "fast"), CAP).entries
    careful = trace.read(write(tmp_path, "time,op,lba,length\n# careful\n" + body, "careful"), CAP).entries
    assert rows(fast) == rows(careful)
    assert len(fast) == n and (fast["op"] == np.array([trace.pf.TRACE_OPS[o] for o in ops])).all()


@pytest.mark.parametrize("body,line,what", [
    ("time,op,lba\n0,W,0\n", 1, "starts with the header time,op,lba,length"),
    ("time,op,lba,size\n0,W,0,8\n", 1, "starts with the header"),
    ("time,op,lba,length\n0,W,0,8\n0.5,W,8\n", 3, "expected 4 fields (time,op,lba,length), not 3"),
    ("time,op,lba,length\n0,W,0,8\nsoon,W,8,8\n", 3, "time 'soon' is not seconds"),
    ("time,op,lba,length\n0,W,0,8\ninf,W,8,8\n", 3, "not seconds (a finite number)"),
    ("time,op,lba,length\n1.0,W,0,8\n0.5,W,64,8\n", 3, "time 0.5 goes back (the line before was at 1.0)"),
    ("time,op,lba,length\n0,W,0,8\n0.5,X,64,8\n", 3, "op 'X' is not one of R W T F"),
    ("time,op,lba,length\n0,W,0,8\n0.5,W,6.5,8\n", 3, "lba and length are whole numbers"),
    ("time,op,lba,length\n0,W,-8,8\n", 2, "LBA -8 is negative"),
    ("time,op,lba,length\n0,W,0,0\n", 2, "a command moves at least one sector"),
    ("time,op,lba,bytes\n0,W,0,4096\n1,W,0,1000\n", 3, "1000 bytes is not a whole number of 512-byte sectors"),
    (f"time,op,lba,length\n0,W,{CAP - 4},8\n", 2, f"LBAs {CAP - 4}..{CAP + 3} run past the drive's last LBA {CAP - 1}"),
    ("time,op,lba,length\n", None, "no commands"),
])
def test_csv_bad_lines_are_named(tmp_path, body, line, what):
    refused(write(tmp_path, body), line, what, "csv")


# --- blkparse: hand-written lines ----------------------------------------------------------

BLK = """\
Input file sda.blktrace.0 added
  8,0    3        1     0.000000000   697  Q  WS 1234567 + 8 [jbd2/sda1-8]
  8,0    3        2     0.000001200   697  G  WS 1234567 + 8 [jbd2/sda1-8]
  8,0    3        3     0.000001500   697  P   N [jbd2/sda1-8]
  8,0    3        4     0.000002000   697  D  WS 1234567 + 8 [jbd2/sda1-8]
  8,0    3        5     0.000095310     0  C  WS 1234567 + 8 [0]
  8,0    3        6     0.000100000   697  Q FWS [jbd2/sda1-8]
  8,0    3        7     0.000101000   697  D  FN [jbd2/sda1-8]
  8,0    3        8     0.000180000   601  D FWS 2048 + 16 [kworker/3:1]
  8,0    3        9     0.000190000   601  D WFS 3000 + 8 [kworker/3:1]
  8,0    3       10     0.000200000   812  D   D 4096 + 2048 [fstrim]
  8,0    3       11     0.000210000   812  D  DS 100000 + 200000 [fstrim]
  8,0    3       12     0.000220000  2301  D  RM 64 + 8 [cat]
  8,0    3       13     0.000230000  2301  D  RA 72 + 16 (   12345) [cat]
  8,0    3       14     0.000240000   900  D   R 512 (85 08 0e 00 00 00 01 ..) [smartctl]
  8,0    3       15     0.000250000   900  D   N 0 [smartctl]
  8,0    3       16     0.000260000   697  D   N [jbd2/sda1-8]
  8,0    3       17     0.000270000   697  U   N [jbd2/sda1-8] 1
  8,0    3       18     0.000280000   697  X   W 300 / 308 [jbd2/sda1-8]
  8,0    1        1     0.000290000     0  m   N cfq497A  /user.slice insert_request\r
CPU3 (sda):
 Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB
 Read Dispatches:        3,       12KiB\t Write Dispatches:        5,    51036KiB

Total (sda):
 Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB

Throughput (R/W): 0KiB/s / 0KiB/s
Events (sda): 19 entries
Skips: 0 forward (0 -   0.0%)
"""
BLK_ROWS = [(1234567, 8, W), (0, 0, F), (0, 0, F), (2048, 16, W), (3000, 8, W), (4096, 2048, T),
            (100000, 65536, T), (165536, 65536, T), (231072, 65536, T), (296608, 3392, T), (64, 8, R), (72, 16, R)]


def test_blkparse_one_command_per_request_at_its_d_event(tmp_path):
    """The D events only (Q, G, C of the same request are not commands); FN a FLUSH; a
    preflush write a FLUSH then the write; FUA a plain write; a discard a TRIM, split past
    65,536 sectors; passthrough requests (with a cdb, or `N 0`: no bytes) and no-data requests,
    other events, blkparse's notes and the summary skipped."""
    p = write(tmp_path, BLK)
    assert trace.detect(p) == "blkparse"
    t = trace.read(p, CAP)
    assert t.format == "blkparse"
    assert rows(t.entries) == BLK_ROWS
    assert t.seconds == pytest.approx(0.000258)  # the first D event to the last
    notes = "\n".join(t.notes)
    for note in ("D events: requests as issued to the driver", "passthrough (SCSI/ATA pass-through) requests skipped, "
                 "no command to replay: 2", "requests without data that flush nothing skipped: 1",
                 "FUA writes replayed as plain writes (a trace entry has no FUA): 1",
                 "preflush requests replayed as a FLUSH, then the request: 1",
                 "requests over 65,536 sectors sent as consecutive commands of at most 65,536: 1"):
        assert note in notes


def test_blkparse_without_d_events_uses_q(tmp_path):
    p = write(tmp_path, "  8,0  0  1  0.5  1  Q  W 8 + 8 [dd]\n  8,0  0  2  0.6  1  Q FWS [dd]\n"
                        "  8,0  0  3  0.7  1  C  W 8 + 8 [0]\n  8,0  0  4  0.8  1  Q  R 16 + 8 [dd]\n")
    t = trace.read(p, CAP)
    assert rows(t.entries) == [(8, 8, W), (0, 0, F), (16, 8, R)]
    assert t.notes[0].startswith("Q events: requests as queued (the trace has no D events)")


def test_blkparse_of_more_blocks_than_one_reads_the_same(tmp_path, monkeypatch):
    """A trace read in many small blocks, two at a time on two threads: the same commands,
    and a bad line's number counted across the blocks."""
    lines = [f"  8,0 {i % 2:4d} {i:8d} {i // 1000}.{i % 1000:09d}  {1000 + i % 7:5d}  D {'WS' if i % 3 else ' R'} "
             f"{8 * i} + {8 + i % 5} [proc{i % 11}]" for i in range(3000)]
    p = write(tmp_path, "\n".join(lines) + "\n")
    whole = trace.read(p, CAP)
    monkeypatch.setattr(trace_blkparse, "_BLOCK", 997)
    monkeypatch.setattr(trace_blkparse, "THREADS", 2)
    assert rows(trace.read(p, CAP).entries) == rows(whole.entries)
    assert len(whole.entries) == 3000
    lines[2500] = lines[2500].replace(" + ", " + x")
    refused(write(tmp_path, "\n".join(lines) + "\n", "bad"), 2501, "range is 'sector + sectors'")
    lines[2500] = "stray"
    refused(write(tmp_path, "\n".join(lines) + "\n", "bad"), 2501, "not a blkparse event line")


def test_blkparse_sectors_past_the_drive(tmp_path):
    p = write(tmp_path, BLK)
    refused(p, 5, "LBAs 1234567..1234574 run past the drive's last LBA 999999", capacity=1_000_000)


EV = "  8,0    0        1     0.500000000   100  D   W 8 + 8 [dd]\n"


@pytest.mark.parametrize("text,line,what", [
    (EV + "hello there\n" + EV.replace("0.5", "0.6"), 2, "not a blkparse event line (blkparse's summary comes after"),
    (EV + "CPU0 (sda):\n" + EV.replace("0.5", "0.6"), 2, "not a blkparse event line"),
    (EV + "  8,0    0        2\n", 2, "this one has 3 fields"),
    (EV + "  8,0    x        2     0.600000000   100  D   W 8 + 8 [dd]\n", 2, "cpu, sequence and pid are whole numbers"),
    (EV + "  8,0    0        2     0.6x          100  D   W 8 + 8 [dd]\n", 2, "time '0.6x' is not seconds.nanoseconds"),
    (EV + "  8,0    0        2     6             100  D   W 8 + 8 [dd]\n", 2, "time '6' is not seconds.nanoseconds"),
    (EV + "  8,0    0        2     0.600000000   100  D XYZ 8 + 8 [dd]\n", 2, "RWBS 'XYZ' is not blkparse's"),
    (EV + "  8,0    0        2     0.600000000   100  D  WQ 8 + 8 [dd]\n", 2, "RWBS 'WQ' is not blkparse's"),
    (EV + "  8,0    0        2     0.600000000   100  D   W 8 + eight [dd]\n", 2, "range is 'sector + sectors'"),
    (EV + "  8,0    0        2     0.600000000   100  D   W 8 + 0 [dd]\n", 2, "0 sectors: a request moves at least one"),
    (EV + "  8,0    0        2     0.600000000   100  D   N 8 + 8 [dd]\n", 2, "says no data, yet the event has a range"),
    (EV + "  8,0    0        2     0.600000000   100  D   W [dd]\n", 2, "needs 'sector + sectors' before its [process]"),
    (EV + "  8,0    0        2     0.600000000   100  D   W 8 - 8 [dd]\n", 2, "a D event is '... RWBS sector + sectors"),
    (EV + "  8,0    0        2     0.400000000   100  D   W 8 + 8 [dd]\n", 2,
     "time 0.400000000 goes back (the D event before it, line 1, was at 0.500000000)"),
    (EV + "  8,16   0        2     0.600000000   100  D   W 8 + 8 [dd]\n", 2,
     "an event of device 8,16 in a trace of 8,0: a replay is of one device"),
    (EV + f"  8,0    0        2     0.600000000   100  D   W {CAP} + 8 [dd]\n", 2, "run past the drive's last LBA"),
    ("  8,0    0        1     0.500000000   100  C   W 8 + 8 [0]\n", None, "no commands (no D or Q events)"),
    ("CPU0 (sda):\n Reads Queued: 0\n", 1, "not a blkparse event line: 'CPU0 (sda):' (and the file holds no D or Q events)"),
])
def test_blkparse_bad_lines_are_named(tmp_path, text, line, what):
    refused(write(tmp_path, text), line, what, "blkparse")


def test_a_q_problem_does_not_stop_a_trace_replayed_at_d(tmp_path):
    """Time order and one device are asked of the events replayed: here the D events."""
    p = write(tmp_path, "  8,0  0  1  0.9  1  Q  W 8 + 8 [dd]\n  8,0  0  2  0.5  1  D  W 8 + 8 [dd]\n"
                        "  8,0  0  3  0.4  1  Q  W 8 + 8 [dd]\n  8,0  0  4  0.6  1  D  W 16 + 8 [dd]\n")
    assert rows(trace.load(p, CAP)) == [(8, 8, W), (16, 8, W)]


# --- blkparse: its real output -------------------------------------------------------------

MAGIC = 0x65617400 | 0x07  # BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION
TC = {"R": 1 << 0, "W": 1 << 1, "FLUSH": 1 << 2, "S": 1 << 3, "QUEUE": 1 << 4, "ISSUE": 1 << 6,
      "COMPLETE": 1 << 7, "PC": 1 << 9, "NOTIFY": 1 << 10, "M": 1 << 12, "DISCARD": 1 << 13, "FUA": 1 << 15}
ACT = {"Q": (1, "QUEUE"), "G": (4, "QUEUE"), "I": (12, "QUEUE"), "D": (7, "ISSUE"), "C": (8, "COMPLETE")}
SDA = 8 << 20  # dev_t 8,0 as the kernel packs it (MINORBITS 20)


def event(seq, ns, act, cats, sector=0, sectors=0, pid=697, cpu=0, dev=SDA, pdu=b"", nbytes=None) -> bytes:
    """One struct blk_io_trace (little endian, as x86 writes it) and its payload."""
    code, cat = ACT[act] if act in ACT else (act, None)
    action = code | sum(TC[c] << 16 for c in [*cats, *([cat] if cat else [])])
    size = sectors * 512 if nbytes is None else nbytes
    return struct.pack("<IIQQIIIIIHH", MAGIC, seq, ns, sector, size, action, pid, dev, cpu, 0, len(pdu)) + pdu


def process(pid, name, cpu=0) -> bytes:
    return event(0, 0, 0, ["NOTIFY"], pid=pid, cpu=cpu, pdu=name.encode() + b"\0")


def blkparse(tmp_path, per_cpu: dict[int, list[bytes]], *flags) -> str:
    for cpu, events in per_cpu.items():
        (tmp_path / f"sda.blktrace.{cpu}").write_bytes(b"".join(events))
    r = subprocess.run(["blkparse", "-i", "sda", *flags], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


needs_blkparse = pytest.mark.skipif(shutil.which("blkparse") is None,
                                    reason="blkparse not installed (Debian's blktrace; scripts/bootstrap.sh)")


@needs_blkparse
@pytest.mark.parametrize("flags", [(), ("-a", "issue")])
def test_real_blkparse_output(tmp_path, flags):
    """Two CPUs' events, merged by blkparse in time order; the same commands whether it
    prints every event or only the D ones (-a issue, as docs/traces.md suggests)."""
    cpu0 = [process(697, "jbd2/sda1-8"), process(812, "fstrim"), process(900, "smartctl"),
            event(1, 1000, "Q", ["W", "S"], 1234567, 8), event(2, 1500, "G", ["W", "S"], 1234567, 8),
            event(3, 2000, "I", ["W", "S"], 1234567, 8), event(4, 3000, "D", ["W", "S"], 1234567, 8),
            event(5, 9000, "C", ["W", "S"], 1234567, 8),
            event(6, 10000, "Q", ["W", "FLUSH", "S"]),                       # an empty preflush bio
            event(7, 11000, "D", ["FLUSH"]),                                  # its flush request: FN
            event(8, 20000, "D", ["W", "FLUSH", "S"], 2048, 16),             # preflush and data: FWS
            event(9, 30000, "D", ["W", "FUA", "S"], 3000, 8),                # FUA: WFS
            event(10, 40000, "D", ["W", "DISCARD"], 4096, 2048, pid=812),    # discard: D
            event(11, 50000, "D", ["PC"], pid=900, nbytes=512, pdu=bytes([0x85, 8, 0x0e, 0, 0, 0, 1])),
            event(12, 60000, "D", [], pid=697)]                               # no data, no flush: N
    cpu1 = [process(2301, "cat", cpu=1),
            event(1, 15000, "D", ["R", "M"], 64, 8, pid=2301, cpu=1),
            event(2, 35000, "D", ["W", "DISCARD", "S"], 100000, 200000, pid=812, cpu=1)]
    text = blkparse(tmp_path, {0: cpu0, 1: cpu1}, *flags)
    assert "  8,0    0        8     0.000019000   697  D FWS 2048 + 16 [jbd2/sda1-8]" in text  # from the first event
    assert "D  FN [jbd2/sda1-8]" in text and "D WFS 3000 + 8" in text and "CPU1 (sda):" in text
    p = write(tmp_path, text, "sda.txt")
    assert trace.detect(p) == "blkparse"
    t = trace.read(p, CAP)
    assert rows(t.entries) == [(1234567, 8, W), (0, 0, F), (64, 8, R), (0, 0, F), (2048, 16, W), (3000, 8, W),
                               (100000, 65536, T), (165536, 65536, T), (231072, 65536, T), (296608, 3392, T),
                               (4096, 2048, T)]
    assert t.seconds == pytest.approx(57e-6)
    assert any(n.startswith("passthrough") and n.endswith(": 1") for n in t.notes)
    assert any(n.startswith("requests without data that flush nothing skipped: 1") for n in t.notes)


@needs_blkparse
def test_real_blkparse_of_a_bio_device_reads_its_q_events(tmp_path):
    """device-mapper and md have no request queue: their traces have Q events and no D."""
    text = blkparse(tmp_path, {0: [process(50, "dd"), event(1, 100, "Q", ["W"], 8, 8, pid=50),
                                   event(2, 200, "Q", ["R"], 64, 16, pid=50), event(3, 300, "C", ["W"], 8, 8)]})
    t = trace.read(write(tmp_path, text, "dm.txt"), CAP)
    assert rows(t.entries) == [(8, 8, W), (64, 16, R)] and t.notes[0].startswith("Q events")


# --- auto-detection ------------------------------------------------------------------------

@pytest.mark.parametrize("text,fmt", [
    ("W,0,8\n", "ops"),
    ("# comment\n\nW , 0 , 8\n", "ops"),
    (CSV, "csv"),
    ("# hand made\ntime,op,lba,bytes\n0,W,0,4096\n", "csv"),
    (BLK, "blkparse"),
    (BLK.split("\n", 1)[1], "blkparse"),
    ("259,0    1        1     0.000000000  4242  D  WS 8 + 8 [fio]\n", "blkparse"),  # NVMe: no leading blank
])
def test_format_detected_from_the_first_line(tmp_path, text, fmt):
    p = write(tmp_path, text)
    assert trace.detect(p) == fmt
    assert trace.read(p, CAP).format == fmt


def test_unknown_format_says_what_it_saw(tmp_path):
    msg = refused(write(tmp_path, "# notes\n\nhello world\n"), 3, "cannot tell the trace's format from 'hello world'")
    assert "op,lba,sectors (ops), a header time,op,lba,length (csv) or a blkparse event line" in msg
    refused(write(tmp_path, "\n# nothing\n", "empty"), None, "no commands")
    refused(write(tmp_path, "", "zero"), None, "no commands")


def test_a_format_asked_for_is_the_one_read(tmp_path):
    p = write(tmp_path, "W,0,8\n")
    refused(p, 1, "a CSV trace starts with the header", "csv")
    refused(p, 1, "not a blkparse event line", "blkparse")
    with pytest.raises(PlanError, match="no trace format 'xml'"):
        trace.read(p, CAP, "xml")


BOM = "\ufeff"  # UTF-8's byte-order mark, as Excel's "CSV UTF-8" and Notepad save a file


@pytest.mark.parametrize("text", [
    CSV,                                                       # pyarrow's reader
    CSV.replace("\n", "\n# careful\n", 1),                     # line by line
    "# made on Windows\n" + CSV,                                # a comment first
    "W,1413224,16\nT,4096,2048\nF,0,0\nr,8,8\n",                # ops, pyarrow's reader
    "W,1413224,16\n# careful\nT,4096,2048\nF,0,0\nr,8,8\n",     # ops, line by line
    BLK,
], ids=["csv", "csv-careful", "csv-comment-first", "ops", "ops-careful", "blkparse"])
def test_a_byte_order_mark_is_not_part_of_the_trace(tmp_path, text, capsys):
    """A UTF-8 trace that starts with a byte-order mark reads as the same trace without it
    (it was refused as "cannot tell the trace's format from '\\ufefftime,op...'"), and
    `fisrig trace stats` reads it (issue 58, section 6)."""
    from cli_in_process import fisrig
    plain = trace.read(write(tmp_path, text, "plain"), CAP)
    marked = write(tmp_path, BOM + text, "marked")
    assert marked.read_bytes().startswith(b"\xef\xbb\xbf")
    got = trace.read(marked, CAP)
    assert (got.format, rows(got.entries), got.seconds) == (plain.format, rows(plain.entries), plain.seconds)
    code, out, err = fisrig(["trace", "stats", marked, "--capacity-sectors", CAP], capsys)
    assert code == 0 and not err, err
    assert out.startswith(f"trace: {marked} ({plain.format}): {len(plain.entries):,} commands")


def test_not_a_text_file(tmp_path):
    p = tmp_path / "bin"
    p.write_bytes(b"\x00\x01\x02binary")
    refused(p, 1, "not a text file (a NUL byte)")


def test_written_traces_read_back(tmp_path):
    from fisrig.traces import generate as trace_gen
    entries = trace_gen.generate("client", 1 << 22, 5000, seed=3)
    p = tmp_path / "g.trace"
    trace.write(p, entries)
    assert trace.detect(p) == "ops"
    assert (trace.load(p, 1 << 22) == entries).all()


# --- what a trace holds --------------------------------------------------------------------

def test_stats_of_a_small_trace():
    e = np.zeros(9, dtype=trace.pf.TRACE_ENTRY)
    spec = [(W, 0, 8), (W, 8, 8), (W, 800, 16), (W, 16, 8), (W, 900, 1), (T, 0, 64), (F, 0, 0), (R, 0, 8), (W, 1000, 8)]
    for i, (op, lba, n) in enumerate(spec):
        e[i] = (lba, n, op, b"\0\0\0")
    s = trace.stats(e, 10_000)
    assert (s["commands"], s["writes"], s["trims"], s["flushes"], s["reads"]) == (9, 6, 1, 1, 1)
    assert s["sequential_share"] == pytest.approx(2 / 6)  # 8 after 0..7; 16 after 8..15 (two writes back)
    assert s["write_bytes"] == 49 * 512 and s["mean_write_bytes"] == pytest.approx(49 * 512 / 6)
    assert s["aligned_4k_share"] == 1.0 and s["under_4k_share"] == pytest.approx(1 / 6)
    assert s["trimmed_bytes"] == 64 * 512 and s["trimmed_share"] == pytest.approx(64 / 10_000)
    assert s["writes_per_flush"] == 6
    assert s["write_sizes"][0] == (4096, pytest.approx(4 / 6))
    assert s["band_shares"] == [0.5, 0.5, 0.0]  # 0, 8, 16 in the first 5% (500 sectors); 800, 900, 1000 next
