"""The transceiver replaced for simulation, and LiteSATA's real PHY control and datapath on
it: the cut sits exactly where a GTX wrapper would be (DESIGN.md decision 1).

SimSATATransceiver gives LiteSATA's PHY control what a 7-series GTX wrapper gives it (32-bit
data and charisk per cycle, COMINIT/COMWAKE strobes and their acknowledgements, idle,
ready) and exports pins that the simulated drive (sim/device, pins.h) answers on. The
pins' names match struct fisrig_pins_in / fisrig_pins_out.

Speed: the core runs on the 150 MHz SATA clock whatever the link's speed, so that every
timestamp is the same 6.67 ns tick. At Gen2 (Gen1) a dword crosses the pins every 2nd (4th)
cycle, as a transceiver's 16-bit (slower) interface through a width converter delivers
them; the other cycles are gaps (`dword_gap`) in which neither side moves a dword."""

from migen import *

from litex.soc.interconnect import stream

from litesata.common import phy_description
from litesata.phy.ctrl import LiteSATAPHYCtrl
from litesata.phy.datapath import LiteSATAPHYDatapath

from fisrig_hw.descriptor import PINS
from fisrig_hw.phy.phy_datapath import SameClockSATAPHYDatapath

class TapPort:
    """One direction's dwords for a wire tap: valid in the cycles a dword crosses."""
    def __init__(self, valid, data, charisk):
        self.valid, self.data, self.charisk = valid, data, charisk


COMRESET_CYCLES = 384  # six bursts and gaps: 2.56 us at 150 MHz (pins.h)
COMWAKE_CYCLES = 192
CYCLES_PER_DWORD = {1: 4, 2: 2, 3: 1}  # by SATA generation, at 150 MHz


class SimSATATransceiver(Module):
    def __init__(self, gen=3):
        self.data_width = 32
        self.gen = gen
        self.sink = stream.Endpoint(phy_description(32))    # from the datapath (to the drive)
        self.source = stream.Endpoint(phy_description(32))  # to the datapath (from the drive)
        # What LiteSATA's PHY control drives and reads.
        self.tx_idle = Signal()
        self.tx_cominit_stb = Signal()
        self.tx_cominit_ack = Signal()
        self.tx_comwake_stb = Signal()
        self.tx_comwake_ack = Signal()
        self.rx_cominit_stb = Signal()
        self.rx_comwake_stb = Signal()
        self.rx_idle = Signal()
        self.rx_cdrhold = Signal()
        self.rx_polarity = Signal()
        self.tx_polarity = Signal()
        self.ready = Signal(reset=1)
        # Pins to the simulated drive.
        self.pins = pins = Record([
            ("tx_data", 32), ("tx_charisk", 4), ("tx_idle", 1), ("tx_cominit", 1),
            ("tx_comwake", 1), ("power", PINS), ("dword_gap", 1),
            ("rx_data", 32), ("rx_charisk", 4), ("rx_idle", 1), ("rx_cominit", 1),
            ("rx_comwake", 1),
            # Not the transceiver's: the drive's current as the rig's current sense reads it
            # (pins.h), beside the power pins it concerns.
            ("current_ma", 16),
        ])

        # # #

        dword = Signal(reset=1)
        period = CYCLES_PER_DWORD[gen]
        if period > 1:
            phase = Signal(max=period)
            self.sync += phase.eq(Mux(phase == period - 1, 0, phase + 1))
            self.comb += dword.eq(phase == 0)
        # What the drive drives is taken into a register, as a transceiver's RX output is:
        # nothing in the core hangs combinationally off the pins, so a simulator's pass
        # over the logic between clock edges is near empty.
        rx = Record([(name, len(getattr(pins, name))) for name in
                     ("rx_data", "rx_charisk", "rx_idle", "rx_cominit", "rx_comwake", "current_ma")])
        rx.rx_idle.reset = 1
        self.sync += [getattr(rx, name).eq(getattr(pins, name)) for name, _ in rx.layout]
        self.current_ma = rx.current_ma  # the current pins, registered with the RX pins
        self.comb += [
            pins.dword_gap.eq(~dword),
            self.sink.ready.eq(dword),
            pins.tx_data.eq(self.sink.data),
            pins.tx_charisk.eq(self.sink.charisk),
            pins.tx_idle.eq(self.tx_idle),
            self.source.valid.eq(dword & ~rx.rx_idle),
            self.source.data.eq(rx.rx_data),
            self.source.charisk.eq(rx.rx_charisk),
            self.rx_idle.eq(rx.rx_idle),
            self.rx_cominit_stb.eq(rx.rx_cominit),
            self.rx_comwake_stb.eq(rx.rx_comwake),
        ]
        # An OOB request becomes one pulse on the pin at its start and an acknowledgement
        # when the bursts would have gone out, as a GTX's TXCOMFINISH.
        for stb, ack, pin, cycles in [(self.tx_cominit_stb, self.tx_cominit_ack, pins.tx_cominit, COMRESET_CYCLES),
                                      (self.tx_comwake_stb, self.tx_comwake_ack, pins.tx_comwake, COMWAKE_CYCLES)]:
            count = Signal(max=cycles + 1)
            busy = Signal()
            self.comb += [pin.eq(stb & ~busy & ~ack), ack.eq(busy & (count == 0))]
            self.sync += If(pin,
                busy.eq(1), count.eq(cycles - 1)
            ).Elif(busy & (count != 0),
                count.eq(count - 1)
            ).Elif(~stb,
                busy.eq(0)
            )


class SimSATAPHY(Module):
    """LiteSATAPHY's composition (control + datapath) on the simulated transceiver, in one
    clock domain: sys = sata_tx = sata_rx = the 150 MHz SATA clock. `comreset` restarts the
    PHY control, which then sends COMRESET as it does at power-up. datapath: "same_clock"
    (phy_datapath.py, the rig's) or "litesata" (LiteSATA's, with its clock crossings).
    gen: the link's speed, 1, 2 or 3 (SimSATATransceiver)."""
    def __init__(self, clk_freq=150e6, datapath="same_clock", gen=3):
        self.submodules.trx = trx = SimSATATransceiver(gen)
        self.crg = crg = Module()
        crg.tx_reset = Signal()
        crg.rx_reset = Signal()
        self.comreset = Signal()
        self.submodules.ctrl = ctrl = ResetInserter()(LiteSATAPHYCtrl(trx, crg, clk_freq))
        self.comb += ctrl.reset.eq(self.comreset)
        datapath_class = {"same_clock": SameClockSATAPHYDatapath, "litesata": LiteSATAPHYDatapath}[datapath]
        self.submodules.datapath = datapath = datapath_class(trx, ctrl)
        self.comb += [ctrl.rx_idle.eq(datapath.rx_idle), ctrl.misalign.eq(datapath.misalign)]
        self.sink, self.source = datapath.sink, datapath.source
        self.ready = Signal()
        self.comb += self.ready.eq(trx.ready & ctrl.ready)
        self.pins = trx.pins
        # What the rig core takes from a PHY, as fisrig_hw.phy.board_phy gives it too: the
        # dwords crossing the transceiver's parallel interface in the core's clock (the
        # wire taps), the drive's power pins and its sensed current.
        self.tap_tx = TapPort(trx.sink.ready, trx.sink.data, trx.sink.charisk)
        self.tap_rx = TapPort(trx.source.valid, trx.source.data, trx.source.charisk)
        self.power = trx.pins.power
        self.current_ma = trx.current_ma
