import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

@pytest.fixture(scope="session")
def pattern_reference(tmp_path_factory):
    """pattern.h compiled: returns a function giving the reference dwords of sectors."""
    exe = tmp_path_factory.mktemp("pattern") / "pattern_dump"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-I", os.path.join(ROOT, "firmware/core/include"),
                    "-o", str(exe), os.path.join(os.path.dirname(__file__), "pattern_dump.c")], check=True)

    def reference(kind, lba, word, pct, sectors):
        out = subprocess.run([str(exe), str(kind), str(lba), str(word), str(pct), str(sectors)],
                             check=True, capture_output=True, text=True).stdout
        return [int(x, 16) for x in out.split()]
    return reference
