"""A compiled program on the rig SoC in litex_sim: the firmware and the program go into
main RAM's image, the BIOS boots the firmware, and each record the firmware prints is
handed on as it comes (so a run stopped half-way keeps what it took). Each run has its own
directory (its main RAM image and its drive's profile and faults), so runs never share
files with the build or with each other."""

import json
import os
import shutil
import socket

from fisrig_hw import sim_soc
from fisrig_hw.bios_console import BiosConsole, ConsoleTimeout

RECORD_BYTES = 96  # struct fisrig_run_record


class SocRunError(RuntimeError):
    pass


def free_port():
    """A loopback TCP port nobody listens on now, for this run's host bridge."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare(build_dir, run_dir, firmware, program, profile, faults, bridge_port=None):
    """run_dir gets links to the built simulation's files, its own sim_config.js (the
    drive's profile and faults, the bridge's port) and its own main RAM image (the build's
    when there is no firmware)."""
    gateware = os.path.join(build_dir, "gateware")
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
        if module.get("module") == "fisrig_drive":
            module["args"] = {"profile": profile, "faults": faults}
        if module.get("module") == "serial2tcp" and bridge_port:
            module["args"] = {"port": bridge_port}
    with open(os.path.join(run_dir, "sim_config.js"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(run_dir, "sim_main_ram.init"), "w") as f:
        f.write(sim_soc.main_ram_image(firmware, program) if firmware else "")


def run(build_dir, run_dir, firmware, program, on_record, profile="tiny-1gb",
        faults="boot_us=100", timeout=1800):
    """Runs program; on_record(bytes) gets each 96-byte record; returns the firmware's
    outcome (the JSON fisrig-model prints) with the simulation's transcript."""
    prepare(build_dir, run_dir, firmware, program, profile, faults, free_port())
    console = BiosConsole(build_dir, sim_dir=run_dir)
    try:
        console.send("boot 0x{:08x}".format(console.mems["main_ram"]))
        while True:
            line = console.read_line(timeout)
            if line.startswith("R "):
                raw = bytes.fromhex(line[2:])
                if len(raw) != RECORD_BYTES:
                    raise SocRunError("a record line of {} bytes: {!r}".format(len(raw), line))
                on_record(raw)
            elif line.startswith("{"):
                return json.loads(line), console
            elif "illegal" in line.lower() or "trap" in line.lower():
                raise SocRunError("the firmware crashed: " + line)
    except ConsoleTimeout as e:
        raise SocRunError(str(e)) from None
    finally:
        console.close()


def clean(run_dir):
    shutil.rmtree(run_dir, ignore_errors=True)
