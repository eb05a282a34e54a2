"""`fisrig trace`: generate a trace, or read one and say what it holds (cli/ parses)."""
from __future__ import annotations

import os
from pathlib import Path

from fisrig.targets import drive_catalog
from fisrig import traces as trace_mod
from fisrig.traces import generate as trace_gen
from fisrig.errors import InputError
from fisrig.targets import identify_fields, make_target


def _trace_drive(a) -> tuple[int, str]:
    """The drive a trace is made for or read against: --capacity-sectors, else the profile's
    IDENTIFY (its LBA48 sectors, as a run compiles for); its sectors and how to name it."""
    if a.capacity_sectors is not None:
        if a.capacity_sectors < 1:
            raise InputError(f"--capacity-sectors {a.capacity_sectors}", "a drive of at least one sector")
        return a.capacity_sectors, f"{a.capacity_sectors:,} sectors"
    drive_catalog.check_profile(a.profile, f"--profile {a.profile}")
    try:
        words = make_target("model", a.profile).identify()
    except drive_catalog.DriveRefused as e:
        raise InputError(f"--profile {a.profile}", e.message) from None
    capacity = identify_fields(words)["lba48_sectors"]
    return capacity, f"{a.profile}, {capacity:,} sectors"


def _print_trace_stats(st: dict, head: str, notes: list[str]) -> None:
    """`fisrig trace stats`'s lines (docs/traces.md shows them)."""
    cap = st["capacity_sectors"]
    print(head)
    for note in notes:
        print(f"  note: {note}")
    n = max(st["commands"], 1)
    if st["writes"]:
        sizes = ", ".join(f"{b / 1024:g} KiB {100 * share:.1f}%" for b, share in st["write_sizes"])
        bands = ", ".join(f"{name} {100 * share:.1f}%" for name, share in
                          zip(("first 5%", "next 15%", "last 80%"), st["band_shares"]))
        print(f"  writes:  {st['writes']:,} ({100 * st['writes'] / n:.1f}%): {st['write_bytes'] / 1e9:.1f} GB, mean "
              f"{st['mean_write_bytes']:,.0f} bytes; random {100 * st['random_share']:.1f}%, sequential "
              f"{100 * st['sequential_share']:.1f}% (starts where one of the {trace_mod.SEQ_WINDOW} writes before "
              f"ended)")
        print(f"           sizes: {sizes}")
        print(f"           4 KiB-aligned {100 * st['aligned_4k_share']:.1f}% (of those of 4 KiB and more); under "
              f"4 KiB {100 * st['under_4k_share']:.1f}%; by LBA: {bands} of the drive")
    else:
        print("  writes:  0")
    print(f"  reads:   {st['reads']:,}" + (f": {st['read_bytes'] / 1e9:.1f} GB" if st["reads"] else ""))
    print(f"  TRIMs:   {st['trims']:,}" + (f": {st['trimmed_bytes'] / 1e9:.1f} GB, {100 * st['trimmed_share']:.1f}% "
                                           f"of the drive ({100 * st['trimmed_once_share']:.1f}% counted once)"
                                           if st["trims"] else ""))
    print(f"  flushes: {st['flushes']:,}" + (f" (one per {st['writes_per_flush']:.1f} writes)"
                                             if st["writes_per_flush"] else ""))
    print(f"  drive:   {cap:,} sectors ({cap * 512 / 1e9:.1f} GB)")


def cmd_trace(a) -> int:
    """`trace generate`: a generated trace written as op,lba,sectors lines; `trace stats`:
    what a trace holds (fisrig.trace.stats), in any format replay reads."""
    import json
    import time

    import numpy as np
    if a.trace_cmd == "generate":
        out = Path(a.out)
        if out.is_dir():
            raise InputError(f"--out {a.out}", "is a directory; name a file")
        if out.exists() and not a.force:
            raise InputError(f"--out {a.out}", "exists; add --force to replace it")
        if not out.parent.is_dir():
            raise InputError(f"--out {a.out}", f"no such directory {str(out.parent)!r}")
        if a.commands is not None and (why := trace_gen.problem(a.kind, trace_gen.MIN_CAPACITY, a.commands)):
            raise InputError(f"--commands {a.commands}", why)
        capacity, drive = _trace_drive(a)
        if why := trace_gen.problem(a.kind, capacity, a.commands):
            raise InputError(f"--capacity-sectors {capacity}" if a.capacity_sectors is not None else
                             f"--profile {a.profile}", why)
        t0 = time.monotonic()
        entries = trace_gen.generate(a.kind, capacity, a.commands, a.seed)
        t1 = time.monotonic()
        tmp = out.with_name(out.name + ".tmp")
        trace_mod.write(tmp, entries)
        os.replace(tmp, out)  # a trace half written is never left under its name
        op = entries["op"]
        writes = op == trace_mod.W
        print(f"trace: {a.kind}, seed {a.seed}, for {drive}: {len(entries):,} commands into {out} "
              f"(generated in {t1 - t0:.1f} s, written in {time.monotonic() - t1:.1f} s)")
        print(f"  {int(writes.sum()):,} writes ({entries['sectors'][writes].sum(dtype=np.int64) * 512 / 1e9:.1f} GB), "
              f"{int((op == trace_mod.T).sum()):,} TRIMs, {int((op == trace_mod.F).sum()):,} flushes; "
              f"`fisrig trace stats {out}` says more")
        return 0
    capacity, drive = _trace_drive(a)
    t0 = time.monotonic()
    tr = trace_mod.read(Path(a.trace), capacity, a.format)
    st = trace_mod.stats(tr.entries, capacity)
    if a.json:
        print(json.dumps({"trace": a.trace, "format": tr.format, "seconds": tr.seconds, "notes": tr.notes, **st}))
        return 0
    span = f" over {tr.seconds:,.3f} s of trace time (replay is closed-loop: times are not waited for)" \
        if tr.seconds is not None else ""
    _print_trace_stats(st, f"trace: {a.trace} ({tr.format}): {st['commands']:,} commands{span}; read and counted in "
                           f"{time.monotonic() - t0:.1f} s, against {drive}", tr.notes)
    return 0
