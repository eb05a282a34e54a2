"""Plan -> program bytes for the rig's VM, with every check that needs the drive's capacity."""
from __future__ import annotations

from dataclasses import dataclass

from pathlib import Path

from . import program_format as pf
from . import trace
from .plan import Plan, PlanError, Step

SECTOR = 512
MAX_SECTORS = 65536
STATUS_ERR = 0x01

# The protocol each known opcode needs; anything else must say `protocol = "..."`.
PROTOCOL_OF = {
    0x06: "dma_out", 0x25: "dma_in", 0x2F: "pio_in", 0x35: "dma_out", 0x3D: "dma_out",
    0x47: "dma_in", 0x60: "fpdma_in", 0x61: "fpdma_out", 0x64: "fpdma_out", 0xB4: "non_data",
    0xE7: "non_data", 0xEA: "non_data", 0xEC: "pio_in", 0xEF: "non_data", 0xF1: "pio_out",
    0xF3: "non_data", 0xF4: "pio_out",
}
_PASSWORD = (b"\0\0" + b"fisrig".ljust(32, b"\0")).ljust(512, b"\0")


@dataclass
class Compiled:
    program: bytes
    markers: dict[int, str]  # marker id -> the label records carry
    capacity: int


class _Compiler:
    def __init__(self, plan: Plan, capacity: int):
        self.plan, self.capacity = plan, capacity
        self.ops: list[bytes] = []
        self.markers: dict[str, int] = {}
        self.current: str | None = None
        self.seed = plan.seed

    def err(self, step: Step, key: str | None, msg: str) -> PlanError:
        return self.plan.error(step, key, msg)

    def mark(self, label: str) -> None:
        if label != self.current:
            mid = self.markers.setdefault(label, len(self.markers) + 1)
            self.ops.append(pf.op_mark(mid))
            self.current = label

    def sectors_of_kib(self, step: Step, key: str, kib: float) -> int:
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
        return 0, int(self.capacity * pct / 100) // 8 * 8

    def queue(self, step: Step, default_qd: int, default_ncq: bool) -> tuple[int, bool]:
        qd = step.args.get("queue_depth", default_qd)
        ncq = step.args.get("ncq", default_ncq)
        if not 1 <= qd <= 32:
            raise self.err(step, "queue_depth", f"queue_depth {qd} is over 32" if qd > 32 else f"queue_depth {qd} must be at least 1")
        if qd > 1 and not ncq:
            raise self.err(step, "queue_depth", f"queue_depth {qd} needs ncq = true (DMA commands go one at a time)")
        return qd, ncq

    def raw(self, protocol: str, command: int, expect: str = "ok", **kw) -> None:
        data_out = kw.pop("data_out", b"")
        self.ops.append(pf.op_raw(pf.desc(protocol, command, **kw), data_out=data_out,
                                  **self.expectation(expect)))

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
        compress = a.get("compress_pct", 100)
        if not 0 <= compress <= 100:
            raise self.err(step, "compress_pct", f"compress_pct = {compress}: must be 0..100")
        data = a.get("data", "stamp")
        if data not in ("stamp", "zeros", "lfsr"):
            raise self.err(step, "data", f"data = {data!r}: one of stamp, zeros, lfsr")
        self.seed += 1
        self.ops.append(pf.op_workload(
            pattern=pattern, queue_depth=qd, ncq=ncq, data=data, compress_pct=compress,
            read_pct=read_pct, trim_pct=trim_pct, flush_pct=flush_pct, fua=a.get("fua", False),
            seed=a.get("seed", self.seed), zipf_theta=a.get("zipf_theta", 0.0), lba_start=start,
            lba_span=count, stop_commands=stop_commands, stop_bytes=stop_bytes, stop_ticks=stop_ticks,
            sizes=sizes))

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

    def do_power_cut_at(self, step: Step) -> None:
        a = step.args
        event = a.get("event", "h2d")
        if event not in pf.FIS_EVENT:
            raise self.err(step, "event", f"event = {event!r}: one of {', '.join(pf.FIS_EVENT)}")
        count = a.get("count", 1)
        if count < 1:
            raise self.err(step, "count", "count must be at least 1")
        delay = int(round(a.get("delay_us", 0) * pf.TICK_HZ / 1e6))
        self.raw("power", pf.POWER_OFF_AT_EVENT, features=pf.FIS_EVENT[event], count=count, timeout_ticks=delay)

    def do_idle(self, step: Step) -> None:
        secs = step.args.get("minutes", 0) * 60 + step.args.get("seconds", 0)
        if secs <= 0:
            raise self.err(step, None, "idle needs minutes or seconds > 0")
        self.ops.append(pf.op_idle(int(secs * pf.TICK_HZ)))

    def do_trim(self, step: Step) -> None:
        start, count = self.span(step)
        self.ops.append(pf.op_trim(start, count, step.args.get("queued", False)))

    def do_fill(self, step: Step) -> None:
        start, count = self.span(step)
        qd, ncq = self.queue(step, 32, True)
        xfer = self.sectors_of_kib(step, "transfer_kib", step.args.get("transfer_kib", 128))
        self.workload(step, pattern="sequential", qd=qd, ncq=ncq, start=start, count=count,
                      sizes=[(xfer, 1)], stop_bytes=count * SECTOR)

    def do_sweep(self, step: Step) -> None:
        a = step.args
        direction = a.get("direction", "write")
        if direction not in ("write", "read"):
            raise self.err(step, "direction", f"direction = {direction!r}: write or read")
        zones = a.get("zones", 256)
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
        if pattern not in pf.PATTERN:
            raise self.err(step, "pattern", f"pattern = {pattern!r}: one of {', '.join(pf.PATTERN)}")
        start, count = self.span(step)
        qd, ncq = self.queue(step, 1, True)
        if "sizes_kib" in a:
            pairs = a["sizes_kib"]
            if not 1 <= len(pairs) <= 8 or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
                raise self.err(step, "sizes_kib", "sizes_kib takes 1 to 8 [kib, weight] pairs")
            sizes = [(self.sectors_of_kib(step, "sizes_kib", k), int(w)) for k, w in pairs]
        else:
            sizes = [(self.sectors_of_kib(step, "transfer_kib", a.get("transfer_kib", 4)), 1)]
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
        if a[stop] <= 0:
            raise self.err(step, stop, f"{stop} must be > 0")
        self.workload(step, pattern=pattern, qd=qd, ncq=ncq, start=start, count=count, sizes=sizes,
                      stop_commands=a["commands"] if stop == "commands" else 0,
                      stop_bytes=int(a["gib"] * 2**30) if stop == "gib" else 0,
                      stop_ticks=int((a[stop] * (60 if stop == "minutes" else 1)) * pf.TICK_HZ)
                      if stop in ("minutes", "seconds") else 0, **mix)

    def do_replay(self, step: Step) -> None:
        a = step.args
        if "trace" not in a:
            raise self.err(step, None, "replay needs trace = \"file\" (op,lba,sectors lines)")
        path = Path(a["trace"])
        if not path.is_absolute() and self.plan.source not in ("<plan>", "<raw>"):
            path = Path(self.plan.source).parent / path
        if not path.exists():
            raise self.err(step, "trace", f"no trace file {path}")
        qd, ncq = self.queue(step, 32, True)
        data = a.get("data", "stamp")
        if data not in ("stamp", "zeros", "lfsr"):
            raise self.err(step, "data", f"data = {data!r}: one of stamp, zeros, lfsr")
        self.ops.append(pf.op_trace(trace.load(path, self.capacity), queue_depth=qd, ncq=ncq, data=data,
                                    compress_pct=a.get("compress_pct", 100)))

    def do_raw(self, step: Step) -> None:
        a = step.args
        if "command" not in a:
            raise self.err(step, None, "raw needs command")
        cmd = a["command"]
        protocol = a.get("protocol", PROTOCOL_OF.get(cmd))
        if protocol is None:
            raise self.err(step, "command", f"command {cmd:#04x}: say which protocol (one of {', '.join(pf.PROTO)})")
        if protocol not in pf.PROTO:
            raise self.err(step, "protocol", f"protocol = {protocol!r}: one of {', '.join(pf.PROTO)}")
        expect = a.get("expect", "ok")
        if expect not in ("ok", "error", "any"):
            raise self.err(step, "expect", f"expect = {expect!r}: ok, error or any")
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
        timeout = int(a.get("timeout_ms", 0) * pf.TICK_HZ / 1000)
        self.ops.append(pf.op_raw(
            pf.desc(protocol, cmd, features=a.get("features", 0), count=count, lba=lba,
                    device=a.get("device", 0x40), icc=a.get("icc", 0), aux=a.get("aux", 0),
                    data="stamp" if protocol.endswith("out") else "none", data_word=step.index + 1,
                    timeout_ticks=timeout),
            **self.expectation(expect, status, error)))

    def run(self) -> Compiled:
        for step in self.plan.steps:
            self.mark(step.label or self.current or step.do)
            getattr(self, f"do_{step.do}")(step)
        return Compiled(pf.program(self.ops, self.capacity), {v: k for k, v in self.markers.items()},
                        self.capacity)


def compile_plan(plan: Plan, capacity_sectors: int) -> Compiled:
    """The program for a drive of `capacity_sectors` LBAs; PlanError if the plan cannot run on it."""
    return _Compiler(plan, capacity_sectors).run()
