"""The charts: every kind drawn from a real run, each only when it has something to show,
latency over time decimated without losing an outlier, the figures it takes from the
records (transfer sizes and directions, fill times) as the records say, and the chart
drawn in a child process the same as drawn here, whatever becomes of the child."""
import json
import os
import time

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image

from fisrig.analysis import phase_stats
from fisrig import plan
from fisrig.report import build as report
from fisrig.report import plots
from fisrig.run import run_plan

ALL_CHARTS = ["iops_over_time.png", "iops_per_100k.png", "mbps_across_lba.png", "latency_percentiles.png", "latency_over_time.png",
              "transfer_sizes.png", "fill_times.png", "fill_mbps.png"]
SIZES_KIB = (4, 16, 64, 256)


def every_chart_plan(description="every chart on the 1 GB test drive"):
    """A run that draws every chart: a sweep, two fills with a TRIM between (fill times and speeds),
    one workload phase per transfer size and direction (the transfer-size sweep) and a
    QD32 torture (IOPS)."""
    steps = [{"do": "secure_erase", "label": "secure erase"},
             {"do": "sweep", "label": "clean", "zones": 8, "zone_mib": 4},
             {"do": "fill", "label": "fill 1", "span_pct": 25},
             {"do": "trim", "label": "delete"},
             {"do": "fill", "label": "fill 2 (TRIM on)", "span_pct": 25}]
    for kib in SIZES_KIB:
        for d, read_pct in (("write", 0), ("read", 100)):
            steps.append({"do": "workload", "label": f"{d} {kib} KiB", "pattern": "sequential", "transfer_kib": kib,
                          "queue_depth": 4, "read_pct": read_pct, "lba_count": 65536, "gib": 0.01})
    steps.append({"do": "workload", "label": "torture", "transfer_kib": 4, "queue_depth": 32, "commands": 5000})
    return plan.from_dict({"plan": {"name": "every-chart", "description": description, "profile": "tiny-1gb"},
                           "step": steps}, "<every-chart>")


@pytest.fixture(scope="module")
def every_chart(tmp_path_factory):
    return run_plan(every_chart_plan(), tmp_path_factory.mktemp("charts") / "run", quiet=True)


def test_every_chart_is_drawn_with_its_caption(every_chart):
    assert every_chart.status == "done"
    assert [p.name for p in every_chart.plots] == ALL_CHARTS
    for path in every_chart.plots:
        img = Image.open(path)
        assert img.size[0] == 1100 and "plan every-chart" in img.text["Description"], path.name
        assert sum(1 for c in img.convert("L").histogram() if c) > 20, f"{path.name} looks blank"


def _table(rows):
    """Records as records.parquet holds them: (label, opcode, lbas, t_submit, t_status[, result])."""
    cols = list(zip(*rows))
    t0, t1 = np.array(cols[3], dtype=np.int64), np.array(cols[4], dtype=np.int64)
    n = len(rows)
    return pa.table({
        "marker": pa.array(cols[0]).dictionary_encode(), "kind": pa.array(["command"] * n).dictionary_encode(),
        "result": pa.array(list(cols[5]) if len(cols) > 5 else ["ok"] * n).dictionary_encode(),
        "lba": np.arange(n, dtype=np.uint64) * 8, "lbas": np.array(cols[2], dtype=np.uint32),
        "sectors": np.array(cols[2], dtype=np.uint32), "t_submit_ns": t0, "t_status_ns": t1,
        "latency_ns": t1 - t0, "command": np.array(cols[1], dtype=np.uint8), "detail": np.zeros(n, dtype=np.uint8)})


def _workloads(*labels):
    return {"plan": {"name": "t", "steps": [{"do": "workload", "label": lb} for lb in labels]}}


def test_latency_over_time_keeps_every_outlier_and_counts_every_command():
    # 200,000 commands at 100 us, one of 50 ms in their middle, and one that failed (not counted).
    n = 200_000
    rows = [("w", 0x61, 8, 1000 * i, 1000 * i + 100_000, "ok") for i in range(n)]
    rows[n // 2] = ("w", 0x61, 8, 1000 * (n // 2), 1000 * (n // 2) + 50_000_000, "ok")
    rows[7] = ("w", 0x61, 8, 7000, 7000 + 900_000_000, "timeout")
    (p,) = phase_stats.compute(_table(rows), _workloads("w"))
    cells = plots.latency_cells([p])
    (_, grid), = cells.counts
    assert grid.shape == (plots.TIME_CELLS, plots.LATENCY_CELLS)
    assert grid.sum() == n - 1  # every command that completed OK, once
    assert (grid > 0).sum() <= 2 * plots.TIME_CELLS  # the dots: a cell each, not a command each
    # The outlier has a cell of its own, at its time, whose latency range holds 50 ms.
    tc, lc = np.nonzero(grid)
    top = lc.argmax()
    assert cells.latency_ns(lc[top], 0) <= 50_000_000 < cells.latency_ns(lc[top], 1)
    assert grid[tc[top], lc[top]] == 1
    assert abs(cells.time_ns(tc[top]) - (1000 * (n // 2) + 50_000_000)) <= cells.span / plots.TIME_CELLS
    # The 900 ms timeout did not stretch the latency axis: only OK commands are drawn.
    assert cells.latency_ns(plots.LATENCY_CELLS, 0) < 900_000_000


def test_a_handful_of_commands_draws_no_latency_chart(tmp_path):
    (p,) = phase_stats.compute(_table([("w", 0x61, 8, 0, 100)]), _workloads("w"))
    assert plots.latency_cells([p]) is None
    assert not plots.plot_latency_time([plots.Series([p], {})], tmp_path / "l.png", "c")
    assert not (tmp_path / "l.png").exists()


def _size_phases(sizes_kib, ops=(0x61,)):
    rows, labels, t = [], [], 0
    for op in ops:
        for kib in sizes_kib:
            label = f"{'read' if op in (0x25, 0x60) else 'write'} {kib} KiB"
            labels.append(label)
            for _ in range(50):
                rows.append((label, op, kib * 2, t, t + 10_000 * kib))
                t += 10_000 * kib
    return phase_stats.compute(_table(rows), _workloads(*labels))


def test_transfer_sizes_are_taken_from_the_records(tmp_path):
    ph = _size_phases((4, 16, 64), ops=(0x61, 0x60))
    assert [plots._one_size(p) for p in ph] == [(2, 4096), (2, 16384), (2, 65536), (1, 4096), (1, 16384), (1, 65536)]
    assert plots.plot_sizes([plots.Series(ph, {})], tmp_path / "s.png", "c")
    # Two sizes are no sweep (a torture plan's 4 KiB and 128 KiB phases), nor is a phase of mixed sizes.
    assert not plots.plot_sizes([plots.Series(_size_phases((4, 128)), {})], tmp_path / "two.png", "c")
    rows = [("mixed", 0x61, 8 * (1 + i % 2), 100 * i, 100 * i + 50) for i in range(40)]
    (p,) = phase_stats.compute(_table(rows), _workloads("mixed"))
    assert plots._one_size(p) is None


def test_fill_times_need_two_fills(tmp_path):
    rows = [(lb, 0x61, 256, 1_000_000 * i + off, 1_000_000 * i + off + 900_000)
            for off, lb in ((0, "fill 1"), (10**9, "fill 2 (TRIM on)")) for i in range(30)]
    steps = {"plan": {"name": "t", "steps": [{"do": "fill", "label": "fill 1"}, {"do": "fill", "label": "fill 2 (TRIM on)"}]}}
    ph = phase_stats.compute(_table(rows), steps)
    assert [p.kind for p in ph] == ["fill", "fill"] and ph[1].seconds == pytest.approx(0.0299)
    assert plots.plot_fill_times([plots.Series(ph, {})], tmp_path / "f.png", "c")
    assert not plots.plot_fill_times([plots.Series(ph[:1], {})], tmp_path / "one.png", "c")


def test_the_main_jobs_shape_draws_no_transfer_size_chart(tmp_path):
    """Fills and sweeps of 128 KiB and tortures of 4 KiB, as the main job: no size sweep,
    and the fill chart of its two fills."""
    rows = [(lb, 0x61, kib * 2, 1000 * i + off, 1000 * i + off + 500) for off, lb, kib in
            ((0, "fill", 128), (10**8, "torture", 4), (2 * 10**8, "fill again", 128), (3 * 10**8, "torture again", 4))
            for i in range(100)]
    meta = {"plan": {"name": "t", "steps": [{"do": "fill", "label": "fill"}, {"do": "workload", "label": "torture"},
                                             {"do": "fill", "label": "fill again"},
                                             {"do": "workload", "label": "torture again"}]}}
    ph = phase_stats.compute(_table(rows), meta)
    drawn = report.make_report(tmp_path, _table(rows), meta, ph)[1]
    assert "transfer_sizes.png" not in [p.name for p in drawn] and "fill_times.png" in [p.name for p in drawn]


def test_docs_name_every_chart():
    from pathlib import Path

    from fisrig.report import compare_html as report_compare
    doc = (Path(__file__).resolve().parents[2] / "docs" / "report.md").read_text()
    missing = [name for name in [*report.PLOTS, *report_compare.PLOTS, "report.html", "compare.html"]
               if f"`{name}`" not in doc]
    assert not missing, f"docs/report.md does not name: {missing}"


def _draw_into(every_chart, out):
    out.mkdir()
    meta = json.loads((every_chart.run_dir / "run.json").read_text())
    return [p.name for p in report.draw_plots([plots.Series(every_chart.phases, meta)], out, plots.caption(meta))]


def _pixels(path):
    return Image.open(path).convert("RGB").tobytes()


@pytest.mark.parametrize("child", ["draws", "cannot be made", "fails", "hangs"])
def test_the_chart_drawn_apart_is_drawn_here_when_its_child_does_not(every_chart, tmp_path, monkeypatch, child):
    """report.APART's charts come from a child process: the same chart as drawn here; and
    when there is no child, or it fails or hangs (killed after CHILD_WAIT_S), drawn here."""
    (name,) = report.APART
    parent, draw = os.getpid(), report.PLOTS[name]

    def in_child(*args):
        if os.getpid() != parent:
            if child == "fails":
                raise RuntimeError("a chart that fails")
            if child == "hangs":
                time.sleep(600)
        return draw(*args)
    monkeypatch.setitem(report.PLOTS, name, in_child)
    monkeypatch.setattr(report, "CHILD_WAIT_S", 2)
    if child == "cannot be made":
        monkeypatch.setattr(os, "fork", lambda: (_ for _ in ()).throw(OSError(11, "no more processes")))
    t0 = time.monotonic()
    assert _draw_into(every_chart, tmp_path / "run") == ALL_CHARTS
    assert time.monotonic() - t0 < 30
    assert _pixels(tmp_path / "run" / name) == _pixels(every_chart.run_dir / name)


def test_a_long_legend_widens_the_chart_not_squeezes_its_axes(tmp_path):
    """A SNIA PTS run draws 57 curves with long labels (three legend columns), two compared
    116 (five): the figure grows by the legend, its axes keep their width, and matplotlib
    lays it out without its "tight layout not applied" warning. A short legend changes
    nothing."""
    import warnings

    def draw(curves, label):
        fig, ax = plots._axes(curves)
        for i in range(curves):
            ax.plot([0, 1], [i, i + 1], label=label.format(i))
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            assert plots.finish(fig, ax, tmp_path / f"{curves}.png", "x", "y", "title", "caption")
        assert not said, [str(w.message) for w in said]
        return fig.get_figwidth(), ax.get_position().width * fig.get_figwidth()

    assert draw(6, "fill {}")[0] == 10  # as made
    for curves, label in ((57, "IOPS {} KiB 65/35 (per 100,000 commands)"), (116, "run {}: IOPS 1024 KiB 65/35")):
        width, axes = draw(curves, label)
        assert width > 10 and axes > 5.5, (curves, width, axes)


def test_a_looped_phase_s_iops_windows_count_its_own_time_only():
    """A PTS cell's commands come in visits, a round apart: a window that spans two visits
    counts the phase's own time (plots._own_time), not the round between them."""
    class Rows:
        def __init__(self, t, visits):
            self.t, self._visits = t, visits

        def visits(self):
            return self._visits

    class Phase:
        def __init__(self, rows):
            self.rows, self.t_status_ns = rows, rows.t

    t = np.concatenate([np.arange(0, 1000, 10), 10**9 + np.arange(0, 1000, 10)])  # two visits, 1 s apart
    own = plots._own_time(Phase(Rows(t, [slice(0, 100), slice(100, 200)])), t)
    # 10 ns between statuses within a visit; the next visit's first status where the last one's was.
    assert np.array_equal(np.diff(own), np.r_[np.full(99, 10), 0, np.full(99, 10)])
    assert plots._own_time(Phase(Rows(t, [slice(0, 200)])), t) is t  # one visit: its time as it is
    shuffled = t[::-1].copy()
    assert plots._own_time(Phase(Rows(shuffled, [slice(0, 100), slice(100, 200)])), t) is t  # rows not in order
