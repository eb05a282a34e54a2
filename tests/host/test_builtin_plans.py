"""Each built-in plan of the seeds' reviews, shortened, on the model target: the shape the
review reports (which state is faster, which recovers), not its numbers.

Shortened means a drive 1/32 the size (its profile with user_gb and blocks per plane
divided, so its spare share and its channels, dies and timings are the review drive's),
and every amount of work divided with it: timed workloads, sweep zones, gigabytes, LBA
ranges, PTS cells. The whole-length figures are bench figures (scripts/bench_builtin_plans.py)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

import pytest

from fisrig import plan as plan_mod
from fisrig.errors import InputError
from fisrig.plan import pts_matrix
from fisrig.run import run_plan

SCALE = 32
PROFILES = plan_mod.Path(__file__).resolve().parents[2] / "sim" / "ssd" / "profiles"


def scaled_profile(name: str, tmp_path) -> str:
    """The profile at 1/SCALE of its capacity and flash (and of its SLC cache, where it has
    one), as a profile file."""
    text = (PROFILES / f"{name}.toml").read_text()
    gb = int(re.search(r"^user_gb = (\d+)", text, re.M).group(1))
    blocks = int(re.search(r"^blocks_per_plane = (\d+)", text, re.M).group(1))
    text = re.sub(r"^user_gb = \d+", f"user_gb = {gb / SCALE:g}", text, flags=re.M)
    text = re.sub(r"^blocks_per_plane = \d+", f"blocks_per_plane = {blocks // SCALE}", text, flags=re.M)
    text = re.sub(r"^slc_gb = (\d+)", lambda m: f"slc_gb = {int(m.group(1)) / SCALE:g}", text, flags=re.M)
    path = tmp_path / f"{name}-scaled.toml"
    path.write_text(text)
    return str(path)


def shortened(name: str, profile: str | None = None, **plan_keys) -> plan_mod.Plan:
    p = plan_mod.load(plan_mod.find(name))
    for key, value in plan_keys.items():
        setattr(p, key, value)
    p.profile = profile or p.profile
    for s in p.steps:
        a = s.args
        for key in ("minutes", "seconds", "seconds_per_cell", "gib"):
            if key in a:
                a[key] = a[key] / SCALE
        for key in ("lba_start", "lba_count"):
            if key in a:
                a[key] //= SCALE
        if s.do == "sweep":
            a["zone_mib"] = a.get("zone_mib", 32) / SCALE
            a["transfer_kib"] = min(a.get("transfer_kib", 128), a["zone_mib"] * 1024)
    return p


def run(tmp_path, name: str, profile: str | None = None, **plan_keys):
    base = plan_mod.load(plan_mod.find(name)).profile
    tmp_path.mkdir(parents=True, exist_ok=True)
    p = shortened(name, scaled_profile(profile or base, tmp_path), **plan_keys)
    r = run_plan(p, tmp_path / "run", quiet=True)
    assert r.status == "done"
    return r, {ph.label: ph for ph in r.phases}


def mbps(ph) -> float:
    return ph.sweep_mbps if ph.is_sweep else ph.mbps


@pytest.mark.parametrize("protocol", ["sata", "nvme"])
def test_steady_state_states_conventional_drive(tmp_path, protocol):
    """A conventional drive: sequential writes fall after the torture and come back after
    TRIM; the clean drive is the fastest writer. Over NVMe (the same SSD behind the NVMe
    controller) the same."""
    _, ph = run(tmp_path, "steady-state-states", protocol=protocol)
    clean, torture, trim = (mbps(ph[f"incompressible: {s} write"]) for s in ("clean", "torture", "TRIM"))
    assert torture < 0.8 * clean
    assert trim > 1.2 * torture


def test_steady_state_states_compressing_drive(tmp_path):
    """steady-state-worst-case-trim.txt on SandForce: writes are not penalized (they hold
    after the fill and the torture), compressible reads fall after the torture, and TRIM
    brings them back."""
    _, ph = run(tmp_path, "steady-state-states", "sandforce-240gb")
    w = {s: mbps(ph[f"compressible: {s} write"]) for s in ("clean", "dirty", "torture")}
    r = {s: mbps(ph[f"compressible: {s} read"]) for s in ("clean", "torture", "TRIM")}
    assert w["torture"] > 0.8 * w["clean"] and w["dirty"] > 0.8 * w["clean"]
    assert r["torture"] < 0.8 * r["clean"]
    assert r["TRIM"] > 1.2 * r["torture"]


def test_sandforce_torture_trim(tmp_path):
    """sandforce-trim-broken.txt: after compressible torture writes hold and reads fall by
    more than a third; on firmware 5.0.2 (the plan's profile) TRIM brings reads up from the
    tortured drive's but not back to the clean drive's, and on 5.0.3 (sandforce-240gb) it
    does, as the review's "Firmware 5.0.3 to the Rescue" says."""
    _, ph = run(tmp_path / "5.0.2", "sandforce-torture-trim")
    assert mbps(ph["tortured: write"]) > 0.8 * mbps(ph["clean: write"])
    assert mbps(ph["tortured: read"]) < 0.67 * mbps(ph["clean: read"])
    assert 1.2 * mbps(ph["tortured: read"]) < mbps(ph["after TRIM: read"]) < 0.9 * mbps(ph["clean: read"])
    _, ph = run(tmp_path / "5.0.3", "sandforce-torture-trim", "sandforce-240gb")
    assert mbps(ph["after TRIM: read"]) >= mbps(ph["clean: read"])


def test_torture_60_minutes(tmp_path):
    """The 60-minute torture leaves write sweeps slower than TRIM leaves them."""
    _, ph = run(tmp_path, "torture-60-minutes")
    assert mbps(ph["tortured"]) < 0.8 * mbps(ph["after TRIM"])


@pytest.mark.parametrize("protocol", ["sata", "nvme"])
def test_fill_delete_fill(tmp_path, protocol):
    """gc-vs-trim-fill-delete-fill.txt: every fill is timed; the first fill of the secure
    erased drive is the fastest; with TRIM on a second fill is as fast as a first. Without
    TRIM, the drive whose GC blocks the host (the plan's profile, as SSD1 and SSD2) takes
    longer from run 4's second fill on, and the drive whose GC keeps up (consumer-256gb, as
    Kingston's) does not. Over NVMe (deallocate for TRIM), the blocking drive the same."""
    cases = (("blocking-gc-256gb", (1.15, 1.5)), ("consumer-256gb", (0.98, 1.02)))
    for profile, off_vs_on in cases[:1] if protocol == "nvme" else cases:
        r, ph = run(tmp_path / profile, "fill-delete-fill", profile, protocol=protocol)
        fills = {label: p.seconds for label, p in ph.items() if " fill " in label}
        assert len(fills) == 12
        first = fills["R1 fill 1 (TRIM on)"]
        assert first <= min(fills.values()) * 1.001
        on = [fills[f"R{n} fill {k} (TRIM on)"] for n in (1, 2, 3) for k in (1, 2)]
        assert max(on) < 1.02 * first
        for label in ("R4 fill 2", "R5 fill 1", "R5 fill 2", "R6 fill 1", "R6 fill 2"):
            lo, hi = off_vs_on
            assert lo * max(on) < fills[f"{label} (TRIM off)"] < hi * max(on), (profile, label)


def test_atto_transfer_sweep(tmp_path):
    """ATTO's curve: MB/s rises with the transfer size and levels off at the link or the
    flash for the largest sizes."""
    _, ph = run(tmp_path, "atto-transfer-sweep")
    reads = [mbps(ph[f"read {k:g} KiB"]) for k in (0.5, 4, 64, 1024, 8192)]
    assert reads[0] < reads[1] < reads[2]
    assert abs(reads[4] - reads[3]) < 0.25 * reads[3]
    assert mbps(ph["write 8192 KiB"]) > 10 * mbps(ph["write 0.5 KiB"])


def test_hdtach_lba_sweep(tmp_path):
    """Both sweeps cover the span in 256 zones; reads of the filled drive beat writes."""
    _, ph = run(tmp_path, "hdtach-lba-sweep")
    read, write = ph["read sweep"], ph["write sweep"]
    assert len(read.zones) == len(write.zones) == 256
    assert read.sweep_mbps > write.sweep_mbps


@pytest.mark.parametrize("protocol", ["sata", "nvme"])
def test_jedec_trim_trace(tmp_path, protocol):
    """drivemaster-jedec-trim-test.txt: the same generated client trace four ways; with TRIM
    the drive keeps its IOPS, without it the final windows fall below TRIM's (DMA and NCQ),
    and the chart draws the four passes overlaid. Over NVMe: DMA's one command at a time is
    queue depth 1, NCQ's depth the plan's, TRIM a deallocate."""
    p = shortened("jedec-trim-trace", scaled_profile("consumer-256gb", tmp_path), protocol=protocol)
    for s in p.steps:
        if s.do == "replay":
            s.args["commands"] = 300_000
    r = run_plan(p, tmp_path / "run", quiet=True)
    assert r.status == "done"
    ph = {x.label: x for x in r.phases}
    assert ph["DMA, no TRIM"].commands < ph["DMA, TRIM"].commands == ph["NCQ, TRIM"].commands  # TRIMs left out
    def last_window(label):
        t = np.sort(ph[label].t_status_ns)
        return 50_000 / ((t[-1] - t[-50_001]) / 1e9)
    assert last_window("NCQ, TRIM") > 1.1 * last_window("NCQ, no TRIM")
    assert last_window("DMA, TRIM") > 1.1 * last_window("DMA, no TRIM")
    assert (r.run_dir / "iops_per_100k.png").exists()


@pytest.mark.parametrize("protocol", ["sata", "nvme"])
def test_snia_pts_client(tmp_path, protocol):
    """PTS rounds until steady state: the rig stops inside the round limit, the window it
    reports holds by the rule, and the table has every cell, reads above writes at 4 KiB;
    over NVMe too."""
    if protocol == "nvme":
        # The PTS's 1024 KiB cells are over a 128 KiB MDTS (the profile's default): the plan is
        # refused before it runs, naming the step. On a drive whose MDTS is 2 MiB (Samsung's
        # controllers report MDTS 9: docs/nvme.md) the whole matrix runs.
        tmp_path.mkdir(parents=True, exist_ok=True)
        profile = scaled_profile("consumer-256gb", tmp_path)
        p = shortened("snia-pts-client", profile, protocol=protocol)
        with pytest.raises(InputError, match=r"1024: an NVMe command moves at most 128 KiB on this drive \(its MDTS"):
            run_plan(p, tmp_path / "refused", quiet=True)
        Path(profile).write_text(Path(profile).read_text() + "\n[nvme]\nmdts = 9\n")
        r = run_plan(p, tmp_path / "run", quiet=True)
        assert r.status == "done"
    else:
        r, _ = run(tmp_path, "snia-pts-client", protocol=protocol)
    (pts,) = json.loads((r.run_dir / "pts.json").read_text())
    assert pts["steady_state_reached"] and pts["rounds_run"] <= 25
    assert pts["window"]["holds"] and len(pts["window_rounds"]) == 5
    assert pts["window"]["range_pct_of_average"] <= 20 and pts["window"]["excursion_pct_of_average"] <= 10
    table = pts["iops_table"]
    assert len(table) == 8 and all(len(row) == 7 for row in table.values())
    assert table["4 KiB"]["100/0"] > table["4 KiB"]["0/100"]
    assert (r.run_dir / "pts_steady_state.png").exists()


def test_whole_drive_fill(tmp_path):
    """The whole-drive fill over NVMe on the consumer TLC drive (its SLC cache 113 GB of its
    1 TB; here the drive and its cache at 1/32): the write speed is the cache's at first and
    falls where the cache runs out to the TLC's, under half of it; after an idle minute the
    second fill starts faster than the first ended (the drive freed some cache), then falls
    again; the chart draws both."""
    p = plan_mod.load(plan_mod.find("whole-drive-fill"))  # its idle minute as it is
    p.profile = scaled_profile(p.profile, tmp_path)
    r = run_plan(p, tmp_path / "run", quiet=True)
    assert r.status == "done"
    from fisrig.report.plots import fill_mbps
    ph = {x.label: x for x in r.phases}
    gb, mbps = fill_mbps(ph["fill 1 (new drive)"])
    slc_gb = 113 / SCALE
    early, late = np.median(mbps[gb < 0.8 * slc_gb]), np.median(mbps[gb > 1.5 * slc_gb])
    assert late < 0.5 * early
    edge = gb[np.argmax(mbps < (early + late) / 2)]  # where it falls: the cache's size, as the bench finds it
    assert 0.8 * slc_gb < edge < 1.2 * slc_gb
    gb2, mbps2 = fill_mbps(ph["fill 2 (after a minute idle)"])
    assert mbps2[0] > 1.3 * late and np.median(mbps2[gb2 > 0.5 * gb2[-1]]) < 0.5 * early
    assert (r.run_dir / "fill_mbps.png").stat().st_size > 10_000
    # Its stamps in NVMe's order and its records held to their digest, as test_stamp_order.py
    # holds every other built-in plan's.
    import plan_records
    from test_stamp_order import out_of_order, records
    bad = out_of_order(records(r.run_dir))
    assert not bad, "\n".join(bad)
    plan_records.check("whole-drive-fill model shortened", r.status, r.run_dir)


@pytest.mark.parametrize("name", sorted(plan_mod.builtin_plans()))
def test_every_builtin_plan_compiles_for_its_drive(name):
    """Every built-in plan checks and compiles against its own profile's drive (the JEDEC
    test's on the 1 GB drive: its generated trace for 256 GB is a 600 MB program, 20 s)."""
    from fisrig.run import prepare
    prepare(plan_mod.load(plan_mod.find(name)), profile="tiny-1gb" if name == "jedec-trim-trace" else None)
