"""fisrig_hw.build_lock: a second process that wants a build directory waits until the first
is done with it, and a holder that dies frees it (the suite's two workers and two users'
runs share build/ this way)."""
import os
import signal
import subprocess
import sys
import time

from fisrig_hw import build_lock

HOLD = """
import sys, time
from fisrig_hw import build_lock
with build_lock.held(sys.argv[1]):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    open(sys.argv[1] + "/done", "w").close()
"""


def holder(directory, seconds):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(directory), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_the_second_waits_for_the_first(tmp_path):
    proc = holder(tmp_path / "build", 1.0)
    t0 = time.monotonic()
    with build_lock.held(tmp_path / "build"):
        waited = time.monotonic() - t0
        assert (tmp_path / "build" / "done").exists()  # the first had finished its build
    assert waited > 0.5
    proc.wait()
    assert sorted(os.listdir(tmp_path)) == ["build", "build.lock"]  # the lock file is beside it


def test_a_holder_that_dies_frees_the_directory(tmp_path):
    proc = holder(tmp_path / "build", 60)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    t0 = time.monotonic()
    with build_lock.held(tmp_path / "build"):
        assert time.monotonic() - t0 < 5
    assert not (tmp_path / "build" / "done").exists()
