"""The rig's SATA core without a CPU: simulated transceiver, LiteSATA's PHY control, the
one-clock datapath (or LiteSATA's), LiteSATA's link layer, our transport and the raw command
engine, in the one 150 MHz domain. The SoC builds on it; a Verilator harness drives its
pins against sim/device."""

from migen import *

from litex.build.sim.common import sim_special_overrides
from litex.soc.interconnect import stream

from fisrig_hw.verilog import write_harness

from fisrig_hw.engine import RawCommandEngine
from fisrig_hw.phy.link import RigSATALink
from fisrig_hw.engine.power import PowerController, wire_engine
from fisrig_hw.phy.sim_phy import SimSATAPHY
from fisrig_hw.engine.transport import LinkTxResult
from fisrig_hw.engine.wire_tap import FrameTap, TapEvents
from fisrig_hw.engine.capture import CaptureWindow, WireCompressor
from fisrig_hw.contract import (FISRIG_CAPTURE_TO_DEVICE, FISRIG_CAPTURE_TO_HOST, FISRIG_RESULT_OK,
                                FISRIG_RESULT_TIMEOUT, FISRIG_TRIGGER_ERROR, FISRIG_TRIGGER_POWER_CUT,
                                FISRIG_TRIGGER_RESULT, FISRIG_TRIGGER_TIMEOUT)

# Ticks from the pins to what the taps see. TX drives the pins from the transceiver's input
# in the same cycle. RX: the drive's side (sim/device) gives its pins for a cycle before the
# edge that starts it (its answer "for the next" cycle), and the transceiver's RX register
# takes them at that edge, so the register holds in a cycle what is on the pins in it (the
# runner's trace prints them so: tests/rtl/test_wire_stamps.py measures both lags).
TAP_TX_LAG, TAP_RX_LAG = 0, 0


class RigCore(Module):
    """with_sys_domain: the core owns its clock (the Verilator harness drives sys_clk);
    inside an SoC the CRG's sys domain is the SATA clock. datapath, gen: see SimSATAPHY.
    phy: a board's transceiver PHY (fisrig_hw.phy.board_phy), which brings its own sata_tx
    and sata_rx domains; without one, the simulated transceiver, all in sys. capture_depth:
    the analyzer's capture ring's entries (engine/capture.py), 0 for none; capture_store:
    "bram", its own block RAM, or "external", a store the SoC adds (soc/capture_dram.py: a
    board's DDR)."""
    def __init__(self, with_sys_domain=True, datapath="same_clock", gen=3, phy=None, capture_depth=0,
                 capture_store="bram"):
        assert capture_store in ("bram", "external"), capture_store
        if with_sys_domain:
            self.clock_domains.cd_sys = ClockDomain()
        if phy is None:
            self.clock_domains.cd_sata_tx = ClockDomain()
            self.clock_domains.cd_sata_rx = ClockDomain()
            for cd in [self.cd_sata_tx, self.cd_sata_rx]:
                self.comb += [cd.clk.eq(ClockSignal("sys")), cd.rst.eq(ResetSignal("sys"))]
            phy = SimSATAPHY(datapath=datapath, gen=gen)
        self.submodules.phy = phy
        # The link starts clean whenever the PHY is not ready (a frame cut by a power loss
        # must not reach the next link-up).
        self.submodules.link = link = ResetInserter()(RigSATALink(phy))
        self.comb += link.reset.eq(~phy.ready)
        self.submodules.engine = engine = RawCommandEngine()
        self.submodules.tx_result = tx_result = LinkTxResult(link.tx)
        self.comb += [
            engine.link_up.eq(phy.ready),
            engine.tx.connect(link.sink),
            link.source.connect(engine.rx),
            engine.tx_ok.eq(tx_result.ok),
            engine.tx_err.eq(tx_result.err),
            phy.comreset.eq(engine.comreset),
        ]
        self.link_ready = phy.ready
        # The one clock: every stamp, power edge and link event is on this counter.
        self.now = Signal(64)
        self.sync += self.now.eq(self.now + 1)
        # The wire taps on the transceiver's parallel interface, beside the link layer.
        self.submodules.tap_tx = tap_tx = FrameTap(lag=TAP_TX_LAG)
        self.submodules.tap_rx = tap_rx = FrameTap(lag=TAP_RX_LAG)
        self.submodules.tap_events = tap_events = TapEvents(tap_tx, tap_rx)
        self.comb += [
            tap_tx.now.eq(self.now), tap_rx.now.eq(self.now),
            tap_tx.valid.eq(phy.tap_tx.valid), tap_tx.data.eq(phy.tap_tx.data),
            tap_tx.charisk.eq(phy.tap_tx.charisk),
            tap_rx.valid.eq(phy.tap_rx.valid), tap_rx.data.eq(phy.tap_rx.data),
            tap_rx.charisk.eq(phy.tap_rx.charisk),
            tap_tx.reset.eq(~phy.ready), tap_rx.reset.eq(~phy.ready),
            tap_tx.source.connect(engine.tap_tx), tap_rx.source.connect(engine.tap_rx),
        ]
        if capture_depth:
            self._add_capture(phy_taps=(phy.tap_tx, phy.tap_rx), ready=phy.ready, engine=engine, depth=capture_depth,
                              external_store=capture_store == "external")
        self.submodules.power = power = PowerController()
        # Rails off / on, and a cut armed, from the CPU or the bridge (RigStatus), besides
        # POWER descriptors. The CSR's arming takes the cycle if both come in the same one.
        self.power_off_csr, self.power_on_csr = Signal(), Signal()
        self.power_arm_csr = Signal()
        self.power_arm_event_csr, self.power_arm_count_csr = Signal(3), Signal(16)
        self.power_arm_delay_csr = Signal(32)
        self.comb += [
            engine.now.eq(self.now), power.now.eq(self.now),
            power.off.eq(engine.power_off | self.power_off_csr),
            power.on.eq(engine.power_on | self.power_on_csr),
            power.arm.eq(engine.power_arm | self.power_arm_csr),
            If(self.power_arm_csr,
                power.arm_event.eq(self.power_arm_event_csr),
                power.arm_count.eq(self.power_arm_count_csr),
                power.arm_delay.eq(self.power_arm_delay_csr),
            ).Else(
                power.arm_event.eq(engine.power_arm_event),
                power.arm_count.eq(engine.power_arm_count),
                power.arm_delay.eq(engine.power_arm_delay),
            ),
            *wire_engine(power, engine, tap_events),
            phy.power.eq(power.pins),
            engine.current_ma.eq(phy.current_ma),
        ]
        if capture_depth:
            self._fire_capture(engine)

    def _fire_capture(self, engine):
        """The capture's event triggers: the power cut on its tick, and a command's record by
        its result (capture.h: timeout, result, error) at the status that gave it; the earlier
        if both come in one cycle."""
        cap, writer = self.capture, engine.records
        cut = engine.power_cut & (cap.armed_trigger == FISRIG_TRIGGER_POWER_CUT)
        result = Signal()
        self.comb += Case(cap.armed_trigger, {
            FISRIG_TRIGGER_TIMEOUT: result.eq(writer.result == FISRIG_RESULT_TIMEOUT),
            FISRIG_TRIGGER_RESULT: result.eq(writer.result == cap.armed_value),
            FISRIG_TRIGGER_ERROR: result.eq(writer.result != FISRIG_RESULT_OK),
            "default": result.eq(0),
        })
        by_record = writer.result_done & result
        self.comb += [
            cap.fire.eq(cut | by_record),
            cap.fire_tick.eq(Mux(by_record & (~cut | (writer.result_tick < self.now)), writer.result_tick, self.now)),
        ]

    def _add_capture(self, phy_taps, ready, engine, depth, external_store):
        """The analyzer's capture on the pins the wire taps watch, with their lags; armed by
        the engine's CAPTURE descriptors."""
        self.submodules.capture_tx = ctx = WireCompressor(FISRIG_CAPTURE_TO_DEVICE, lag=TAP_TX_LAG)
        self.submodules.capture_rx = crx = WireCompressor(FISRIG_CAPTURE_TO_HOST, lag=TAP_RX_LAG)
        self.submodules.capture = cap = CaptureWindow([ctx, crx], depth=depth, external_store=external_store)
        for c, tap in zip((ctx, crx), phy_taps):
            self.comb += [c.now.eq(self.now), c.valid.eq(tap.valid), c.data.eq(tap.data),
                          c.charisk.eq(tap.charisk), c.reset.eq(~ready)]
        self.comb += [
            cap.now.eq(self.now), cap.arm.eq(engine.capture_arm), cap.stop.eq(engine.capture_stop),
            cap.trigger.eq(engine.capture_trigger), cap.value.eq(engine.capture_value),
            cap.before.eq(engine.capture_before), cap.after.eq(engine.capture_after),
            cap.windows.eq(engine.capture_windows), cap.payload.eq(engine.capture_payload),
            ctx.payload.eq(cap.armed_payload), crx.payload.eq(cap.armed_payload),
        ]


class HarnessPorts(Module):
    """The engine's descriptor, record and RAM streams as ports for a harness without a CPU,
    each through a buffer (as the SoC's ring and bus logic would be): what comes in is
    registered, and what goes out has its ready registered too, so no logic of the core
    hangs combinationally off a port and the simulator's pass between clock edges stays
    small."""
    def __init__(self, engine):
        self.ports = {}
        for name, inward in [("desc", True), ("cpl", False), ("ram_wr", False),
                             ("ram_rd_addr", False), ("ram_rd_data", True)]:
            inner = getattr(engine, name)
            buf = stream.Buffer(inner.description, pipe_valid=True, pipe_ready=not inward)
            self.submodules += buf
            self.comb += buf.source.connect(inner) if inward else inner.connect(buf.sink)
            self.ports[name] = buf.sink if inward else buf.source
        self.data_base = Signal(len(engine.data_base))
        self.data_bytes = Signal(len(engine.data_bytes))
        self.sync += [engine.data_base.eq(self.data_base), engine.data_bytes.eq(self.data_bytes)]


def write_verilog(path, datapath="same_clock", gen=3, capture_depth=0):
    """The rig core with HarnessPorts as rig_core.v for the Verilator runner; with
    capture_depth, the analyzer's capture too, each entry its ring takes on the ports
    capture_keeping and capture_kept (the runner prints them)."""
    core = RigCore(datapath=datapath, gen=gen, capture_depth=capture_depth)
    core.submodules.harness = harness = HarnessPorts(core.engine)
    ios = {core.cd_sys.clk, core.cd_sys.rst, core.link_ready}
    for name, sig in [("sys_clk", core.cd_sys.clk), ("sys_rst", core.cd_sys.rst),
                      ("link_ready", core.link_ready)]:
        sig.name_override = name
    for name, *_ in core.phy.pins.layout:
        sig = getattr(core.phy.pins, name)
        sig.name_override = name
        ios.add(sig)
    for prefix, ep in harness.ports.items():
        for name, *_ in [("valid",), ("ready",), ("last",)] + list(ep.payload.layout):
            sig = getattr(ep, name)
            sig.name_override = prefix + "_" + name
            ios.add(sig)
    for name in ("data_base", "data_bytes"):
        getattr(harness, name).name_override = name
        ios.add(getattr(harness, name))
    core.now.name_override = "now"  # the harness relates its trace's cycles to the stamps
    ios.add(core.now)
    core.engine.stat_tap_mismatch.name_override = "tap_mismatch"
    ios.add(core.engine.stat_tap_mismatch)
    core.engine.stat_current_lost.name_override = "current_lost"
    ios.add(core.engine.stat_current_lost)
    if capture_depth:
        for name in ("keeping", "kept"):
            sig = getattr(core.capture, name)
            sig.name_override = "capture_" + name
            ios.add(sig)
    return write_harness(core, path, ios, "rig_core", special_overrides=sim_special_overrides)
