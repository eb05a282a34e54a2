"""LiteSATA's real PHY control, datapath and link layer in Verilator bring the link up with
the simulated drive's device side at the transceiver pins (needs the native build)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.path.join(ROOT, "build")
LIBS = ["sim/device/libfisrig_device.a", "sim/libfisrig_drive.a", "sim/link/libfisrig_link.a"]


def test_link_comes_up_against_the_simulated_drive(tmp_path):
    libs = [os.path.join(BUILD, p) for p in LIBS]
    missing = [p for p in libs if not os.path.exists(p)]
    assert not missing, "build the native parts first (make native): {}".format(missing)
    sys.path.insert(0, os.path.join(ROOT, "hw"))
    from fisrig_hw.rig_core import write_verilog
    verilog = write_verilog(str(tmp_path / "rig_core.v"))
    subprocess.run(
        ["verilator", "--cc", "--exe", "--build", "-O2", "-Wno-fatal", "-Wno-WIDTH",
         "-Wno-CASEINCOMPLETE", "-Wno-MULTIDRIVEN", "--Mdir", str(tmp_path / "obj"), "-j", "2",
         verilog, os.path.join(HERE, "link_up_main.cpp"),
         "-CFLAGS", "-std=c++20 -I{} -I{}".format(os.path.join(ROOT, "sim/device/include"),
                                                  os.path.join(ROOT, "sim/drive/include")),
         "-LDFLAGS", " ".join(libs + ["-ltomlplusplus"])],
        check=True, capture_output=True)
    run = subprocess.run([str(tmp_path / "obj" / "Vrig_core")], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    stats = dict(line.split() for line in run.stdout.splitlines() if len(line.split()) == 2)
    up = int(stats["link_ready_cycle"])
    # OOB takes a few thousand cycles, then LiteSATA waits 5 ms (750,000 cycles) of stable
    # ALIGNs before it calls the link ready.
    assert 750_000 <= up < 760_000, up
    assert stats["link_ups"] == "1" and stats["comresets"] == "1"
    assert stats["fis_sent.reg_d2h"] == "1"  # the signature
    assert stats["protocol_errors"] == "0" and stats["frames_aborted"] == "0"
