"""The rig SoC as built gives the Zephyr overlay tests/host/test_zephyr_overlay.py holds to
its golden file: the fixture csr.json there is this SoC's (issue 18). A change to the SoC's
CSRs, memories or interrupts shows here first: copy the built csr.json over the fixture and
the overlay made from it over the golden file, and read the difference."""
import json
from pathlib import Path

from fisrig_hw.soc import soc_build
from fisrig_hw.soc import zephyr_overlay as z

DATA = Path(__file__).parents[1] / "host" / "data" / "zephyr"


def test_the_built_soc_gives_the_golden_overlay():
    build_dir = soc_build.default_build_dir()
    soc_build.build_quietly(build_dir)
    built = json.loads((Path(build_dir) / "csr.json").read_text())
    assert built == json.loads((DATA / "rig_soc_csr.json").read_text())
    assert z.make_overlay(built)[0] == (DATA / "rig_soc.overlay").read_text()
