"""The rig SoC for simulation: VexRiscv, ROM (LiteX BIOS), SRAM, main RAM and the uncached
ring RAM, a UART, the host bridge (UARTBone), the SATA core (simulated transceiver,
LiteSATA's PHY control, the rig's datapath, LiteSATA's link, our transport, engine, counter
and power controller) and the engine's
ring front end as a bus master, in one 150 MHz domain. In litex_sim the simulated drive
(sim/device) answers on the transceiver's pins through our extra module
sim/litex_sim/fisrig_drive; the bridge's stream is on a port of 127.0.0.1 through
sim/litex_sim/serial2loopback. fisrig_hw.soc.soc_build builds it."""

from migen import *
from migen.genlib.io import CRG

from litex.build.generic_platform import Pins, Subsignal
from litex.build.sim import SimPlatform
from litex.build.sim.config import SimConfig
from litex.soc.cores.uart import RS232PHYModel, UARTBone
from litex.soc.interconnect.stream import PipeReady, PipeValid
from litex.soc.integration.soc import SoCRegion
from litex.soc.integration.soc_core import SoCCore
from litex.soc.interconnect import wishbone

from fisrig_hw import contract
from fisrig_hw.descriptor import PINS
from fisrig_hw.soc.rig_core import RigCore
from fisrig_hw.soc.rig_soc import add_rig

SATA_CLK_HZ = contract.FISRIG_TICK_HZ  # the stamps count this clock's cycles (engine_if.h)
# The analyzer's capture ring (engine/capture.py): entries it holds, 43 KiB of block RAM.
CAPTURE_DEPTH = 1024

# The transceiver's pins, named as sim/device's pins.h (host drives tx_* and power).
_sata_pins = [("tx_data", 32), ("tx_charisk", 4), ("tx_idle", 1), ("tx_cominit", 1),
              ("tx_comwake", 1), ("power", PINS), ("dword_gap", 1), ("rx_data", 32), ("rx_charisk", 4),
              ("rx_idle", 1), ("rx_cominit", 1), ("rx_comwake", 1), ("current_ma", 16)]

_io = [
    ("sys_clk", 0, Pins(1)),
    ("sys_rst", 0, Pins(1)),
    ("serial", 0,
        Subsignal("source_valid", Pins(1)), Subsignal("source_ready", Pins(1)),
        Subsignal("source_data", Pins(8)),
        Subsignal("sink_valid", Pins(1)), Subsignal("sink_ready", Pins(1)),
        Subsignal("sink_data", Pins(8))),
    ("sata", 0) + tuple(Subsignal(name, Pins(width)) for name, width in _sata_pins),
    # The host bridge's byte stream; litex_sim's stream modules take only pads named "serial".
    ("serial", 1,
        Subsignal("source_valid", Pins(1)), Subsignal("source_ready", Pins(1)),
        Subsignal("source_data", Pins(8)),
        Subsignal("sink_valid", Pins(1)), Subsignal("sink_ready", Pins(1)),
        Subsignal("sink_data", Pins(8))),
]
BRIDGE_PORT = 2430  # the built configuration's; each run picks its own (soc_run)
# The bridge reaches the whole bus, so its port listens on 127.0.0.1 only: our litex_sim
# module (sim/litex_sim/serial2loopback), not LiteX's serial2tcp, which binds every interface.
BRIDGE_MODULE = "serial2loopback"

class FisrigSimSoC(SoCCore):
    """gen: the SATA speed the rig's link runs at (1, 2 or 3; fisrig_hw.phy.sim_phy): the SoC
    and every stamp stay on the 150 MHz SATA clock whatever it is."""
    def __init__(self, main_ram_size=0x80000, gen=3, **kwargs):
        platform = SimPlatform("SIM", _io)
        self.crg = CRG(platform.request("sys_clk"))
        SoCCore.__init__(self, platform, clk_freq=SATA_CLK_HZ, cpu_type="vexriscv",
                         cpu_variant="standard", uart_name="sim",
                         integrated_rom_size=0x10000, integrated_sram_size=0x2000,
                         # RAM that answers incrementing bursts a word a cycle: the engine's
                         # reads of data from RAM (fisrig_hw.soc.burst_reader) and the CPU's
                         # cache line fills.
                         bus_bursting=True,
                         # Zephyr 4.3's LiteX timer driver reads the uptime CSRs (issue 18;
                         # fisrig_hw.soc.zephyr_overlay refuses a SoC without them).
                         timer_uptime=True,
                         ident="fisrig rig SoC (simulation, SATA Gen{})".format(gen), **kwargs)
        # Simulated time is dear: the BIOS goes straight to its prompt (no serialboot wait,
        # no test of a RAM that is a Verilog array).
        self.add_config("BIOS_NO_BOOT")
        self.add_config("BIOS_NO_DELAYS")
        # Main RAM as LiteX's integrated one (the same name, so litex_sim loads each run's
        # sim_main_ram.init), with a second port of its own for the host bridge: the record
        # ring's records are here (baremetal_if.h), and the host's drain through the SoC's
        # bus would hold the CPU and the engine cycles no run could repeat (rig_soc.add_rig).
        origin = self.mem_map["main_ram"]
        main_mem = Memory(32, main_ram_size // 4, init=[], name="main_ram")
        self.main_ram = wishbone.SRAM(main_mem, bus=wishbone.Interface(
            data_width=32, address_width=self.bus.address_width, bursting=self.bus.bursting))
        self.bus.add_slave("main_ram", self.main_ram.bus, SoCRegion(origin=origin, size=main_ram_size))
        self.add_config("MAIN_RAM_INIT")
        # The SATA clock is the system clock: stamps, power edges and the CPU share it.
        self.sata = sata = RigCore(with_sys_domain=False, gen=gen, capture_depth=CAPTURE_DEPTH)
        pads = platform.request("sata")
        for name, _ in _sata_pins:
            pin, pad = getattr(sata.phy.pins, name), getattr(pads, name)
            self.comb += (pad.eq(pin) if name.startswith("tx_") or name in ("power", "dword_gap") else pin.eq(pad))
        # The host bridge (DESIGN.md decision 9): UARTBone, a Wishbone master the host
        # reaches even when the firmware is stuck.
        self.bridge_phy = RS232PHYModel(self.registered_serial(platform.request("serial", 1)))
        self.bridge = UARTBone(self.bridge_phy, clk_freq=SATA_CLK_HZ,
                               address_width=self.bus.address_width)
        add_rig(self, sata, self.bridge.wishbone, main_ram=(origin, main_ram_size, main_mem))

    def add_uart(self, name="uart", uart_name="serial", uart_pads=None, **kwargs):
        """LiteX's, with the console's pads behind registers (registered_serial)."""
        if uart_name == "sim" and uart_pads is None:
            uart_pads = self.registered_serial(self.platform.request("serial"))
        super().add_uart(name=name, uart_name=uart_name, uart_pads=uart_pads, **kwargs)

    def registered_serial(self, pads):
        """Pads like litex_sim's stream pads ("serial"), whose inputs (the module's byte and
        valid, and its ready) reach the SoC only through a register. Verilator evaluates
        every logic cone that starts at a top-level input on every eval, twice a simulated
        cycle, changed or not; straight from the pads, the console's cone ran through the
        UART's events into the CPU's interrupt logic. Behind registers the SoC takes 9,531
        host instructions a simulated cycle against 9,740 (callgrind, BIOS idle; the CPU's
        own input region, about 340, stays: it is not these pads'). A byte takes a cycle
        longer each way."""
        inner = Record(pads.layout)
        rx, tx = PipeValid([("data", 8)]), PipeReady([("data", 8)])
        self.submodules += rx, tx
        self.comb += [
            rx.sink.valid.eq(pads.sink_valid), rx.sink.data.eq(pads.sink_data), pads.sink_ready.eq(rx.sink.ready),
            inner.sink_valid.eq(rx.source.valid), inner.sink_data.eq(rx.source.data),
            rx.source.ready.eq(inner.sink_ready),
            tx.sink.valid.eq(inner.source_valid), tx.sink.data.eq(inner.source_data),
            inner.source_ready.eq(tx.sink.ready),
            pads.source_valid.eq(tx.source.valid), pads.source_data.eq(tx.source.data),
            tx.source.ready.eq(pads.source_ready),
        ]
        return inner


def sim_config(profile="tiny-1gb", faults="boot_us=100"):
    config = SimConfig()
    config.add_clocker("sys_clk", freq_hz=SATA_CLK_HZ)
    config.add_module("serial2console", "serial")
    config.add_module(BRIDGE_MODULE, ("serial", 1), args={"port": BRIDGE_PORT})
    config.add_module("fisrig_drive", "sata", clocks="sys_clk",
                      args={"profile": profile, "faults": faults})
    return config
