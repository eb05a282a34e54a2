"""A run's records as a digest, held against tests/host/plan_records.json: what a change that
means to move code, not behaviour, must leave as it was (issue 59: host/ by stage, the SSD
apart from ATA, the wire defined once). test_stamp_order.py's runs of every built-in plan
on the model target and test_plan_records.py's of the rig's plans on rtl check theirs.

The digests are the plans' behaviour when last made. A change that means to change what
a plan does regenerates them and says why in its commit:

  FISRIG_UPDATE_PLAN_RECORDS=1 .venv/bin/python -m pytest -n 2 tests/host/test_stamp_order.py \\
      tests/host/test_plan_records.py
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

DIGESTS = Path(__file__).with_name("plan_records.json")
NVME_COLUMNS = ("queue", "nvme_status", "nvme_dw0")
UPDATE = os.environ.get("FISRIG_UPDATE_PLAN_RECORDS") == "1"


def digest(run_dir: Path) -> dict:
    """The records' count and a hash of them sorted: each record hashed over every column
    (pandas' row hash), the hashes sorted, then hashed together. The order records reach the
    host in is the firmware's completion order; sorting keeps the digest to what they say."""
    df = pd.read_parquet(run_dir / "records.parquet")
    # NVMe's columns (the queue, the CQE's status and dword 0) say nothing in a run without NVMe commands:
    # left out there, so that a SATA plan's digest is what it was before they came.
    for c in NVME_COLUMNS:
        if c in df.columns and not df[c].any():
            df = df.drop(columns=c)
    for c in df.columns:  # a category's codes depend on what else the run saw: hash its values
        if isinstance(df[c].dtype, pd.CategoricalDtype):
            df[c] = df[c].astype(str)
    rows = np.sort(pd.util.hash_pandas_object(df, index=False).to_numpy())
    h = hashlib.sha256(json.dumps(list(df.columns)).encode())
    h.update(rows.tobytes())
    return {"records": int(len(df)), "sha256": h.hexdigest()}


def known() -> dict:
    return json.loads(DIGESTS.read_text()) if DIGESTS.exists() else {}


def check(key: str, status: str, run_dir: Path) -> None:
    """The run's digest is the one kept under `key` (or, updating, becomes it)."""
    got = {"status": status, **digest(run_dir)}
    if UPDATE:
        with open(Path(tempfile.gettempdir()) / "fisrig-plan-records.lock", "w") as lock:  # xdist's workers in turn
            fcntl.flock(lock, fcntl.LOCK_EX)
            table = known()
            table[key] = got
            DIGESTS.write_text(json.dumps(dict(sorted(table.items())), indent=1) + "\n")
        return
    want = known().get(key)
    assert want is not None, f"{key}: no digest in {DIGESTS.name} (FISRIG_UPDATE_PLAN_RECORDS=1 makes it)"
    assert got == want, (f"{key}: the plan's records changed ({want['records']:,} records before, "
                         f"{got['records']:,} now, {got['status']}); if that is what the change means, "
                         f"regenerate {DIGESTS.name} (tests/host/plan_records.py) and say why in the commit")
