"""Sitlinv STLV7325 (sold on AliExpress; XC7K325T-FFG676-2), first version of the board (GMII
Ethernet, CH340 serial), with two SATA ports on GTX transceivers.

Only what fisrig uses: the 200 MHz oscillator, the 150 MHz transceiver reference, reset
button, LEDs, 64-bit DDR3, serial, SATA 0 and 1, Ethernet port 0 (GMII), and four pins of
a 2.54 mm header for fisrig's load switch board.

Where the pin facts come from (litex-hub/litex-boards, read through the search index and a
git snapshot of the repository):
  [A] litex_boards/platforms/aliexpress_stlv7325.py, index read_file id 49312838974, which
      the index dates to commit 2bc304969097013c0586bd4d72766ac1e44a835f (2022-09-27).
  [V1] the same file after it was renamed sitlinv_stlv7325.py (d7184fb0) and then
      sitlinv_stlv7325_v1.py (8a263c18), at the snapshot's HEAD
      2f06d08a35e3c8063880adfe8d602513358b2564 (last changed in 44ec9b70, 2026-05-26).
      Fixes made after [A] that are used here:
        cf416d0d  DDR3 "to match reference design": a[15]=AC12, odt=AA12, DCI on DQS,
                  no IO buffer on CK.
        4ba57938  COL/CRS are not connected on the board. [A] placed them on W19, which
                  is a DDR3 DQS pin, and on R30, which the FFG676 package does not have.
        3d8106f8  the Ethernet pins are at 2.5 V, not 1.5 V.
        2f13decc  the pins of banks 13 and 15 ([X]) follow the VCCIO jumper J4 (2.5 or
                  3.3 V).
        abd639ba  the 2.54 mm headers (AB, C, DE).
  [T] litex_boards/targets/sitlinv_stlv7325_v1.py at HEAD (last changed in 061d12f2), and
      targets/aliexpress_stlv7325.py at 3e9e9700 (index read_file id 2468725656).
  [X] transceiver quad and bank names, which litex-boards does not give: the XDC of an
      unrelated Kintex-7 FFG676 board (index read_file id 17021616571; the index gives no
      repository for it), and for F6/F5 also LBNL's bmb7 Verilog (index id 17145860527).
      Same package, so same ball names; not checked against Xilinx's package file.
The second board version (sitlinv_stlv7325_v2.py: RGMII, CP2102 serial, DDR3 cke on AB10)
differs. Its SATA pins, clk150 and clk200 are the same.
"""

from litex.build.generic_platform import IOStandard, Misc, Pins, Subsignal
from litex.build.xilinx import Xilinx7SeriesPlatform

from fisrig_boards.platforms import drive_power, sata_port

# The IO standard of banks 13 and 15 by the J4 jumper's VCCIO setting.
LVCMOS = {"2.5V": "LVCMOS25", "3.3V": "LVCMOS33"}

# [T] uses litedram.modules.MT8JTF12864 (1:4) on a K7DDRPHY with nphases=4.
DRAM_MODULE = "MT8JTF12864"

# The load switch board's pins, in the order en_3v3, en_5v, en_12v, p3: pins 1-4 of the
# 2.54 mm header "DE" ([V1], abd639ba). No other resource in [V1] uses them. litex-boards
# lists the headers but has no design that uses them; check them on the board first.
DRIVE_POWER_PINS = ("DE:1", "DE:2", "DE:3", "DE:4")



def _io(vccio):
    # [V1] 2f13decc: banks 13 (serial) and 15 (header DE) run at the VCCIO set by jumper J4
    # (bank numbers from [X]). [T]'s "--vccio" option defaults it to 2.5 V.
    lvcmos = LVCMOS[vccio]
    return [
        # [A]: the 200 MHz oscillator, DIFF_SSTL15 because it sits on a 1.5 V DDR3 bank.
        ("clk200", 0,
            Subsignal("p", Pins("AB11"), IOStandard("DIFF_SSTL15")),
            Subsignal("n", Pins("AC11"), IOStandard("DIFF_SSTL15")),
        ),
        # [A] marks this "TODO verify / test (in docs)": nobody has confirmed it in
        # hardware, and [T] instead makes SATA's 150 MHz in a fabric PLL. [X]: F6/F5 is
        # MGTREFCLK1 of GTX quad 116, but the SATA pairs are in quad 115 (see "sata"). So
        # it can only reach them over the quads' north/south reference clock routing.
        # It needs an IBUFDS_GTE2. IOStandard kept from [A]; a transceiver clock pin has a
        # fixed input buffer.
        ("clk150", 0,
            Subsignal("p", Pins("F6"), IOStandard("LVDS")),
            Subsignal("n", Pins("F5"), IOStandard("LVDS")),
        ),
        # [A]: the reset button, active low (also [A]'s user_btn_n 0).
        ("cpu_reset_n", 0, Pins("AC16"), IOStandard("LVCMOS15")),

        # [A]: eight LEDs, active low.
        *[("user_led_n", i, Pins(pin), IOStandard("LVCMOS15"))
          for i, pin in enumerate(["AA2", "AD5", "W10", "Y10", "AE10", "W11", "V11", "Y12"])],

        # [A] and [V1]: the CH340 USB serial (pin comments CH340_TX / CH340_RX).
        ("serial", 0,
            Subsignal("tx", Pins("M25")),
            Subsignal("rx", Pins("L25")),
            IOStandard(lvcmos),
        ),

        # [V1] (cf416d0d fixed [A]): the 64-bit, single-rank DDR3. [A] had a[15] and odt
        # missing (odt commented out, no reason given); cf416d0d added both from the vendor's
        # reference design, so odt is driven here. DQ/DQS terminate on-die with DCI in banks
        # 32/34; bank 33 lends them its VRN/VRP (DCI_CASCADE in Platform).
        ("ddram", 0,
            Subsignal("a", Pins(
                "AB7  AD11 AA8  AF10 AC7  AE11 AC8  AD8",
                "AC13 AF12 AF9  AD10 AE13 AF7  AB12 AC12"),
                IOStandard("SSTL15")),
            Subsignal("ba",    Pins("AE8 AA7 AF13"), IOStandard("SSTL15")),
            Subsignal("ras_n", Pins("Y7"),   IOStandard("SSTL15")),
            Subsignal("cas_n", Pins("AE7"),  IOStandard("SSTL15")),
            Subsignal("we_n",  Pins("AF8"),  IOStandard("SSTL15")),
            Subsignal("cs_n",  Pins("AA13"), IOStandard("SSTL15")),
            Subsignal("dm", Pins("AD16 AB16 AB19 V17 U1 AA3 AD6 AE1"), IOStandard("SSTL15")),
            Subsignal("dq", Pins(
                "AF17 AE17 AF15 AF14 AE15 AD15 AF20 AF19",
                "AA15 AA14 AC14 AD14 AB14 AB15 AA18 AA17",
                "AC18 AD18 AC17 AB17 AA20 AA19 AD19 AC19",
                "W14  V14  V19  V18  V16  W15  W16  Y17",
                "V4   U6   U5   U2   V3   W3   U7   V6",
                "Y3   Y2   V2   V1   W1   Y1   AB2  AC2",
                "AA4  AB4  AC4  AC3  AC6  AB6  Y6   Y5",
                "AD4  AD1  AF2  AE2  AE6  AE5  AF3  AE3"),
                IOStandard("SSTL15_T_DCI")),
            Subsignal("dqs_p", Pins("AE18 Y15 AD20 W18 W6 AB1 AA5 AF5"),
                IOStandard("DIFF_SSTL15_T_DCI")),
            Subsignal("dqs_n", Pins("AF18 Y16 AE20 W19 W5 AC1 AB5 AF4"),
                IOStandard("DIFF_SSTL15_T_DCI")),
            # The PHY instantiates CK's OBUFDS itself.
            Subsignal("clk_p", Pins("AC9"), IOStandard("DIFF_SSTL15"), Misc("IO_BUFFER_TYPE=NONE")),
            Subsignal("clk_n", Pins("AD9"), IOStandard("DIFF_SSTL15"), Misc("IO_BUFFER_TYPE=NONE")),
            Subsignal("cke",     Pins("AB9"),  IOStandard("SSTL15")),
            Subsignal("odt",     Pins("AA12"), IOStandard("SSTL15")),
            Subsignal("reset_n", Pins("AB20"), IOStandard("LVCMOS15")),
            Misc("SLEW=FAST"),
            Misc("VCCAUX_IO=NORMAL"),
        ),

        # [A]: the two SATA ports. [X]: GTX quad 115, channels 0 (port 0) and 1 (port 1).
        # [V1] dropped [A]'s IOStandard("LVCMOS33") here: transceiver pins take none.
        sata_port(0, "P2", "P1", "R4", "R3"),
        sata_port(1, "M2", "M1", "N4", "N3"),

        # [A] pins, [V1] IO voltage (3d8106f8) and no COL/CRS (4ba57938): Ethernet port 0,
        # a GMII PHY (the chip is not named in any source read). [X] puts its clocks and
        # data in bank 16, which [V1] keeps at 2.5 V whatever J4 says.
        # tx is the PHY's MII transmit clock; gtx is the FPGA's 125 MHz GMII one.
        ("eth_clocks", 0,
            Subsignal("tx",  Pins("E12")),
            Subsignal("gtx", Pins("F13")),
            Subsignal("rx",  Pins("C12")),
            IOStandard("LVCMOS25"),
        ),
        ("eth", 0,
            Subsignal("rst_n",   Pins("D11")),
            Subsignal("mdio",    Pins("K15")),
            Subsignal("mdc",     Pins("M16")),
            Subsignal("rx_dv",   Pins("G14")),
            Subsignal("rx_er",   Pins("F14")),
            Subsignal("rx_data", Pins("H14 J14 J13 H13 B15 A15 B14 A14")),
            Subsignal("tx_en",   Pins("F12")),
            Subsignal("tx_er",   Pins("E13")),
            Subsignal("tx_data", Pins("G12 E11 G11 C14 D14 C13 C11 D13")),
            IOStandard("LVCMOS25"),
        ),
    ]


# [V1] (abd639ba): the 2.54 mm header "DE", pin number to FPGA ball. [X] puts all of these
# in bank 15 (J4's VCCIO); 7, 8, 17 and 18 are not I/O. [V1] also lists headers "AB"
# (banks 14/15) and "C" (bank 15), not copied here.
_connectors = [
    ("DE", {
         1: "J18",  2: "J19",  3: "L17",  4: "K18",  5: "K16",  6: "K17",
         9: "C19", 10: "B19", 11: "C18", 12: "C17", 13: "C16", 14: "B16",
        15: "D15", 16: "D16", 19: "G15", 20: "F15", 21: "J15", 22: "J16",
        23: "A18", 24: "A19", 25: "B17", 26: "A17",
    }),
]


class Platform(Xilinx7SeriesPlatform):
    """vccio: the J4 jumper's setting, "2.5V" or "3.3V". drive_power_pins: four pins
    (FPGA balls or "DE:n") for the load switch's en_3v3, en_5v, en_12v and p3, or None for
    no ("drive_power", 0) resource."""
    default_clk_name   = "clk200"
    default_clk_period = 1e9 / 200e6

    def __init__(self, vccio="2.5V", drive_power_pins=DRIVE_POWER_PINS, toolchain="vivado"):
        io = _io(vccio)
        if drive_power_pins is not None:
            io.append(drive_power(drive_power_pins, LVCMOS[vccio]))
        Xilinx7SeriesPlatform.__init__(self, "xc7k325t-ffg676-2", io, _connectors,
                                       toolchain=toolchain)
        self.vccio = vccio
        # [A]/[V1]: configuration bank voltage (2.5 V in [V1] whatever J4 says).
        self.add_platform_command("set_property CFGBVS VCCO [current_design]")
        self.add_platform_command("set_property CONFIG_VOLTAGE 2.5 [current_design]")
        # [A]/[V1]: the DCI that DQ/DQS use in banks 32 and 34 is calibrated in bank 33.
        self.add_platform_command("set_property DCI_CASCADE {{32 34}} [get_iobanks 33]")
        # [A]: the quad-SPI boot flash's width.
        self.toolchain.bitstream_commands = [
            "set_property BITSTREAM.CONFIG.SPI_BUSWIDTH 4 [current_design]",
        ]

    def do_finalize(self, fragment):
        Xilinx7SeriesPlatform.do_finalize(self, fragment)
        self.add_period_constraint(self.lookup_request("clk200", loose=True), 1e9 / 200e6)
        self.add_period_constraint(self.lookup_request("clk150", loose=True), 1e9 / 150e6)
        # The PHY's receive clock (125 MHz at 1 Gb/s) and its MII transmit clock (25 MHz at
        # most), both constrained at 125 MHz as in [A].
        self.add_period_constraint(self.lookup_request("eth_clocks:rx", 0, loose=True), 1e9 / 125e6)
        self.add_period_constraint(self.lookup_request("eth_clocks:tx", 0, loose=True), 1e9 / 125e6)
