
import pytest


@pytest.fixture(scope="session")
def rig_exe():
    """The rig core's Verilator runner, built once (and kept in build/ between runs)."""
    from fisrig_bench import rig_sim
    return rig_sim.build()
