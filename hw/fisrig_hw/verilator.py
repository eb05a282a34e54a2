"""How fisrig's Verilated models are built: Verilator's and gcc's optimisation, and gcc's
profile-guided builds (the native libraries of the simulated drive they link: native.py). The rig SoC's
simulation (soc/soc_build.py) and the benches' runners (fisrig_bench) build alike."""
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
