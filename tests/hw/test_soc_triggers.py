"""The SoC simulation's falling-edge skip (sim/litex_sim/eval_untraced.cpp) is built in only
where Verilator's own list of the model's triggers is sys_clk's rising edge alone
(fisrig_hw.soc.soc_build.triggers): a design with another clock or edge evaluates every edge.
The built SoC's own list: tests/rtl/test_sim_soc.py."""
from fisrig_hw.soc import soc_build

# The shape of Verilator 5.048's debug dump of a model's 'act' triggers (the root's *.cpp).
DUMP = '''VL_ATTR_COLD void Vsim___024root___dump_triggers__stl(const VlUnpacked<QData/*63:0*/, 1> &triggers, const std::string &tag) {
    if ((1U & (IData)(triggers[0U]))) {
        VL_DBG_MSGS("         '" + tag + "' region trigger index 0 is active: Internal 'stl' trigger - first iteration\\n");
    }
}
VL_ATTR_COLD void Vsim___024root___dump_triggers__act(const VlUnpacked<QData/*63:0*/, 1> &triggers, const std::string &tag) {
    if ((1U & (~ (IData)(Vsim___024root___trigger_anySet__act(triggers))))) {
        VL_DBG_MSGS("         No '" + tag + "' region triggers active\\n");
    }
%s}
'''
ONE = '''    if ((1U & (IData)(triggers[0U]))) {
        VL_DBG_MSGS("         '" + tag + "' region trigger index %d is active: @(%s)\\n");
    }
'''


def _model(tmp_path, *edges):
    (tmp_path / "Vsim___024root__0__Slow.cpp").write_text(DUMP % "".join(ONE % (i, e) for i, e in enumerate(edges)))
    return str(tmp_path)


def test_the_rising_edge_of_sys_clk_alone_is_the_one_trigger(tmp_path):
    assert soc_build.triggers(_model(tmp_path, "posedge sys_clk")) == ["@(posedge sys_clk)"]


def test_a_falling_edge_or_a_second_clock_is_listed_too(tmp_path):
    assert soc_build.triggers(_model(tmp_path, "posedge sys_clk", "negedge sys_clk")) == \
        ["@(negedge sys_clk)", "@(posedge sys_clk)"]
    (tmp_path / "Vsim___024root__0__Slow.cpp").unlink()
    assert soc_build.triggers(_model(tmp_path, "posedge sys_clk", "posedge eth_clk")) == \
        ["@(posedge eth_clk)", "@(posedge sys_clk)"]


def test_no_dump_no_skip(tmp_path):
    assert soc_build.triggers(str(tmp_path)) == []

