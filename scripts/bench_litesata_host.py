#!/usr/bin/env python3
"""The simulated drive's non-queued throughput as an independent host sees it (issue 13), as
JSON lines for scripts/bench_collect.py: stock LiteSATA's BIST (fisrig_bench.litesata_host) in
Verilator at Gen3 against sim/device on fast-1gb, sequential WRITE DMA EXT commands of the
BIST generator's data, then the same read back by its checker (zero errors, or no figure).
Rates are in simulated time, from the runner's cycle count on the 150 MHz SATA clock; never
wall clock.

fast-1gb's NAND and controller are far faster than the link, so both figures are the link's
and the command protocol's: a write has a DMA Activate before each 8 KiB Data FIS where a
read has none, about 1% more cycles, so the goal is writes within 2% of reads."""
import json
import sys

from fisrig_bench import litesata_host_sim as lsh
from fisrig_hw.descriptor import TICK_HZ  # noqa: E402  (the 150 MHz clock the runner counts, at any speed)

PROFILE = "fast-1gb"
GEN = 3
SECTORS = 256        # 128 KiB a command: one BIST run is one command
COMMANDS = 64        # 8 MiB each way


def figure(name, value, unit, what):
    print(json.dumps({"name": name, "value": value, "unit": unit, "what": what}), flush=True)


def main() -> int:
    print("bench: litesata host: building stock LiteSATA's BIST host in Verilator", file=sys.stderr, flush=True)
    exe = lsh.build(gen=GEN)
    s = lsh.Script(max_cycles=40_000_000)
    for i in range(COMMANDS):
        s.write(i * SECTORS, SECTORS)
    for i in range(COMMANDS):
        s.read(i * SECTORS, SECTORS)
    r = lsh.run(exe, s, PROFILE)
    if r.returncode or len(r.ops) != 2 * COMMANDS:
        raise SystemExit("bench: litesata host run failed:\n" + r.output[-3000:])
    if r.stats["link_gen"] != GEN:
        raise SystemExit("bench: litesata host: the link came up at Gen{}".format(r.stats["link_gen"]))
    bad = [op for op in r.ops if op["aborted"] or op["errors"]]
    if bad:
        raise SystemExit("bench: litesata host: failed or miscompared commands: {}".format(bad[:3]))
    nbytes = COMMANDS * SECTORS * 512
    rates = {}
    for kind in ["write", "read"]:
        ops = [op for op in r.ops if op["kind"] == kind]
        cycles = ops[-1]["done"] - ops[0]["start"]
        rates[kind] = nbytes / (cycles / TICK_HZ) / 1e6
    command = {"write": "WRITE DMA EXT", "read": "READ DMA EXT, each dword checked"}
    for kind in ["write", "read"]:
        figure("device.litesata_bist_{}_mbps".format(kind), round(rates[kind], 2), "MB/s",
               f"{COMMANDS} x 128 KiB {command[kind]}, sequential, one at a time, by stock LiteSATA's "
               f"BIST (core, crossbar, LiteSATA's PHY and datapath on the simulated transceiver) at "
               f"Gen3 on fast-1gb; first start to last done on the 150 MHz clock. Goal: writes within "
               f"2% of reads (now {rates['write'] / rates['read'] - 1:+.2%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
