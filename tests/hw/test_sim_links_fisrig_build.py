"""The simulations link the native build the host's targets use: FISRIG_BUILD's when set
(fisrig_hw.NATIVE_BUILD). An rtl run with FISRIG_BUILD elsewhere once built its SoC there but
linked this checkout's build/, so its device side was another build's than the model's."""
import os
import subprocess
import sys

PROBE = """
import fisrig_hw
from fisrig_hw.sim import litesata_host_sim, rig_sim
from fisrig_hw.soc import soc_build
from fisrig.targets import build_dir
print(fisrig_hw.NATIVE_BUILD, str(build_dir()), soc_build.default_build_dir(),
      soc_build.build.__defaults__[0], rig_sim.build.__defaults__[0], litesata_host_sim.build.__defaults__[2])
"""


def test_every_simulation_build_links_the_build_fisrig_build_names(tmp_path):
    env = dict(os.environ, FISRIG_BUILD=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    native, host, soc_dir, soc_native, rig_native, host_sim_native = out.stdout.split()
    assert native == host == soc_native == rig_native == host_sim_native == str(tmp_path)
    assert soc_dir == os.path.join(str(tmp_path), "rtl", "soc")
