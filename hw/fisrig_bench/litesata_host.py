"""An independent host for the simulated drive: stock LiteSATA (its core: link, transport and
command layers; its crossbar; its BIST generator, checker and IDENTIFY unit) on the rig's
simulated transceiver and LiteSATA's PHY control (sim_phy.py), at SATA Gen1, 2 or 3.

None of the rig's own protocol gateware (phy/link.py's composition, the engine/ package) is
in it, so what it sees of sim/device is a second opinion: WRITE DMA EXT, READ DMA EXT and
IDENTIFY DEVICE as LiteSATA issues them, data it generates and checks itself. A Verilator
harness (sim/rtl/litesata_host_runner.cpp, built by litesata_host_sim.py) drives the BIST's
controls and connects the pins to sim/device as rig_core_runner.cpp does.

Ports (besides the pins, named as in pins.h):
  sector, count, random   the BIST's operands, shared by the generator and the checker
                          (count: sectors, 1..65535; random: LiteSATA's scrambler pattern
                          instead of its dword counter)
  write_start, read_start, identify_start   one-cycle pulses to the generator, checker, identify
  write_done, read_done, identify_done      each unit idle
  write_aborted, read_aborted               the command layer flagged the command failed
  read_errors             dwords the checker found different, for the last read
  cycles                  cycles from the last start until its unit was done again (the
                          span LiteSATABISTUnitCSR's cycles CSR measures), on the 150 MHz clock
  identify_valid/ready/data   the IDENTIFY unit's FIFO of received dwords
  d2h_status, d2h_error   the Status and Error of the last Register D2H LiteSATA's command
                          layer took (its debug registers)
  rx_fises                FISes the link handed the transport (the runner waits for the
                          drive's signature, the first, before it starts anything)
  link_ready              LiteSATA's PHY control has the link up
"""

from functools import reduce
from operator import and_, or_

from migen import *

from litex.build.sim.common import sim_special_overrides
from fisrig_hw.verilog import write_harness

from litesata.core import LiteSATACore
from litesata.frontend.arbitration import LiteSATACrossbar
from litesata.frontend.bist import LiteSATABIST

from fisrig_hw.descriptor import PINS_ON
from fisrig_hw.phy.sim_phy import SimSATAPHY


class LiteSATAHost(Module):
    """datapath: "litesata" (LiteSATA's own PHY datapath, with its clock crossings, so that
    only the transceiver is ours) or "same_clock" (the rig's, phy_datapath.py)."""
    def __init__(self, gen=3, datapath="litesata"):
        self.clock_domains.cd_sys = ClockDomain()
        self.clock_domains.cd_sata_tx = ClockDomain()
        self.clock_domains.cd_sata_rx = ClockDomain()
        for cd in [self.cd_sata_tx, self.cd_sata_rx]:  # one clock, as in RigCore
            self.comb += [cd.clk.eq(ClockSignal("sys")), cd.rst.eq(ResetSignal("sys"))]
        self.submodules.phy = phy = SimSATAPHY(datapath=datapath, gen=gen)
        self.comb += phy.pins.power.eq(PINS_ON)  # no power controller: the drive is always on
        self.submodules.core = core = LiteSATACore(phy)
        self.submodules.crossbar = crossbar = LiteSATACrossbar(core)
        self.submodules.bist = bist = LiteSATABIST(crossbar)
        self.link_ready = phy.ready

        self.sector, self.count, self.random = Signal(48), Signal(16), Signal()
        self.read_errors = bist.checker.errors
        self.identify = bist.identify.source
        units = [("write", bist.generator), ("read", bist.checker), ("identify", bist.identify)]
        for name, unit in units:
            setattr(self, name + "_start", unit.start)
            setattr(self, name + "_done", unit.done)
        for name, unit in units[:2]:
            setattr(self, name + "_aborted", unit.aborted)
            self.comb += [unit.sector.eq(self.sector), unit.count.eq(self.count),
                          unit.random.eq(self.random)]

        # As LiteSATABISTUnitCSR's counter: from the start until the unit is done again.
        self.cycles = Signal(32)
        started = Signal()
        any_start = Signal()
        busy = Signal()
        self.comb += [
            any_start.eq(reduce(or_, [u.start for _, u in units])),
            busy.eq(~reduce(and_, [u.done for _, u in units])),
        ]
        self.sync += If(any_start,
            self.cycles.eq(1), started.eq(1)
        ).Elif(started & busy,
            self.cycles.eq(self.cycles + 1)
        )

        self.d2h_status, self.d2h_error = core.command.rx.d2h_status, core.command.rx.d2h_errors

        link_out = core.link.source
        self.rx_fises = Signal(16)
        self.sync += If(link_out.valid & link_out.ready & link_out.last,
                        self.rx_fises.eq(self.rx_fises + 1))


def write_verilog(path, gen=3, datapath="litesata"):
    top = LiteSATAHost(gen=gen, datapath=datapath)
    ports = [("sys_clk", top.cd_sys.clk), ("sys_rst", top.cd_sys.rst),
             ("link_ready", top.link_ready)]
    ports += [(name, getattr(top.phy.pins, name)) for name, *_ in top.phy.pins.layout]
    for name in ["sector", "count", "random", "read_errors", "cycles", "rx_fises", "d2h_status",
                 "d2h_error"]:
        ports.append((name, getattr(top, name)))
    for unit in ["write", "read", "identify"]:
        for what in ["start", "done"] + (["aborted"] if unit != "identify" else []):
            ports.append((unit + "_" + what, getattr(top, unit + "_" + what)))
    for what in ["valid", "ready", "data"]:
        ports.append(("identify_" + what, getattr(top.identify, what)))
    for name, sig in ports:
        sig.name_override = name
    return write_harness(top, path, {sig for _, sig in ports}, "litesata_host",
                         special_overrides=sim_special_overrides)


if __name__ == "__main__":
    # litesata_host_sim.build generates in a fresh process: LiteSATA's PHY datapath names its
    # clock-crossing domains by Migen's process-wide counter (from<n>/to<n>), so a second
    # generation in one process would differ in text, and its hash would force a rebuild.
    import sys
    write_verilog(sys.argv[1], gen=int(sys.argv[2]), datapath=sys.argv[3])
