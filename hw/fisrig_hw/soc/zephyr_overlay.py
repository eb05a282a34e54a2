"""The devicetree overlay that puts Zephyr's board `litex_vexriscv` on a built rig SoC
(issue 18): LiteX's own generator (litex.tools.litex_json2dts_zephyr) run on the SoC's
csr.json, then what it gets wrong or leaves out for this SoC put right:

- An interrupt on IRQ 0 is dropped: the generator writes `interrupts` only when the IRQ
  number is true, and the UART is IRQ 0, so the board's own `interrupts = <2 10>` would stay
  (Zephyr would take the UART's interrupts from the wrong line). Every node whose
  `<name>_interrupt` constant is 0 gets it back.
- The board's nodes for cores the SoC does not have stay enabled unless the generator knows
  them: Zephyr 4.3.0's boards/enjoydigital/litex_vexriscv/litex_vexriscv.dts enables each of
  BOARD_NODES; those the SoC has not are disabled here, whether or not the generator said so.
- The rig's engine is a node of its own, `fisrig,engine` (firmware/zephyr's binding): its
  CSRs (the rig status and power controller, the rings' front end, the CPU's bus counters)
  with their names, the
  ring RAM it shares with the host bridge, the tick gate (a run's first tick) and main RAM's
  program area (above FISRIG_BOOT_PROGRAM_OFFSET, where the host puts the program).
- Zephyr's RAM (`ram0`) is main RAM below FISRIG_BOOT_PROGRAM_OFFSET only, the firmware's
  area as fisrig/baremetal_if.h lays main RAM out: the kernel, its stacks and the VM never
  reach the program, and a firmware that outgrows its area fails to link.
- Zephyr 4.3's LiteX timer driver reads the timer's uptime CSRs: a SoC built without them
  (`timer_uptime`) is refused here, rather than a kernel whose clock never moves.

Run on a built SoC: python -m fisrig_hw.soc.zephyr_overlay <csr.json> --out <overlay>
(prints the Kconfig options LiteX's generator adds, as it does)."""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys

from litex.tools.litex_json2dts_zephyr import generate_dts_config

from fisrig_hw import contract

# The labels Zephyr 4.3.0's litex_vexriscv.dts enables (phy0, spiflash0, clk0 and clk1 are
# children of mdio0, spi1 and clock0, disabled with them).
BOARD_NODES = ("ctrl0", "uart0", "timer0", "wdt0", "mdio0", "eth0", "dna0", "spi0", "spi1", "prbs0",
               "i2c0", "i2c1", "pwm0", "gpio_out", "gpio_in", "i2s_rx", "i2s_tx", "clock0")
# The board's labels of the cores the rig SoC has, by their csr.json names.
SOC_CORES = {"ctrl0": "ctrl", "uart0": "uart", "timer0": "timer0"}
# The engine's CSR groups, in the order the node lists them (cpu_bus: the CPU's bus counters,
# fisrig_hw.soc.bus_activity, for the firmware's profile line).
ENGINE_CSRS = ("rig", "rings", "cpu_bus")
TIMER_UPTIME = ("timer0_uptime_latch", "timer0_uptime_cycles")
# Main RAM: the firmware below this offset, the boot header and program above (baremetal_if.h).
PROGRAM_OFFSET = contract.FISRIG_BOOT_PROGRAM_OFFSET


class OverlayError(Exception):
    """A csr.json this SoC's overlay cannot be made from; one line."""


def _nodes(dts: str) -> dict[str, str]:
    """The generator's overlay as {label: body}, in its order (each node is `&label {...};`)."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^&(\w+) \{\n(.*?)^\s*\};\n", dts, re.M | re.S)}


def _main_ram(csr: dict) -> dict:
    main_ram = csr["memories"].get("main_ram")
    if main_ram is None or main_ram["size"] <= PROGRAM_OFFSET:
        raise OverlayError(f"csr.json has no main_ram larger than the firmware's area (0x{PROGRAM_OFFSET:x} bytes)")
    return main_ram


def engine_regs(csr: dict) -> list[tuple[str, int, int]]:
    """The engine node's `reg` as (name, address, size), in its order: every rig, rings and
    cpu_bus CSR by its csr.json name, then the ring RAM, the tick gate and the program area.
    The driver takes each address by its name (DT_INST_REG_ADDR_BY_NAME)."""
    regs = csr["csr_registers"]
    mine = [(name, r) for group in ENGINE_CSRS for name, r in regs.items() if name.startswith(group + "_")]
    if not any(name.startswith(("rig_", "rings_")) for name, _ in mine):
        raise OverlayError("csr.json has no rig_* or rings_* registers: not a rig SoC")
    ring_ram = csr["memories"].get("ring_ram")
    if ring_ram is None:
        raise OverlayError("csr.json has no ring_ram memory: not a rig SoC")
    tick_gate = csr["memories"].get("tick_gate")
    if tick_gate is None:
        raise OverlayError("csr.json has no tick_gate memory: not a rig SoC")
    main_ram = _main_ram(csr)
    return [(name, r["addr"], 4 * r["size"]) for name, r in mine] + [
        ("ring_ram", ring_ram["base"], ring_ram["size"]), ("tick_gate", tick_gate["base"], tick_gate["size"]),
        ("program", main_ram["base"] + PROGRAM_OFFSET, main_ram["size"] - PROGRAM_OFFSET)]


def _engine_node(csr: dict) -> str:
    reg = engine_regs(csr)
    pad = " " * 16
    # Named by its first reg entry, as devicetree's unit address is (Zephyr's edtlib warns
    # otherwise); the driver reads every register by its name, not by the node's.
    return ("/ {\n"
            "    soc {\n"
            f"        fisrig_engine: engine@{reg[0][1]:x} {{\n"
            "            compatible = \"fisrig,engine\";\n"
            "            reg = " + f",\n{pad}".join(f"<0x{a:08x} 0x{s:x}>" for _, a, s in reg) + ";\n"
            "            reg-names = " + f",\n{pad}".join(f"\"{n}\"" for n, _, _ in reg) + ";\n"
            "            status = \"okay\";\n"
            "        };\n"
            "    };\n"
            "};\n")


def make_overlay(csr: dict) -> tuple[str, str]:
    """(the overlay, the Kconfig options) for a rig SoC's csr.json."""
    missing = [r for r in TIMER_UPTIME if r not in csr.get("csr_registers", {})]
    if missing:
        raise OverlayError(f"csr.json has no {', '.join(missing)}: Zephyr 4.3's LiteX timer reads them; "
                           "build the SoC with timer_uptime=True")
    with contextlib.redirect_stdout(io.StringIO()):  # its progress lines
        dts, config = generate_dts_config(csr)
    nodes = _nodes(dts)
    out = []
    for label, body in nodes.items():
        irq = csr["constants"].get(SOC_CORES.get(label, label) + "_interrupt")
        if irq == 0 and "interrupts" not in body:
            body += "    interrupts = <0 0>;\n"
        if label == "ram0":
            body = f"    reg = <0x{_main_ram(csr)['base']:08x} 0x{PROGRAM_OFFSET:x}>;\n"
        out.append(f"&{label} {{\n{body}}};\n")
    for label in BOARD_NODES:
        if label in nodes or SOC_CORES.get(label) in csr["csr_bases"]:
            continue
        out.append(f"&{label} {{\n    status = \"disabled\";\n}};\n")
    header = ("/* Made by fisrig_hw.soc.zephyr_overlay from the SoC's csr.json: LiteX's "
              "litex_json2dts_zephyr, put right for the rig SoC. */\n")
    return header + "".join(out) + _engine_node(csr), config.strip()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fisrig_hw.soc.zephyr_overlay", description=__doc__.split("\n\n")[0])
    ap.add_argument("csr_json", help="the built SoC's csr.json")
    ap.add_argument("--out", required=True, help="the overlay to write")
    a = ap.parse_args(argv)
    try:
        with open(a.csr_json) as f:
            csr = json.load(f)
        overlay, config = make_overlay(csr)
    except (OSError, ValueError, KeyError, OverlayError) as e:
        print(f"zephyr_overlay: {a.csr_json}: {e}", file=sys.stderr)
        return 2
    with open(a.out, "w") as f:
        f.write(overlay)
    print(config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
