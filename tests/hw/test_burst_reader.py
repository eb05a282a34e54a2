"""BurstReader (fisrig_hw.soc.burst_reader) against LiteX's SRAM with and without burst support:
every word in order whatever the consumer's back-pressure, never an ack outside a cycle, a
word a cycle from a bursting SRAM and one every two cycles from one that does not burst."""
import random

import pytest
from migen import *

from litex.soc.interconnect import wishbone

from fisrig_hw.soc.burst_reader import BurstReader

MEM_WORDS = 512


class TB(Module):
    def __init__(self, bursting):
        bus = wishbone.Interface(data_width=32, address_width=30, bursting=bursting)
        self.submodules.sram = wishbone.SRAM(4 * MEM_WORDS, bus=bus,
                                             init=[0xA5000000 + i for i in range(MEM_WORDS)])
        self.submodules.reader = BurstReader(wishbone.Interface(data_width=32, address_width=30))
        self.comb += self.reader.bus.connect(bus)


def read_runs(bursting, runs, ready_p, seed=1):
    """Reads each (first address, words) run; returns (words read, cycles from the first
    address to the last word, acks seen outside a cycle)."""
    tb = TB(bursting)
    rng = random.Random(seed)
    got, stray, t = [], [0], {}

    def addresses():
        sink = tb.reader.sink
        cycle = 0
        for first, n in runs:
            for i in range(n):
                yield sink.valid.eq(1)
                yield sink.address.eq(first + i)
                yield sink.last.eq(i == n - 1)
                yield
                cycle += 1
                while not (yield sink.ready):
                    yield
                t.setdefault("first", 0)
        yield sink.valid.eq(0)

    def consumer():
        source = tb.reader.source
        total = sum(n for _, n in runs)
        cycle = 0
        while len(got) < total:
            yield source.ready.eq(rng.random() < ready_p)
            yield
            cycle += 1
            if (yield source.valid) and (yield source.ready):
                got.append((yield source.data))
        t["last"] = cycle

    @passive
    def monitor():
        bus = tb.reader.bus
        while True:
            if (yield bus.ack) and not ((yield bus.cyc) and (yield bus.stb)):
                stray[0] += 1
            yield

    run_simulation(tb, [addresses(), consumer(), monitor()])
    return got, t["last"], stray[0]


def expected(runs):
    return [0xA5000000 + a for first, n in runs for a in range(first, first + n)]


@pytest.mark.parametrize("bursting", [True, False])
@pytest.mark.parametrize("ready_p", [1.0, 0.7, 0.2])
def test_every_word_in_order_whatever_the_back_pressure(bursting, ready_p):
    runs = [(0, 128), (300, 1), (200, 37), (7, 2), (400, 100)]
    got, _, stray = read_runs(bursting, runs, ready_p)
    assert got == expected(runs)
    assert stray == 0


def test_a_bursting_sram_gives_a_word_a_cycle():
    got, cycles, _ = read_runs(True, [(0, 128)], 1.0)
    assert got == expected([(0, 128)])
    assert cycles <= 128 + 6, cycles  # the first word's latency and the FIFO's


def test_an_sram_that_does_not_burst_gives_a_word_every_two_cycles():
    got, cycles, _ = read_runs(False, [(0, 128)], 1.0)
    assert got == expected([(0, 128)])
    assert 2 * 128 <= cycles <= 2 * 128 + 6, cycles


@pytest.mark.parametrize("seed", range(6))
def test_random_runs_and_back_pressure(seed):
    rng = random.Random(seed)
    runs = []
    for _ in range(8):
        n = rng.choice([1, 2, 3, rng.randrange(1, 200)])
        runs.append((rng.randrange(0, MEM_WORDS - n), n))
    for bursting in (True, False):
        got, _, stray = read_runs(bursting, runs, rng.choice([1.0, 0.9, 0.5, 0.1]), seed)
        assert got == expected(runs) and stray == 0, (bursting, runs)
