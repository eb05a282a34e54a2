"""report.html: one self-contained page per run (every chart inline, nothing fetched), with
the plan, the drive, every phase's figures as summary.json holds them, every run value
escaped, and rendered by a real browser (Debian's chromium, headless) with every chart
decoded; its screenshot is kept in the test's tmp dir."""
import base64
import html
import json
import re
import shutil
import subprocess

import pytest
from PIL import Image

from fisrig.analysis import figure_text
from fisrig.run import run_plan

from test_bad_inputs import fisrig
from test_plots import ALL_CHARTS, every_chart_plan

# Run values a page must show as text, never as markup.
HOSTILE = '<script>alert("x")</script> & <b>bold</b>'
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return run_plan(every_chart_plan(HOSTILE), tmp_path_factory.mktemp("html") / "run", quiet=True)


def _page(run) -> str:
    return (run.run_dir / "report.html").read_text(encoding="utf-8")


def test_every_chart_is_inline_and_nothing_is_fetched(run):
    page = _page(run)
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)" alt="([^"]+)"', page)
    assert [alt + ".png" for _, alt in images] == ALL_CHARTS
    for data, alt in images:  # the very PNGs beside the page
        assert base64.b64decode(data) == (run.run_dir / f"{alt}.png").read_bytes()
    # No script, stylesheet, frame or address to fetch: every src and href is the page's own.
    assert not re.search(r"<(script|link|iframe|object|embed)\b", page, re.I)
    assert not re.search(r'\b(src|href)="(?!data:)', page)
    assert "url(" not in page and "@import" not in page


def test_the_run_the_drive_and_the_plan_are_there_escaped(run):
    page = _page(run)
    meta = json.loads((run.run_dir / "run.json").read_text())
    ident = meta["identify"]
    for text in (ident["model"], ident["serial"], ident["firmware"], f"{ident['lba48_sectors']:,} sectors",
                 "every-chart", "tiny-1gb", "model", "done"):
        assert html.escape(text) in page, text
    assert "<th>NCQ depth</th><td>32</td>" in page and "<th>TRIM</th><td>yes</td>" in page
    # The description (user text) is shown as text, never run as markup.
    assert HOSTILE not in page and "<b>bold" not in page and html.escape(HOSTILE, quote=True) in page
    # Every step of the plan, in order, as a row of the steps table.
    steps = re.findall(r"<tr><td class=n>(\d+)</td><td>([a-z_]+)</td>", page)
    assert [(int(i), do) for i, do in steps] == [(i + 1, s["do"]) for i, s in enumerate(meta["plan"]["steps"])]


def test_every_phase_shows_the_figures_summary_json_holds(run):
    page = _page(run)
    jobs = json.loads((run.run_dir / "summary.json").read_text())["jobs"]
    rows = re.findall(r"<tr><td>([^<]*)</td><td>([a-z_]+)</td>(.*?)</tr>", page)
    phases = {html.unescape(label): (kind, re.findall(r"<td class=n>([^<]*)</td>", cells)) for label, kind, cells in rows}
    for job in jobs:
        f = job["fisrig"]
        kind, cells = phases[job["jobname"]]
        assert kind == f["kind"]
        assert cells[0] == f"{f['commands']:,}" and cells[1] == str(f["errors"])
        if f["commands"] > 1:
            assert cells[3] == f"{f['iops']:,.0f}"
        assert cells[7] == f"{f['queue_depth']['held_mean']:.2f}" and cells[8] == str(f["queue_depth"]["held_max"])
        lat = f["latency_ns"]
        p50 = lat["percentile"].get("50.000000")
        us = figure_text.us_number
        assert cells[10:15] == ([us(lat["mean"]), us(p50), us(lat["percentile"]["99.000000"]),
                                 us(lat["percentile"]["99.900000"]), us(lat["max"])] if p50 is not None else [""] * 5)


def test_report_command_writes_it_again(run, capsys):
    (run.run_dir / "report.html").unlink()
    code, out, _ = fisrig(["report", run.run_dir], capsys)
    assert code == 0 and "report.html" in out.splitlines()[0]
    assert (run.run_dir / "report.html").stat().st_size > 100_000


# A probe for the browser test only (the report runs no script): once the page has loaded,
# it writes each image's state into the DOM that --dump-dom prints.
PROBE = ('<script>window.addEventListener("load", () => document.body.setAttribute("data-images", '
         'JSON.stringify([...document.images].map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight]))));'
         "</script>")


def _chromium(*args, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
                           f"--user-data-dir={tmp_path / 'chromium-profile'}", *args],
                          capture_output=True, text=True, timeout=180)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/bootstrap.sh installs it)")
def test_chromium_renders_the_page_with_every_chart(run, tmp_path):
    probe = tmp_path / "probe.html"
    probe.write_text(_page(run).replace("</body>", PROBE + "</body>"), encoding="utf-8")
    r = _chromium("--virtual-time-budget=10000", "--dump-dom", probe.as_uri(), tmp_path=tmp_path)
    found = re.search(r'data-images="([^"]*)"', r.stdout)
    assert found, f"the page did not finish loading: {r.stderr[-2000:]}"
    images = json.loads(html.unescape(found.group(1)))
    assert [alt + ".png" for alt, *_ in images] == ALL_CHARTS
    for alt, complete, width, height in images:
        png = Image.open(run.run_dir / f"{alt}.png")
        assert complete and (width, height) == png.size, (alt, complete, width, height)
    # The page as a reader sees it, kept beside the test's other files.
    shot = tmp_path / "report.png"
    r = _chromium("--window-size=1280,2400", f"--screenshot={shot}", (run.run_dir / "report.html").as_uri(),
                  tmp_path=tmp_path)
    assert shot.exists(), r.stderr[-2000:]
    img = Image.open(shot)
    assert img.format == "PNG" and img.size == (1280, 2400)
    grey = img.convert("L")
    dark = sum(c for v, c in enumerate(grey.histogram()) if v < 128)
    assert dark > 0.005 * 1280 * 2400, "the screenshot is (nearly) blank"
    assert len(img.convert("RGB").getcolors(1 << 20) or []) > 50  # text, tables and charts, not one colour
