"""fisrig: write SATA test plans, run them on the rig (or its simulations), keep the results."""

__version__ = "0.1.0"
