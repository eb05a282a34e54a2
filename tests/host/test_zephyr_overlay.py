"""fisrig_hw.soc.zephyr_overlay (issue 18): LiteX's litex_json2dts_zephyr on the rig SoC's
csr.json, put right, without a Zephyr tree. The fixture is the simulated rig SoC's csr.json
(tests/rtl/test_zephyr_overlay_of_the_built_soc.py holds it to the SoC as built) and the
golden overlay what it must give; the rest says why each fix-up is there."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fisrig_hw import contract
from fisrig_hw.soc import zephyr_overlay as z

DATA = Path(__file__).parent / "data" / "zephyr"


@pytest.fixture
def csr():
    return json.loads((DATA / "rig_soc_csr.json").read_text())


def node(overlay, label):
    m = re.search(rf"^&{label} \{{\n(.*?)^\s*\}};", overlay, re.M | re.S)  # LiteX indents some ends
    return m.group(1) if m else None


def test_the_overlay_is_the_golden_one(csr):
    overlay, config = z.make_overlay(csr)
    assert overlay == (DATA / "rig_soc.overlay").read_text()
    assert config == "-DCONFIG_LITEX_CSR_DATA_WIDTH=32"


def test_the_uart_keeps_its_interrupt_on_irq_0(csr):
    """LiteX's generator writes `interrupts` only for a true IRQ number: the UART's, 0, went,
    and the board's <2 10> would have stayed."""
    from litex.tools.litex_json2dts_zephyr import generate_dts_config
    assert csr["constants"]["uart_interrupt"] == 0
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):
        raw, _ = generate_dts_config(csr)
    assert "interrupts" not in node(raw, "uart0")  # the generator's slip, still there
    overlay, _ = z.make_overlay(csr)
    assert "interrupts = <0 0>;" in node(overlay, "uart0")
    assert "interrupts = <1 0>;" in node(overlay, "timer0")  # the generator's own, untouched


def test_every_board_node_the_soc_lacks_is_disabled(csr):
    overlay, _ = z.make_overlay(csr)
    for label in z.BOARD_NODES:
        body = node(overlay, label)
        if label in z.SOC_CORES:
            assert body is not None and "disabled" not in body, label
        else:
            assert body == '    status = "disabled";\n', (label, body)


def test_the_engine_node_names_every_register_the_ring_ram_tick_gate_and_program_area(csr):
    overlay, _ = z.make_overlay(csr)
    m = re.search(r"fisrig_engine: engine@([0-9a-f]+) \{\n(.*?)\n        \};", overlay, re.S)
    assert m and 'compatible = "fisrig,engine";' in m.group(2)
    regs = [(int(a, 16), int(s, 16)) for a, s in re.findall(r"<0x([0-9a-f]+) 0x([0-9a-f]+)>", m.group(2))]
    names = re.findall(r'"([a-z_0-9]+)"', m.group(2).split("reg-names")[1])
    want = {n: (r["addr"], 4 * r["size"]) for n, r in csr["csr_registers"].items()
            if n.startswith(("rig_", "rings_", "cpu_bus_"))}
    ring, gate, ram = (csr["memories"][k] for k in ("ring_ram", "tick_gate", "main_ram"))
    offset = contract.FISRIG_BOOT_PROGRAM_OFFSET
    assert dict(zip(names, regs)) == {**want, "ring_ram": (ring["base"], ring["size"]),
                                      "tick_gate": (gate["base"], gate["size"]),
                                      "program": (ram["base"] + offset, ram["size"] - offset)}
    # Named by its first reg entry, as devicetree's unit address is (it was the lowest CSR's,
    # the CPU's bus counters', which Zephyr's build warned of): the rig's first register.
    assert int(m.group(1), 16) == regs[0][0] == csr["csr_registers"]["rig_ts_latch"]["addr"]


def test_zephyrs_ram_is_main_rams_firmware_area(csr):
    """The kernel, its stacks and the VM stay below the program area (baremetal_if.h)."""
    overlay, _ = z.make_overlay(csr)
    ram = csr["memories"]["main_ram"]
    assert re.search(r"&ram0 \{\n    reg = <0x%08x 0x%x>;\n\};" % (ram["base"], contract.FISRIG_BOOT_PROGRAM_OFFSET),
                     overlay)
    csr["memories"]["main_ram"]["size"] = contract.FISRIG_BOOT_PROGRAM_OFFSET
    with pytest.raises(z.OverlayError, match="no main_ram larger than the firmware's area"):
        z.make_overlay(csr)


def test_a_soc_without_the_timers_uptime_is_refused(csr):
    del csr["csr_registers"]["timer0_uptime_cycles"]
    with pytest.raises(z.OverlayError, match="timer_uptime=True"):
        z.make_overlay(csr)


def test_what_is_not_a_rig_socs_csr_json_is_one_line_exit_2(csr, tmp_path, capsys):
    bad = tmp_path / "csr.json"
    bad.write_text("{not json")
    assert z.main([str(bad), "--out", str(tmp_path / "x.overlay")]) == 2
    del csr["memories"]["ring_ram"]
    other = tmp_path / "other.json"
    other.write_text(json.dumps(csr))
    assert z.main([str(other), "--out", str(tmp_path / "y.overlay")]) == 2
    assert z.main([str(tmp_path / "none.json"), "--out", str(tmp_path / "z.overlay")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("zephyr_overlay: ") for line in err), err
    assert "ring_ram" in err[1]
    assert not any((tmp_path / f).exists() for f in ("x.overlay", "y.overlay", "z.overlay"))


def test_the_overlay_is_written_and_the_options_printed(csr, tmp_path, capsys):
    src = tmp_path / "csr.json"
    src.write_text(json.dumps(csr))
    assert z.main([str(src), "--out", str(tmp_path / "rig.overlay")]) == 0
    assert (tmp_path / "rig.overlay").read_text() == (DATA / "rig_soc.overlay").read_text()
    assert capsys.readouterr().out == "-DCONFIG_LITEX_CSR_DATA_WIDTH=32\n"


ZEPHYR_BASE = os.environ.get("ZEPHYR_BASE")


@pytest.mark.skipif(not ZEPHYR_BASE, reason="ZEPHYR_BASE is not set: Zephyr's own devicetree library checks the "
                                            "overlay only on a machine with the tree (docs/zephyr.md)")
def test_zephyrs_devicetree_library_takes_the_board_with_the_overlay(csr, tmp_path):
    """Zephyr's edtlib, with its bindings, on the board's devicetree (preprocessed as
    Zephyr's build does) and the overlay: the UART on IRQ 0 of the interrupt controller,
    the timer's uptime registers, the engine's registers, the cores the SoC lacks disabled."""
    base = Path(ZEPHYR_BASE)
    board = base / "boards" / "enjoydigital" / "litex_vexriscv" / "litex_vexriscv.dts"
    pre = subprocess.run(["cpp", "-nostdinc", "-undef", "-P", "-x", "assembler-with-cpp", "-D__DTS__",
                          *(f"-I{base / d}" for d in ("dts/riscv", "dts/common", "dts", "include",
                                                      "include/zephyr")), str(board)],
                         capture_output=True, text=True, check=True).stdout
    merged = tmp_path / "merged.dts"
    merged.write_text(pre + z.make_overlay(csr)[0])
    sys.path.insert(0, str(base / "scripts" / "dts" / "python-devicetree" / "src"))
    try:
        from devicetree import edtlib
        edt = edtlib.EDT(str(merged), [str(base / "dts" / "bindings"),
                                       str(Path(__file__).parents[2] / "firmware" / "zephyr" / "dts" / "bindings")])
    finally:
        sys.path.pop(0)
    by_label = {label: n for n in edt.nodes for label in n.labels}
    uart, timer, engine = by_label["uart0"], by_label["timer0"], by_label["fisrig_engine"]
    assert uart.status == timer.status == engine.status == "okay"
    assert [(i.data["irq"], i.controller.labels) for i in uart.interrupts] == [(0, ["intc0"])]
    assert [r.name for r in timer.regs][-2:] == ["uptime_latch", "uptime_cycles"]
    assert [r.name for r in engine.regs[-3:]] == ["ring_ram", "tick_gate", "program"] and len(engine.regs) == len(
        [n for n in csr["csr_registers"] if n.startswith(("rig_", "rings_", "cpu_bus_"))]) + 3
    assert engine.matching_compat == "fisrig,engine"  # our binding (firmware/zephyr/dts/bindings)
    # What the driver's DT_INST_REG_ADDR_BY_NAME gives for each name: csr.json's address.
    assert {r.name: r.addr for r in engine.regs} == {n: a for n, a, _ in z.engine_regs(csr)}
    assert engine.unit_addr == engine.regs[0].addr  # else Zephyr's build warns
    for label in z.BOARD_NODES:
        if label not in z.SOC_CORES:
            assert by_label[label].status == "disabled", label


def test_a_built_firmware_whose_engine_registers_are_not_the_socs_is_refused(csr):
    """zephyr_build checks the driver's constants as built (devicetree_generated.h) against
    the SoC's csr.json after every build: a firmware that reads a register elsewhere than the
    SoC has it would fail only on the hardware."""
    from fisrig_hw.soc import zephyr_build
    built = {n: a for n, a, _ in z.engine_regs(csr)}
    zephyr_build.check_engine_regs(built, csr)
    for wrong, says in [({**built, "rig_ts_latch": 0xf0000000}, "rig_ts_latch at 0xf0000000, csr.json 0x%08x"
                         % built["rig_ts_latch"]),
                        ({n: a for n, a in built.items() if n != "rings_cq_head"}, "rings_cq_head missing"),
                        ({**built, "rig_nonesuch": 0xf0001000}, "rig_nonesuch not in csr.json")]:
        with pytest.raises(zephyr_build.ZephyrBuildError, match="^the firmware's engine registers are not the SoC's: "
                           + re.escape(says) + "$"):
            zephyr_build.check_engine_regs(wrong, csr)


def test_the_built_engine_registers_are_read_from_zephyrs_generated_header(tmp_path):
    """The constants of the driver's instance 0 by name, as Zephyr 4.3's gen_defines.py writes
    them (an excerpt of a board's devicetree_generated.h)."""
    from fisrig_hw.soc import zephyr_build
    node = "DT_N_S_soc_S_engine_f0002000"
    header = tmp_path / "zephyr" / "include" / "generated" / "zephyr" / "devicetree_generated.h"
    header.parent.mkdir(parents=True)
    header.write_text(f"""#define DT_N_INST_0_fisrig_engine    {node}
#define {node}_REG_IDX_0_VAL_ADDRESS 4026540032 /* 0xf0002000 */
#define {node}_REG_IDX_0_VAL_SIZE 4 /* 0x4 */
#define {node}_REG_IDX_1_VAL_ADDRESS 4026540036 /* 0xf0002004 */
#define {node}_REG_IDX_1_VAL_SIZE 8 /* 0x8 */
#define {node}_REG_NAME_rig_ts_latch_EXISTS 1
#define {node}_REG_NAME_rig_ts_latch_VAL_ADDRESS {node}_REG_IDX_0_VAL_ADDRESS
#define {node}_REG_NAME_rig_ts_latch_VAL_SIZE {node}_REG_IDX_0_VAL_SIZE
#define {node}_REG_NAME_rig_ts_VAL_ADDRESS {node}_REG_IDX_1_VAL_ADDRESS
""")
    assert zephyr_build.built_engine_regs(str(tmp_path)) == {"rig_ts_latch": 0xf0002000, "rig_ts": 0xf0002004}
