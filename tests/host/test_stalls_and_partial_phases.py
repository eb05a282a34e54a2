"""What a reviewer looks for first is shown, and a phase cut short says so (issue 58, section 3):
mean and max latency on the headline and report.html, each phase's ten slowest commands,
a phase the run's stop cut short marked partial in the headline, summary.json and the
report, IOPS over time as well as over commands, figures written as a reviewer reads them,
and which drive and target produced the report."""
import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from fisrig.analysis import figure_text
from fisrig.analysis import phase_stats
from fisrig.report import build as report
from fisrig import program_format as pf

from test_bad_inputs import fisrig


def _jobs(run_dir):
    return {j["jobname"]: j for j in json.loads((run_dir / "summary.json").read_text())["jobs"]}


def test_mean_and_max_are_fios_and_on_every_headline_line(smoke_run):
    jobs = _jobs(smoke_run.run_dir)
    torture = jobs["torture"]
    lat = torture["fisrig"]["latency_ns"]
    assert lat["max"] == torture["write"]["clat_ns"]["max"]
    assert lat["mean"] == pytest.approx(torture["write"]["clat_ns"]["mean"])
    assert lat["max"] > 100 * lat["percentile"]["50.000000"]  # the stall the percentiles hide
    line = next(l for l in report.headline(smoke_run.phases) if l.startswith("torture "))
    assert f"latency mean {figure_text.us(lat['mean'])}" in line and f"max {figure_text.us(lat['max'])}" in line


def test_figures_are_written_as_a_reviewer_reads_them():
    assert figure_text.us(45_349) == "45.3 us"
    assert figure_text.us(99_949) == "99.9 us"
    assert figure_text.us(2_074_400) == "2,074 us"
    assert figure_text.us(2_350_415_000) == "2,350,415 us"
    assert figure_text.count(15_965_632) == "15,965,632" and figure_text.count(13_283.4) == "13,283"


def test_each_phase_lists_its_ten_slowest_commands(smoke_run):
    jobs = _jobs(smoke_run.run_dir)
    t = pq.read_table(smoke_run.run_dir / "records.parquet",
                      columns=["marker", "kind", "latency_ns", "lba", "t_submit_ns"]).to_pandas()
    torture = t[(t.marker == "torture") & (t.kind == "command")]
    slow = jobs["torture"]["fisrig"]["slowest"]
    assert len(slow) == phase_stats.SLOWEST
    assert [c["latency_ns"] for c in slow] == sorted(torture.latency_ns, reverse=True)[:phase_stats.SLOWEST]
    first = torture.loc[torture.latency_ns.idxmax()]
    assert (slow[0]["lba"], slow[0]["t_submit_ns"]) == (first.lba, first.t_submit_ns)
    assert slow[0]["command"] == 0x61 and slow[0]["lbas"] == 8 and slow[0]["result"] == "ok"
    html = (smoke_run.run_dir / "report.html").read_text()
    assert "<h2>Slowest commands</h2>" in html and f"slowest {figure_text.us(slow[0]['latency_ns'])}" in html


def test_the_report_says_which_drive_and_target_produced_it(smoke_run):
    html = (smoke_run.run_dir / "report.html").read_text()
    assert "A simulated drive, fisrig SIM-T1 tiny (fw 1.00), profile tiny-1gb, on the model target" in html


def test_iops_are_drawn_over_time(smoke_run):
    assert (smoke_run.run_dir / "iops_over_time.png").exists()
    assert (smoke_run.run_dir / "iops_per_100k.png").exists()


def _cut(smoke_run, d, keep, status="failed", error="records.bin: No space left on device"):
    """The smoke run as a run stopped after `keep` records: run.json says how it ended."""
    d.mkdir()
    meta = json.loads((smoke_run.run_dir / "run.json").read_text())
    meta.update(status=status, error=error)
    (d / "run.json").write_text(json.dumps(meta))
    raw = (smoke_run.run_dir / "records.bin").read_bytes()
    (d / "records.bin").write_bytes(raw[:pf.RECORDS_HEADER.size + keep * pf.RECORD_DTYPE.itemsize])
    return d


def _first_row(smoke_run, label):
    marker = pq.read_table(smoke_run.run_dir / "records.parquet", columns=["marker"]).column(0).to_pylist()
    return marker.index(label), marker.count(label)


@pytest.mark.parametrize("status", ["failed", "interrupted", "running"])
def test_a_counted_phase_cut_short_is_marked_partial(smoke_run, tmp_path, capsys, status):
    start, whole = _first_row(smoke_run, "fill")
    d = _cut(smoke_run, tmp_path / "cut", start + 1000, status=status)
    code, out, err = fisrig(["report", d], capsys)
    assert code == 3, err
    how = {"running": "was killed"}.get(status, f"ended {status}")
    assert f"  ! fill: partial: 1,000 of {whole:,} commands; the run {how} during it" in out
    assert "  ! torture" not in out and "torture " not in out  # never started: no phase
    fill = _jobs(d)["fill"]["fisrig"]
    assert fill["partial"] == {"commands": 1000, "commands_asked": whole, "seconds": fill["seconds"]}
    assert fill["iops"] == pytest.approx(1000 / fill["seconds"])  # over the time it ran
    assert "fill <span class=\"bad\">PARTIAL</span>" in (d / "report.html").read_text()
    assert "partial" not in _jobs(d)["clean"]["fisrig"]


def test_a_timed_phase_cut_short_is_marked_partial(smoke_run, tmp_path, capsys):
    start, _ = _first_row(smoke_run, "torture")
    d = _cut(smoke_run, tmp_path / "cut", start + 2000)
    code, out, _ = fisrig(["report", d], capsys)
    assert code == 3
    torture = _jobs(d)["torture"]["fisrig"]
    assert torture["partial"]["seconds_asked"] == 5.0 and torture["partial"]["seconds"] < 5.0
    assert f"  ! torture: partial: {torture['seconds']:,.1f} of the 5.0 s asked; the run ended failed" in out


def test_a_run_that_ended_done_has_no_partial_phase(smoke_run):
    assert not any("partial" in j["fisrig"] for j in _jobs(smoke_run.run_dir).values())
    assert not any(p.partial for p in smoke_run.phases)


def test_simulated_time_is_called_simulated(smoke_run):
    html = (smoke_run.run_dir / "report.html").read_text()
    assert "<th>simulated seconds</th>" in html and "<th>seconds</th>" not in html
