"""A command's wire timeline (its FISes from capture.parquet, times from its submit), for
report.html: each phase's slowest command and each failed one that a capture window holds."""
from __future__ import annotations

from html import escape
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from fisrig.capture import show
from fisrig.capture.format import CAPTURE_PARQUET
from fisrig.records import store

MAX_FAILED = 20  # failed commands shown; the rest are counted


def lines(cap, rec_row: int, submit_ns: int, tag: int, status_ns: int) -> list[str]:
    """The command's FISes in `cap` (capture.show.read's frame), its shared SDB by its bit."""
    sactive = cap["sactive"].fillna(0).to_numpy().astype(np.int64)
    shared = (cap["name"] == "set_device_bits").to_numpy() & (cap["t_ns"] == status_ns).to_numpy() & \
        ((sactive >> max(tag, 0)) & 1 == 1) & cap["record_row"].isna().to_numpy()
    mine = cap[((cap["record_row"] == rec_row).to_numpy() | shared) & (cap["kind"] == "fis").to_numpy()]
    out = []
    for row in mine.to_dict("records"):
        out.append(f"{row['t_ns'] - submit_ns:>10,} ns  {show.ARROW.get(row['direction'], '   ')}  "
                   f"{show.NAMES.get(row['name'], row['name']):<10} {show.fields_text(row)}".rstrip())
    return out


def html_section(run_dir: Path, phases: list) -> str:
    """report.html's "On the wire" section; "" when the run has no capture."""
    run_dir = Path(run_dir)
    if not (run_dir / CAPTURE_PARQUET).exists():
        return ""
    cap = show.read(run_dir)
    rows = sorted(set(cap["record_row"].dropna().astype(int)))
    with store.reading_parquet(run_dir / store.PARQUET):
        rec = pq.read_table(run_dir / store.PARQUET, columns=["kind", "result", "tag", "command", "marker",
                                                               "t_submit_ns", "t_status_ns", "latency_ns"]).to_pandas()
    held = rec.loc[rows] if rows else rec.iloc[:0]
    picks: list[tuple[str, int]] = []
    for p in phases:
        if p.slowest:
            c = p.slowest[0]
            hit = held[(held["t_submit_ns"] == c["t_submit_ns"]) & (held["command"] == c["command"])]
            picks += [(f"{p.label}: the slowest command", int(i)) for i in hit.index[:1]]
    failed = held[(held["kind"] == "command") & (held["result"] != "ok")]
    picks += [(f"{r.marker}: failed ({r.result})", int(i)) for i, r in failed.iloc[:MAX_FAILED].iterrows()]
    parts = []
    for what, i in dict.fromkeys(picks):
        r = rec.loc[i]
        body = "\n".join(lines(cap, i, int(r["t_submit_ns"]), int(r["tag"]), int(r["t_status_ns"])))
        parts.append(f"<details><summary><b>{escape(what)}</b>: command {int(r['command']):#04x}, tag {int(r['tag'])}, "
                     f"{int(r['latency_ns']) / 1000:,.1f} us, record row {i}</summary><pre>{escape(body)}</pre></details>")
    more = len(failed) - MAX_FAILED
    head = ("<h2>On the wire</h2><p class=sub>From capture.parquet (`fisrig capture show` lists it all): the FISes "
            "of each phase's slowest command and of each failed one that a capture window holds, times from the "
            "command's submit" + ("; modelled by the model target" if bool(cap["modelled"].any()) else "") + ".</p>")
    if not parts:
        return head + "<p>No phase's slowest command and no failed command falls in a capture window.</p>"
    return head + "".join(parts) + (f"<p>And {more} failed commands more.</p>" if more > 0 else "")
