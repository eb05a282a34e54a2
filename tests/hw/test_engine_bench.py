"""Runs the cocotb benches of the raw command engine (tests/hw/engine_bench) on Debian's
Verilator (Icarus 11 spins forever on the engine's Migen-generated logic)."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def test_engine_bench(tmp_path, monkeypatch):
    from cocotb.runner import get_runner
    from fisrig_bench.bench_top import write_verilog
    verilog = write_verilog(str(tmp_path / "engine_top.v"), default_timeout=100_000)
    runner = get_runner("verilator")
    runner.build(sources=[verilog], hdl_toplevel="engine_top", build_dir=str(tmp_path / "build"),
                 timescale=("1ns", "1ps"), build_args=["-Wno-fatal", "-Wno-WIDTH", "-Wno-CASEINCOMPLETE", "-j", "2"])
    bench = os.path.join(HERE, "engine_bench")
    # Under pytest, cocotb names its results file after the test, beside the bench sources;
    # an explicit path (which it allows only outside pytest) keeps the tree clean.
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    results = runner.test(hdl_toplevel="engine_top", test_module="test_engine",
                          test_dir=bench, build_dir=str(tmp_path / "build"),
                          results_xml=str(tmp_path / "results.xml"),
                          extra_env={"COCOTB_LOG_LEVEL": os.environ.get("COCOTB_LOG_LEVEL", "INFO"), "PYTHONPATH": os.pathsep.join([bench, HERE] + sys.path)})
    from cocotb.runner import get_results
    total, failed = get_results(results)
    assert total >= 14 and failed == 0, "{} of {} engine bench tests failed".format(failed, total)
