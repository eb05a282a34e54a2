"""EngineRings against a Wishbone SRAM: a CPU model that fills and drains the rings, and
stand-ins for the engine's streams with random back-pressure and gaps."""
import random

from migen import *
from migen.sim import passive

from litex.soc.interconnect import wishbone

from fisrig_hw.descriptor import CPL_DWORDS, DATA_NONE, Protocol, RESULT_LINK_LOST, \
    RESULT_REFUSED, pack_desc, unpack_cpl
from fisrig_hw.soc.rings import EngineRings

MEM_WORDS = 1024  # 4 KiB at byte address 0
SENTINEL = 0xDEADBEEF


class TB(Module):
    def __init__(self, engine=None):
        if engine is not None:
            self.submodules.engine = engine
        self.submodules.rings = EngineRings(engine=engine, with_csr=False)
        self.submodules.sram = wishbone.SRAM(4 * MEM_WORDS, init=[SENTINEL] * MEM_WORDS)
        self.comb += self.rings.bus.connect(self.sram.bus)


def dwords(b):
    return [int.from_bytes(b[i:i + 4], "little") for i in range(0, len(b), 4)]


def mem_write(tb, byte_addr, words):
    for i, w in enumerate(words):
        yield tb.sram.mem[byte_addr // 4 + i].eq(w)


def mem_read(tb, byte_addr, n):
    words = []
    for i in range(n):
        words.append((yield tb.sram.mem[byte_addr // 4 + i]))
    return words


def idle(rng, p, most=6):
    """Random gaps: yields cycles while a coin with probability p says so."""
    while rng.random() < p:
        for _ in range(rng.randrange(1, most)):
            yield


def send(ep, beats, rng, gap_p):
    """A stream source: beats are dicts of payload fields (and `last`)."""
    for beat in beats:
        yield ep.valid.eq(0)
        yield from idle(rng, gap_p)
        yield ep.valid.eq(1)
        for name, v in beat.items():
            yield getattr(ep, name).eq(v)
        yield
        while not (yield ep.ready):
            yield
    yield ep.valid.eq(0)


def receive(ep, n, rng, ready_p, field, got):
    while len(got) < n:
        yield ep.ready.eq(int(rng.random() < ready_p))
        yield
        if (yield ep.valid) and (yield ep.ready):
            got.append((yield getattr(ep, field)))
    yield ep.ready.eq(0)


def configure(tb, **regs):
    r = tb.rings
    for name, v in regs.items():
        yield getattr(r, name).eq(v)
    yield
    yield r.enable.eq(1)
    yield


# ---- descriptors -----------------------------------------------------------------------------

def test_descriptors_in_order_across_wrap():
    rng = random.Random(1)
    tb = TB()
    base, entries, n = 0x100, 4, 11
    descs = [bytes(rng.randrange(256) for _ in range(32)) for _ in range(n)]
    got, heads = [], []

    def cpu():
        yield from configure(tb, sq_base=base, sq_entries=entries)
        tail = 0
        for d in descs:
            while tail - (yield tb.rings.sq_head) >= entries:
                yield
            yield from mem_write(tb, base + 32 * (tail % entries), dwords(d))
            tail += 1
            yield tb.rings.sq_tail.eq(tail)
            yield from idle(rng, 0.5, 20)
        while len(got) < n:
            yield
        yield
        heads.append(((yield tb.rings.sq_head), len(got)))

    @passive
    def head_follows():
        # sq_head counts exactly the descriptors handed over, never ahead of them.
        while True:
            yield
            heads.append(((yield tb.rings.sq_head), len(got)))

    run_simulation(tb, [cpu(), receive(tb.rings.desc, n, rng, 0.3, "raw", got), head_follows()])
    assert [g.to_bytes(32, "little") for g in got] == descs
    assert all(h in (taken, taken - 1) for h, taken in heads)
    assert heads[-1][0] == n


def test_disable_rebases_to_the_cpu_indexes():
    rng = random.Random(2)
    tb = TB()
    r = tb.rings
    d = bytes(range(32))
    got = []

    def cpu():
        # Indexes left from an earlier run: disabled, the rings are empty at them.
        yield r.sq_tail.eq(0x1002)
        yield r.cq_head.eq(77)
        yield from configure(tb, sq_base=0x200, sq_entries=8, cq_base=0x400, cq_entries=2)
        assert (yield r.sq_head) == 0x1002 and (yield r.cq_tail) == 77
        for _ in range(30):
            yield
        assert not (yield r.desc.valid)
        yield from mem_write(tb, 0x200 + 32 * 2, dwords(d))
        yield r.sq_tail.eq(0x1003)
        for _ in range(40):
            yield
        assert (yield r.sq_head) == 0x1003

    run_simulation(tb, [cpu(), receive(r.desc, 1, rng, 1.0, "raw", got)])
    assert got == [int.from_bytes(d, "little")]


# ---- completion records --------------------------------------------------------------------------

def test_records_whole_in_their_slots_and_a_full_ring_holds_the_engine():
    rng = random.Random(3)
    tb = TB()
    r = tb.rings
    base, entries, n = 0x800, 2, 7
    records = [[rng.randrange(1 << 32) for _ in range(CPL_DWORDS)] for _ in range(n)]
    consumed, first_beat_at, head_at = [], {}, []
    cycle = [0]

    def engine():
        beats = [dict(data=w, last=int(i == CPL_DWORDS - 1)) for rec in records
                 for i, w in enumerate(rec)]
        for k in range(len(beats)):
            yield from send(r.cpl, [beats[k]], rng, 0.1)
            if k % CPL_DWORDS == 0:
                first_beat_at[k // CPL_DWORDS] = cycle[0]

    def cpu():
        yield from configure(tb, cq_base=base, cq_entries=entries)
        head = 0
        while head < n:
            # A slow consumer, so that the ring fills and stays full for a while.
            for _ in range(rng.randrange(60, 120)):
                yield
            tail = yield r.cq_tail
            while head < tail:
                slot = base + 80 * (head % entries)
                consumed.append((yield from mem_read(tb, slot, CPL_DWORDS)))
                yield from mem_write(tb, slot, [SENTINEL] * CPL_DWORDS)
                head += 1
                yield r.cq_head.eq(head)
                yield
                head_at.append((cycle[0], head))

    @passive
    def tail_monitor():
        # The moment cq_tail moves, the record it counts is whole in its slot.
        last = 0
        while True:
            yield
            cycle[0] += 1
            t = yield r.cq_tail
            if t != last:
                assert t == last + 1
                slot = base + 80 * (last % entries)
                assert (yield from mem_read(tb, slot, CPL_DWORDS)) == records[last], last
                last = t

    run_simulation(tb, [engine(), cpu(), tail_monitor()])
    assert consumed == records  # none lost, none overwritten before the CPU read it
    # Record k could start only once the CPU had freed a slot for it.
    for k in range(entries, n):
        freed = min(c for c, h in head_at if h >= k - entries + 1)
        assert first_beat_at[k] >= freed, k


def test_stall_counter_counts_records_that_waited():
    rng = random.Random(4)
    tb = TB()
    r = tb.rings
    records = [[i * 100 + j for j in range(CPL_DWORDS)] for i in range(3)]
    beats = [dict(data=w, last=int(j == CPL_DWORDS - 1)) for rec in records for j, w in enumerate(rec)]
    result = {}

    def cpu():
        yield from configure(tb, cq_base=0x400, cq_entries=1)
        for _ in range(150):
            yield
        result["tail_full"] = yield r.cq_tail
        result["stalls"] = yield r.cq_stalls
        for head in (1, 2):
            yield r.cq_head.eq(head)
            for _ in range(80):
                yield
        result["tail"] = yield r.cq_tail

    run_simulation(tb, [send(r.cpl, beats, rng, 0.0), cpu()])
    assert result["tail_full"] == 1 and result["stalls"] == 1
    assert result["tail"] == 3


# ---- data DMA ------------------------------------------------------------------------------------

def test_ram_writes_and_reads_in_order():
    rng = random.Random(5)
    tb = TB()
    r = tb.rings
    # Two runs, as the engine's Data FISes make them, and one lone word.
    addrs = list(range(0x300, 0x300 + 40)) + list(range(0x80, 0x80 + 24)) + [0x3FF]
    data = [rng.randrange(1 << 32) for _ in addrs]
    got = []

    def writer():
        yield from send(r.ram_wr, [dict(address=a, data=d) for a, d in zip(addrs, data)], rng, 0.2)
        for _ in range(4):
            yield
        for a, d in zip(addrs, data):
            assert (yield tb.sram.mem[a]) == d, hex(a)
        # Read them back in a scrambled order, more than the reader's FIFO holds at once.
        order = addrs[:]
        rng.shuffle(order)
        expect[:] = [data[addrs.index(a)] for a in order]
        yield from send(r.ram_rd_addr, [dict(address=a) for a in order], rng, 0.05)

    expect = []

    def reader():
        while not expect:
            yield
        yield from receive(r.ram_rd_data, len(addrs), rng, 0.25, "data", got)

    run_simulation(tb, [writer(), reader()])
    assert got == expect


# ---- with the real engine ---------------------------------------------------------------------

def test_real_engine_completes_through_the_rings():
    """The link is down, so the engine ends a command at once (LINK_LOST) and refuses a bad
    protocol: its records land in the ring, with the user tags of the descriptors."""
    from fisrig_hw.engine import RawCommandEngine
    tb = TB(engine=RawCommandEngine())
    r = tb.rings
    descs = [pack_desc(protocol=Protocol.NON_DATA, command=0xE7, data_source=DATA_NONE, user_tag=0x1234),
             pack_desc(protocol=15, user_tag=0x5678)]
    out = {}

    def cpu():
        yield r.data_base.eq(0x40000000)
        yield from configure(tb, sq_base=0x100, sq_entries=2, cq_base=0x200, cq_entries=4)
        for i, d in enumerate(descs):
            yield from mem_write(tb, 0x100 + 32 * i, dwords(d))
        yield r.sq_tail.eq(2)
        for _ in range(300):
            yield
            if (yield r.cq_tail) == 2:
                break
        out["engine_data_base"] = yield tb.engine.data_base
        out["sq_head"] = yield r.sq_head
        out["cq_tail"] = yield r.cq_tail
        out["recs"] = []
        for i in range(2):
            words = yield from mem_read(tb, 0x200 + 80 * i, CPL_DWORDS)
            out["recs"].append(unpack_cpl(b"".join(w.to_bytes(4, "little") for w in words)))

    run_simulation(tb, [cpu()])
    assert out["engine_data_base"] == 0x40000000
    assert out["sq_head"] == 2 and out["cq_tail"] == 2
    assert [(rec["user_tag"], rec["result"]) for rec in out["recs"]] == \
        [(0x1234, RESULT_LINK_LOST), (0x5678, RESULT_REFUSED)]


def test_disable_mid_record_keeps_the_record_stream_aligned():
    """A record being written when the CPU clears enable still lands (uncounted) in the old
    ring; the next one is whole at the new ring's first slot."""
    rng = random.Random(6)
    tb = TB()
    r = tb.rings
    records = [[(k << 16) | j for j in range(CPL_DWORDS)] for k in range(2)]
    beats = [dict(data=w, last=int(j == CPL_DWORDS - 1)) for rec in records for j, w in enumerate(rec)]
    out = {}

    def cpu():
        yield from configure(tb, cq_base=0x400, cq_entries=4)
        while (yield tb.sram.mem[0x400 // 4 + 8]) == SENTINEL:
            yield
        yield r.enable.eq(0)
        yield r.cq_base.eq(0x800)
        yield r.cq_head.eq(0)
        yield
        yield r.enable.eq(1)
        for _ in range(200):
            yield
        out["old"] = yield from mem_read(tb, 0x400, CPL_DWORDS)
        out["new"] = yield from mem_read(tb, 0x800, CPL_DWORDS)
        out["tail"] = yield r.cq_tail

    run_simulation(tb, [send(r.cpl, beats, rng, 0.3), cpu()])
    assert out["old"] == records[0]
    assert out["new"] == records[1]
    assert out["tail"] == 1
