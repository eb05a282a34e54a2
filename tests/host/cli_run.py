"""The fisrig CLI run as a user runs it, for the host tests: a fresh process, a bare PATH, the
native build FISRIG_BUILD names when the test run has one."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def fisrig(*args):
    env = {"PATH": "/usr/bin:/bin"}
    if "FISRIG_BUILD" in os.environ:
        env["FISRIG_BUILD"] = os.environ["FISRIG_BUILD"]
    return subprocess.run([sys.executable, "-m", "fisrig.cli", *args], capture_output=True, text=True,
                          cwd=REPO, env=env)
