"""Issue 58, section 4: each round of a `pts_iops` step draws new random LBAs, as each round of
the SNIA PTS does (program.h FISRIG_WORKLOAD_SEED_PER_PASS; the VM mixes the loop's pass into
each cell's seed). Before, every round rewrote the LBAs of the round before, in the same
order, and garbage collection found them already invalid."""
import pandas as pd

from fisrig import plan
from fisrig.run import run_plan


def pts_plan(seed: int) -> plan.Plan:
    return plan.from_dict({"plan": {"name": "pts-rounds", "profile": "tiny-1gb", "seed": seed}, "step": [
        {"do": "pts_iops", "label": "IOPS", "block_sizes_kib": [4], "read_pcts": [0], "seconds_per_cell": 0.002,
         "max_rounds": 3, "window": 2, "span_pct": 10}]}, "<test>")


def rounds(run_dir) -> list[pd.Series]:
    """Each round's commands' LBAs, in the order they were sent (a LOOP_PASS record ends a round)."""
    t = pd.read_parquet(run_dir / "records.parquet", columns=["kind", "lba"])
    ends = list(t.index[t.kind == "loop_pass"])
    out, start = [], 0
    for end in ends:
        r = t.iloc[start:end]
        out.append(r.lba[r.kind == "command"].reset_index(drop=True))
        start = end + 1
    return out


def test_each_round_draws_new_lbas(tmp_path):
    run = run_plan(pts_plan(3), tmp_path / "r", quiet=True)
    assert run.status == "done"
    first, second = rounds(tmp_path / "r")[:2]
    n = min(len(first), len(second))
    assert n > 100
    # The same seed each round gave the same LBAs in the same order; fresh ones share few.
    same_place = int((first[:n] == second[:n]).sum())
    shared = len(set(first) & set(second))
    assert same_place <= 2 and shared < n // 10, (same_place, shared, n)


def test_the_rounds_are_the_seeds(tmp_path):
    """The rounds' LBAs come from the plan's seed and the round: the same seed again draws the
    same rounds."""
    for name in ("a", "b"):
        assert run_plan(pts_plan(3), tmp_path / name, quiet=True).status == "done"
    a, b = rounds(tmp_path / "a"), rounds(tmp_path / "b")
    assert len(a) == len(b) >= 2 and all(x.equals(y) for x, y in zip(a, b))


def test_the_report_says_why_a_verdict_is_not_the_pts_one():
    """Short cells are the one reason left (pts.caveats): 60-second cells give the PTS's verdict."""
    from fisrig.analysis import pts
    short = pts.caveats({"seconds_per_cell": 2})
    assert len(short) == 1 and "cells of 2 s, not the PTS's 60 s" in short[0]
    assert pts.caveats({"seconds_per_cell": 60}) == []
