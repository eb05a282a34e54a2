"""Trace generators for the JEDEC-style TRIM test (docs/traces.md). The JEDEC master trace
that test replays is not ours to ship, so fisrig makes traces with the statistics published.

- "client": a synthetic client trace matching what the DriveMaster review
  (shared/seeds/drivemaster-jedec-trim-test.txt) says of JEDEC's client master trace with
  its reads removed: on a 256 GB drive over 37 million write commands and close to 800 GB
  written a pass (a mean write near 22 KB), 75% random and 25% sequential, with flushes and
  TRIMs in it, and "13% of space gets TRIM'ed".
- "enterprise": JESD219's enterprise endurance workload as published: its transfer sizes,
  its skewed LBA bands, 100% random writes.

`generate(kind, capacity, commands, seed)` returns `commands` trace entries (numpy array of
program_format.TRACE_ENTRY) for a drive of `capacity` 512-byte sectors: every command fits
it (lba + sectors <= capacity, 1..65536 sectors; a FLUSH is lba 0, no sectors), and the same
arguments give the same trace (numpy's PCG64 from the seed; the draws are in a fixed order).
Both are vectorised: 37 M commands in a few seconds (measured: docs/traces.md).

Every choice the sources leave open is a constant below, with its reason. What each
generator achieves is measured by `fisrig trace stats` (fisrig.trace.stats) and held to its
targets by tests/host/test_trace_gen.py.
"""
from __future__ import annotations

import numpy as np

from fisrig import program_format as pf

KINDS = ("client", "enterprise")
SECTOR = 512
ALIGN = 8  # sectors: 4 KiB, a client file system's cluster and the alignment JESD219 asks of 4 KiB and larger
MIN_CAPACITY = 1 << 16  # sectors (32 MiB): JESD219's first band (5%) must hold its largest (64 KiB) transfers
R, W, T, F = (pf.TRACE_OPS[k] for k in "RWTF")

# --- the review's drive and pass ---------------------------------------------------------
REVIEW_CAPACITY = 500_118_192  # sectors: the review's 256 GB drives (ATA's 256 GB), and consumer-256gb
REVIEW_WRITES = 37_000_000      # "over 37 million write commands" a pass
REVIEW_WRITE_BYTES = 800e9      # "close to 800 GB" written a pass
REVIEW_TRIMMED = 0.13           # "13% of space gets TRIM'ed" (with TRIM)
CLIENT_SEQUENTIAL = 0.25        # "75% random and 25% sequential"

# --- client: our choices where the review is silent ---------------------------------------
# Write sizes (KiB, %). The review gives only the mean: 800 GB / 37 M = 21,622 bytes. A
# client writes mostly 4 KiB (the cluster and page size) at random, and files in larger
# pieces; Windows' cached writes reach 64 to 128 KiB. Random writes (that do not continue a
# stream) mean 12.1 KiB; sequential ones, a file's successive pieces, 47.0 KiB, which puts
# the mean of all writes at 21,622 bytes. All are whole 4 KiB clusters on 4 KiB boundaries.
CLIENT_RANDOM_KIB = [(4, 67), (8, 12), (16, 9), (32, 6), (64, 4), (128, 2)]
CLIENT_STREAM_KIB = [(4, 10), (8, 10), (16, 15), (32, 21.5), (64, 30), (128, 13.5)]
# Sequential writes come from CLIENT_STREAMS concurrent streams (files being written), each
# write of a stream picking one at random; a stream writes runs of CLIENT_RUN_WRITES writes
# on average (geometric: a file of about 1.5 MiB), each run starting at a random 4 KiB
# boundary. A run's first write starts elsewhere than its stream's last ended, so it is a
# random write: the stream share is CLIENT_SEQUENTIAL / (1 - 1 / CLIENT_RUN_WRITES). Two
# streams keep the write before a sequential one of the same stream within the last 64
# writes (trace.stats looks that far back) all but once in 7,000.
CLIENT_STREAMS = 2
CLIENT_RUN_WRITES = 32
CLIENT_RUN_MAX = 256  # writes: a run of 256 x 128 KiB = 32 MiB at most, so it fits any drive generated for
CLIENT_STREAM_SHARE = CLIENT_SEQUENTIAL / (1 - 1 / CLIENT_RUN_WRITES)
# FLUSH: a client OS flushes the drive's cache on journal commits and file closes; we put
# one after 64 writes on average (drawn independently at each command).
CLIENT_WRITES_PER_FLUSH = 64
# TRIM: an OS trims what a deleted file held. A TRIM here frees an earlier write's file: it
# picks one of the writes before it at random; for a write of a sequential run, it trims
# the run from its start up to that write's end (the file as written so far; capped at
# 65,536 sectors, one trace entry), for a random write, that write's LBAs (a small file).
# That makes a TRIM 400 KB on average (measured). The review's "13% of space" is taken as
# the TRIMs' sectors summed over the drive's: over 8 seeds at a quarter of the drive, one TRIM
# per 457 writes summed to 12.7% (sd 0.2%), so one per 447 for 13% (about 11% of the drive
# counted once: some files are picked twice).
CLIENT_WRITES_PER_TRIM = 447

# --- enterprise: JESD219 as published -----------------------------------------------------
# Transfer sizes (KiB, % of accesses).
ENTERPRISE_SIZES_KIB = [(0.5, 4), (1, 1), (1.5, 1), (2, 1), (2.5, 1), (3, 1), (3.5, 1), (4, 67),
                        (8, 10), (16, 7), (32, 3), (64, 3)]
# LBA bands (start, end as shares of the drive, % of accesses): 50% in the first 5%, 30% in
# the next 15%, 20% in the other 80%; uniform within a band, the transfer inside its band.
ENTERPRISE_BANDS = [(0.00, 0.05, 50), (0.05, 0.20, 30), (0.20, 1.00, 20)]
# Transfers of 4 KiB and more start on a 4 KiB boundary, smaller ones on any sector: our
# reading of JESD219's alignment rule (the public summaries we could check give the sizes and
# bands but not the alignment; the JESD219 text itself was not at hand).
# JESD219 has no TRIM and no FLUSH (an endurance workload of writes): neither is generated.


def default_commands(kind: str, capacity: int) -> int:
    """A pass's commands for a drive of `capacity` sectors: the review's 37 M writes scaled
    to its capacity, with the client's flushes and TRIMs on top (client); as many commands,
    all writes (enterprise: JESD219 sets no length)."""
    writes = REVIEW_WRITES * capacity / REVIEW_CAPACITY
    if kind == "client":
        writes *= 1 + 1 / CLIENT_WRITES_PER_FLUSH + 1 / CLIENT_WRITES_PER_TRIM
    return max(1, round(writes))


def problem(kind: str, capacity: int, commands: int | None) -> str | None:
    """Why these arguments cannot make a trace, or None."""
    if kind not in KINDS:
        return f"no generator {kind!r} (valid: {', '.join(KINDS)})"
    if capacity < MIN_CAPACITY:
        return f"a drive of {capacity} sectors is too small to generate for (at least {MIN_CAPACITY}, 32 MiB)"
    if commands is not None and not 1 <= commands < 1 << 31:
        return f"commands = {commands}: 1 to {(1 << 31) - 1}"
    return None


_CHUNK = 1 << 20  # draws a chunk: 8 MB of float64, which malloc reuses


def _sizes(rng: np.random.Generator, table: list[tuple[float, float]], n: int) -> np.ndarray:
    """n sizes in sectors drawn from a (KiB, %) table (shares in half percents: a draw is an
    index into 200 slots, which is ten times faster than rng.choice with p, measured)."""
    slots = np.repeat([round(k * 1024 / SECTOR) for k, _ in table], [round(2 * w) for _, w in table])
    if len(slots) != 200 or any(2 * w != round(2 * w) for _, w in table):
        raise ValueError("a size table's shares are half percents adding up to 100")
    return slots.astype(np.int64)[rng.integers(0, 200, size=n, dtype=np.uint8)]


def _uniform_chunks(rng: np.random.Generator, n: int):
    """rng.random(n) a chunk at a time, as (first index, chunk): the same numbers as one
    call draws (a double takes one 64-bit output of the generator, whatever the chunk),
    without a whole-trace float64 temporary (300 MB of fresh pages for the client trace)."""
    for a in range(0, n, _CHUNK):
        yield a, rng.random(min(_CHUNK, n - a))


def _aligned_start(rng: np.random.Generator, lo, hi, sectors: np.ndarray, align) -> np.ndarray:
    """A start in [lo, hi - sectors], a multiple of `align` (lo is one), uniformly drawn
    (a float64 draw scaled: starts number under 2^40, far inside its 53 bits). In place
    where it can be: on this VM a fresh page costs about 1 s a GB to fault in, and each
    temporary of the client trace's 27.5 M random writes is 220 MB."""
    count = np.subtract(hi, sectors, dtype=np.int64)
    count -= lo
    count //= align
    count += 1
    start = rng.random(len(sectors))
    start *= count
    start = start.astype(np.int64)
    count -= 1
    np.minimum(start, count, out=start)
    del count
    start *= align
    start += lo
    return start


def _client(rng: np.random.Generator, capacity: int, n: int) -> np.ndarray:
    rate = 1 + 1 / CLIENT_WRITES_PER_FLUSH + 1 / CLIENT_WRITES_PER_TRIM
    flush_below = 1 / CLIENT_WRITES_PER_FLUSH / rate
    trim_below = (1 / CLIENT_WRITES_PER_FLUSH + 1 / CLIENT_WRITES_PER_TRIM) / rate
    op = np.full(n, W, dtype=np.uint8)
    for a, u in _uniform_chunks(rng, n):
        o = op[a:a + len(u)]
        o[u < flush_below] = F
        o[(u >= flush_below) & (u < trim_below)] = T
    op[0] = W  # so every TRIM has a write before it to free
    wi = np.flatnonzero(op == W)
    nw = len(wi)
    stream = np.empty(nw, bool)
    for a, u in _uniform_chunks(rng, nw):
        np.less(u, CLIENT_STREAM_SHARE, out=stream[a:a + len(u)])
    si = np.flatnonzero(stream)  # the stream writes, by their number among the writes
    ri = np.flatnonzero(~stream)
    size = np.empty(nw, np.int64)
    r_size = _sizes(rng, CLIENT_RANDOM_KIB, len(ri))
    size[ri] = r_size
    size[si] = _sizes(rng, CLIENT_STREAM_KIB, len(si))
    lba = np.empty(nw, np.int64)
    lba[ri] = _aligned_start(rng, 0, capacity, r_size, ALIGN)
    del ri, r_size

    # Sequential runs: the stream writes grouped by stream (in time order within each), cut
    # into runs; a write's LBA is its run's start plus the sizes written before it in the run.
    ns = len(si)
    which = rng.integers(0, CLIENT_STREAMS, size=ns, dtype=np.uint8)
    order = np.argsort(which, kind="stable")
    head = rng.random(ns) < 1 / CLIENT_RUN_WRITES
    firsts = np.searchsorted(which[order], np.arange(CLIENT_STREAMS))  # where each stream's writes begin
    head[firsts[firsts < ns]] = True
    run_max = max(1, min(CLIENT_RUN_MAX, capacity // (2 * int(size.max(initial=1)))))
    at = np.arange(ns)
    since = at - np.maximum.accumulate(np.where(head, at, 0))
    head |= (since > 0) & (since % run_max == 0)  # a run never longer than run_max writes
    del at, since
    run = np.cumsum(head) - 1
    s_size = size[si][order]
    before = np.cumsum(s_size) - s_size
    firsts = np.flatnonzero(head)
    offset = before - before[firsts][run]
    total = np.add.reduceat(s_size, firsts) if ns else np.zeros(0, np.int64)
    start = _aligned_start(rng, 0, capacity, total, ALIGN)
    s_lba = np.empty(ns, np.int64)
    s_lba[order] = start[run] + offset
    lba[si] = s_lba
    run_of = np.empty(ns, np.int64)
    run_of[order] = run
    del order, head, before, offset, s_size, s_lba, run

    # TRIMs: each frees the file of a write before it (CLIENT_WRITES_PER_TRIM's comment).
    ti = np.flatnonzero(op == T)
    earlier = np.searchsorted(wi, ti)  # writes before each TRIM: at least one (op[0] is a write)
    pick = np.minimum((rng.random(len(ti)) * earlier).astype(np.int64), earlier - 1)
    end = lba[pick] + size[pick]
    k = np.searchsorted(si, pick)
    in_run = (k < ns) & (si[np.minimum(k, ns - 1)] == pick) if ns else np.zeros(len(ti), bool)
    t_lba = lba[pick].copy()
    t_lba[in_run] = start[run_of[k[in_run]]]
    t_lba = np.maximum(t_lba, end - 65536)  # one entry: the file's last 32 MiB at most
    out = pf.trace_entries(n)  # in the TRACE op's own buffer
    out["lba"][wi], out["sectors"][wi] = lba, size
    out["lba"][ti], out["sectors"][ti] = t_lba, end - t_lba
    out["op"] = op
    return out


def _enterprise(rng: np.random.Generator, capacity: int, n: int) -> np.ndarray:
    size = _sizes(rng, ENTERPRISE_SIZES_KIB, n)
    slots = np.repeat(np.arange(len(ENTERPRISE_BANDS), dtype=np.uint8), [p for *_, p in ENTERPRISE_BANDS])
    band = slots[rng.integers(0, 100, size=n, dtype=np.uint8)]  # shares in whole percents: 100 slots
    edges = np.array([int(a * capacity) // ALIGN * ALIGN for a, _, _ in ENTERPRISE_BANDS] + [capacity], np.int64)
    align = np.where(size >= ALIGN, ALIGN, 1)
    lba = _aligned_start(rng, edges[band], edges[band + 1], size, align)
    out = pf.trace_entries(n)  # in the TRACE op's own buffer
    out["lba"], out["sectors"], out["op"] = lba, size, W
    return out


def generate(kind: str, capacity: int, commands: int | None = None, seed: int = 1) -> np.ndarray:
    """`commands` trace entries (default_commands when None) for a drive of `capacity`
    sectors, the same for the same arguments; ValueError (problem()'s words) for arguments
    that cannot make one."""
    if why := problem(kind, capacity, commands):
        raise ValueError(why)
    n = default_commands(kind, capacity) if commands is None else commands
    rng = np.random.Generator(np.random.PCG64(seed))
    return (_client if kind == "client" else _enterprise)(rng, capacity, n)
