import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "hw"))


@pytest.fixture(scope="session")
def rig_exe():
    """The rig core's Verilator runner, built once (and kept in build/ between runs)."""
    from fisrig_hw import rig_sim
    return rig_sim.build()
