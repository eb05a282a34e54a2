"""The analyzer's capture in the gateware (capture.h, docs/capture.md): both directions of the
transceiver's parallel interface compressed as an analyzer does, into a ring around a trigger.

WireCompressor watches one direction (as FrameTap does, on the same pins and tick) and gives
capture.h's entries:

- a FIS (SOF ... EOF) as one entry: the tick of its first dword, its dwords from the type to
  the last before the CRC, its first FISRIG_CAPTURE_HEADER_DWORDS dwords descrambled (the
  scrambler starts over at each SOF, so dword k is XORed with the sequence's k-th word); a
  frame that ends in another primitive than EOF, HOLD or HOLDA is marked cut short;
- with `payload` set (an arming's payload dwords), the FIS's next dwords up to that many as
  payload entries of 7 dwords each, made as the frame goes (so before the FIS's own entry),
  descrambled by LiteSATA's scrambler run alongside (restarted at each SOF, stepped at each
  of the frame's dwords);
- a run of one primitive (SYNC, X_RDY, R_IP, HOLD, R_ERR, ...) as one entry with its count,
  CONT and the scrambled filler after it counted into the run it continues, which is then
  flagged FISRIG_CAPTURE_CONT. ALIGNs (a pair
  every 256 dwords, SATA 3.x 9.4.7) neither end a run nor are listed. SOF and EOF are the
  frame's own.

CaptureWindow keeps the entries of both directions in a ring from its arming on and holds it
once the window after the trigger has passed: the host reads the ring's entries out, keeps
those of [trigger - before, trigger + after] and releases it for the next window. The ring is
block RAM of its own (rd_index, rd_data: soc/rig_capture.py's RingBus) or, with
`external_store`, a store it writes entry by entry (wr_*: soc/capture_dram.py's ring in a
board's DDR), which may refuse one. A full ring overwrites its oldest entries; `wrapped` says
so. Nothing here can stall the wire or the engine: an entry the ring cannot take at once is
dropped and counted.
"""

from functools import reduce
from operator import and_, or_

from migen import *

from litex.soc.interconnect import stream

from litesata.common import primitives
from litesata.core.link import Scrambler

from fisrig_hw import contract as _c
from fisrig_hw.lfsr_tables import scrambler_words, tabulate_link

HEADER = _c.FISRIG_CAPTURE_HEADER_DWORDS
entry_layout = [("tick", 64), ("kind", 3), ("dir", 1), ("type", 8), ("flags", 8), ("count", 32),
                ("header", 32 * HEADER)]
ENTRY_BITS = sum(w for _, w in entry_layout)
# capture.h's enum fisrig_primitive by LiteSATA's primitive values (ALIGN has none: not listed).
PRIMITIVE_CODES = {primitives[n]: getattr(_c, f"FISRIG_PRIM_{n}") for n in primitives
                   if hasattr(_c, f"FISRIG_PRIM_{n}") and n not in ("ALIGN", "SOF", "EOF", "CONT")}
SCRAMBLE = scrambler_words(HEADER)


class WireCompressor(Module):
    def __init__(self, direction, lag=0, depth=4):
        self.now = Signal(64)
        self.valid = Signal()
        self.data = Signal(32)
        self.charisk = Signal(4)
        self.reset = Signal()
        self.dropped = Signal(32)
        self.payload = Signal(max=_c.FISRIG_CAPTURE_MAX_PAYLOAD_DWORDS + 1)  # dwords kept past the header
        # FISes, their payload and primitive runs each through a FIFO of their own (one cycle
        # can end a run, a frame and its payload together), merged into `source`.
        self.submodules.fis_fifo = fis_fifo = ResetInserter()(stream.SyncFIFO(entry_layout, depth))
        self.submodules.pay_fifo = pay_fifo = ResetInserter()(stream.SyncFIFO(entry_layout, depth))
        self.submodules.run_fifo = run_fifo = ResetInserter()(stream.SyncFIFO(entry_layout, depth))
        self.source = stream.Endpoint(entry_layout)
        # What is still open (a frame, or a primitive run): its entry comes when it ends.
        self.open = Signal()
        self.open_tick = Signal(64)

        # # #

        t = Signal(64)
        self.comb += [t.eq(self.now - lag), fis_fifo.reset.eq(self.reset), pay_fifo.reset.eq(self.reset),
                      run_fifo.reset.eq(self.reset)]
        is_prim = self.charisk[0]
        code = Signal(8)  # the primitive's enum fisrig_primitive, 0 if it is none of them
        self.comb += Case(self.data, {**{v: code.eq(c) for v, c in PRIMITIVE_CODES.items()}, "default": code.eq(0)})
        sof = is_prim & (self.data == primitives["SOF"])
        eof = is_prim & (self.data == primitives["EOF"])
        align = is_prim & (self.data == primitives["ALIGN"])
        cont = is_prim & (self.data == primitives["CONT"])
        hold = is_prim & ((self.data == primitives["HOLD"]) | (self.data == primitives["HOLDA"]))
        in_frame, in_cont = Signal(), Signal()
        fis_t, fis_n = Signal(64), Signal(32)
        header = [Signal(32, name=f"header{k}") for k in range(HEADER)]
        run_code, run_t, run_n = Signal(8), Signal(64), Signal(32)
        run_cont = Signal()  # the sender shortened this run with CONT
        # A run ends at another primitive (CONT and ALIGN aside), SOF or EOF, or a FIS dword.
        end_run = self.valid & (run_n != 0) & (
            (is_prim & ~align & ~cont & (sof | eof | (code != run_code))) | (~is_prim & ~in_cont))
        # A frame ends at its EOF, or cut short by another primitive than HOLD/HOLDA/ALIGN/CONT.
        end_frame = self.valid & in_frame & is_prim & ~align & ~cont & ~hold & ~sof
        self.comb += [
            run_fifo.sink.valid.eq(end_run),
            run_fifo.sink.tick.eq(run_t), run_fifo.sink.kind.eq(_c.FISRIG_CAPTURE_PRIMITIVE),
            run_fifo.sink.dir.eq(direction), run_fifo.sink.type.eq(run_code), run_fifo.sink.count.eq(run_n),
            run_fifo.sink.flags.eq(Mux(run_cont, _c.FISRIG_CAPTURE_CONT, 0)),
            fis_fifo.sink.valid.eq(end_frame & (fis_n != 0)),
            fis_fifo.sink.tick.eq(fis_t), fis_fifo.sink.kind.eq(_c.FISRIG_CAPTURE_FIS),
            fis_fifo.sink.dir.eq(direction), fis_fifo.sink.type.eq(header[0][:8]),
            # At EOF the last dword was the CRC; a frame cut short has no CRC to leave out.
            fis_fifo.sink.count.eq(Mux(eof, fis_n - 1, fis_n)),
            fis_fifo.sink.flags.eq(Mux(eof, 0, _c.FISRIG_CAPTURE_CUT_SHORT)),
            fis_fifo.sink.header.eq(Cat(*[Mux(k < Mux(eof, fis_n - 1, fis_n), h, 0) for k, h in enumerate(header)])),
        ]
        # The payload: the frame's dwords past the header, descrambled by the scrambler's k-th
        # word at its k-th dword, gathered 7 an entry (the last of a frame or of the arming's
        # payload dwords may hold fewer).
        self.submodules.scrambler = scrambler = ResetInserter()(Scrambler())  # LiteSATA's has its ce
        tabulate_link(self)
        frame_dword = Signal()
        self.comb += [
            frame_dword.eq(self.valid & ~is_prim & ~in_cont & in_frame),
            scrambler.reset.eq(self.reset | (self.valid & sof)),
            scrambler.ce.eq(frame_dword),
        ]
        pay = [Signal(32, name=f"payload{k}") for k in range(HEADER)]
        pay_k, pay_t, pay_at = Signal(max=HEADER), Signal(64), Signal(32)  # the entry being gathered
        now_dword = Signal(32)
        pay_dword = Signal()   # this dword is kept as payload
        pay_full = Signal()    # ... and is its entry's last
        pay_rest = Signal()    # a frame ends with an entry part filled
        pay_n = Signal(max=HEADER + 1)
        self.comb += [
            now_dword.eq(self.data ^ scrambler.value),
            pay_dword.eq(frame_dword & (fis_n >= HEADER) & (fis_n < HEADER + self.payload)),
            pay_full.eq(pay_dword & ((pay_k == HEADER - 1) | (fis_n == HEADER + self.payload - 1))),
            pay_rest.eq(end_frame & (pay_k != 0)),
            pay_n.eq(Mux(pay_full, pay_k + 1, pay_k)),
            pay_fifo.sink.valid.eq(pay_full | pay_rest),
            pay_fifo.sink.tick.eq(Mux(pay_k == 0, t, pay_t)), pay_fifo.sink.kind.eq(_c.FISRIG_CAPTURE_PAYLOAD),
            pay_fifo.sink.dir.eq(direction), pay_fifo.sink.type.eq(pay_n),
            pay_fifo.sink.count.eq(Mux(pay_k == 0, fis_n, pay_at)),
            pay_fifo.sink.header.eq(Cat(*[Mux(k >= pay_n, 0, Mux(pay_full & (pay_k == k), now_dword, pay[k]))
                                          for k in range(HEADER)])),
        ]
        self.sync += [
            If(self.reset | (self.valid & sof) | end_frame | pay_full,
                pay_k.eq(0)
            ).Elif(pay_dword,
                pay_k.eq(pay_k + 1),
                Case(pay_k, {k: pay[k].eq(now_dword) for k in range(HEADER)}),
                If(pay_k == 0, pay_t.eq(t), pay_at.eq(fis_n)),
            ),
        ]
        self.sync += [
            If((run_fifo.sink.valid & ~run_fifo.sink.ready) | (fis_fifo.sink.valid & ~fis_fifo.sink.ready) |
               (pay_fifo.sink.valid & ~pay_fifo.sink.ready),
               self.dropped.eq(self.dropped + 1)),
            If(self.reset,
                in_frame.eq(0), in_cont.eq(0), run_n.eq(0), run_code.eq(0)
            ).Elif(self.valid & is_prim & ~align,
                in_cont.eq(cont),
                If(cont, If(run_n != 0, run_n.eq(run_n + 1), run_cont.eq(1))
                ).Elif(sof | eof, run_n.eq(0), run_code.eq(0)
                ).Elif((code != run_code) | (run_n == 0), run_code.eq(code), run_t.eq(t), run_n.eq(1),
                       run_cont.eq(0)
                ).Else(run_n.eq(run_n + 1)),
                If(sof, in_frame.eq(1), fis_n.eq(0)
                ).Elif(end_frame, in_frame.eq(0)),
            ).Elif(self.valid & ~is_prim,
                If(in_cont, If(run_n != 0, run_n.eq(run_n + 1))  # CONT's filler: the run goes on
                ).Else(
                    run_n.eq(0),
                    If(in_frame,
                        If(fis_n == 0, fis_t.eq(t)),
                        *[If(fis_n == k, header[k].eq(self.data ^ SCRAMBLE[k])) for k in range(HEADER)],
                        fis_n.eq(fis_n + 1),
                    )
                )
            ),
        ]
        self.comb += [
            self.open.eq(in_frame | (run_n != 0)),
            self.open_tick.eq(Mux(in_frame, fis_t, run_t)),
        ]
        # FISes first: a run ending in the same cycle as a frame began before it, and the host
        # orders entries by tick.
        self.comb += If(fis_fifo.source.valid,
            fis_fifo.source.connect(self.source)
        ).Elif(pay_fifo.source.valid,
            pay_fifo.source.connect(self.source)
        ).Else(run_fifo.source.connect(self.source))


# How long past its window's end the ring waits for what began in it to end (a frame, a
# primitive run): 437 us, past the longest Data FIS at Gen1 with HOLDs; a run still going
# then (an idle link's SYNC) is not in the window.
GRACE_TICKS = 1 << 16


class CaptureWindow(Module):
    """The ring around a trigger. arm (a strobe) with trigger, value, before and after (ticks)
    and windows starts a capture; entries come from `compressors`' sources; `fire`/`fire_tick`
    fire an event trigger the engine decides (a power cut, a record's result: the caller
    matches it), the earliest trigger of a window winning as on the model target.

    A window is `done` once it has passed and what began in it has ended: the ring is then
    `holding` it, frozen, for the host to read (rd_index, rd_data a cycle later; `count`
    entries since the arming, at most `depth`) and `release`. Nothing waits on the host: an
    arming while a window is held (or has fired and not yet passed: that one is `cut` short)
    is kept `pending` and starts at the release, as does the arming's next window when it
    asked for several. What comes while a window is held is not kept: the next window starts
    at the release (`armed_at`, `late`), and a trigger that came meanwhile is counted in
    `missed` (until the release). A STOP ends the capture: a window it cut before its end is
    held, `cut`.

    external_store: no ring of its own; each entry kept goes out as a write (wr_valid,
    wr_index, wr_data) that the store takes when wr_ready (one it refuses is dropped, counted
    in store_dropped, and takes no slot), and a window is held only once the store has no
    write under way (store_busy low), so that the host reads it whole."""
    def __init__(self, compressors, depth=512, external_store=False):
        n_sinks = len(compressors)
        self.depth = depth
        self.now = Signal(64)
        self.arm = Signal()
        self.stop = Signal()
        self.release = Signal()
        self.trigger = Signal(4)      # these five are taken at the arming
        self.value = Signal(8)
        self.before = Signal(32)
        self.after = Signal(32)
        self.windows = Signal(16)
        self.payload = Signal(16)     # each FIS's dwords kept past the header (capture.h)
        self.armed_payload = Signal(16)
        self.armed_trigger = Signal(4)
        self.armed_value = Signal(8)
        self.armed_before = Signal(32)
        self.armed_after = Signal(32)
        self.armed_at = Signal(64)   # where the window may start: its arming, or the release it waited for
        self.fire = Signal()
        self.fire_tick = Signal(64)
        self.sinks = [c.source for c in compressors]
        self.armed = Signal()
        self.fired = Signal()
        self.done = Signal()
        self.holding = Signal()
        self.cut = Signal()       # the window ended before its end: a STOP or a new arming
        self.late = Signal()      # armed_at is a release's, not the arming's: what came before it is lost
        self.pending = Signal()   # an arming waits for the held window's release
        self.missed = Signal(32)  # triggers that came while this window was held
        self.trigger_tick = Signal(64)
        self.written = Signal(32)   # entries written since the arming (a wrapped ring kept `depth` of them)
        self.wrapped = Signal()
        self.external_store = external_store
        # The entry the ring takes this cycle (`keeping`): a harness prints them as they come.
        self.keeping, self.kept = Signal(), Signal(ENTRY_BITS)
        self.wr_ptr = wr_ptr = Signal(max=depth)  # where the next entry goes

        # # #

        if external_store:
            self.wr_valid, self.wr_ready = Signal(), Signal()
            self.wr_index, self.wr_data = Signal(max=depth), Signal(ENTRY_BITS)
            self.store_busy = Signal()
            self.store_dropped = Signal(32)
            wr = Record([("adr", len(wr_ptr)), ("dat_w", ENTRY_BITS), ("we", 1)])
            self.comb += [self.wr_valid.eq(wr.we), self.wr_index.eq(wr.adr), self.wr_data.eq(wr.dat_w)]
            stored = wr.we & self.wr_ready
        else:
            self.rd_index = Signal(max=depth)
            self.rd_data = Signal(ENTRY_BITS)
            mem = Memory(ENTRY_BITS, depth)
            wr = mem.get_port(write_capable=True)
            rd = mem.get_port(has_re=False)
            self.specials += mem, wr, rd
            self.comb += [rd.adr.eq(self.rd_index), self.rd_data.eq(rd.dat_r)]
            stored = wr.we
        # One entry a cycle: the first sink with one, the others wait (their FIFOs hold a few).
        take = Signal(max=max(2, n_sinks))
        have = Signal()
        self.comb += [
            have.eq(reduce(or_, [s.valid for s in self.sinks])),
            take.eq(0),
        ]
        for i in reversed(range(n_sinks)):
            self.comb += If(self.sinks[i].valid, take.eq(i))
        entry = stream.Endpoint(entry_layout)
        for i, s in enumerate(self.sinks):
            self.comb += If(take == i, s.connect(entry))
        e = entry
        h0 = e.header[:32]
        command = h0[16:24]
        tag = e.header[96 + 3:96 + 8]
        is_fis = e.kind == _c.FISRIG_CAPTURE_FIS
        h2d = is_fis & (e.type == _c.FISRIG_FIS_REG_H2D)
        queued = h2d & ((command == _c.FISRIG_ATA_READ_FPDMA_QUEUED) | (command == _c.FISRIG_ATA_WRITE_FPDMA_QUEUED) |
                        (command == _c.FISRIG_ATA_SEND_FPDMA_QUEUED))
        matches = Signal()
        self.comb += Case(self.armed_trigger, {
            _c.FISRIG_TRIGGER_FIS: matches.eq(is_fis & (e.type == self.armed_value)),
            _c.FISRIG_TRIGGER_COMMAND: matches.eq(h2d & (command == self.armed_value)),
            _c.FISRIG_TRIGGER_TAG: matches.eq(queued & (tag == self.armed_value)),
            _c.FISRIG_TRIGGER_R_ERR: matches.eq((e.kind == _c.FISRIG_CAPTURE_PRIMITIVE) &
                                                (e.type == _c.FISRIG_PRIM_R_ERR)),
            "default": matches.eq(0),
        })
        collecting = self.armed & ~self.done
        window_end = Signal(64)
        settled = Signal()  # nothing still open began at or before the window's end
        quiet = [~c.open | (c.open_tick > window_end) for c in compressors] + [~have]
        if external_store:
            quiet.append(~self.store_busy)  # every entry kept is in the store
        self.comb += settled.eq(reduce(and_, quiet))
        self.comb += [
            self.holding.eq(self.armed & self.done),
            e.ready.eq(1),  # taken, kept or not
            window_end.eq(self.trigger_tick + self.armed_after),
            wr.adr.eq(wr_ptr),
            wr.dat_w.eq(Cat(*[getattr(e, n) for n, _ in entry_layout])),
            wr.we.eq(e.valid & collecting),
            self.keeping.eq(stored), self.kept.eq(wr.dat_w),
        ]
        # The arming waiting for a release.
        p_trigger, p_value, p_before, p_after, p_windows, p_payload = (Signal(len(s)) for s in (
            self.trigger, self.value, self.before, self.after, self.windows, self.payload))
        left = Signal(16)  # windows of this arming still to come, this one's among them

        def start(trigger, value, before, after, windows, payload, late):
            return [
                self.armed.eq(1), self.fired.eq(0), self.done.eq(0), self.cut.eq(0), self.written.eq(0),
                self.wrapped.eq(0), wr_ptr.eq(0), self.armed_at.eq(self.now), self.late.eq(late), self.missed.eq(0),
                self.armed_trigger.eq(trigger), self.armed_value.eq(value),
                self.armed_before.eq(before), self.armed_after.eq(after), self.armed_payload.eq(payload),
                left.eq(Mux(windows == 0, 1, windows)),
                If(trigger == _c.FISRIG_TRIGGER_ARMED, self.fired.eq(1), self.trigger_tick.eq(self.now)),
            ]
        self.sync += [
            If(self.arm,
                If(self.armed & (self.done | self.fired),
                    # A window is held, or has fired: it stays for the host, cut short if it had
                    # not passed; this arming starts once it is read.
                    If(~self.done, self.done.eq(1), self.cut.eq(1)),
                    self.pending.eq(1), p_trigger.eq(self.trigger), p_value.eq(self.value),
                    p_before.eq(self.before), p_after.eq(self.after), p_windows.eq(self.windows),
                    p_payload.eq(self.payload),
                ).Else(
                    self.pending.eq(0),
                    *start(self.trigger, self.value, self.before, self.after, self.windows, self.payload, 0),
                )
            ).Elif(self.stop,
                self.pending.eq(0), left.eq(1),
                If(self.armed & ~self.done,
                    If(self.fired, self.done.eq(1), self.cut.eq(self.now <= window_end)
                    ).Else(self.armed.eq(0))  # nothing fired: nothing to read
                )
            ).Elif(self.release & self.holding,
                If(self.pending,
                    self.pending.eq(0),
                    *start(p_trigger, p_value, p_before, p_after, p_windows, p_payload, 1),
                ).Elif(left > 1,
                    *start(self.armed_trigger, self.armed_value, self.armed_before, self.armed_after, left - 1,
                           self.armed_payload, 1),
                ).Else(self.armed.eq(0))
            ).Elif(collecting,
                If(stored,
                    wr_ptr.eq(Mux(wr_ptr == depth - 1, 0, wr_ptr + 1)),
                    self.written.eq(self.written + 1),
                    If(self.written >= depth - 1, self.wrapped.eq(1)),
                ),
                # The earliest trigger wins: the engine's results come after their ticks, and a
                # long frame's entry after a short one's from the other way.
                If(e.valid & matches & (~self.fired | (e.tick < self.trigger_tick)),
                    self.fired.eq(1), self.trigger_tick.eq(e.tick)),
                If(self.fire & (~self.fired | (self.fire_tick < self.trigger_tick)) &
                   ~(e.valid & matches & (e.tick < self.fire_tick)),
                    self.fired.eq(1), self.trigger_tick.eq(self.fire_tick)),
                # The window has passed once the clock is past its end and what began in it has
                # ended (or GRACE_TICKS have gone by): what begins later is not in it.
                If(self.fired & (self.now > window_end) & (settled | (self.now > window_end + GRACE_TICKS)),
                   self.done.eq(1)),
            ).Elif(self.holding & ((e.valid & matches) | self.fire) & (self.pending | (left > 1)),
                self.missed.eq(self.missed + 1)
            ),
        ]
        self.count = Signal(32)
        self.comb += self.count.eq(Mux(self.wrapped, depth, self.written))
        if external_store:
            self.sync += If(wr.we & ~self.wr_ready, self.store_dropped.eq(self.store_dropped + 1))
