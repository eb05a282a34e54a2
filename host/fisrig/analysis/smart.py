"""A phase's write amplification, as reviewers read it from a real drive: the growth of the
drive's NAND writes (SMART attribute 249) over its host writes (241) between two SMART
readings (a plan's `smart` steps, program.h struct fisrig_op_smart) with that phase's
commands, and no other phase's, between them (docs/plans.md, "Write amplification").

The readings are the drive's own word, so the figure is the drive's: a controller that
compresses (SandForce) reports less than 1, and a drive without the attributes none.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from fisrig.records.store import code_of, codes
from fisrig.sata import ata


def readings(table: pa.Table) -> list[tuple[int, int, dict[int, int]]]:
    """Each SMART reading of the run, in record order: its first and last row and the raw
    value of each attribute the drive's table had (an attribute it had not is left out)."""
    kind, names = codes(table, "kind")
    rows = np.flatnonzero(kind == code_of(names, "smart"))
    if not len(rows):
        return []
    ids = table.column("lbas").to_numpy()[rows]
    raw = table.column("lba").to_numpy()[rows]
    detail = table.column("detail").to_numpy()[rows]
    out: list[tuple[int, int, dict[int, int]]] = []
    for i, row in enumerate(rows.tolist()):
        if not out or row != out[-1][1] + 1:  # a reading's records are consecutive
            out.append((row, row, {}))
        first, _, values = out[-1]
        if not detail[i]:
            values[int(ids[i])] = int(raw[i])
        out[-1] = (first, row, values)
    return out


def write_amplification(table: pa.Table) -> dict[str, dict]:
    """Per phase label: the host and NAND bytes the drive counted over it and their ratio,
    from each pair of consecutive readings with only that phase's commands between them
    (a phase read around several times adds its intervals up). A phase without such a pair,
    or on a drive whose table lacks 241 or 249, has none."""
    if "kind" not in table.column_names:
        return {}
    found = readings(table)
    if len(found) < 2:
        return {}
    kind, kinds = codes(table, "kind")
    marker, labels = codes(table, "marker")
    command = table.column("command").to_numpy()
    # What a phase's commands are: not the readings' own SMART READ DATA, which writes nothing.
    is_cmd = (kind == code_of(kinds, "command")) & (command != ata.SMART)
    host_id, nand_id = ata.SMART_WRITES
    out: dict[str, dict] = {}
    for (_, a_end, a), (b_start, _, b) in zip(found, found[1:]):
        between = marker[a_end + 1:b_start][is_cmd[a_end + 1:b_start]]
        phases = np.unique(between)
        if len(phases) != 1 or not {host_id, nand_id} <= a.keys() & b.keys():
            continue
        entry = out.setdefault(labels[int(phases[0])], {"host_bytes": 0, "nand_bytes": 0})
        entry["host_bytes"] += (b[host_id] - a[host_id]) * 512
        entry["nand_bytes"] += (b[nand_id] - a[nand_id]) * 512
    for entry in out.values():
        entry["value"] = entry["nand_bytes"] / entry["host_bytes"] if entry["host_bytes"] > 0 else None
    return out
