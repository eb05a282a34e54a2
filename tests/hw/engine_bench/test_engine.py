"""The raw command engine's FIS sequencing against a Python device (cocotb, Icarus)."""

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, ClockCycles, with_timeout

from interfaces import DescriptorSource, CompletionSink, RamModel, LinkPort
from device import Device, parse_h2d, DATA
import pattern_ref
from fisrig_hw.descriptor import *

PHASE_ORDER = ["ts_submit", "ts_h2d", "ts_accept", "ts_setup", "ts_data_first", "ts_data_last",
               "ts_status"]


class Bench:
    def __init__(self, dut):
        self.dut = dut
        self.clock = dut.sys_clk
        cocotb.start_soon(Clock(dut.sys_clk, 10, units="ns").start())
        self.desc = DescriptorSource(dut, self.clock)
        self.cpl = CompletionSink(dut, self.clock)
        self.ram = RamModel(dut, self.clock)
        self.link = LinkPort(dut, self.clock)
        self.device = Device(self.link, self.clock)
        dut.data_base.value = 0x40000000
        dut.link_up.value = 1
        dut.sys_rst.value = 0

    async def start(self):
        self.dut.sys_rst.value = 1
        await ClockCycles(self.clock, 3)
        self.dut.sys_rst.value = 0
        await ClockCycles(self.clock, 3)

    async def submit(self, **kw):
        await self.desc.submit(pack_desc(**kw))

    def link_falls_with_the_rails(self):
        """As the PHY does: the link goes down 50 cycles after the drive's rails go off."""
        async def follow():
            while self.dut.rails.value:
                await RisingEdge(self.clock)
            await ClockCycles(self.clock, 50)
            self.dut.link_up.value = 0
        cocotb.start_soon(follow())

    async def records(self, n, timeout_us=2000):
        out = []
        for _ in range(n):
            out.append(await with_timeout(self.cpl.record(), timeout_us, "us"))
        return out


def assert_phases_ordered(r):
    stamps = [r[p] for p in PHASE_ORDER if r[p]]
    assert stamps == sorted(stamps), r


def read_desc(lba, n, tag_user, proto=Protocol.DMA_IN, source=DATA_STAMP, word=1, pct=100, check=True):
    cmd = 0x60 if proto == Protocol.FPDMA_IN else 0x25
    kw = dict(protocol=proto, command=cmd, lba=lba, device=0x40, data_source=source,
              data_word=word, compress_pct=pct, flags=FLAG_CHECK if check else 0, user_tag=tag_user)
    if proto == Protocol.FPDMA_IN:
        kw["features"] = n
    else:
        kw["count"] = n
    return kw


def write_desc(lba, n, tag_user, proto=Protocol.DMA_OUT, source=DATA_STAMP, word=1, pct=100):
    cmd = 0x61 if proto == Protocol.FPDMA_OUT else 0x35
    kw = dict(protocol=proto, command=cmd, lba=lba, device=0x40, data_source=source,
              data_word=word, compress_pct=pct, user_tag=tag_user)
    if proto == Protocol.FPDMA_OUT:
        kw["features"] = n
    else:
        kw["count"] = n
    return kw


@cocotb.test()
async def identify_lands_in_ram(dut):
    b = Bench(dut)
    await b.start()
    await b.submit(protocol=Protocol.PIO_IN, command=0xEC, data_source=DATA_RAM, data_word=0x200,
                   user_tag=0xABC)
    (r,) = await b.records(1)
    assert r["user_tag"] == 0xABC and r["result"] == RESULT_OK and r["status"] == 0x50
    assert r["sectors"] == 1
    assert r["ts_setup"] and r["ts_data_first"] and r["ts_data_last"] and r["ts_status"]
    assert_phases_ordered(r)
    raw = b.ram.read_bytes(0x40000200, 512)
    words = [int.from_bytes(raw[2 * i:2 * i + 2], "little") for i in range(256)]
    model = b"".join(bytes([w >> 8, w & 0xFF]) for w in words[27:47])
    assert model.rstrip() == b"FISRIG BENCH DEVICE"
    assert words[100] | words[101] << 16 == b.device.sectors


@cocotb.test()
async def dma_write_then_checked_read(dut):
    b = Bench(dut)
    await b.start()
    await b.submit(**write_desc(1000, 40, 1, word=7, pct=50))
    (w,) = await b.records(1)
    assert w["result"] == RESULT_OK and w["sectors"] == 40, w
    assert_phases_ordered(w)
    for i in range(40):  # what reached the device is pattern.h's STAMP, sector for sector
        assert b.device.sector(1000 + i) == pattern_ref.sector(3, 1000 + i, 7, 50)
    h2d = b.device.commands[-1]
    assert (h2d["command"], h2d["lba"], h2d["count"]) == (0x35, 1000, 40)
    await b.submit(**read_desc(1000, 40, 2, word=7, pct=50))
    (r,) = await b.records(1)
    assert r["result"] == RESULT_OK and r["check_errors"] == 0 and r["sectors"] == 40
    assert r["data_dwords"] == 40 * 128 and w["data_dwords"] == 40 * 128
    # One sector changed on the media: the checker names exactly one.
    b.device.media[1017] = list(b.device.media[1017])
    b.device.media[1017][60] ^= 1
    await b.submit(**read_desc(1000, 40, 3, word=7, pct=50))
    (r,) = await b.records(1)
    assert r["result"] == RESULT_CHECK_FAILED and r["check_errors"] == 1, r


@cocotb.test()
async def ncq_32_tags_out_of_order(dut):
    b = Bench(dut)
    await b.start()
    b.device.ncq_batch = 32
    b.device.ncq_order = "reverse"
    for i in range(32):
        await b.submit(**write_desc(64 * i, 8, 100 + i, proto=Protocol.FPDMA_OUT, source=DATA_LFSR, word=i))
    recs = await b.records(32)
    assert sorted(r["slot"] for r in recs) == list(range(32))
    assert all(r["result"] == RESULT_OK and r["sectors"] == 8 for r in recs), recs
    # The device served tags from 31 down, four to an SDB: completions follow its order,
    # not ours (within one SDB, lowest tag first).
    assert [r["slot"] for r in recs] == [t for g in range(7, -1, -1) for t in range(4 * g, 4 * g + 4)]
    for r in recs:
        assert r["user_tag"] == 100 + r["slot"]
        assert r["ts_accept"] and r["ts_setup"]
        assert_phases_ordered(r)
    # Each H2D carried its tag in COUNT 7:3 and the sector count in FEATURES.
    for i, c in enumerate(b.device.commands):
        assert (c["command"], (c["count"] >> 3) & 31, c["features"], c["lba"]) == (0x61, i, 8, 64 * i)
    for i in range(32):
        for s in range(8):
            assert b.device.sector(64 * i + s) == pattern_ref.sector(4, 64 * i + s, i, 0)
    # Read them back queued and checked.
    for i in range(32):
        await b.submit(**read_desc(64 * i, 8, 200 + i, proto=Protocol.FPDMA_IN, source=DATA_LFSR, word=i))
    recs = await b.records(32)
    assert all(r["result"] == RESULT_OK and r["check_errors"] == 0 for r in recs), recs


@cocotb.test()
async def ncq_error_reads_log_10h(dut):
    b = Bench(dut)
    await b.start()
    b.device.ncq_batch = 8
    b.device.fail_tag_lba = 4 * 16 + 3  # inside the fifth command
    for i in range(8):
        await b.submit(**read_desc(16 * i, 16, 300 + i, proto=Protocol.FPDMA_IN, check=False))
    recs = {}
    for _ in range(8):
        r = (await b.records(1))[0]
        recs[r["user_tag"]] = r
    for i in range(4):
        assert recs[300 + i]["result"] == RESULT_OK
    failed = recs[304]
    assert (failed["result"], failed["status"], failed["error"], failed["lba"]) == \
        (RESULT_ATA_ERROR, 0x41, 0x40, 4 * 16 + 3), failed
    for i in range(5, 8):
        assert recs[300 + i]["result"] == RESULT_NCQ_ABORTED
    assert b.device.commands[-1]["command"] == 0x2F and b.device.commands[-1]["lba"] == 0x10
    # The engine goes on afterwards.
    b.device.ncq_batch = 1
    await b.submit(**read_desc(0, 1, 999, proto=Protocol.FPDMA_IN, check=False))
    (r,) = await b.records(1)
    assert r["result"] == RESULT_OK


@cocotb.test()
async def h2d_answered_r_err_is_sent_again(dut):
    b = Bench(dut)
    await b.start()
    b.link.answer_r_err = 1
    await b.submit(protocol=Protocol.NON_DATA, command=0xEA, device=0x40, user_tag=5)
    (r,) = await b.records(1)
    assert r["result"] == RESULT_OK and r["status"] == 0x50
    assert [c["command"] for c in b.device.commands] == [0xEA]


@cocotb.test()
async def hang_times_out_and_comresets(dut):
    b = Bench(dut)
    await b.start()
    b.device.ncq_batch = 3
    await b.submit(**read_desc(0, 1, 1, proto=Protocol.FPDMA_IN, check=False))
    await b.submit(**read_desc(8, 1, 2, proto=Protocol.FPDMA_IN, check=False))
    await ClockCycles(b.clock, 200)
    b.device.hang = True
    d = read_desc(16, 1, 3, check=False)
    d["timeout_ticks"] = 3000
    await b.submit(**d)
    comreset_seen = []

    async def watch():
        while True:
            await RisingEdge(b.clock)
            if dut.comreset.value:
                comreset_seen.append(int(dut.now.value))
    cocotb.start_soon(watch())
    # The two queued reads never complete: the device hung after accepting them. The
    # non-queued read waits for them (ATA forbids mixing); the first queued one to pass
    # the default timeout (100k ticks here) ends TIMEOUT, the other by the COMRESET; then the
    # non-queued read goes out, meets the hung device and times out after its own 3000.
    recs = {r["user_tag"]: r for r in await b.records(3, timeout_us=15000)}
    assert sorted(r["result"] for t, r in recs.items() if t in (1, 2)) == [RESULT_TIMEOUT, RESULT_LINK_LOST]
    assert recs[3]["result"] == RESULT_TIMEOUT
    assert recs[3]["ts_status"] - recs[3]["ts_submit"] in range(3000, 3040)
    await ClockCycles(b.clock, 5)
    assert comreset_seen, "no COMRESET after a timeout"


@cocotb.test()
async def link_down_ends_slots_and_is_recorded(dut):
    b = Bench(dut)
    await b.start()
    b.device.ncq_batch = 99  # accepts, never serves
    for i in range(5):
        await b.submit(**read_desc(i, 1, 40 + i, proto=Protocol.FPDMA_IN, check=False))
    await ClockCycles(b.clock, 400)
    dut.link_up.value = 0
    recs = await b.records(6)
    events = [r for r in recs if r["user_tag"] == USER_TAG_EVENT]
    assert len(events) == 1 and events[0]["slot"] == EV_LINK_DOWN
    cmds = [r for r in recs if r["user_tag"] != USER_TAG_EVENT]
    assert sorted(r["user_tag"] for r in cmds) == [40, 41, 42, 43, 44]
    assert all(r["result"] == RESULT_LINK_LOST for r in cmds)
    # While down, a command ends at once instead of waiting on a dead link.
    await b.submit(**read_desc(0, 1, 77, check=False))
    (r,) = await b.records(1)
    assert r["user_tag"] == 77 and r["result"] == RESULT_LINK_LOST


@cocotb.test()
async def power_cut_at_the_third_data_fis(dut):
    b = Bench(dut)
    await b.start()
    await b.submit(protocol=Protocol.POWER, command=POWER_OFF_AT_EVENT, features=EVENT_DATA, count=3,
                   timeout_ticks=100, user_tag=1)
    (armed,) = await b.records(1)
    assert armed["result"] == RESULT_OK
    await b.submit(**write_desc(0, 64, 2))  # 4 Data FISes of 16 sectors

    b.link_falls_with_the_rails()
    recs = await b.records(3)
    cut = [r for r in recs if r["user_tag"] == USER_TAG_EVENT and r["slot"] == EV_POWER_CUT]
    assert len(cut) == 1 and cut[0]["result"] == RESULT_LINK_LOST
    assert int(dut.power_cut_time.value) - int(dut.power_trigger_time.value) == 100
    assert cut[0]["ts_status"] == int(dut.power_cut_time.value)
    w = [r for r in recs if r["user_tag"] == 2][0]
    assert w["result"] == RESULT_LINK_LOST
    assert len([k for k in b.device.media]) == 32  # two Data FISes had landed before the cut


@cocotb.test()
async def staged_pins_switch_their_offsets_after_the_edge(dut):
    """POWER STAGE (engine_if.h): off, 12 V at once, 5 V 40 ticks on, 3.3 V 80, P3 asserted
    at 120; on, 3.3 V at once, 5 V 10, 12 V 30, P3 released at 0. Each pin switches its
    offset after the edge, to the tick, where the commanded rails switch with it; a pin
    staged unused stays as it is; an edge drops what the one before had still to do."""
    b = Bench(dut)
    await b.start()
    stage = {PIN_12V: (0, 30), PIN_5V: (40, 10), PIN_3V3: (80, 0), PIN_P3: (120, 0)}
    for tag, (pin, (off, on)) in enumerate(stage.items(), 1):
        await b.submit(protocol=Protocol.POWER, command=POWER_STAGE, features=pin, count=1,
                       timeout_ticks=off, data_word=on, user_tag=tag)
    assert [r["result"] for r in await b.records(4)] == [RESULT_OK] * 4
    assert int(dut.power_pins.value) == PINS_ON

    async def edges(cycles):
        """The tick each pin and the commanded rails changed at, over `cycles` cycles."""
        seen, last, rails = {}, int(dut.power_pins.value), int(dut.rails.value)
        for _ in range(cycles):
            await RisingEdge(b.clock)
            now, pins = int(dut.now.value), int(dut.power_pins.value)
            for p in range(PINS):
                if (pins ^ last) >> p & 1:
                    seen.setdefault(p, now)
            if int(dut.rails.value) != rails:
                seen.setdefault("rails", now)
                seen["rails_edges"] = seen.get("rails_edges", 0) + 1
            last, rails = pins, int(dut.rails.value)
        return seen, last

    await b.submit(protocol=Protocol.POWER, command=POWER_OFF, user_tag=10)
    seen, pins = await edges(300)
    t0 = seen["rails"]
    assert {p: seen[p] - t0 for p in stage} == {p: off for p, (off, _) in stage.items()}, seen
    assert pins == 1 << PIN_P3  # every rail off, P3 asserted
    assert [r["result"] for r in await b.records(1)] == [RESULT_OK]
    # (The bench's device sends no signature: POWER ON ends at its timeout.)
    await b.submit(protocol=Protocol.POWER, command=POWER_ON, user_tag=11, timeout_ticks=500)
    seen, pins = await edges(300)
    t0 = seen["rails"]
    assert {p: seen[p] - t0 for p in stage} == {p: on for p, (_, on) in stage.items()}, seen
    assert pins == PINS_ON
    await b.records(1)
    # 12 V left alone; an off edge that an on edge overtakes: 5 V (40) never falls.
    await b.submit(protocol=Protocol.POWER, command=POWER_STAGE, features=PIN_12V, count=0, user_tag=12)
    await b.submit(protocol=Protocol.POWER, command=POWER_OFF, user_tag=13)
    await b.submit(protocol=Protocol.POWER, command=POWER_ON, user_tag=14, timeout_ticks=500)
    seen, pins = await edges(300)
    assert seen.get("rails_edges") == 2, seen
    assert PIN_12V not in seen and PIN_5V not in seen and pins == PINS_ON, seen


@cocotb.test()
async def refused_and_ram_sourced_dsm(dut):
    b = Bench(dut)
    await b.start()
    await b.submit(protocol=12, command=0x25, user_tag=9)
    (r,) = await b.records(1)
    assert r["result"] == RESULT_REFUSED and r["user_tag"] == 9
    # A write whose data comes from RAM reaches the device byte for byte.
    payload = bytes((i * 7) & 0xFF for i in range(1024))
    b.ram.write_bytes(0x40000000 + 0x800, payload)
    await b.submit(protocol=Protocol.DMA_OUT, command=0x35, lba=50, count=2, device=0x40,
                   data_source=DATA_RAM, data_word=0x800, user_tag=10)
    (r,) = await b.records(1)
    assert r["result"] == RESULT_OK and r["sectors"] == 2
    got = b"".join(d.to_bytes(4, "little") for d in b.device.sector(50) + b.device.sector(51))
    assert got == payload


@cocotb.test()
async def a_transfer_that_failed_never_ends_ok(dut):
    """The device's success status is not the transfer's: a Data FIS that failed its CRC
    (either way) or a transfer of other than the sectors asked for gets a result of its own,
    with the status the device sent and the dwords that moved."""
    b = Bench(dut)
    await b.start()
    await b.submit(**write_desc(2000, 20, 1, word=3))
    (w,) = await b.records(1)
    assert w["result"] == RESULT_OK
    # A read whose Data FIS fails its CRC, the device then saying success.
    b.device.crc_error_next_data = True
    await b.submit(**read_desc(2000, 20, 2, word=3, check=False))
    (r,) = await b.records(1)
    assert (r["result"], r["status"]) == (RESULT_DATA_CRC, 0x50), r
    # A 4-sector read that delivered 175 dwords, then success.
    b.device.next_read_dwords = 175
    await b.submit(**read_desc(2000, 4, 3, word=3, check=False))
    (r,) = await b.records(1)
    assert (r["result"], r["status"], r["data_dwords"], r["sectors"]) == (RESULT_LENGTH, 0x50, 175, 1), r
    # ... and one that delivered a sector more than asked.
    b.device.next_read_dwords = 5 * 128
    await b.submit(**read_desc(2000, 4, 4, word=3, check=False))
    (r,) = await b.records(1)
    assert (r["result"], r["data_dwords"]) == (RESULT_LENGTH, 640), r
    # A write Data FIS the device answered R_ERR, then reported success.
    b.link.r_err_data_kept = 1
    await b.submit(**write_desc(3000, 8, 5, word=3))
    (w,) = await b.records(1)
    assert (w["result"], w["status"]) == (RESULT_DATA_CRC, 0x50), w
    # The engine goes on: a clean read is OK again, moving exactly what it asked.
    await b.submit(**read_desc(2000, 20, 6, word=3))
    (r,) = await b.records(1)
    assert (r["result"], r["data_dwords"], r["check_errors"]) == (RESULT_OK, 20 * 128, 0), r


async def cut_at_first_data_fis(dut, read):
    b = Bench(dut)
    await b.start()
    if read:
        await b.submit(**write_desc(500, 16, 1, word=2))
        (w,) = await b.records(1)
        assert w["result"] == RESULT_OK
    await b.submit(protocol=Protocol.POWER, command=POWER_OFF_AT_EVENT, features=EVENT_DATA, count=1,
                   timeout_ticks=77, user_tag=10)
    (armed,) = await b.records(1)
    assert armed["result"] == RESULT_OK
    await b.submit(**(read_desc(500, 16, 11, word=2) if read else write_desc(600, 16, 11, word=2)))

    b.link_falls_with_the_rails()
    recs = await b.records(3)
    cut = [r for r in recs if r["user_tag"] == USER_TAG_EVENT and r["slot"] == EV_POWER_CUT]
    cmd = [r for r in recs if r["user_tag"] == 11]
    assert len(cut) == 1 and len(cmd) == 1, recs
    # The trigger is the tick the FIS's first payload dword crossed the wire, which is what
    # ts_data_first means; the cut lands `delay` after it, to the tick.
    frames = [x for x in b.link.wire_ticks if tuple(x[:2]) == ("rx" if read else "tx", DATA)]
    trigger = int(dut.power_trigger_time.value)
    assert trigger == frames[-1][3], (trigger, frames[-1])
    assert cut[0]["ts_status"] == trigger + 77, (cut, trigger)
    assert cmd[0]["result"] == RESULT_LINK_LOST


@cocotb.test()
async def a_cut_after_a_write_data_fis_lands_on_its_stamp_plus_the_delay(dut):
    """A cut `delay` ticks after a Data FIS lands `delay` after the tick its first payload
    dword crossed the wire (ts_data_first's definition), to the tick. The event once fired
    where the engine queued the FIS's header, a tick before the stamp: the bench's offsets
    for rtl.power_cut_jitter_ticks were all -1."""
    await cut_at_first_data_fis(dut, read=False)


@cocotb.test()
async def a_cut_after_a_read_data_fis_lands_on_its_stamp_plus_the_delay(dut):
    await cut_at_first_data_fis(dut, read=True)


@cocotb.test()
async def stamps_are_the_wire_taps_ticks(dut):
    """Every stamp but ts_submit is where the wire tap saw the FIS's dwords (engine_if.h),
    not where the engine's state machine met them: the H2D's and the status's first dword,
    a Data FIS's first and last payload dwords, either way."""
    b = Bench(dut)
    await b.start()
    await b.submit(**write_desc(7000, 40, 1, word=9))  # 3 Data FISes out
    (w,) = await b.records(1)
    await b.submit(**read_desc(7000, 40, 2, word=9))   # 3 Data FISes in
    (r,) = await b.records(1)
    assert w["result"] == RESULT_OK and r["result"] == RESULT_OK
    wire = b.link.wire_ticks
    h2ds = [x for x in wire if tuple(x[:2]) == ("tx", 0x27)]
    tx_data = [x for x in wire if tuple(x[:2]) == ("tx", DATA)]
    rx_data = [x for x in wire if tuple(x[:2]) == ("rx", DATA)]
    d2hs = [x for x in wire if tuple(x[:2]) == ("rx", 0x34)]
    acts = [x for x in wire if tuple(x[:2]) == ("rx", 0x39)]
    assert (len(h2ds), len(tx_data), len(rx_data), len(d2hs), len(acts)) == (2, 3, 3, 2, 3), wire
    assert w["ts_h2d"] == h2ds[0][2] and r["ts_h2d"] == h2ds[1][2]
    assert w["ts_setup"] == acts[0][2]
    assert (w["ts_data_first"], w["ts_data_last"]) == (tx_data[0][3], tx_data[-1][4])
    assert (r["ts_data_first"], r["ts_data_last"]) == (rx_data[0][3], rx_data[-1][4])
    assert (w["ts_status"], r["ts_status"]) == (d2hs[0][2], d2hs[1][2])
    assert int(dut.stat_tap_mismatch.value) == 0
