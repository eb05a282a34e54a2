"""fisrig on the STLV7325 (XC7K325T-2, its GTX transceivers): the drive on the board's own
SATA port 0, 64-bit DDR3 main RAM, the host on Etherbone through the board's first Gigabit
Ethernet port (GMII), the console on its USB serial, and the load switch on four pins of
its DE header (docs/boards.md).

The transceiver's 150 MHz reference is made in the fabric, as litex-boards' STLV7325
target does: the board's 150 MHz oscillator (clk150, F6/F5) sits on the neighbouring
transceiver quad, as far as the pin facts we could read say, and LiteSATA feeds the
channel's local reference input only."""

from migen import ClockSignal

from liteeth.phy.gmii import LiteEthPHYGMII

from litedram.phy.s7ddrphy import K7DDRPHY

from fisrig_boards.board_soc import FisrigBoardSoC, S7CRG
from fisrig_hw.soc.capture_dram import DRAM_DEPTH
from fisrig_boards.platforms import dram_module
from fisrig_boards.platforms import stlv7325 as board

NAME = "stlv7325"
PART = "xc7k325t"
GENS = (1, 2, 3)
DEFAULT_GEN = 3  # GTX at 6 Gb/s (litex-boards runs Gen2 here; Gen3 is untried on a board)
IP_ADDRESS = "192.168.1.50"  # the board's; docs/boards.md says how to reach it


# The analyzer's capture ring in the DDR past the CPU's 512 MiB of main RAM: 524,288 entries
# (32 MiB), some 11 s of a QD4 workload, behind a FIFO of 512 in block RAM
# (fisrig_hw.soc.capture_dram; docs/performance.md has what yosys counts).
CAPTURE_DEPTH = DRAM_DEPTH


def soc(gen=DEFAULT_GEN):
    platform = board.Platform()
    crg = S7CRG(platform, platform.request("clk200"), speedgrade=-2, with_sata_refclk=True)
    eth_phy = LiteEthPHYGMII(platform.request("eth_clocks", 0), platform.request("eth", 0))
    return FisrigBoardSoC(platform, crg, platform.request("sata", 0), ClockSignal("sata_refclk"),
                          gen=gen, dram=(K7DDRPHY, dram_module(board.DRAM_MODULE)),
                          bridge=("etherbone", eth_phy, IP_ADDRESS),
                          power_pads=platform.request("drive_power", 0), capture_depth=CAPTURE_DEPTH,
                          capture_store="dram",
                          ident="fisrig rig SoC on STLV7325")
