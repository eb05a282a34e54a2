"""`--target board --url HOST:PORT` against the simulated SoC standing in for a board (issue 17,
section 3): the firmware booted resident (no program: it serves the bridge's mailbox,
baremetal_if.h), LiteX's own litex_server in front of the simulation's bridge, and the host
reaching the rig only through the server (LiteX's RemoteClient; fisrig.targets.rig.board_run). The
built-in plan targets-agree run so gives the records `--target rtl` gives: the same commands,
answers and phases record by record, every phase's latency and IOPS within 2% (fisrig.compare, as
tests/rtl/test_targets_agree.py holds the model to the rtl; a latency also within an ALIGN pair
each way, compare.apart); and the firmware takes a second
plan after the first. A program larger than the board's main RAM is refused before it is
sent; a server in front of a SoC whose firmware was not booted resident, an address nobody
listens on, and bad flags each end in one line."""
import contextlib
import io
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_in_process import fisrig

from fisrig import plan
from fisrig.report.compare import compare
from fisrig.targets.rig import board_run, soc_run
from fisrig.targets.rig.bios_console import BiosConsole
from fisrig.run import run_plan
from fisrig_hw import contract
from fisrig_hw.soc import soc_build
from test_sim_soc import soc_dir  # noqa: F401  (the SoC built once for the files that use it)

PLAN = "targets-agree"
# 20 ms of QD1 4 KiB reads: 1,272 records, but its estimate can only bound a timed step
# by the link (records_max 2,886), past the 2,048 the board's main RAM holds after it.
TIMED = plan.from_dict({"plan": {"name": "timed", "profile": "fast-1gb"}, "step": [
    {"do": "workload", "label": "reads for 20 ms", "read_pct": 100, "transfer_kib": 4, "queue_depth": 1,
     "ncq": True, "lba_count": 65536, "seconds": 0.02}]})
# The analyzer's capture through the board's bridge: two windows on SDBs, read as the run goes
# (long enough for the host's looks at the ring, each 5 ms of wall time, to come during it).
CAPTURED = {"plan": {"name": "captured", "profile": "tiny-1gb"}, "step": [
    {"do": "workload", "label": "ncq", "read_pct": 50, "transfer_kib": 16, "queue_depth": 4, "lba_count": 4096,
     "commands": 300, "capture": {"trigger": "fis:sdb", "before_us": 2, "after_us": 10, "windows": 2}}]}
# The simulated SoC's main RAM (512 KiB) after the firmware's area and the boot header.
MAIN_RAM_ROOM = 0x80000 - contract.FISRIG_BOOT_PROGRAM_OFFSET - contract.SIZES["fisrig_boot_header"]


def litex_server(bridge_port):
    """LiteX's litex_server on the simulation's bridge (UARTBone over its TCP stream), on a
    port of its own; returns (process, its port) once it listens."""
    port = soc_run.free_port()
    proc = subprocess.Popen([sys.executable, "-m", "litex.tools.litex_server", "--uart", "--uart-port",
                             f"socket://127.0.0.1:{bridge_port}", "--bind-ip", "127.0.0.1", "--bind-port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("litex_server did not start: " + proc.communicate()[0].decode()[-2000:])
            time.sleep(0.1)


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def runs(soc_dir, tmp_path_factory):  # noqa: F811
    """The plan on the simulated board twice, and on --target rtl."""
    p = plan.load(plan.find(PLAN))
    out = tmp_path_factory.mktemp("board")
    firmware = soc_build.build_firmware(soc_dir)
    console, bridge_port = soc_run.boot_resident(soc_dir, str(out / "sim"), firmware, profile=p.profile)
    server = None
    try:
        server, port = litex_server(bridge_port)
        url = f"127.0.0.1:{port}"
        runs = {name: run_plan(p, out / name.replace(" ", "-"), target="board", url=url, quiet=True)
                for name in ("board", "board again")}
        said = io.StringIO()
        with contextlib.redirect_stdout(said):
            runs["timed"] = run_plan(TIMED, out / "timed", target="board", url=url, quiet=False)
        runs["timed said"] = said.getvalue()
        runs["captured"] = run_plan(plan.from_dict(CAPTURED), out / "captured", target="board", url=url, quiet=True)
        with pytest.raises(board_run.BoardRunError) as too_large:
            board_run.run(url, bytes(MAIN_RAM_ROOM + 4), lambda raw: None)
        runs["too large"] = str(too_large.value)
    finally:
        if server:
            stop(server)
        console.close()
    runs["rtl"] = run_plan(p, out / "rtl", target="rtl", quiet=True)
    runs["rtl captured"] = run_plan(plan.from_dict(CAPTURED), out / "rtl-captured", target="rtl", quiet=True)
    for name, r in runs.items():
        assert name in ("too large", "timed said") or r.status == "done", (name, r.outcome)
    return runs


def test_the_board_target_gives_the_rtl_targets_records(runs):
    for board in ("board", "board again"):
        meta = json.loads((runs[board].run_dir / "run.json").read_text())
        assert meta["target"] == "board" and meta["url"].startswith("127.0.0.1:") and meta["link_gen"] is None
        c = compare(runs[board].run_dir, runs["rtl"].run_dir)
        assert c.records[0] == c.records[1] > 300, c.records
        assert not c.mismatches, c.mismatches[:5]
        # A tick and an ALIGN pair each way (report/compare.py allows one pair: an rtl run's commands
        # come at the same ticks after boot, so both ends' ALIGN periods meet them alike run
        # after run). The resident firmware starts a plan when the host's GO reaches it, at no
        # set point of either end's 256-dword ALIGN period, so a short command's window may
        # hold a pair from the rig's side and one from the drive's: the second plan's PIO out
        # can take a pair from each end (docs/performance.md, "Line rate", has the runs).
        slow = [r for r in c.rows if r.what == "latency" and r.diff_pct > 2.0 and r.beyond(align_pairs=2)]
        assert not slow, c.table()


def test_the_board_target_gives_the_rtl_targets_iops(runs):
    """The firmware runs a program from the mailbox as it runs one it was booted with, to the
    CPU cycle: every phase of 16 commands or more has the rtl run's IOPS within 2% (a phase
    of one command is the span of that command, its submit included). Before, the mailbox's
    runs came from a call site of their own, their stack elsewhere against the data cache,
    and the QD1 4 KiB phases ran 3 to 6% fewer IOPS on the board."""
    rtl = {p.label: p for p in runs["rtl"].phases}
    for board in ("board", "board again"):
        off = {p.label: (p.iops, rtl[p.label].iops) for p in runs[board].phases
               if p.commands >= 16 and abs(p.iops - rtl[p.label].iops) > 0.02 * rtl[p.label].iops}
        assert not off, (board, off)
        assert sum(p.commands >= 16 for p in runs[board].phases) >= 10


def test_the_host_says_before_a_run_that_may_outgrow_the_boards_ram(runs):
    """Issue 17 §3: records wait in the board's main RAM; before the run the host says how many
    it holds for this program against the most the plan makes. This run stays under it (the
    host drains as it goes): it did not wait, and says nothing after."""
    said = runs["timed said"]
    meta = json.loads((runs["timed"].run_dir / "run.json").read_text())
    most = meta["estimate"]["records_max"]
    assert most > 2048 and meta["outcome"]["records"] < 2048, (most, meta["outcome"])
    assert (f"fisrig: the run makes up to {most:,} records and the board's main RAM holds 2,048 of them "
            "after the program") in said, said[-2000:]
    assert not runs["timed"].outcome.notes, runs["timed"].outcome.notes


def test_a_program_larger_than_the_boards_ram_is_refused_before_it_is_sent(runs):
    assert f"the program is {MAIN_RAM_ROOM + 4:,} bytes and the board's main RAM holds {MAIN_RAM_ROOM:,}" \
        in runs["too large"]


def test_a_board_that_is_not_serving_says_so_in_a_line(soc_dir, tmp_path):  # noqa: F811
    """The SoC at its BIOS prompt, no firmware booted: the mailbox is empty."""
    port = soc_run.free_port()
    soc_run.prepare(soc_dir, str(tmp_path / "sim"), None, b"", "fast-1gb", "boot_us=100", port)
    console = BiosConsole(soc_dir, sim_dir=str(tmp_path / "sim"))
    server = None
    try:
        server, server_port = litex_server(port)
        with pytest.raises(RuntimeError, match="no resident fisrig firmware answers"):
            run_plan(plan.load(plan.find("smoke-tiny")), tmp_path / "run", target="board",
                     url=f"127.0.0.1:{server_port}", quiet=True)
    finally:
        if server:
            stop(server)
        console.close()


@pytest.mark.parametrize("args, says", [
    (["--target", "board"], "--target board needs --url HOST:PORT"),
    (["--target", "board", "--url", "nonsense"], "--url 'nonsense': give HOST:PORT"),
    (["--target", "board", "--url", "127.0.0.1:99999"], "--url '127.0.0.1:99999': give HOST:PORT"),
    (["--url", "127.0.0.1:1234"], "--url is the board target's"),
    (["--target", "board", "--url", "127.0.0.1:1234", "--fault", "busy_us=5"], "fault knobs are the simulated"),
    (["--target", "board", "--url", "127.0.0.1:1234", "--link-gen", "2"], "a board's link speed is its bitstream's"),
])
def test_bad_board_flags_end_in_one_line(tmp_path, capsys, args, says):
    code, _, err = fisrig(["run", "smoke-tiny", "--out", tmp_path / "run", *args], capsys)
    assert code == 2, err
    assert says in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "run").exists()


def test_no_server_at_the_url_ends_the_run_failed_with_why(tmp_path, capsys):
    code, _, err = fisrig(["run", "smoke-tiny", "--target", "board", "--url", f"127.0.0.1:{soc_run.free_port()}",
                           "--out", tmp_path / "run", "-q"], capsys)
    assert code != 0 and "no litex_server at 127.0.0.1:" in err, err
    assert "Traceback" not in err
    assert '"status": "failed"' in Path(tmp_path / "run" / "run.json").read_text()


def test_the_board_target_drains_the_capture_as_rtl_does(runs):
    """The capture's CSRs and entries at their fixed addresses (rig_capture, no csr.json on the
    host): both windows read through litex_server as the run goes, each fired on an SDB inside
    it; every H2D and SDB in them at the stamp of a record of the run, and every record's H2D
    stamped inside a window in it, as on --target rtl. (A 12 us window may hold no H2D at all:
    an 8 KiB Data FIS takes 14 us of the link, and where the windows fall depends on when the
    host's looks at the ring come.)"""
    import pandas as pd
    from fisrig.capture.format import ticks_to_ns, window_ticks
    for name in ("captured", "rtl captured"):
        run_dir = runs[name].run_dir
        cap, rec = pd.read_parquet(run_dir / "capture.parquet"), pd.read_parquet(run_dir / "records.parquet")
        assert sorted(set(cap["window"])) == [0, 1], name
        for _, w in cap.groupby("window"):
            t = w.iloc[0]
            assert t["kind"] == "trigger" and t["name"] == "fis", name
            assert "set_device_bits" in set(w[w["tick"] == t["tick"]]["name"]), name
            h2d, sdb = (set(w.loc[w["name"] == n, "t_ns"]) for n in ("reg_h2d", "set_device_bits"))
            first, last = (int(ticks_to_ns(x)) for x in window_ticks(t["dwords"]))
            sent = set(rec.loc[(rec["t_h2d_ns"] >= first) & (rec["t_h2d_ns"] <= last), "t_h2d_ns"])
            assert h2d == sent, name
            assert sdb and sdb <= set(rec["t_status_ns"]), name
