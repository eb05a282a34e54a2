"""A run's results in open formats: records.parquet (one row per command), run.json (what
ran, on what), and summary.json (fio's own json+ layout, one job per marked phase, with
latency bins, so fio's tools such as fio_jsonplus_clat2csv read it).

The target streams raw records to records.bin as they come; records.parquet is made from
it, read back and checked, and then records.bin goes (unless kept: `--keep-raw`). A run
killed half-way leaves records.bin with every record taken so far, and `fisrig report`
makes the Parquet file from it.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import program_format as pf

SCHEMA_VERSION = 2  # 2: lbas and data_dwords columns, results data_crc and length
RAW = "records.bin"
PARQUET = "records.parquet"
RUN_JSON = "run.json"
SUMMARY = "summary.json"

_TS = ["ts_submit", "ts_h2d", "ts_accept", "ts_setup", "ts_data_first", "ts_data_last", "ts_status"]
READS = {0x25, 0x60, 0x47, 0x2F}
WRITES = {0x35, 0x3D, 0x61}
TRIMS = {0x06, 0x64}


def read_raw(path: Path) -> np.ndarray:
    """The records in a records.bin (memory-mapped), a torn last record (a killed run) left
    out; run_state.raw_count says how many and refuses a file that is not one (InputError)."""
    from .run_state import raw_count
    n, _torn = raw_count(path)
    if not n:
        return np.zeros(0, dtype=pf.RECORD_DTYPE)
    return np.memmap(path, dtype=pf.RECORD_DTYPE, mode="r", offset=pf.RECORDS_HEADER.size, shape=(n,))


def _dictionary(codes: np.ndarray, names: list[str]) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(names, pa.string()))


def to_table(rec: np.ndarray, markers: dict[int, str]) -> pa.Table:
    """One row per record; times in ns on the rig's clock (0 where a phase did not happen)."""
    def ns(col: np.ndarray) -> np.ndarray:
        return np.round(col.astype(np.float64) * pf.NS_PER_TICK).astype(np.int64)
    raw = np.frombuffer(np.ascontiguousarray(rec["d2h_lba"]).tobytes(), dtype=np.uint8).reshape(-1, 6)
    d2h = (raw.astype(np.uint64) << (np.arange(6, dtype=np.uint64) * 8)).sum(axis=1, dtype=np.uint64)
    top = max(list(markers) + [0])
    marker_names = [markers.get(m, str(m)) for m in range(top + 1)]
    marker_codes = np.minimum(rec["marker"], top)  # an unnamed marker shows as the last name
    cols = {
        "marker": _dictionary(marker_codes, marker_names),
        "kind": _dictionary(np.minimum(rec["kind"], len(pf.RECORD_KINDS) - 1), pf.RECORD_KINDS),
        "command": rec["command"], "protocol": rec["protocol"], "tag": rec["slot"],
        "result": _dictionary(np.minimum(rec["result"], len(pf.RESULTS) - 1), pf.RESULTS),
        "status": rec["status"], "error": rec["error"], "lba": rec["lba"], "lbas": rec["lbas"],
        "sectors": rec["sectors"], "data_dwords": rec["data_dwords"],
        "d2h_lba": d2h, "check_errors": rec["check_errors"],
    }
    for t in _TS:
        cols[t.replace("ts_", "t_") + "_ns"] = ns(rec[t])
    # Latency is submit to status; a record without a status time (the "end" record of
    # records written before the VM stamped one) has none rather than a negative one.
    status, submit = ns(rec["ts_status"]), ns(rec["ts_submit"])
    cols["latency_ns"] = np.where(status >= submit, status - submit, 0)
    return pa.table(cols)


def codes(table: pa.Table, column: str) -> tuple[np.ndarray, list[str]]:
    """A dictionary column as (codes, names) without making a string per row."""
    col = table.column(column).combine_chunks()
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if not pa.types.is_dictionary(col.type):
        col = col.dictionary_encode()
    return col.indices.to_numpy(zero_copy_only=False), col.dictionary.to_pylist()


def code_of(names: list[str], name: str) -> int:
    return names.index(name) if name in names else -1


# Columns stored delta-coded (Parquet's DELTA_BINARY_PACKED) rather than as values: the
# stamps rise with the records (completion order), so a delta takes a byte or two where zstd
# leaves five of an 8-byte value, and a random LBA's delta bit-packs tighter than zstd packs
# the value. smoke-tiny's records: 44.9 bytes each with zstd alone, 9.7 so. The other
# columns repeat a few values and stay dictionary-coded.
DELTA_COLUMNS = tuple(t.replace("ts_", "t_") + "_ns" for t in _TS) + ("latency_ns", "lba")
# What the read-back check sums (as uint64, wrapping alike on both sides).
CHECKED = ("lba", "t_status_ns", "latency_ns")


class ParquetCheckError(Exception):
    """records.parquet did not read back as written: records.bin is kept."""


def parquet_writer(path: Path, schema: pa.Schema) -> pq.ParquetWriter:
    delta = [c for c in schema.names if c in DELTA_COLUMNS]
    return pq.ParquetWriter(path, schema, compression="zstd",
                            use_dictionary=[c for c in schema.names if c not in delta],
                            column_encoding={c: "DELTA_BINARY_PACKED" for c in delta})


def _sums(table: pa.Table) -> list[int]:
    return [int(table.column(c).to_numpy().astype(np.uint64).sum(dtype=np.uint64)) for c in CHECKED]


def write_parquet(run_dir: Path, markers: dict[int, str], chunk: int = 1 << 20) -> int:
    """records.bin -> records.parquet, a chunk at a time (a 37-million-command run is 3.5 GB
    of raw records), then read back: its row count and the sums of CHECKED must be what was
    written, or ParquetCheckError (and no records.parquet from this call). Returns the rows."""
    rec = read_raw(run_dir / RAW)
    tmp = run_dir / (PARQUET + ".tmp")
    schema = to_table(rec[:0], markers).schema
    written = np.zeros(len(CHECKED), dtype=np.uint64)
    with parquet_writer(tmp, schema) as w:
        for i in range(0, len(rec), chunk):
            table = to_table(np.asarray(rec[i:i + chunk]), markers).cast(schema)
            written += np.array(_sums(table), dtype=np.uint64)
            w.write_table(table)
    back = pq.read_table(tmp, columns=list(CHECKED))
    if back.num_rows != len(rec) or _sums(back) != [int(v) for v in written]:
        tmp.unlink()
        raise ParquetCheckError(f"{run_dir / PARQUET}: read back {back.num_rows} rows of the {len(rec)} "
                                f"written, or other values; {RAW} is kept")
    tmp.replace(run_dir / PARQUET)
    return len(rec)


def _bins(lat_ns: np.ndarray) -> dict[str, int]:
    """fio json+ 'bins': counts per latency bucket, bucketed as fio does (the top 6 bits of
    each value kept, so every bucket is within 1/32 of its values)."""
    v = np.maximum(lat_ns.astype(np.int64), 0)
    top = np.floor(np.log2(np.maximum(v, 1))).astype(np.int64)
    shift = np.maximum(top - 5, 0)
    bucket = (v >> shift) << shift
    keys, counts = np.unique(bucket, return_counts=True)
    return {str(int(k)): int(c) for k, c in zip(keys, counts)}


# fio's percentile list (its default, plus the tail a drive review needs).
PERCENTILES = (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99)


def percentiles(lat_ns: np.ndarray, pcts=PERCENTILES) -> dict[str, int]:
    """Latency percentiles keyed as fio keys them ("99.900000"). Each is a latency some
    command had (the inverted CDF, never a value between two commands'): the headline and
    summary.json both take theirs from here."""
    if not len(lat_ns):
        return {}
    values = np.percentile(lat_ns, list(pcts), method="inverted_cdf")
    return {f"{p:.6f}": int(v) for p, v in zip(pcts, values)}


def _clat(lat_ns: np.ndarray) -> dict:
    if not len(lat_ns):
        return {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0, "percentile": {}}  # no bins, as fio
    return {"min": int(lat_ns.min()), "max": int(lat_ns.max()), "mean": float(lat_ns.mean()),
            "stddev": float(lat_ns.std()), "N": int(len(lat_ns)),
            "percentile": percentiles(lat_ns), "bins": _bins(lat_ns)}


def _direction(cols: dict, mask: np.ndarray) -> dict:
    n = int(mask.sum())
    if not n:
        return {"io_bytes": 0, "io_kbytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0, "runtime": 0,
                "total_ios": 0, "clat_ns": _clat(np.zeros(0)), "lat_ns": _clat(np.zeros(0))}
    start = cols["t_submit_ns"][mask].min()
    end = cols["t_status_ns"][mask].max()
    secs = max(end - start, 1) / 1e9
    io_bytes = int(cols["lbas"][mask].astype(np.int64).sum()) * 512  # a TRIM's: the LBAs it trimmed
    lat = cols["latency_ns"][mask]
    return {"io_bytes": io_bytes, "io_kbytes": io_bytes // 1024, "bw_bytes": int(io_bytes / secs),
            "bw": int(io_bytes / secs / 1024), "iops": n / secs, "runtime": int(secs * 1000),
            "total_ios": n, "clat_ns": _clat(lat), "lat_ns": _clat(lat)}


def fio_summary(table: pa.Table, meta: dict, phases: list | None = None) -> dict:
    """fio's JSON output layout (jobs with read/write/trim, bw in KiB/s, clat_ns percentiles).
    For trim, as fio does, io_bytes and bw count the bytes of the LBAs trimmed (no data
    moves). `phases` (phase_stats.compute's) adds to each job a "fisrig" block: the phase's
    kind, queue depth held, issue rate and latency percentiles, the figures the headline
    prints."""
    by_label = {p.label: p for p in phases or []}
    cols = {c: table.column(c).to_numpy() for c in
            ("lbas", "latency_ns", "t_submit_ns", "t_status_ns", "command")}
    marker, marker_names = codes(table, "marker")
    kind, kind_names = codes(table, "kind")
    result, result_names = codes(table, "result")
    is_cmd = kind == code_of(kind_names, "command")
    is_ok = result == code_of(result_names, "ok")
    cmd = cols["command"]
    jobs = []
    for m in dict.fromkeys(marker[is_cmd].tolist()):
        phase = is_cmd & (marker == m)
        ok = phase & is_ok
        jobs.append({
            "jobname": marker_names[m], "groupid": 0, "error": int((phase & ~is_ok).sum()),
            "read": _direction(cols, ok & np.isin(cmd, list(READS))),
            "write": _direction(cols, ok & np.isin(cmd, list(WRITES))),
            "trim": _direction(cols, ok & np.isin(cmd, list(TRIMS))),
        })
        if marker_names[m] in by_label:
            jobs[-1]["fisrig"] = by_label[marker_names[m]].to_json()
    return {"fio version": f"fisrig-{meta.get('fisrig_version', '?')}", "timestamp": meta.get("started", 0),
            "global options": {"ioengine": f"fisrig-{meta.get('target', '?')}"}, "jobs": jobs,
            "fisrig": {"schema_version": SCHEMA_VERSION, "plan": meta.get("plan", {}).get("name")}}


def write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")


def read_meta(run_dir: Path) -> dict:
    path = run_dir / RUN_JSON
    return json.loads(path.read_text()) if path.exists() else {}
