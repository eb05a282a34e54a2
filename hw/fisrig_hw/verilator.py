"""How fisrig's Verilated models are built: the native libraries of the simulated drive they
link, Verilator's and gcc's optimisation, and gcc's profile-guided builds. The rig SoC's
simulation (soc/soc_build.py) and the benches' runners (fisrig_bench) build alike."""
import os

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


# How every Verilated model of ours is optimized (the benches' runners, fisrig_bench, and the
# rig SoC's simulation, fisrig_hw.soc.soc_build.compile_sim). Verilator compiles the model -Os by
# default (its OPT_FAST, after the -CFLAGS); -O2 takes a fifth fewer host cycles a
# simulated one (measured: docs/rtl-engine.md), at the same build time.
VERILATOR_OPTIMIZE = ["-O3", "--x-assign", "fast", "--x-initial", "fast", "--noassert"]
MODEL_OPT_FAST = "-O2"


# gcc's profile-guided optimisation of a runner (verilate's train): the model and the runner
# compiled with -fprofile-generate, run, compiled again with the profile it wrote beside
# each object: the rig core's runner half again as fast for twice the build
# (docs/performance.md, "The simulations' speed"). These are gcc's flags for the two builds
# (the rig SoC's simulation uses them too, soc_build).
PGO_GENERATE = "-fprofile-generate"
PGO_USE = "-fprofile-use -Wno-missing-profile"
