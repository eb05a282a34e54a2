"""A Wishbone slave that holds the CPU until a tick of the rig's counter: the rtl target's
runs start on the same tick every time.

Why: the firmware is started by the BIOS when the host's "boot" command arrives over the
simulated UART, which is when the host process got round to sending it (wall time). What the
firmware does from there is cycle-exact, so every later time moved with it, and with them
where each FIS fell against the link's ALIGN pairs (every 256 dwords from link-up): two runs
of one plan differed by 2 to 3 ticks on single commands, and a one-command phase's latency
with them (tests/rtl/test_targets_agree.py). A load from WAIT returns on the tick the CPU
asked for, so nothing after it depends on when the load was issued.

Words (32-bit, from the region's base):
  0 TARGET_LO, 1 TARGET_HI  write: the tick to wait for.
  2 WAIT                    read: returns when the counter has reached the target, with
                            (counter - target) at that cycle: 0 when the CPU came early
                            enough, the ticks it was late otherwise (then the start was not
                            the asked one, and the run says so).
"""

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import wishbone

TARGET_LO, TARGET_HI, WAIT = 0, 1, 2
SIZE = 0x10  # bytes of the region


class TickGate(LiteXModule):
    def __init__(self, now, address_width=30):
        self.bus = bus = wishbone.Interface(data_width=32, address_width=address_width)
        self.target = target = Signal(64)
        word = bus.adr[:2]
        late = Signal(64)
        self.comb += late.eq(now - target)
        self.sync += [
            bus.ack.eq(0),
            If(bus.cyc & bus.stb & ~bus.ack,
                If(bus.we,
                    bus.ack.eq(1),
                    If(word == TARGET_LO, target[:32].eq(bus.dat_w)),
                    If(word == TARGET_HI, target[32:].eq(bus.dat_w)),
                ).Elif(word == WAIT,
                    # The ack goes out on the cycle after `now` reached the target, whatever
                    # cycle the read began on: the CPU resumes on one fixed tick.
                    If(now >= target, bus.ack.eq(1), bus.dat_r.eq(late[:32]))
                ).Else(
                    bus.ack.eq(1),
                    bus.dat_r.eq(Mux(word == TARGET_LO, target[:32], target[32:])),
                )
            )
        ]
