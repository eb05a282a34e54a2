"""The NVMe rig core for the Verilator runner (sim/rtl/nvme_core_runner.cpp): the root port on
a simulated PHY, the CPU's BAR window (LitePCIe's Wishbone slave), the NVMe queue engine and
the rig's tick counter, each side a port of nvme_core.v: the PHY's beats both ways (the
simulated controller's C API on the other side), the config requester, the window's
Wishbone bus, the engine's descriptors and records. The runner plays the firmware: it
enumerates through the config requester with pcie_enum.c, brings the controller up through
the window and then feeds the engine as the rings do."""
from migen import ClockDomain, If, Module, Signal

from litepcie.frontend.wishbone import LitePCIeWishboneSlave

from fisrig_hw.nvme.engine import NvmeQueueEngine
from fisrig_hw.pcie.root_port import RootPort
from fisrig_hw.pcie.sim_phy import SimPCIePHY
from fisrig_hw.verilog import write_harness

# A beat time a cycle: Gen2 x4's 64-bit stream runs at 250 MHz, 4 ns; the rig's tick is 150 MHz.
TICKS_PER_CYCLE = (3, 5)
# The engine's data window: the VM's NVMe path keeps a DSM range list for each of its 256
# commands in flight there (fisrig/vm.h, FISRIG_VM_DSM_BYTES each).
WINDOW_BYTES = 128 << 10


class TickCounter(Module):
    """The rig's 150 MHz tick counted on the link's clock: num ticks every den cycles, spread
    (a tick at most a cycle while num <= den), so a stamp is its cycle's tick."""

    def __init__(self, num: int, den: int):
        assert 0 < num <= den
        self.now = Signal(64)
        acc = Signal(max=2 * den)
        self.sync += If(acc + num >= den, acc.eq(acc + num - den), self.now.eq(self.now + 1)).Else(acc.eq(acc + num))


class NvmeCore(Module):
    def __init__(self, slots: int, queues: int, io_entries: int):
        self.clock_domains.cd_sys = ClockDomain()
        self.submodules.phy = SimPCIePHY()
        self.submodules.rp = RootPort(self.phy, cfg_timeout_cycles=1 << 14)
        self.submodules.mmio = LitePCIeWishboneSlave(self.rp)
        self.submodules.ticks = TickCounter(*TICKS_PER_CYCLE)
        self.now = self.ticks.now
        self.submodules.engine = NvmeQueueEngine(self.rp, self.now, slots=slots, queues=queues, io_entries=io_entries,
                                                 window_bytes=WINDOW_BYTES)


def write_verilog(path, slots: int = 64, queues: int = 4, io_entries: int = 64):
    core = NvmeCore(slots, queues, io_entries)
    e, cfg, wb = core.engine, core.rp.config, core.mmio.wishbone
    named = {
        "sys_clk": core.cd_sys.clk, "sys_rst": core.cd_sys.rst, "now": core.now,
        # The PHY: tx the rig's beats to the controller, rx the controller's to the rig.
        "tx_valid": core.phy.sink.valid, "tx_ready": core.phy.sink.ready, "tx_first": core.phy.sink.first,
        "tx_last": core.phy.sink.last, "tx_be": core.phy.sink.be, "tx_dat": core.phy.sink.dat,
        "rx_valid": core.phy.source.valid, "rx_ready": core.phy.source.ready, "rx_first": core.phy.source.first,
        "rx_last": core.phy.source.last, "rx_be": core.phy.source.be, "rx_dat": core.phy.source.dat,
        # The config requester.
        "cfg_start": cfg.start, "cfg_we": cfg.we, "cfg_bus": cfg.bus, "cfg_device": cfg.device,
        "cfg_function": cfg.function, "cfg_register": cfg.register, "cfg_wdata": cfg.wdata, "cfg_done": cfg.done,
        "cfg_rdata": cfg.rdata, "cfg_status": cfg.status,
        # The CPU's window into the device's memory space (word addresses).
        "wb_cyc": wb.cyc, "wb_stb": wb.stb, "wb_we": wb.we, "wb_adr": wb.adr, "wb_sel": wb.sel,
        "wb_dat_w": wb.dat_w, "wb_dat_r": wb.dat_r, "wb_ack": wb.ack,
        # The engine.
        "desc_valid": e.desc.valid, "desc_ready": e.desc.ready, "desc_raw": e.desc.raw,
        "cpl_valid": e.cpl.valid, "cpl_ready": e.cpl.ready, "cpl_data": e.cpl.data, "cpl_last": e.cpl.last,
        # The data window (its dwords), for the runner's `ram` and `dump`.
        "win_adr": e.window.cpu_adr, "win_we": e.window.cpu_we, "win_dat_w": e.window.cpu_dat_w,
        "win_dat_r": e.window.cpu_dat_r,
        "bar0": e.bar0, "controller_ready": e.controller_ready, "up": e.up, "rails_on": e.rails_on,
        "stray_cqes": e.stat_stray_cqes, "stray_msix": e.stat_stray_msix, "timeouts": e.stat_timeouts,
        "stray_writes": e.writes.stray, "tap_mismatch": e.writes.tap_mismatch, "cqe_packed": e.writes.cqe_packed,
        "refused_reads": e.completer.refused, "tap_overflow": e.tap.overflow, "discarded": core.rp.discarded,
    }
    for name, sig in named.items():
        sig.name_override = name
    return write_harness(core, path, set(named.values()), "nvme_core")
