"""The rig SoC on a board: the simulated SoC's parts (fisrig_hw.soc.sim_soc) with a real
transceiver under the rig core (fisrig_hw.phy.board_phy), DDR3 main RAM through LiteDRAM,
and a host bridge to the board's own link (Etherbone where the board has Ethernet,
UARTBone otherwise). The rig's registers have the same names, and its ring RAM and tick
gate the same addresses, as in simulation (fisrig_hw.soc.rig_soc; tests/hw/test_boards.py
holds them to it); the firmware is built against each SoC's csr.h.

The SoC, the rig core and every stamp share one 150 MHz clock (a stamp tick is 6.67 ns on
a board as in simulation); the transceiver's own clocks meet it in LiteSATA's datapath."""

from migen import *

from litex.gen import LiteXModule
from litex.soc.cores.clock import S7IDELAYCTRL, S7PLL
from litex.soc.cores.uart import RS232PHY, UARTBone
from litex.soc.integration.soc_core import SoCCore

from fisrig_hw import contract
from fisrig_hw.phy.board_phy import BoardSATAPHY
from fisrig_hw.soc.capture_dram import DRAM_OFFSET, ENTRY_BYTES, DRAMCaptureStore
from fisrig_hw.soc.rig_core import RigCore
from fisrig_hw.soc.rig_soc import add_rig

SYS_CLK_HZ = contract.FISRIG_TICK_HZ  # the stamps count this clock (engine_if.h)
UART_BRIDGE_BAUD = 1_000_000  # UARTBone on a board's serial port; about 100 KB/s (docs/boards.md)
ETHERBONE_PORT = 1234  # litex_server's default


class S7CRG(LiteXModule):
    """A 7-series board's clocks from its 200 MHz oscillator: sys (150 MHz, the stamp clock),
    sys4x and sys4x_dqs for a DDR3 PHY at 4:1 (DDR3-1200 on the pins), idelay (200 MHz,
    IDELAYCTRL's reference), and, when the transceiver has no 150 MHz reference clock pin
    of its own (sata_refclk), one from the fabric, as LiteSATA's A7 designs do."""
    def __init__(self, platform, clk200, speedgrade, with_sata_refclk=False, reset=0):
        self.rst = Signal()
        self.cd_sys = ClockDomain()
        self.cd_sys4x = ClockDomain()
        self.cd_sys4x_dqs = ClockDomain()
        self.cd_idelay = ClockDomain()
        self.pll = pll = S7PLL(speedgrade=speedgrade)
        self.comb += pll.reset.eq(self.rst | reset)
        pll.register_clkin(clk200, 200e6)
        pll.create_clkout(self.cd_sys, SYS_CLK_HZ)
        pll.create_clkout(self.cd_sys4x, 4 * SYS_CLK_HZ)
        pll.create_clkout(self.cd_sys4x_dqs, 4 * SYS_CLK_HZ, phase=90)
        pll.create_clkout(self.cd_idelay, 200e6)
        if with_sata_refclk:
            self.cd_sata_refclk = ClockDomain()
            pll.create_clkout(self.cd_sata_refclk, 150e6, buf=None)
            # A fabric clock into the transceiver's reference: Vivado's REQP-52 check would
            # stop the build; LiteSATA's A7 designs make it a warning too.
            platform.add_platform_command("set_property SEVERITY {{Warning}} [get_drc_checks REQP-52]")
        platform.add_false_path_constraints(self.cd_sys.clk, pll.clkin)
        self.idelayctrl = S7IDELAYCTRL(self.cd_idelay)


class FisrigBoardSoC(SoCCore):
    """platform: the board's; crg: its S7CRG; sata_pads, sata_refclk: the transceiver's pair
    and reference (BoardSATAPHY); gen: the link's SATA generation; dram: (LiteDRAM PHY
    class, module) or None; bridge: "uart" (UARTBone on serial 0, the console through it)
    or ("etherbone", eth_phy, ip_address); power_pads: the load switch's inputs;
    capture_depth: the analyzer's capture ring's entries (engine/capture.py), 0 for none;
    capture_store: "bram" (block RAM of its own) or "dram" (the DDR past the CPU's main RAM,
    which is then the DDR's first capture_dram.DRAM_OFFSET bytes: fisrig_hw.soc.capture_dram)."""
    def __init__(self, platform, crg, sata_pads, sata_refclk, gen=3, dram=None, bridge="uart",
                 power_pads=None, ident="fisrig rig SoC", capture_depth=0, capture_store="bram"):
        in_dram = bool(capture_depth) and capture_store == "dram"
        if in_dram and dram is None:
            raise ValueError("a capture ring in DRAM needs the board's DRAM")
        self.crg = crg
        uart = "crossover" if bridge == "uart" else "serial"
        SoCCore.__init__(self, platform, clk_freq=SYS_CLK_HZ, cpu_type="vexriscv",
                         cpu_variant="standard", uart_name=uart,
                         integrated_rom_size=0x10000, integrated_sram_size=0x2000,
                         bus_bursting=True, ident=f"{ident}, SATA Gen{gen}",
                         timer_uptime=True)  # for Zephyr's LiteX timer (fisrig_hw.soc.zephyr_overlay)
        if dram is not None:
            phy_class, module = dram
            self.ddrphy = phy_class(platform.request("ddram"), memtype="DDR3", nphases=4,
                                    sys_clk_freq=SYS_CLK_HZ)
            self.add_sdram("sdram", phy=self.ddrphy, module=module(SYS_CLK_HZ, "1:4"),
                           l2_cache_size=8192, size=DRAM_OFFSET if in_dram else None)
        # The rig core on the board's transceiver.
        phy = BoardSATAPHY(platform.device, sata_pads, sata_refclk, gen=gen, clk_freq=SYS_CLK_HZ,
                           power_pads=power_pads)
        self.sata = sata = RigCore(with_sys_domain=False, phy=phy, capture_depth=capture_depth,
                                   capture_store="external" if in_dram else "bram")
        capture_ring = None
        if in_dram:
            crossbar = self.sdram.crossbar
            self.wire_capture_dram = capture_ring = DRAMCaptureStore(
                sata.capture, crossbar.get_port(mode="write", data_width=8 * ENTRY_BYTES),
                crossbar.get_port(mode="both"), address_width=self.bus.address_width)
        sata_hz = {1: 75e6, 2: 150e6, 3: 150e6}[gen]  # the transceiver's parallel clocks
        platform.add_period_constraint(phy.crg.cd_sata_tx.clk, 1e9 / sata_hz)
        platform.add_period_constraint(phy.crg.cd_sata_rx.clk, 1e9 / sata_hz)
        platform.add_false_path_constraints(self.crg.cd_sys.clk, phy.crg.cd_sata_tx.clk,
                                            phy.crg.cd_sata_rx.clk)
        # The host bridge (DESIGN.md decision 9): a Wishbone master the host reaches even
        # when the firmware is stuck.
        if bridge == "uart":
            self.bridge_phy = RS232PHY(platform.request("serial"), SYS_CLK_HZ, UART_BRIDGE_BAUD)
            self.bridge = UARTBone(self.bridge_phy, clk_freq=SYS_CLK_HZ,
                                   address_width=self.bus.address_width)
            master = self.bridge.wishbone
        else:
            _, eth_phy, ip_address = bridge
            from liteeth.core import LiteEthUDPIPCore
            from liteeth.frontend.etherbone import LiteEthEtherbone
            self.ethphy = eth_phy
            self.ethcore = LiteEthUDPIPCore(eth_phy, mac_address=0x10e2d5000000,
                                            ip_address=ip_address, clk_freq=SYS_CLK_HZ)
            self.bridge = LiteEthEtherbone(self.ethcore.udp, ETHERBONE_PORT)
            master = self.bridge.wishbone.bus
        add_rig(self, sata, master, capture_ring=capture_ring)
