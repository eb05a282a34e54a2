"""Trace replay: every line becomes one command, in order, at the queue depth asked."""
import random
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from fisrig import plan
from fisrig.plan import PlanError
from fisrig.run import run_plan


def write_trace(path: Path, n: int, capacity: int) -> list[tuple[str, int, int]]:
    rng = random.Random(4)
    lines = []
    for _ in range(n):
        op = rng.choices("RWTF", weights=[50, 40, 8, 2])[0]
        sectors = rng.choice([8, 16, 64, 256])
        lines.append((op, rng.randrange(0, capacity - sectors) // 8 * 8, sectors))
    path.write_text("# op,lba,sectors\n" + "\n".join(f"{o},{l},{s}" for o, l, s in lines) + "\n")
    return lines


def test_replay_issues_every_line(tmp_path, tiny_capacity):
    lines = write_trace(tmp_path / "t.csv", 3000, tiny_capacity)
    p = plan.from_dict({"plan": {"name": "r", "profile": "tiny-1gb"},
                        "step": [{"do": "replay", "label": "trace", "trace": str(tmp_path / "t.csv")}]})
    r = run_plan(p, tmp_path / "run", quiet=True)
    assert r.status == "done"
    t = pq.read_table(tmp_path / "run" / "records.parquet")
    kind = t.column("kind").to_numpy(zero_copy_only=False)
    cmd = t.column("command").to_numpy()[kind == "command"]
    lba = t.column("lba").to_numpy()[kind == "command"]
    assert len(cmd) == 3000
    want = {"R": 0x60, "W": 0x61, "T": 0x64, "F": 0xEA}
    assert sorted(cmd.tolist()) == sorted(want[o] for o, _, _ in lines)
    data = np.isin(cmd, [0x60, 0x61, 0x64])
    assert sorted(lba[data].tolist()) == sorted(l for o, l, _ in lines if o != "F")
    assert (t.column("result").to_numpy(zero_copy_only=False)[kind == "command"] == "ok").all()


def test_trace_line_past_the_end_is_refused_with_its_line(tmp_path, tiny_capacity):
    (tmp_path / "bad.csv").write_text(f"R,0,8\nW,{tiny_capacity - 4},8\n")
    p = plan.from_dict({"plan": {"name": "r", "profile": "tiny-1gb"},
                        "step": [{"do": "replay", "trace": str(tmp_path / "bad.csv")}]})
    with pytest.raises(PlanError) as e:
        run_plan(p, tmp_path / "run", quiet=True)
    assert e.value.line == 2 and "past the drive's last LBA" in e.value.message
    assert not (tmp_path / "run").exists()


def test_fast_and_careful_readers_agree(tmp_path, tiny_capacity):
    from fisrig import traces as trace
    lines = write_trace(tmp_path / "t.csv", 5000, tiny_capacity)
    fast = trace._fast(tmp_path / "t.csv", tiny_capacity)
    assert fast is None  # the header comment sends it to the careful reader
    body = "\n".join(f"{o},{l},{s}" for o, l, s in lines) + "\n"
    (tmp_path / "plain.csv").write_text(body)
    fast = trace._fast(tmp_path / "plain.csv", tiny_capacity)
    careful = trace._careful(tmp_path / "plain.csv", tiny_capacity)
    assert fast is not None and len(fast) == 5000
    flush = careful["op"] == 3
    np.testing.assert_array_equal(fast["op"], careful["op"])
    np.testing.assert_array_equal(fast["lba"], careful["lba"])
    np.testing.assert_array_equal(fast["sectors"][~flush], careful["sectors"][~flush])


def test_fast_reader_hands_bad_lines_to_the_careful_one(tmp_path, tiny_capacity):
    (tmp_path / "bad.csv").write_text("R,0,8\nR,8,8\nX,16,8\n")
    with pytest.raises(PlanError) as e:
        from fisrig import traces as trace
        trace.load(tmp_path / "bad.csv", tiny_capacity)
    assert e.value.line == 3
