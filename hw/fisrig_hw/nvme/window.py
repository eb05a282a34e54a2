"""The NVMe engine's data window: the block RAM a descriptor's FISRIG_DATA_RAM data is in
(engine_if.h: a write's data from the window at data_word, a read's data into it): an
Identify's page, a Dataset Management range list, a raw command's payload. The VM places
such data at the window's start with nothing else in flight (firmware/core/src/vm/nvme.c).

Two memories of 32 bits, the even dwords and the odd ones, so that a 64-bit word (the
completer's, a dword pair at any alignment from the controller's writes) is one access of
each. Port A takes the controller's writes (host_writes.py) and, between them, the CPU's
dword reads and writes (`cpu_*`, a cycle's latency); port B is the completer's reads."""
from migen import If, Memory, Mux, Signal

from litex.gen import LiteXModule


class DataWindow(LiteXModule):
    def __init__(self, window_bytes: int):
        assert window_bytes % 8 == 0
        words = window_bytes // 8
        self.window_bytes = window_bytes
        # The controller's writes: two consecutive dwords from dword `w_dword` on, each with
        # its enable (lane 0 at w_dword, lane 1 after it).
        self.w_dword = Signal(max=max(2 * words, 2) + 1)
        self.w_lane0, self.w_lane1 = Signal(32), Signal(32)
        self.w_we0, self.w_we1 = Signal(), Signal()
        # The completer's reads: word `r_adr`'s value a cycle later in r_dat.
        self.r_adr = Signal(max=max(words, 2))
        self.r_dat = Signal(64)
        # The CPU's (or the runner's) dword port: cpu_adr a dword index.
        self.cpu_adr = Signal(max=max(2 * words, 2))
        self.cpu_we, self.cpu_dat_w, self.cpu_dat_r = Signal(), Signal(32), Signal(32)

        # # #

        self.even = even = Memory(32, words, name="nvme_window_even")
        self.odd = odd = Memory(32, words, name="nvme_window_odd")
        ea, eb = even.get_port(write_capable=True), even.get_port()
        oa, ob = odd.get_port(write_capable=True), odd.get_port()
        self.specials += even, odd, ea, eb, oa, ob
        busy = Signal()
        odd_cpu = Signal()
        at_odd = self.w_dword[0]
        half = self.w_dword[1:]
        self.comb += [
            busy.eq(self.w_we0 | self.w_we1),
            eb.adr.eq(self.r_adr), ob.adr.eq(self.r_adr), self.r_dat.eq(eb.dat_r | (ob.dat_r << 32)),
            If(busy & ~at_odd,   # lane 0 even, lane 1 odd, one word
                ea.adr.eq(half), ea.dat_w.eq(self.w_lane0), ea.we.eq(self.w_we0),
                oa.adr.eq(half), oa.dat_w.eq(self.w_lane1), oa.we.eq(self.w_we1),
            ).Elif(busy,         # lane 0 odd, lane 1 the next word's even
                oa.adr.eq(half), oa.dat_w.eq(self.w_lane0), oa.we.eq(self.w_we0),
                ea.adr.eq(half + 1), ea.dat_w.eq(self.w_lane1), ea.we.eq(self.w_we1),
            ).Else(
                ea.adr.eq(self.cpu_adr[1:]), oa.adr.eq(self.cpu_adr[1:]),
                ea.dat_w.eq(self.cpu_dat_w), oa.dat_w.eq(self.cpu_dat_w),
                ea.we.eq(self.cpu_we & ~self.cpu_adr[0]), oa.we.eq(self.cpu_we & self.cpu_adr[0]),
            ),
            self.cpu_dat_r.eq(Mux(odd_cpu, oa.dat_r, ea.dat_r)),
        ]
        self.sync += odd_cpu.eq(self.cpu_adr[0])

