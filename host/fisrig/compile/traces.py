"""The compiler's trace steps (compile/'s _Compiler takes them in): a trace replayed
(`replay`: a file in one of traces/'s formats, or a generated one) and SNIA PTS's IOPS
matrix (`pts_iops`), each a TRACE instruction whose entries may be shared by reference."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from fisrig_hw import contract

from fisrig.plan import limits, pts_matrix
from fisrig import traces as trace
from fisrig import program_format as pf
from fisrig.compile.estimate import Cost
from fisrig.plan.data_out import SECTOR
from fisrig.plan import DEFAULT_QUEUE_DEPTH, Step


class TraceSteps:
    """The do_* of trace steps, on _Compiler's helpers (trace_op's cache is its `traces`)."""

    def trace_op(self, key, load, *, queue_depth: int, ncq: bool, data: str, compress_pct: int,
                 trims: str = "as_queue", queues: int = 0, step: Step | None = None) -> None:
        """A trace replay. The first replay of a trace (`key`: what its entries come from)
        carries its entries (`load()`); a later one replays them from there (entries_at),
        so a trace replayed four ways is in the program once. Its cost: its commands (less
        its TRIMs when `trims` is "skip") and the bytes they move. Over NVMe (`queues`),
        an entry over the engine's 2 MiB is refused at `step`."""
        if key in self.traces:
            at, entries = self.traces[key]
            self.ops.append(pf.op_trace(len(entries), queue_depth=queue_depth, ncq=ncq, data=data,
                                        compress_pct=compress_pct, trims=trims, entries_at=at, queues=queues))
        else:
            entries = load()
            if queues:
                moving = np.less(entries["op"], pf.TRACE_OPS["T"])
                most = self.nvme_max_bytes() // SECTOR
                big = np.flatnonzero(moving & np.greater(entries["sectors"], most))
                if len(big):
                    raise self.err(step, "trace" if "trace" in step.args else "generator",
                                   f"its command {int(big[0]) + 1} moves {int(entries['sectors'][big[0]])} sectors; "
                                   f"an NVMe command moves at most {most} on this drive (its MDTS, within the "
                                   "engine's 2 MiB)")
            if len(self.traces) < contract.FISRIG_VM_TRACES_SHARED:
                self.traces[key] = (self.offset(), entries)
            self.ops.append(pf.op_trace(entries, queue_depth=queue_depth, ncq=ncq, data=data,
                                        compress_pct=compress_pct, trims=trims, queues=queues))
        # numpy's calls, not its operators: under atheris (tests/fuzz/plan_fuzz.py) an
        # instrumented `==` on arrays kept every result alive (4 GB in a 240 s fuzz run).
        is_trim = np.equal(entries["op"], pf.TRACE_OPS["T"])
        moving = np.less(entries["op"], pf.TRACE_OPS["T"])
        self.cost(Cost(commands=int(len(entries) - (is_trim.sum() if trims == "skip" else 0)),
                       data_bytes=float(entries["sectors"][moving].sum()) * SECTOR))

    def do_replay(self, step: Step) -> None:
        """A trace (a file, in one of traces/'s formats) or a generated one (trace_gen:
        "client" or "enterprise", made for this drive's capacity), replayed at a queue depth;
        `trims` says what its TRIMs do (sent as they come, as DSM, or left out)."""
        from fisrig.traces import generate as trace_gen
        a = step.args
        if ("trace" in a) == ("generator" in a):
            raise self.err(step, "generator" if "generator" in a else None,
                           "replay needs exactly one of trace = \"file\" and generator = \"client\" or \"enterprise\"")
        qd, ncq = self.queue(step, DEFAULT_QUEUE_DEPTH["replay"], True)
        queues = self.nvme_queue_count(step, qd) if self.nvme else 0
        if qd > contract.FISRIG_ENGINE_SLOTS:
            raise self.err(step, "queue_depth", f"queue_depth {qd}: a replay keeps 1..{contract.FISRIG_ENGINE_SLOTS} "
                                                "a queue (over NVMe, more queues go deeper)")
        data, compress = self.written(step)
        trims = a.get("trims", "as_queue")
        self.one_of(step, "trims", trims, pf.TRIMS)
        if "generator" in a:
            kind = a["generator"]
            self.one_of(step, "generator", kind, trace_gen.KINDS)
            if "format" in a:
                raise self.err(step, "format", "format is for trace files; a generated trace needs none")
            n = a.get("commands", trace_gen.default_commands(kind, self.capacity))
            if n < 1:
                raise self.err(step, "commands", f"commands = {n}: at least 1")
            if why := trace_gen.problem(kind, self.capacity, n):
                raise self.err(step, "commands" if "commands" in a and "commands =" in why else "generator", why)
            self.fits(step, "commands", "trace_entries", n, "trace entries")
            # The plan's seed unless the step sets one (not the next seed, as workloads take):
            # replays of one generator in a plan replay one trace, held in the program once.
            seed = a.get("seed", self.plan.seed)
            key = ("generator", kind, n, seed)
            load = lambda: trace_gen.generate(kind, self.capacity, n, seed)  # noqa: E731
        else:
            for key in ("commands", "seed"):
                if key in a:
                    raise self.err(step, key, f"{key} is for generated traces; a trace file holds its commands")
            path = Path(a["trace"])
            if not path.is_absolute() and self.plan.source not in ("<plan>", "<raw>"):
                path = Path(self.plan.source).parent / path
            if not path.is_file():
                raise self.err(step, "trace", f"no trace file {path}" + (" (a directory)" if path.is_dir() else ""))
            fmt = a.get("format", "auto")
            self.one_of(step, "format", fmt, trace.FORMATS)
            key = ("file", str(path.resolve()), fmt)

            def load():
                entries = trace.load(path, self.capacity, fmt)
                self.fits(step, "trace", "trace_entries", len(entries), f"the trace's {len(entries)} lines")
                return entries
        self.trace_op(key, load, queue_depth=qd, ncq=ncq, data=data, compress_pct=compress, trims=trims,
                      queues=queues, step=step)

    def do_pts_iops(self, step: Step) -> None:
        """SNIA SSS PTS's IOPS test: rounds of the block size x R/W mix matrix (each mix, then
        each size, largest first, as the PTS orders them), until the tracked cell's IOPS holds
        steady by the PTS rule (the VM decides: struct fisrig_op_loop) or max_rounds ran.
        Each cell is its own phase, "<label> <kib> KiB <read>/<write>"; the rounds are told
        apart by the LOOP_PASS record each pass ends with (fisrig.pts)."""
        a = {**pts_matrix.DEFAULTS, **step.args}
        sizes = a.get("block_sizes_kib", pts_matrix.BLOCK_SIZES_KIB)
        mixes = a.get("read_pcts", pts_matrix.READ_PCTS)
        if not sizes or not mixes:
            raise self.err(step, "block_sizes_kib" if not sizes else "read_pcts", "needs at least one value")
        for m in mixes:
            if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m <= 100:
                raise self.err(step, "read_pcts", f"read_pcts: {m!r} is not a whole percentage 0..100")
        for k in sizes:
            self.sectors_of_kib(step, "block_sizes_kib", k)
        cells = pts_matrix.cells(a)
        if (a["track_kib"], a["track_read_pct"]) not in cells:
            raise self.err(step, "track_kib", f"the tracked cell ({a['track_kib']:g} KiB, {a['track_read_pct']}% "
                                              "read) is not one of the matrix's cells")
        rounds, window = a["max_rounds"], a["window"]
        if not 2 <= window <= contract.FISRIG_VM_STEADY_WINDOW_MAX:
            raise self.err(step, "window", f"window = {window}: 2..{contract.FISRIG_VM_STEADY_WINDOW_MAX} rounds")
        if not window <= rounds <= limits.top("loop_count"):
            raise self.err(step, "max_rounds", f"max_rounds = {rounds}: at least the window ({window})")
        for key in ("range_pct", "slope_pct"):
            if not 0 <= a[key] <= 255:
                raise self.err(step, key, f"{key} = {a[key]}: 0..255")
        secs = a["seconds_per_cell"]
        ticks = int(secs * pf.TICK_HZ)
        if ticks < 1:
            raise self.err(step, "seconds_per_cell", f"seconds_per_cell = {secs}: must be > 0")
        self.fits(step, "seconds_per_cell", "stop_ticks", ticks, "in 150 MHz ticks")
        qd, ncq = self.queue(step, 32, True)
        start, count = self.span(step)
        base = step.label or self.current or step.do
        loop_at = len(self.ops)
        self.ops.append(pf.op_loop(0))  # its size; filled in once the tracked cell's offset is known
        tracked, first = 0, len(self.costs)
        for kib, read in cells:
            self.mark(pts_matrix.cell_label(base, kib, read))
            if (kib, read) == (a["track_kib"], a["track_read_pct"]):
                tracked = self.offset()
            self.workload(step, pattern="uniform", qd=qd, ncq=ncq, start=start, count=count,
                          sizes=[(self.sectors_of_kib(step, "block_sizes_kib", kib), 1)], read_pct=read,
                          stop_ticks=ticks, seed_per_pass=True)  # each round new LBAs, as the PTS's
        self.ops[loop_at] = pf.op_loop(rounds, steady_pc=tracked, steady_window=window,
                                       steady_range_pct=a["range_pct"], steady_slope_pct=a["slope_pct"])
        self.ops.append(pf.op_end_loop())
        # At most max_rounds passes: the estimate takes them all (its bound), and the
        # progress line a pass's phases in turn.
        self.costs += self.costs[first:] * (rounds - 1)
        self.cost_markers += self.cost_markers[first:] * (rounds - 1)
