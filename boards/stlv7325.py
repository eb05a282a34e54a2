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
from fisrig_boards.platforms import dram_module
from fisrig_boards.platforms import stlv7325 as board

NAME = "stlv7325"
PART = "xc7k325t"
GENS = (1, 2, 3)
DEFAULT_GEN = 3  # GTX at 6 Gb/s (litex-boards runs Gen2 here; Gen3 is untried on a board)
IP_ADDRESS = "192.168.1.50"  # the board's; docs/boards.md says how to reach it


# The analyzer's capture ring: 8,192 entries of 339 bits, 80 of the part's 36 Kb block RAMs
# as 512 x 72 (of its 445; docs/boards.md has what yosys counts): some 3 ms of a QD4 workload.
CAPTURE_DEPTH = 8192


def soc(gen=DEFAULT_GEN):
    platform = board.Platform()
    crg = S7CRG(platform, platform.request("clk200"), speedgrade=-2, with_sata_refclk=True)
    eth_phy = LiteEthPHYGMII(platform.request("eth_clocks", 0), platform.request("eth", 0))
    return FisrigBoardSoC(platform, crg, platform.request("sata", 0), ClockSignal("sata_refclk"),
                          gen=gen, dram=(K7DDRPHY, dram_module(board.DRAM_MODULE)),
                          bridge=("etherbone", eth_phy, IP_ADDRESS),
                          power_pads=platform.request("drive_power", 0), capture_depth=CAPTURE_DEPTH,
                          ident="fisrig rig SoC on STLV7325")
