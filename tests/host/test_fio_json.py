"""summary.json is a fio json+ file in full: every key a real fio writes, with the same JSON
type, so that whatever reads fio's JSON reads ours; and the fio fields hold the run's figures."""
import json
import shutil
import subprocess

import numpy as np
import pytest

from fisrig.report import fio_json as fisrig_fio_json

FIO = shutil.which("fio")
needs_fio = pytest.mark.skipif(FIO is None, reason="fio is not installed")

# Two stonewalled jobs (two groups, as our phases): reads, writes and FLUSH-like fsyncs, then
# TRIMs, so every section appears both used (with percentiles and bins) and unused.
JOB = ["--rw={}", "--bs=4k", "--iodepth=4", "--numjobs=1", "--size=4M"]
FIO_ARGS = (["--ioengine=null", "--name=rw"] + [a.format("randrw") for a in JOB] + ["--fsync=4"]
            + ["--name=trim", "--stonewall"] + [a.format("randtrim") for a in JOB])
# Keys of a fio map that are data, not names: compared by the type of their values only.
DATA_MAPS = {"percentile", "bins"}
# Keys only some fio runs write: disk_util with a block device (not the null engine's).
SKIP = {"disk_util"}


@pytest.fixture(scope="module")
def fio_json(tmp_path_factory):
    out = tmp_path_factory.mktemp("fio") / "fio.json"
    subprocess.run([FIO, *FIO_ARGS, "--output-format=json+", f"--output={out}"], check=True,
                   capture_output=True, cwd=out.parent)
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def ours(smoke_run):
    return json.loads((smoke_run.run_dir / "summary.json").read_text())


def _same_shape(ref, got, path: str) -> list[str]:
    """Where `got` lacks a key of `ref`, or has another JSON type (int is not float)."""
    if type(ref) is not type(got):
        return [f"{path}: {type(got).__name__}, fio has {type(ref).__name__}"]
    if not isinstance(ref, dict):
        return []
    if path.rsplit("/", 1)[-1] in DATA_MAPS:
        kinds = {type(v) for v in ref.values()}
        return [f"{path}/{k}: {type(v).__name__}" for k, v in got.items() if type(v) not in kinds]
    return [m for k, v in ref.items() if k not in SKIP
            for m in ([f"{path}/{k}: missing"] if k not in got else _same_shape(v, got[k], f"{path}/{k}"))]


def _templates(fio_json) -> tuple[dict, dict]:
    """fio's job with each section (read, write, trim, sync) as fio writes it used, and unused."""
    used, unused = {}, {}
    for job in fio_json["jobs"]:
        for d in ("read", "write", "trim", "sync"):
            (used if job[d]["total_ios"] else unused).setdefault(d, job[d])
    return used, unused


@needs_fio
def test_top_level_is_fios(fio_json, ours):
    top = {k: v for k, v in fio_json.items() if k != "jobs"}
    assert _same_shape(top, ours, "") == []
    assert fio_json["global options"].keys() <= ours["global options"].keys()


@needs_fio
def test_every_job_has_every_field_fio_writes(fio_json, ours):
    used, unused = _templates(fio_json)
    assert set(used) == set(unused) == {"read", "write", "trim", "sync"}  # the run gave fio both
    # The options both fio jobs were given (the first's fsync is its own).
    options = set.intersection(*(set(j["job options"]) for j in fio_json["jobs"]))
    job = {k: v for k, v in fio_json["jobs"][0].items() if k not in used}
    job["job options"] = {k: v for k, v in job["job options"].items() if k in options}
    problems = []
    for j in ours["jobs"]:
        problems += _same_shape(job, j, j["jobname"])
        for d in used:
            ref = used[d] if j[d]["total_ios"] else unused[d]
            problems += _same_shape(ref, j[d], f"{j['jobname']}/{d}")
    assert problems == []
    # Every section of ours is used somewhere in the smoke run, so each met fio's used one.
    assert all(any(j[d]["total_ios"] for j in ours["jobs"]) for d in used)


@needs_fio
def test_the_fio_run_has_what_we_compare(fio_json, ours):
    """The type check leans on fio's own run; make sure that run had what we compare."""
    rw = fio_json["jobs"][0]
    assert "bins" in rw["read"]["clat_ns"] and "bins" in rw["sync"]["lat_ns"]


def test_fio_fields_hold_the_run(ours, smoke_run):
    jobs = {j["jobname"]: j for j in ours["jobs"]}
    assert [j["groupid"] for j in ours["jobs"]] == list(range(len(jobs)))  # one group per phase
    rr = jobs["random read"]
    assert rr["job options"]["rw"] == "randread" and rr["job options"]["bs"] == "4096"
    assert rr["job options"]["iodepth"] == "32" and rr["latency_depth"] == 32
    assert jobs["clean"]["job options"]["rw"] == "write" and jobs["clean"]["job options"]["bs"] == "131072"
    # It kept its queue nearly full: fio's "16" is 16 to 31 in flight. Not mostly at 32: the
    # engine sends a queued H2D only between data phases (as the gateware's), so a freed slot
    # often waits a data phase for its next command, and the rig's CPU takes 7.5 us to reap
    # one and build the next (sim/model/vm_cpu_time.h): QD 29.8 held on average, 32 in
    # flight 16.6% of the time (30.5 and over 20% before the CPU's time was modelled).
    assert rr["iodepth_level"]["16"] + rr["iodepth_level"]["32"] > 99 and rr["iodepth_level"]["32"] > 10
    for j in ours["jobs"]:
        ios = sum(j[d]["total_ios"] for d in ("read", "write", "trim"))
        lat = sum(sum(j[m].values()) for m in ("latency_ns", "latency_us", "latency_ms"))
        assert lat == pytest.approx(100, abs=0.5) if ios else lat == 0, j["jobname"]
        assert j["read"]["lat_ns"]["N"] == j["read"]["clat_ns"]["N"] and j["read"]["slat_ns"]["N"] == 0
    assert sum(j["sync"]["total_ios"] for j in ours["jobs"]) >= 1  # the plan's FLUSH
    # fio's 500 ms samples: a 10 s steady fill has 20 or so, their mean its bandwidth; the
    # torture phase's stalls leave windows without a completion, which give none.
    f = jobs["fill"]["write"]
    assert 19 <= f["bw_samples"] <= 21 and f["iops_samples"] == f["bw_samples"]
    assert f["bw_min"] <= f["bw_mean"] <= f["bw_max"] and f["iops_min"] <= f["iops_mean"] <= f["iops_max"]
    assert f["bw_mean"] == pytest.approx(f["bw"], rel=0.05) and 95 < f["bw_agg"] <= 100
    assert 1 <= jobs["torture"]["write"]["bw_samples"] <= 10
    assert jobs["random read"]["read"]["bw_samples"] == 0  # 244 ms: under one window

def test_samples_as_fio_takes_them():
    """Whole 500 ms windows from the phase's start; empty windows and the tail give none."""
    ms = 1_000_000
    done = np.array([100, 200, 1200, 1300, 1400, 1700]) * ms  # window 0: 2, 1: none, 2: 3, tail: 1
    bw, iops = fisrig_fio_json._samples(done, np.full(6, 4096), 0, 1800 * ms)
    assert iops.tolist() == [4, 6]
    assert bw.tolist() == [2 * 4096 * 2 // 1024, 3 * 4096 * 2 // 1024]


def test_a_directions_samples_through_its_mask_are_those_of_its_commands_taken_out():
    """_samples reads a direction's commands through its mask, a chunk at a time (the JEDEC
    pass's writes among its TRIMs), and gives what it gives of those commands taken out."""
    from fisrig.analysis.arrays import CHUNK
    rng = np.random.default_rng(3)
    n = 2 * CHUNK + 12345  # chunks cut the mask's runs anywhere
    done = np.sort(rng.integers(0, 7_300 * 1_000_000, n))
    lbas = rng.integers(1, 65536, n).astype(np.uint32)
    mask = rng.random(n) < 0.97
    want = fisrig_fio_json._samples(done[mask], lbas[mask], 0, int(done[-1]), unit=512)
    got = fisrig_fio_json._samples(done, lbas, 0, int(done[-1]), unit=512, mask=mask)
    assert len(want[0]) == 14 and all((w == g).all() for w, g in zip(want, got))


def _bins_value_by_value(lat):
    """fio's json+ bins as fio's plat_val_to_idx makes them: each value's top 6 bits kept."""
    out = {}
    for v in lat.tolist():
        v = max(v, 0)
        shift = max(v.bit_length() - 6, 0)
        out[(v >> shift) << shift] = out.get((v >> shift) << shift, 0) + 1
    return {str(k): out[k] for k in sorted(out)}


def _latency_maps_value_by_value(lat):
    """fio's latency_ns/us/ms as fio's stat_calc_lat_n/u/m make them: each value divided down
    to the unit it is under 1000 of (ms past that), in the first bucket whose key is over it."""
    counts = {unit: [0] * (13 if unit == "ms" else 11) for unit in ("ns", "us", "ms")}
    for v in lat.tolist():
        unit, x = ("ns", v) if v < 1000 else ("us", v // 1000) if v < 1_000_000 else ("ms", v // 1_000_000)
        edges = fisrig_fio_json._LAT_EDGES + ([2000] if unit == "ms" else [])
        i = next((k for k, e in enumerate(edges) if x < e), len(edges) - (unit != "ms"))
        counts[unit][i] += 1
    keys = fisrig_fio_json._LAT_KEYS
    return {f"latency_{u}": fisrig_fio_json._dist_of(keys + ["2000", ">=2000"] if u == "ms" else keys,
                                                      np.array(c), 0.01, len(lat)) for u, c in counts.items()}


def test_from_values_in_order_the_same_percentiles_bins_and_latency_maps():
    """The report takes a phase's percentiles, json+ bins and latency_ns/us/ms maps from its
    latencies sorted once (arrays.PhaseRows.sorted_latency): each the same as from the
    values as they come (numpy's inverted_cdf, the per-value bucketing)."""
    from fisrig.analysis import arrays
    f = fisrig_fio_json
    rng = np.random.default_rng(7)
    pcts = (*arrays.PERCENTILES, 0, 100, 33.3, 1e-4, 99.99999)
    for n in [*range(1, 40), 99, 1000, 12345]:
        for lat in (rng.integers(0, 200, n), rng.integers(0, 1 << 39, n), np.full(n, 4096),
                    rng.lognormal(11, 2.5, n).astype(np.int64), np.zeros(n, dtype=np.int64)):
            ordered = np.sort(lat)
            numpys = np.percentile(lat, list(pcts), method="inverted_cdf")
            assert f.percentiles(ordered, pcts, ordered=True) == {f"{p:.6f}": int(v) for p, v in zip(pcts, numpys)}, n
            assert f.percentiles(lat, pcts) == f.percentiles(ordered, pcts, ordered=True), n
            assert f._bins(ordered) == _bins_value_by_value(lat), n
            assert f._latency_maps(f._latency_counts(ordered), n) == _latency_maps_value_by_value(lat), n
    assert f.percentiles(np.zeros(0, dtype=np.int64)) == {} and f._bins(np.zeros(0, dtype=np.int64)) == {}
    assert f._bins(np.array([-5, -1, 0, 1])) == {"0": 3, "1": 1}  # under 0 counts as 0, as in fio
