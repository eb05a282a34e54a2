"""The simulated drive in two layers (issue 59): sim/ssd is the SSD with no protocol (media,
FTL, buffer, content, power), sim/sata the ATA command set over it, sim/device the SATA pins
over that, sim/nvme the NVMe controller over the same SSD. Each layer includes only its own headers and those of the layers below it, so an
NVMe front end can stand on sim/ssd as sim/sata does; and sim/ssd speaks no ATA (no ata::
name, no fisrig/ata.h)."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = re.compile(r'^\s*#\s*include\s+"fisrig/(\w+)/', re.M)
# What each layer may include of fisrig/<dir>/ (its own headers, the layers under it, and
# the firmware core's shared headers, which sit in fisrig/ itself and are not matched here).
ALLOWED = {"ssd": {"ssd"}, "sata": {"sata", "ssd"}, "device": {"device", "sata", "ssd", "link"},
           "nvme": {"nvme", "ssd"}}


def _sources(layer: str):
    return sorted(p for p in (ROOT / "sim" / layer).rglob("*") if p.suffix in {".h", ".cc"})


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_includes_only_those_below_it(layer):
    files = _sources(layer)
    assert files, f"sim/{layer} has no sources"
    wrong = [f"{p.relative_to(ROOT)}: fisrig/{d}/" for p in files for d in INCLUDE.findall(p.read_text())
             if d not in ALLOWED[layer]]
    assert not wrong, "includes from a layer above: " + ", ".join(wrong)


def test_the_ssd_speaks_no_ata():
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in _sources("ssd")
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if "ata::" in line or '"fisrig/ata.h"' in line or "AtaCommand" in line]
    assert not hits, "ATA in the SSD: " + ", ".join(hits)
