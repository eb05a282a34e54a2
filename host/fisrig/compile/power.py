"""The compiler's power and link steps (compile/'s _Compiler takes them in): the rails
and P3, power off and on, a cut at an event, the current sampler, COMRESET, and the
power_loss step's cycles of writes, cut, power on and verify (docs/power-loss.md)."""
from __future__ import annotations

from fisrig_hw import contract

from fisrig.sata import ata
from fisrig.plan import limits
from fisrig import plan as plan_mod
from fisrig import program_format as pf
from fisrig.compile.nvme import FLUSH as NVME_FLUSH, deallocate_ops, nvme_op
from fisrig.compile.estimate import EVENT_SLACK, Cost, workload_cost
from fisrig.plan.data_out import SECTOR
from fisrig.plan import Step

# A power_loss step: its default span (1 MiB: every cycle reads it back), the largest span
# (512 MiB), the most cycles (each is about 400 bytes of program and 10 us to compile), and its writes' default mix.
DEFAULT_POWER_SPAN = 2048
MAX_VERIFY_SPAN = 1 << 20
MAX_POWER_CYCLES = 200_000
DEFAULT_POWER_SIZES = [[4, 4], [16, 2], [64, 1]]

# One DSM TRIM command carries a 512-byte block of 64 ranges of at most 65535 sectors
# (ATA's 16-bit range length; vm.c dsm_block).
TRIM_SECTORS_PER_CMD = contract.FISRIG_VM_DSM_BYTES // 8 * 0xFFFF


# A SATA FIS's counterpart over NVMe: a command sent (the Register H2D, the SQ doorbell), a
# status (a D2H or an SDB, a CQE), data (a Data FIS, a data TLP). DMA Setup has none.
NVME_EVENT_OF = {"h2d": pf.TLP_EVENT["doorbell"], "d2h": pf.TLP_EVENT["cqe"], "sdb": pf.TLP_EVENT["cqe"]}


class PowerSteps:
    """The do_* of power and link steps, on _Compiler's helpers (raw, err, fits, ...)."""

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
        if not a.get("on", True):
            self.sampling = False
            if "every_us" in a:
                raise self.err(step, "every_us", "every_us is for a current step that turns sampling on")
            self.raw("power", pf.POWER_SAMPLE, count=0)
            return
        us = a.get("every_us", pf.CURRENT_PERIOD_TICKS * 1e6 / pf.TICK_HZ)
        if why := plan_mod.current_period_problem("every_us", us):
            raise self.err(step, "every_us", why)
        self.start_sampling(us)

    def start_sampling(self, us: float) -> None:
        """POWER SAMPLE: the current sampled every `us` from here (a `current` step's or the
        plan's `current_us`); the costs that follow count its records."""
        self.sampling, self.sample_period = True, int(round(us * pf.TICK_HZ / 1e6))
        self.raw("power", pf.POWER_SAMPLE, count=1, timeout_ticks=self.sample_period)

    def events(self) -> dict[str, int]:
        """What a cut may be armed at: a FIS of a kind over SATA, a TLP of a kind over NVMe
        (engine_if.h), or a time. Over NVMe a SATA FIS names its counterpart (NVME_EVENT_OF),
        so that a plan of cuts runs over either protocol."""
        return pf.TLP_EVENT | NVME_EVENT_OF if self.nvme else pf.FIS_EVENT

    def do_power_cut_at(self, step: Step) -> None:
        a = step.args
        event = a.get("event", "doorbell" if self.nvme else "h2d")
        self.one_of(step, "event", event, self.events())
        count = a.get("count", 1)
        if count < 1:
            raise self.err(step, "count", "count must be at least 1")
        self.fits(step, "count", "count", count)
        delay = self.fits(step, "delay_us", "timeout_ticks", int(round(a.get("delay_us", 0) * pf.TICK_HZ / 1e6)),
                          "in 150 MHz ticks")
        self.raw("power", pf.POWER_OFF_AT_EVENT, features=self.events()[event], count=count, timeout_ticks=delay)

    def run_cycles(self, step: Step, cycles: int) -> tuple[int, int]:
        """The cycles a power_loss step runs, first and last (from 1): all of them, or its
        `run_cycles = [first, last]`, a campaign's chunk (a sweep's: docs/sweeps.md), whose
        delays and seeds are those cycles' of the whole step."""
        if "run_cycles" not in step.args:
            return 1, cycles
        rc = step.args["run_cycles"]
        if (len(rc) != 2 or any(isinstance(v, bool) or not isinstance(v, int) for v in rc)
                or not 1 <= rc[0] <= rc[1] <= cycles):
            raise self.err(step, "run_cycles", f"run_cycles = {rc!r}: [first, last], cycles of the step's {cycles} "
                                               "(from 1, first <= last)")
        return rc[0], rc[1]

    def do_power_loss(self, step: Step) -> None:
        """Cycles of: writes (the integrity stamp) over a small span, a cut armed at a FIS
        event plus a delay (swept across the cycles), rails off for off_ms, on, the drive
        waited for (a drive that does not come back ends the run: its verdict), then a
        verify pass over the span. A FLUSH and a verify pass first give the span's durable
        state before the cycles. docs/power-loss.md; analysis/power_verdicts.py classifies what each cut did."""
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
        queues = self.nvme_queue_count(step, qd) if self.nvme else 0
        # The cut's default: at a write's status (the count-th), or at the FLUSH or TRIM sent.
        if self.nvme:
            default_event = "cqe" if cut_in == "writes" else "doorbell"
        else:
            default_event = ("sdb" if ncq else "d2h") if cut_in == "writes" else "h2d"
        event = a.get("event", default_event)
        self.one_of(step, "event", event, self.events())
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
        first, last = self.run_cycles(step, cycles)
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
        arm = lambda delay: pf.op_raw(pf.desc("power", pf.POWER_OFF_AT_EVENT, features=self.events()[event],  # noqa: E731
                                              count=count, timeout_ticks=delay))
        writes = lambda seed: pf.op_workload(  # noqa: E731
            pattern="uniform", queue_depth=qd, ncq=ncq and not self.nvme, data="stamp", compress_pct=compress,
            read_pct=0, trim_pct=0, flush_pct=flush_pct, fua=fua, seed=seed, zipf_theta=0, lba_start=start,
            lba_span=span, stop_commands=commands, stop_bytes=0, stop_ticks=0, sizes=sizes, queues=queues)
        if self.nvme:  # what the cut falls in may end any way
            cut_by = {"writes": b"", "flush": nvme_op(1, NVME_FLUSH, must_succeed=False),
                      "trim": b"".join(deallocate_ops(start, span, must_succeed=False))}[cut_in]
        else:
            cut_by = {"writes": b"", "flush": pf.op_raw(pf.desc("non_data", ata.FLUSH_CACHE_EXT)),
                      "trim": pf.op_trim(start, span, False)}[cut_in]
        after = b"".join([
            pf.op_raw(pf.desc("power", pf.POWER_OFF)),  # if the cut has not fired, now
            pf.op_idle(off),
            # POWER ON waits for the link and the signature: a drive that never comes back
            # ends it at the step's ready timeout, not the engine's 30 s default.
            pf.op_raw(pf.desc("power", pf.POWER_ON, timeout_ticks=ready), **self.expectation("ok")),
            pf.op_raw(pf.desc("link", pf.LINK_WAIT_UP, timeout_ticks=ready), **self.expectation("ok")),
            verify])
        delays, seeds, total, cycles = delays[first - 1:last], seeds[first - 1:last], cycles, last - first + 1
        program_bytes = self.offset() + cycles * (len(arm(0)) + len(writes(0)) + len(cut_by) + len(pf.op_idle(0))
                                                  + len(after))
        if program_bytes > limits.top("program_bytes"):
            raise self.err(step, "cycles", f"cycles = {cycles}: the program would be {program_bytes} bytes; "
                                           f"its size field holds at most {limits.top('program_bytes')}")
        # The state before the first cut, made durable first: what a cut then takes from a
        # sector no cycle wrote is data at rest (on an honest drive, never).
        if self.nvme:
            self.nvme_flush()
        else:
            self.raw("non_data", ata.FLUSH_CACHE_EXT)
        if first > 1:
            # A campaign's later chunk starts where the whole step's cycle `first` would: after
            # a power cycle, from what the drive kept (a drive that lies about FLUSH loses
            # the precondition then, not at the chunk's first cut, as data at rest).
            self.ops.append(after[:-len(verify)])
            self.cost(Cost(commands=0, extra_records=3 * (1 + EVENT_SLACK), idle_ticks=off))
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
                                "first_cycle": first, "cycles_total": total,
                                "event": event, "count": count, "delay_ticks": [lo, hi],
                                "queue_depth": qd, "queues": queues or 1, "fua": bool(a.get("fua", False)),
                                "protocol": "nvme" if self.nvme else "sata"})
