"""summary.json as fio writes its json+ output: one job per marked phase, with fio's latency
bins, percentiles, bandwidth and IOPS samples and depth distributions, so fio's own tools
(fio_jsonplus_clat2csv, fio-plot) read a fisrig run as one of theirs; each job's `fisrig`
block carries what fio has no field for (phase_stats). tests/host/test_fio_json.py holds it
to fio's tools."""
from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from fisrig.analysis.arrays import percentiles, sort_values
from fisrig.records.store import SCHEMA_VERSION


# fio's buckets' first values, ascending: each value under 64 is one, and above, each value
# whose top 6 bits are all it has.
_BIN_STARTS = np.unique(np.concatenate([np.arange(64, dtype=np.int64)] +
                                       [np.arange(32, 64, dtype=np.int64) << s for s in range(1, 58)]))


def _bins(ordered: np.ndarray) -> dict[str, int]:
    """fio json+ 'bins' of values in ascending order: counts per latency bucket, bucketed as
    fio does (the top 6 bits of each value kept, so every bucket is within 1/32 of its
    values; under 0 counts as 0). Where each bucket starts among the values is found by
    search, not each value bucketed (0.44 s of a 16 M phase)."""
    if not len(ordered):
        return {}
    starts = _BIN_STARTS[:np.searchsorted(_BIN_STARTS, ordered[-1], side="right")]
    at = np.searchsorted(ordered, starts, side="left")
    at[0] = 0  # values under 0 with 0's
    counts = np.diff(np.append(at, len(ordered)))
    return {str(int(k)): int(n) for k, n in zip(starts, counts) if n}



def _lat(lat_ns: np.ndarray, with_percentiles: bool = False) -> dict:
    """A fio latency object: stddev over N - 1 as fio's (0 for one value), and with
    percentiles its "percentile" and json+ "bins", which fio leaves out when N is 0."""
    n = len(lat_ns)
    out = {"min": int(lat_ns.min()) if n else 0, "max": int(lat_ns.max()) if n else 0,
           "mean": float(lat_ns.mean()) if n else 0.0,
           "stddev": float(lat_ns.std(ddof=1)) if n > 1 else 0.0, "N": n}
    if with_percentiles and n:
        ordered = sort_values(lat_ns)
        out.update(percentile=percentiles(ordered, ordered=True), bins=_bins(ordered))
    return out


def _clat(lat_ns: np.ndarray) -> dict:
    return _lat(lat_ns, with_percentiles=True)


# fio's bw_avg_time and iops_avg_time defaults: a bandwidth and an IOPS sample each 500 ms.
SAMPLE_NS = 500_000_000


def _samples(t_done: np.ndarray, nbytes: np.ndarray, t0: int, t1: int,
             unit: int = 1, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """fio's bw (KiB/s) and IOPS samples of one direction, on the rig's clock: one per whole
    500 ms from the phase's first submit (t0) to its last status (t1), of the commands whose
    status came in it. As in fio, a window without any gives no sample, nor does the last
    part-window, so a phase under 500 ms has none. Each command moved nbytes * unit bytes.
    mask: the direction's commands among those of t_done and nbytes (default all)."""
    from fisrig.analysis.arrays import CHUNK
    windows = int(t1 - t0) // SAMPLE_NS
    ios = np.zeros(windows, dtype=np.int64)
    nb = np.zeros(windows)
    # A chunk at a time (no phase-long temporaries, the direction's commands taken out a
    # chunk at a time too); the byte sums are whole numbers far under 2**53, so adding the
    # chunks' float sums gives bincount's sums exactly.
    for a in range(0, len(t_done), CHUNK):
        t, b = t_done[a:a + CHUNK], nbytes[a:a + CHUNK]
        if mask is not None:
            m = mask[a:a + CHUNK]
            t, b = t[m], b[m]
        w = (t.astype(np.int64) - t0) // SAMPLE_NS
        keep = (w >= 0) & (w < windows)
        ios += np.bincount(w[keep], minlength=windows)
        nb += np.bincount(w[keep], weights=b[keep].astype(np.int64) * unit, minlength=windows)
    ms = SAMPLE_NS // 1_000_000
    return (nb[ios > 0] * 1000 // ms // 1024).astype(np.int64), ios[ios > 0] * 1000 // ms


def _direction(cols, mask: np.ndarray, t0: int, t1: int) -> tuple[dict, np.ndarray]:
    """fio's read, write or trim object of the `mask` commands, and their _latency_counts."""
    from fisrig.analysis.arrays import masked
    n = int(mask.sum())
    # Only the latencies are taken out whole (they are sorted): the rest is read through
    # the mask, not copied into fresh pages a column (docs/performance.md).
    lbas, done = cols["lbas"], cols["t_status_ns"]  # lbas: 512 bytes a LBA (a TRIM's: the LBAs it trimmed)
    io_bytes = int(np.sum(lbas, where=mask, dtype=np.int64)) * 512
    lat = masked(cols["latency_ns"], mask)
    if n:
        first = int(np.min(cols["t_submit_ns"], where=mask, initial=np.iinfo(np.int64).max))
        secs = max(int(np.max(done, where=mask, initial=np.iinfo(np.int64).min)) - first, 1) / 1e9
    else:
        secs = 0.0
    bw_bytes = int(io_bytes / secs) if n else 0
    bw, iops = (_lat(v) for v in _samples(done, lbas, t0, t1, unit=512, mask=None if n == len(mask) else mask))
    lat_ns = _lat(lat)
    ordered = cols.sorted_latency(mask, lat) if n else np.zeros(0, dtype=np.int64)
    clat_ns = dict(lat_ns, percentile=percentiles(ordered, ordered=True), bins=_bins(ordered)) if n else dict(lat_ns)
    # fio's bw_agg: the mean sample's share of its group's bandwidth, 100 at most; each
    # phase is a group of its own (they run one after another, as fio's stonewalled jobs).
    agg = min(100.0, int(bw["mean"]) * 100.0 / (bw_bytes / 1024)) if bw_bytes > 1024 else 100.0
    return {"io_bytes": io_bytes, "io_kbytes": io_bytes >> 10, "bw_bytes": bw_bytes, "bw": bw_bytes // 1024,
            "iops": n / secs if n else 0.0, "runtime": int(secs * 1000), "total_ios": n,
            # A command completes whole or fails (an error, counted in the job's "error"),
            # and every one is waited for: none is short or dropped.
            "short_ios": 0, "drop_ios": 0,
            # The rig stamps a command as it sends it: there is no submission path to time,
            # so slat is fio's slat when it has none, and lat (submit to status) is clat.
            "slat_ns": _lat(np.zeros(0)), "clat_ns": clat_ns, "lat_ns": lat_ns,
            "bw_min": bw["min"], "bw_max": bw["max"], "bw_agg": agg if bw["N"] else 0.0,
            "bw_mean": bw["mean"], "bw_dev": bw["stddev"], "bw_samples": bw["N"],
            "iops_min": iops["min"], "iops_max": iops["max"], "iops_mean": iops["mean"],
            "iops_stddev": iops["stddev"], "iops_samples": iops["N"]}, _latency_counts(ordered)


def _dist(keys: list[str], idx: np.ndarray, floor: float, total: int | None = None) -> dict[str, float]:
    """Percent of `total` (else of len(idx)) in each bucket index, as fio's stat_calc_dist
    and stat_calc_lat: a bucket with any at least `floor`, all 0.0 when there are none."""
    counts = np.bincount(idx.astype(np.int64), minlength=len(keys))
    return _dist_of(keys, counts, floor, len(idx) if total is None else total)


def _dist_of(keys: list[str], counts: np.ndarray, floor: float, total: int) -> dict[str, float]:
    """_dist from the counts of each bucket index."""
    return {k: max(100.0 * c / total, floor) if c else 0.0 for k, c in zip(keys, counts.tolist())}


def _counts(a: np.ndarray, bucket, length: int) -> np.ndarray:
    """np.bincount(bucket(a), minlength=length), a chunk at a time."""
    from fisrig.analysis.arrays import CHUNK
    out = np.zeros(length, dtype=np.int64)
    for i in range(0, len(a), CHUNK):
        c = np.bincount(bucket(a[i:i + CHUNK]), minlength=length)
        out = np.pad(out, (0, max(len(c) - len(out), 0)))
        out[:len(c)] += c
    return out


_LAT_EDGES = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000]
_LAT_KEYS = [str(e) for e in _LAT_EDGES]
_LAT_EDGES_NS = np.array(_LAT_EDGES + [1000 * e for e in _LAT_EDGES]
                         + [1_000_000 * e for e in _LAT_EDGES + [2000]], dtype=np.int64)


def _latency_counts(ordered: np.ndarray) -> np.ndarray:
    """How many of the clat values (in ascending order) fall in each of _latency_maps'
    buckets: the ns keys' 0-10, the us keys' 11-21, the ms keys' 22-34."""
    # v // 1000 >= e exactly when v >= 1000 e, so the edges in ns alone place a value (g:
    # how many it is at or over); the two unit changes (1000 ns, 1000 us) are edges of
    # their own. In order, a bucket's count is where its edges fall among the values (the
    # search of each value was 0.24 s of a 16 M phase).
    below = np.searchsorted(ordered, _LAT_EDGES_NS, side="left")  # the values under each edge
    per_g = np.diff(np.concatenate([[0], below, [len(ordered)]]))
    g = np.arange(len(per_g))
    return np.bincount(g + (g >= 10) + (g >= 20), weights=per_g, minlength=35).astype(np.int64)


def _latency_maps(c: np.ndarray, n: int) -> dict[str, dict[str, float]]:
    """fio's latency_ns/us/ms from _latency_counts: each command's clat, in the unit it is
    under 1000 of (ms beyond), in the bucket of the first key above it (">=2000" ms past
    2000); percent of all the job's reads, writes and TRIMs (n), so the three maps add up
    to 100."""
    return {"latency_ns": _dist_of(_LAT_KEYS, c[0:11], 0.01, n),
            "latency_us": _dist_of(_LAT_KEYS, c[11:22], 0.01, n),
            "latency_ms": _dist_of(_LAT_KEYS + ["2000", ">=2000"], c[22:35], 0.01, n)}


_DEPTH_EDGES = [2, 4, 8, 16, 32, 64]


def _depth_levels(rows, io: np.ndarray) -> np.ndarray:
    """fio's iodepth_level counts ("1", "2", ..., ">=64") of the `io` commands: each
    command's queue depth as it was submitted, itself included (fio's cur_depth, at least
    1), from arrays.PhaseRows.depth after each submit (in submit order: when every command is
    an io, which command had which depth does not change the counts)."""
    depth = rows.depth()
    if not io.all():
        depth = depth[io[rows.order()]]
    per_depth = _counts(depth, lambda d: np.maximum(d, 1), 2)
    return np.bincount(np.searchsorted(_DEPTH_EDGES, np.arange(len(per_depth)), side="right"),
                       weights=per_depth, minlength=len(_DEPTH_EDGES) + 1).astype(np.int64)


def _batches(s: np.ndarray) -> dict[str, float]:
    """fio's iodepth_submit/complete ("0", "4", ..., ">=64"): the share of the ticks at
    which commands were sent or completed (`s`: each command's tick, sorted) by how many
    went at that tick: one Set Device Bits FIS can complete many NCQ commands."""
    # A tick's group is over k commands when the command k places on has its tick too: the
    # groups over 4, 8, ..., 64 counted so, with no group sizes to list (a 16 M phase's
    # statuses: 0.35 s of int64 arrays that way).
    new = np.empty(len(s), dtype=bool)
    new[:1] = True
    np.not_equal(s[1:], s[:-1], out=new[1:])
    groups = int(np.count_nonzero(new))
    over = [int(np.count_nonzero(new[:len(s) - k] & (s[k:] == s[:len(s) - k]))) if len(s) > k else 0
            for k in (4, 8, 16, 32, 64)]
    counts = np.array([0, groups - over[0], *(a - b for a, b in zip(over, over[1:])), over[-1]], dtype=np.int64)
    return _dist_of(["0", "4", "8", "16", "32", "64", ">=64"], counts, 0.1, groups)


def sequential_phases(meta: dict) -> dict[str, bool]:
    """Each phase label: True unless a workload or replay step of it issues other than
    sequential LBAs (a workload's pattern "sequential")."""
    from fisrig.plan import phase_label
    out: dict[str, bool] = {}
    current = None
    for s in meta.get("plan", {}).get("steps", []):
        current = phase_label(s.get("label"), current, s["do"])
        seq = s["do"] not in ("workload", "replay") or s.get("pattern") == "sequential"
        out[current] = out.get(current, True) and seq
    return out


# fio's rw for the directions a phase moved; a mix fio has no rw for (reads with TRIMs)
# is called its read/write mix.
_RW = {("read",): "read", ("write",): "write", ("trim",): "trim", ("write", "trim"): "trimwrite"}


def _sizes(lbas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The transfer sizes in bytes and how many commands had each (np.unique's, without its
    sort of every command when they all had one size, as most phases' do)."""
    if not len(lbas):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if lbas.min() == lbas.max():
        return np.array([int(lbas[0]) * 512]), np.array([len(lbas)])
    return np.unique(lbas.astype(np.int64) * 512, return_counts=True)


def _job_options(name: str, dirs: dict, sizes: tuple[np.ndarray, np.ndarray], iodepth: int, sequential: bool,
                 engine: str) -> dict[str, str]:
    """fio's "job options" (strings, as fio writes them) that describe the phase."""
    moved = tuple(d for d in ("read", "write", "trim") if dirs[d]["total_ios"])
    rw = _RW.get(moved, "rw") if moved else "read"  # fio's default when rw is not given
    if moved and not sequential:
        rw = "randrw" if rw == "rw" else "rand" + rw
    out = {"name": name, "ioengine": engine, "rw": rw, "bs": "4096", "iodepth": str(iodepth), "numjobs": "1",
           "size": str(sum(d["io_bytes"] for d in dirs.values()))}
    values, counts = sizes
    if len(values):  # bs the most common transfer; bsrange when they vary
        out["bs"] = str(int(values[counts.argmax()]))
        if len(values) > 1:
            out["bsrange"] = f"{int(values[0])}-{int(values[-1])}"
    return out



def job_body(pc, qd_asked: int | None, sequential: bool, engine: str) -> dict:
    """A phase's fio job, from "job options" on: all of it but its name, place and error
    count (fio_summary's). pc: its records (arrays.PhaseRows); qd_asked: the queue
    depth its plan asked for (phase_stats.qd_asked), else the most it held is its iodepth."""
    from fisrig.analysis.arrays import OP_FLUSH, OP_READ, OP_TRIM, OP_WRITE, masked
    ok, pop = pc.ok, pc.op
    t0, t1 = int(pc["t_submit_ns"].min()), int(pc["t_status_ns"].max())
    dirs, counts = {}, np.zeros(35, dtype=np.int64)
    for code, d in ((OP_READ, "read"), (OP_WRITE, "write"), (OP_TRIM, "trim")):
        dirs[d], c = _direction(pc, ok & (pop == code), t0, t1)
        counts += c  # fio's latency maps are over its reads, writes and TRIMs: the three directions'
    io = ok & (pop >= OP_READ) & (pop <= OP_TRIM)  # and so is its depth map
    iodepth = qd_asked or max(int(pc.depth().max()), 1)
    flush = ok & (pop == OP_FLUSH)
    return {
        "job options": _job_options(pc.label, dirs, _sizes(masked(pc["lbas"], io)), iodepth, sequential, engine),
        **dirs,
        "sync": {"total_ios": int(flush.sum()), "lat_ns": _clat(pc["latency_ns"][flush])},
        "job_runtime": (t1 - t0) // 1_000_000, "usr_cpu": 0.0, "sys_cpu": 0.0, "ctx": 0, "majf": 0, "minf": 0,
        "iodepth_level": _dist_of(["1", "2", "4", "8", "16", "32", ">=64"], _depth_levels(pc, io), 0.1,
                                  int(io.sum())),
        "iodepth_submit": _batches(pc.sorted("t_submit_ns")),
        "iodepth_complete": _batches(pc.sorted("t_status_ns")),
        **_latency_maps(counts, int(io.sum())),
        # fio's latency_target is off: these are what it writes then.
        "latency_depth": iodepth, "latency_target": 0, "latency_percentile": 100.0, "latency_window": 0,
    }


def engine_of(meta: dict) -> str:
    """The ioengine a run's jobs name: fisrig's target."""
    return f"fisrig-{meta.get('target', '?')}"


def fio_summary(table: pa.Table, meta: dict, phases: list | None = None) -> dict:
    """fio's json+ output, every field fio 3.x writes (tests/host/test_fio_json.py holds it
    to a real fio's): one job per phase, each its own group as fio's stonewalled jobs, with
    read/write/trim (bw in KiB/s, clat_ns percentiles and bins) and sync (FLUSH). For trim,
    as fio does, io_bytes and bw count the bytes of the LBAs trimmed (no data moves).
    Fields about the host's CPU are fio's when it has none: the rig times the commands.
    `phases` (phase_stats.compute's) adds to each job a "fisrig" block: the phase's kind,
    queue depth held, issue rate and latency percentiles, the figures the headline prints;
    a phase's job made already (its fio_job) is taken as it is."""
    from fisrig.analysis.arrays import split
    by_label = {p.label: p for p in phases or []}
    # Each phase's records as phase_stats took them out (their sorted stamps and depths
    # computed once for both), or taken out here when the phases did not come with them.
    rows = [p.rows for p in phases] if phases and all(p.rows is not None for p in phases) else split(table)
    engine = engine_of(meta)
    sequential = sequential_phases(meta)
    started = int(meta.get("started", 0))
    # fio's elapsed: seconds from its start to its report, rounded up, the same in every job.
    run_ns = (max(int(r["t_status_ns"].max()) for r in rows) - min(int(r["t_submit_ns"].min()) for r in rows)
              if rows else 0)
    jobs = []
    for i, pc in enumerate(rows):
        name = pc.label
        p = by_label.get(name)
        body = p.fio_job if p is not None and p.rows is pc and p.fio_job is not None else \
            job_body(pc, p.qd_asked if p else None, sequential.get(name, False), engine)
        jobs.append({"jobname": name, "groupid": i, "error": pc.n - int(pc.ok.sum()),
                     "eta": 0, "elapsed": -(-run_ns // 1_000_000_000), **body})
        if p:
            jobs[-1]["fisrig"] = p.to_json()
    return {"fio version": f"fisrig-{meta.get('fisrig_version', '?')}", "timestamp": started,
            "timestamp_ms": started * 1000, "time": time.ctime(started),
            "global options": {"ioengine": engine}, "jobs": jobs,
            "fisrig": {"schema_version": SCHEMA_VERSION, "plan": meta.get("plan", {}).get("name")}}
