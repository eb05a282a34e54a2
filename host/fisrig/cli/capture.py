"""`fisrig capture show RUN` and `fisrig capture export RUN --perfetto|--vcd`: a run's
capture.parquet as an analyzer lists it, or for Perfetto and waveform viewers."""
from __future__ import annotations

import re
from pathlib import Path

from fisrig.capture.format import EXPORTS
from fisrig.errors import InputError
from fisrig.records import run_state

_TIME = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ns|us|ms|s)?\s*$")
_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000, None: 1_000}


def time_ns(flag: str, text: str | None) -> int | None:
    """A time on the rig's clock, as --from/--to give it: a number with ns, us (the default),
    ms or s; InputError naming the flag otherwise."""
    if text is None:
        return None
    m = _TIME.match(text)
    if not m:
        raise InputError(f"{flag} {text}", "a time on the run's clock: a number with ns, us (the default), ms or s, "
                                           "e.g. 12.5us")
    return round(float(m.group(1)) * _NS[m.group(2)])


def _run_dir(text: str) -> Path:
    run_dir = Path(text)
    if not run_dir.is_dir():
        raise InputError(text, "no such run directory")
    run_state.read_meta(run_dir)  # a directory that is not a run: one line saying so
    return run_dir


def cmd_capture(a) -> int:
    from fisrig.capture import show
    run_dir = _run_dir(a.run)
    if a.capture_cmd == "show":
        t0, t1 = time_ns("--from", a.t_from), time_ns("--to", a.to)
        if t0 is not None and t1 is not None and t1 < t0:
            raise InputError(f"--to {a.to}", f"is before --from {a.t_from}")
        for line in show.lines(run_dir, t0, t1, a.window, a.payload):
            print(line)
        return 0
    if a.perfetto == a.vcd:
        raise InputError("fisrig capture export", "say --perfetto or --vcd")
    show.read(run_dir, ["window"])  # no capture: one line before anything is written
    out = Path(a.out) if a.out else run_dir / EXPORTS[0 if a.perfetto else 1]
    if out.is_dir():
        raise InputError(f"--out {a.out}", "is a directory; name a file")
    if not out.parent.is_dir():
        raise InputError(f"--out {a.out}", f"no such directory {str(out.parent)!r}")
    if out.exists() and not a.force:
        raise InputError(f"--out {out}", "exists; add --force to replace it")
    if a.vcd and not a.force:
        from fisrig.capture.vcd import gtkw_path
        if gtkw_path(out).exists():
            raise InputError(f"--out {out}", f"its GTKWave save file {gtkw_path(out)} exists; add --force to replace it")
    if a.perfetto:
        from fisrig.capture import perfetto
        perfetto.write(run_dir, out)
        print(f"capture: {out} (open it at https://ui.perfetto.dev, or with Perfetto's trace_processor)")
    else:
        from fisrig.capture import vcd
        vcd.write(run_dir, out)
        from fisrig.capture.vcd import gtkw_path
        opened = f"gtkwave {gtkw_path(out)}: at the first trigger; " if gtkw_path(out).exists() else ""
        print(f"capture: {out} ({opened}or open it with GTKWave or Surfer)")
    return 0


def add_parser(sub) -> None:
    cp = sub.add_parser("capture", help="a run's capture of the wire (capture.parquet): listed as an analyzer "
                                        "lists it, or exported for Perfetto or a waveform viewer",
                        description="show: a line per FIS, primitive run and event, fields decoded; export: a "
                                    "Perfetto trace or a VCD (docs/capture.md).")
    cs = cp.add_subparsers(dest="capture_cmd", required=True)
    s = cs.add_parser("show", help="the capture as an analyzer lists it")
    s.add_argument("run", help="a run directory")
    s.add_argument("--from", dest="t_from", metavar="T", help="from this time on the run's clock (e.g. 12.5us, 3ms)")
    s.add_argument("--to", metavar="T", help="up to this time")
    s.add_argument("--window", type=int, metavar="N", help="only window N")
    s.add_argument("--payload", action="store_true",
                   help="each FIS's payload under it, in hex (a capture armed with payload_dwords)")
    s.set_defaults(fn=cmd_capture)
    e = cs.add_parser("export", help="a Perfetto trace or a VCD of the capture")
    e.add_argument("run", help="a run directory")
    e.add_argument("--perfetto", action="store_true", help="a Perfetto trace (default RUN/capture.perfetto-trace)")
    e.add_argument("--vcd", action="store_true", help="a VCD for GTKWave or Surfer (default RUN/capture.vcd)")
    e.add_argument("--out", help="the file to write (refused when it exists, unless --force)")
    e.add_argument("--force", action="store_true", help="replace --out")
    e.set_defaults(fn=cmd_capture)
