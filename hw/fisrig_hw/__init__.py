"""fisrig's gateware: the raw command engine on LiteSATA, its rings, the power controller,
the simulated transceiver and the SoC (LiteX/Migen, pinned litex/litesata 2024.12).

    contract, descriptor   the engine interface's numbers (generated from the C headers)
    engine/                the raw command engine and its parts
    phy/                   the PHY side: simulated transceiver, PHY datapath, link layer
    soc/                   the rig core, its rings and the rig SoC, and the SoC's build
    native                 where the native build is, and the drive's libraries in it
    verilator, verilog     how every Verilated model is built, and its harness written
"""
import os

# The checkout this package is installed from (editable: scripts/bootstrap.sh): the native
# build, the firmware and the simulation modules are found from here.
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

