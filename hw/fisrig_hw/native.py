"""The native build (the simulated drive, its device side, the model target's tools): where it
is, for the host's targets that run its tools and the simulations that link its libraries
alike, and which of its libraries every simulation of the drive links."""
import os

from fisrig_hw import ROOT


def native_build():
    """FISRIG_BUILD's when set, else this checkout's build/. Read at each call, by the
    simulations and the host's targets (fisrig.targets.native_tools.build_dir) alike, so a
    process that sets FISRIG_BUILD after its imports (scripts/model_pgo_train.py) reaches
    both at the same place; an rtl run whose SoC linked another build than its model ran
    from would compare two drives (tests/hw/test_sim_links_fisrig_build.py)."""
    return os.environ.get("FISRIG_BUILD", os.path.join(ROOT, "build"))



NATIVE_LIBS = ["sim/device/libfisrig_device.a", "sim/libfisrig_sata.a", "sim/libfisrig_ssd.a", "sim/link/libfisrig_link.a"]


def native_libs(native_build, error):
    """NATIVE_LIBS' paths in native_build, which every simulation of the drive links (these
    runners, the rig SoC's drive module); `error` (the caller's exception) names those not
    built."""
    libs = [os.path.join(native_build, p) for p in NATIVE_LIBS]
    missing = [p for p in libs if not os.path.exists(p)]
    if missing:
        raise error("build the native parts first (make native): {}".format(missing))
    return libs
