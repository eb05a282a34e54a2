"""SQRL Acorn CLE-215+ (XC7A200T-FBG484-3) in the LiteX Acorn Baseboard Mini.

Only what fisrig uses: the 200 MHz oscillator, the LEDs, the Acorn's DDR3, the baseboard's
serial pins, its SATA connector (a GTP pair) and its 4-pin debug header, which drives
fisrig's load switch board.

Where the pin facts come from (litex-hub/litex-boards, read through the search index and a
git snapshot of the repository):
  [P] litex_boards/platforms/sqrl_acorn.py, index read_file id 6393472077. Its text is the
      file at commit 9a9e233a2412add68f828148b36c31db81cbf85e (2025-04-18; the index labels
      it 57f59409ac2fb6d60d16258ffe0fdcc5110c0000, an older version). The pins used here
      are unchanged up to the snapshot's HEAD, 2f06d08a35e3c8063880adfe8d602513358b2564.
      "_io" holds the Acorn's own pins and "_litex_acorn_baseboard_mini_io" the
      baseboard's.
  [T] litex_boards/targets/litex_acorn_baseboard_mini.py, commit
      07881259a56b796fbd3a55e767774c8da9feeda6 (index) and HEAD (last changed in
      061d12f256449d112b808e495a5e38b0aabec3eb): the DDR3 module and PHY settings.
"""

from litex.build.generic_platform import IOStandard, Misc, Pins, Subsignal
from litex.build.xilinx import Xilinx7SeriesPlatform

from fisrig_boards.platforms import drive_power, sata_port

# [T] uses litedram.modules.MT41K512M16 (1:4) on an A7DDRPHY with nphases=4.
DRAM_MODULE = "MT41K512M16"

# [P] marks both SATA pairs "Inverted on Acorn" (no reason given): the pins below keep the
# FPGA's P/N names, the connector sees them swapped. LiteSATA's PHY control finds the RX
# polarity from ALIGN vs ALIGN_N and flips the TX polarity on each COMINIT retry, so the
# link comes up either way. These flags record the inversion for software and traces.
SATA_TX_INVERTED = True
SATA_RX_INVERTED = True



_io = [
    # [P] _io: 200 MHz oscillator, on an SSTL15 bank, so it is DIFF_SSTL15.
    ("clk200", 0,
        Subsignal("p", Pins("J19"), IOStandard("DIFF_SSTL15")),
        Subsignal("n", Pins("H19"), IOStandard("DIFF_SSTL15")),
    ),

    # [P] _io: the Acorn's four LEDs.
    ("user_led", 0, Pins("G3"), IOStandard("LVCMOS33")),
    ("user_led", 1, Pins("H3"), IOStandard("LVCMOS33")),
    ("user_led", 2, Pins("G4"), IOStandard("LVCMOS33")),
    ("user_led", 3, Pins("H4"), IOStandard("LVCMOS33")),

    # [P] _io: the Acorn's 16-bit DDR3. Row bits beyond the module's are driven 0.
    ("ddram", 0,
        Subsignal("a", Pins(
            "M15 L21 M16 L18 K21 M18 M21 N20",
            "M20 N19 J21 M22 K22 N18 N22 J22"),
            IOStandard("SSTL15")),
        Subsignal("ba",    Pins("L19 J20 L20"), IOStandard("SSTL15")),
        Subsignal("ras_n", Pins("H20"), IOStandard("SSTL15")),
        Subsignal("cas_n", Pins("K18"), IOStandard("SSTL15")),
        Subsignal("we_n",  Pins("L16"), IOStandard("SSTL15")),
        Subsignal("dm",    Pins("A19 G22"), IOStandard("SSTL15")),
        # An Artix-7 HR bank has no DCI: the DQ's input termination is the untuned split one.
        Subsignal("dq", Pins(
            "D19 B20 E19 A20 F19 C19 F20 C18",
            "E22 G21 D20 E21 C22 D21 B22 D22"),
            IOStandard("SSTL15"), Misc("IN_TERM=UNTUNED_SPLIT_50")),
        Subsignal("dqs_p", Pins("F18 B21"), IOStandard("DIFF_SSTL15")),
        Subsignal("dqs_n", Pins("E18 A21"), IOStandard("DIFF_SSTL15")),
        Subsignal("clk_p", Pins("K17"), IOStandard("DIFF_SSTL15")),
        Subsignal("clk_n", Pins("J17"), IOStandard("DIFF_SSTL15")),
        Subsignal("cke",   Pins("H22"), IOStandard("SSTL15")),
        Subsignal("odt",   Pins("K19"), IOStandard("SSTL15")),
        Subsignal("reset_n", Pins("K16"), IOStandard("LVCMOS15")),
        # [P] has no cs_n pin (its line is commented out, empty).
        Misc("SLEW=FAST"),
    ),

    # [P] _litex_acorn_baseboard_mini_io: the baseboard's serial port rides on two M.2
    # sideband pins, tx on CLK_REQ (3.3 V bank) and rx on SMB_ALERT_N (1.8 V bank).
    ("serial", 0,
        Subsignal("tx", Pins("G1"),  IOStandard("LVCMOS33")),
        Subsignal("rx", Pins("Y13"), IOStandard("LVCMOS18")),
    ),

    # [P] _litex_acorn_baseboard_mini_io: the SATA connector, on the first GTP pair of
    # [P]'s pcie_x4 (the M.2 edge). Transceiver pins take no IOStandard. Polarity:
    # SATA_TX_INVERTED / SATA_RX_INVERTED above.
    sata_port(0, "B6", "A6", "B10", "A10"),

    # [P] _litex_acorn_baseboard_mini_io: the baseboard's debug header, ("debug", 0,
    # Pins("H5 J5 J2 K2"), LVCMOS33). These are the pins [P] also gives to the bare Acorn's
    # P2 adapter (its serial and SPI SD card). fisrig wires its load switch board here,
    # one pin per enable, in the header's order. p3 high asserts the drive's Power Disable.
    drive_power(("H5", "J5", "J2", "K2"), "LVCMOS33"),
]


class Platform(Xilinx7SeriesPlatform):
    default_clk_name   = "clk200"
    default_clk_period = 1e9 / 200e6

    def __init__(self, toolchain="vivado"):
        # [P]: the "cle-215+" variant is the -3 speed grade.
        Xilinx7SeriesPlatform.__init__(self, "xc7a200t-fbg484-3", _io, toolchain=toolchain)
        # [P]: bank 34 (the DDR3's) uses the internal SSTL15 reference, half of 1.5 V.
        self.add_platform_command("set_property INTERNAL_VREF 0.750 [get_iobanks 34]")
        # [P]: configuration bank voltage and the quad-SPI boot flash's width.
        self.toolchain.bitstream_commands = [
            "set_property CFGBVS VCCO [current_design]",
            "set_property CONFIG_VOLTAGE 3.3 [current_design]",
            "set_property BITSTREAM.CONFIG.SPI_BUSWIDTH 4 [current_design]",
        ]

    def do_finalize(self, fragment):
        Xilinx7SeriesPlatform.do_finalize(self, fragment)
        self.add_period_constraint(self.lookup_request("clk200", loose=True), 1e9 / 200e6)
