"""The `fisrig` command: a thin layer over the library that parses arguments and prints."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from fisrig import __version__
from fisrig.sata import ata
from fisrig.targets import drive_catalog
from fisrig.report import power as power_report
from fisrig import progress
from fisrig.analysis import pts
from fisrig.records import store
from fisrig import plan as plan_mod
from fisrig import traces as trace_mod
from fisrig.traces import generate as trace_gen
from fisrig.errors import InputError, closest
from fisrig.records import run_dir as run_dir_mod
from fisrig.run import ReportTooLarge, check, execute, prepare, rebuild, take_out
from fisrig.targets.native_tools import TargetUnavailable
from fisrig.targets import FIRMWARES, TARGETS
from fisrig.cli.raw import PROTOCOLS, cmd_identify, cmd_raw
from fisrig.cli.trace import cmd_trace
from fisrig.cli import capture as capture_cli
from fisrig.plan import capture as capture_spec



def _int(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (decimal, or 0x hex)") from None


def _run(plan, a) -> int:
    """Prepare (every check), print the estimate, then run; the report at the end."""
    out = Path(_out_flag(a.out) or f"runs/{plan.name}")
    every_s = progress.every_s() if progress.wanted(a.quiet) else None  # FISRIG_PROGRESS_S checked first
    p = prepare(plan, a.target, a.profile, a.fault, a.link_gen, a.url, a.firmware)
    with take_out(p, out) as claim:  # --out for this run alone, before anything is written or printed
        warning = check(p, out, a.force)  # --out and the disk
        if warning:
            print(f"fisrig: {warning}", file=sys.stderr, flush=True)
        if not a.quiet:
            speed = f", SATA Gen{a.link_gen}" if a.link_gen else ""
            print(f"fisrig: running plan '{plan.name}' on target {a.target} ({p.profile}{speed}) into {out}")
            print(f"fisrig: {p.estimate.line()}", flush=True)
        if every_s is not None:
            p.progress = progress.Progress(p.compiled.markers, progress.goals(p.compiled), every_s=every_s)
        r = execute(p, out, quiet=a.quiet, force=a.force, keep_raw=a.keep_raw, claim=claim)
    _print_report(r.run_dir, r.phases, r.plots, r.status, r.outcome.notes)
    return 0 if r.status == "done" else 3


def _out_flag(value: str | None) -> str | None:
    """--out as given; InputError for an empty one (it would have run into the default)."""
    if value is not None and not value.strip():
        raise InputError(f"--out {value!r}", "is empty: name a directory")
    return value


def cmd_run(a) -> int:
    settings = a.set + ([f"protocol={a.protocol}"] if a.protocol else [])
    plan = plan_mod.with_settings(plan_mod.load(plan_mod.find(a.plan)), settings)
    if a.capture is not None:
        plan = capture_spec.on_plan(plan, a.capture)
    return _run(plan, a)


def _print_report(run_dir: Path, phases, plots, status: str, notes: list[str]) -> None:
    from fisrig.report.build import headline
    html = ["report.html"] if (Path(run_dir) / "report.html").exists() else []
    verdicts = ["verdicts.parquet", "power.json"] if (Path(run_dir) / "verdicts.parquet").exists() else []
    print(f"report: {run_dir}/  (records.parquet, summary.json, run.json, {', '.join([*html, *verdicts, *(p.name for p in plots)])})")
    print(f"run ended: {status}")
    for note in notes:
        print(f"  ! the run: {note}")
    for line in headline(phases):
        print("  " + line)
    for line in pts.lines(run_dir):
        print("  " + line)
    for line in power_report.headline(Path(run_dir)):
        print("  " + line)


def cmd_report(a) -> int:
    from fisrig.records import run_state
    if a.compare:
        return _report_compare(a)
    if len(a.dir) > 1:
        raise InputError(a.dir[1], "report takes one run directory; --compare DIR DIR... overlays runs")
    for flag, given in (("--out", a.out is not None), ("--force", a.force)):
        if given:
            raise InputError(flag, "is for --compare (a run's report goes in its own directory)")
    run_dir = Path(a.dir[0])
    if (run_dir / "manifest.json").is_file():  # a sweep's directory
        return _report_sweep(a, run_dir)
    for flag, given in (("--metric", a.metric), ("--phase", a.phase), ("--x", a.x), ("--by", a.by)):
        if given is not None:
            raise InputError(flag, "is for a sweep's directory (docs/sweeps.md)")
    if not run_dir.is_dir():  # refused before the lock would make it
        run_state.inspect(run_dir)
    with run_dir_mod.take(run_dir, str(run_dir), what="report"):  # not while a run writes it
        phases, plots = rebuild(run_dir, keep_raw=a.keep_raw)  # InputError for what is not a run, or holds no records
    state = run_state.inspect(run_dir)
    outcome = run_state.read_meta(run_dir).get("outcome")
    notes = outcome.get("notes", []) if isinstance(outcome, dict) else []
    _print_report(run_dir, phases, plots, state.line(), [str(n) for n in notes] if isinstance(notes, list) else [])
    return 0 if state.status == "done" and not state.missing else 3


def _report_sweep(a, sweep_dir: Path) -> int:
    """A figure of one phase against the sweep's axes: the table, and sweep_<metric>.png."""
    from fisrig.sweep import report as sweep_report
    if a.keep_raw:
        raise InputError("--keep-raw", "is for one run's report; a sweep's reads its points' summaries")
    metric = a.metric or "iops"
    chart, phase, rows = sweep_report.draw(sweep_dir, metric, a.phase, a.x, a.by)
    print(f"sweep report: {chart}  ({metric} of phase '{phase}')")
    keys = [k for k in rows[0] if k != metric]
    width = {k: max(len(k), *(len(str(r.get(k))) for r in rows)) for k in keys}
    print("  " + "  ".join(f"{k:<{width[k]}}" for k in keys) + f"  {metric}")
    for r in rows:
        value = "-" if r[metric] is None else f"{r[metric]:,.6g}"
        print("  " + "  ".join(f"{str(r.get(k)):<{width[k]}}" for k in keys) + f"  {value}")
    return 0 if all(r["status"] == "done" for r in rows) else 3


def _report_compare(a) -> int:
    """The runs overlaid (report_compare): the charts and compare.html in --out; exit 3
    when a run did not end done (its line says so), as `report` does for one."""
    from fisrig.report.compare_html import compare
    if a.keep_raw:
        raise InputError("--keep-raw", "is for one run's report; --compare reads records.parquet and writes no run")
    dirs = list(a.dir)
    if (Path(dirs[0]) / "manifest.json").is_file():  # a sweep's directory, then its points by name
        sweep_dir = Path(dirs.pop(0))
        if len(dirs) < 2:
            raise InputError(str(sweep_dir), "--compare of a sweep's points names two or more: SWEEPDIR p0001 p0004")
        known = {p.name for p in (sweep_dir / "runs").iterdir()} if (sweep_dir / "runs").is_dir() else set()
        for name in dirs:
            if name not in known:
                raise InputError(name, f"no point {name!r} in {sweep_dir} {closest(name, sorted(known))}")
        dirs = [str(sweep_dir / "runs" / name) for name in dirs]
    out, runs, plots = compare(dirs, Path(_out_flag(a.out)) if a.out is not None else None, a.force)
    print(f"compare: {out}/  ({', '.join(['compare.html', *(p.name for p in plots)])})")
    for r in runs:
        print(f"  {r.name}: {r.dir}  plan {r.meta.get('plan', {}).get('name', '?') if isinstance(r.meta.get('plan'), dict) else '?'}"
              f", profile {r.meta.get('profile', '?')}, {len(r.phases)} phases; run ended: {r.status}")
    return 0 if all(r.done for r in runs) else 3


def cmd_sweep(a) -> int:
    """Exit 0 when every point ended done, 3 when one did not (its line says why)."""
    from fisrig import sweep as sweep_mod
    if a.workers is not None and a.workers < 1:
        raise InputError(f"--workers {a.workers}", "a local cluster needs 1 worker or more")
    if a.workers is not None and a.scheduler:
        raise InputError("--workers", "is for the local cluster; a --scheduler's cluster has its own workers")
    sw = sweep_mod.load(sweep_mod.spec.find(a.sweep))
    out = Path(_out_flag(a.out) or f"runs/sweeps/{sw.name}")
    r = sweep_mod.run(sw, out, scheduler=a.scheduler, workers=a.workers, force=a.force, quiet=a.quiet,
                      say=sweep_mod.print_say)
    print(f"sweep: {out}/  (manifest.json, points.parquet, dataset/, runs/)")
    print(f"sweep ended: {len(r.points) - len(r.failed)} of {len(r.points)} points done")
    for g in r.campaign or []:
        from fisrig.report.power import step_lines
        what = f" ({sweep_mod.label_of(g['params'])})" if g["params"] else ""
        print(f"campaign{what}: {g['chunks_done']} of {g['chunks']} chunks, {g['verdict']}: {out}/campaign/")
        for line in step_lines(g["steps"]):
            print("  " + line)
    for p in r.failed:
        print(f"  ! {p['point']} ({sweep_mod.label_of(p['params'])}): {p['status']}: {p.get('error')}")
    return 0 if not r.failed else 3


def cmd_plans(a) -> int:
    for name, path in plan_mod.builtin_plans().items():
        p = plan_mod.load(path)
        print(f"{name:<32} {p.description}")
    return 0


def cmd_compare(a) -> int:
    """Two runs of one plan (fisrig.compare): each phase's published figures side by side,
    the stamp-level times, the records that differ (at most --limit); exit 0 when the
    records are the same and every published figure is within --pct, 1 when not."""
    from fisrig.report.compare import compare
    if not a.pct >= 0:
        raise InputError(f"--pct {a.pct}", "must be a percentage, 0 or more")
    if a.limit < 0:
        raise InputError(f"--limit {a.limit}", "must be 0 or more")
    c = compare(Path(a.a), Path(a.b), limit=a.limit, in_order=not a.any_order, any_plan=a.any_plan)
    for line in c.lines(a.pct, every_stamp=a.stamps):
        print(line)
    return 0 if c.agree(a.pct) else 1


def cmd_replay(a) -> int:
    trace = Path(a.trace).resolve()
    if not trace.is_file():
        raise InputError(a.trace, "is a directory, not a trace file" if trace.is_dir() else "no such trace file")
    qd = a.qd if a.qd is not None else (1 if a.dma else 32)
    if not 1 <= qd <= 32:
        raise InputError(f"--qd {qd}", "a queue depth is 1 to 32")
    if a.dma and qd > 1:
        raise InputError(f"--qd {qd}", "--dma commands go one at a time (queue depth 1); leave out --qd or --dma")
    if a.label is not None and not a.label.strip():
        raise InputError("--label", "a phase label must not be empty")
    steps = [{"do": "secure_erase", "label": "secure erase"}] if a.erase else []
    steps.append({"do": "replay", "label": a.label or trace.stem, "trace": str(trace), "format": a.format,
                  "queue_depth": qd, "ncq": not a.dma})
    plan = plan_mod.from_dict({"plan": {"name": f"replay-{trace.stem}", "profile": a.profile or "consumer-256gb"},
                               "step": steps}, str(trace))
    return _run(plan, a)


class _Parser(argparse.ArgumentParser):
    """argparse with the project's refusals: a bad flag is one line and exit 2, and the help
    of the commands that take --profile and --fault lists the drive's (asked of the drive
    only when help is shown)."""

    def __init__(self, *args, drive_help: bool = False, **kw):
        self.drive_help = drive_help
        kw.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kw)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {_one_line(message)} (see {self.prog} --help)\n")

    def format_help(self) -> str:
        if self.drive_help and self.epilog is None:
            self.epilog = drive_catalog.help_text()
        return super().format_help()


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="fisrig", description="Run SATA test plans on the fisrig rig or its simulations.")
    p.add_argument("--version", action="version", version=f"fisrig {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp, with_profile=True):
        sp.add_argument("--target", default="model", choices=sorted(TARGETS), help="where to run (default: model)")
        if with_profile:
            sp.add_argument("--profile", help="simulated drive profile (model/rtl targets): a name listed "
                                              "below, or a profile TOML file")
        sp.add_argument("--link-gen", type=int, choices=(1, 2, 3),
                        help="SATA speed of the rig's link: 1 (1.5 Gb/s), 2 (3), 3 (6; the default); rtl target")
        sp.add_argument("--url", metavar="HOST:PORT",
                        help="board target: the litex_server connected to the board (docs/boards.md)")
        sp.add_argument("--firmware", choices=FIRMWARES,
                        help="rtl target: the firmware the rig SoC boots, bare metal (the default) or "
                             "Zephyr (needs ZEPHYR_BASE; docs/zephyr.md)")
        sp.add_argument("-q", "--quiet", action="store_true", help="no progress output")

    def runs(sp, default_out: str):
        sp.add_argument("--out", help=f"run directory (default: {default_out}); refused when it holds anything")
        sp.add_argument("--force", action="store_true",
                        help="replace the results of a run already in --out, and run even when the "
                             "estimate says the disk may not hold it")
        sp.add_argument("--fault", action="append", default=[], metavar="KNOB=VALUE",
                        help="a drive fault knob (listed below), repeatable")
        keep_raw(sp)

    def keep_raw(sp):
        sp.add_argument("--keep-raw", action="store_true",
                        help="keep records.bin, the raw record stream (by default it goes once "
                             "records.parquet is made from it and read back)")

    r = sub.add_parser("run", help="run a plan (a built-in name or a TOML file)", drive_help=True,
                       description="Checks the plan against the drive, prints what the run will cost "
                                   "(commands, records, disk, simulated time), runs it and reports.")
    r.add_argument("plan")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="set a [plan] key for this run, e.g. --set data=lfsr, --set compress_pct=25, "
                        "--set seed=7 (repeatable)")
    r.add_argument("--capture", metavar="SPEC",
                   help="arm the analyzer's capture as the run starts: trigger=T[,before_us=N][,after_us=N]"
                        "[,windows=N], T one of start, fis:TYPE, command:OPCODE, tag:N, r_err, crc, timeout, "
                        "power_cut, result:NAME, error (docs/capture.md)")
    r.add_argument("--protocol", choices=plan_mod.PROTOCOLS,
                   help="what the plan's commands go over: sata (the default) or nvme (the model target's NVMe "
                        "engine and controller over the profile's SSD: docs/nvme.md); as the plan's [plan] protocol")
    runs(r, "runs/<plan name>")
    common(r)
    r.set_defaults(fn=cmd_run)

    rp = sub.add_parser("report", help="rebuild summary, plots and report.html from a run directory; "
                                       "--compare: runs overlaid on one chart per kind",
                        description="DIR: summary.json, the plots and report.html again, from its records. "
                                    "--compare DIR DIR...: the runs overlaid on one chart per kind, and "
                                    "compare.html, in --out.")
    rp.add_argument("dir", nargs="+", help="a run directory (two or more with --compare), or a sweep's")
    rp.add_argument("--compare", action="store_true", help="overlay the runs' charts (two or more directories)")
    rp.add_argument("--out", help="with --compare: the directory for the charts and compare.html (default: "
                                  "runs/compare-A-vs-B...); refused when it holds anything")
    rp.add_argument("--force", action="store_true", help="with --compare: replace the comparison in --out")
    rp.add_argument("--metric", help="a sweep's directory: the figure drawn (iops, mb_per_s, mean_us, p50_us, p99_us, "
                                     "p99.9_us, max_us, seconds, errors; default iops)")
    rp.add_argument("--phase", help="a sweep's directory: the phase it is of (default: the last with commands)")
    rp.add_argument("--x", help="a sweep's directory: the axis along x (default: the first)")
    rp.add_argument("--by", help="a sweep's directory: a line a value of this axis (default: the second, if any)")
    keep_raw(rp)
    rp.set_defaults(fn=cmd_report)

    i = sub.add_parser("identify", help="the drive's IDENTIFY DEVICE (or NVMe Identify), decoded", drive_help=True)
    common(i)
    i.add_argument("--protocol", choices=("sata", "nvme"), default="sata",
                   help="the drive's SATA side (IDENTIFY DEVICE, the default) or its NVMe controller's Identify "
                        "Controller and Namespace, laid out as nvme-cli's id-ctrl -H and id-ns -H (model target)")
    i.set_defaults(fn=cmd_identify, profile="consumer-256gb")

    w = sub.add_parser("raw", help="one raw command; prints its completion and timing", drive_help=True,
                       description="Sends one command with every H2D field as given and prints its completion, "
                                   "the status and error bits by name, its phase times and the data it returned. "
                                   "--protocol runs another protocol than the opcode's; the drive still answers by "
                                   "the opcode, and the rig records what it then sees. Each call gets a fresh "
                                   "drive (--profile, --fault), unless --drive DIR keeps one between calls (model "
                                   "target): its profile and faults are fixed at its first call and the commands it "
                                   "has had are replayed before each new one, so what it was sent stays on it; no "
                                   "time passes between calls (the drive's idle time is not simulated).")
    w.add_argument("--command", type=_int, required=True, help=f"opcode, e.g. 0x25 (known: {', '.join(hex(c) for c in sorted(ata.PROTOCOL_OF))})")
    w.add_argument("--lba", type=_int, default=0, help="48 bits")
    w.add_argument("--count", type=_int, default=0, help="16 bits (0 means 65536 sectors)")
    w.add_argument("--features", type=_int, default=0, help="16 bits (the sector count of an NCQ command)")
    w.add_argument("--device", type=_int, default=0x40, help="8 bits")
    w.add_argument("--aux", type=_int, default=0, help="16 bits")
    w.add_argument("--protocol", help=f"needed for opcodes fisrig does not know: {', '.join(PROTOCOLS)}; for one it "
                                      "knows, the protocol the rig runs instead of the opcode's; nvme: an NVMe "
                                      "command (--command is its opcode; model target, docs/nvme.md)")
    nv = w.add_argument_group("NVMe (--protocol nvme): the SQE's fields; the command id and PRPs are the engine's")
    nv.add_argument("--queue", type=_int, default=1, help="0 the admin queue, 1.. an I/O queue (default 1)")
    nv.add_argument("--nsid", type=_int, default=0, help="the namespace (1 the drive's one)")
    for i in (2, 3, 10, 11, 12, 13, 14, 15):
        nv.add_argument(f"--cdw{i}", type=_int, default=0, help=argparse.SUPPRESS if i in (2, 3, 13, 14, 15) else None)
    nv.add_argument("--data-bytes", type=_int, default=0, help="the buffer a data-in command fills (4096 for Identify)")
    w.add_argument("--data-in", metavar="FILE", help="keep the data the command returned (a data-in "
                                                     "command; model target) in FILE, a new file")
    w.add_argument("--data-out", metavar="FILE", help="the data a data-out command sends, from FILE: one "
                                                      "512-byte sector (the VM stages 512 bytes a command), "
                                                      "so --count 1 (--features 1 for NCQ)")
    w.add_argument("--timeout-ms", type=float, default=0, metavar="MS",
                   help="how long the rig waits for the command to end before it records TIMEOUT (default: the "
                        "engine's 30 s; a command the drive never finishes, such as a write sent as a data-in "
                        "one, waits that long: 30 s of simulated time is hours of wall time on --target rtl)")
    w.add_argument("--fault", action="append", default=[], metavar="KNOB=VALUE",
                   help="a drive fault knob (listed below), repeatable; with --drive, fixed at its first call")
    w.add_argument("--drive", metavar="DIR",
                   help="a kept drive (model target): DIR holds its profile, faults and the commands it has had "
                        "(a new or empty DIR makes one); each call replays them before this command, so its "
                        "media, FTL and SMART counters carry over, but no time passes between calls (no idle "
                        "time, no background GC between them); without it each call gets a fresh drive")
    common(w)
    w.set_defaults(fn=cmd_raw, profile=None)  # cli_raw: consumer-256gb, or the kept drive's

    t = sub.add_parser("replay", help="replay a trace (op,lba,sectors lines, a time,op,lba,length CSV, or "
                                      "blkparse output)", drive_help=True)
    t.add_argument("trace")
    t.add_argument("--format", default="auto", choices=trace_mod.FORMATS,
                   help="the trace's format: auto (the default: from its first line), ops, csv or blkparse "
                        "(docs/traces.md)")
    t.add_argument("--qd", type=int, help="queue depth, 1..32 (default 32; 1 with --dma)")
    t.add_argument("--dma", action="store_true", help="READ/WRITE DMA EXT at QD1 instead of NCQ")
    t.add_argument("--erase", action="store_true", help="secure erase first")
    t.add_argument("--label", help="phase label (default: the trace's name)")
    runs(t, "runs/replay-<trace>")
    common(t)
    t.set_defaults(fn=cmd_replay)

    c = sub.add_parser("compare", help="compare two runs of one plan: the figures they publish, phase by phase, "
                                       "and their records",
                       description="Each phase's published figures (IOPS, MB/s, and the latency from submit to "
                                   "status: mean, p50, p99, p99.9, max; as the headline and summary.json give them) "
                                   "for both runs side by side, held within --pct of run B's; then the stamps "
                                   "from the H2D (p50, p99) as information, and the records that differ "
                                   "(command, answer, phases). Refuses two runs of different plans (--any-plan) "
                                   "and a run given twice.")
    c.add_argument("a", help="a run directory")
    c.add_argument("b", help="the reference run directory (percentages are of its figures)")
    c.add_argument("--pct", type=float, default=2.0,
                   help="tolerance on the published figures, in percent (default 2; a latency within an ALIGN "
                        "pair and a tick counts as within, and so does a rate over such spans)")
    c.add_argument("--any-order", action="store_true",
                   help="match records within each phase whatever order they completed in (queued plans)")
    c.add_argument("--any-plan", action="store_true",
                   help="compare runs of different plans anyway (their first difference is named)")
    c.add_argument("--limit", type=int, default=10, metavar="N",
                   help="show at most N differing records, then how many more (default 10)")
    c.add_argument("--stamps", action="store_true",
                   help="show every stamp-level time, not only those over --pct")
    c.set_defaults(fn=cmd_compare)

    tr = sub.add_parser("trace", help="make a trace (the JEDEC test's generators) or say what a trace holds",
                        description="generate: a client or JESD219 enterprise trace for a drive, as op,lba,sectors "
                                    "lines; stats: what a trace in any format replay reads holds (docs/traces.md).")
    trs = tr.add_subparsers(dest="trace_cmd", required=True)

    def drive(sp):
        sp.add_argument("--profile", default="consumer-256gb",
                        help="the simulated drive whose capacity (IDENTIFY) counts (default consumer-256gb)")
        sp.add_argument("--capacity-sectors", type=_int, metavar="N",
                        help="a drive of N 512-byte sectors instead of --profile's")

    g = trs.add_parser("generate", help="a generated trace, as op,lba,sectors lines (docs/traces.md)",
                       description="client: the review's JEDEC client trace statistics (37 M writes and 800 GB a "
                                   "pass on 256 GB, 25% sequential, TRIMs and flushes), scaled to the drive; "
                                   "enterprise: JESD219's enterprise workload. Deterministic for a seed.")
    g.add_argument("kind", choices=trace_gen.KINDS)
    g.add_argument("--out", required=True, help="the trace file to write (refused when it exists, unless --force)")
    g.add_argument("--force", action="store_true", help="replace --out")
    drive(g)
    g.add_argument("--commands", type=_int, help="the trace's commands (default: a pass for this drive: 37 M "
                                                 "writes on 256 GB, scaled to its capacity, plus TRIMs and flushes)")
    g.add_argument("--seed", type=_int, default=1, help="the generator's seed (default 1)")
    g.set_defaults(fn=cmd_trace)
    ts = trs.add_parser("stats", help="commands, bytes, mean write, random/sequential, sizes, LBA bands, TRIMs and "
                                      "flushes of a trace")
    ts.add_argument("trace")
    ts.add_argument("--format", default="auto", choices=trace_mod.FORMATS,
                    help="the trace's format (default auto: from its first line)")
    drive(ts)
    ts.add_argument("--json", action="store_true", help="the figures as one JSON object")
    ts.set_defaults(fn=cmd_trace)

    sw = sub.add_parser("sweep", help="run a plan over axes (plan, step, profile and fault keys, targets): a run "
                                      "a point, on every core or a dask cluster",
                        description="Checks every point of the sweep (file:line), prints what it will cost, runs the "
                                    "points not done yet into --out and writes its manifest, points.parquet and a "
                                    "records dataset partitioned by point (docs/sweeps.md).")
    from fisrig.sweep.spec import builtin_sweeps
    sw.add_argument("sweep", help=f"a built-in sweep ({', '.join(builtin_sweeps())}) or a sweep file (TOML: [sweep] "
                                  "and [[axis]] or [[point]] tables)")
    sw.add_argument("--out", help="the sweep directory (default: runs/sweeps/<sweep name>); run again into it, only "
                                  "the points not done run")
    sw.add_argument("--scheduler", metavar="HOST:PORT", help="a dask scheduler to run on (its workers run this "
                                                             "fisrig build and see --out); default: a local cluster")
    sw.add_argument("--workers", type=_int, help="the local cluster's workers, one process each (default: one a core)")
    sw.add_argument("--force", action="store_true", help="replace another sweep already in --out")
    sw.add_argument("-q", "--quiet", action="store_true", help="no estimate or progress lines")
    sw.set_defaults(fn=cmd_sweep)

    capture_cli.add_parser(sub)

    pl = sub.add_parser("plans", help="list the built-in plans")
    pl.set_defaults(fn=cmd_plans)
    return p


def _one_line(text: object) -> str:
    return " | ".join(l.strip() for l in str(text).splitlines() if l.strip())


def main(argv: list[str] | None = None) -> int:
    """Exit 0 when the run is done, 2 for an input that cannot be used (one line, before
    anything runs), 3 when a run did not end done (it says why), 130 when interrupted."""
    a = parser().parse_args(argv)
    if os.environ.get("CI") and hasattr(a, "quiet"):
        a.quiet = True  # no progress lines in CI logs
    try:
        return a.fn(a)
    except (InputError, TargetUnavailable) as e:
        print(f"fisrig: {_one_line(e)}", file=sys.stderr)
        return 2
    except store.ParquetCheckError as e:
        print(f"fisrig: {_one_line(e)}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("fisrig: interrupted (run.json says so; `fisrig report` reads what was recorded)", file=sys.stderr)
        return 130
    except ReportTooLarge as e:  # the run is done and its records kept: only the report waits
        print(f"fisrig: {_one_line(e)}", file=sys.stderr)
        return 3
    except RuntimeError as e:  # the target failed; run.json says failed and why
        print(f"fisrig: run failed: {_one_line(e)}", file=sys.stderr)
        return 3
    except OSError as e:
        print(f"fisrig: {e.filename or ''}{': ' if e.filename else ''}{e.strerror or _one_line(e)}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - a bug: still one line; FISRIG_TRACEBACK=1 shows where
        if os.environ.get("FISRIG_TRACEBACK"):
            raise
        print(f"fisrig: internal error, a bug (FISRIG_TRACEBACK=1 shows where): {type(e).__name__}: "
              f"{_one_line(e)}", file=sys.stderr)
        return 1
