"""The analyzer view on the model target (capture.h, sim/model/wire_capture.cc,
engine_capture.cc; host/fisrig/capture): the FISes of every command at its record's stamps,
windows around the trigger that fired them, the fault triggers, capture.parquet, the text
listing, and the Perfetto and VCD exports read back by their own schema and parser."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from cli_in_process import fisrig as fisrig_in_process
from fisrig import plan
from fisrig.capture import perfetto, vcd
from fisrig.errors import InputError
from fisrig.run import prepare, run_plan
from fisrig_hw import contract as _c

NS_PER_DWORD = 20 / 3  # Gen3: a dword a tick
MIXED = [
    {"do": "identify", "label": "identify"},
    {"do": "workload", "label": "ncq", "read_pct": 50, "transfer_kib": 16, "queue_depth": 4, "lba_count": 4096,
     "commands": 60},
    {"do": "workload", "label": "dma", "read_pct": 50, "transfer_kib": 16, "queue_depth": 1, "ncq": False,
     "lba_count": 4096, "commands": 20},
    {"do": "flush", "label": "flush"},
]
# What each protocol's command puts on the wire, in order (SATA 3.x 11, as the engine runs
# them); "data+" is one or more Data FISes, each after its own setup where the protocol has one.
SEQUENCES = {
    ("reg_h2d", "reg_d2h", "dma_setup", "data+", "set_device_bits"): {0x60},
    ("reg_h2d", "reg_d2h", "dma_setup", "dma_activate", "data+", "set_device_bits"): {0x61},
    ("reg_h2d", "data+", "reg_d2h"): {0x25},
    ("reg_h2d", "dma_activate", "data+", "reg_d2h"): {0x35},
    ("reg_h2d", "pio_setup", "data+"): {0xEC},
    ("reg_h2d", "reg_d2h"): {0xEA, 0xE7},
}


def run(tmp_path, steps, name="run", faults=None, **head):
    p = plan.from_dict({"plan": {"name": "capture", "profile": "tiny-1gb", **head}, "step": steps})
    r = run_plan(p, tmp_path / name, quiet=True, faults=faults)
    return r, pd.read_parquet(r.run_dir / "records.parquet"), pd.read_parquet(r.run_dir / "capture.parquet")


def with_capture(steps, **capture):
    return [{**steps[0], "capture": capture}, *steps[1:]]


def shape(names: list[str]) -> tuple[str, ...]:
    """A command's FIS names with each run of Data FISes (and the setups between them) as one."""
    out: list[str] = []
    for n in names:
        if n == "data":
            if out and out[-1] in ("data+",):
                continue
            if len(out) >= 2 and out[-1] in ("dma_activate", "pio_setup") and out[-2] == "data+":
                out.pop()
                continue
            out.append("data+")
        else:
            out.append(n)
    return tuple(out)


def test_a_capture_from_the_start_holds_every_command_s_fises_at_its_record_s_stamps(tmp_path):
    r, rec, cap = run(tmp_path, with_capture(MIXED, trigger="start", before_us=0, after_us=100_000))
    assert r.status == "done"
    assert list(cap["kind"].iloc[:1]) == ["trigger"] and set(cap["window"]) == {0}
    fis = cap[cap["kind"] == "fis"]
    assert fis["modelled"].all() and (np.diff(fis["tick"].to_numpy().astype(np.int64)) >= 0).all()
    commands = rec[rec["kind"] == "command"]
    assert len(commands) == 82 and set(fis["record_row"].dropna().astype(int)) <= set(commands.index)
    sdbs = fis[fis["name"] == "set_device_bits"]
    seen = 0
    for row, c in commands.iterrows():
        mine = fis[(fis["record_row"] == row) & (fis["name"] != "set_device_bits")]
        names = list(mine["name"])
        queued = c["command"] in (0x60, 0x61)
        if queued:  # its SDB may be shared with other tags' statuses: found by its bit
            bit = (sdbs["sactive"].to_numpy().astype(np.int64) >> int(c["tag"])) & 1
            sdb = sdbs[(sdbs["t_ns"] == c["t_status_ns"]).to_numpy() & (bit == 1)]
            assert len(sdb) == 1, (row, c.to_dict())
            names.append("set_device_bits")
        want = next(s for s, cmds in SEQUENCES.items() if c["command"] in cmds)
        assert shape(names) == want, (row, names)
        # Each FIS at the stamp engine_if.h defines for it.
        at = mine.drop_duplicates("name").set_index("name")["t_ns"].to_dict()  # the first of each name
        assert mine["t_ns"].iloc[0] == c["t_h2d_ns"]
        if queued:
            assert at["reg_d2h"] == c["t_accept_ns"] and at["dma_setup"] == c["t_setup_ns"]
        elif "reg_d2h" in at and c["command"] != 0xEC:
            assert mine[mine["name"] == "reg_d2h"]["t_ns"].iloc[-1] == c["t_status_ns"]
        if "dma_activate" in at and not queued or "pio_setup" in at:
            assert at.get("dma_activate", at.get("pio_setup")) == c["t_setup_ns"]
        data = mine[mine["name"] == "data"]
        if len(data):
            assert abs(data["t_ns"].iloc[0] + NS_PER_DWORD - c["t_data_first_ns"]) <= 1
            assert ((data["count"] - 1) * 4).sum() == c["data_dwords"] * 4
        seen += 1
    assert seen == 82


def test_a_trigger_s_window_is_the_full_capture_s_entries_around_the_fis_that_fired_it(tmp_path):
    _, rec, full = run(tmp_path, with_capture(MIXED, trigger="start", before_us=0, after_us=100_000), "full")
    _, _, cap = run(tmp_path, with_capture(MIXED, trigger="command:0x61", before_us=3, after_us=20), "write")
    trigger = cap.iloc[0]
    assert (trigger["kind"], trigger["name"]) == ("trigger", "command")
    writes = full[(full["name"] == "reg_h2d") & (full["command"] == 0x61)]
    assert trigger["tick"] == writes["tick"].min()  # the first WRITE FPDMA QUEUED's H2D
    lo, hi = int(trigger["tick"]) - 3 * 150, int(trigger["tick"]) + 20 * 150
    want = full[(full["kind"] != "trigger") & (full["tick"] >= lo) & (full["tick"] <= hi)]
    got = cap.iloc[1:]
    cols = ["tick", "direction", "name", "count", "tag", "record_row", "command", "status", "sactive"]
    pd.testing.assert_frame_equal(got[cols].reset_index(drop=True), want[cols].reset_index(drop=True))


def test_several_windows_follow_one_another(tmp_path):
    _, _, cap = run(tmp_path, with_capture(MIXED, trigger="fis:sdb", before_us=1, after_us=2, windows=3))
    triggers = cap[cap["kind"] == "trigger"]
    assert list(triggers["window"]) == [0, 1, 2]
    ends = []
    for w, t in triggers.set_index("window").iterrows():
        entries = cap[(cap["window"] == w) & (cap["kind"] != "trigger")]
        sdb = entries[entries["tick"] == t["tick"]]
        assert "set_device_bits" in set(sdb["name"])  # the window's trigger is an SDB of it
        first, last = int(t["dwords"][1]), int(t["dwords"][3])
        assert entries["tick"].between(first, last).all()
        ends.append((first, last))
    assert ends[0][1] < ends[1][0] and ends[1][1] < ends[2][0]


def test_an_ncq_error_s_window_holds_its_error_sdb_and_the_log_read(tmp_path):
    steps = [{"do": "workload", "label": "reads", "read_pct": 100, "transfer_kib": 4, "queue_depth": 4,
              "lba_start": 4000, "lba_count": 400, "commands": 200,
              "capture": {"trigger": "error", "before_us": 10, "after_us": 20}}]
    r, rec, cap = run(tmp_path, steps, faults=["unc=4100+4"], on_error="requeue")
    t = cap.iloc[0]
    failed = rec[rec["result"] == "ata_error"]
    assert len(failed) and t["name"] == "error"
    sdb = cap[(cap["tick"] == t["tick"]) & (cap["name"] == "set_device_bits")].iloc[0]
    assert int(sdb["status"]) & 1 and sdb["error"] == 0x40 and sdb["sactive"] == 0  # ERR, UNC, nothing completed
    log = cap[(cap["name"] == "reg_h2d") & (cap["command"] == 0x2F)]
    assert len(log) == 1 and log["tick"].iloc[0] > t["tick"] and log["lba"].iloc[0] == 0x10
    after = cap[cap["tick"] > log["tick"].iloc[0]]
    assert list(after["name"].iloc[:2]) == ["pio_setup", "data"]
    # report.html shows the failed command's own FISes, from its submit.
    html = (r.run_dir / "report.html").read_text()
    section = html[html.index("<h2>On the wire</h2>"):]
    row = int(failed.index[0])
    assert f"reads: failed (ata_error)</b>: command 0x60, tag {int(failed['tag'].iloc[0])}" in section
    assert f"record row {row}</summary><pre>" in section and "Data       2048 bytes" in section


def test_a_data_fis_that_failed_its_crc_fires_the_r_err_trigger(tmp_path):
    steps = [{"do": "workload", "label": "mixed", "read_pct": 50, "transfer_kib": 16, "queue_depth": 4,
              "commands": 300, "capture": {"trigger": "r_err", "before_us": 5, "after_us": 30}}]
    _, rec, cap = run(tmp_path, steps, faults=["data_fis_crc_error_rate=0.02"], on_error="requeue")
    t = cap.iloc[0]
    bad = cap[cap["bad"]]
    assert t["name"] == "r_err" and bad["tick"].iloc[0] == t["tick"] and bad["name"].iloc[0] == "data"
    failed = rec.loc[int(bad["record_row"].iloc[0])]
    assert failed["result"] == "ata_error" and failed["error"] == 0x84  # ICRC + ABRT
    assert failed["t_data_first_ns"] - NS_PER_DWORD <= t["t_ns"] < failed["t_data_last_ns"]
    data = cap[(cap["record_row"] == bad["record_row"].iloc[0]) & (cap["name"] == "data")]
    assert data["tick"].max() == t["tick"]  # its last Data FIS: the command ended there


def test_a_power_cut_and_a_timeout_each_fire_their_trigger(tmp_path):
    steps = [{"do": "power_cut_at", "event": "time", "delay_us": 300,
              "capture": {"trigger": "power_cut", "before_us": 20, "after_us": 5}},
             {"do": "workload", "label": "writes", "read_pct": 0, "queue_depth": 4, "transfer_kib": 4,
              "lba_count": 65536, "commands": 400},
             {"do": "power_on", "label": "back"}]
    _, rec, cap = run(tmp_path, steps, "cut")
    cut = int(rec.loc[(rec["kind"] == "power") & (rec["tag"] == 240), "t_status_ns"].iloc[0])
    t = cap.iloc[0]
    assert t["name"] == "power_cut" and t["t_ns"] == cut
    event = cap[cap["kind"] == "event"]
    assert list(event["name"]) == ["power_cut"] and event["t_ns"].iloc[0] == cut
    assert (cap.iloc[1:]["t_ns"] >= cut - 20_000).all() and len(cap[cap["kind"] == "fis"]) > 4
    steps = [{"do": "workload", "label": "reads", "read_pct": 100, "queue_depth": 1, "transfer_kib": 4,
              "commands": 20, "capture": {"trigger": "timeout", "before_us": 5, "after_us": 5}}]
    _, rec, cap = run(tmp_path, steps, "hang", faults=["hang_after_commands=5"], timeout_ms=1, on_error="fail")
    timed_out = rec[rec["result"] == "timeout"]
    assert len(timed_out) and cap.iloc[0]["name"] == "timeout"
    assert cap.iloc[0]["t_ns"] == timed_out["t_status_ns"].min()
    assert "timeout" in set(cap[cap["kind"] == "event"]["name"])


def test_a_capture_that_never_fired_is_said(tmp_path):
    r, rec, cap = run(tmp_path, with_capture(MIXED, trigger="command:0xB0"))  # no SMART in it
    assert cap.empty and r.status == "done"
    assert r.outcome.notes == ["the capture step 1 armed (trigger command:0xB0) never fired: capture.parquet has "
                               "no window"]


def test_payload_dwords_asked_of_the_model_target_is_said_not_kept(tmp_path):
    r, rec, cap = run(tmp_path, with_capture(MIXED, trigger="start", payload_dwords=64))
    assert r.status == "done" and cap["payload"].isna().all()
    assert r.outcome.notes == ["the capture step 1 asked for 64 payload dwords: the model target keeps none (it has no "
                               "FIS's dwords past its header); the gateware's capture (--target rtl, a board) keeps them"]


def test_the_listing_decodes_each_fis(tmp_path, capsys):
    r, rec, cap = run(tmp_path, with_capture(MIXED, trigger="start", before_us=0, after_us=100_000))
    h2d = cap[(cap["name"] == "reg_h2d") & (cap["command"] == 0x60)].iloc[0]
    frm = f"{h2d['t_ns'] / 1000:.3f}us"
    code, out, err = fisrig_in_process(["capture", "show", str(r.run_dir), "--from", frm, "--to", "1s"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].split()[:4] == [frm[:-2], "H>D", str(int(h2d["tag"])), "Reg"]  # the first has no +ns
    assert f"READ_FPDMA_QUEUED (60h) tag {int(h2d['tag'])} LBA {int(h2d['lba'])} sectors 32" in lines[1]
    assert any("SDB        status 40h error 00h SActive" in l for l in lines)
    assert any("DMA Setup  tag" in l and "transfer 16384 bytes" in l for l in lines)
    assert lines[-1].startswith("(modelled:")


def _tracks(trace):
    names = {p.track_descriptor.uuid: p.track_descriptor.name for p in trace.packet if p.HasField("track_descriptor")}
    events: dict[str, list] = {}
    for p in trace.packet:
        if p.HasField("track_event"):
            events.setdefault(names[p.track_event.track_uuid], []).append((p.timestamp, p.track_event))
    return names, events


def test_the_perfetto_trace_reads_back_with_perfetto_s_own_schema(tmp_path, capsys):
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    r, rec, cap = run(tmp_path, with_capture(MIXED, trigger="command:0x61", before_us=10, after_us=60))
    code, out, err = fisrig_in_process(["capture", "export", str(r.run_dir), "--perfetto"], capsys)
    assert code == 0, err
    trace = pb.Trace()
    trace.ParseFromString((r.run_dir / "capture.perfetto-trace").read_bytes())
    names, events = _tracks(trace)
    assert {"wire: host to device", "wire: device to host", "rig: triggers and events"} <= set(names.values())
    for track, evs in events.items():
        ts = [t for t, _ in evs]
        assert ts == sorted(ts), track
        depth = 0
        for _, e in evs:
            depth += {pb.TrackEvent.TYPE_SLICE_BEGIN: 1, pb.TrackEvent.TYPE_SLICE_END: -1}.get(e.type, 0)
            assert depth >= 0, track
        assert depth == 0, track
    fis = cap[cap["kind"] == "fis"]
    for track, direction in (("wire: host to device", "to_device"), ("wire: device to host", "to_host")):
        begins = [(t, e.name) for t, e in events[track] if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN]
        mine = fis[fis["direction"] == direction]
        assert [t for t, _ in begins] == list(mine["t_ns"])
    tags = [n for n in names.values() if n.startswith("tag ")]
    assert tags and all(0 <= int(n.split()[1]) < 32 for n in tags)
    commands = [e.name for n in tags for t, e in events[n] if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN
                and e.name in ("READ_FPDMA_QUEUED", "WRITE_FPDMA_QUEUED")]
    assert "WRITE_FPDMA_QUEUED" in commands
    tp = os.environ.get("FISRIG_TRACE_PROCESSOR")  # Perfetto's trace_processor binary, where one is given
    if tp:
        from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
        with TraceProcessor(trace=str(r.run_dir / "capture.perfetto-trace"),
                            config=TraceProcessorConfig(bin_path=tp)) as p:
            n = p.query("select count(*) as n from slice").as_pandas_dataframe()["n"][0]
        assert n == sum(1 for evs in events.values() for _, e in evs if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN)


def test_the_vcd_reads_back_with_a_vcd_parser(tmp_path, capsys):
    from vcdvcd import VCDVCD
    r, rec, cap = run(tmp_path, with_capture(MIXED, trigger="fis:sdb", before_us=5, after_us=40))
    code, out, err = fisrig_in_process(["capture", "export", str(r.run_dir), "--vcd", "--out",
                                        str(tmp_path / "wire.vcd")], capsys)
    assert code == 0, err
    v = VCDVCD(str(tmp_path / "wire.vcd"))
    sig = {name.split(".")[-1]: v[name] for name in v.signals}
    assert {"link_state", "trigger", "to_device_fis", "to_host_fis", "to_device_tag", "to_host_tag"} <= set(sig)
    fis = cap[cap["kind"] == "fis"]
    for row in fis.itertuples():
        side = "to_device" if row.direction == "to_device" else "to_host"
        assert int(sig[f"{side}_fis"][int(row.t_ns)], 2) == int(row.dwords[0]) & 0xFF
        if not pd.isna(row.tag):
            assert int(sig[f"{side}_tag"][int(row.t_ns)], 2) == int(row.tag)
        assert int(sig["link_state"][int(row.t_ns)], 2) == (1 if side == "to_device" else 2)
    t = int(cap.iloc[0]["t_ns"])
    assert sig["trigger"][t] == "1" and sig["trigger"][t + 1] == "0"
    # GTKWave's save file beside it opens that VCD with every signal it declares, the marker
    # on the trigger and the view from before it.
    gtkw = (tmp_path / "wire.gtkw").read_text().splitlines()
    assert gtkw[0] == f'[dumpfile] "{tmp_path / "wire.vcd"}"' and f"gtkwave {tmp_path / 'wire.gtkw'}" in out
    shown = [l for l in gtkw if l.startswith("fisrig.")]
    declared = {n: int(v[n].size) for n in v.signals}
    assert sorted(l.split("[")[0] for l in shown) == sorted(declared)
    assert all(l.endswith(f"[{declared[l.split('[')[0]] - 1}:0]") for l in shown if "[" in l)
    zoom, marker, _ = next(l for l in gtkw if l.startswith("*"))[1:].split()
    start = int(next(l for l in gtkw if l.startswith("[timestart]")).split()[1])
    assert int(marker) == t and start < t and float(zoom) < 0


@pytest.mark.parametrize("argv, pattern", [
    (["run", "smoke-tiny", "--capture", "trigger=r_er"], r"^fisrig: --capture trigger=r_er: trigger 'r_er': no such trigger"),
    (["run", "smoke-tiny", "--capture", "r_err"], r"^fisrig: --capture r_err: --capture 'r_err': 'r_err' is not key=value$"),
    (["run", "smoke-tiny", "--capture", "trigger=error,after_us=x"], r"^fisrig: --capture .*: --capture after_us=x: not a number$"),
    (["run", "smoke-tiny", "--capture", "trigger=start,payload_dwords=-1"],
     r"^fisrig: --capture .*: payload_dwords = -1: 0 to 2042"),
    (["run", "smoke-tiny", "--capture", "trigger=start,payload_dwords=lots"],
     r"^fisrig: --capture .*: --capture payload_dwords=lots: not a number$"),
    (["capture", "show", "{t}"], r"^fisrig: .*: no capture\.parquet: its plan armed no capture"),
    (["capture", "export", "{t}"], r"^fisrig: fisrig capture export: say --perfetto or --vcd$"),
    (["capture", "show", "{t}", "--from", "1 furlong"], r"^fisrig: --from 1 furlong: a time on the run's clock"),
    (["capture", "show", "{t}/none"], r"^fisrig: .*none: no such run directory$"),
])
def test_a_bad_capture_flag_is_refused_in_one_line(tmp_path, capsys, argv, pattern):
    r = run_plan(plan.from_dict({"plan": {"name": "plain", "profile": "tiny-1gb"}, "step": [{"do": "identify"}]}),
                 tmp_path / "plain", quiet=True)
    code, out, err = fisrig_in_process([a.format(t=r.run_dir) for a in argv], capsys)
    assert code == 2 and len(err.splitlines()) == 1, (code, err)
    import re
    assert re.search(pattern, err.splitlines()[0]), err


def test_a_capture_is_refused_where_the_rig_cannot_take_it_and_taken_where_it_can(tmp_path):
    nvme = plan.from_dict({"plan": {"name": "n", "profile": "tiny-1gb", "protocol": "nvme"},
                           "step": [{"do": "identify", "capture": {"trigger": "start"}}]})
    with pytest.raises(InputError, match="a capture has no NVMe form yet"):
        prepare(nvme)
    sata = plan.from_dict({"plan": {"name": "s", "profile": "tiny-1gb"},
                           "step": [{"do": "identify", "capture": {"trigger": "fis:sdb", "windows": 2}},
                                    {"do": "flush", "capture": {"trigger": "error"}}]})
    # Any trigger, windows and armings on the gateware's targets (tests/rtl/test_capture_rtl.py
    # and test_board_target.py run them).
    prepare(sata, target="rtl")
    prepare(sata, target="board", url="127.0.0.1:1234")


def test_payload_entries_join_their_fis_in_capture_parquet(tmp_path):
    """capture.bin's payload entries (the gateware's: kind PAYLOAD, `count` their first dword's
    index, `type` the dwords they hold) become their FIS's `payload`, both ways at once, cut
    at the FIS's end (the CRC left out); one whose FIS is not in the capture (a window that
    began inside the frame) is left out, as its own rows are."""
    from fisrig.capture import format as cf, table
    e = np.zeros(9, dtype=cf.ENTRY)
    rows = [  # tick, kind, dir, type, count, header
        (100, cf.PAYLOAD, 0, 7, 21, range(521, 528)),      # an orphan: its FIS began before the capture
        (110, cf.FIS, 0, 0x34, 5, [0x34] + [0] * 6),        # a D2H: no payload
        (120, cf.FIS, 1, 0x46, 12, [0x46] + list(range(1, 7))),
        (127, cf.PAYLOAD, 1, 6, 7, range(7, 13)),           # dwords 7..11, then the CRC
        (130, cf.FIS, 0, 0x46, 17, [0x46] + list(range(101, 107))),
        (137, cf.PAYLOAD, 0, 7, 7, range(107, 114)),
        (144, cf.PAYLOAD, 0, 3, 14, [114, 115, 116]),       # the arming's payload dwords end at 10
        (150, cf.FIS, 1, 0x46, 7, [0x46] + list(range(1, 7))),
        (157, cf.PAYLOAD, 1, 1, 7, [0xC0C0]),               # its CRC alone
    ]
    for i, (tick, kind, d, ty, count, h) in enumerate(rows):
        e[i]["tick"], e[i]["kind"], e[i]["dir"], e[i]["type"], e[i]["count"] = tick, kind, d, ty, count
        e[i]["header"][:len(list(h))] = list(h)
        e[i]["tag"] = cf.NO_TAG
    t = table.to_table(e, tmp_path / "none.parquet").to_pandas()
    assert list(t["tick"]) == [110, 120, 130, 150] and (t["kind"] == "fis").all()
    pay = [None if p is None else list(np.frombuffer(p, "<u4")) for p in t["payload"]]
    assert pay == [None, list(range(7, 12)), list(range(107, 117)), []]


def test_a_run_the_sender_shortened_with_cont_says_so(tmp_path):
    """capture.h's FISRIG_CAPTURE_CONT on a primitive run (the gateware's: its count takes in
    CONT and the filler) is capture.parquet's `cont` and the listing's "(CONT)"."""
    from fisrig.capture import format as cf, show, table
    e = np.zeros(2, dtype=cf.ENTRY)
    e["kind"], e["type"], e["count"], e["tag"] = cf.KIND_CODE["primitive"], _c.FISRIG_PRIM_SYNC, [40, 3], cf.NO_TAG
    e["flags"] = [cf.CONT, 0]
    t = table.to_table(e, tmp_path / "none.parquet").to_pandas()
    assert list(t["cont"]) == [True, False]
    assert [show.fields_text(r) for r in t.to_dict("records")] == ["x40 (CONT)", "x3"]
