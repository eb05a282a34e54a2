"""A board's SATA PHY under the rig core: LiteSATA's transceiver and clocking for a 7-series
part (A7LiteSATAPHY on a GTP, K7LiteSATAPHY on a GTX), LiteSATA's PHY control restarted by
the engine's COMRESET, and LiteSATA's datapath, which crosses from the transceiver's
sata_tx / sata_rx clocks to the core's 150 MHz sys clock. It is SimSATAPHY's composition
with the real transceiver where the simulated one was (DESIGN.md decision 1), and it gives
the rig core the same things (tap_tx, tap_rx, power, current_ma, comreset, ready).

Where the wire taps look: on the datapath's sys side, the dwords the link hands the
transmit crossing and those the receive crossing hands the link. On a board the wire is a
clock crossing away from the counter, so a tap sees a dword a few cycles after (RX) or
before (TX) the transceiver moves it; the RX crossing's latency moves by a cycle with the
drive's clock. The stamps' definition at the wire (engine_if.h) holds on a board only to
that latency, which is still to be measured on one (docs/boards.md, "Clocks").

Polarity: LiteSATA's control finds the RX polarity and tries both TX polarities while it
waits for the drive's COMINIT (ctrl.py), so boards with inverted pairs (the Acorn) need
nothing here."""

from migen import *

from litesata.phy.ctrl import LiteSATAPHYCtrl
from litesata.phy.datapath import LiteSATAPHYDatapath

from fisrig_hw.descriptor import PIN_12V, PIN_3V3, PIN_5V, PIN_P3, PINS
from fisrig_hw.phy.sim_phy import TapPort

GEN_NAMES = {1: "gen1", 2: "gen2", 3: "gen3"}
# A board's drive_power resource: which power controller pin drives each of its pads.
POWER_PADS = (("en_3v3", PIN_3V3), ("en_5v", PIN_5V), ("en_12v", PIN_12V), ("p3", PIN_P3))


def transceiver(device: str, pads, refclk, gen: int, clk_freq: float):
    """LiteSATA's transceiver and its clocking for the part: (trx, crg). At Gen3 the
    transceiver's parallel side is 32 bits, so sata_tx and sata_rx run at 150 MHz like the
    core; at Gen1/Gen2 16 bits (75 / 150 MHz), which LiteSATA's datapath widens."""
    data_width = 32 if gen == 3 else 16
    if device.startswith("xc7a"):
        from litesata.phy.a7sataphy import A7LiteSATAPHY, A7LiteSATAPHYCRG
        trx = A7LiteSATAPHY(pads, GEN_NAMES[gen], clk_freq, data_width, tx_buffer_enable=True)
        return trx, A7LiteSATAPHYCRG(refclk, pads, trx, GEN_NAMES[gen], tx_buffer_enable=True)
    if device.startswith("xc7k"):
        from litesata.phy.k7sataphy import K7LiteSATAPHY, K7LiteSATAPHYCRG
        trx = K7LiteSATAPHY(pads, GEN_NAMES[gen], clk_freq, data_width)
        return trx, K7LiteSATAPHYCRG(refclk, pads, trx, GEN_NAMES[gen])
    raise ValueError(f"{device}: fisrig's boards are Artix-7 (GTP) or Kintex-7 (GTX) parts")


class BoardSATAPHY(Module):
    """device: the FPGA part (platform.device); pads: its SATA pair pads (tx_p/n, rx_p/n);
    refclk: the transceiver's 150 MHz reference (a clock signal, or pads with p/n);
    gen: 1, 2 or 3; clk_freq: the core's sys clock (150 MHz: one stamp tick).
    power_pads: the load switch board's inputs (en_3v3, en_5v, en_12v high = rail on; p3
    high = the drive's Power Disable asserted), or None to leave them to the caller."""
    def __init__(self, device, pads, refclk, gen=3, clk_freq=150e6, power_pads=None):
        if hasattr(refclk, "p"):  # a reference clock pin pair: its dedicated input buffer
            pin_pair, refclk = refclk, Signal()
            self.specials += Instance("IBUFDS_GTE2", i_CEB=0, i_I=pin_pair.p, i_IB=pin_pair.n, o_O=refclk)
        trx, crg = transceiver(device, pads, refclk, gen, clk_freq)
        self.submodules.trx, self.submodules.crg = trx, crg
        self.comreset = Signal()
        self.submodules.ctrl = ctrl = ResetInserter()(LiteSATAPHYCtrl(trx, crg, clk_freq))
        self.comb += ctrl.reset.eq(self.comreset)
        self.submodules.datapath = datapath = LiteSATAPHYDatapath(trx, ctrl)
        self.comb += [
            ctrl.rx_idle.eq(datapath.rx_idle), ctrl.misalign.eq(datapath.misalign),
            # As LiteSATAPHY: the transceiver's init restarts with the control's RX reset.
            trx.tx_init.restart.eq(0),
            trx.rx_init.restart.eq(ctrl.rx_reset),
        ]
        self.sink, self.source = datapath.sink, datapath.source
        self.ready = Signal()
        self.comb += self.ready.eq(trx.ready & ctrl.ready)
        self.tap_tx = TapPort(datapath.sink.valid & datapath.sink.ready, datapath.sink.data,
                              datapath.sink.charisk)
        self.tap_rx = TapPort(datapath.source.valid & datapath.source.ready, datapath.source.data,
                              datapath.source.charisk)
        # The drive's rails: the power controller's pins, to a load switch board's enables.
        self.power = Signal(PINS)
        if power_pads is not None:
            self.comb += [getattr(power_pads, name).eq(self.power[pin]) for name, pin in POWER_PADS]
        # No current sense on the boards yet: the sampler reads 0 mA (docs/boards.md).
        self.current_ma = Signal(16)
