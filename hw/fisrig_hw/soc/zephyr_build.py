"""Builds the rig's Zephyr firmware (firmware/zephyr) for a built rig SoC (issue 18): the
overlay and Kconfig options from the SoC's csr.json (fisrig_hw.soc.zephyr_overlay), then
Zephyr's CMake and Ninja for the board litex_vexriscv. Needs a Zephyr 4.3 tree at
ZEPHYR_BASE (docs/zephyr.md says how ours was had); nothing of it is in this repository.

    python -m fisrig_hw.soc.zephyr_build [--soc-build DIR] [--out DIR]

prints the image's path and size; `make zephyr` runs it. The image is linked below
FISRIG_BOOT_PROGRAM_OFFSET of main RAM, as the bare-metal firmware is, so the same main
RAM image (fisrig_hw.soc.soc_build.main_ram_image) boots either."""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

from fisrig_hw import ROOT, build_lock
from fisrig_hw.soc.zephyr_overlay import OverlayError, engine_regs, make_overlay

APP = os.path.join(ROOT, "firmware", "zephyr")
BOARD = "litex_vexriscv"
CROSS_COMPILE = "riscv64-unknown-elf-"  # Debian's gcc-riscv64-unknown-elf (scripts/bootstrap.sh)
TOOLS = ("dtc", "gperf", "cmake", "ninja", CROSS_COMPILE + "gcc")


class ZephyrBuildError(Exception):
    """Why the Zephyr firmware cannot be built here; one line."""


def zephyr_base() -> str | None:
    """The Zephyr tree (ZEPHYR_BASE), or None when there is none."""
    base = os.environ.get("ZEPHYR_BASE")
    return base if base and os.path.isfile(os.path.join(base, "VERSION")) else None


def _tree_quirks(base: str) -> list[str]:
    """Kconfig options a tree needs beyond ours. The tree our machines have (docs/zephyr.md)
    adds a UART driver of its own, default y for every board, which fails on this one."""
    serial = os.path.join(base, "drivers", "serial")
    has_as32 = False
    for name in os.listdir(serial):
        if name.startswith("Kconfig"):
            with open(os.path.join(serial, name)) as f:
                has_as32 = has_as32 or "config UART_AS32X601" in f.read()
    return ["CONFIG_UART_AS32X601=n"] if has_as32 else []


def image_path(out: str) -> str:
    return os.path.join(out, "zephyr", "zephyr.bin")


def built_engine_regs(out: str) -> dict[str, int]:
    """{reg-name: address} of the engine as the firmware built in out has it: the devicetree
    constants of the driver's instance 0 (DT_DRV_COMPAT fisrig_engine) in Zephyr's generated
    devicetree_generated.h, what its DT_INST_REG_ADDR_BY_NAME(0, name) is compiled to."""
    with open(os.path.join(out, "zephyr", "include", "generated", "zephyr", "devicetree_generated.h")) as f:
        header = f.read()
    node = re.search(r"^#define DT_N_INST_0_fisrig_engine\s+(\w+)$", header, re.M)
    if node is None:
        return {}
    node = node.group(1)
    address = {i: int(a) for i, a in re.findall(rf"^#define {node}_REG_IDX_(\d+)_VAL_ADDRESS (\d+)\b", header, re.M)}
    return {name: address[i] for name, i in
            re.findall(rf"^#define {node}_REG_NAME_(\w+)_VAL_ADDRESS {node}_REG_IDX_(\d+)_VAL_ADDRESS$", header, re.M)}


def check_engine_regs(built: dict[str, int], csr: dict) -> None:
    """ZephyrBuildError unless the built firmware has every engine register where the SoC's
    csr.json has it (a wrong one would fail only on the hardware)."""
    want = {name: addr for name, addr, _ in engine_regs(csr)}
    wrong = [f"{n} at 0x{built[n]:08x}, csr.json 0x{a:08x}" if n in built else f"{n} missing"
             for n, a in want.items() if built.get(n) != a] + [f"{n} not in csr.json" for n in built if n not in want]
    if wrong:
        raise ZephyrBuildError(f"the firmware's engine registers are not the SoC's: {'; '.join(wrong[:4])}"
                               + (f" (and {len(wrong) - 4} more)" if len(wrong) > 4 else ""))


def build(soc_build: str, out: str | None = None, quiet: bool = True) -> str:
    """The firmware for the SoC built in soc_build (its csr.json); returns zephyr.bin's path.
    out: the build directory (default <soc_build>/zephyr). Redone incrementally by Ninja."""
    base = zephyr_base()
    if base is None:
        raise ZephyrBuildError("no Zephyr tree: set ZEPHYR_BASE to a Zephyr 4.3 tree (docs/zephyr.md)")
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise ZephyrBuildError("missing " + ", ".join(missing) + " (Debian: device-tree-compiler, gperf, "
                               "cmake, ninja-build, gcc-riscv64-unknown-elf)")
    csr_json = os.path.join(soc_build, "csr.json")
    try:
        with open(csr_json) as f:
            csr = json.load(f)
        overlay, config = make_overlay(csr)
    except (OSError, ValueError, KeyError, OverlayError) as e:
        raise ZephyrBuildError(f"{csr_json}: {e}") from None
    math_lib = os.path.abspath(os.path.join(soc_build, "software", "libc", "libc.a"))
    if not os.path.exists(math_lib):
        raise ZephyrBuildError(f"{math_lib}: missing; build the SoC first (make zephyr does)")
    out = os.path.abspath(out or os.path.join(soc_build, "zephyr"))
    with build_lock.held(out):
        overlay_file = os.path.join(out, "rig_soc.overlay")
        conf_file = os.path.join(out, "rig_soc.conf")
        options = [o[2:] for o in config.split() if o.startswith("-D")] + _tree_quirks(base)
        for path, text in ((overlay_file, overlay), (conf_file, "\n".join(options) + "\n")):
            old = open(path).read() if os.path.exists(path) else None
            if old != text:  # unchanged files keep Ninja from redoing the devicetree
                with open(path, "w") as f:
                    f.write(text)
        env = dict(os.environ, ZEPHYR_TOOLCHAIN_VARIANT="cross-compile",
                   CROSS_COMPILE=shutil.which(CROSS_COMPILE + "gcc")[:-3],
                   PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
        steps = []
        if not os.path.exists(os.path.join(out, "build.ninja")):
            steps.append(["cmake", "-G", "Ninja", "-S", APP, "-B", out, "-DBOARD=" + BOARD,
                          "-DDTC_OVERLAY_FILE=" + overlay_file, "-DEXTRA_CONF_FILE=" + conf_file,
                          "-DPython3_EXECUTABLE=" + sys.executable, "-DFISRIG_MATH_LIB=" + math_lib])
        steps.append(["ninja", "-C", out])
        for cmd in steps:
            done = subprocess.run(cmd, env=env, capture_output=quiet, text=True)
            if done.returncode:
                tail = ((done.stdout or "") + (done.stderr or ""))[-4000:] if quiet else ""
                raise ZephyrBuildError(f"{cmd[0]} failed (exit {done.returncode}) in {out}\n{tail}")
        check_engine_regs(built_engine_regs(out), csr)
    return image_path(out)


def main(argv=None) -> int:
    from fisrig_hw.soc.soc_build import default_build_dir
    ap = argparse.ArgumentParser(prog="python -m fisrig_hw.soc.zephyr_build", description=__doc__.split("\n\n")[0])
    ap.add_argument("--soc-build", default=default_build_dir(), help="the built rig SoC (default build/rtl/soc)")
    ap.add_argument("--out", help="the build directory (default <soc-build>/zephyr)")
    a = ap.parse_args(argv)
    try:
        image = build(a.soc_build, a.out, quiet=False)
    except ZephyrBuildError as e:
        print(f"zephyr_build: {e}", file=sys.stderr)
        return 2
    print(f"{image}: {os.path.getsize(image)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
