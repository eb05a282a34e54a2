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


def run_harness(tmp_path, main_cpp):
    """Builds the rig core with a harness (tests/rtl/*_main.cpp) and runs it."""
    libs = [os.path.join(BUILD, p) for p in LIBS]
    missing = [p for p in libs if not os.path.exists(p)]
    assert not missing, "build the native parts first (make native): {}".format(missing)
    sys.path.insert(0, os.path.join(ROOT, "hw"))
    from fisrig_hw.rig_core import write_verilog
    verilog = write_verilog(str(tmp_path / "rig_core.v"))
    includes = ["sim/device/include", "sim/drive/include", "firmware/core/include"]
    subprocess.run(
        ["verilator", "--cc", "--exe", "--build", "-O2", "-Wno-fatal", "-Wno-WIDTH",
         "-Wno-CASEINCOMPLETE", "-Wno-MULTIDRIVEN", "--Mdir", str(tmp_path / "obj"), "-j", "2",
         verilog, os.path.join(HERE, main_cpp),
         "-CFLAGS", "-std=c++20 " + " ".join("-I" + os.path.join(ROOT, i) for i in includes),
         "-LDFLAGS", " ".join(libs + ["-ltomlplusplus"])],
        check=True, capture_output=True)
    run = subprocess.run([str(tmp_path / "obj" / "Vrig_core")], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def test_link_comes_up_against_the_simulated_drive(tmp_path):
    run = run_harness(tmp_path, "link_up_main.cpp")
    stats = dict(line.split() for line in run.splitlines() if len(line.split()) == 2)
    up = int(stats["link_ready_cycle"])
    # OOB takes a few thousand cycles, then LiteSATA waits 5 ms (750,000 cycles) of stable
    # ALIGNs before it calls the link ready.
    assert 750_000 <= up < 760_000, up
    assert stats["link_ups"] == "1" and stats["comresets"] == "1"
    assert stats["fis_sent.reg_d2h"] == "1"  # the signature
    assert stats["protocol_errors"] == "0" and stats["frames_aborted"] == "0"


def test_commands_through_litesata_to_the_simulated_drive(tmp_path):
    """IDENTIFY into RAM, 32 queued STAMP writes and 32 queued checked reads, checked DMA
    reads (one with the right sequence, one with a wrong one), FLUSH: the whole path."""
    out = run_harness(tmp_path, "commands_main.cpp")
    recs = {}
    for line in out.splitlines():
        f = line.split()
        if f[0] == "rec":
            v = list(map(int, f[1:]))
            recs[v[0]] = dict(zip(["user_tag", "slot", "result", "status", "error", "sectors",
                                   "check_errors", "ts_submit", "ts_h2d", "ts_accept", "ts_setup",
                                   "ts_data_first", "ts_data_last", "ts_status"], v))
    ident = recs[1]
    assert ident["result"] == 0 and ident["sectors"] == 1 and ident["status"] & 0xC9 == 0x40
    model = [l for l in out.splitlines() if l.startswith("identify_model")][0]
    assert "fisrig" in model.lower(), model
    for t in range(100, 132):
        assert recs[t]["result"] == 0 and recs[t]["sectors"] == 16, recs[t]
        assert recs[t]["ts_accept"] and recs[t]["ts_setup"]
    for t in range(200, 232):
        assert recs[t]["result"] == 0 and recs[t]["check_errors"] == 0, recs[t]
    for r in recs.values():
        stamps = [r[k] for k in ["ts_submit", "ts_h2d", "ts_accept", "ts_setup", "ts_data_first",
                                 "ts_data_last", "ts_status"] if r[k]]
        assert stamps == sorted(stamps), r
    assert recs[300]["result"] == 0 and recs[300]["sectors"] == 64
    # Data written with sequence 77 read as if it were 78: every sector fails the check.
    assert recs[301]["result"] == 5 and recs[301]["check_errors"] == 64
    assert recs[400]["result"] == 0
    # The drive's signature after link-up is an event record of its own.
    assert recs[0xFFFFFFFF]["slot"] == 0xF2 and recs[0xFFFFFFFF]["ts_status"] < recs[1]["ts_submit"]


def test_power_cut_mid_ncq_writes_and_link_comes_back(tmp_path):
    out = run_harness(tmp_path, "power_cut_main.cpp")
    recs, events = {}, []
    for line in out.splitlines():
        f = line.split()
        if f[0] == "rec":
            v = list(map(int, f[1:]))
            r = dict(zip(["user_tag", "slot", "result", "status", "error", "sectors",
                          "check_errors", "ts_submit", "ts_h2d", "ts_accept", "ts_setup",
                          "ts_data_first", "ts_data_last", "ts_status"], v))
            if r["user_tag"] == 0xFFFFFFFF:
                events.append(r)
            else:
                recs[r["user_tag"]] = r
    codes = [e["slot"] for e in events]
    # link up, the cut, the link going down, link up again after POWER ON
    assert codes == [0xF2, 0xF0, 0xF1, 0xF2], codes
    cut = events[1]["ts_status"]
    assert events[2]["ts_status"] > cut and events[3]["ts_status"] > events[2]["ts_status"]
    writes = [recs[100 + i] for i in range(8)]
    lost = [w for w in writes if w["result"] == 4]
    assert lost, "the cut came mid-write: some writes must end LINK_LOST"
    assert all(w["result"] in (0, 4) for w in writes)
    assert all(w["ts_status"] >= cut for w in lost)
    on = recs[2]
    assert on["result"] == 0 and on["ts_status"] >= events[3]["ts_status"]
    # Every read ends, nothing hangs.
    reads = [recs[200 + i] for i in range(8)]
    assert all(r["result"] in (0, 1, 5) for r in reads), reads
    # A write the cut ended was never committed (the drive takes a write whole, after its
    # last Data FIS): its LBAs read back as they were, zeros, and fail the STAMP check.
    for i, w in enumerate(writes):
        if w["result"] == 4:
            assert reads[i]["result"] == 5 and reads[i]["check_errors"] == 64, reads[i]
    # The cut came 100 ticks after the third Data FIS began: the engine had handed three Data FISes (48 sectors) of the first write to the link.
    assert writes[0]["result"] == 4 and writes[0]["sectors"] == 48
