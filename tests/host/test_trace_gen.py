"""The JEDEC test's trace generators (fisrig.trace_gen, docs/traces.md): the statistics each is
built to have, measured as `fisrig trace stats` measures them (fisrig.trace.stats) on a drive
1/32 of the review's at its default (full) length; determinism per seed; every command fits
the drive, whatever its size."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from fisrig import traces as trace
from fisrig.traces import generate as trace_gen

R, W, T, F = (trace.pf.TRACE_OPS[k] for k in "RWTF")
SCALE = 32
CAP = trace_gen.REVIEW_CAPACITY // SCALE  # 15.6 M sectors: 8 GB


def fits(e, cap):
    lba, n = e["lba"].astype(np.int64), e["sectors"].astype(np.int64)
    data = e["op"] != F
    return bool((lba[data] + n[data] <= cap).all() and (n[data] >= 1).all() and (n <= 65536).all()
                and (lba[~data] == 0).all() and (n[~data] == 0).all())


@pytest.fixture(scope="module")
def client():
    e = trace_gen.generate("client", CAP)
    return e, trace.stats(e, CAP)


@pytest.fixture(scope="module")
def enterprise():
    e = trace_gen.generate("enterprise", CAP)
    return e, trace.stats(e, CAP)


def test_client_has_the_reviews_statistics_scaled(client):
    """37 M writes and 800 GB a pass on 256 GB (so a mean write of 21,622 bytes), 75% random /
    25% sequential, TRIMs of 13% of the drive, flushes, no reads: here 1/32 of each."""
    e, s = client
    assert s["writes"] == pytest.approx(trace_gen.REVIEW_WRITES / SCALE, rel=0.005)
    assert s["write_bytes"] == pytest.approx(trace_gen.REVIEW_WRITE_BYTES / SCALE, rel=0.01)
    assert s["mean_write_bytes"] == pytest.approx(800e9 / 37e6, rel=0.01)
    assert s["sequential_share"] == pytest.approx(0.25, abs=0.003)
    assert s["trimmed_share"] == pytest.approx(trace_gen.REVIEW_TRIMMED, abs=0.015)
    assert s["writes_per_flush"] == pytest.approx(64, rel=0.03)
    assert s["reads"] == 0 and s["trims"] > 1000
    assert s["aligned_4k_share"] == 1.0 and s["under_4k_share"] == 0.0  # whole 4 KiB clusters
    assert s["commands"] == trace_gen.default_commands("client", CAP) == len(e)
    assert fits(e, CAP)


def test_client_trims_free_what_was_written_before(client):
    """A TRIM's range starts where an earlier write started (a file's first write) and ends
    where one ended: the extent of a deleted file, never of LBAs the trace did not write."""
    e, _ = client
    op, lba, end = e["op"], e["lba"].astype(np.int64), e["lba"].astype(np.int64) + e["sectors"]
    w = op == W
    for i in np.flatnonzero(op == T)[:: max(1, (op == T).sum() // 200)]:
        before = w[:i]
        assert (lba[:i][before] == lba[i]).any() and (end[:i][before] == end[i]).any()


def test_client_sequential_writes_continue_a_stream(client):
    """The generator's sequential writes are what stats counts: a write starting where one of
    the 64 before it ended. Two streams keep that within 64 writes all but once in 7,000."""
    e, s = client
    w = e[e["op"] == W]
    lba, n = w["lba"].astype(np.int64), w["sectors"].astype(np.int64)
    wide = trace.sequential(lba, n, window=512).mean()
    assert wide - s["sequential_share"] < 0.0005


def test_enterprise_is_jesd219(enterprise):
    e, s = enterprise
    sizes = dict((b / 1024, share) for b, share in s["write_sizes"])
    counts = np.bincount(e["sectors"].astype(np.int64))
    share = {kib: counts[round(kib * 2)] / len(e) for kib, _ in trace_gen.ENTERPRISE_SIZES_KIB}
    for kib, pct in trace_gen.ENTERPRISE_SIZES_KIB:
        assert 100 * share[kib] == pytest.approx(pct, abs=0.15), kib
    assert sizes[4] == pytest.approx(0.67, abs=0.002)
    assert s["band_shares"] == pytest.approx([0.50, 0.30, 0.20], abs=0.003)
    assert s["writes"] == s["commands"] == len(e) and s["trims"] == s["flushes"] == s["reads"] == 0
    assert s["random_share"] > 0.999
    big = e["sectors"] >= 8
    assert (e["lba"][big] % 8 == 0).all()  # 4 KiB and larger on 4 KiB
    assert (e["lba"][~big] % 8 != 0).mean() > 0.8  # smaller ones on any sector
    assert s["mean_write_bytes"] == pytest.approx(7818.24, rel=0.005)
    assert fits(e, CAP)


def test_enterprise_transfers_stay_in_their_band():
    cap = trace_gen.MIN_CAPACITY + 1234
    e = trace_gen.generate("enterprise", cap, 200_000, seed=3)
    edges = [int(a * cap) // 8 * 8 for a, _, _ in trace_gen.ENTERPRISE_BANDS] + [cap]
    band = np.searchsorted(edges, e["lba"], side="right") - 1
    assert (e["lba"].astype(np.int64) + e["sectors"] <= np.array(edges)[band + 1]).all()


@pytest.mark.parametrize("kind", trace_gen.KINDS)
def test_deterministic_per_seed(kind):
    a, b = (trace_gen.generate(kind, CAP, 50_000, seed=7) for _ in range(2))
    assert (a == b).all()
    c = trace_gen.generate(kind, CAP, 50_000, seed=8)
    assert (a["lba"] != c["lba"]).mean() > 0.9


# The traces of seed 1 on CAP, byte for byte (program_format.TRACE_ENTRY): a reviewer who
# reruns a plan with a later fisrig replays the trace that was published. A
# change of numpy (pinned: its Generator's methods may change their draws between versions)
# or of the generators that moves these is a new trace, and docs/traces.md must say so.
PINNED = {"client": (1_176_903, "604b1fa3eca5b4608cac2d168c293f4d1bcebc753b69d0bbb5769782530428dc"),
          "enterprise": (1_156_250, "e2e16847edda0516610535ea76d9ca04df04ee33af1cfecb2a948a21396f419c")}


@pytest.mark.parametrize("kind", trace_gen.KINDS)
def test_a_seed_gives_the_trace_it_gave(kind):
    e = trace_gen.generate(kind, CAP, None, 1)
    assert (len(e), hashlib.sha256(e.tobytes()).hexdigest()) == PINNED[kind]


@pytest.mark.parametrize("kind", trace_gen.KINDS)
@pytest.mark.parametrize("cap", [trace_gen.MIN_CAPACITY, trace_gen.MIN_CAPACITY + 5, 1_953_120, (1 << 32) + 12345])
def test_every_command_fits_any_drive(kind, cap):
    e = trace_gen.generate(kind, cap, 100_000, seed=11)
    assert len(e) == 100_000 and fits(e, cap)
    assert e["op"][0] == W


def test_length_scales_with_the_drive():
    for kind in trace_gen.KINDS:
        full = trace_gen.default_commands(kind, trace_gen.REVIEW_CAPACITY)
        assert trace_gen.default_commands(kind, trace_gen.REVIEW_CAPACITY // 4) == pytest.approx(full / 4, rel=1e-6)
    assert trace_gen.default_commands("enterprise", trace_gen.REVIEW_CAPACITY) == trace_gen.REVIEW_WRITES
    writes = trace_gen.default_commands("client", trace_gen.REVIEW_CAPACITY) / (
        1 + 1 / trace_gen.CLIENT_WRITES_PER_FLUSH + 1 / trace_gen.CLIENT_WRITES_PER_TRIM)
    assert writes == pytest.approx(37e6, rel=1e-6)


def test_what_cannot_be_generated_is_said():
    with pytest.raises(ValueError, match="no generator 'server'"):
        trace_gen.generate("server", CAP)
    with pytest.raises(ValueError, match="too small to generate for"):
        trace_gen.generate("client", trace_gen.MIN_CAPACITY - 1)
    with pytest.raises(ValueError, match="commands = 0"):
        trace_gen.generate("enterprise", CAP, 0)


def test_size_tables_are_as_documented():
    """The client's sizes give the review's mean write (with the stream share), and every
    table's shares add up to 100%."""
    def mean(table):
        return sum(k * w for k, w in table) / 100 * 1024
    for table in (trace_gen.CLIENT_RANDOM_KIB, trace_gen.CLIENT_STREAM_KIB, trace_gen.ENTERPRISE_SIZES_KIB):
        assert sum(w for _, w in table) == 100
    share = trace_gen.CLIENT_STREAM_SHARE
    mixed = (1 - share) * mean(trace_gen.CLIENT_RANDOM_KIB) + share * mean(trace_gen.CLIENT_STREAM_KIB)
    assert mixed == pytest.approx(800e9 / 37e6, rel=0.001)
