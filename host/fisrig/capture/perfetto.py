"""A capture as a Perfetto trace (`fisrig capture export RUN --perfetto`), which
ui.perfetto.dev and Perfetto's trace processor open: a track for each direction of the wire,
each FIS a slice as long as its dwords take and each primitive run one too; a track for each
NCQ tag (a non-queued command's slot), each command a slice from its submit to its status
with its phases inside it; the trigger and the rig's events as instants. Written with the
trace's own schema, the perfetto package's perfetto_trace_pb2."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from fisrig.capture import show
from fisrig.capture.format import window_ticks, ticks_to_ns
from fisrig.records import run_state, store
from fisrig.sata import ata

# SATA's dword rate by link generation: 1.5, 3 and 6 Gb/s, 8b/10b, 32-bit dwords.
DWORDS_PER_S = {1: 37_500_000, 2: 75_000_000, 3: 150_000_000}
SEQUENCE = 1  # the one writer's trusted_packet_sequence_id
# A command's phases, from one stamp to the next (engine_if.h's stamps).
PHASES = (("issue", "t_submit_ns", "t_h2d_ns"), ("queued", "t_h2d_ns", "t_accept_ns"),
          ("wait", "t_accept_ns", "t_setup_ns"), ("setup", "t_setup_ns", "t_data_first_ns"),
          ("data", "t_data_first_ns", "t_data_last_ns"), ("status", "t_data_last_ns", "t_status_ns"))


def _pb():
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    return perfetto_trace_pb2


class _Writer:
    def __init__(self):
        self.pb = _pb()
        self.trace = self.pb.Trace()
        self.uuid = 0
        self.kinds = {"begin": self.pb.TrackEvent.TYPE_SLICE_BEGIN, "end": self.pb.TrackEvent.TYPE_SLICE_END,
                      "instant": self.pb.TrackEvent.TYPE_INSTANT}
        self.templates: dict[tuple[int, str], object] = {}  # a track's packet of a kind, copied per event

    def track(self, name: str, parent: int | None = None) -> int:
        self.uuid += 1
        p = self.trace.packet.add()
        p.trusted_packet_sequence_id = SEQUENCE
        p.track_descriptor.uuid = self.uuid
        p.track_descriptor.name = name
        if parent is not None:
            p.track_descriptor.parent_uuid = parent
        for kind, code in self.kinds.items():
            t = self.pb.TracePacket()
            t.trusted_packet_sequence_id = SEQUENCE
            t.track_event.track_uuid = self.uuid
            t.track_event.type = code
            self.templates[(self.uuid, kind)] = t
        return self.uuid

    def event(self, track: int, ts: int, kind: str, name: str | None = None, args: dict | None = None) -> None:
        p = self.trace.packet.add()
        p.CopyFrom(self.templates[(track, kind)])
        p.timestamp = ts
        if name is not None:
            p.track_event.name = name
        if args:
            for key, value in args.items():
                a = p.track_event.debug_annotations.add()
                a.name = key
                if isinstance(value, str):
                    a.string_value = value
                else:
                    a.int_value = value

    def slice(self, track: int, start: int, end: int, name: str, args: dict | None = None) -> None:
        self.event(track, start, "begin", name, args)
        self.event(track, max(end, start), "end")


def _command_name(cmd: int) -> str:
    return ata.COMMAND_NAMES.get(cmd, f"command {cmd:02X}h")


def trace(run_dir: Path):
    """The run's capture as a perfetto_trace_pb2.Trace."""
    run_dir = Path(run_dir)
    d = show.read(run_dir)
    meta = run_state.read_meta(run_dir)
    ns_per_dword = 1e9 / DWORDS_PER_S.get(meta.get("link_gen") or 3, DWORDS_PER_S[3])
    w = _Writer()
    root = w.track(f"fisrig {meta.get('plan', {}).get('name', '')} on {meta.get('target', '?')}".strip())
    wire = {"to_device": w.track("wire: host to device", root), "to_host": w.track("wire: device to host", root)}
    rig = w.track("rig: triggers and events", root)
    for direction, track in wire.items():
        rows = d[(d["direction"] == direction)].sort_values("t_ns", kind="stable")
        starts = rows["t_ns"].to_numpy()
        ends = starts + np.ceil(rows["count"].to_numpy() * ns_per_dword).astype(np.int64)
        ends = np.minimum(ends, np.append(starts[1:], np.iinfo(np.int64).max))  # slices on a track nest
        texts = [show.fields_text(row) for row in rows.to_dict("records")]
        labels = [show.NAMES.get(n, n) if k == "fis" else n for k, n in zip(rows["kind"], rows["name"])]
        counts = rows["count"].to_numpy().tolist()
        tags = rows["tag"].fillna(-1).to_numpy().astype(np.int64).tolist()
        records = rows["record_row"].fillna(-1).to_numpy().astype(np.int64).tolist()
        for start, end, label, text, count, tag, record in zip(starts.tolist(), ends.tolist(), labels, texts, counts,
                                                               tags, records):
            args = {"fields": text, "dwords": count}
            if tag >= 0:
                args["tag"] = tag
            if record >= 0:
                args["record_row"] = record
            w.slice(track, start, end, label, args)
    spans = []
    for row in d[d["kind"].isin(["trigger", "event"])].to_dict("records"):
        if row["kind"] == "trigger":
            first, last = window_ticks(row["dwords"])
            spans.append((int(ticks_to_ns(first)), int(ticks_to_ns(last))))
            w.event(rig, row["t_ns"], "instant", f"trigger: {row['name']}", {"window": int(row["window"]),
                                                                             "fields": show.fields_text(row)})
        else:
            w.event(rig, row["t_ns"], "instant", row["name"], {"tag": show.num(row["tag"]) or -1})
    _commands(w, run_dir, root, spans)
    return w.trace


def _commands(w: _Writer, run_dir: Path, root: int, spans: list[tuple[int, int]]) -> None:
    """Each command record that overlaps a window, on its tag's track, with its phases."""
    path = run_dir / store.PARQUET
    if not path.exists() or not spans:
        return
    cols = ["kind", "command", "tag", "result", "lba", "lbas"] + sorted({c for _, a, b in PHASES for c in (a, b)})
    with store.reading_parquet(path):
        r = pq.read_table(path, columns=cols).to_pandas()
    r = r[(r["kind"] == "command") & (r["t_status_ns"] > 0)]
    keep = np.zeros(len(r), dtype=bool)
    for a, b in spans:
        keep |= (r["t_submit_ns"].to_numpy() <= b) & (r["t_status_ns"].to_numpy() >= a)
    tracks: dict[int, int] = {}
    for row in r[keep].sort_values("t_submit_ns", kind="stable").to_dict("records"):
        tag = int(row["tag"])
        if tag not in tracks:
            tracks[tag] = w.track(f"tag {tag}", root)
        track = tracks[tag]
        start, end = int(row["t_submit_ns"]), int(row["t_status_ns"])
        w.event(track, start, "begin", _command_name(int(row["command"])),
                {"lba": int(row["lba"]), "lbas": int(row["lbas"]), "result": str(row["result"])})
        at = start
        for name, a, b in PHASES:
            t0, t1 = int(row[a]), int(row[b])
            if t0 and t1 and t1 > t0 and t0 >= at:
                w.slice(track, t0, min(t1, end), name)
                at = min(t1, end)
        w.event(track, end, "end")


def write(run_dir: Path, out: Path) -> Path:
    """The trace into `out` (a .perfetto-trace file)."""
    data = trace(run_dir).SerializeToString()
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(out)
    return out
