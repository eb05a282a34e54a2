"""The report's per-phase work done while the run runs (during_run): what it makes is what
the report makes afterwards from records.parquet, it is taken only for a phase that is the
run of rows it was made from, and a run whose report columns outgrow memory drops it."""
import numpy as np
import pyarrow.parquet as pq

from fisrig.report import fio_json, during_run, plots
from fisrig.analysis import phase_stats
from fisrig.report import build as report
from fisrig.records import store, run_state


def _records(run_dir):
    meta = run_state.read_meta(run_dir)
    return meta, {int(k): v for k, v in meta["markers"].items()}, store.read_raw(run_dir / store.RAW)


def _stream(tmp_path, markers, rec, work, pieces=(1, 7, 1000, 97, 12345, 50)):
    """rec through a stream in odd pieces, as the target's records come, and finished."""
    stream = store.ParquetStream(tmp_path, markers, chunk=4096, work=work)
    raw, at = np.ascontiguousarray(rec).view(np.uint8).tobytes(), 0
    for piece in pieces:
        stream.take(raw[at:at + piece])
        at += piece
    stream.take(raw[at:])
    assert stream.finish(len(rec), report.REPORT_COLUMNS) == len(rec)
    return stream


def _report(table, meta, ready=None):
    phases = phase_stats.compute(table, meta, ready)
    curves = [plots.latency_curve(p).tolist() for p in phases if len(p.latency_ns) >= plots.MIN_LATENCY_COMMANDS]
    return phases, fio_json.fio_summary(table, meta, phases), curves


def test_made_while_the_records_come_it_is_the_report_made_afterwards(smoke_run, tmp_path):
    meta, markers, rec = _records(smoke_run.run_dir)
    work = during_run.PhaseWork(meta, min_rows=100)
    stream = _stream(tmp_path, markers, rec, work)
    ready = work.ready()
    long = {r.label for r in phase_stats.split(stream.table) if r.n >= 100 and isinstance(r.sel, slice)}
    assert {label for label, _, _ in ready} == long and len(long) >= 3
    phases, summary, curves = _report(stream.table, meta, ready)
    assert sum(any(p is q for q in ready.values()) for p in phases) == len(ready)  # each one taken
    # Afterwards, from the file: the same figures, fio job and chart, and the same records.
    table = pq.read_table(tmp_path / store.PARQUET, columns=report.REPORT_COLUMNS)
    after, after_summary, after_curves = _report(table, meta)
    assert [p.to_json() for p in phases] == [p.to_json() for p in after]
    assert summary == after_summary and curves == after_curves
    assert pq.read_table(tmp_path / store.PARQUET).equals(pq.read_table(smoke_run.run_dir / store.PARQUET))
    # a long phase's last row group was written as its records ended, not when it filled
    groups = pq.ParquetFile(tmp_path / store.PARQUET).metadata
    ends = np.cumsum([groups.row_group(i).num_rows for i in range(groups.num_row_groups)])
    assert all(b in ends for _, _, b in ready)


def test_a_phase_that_comes_back_is_made_again_from_all_its_rows(smoke_run, tmp_path):
    meta, markers, rec = _records(smoke_run.run_dir)
    torture = [m for m, name in markers.items() if name == "torture"][0]
    rows = np.flatnonzero(rec["marker"] == torture)
    cut = rows[len(rows) // 2]
    other = np.flatnonzero(rec["marker"] != torture)[:5]
    # the torture phase's first half, five records of another phase, then its second half
    mixed = np.concatenate([rec[rows[0]:cut], rec[other], rec[cut:rows[-1] + 1]])
    work = during_run.PhaseWork(meta, min_rows=100)
    stream = _stream(tmp_path, markers, mixed, work)
    ready = work.ready()
    assert ("torture", 0, cut - rows[0]) in ready  # made from its first run of rows ...
    phases, summary, _ = _report(stream.table, meta, ready)
    (p,) = [p for p in phases if p.label == "torture"]
    assert p.commands == len(rows) and not any(p is q for q in ready.values())  # ... and not taken
    after, after_summary, _ = _report(stream.table, meta)
    assert [q.to_json() for q in phases] == [q.to_json() for q in after] and summary == after_summary


def test_past_its_rows_it_drops_what_it_kept_and_the_report_reads_the_file(smoke_run, tmp_path):
    meta, markers, rec = _records(smoke_run.run_dir)
    work = during_run.PhaseWork(meta, max_rows=5000, min_rows=100)
    stream = _stream(tmp_path, markers, rec, work)
    assert work.dropped and not work.chunks and work.ready() == {}
    table = pq.read_table(tmp_path / store.PARQUET, columns=report.REPORT_COLUMNS)
    assert stream.table.equals(table)  # read back from the file, as without the work
