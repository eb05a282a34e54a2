#!/usr/bin/env python3
"""The rig's firmware on Zephyr (issue 18) against the bare-metal build, as JSON lines for
scripts/bench_collect.py. Only with a Zephyr tree at ZEPHYR_BASE (docs/zephyr.md); without one
it says so on stderr and gives no figure, so these stay absent from bench.json.

  zephyr.image_bytes                  firmware/zephyr's zephyr.bin for the simulated rig SoC
  zephyr.boot_ms_sim                  simulated time from the firmware's first instruction (the
                                      BIOS's jump) to its shell's start, booted with no program
  fw_zephyr.ncq_4k_randwrite_iops_qd32
                                      plan targets-agree-qd32 on the rtl target with the Zephyr
                                      firmware, phase 'ncq write 4k rand' (as
                                      fw.ncq_4k_randwrite_iops_qd32 is the bare-metal one's)
  fw_zephyr_vs_baremetal.iops_err_pct, .latency_err_pct, .record_mismatches
                                      plan targets-agree (queue depth 1) on both firmwares,
                                      compared by fisrig.compare

Two to three minutes of wall time once the SoC is built."""
import json
import os
import re
import sys
import tempfile
from pathlib import Path

from fisrig import plan
from fisrig.report.compare import compare
from fisrig.targets.rig import soc_run
from fisrig.run import run_plan
from fisrig_hw import contract
from fisrig_hw.soc import soc_build, zephyr_build

SHELL_LINE = re.compile(r"shell at tick (\d+), (\d+) ticks after the first instruction")


def figure(name, value, unit, what):
    print(json.dumps({"name": name, "value": value, "unit": unit, "what": what}), flush=True)


def on_both(name, tmp, in_order=True):
    """The built-in plan on the rtl target with each firmware, compared (bare metal against Zephyr)."""
    p = plan.load(plan.find(name))
    runs = {fw: run_plan(p, Path(tmp) / name / fw, target="rtl", firmware=fw, quiet=True)
            for fw in ("baremetal", "zephyr")}
    for fw, r in runs.items():
        if r.status != "done":
            raise SystemExit(f"bench_zephyr: the {fw} firmware's run of {name} ended {r.status}")
    return compare(runs["baremetal"].run_dir, runs["zephyr"].run_dir, in_order=in_order)


def main() -> int:
    if zephyr_build.zephyr_base() is None:
        print("bench_zephyr: no Zephyr tree (ZEPHYR_BASE unset): zephyr.* and fw_zephyr* not measured",
              file=sys.stderr)
        return 0
    soc_dir = soc_build.default_build_dir()
    soc_build.build_quietly(soc_dir)
    image = zephyr_build.build(soc_dir)
    figure("zephyr.image_bytes", os.path.getsize(image), "bytes",
           "firmware/zephyr's zephyr.bin for the simulated rig SoC (Zephyr 4.3, shell, the VM; its RAM, "
           f"stacks and 32 KiB data window below main RAM's 0x{contract.FISRIG_BOOT_PROGRAM_OFFSET:x})")
    with tempfile.TemporaryDirectory(prefix="fisrig-bench-zephyr-") as tmp:
        lines = []
        console, _ = soc_run.boot_resident(soc_dir, os.path.join(tmp, "sim"), image, on_console=lines.append)
        try:
            m = None
            while m is None:
                line = console.read_line(120)
                m = SHELL_LINE.search(line)
        finally:
            console.close()
        figure("zephyr.boot_ms_sim", round(int(m.group(2)) * 1e3 / contract.FISRIG_TICK_HZ, 3), "ms",
               "simulated time from the Zephyr firmware's first instruction (the BIOS's jump) to its shell's "
               "start, booted with no program (its counter latched by firmware/zephyr/src/first_tick.S)")
        qd32 = on_both("targets-agree-qd32", tmp, in_order=False)
        phase = "ncq write 4k rand"
        bare, zephyr = qd32.iops[phase]
        figure("fw_zephyr.ncq_4k_randwrite_iops_qd32", round(zephyr), "IOPS",
               f"plan targets-agree-qd32 on the rtl target with the Zephyr firmware, phase '{phase}' "
               f"(the bare-metal firmware's in the same bench: {bare:,.0f}, {100 * zephyr / bare:.1f}% of it)")
        qd1 = on_both("targets-agree", tmp)
        worst = max(qd1.iops.items(), key=lambda kv: abs(kv[1][0] - kv[1][1]) / kv[1][1] if kv[1][1] else 0)
        figure("fw_zephyr_vs_baremetal.iops_err_pct", round(qd1.worst_iops_pct, 3), "%",
               "worst difference of a phase's IOPS between the firmwares, plan targets-agree on the rtl "
               f"target (queue depth 1: the firmware's time between a status and the next command "
               f"counts); worst: {worst[0]}, {worst[1][0]:,.0f} bare metal, {worst[1][1]:,.0f} Zephyr")
        figure("fw_zephyr_vs_baremetal.latency_err_pct", round(qd1.worst_latency_pct, 3), "%",
               "worst difference of a phase's p50/p99 latency (h2d to status) between the firmwares, plan "
               "targets-agree on the rtl target, of those more than an ALIGN pair and a tick apart (goal 2%)")
        figure("fw_zephyr_vs_baremetal.record_mismatches",
               len([x for x in qd1.mismatches if x.startswith("record ")]), "records",
               "records whose command, result, status, error, D2H LBA, sectors or phases differ between "
               "the firmwares, plan targets-agree (goal 0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
