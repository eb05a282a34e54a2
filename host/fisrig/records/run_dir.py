"""A run directory holds one run: who may write in it, and whether its files are one run's.

A run (or `fisrig report`, which rewrites a run's summary and plots) takes the directory
for itself before it writes anything: an exclusive flock on its lock file, which the
kernel lets go when the process ends however it ends, so a killed run never leaves it
taken. A second writer is refused in one line naming the run that holds it. Every file a
run writes carries its id (run.json, summary.json, records.parquet's metadata, the report
and its charts); `report` and `compare` refuse a directory whose files name different runs
(run_state.check_one_run).
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from fisrig.errors import InputError

LOCK = ".fisrig.lock"
# records.parquet's key-value metadata key for the id (summary.json: fisrig.run_id).
PARQUET_KEY = b"fisrig.run_id"


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass
class Claim:
    """The directory taken by this process until release() or the process's end."""
    path: Path
    run_id: str
    fd: int
    made: bool = False  # the directory was made for this claim

    def release(self) -> None:
        """Lets the directory go; one made for this claim and left with nothing in it goes too
        (a refused run leaves no directory behind)."""
        if self.fd < 0:
            return
        if self.made and [p.name for p in self.path.iterdir()] == [LOCK]:
            (self.path / LOCK).unlink()  # while still held: a process that opened it sees it gone (take)
            self.path.rmdir()
        os.close(self.fd)  # the flock goes with the last descriptor
        self.fd = -1

    def __enter__(self) -> "Claim":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _holder(fd: int, wait_s: float = 0.5) -> str:
    """Who holds the lock, as its holder wrote it: it writes that just after it takes the
    lock, so a process refused in between waits for it a moment."""
    give_up = time.monotonic() + wait_s
    while True:
        try:
            h = json.loads(os.pread(fd, 4096, 0) or b"{}")
        except (OSError, ValueError):
            h = {}
        if (isinstance(h, dict) and h.get("pid")) or time.monotonic() > give_up:
            break
        time.sleep(0.01)
    if not isinstance(h, dict) or not h.get("pid"):
        return "another fisrig process"
    if h.get("what") == "report":
        return f"`fisrig report` (pid {h['pid']})"
    if h.get("what") == "raw":
        return f"`fisrig raw` (pid {h['pid']})"
    return (f"run {str(h.get('run_id', '?'))[:12]} (plan {h.get('plan', '?')}, seed {h.get('seed', '?')}, "
            f"pid {h['pid']})")


def take(out: Path, where: str, what: str = "run", run_id: str | None = None, **about) -> Claim:
    """`out` (made if need be) taken for this process; InputError naming the holder when
    another process has it. `about` (plan, seed) is what a refused process is told."""
    out = Path(out)
    while True:
        made = not out.exists()
        try:
            out.mkdir(parents=True, exist_ok=True)
            fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except FileNotFoundError:  # a refused run's release removed the directory it had made
            continue
        except FileExistsError:
            raise InputError(where, "is a file, not a directory") from None
        except OSError as e:
            raise InputError(where, f"cannot use it: {e.strerror or e}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = _holder(fd)
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise InputError(where, f"cannot lock it: {e.strerror or e}") from None
            if what == "raw":  # a kept drive (targets/kept_drive.py)
                raise InputError(where, f"is in use by {holder}: a kept drive takes one command at a time; "
                                        "wait until it has ended") from None
            raise InputError(where, f"is being written by {holder}: a run directory holds one run; "
                                    "choose another --out, or wait until it has ended") from None
        try:  # the lock file it holds is still the directory's (a refused run's release removes it)
            if os.stat(out / LOCK).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    claim = Claim(out, run_id or new_id(), fd, made)
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"what": what, "run_id": claim.run_id, "pid": os.getpid(), **about}).encode(), 0)
    return claim


def parquet_metadata(run_id: str | None) -> dict[bytes, bytes]:
    """records.parquet's key-value metadata for the run `run_id` (none for a run without one)."""
    return {PARQUET_KEY: run_id.encode()} if run_id else {}
