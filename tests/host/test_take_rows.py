"""arrays.take_rows is ChunkedArray.take for ascending rows, whatever the chunks: numeric
columns (gathered by numpy), dictionary columns (taken chunk by chunk), rows at the chunks'
edges, none at all."""
import numpy as np
import pyarrow as pa
import pytest

from fisrig.analysis.arrays import take_rows


def chunked(values: pa.Array, sizes: list[int]) -> pa.ChunkedArray:
    edges = np.cumsum([0, *sizes])
    return pa.chunked_array([values.slice(a, b - a) for a, b in zip(edges[:-1], edges[1:])], type=values.type)


@pytest.mark.parametrize("values", [
    pa.array(np.arange(100, dtype=np.int64) * 7 - 300),
    pa.array(np.arange(100, dtype=np.uint8)),
    pa.array(np.linspace(0, 1, 100)),
    pa.array([["ok", "error", "timeout"][i % 3] for i in range(100)]).dictionary_encode(),
    pa.array([None if i % 5 == 0 else i for i in range(100)], pa.int32()),  # nulls: Arrow's take
])
def test_take_rows_is_take(values):
    rng = np.random.default_rng(3)
    for sizes in ([100], [1, 30, 0, 69], [10] * 10):
        col = chunked(values, sizes)
        for rows in (np.array([], dtype=np.int64), np.array([0, 99]), np.array([0, 1, 30, 31, 99]),
                     np.sort(rng.choice(100, 40, replace=False)), np.arange(100)):
            got = take_rows(col, rows)
            assert got.type == col.type
            assert got.to_pylist() == col.take(pa.array(rows, pa.int64())).to_pylist(), (sizes, rows)
