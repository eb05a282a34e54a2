"""The NVMe engine's power cut (engine_if.h's POWER descriptors on an NVMe engine): the rails
fall on a tick, as the SATA engine's power controller cuts at a FIS.

- POWER OFF cuts now; POWER ON raises the rails (the controller then answers CRS until it
  is up, and the firmware enumerates and enables it again).
- OFF_AT_EVENT of FISRIG_EVENT_TIME cuts `delay` ticks after the arming; of a TLP kind
  (enum fisrig_tlp_event) `delay` ticks after the end of the count-th TLP of the kind to
  cross the link after the arming: its stamp is the tick its last beat crossed (the link
  tap's, or the engine's own TLP's), so the cut lands on the tick asked for whenever that
  is after the engine counted the TLP: a delay of 2 ticks or more, each kind (a delay of 0
  or 1 cuts a tick late, as the TLP is counted; the cut record's ts_status says when it
  fell: tests/rtl/test_nvme_core.py, scripts/bench_rtl_nvme.py's nvme.power_cut_jitter_ticks).

`rails_on` falls combinationally on the cut's tick (the first cycle `now` reaches it);
`fire` pulses then, with `trigger` the tick the delay counted from."""
from migen import If, Mux, Signal

from litex.gen import LiteXModule

from fisrig_hw import contract as _c


class PowerCut(LiteXModule):
    def __init__(self, now):
        # Requests (pulses) and their fields.
        self.cut_now, self.power_on, self.arm_time, self.arm_tlp = Signal(), Signal(), Signal(), Signal()
        self.ts = Signal(64)            # the descriptor's tick (its ts_submit)
        self.kind = Signal(8)
        self.count = Signal(16)
        self.delay = Signal(32)
        # The TLPs crossing, a pulse and its end tick each (data: the completer's and a write's).
        self.ev = {k: (Signal(name=f"ev_{k}"), Signal(64, name=f"ev_{k}_tick"))
                   for k in ("doorbell", "sqe", "data_out", "data_in", "cqe")}
        self.rails = Signal(reset=1)
        self.rails_on = Signal()
        self.fire = Signal()
        self.trigger = Signal(64)
        # What crossed the link up to here counts: every tick while the rails are on, before
        # the cut's tick after (a TLP the simulated PHY finishes after the rails fell never
        # crossed a real link, which went down with them).
        self.counts_until = Signal(64)

        # # #

        armed = Signal()
        kind = Signal(8)
        left = Signal(16)
        delay = Signal(32)
        pending = Signal()
        cut_at = Signal(64)
        self.comb += [
            self.fire.eq(self.rails & pending & (now >= cut_at)),
            self.rails_on.eq(self.rails & ~self.fire),
        ]
        # This cycle's TLPs of the armed kind: how many (0 to 2) and the count-th's tick.
        ev = self.ev
        a = Signal()
        b = Signal()
        ta, tb = Signal(64), Signal(64)
        self.comb += [
            If(kind == _c.FISRIG_EVENT_DOORBELL, a.eq(ev["doorbell"][0]), ta.eq(ev["doorbell"][1]))
            .Elif(kind == _c.FISRIG_EVENT_SQE, a.eq(ev["sqe"][0]), ta.eq(ev["sqe"][1]))
            .Elif(kind == _c.FISRIG_EVENT_DATA_TLP, a.eq(ev["data_out"][0]), ta.eq(ev["data_out"][1]),
                  b.eq(ev["data_in"][0]), tb.eq(ev["data_in"][1]))
            .Elif(kind == _c.FISRIG_EVENT_CQE, a.eq(ev["cqe"][0]), ta.eq(ev["cqe"][1])),
        ]
        n = Signal(2)
        tick = Signal(64)
        early, late = Signal(64), Signal(64)
        self.comb += [
            n.eq(a + b),
            early.eq(Mux(a & b, Mux(ta < tb, ta, tb), Mux(a, ta, tb))),
            late.eq(Mux(a & b, Mux(ta < tb, tb, ta), Mux(a, ta, tb))),
            tick.eq(Mux(left == 1, early, late)),
        ]
        cut_tick = Signal(64)
        self.comb += self.counts_until.eq(Mux(self.rails_on, 2**64 - 1, Mux(self.fire, now, cut_tick)))
        self.sync += [
            If(self.fire, self.rails.eq(0), pending.eq(0), cut_tick.eq(now)),
            If(self.power_on, self.rails.eq(1)),
            If(armed & self.rails & (n != 0),
                If(n >= left,
                    armed.eq(0), pending.eq(1), cut_at.eq(tick + delay), self.trigger.eq(tick),
                ).Else(
                    left.eq(left - n),
                ),
            ),
            If(self.cut_now, pending.eq(1), cut_at.eq(now), self.trigger.eq(self.ts)),
            If(self.arm_time, pending.eq(1), cut_at.eq(self.ts + self.delay), self.trigger.eq(self.ts), armed.eq(0)),
            If(self.arm_tlp,
                armed.eq(1), kind.eq(self.kind), delay.eq(self.delay),
                left.eq(Mux(self.count == 0, 1, self.count)),
            ),
        ]
