"""What a run directory says happened: done, failed and why, killed, or records missing.

`fisrig report` reads a run that may have been killed, copied half-way or damaged; this is
where that is found out and said in one line, never as "done". The count to hold records
to is the target's own (run.json's outcome.records); records.bin is cut to whole records.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from fisrig.records import store
from fisrig.errors import InputError
from fisrig.records.run_dir import PARQUET_KEY


@dataclass
class RunState:
    status: str               # run.json's: done, failed, expect_failed, ..., or "killed"
    why: str                  # what run.json says went wrong, if anything
    raw_records: int | None   # whole records in records.bin (None: there is none)
    torn_bytes: int           # a partial record at its end
    parquet_rows: int | None
    expected: int | None      # records the target said it wrote (None: it never said)
    current_records: int = 0  # of them, the current sampler's (in current.parquet, not records.parquet)

    @property
    def have(self) -> int:
        parquet = self.parquet_rows + self.current_records if self.parquet_rows is not None else 0
        return max(self.raw_records or 0, parquet)

    @property
    def missing(self) -> int:
        return max((self.expected or 0) - self.have, 0)

    def line(self) -> str:
        """`done`, or what went wrong, with the records that are missing."""
        text = self.status + (f" ({self.why})" if self.why and self.why != self.status else "")
        if self.missing:
            text = (f"truncated: {self.missing} of the {self.expected} records the run took are missing "
                    f"(the run directory holds {self.have}); the run itself ended {text}")
        elif self.torn_bytes:
            text += f"; records.bin ends in a torn record ({self.torn_bytes} bytes, left out)"
        return text


def read_meta(run_dir: Path) -> dict:
    """run.json, or {} when there is none; InputError naming its line when it is not JSON."""
    path = run_dir / store.RUN_JSON
    if not path.exists():
        return {}
    try:
        meta = json.loads(path.read_bytes())
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}", f"not valid JSON ({e.msg})") from None
    except (UnicodeDecodeError, OSError) as e:
        raise InputError(str(path), f"cannot read it: {e}") from None
    if not isinstance(meta, dict):
        raise InputError(str(path), "not a fisrig run.json (not a JSON object)")
    return meta


def parquet_footer(path: Path) -> tuple[int | None, str | None]:
    """records.parquet's rows and the run id it names, from its footer, read once (None,
    None when there is none)."""
    if not path.exists():
        return None, None
    import pyarrow.parquet as pq
    with store.reading_parquet(path):  # a damaged file: InputError naming it
        md = pq.ParquetFile(path).metadata
    rid = (md.metadata or {}).get(PARQUET_KEY)
    return md.num_rows, rid.decode() if rid else None


def inspect(run_dir: Path) -> RunState:
    """The state of a run directory; InputError when it is not one, a file in it is damaged,
    or its files are of more than one run (check_one_run)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError(str(run_dir), "not a directory" if run_dir.exists() else "no such run directory")
    meta = read_meta(run_dir)
    raw = run_dir / store.RAW
    n, torn = store.raw_count(raw) if raw.exists() else (None, 0)
    rows, parquet_id = parquet_footer(run_dir / store.PARQUET)
    if not meta and n is None and rows is None:
        raise InputError(str(run_dir), "not a run directory (no run.json, records.bin or records.parquet)")
    # Its files all one run's: run.json and the footer as read above, summary.json to read.
    read = {store.RUN_JSON: meta.get("run_id")} if meta else {}
    if rows is not None:
        read[store.PARQUET] = parquet_id
    check_one_run(run_dir, read)
    status = meta.get("status", "unknown")
    outcome = meta.get("outcome") if isinstance(meta.get("outcome"), dict) else {}
    why = str(meta.get("error") or outcome.get("error") or "")
    if status == "running":  # run.json is rewritten when the target returns: it never did
        status, why = "killed", "run.json still says running: the run was stopped before it ended"
    expected = outcome.get("records") if isinstance(outcome.get("records"), int) else None
    sampled = outcome.get("current_records") if isinstance(outcome.get("current_records"), int) else 0
    return RunState(status, why, n, torn, rows, expected, sampled)


def ids(run_dir: Path, read: dict[str, str | None] | None = None) -> dict[str, str | None]:
    """The run id each of the run's files names (None: the file names none), for the files
    that are there: run.json, summary.json, records.parquet. `read`: the ids of files the
    caller has read already (inspect), not read again."""
    run_dir = Path(run_dir)
    out: dict[str, str | None] = dict(read or {})
    for name in (store.RUN_JSON, store.SUMMARY):
        path = run_dir / name
        if name in out or not path.exists():
            continue
        try:
            data = json.loads(path.read_bytes())
        except (ValueError, OSError):
            continue  # a damaged file is refused where it is read, with its own line
        block = data.get("fisrig") if name == store.SUMMARY and isinstance(data, dict) else data
        out[name] = block.get("run_id") if isinstance(block, dict) else None
    parquet = run_dir / store.PARQUET
    if store.PARQUET not in out and parquet.exists():
        import pyarrow.parquet as pq
        try:
            meta = pq.read_schema(parquet).metadata or {}
        except Exception:  # noqa: BLE001 - a damaged file is refused where it is read
            meta = None
        if meta is not None:
            raw = meta.get(PARQUET_KEY)
            out[store.PARQUET] = raw.decode() if raw else None
    return {name: out[name] for name in (store.RUN_JSON, store.SUMMARY, store.PARQUET) if name in out}


def check_one_run(run_dir: Path, read: dict[str, str | None] | None = None) -> str | None:
    """The run id the directory's files name (None for a run from before ids: a file that
    names none is not held against the others); InputError naming the files when they
    name different runs. `read` as for ids."""
    found = {name: rid for name, rid in ids(run_dir, read).items() if rid}
    distinct = set(found.values())
    if len(distinct) <= 1:
        return next(iter(distinct), None)
    by_id: dict[str, list[str]] = {}
    for name, rid in found.items():
        by_id.setdefault(rid, []).append(name)
    parts = [f"{' and '.join(names)} {'are' if len(names) > 1 else 'is'} run {rid[:12]}"
             for rid, names in by_id.items()]
    raise InputError(str(run_dir), "holds files of more than one run (" + "; ".join(parts) +
                     "): run the plan again into an empty directory")
