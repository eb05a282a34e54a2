"""The rig's firmware on Zephyr (firmware/zephyr, issue 18) on the simulated rig SoC: the same
plan gives the same commands, answers and records as the bare-metal firmware, phase latencies
within 2%; its shell answers on the UART (version, status, selftest, run, abort); a malformed
program given through the mailbox is refused and the firmware serves the next. Needs a Zephyr
4.3 tree at ZEPHYR_BASE (docs/zephyr.md): without one every test here skips, and says why."""
import json
import re
import time

import pytest
from test_board_target import litex_server, stop
from test_sim_soc import soc_dir  # noqa: F401  (the SoC built once for the files that use it)

from fisrig import plan
from fisrig.report.compare import compare
from fisrig.targets.rig import board_run, soc_run
from fisrig.run import prepare, run_plan
from fisrig_hw import contract
from fisrig_hw.soc import soc_build, zephyr_build

pytestmark = pytest.mark.skipif(zephyr_build.zephyr_base() is None,
                                reason="no Zephyr tree: set ZEPHYR_BASE to a Zephyr 4.3 tree (docs/zephyr.md)")
PLAN = "targets-agree"


@pytest.fixture(scope="module")
def zephyr_image(soc_dir):  # noqa: F811
    return zephyr_build.build(soc_dir)


def test_the_same_plan_gives_the_same_records_on_either_firmware(zephyr_image, tmp_path):
    p = plan.load(plan.find(PLAN))
    runs = {fw: run_plan(p, tmp_path / fw, target="rtl", firmware=fw, quiet=True) for fw in ("baremetal", "zephyr")}
    for fw, r in runs.items():
        assert r.status == "done", (fw, r.outcome)
        assert json.loads((r.run_dir / "run.json").read_text())["firmware"] == fw
    assert "Booting Zephyr OS build" in (runs["zephyr"].run_dir / "console.log").read_text()
    c = compare(runs["baremetal"].run_dir, runs["zephyr"].run_dir)
    assert c.records[0] == c.records[1] > 300, c.records
    assert not c.mismatches, c.mismatches[:5]
    slow = [r for r in c.rows if r.what == "latency" and r.beyond_a_tick and r.diff_pct > 2.0]
    assert not slow, c.table()


class Shell:
    """The Zephyr firmware booted resident (no program), its shell on the simulated UART and
    LiteX's litex_server on its bridge (at `url`: the simulation's bridge takes one connection,
    so every bridge access here goes through the server)."""
    def __init__(self, soc_dir, image, sim_dir, profile):
        self.lines = []
        self.console, bridge_port = soc_run.boot_resident(soc_dir, sim_dir, image, profile=profile,
                                                          on_console=self.lines.append)
        self.server, port = litex_server(bridge_port)
        self.url = f"127.0.0.1:{port}"

    def close(self):
        stop(self.server)
        self.console.close()

    def until(self, pattern, timeout=120):
        """The lines up to the first that matches pattern (a regex), and its match."""
        deadline, seen = time.monotonic() + timeout, []
        while time.monotonic() < deadline:
            line = self.console.read_line(max(1, deadline - time.monotonic()))
            seen.append(line)
            m = re.search(pattern, line)
            if m:
                return seen, m
        raise AssertionError(f"no {pattern!r} in {seen}")

    def ask(self, command, pattern, timeout=120):
        """command's answer: what came before it (an earlier answer's other lines) is dropped."""
        while self.console.poll_line() is not None:
            pass
        self.console.send(command)
        return self.until(pattern, timeout)[1]


@pytest.fixture(scope="module")
def shell(soc_dir, zephyr_image, tmp_path_factory):  # noqa: F811
    sh = Shell(soc_dir, zephyr_image, str(tmp_path_factory.mktemp("zephyr") / "sim"),
               plan.load(plan.find(PLAN)).profile)
    sh.until(r"fisrig firmware: shell at tick (\d+), (\d+) ticks after the first instruction")
    yield sh
    sh.close()


def test_the_shell_answers_on_the_uart(shell):
    m = shell.ask("fisrig version", r"fisrig firmware on Zephyr (\S+): program format (\d+), engine interface (\d+), "
                                    r"run record (\d+) bytes")
    assert m.group(1).startswith("4.3") and (int(m.group(2)), int(m.group(3)), int(m.group(4))) == (
        contract.FISRIG_PROGRAM_VERSION, contract.FISRIG_ENGINE_IF_VERSION, contract.SIZES["fisrig_run_record"])
    assert shell.ask("fisrig selftest", r"fisrig selftest: (PASS|FAIL).*").group(1) == "PASS"
    m = shell.ask("fisrig status", r"state (\w+), runs (\d+), link (\w+), tick (\d+)")
    assert (m.group(1), m.group(3)) == ("idle", "up")
    assert shell.ask("fisrig abort", r"fisrig abort: .*").group(0).endswith("nothing is running")
    assert "not \"elsewhere\"" in shell.ask("fisrig run elsewhere", r"fisrig run: .*").group(0)


def test_a_malformed_program_is_refused_and_the_firmware_serves_on(shell, tmp_path):
    p = plan.load(plan.find(PLAN))
    good = prepare(p).compiled.program
    for bad in (b"\xde\xad\xbe\xef" * 16, good[:len(good) // 2], b""):
        o = board_run.run(shell.url, bad, lambda raw: None)
        assert o["status"] == "bad_program" and o["commands"] == 0, o
    r = run_plan(p, tmp_path / "after", target="board", url=shell.url, quiet=True)
    assert r.status == "done" and r.outcome.records > 0, r.outcome
    m = shell.ask("fisrig status", r"state (\w+), runs (\d+), link (\w+)")
    assert (m.group(1), int(m.group(2))) == ("idle", 4)


def test_the_shell_runs_the_program_in_ram_and_stops_it(shell):
    """A program of more records than the ring holds, put in main RAM through the bridge, run
    from the shell with nobody draining: the firmware waits for the host, `fisrig status`
    says it runs, `fisrig abort` ends it, stopped, its records kept in the ring."""
    qd32 = prepare(plan.load(plan.find("targets-agree-qd32")))
    long = qd32.compiled.program
    link = board_run.BoardLink(*board_run.parse_url(shell.url))
    link.open()
    try:
        link.write_bytes(board_run.MAIN_RAM_BASE + contract.FISRIG_BOOT_PROGRAM_OFFSET, soc_build.boot_block(long))
        room = link.read(board_run.MAILBOX + contract.FIELDS["fisrig_mailbox"]["program_room"][0])
    finally:
        link.close()
    entries = soc_run.ring_entries(len(long), room)  # in main RAM after the program (baremetal_if.h)
    assert qd32.estimate.records > entries
    shell.ask("fisrig run", r"fisrig run: the program in main RAM, records to the ring")
    deadline = time.monotonic() + 300
    while True:
        m = shell.ask("fisrig status", r"run: commands (\d+), records (\d+) \(to the ring\)")
        if int(m.group(2)) >= entries or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert int(m.group(2)) == entries, m.group(0)  # full: it waits for the host
    shell.ask("fisrig abort", r"fisrig abort: the run stops")
    outcome = json.loads(shell.until(r"^\{.*\}$")[1].group(0))
    assert outcome["status"] == "stopped" and outcome["records"] == entries, outcome
