"""fisrig on the SQRL Acorn CLE-215+ (XC7A200T-3, its GTP transceivers) in the LiteX Acorn
Baseboard Mini: the drive on the baseboard's SATA connector, its rails through a load
switch board on the baseboard's debug pins, the Acorn's 1 GB of DDR3 (512 MiB of main RAM,
the analyzer's capture ring past it), and the host on UARTBone through the baseboard's
serial pins (docs/boards.md)."""

from migen import ClockSignal

from litedram.phy.s7ddrphy import A7DDRPHY

from fisrig_boards.board_soc import FisrigBoardSoC, S7CRG
from fisrig_hw.soc.capture_dram import DRAM_DEPTH
from fisrig_boards.platforms import dram_module
from fisrig_boards.platforms import acorn_baseboard_mini as board

NAME = "acorn_baseboard_mini"
PART = "xc7a200t"
GENS = (1, 2, 3)  # the GTP's 6.6 Gb/s covers Gen3 on the -3 part
DEFAULT_GEN = 2  # as litex-boards runs SATA on this board; Gen3 elaborates, untried on a board


# The analyzer's capture ring in the DDR past the CPU's 512 MiB of main RAM: 524,288 entries
# (32 MiB), some 11 s of a QD4 workload, behind a FIFO of 512 in block RAM
# (fisrig_hw.soc.capture_dram; docs/performance.md has what yosys counts).
CAPTURE_DEPTH = DRAM_DEPTH


def soc(gen=DEFAULT_GEN):
    platform = board.Platform()
    # The GTP's reference clock pins carry the PCIe edge's 100 MHz, not SATA's 150: the
    # reference is made in the fabric (S7CRG).
    crg = S7CRG(platform, platform.request("clk200"), speedgrade=-3, with_sata_refclk=True)
    return FisrigBoardSoC(platform, crg, platform.request("sata", 0), ClockSignal("sata_refclk"),
                          gen=gen, dram=(A7DDRPHY, dram_module(board.DRAM_MODULE)), bridge="uart",
                          power_pads=platform.request("drive_power", 0), capture_depth=CAPTURE_DEPTH,
                          capture_store="dram",
                          ident="fisrig rig SoC on Acorn CLE-215+ / Acorn Baseboard Mini")
