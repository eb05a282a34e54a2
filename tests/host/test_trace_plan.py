"""A plan's replay step (docs/plans.md): a trace file in any format, or a generated trace made
for the drive when the plan compiles; exactly one of the two, each mistake named with its
plan line."""
from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from fisrig import plan, traces as trace
from fisrig.traces import generate as trace_gen
from fisrig import program_format as pf
from fisrig.compile import compile_plan
from fisrig.plan import PlanError
from fisrig.run import run_plan

CAP = 1 << 22


def one(step: dict, seed: int = 1):
    return plan.from_dict({"plan": {"name": "r", "profile": "tiny-1gb", "seed": seed},
                           "step": [{"do": "replay", **step}]})


def test_a_generated_trace_is_made_for_the_drive_at_compile_time(tmp_path):
    c = compile_plan(one({"generator": "client", "commands": 5000, "seed": 9}), CAP)
    want = trace_gen.generate("client", CAP, 5000, seed=9)
    assert c.costs[-1].commands == 5000
    assert c.costs[-1].data_bytes == want["sectors"][want["op"] < pf.TRACE_OPS["T"]].sum() * 512
    assert want.tobytes() in c.program
    assert not list(tmp_path.iterdir())  # no file written
    # A run writes the program's pieces as they are: the same bytes as the program joined.
    c.write(tmp_path / "program.bin")
    assert (tmp_path / "program.bin").read_bytes() == c.program and c.size == len(c.program)


def test_the_default_seed_is_the_plans_and_the_default_length_a_pass():
    c = compile_plan(one({"generator": "enterprise"}, seed=4), CAP)
    n = trace_gen.default_commands("enterprise", CAP)
    assert c.costs[-1].commands == n
    assert trace_gen.generate("enterprise", CAP, n, seed=4).tobytes() in c.program


def test_replays_of_one_generator_hold_its_trace_once():
    steps = [{"do": "replay", "generator": "client", "commands": 3000, "ncq": ncq, "queue_depth": qd}
             for ncq, qd in ((False, 1), (True, 32))]
    two = compile_plan(plan.from_dict({"plan": {"name": "r"}, "step": steps}), CAP)
    single = compile_plan(plan.from_dict({"plan": {"name": "r"}, "step": steps[:1]}), CAP)
    assert len(two.program) - len(single.program) < 100  # the second replay points at the first one's entries
    assert [c.commands for c in two.costs[-2:]] == [3000, 3000]


def test_a_trace_file_is_read_in_the_format_asked(tmp_path):
    (tmp_path / "t.csv").write_text("time,op,lba,length\n0,W,0,8\n1,T,64,8\n")
    c = compile_plan(one({"trace": str(tmp_path / "t.csv"), "format": "csv"}), CAP)
    assert c.costs[-1].commands == 2
    c = compile_plan(one({"trace": str(tmp_path / "t.csv")}), CAP)  # auto
    assert c.costs[-1].commands == 2


@pytest.mark.parametrize("step,key,what", [
    ({}, None, "replay needs exactly one of trace = \"file\" and generator"),
    ({"trace": "t.csv", "generator": "client"}, "generator", "replay needs exactly one of"),
    ({"generator": "clients"}, "generator", "generator = 'clients' is not valid (closest: 'client'"),
    ({"generator": "client", "format": "csv"}, "format", "format is for trace files"),
    ({"generator": "client", "commands": 0}, "commands", "commands = 0: at least 1"),
    ({"trace": "t.csv", "commands": 10}, "commands", "commands is for generated traces"),
    ({"trace": "t.csv", "seed": 3}, "seed", "seed is for generated traces"),
    ({"trace": "t.csv", "format": "xml"}, "format", "format = 'xml' is not valid (closest:"),
])
def test_replay_mistakes_are_named_with_their_line(tmp_path, step, key, what):
    (tmp_path / "t.csv").write_text("W,0,8\n")
    body = "\n".join(f"{k} = {v!r}".replace("'", '"') for k, v in step.items())
    p = tmp_path / "p.toml"
    p.write_text(f'[plan]\nname = "r"\n\n[[step]]\ndo = "replay"\n{body}\n')
    with pytest.raises(PlanError) as e:
        compile_plan(plan.load(p), CAP)
    assert what in e.value.message, e.value.message
    lines = p.read_text().splitlines()
    want = next(i for i, l in enumerate(lines, 1) if l.startswith(f"{key} =" if key else "[[step]]"))
    assert e.value.line == want and e.value.source == str(p)


def test_a_bad_trace_line_names_the_trace_and_its_line(tmp_path):
    (tmp_path / "t.csv").write_text("time,op,lba,length\n0,W,0,8\n1,W,0,0\n")
    with pytest.raises(PlanError) as e:
        compile_plan(one({"trace": str(tmp_path / "t.csv")}), CAP)
    assert e.value.source == str(tmp_path / "t.csv") and e.value.line == 3


def test_a_generated_trace_replays_on_the_model(tmp_path, tiny_capacity):
    r = run_plan(one({"generator": "client", "commands": 2000, "label": "jedec"}), tmp_path / "run", quiet=True)
    assert r.status == "done"
    t = pq.read_table(tmp_path / "run" / "records.parquet")
    kind = t.column("kind").to_numpy(zero_copy_only=False)
    cmd = t.column("command").to_numpy()[kind == "command"]
    e = trace_gen.generate("client", tiny_capacity, 2000, seed=1)
    want = {pf.TRACE_OPS["W"]: 0x61, pf.TRACE_OPS["T"]: 0x64, pf.TRACE_OPS["F"]: 0xEA}
    assert sorted(cmd.tolist()) == sorted(want[o] for o in e["op"].tolist())
    assert (t.column("result").to_numpy(zero_copy_only=False)[kind == "command"] == "ok").all()
    assert trace.stats(e, tiny_capacity)["writes"] == int((cmd == 0x61).sum())
