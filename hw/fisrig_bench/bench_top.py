"""The engine with its counter and power controller, every interface a port: the top the
cocotb benches drive (tests/hw), and a Verilog view of the engine alone."""

from migen import *
from fisrig_hw.verilog import write_harness  # LiteX's convert: one always block per signal, Icarus-safe

from fisrig_hw.engine import RawCommandEngine
from fisrig_hw.engine.power import PowerController, wire_engine
from fisrig_hw.engine.wire_tap import FrameTap, TapEvents


class EngineBenchTop(Module):
    def __init__(self, default_timeout=None):
        self.clock_domains.cd_sys = ClockDomain()
        kw = {} if default_timeout is None else {"default_timeout": default_timeout}
        self.submodules.engine = engine = RawCommandEngine(**kw)
        self.submodules.power = power = PowerController()
        self.now = Signal(64)
        self.link_up = Signal()
        self.rails = Signal()
        self.sync += self.now.eq(self.now + 1)
        wire_ports = {}
        # The bench's link model plays the wire on these (SOF, the FIS's dwords, CRC, EOF).
        for name, direction in [("tx", engine.tap_tx), ("rx", engine.tap_rx)]:
            tap = FrameTap()
            self.submodules += tap
            self.comb += [tap.now.eq(self.now), tap.reset.eq(~self.link_up), tap.source.connect(direction)]
            for field in ("valid", "data", "charisk"):
                wire_ports["wire_{}_{}".format(name, field)] = getattr(tap, field)
            setattr(self, "tap_" + name, tap)
        self.submodules.tap_events = tap_events = TapEvents(self.tap_tx, self.tap_rx)
        self.comb += [
            engine.now.eq(self.now),
            power.now.eq(self.now),
            engine.link_up.eq(self.link_up),
            power.off.eq(engine.power_off), power.on.eq(engine.power_on),
            power.arm.eq(engine.power_arm), power.arm_event.eq(engine.power_arm_event),
            power.arm_count.eq(engine.power_arm_count), power.arm_delay.eq(engine.power_arm_delay),
            *wire_engine(power, engine, tap_events),
            self.rails.eq(power.rails),
        ]
        self.ports = dict(wire_ports)

        def expose(prefix, ep):
            for name, sig in [("valid", ep.valid), ("ready", ep.ready), ("last", ep.last)]:
                self.ports[prefix + "_" + name] = sig
            for name, *_ in ep.payload.layout:
                self.ports[prefix + "_" + name] = getattr(ep, name)
        expose("desc", engine.desc)
        expose("cpl", engine.cpl)
        expose("rx", engine.rx)
        expose("tx", engine.tx)
        expose("ram_wr", engine.ram_wr)
        expose("ram_rd_addr", engine.ram_rd_addr)
        expose("ram_rd_data", engine.ram_rd_data)
        for name in ["tx_ok", "tx_err", "comreset", "data_base", "stat_tap_mismatch"]:
            self.ports[name] = getattr(engine, name)
        self.ports.update(sys_clk=self.cd_sys.clk, sys_rst=self.cd_sys.rst, now=self.now, link_up=self.link_up, rails=self.rails,
                          power_pins=power.pins, power_trigger_time=power.trigger_time,
                          power_cut_time=power.cut_time)


def write_verilog(path, **kw):
    top = EngineBenchTop(**kw)
    ports = {}
    for name, sig in top.ports.items():
        sig.name_override = name
        ports[name] = sig
    return write_harness(top, path, set(ports.values()), "engine_top")
