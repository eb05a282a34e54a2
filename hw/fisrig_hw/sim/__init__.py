"""Simulation builds for tests and benchmarks: the rig core's Verilator runner, the engine's
cocotb top, and stock LiteSATA as an independent host."""
