"""The model target against the gateware on the same plan (issue 13, section 2; DESIGN.md,
decision 7): the built-in plan targets-agree (one command at a time: IDENTIFY, 4 KiB and
128 KiB reads and writes by NCQ and by DMA, TRIM queued and not, FLUSH, a READ DMA EXT
past the end and SECURITY SET PASSWORD, a PIO data-out) runs on both targets, and fisrig.compare holds them to each other:

- record by record, in completion order: the same commands (opcode, LBA, LBAs covered), the
  same result, status, error, D2H LBA, sectors and data dwords, the same phases stamped;
- per plan phase, the latency (ts_status - ts_h2d) at the median and the p99: within 2% of
  the gateware's, or within an ALIGN pair and a tick (report/compare.py says why), for every phase. Every stamp relative to ts_h2d is
  compared and printed too;
- per plan phase, its IOPS (commands over first submit to last status), within 2% where
  the phases' spans are more than an ALIGN pair and a tick apart: the rig's CPU's time
  between commands counts there, and the model counts it (sim/model/vm_cpu_time.h);
- per plan phase, every figure a user publishes (issue 58, section 2): IOPS, MB/s, and the
  latency from submit to status (mean, p50, p99, p99.9, max) as the headline and
  summary.json give them, within 2% (or a tick and an ALIGN pair: compare.Figure);
  tests/rtl/test_line_rate.py holds targets-agree-qd32 to the same.

Why ts_h2d and not ts_submit is the baseline is in host/fisrig/report/compare.py: the time from
taking the descriptor to the H2D is the engine's fetch over the bus it shares with the
rig's CPU, which the model does not have; it is printed with the table, not gated.

The profile is fast-1gb (a drive that is never the limit), so what the times show is the
wire and the rig, not NAND; the rtl run is about 30 ms of drive time (a minute of wall
time once the SoC is built)."""
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fisrig import plan
from fisrig.report.compare import compare
from fisrig.run import run_plan

TOLERANCE_PCT = 2.0


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The plan on the model, on the gateware, and on the gateware again."""
    p = plan.load(plan.find("targets-agree"))
    out = tmp_path_factory.mktemp("agree")
    runs = {name: run_plan(p, out / name, target=name.split()[0], quiet=True, keep_raw=True)
            for name in ("model", "rtl", "rtl again")}  # the raw streams are compared byte for byte
    for name, r in runs.items():
        assert r.status == "done", (name, r.outcome)
    return runs


@pytest.fixture(scope="module")
def comparison(runs):
    return compare(runs["model"].run_dir, runs["rtl"].run_dir)


def test_the_gateware_repeats_a_plan_tick_for_tick(runs):
    """The rtl target is a simulation: the same plan gives the same records, every stamp to
    the tick. It did not while the host's wall time reached into it (the BIOS's "boot" and
    the ring's drain over the shared bus, fisrig_hw.soc.tick_gate): single commands moved 2 to 3
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
# engine's reads of RAM as bursts (fisrig_hw.soc.burst_reader: a TRIM's range list took 1.7 us
# against 0.85, 22% on its latency, and IDENTIFY came out 1 to 7% over between SoC builds);
# the drive booking a queued DSM's DMA Activate after its DMA Setup as for a queued write;
# the rig's 6-tick turnaround before its data-out (WireStamps::kHostDataTurnaroundTicks;
# SECURITY SET PASSWORD was 5% over). A one-command phase (IDENTIFY, FLUSH, the error, the
# PIO out) is one sample: a change of firmware or gateware that moves its command onto one
# of the link's ALIGN pairs moves it 2 or 3 ticks, which the tick does not cover at 100 ns.


def latency_rows(comparison, pct):
    return {r.phase for r in comparison.failing(pct) if r.what == "latency"}


def test_command_latency_within_two_percent_for_every_phase(comparison):
    """The median and p99 of ts_status - ts_h2d of every phase within 2% (or an ALIGN pair and a tick) of the
    gateware's; every stamp's differences are printed for the note."""
    print(comparison.table(only_failing=TOLERANCE_PCT))
    phases = {r.phase for r in comparison.rows}
    assert len(phases) >= 14, phases
    over = latency_rows(comparison, TOLERANCE_PCT)
    assert not over, f"model (a) against rtl (b), latency over {TOLERANCE_PCT}%:\n" + \
        comparison.table(only_failing=TOLERANCE_PCT)


def test_phase_iops_within_two_percent_for_every_phase(comparison):
    """Each phase's IOPS (commands over its first submit to its last status) within 2% of
    the gateware's, of the phases whose spans are more than an ALIGN pair and a tick apart
    (a one-command phase's IOPS is its latency's inverse). At queue depth 1 they are the
    rig's CPU's as much as the wire's: 8.2 to 8.7 us from a status to the next submit on the
    gateware, 0.06 on the model before it counted the CPU's time (sim/model/vm_cpu_time.h),
    and its 4 KiB phases ran 110 to 116% faster, its TRIMs 870%."""
    over = {p: (a, b) for p, (a, b) in comparison.iops.items()
            if b and comparison.iops_beyond_a_tick(p) and abs(a - b) * 100 / b > TOLERANCE_PCT}
    assert not over, f"model against rtl, IOPS over {TOLERANCE_PCT}%: {over}"
    assert comparison.worst_iops_pct <= TOLERANCE_PCT


def test_every_published_figure_within_two_percent(comparison):
    """Issue 58, section 2: what a user publishes of each phase (IOPS, MB/s, latency from
    submit to status: mean, p50, p99, p99.9, max) within 2% of the gateware's, or a tick
    and an ALIGN pair (scripts/bench_targets.py: model_vs_rtl.published_err_pct, the worst
    of this plan's and targets-agree-qd32's)."""
    print("\n".join(comparison.published_table(TOLERANCE_PCT)))
    assert len(comparison.published) == 7 * len({r.phase for r in comparison.rows})
    over = comparison.published_failing(TOLERANCE_PCT)
    assert not over, f"model (A) against rtl (B), published figures over {TOLERANCE_PCT}%: " + \
        ", ".join(f"{f.phase} {f.what} {f.a:,.0f} against {f.b:,.0f} ({f.diff_pct:.2f}%)" for f in over)


NCQ_ERROR_PLAN = {
    "plan": {"name": "ncq-error", "profile": "fast-1gb",
             "description": "queued reads, one over a UNC sector, queued reads again"},
    "step": [
        {"do": "workload", "label": "before", "read_pct": 100, "transfer_kib": 4, "queue_depth": 1,
         "ncq": True, "lba_count": 4096, "commands": 16},
        # READ FPDMA QUEUED of 8 sectors from 1000, whose third (1002) reads UNC.
        {"do": "raw", "label": "unc", "command": 0x60, "lba": 1000, "features": 8, "expect": "error"},
        {"do": "workload", "label": "after", "read_pct": 100, "transfer_kib": 4, "queue_depth": 1,
         "ncq": True, "lba_count": 4096, "commands": 16},
    ],
}


@pytest.fixture(scope="module")
def ncq_error(tmp_path_factory):
    p = plan.from_dict(NCQ_ERROR_PLAN)
    out = tmp_path_factory.mktemp("ncq-error")
    runs = {t: run_plan(p, out / t, target=t, quiet=True, faults=["unc=1002+1"]) for t in ("model", "rtl")}
    return runs, compare(runs["model"].run_dir, runs["rtl"].run_dir)


def test_an_ncq_error_is_recovered_alike_on_both_targets(ncq_error):
    """An NCQ error halts the drive's queue until log 10h is read. The gateware reads it
    itself and ends the failing command with the log's status, error and LBA; the model did
    not, so every queued command after it ended NCQ_ABORTED there and OK on the gateware.
    Now both: the failing read ATA_ERROR (UNC, at LBA 1002, its two good sectors moved), the
    reads after it OK, the same records and every phase's latency within 2%."""
    runs, c = ncq_error
    print(c.table(only_failing=TOLERANCE_PCT))
    assert not c.mismatches, "\n".join(c.mismatches)
    cols = pq.read_table(runs["model"].run_dir / "records.parquet").to_pydict()
    rows = [dict(zip(cols, r)) for r in zip(*cols.values()) if dict(zip(cols, r))["kind"] == "command"]
    unc = [r for r in rows if r["marker"] == "unc"]
    assert [(r["result"], r["error"], r["d2h_lba"], r["sectors"]) for r in unc] == [("ata_error", 0x40, 1002, 2)]
    assert all(r["result"] == "ok" for r in rows if r["marker"] == "after") and \
        sum(r["marker"] == "after" for r in rows) == 16
    assert not latency_rows(c, TOLERANCE_PCT), c.table(only_failing=TOLERANCE_PCT)
