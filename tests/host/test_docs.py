"""docs/plans.md names every step kind and every key the plan checker takes."""
from pathlib import Path

from fisrig.plan import PLAN_KEYS, STEP_KEYS

DOC = (Path(__file__).resolve().parents[2] / "docs" / "plans.md").read_text()


def test_every_step_kind_and_key_is_documented():
    missing = [f"[plan] {k}" for k in PLAN_KEYS if f"`{k}`" not in DOC]
    for kind, keys in STEP_KEYS.items():
        if f"| `{kind}` |" not in DOC:
            missing.append(f"do = {kind}")
        missing += [f"{kind}.{k}" for k in keys if f"`{k}`" not in DOC]
    assert not missing, f"docs/plans.md does not mention: {missing}"
