"""The analyzer's capture ring in a board's DDR (fisrig_hw/soc/capture_dram.py) in Migen
simulation, on LiteDRAM's own controller and SDRAM PHY model with the Acorn's DDR3 at 1:4 (a
128-bit controller under the ring's 512-bit write port: LiteDRAM's port converter between):
the scripted wire of test_capture_gateware.py captured with the ring in the DDR, read back
through the bridge's Wishbone port at RING_BASE 16 words an entry, holds the same entries as
the same capture in the block-RAM ring; and a window is held only once its entries are all
in the DDR."""
from migen import *
from migen.sim import run_simulation

from litedram.core import LiteDRAMCore
from litedram.modules import MT41K512M16
from litedram.phy.model import SDRAMPHYModel, get_sdram_phy_settings

from fisrig_hw import contract as _c
from fisrig_hw.engine.capture import ENTRY_BITS, CaptureWindow, WireCompressor
from fisrig_hw.soc.capture_dram import DRAMCaptureStore
from fisrig_hw.soc.rig_capture import ENTRY_WORDS, RING_BASE

from test_capture_gateware import arm_and_drive, capture, decode, wires

CLK_HZ = _c.FISRIG_TICK_HZ


class TinyDDR3(MT41K512M16):
    """The Acorn's DDR3 with 2,048 rows a bank (the fewest whose row address has A10, the
    precharge-all bit) of 8 columns (one burst), 256 KiB: Migen's simulation makes a signal of
    every word of the PHY model's memory."""
    nrows, ncols = 2048, 8


class Top(Module):
    def __init__(self, offset, fifo_depth=64):
        self.submodules.tx = WireCompressor(_c.FISRIG_CAPTURE_TO_DEVICE)
        self.submodules.rx = WireCompressor(_c.FISRIG_CAPTURE_TO_HOST)
        self.submodules.window = CaptureWindow([self.tx, self.rx], depth=64, external_store=True)
        self.now = Signal(64)
        self.sync += self.now.eq(self.now + 1)
        self.comb += [self.tx.now.eq(self.now), self.rx.now.eq(self.now), self.window.now.eq(self.now)]
        module = TinyDDR3(CLK_HZ, "1:4")
        settings = get_sdram_phy_settings(memtype="DDR3", data_width=16, clk_freq=CLK_HZ)
        self.submodules.phy = SDRAMPHYModel(module, settings, clk_freq=CLK_HZ)
        self.submodules.sdram = LiteDRAMCore(self.phy, module.geom_settings, module.timing_settings, clk_freq=CLK_HZ)
        xbar = self.sdram.crossbar
        self.submodules.store = DRAMCaptureStore(self.window, xbar.get_port(mode="write", data_width=512),
                                                 xbar.get_port(mode="both"), address_width=30,
                                                 fifo_depth=fifo_depth, dram_offset=offset)


def read_word(bus, addr):
    yield bus.adr.eq(addr >> 2)
    yield bus.cyc.eq(1)
    yield bus.stb.eq(1)
    yield bus.we.eq(0)
    yield bus.sel.eq(0xF)
    for _ in range(2000):
        yield
        if (yield bus.ack):
            break
    else:
        raise AssertionError(f"no ack at {addr:#x}")
    value = yield bus.dat_r
    yield bus.cyc.eq(0)
    yield bus.stb.eq(0)
    yield
    return value


def dram_capture(trigger, value, after, offset=128 << 10, quiet=3000):
    tx, rx, _ = wires()
    top = Top(offset)
    got = {}

    def bench():
        for _ in range(50):  # the controller's start (its DFI at hardware control from reset)
            yield
        w = top.window
        yield from arm_and_drive(top, tx, rx, trigger, value, after)
        for _ in range(quiet):
            yield
            if (yield w.done):
                break
        got["done"] = yield w.done
        got["busy_when_done"] = yield w.store_busy
        got["trigger"] = yield w.trigger_tick
        got["dropped"] = yield w.store_dropped
        got["entries"] = []
        for i in range((yield w.count)):
            v = 0
            for k in range((ENTRY_BITS + 31) // 32):
                v |= (yield from read_word(top.store.bus, RING_BASE + 4 * (ENTRY_WORDS * i + k))) << (32 * k)
            got["entries"].append(decode(v))

    run_simulation(top, bench())
    return got


def test_the_ring_in_ddr_holds_what_the_block_ram_ring_holds():
    tx, _, want = wires()
    h2d = next(w[0] for w in want if w[1] == "fis" and w[2] == 0x27)
    after = len(tx) - h2d - 1
    bram, _ = capture(_c.FISRIG_TRIGGER_COMMAND, 0xEC, after=after)
    dram = dram_capture(_c.FISRIG_TRIGGER_COMMAND, 0xEC, after=after)
    assert dram["done"] and not dram["busy_when_done"] and dram["dropped"] == 0
    key = lambda e: (e["tick"], e["kind"], e["dir"], e["type"], e["count"], tuple(e["header"]), e["flags"])
    # The same entries in the same ring order, and the trigger at the same one; the ticks
    # count from the simulation's start, 50 cycles earlier in the DDR's (its controller's start).
    shift = bram["entries"][0]["tick"] - dram["entries"][0]["tick"]
    assert shift == bram["trigger"] - dram["trigger"] == -50
    assert len(dram["entries"]) == len(bram["entries"]) > 10
    assert [key({**e, "tick": e["tick"] + shift}) for e in dram["entries"]] == [key(e) for e in bram["entries"]]
