"""records.parquet made while the run runs (store.ParquetStream): the same file as one
made from records.bin afterwards, whatever pieces the records come in (records torn across
two reads of the growing file too); checked against the records the run recorded, and
never left half-made when a run fails."""
import json

import numpy as np

import pyarrow.parquet as pq
import pytest

from fisrig import plan
from fisrig.records import store
from fisrig.run import run_plan
from fisrig.targets import ModelTarget


def markers_of(run_dir):
    meta = json.loads((run_dir / "run.json").read_text())
    return {int(k): v for k, v in meta["markers"].items()}


def test_streamed_in_odd_pieces_it_is_the_file_made_afterwards(smoke_run, tmp_path):
    raw = (smoke_run.run_dir / store.RAW).read_bytes()[store.pf.RECORDS_HEADER.size:]
    n = len(raw) // store.pf.RECORD_DTYPE.itemsize
    assert n > 1000
    stream = store.ParquetStream(tmp_path, markers_of(smoke_run.run_dir), chunk=300)
    at = 0
    for piece in [1, 7, 1000, 97, 12345, 50, 300 * store.pf.RECORD_DTYPE.itemsize]:
        stream.take(raw[at:at + piece])  # pieces that end inside a record
        at += piece
    stream.take(raw[at:])
    assert stream.finish(n) == n
    assert not (tmp_path / "records.parquet.tmp").exists()
    assert pq.read_table(tmp_path / "records.parquet").equals(pq.read_table(smoke_run.run_dir / "records.parquet"))
    # its row groups are the chunks, as write_parquet's
    assert pq.ParquetFile(tmp_path / "records.parquet").metadata.row_group(0).num_rows == 300


def test_a_stream_short_of_the_records_the_run_recorded_is_refused(smoke_run, tmp_path):
    rec = store.read_raw(smoke_run.run_dir / store.RAW)
    stream = store.ParquetStream(tmp_path, markers_of(smoke_run.run_dir))
    stream.take(rec[:-1])
    with pytest.raises(store.ParquetCheckError, match=f"of the {len(rec) - 1} written \\({len(rec)} recorded\\)"):
        stream.finish(len(rec))
    assert not list(tmp_path.iterdir())


def test_a_run_leaves_the_streamed_parquet_and_no_raw_stream(tmp_path, monkeypatch):
    taken = []
    real = store.ParquetStream.take
    monkeypatch.setattr(store.ParquetStream, "take", lambda self, raw: (taken.append(len(raw)), real(self, raw)))
    monkeypatch.setattr(store, "write_parquet", lambda *a, **k: pytest.fail("converted again after the run"))
    r = run_plan(plan.load(plan.find("smoke-tiny")), tmp_path / "run", quiet=True)
    assert r.status == "done" and sum(taken) == r.outcome.records * store.pf.RECORD_DTYPE.itemsize
    names = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert "records.parquet" in names and "records.bin" not in names and "records.parquet.tmp" not in names
    assert pq.ParquetFile(tmp_path / "run" / "records.parquet").metadata.num_rows == r.outcome.records


def test_a_stream_that_does_not_check_falls_back_to_records_bin(tmp_path, monkeypatch, capsys):
    real, calls = store.ParquetStream.finish, []

    def bad_once(self, expected_rows, *columns):  # the stream's finish fails; write_parquet's (after) does not
        calls.append(expected_rows)
        if len(calls) == 1:
            raise store.ParquetCheckError("records.parquet: read back 1 rows of the 2 written")
        return real(self, expected_rows, *columns)
    monkeypatch.setattr(store.ParquetStream, "finish", bad_once)
    r = run_plan(plan.load(plan.find("smoke-tiny")), tmp_path / "run", quiet=True)
    assert "making it again from records.bin" in capsys.readouterr().err and len(calls) == 2
    assert pq.ParquetFile(tmp_path / "run" / "records.parquet").metadata.num_rows == r.outcome.records
    assert not (tmp_path / "run" / "records.bin").exists()


def test_a_run_that_fails_leaves_no_half_made_parquet(tmp_path, monkeypatch):
    def dies(self, program, records, sinks, quiet=False):
        records.write_bytes(b"")
        sinks.records.take(b"\0" * 100)  # part of a record, then the model dies
        raise RuntimeError("fisrig-model failed (exit 139)")
    monkeypatch.setattr(ModelTarget, "run", dies)
    with pytest.raises(RuntimeError):
        run_plan(plan.load(plan.find("smoke-tiny")), tmp_path / "run", quiet=True)
    assert not (tmp_path / "run" / "records.parquet.tmp").exists()
    assert not (tmp_path / "run" / "records.parquet").exists()


def test_the_report_is_made_from_the_check_s_read_of_the_file(tmp_path, monkeypatch):
    """records.parquet is read once after a run: the stream's check reads the report's
    columns back, and the report is made from that table; it is the report `fisrig report`
    makes from the file alone."""
    from fisrig.run import rebuild
    reads = []
    real, real_check = pq.read_table, store.checked_sums
    monkeypatch.setattr(pq, "read_table", lambda path, *a, **k: (reads.append((str(path), tuple(k["columns"]))),
                                                                  real(path, *a, **k))[1])
    # the check's own read, a row group at a time
    monkeypatch.setattr(store, "checked_sums", lambda path: (reads.append((str(path), store.CHECKED)),
                                                               real_check(path))[1])

    def read_once(reads, name):  # one read of the file: each column once (store.read_compact's)
        columns = [c for path, cs in reads for c in cs]
        return all(path.endswith(name) for path, _ in reads) and len(columns) == len(set(columns)) and columns

    run_plan(plan.load(plan.find("smoke-tiny")), tmp_path / "run", quiet=True)
    assert read_once(reads, "records.parquet.tmp"), reads
    first = json.loads((tmp_path / "run" / "summary.json").read_text())
    done = len(reads)
    rebuild(tmp_path / "run")
    assert read_once(reads[done:], "records.parquet"), reads[done:]  # the report alone reads the file
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == first


def test_every_column_is_its_record_s_field(smoke_run):
    """records.parquet row by row against records.bin's records, read here field by field
    in plain Python (not store.to_table's blocked copies): values, the 6-byte D2H LBA,
    stamps as ns rounded to nearest, latency, names of kinds and results, seq null at 0."""
    import random
    pf = store.pf
    raw = (smoke_run.run_dir / store.RAW).read_bytes()[pf.RECORDS_HEADER.size:]
    size = pf.RECORD_DTYPE.itemsize
    table = pq.read_table(smoke_run.run_dir / "records.parquet")
    assert table.num_rows == len(raw) // size
    names = pf.RECORD_DTYPE.names
    rows = random.Random(7).sample(range(table.num_rows), 2000) + [0, table.num_rows - 1]
    for i in rows:
        fields = dict(zip(names, np.frombuffer(raw[i * size:(i + 1) * size], dtype=pf.RECORD_DTYPE)[0].tolist()))
        row = {c: table.column(c)[i].as_py() for c in table.column_names}
        ns = {t: (fields[t] * pf.TICK_NS_NUM + pf.TICK_NS_DEN // 2) // pf.TICK_NS_DEN for t in store._TS}
        for t in store._TS:
            assert row[t.replace("ts_", "t_") + "_ns"] == ns[t]
        assert row["latency_ns"] == max(ns["ts_status"] - ns["ts_submit"], 0)
        assert row["d2h_lba"] == int.from_bytes(fields["d2h_lba"], "little")
        assert row["kind"] == pf.RECORD_KINDS[fields["kind"]] and row["result"] == pf.RESULTS[fields["result"]]
        assert row["seq"] == (fields["seq"] or None) and row["tag"] == fields["slot"]
        for c in ("command", "protocol", "status", "error", "lba", "lbas", "sectors", "data_dwords",
                  "check_errors", "detail"):
            assert row[c] == fields[c], c


def test_the_checks_read_a_row_group_at_a_time_gives_the_whole_files_sums(smoke_run, tmp_path):
    """store.checked_sums (finish's check) against the sums of the file read whole."""
    rec = store.read_raw(smoke_run.run_dir / store.RAW)
    stream = store.ParquetStream(tmp_path, markers_of(smoke_run.run_dir), chunk=4096)
    stream.take(rec)
    stream.finish(len(rec))
    path = tmp_path / store.PARQUET
    assert pq.ParquetFile(path).metadata.num_row_groups > 10
    whole = pq.read_table(path, columns=list(store.CHECKED))
    assert store.checked_sums(path) == (whole.num_rows, store._sums(whole))
