"""Plans are refused before anything runs, with the file, the line and what is wrong."""
import textwrap

import pytest

from fisrig import plan
from fisrig.compile import compile_plan
from fisrig.plan import PlanError

HEAD = """\
[plan]
name = "t"
profile = "tiny-1gb"
"""


def load(tmp_path, body: str) -> plan.Plan:
    p = tmp_path / "t.toml"
    p.write_text(HEAD + textwrap.dedent(body))
    return plan.load(p)


def refused(tmp_path, body: str, capacity: int) -> PlanError:
    with pytest.raises(PlanError) as e:
        compile_plan(load(tmp_path, body), capacity)
    return e.value


def test_unknown_key_names_file_and_line(tmp_path):
    with pytest.raises(PlanError) as e:
        load(tmp_path, """
            [[step]]
            do = "workload"
            queue_dpeth = 4
            """)
    assert e.value.line == 7
    assert str(e.value).startswith(f"{tmp_path / 't.toml'}:7: step 1 (workload): unknown key 'queue_dpeth'")


def test_unknown_step_kind(tmp_path):
    with pytest.raises(PlanError) as e:
        load(tmp_path, '[[step]]\ndo = "defrag"\n')
    assert e.value.line == 5 and "defrag" in e.value.message


def test_queue_depth_over_32(tmp_path, tiny_capacity):
    e = refused(tmp_path, """
        [[step]]
        do = "workload"
        seconds = 1
        queue_depth = 64
        """, tiny_capacity)
    assert e.line == 8 and "queue_depth 64 is over 32" in e.message


def test_span_past_capacity(tmp_path, tiny_capacity):
    e = refused(tmp_path, f"""
        [[step]]
        do = "workload"
        commands = 10
        lba_start = {tiny_capacity - 8}
        lba_count = 16
        """, tiny_capacity)
    assert e.line == 9 and "past the drive's last LBA" in e.message


def test_raw_lba_past_capacity_unless_an_error_is_expected(tmp_path, tiny_capacity):
    body = f"""
        [[step]]
        do = "raw"
        command = 0x25
        lba = {tiny_capacity}
        count = 8
        """
    e = refused(tmp_path, body, tiny_capacity)
    assert e.line == 8
    compile_plan(load(tmp_path, body + 'expect = "error"\nexpect_error = 0x10\n'), tiny_capacity)


def test_transfer_not_a_multiple_of_512(tmp_path, tiny_capacity):
    e = refused(tmp_path, """
        [[step]]
        do = "workload"
        commands = 10
        transfer_kib = 0.75
        """, tiny_capacity)
    assert e.line == 8 and "multiple of 512 bytes" in e.message


def test_expectation_that_cannot_match(tmp_path, tiny_capacity):
    e = refused(tmp_path, """
        [[step]]
        do = "raw"
        command = 0xEA
        expect = "ok"
        expect_status = 0x51
        """, tiny_capacity)
    assert e.line == 9 and "cannot match" in e.message
    e = refused(tmp_path, """
        [[step]]
        do = "raw"
        command = 0xEA
        expect = "error"
        expect_status = 0x50
        """, tiny_capacity)
    assert "cannot match a status without ERR" in e.message


def test_workload_needs_one_stop(tmp_path, tiny_capacity):
    e = refused(tmp_path, """
        [[step]]
        do = "workload"
        commands = 10
        minutes = 1
        """, tiny_capacity)
    assert "exactly one of" in e.message


def test_toml_syntax_error_has_its_line(tmp_path):
    with pytest.raises(PlanError) as e:
        load(tmp_path, '[[step]]\ndo = = "fill"\n')
    assert e.value.line == 5


def test_same_plan_from_python():
    p = plan.from_dict({"plan": {"name": "py"}, "step": [{"do": "fill"}, {"do": "trim", "queued": True}]})
    program = compile_plan(p, 1 << 21).program
    assert program[:4] == b"FSRP"
    with pytest.raises(PlanError, match="unknown key 'qd'"):
        plan.from_dict({"step": [{"do": "fill", "qd": 3}]})


def test_a_label_names_one_phase(tmp_path):
    """Two steps with one label, another step between them, were merged into one phase
    without a word; refused naming both lines. Steps in a row under one label are one phase
    (as a step without a label continues the phase before it: SNIA PTS's two precondition
    fills), and so is what a step repeats within itself (issue 58, section 6)."""
    with pytest.raises(PlanError) as e:
        load(tmp_path, """
            [[step]]
            do = "fill"
            label = "fill"

            [[step]]
            do = "idle"
            label = "rest"
            seconds = 1

            [[step]]
            do = "fill"
            label = "fill"
            """)
    assert str(e.value) == (f"{tmp_path / 't.toml'}:16: step 3 (fill): label 'fill' is already step 1's (line 7); "
                            "a phase label names one step, or steps in a row")
    with pytest.raises(PlanError) as e:  # an unlabelled first step's phase is its kind
        load(tmp_path, '[[step]]\ndo = "secure_erase"\n\n[[step]]\ndo = "flush"\nlabel = "f"\n\n'
                       '[[step]]\ndo = "trim"\nlabel = "secure_erase"\n')
    assert str(e.value).endswith(":13: step 3 (trim): label 'secure_erase' is already step 1's (line 4), which has "
                                 "no label: its phase is its kind's; a phase label names one step, or steps in a row")
    with pytest.raises(PlanError, match=r"^<plan>: step 3 \(fill\): label 'a' is already step 1's; "):  # from Python
        plan.from_dict({"step": [{"do": "fill", "label": "a"}, {"do": "flush", "label": "b"},
                                 {"do": "fill", "label": "a"}]})
    one = load(tmp_path, """
        [[step]]
        do = "fill"
        label = "precondition"

        [[step]]
        do = "fill"
        label = "precondition"

        [[step]]
        do = "pts_iops"
        label = "IOPS"
        block_sizes_kib = [4]
        read_pcts = [0]
        """)
    assert [s.label for s in one.steps] == ["precondition", "precondition", "IOPS"]
    assert "precondition" in compile_plan(one, 1 << 21).markers.values()
    replayed = plan.from_dict({"step": [{"do": "secure_erase", "label": "secure erase"},  # what `fisrig replay` makes
                                        {"do": "replay", "label": "t", "trace": "t.csv"}]})
    assert [s.label for s in replayed.steps] == ["secure erase", "t"]


def test_builtin_plans_compile_for_their_drives():
    from fisrig.targets import ModelTarget, identify_fields
    for name, path in plan.builtin_plans().items():
        p = plan.load(path)
        cap = identify_fields(ModelTarget(p.profile).identify())["lba48_sectors"]
        compiled = compile_plan(p, cap)
        assert len(compiled.markers) >= 3, name


def test_plan_keys_set_from_the_command_line(tmp_path):
    """`run --set KEY=VALUE`: a [plan] key for one run, checked as in the file; one line naming
    the --set for each mistake."""
    from fisrig.errors import InputError
    p = plan.from_dict({"plan": {"name": "x"}, "step": [{"do": "flush"}]})
    plan.with_settings(p, ["data=lfsr", "compress_pct=25", "seed=7", "name=other"])
    assert (p.data, p.compress_pct, p.seed, p.name) == ("lfsr", 25, 7, "other")
    for bad, what in [("data=bogus", "not valid"), ("compress_pct=101", "0..100"), ("seed=-1", "negative"),
                      ("foo=1", "unknown [plan] key"), ("nokey", "KEY=VALUE"), ("seed=x", "whole number"),
                      ("name=a/b", "without '/'")]:
        with pytest.raises(InputError) as e:
            plan.with_settings(p, [bad])
        assert e.value.where == f"--set {bad}" and what in e.value.message, (bad, str(e.value))
    f = tmp_path / "d.toml"
    f.write_text('[plan]\nname = "x"\ndata = "x"\n[[step]]\ndo = "flush"\n')
    with pytest.raises(PlanError, match=r":3: \[plan\]: data = 'x' is not valid"):
        plan.load(f)
