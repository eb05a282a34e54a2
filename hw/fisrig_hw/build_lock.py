"""One build at a time in a shared build directory. Two processes that want the same
build (two `fisrig run --target rtl` at once, or the test suite's two workers, `make test`)
would otherwise write the same Verilog, object files and stamps at once; with the lock the
second waits for the first and then finds the build done (its sources' digest matches)."""

import contextlib
import fcntl
import os


@contextlib.contextmanager
def held(directory):
    """Holds an exclusive lock on `directory` (created if missing) while the block runs. The
    lock file sits beside the directory, not in it: builds clear parts of their directory.
    The kernel drops the lock if the process dies, so a killed build never blocks the next."""
    directory = os.path.abspath(directory)
    os.makedirs(directory, exist_ok=True)
    with open(directory + ".lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
