"""The model target against the gateware on the same plan (issue 13, section 2; DESIGN.md,
decision 7): the built-in plan targets-agree (one command at a time: IDENTIFY, 4 KiB and
128 KiB reads and writes by NCQ and by DMA, TRIM queued and not, FLUSH, a READ DMA EXT
past the end and SECURITY SET PASSWORD, a PIO data-out) runs on both targets, and fisrig.compare holds them to each other:

- record by record, in completion order: the same commands (opcode, LBA, LBAs covered), the
  same result, status, error, D2H LBA, sectors and data dwords, the same phases stamped;
- per plan phase, the latency (ts_status - ts_h2d) at the median and the p99: within 2% of
  the gateware's, or within one tick, for every phase. Every stamp relative to ts_h2d is
  compared and printed too.

Why ts_h2d and not ts_submit is the baseline is in host/fisrig/compare.py: the time from
taking the descriptor to the H2D is the engine's fetch over the bus it shares with the
rig's CPU, which the model does not have; it is printed with the table, not gated.

The profile is fast-1gb (a drive that is never the limit), so what the times show is the
wire and the rig, not NAND; the rtl run is about 30 ms of drive time (a minute of wall
time once the SoC is built)."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "host"))

from fisrig import plan  # noqa: E402
from fisrig.compare import compare  # noqa: E402
from fisrig.run import run_plan  # noqa: E402

TOLERANCE_PCT = 2.0


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The plan on the model, on the gateware, and on the gateware again."""
    p = plan.load(plan.find("targets-agree"))
    out = tmp_path_factory.mktemp("agree")
    runs = {name: run_plan(p, out / name, target=name.split()[0], quiet=True)
            for name in ("model", "rtl", "rtl again")}
    for name, r in runs.items():
        assert r.status == "done", (name, r.outcome)
    return runs


@pytest.fixture(scope="module")
def comparison(runs):
    return compare(runs["model"].run_dir, runs["rtl"].run_dir)


def test_the_gateware_repeats_a_plan_tick_for_tick(runs):
    """The rtl target is a simulation: the same plan gives the same records, every stamp to
    the tick. It did not while the host's wall time reached into it (the BIOS's "boot" and
    the ring's drain over the shared bus, fisrig_hw.tick_gate): single commands moved 2 to 3
    ticks between runs against the link's ALIGN pairs, and a one-command phase's latency
    with them. Neither run says it started late or waited for the host."""
    first, again = (runs[n].run_dir / "records.bin" for n in ("rtl", "rtl again"))
    assert first.read_bytes() == again.read_bytes()
    assert runs["rtl"].outcome.notes == runs["rtl again"].outcome.notes == []


def test_the_plan_has_every_kind_of_command(comparison):
    phases = {r.phase for r in comparison.rows}
    assert {"identify", "ncq write 4k", "ncq read 4k", "dma write 4k", "dma read 4k", "ncq write 128k",
            "ncq read 128k", "dma write 128k", "dma read 128k", "trim queued", "trim", "flush",
            "error", "pio out"} <= phases, phases
    assert comparison.records[0] == comparison.records[1] == 1 + 4 * 64 + 4 * 16 + 2 * 16 + 3


def test_same_commands_same_order_same_answers(comparison):
    assert not comparison.mismatches, "\n".join(comparison.mismatches)


# Every phase's command latency within 2% of the gateware's, or within a tick. What it took
# (docs/model-target.md): the device side sending each FIS at the start of the drive's
# booking for it (IDENTIFY, FLUSH and the failing READ were 100 against 180 ns); the
# engine's reads of RAM as bursts (fisrig_hw.burst_reader: a TRIM's range list took 1.7 us
# against 0.85, 22% on its latency, and IDENTIFY came out 1 to 7% over between SoC builds);
# the drive booking a queued DSM's DMA Activate after its DMA Setup as for a queued write;
# the rig's 6-tick turnaround before its data-out (WireStamps::kHostDataTurnaroundTicks;
# SECURITY SET PASSWORD was 5% over). A one-command phase (IDENTIFY, FLUSH, the error, the
# PIO out) is one sample: a change of firmware or gateware that moves its command onto one
# of the link's ALIGN pairs moves it 2 or 3 ticks, which the tick does not cover at 100 ns.


def latency_rows(comparison, pct):
    return {r.phase for r in comparison.failing(pct) if r.what == "latency"}


def test_command_latency_within_two_percent_for_every_phase(comparison):
    """The median and p99 of ts_status - ts_h2d of every phase within 2% (or a tick) of the
    gateware's; every stamp's differences are printed for the note."""
    print(comparison.table(only_failing=TOLERANCE_PCT))
    phases = {r.phase for r in comparison.rows}
    assert len(phases) >= 14, phases
    over = latency_rows(comparison, TOLERANCE_PCT)
    assert not over, f"model (a) against rtl (b), latency over {TOLERANCE_PCT}%:\n" + \
        comparison.table(only_failing=TOLERANCE_PCT)
