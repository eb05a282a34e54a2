"""The gateware's capture held to an independent monitor of the same pins, entry for entry and
tick for tick: the rig core in Verilator with the analyzer's capture (the runner prints each
entry its ring takes, as it takes it) runs the known command sequence of test_wire_stamps.py
(PIO in, DMA out and in, queued writes and reads) armed from the start; a decoder written
here from the SATA rules reads the traced pins cycle by cycle and must find the same
entries: every FIS (its type, its first dword's tick, its dwords to the CRC, every one of
them descrambled: the capture is armed for the payload too) and every run of a primitive (its name, its first tick, its count, CONT
and the scrambled filler after it counted in and the run flagged so, ALIGNs neither counted
nor ending it), both ways."""
import pytest

from fisrig_bench import rig_sim
from fisrig_hw import contract as _c
from fisrig_hw.descriptor import Protocol
from fisrig_hw.engine.capture import HEADER, entry_layout
from fisrig_hw.lfsr_tables import scrambler_words

from test_rig_core import link_up, run_rig
from test_wire_stamps import TRACE_FROM, TRACE_TO, known_commands

SCRAMBLE = scrambler_words(2100)
PRIMS = {m[len("FISRIG_PRIM_"):]: getattr(_c, m) for m in _c.ENUMS["fisrig_primitive"]}


@pytest.fixture(scope="module")
def run():
    exe = rig_sim.build(capture=True)
    s = link_up(rig_sim.Script(max_cycles=3_000_000))
    # Armed at once, its window past the run's end, each FIS whole: every entry from here on
    # is printed.
    s.desc(Protocol.CAPTURE, _c.FISRIG_CAPTURE_ARM, user_tag=9, features=_c.FISRIG_TRIGGER_ARMED,
           timeout_ticks=0xFFFF_FFFF, lba=1 | _c.FISRIG_CAPTURE_MAX_PAYLOAD_DWORDS << 16).wait()
    r = run_rig(exe, known_commands(s).trace(TRACE_FROM, TRACE_TO))
    assert r.returncode == 0, r.output[-3000:]
    return r


def captured(r):
    """The runner's entries as (direction, kind, type, tick, count, header or None, flags (a
    frame's cut short, a run's CONT), the FIS's dwords past the header or None): each payload entry put with the FIS of its
    direction that began last before it, and cut at the FIS's end (its CRC left out)."""
    out, payload = [], []
    for v in r.capture:
        e, at = {}, 0
        for name, width in entry_layout:
            e[name] = (v >> at) & ((1 << width) - 1)
            at += width
        words = tuple((e["header"] >> (32 * k)) & 0xFFFFFFFF for k in range(HEADER))
        if e["kind"] == _c.FISRIG_CAPTURE_PAYLOAD:
            payload.append((e["dir"], e["tick"], e["count"], words[:e["type"]]))
            continue
        fis = e["kind"] == _c.FISRIG_CAPTURE_FIS
        out.append([e["dir"], e["kind"], e["type"], e["tick"], e["count"], words if fis else None,
                    e["flags"], [] if fis else None])
    for d in (_c.FISRIG_CAPTURE_TO_DEVICE, _c.FISRIG_CAPTURE_TO_HOST):
        frames = sorted((e for e in out if e[0] == d and e[1] == _c.FISRIG_CAPTURE_FIS), key=lambda e: e[3])
        for p_dir, tick, first, words in sorted(payload):
            if p_dir == d:
                owner = [f for f in frames if f[3] < tick][-1]
                assert first == HEADER + len(owner[7])  # in order, none missing
                owner[7] += words
    for e in out:
        if e[7] is not None:
            e[7] = tuple(e[7][:max(0, e[4] - HEADER)])
    return [tuple(e) for e in out]


def monitor(r, column, direction):
    """What crossed the pins one way, by the SATA rules, from the runner's trace: a frame from
    SOF to EOF (HOLD/HOLDA and ALIGN inside it paused, CONT's filler skipped; the last dword
    the CRC; dword k scrambled with the scrambler's k-th word from SOF), and runs of one
    primitive (CONT and its filler continue a run; ALIGN is neither in it nor ends it)."""
    offset = r.stats["now_minus_cycle"]
    out = []
    run = None        # [code, first tick, count, CONT seen] of the primitive run going on
    frame = None      # [first tick, dwords] of the frame going on
    in_cont = False

    def end_run():
        nonlocal run
        if run:
            out.append((direction, _c.FISRIG_CAPTURE_PRIMITIVE, run[0], run[1], run[2], None,
                        _c.FISRIG_CAPTURE_CONT if run[3] else 0, None))
        run = None

    def end_frame(eof):
        nonlocal frame
        tick, dwords = frame
        if dwords:
            n = len(dwords) - 1 if eof else len(dwords)
            header = tuple(dwords[k] ^ SCRAMBLE[k] if k < n else 0 for k in range(HEADER))
            rest = tuple(dwords[k] ^ SCRAMBLE[k] for k in range(HEADER, n))
            out.append((direction, _c.FISRIG_CAPTURE_FIS, header[0] & 0xFF, tick, n, header,
                        0 if eof else _c.FISRIG_CAPTURE_CUT_SHORT, rest))
        frame = None

    for line in r.wire:
        w, tick = line[column], line[0] + offset
        if w in ("idle", "ALIGN"):
            continue
        if not all(c in "0123456789abcdef" for c in w):  # a primitive (one capture.h has no name for: 0)
            if w == "CONT":
                in_cont = True
                if run:
                    run[2] += 1
                    run[3] = True
                continue
            in_cont = False
            if frame is not None and w not in ("HOLD", "HOLDA") and w != "SOF":
                end_frame(w == "EOF")
            if w in ("SOF", "EOF"):
                end_run()
                if w == "SOF":
                    frame = [None, []]
                continue
            if run and run[0] == PRIMS.get(w, 0):
                run[2] += 1
            else:
                end_run()
                run = [PRIMS.get(w, 0), tick, 1, False]
            continue
        if in_cont:  # CONT's filler: the run goes on
            if run:
                run[2] += 1
            continue
        end_run()
        if frame is not None:
            if frame[0] is None:
                frame[0] = tick
            frame[1].append(int(w, 16))
    return out


def test_the_capture_is_what_an_independent_monitor_of_the_pins_sees(run):
    got = captured(run)
    seen = monitor(run, 1, _c.FISRIG_CAPTURE_TO_DEVICE) + monitor(run, 2, _c.FISRIG_CAPTURE_TO_HOST)
    # What began in the traced span once the capture was armed (a run or frame going on at
    # either began before it), less its last 20,000 ticks (one the trace cut at its end).
    armed = run.commands[9]["ts_submit"]
    lo = max(TRACE_FROM + run.stats["now_minus_cycle"], armed) + 1
    hi = TRACE_TO + run.stats["now_minus_cycle"] - 20_000
    assert lo < run.commands[10]["ts_h2d"]
    inside = lambda entries: sorted(e for e in entries if lo <= e[3] <= hi)
    got, seen = inside(got), inside(seen)
    fis = [e for e in seen if e[1] == _c.FISRIG_CAPTURE_FIS]
    types = {e[2] for e in fis}
    assert {_c.FISRIG_FIS_REG_H2D, _c.FISRIG_FIS_REG_D2H, _c.FISRIG_FIS_PIO_SETUP, _c.FISRIG_FIS_DMA_ACTIVATE,
            _c.FISRIG_FIS_DMA_SETUP, _c.FISRIG_FIS_DATA, _c.FISRIG_FIS_SET_DEVICE_BITS} <= types, types
    prims = {e[2] for e in seen if e[1] == _c.FISRIG_CAPTURE_PRIMITIVE}
    assert {PRIMS[n] for n in ("SYNC", "X_RDY", "R_RDY", "R_IP", "R_OK", "WTRM")} <= prims, prims
    assert len(fis) >= 40 and len(seen) > 300
    # Data FISes of 2 KiB and more among them, kept whole.
    assert sum(len(e[7]) >= 512 for e in fis) >= 4
    assert any(e[6] == _c.FISRIG_CAPTURE_CONT for e in seen)  # runs CONT shortened among them
    assert got == seen, (len(got), len(seen))
    assert run.stats["tap_mismatch"] == 0
