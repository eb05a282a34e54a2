"""Elaborates a board's rig SoC to Verilog with LiteX (no Vivado: LiteX's build with the
gateware's compilation off) and, with --synth, synthesizes it with yosys's synth_xilinx
(the transceivers, IDELAYCTRL and the other hard blocks stay black boxes) into a resource
report of LUTs, flip-flops and block RAMs, each also as a share of the part.

    python -m fisrig_boards.build BOARD [--gen 1|2|3] [--out DIR] [--synth [--quick]] [--software]

--software also compiles the SoC's software (LiteX's BIOS and libraries): what the board's
firmware builds link (`python -m fisrig_hw.soc.zephyr_build --soc-build DIR/BOARD` for the
Zephyr firmware, docs/zephyr.md).

BOARD is one of BOARDS. The Vivado build of a bitstream is docs/boards.md's."""

import argparse
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

from litex.soc.integration.builder import Builder

BOARDS = ("acorn_baseboard_mini", "stlv7325")
# The parts' resources from their slice counts (Xilinx DS180, 7 Series FPGAs Data Sheet:
# Overview; 33,650 and 50,950 slices of 4 LUTs and 8 flip-flops) and 36 Kb block RAMs.
PARTS = {
    "xc7a200t": {"luts": 134_600, "ffs": 269_200, "brams": 365},
    "xc7k325t": {"luts": 203_800, "ffs": 407_600, "brams": 445},
}
DEFAULT_OUT = os.path.join("build", "boards")


class BoardError(Exception):
    """What main() prints in one line before it exits 2."""


def target(name):
    if name not in BOARDS:
        raise BoardError(f"no board '{name}' (boards: {', '.join(BOARDS)})")
    return importlib.import_module(f"fisrig_boards.{name}")


def elaborate(name, gen=None, out=DEFAULT_OUT, software=False):
    """Writes the board's SoC as Verilog (with its csr.json and software headers; with
    `software`, its software compiled) under out/name; returns (the top Verilog file, the
    SoC's other Verilog sources)."""
    board = target(name)
    gen = board.DEFAULT_GEN if gen is None else gen
    if gen not in board.GENS:
        raise BoardError(f"{name} runs SATA Gen {', '.join(map(str, board.GENS))}, not {gen}")
    soc = board.soc(gen=gen)
    build_dir = os.path.join(out, name)
    if software:  # LiteX's software Makefiles run `python3 -m litex...`: this interpreter's
        os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    builder = Builder(soc, output_dir=build_dir, compile_software=software, compile_gateware=False,
                      csr_json=os.path.join(build_dir, "csr.json"))
    builder.build(build_name=name, run=False)
    top = os.path.join(build_dir, "gateware", f"{name}.v")
    sources = [path for path, language, _ in soc.platform.sources if language in ("verilog", "systemverilog")]
    return top, sources


# yosys's cell names for what the report counts (synth_xilinx's output for 7-series).
_LUT = re.compile(r"^LUT[1-6]$")
_FF = re.compile(r"^FD[CPRSE]E?$")
_BRAM = {"RAMB36E1": 1.0, "RAMB18E1": 0.5}
# Distributed RAM uses LUTs too (DS180 counts them among the slice LUTs; UG474's table of
# distributed RAM configurations): a RAM32M or RAM64M is four LUTs, a RAM128X1D or RAM256X1S
# four, a RAM32X1D, RAM64X1D or RAM128X1S two, a single-port 32 or 64 deep one, a shift
# register one. yosys's 7-series map uses these (lutrams_xc5v_map.v); a distributed RAM or
# shift register the table does not know is refused, not counted as nothing (a missing
# one once left 1,072 of the STLV7325's LUTs uncounted).
_LUTRAM = {"RAM32M": 4, "RAM64M": 4, "RAM128X1D": 4, "RAM256X1S": 4, "RAM32X1D": 2, "RAM64X1D": 2,
           "RAM128X1S": 2, "RAM32X1S": 1, "RAM64X1S": 1, "SRL16E": 1, "SRLC16E": 1, "SRLC32E": 1}
_LUTRAM_LIKE = re.compile(r"^(RAM(?!B)\w+|SRL\w+)$")


def count(name, cells):
    """LUTs (distributed RAM and shift registers included), flip-flops and block RAMs (36 Kb
    each) of yosys's cells by type."""
    unknown = sorted(c for c in cells if _LUTRAM_LIKE.match(c) and c not in _LUTRAM)
    if unknown:
        raise BoardError(f"{name}: yosys made {', '.join(unknown)}, whose LUTs the report does not know how to count")
    return {
        "luts": sum(n for c, n in cells.items() if _LUT.match(c)) + sum(n * _LUTRAM.get(c, 0) for c, n in cells.items()),
        "ffs": sum(n for c, n in cells.items() if _FF.match(c)),
        "brams": sum(n * _BRAM.get(c, 0) for c, n in cells.items()),
    }


# synth_xilinx's own map_luts step (yosys 0.23's `help synth_xilinx`, for xc7) with ABC's fast
# script in place of its default one. Measured (yosys 0.23, 2 cores, both busy): the Acorn's
# SoC 354 s of CPU against 480 (ABC itself 6 s against 128) for 23,883 LUTs against 22,709
# (+5.2%); the STLV7325's 486 s against about 830 (ABC 294 s in the full flow) for 30,886
# against 30,594 (+1.0%). An estimate above the full flow's: a goal it meets, the full one meets.
_QUICK_MAP_LUTS = [
    "opt_expr -mux_undef -noclkinv",
    "abc -fast -luts 2:2,3,6:5,10,20",
    "clean",
    "techmap -map +/xilinx/ff_map.v",
    "xilinx_srl -fixed -minlen 3",
    "techmap -map +/xilinx/lut_map.v -map +/xilinx/cells_map.v -D LUT_WIDTH=6",
    "xilinx_dffopt",
    "opt_lut_ins -tech xilinx",
]


def synth_script(name, quick=False):
    """yosys's commands after the sources are read: synth_xilinx whole, or (quick) run to its
    LUT mapping, that step with ABC's fast script, then the rest."""
    synth = f"synth_xilinx -family xc7 -top {name} -flatten"
    if not quick:
        return [synth]
    return [f"{synth} -run :map_luts", *_QUICK_MAP_LUTS, f"{synth} -run finalize:check"]


def synthesize(name, top, sources, out=DEFAULT_OUT, quick=False):
    """yosys synth_xilinx of the elaborated SoC; returns the resource report (also written
    as out/name/resources.json). quick: ABC's fast script for the LUT mapping (the test
    suite's; a quarter to two fifths less CPU, 1 to 5% more LUTs: _QUICK_MAP_LUTS)."""
    if not shutil.which("yosys"):
        raise BoardError("yosys is not installed (scripts/bootstrap.sh installs it)")
    build_dir = os.path.join(out, name)
    stat = os.path.join(build_dir, "yosys_stat.json")
    script = os.path.join(build_dir, "synth.ys")
    with open(script, "w") as f:
        for path in dict.fromkeys(os.path.abspath(p) for p in sources + [top]):  # LiteX lists the top too
            f.write(f"read_verilog -defer {path}\n")
        for command in synth_script(name, quick):
            f.write(command + "\n")
        f.write(f"tee -q -o {os.path.abspath(stat)} stat -json\n")
    log = os.path.join(build_dir, "yosys.log")
    done = subprocess.run(["yosys", "-q", "-l", log, "-s", script], capture_output=True, text=True)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise BoardError(f"yosys failed on {name}: {last} (its log: {log})")
    with open(stat) as f:
        cells = json.load(f)["design"]["num_cells_by_type"]
    part = PARTS[target(name).PART]
    used = count(name, cells)
    report = {"board": name, "part": target(name).PART, "flow": "quick" if quick else "full", "cells": cells,
              **used, **{f"{k}_pct": round(100 * v / part[k], 2) for k, v in used.items()}}
    with open(os.path.join(build_dir, "resources.json"), "w") as f:
        json.dump(report, f, indent=1)
    return report


def synthesize_all(out=DEFAULT_OUT):
    """Every board elaborated and synthesized at its default generation, one process a
    board run at once (a yosys each: the 2 cores); returns {board: (report, wall seconds)}
    in the order they finish. BoardError names a board whose build failed."""
    t0 = time.monotonic()
    runs = {b: subprocess.Popen([sys.executable, "-m", "fisrig_boards.build", b, "--synth", "--out", str(out)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for b in BOARDS}
    done = {}
    for board, run in runs.items():
        _, err = run.communicate()
        if run.returncode:
            raise BoardError(f"{board}'s synthesis failed: {(err.strip().splitlines() or ['?'])[-1]}")
        with open(os.path.join(out, board, "resources.json")) as f:
            done[board] = (json.load(f), time.monotonic() - t0)
    return done


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fisrig_boards.build", description=__doc__.splitlines()[0])
    parser.add_argument("board", help=" | ".join(BOARDS))
    parser.add_argument("--gen", type=int, choices=(1, 2, 3), help="the link's SATA generation (default: the board's)")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"build folder (default {DEFAULT_OUT})")
    parser.add_argument("--synth", action="store_true", help="synthesize with yosys and report resources")
    parser.add_argument("--quick", action="store_true",
                        help="with --synth: ABC's fast LUT mapping (a quarter to two fifths less CPU, 1 to 5%% more LUTs)")
    parser.add_argument("--software", action="store_true",
                        help="compile the SoC's software too (LiteX's BIOS and libraries, for the firmware builds)")
    args = parser.parse_args(argv)
    if args.quick and not args.synth:
        parser.error("--quick is a way to --synth: give both")
    try:
        top, sources = elaborate(args.board, args.gen, args.out, args.software)
        print(f"{args.board}: {top}")
        r = synthesize(args.board, top, sources, args.out, quick=args.quick) if args.synth else None
    except BoardError as e:
        print(f"fisrig_boards.build: {e}", file=sys.stderr)
        return 2
    if r:
        print(f"{args.board} ({r['part']}): {r['luts']:,} LUTs ({r['luts_pct']}%), {r['ffs']:,} FFs "
              f"({r['ffs_pct']}%), {r['brams']:g} BRAMs ({r['brams_pct']}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
