"""arrays.sort_values is np.sort's array (values and dtype), whatever the values: the
latencies it sorts for the percentiles, fio's bins and the latency chart must not move."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fisrig.analysis.arrays import COUNT_SORT_MIN, sort_values

rng = np.random.default_rng(7)
N = COUNT_SORT_MIN * 3


def shapes():
    """Latency-like and adversarial arrays, each long enough to be counted."""
    lat = rng.lognormal(11, 1.2, N).astype(np.int64)  # a p50 near 60 us, a long tail
    return {
        "latencies": lat,
        "latencies with a tail of seconds": np.concatenate([lat, rng.integers(10**9, 3 * 10**9, 500)]),
        "one value": np.full(N, 45_000, np.int64),
        "zeros": np.zeros(N, np.int64),
        "negatives among them": np.concatenate([lat, -lat[:1000], [np.iinfo(np.int64).min]]),
        "the extremes": np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min, 0] * (N // 3)),
        "all above the bins": rng.integers(1 << 40, 1 << 41, N),
        "uint64 past int64": rng.integers(0, 1 << 63, N, dtype=np.uint64) * np.uint64(2) + np.uint64(1),
        "uint64 small": rng.integers(0, 5000, N).astype(np.uint64),
        "ties at the bound": np.repeat(np.array([1023, 1024, 1 << 23, (1 << 24) - 1, 1 << 24], np.int64), N // 5),
        "sorted already": np.sort(lat),
        "short": lat[:100],
        "int32 (np.sort's)": lat.astype(np.int32),
        "float (np.sort's)": lat.astype(np.float64),
    }


@pytest.mark.parametrize("name", list(shapes()))
def test_it_is_np_sort(name):
    a = shapes()[name]
    before = a.copy()
    out = sort_values(a)
    assert out.dtype == a.dtype
    np.testing.assert_array_equal(out, np.sort(a))
    np.testing.assert_array_equal(a, before)  # its input is left as it was


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), min_size=0, max_size=40),
       st.integers(0, 1 << 30), st.integers(1, 6))
def test_any_values_are_sorted_as_np_sort_sorts_them(extra, scale, spread):
    base = (rng.integers(0, max(1, scale), COUNT_SORT_MIN) // spread).astype(np.int64)
    a = np.concatenate([base, np.array(extra, dtype=np.int64)])
    rng.shuffle(a)
    np.testing.assert_array_equal(sort_values(a), np.sort(a))
