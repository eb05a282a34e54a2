"""The gateware's capture (fisrig_hw/engine/capture.py) in Migen simulation: a scripted wire
both ways (primitive runs with CONT and its filler, ALIGNs, frames scrambled as SATA
scrambles them, HOLD inside a Data FIS, a frame cut short) compressed into capture.h's
entries, a trigger on an H2D's command, and the window read out of the ring, each entry at
the tick its first dword crossed."""
from migen import *
from migen.sim import run_simulation

from litesata.common import primitives

from fisrig_hw import contract as _c
from fisrig_hw.engine.capture import HEADER, CaptureWindow, WireCompressor, entry_layout
from fisrig_hw.lfsr_tables import crc_step_map, scrambler_words

P = primitives
SCRAMBLE = scrambler_words(2100)


def prim(name, n=1):
    return [(P[name], 1)] * n


def crc_of(dwords):
    crc = 0x52325032
    for d in dwords:
        crc = crc_step_map(crc ^ d)
    return crc


def frame(dwords):
    """SOF, the FIS's dwords and its CRC scrambled from the SOF on, EOF."""
    body = [(d ^ SCRAMBLE[k], 0) for k, d in enumerate(dwords + [crc_of(dwords)])]
    return prim("SOF") + body + prim("EOF")


H2D = [0x00EC8027, 0x40000000, 0, 1, 0]  # IDENTIFY DEVICE
D2H = [0x00504034, 0, 0, 0, 0]
DATA = [0x00000046] + list(range(1, 11))


def wires():
    """(tx, rx): what each direction carries, a dword a tick, and the entries each should give
    as (tick, kind, type, count, header-or-None, flags)."""
    tx, rx, want = [], [], []

    def run(side, name, n, junk=0):
        at = len(side)
        side += prim(name, n)
        if junk:
            side += prim("CONT") + [(0x1234 + k, 0) for k in range(junk)]
        want.append((at, "primitive", name, n + (1 + junk if junk else 0), None,
                     _c.FISRIG_CAPTURE_CONT if junk else 0, side is rx))

    def fis(side, dwords, hold_after=None, cut=False):
        sof = len(side)
        body = frame(dwords)[:-1] if cut else frame(dwords)
        if hold_after is not None:  # HOLDs inside the frame, after that many dwords past the SOF
            body = body[:1 + hold_after] + prim("HOLD", 3) + prim("ALIGN", 2) + body[1 + hold_after:]
            want.append((sof + 1 + hold_after, "primitive", "HOLD", 3, None, 0, side is rx))
        side += body
        kept = dwords + [crc_of(dwords)] if cut else dwords  # cut short: its CRC is not known as one
        want.append((sof + 1, "fis", dwords[0] & 0xFF, len(kept), kept[:HEADER], 0 if not cut else
                     _c.FISRIG_CAPTURE_CUT_SHORT, side is rx))

    run(tx, "SYNC", 6)
    run(tx, "X_RDY", 2, junk=3)
    fis(tx, H2D)
    run(tx, "WTRM", 4)
    tx += prim("ALIGN", 2)  # not listed, and the run goes on across it
    run(tx, "SYNC", 5)
    rx += prim("SYNC", 7)
    want.append((0, "primitive", "SYNC", 7, None, 0, True))
    run(rx, "R_RDY", len(tx) - 7 - 10)
    run(rx, "R_OK", 9)
    fis(tx, DATA, hold_after=4)
    run(tx, "SYNC", 3)
    fis(tx, D2H, cut=True)
    run(tx, "SYNC", 2)
    run(rx, "SYNC", len(tx) - len(rx))  # the device idles to the end
    return tx, rx, want


class Top(Module):
    def __init__(self):
        self.submodules.tx = WireCompressor(_c.FISRIG_CAPTURE_TO_DEVICE)
        self.submodules.rx = WireCompressor(_c.FISRIG_CAPTURE_TO_HOST)
        self.submodules.window = CaptureWindow([self.tx, self.rx], depth=64)
        self.now = Signal(64)
        self.sync += self.now.eq(self.now + 1)
        self.comb += [self.tx.now.eq(self.now), self.rx.now.eq(self.now), self.window.now.eq(self.now),
                      self.tx.payload.eq(self.window.armed_payload), self.rx.payload.eq(self.window.armed_payload)]


def decode(value: int) -> dict:
    out, at = {}, 0
    for name, width in entry_layout:
        out[name] = (value >> at) & ((1 << width) - 1)
        at += width
    out["header"] = [(out["header"] >> (32 * k)) & 0xFFFFFFFF for k in range(HEADER)]
    return out


def arm_and_drive(top, tx, rx, trigger, value, after, payload=0):
    """Arms top.window, then puts the wire on top.tx and top.rx a dword a cycle, and a
    primitive of no name after it: the last runs end."""
    w = top.window
    yield w.trigger.eq(trigger)
    yield w.value.eq(value)
    yield w.after.eq(after)
    yield w.payload.eq(payload)
    yield w.arm.eq(1)
    yield
    yield w.arm.eq(0)
    for (td, tk), (rd, rk) in zip(tx, rx):
        for side, d, k in ((top.tx, td, tk), (top.rx, rd, rk)):
            yield side.valid.eq(1)
            yield side.data.eq(d)
            yield side.charisk.eq(k)
        yield
    for side in (top.tx, top.rx):
        yield side.data.eq(P["SYNC"] ^ 1)
        yield side.charisk.eq(1)


def capture(trigger, value, after, quiet=300, wire=None, payload=0):
    """The ring's entries and trigger tick after the scripted wire (or `wire`'s), armed at
    tick 0 (its first dword crosses at FIRST_TICK)."""
    tx, rx, want = wire or wires()
    top = Top()
    got = {}

    def bench():
        yield from arm_and_drive(top, tx, rx, trigger, value, after, payload)
        for _ in range(quiet):
            yield
            if (yield top.window.done):
                break
        got["done"] = yield top.window.done
        got["trigger"] = yield top.window.trigger_tick
        got["entries"] = []
        for i in range((yield top.window.count)):
            yield top.window.rd_index.eq(i)
            yield
            yield
            got["entries"].append(decode((yield top.window.rd_data)))

    run_simulation(top, bench())
    return got, want


# The wire's first dword is seen at tick 2: the arming's cycle, then the one its values
# take to reach the compressors' registers.
FIRST_TICK = 2
NAMES = {v: k[len("FISRIG_PRIM_"):] for k, v in _c.__dict__.items() if k.startswith("FISRIG_PRIM_")}


def as_want(e: dict) -> tuple:
    assert e["kind"] != _c.FISRIG_CAPTURE_PAYLOAD
    fis = e["kind"] == _c.FISRIG_CAPTURE_FIS
    return (e["tick"] - FIRST_TICK, "fis" if fis else "primitive", e["type"] if fis else NAMES[e["type"]], e["count"],
            e["header"] if fis else None, e["flags"], bool(e["dir"]))


def test_the_wire_both_ways_becomes_capture_entries():
    tx, _, want = wires()
    h2d = next(w[0] for w in want if w[1] == "fis" and w[2] == 0x27)
    # A window to the wire's last dword: the primitive of no name after it is still going.
    got, want = capture(_c.FISRIG_TRIGGER_COMMAND, 0xEC, after=len(tx) - h2d - 1)
    assert got["done"]
    expect = [(t, k, ty, n, (h + [0] * HEADER)[:HEADER] if h is not None else None, f, d) for t, k, ty, n, h, f, d in want]
    assert sorted(map(as_want, got["entries"])) == sorted(expect)
    assert got["trigger"] == h2d + FIRST_TICK  # the tick its type dword crossed


def test_a_trigger_that_never_fires_leaves_the_window_open():
    got, _ = capture(_c.FISRIG_TRIGGER_COMMAND, 0x25, after=10, quiet=50)
    assert not got["done"]


def test_a_fis_type_trigger_fires_at_the_fis_s_type_dword():
    got, want = capture(_c.FISRIG_TRIGGER_FIS, 0x46, after=5)
    data = next(w[0] for w in want if w[1] == "fis" and w[2] == 0x46)
    assert got["done"] and got["trigger"] == data + FIRST_TICK


def test_an_r_err_run_fires_its_trigger():
    tx = prim("SYNC", 4) + prim("X_RDY", 2) + frame(H2D) + prim("WTRM", 6) + prim("SYNC", 4)
    rx = prim("SYNC", 6) + prim("R_RDY", 5) + prim("R_IP", 2) + prim("R_ERR", 3)
    rx += prim("SYNC", len(tx) - len(rx))
    got, _ = capture(_c.FISRIG_TRIGGER_R_ERR, 0, after=3, wire=(tx, rx, []))
    assert got["done"] and got["trigger"] == 13 + FIRST_TICK
    r_err = [e for e in got["entries"] if e["kind"] == _c.FISRIG_CAPTURE_PRIMITIVE and e["type"] == _c.FISRIG_PRIM_R_ERR]
    assert [(e["tick"], e["count"], e["dir"]) for e in r_err] == [(13 + FIRST_TICK, 3, _c.FISRIG_CAPTURE_TO_HOST)]


def test_a_held_window_waits_for_its_release_and_the_capture_goes_on():
    """Event triggers (a power cut, a record's result: `fire`) on an idle wire: the earliest
    fire of a window wins; a passed window is held, the triggers meanwhile counted in `missed`;
    the release starts the arming's next window (`late`, from the release on); an arming
    that comes while a window has fired cuts it short and waits, pending, for the release."""
    top = Top()
    w = top.window
    seen = {}

    def sample(name, *signals):
        seen[name] = {}
        for s in signals:
            seen[name][s] = yield getattr(w, s)

    def fire(tick):
        yield w.fire.eq(1)
        yield w.fire_tick.eq(tick)
        yield
        yield w.fire.eq(0)
        yield

    def until_held(limit=200):
        for _ in range(limit):
            if (yield w.holding):
                return
            yield
        raise AssertionError("the window was never held")

    def pulse(signal):
        yield signal.eq(1)
        yield
        yield signal.eq(0)
        yield

    def arm(trigger, after, windows):
        yield w.trigger.eq(trigger)
        yield w.after.eq(after)
        yield w.windows.eq(windows)
        yield from pulse(w.arm)

    def bench():
        for side in (top.tx, top.rx):  # an idle link: SYNC both ways
            yield side.valid.eq(1)
            yield side.data.eq(P["SYNC"])
            yield side.charisk.eq(1)
        yield from arm(_c.FISRIG_TRIGGER_POWER_CUT, after=5, windows=2)
        for _ in range(10):
            yield
        now = yield top.now
        yield from fire(now)
        yield from fire(now - 3)  # an earlier one, found later: it wins
        yield from sample("first", "fired", "trigger_tick", "late", "armed")
        seen["first"]["want"] = now - 3
        for side in (top.tx, top.rx):  # the SYNC runs end, so the window has settled
            yield side.data.eq(P["SYNC"] ^ 1)
        yield from until_held()
        yield from fire((yield top.now))  # while held: not looked for, counted
        yield from sample("held", "missed", "cut", "pending")
        yield from pulse(w.release)
        yield from sample("second", "armed", "fired", "done", "late", "armed_at", "missed")
        seen["second"]["released"] = (yield top.now) - 1
        yield from fire((yield top.now))
        # A new arming while this window has fired and not yet passed: cut short, and pending.
        yield from arm(_c.FISRIG_TRIGGER_RESULT, after=100, windows=1)
        yield from sample("cut", "holding", "cut", "pending", "armed_trigger")
        yield from pulse(w.release)
        yield from sample("third", "armed", "fired", "late", "pending", "armed_trigger")
        yield from pulse(w.stop)  # nothing fired: the capture just ends
        yield from sample("stopped", "armed", "holding")

    run_simulation(top, bench())
    first, held, second = seen["first"], seen["held"], seen["second"]
    assert first["fired"] and first["trigger_tick"] == first["want"] and not first["late"]
    assert held == {"missed": 1, "cut": 0, "pending": 0}
    assert second["armed"] and not second["fired"] and not second["done"] and second["late"]
    assert second["missed"] == 0 and second["armed_at"] == second["released"]
    assert seen["cut"] == {"holding": 1, "cut": 1, "pending": 1, "armed_trigger": _c.FISRIG_TRIGGER_POWER_CUT}
    assert seen["third"] == {"armed": 1, "fired": 0, "late": 1, "pending": 0, "armed_trigger": _c.FISRIG_TRIGGER_RESULT}
    assert seen["stopped"] == {"armed": 0, "holding": 0}


def test_an_arming_s_payload_dwords_come_descrambled_seven_an_entry():
    """A 40-dword Data FIS with HOLD, CONT and CONT's scrambled filler inside it (none of
    which steps the frame's scrambler) gives, past its first 7 dwords, payload entries of 7
    dwords each from dword 7 on, each at the tick its first dword crossed and holding the
    FIS's own dwords (its CRC the last of the last entry), as many as the arming asked for;
    an H2D, shorter than 7 dwords, gives none."""
    data = [0x00000046] + [0xA5000000 + k for k in range(1, 40)]
    body = frame(data)
    # HOLD, CONT and filler after the frame's 12th dword (SOF, then 11 dwords past it), a
    # HOLD ending the filler as the sender's next primitive does.
    hold = prim("HOLD", 2) + prim("CONT") + [(0x0BAD0000 + k, 0) for k in range(5)] + prim("ALIGN", 2) + prim("HOLD")
    body = body[:12] + hold + body[12:]
    tx = prim("SYNC", 4) + prim("X_RDY", 2) + frame(H2D) + prim("WTRM", 3) + prim("X_RDY", 2) + body
    tx += prim("WTRM", 4) + prim("SYNC", 3)
    rx = prim("SYNC", len(tx))
    # Where each of the Data FIS's dwords (and its CRC) crossed.
    start = len(tx) - len(body) - 7
    at = [start + 1 + k for k in range(11)] + [start + 12 + len(hold) + k for k in range(len(data) + 1 - 11)]
    dwords = data + [crc_of(data)]
    for payload, want_first in ((_c.FISRIG_CAPTURE_MAX_PAYLOAD_DWORDS, [7, 14, 21, 28, 35]), (10, [7, 14]), (0, [])):
        got, _ = capture(_c.FISRIG_TRIGGER_ARMED, 0, after=len(tx) + 10, wire=(tx, rx, []), payload=payload)
        pay = sorted((e for e in got["entries"] if e["kind"] == _c.FISRIG_CAPTURE_PAYLOAD), key=lambda e: e["count"])
        assert [e["count"] for e in pay] == want_first, payload
        kept = dwords[7:7 + payload]
        for e in pay:
            first, n = e["count"], e["type"]
            assert n == len(kept[first - 7:first - 7 + 7])
            assert e["header"][:n] == dwords[first:first + n] and e["header"][n:] == [0] * (HEADER - n)
            assert e["tick"] - FIRST_TICK == at[first] and e["dir"] == _c.FISRIG_CAPTURE_TO_DEVICE
        assert sum(e["type"] for e in pay) == len(kept)
        fis = [e for e in got["entries"] if e["kind"] == _c.FISRIG_CAPTURE_FIS]
        assert [(e["type"], e["count"]) for e in fis] == [(0x27, 5), (0x46, 40)]  # the FIS entries as before


def test_an_external_store_that_refuses_an_entry_drops_it_without_a_slot():
    """With external_store (a board's DDR: soc/capture_dram.py), an entry the store does not
    take (wr_ready low) is dropped and counted, and the next one takes its slot: the ring holds
    no stale slot; and the window is held only once the store is idle."""
    top = Module()
    top.submodules.tx = tx = WireCompressor(_c.FISRIG_CAPTURE_TO_DEVICE)
    top.submodules.rx = rx = WireCompressor(_c.FISRIG_CAPTURE_TO_HOST)
    top.submodules.w = w = CaptureWindow([tx, rx], depth=16, external_store=True)
    now = Signal(64)
    top.sync += now.eq(now + 1)
    top.comb += [tx.now.eq(now), rx.now.eq(now), w.now.eq(now)]
    seen = {"slots": []}

    def bench():
        yield w.trigger.eq(_c.FISRIG_TRIGGER_ARMED)
        yield w.after.eq(30)
        yield w.arm.eq(1)
        yield
        yield w.arm.eq(0)
        yield w.store_busy.eq(1)
        # X_RDY and SYNC runs of 2 on the tx side, 30 of them: an entry each 2 cycles, the
        # store refusing one cycle in three.
        for k in range(60):
            yield tx.valid.eq(1)
            yield tx.charisk.eq(1)
            yield tx.data.eq(P["SYNC"] if (k // 2) % 2 else P["X_RDY"])
            yield w.wr_ready.eq(k % 3 != 2)
            yield
            if (yield w.keeping):
                seen["slots"].append((yield w.wr_index))
        yield tx.data.eq(P["SYNC"] ^ 1)  # the last run ends
        for _ in range(20):
            if (yield w.keeping):
                seen["slots"].append((yield w.wr_index))
            yield w.wr_ready.eq(1)
            yield
        seen["held_while_busy"] = yield w.holding
        yield w.store_busy.eq(0)
        for _ in range(5):
            yield
        seen["held"] = yield w.holding
        for name in ("store_dropped", "written", "count"):
            seen[name] = yield getattr(w, name)

    run_simulation(top, bench())
    n = seen["written"]
    assert seen["store_dropped"] >= 3 and n + seen["store_dropped"] == 30, seen
    assert n > 16 and seen["slots"] == [k % 16 for k in range(n)]  # slot after slot, wrapping
    assert seen["count"] == 16 and not seen["held_while_busy"] and seen["held"]
