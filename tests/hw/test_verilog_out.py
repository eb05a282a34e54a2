"""A harness's Verilog is one text whatever the process built before it: the runners' build
digests (rig_sim's sources.json) hash it, and a worker that had built an SoC used to get a
different rig_core.v and rebuild the runner mid-suite."""
from migen import Module, Signal

from litex.gen import LiteXContext


class _SomeSoC(Module):
    """Stands for the last SoC a process built: LiteX names LiteXContext.top's hierarchy."""
    def __init__(self):
        self.submodules.a_board_only_part = Module()
        self.x = Signal()
        self.sync += self.x.eq(~self.x)


def test_engine_top_does_not_depend_on_the_last_soc_built(tmp_path):
    from fisrig_bench.bench_top import write_verilog
    from fisrig_hw.verilog import without_dates
    alone = tmp_path / "alone.v"
    write_verilog(str(alone), default_timeout=100_000)
    saved, LiteXContext.top = LiteXContext.top, _SomeSoC()
    try:
        after = tmp_path / "after_soc.v"
        write_verilog(str(after), default_timeout=100_000)
        assert LiteXContext.top.__class__ is _SomeSoC, "the process's own top is put back"
    finally:
        LiteXContext.top = saved
    assert b"a_board_only_part" not in after.read_bytes()
    assert without_dates(alone.read_bytes()) == without_dates(after.read_bytes())
