"""fisrig: write SATA test plans, run them on the rig (or its simulations), keep the results."""

__version__ = "0.1.0"

# glibc's malloc set up before numpy or Arrow start a thread (process_memory says why).
from . import process_memory  # noqa: E402,F401
