"""`fisrig report --compare DIR DIR...`: runs overlaid on one chart per kind and compare.html,
into --out (a new or empty directory, or --force), each run named in the legends; every
bad input one line and exit 2."""
import json
import re
import shutil

import pytest
from PIL import Image

from fisrig import plan
from fisrig.report import compare_html as report_compare
from fisrig.run import run_plan

from test_bad_inputs import fisrig, refused


def _fill_delete_fill(trim: bool):
    on = "on" if trim else "off"
    delete = {"do": "trim", "label": f"delete (TRIM {on})"} if trim else {"do": "idle", "label": "delete", "seconds": 1}
    return plan.from_dict({"plan": {"name": f"fdf-trim-{on}", "profile": "tiny-1gb"}, "step": [
        {"do": "secure_erase", "label": "secure erase"},
        {"do": "fill", "label": f"fill 1 (TRIM {on})", "span_pct": 25},
        delete,
        {"do": "fill", "label": f"fill 2 (TRIM {on})", "span_pct": 25},
        {"do": "sweep", "label": "after", "zones": 4, "zone_mib": 4},
        {"do": "workload", "label": "4k random", "transfer_kib": 4, "queue_depth": 32, "commands": 3000}]})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("compare")
    return [run_plan(_fill_delete_fill(trim), d / f"trim-{'on' if trim else 'off'}", quiet=True).run_dir
            for trim in (True, False)]


def test_runs_are_overlaid_and_named(runs, tmp_path, capsys):
    out = tmp_path / "cmp"
    code, text, err = fisrig(["report", "--compare", *runs, "--out", out], capsys)
    assert code == 0, err
    charts = ["compare_iops_over_time.png", "compare_iops_per_100k.png", "compare_mbps_across_lba.png", "compare_latency_percentiles.png",
              "compare_fill_times.png"]
    assert sorted(p.name for p in out.iterdir()) == sorted(["compare.html", *charts])
    assert text.splitlines()[0] == f"compare: {out}/  (compare.html, {', '.join(charts)})"
    # Each run is named by its directory and, as the plans differ, its plan.
    assert "  trim-on (fdf-trim-on): " in text and "  trim-off (fdf-trim-off): " in text
    for name in charts:
        caption = Image.open(out / name).text["Description"]
        assert "trim-on (fdf-trim-on): fisrig SIM-T1 tiny" in caption and "trim-off (fdf-trim-off)" in caption
    page = (out / "compare.html").read_text()
    assert page.count('<img src="data:image/png;base64,') == len(charts)
    for label in ("fill 2 (TRIM on)", "fill 2 (TRIM off)", "delete (TRIM on)"):
        assert label in page
    # The run directories are read, never written.
    assert not list(runs[0].glob("compare*"))


def test_the_legends_name_run_and_phase(runs):
    loaded = [report_compare.load(d) for d in runs]
    report_compare.name_runs(loaded)
    assert [r.name for r in loaded] == ["trim-on (fdf-trim-on)", "trim-off (fdf-trim-off)"]
    from fisrig.report import plots
    s = plots.Series(loaded[0].phases, loaded[0].meta, loaded[0].name)
    assert s.label("fill 2 (TRIM on)") == "trim-on (fdf-trim-on): fill 2 (TRIM on)"


def test_default_out_and_force(runs, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, text, _ = fisrig(["report", "--compare", *runs], capsys)
    out = tmp_path / "runs" / "compare-trim-on-vs-trim-off"
    assert code == 0 and (out / "compare.html").exists()
    refused(["report", "--compare", *runs], capsys,
            r"^fisrig: --out runs/compare-trim-on-vs-trim-off: is not empty \(compare.html, .*add --force")
    (out / "mine.txt").write_text("kept\n")
    code, _, _ = fisrig(["report", "--compare", *runs, "--force"], capsys)
    assert code == 0 and (out / "mine.txt").read_text() == "kept\n"


def test_a_run_that_did_not_end_done_says_so_and_exits_3(runs, tmp_path, capsys):
    failed = tmp_path / "failed"
    shutil.copytree(runs[1], failed)
    meta = json.loads((failed / "run.json").read_text())
    meta.update(status="failed", error="the target stopped")
    (failed / "run.json").write_text(json.dumps(meta))
    code, text, _ = fisrig(["report", "--compare", runs[0], failed, "--out", tmp_path / "c"], capsys)
    assert code == 3 and "run ended: failed (the target stopped)" in text


@pytest.mark.parametrize("args, pattern", [
    (["{a}"], r"^fisrig: --compare: needs two or more run directories \(given 1\)$"),
    (["{a}", "{a}"], r"^fisrig: .*trim-on: is given twice \(as .*trim-on\)$"),
    (["{a}", "{t}/none"], r"^fisrig: .*none: no such run directory$"),
    (["{a}", "{t}/empty"], r"^fisrig: .*empty: not a run directory \(no run.json, records.bin or records.parquet\)$"),
    (["{a}", "{t}/garbage"], r"^fisrig: .*garbage/records.parquet: not a readable Parquet file"),
    (["{a}", "{t}/no_parquet"], r"^fisrig: .*no_parquet: has no records.parquet to compare$"),
    (["{a}", "{t}/no_columns"], r"^fisrig: .*no_columns/records.parquet: has no marker, kind, result and \d+ more "
                                r"columns: not fisrig's records"),
    (["{a}", "{b}", "--out", "{t}/file"], r"^fisrig: --out .*file: is a file, not a directory$"),
    (["{a}", "{b}", "--keep-raw"], r"^fisrig: --keep-raw: is for one run's report"),
])
def test_bad_inputs_are_one_line_and_exit_2(runs, tmp_path, capsys, args, pattern):
    import pyarrow as pa
    import pyarrow.parquet as pq
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    for name in ("garbage", "no_parquet", "no_columns"):
        (tmp_path / name).mkdir()
        shutil.copy(runs[0] / "run.json", tmp_path / name)
    (tmp_path / "garbage" / "records.parquet").write_bytes(b"PAR1 not really")
    pq.write_table(pa.table({"x": [1, 2, 3]}), tmp_path / "no_columns" / "records.parquet")
    argv = [a.format(a=runs[0], b=runs[1], t=tmp_path) for a in args]
    refused(["report", "--compare", *argv], capsys, pattern)


@pytest.mark.parametrize("args, pattern", [
    (["{a}", "{b}"], r"^fisrig: .*trim-off: report takes one run directory; --compare DIR DIR\.\.\. overlays runs$"),
    (["{a}", "--out", "x"], r"^fisrig: --out: is for --compare"),
    (["{a}", "--force"], r"^fisrig: --force: is for --compare"),
])
def test_report_without_compare_takes_one_directory(runs, capsys, args, pattern):
    refused(["report", *[re.sub(r"\{(\w)\}", lambda m: str(runs["ab".index(m.group(1))]), a) for a in args]],
            capsys, pattern)
