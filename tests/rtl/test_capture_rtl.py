"""The analyzer's capture on the gateware (engine/capture.py in the rig SoC, read out through
the bridge: capture/ring.py), held to an independent monitor of the same pins: the wire taps
(engine/wire_tap.py), whose ticks are every record's stamps. Every stamped FIS of every
command in the window is in the capture at its stamp's tick, with its type and direction; and
the model target's capture of the same plan gives each of those commands the same FISes in
the same order (primitives aside). Seconds once the SoC is built."""
import pandas as pd

from fisrig import plan
from fisrig.run import run_plan

NS_PER_DWORD = 20 / 3
STEPS = [
    {"do": "identify", "label": "identify"},
    {"do": "workload", "label": "ncq", "read_pct": 50, "transfer_kib": 16, "queue_depth": 4, "lba_count": 4096,
     "commands": 24, "capture": {"trigger": "command:0x61", "before_us": 5, "after_us": 250}},
    {"do": "workload", "label": "dma", "read_pct": 50, "transfer_kib": 16, "queue_depth": 1, "ncq": False,
     "lba_count": 4096, "commands": 8},
    {"do": "flush", "label": "flush"},
]
# The FIS each stamp names (engine_if.h), as capture.parquet names it.
STAMPED = {"t_h2d_ns": ("reg_h2d", "to_device"), "t_accept_ns": ("reg_d2h", "to_host")}


def run(tmp_path, target):
    r = run_plan(plan.from_dict({"plan": {"name": "capture-rtl", "profile": "tiny-1gb"}, "step": STEPS}),
                 tmp_path / target, target=target, quiet=True)
    assert r.status == "done", (target, r.outcome)
    return pd.read_parquet(r.run_dir / "records.parquet"), pd.read_parquet(r.run_dir / "capture.parquet")


def in_window(rec, cap):
    t = cap.iloc[0]
    first, last = int(t["dwords"][1]), int(t["dwords"][3])
    lo, hi = round(first * NS_PER_DWORD), round(last * NS_PER_DWORD)
    c = rec[(rec["kind"] == "command") & (rec["t_h2d_ns"] >= lo) & (rec["t_status_ns"] <= hi) & (rec["t_h2d_ns"] > 0)]
    return c


def test_the_gateware_s_capture_holds_every_stamped_fis_at_its_tick(tmp_path):
    rec, cap = run(tmp_path, "rtl")
    t = cap.iloc[0]
    assert (t["kind"], t["name"]) == ("trigger", "command") and not t["modelled"]
    assert not cap["modelled"].any() and not t["cut_short"]
    fis = cap[cap["kind"] == "fis"]
    assert (cap[cap["kind"] == "primitive"]["count"] > 0).all() and {"SYNC", "R_OK", "X_RDY"} <= set(cap["name"])
    commands = in_window(rec, cap)
    assert len(commands) >= 4
    at = {(int(r.t_ns), r.name, r.direction) for r in fis.itertuples()}
    for c in commands.itertuples():
        assert (int(c.t_h2d_ns), "reg_h2d", "to_device") in at, c
        queued = c.command in (0x60, 0x61)
        if queued:
            assert (int(c.t_accept_ns), "reg_d2h", "to_host") in at, c
            assert (int(c.t_setup_ns), "dma_setup", "to_host") in at, c
            assert (int(c.t_status_ns), "set_device_bits", "to_host") in at, c
        if c.data_dwords:
            side = "to_device" if c.command in (0x61, 0x35) else "to_host"
            first = [r for r in fis.itertuples() if r.name == "data" and r.direction == side and
                     abs(r.t_ns + NS_PER_DWORD - c.t_data_first_ns) <= 1]
            assert first, c
    # The H2Ds in the window are the records' own: nothing the monitor missed, nothing made up.
    window = fis[(fis["name"] == "reg_h2d") & (fis["t_ns"] >= commands["t_h2d_ns"].min()) &
                 (fis["t_ns"] <= commands["t_h2d_ns"].max())]
    assert sorted(window["t_ns"]) == sorted(rec[(rec["t_h2d_ns"] >= commands["t_h2d_ns"].min()) &
                                                (rec["t_h2d_ns"] <= commands["t_h2d_ns"].max())]["t_h2d_ns"])


def test_model_and_gateware_capture_the_same_fis_sequence(tmp_path):
    # One command at a time, so that the FIS sequence is the protocol's alone: queued and
    # non-queued writes and reads (at QD4 the two targets' issue times, within 2% of each
    # other, interleave the commands' FISes differently).
    steps = [{"do": "workload", "label": "mixed", "read_pct": 50, "transfer_kib": 16, "queue_depth": 1,
              "lba_count": 4096, "commands": 12, "capture": {"trigger": "command:0x61", "before_us": 0,
                                                             "after_us": 200}},
             {"do": "workload", "label": "dma", "read_pct": 50, "transfer_kib": 16, "queue_depth": 1, "ncq": False,
              "lba_count": 4096, "commands": 6}]
    seqs = {}
    for target in ("model", "rtl"):
        r = run_plan(plan.from_dict({"plan": {"name": "capture-qd1", "profile": "tiny-1gb"}, "step": steps}),
                     tmp_path / target, target=target, quiet=True)
        assert r.status == "done", (target, r.outcome)
        cap = pd.read_parquet(r.run_dir / "capture.parquet")
        fis = cap[cap["kind"] == "fis"].sort_values("tick", kind="stable")
        seqs[target] = [(f.name, f.direction, int(f.count), int(f.dwords[0]) & 0xFFFF) for f in fis.itertuples()]
    n = min(map(len, seqs.values()))
    assert n >= 30
    assert seqs["rtl"][:n] == seqs["model"][:n]


def test_a_fault_fires_the_gateware_s_trigger_with_the_fault_inside(tmp_path):
    # R_ERR: the drive's device side answers frames R_ERR (its r_err_rate knob).
    writes = {"do": "workload", "label": "writes", "read_pct": 0, "transfer_kib": 16, "queue_depth": 4,
              "lba_count": 4096, "commands": 40}
    p = plan.from_dict({"plan": {"name": "capture-r-err", "profile": "tiny-1gb", "on_error": "retry"},
                        "step": [{**writes, "capture": {"trigger": "r_err", "before_us": 10, "after_us": 20}}]})
    r = run_plan(p, tmp_path / "r_err", target="rtl", quiet=True, faults=["r_err_rate=0.1"])
    cap = pd.read_parquet(r.run_dir / "capture.parquet")
    t = cap.iloc[0]
    assert t["name"] == "r_err"
    r_err = cap[(cap["kind"] == "primitive") & (cap["name"] == "R_ERR")]
    assert len(r_err) and r_err["tick"].min() == t["tick"]  # the window holds the R_ERR that fired it
    # The power cut: the trigger's tick is the cut's, as its record says.
    p = plan.from_dict({"plan": {"name": "capture-cut", "profile": "tiny-1gb"}, "step": [
        {"do": "power_cut_at", "event": "data", "count": 6, "delay_us": 2,
         "capture": {"trigger": "power_cut", "before_us": 20, "after_us": 5}},
        {**writes, "commands": 20}, {"do": "power_on", "label": "back"}]})
    r = run_plan(p, tmp_path / "cut", target="rtl", quiet=True)
    rec, cap = pd.read_parquet(r.run_dir / "records.parquet"), pd.read_parquet(r.run_dir / "capture.parquet")
    cut = int(rec.loc[(rec["kind"] == "power") & (rec["tag"] == 240), "t_status_ns"].iloc[0])
    assert cap.iloc[0]["name"] == "power_cut" and cap.iloc[0]["t_ns"] == cut
    data = cap[(cap["name"] == "data") & (cap["t_ns"] < cut)]
    assert len(data) and (cap["t_ns"] >= cut - 20_000).all()


def test_a_trim_s_range_list_is_decoded_from_the_captured_payload(tmp_path, capsys):
    from cli_in_process import fisrig
    p = plan.from_dict({"plan": {"name": "capture-dsm", "profile": "tiny-1gb"}, "step": [
        {"do": "trim", "lba_start": 1000, "lba_count": 800,
         "capture": {"trigger": "command:0x06", "before_us": 0, "after_us": 50}}]})
    r = run_plan(p, tmp_path / "dsm", target="rtl", quiet=True)
    code, out, err = fisrig(["capture", "show", str(r.run_dir)], capsys)
    assert code == 0, err
    h2d = [l for l in out.splitlines() if "DATA_SET_MANAGEMENT (06h)" in l]
    data = [l for l in out.splitlines() if " H>D " in l and "Data       512 bytes" in l]
    # Without payload dwords the first 3 ranges alone are known: the listing says so.
    assert len(h2d) == 1 and data and data[0].endswith("ranges 1000+800, ... (the first captured)")


def test_a_trim_s_whole_range_list_is_in_the_payload_the_capture_kept(tmp_path, capsys):
    """Armed with payload dwords, the gateware keeps a Data FIS's dwords past its first 7: a
    TRIM of 13 ranges (a sector of 64, the rest padding) is listed whole, and its payload dumped."""
    from cli_in_process import fisrig
    count = 12 * 65535 + 100
    p = plan.from_dict({"plan": {"name": "capture-dsm-payload", "profile": "tiny-1gb"}, "step": [
        {"do": "trim", "lba_start": 1000, "lba_count": count,
         "capture": {"trigger": "command:0x06", "before_us": 0, "after_us": 50, "payload_dwords": 2042}}]})
    r = run_plan(p, tmp_path / "dsm", target="rtl", quiet=True)
    assert r.status == "done", r.outcome
    cap = pd.read_parquet(r.run_dir / "capture.parquet")
    data = cap[(cap["name"] == "data") & (cap["direction"] == "to_device")].iloc[0]
    assert data["count"] == 129 and len(data["payload"]) == (129 - 7) * 4  # 128 dwords of ranges, the CRC left out
    assert cap["payload"].notna().sum() == 1  # the H2D and D2H are shorter than 7 dwords
    code, out, err = fisrig(["capture", "show", str(r.run_dir), "--payload"], capsys)
    assert code == 0, err
    want = ", ".join(f"{1000 + 65535 * k}+{65535}" for k in range(12)) + f", {1000 + 12 * 65535}+100"
    line = next(l for l in out.splitlines() if " H>D " in l and "Data" in l)
    assert line.endswith(f"ranges {want} (payload 488 bytes kept)"), line
    dump = out.splitlines()[out.splitlines().index(line) + 1:][:31]
    assert [l.split()[0] for l in dump] == [f"{28 + 16 * k:04x}" for k in range(31)]  # 488 bytes, 16 a line
    assert all(l.startswith(" " * 34) for l in dump)
    # Byte 28 on: dwords 7 and 8, the fourth range (LBA 197605, 65535 sectors), little-endian.
    assert dump[0].split()[1:3] == [(197605).to_bytes(4, "little").hex(), (65535 << 16).to_bytes(4, "little").hex()]


def windows_of(cap):
    """Each window's trigger row and entries, by window."""
    return {int(w): (g.iloc[0], g.iloc[1:]) for w, g in cap.groupby("window", sort=True)}


def test_a_record_s_result_fires_the_trigger_at_its_status_on_both_targets(tmp_path):
    # An NCQ error (UNC on the drive's media): the "error" trigger fires at its error SDB, as
    # the model's does, and the window holds the engine's log read; one command at a time,
    # so the FIS sequence is the protocol's alone and the same on both targets.
    steps = [{"do": "workload", "label": "reads", "read_pct": 100, "transfer_kib": 4, "queue_depth": 1,
              "lba_start": 0, "lba_count": 64, "commands": 24, "pattern": "sequential",
              "capture": {"trigger": "error", "before_us": 5, "after_us": 40}}]
    seqs = {}
    for target in ("model", "rtl"):
        p = plan.from_dict({"plan": {"name": "capture-error", "profile": "tiny-1gb", "on_error": "requeue"},
                            "step": steps})
        r = run_plan(p, tmp_path / target, target=target, quiet=True, faults=["unc=40+8"])
        assert r.status == "done", (target, r.outcome)
        rec, cap = pd.read_parquet(r.run_dir / "records.parquet"), pd.read_parquet(r.run_dir / "capture.parquet")
        t, w = windows_of(cap)[0]
        assert t["name"] == "error" and not t["cut_short"], (target, t)
        sdb = w[(w["tick"] == t["tick"]) & (w["name"] == "set_device_bits")]
        assert len(sdb) == 1 and int(sdb["status"].iloc[0]) & 1, (target, w)  # ERR: the error SDB
        failed = rec[rec["result"] == "ata_error"]
        assert len(failed) and failed["t_status_ns"].min() > t["t_ns"], target  # its record ends at the log read
        fis = w[w["kind"] == "fis"]
        seqs[target] = [(f.name, f.direction, int(f.count)) for f in fis.itertuples()]
        assert ("reg_h2d", "to_device", 5) in seqs[target][seqs[target].index(("set_device_bits", "to_host", 2)):]
    assert seqs["rtl"] == seqs["model"]


def test_several_windows_and_armings_on_the_gateware_each_drained_as_the_run_goes(tmp_path):
    ncq = {"do": "workload", "read_pct": 50, "transfer_kib": 16, "queue_depth": 4, "lba_count": 4096}
    p = plan.from_dict({"plan": {"name": "capture-windows", "profile": "tiny-1gb"}, "step": [
        {**ncq, "label": "first", "commands": 64, "capture": {"trigger": "fis:sdb", "before_us": 2, "after_us": 10,
                                                             "windows": 3}},
        {**ncq, "label": "second", "commands": 16, "capture": {"trigger": "command:0x60", "before_us": 0,
                                                              "after_us": 20}}]})
    r = run_plan(p, tmp_path / "rtl", target="rtl", quiet=True)
    assert r.status == "done", r.outcome
    rec, cap = pd.read_parquet(r.run_dir / "records.parquet"), pd.read_parquet(r.run_dir / "capture.parquet")
    ws = windows_of(cap)
    assert sorted(ws) == [0, 1, 2, 3]
    for k, (t, w) in ws.items():
        name = "fis" if k < 3 else "command"
        assert t["name"] == name, (k, t)
        first, last = int(t["dwords"][1]), int(t["dwords"][3])
        assert len(w) and (w["tick"] >= first).all() and (w["tick"] <= last).all(), k
        fired = w[w["tick"] == t["tick"]]
        want = "set_device_bits" if k < 3 else "reg_h2d"
        assert want in set(fired["name"]), (k, fired)
    # Each window after the first of its arming starts past the one before; the second
    # step's starts within it, past the first step's last command.
    ticks = [int(ws[k][0]["tick"]) for k in range(4)]
    assert ticks == sorted(ticks) and ticks[1] > ticks[0] + int(ws[0][0]["dwords"][3]) - ticks[0]
    second = rec[(rec["marker"] == "second") & (rec["kind"] == "command")]
    assert second["t_h2d_ns"].min() <= ws[3][0]["t_ns"] <= second["t_status_ns"].max()
    # The triggers the gateware did not look for while it held a window (the host's read of
    # it takes some 100 us of the rig's time, an SDB comes every 20 or so) are counted, and
    # the run says so when there were any (tests/hw/test_capture_gateware.py counts them
    # tick by tick).
    missed = sum(int(ws[k][0]["dwords"][6]) for k in range(3))
    said = [n for n in r.outcome.notes if "came while the gateware held" in n]
    assert said == [] if not missed else said[0].startswith(f"{missed} capture trigger")
