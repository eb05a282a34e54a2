"""Every board's rig SoC (fisrig_boards) elaborates to Verilog with LiteX, with the part's
transceiver under the same rig as the simulated SoC (the same rig CSRs, ring RAM and tick
gate), and synthesizes with yosys under 70% of its part's LUTs (issue 17's goal)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fisrig_boards import build
from fisrig_hw import contract
from fisrig_hw.soc import capture_dram, rig_capture, soc_build, zephyr_build, zephyr_overlay

TRANSCEIVER = {"acorn_baseboard_mini": "GTPE2_CHANNEL", "stlv7325": "GTXE2_CHANNEL"}
LUT_GOAL_PCT = 70


@pytest.fixture(scope="module")
def sim_csr(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim_soc")
    soc_build.build(str(out), compile_gateware=False)
    return json.loads((out / "csr.json").read_text())


def rig_view(csr):
    """What the firmware and the host reach of the rig: its registers by name and the
    regions at fixed addresses."""
    regs = {k: v["size"] for k, v in csr["csr_registers"].items() if k.startswith(("rig_", "rings_", "cpu_bus_"))}
    mems = {k: (v["base"], v["size"]) for k, v in csr["memories"].items() if k in ("ring_ram", "tick_gate")}
    return regs, mems


@pytest.mark.skipif(zephyr_build.zephyr_base() is None,
                    reason="no Zephyr tree: set ZEPHYR_BASE to a Zephyr 4.3 tree (docs/zephyr.md)")
@pytest.mark.parametrize("board", build.BOARDS)
def test_the_zephyr_firmware_builds_for_the_board(board, tmp_path):
    """firmware/zephyr for the board's SoC: its overlay from the board's csr.json, its math from
    the board's own LiteX software build; the engine where the board's SoC has it: every
    register the driver reads at the address the board's csr.json gives it (the two boards'
    differ from each other and from the simulated SoC's), the node named by its first."""
    build.elaborate(board, out=str(tmp_path), software=True)
    image = zephyr_build.build(str(tmp_path / board))
    assert 0 < (tmp_path / board / "zephyr" / "zephyr" / "zephyr.bin").stat().st_size < contract.FISRIG_BOOT_PROGRAM_OFFSET
    csr = json.loads((tmp_path / board / "csr.json").read_text())
    # The driver's constants (DT_INST_REG_ADDR_BY_NAME) as built, against csr.json's.
    built = zephyr_build.built_engine_regs(str(tmp_path / board / "zephyr"))
    regs = csr["csr_registers"]
    assert {n: a for n, a in built.items() if n in regs} == {n: r["addr"] for n, r in regs.items()
                                                             if n.startswith(("rig_", "rings_", "cpu_bus_"))}
    program = csr["memories"]["main_ram"]["base"] + contract.FISRIG_BOOT_PROGRAM_OFFSET
    assert [built[n] for n in ("ring_ram", "tick_gate", "program")] == [
        csr["memories"]["ring_ram"]["base"], csr["memories"]["tick_gate"]["base"], program]
    driver = re.sub(r"^#define REG.*", "", (Path(zephyr_build.APP) / "src" / "fisrig_engine.c").read_text(), flags=re.M)
    used = set(re.findall(r"(?:\bREG|\bREG_OR_0|DT_INST_REG_ADDR_BY_NAME)\(inst, (\w+)\)", driver))
    assert len(used) > 20 and used <= set(built), used - set(built)
    dts = (tmp_path / board / "zephyr" / "zephyr" / "zephyr.dts").read_text()
    node = re.search(r"fisrig_engine: engine@([0-9a-f]+) \{.*?reg = < (0x[0-9a-f]+) ", dts, re.S)
    assert int(node.group(1), 16) == int(node.group(2), 16) == regs["rig_ts_latch"]["addr"], image


@pytest.mark.parametrize("board", build.BOARDS)
def test_the_board_elaborates_with_the_simulated_socs_rig(board, tmp_path, sim_csr):
    top, sources = build.elaborate(board, out=str(tmp_path))
    verilog = open(top).read()
    assert TRANSCEIVER[board] in verilog
    assert "VexRiscv" in verilog and any(s.endswith("VexRiscv.v") for s in sources)
    csr = json.loads((tmp_path / board / "csr.json").read_text())
    regs, mems = rig_view(csr)
    assert (regs, mems) == rig_view(sim_csr)
    assert len(regs) > 20
    # The analyzer's capture at the fixed addresses the board host reads it at (no csr.json there).
    for c in (csr, sim_csr):
        assert {k: v["addr"] for k, v in c["csr_registers"].items() if k.startswith("wire_capture_")} == \
            rig_capture.csr_addresses()
    assert csr["csr_registers"]["wire_capture_depth"]["size"] == 1
    # Each board's 1 GB of DDR3: the CPU's main RAM the first 512 MiB, the capture ring past it.
    assert csr["memories"]["main_ram"]["size"] == capture_dram.DRAM_OFFSET == 1 << 29
    # Its Zephyr overlay (issue 18): the engine's registers as on the simulated SoC, Zephyr's
    # RAM the firmware's area of main RAM, the program area the rest of the board's DDR3.
    overlay, config = zephyr_overlay.make_overlay(csr)
    names = [re.search(r"reg-names = (.*?);", o, re.S).group(1).split()
             for o in (overlay.split("fisrig_engine:")[1], zephyr_overlay.make_overlay(sim_csr)[0].split("fisrig_engine:")[1])]
    assert names[0] == names[1] and names[0][-3:] == ['"ring_ram",', '"tick_gate",', '"program"']
    offset = contract.FISRIG_BOOT_PROGRAM_OFFSET
    assert f"<0x{0x40000000 + offset:08x} 0x{(1 << 29) - offset:x}>;" in overlay
    assert re.search(r"&ram0 \{\s*reg = <0x40000000 0x%x>;" % offset, overlay)
    assert re.search(r"&uart0 \{[^}]*interrupts = <0 0>;", overlay) and "CONFIG_LITEX_CSR_DATA_WIDTH=32" in config


def test_every_sata_generation_elaborates(tmp_path):
    """Gen1 and Gen3 besides the default Gen2: the transceiver's line rate divider differs
    (LiteSATA's GTP settings: one VCO, divided by 4, 2 or 1)."""
    dividers = {}
    for gen in (1, 3):
        top, _ = build.elaborate("acorn_baseboard_mini", gen=gen, out=str(tmp_path / f"gen{gen}"))
        csr = json.loads((tmp_path / f"gen{gen}" / "acorn_baseboard_mini" / "csr.json").read_text())
        assert csr["constants"]["config_identifier"].endswith(f"sata gen{gen}")
        dividers[gen] = int(re.search(r"\.RXOUT_DIV\s*\(\d+'d(\d+)\)", open(top).read()).group(1))
    assert dividers == {1: 4, 3: 1}


@pytest.mark.parametrize("argv, says", [
    (["nonesuch"], "fisrig_boards.build: no board 'nonesuch' (boards: acorn_baseboard_mini, stlv7325)"),
    (["stlv7325", "--gen", "4"], "invalid choice"),
    (["stlv7325", "--quick"], "--quick is a way to --synth: give both"),
])
def test_a_bad_board_or_generation_is_refused_in_one_line(argv, says):
    done = subprocess.run([sys.executable, "-m", "fisrig_boards.build", *argv], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert says in done.stderr.strip().splitlines()[-1]  # after argparse's usage, if it is argparse's


def test_distributed_ram_and_shift_registers_count_as_the_luts_they_take():
    """UG474's distributed RAM table: yosys's cells by type become the part's LUTs, and a
    distributed RAM the table does not know stops the report rather than counting as none."""
    cells = {"LUT6": 10, "LUT2": 1, "MUXF7": 4, "CARRY4": 2, "RAM128X1S": 3, "RAM32M": 1, "RAM64X1D": 1,
             "SRLC32E": 2, "FDRE": 5, "FDCE": 1, "RAMB36E1": 1, "RAMB18E1": 1}
    assert build.count("b", cells) == {"luts": 11 + 6 + 4 + 2 + 2, "ffs": 6, "brams": 1.5}
    with pytest.raises(build.BoardError, match=r"^b: yosys made RAM512X1S, whose LUTs"):
        build.count("b", {"LUT6": 1, "RAM512X1S": 1})


@pytest.mark.long  # started first (tests/conftest.py): the suite's longest, a core each
@pytest.mark.parametrize("board", build.BOARDS)
def test_the_board_synthesizes_under_the_lut_goal(board, tmp_path):
    """yosys's synth_xilinx of the board's SoC with ABC's fast LUT mapping (fisrig_boards.build
    --synth --quick does the same): a quarter to two fifths less CPU than the full flow that
    make bench reports, and 1 to 5% more LUTs than it on both boards (docs/boards.md)."""
    top, sources = build.elaborate(board, out=str(tmp_path))
    report = build.synthesize(board, top, sources, out=str(tmp_path), quick=True)
    assert report == json.loads((tmp_path / board / "resources.json").read_text())
    assert report["flow"] == "quick"
    assert 0 < report["luts_pct"] < LUT_GOAL_PCT
    assert report["ffs"] > 0 and report["brams"] > 0
    assert report["cells"].get(TRANSCEIVER[board]) == 1  # kept as the hard block it is
