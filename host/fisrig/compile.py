"""Plan -> program bytes for the rig's VM, with every check that needs the drive's capacity."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from fisrig_hw import contract

from . import limits, trace
from . import plan as plan_mod
from . import program_format as pf
from .data_out import MAX_SECTORS, SECTOR, problem as data_out_problem
from .errors import closest
from .estimate import EVENT_SLACK, Cost, workload_cost
from .plan import DATA_SOURCES, Plan, PlanError, Step

STATUS_ERR = 0x01

# The protocol each known opcode needs; anything else must say `protocol = "..."`.
PROTOCOL_OF = {
    0x06: "dma_out", 0x25: "dma_in", 0x2F: "pio_in", 0x35: "dma_out", 0x3D: "dma_out",
    0x47: "dma_in", 0x60: "fpdma_in", 0x61: "fpdma_out", 0x64: "fpdma_out", 0xB4: "non_data",
    0xE7: "non_data", 0xEA: "non_data", 0xEC: "pio_in", 0xEF: "non_data", 0xF1: "pio_out",
    0xF3: "non_data", 0xF4: "pio_out",
}
# SMART (B0h) runs the protocol of its subcommand (FEATURES 7:0): READ DATA and READ
# THRESHOLDS bring a 512-byte page, the rest are non-data (as sim/device's ata_protocol.h).
SMART_PROTOCOL_OF = {0xD0: "pio_in", 0xD1: "pio_in", 0xD8: "non_data", 0xD9: "non_data", 0xDA: "non_data"}
_PASSWORD = (b"\0\0" + b"fisrig".ljust(32, b"\0")).ljust(512, b"\0")
# A raw step's H2D fields and expectation: each is checked against its field's width.
RAW_FIELDS = ("command", "features", "count", "lba", "device", "icc", "aux", "expect_status", "expect_error")
# A power_loss step: its default span (1 MiB: every cycle reads it back), the largest span
# (512 MiB), the most cycles (each is about 400 bytes of program and 10 us to compile), and its writes' default mix.
DEFAULT_POWER_SPAN = 2048
MAX_VERIFY_SPAN = 1 << 20
MAX_POWER_CYCLES = 200_000
DEFAULT_POWER_SIZES = [[4, 4], [16, 2], [64, 1]]
# HD Tach draws a few hundred zones; each is one instruction, so a bound keeps the program small.
MAX_ZONES = 1 << 16
# One DSM TRIM command carries a 512-byte block of 64 ranges of at most 65535 sectors
# (ATA's 16-bit range length; vm.c dsm_block).
TRIM_SECTORS_PER_CMD = contract.FISRIG_VM_DSM_BYTES // 8 * 0xFFFF
# How many times a command's own failure goes again when the plan asks for "retry" without
# saying: libata's EH tries a command 5 times in all; 3 more sends is a rig's habit that still
# ends a drive that fails every command quickly.
DEFAULT_RETRIES = 3
# The queue depth each step kind keeps when its plan does not say (sweeps and TRIM go one
# command at a time); the report compares the depth a phase held with this.
DEFAULT_QUEUE_DEPTH = {"fill": 32, "replay": 32, "workload": 1, "sweep": 1, "trim": 1, "pts_iops": 32}


def phase_label(label: str | None, current: str | None, do: str) -> str:
    """The label a step's records carry: its own, else the phase it follows, else its kind."""
    return label or current or do


def asked_queue_depth(do: str, args: dict) -> int | None:
    """The commands in flight a step asks for; None for steps that issue a command or two."""
    if do not in DEFAULT_QUEUE_DEPTH:
        return None
    return args.get("queue_depth", DEFAULT_QUEUE_DEPTH[do])


@dataclass
class Compiled:
    program: bytes
    markers: dict[int, str]  # marker id -> the label records carry
    capacity: int
    costs: list[Cost] = field(default_factory=list)  # one per instruction, for estimate.of
    cost_markers: list[int] = field(default_factory=list)  # the marker each cost's records carry (progress)
    # The power_loss steps, as power_verdicts.classify reads their records: marker, label,
    # span, cycles and where each cycle cut (docs/power-loss.md).
    power_loss: list[dict] = field(default_factory=list)


class _Compiler:
    def __init__(self, plan: Plan, capacity: int):
        self.plan, self.capacity = plan, capacity
        self.ops: list[bytes] = []
        self.markers: dict[str, int] = {}
        self.current: str | None = None
        self.seed = plan.seed
        self.costs: list[Cost] = []
        self.cost_markers: list[int] = []
        self.traces: dict = {}  # what a trace's entries came from -> (program offset, entries)
        self.power_loss: list[dict] = []
        self.policy_now = ("fail", 0, 0, 0)  # the VM's at a run's start
        self.sampling = False  # the current sampler is on at this point of the program,
        self.sample_period = 0  # every so many ticks

    def one_of(self, step: Step, key: str, value, valid) -> None:
        """A named choice: refused with the closest valid name and all of them (a value
        that is no name at all, a list or a table, too)."""
        if not isinstance(value, str) or value not in valid:
            raise self.err(step, key, f"{key} = {value!r} is not valid {closest(value, valid)}")

    def fits(self, step: Step, key: str | None, field: str, value: int, what: str | None = None) -> int:
        """`value`, or a refusal when it does not fit the program field it is packed into."""
        if why := limits.too_wide(field, value):
            given = f"{key} = {step.args[key]}: " if key in step.args else ""
            raise self.err(step, key, given + (f"{what}, {why}" if what else why))
        return value

    def err(self, step: Step, key: str | None, msg: str) -> PlanError:
        return self.plan.error(step, key, msg)

    def mark(self, label: str) -> None:
        if label != self.current:
            mid = self.markers.setdefault(label, len(self.markers) + 1)
            self.ops.append(pf.op_mark(mid))
            self.current = label

    def sectors_of_kib(self, step: Step, key: str, kib: float) -> int:
        if isinstance(kib, bool) or not isinstance(kib, (int, float)):
            raise self.err(step, key, f"{key}: a size in KiB is a number, not {kib!r}")
        n = kib * 1024 / SECTOR
        if kib <= 0 or n != int(n):
            raise self.err(step, key, f"{key} = {kib}: the transfer size must be a positive multiple of 512 bytes")
        if n > MAX_SECTORS:
            raise self.err(step, key, f"{key} = {kib}: at most {MAX_SECTORS * SECTOR // 1024} KiB per command")
        return int(n)

    def span(self, step: Step) -> tuple[int, int]:
        a = step.args
        if "lba_start" in a or "lba_count" in a:
            start, count = a.get("lba_start", 0), a.get("lba_count", self.capacity - a.get("lba_start", 0))
            if start < 0 or count <= 0 or start + count > self.capacity:
                key = "lba_count" if "lba_count" in a else "lba_start"
                raise self.err(step, key, f"LBAs {start}..{start + count - 1} run past the drive's last LBA {self.capacity - 1}")
            return start, count
        pct = a.get("span_pct", 100)
        if not 0 < pct <= 100:
            raise self.err(step, "span_pct", f"span_pct = {pct}: must be in (0, 100]")
        count = int(self.capacity * pct / 100) // 8 * 8
        if not count:
            raise self.err(step, "span_pct", f"span_pct = {pct}: less than 8 LBAs of this drive")
        return 0, count

    def queue(self, step: Step, default_qd: int, default_ncq: bool) -> tuple[int, bool]:
        qd = step.args.get("queue_depth", default_qd)
        ncq = step.args.get("ncq", default_ncq)
        if not 1 <= qd <= 32:
            raise self.err(step, "queue_depth", f"queue_depth {qd} is over 32" if qd > 32 else f"queue_depth {qd} must be at least 1")
        if qd > 1 and not ncq:
            raise self.err(step, "queue_depth", f"queue_depth {qd} needs ncq = true (DMA commands go one at a time)")
        return qd, ncq

    def written(self, step: Step) -> tuple[str, int]:
        """What a step's writes carry: its own `data` and `compress_pct`, else the plan's."""
        data = step.args.get("data", self.plan.data)  # the plan's are checked where they are set
        self.one_of(step, "data", data, DATA_SOURCES)
        compress = step.args.get("compress_pct", self.plan.compress_pct)
        if not 0 <= compress <= 100:
            raise self.err(step, "compress_pct", f"compress_pct = {compress}: must be 0..100")
        return data, compress

    def cost(self, c: Cost) -> None:
        """An instruction's cost, with the marker its records carry (progress and estimate)."""
        c.sample_period_ticks = self.sample_period if self.sampling else 0
        self.costs.append(c)
        self.cost_markers.append(self.markers[self.current])

    def raw_cost(self, protocol: str) -> None:
        """A one-descriptor instruction's: a command, or an event record and its slack."""
        self.cost(Cost(commands=int(protocol not in ("power", "link")),
                       extra_records=int(protocol in ("power", "link")) * (1 + EVENT_SLACK)))

    def offset(self) -> int:
        """The program offset the next instruction will have."""
        return pf.HEADER_BYTES + sum(map(len, self.ops))

    def trace_op(self, key, load, *, queue_depth: int, ncq: bool, data: str, compress_pct: int,
                 trims: str = "as_queue") -> None:
        """A trace replay. The first replay of a trace (`key`: what its entries come from)
        carries its entries (`load()`); a later one replays them from there (entries_at),
        so a trace replayed four ways is in the program once. Its cost: its commands (less
        its TRIMs when `trims` is "skip") and the bytes they move."""
        if key in self.traces:
            at, entries = self.traces[key]
            self.ops.append(pf.op_trace(len(entries), queue_depth=queue_depth, ncq=ncq, data=data,
                                        compress_pct=compress_pct, trims=trims, entries_at=at))
        else:
            entries = load()
            if len(self.traces) < contract.FISRIG_VM_TRACES_SHARED:
                self.traces[key] = (self.offset(), entries)
            self.ops.append(pf.op_trace(entries, queue_depth=queue_depth, ncq=ncq, data=data,
                                        compress_pct=compress_pct, trims=trims))
        # numpy's calls, not its operators: under atheris (tests/fuzz/plan_fuzz.py) an
        # instrumented `==` on arrays kept every result alive (4 GB in a 240 s fuzz run).
        is_trim = np.equal(entries["op"], pf.TRACE_OPS["T"])
        moving = np.less(entries["op"], pf.TRACE_OPS["T"])
        self.cost(Cost(commands=int(len(entries) - (is_trim.sum() if trims == "skip" else 0)),
                       data_bytes=float(entries["sectors"][moving].sum()) * SECTOR))

    def raw(self, protocol: str, command: int, expect: str = "ok", **kw) -> None:
        data_out = kw.pop("data_out", b"")
        self.ops.append(pf.op_raw(pf.desc(protocol, command, **kw), data_out=data_out,
                                  **self.expectation(expect)))
        self.raw_cost(protocol)

    @staticmethod
    def expectation(expect: str, status: int | None = None, error: int | None = None) -> dict:
        if expect == "any":
            return {"result": pf.ANY_RESULT}
        e = {"result": pf.RESULT["ok"] if expect == "ok" else pf.RESULT["ata_error"]}
        if status is not None:
            e["status_mask"], e["status_value"] = 0xFF, status
        if error is not None:
            e["error_mask"], e["error_value"] = 0xFF, error
        return e

    def workload(self, step: Step, *, pattern: str, qd: int, ncq: bool, start: int, count: int,
                 sizes: list[tuple[int, int]], read_pct: int = 0, trim_pct: int = 0, flush_pct: int = 0,
                 stop_commands: int = 0, stop_bytes: int = 0, stop_ticks: int = 0) -> None:
        a = step.args
        for s, _ in sizes:
            if s > count:
                raise self.err(step, "transfer_kib", "the transfer size is larger than the LBA span")
        data, compress = self.written(step)
        self.seed += 1
        if "seed" in a:
            seed = self.fits(step, "seed", "seed", a["seed"])
        else:
            seed = self.fits(step, None, "seed", self.seed, "the plan's seed + this workload's number")
        theta = self.fits(step, "zipf_theta", "zipf_theta_milli", int(round(a.get("zipf_theta", 0.0) * 1000)),
                          "in thousandths")
        self.ops.append(pf.op_workload(
            pattern=pattern, queue_depth=qd, ncq=ncq, data=data, compress_pct=compress,
            read_pct=read_pct, trim_pct=trim_pct, flush_pct=flush_pct, fua=a.get("fua", False),
            seed=seed, zipf_theta=theta / 1000, lba_start=start,
            lba_span=count, stop_commands=stop_commands, stop_bytes=stop_bytes, stop_ticks=stop_ticks,
            sizes=sizes))
        self.cost(workload_cost(sizes=sizes, read_pct=read_pct, trim_pct=trim_pct, flush_pct=flush_pct,
                                stop_commands=stop_commands, stop_bytes=stop_bytes, stop_ticks=stop_ticks))

    def sizes(self, step: Step, default: list) -> list[tuple[int, int]]:
        """A step's transfer sizes as (sectors, weight): `sizes_kib` pairs, else `transfer_kib`
        (weight 1), else `default` ([kib, weight] pairs)."""
        a = step.args
        if "sizes_kib" not in a:
            key = "transfer_kib" if "transfer_kib" in a else "sizes_kib"
            pairs = [[a["transfer_kib"], 1]] if "transfer_kib" in a else default
            return [(self.sectors_of_kib(step, key, k), w) for k, w in pairs]
        pairs = a["sizes_kib"]
        if not 1 <= len(pairs) <= 8 or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise self.err(step, "sizes_kib", "sizes_kib takes 1 to 8 [kib, weight] pairs")
        for _, w in pairs:
            if isinstance(w, bool) or not isinstance(w, int):
                raise self.err(step, "sizes_kib", f"sizes_kib: a weight is a whole number, not {w!r}")
            self.fits(step, "sizes_kib", "size_weight", w, "a weight")
        sizes = [(self.sectors_of_kib(step, "sizes_kib", k), w) for k, w in pairs]
        if not 0 < sum(w for _, w in sizes) <= limits.top("size_weight"):
            raise self.err(step, "sizes_kib", f"sizes_kib: the weights add up to {sum(w for _, w in sizes)}; "
                                              f"they must add up to 1..{limits.top('size_weight')}")
        return sizes

    # ---- one method per step kind ----

    def do_secure_erase(self, step: Step) -> None:
        self.raw("pio_out", 0xF1, data_out=_PASSWORD)
        self.raw("non_data", 0xF3)
        self.raw("pio_out", 0xF4, data_out=_PASSWORD)

    def do_sanitize(self, step: Step) -> None:
        self.raw("non_data", 0xB4, features=0x0012, lba=0x426B4572)

    def do_flush(self, step: Step) -> None:
        self.raw("non_data", 0xEA)

    def do_identify(self, step: Step) -> None:
        self.raw("pio_in", 0xEC)

    def do_drain(self, step: Step) -> None:
        self.ops.append(pf.op_drain())

    def do_comreset(self, step: Step) -> None:
        self.raw("link", pf.LINK_COMRESET)

    def do_power_off(self, step: Step) -> None:
        self.raw("power", pf.POWER_OFF)

    def do_power_on(self, step: Step) -> None:
        self.raw("power", pf.POWER_ON)
        self.raw("link", pf.LINK_WAIT_UP)

    def do_rails(self, step: Step) -> None:
        """How the power pins take the power edges from here on (engine_if.h
        FISRIG_POWER_STAGE): the pins named switch, each its off_ms after a cut or power
        off and its on_ms after power on; the others stay as the rig starts them (the
        rails on, P3 released)."""
        a = step.args
        pins = a.get("pins")
        if not pins:
            raise self.err(step, "pins", "pins must name the pins the power edges switch, of "
                           + ", ".join(f'"{p}"' for p in pf.POWER_PINS))
        for p in pins:
            self.one_of(step, "pins", p, pf.POWER_PINS)
        if len(set(pins)) != len(pins):
            raise self.err(step, "pins", "a pin is named twice")
        offsets = {}
        for key in ("off_ms", "on_ms"):
            ms = a.get(key, [0] * len(pins))
            if len(ms) != len(pins) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in ms):
                raise self.err(step, key, f"{key} must give a time in ms for each of the {len(pins)} pins")
            offsets[key] = [self.fits(step, key, "timeout_ticks", int(round(v * pf.TICK_HZ / 1e3)), "in 150 MHz ticks")
                            for v in ms]
        for name, pin in pf.POWER_PINS.items():
            used = name in pins
            i = pins.index(name) if used else 0
            self.raw("power", pf.POWER_STAGE, features=pin, count=int(used),
                     timeout_ticks=offsets["off_ms"][i] if used else 0, data_word=offsets["on_ms"][i] if used else 0)

    def do_current(self, step: Step) -> None:
        """The drive's current sampled from here (engine_if.h FISRIG_POWER_SAMPLE) every
        every_us (4 us, a power module's 250 kS/s, unless given), or no longer (on = false)."""
        a = step.args
        self.sampling = a.get("on", True)
        if not self.sampling:
            if "every_us" in a:
                raise self.err(step, "every_us", "every_us is for a current step that turns sampling on")
            self.raw("power", pf.POWER_SAMPLE, count=0)
            return
        us = a.get("every_us", pf.CURRENT_PERIOD_TICKS * 1e6 / pf.TICK_HZ)
        if why := plan_mod.current_period_problem("every_us", us):
            raise self.err(step, "every_us", why)
        self.sample_period = int(round(us * pf.TICK_HZ / 1e6))
        self.raw("power", pf.POWER_SAMPLE, count=1, timeout_ticks=self.sample_period)

    def do_power_cut_at(self, step: Step) -> None:
        a = step.args
        event = a.get("event", "h2d")
        self.one_of(step, "event", event, pf.FIS_EVENT)
        count = a.get("count", 1)
        if count < 1:
            raise self.err(step, "count", "count must be at least 1")
        self.fits(step, "count", "count", count)
        delay = self.fits(step, "delay_us", "timeout_ticks", int(round(a.get("delay_us", 0) * pf.TICK_HZ / 1e6)),
                          "in 150 MHz ticks")
        self.raw("power", pf.POWER_OFF_AT_EVENT, features=pf.FIS_EVENT[event], count=count, timeout_ticks=delay)

    def do_power_loss(self, step: Step) -> None:
        """Cycles of: writes (the integrity stamp) over a small span, a cut armed at a FIS
        event plus a delay (swept across the cycles), rails off for off_ms, on, the drive
        waited for (a drive that does not come back ends the run: its verdict), then a
        verify pass over the span. A FLUSH and a verify pass first give the span's durable
        state before the cycles. docs/power-loss.md; power_verdicts.py classifies what each cut did."""
        a = step.args
        if any(p["label"] == self.current for p in self.power_loss):
            raise self.err(step, "label", f"its phase {self.current!r} is another power_loss step's: give it a "
                                          "label of its own (a step's verdicts are its phase's)")
        cycles = a.get("cycles", 100)
        if not 1 <= cycles <= MAX_POWER_CYCLES:
            raise self.err(step, "cycles", f"cycles = {cycles}: must be 1..{MAX_POWER_CYCLES}")
        cut_in = a.get("cut_in", "writes")
        self.one_of(step, "cut_in", cut_in, ("writes", "flush", "trim"))
        qd, ncq = self.queue(step, 1, True)
        default_event = ("sdb" if ncq else "d2h") if cut_in == "writes" else "h2d"
        event = a.get("event", default_event)
        self.one_of(step, "event", event, pf.FIS_EVENT)
        count = a.get("count", qd + 4 if cut_in == "writes" else 1)
        if count < 1:
            raise self.err(step, "count", "count must be at least 1")
        self.fits(step, "count", "count", count)
        if {"delay_ticks", "delay_ticks_to"} & set(a) and {"delay_ns", "delay_ns_to"} & set(a):
            raise self.err(step, "delay_ns", "give the delay in ticks or in ns, not both")
        if "delay_ns" in a or "delay_ns_to" in a:
            lo_key, hi_key, unit = "delay_ns", "delay_ns_to", pf.TICK_HZ / 1e9
        else:
            lo_key, hi_key, unit = "delay_ticks", "delay_ticks_to", 1
        lo = int(round(a.get(lo_key, 0) * unit))
        hi = int(round(a.get(hi_key, a.get(lo_key, 0)) * unit))
        if hi < lo:
            raise self.err(step, hi_key, f"{hi_key} is below {lo_key}")
        self.fits(step, hi_key if hi_key in a else lo_key, "timeout_ticks", hi, "in 150 MHz ticks")
        delays = [lo + (hi - lo) * i // max(1, cycles - 1) for i in range(cycles)]
        if {"span_pct", "lba_start", "lba_count"} & set(a):
            start, span = self.span(step)
        else:
            start, span = 0, min(DEFAULT_POWER_SPAN, self.capacity) // 8 * 8
        if span > MAX_VERIFY_SPAN:
            raise self.err(step, "lba_count" if "lba_count" in a else "span_pct",
                           f"a span of {span} LBAs: every cycle reads its span back, at most {MAX_VERIFY_SPAN} LBAs")
        data, compress = self.written(step)
        if data != "stamp":
            raise self.err(step, "data", f"data = {data!r}: a power-loss verdict reads the integrity stamp back (data = \"stamp\")")
        sizes = self.sizes(step, DEFAULT_POWER_SIZES)
        flush_pct = a.get("flush_pct", 0)
        if not 0 <= flush_pct <= 100:
            raise self.err(step, "flush_pct", f"flush_pct = {flush_pct}: must be 0..100")
        commands = a.get("commands", 64)
        if commands < 1:
            raise self.err(step, "commands", "commands must be at least 1")
        self.fits(step, "commands", "stop_commands", commands)
        off = self.fits(step, "off_ms", "idle_ticks", int(a.get("off_ms", 100) * pf.TICK_HZ / 1e3), "in 150 MHz ticks")
        ready = self.fits(step, "ready_timeout_ms", "timeout_ticks", int(a.get("ready_timeout_ms", 10_000) * pf.TICK_HZ / 1e3),
                          "in 150 MHz ticks")
        if off < 1 or ready < 1:
            raise self.err(step, "off_ms" if off < 1 else "ready_timeout_ms", "must be over one tick")
        reads = -(-span // pf.VERIFY_MAX_SECTORS)
        for size, _ in sizes:
            if size > span:
                raise self.err(step, "sizes_kib" if "sizes_kib" in a else "transfer_kib",
                               "the transfer size is larger than the LBA span")
        fua = a.get("fua", False)
        if "seed" in a:
            seeds = [self.fits(step, "seed", "seed", a["seed"])] * cycles
        else:
            seeds = [self.seed + 1 + i for i in range(cycles)]
            self.fits(step, None, "seed", seeds[-1], "the plan's seed + this step's cycles")
            self.seed += cycles
        # Each cycle is the same instructions but for its delay and its writes' seed: they
        # are packed once and repeated (400,000 cycles took the compiler over 20 s one
        # instruction at a time: tests/fuzz/regressions/plan/).
        verify = pf.op_verify(start, span)
        arm = lambda delay: pf.op_raw(pf.desc("power", pf.POWER_OFF_AT_EVENT, features=pf.FIS_EVENT[event],  # noqa: E731
                                              count=count, timeout_ticks=delay))
        writes = lambda seed: pf.op_workload(  # noqa: E731
            pattern="uniform", queue_depth=qd, ncq=ncq, data="stamp", compress_pct=compress, read_pct=0,
            trim_pct=0, flush_pct=flush_pct, fua=fua, seed=seed, zipf_theta=0, lba_start=start, lba_span=span,
            stop_commands=commands, stop_bytes=0, stop_ticks=0, sizes=sizes)
        cut_by = {"writes": b"", "flush": pf.op_raw(pf.desc("non_data", 0xEA)),
                  "trim": pf.op_trim(start, span, False)}[cut_in]
        after = b"".join([
            pf.op_raw(pf.desc("power", pf.POWER_OFF)),  # if the cut has not fired, now
            pf.op_idle(off),
            # POWER ON waits for the link and the signature: a drive that never comes back
            # ends it at the step's ready timeout, not the engine's 30 s default.
            pf.op_raw(pf.desc("power", pf.POWER_ON, timeout_ticks=ready), **self.expectation("ok")),
            pf.op_raw(pf.desc("link", pf.LINK_WAIT_UP, timeout_ticks=ready), **self.expectation("ok")),
            verify])
        program_bytes = self.offset() + cycles * (len(arm(0)) + len(writes(0)) + len(cut_by) + len(pf.op_idle(0))
                                                  + len(after))
        if program_bytes > limits.top("program_bytes"):
            raise self.err(step, "cycles", f"cycles = {cycles}: the program would be {program_bytes} bytes; "
                                           f"its size field holds at most {limits.top('program_bytes')}")
        # The state before the first cut, made durable first: what a cut then takes from a
        # sector no cycle wrote is data at rest (on an honest drive, never).
        self.raw("non_data", 0xEA)
        self.ops.append(verify)
        for delay, seed in zip(delays, seeds):
            w = writes(seed)
            # The clock runs on for the delay after the commands end, so that a cut due after
            # them (after a FLUSH's completion, say) falls on its tick, not on the plan's
            # power-off.
            wait = pf.op_idle(delay + 1)
            self.ops.append((arm(delay) + w if cut_in == "writes" else w + arm(delay)) + cut_by + wait + after)
        per = workload_cost(sizes=sizes, read_pct=0, trim_pct=0, flush_pct=flush_pct, stop_commands=commands,
                            stop_bytes=0, stop_ticks=0)
        trims = -(-span // TRIM_SECTORS_PER_CMD) if cut_in == "trim" else 0
        self.cost(Cost(commands=(cycles + 1) * (reads + 1) + cycles * (per.commands + trims + (cut_in == "flush")) + 1,
                       extra_records=(cycles + 1) * (reads + 1) + cycles * 5 * (1 + EVENT_SLACK),
                       data_bytes=(cycles + 1) * span * SECTOR + cycles * per.data_bytes,
                       idle_ticks=cycles * off + sum(delays) + cycles))
        self.power_loss.append({"marker": self.markers[self.current], "label": self.current,
                                "lba_start": start, "lba_count": span, "cycles": cycles, "cut_in": cut_in,
                                "event": event, "count": count, "delay_ticks": [lo, hi],
                                "queue_depth": qd, "fua": bool(a.get("fua", False))})

    def do_idle(self, step: Step) -> None:
        secs = step.args.get("minutes", 0) * 60 + step.args.get("seconds", 0)
        if secs <= 0:
            raise self.err(step, None, "idle needs minutes or seconds > 0")
        key = "minutes" if "minutes" in step.args else "seconds"
        ticks = self.fits(step, key, "idle_ticks", int(secs * pf.TICK_HZ), "in 150 MHz ticks")
        self.ops.append(pf.op_idle(ticks))
        self.cost(Cost(idle_ticks=ticks))

    def do_trim(self, step: Step) -> None:
        start, count = self.span(step)
        self.ops.append(pf.op_trim(start, count, step.args.get("queued", False)))
        self.cost(Cost(commands=-(-count // TRIM_SECTORS_PER_CMD)))

    def do_fill(self, step: Step) -> None:
        start, count = self.span(step)
        qd, ncq = self.queue(step, DEFAULT_QUEUE_DEPTH["fill"], True)
        xfer = self.sectors_of_kib(step, "transfer_kib", step.args.get("transfer_kib", 128))
        self.workload(step, pattern="sequential", qd=qd, ncq=ncq, start=start, count=count,
                      sizes=[(xfer, 1)], stop_bytes=count * SECTOR)

    def do_sweep(self, step: Step) -> None:
        a = step.args
        direction = a.get("direction", "write")
        self.one_of(step, "direction", direction, ("write", "read"))
        zones = a.get("zones", 256)
        if zones > MAX_ZONES:
            raise self.err(step, "zones", f"{zones} zones: at most {MAX_ZONES} (one program instruction each)")
        xfer = self.sectors_of_kib(step, "transfer_kib", a.get("transfer_kib", 128))
        zone = int(a.get("zone_mib", 32) * 2048) // xfer * xfer
        start, count = self.span(step)
        if zones < 1 or zone < xfer or zones * zone > count:
            raise self.err(step, "zones", f"{zones} zones of {zone // 2048} MiB do not fit in {count // 2048} MiB")
        for z in range(zones):
            base = start + count * z // zones // 8 * 8
            self.workload(step, pattern="sequential", qd=1, ncq=False, start=base, count=zone,
                          sizes=[(xfer, 1)], read_pct=100 if direction == "read" else 0,
                          stop_bytes=zone * SECTOR)

    def do_workload(self, step: Step) -> None:
        a = step.args
        pattern = a.get("pattern", "uniform")
        self.one_of(step, "pattern", pattern, pf.PATTERN)
        start, count = self.span(step)
        qd, ncq = self.queue(step, DEFAULT_QUEUE_DEPTH["workload"], True)
        sizes = self.sizes(step, [[a.get("transfer_kib", 4), 1]])
        mix = {k: a.get(k, 0) for k in ("read_pct", "trim_pct", "flush_pct")}
        for k, v in mix.items():
            if not 0 <= v <= 100:
                raise self.err(step, k, f"{k} = {v}: must be 0..100")
        if sum(mix.values()) > 100:
            raise self.err(step, "read_pct", "read_pct + trim_pct + flush_pct is over 100")
        stops = [k for k in ("commands", "gib", "minutes", "seconds") if k in a]
        if len(stops) != 1:
            raise self.err(step, stops[1] if stops else None,
                           "a workload stops after exactly one of: commands, gib, minutes, seconds")
        stop = stops[0]
        # In the program's units: commands, bytes, or 150 MHz ticks; at least one, and in its field.
        field, value = {"commands": ("stop_commands", a[stop]), "gib": ("stop_bytes", int(a[stop] * 2**30)),
                        "minutes": ("stop_ticks", int(a[stop] * 60 * pf.TICK_HZ)),
                        "seconds": ("stop_ticks", int(a[stop] * pf.TICK_HZ))}[stop]
        if value < 1:
            raise self.err(step, stop, f"{stop} = {a[stop]}: must be > 0" + (" (under one tick or byte)" if a[stop] else ""))
        self.fits(step, stop, field, value, {"stop_ticks": "in 150 MHz ticks", "stop_bytes": "in bytes"}.get(field))
        if stop == "gib" and mix["trim_pct"] + mix["flush_pct"] >= 100:
            raise self.err(step, "gib", "a workload that only TRIMs or FLUSHes moves no data: gib would never be "
                                        "reached (stop it by commands, minutes or seconds)")
        self.workload(step, pattern=pattern, qd=qd, ncq=ncq, start=start, count=count, sizes=sizes,
                      **{field: value}, **mix)

    def do_replay(self, step: Step) -> None:
        """A trace (a file, in one of trace.py's formats) or a generated one (trace_gen:
        "client" or "enterprise", made for this drive's capacity), replayed at a queue depth;
        `trims` says what its TRIMs do (sent as they come, as DSM, or left out)."""
        from . import trace_gen
        a = step.args
        if ("trace" in a) == ("generator" in a):
            raise self.err(step, "generator" if "generator" in a else None,
                           "replay needs exactly one of trace = \"file\" and generator = \"client\" or \"enterprise\"")
        qd, ncq = self.queue(step, DEFAULT_QUEUE_DEPTH["replay"], True)
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
        self.trace_op(key, load, queue_depth=qd, ncq=ncq, data=data, compress_pct=compress, trims=trims)

    def do_pts_iops(self, step: Step) -> None:
        """SNIA SSS PTS's IOPS test: rounds of the block size x R/W mix matrix (each mix, then
        each size, largest first, as the PTS orders them), until the tracked cell's IOPS holds
        steady by the PTS rule (the VM decides: struct fisrig_op_loop) or max_rounds ran.
        Each cell is its own phase, "<label> <kib> KiB <read>/<write>"; the rounds are told
        apart by the LOOP_PASS record each pass ends with (fisrig.pts)."""
        from . import pts
        a = {**pts.DEFAULTS, **step.args}
        sizes, mixes = a.get("block_sizes_kib", pts.BLOCK_SIZES_KIB), a.get("read_pcts", pts.READ_PCTS)
        if not sizes or not mixes:
            raise self.err(step, "block_sizes_kib" if not sizes else "read_pcts", "needs at least one value")
        for m in mixes:
            if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m <= 100:
                raise self.err(step, "read_pcts", f"read_pcts: {m!r} is not a whole percentage 0..100")
        for k in sizes:
            self.sectors_of_kib(step, "block_sizes_kib", k)
        cells = pts.cells(a)
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
            self.mark(pts.cell_label(base, kib, read))
            if (kib, read) == (a["track_kib"], a["track_read_pct"]):
                tracked = self.offset()
            self.workload(step, pattern="uniform", qd=qd, ncq=ncq, start=start, count=count,
                          sizes=[(self.sectors_of_kib(step, "block_sizes_kib", kib), 1)], read_pct=read,
                          stop_ticks=ticks)
        self.ops[loop_at] = pf.op_loop(rounds, steady_pc=tracked, steady_window=window,
                                       steady_range_pct=a["range_pct"], steady_slope_pct=a["slope_pct"])
        self.ops.append(pf.op_end_loop())
        # At most max_rounds passes: the estimate takes them all (its bound), and the
        # progress line a pass's phases in turn.
        self.costs += self.costs[first:] * (rounds - 1)
        self.cost_markers += self.cost_markers[first:] * (rounds - 1)

    def do_raw(self, step: Step) -> None:
        a = step.args
        if "command" not in a:
            raise self.err(step, None, "raw needs command")
        cmd = a["command"]
        for key in RAW_FIELDS:
            if key in a:
                self.fits(step, key, key, a[key])
        known = SMART_PROTOCOL_OF.get(a.get("features", 0) & 0xFF) if cmd == 0xB0 else PROTOCOL_OF.get(cmd)
        protocol = a.get("protocol", known)
        if protocol is None:
            raise self.err(step, "command", f"command {cmd:#04x}: say which protocol (one of {', '.join(pf.PROTO)})")
        self.one_of(step, "protocol", protocol, pf.PROTO)
        expect = a.get("expect", "ok")
        self.one_of(step, "expect", expect, ("ok", "error", "any"))
        status, error = a.get("expect_status"), a.get("expect_error")
        if expect == "ok" and ((status is not None and status & STATUS_ERR) or error):
            raise self.err(step, "expect_status" if status is not None else "expect_error",
                           "expect = \"ok\" cannot match a status with ERR set or a non-zero error")
        if expect == "error" and status is not None and not status & STATUS_ERR:
            raise self.err(step, "expect_status", "expect = \"error\" cannot match a status without ERR (bit 0)")
        if expect == "any" and (status is not None or error is not None):
            raise self.err(step, "expect", "expect = \"any\" with expect_status/expect_error: say ok or error")
        lba, count = a.get("lba", 0), a.get("count", 0)
        sectors = (a.get("features", 0) if protocol.startswith("fpdma") else count) or MAX_SECTORS
        moves_sectors = protocol in ("dma_in", "dma_out", "fpdma_in", "fpdma_out") and cmd not in (0x06, 0x64, 0x47)
        if moves_sectors and lba + sectors > self.capacity and expect == "ok":
            raise self.err(step, "lba", f"LBAs {lba}..{lba + sectors - 1} run past the drive's last LBA "
                                        f"{self.capacity - 1} (say expect = \"error\" or \"any\" to test that)")
        data_out = self.data_out(step, protocol, cmd, count)
        timeout = self.fits(step, "timeout_ms", "timeout_ticks", int(a.get("timeout_ms", 0) * pf.TICK_HZ / 1000),
                            "in 150 MHz ticks")
        if a.get("timeout_ms", 0) and not timeout:
            raise self.err(step, "timeout_ms", f"timeout_ms = {a['timeout_ms']}: under one tick (0 means the default)")
        self.ops.append(pf.op_raw(
            pf.desc(protocol, cmd, features=a.get("features", 0), count=count, lba=lba,
                    device=a.get("device", 0x40), icc=a.get("icc", 0), aux=a.get("aux", 0),
                    data="stamp" if protocol.endswith("out") else "none", data_word=step.index + 1,
                    timeout_ticks=timeout),
            data_out=data_out, **self.expectation(expect, status, error)))
        self.raw_cost(protocol)

    def data_out(self, step: Step, protocol: str, cmd: int, count: int) -> bytes:
        """A raw step's `data_out` file (relative to the plan), checked: b"" when none."""
        if "data_out" not in step.args:
            return b""
        path = Path(step.args["data_out"])
        if not path.is_absolute() and self.plan.source not in ("<plan>", "<raw>"):
            path = Path(self.plan.source).parent / path
        if not path.is_file():
            raise self.err(step, "data_out", f"no data-out file {path}" + (" (a directory)" if path.is_dir() else ""))
        try:  # its size first: a file of gigabytes is refused without reading it
            if why := data_out_problem(protocol, cmd, count, step.args.get("features", 0), path.stat().st_size):
                raise self.err(step, "data_out", f"data_out = {str(step.args['data_out'])!r}: {why}")
            return path.read_bytes()
        except OSError as e:
            raise self.err(step, "data_out", f"{path}: {e.strerror or e}") from None

    def policy(self, step: Step) -> None:
        """The error policy for a step that generates commands (the step's `on_error` and
        `retries`, else the plan's), as a POLICY instruction when it changes. A power_loss
        step's writes go once: its verdicts judge what each write's one send did."""
        if step.do == "power_loss":
            want = ("fail", 0, 0, 0)
        elif "on_error" in plan_mod.STEP_KEYS[step.do]:
            on_error = step.args.get("on_error", self.plan.on_error)
            retries = step.args.get("retries", self.plan.retries)
            timeout = step.args.get("timeout_ms", self.plan.timeout_ms)
            link_timeout = step.args.get("link_timeout_ms", self.plan.link_timeout_ms)
            for key, value in (("on_error", on_error), ("retries", retries), ("timeout_ms", timeout),
                               ("link_timeout_ms", link_timeout)):
                if value is not None and (why := plan_mod.policy_problem(key, value)):
                    raise self.err(step, key, why)  # the plan's own were checked when it loaded
            if on_error == "fail" and retries:
                raise self.err(step, "retries" if "retries" in step.args else None,
                               f"retries = {retries} with on_error = \"fail\": nothing is sent again "
                               "(on_error = \"requeue\" or \"retry\")")
            want = (on_error, 0 if on_error == "fail" else DEFAULT_RETRIES if retries is None else retries,
                    *(int(round(t * pf.TICK_HZ / 1e3)) for t in (timeout, link_timeout)))
        else:
            return
        if want != self.policy_now:
            self.ops.append(pf.op_policy(*want))
            self.policy_now = want

    def run(self) -> Compiled:
        for i, step in enumerate(self.plan.steps):
            self.mark(phase_label(step.label, self.current, step.do))
            if self.plan.current_us > 0 and i == 0:  # the whole plan, from its first step's start
                self.sampling, self.sample_period = True, int(round(self.plan.current_us * pf.TICK_HZ / 1e6))
                self.raw("power", pf.POWER_SAMPLE, count=1, timeout_ticks=self.sample_period)
            self.policy(step)
            getattr(self, f"do_{step.do}")(step)
        if self.sampling:  # what was taken since the last record goes out before the run ends
            self.raw("power", pf.POWER_SAMPLE, count=0)
        size = sum(map(len, self.ops)) + 64  # the header and the END instruction, with room
        if size > limits.top("program_bytes"):
            raise PlanError(self.plan.source, None, f"the program would be {size} bytes; its size field "
                                                    f"holds at most {limits.top('program_bytes')}")
        return Compiled(pf.program(self.ops, self.capacity), {v: k for k, v in self.markers.items()},
                        self.capacity, self.costs, self.cost_markers, self.power_loss)


def compile_plan(plan: Plan, capacity_sectors: int) -> Compiled:
    """The program for a drive of `capacity_sectors` LBAs; PlanError if the plan cannot run on it."""
    return _Compiler(plan, capacity_sectors).run()
