"""The link's falls and rises on both targets (host_phy.h): a COMRESET step, a power-off
and power-on, and a command that times out (the engine's COMRESET) with a workload after it
that waits for the link and goes on. The gateware records each fall and each signature as
an event record (FISRIG_EVENT_REC_LINK_DOWN, _UP); the model must record the same, in the
same order, at the same distance from what caused it: LiteSATA's PHY sees a quiet drive
after its align timer and holds the link back 5 ms after OOB. The rtl target boots its drive
in 100 us and says so (run.json's faults); the model is given the same knob."""
import json

import pandas as pd
import pytest

from fisrig import plan as plan_mod
from fisrig.run import run_plan

DOWN, UP = 0xF1, 0xF2
PLAN = {
    "plan": {"name": "link-events", "profile": "fast-1gb", "on_error": "requeue"},
    "step": [
        {"do": "raw", "label": "read", "command": 0x25, "count": 1, "expect": "any"},
        {"do": "comreset", "label": "reset"},
        {"do": "power_off", "label": "off"},
        {"do": "power_on", "label": "on"},
        {"do": "raw", "label": "timeout", "command": 0x35, "count": 1, "protocol": "dma_in",
         "expect": "any", "timeout_ms": 1},
        {"do": "workload", "label": "after", "pattern": "uniform", "read_pct": 100, "commands": 20,
         "queue_depth": 4},
    ],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for target in ("rtl", "model"):
        r = run_plan(plan_mod.from_dict(PLAN), tmp_path_factory.mktemp(target) / "run", target=target,
                     faults=["boot_us=100"] if target == "model" else None, quiet=True)
        assert r.status == "done", r.outcome
        out[target] = (pd.read_parquet(r.run_dir / "records.parquet"), json.loads((r.run_dir / "run.json").read_text()))
    return out


def _shape(df):
    return [(m, k, t if k == "power" and c == 0 else c, res)
            for m, k, c, t, res in zip(df.marker, df.kind, df.command, df.tag, df.result) if k != "end"]


def test_the_rtl_run_says_its_drive_boots_in_100_us(runs):
    assert "boot_us=100" in runs["rtl"][1]["faults"]


def test_both_targets_record_the_same_falls_rises_and_commands(runs):
    rtl, model = (_shape(runs[t][0]) for t in ("rtl", "model"))
    assert rtl == model
    events = [(m, code) for m, k, code, _ in rtl if k == "power" and code in (DOWN, UP)]
    assert events == [("reset", DOWN), ("reset", UP), ("on", DOWN), ("on", UP), ("timeout", DOWN), ("after", UP)]
    # The workload found the link down, waited for it and went on: its commands ended OK after.
    assert [res for m, k, _, res in rtl if m == "after" and k == "command"][-16:] == ["ok"] * 16


def _times(df):
    """Each rise from what caused it (the COMRESET or POWER ON's submit, or the fall before
    it), each fall from its cause (the COMRESET's submit, or the power-off or timeout record
    before it), each link wait's end from its rise."""
    rows = df[df.kind != "end"].reset_index(drop=True)
    out, last_fall = [], None
    for i, r in rows.iterrows():
        event = r.kind == "power" and r.command == 0 and r.tag in (DOWN, UP)
        if event and r.tag == DOWN:
            reset = rows[(rows.marker == r.marker) & (rows.kind == "link") & (rows.command == 1)]
            before = rows[(rows.index < i) & (((rows.kind == "power") & (rows.command == 1)) | (rows.result == "timeout"))]
            cause = reset.t_submit_ns.iloc[0] if len(reset) else before.t_status_ns.iloc[-1]
            out.append(("fall", r.marker, r.t_status_ns - cause))
            last_fall = r.t_status_ns
        elif event:
            ops = rows[(rows.marker == r.marker) & (((rows.kind == "link") & (rows.command == 1)) |
                                                    ((rows.kind == "power") & (rows.command == 2)))]
            cause = ops.t_submit_ns.iloc[0] if len(ops) else last_fall
            out.append(("rise", r.marker, r.t_status_ns - cause))
            waited = rows[(rows.index > i) & (rows.kind.isin(["power", "link"])) & (rows.command != 0)]
            if len(waited) and waited.t_submit_ns.iloc[0] < r.t_status_ns:
                out.append(("wait", r.marker, waited.t_status_ns.iloc[0] - r.t_status_ns))
    return out


def test_the_link_falls_and_comes_back_when_it_does_on_the_gateware(runs):
    rtl, model = (_times(runs[t][0]) for t in ("rtl", "model"))
    assert [x[:2] for x in rtl] == [x[:2] for x in model]
    for (what, marker, a), (_, _, b) in zip(rtl, model):
        # A rise is 5 ms of the PHY's and the OOB handshake: within 0.01%. A fall waits for
        # the PHY's align timer, which runs from the drive's last ALIGN (one every 256
        # dwords, 1.7 us at Gen3: the model takes the mean); a wait's end is the sequencer's.
        tol = 0.0001 * a if what == "rise" else 1000
        assert abs(a - b) <= tol, (what, marker, a, b)
