"""A run's results in open formats: records.parquet (one row per command), current.parquet
(the drive's current, when the plan sampled it: records/current.py), run.json (what ran, on what),
and summary.json (fio's own json+ layout, one job per marked phase, with
latency bins, so fio's tools such as fio_jsonplus_clat2csv read it: report/fio_json.py).

The target streams raw records to records.bin as they come; records.parquet is made from
the same records while the run runs (ParquetStream), read back and checked at its end, and
then records.bin goes (unless kept: `--keep-raw`). A run killed half-way leaves records.bin
with every record taken so far, and `fisrig report` makes the Parquet file from it.
"""
from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fisrig.records import malloc_reuse
from fisrig import program_format as pf
from fisrig.records.schema import dictionary, marker_dictionary, ticks_to_ns
from fisrig.records.current import CurrentStream
from fisrig.errors import InputError

SCHEMA_VERSION = 4  # 2: lbas and data_dwords columns, results data_crc and length; 3: queue, nvme_status; 4: nvme_dw0
RAW = "records.bin"
PARQUET = "records.parquet"
RUN_JSON = "run.json"
SUMMARY = "summary.json"

_TS = ["ts_submit", "ts_h2d", "ts_accept", "ts_setup", "ts_data_first", "ts_data_last", "ts_status"]


def read_raw(path: Path) -> np.ndarray:
    """The records in a records.bin (memory-mapped), a torn last record (a killed run) left
    out; raw_count says how many and refuses a file that is not one (InputError)."""
    n, _torn = raw_count(path)
    if not n:
        return np.zeros(0, dtype=pf.RECORD_DTYPE)
    return np.memmap(path, dtype=pf.RECORD_DTYPE, mode="r", offset=pf.RECORDS_HEADER.size, shape=(n,))


def raw_count(path: Path) -> tuple[int, int]:
    """(whole records, bytes of a torn last one) in a records.bin; InputError when it is not one."""
    size = path.stat().st_size
    if size < pf.RECORDS_HEADER.size:  # stopped before its header was out: nothing recorded
        return 0, size
    with path.open("rb") as f:
        magic, _version, rec_size, _ = pf.RECORDS_HEADER.unpack(f.read(pf.RECORDS_HEADER.size))
    if magic != pf.RECORDS_MAGIC:
        raise InputError(str(path), f"not a fisrig records file (magic {magic:#010x}, want {pf.RECORDS_MAGIC:#010x})")
    if rec_size != pf.RECORD_DTYPE.itemsize:
        raise InputError(str(path), f"records of {rec_size} bytes; this fisrig reads {pf.RECORD_DTYPE.itemsize}-byte records")
    body = size - pf.RECORDS_HEADER.size
    return body // rec_size, body % rec_size


# Records a block when their fields are copied out (fields): 64 K records, 6.8 MB, stay in
# the CPU's cache while each of the 23 fields is taken from them, where a whole 1 M-record
# row group (104 MB) is read from memory once a field (docs/performance.md).
FIELDS_BLOCK = 1 << 16


def fields(rec: np.ndarray) -> dict[str, np.ndarray]:
    """Every field of `rec` as a contiguous array of its own, a block of records at a time."""
    out = {name: np.empty(len(rec), dtype=rec.dtype.fields[name][0]) for name in rec.dtype.names}
    for a in range(0, len(rec), FIELDS_BLOCK):
        block = rec[a:a + FIELDS_BLOCK]
        for name, column in out.items():
            column[a:a + len(block)] = block[name]
    return out


_STAMP = pf.RECORD_KINDS.index("stamp")


def _nvme_fields(f: dict[str, np.ndarray], d2h: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(queue, nvme_status, nvme_dw0) of each record; an NVMe record's own fields (engine_if.h's struct
    fisrig_nvme_cpl_record: the CQE's status where status and error are, dword 0 and the
    queue where the D2H's LBA is, the MSI-X message's stamp where ts_setup is) are read out,
    and its ATA fields zeroed: status, error and d2h_lba are SATA's. In place."""
    queue = np.zeros(len(d2h), dtype=np.uint16)
    nvme_status = np.zeros(len(d2h), dtype=np.uint16)
    dw0 = np.zeros(len(d2h), dtype=np.uint32)
    nvme = f["protocol"] == pf.PROTO["nvme"]
    if nvme.any():
        nvme_status[nvme] = f["status"][nvme].astype(np.uint16) | f["error"][nvme].astype(np.uint16) << 8
        f["status"][nvme] = f["error"][nvme] = 0
        # A verify pass's finding keeps, as over SATA, the LBA its stamp names where the D2H's is.
        cmd = nvme & (f["kind"] != _STAMP)
        queue[cmd] = (d2h[cmd] >> 32) & 0xFFFF
        dw0[cmd] = d2h[cmd] & 0xFFFFFFFF
        d2h[cmd] = 0
    return queue, nvme_status, dw0


# The one column with nulls; the others are declared without, so the writer codes no
# definition levels for them (a quarter of its time: docs/performance.md, "A sweep point's
# host share").
NULLABLE = ("seq",)


def to_table(rec: np.ndarray, markers: dict[int, str]) -> pa.Table:
    """One row per record; times in ns on the rig's clock (0 where a phase did not happen).
    A record of either protocol has one row of the same columns (docs/nvme.md, "Records")."""
    f = fields(rec)
    # d2h_lba is the D2H's 48-bit LBA as 6 little-endian bytes: widened to 8 in place
    # (shifting and summing the bytes as uint64 took a fifth of the conversion's time).
    d2h_bytes = np.zeros((len(rec), 8), dtype=np.uint8)
    d2h_bytes[:, :6] = f["d2h_lba"].view(np.uint8).reshape(-1, 6)
    d2h = d2h_bytes.view("<u8").reshape(-1)
    queue, nvme_status, nvme_dw0 = _nvme_fields(f, d2h)
    cols = {
        "marker": marker_dictionary(markers)(f["marker"]),
        "kind": dictionary(np.minimum(f["kind"], len(pf.RECORD_KINDS) - 1), pf.RECORD_KINDS),
        "command": f["command"], "protocol": f["protocol"], "tag": f["slot"],
        "result": dictionary(np.minimum(f["result"], len(pf.RESULTS) - 1), pf.RESULTS),
        "status": f["status"], "error": f["error"], "lba": f["lba"], "lbas": f["lbas"],
        "sectors": f["sectors"], "data_dwords": f["data_dwords"],
        "d2h_lba": d2h, "check_errors": f["check_errors"],
        # A write's stamp sequence and FUA (detail 1); a verify pass's finding and the
        # sequence it read back (program.h's struct fisrig_run_record).
        # Null where a record has none, so that the sequences delta-code among themselves:
        # with zeros between them smoke-tiny's records took 12.2 bytes each, so 9.6 (and
        # the main job's 3.58, as before the column).
        "seq": pa.array(f["seq"], mask=f["seq"] == 0), "detail": f["detail"],
        # NVMe's: the I/O queue (0 the admin queue), the CQE's status field, phase bit
        # clear (its type (status >> 9) & 7, its code (status >> 1) & 0xFF), and its dword 0
        # (command specific: Set Features' value, Abort's result); 0 for SATA.
        "queue": queue, "nvme_status": nvme_status, "nvme_dw0": nvme_dw0,
    }
    for t in _TS:  # the fields' own copies become the ns columns, in place
        cols[t.replace("ts_", "t_") + "_ns"] = ticks_to_ns(f[t].view(np.int64), in_place=True)
    # Latency is submit to status; a record without a status time (the "end" record of
    # records written before the VM stamped one) has none rather than a negative one.
    status, submit = cols["t_status_ns"], cols["t_submit_ns"]
    cols["latency_ns"] = np.where(status >= submit, status - submit, 0)
    table = pa.table(cols)
    return pa.Table.from_arrays(table.columns, schema=pa.schema(
        [f.with_nullable(f.name in NULLABLE) for f in table.schema]))


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
# the value. smoke-tiny's records: 44.9 bytes each with zstd alone, 9.7 so. The columns
# whose type is a dictionary (names) are written as one; the others repeat a few values and
# zstd packs them as tight plain as dictionary-coded, in less of the writer's time
# (docs/performance.md, "A sweep point's host share").
DELTA_COLUMNS = tuple(t.replace("ts_", "t_") + "_ns" for t in _TS) + ("latency_ns", "lba", "seq")
# What the read-back check sums (as uint64, wrapping alike on both sides).
CHECKED = ("lba", "t_status_ns", "latency_ns")


class ParquetCheckError(Exception):
    """records.parquet did not read back as written: records.bin is kept."""


def parquet_writer(path: Path, schema: pa.Schema) -> pq.ParquetWriter:
    delta = [c for c in schema.names if c in DELTA_COLUMNS]
    return pq.ParquetWriter(path, schema, compression="zstd",
                            use_dictionary=[f.name for f in schema if pa.types.is_dictionary(f.type)],
                            column_encoding={c: "DELTA_BINARY_PACKED" for c in delta})


def _sums(table: pa.Table) -> list[int]:
    """Each CHECKED column's sum modulo 2**64. Arrow's sum, which wraps, on the columns as
    they are: numpy's needed each as one array and a uint64 copy (1.6 s of the main job's
    36 M records after its run, against 0.1)."""
    return [int(pc.sum(table.column(c), min_count=0).as_py()) % (1 << 64) for c in CHECKED]


def checked_sums(path) -> tuple[int, list[int]]:
    """A Parquet file's rows and _sums, read a row group at a time, not the file whole: the
    check comes at the run's end, the report's peak (docs/performance.md)."""
    f = pq.ParquetFile(path)
    rows, sums = 0, [0] * len(CHECKED)
    for i in range(f.num_row_groups):
        group = f.read_row_group(i, columns=list(CHECKED))
        rows += group.num_rows
        sums = [(a + b) % (1 << 64) for a, b in zip(sums, _sums(group))]
    return rows, sums


# One row group's buffer (a 1 M-record group's is 104 MB) kept by the process between
# streams: a sweep worker runs point after point, and a buffer of its own each run was 104 MB
# of fresh pages a point, 0.18 s of the kernel's zeroing on these VMs (docs/performance.md,
# "A sweep point's host share"). A second stream while one has it gets one of its own.
_spare_buffers: list[np.ndarray] = []
_spare_lock = threading.Lock()


def _row_group_buffer(chunk: int) -> np.ndarray:
    with _spare_lock:
        for i, buf in enumerate(_spare_buffers):
            if len(buf) == chunk:
                return _spare_buffers.pop(i)
    return np.empty(chunk, dtype=pf.RECORD_DTYPE)  # pages come as it fills


def _keep_buffer(buf: np.ndarray | None) -> None:
    if buf is not None:
        with _spare_lock:
            if not _spare_buffers:  # one is kept: the one a next stream would take
                _spare_buffers.append(buf)


class ParquetStream:
    """records.parquet written while the target runs: the target's records (raw bytes, whole
    records, as records.bin gains them) go in with take(), a row group each `chunk` records,
    and finish() writes the rest, reads the file back and checks it (its row count and the
    sums of CHECKED must be what was written, and the rows what the run recorded), then puts
    it in place. On a 2-core machine the conversion runs beside the model on the other core:
    the main job's 36 M records took 28 s to convert after the run, and are now converted
    while it runs (tests/host/test_parquet_stream.py holds the file to write_parquet's).
    Until finish() the file is records.parquet.tmp; abandon() removes it."""

    def __init__(self, run_dir: Path, markers: dict[int, str], chunk: int = 1 << 20, work=None,
                 metadata: dict[bytes, bytes] | None = None):
        """work: a during_run.PhaseWork, handed each row group written; a long phase's last
        row group is then written as soon as its records end, not when the group is full,
        and finish() takes the report's columns from it rather than from the file.
        metadata: the file's key-value metadata (the run's id: run_dir.parquet_metadata)."""
        self.run_dir, self.markers, self.chunk, self.work = Path(run_dir), markers, chunk, work
        self.tmp = self.run_dir / (PARQUET + ".tmp")
        self.schema = to_table(np.zeros(0, dtype=pf.RECORD_DTYPE), markers).schema
        if metadata:
            self.schema = self.schema.with_metadata(metadata)
        self._writer = parquet_writer(self.tmp, self.schema)
        # A row group's records gather in one buffer, kept for the run and the process
        # (_row_group_buffer), not a fresh 100 MB array a row group whose pages fault in anew
        # (docs/performance.md, "The records store's memory").
        malloc_reuse.keep_freed()
        self._buf = _row_group_buffer(self.chunk)
        self._pending_rows = 0
        self._torn = b""  # the start of a record whose rest comes with the next bytes
        self.rows = 0
        self._written = np.zeros(len(CHECKED), dtype=np.uint64)
        self.table: pa.Table | None = None  # what finish() read back
        self.current = CurrentStream(run_dir, markers)

    def take(self, raw) -> None:
        """Records to add: an array of them, or bytes as the target wrote them (a record
        torn across two pieces is put together from the two; the rest is read in place,
        not copied into a new bytes object first)."""
        if isinstance(raw, (bytes, bytearray, memoryview)):
            raw, size = memoryview(raw).cast("B"), pf.RECORD_DTYPE.itemsize
            if self._torn:
                need = size - len(self._torn)
                if len(raw) < need:
                    self._torn += bytes(raw)
                    return
                self._take(np.frombuffer(self._torn + bytes(raw[:need]), dtype=pf.RECORD_DTYPE))
                raw = raw[need:]
            whole = len(raw) - len(raw) % size
            self._torn = bytes(raw[whole:])
            self._take(np.frombuffer(raw[:whole], dtype=pf.RECORD_DTYPE))
        else:
            self._take(raw)

    def _take(self, rec: np.ndarray) -> None:
        if rec.dtype != pf.RECORD_DTYPE:  # copied as bytes below
            raise TypeError(f"records of dtype {rec.dtype}, not program_format.RECORD_DTYPE")
        if not len(rec):
            return
        sampled = rec["kind"] == pf.RECORD_CURRENT
        if sampled.any():  # the current sampler's go to current.parquet
            self.current.take(rec[sampled])
            rec = rec[~sampled]
            if not len(rec):
                return
        at = 0
        for end in self.work.long_phase_ends(rec["marker"]) if self.work is not None else ():
            self._fill(rec[at:end])
            if self._pending_rows:
                self._write(self._buf[:self._pending_rows])
                self._pending_rows = 0
            self.work.phase_ends()
            at = end
        self._fill(rec[at:])

    def _fill(self, rec: np.ndarray) -> None:
        """Adds `rec` to the row group being gathered, writing each that fills."""
        while len(rec):
            n = min(len(rec), self.chunk - self._pending_rows)
            # As bytes: numpy copies a structured array field by field, 8 times slower
            # (0.155 against 0.020 s a million records).
            size = pf.RECORD_DTYPE.itemsize
            self._buf.view(np.uint8)[self._pending_rows * size:(self._pending_rows + n) * size] = \
                np.ascontiguousarray(rec[:n]).view(np.uint8)
            self._pending_rows += n
            rec = rec[n:]
            if self._pending_rows == self.chunk:
                self._write(self._buf)
                self._pending_rows = 0

    def _write(self, rec: np.ndarray) -> None:
        """Writes a row group; the table holds copies, so the buffer may be refilled."""
        table = to_table(np.asarray(rec), self.markers).cast(self.schema)
        self._written += np.array(_sums(table), dtype=np.uint64)
        self._writer.write_table(table)
        self.rows += len(rec)
        if self.work is not None:
            self.work.add(table)

    def finish(self, expected_rows: int, columns: tuple[str, ...] | list[str] = CHECKED) -> int:
        """Writes what is pending, closes and checks the file, and makes it records.parquet;
        ParquetCheckError (and no file) when it does not read back as written or does not
        hold `expected_rows` (the records the run recorded). Returns the rows. The check
        reads back `columns` (CHECKED and any others), kept as self.table for a reader that
        needs them next (the report: one read of the file, not two); with a `work` that
        holds them, self.table is its table and the file is read back for the check alone,
        a row group at a time (checked_sums), as it is when `columns` are CHECKED (and
        self.table is then None)."""
        if self._pending_rows:
            self._write(self._buf[:self._pending_rows])
            self._pending_rows = 0
        self._writer.close()
        _keep_buffer(self._buf)
        self._buf = None
        kept = self.work.table() if self.work is not None and set(columns) <= set(self.work.columns) else None
        wanted = list(dict.fromkeys([*columns, *CHECKED]))
        if kept is not None or len(wanted) == len(CHECKED):  # read back for the check alone
            back, (rows, sums) = None, checked_sums(self.tmp)
        else:  # the report's columns, when it reads them from here, each in one buffer (read_compact)
            back = read_compact(self.tmp, wanted)
            rows, sums = back.num_rows, _sums(back)
        if rows != self.rows or self.rows + self.current.records != expected_rows or \
                sums != [int(v) for v in self._written]:
            self.tmp.unlink()
            self.current.abandon()
            raise ParquetCheckError(f"{self.run_dir / PARQUET}: read back {rows} rows of the "
                                    f"{self.rows} written ({expected_rows} recorded), or other values; "
                                    f"{RAW} is kept")
        self.tmp.replace(self.run_dir / PARQUET)
        self.current.finish()
        self.table = kept if back is None else back
        return self.rows

    def abandon(self) -> None:
        if self.work is not None:
            self.work.close()
        self._writer.close()
        _keep_buffer(self._buf)
        self._buf = None
        self.tmp.unlink(missing_ok=True)
        self.current.abandon()


def unreadable(path, e: BaseException) -> InputError:
    """The refusal of a Parquet file pyarrow could not read (`e`): one line naming the file,
    `PATH: not a readable Parquet file (pyarrow's first line)`."""
    first = next((line.strip() for line in str(e).splitlines() if line.strip()), type(e).__name__)
    return InputError(str(path), f"not a readable Parquet file ({first})")


@contextlib.contextmanager
def reading_parquet(path):
    """Around a read of the Parquet file `path` (records.parquet, for a report or a
    compare): whatever pyarrow raises for a damaged or foreign file (a footer that is not
    one, a column page that does not decode: "delta bit width larger than integer bit
    width", "Couldn't deserialize thrift", ...) becomes unreadable(path), an InputError,
    where it gave its own words without the file. Running out of memory stays what it is."""
    try:
        yield
    except MemoryError:  # pyarrow's ArrowMemoryError too: the machine's, not the file's
        raise
    except Exception as e:  # noqa: BLE001 - pyarrow raises OSError, ArrowInvalid, ... for a damaged file
        raise unreadable(path, e) from None


def read_compact(path, columns: list[str]) -> pa.Table:
    """`columns` of a Parquet file, each in one buffer: read a column at a time, its chunks
    put together and their memory given back before the next (the peak is the table and
    one column). Why: a phase's column of a table in chunks is a copy (numpy wants one
    buffer), of a table in one buffer a view: the main job's report from records.parquet
    (36.1 M records) peaked at 4.97 GB read whole, 3.12 GB so; steady-state-states on
    sandforce-240gb's (191 M) was killed at 24.4 GB read whole, peaked at 16.0 GB so."""
    malloc_reuse.keep_freed()
    with reading_parquet(path):  # InputError naming the file when it is damaged
        schema = pq.read_schema(path)
    names = schema.names
    if missing := [c for c in columns if c not in names]:
        some = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise InputError(str(path), f"has no {some} column{'s' * (len(missing) > 1)}: not fisrig's records, or "
                                    f"a run's from an older fisrig (`fisrig report` on its {RAW} makes it anew)")
    out = {}
    for name in columns:
        with reading_parquet(path):
            col = pq.read_table(path, columns=[name]).column(0)
        out[name] = col.combine_chunks() if col.num_chunks > 1 else col
        del col
        malloc_reuse.give_back()
    # The file's fields (their nullability with them), as pq.read_table gives them.
    return pa.Table.from_arrays(list(out.values()), schema=pa.schema([schema.field(c) for c in columns]))


def write_parquet(run_dir: Path, markers: dict[int, str], chunk: int = 1 << 20,
                  metadata: dict[bytes, bytes] | None = None) -> int:
    """records.bin -> records.parquet, a chunk at a time (a 37-million-command run is 3.5 GB
    of raw records), then read back and checked (ParquetStream.finish; ParquetCheckError and
    no records.parquet from this call when it does not). Returns the rows."""
    rec = read_raw(run_dir / RAW)
    stream = ParquetStream(run_dir, markers, chunk, metadata=metadata)
    try:
        for i in range(0, len(rec), chunk):
            stream.take(rec[i:i + chunk])
        return stream.finish(len(rec))
    except BaseException:
        stream.abandon()
        raise


def write_json(path: Path, data: dict) -> None:
    """`data` as `path`, put in place whole (written under a name of the process's own, then
    renamed over it): a process killed while writing leaves the old file or the new one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def read_meta(run_dir: Path) -> dict:
    path = run_dir / RUN_JSON
    return json.loads(path.read_text()) if path.exists() else {}
