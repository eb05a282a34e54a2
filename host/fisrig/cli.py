"""The `fisrig` command: a thin layer over the library that parses arguments and prints."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from . import __version__
from . import plan as plan_mod
from .compile import PROTOCOL_OF
from .plan import PlanError
from .run import rebuild, run_plan
from .targets import TARGETS, TargetUnavailable, identify_fields, make_target


def _int(text: str) -> int:
    return int(text, 0)


def cmd_run(a) -> int:
    plan = plan_mod.load(plan_mod.find(a.plan))
    out = Path(a.out or f"runs/{plan.name}")
    if not a.quiet:
        speed = f", SATA Gen{a.link_gen}" if a.link_gen else ""
        print(f"fisrig: running plan '{plan.name}' on target {a.target} ({a.profile or plan.profile}{speed}) "
              f"into {out}", flush=True)
    r = run_plan(plan, out, a.target, a.profile, a.fault, quiet=a.quiet, link_gen=a.link_gen)
    _print_report(r.run_dir, r.phases, r.plots, r.status)
    return 0 if r.status == "done" else 3


def _print_report(run_dir: Path, phases, plots, status: str) -> None:
    from .report import headline
    print(f"report: {run_dir}/  (records.parquet, summary.json, run.json, {', '.join(p.name for p in plots)})")
    print(f"run ended: {status}")
    for line in headline(phases):
        print("  " + line)


def cmd_report(a) -> int:
    run_dir = Path(a.dir)
    if not run_dir.is_dir():
        print(f"fisrig: {run_dir} is not a run directory", file=sys.stderr)
        return 2
    phases, plots = rebuild(run_dir)
    from .results import read_meta
    _print_report(run_dir, phases, plots, read_meta(run_dir).get("status", "unknown"))
    return 0


def cmd_identify(a) -> int:
    f = identify_fields(make_target(a.target, a.profile, link_gen=a.link_gen).identify())
    print(f"model:     {f['model']}\nserial:    {f['serial']}\nfirmware:  {f['firmware']}")
    print(f"capacity:  {f['lba48_sectors']} sectors ({f['lba48_sectors'] * 512 / 1e9:.1f} GB)")
    print(f"NCQ depth: {f['ncq_depth']}\nTRIM:      {'yes' if f['trim'] else 'no'}")
    return 0


def cmd_raw(a) -> int:
    step = {"do": "raw", "label": "raw", "command": a.command, "lba": a.lba, "count": a.count,
            "features": a.features, "device": a.device, "aux": a.aux, "expect": "any"}
    if a.protocol:
        step["protocol"] = a.protocol
    plan = plan_mod.from_dict({"plan": {"name": "raw"}, "step": [step]}, "<raw>")
    with tempfile.TemporaryDirectory() as tmp:
        r = run_plan(plan, Path(tmp), a.target, a.profile, quiet=True, link_gen=a.link_gen)
        import pyarrow.parquet as pq
        row = pq.read_table(Path(tmp) / "records.parquet").to_pylist()[0]
    print(f"command {a.command:#04x}: {row['result']}  status {row['status']:#04x}  error {row['error']:#04x}"
          f"  D2H LBA {row['d2h_lba']}  sectors {row['sectors']}")
    for k in ("t_submit_ns", "t_h2d_ns", "t_accept_ns", "t_setup_ns", "t_data_first_ns", "t_data_last_ns",
              "t_status_ns"):
        print(f"  {k[2:-3]:<11} {row[k]:>12} ns")
    print(f"  latency     {row['latency_ns']:>12} ns")
    return 0 if row["result"] == "ok" else 1


def cmd_plans(a) -> int:
    for name, path in plan_mod.builtin_plans().items():
        p = plan_mod.load(path)
        print(f"{name:<32} {p.description}")
    return 0


def cmd_replay(a) -> int:
    trace = Path(a.trace).resolve()
    steps = [{"do": "secure_erase", "label": "secure erase"}] if a.erase else []
    steps.append({"do": "replay", "label": a.label or trace.stem, "trace": str(trace),
                  "queue_depth": a.qd, "ncq": not a.dma})
    plan = plan_mod.from_dict({"plan": {"name": f"replay-{trace.stem}", "profile": a.profile or "consumer-256gb"},
                               "step": steps}, str(trace))
    out = Path(a.out or f"runs/replay-{trace.stem}")
    r = run_plan(plan, out, a.target, a.profile, a.fault, quiet=a.quiet, link_gen=a.link_gen)
    _print_report(r.run_dir, r.phases, r.plots, r.status)
    return 0 if r.status == "done" else 3


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fisrig", description="Run SATA test plans on the fisrig rig or its simulations.")
    p.add_argument("--version", action="version", version=f"fisrig {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp, with_profile=True):
        sp.add_argument("--target", default="model", choices=sorted(TARGETS), help="where to run (default: model)")
        if with_profile:
            sp.add_argument("--profile", help="simulated drive profile (model/rtl targets)")
        sp.add_argument("--link-gen", type=int, choices=(1, 2, 3),
                        help="SATA speed of the rig's link: 1 (1.5 Gb/s), 2 (3), 3 (6; the default); rtl target")
        sp.add_argument("-q", "--quiet", action="store_true", help="no progress output")

    r = sub.add_parser("run", help="run a plan (a built-in name or a TOML file)")
    r.add_argument("plan")
    r.add_argument("--out", help="run directory (default: runs/<plan name>)")
    r.add_argument("--fault", action="append", default=[], metavar="KNOB=VALUE", help="a drive fault knob")
    common(r)
    r.set_defaults(fn=cmd_run)

    rp = sub.add_parser("report", help="rebuild summary and plots from a run directory")
    rp.add_argument("dir")
    rp.set_defaults(fn=cmd_report)

    i = sub.add_parser("identify", help="the drive's IDENTIFY DEVICE, decoded")
    common(i)
    i.set_defaults(fn=cmd_identify, profile="consumer-256gb")

    w = sub.add_parser("raw", help="one raw command; prints its completion and timing")
    w.add_argument("--command", type=_int, required=True, help=f"opcode, e.g. 0x25 (known: {', '.join(hex(c) for c in sorted(PROTOCOL_OF))})")
    w.add_argument("--lba", type=_int, default=0)
    w.add_argument("--count", type=_int, default=0)
    w.add_argument("--features", type=_int, default=0)
    w.add_argument("--device", type=_int, default=0x40)
    w.add_argument("--aux", type=_int, default=0)
    w.add_argument("--protocol", help="needed for opcodes fisrig does not know")
    common(w)
    w.set_defaults(fn=cmd_raw, profile="consumer-256gb")

    t = sub.add_parser("replay", help="replay a trace of op,lba,sectors lines (R/W/T/F)")
    t.add_argument("trace")
    t.add_argument("--qd", type=int, default=32, help="queue depth (default 32)")
    t.add_argument("--dma", action="store_true", help="READ/WRITE DMA EXT at QD1 instead of NCQ")
    t.add_argument("--erase", action="store_true", help="secure erase first")
    t.add_argument("--label", help="phase label (default: the trace's name)")
    t.add_argument("--out", help="run directory (default: runs/replay-<trace>)")
    t.add_argument("--fault", action="append", default=[], metavar="KNOB=VALUE")
    common(t)
    t.set_defaults(fn=cmd_replay)

    pl = sub.add_parser("plans", help="list the built-in plans")
    pl.set_defaults(fn=cmd_plans)
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    if os.environ.get("CI") and hasattr(a, "quiet"):
        a.quiet = True  # no progress lines in CI logs
    try:
        return a.fn(a)
    except PlanError as e:
        print(f"fisrig: {e}", file=sys.stderr)
        return 2
    except TargetUnavailable as e:
        print(f"fisrig: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
