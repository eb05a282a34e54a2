"""The simulations link the native build the host's targets use: FISRIG_BUILD's when set, read
when they are called (fisrig_hw.native.native_build), as the host's targets read it. An rtl run with
FISRIG_BUILD elsewhere once built its SoC there but linked this checkout's build/, so its
device side was another build's than the model's."""
import os

import pytest

from fisrig.targets.native_tools import build_dir
from fisrig_bench import litesata_host_sim, rig_sim
from fisrig_hw.soc import soc_build


def test_every_simulation_build_links_the_build_fisrig_build_names_when_called(tmp_path, monkeypatch):
    # Set after the imports, as scripts/model_pgo_train.py sets it in its own process: an
    # empty build there, so each build stops at the libraries it would link, naming them.
    monkeypatch.setenv("FISRIG_BUILD", str(tmp_path))
    assert build_dir() == tmp_path
    assert soc_build.default_build_dir() == os.path.join(str(tmp_path), "rtl", "soc")
    missing = os.path.join(str(tmp_path), "sim", "device", "libfisrig_device.a")
    for build, error in ((rig_sim.build, rig_sim.RigSimError), (litesata_host_sim.build, litesata_host_sim.LiteSATAHostError),
                         (lambda: soc_build.build(str(tmp_path / "soc")), RuntimeError)):
        with pytest.raises(error, match="make native") as refused:
            build()
        assert missing in str(refused.value)
