"""fisrig's gateware: the raw command engine on LiteSATA, its rings, the power controller,
the simulated transceiver and the SoC (LiteX/Migen, pinned litex/litesata 2024.12).

    contract, descriptor   the engine interface's numbers (generated from the C headers)
    engine/                the raw command engine and its parts
    phy/                   the PHY side: simulated transceiver, PHY datapath, link layer
    soc/                   the rig core, its rings and the rig SoC, and the SoC's build
    sim/                   simulation builds and runners for tests and benchmarks
"""
import os

# The checkout this package is installed from (editable: scripts/bootstrap.sh): the native
# build, the firmware and the simulation modules are found from here.
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def native_build():
    """The native build (the Drive, the device side) the simulations link and the host's
    targets run: FISRIG_BUILD's when set, else this checkout's build/. Read at each call, by
    both (host/fisrig/targets/ build_dir), so a process that sets FISRIG_BUILD after its
    imports (scripts/model_pgo_train.py) reaches them alike. The SoC of an rtl run with
    FISRIG_BUILD elsewhere once linked this checkout's build/ instead: a device side of other
    sources than the model it was compared with."""
    return os.environ.get("FISRIG_BUILD", os.path.join(ROOT, "build"))
