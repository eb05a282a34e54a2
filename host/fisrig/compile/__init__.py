"""Plan -> program bytes for the rig's VM, with every check that needs the drive's capacity."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from fisrig.sata import ata
from fisrig.plan import limits
from fisrig import plan as plan_mod
from fisrig import program_format as pf
from fisrig.plan import capture as capture_spec
from fisrig.plan.data_out import MAX_SECTORS, SECTOR, problem as data_out_problem
from fisrig.errors import closest
from fisrig.compile.estimate import EVENT_SLACK, Cost, workload_cost
from fisrig.plan import DATA_SOURCES, DEFAULT_QUEUE_DEPTH, Plan, PlanError, Step, phase_label
from fisrig.compile.power import TRIM_SECTORS_PER_CMD, PowerSteps
from fisrig.compile.traces import TraceSteps
from fisrig.compile.nvme import NvmeSteps

_PASSWORD = (b"\0\0" + b"fisrig".ljust(32, b"\0")).ljust(512, b"\0")
# A raw step's H2D fields and expectation: each is checked against its field's width.
RAW_FIELDS = ("command", "features", "count", "lba", "device", "icc", "aux", "expect_status", "expect_error")
# HD Tach draws a few hundred zones; each is one instruction, so a bound keeps the program small.
MAX_ZONES = 1 << 16
# How many times a command's own failure goes again when the plan asks for "retry" without
# saying: libata's EH tries a command 5 times in all; 3 more sends is a rig's habit that still
# ends a drive that fails every command quickly.
DEFAULT_RETRIES = 3


@dataclass
class Compiled:
    parts: list[bytes]  # the program in pieces (program_format.program_parts)
    markers: dict[int, str]  # marker id -> the label records carry
    capacity: int
    costs: list[Cost] = field(default_factory=list)  # one per instruction, for estimate.of
    cost_markers: list[int] = field(default_factory=list)  # the marker each cost's records carry (progress)
    # The power_loss steps, as power_verdicts.classify reads their records: marker, label,
    # span, cycles and where each cycle cut (docs/power-loss.md).
    power_loss: list[dict] = field(default_factory=list)
    # The analyzer's captures the program arms (docs/capture.md): each step's, with its line.
    captures: list[dict] = field(default_factory=list)

    @property
    def size(self) -> int:
        """The program's bytes."""
        return sum(map(len, self.parts))

    @functools.cached_property
    def program(self) -> bytes:
        """The program, its pieces joined (a run writes them as they are: write)."""
        return b"".join(self.parts)

    def write(self, path) -> None:
        pf.write_program(self.parts, path)


class _Compiler(PowerSteps, TraceSteps, NvmeSteps):
    def __init__(self, plan: Plan, capacity: int, mdts_bytes: int | None = None):
        self.plan, self.capacity, self.mdts_bytes = plan, capacity, mdts_bytes
        self.nvme = plan.protocol == "nvme"
        self.ops: list[bytes] = []
        self.markers: dict[str, int] = {}
        self.current: str | None = None
        self.seed = plan.seed
        self.costs: list[Cost] = []
        self.cost_markers: list[int] = []
        self.traces: dict = {}  # what a trace's entries came from -> (program offset, entries)
        self.power_loss: list[dict] = []
        self.captures: list[dict] = []
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
        if self.nvme and n * SECTOR > self.nvme_max_bytes():
            raise self.err(step, key, f"{key} = {kib}: an NVMe command moves at most {self.nvme_max_bytes() // 1024} KiB "
                                      "on this drive (its MDTS, Identify Controller)")
        return int(n)

    def nvme_max_bytes(self) -> int:
        """The most an NVMe command moves here: the drive's MDTS, within the engine's buffer."""
        return min(pf.NVME_DATA_MAX, self.mdts_bytes or pf.NVME_DATA_MAX)

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
        if self.nvme:
            return self.nvme_queue_depth(step, default_qd), True
        if "queues" in step.args:
            raise self.err(step, "queues", "queues are NVMe's (protocol = \"nvme\" in [plan]); a SATA drive has one "
                                           "queue of 32 tags")
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
                 stop_commands: int = 0, stop_bytes: int = 0, stop_ticks: int = 0,
                 seed_per_pass: bool = False) -> None:
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
            pattern=pattern, queue_depth=qd, ncq=ncq and not self.nvme, data=data, compress_pct=compress,
            read_pct=read_pct, trim_pct=trim_pct, flush_pct=flush_pct, fua=a.get("fua", False),
            seed=seed, zipf_theta=theta / 1000, lba_start=start,
            lba_span=count, stop_commands=stop_commands, stop_bytes=stop_bytes, stop_ticks=stop_ticks,
            sizes=sizes, seed_per_pass=seed_per_pass, queues=self.nvme_queue_count(step, qd) if self.nvme else 0))
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
        self.raw("pio_out", ata.SECURITY_SET_PASSWORD, data_out=_PASSWORD)
        self.raw("non_data", ata.SECURITY_ERASE_PREPARE)
        self.raw("pio_out", ata.SECURITY_ERASE_UNIT, data_out=_PASSWORD)

    def do_sanitize(self, step: Step) -> None:
        self.raw("non_data", ata.SANITIZE, features=ata.SANITIZE_BLOCK_ERASE,
                 lba=ata.SANITIZE_BLOCK_ERASE_KEY)

    def do_flush(self, step: Step) -> None:
        self.raw("non_data", ata.FLUSH_CACHE_EXT)

    def do_identify(self, step: Step) -> None:
        self.raw("pio_in", ata.IDENTIFY_DEVICE)

    def do_smart(self, step: Step) -> None:
        """SMART READ DATA once nothing is outstanding, a SMART record per attribute asked
        (default: host and NAND writes, whose growth between two readings is a phase's write
        amplification: analysis/smart.py)."""
        ids = step.args.get("attributes", list(ata.SMART_WRITES))
        if not isinstance(ids, list) or not 1 <= len(ids) <= pf.SMART_MAX_IDS or any(
                isinstance(i, bool) or not isinstance(i, int) or not 1 <= i <= 255 for i in ids):
            raise self.err(step, "attributes", f"attributes = {ids!r}: 1 to {pf.SMART_MAX_IDS} SMART attribute ids, "
                                               "each 1..255")
        self.ops.append(pf.op_smart(ids))
        self.cost(Cost(commands=1, extra_records=len(ids)))

    def do_drain(self, step: Step) -> None:
        self.ops.append(pf.op_drain())

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

    def do_raw(self, step: Step) -> None:
        a = step.args
        for key in ("queue", "nsid", "cdw2", "cdw3", "cdw10", "cdw11", "cdw12", "cdw13", "cdw14", "cdw15", "data_bytes"):
            if key in a:
                raise self.err(step, key, f"{key} is an NVMe raw step's (protocol = \"nvme\" in [plan])")
        if "command" not in a:
            raise self.err(step, None, "raw needs command")
        cmd = a["command"]
        for key in RAW_FIELDS:
            if key in a:
                self.fits(step, key, key, a[key])
        known = ata.protocol_of(cmd, a.get("features", 0))
        protocol = a.get("protocol", known)
        if protocol is None:
            raise self.err(step, "command", f"command {cmd:#04x}: say which protocol (one of {', '.join(pf.SATA_PROTO)})")
        self.one_of(step, "protocol", protocol, pf.SATA_PROTO)
        expect = a.get("expect", "ok")
        self.one_of(step, "expect", expect, ("ok", "error", "any"))
        status, error = a.get("expect_status"), a.get("expect_error")
        if expect == "ok" and ((status is not None and status & ata.STATUS_ERR) or error):
            raise self.err(step, "expect_status" if status is not None else "expect_error",
                           "expect = \"ok\" cannot match a status with ERR set or a non-zero error")
        if expect == "error" and status is not None and not status & ata.STATUS_ERR:
            raise self.err(step, "expect_status", "expect = \"error\" cannot match a status without ERR (bit 0)")
        if expect == "any" and (status is not None or error is not None):
            raise self.err(step, "expect", "expect = \"any\" with expect_status/expect_error: say ok or error")
        lba, count = a.get("lba", 0), a.get("count", 0)
        sectors = (a.get("features", 0) if protocol.startswith("fpdma") else count) or MAX_SECTORS
        moves_sectors = protocol in ("dma_in", "dma_out", "fpdma_in", "fpdma_out") and cmd not in (*ata.TRIMS, ata.READ_LOG_DMA_EXT)
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
        """A SATA raw step's `data_out` file (relative to the plan), checked: b"" when none."""
        return self.read_data_out(step, lambda size: data_out_problem(protocol, cmd, count,
                                                                       step.args.get("features", 0), size))

    def read_data_out(self, step: Step, problem) -> bytes:
        """A raw step's `data_out` file (relative to the plan), refused where problem(its size)
        says why (either protocol's raw step): b"" when none."""
        if "data_out" not in step.args:
            return b""
        path = Path(step.args["data_out"])
        if not path.is_absolute() and self.plan.source not in ("<plan>", "<raw>"):
            path = Path(self.plan.source).parent / path
        if not path.is_file():
            raise self.err(step, "data_out", f"no data-out file {path}" + (" (a directory)" if path.is_dir() else ""))
        try:  # its size first: a file of gigabytes is refused without reading it
            if why := problem(path.stat().st_size):
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
                self.start_sampling(self.plan.current_us)
            self.policy(step)
            if "capture" in step.args:
                self.capture(step)
            if self.nvme:
                self.check_nvme_step(step)
            getattr(self, f"nvme_{step.do}" if self.nvme and hasattr(self, f"nvme_{step.do}") else f"do_{step.do}")(step)
        if self.sampling:  # what was taken since the last record goes out before the run ends
            self.raw("power", pf.POWER_SAMPLE, count=0)
        size = sum(map(len, self.ops)) + 64  # the header and the END instruction, with room
        if size > limits.top("program_bytes"):
            raise PlanError(self.plan.source, None, f"the program would be {size} bytes; its size field "
                                                    f"holds at most {limits.top('program_bytes')}")
        return Compiled(pf.program_parts(self.ops, self.capacity), {v: k for k, v in self.markers.items()},
                        self.capacity, self.costs, self.cost_markers, self.power_loss, self.captures)

    def capture(self, step: Step) -> None:
        """Arms the analyzer's capture as the step starts (capture.h; docs/capture.md)."""
        if self.nvme:
            raise self.err(step, "capture", "a capture has no NVMe form yet (its TLPs come with the "
                                            "rig's NVMe path in gateware)")
        spec = capture_spec.parse(step.args["capture"])  # checked when the plan was read
        self.ops.append(spec.op())
        self.cost(Cost(extra_records=1))  # its descriptor's record
        self.captures.append({"step": step.index + 1, "label": self.current, "trigger": spec.trigger, "code": spec.code,
                              "before_ticks": spec.before_ticks, "after_ticks": spec.after_ticks,
                              "windows": spec.windows, "payload_dwords": spec.payload_dwords,
                              "line": self.plan.line_of(step, "capture")})


def compile_plan(plan: Plan, capacity_sectors: int, mdts_bytes: int | None = None) -> Compiled:
    """The program for a drive of `capacity_sectors` LBAs (over NVMe, whose commands move at
    most `mdts_bytes`, when it says); PlanError if the plan cannot run on it."""
    return _Compiler(plan, capacity_sectors, mdts_bytes).run()
