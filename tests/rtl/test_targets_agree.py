"""The model target against the gateware on the same plan (issue 13, section 2; DESIGN.md,
decision 7): the built-in plan targets-agree (one command at a time: IDENTIFY, 4 KiB and
128 KiB reads and writes by NCQ and by DMA, TRIM queued and not, FLUSH, and a READ DMA EXT
past the end) runs on both targets, and fisrig.compare holds them to each other:

- record by record, in completion order: the same commands (opcode, LBA, LBAs covered), the
  same result, status, error, D2H LBA, sectors and data dwords, the same phases stamped;
- per plan phase, the latency (ts_status - ts_h2d) at the median and the p99: within 2% of
  the gateware's, or within one tick, for every read and write phase; the phases that are
  not yet (NOT_YET_WITHIN, with why) are named exactly. Every stamp relative to ts_h2d is
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
def comparison(tmp_path_factory):
    p = plan.load(plan.find("targets-agree"))
    out = tmp_path_factory.mktemp("agree")
    runs = {t: run_plan(p, out / t, target=t, quiet=True) for t in ("model", "rtl")}
    for t, r in runs.items():
        assert r.status == "done", (t, r.outcome)
    return compare(runs["model"].run_dir, runs["rtl"].run_dir)


def test_the_plan_has_every_kind_of_command(comparison):
    phases = {r.phase for r in comparison.rows}
    assert {"identify", "ncq write 4k", "ncq read 4k", "dma write 4k", "dma read 4k", "ncq write 128k",
            "ncq read 128k", "dma write 128k", "dma read 128k", "trim queued", "trim", "flush",
            "error"} <= phases, phases
    assert comparison.records[0] == comparison.records[1] == 1 + 4 * 64 + 4 * 16 + 2 * 16 + 2


def test_same_commands_same_order_same_answers(comparison):
    assert not comparison.mismatches, "\n".join(comparison.mismatches)


# Phases whose command latency the model does not yet hold within 2% of the gateware, and
# why (measured on this plan, docs/model-target.md): IDENTIFY, FLUSH and the failing READ
# are a few hundred ns from H2D to status, and each turnaround on the rig's wire (the SoC's
# drive module answers a cycle after the edge; LiteSATA's R_RDY) costs ticks the model's
# 8-dword framing does not have: 100 against 180 ns; a DSM range list comes from the rig's
# RAM over Wishbone at about half the link's rate (1.7 against 0.85 us for its 128 dwords).
# The set is exact: a phase that starts to agree, or one that stops, fails this test.
NOT_YET_WITHIN = {"identify", "trim queued", "trim", "flush", "error"}


def latency_rows(comparison, pct):
    return {r.phase for r in comparison.failing(pct) if r.what == "latency"}


def test_command_latency_within_two_percent_for_every_data_phase(comparison):
    """Every QD1 read and write phase (4 KiB and 128 KiB, NCQ and DMA): the median and p99
    of ts_status - ts_h2d within 2% (or a tick) of the gateware's."""
    data_phases = {r.phase for r in comparison.rows} - NOT_YET_WITHIN
    assert len(data_phases) >= 8, data_phases
    over = latency_rows(comparison, TOLERANCE_PCT) & data_phases
    assert not over, f"model (a) against rtl (b), latency over {TOLERANCE_PCT}%:\n" + \
        comparison.table(only_failing=TOLERANCE_PCT)


def test_the_phases_not_yet_within_two_percent_are_the_known_ones(comparison):
    """The short commands and the RAM-sourced TRIMs are not yet within 2% (see
    NOT_YET_WITHIN): exactly those, so that a fix or a regression shows here. Every stamp's
    differences are printed for the note."""
    print(comparison.table(only_failing=TOLERANCE_PCT))
    assert latency_rows(comparison, TOLERANCE_PCT) == NOT_YET_WITHIN, comparison.table(only_failing=TOLERANCE_PCT)
