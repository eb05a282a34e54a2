
import pytest


@pytest.fixture(scope="session")
def rig_exe():
    """The rig core's Verilator runner, built once (and kept in build/ between runs)."""
    from fisrig_bench import rig_sim
    return rig_sim.build()


@pytest.fixture(scope="session")
def nvme_exe():
    """The NVMe rig core's Verilator runner (fisrig_bench.nvme_sim), built once."""
    from fisrig_bench import nvme_sim
    return nvme_sim.build()
