
import pytest


@pytest.fixture(scope="session")
def tiny_capacity() -> int:
    from fisrig.targets import ModelTarget, identify_fields
    return identify_fields(ModelTarget("tiny-1gb").identify())["lba48_sectors"]


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """The built-in smoke plan, run once on the model target for every test that reads it."""
    from fisrig import plan
    from fisrig.run import run_plan
    out = tmp_path_factory.mktemp("smoke")
    return run_plan(plan.load(plan.find("smoke-tiny")), out, quiet=True, keep_raw=True)  # tests read its records.bin
