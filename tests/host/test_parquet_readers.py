"""records.parquet opens as it is in the data tools users read runs with: pandas, polars and
DuckDB (each pinned in host/requirements.txt), with the same rows and values pyarrow reads,
delta-coded columns and dictionary-coded labels included."""
import numpy as np
import pyarrow.parquet as pq
import pytest

COLUMNS = ["lba", "t_submit_ns", "t_status_ns", "latency_ns"]


@pytest.fixture(scope="module")
def reference(smoke_run):
    path = smoke_run.run_dir / "records.parquet"
    t = pq.read_table(path)
    ref = {c: t.column(c).to_numpy() for c in COLUMNS}
    ref["kind"] = np.array(t.column("kind").to_pylist())
    ref["marker"] = np.array(t.column("marker").to_pylist())
    return path, ref


def test_pandas_reads_it(reference):
    import pandas as pd
    path, ref = reference
    df = pd.read_parquet(path)
    assert len(df) == len(ref["lba"])
    for c in COLUMNS:
        np.testing.assert_array_equal(df[c].to_numpy(), ref[c])
    assert (df["kind"].astype(str).to_numpy() == ref["kind"]).all()
    assert df.groupby("marker", observed=True)["latency_ns"].median().loc["random read"] > 0


def test_polars_reads_it(reference):
    import polars as pl
    path, ref = reference
    df = pl.read_parquet(path)
    assert df.height == len(ref["lba"])
    for c in COLUMNS:
        np.testing.assert_array_equal(df[c].to_numpy(), ref[c])
    assert (df["marker"].cast(pl.Utf8).to_numpy() == ref["marker"]).all()
    assert df.filter(pl.col("kind") == "command").height == int((ref["kind"] == "command").sum())


def test_duckdb_reads_it(reference):
    import duckdb
    path, ref = reference
    con = duckdb.connect()
    n, lba_sum, last = con.execute(
        f"SELECT count(*), sum(lba), max(t_status_ns) FROM read_parquet('{path}')").fetchone()
    assert n == len(ref["lba"])
    assert int(lba_sum) == int(ref["lba"].astype(np.int64).sum())
    assert last == ref["t_status_ns"].max()
    rows = con.execute(f"SELECT marker, count(*) FROM read_parquet('{path}') WHERE kind = 'command' "
                       "GROUP BY marker").fetchall()
    assert sum(c for _, c in rows) == int((ref["kind"] == "command").sum())
