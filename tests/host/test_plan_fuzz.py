"""Generated plans, right and wrong in every way the schema allows, are either compiled (and
estimated) or refused with a PlanError: never any other exception."""
import os
import math
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from fisrig.compile import estimate
from fisrig.compile import compile_plan
from fisrig.plan import PLAN_KEYS, STEP_KEYS, PlanError, from_dict

CAPACITY = 1953120  # the tiny-1gb drive's LBAs
set_hypothesis_home_dir(tempfile.mkdtemp(prefix="fisrig-hypothesis-"))  # not .hypothesis/ in the tree

edge_ints = st.sampled_from([0, 1, 7, 8, 32, 33, 255, 256, 65535, 65536, 65537, CAPACITY - 8, CAPACITY,
                             2**31, 2**32 - 1, 2**32, 2**48 - 1, 2**48, 2**63 - 1, 2**64, -1, -(2**63)])
ints = st.one_of(edge_ints, st.integers(min_value=-10, max_value=70000), st.integers())
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0.0, 0.5, 0.75, 1e-12, 4.0, 128.0, 1e15, -0.0, math.nan, math.inf]))
names = st.sampled_from(["stamp", "zeros", "lfsr", "write", "read", "uniform", "sequential", "zipf", "h2d",
                         "sdb", "ok", "error", "any", "dma_in", "fpdma_out", "power", "", "x", "ZIPF"])
anything = st.one_of(ints, floats, names, st.booleans(), st.none(),
                     st.lists(st.one_of(ints, floats, names), max_size=3),
                     st.lists(st.lists(st.one_of(ints, floats, names), max_size=3), max_size=9),
                     st.dictionaries(names, ints, max_size=2))


def rarely(draw, n: int = 12) -> bool:
    """True about once in n (sampled_from draws evenly; integers() favours their ends)."""
    return draw(st.sampled_from([False] * (n - 1) + [True]))


@st.composite
def value_for(draw, kind):
    """The right type (with edge values) mostly, anything at all now and then."""
    if rarely(draw):
        return draw(anything)
    if kind is bool:
        return draw(st.booleans())
    if kind is int:
        return draw(ints)
    if kind is str:
        return draw(names)
    if kind is list:
        return draw(st.lists(st.lists(st.one_of(ints, floats, names), max_size=3), max_size=9))
    return draw(st.one_of(ints, floats))


@st.composite
def steps(draw):
    do = draw(anything) if rarely(draw) else draw(st.sampled_from(sorted(STEP_KEYS)))
    keys = STEP_KEYS.get(do, {}) if isinstance(do, str) else {}
    chosen = draw(st.lists(st.sampled_from(sorted(keys)), unique=True, max_size=6)) if keys else []
    step = {k: draw(value_for(keys[k])) for k in chosen}
    if not rarely(draw, 20):
        step["do"] = do
    if rarely(draw):
        step[draw(names)] = draw(anything)  # an unknown key
    if rarely(draw, 4):
        step["label"] = draw(names) if not rarely(draw) else draw(anything)
    return step


@st.composite
def plans(draw):
    head = {"name": "fuzz", "profile": "tiny-1gb"}
    for k in draw(st.lists(st.sampled_from(sorted(PLAN_KEYS)), unique=True, max_size=2)):
        head[k] = draw(value_for(PLAN_KEYS[k]))
    data = {"plan": head, "step": draw(st.lists(steps() if not rarely(draw, 30) else anything, min_size=1, max_size=4))}
    if rarely(draw, 40):
        data = draw(st.one_of(anything, st.just({"plna": {}, "step": data["step"]})))
    return data


@settings(max_examples=int(os.environ.get("FISRIG_FUZZ_EXAMPLES", "600")), deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans())
def test_generated_plans_raise_only_plan_errors(data):
    try:
        compiled = compile_plan(from_dict(data, "<fuzz>"), CAPACITY)
    except PlanError as e:
        assert "\n" not in str(e)
        return
    est = estimate.of(compiled.costs, len(compiled.program))
    assert est.records >= 1 and est.disk_bytes_max >= est.disk_bytes > 0


def test_huge_times_are_refused_not_overflowed():
    """What the fuzzer found: a float past 64 bits made infinity in ticks and an
    OverflowError, not a PlanError."""
    for step in ({"do": "power_cut_at", "delay_us": 1.1984620899082106e+300},
                 {"do": "idle", "minutes": 1.9974368165136843e+298}):
        try:
            compile_plan(from_dict({"plan": {"name": "fuzz", "profile": "tiny-1gb"}, "step": [step]}, "<fuzz>"), CAPACITY)
        except PlanError as e:
            assert "wider than 64 bits" in str(e), e
        else:
            raise AssertionError(f"{step} compiled")
