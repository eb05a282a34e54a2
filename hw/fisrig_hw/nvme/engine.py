"""The NVMe queue engine: engine_if.h's descriptors in (`desc`, 256-bit entries: an NVMe
descriptor is three), one struct fisrig_nvme_cpl_record a command out (`cpl`, 20 dwords), and
the controller driven through the root port (fisrig_hw/pcie) with no CPU in the way.

For each FISRIG_PROTO_NVME descriptor the engine picks a free slot (its command identifier),
writes the SQE into queue `qid`'s SQ in block RAM (its CID the slot, and, unless
FISRIG_NVME_DESC_OWN_PRP, its PRPs the slot's buffer: PRP2 the second page or the slot's
PRP list), and rings the SQ tail doorbell (a write of its own into BAR0). The controller's
reads of SQEs, PRP lists and a write's data (the data window's, or pattern.h's generated)
are answered by the completer; its writes (CQEs, MSI-X messages, a read's data, checked or
kept in the window) are taken as they cross. A command ends when the MSI-X message after its
CQE comes (the engine's queues are made with interrupts on, vector q); then the CQ head
doorbell goes, and its record, every stamp taken where its TLP crossed the link (engine_if.h:
ts_doorbell the doorbell's last beat out, ts_sqe the last beat of the completion carrying
its SQE, ts_data_* a data TLP's first and last beats, ts_cqe the CQE's last beat in, ts_irq
the MSI-X message's).

A command with no CQE by its deadline (its timeout_ticks, or the default) ends TIMEOUT; the
engine then clears CC.EN (a controller reset, as the SATA engine sends a COMRESET), ends
every other command LINK_LOST with what it had, and takes no command (LINK_LOST at once)
until `controller_ready` rises again after the controller is brought up. POWER OFF, ON and
OFF_AT_EVENT cut the drive's rails on a tick (cut.py).

What this engine does not do yet (docs/nvme-rig.md): bring the controller up itself (the
CPU enables it on the engine's admin queues, raises `controller_ready`, and makes the I/O
queues with admin descriptors, FISRIG_NVME_DESC_OWN_PRP, at memory_map.py's addresses), the
current sampler and POWER STAGE (REFUSED), LINK COMRESET (REFUSED), the analyzer's capture."""
from migen import Array, Cat, FSM, If, Memory, Mux, NextState, NextValue, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from fisrig_hw import contract as _c
from fisrig_hw.descriptor import DEFAULT_TIMEOUT_TICKS, DESC_BITS, desc_field, struct_field
from fisrig_hw.nvme.completer import Completer
from fisrig_hw.nvme.cut import PowerCut
from fisrig_hw.nvme.host_writes import HostWrites
from fisrig_hw.nvme.link_tap import LinkWriteTap
from fisrig_hw.nvme.memory_map import ADMIN_ENTRIES, DATA, LISTS, PAGE, SLOT_SHIFT, covers
from fisrig_hw.nvme.pattern_pair import STATE_BITS
from fisrig_hw.nvme.records import CUT_FIELDS, R, RecordWriter, place, slot_record
from fisrig_hw.nvme.requests import BarWrites
from fisrig_hw.nvme.slots import CQE_IN, ENDING, FREE, ISSUED, SlotField, SlotTable
from fisrig_hw.nvme.window import DataWindow

DOORBELLS = _c.FISRIG_NVME_REG_DOORBELLS


def head_field(raw, name):
    return struct_field(raw, "fisrig_nvme_desc_head", name)


class NvmeQueueEngine(LiteXModule):
    def __init__(self, root_port, now, slots: int = 32, queues: int = 4, io_entries: int = 64,
                 default_timeout: int = DEFAULT_TIMEOUT_TICKS, window_bytes: int = 128 << 10):
        if slots & (slots - 1) or not (2 <= slots <= 256 and 1 <= queues <= _c.FISRIG_NVME_ENGINE_QUEUES):
            raise ValueError(f"{slots} slots, {queues} queues: slots a power of two to 256, "
                             f"queues at most {_c.FISRIG_NVME_ENGINE_QUEUES}")
        if io_entries & (io_entries - 1) or not ADMIN_ENTRIES <= io_entries <= _c.FISRIG_NVME_ENGINE_QUEUE_ENTRIES:
            raise ValueError(f"{io_entries} entries a queue: a power of two, {ADMIN_ENTRIES} to "
                             f"{_c.FISRIG_NVME_ENGINE_QUEUE_ENTRIES}")
        self.desc = stream.Endpoint([("raw", DESC_BITS)])
        self.cpl = stream.Endpoint([("data", 32)])
        self.bar0 = Signal(32)                # where the enumeration placed BAR0
        self.controller_ready = Signal()      # its rise: the CPU enabled the controller on the engine's admin queues
        self.up = Signal()
        self.stat_stray_cqes = Signal(16)     # a CQE for no command of its queue in flight
        self.stat_stray_msix = Signal(16)     # an MSI-X message on a vector no queue has
        self.stat_timeouts = Signal(16)
        # The drive's rails (the power controller's, in simulation the device's power call):
        # they fall on the cut's tick, combinationally (cut.py's `rails_on`).
        self.rails_on = Signal()
        n_q = queues + 1

        # # #

        # The parts: the engine's own writes, the completer, the controller's writes, the cut.
        self.table = table = SlotTable(slots)
        self.cut = cut = PowerCut(now)
        self.comb += self.rails_on.eq(cut.rails_on)
        self.bar_writes = bw = BarWrites(root_port.phy.id)
        root_port.add_tx_source(bw.source)
        self.comb += bw.bar0.eq(self.bar0)
        self.sq_mem = sq_mem = Memory(256, n_q * io_entries * 2, name="nvme_sqs")
        sq_w = sq_mem.get_port(write_capable=True)
        sq_r = sq_mem.get_port()
        self.specials += sq_mem, sq_w, sq_r
        self.window = win = DataWindow(window_bytes)
        self.completer = cpl_u = Completer(sq_r, win, now, root_port.phy.id, queues, slots, io_entries)
        root_port.add_tx_source(cpl_u.source)
        self.comb += [bw.link_up.eq(cut.rails_on), cpl_u.link_up.eq(cut.rails_on)]
        self.writes = hw = HostWrites(now, win, queues, slots, io_entries)
        self.tap = tap = LinkWriteTap(root_port.phy.source, now, queues, slots)
        self.comb += tap.source.connect(hw.tap)
        port = root_port.get_slave_port(lambda adr: covers(adr, queues, slots))
        req = port.sink
        self.comb += [
            cpl_u.sink.adr.eq(req.adr), cpl_u.sink.len.eq(req.len), cpl_u.sink.tag.eq(req.tag),
            cpl_u.sink.req_id.eq(req.req_id),
            cpl_u.sink.valid.eq(req.valid & req.first & ~req.we),
            hw.valid.eq(req.valid & req.we), hw.first.eq(req.first), hw.last.eq(req.last),
            hw.adr.eq(req.adr), hw.len.eq(req.len), hw.dat.eq(req.dat),
            req.ready.eq(Mux(req.we, hw.ready, cpl_u.sink.ready)),
        ]

        # The slots' fields, each with one writer.
        # user_tag, qid, check, own_prp, dir, data_bytes; its data in the window (ram) at 64-bit word
        f_meta = SlotField(table, 32 + 5 + 1 + 1 + 2 + 22 + 1 + 16)
        f_submit, f_deadline = SlotField(table, 64), SlotField(table, 64)
        f_doorbell, f_sqe, f_irq, f_cqe = (SlotField(table, 64) for _ in range(4))
        f_status = SlotField(table, 16 + 32)                   # the CQE's status (phase clear), dw0
        f_pat = SlotField(table, 3 + 32 + 7 + 48)              # its generated data: kind, word, pct, SLBA
        f_gen_out = SlotField(table, STATE_BITS)               # where its last data read left the pattern
        f_gen_in = SlotField(table, STATE_BITS)                # where its last data write left the check
        f_out = SlotField(table, 64 + 64 + 20)                 # data the rig sent: first, last, dwords
        f_in = SlotField(table, 64 + 64 + 20 + 16 + 13)        # data it took: first, last, dwords, bad blocks, last bad + 1
        self.submodules += [f_meta, f_submit, f_deadline, f_doorbell, f_sqe, f_irq, f_cqe, f_status, f_out, f_in,
                            f_pat, f_gen_out, f_gen_in]
        sq_slot = Memory(8, n_q * io_entries, name="nvme_sq_slot")  # queue q's entry e: its slot
        sq_slot_w = sq_slot.get_port(write_capable=True)
        sq_slot_r = sq_slot.get_port(async_read=True)
        self.specials += sq_slot, sq_slot_w, sq_slot_r

        # The window's slots, as the completer and the writes find them.
        m, m_ok = f_meta.read(cpl_u.decoded.slot)
        self.comb += [cpl_u.slot_ram.eq(m_ok & m[63]), cpl_u.slot_word.eq(m[64:80])]
        m, m_ok = f_meta.read(hw.decoded.slot)
        self.comb += [hw.slot_ram.eq(m_ok & m[63]), hw.slot_dword.eq(m[64:80] << 1)]
        # Their slots' generated data: its pattern, and where the last TLP left it.
        for unit, field in ((cpl_u, f_gen_out), (hw, f_gen_in)):
            pat, pat_ok = f_pat.read(unit.decoded.slot)
            saved, saved_ok = field.read(unit.decoded.slot)
            sp = unit.pattern
            self.comb += [
                sp.on.eq(pat_ok & (pat[:3] >= _c.FISRIG_DATA_ZEROS)),
                sp.pair.kind.eq(pat[:3]), sp.pair.word.eq(pat[3:35]), sp.pair.pct.eq(pat[35:42]),
                sp.slba.eq(pat[42:90]),
                sp.saved_ok.eq(saved_ok), *sp.saved.eq_bits(saved),
                If(sp.save, *field.write(unit.decoded.slot, sp.save_state.bits())),
            ]

        # Per queue: SQ tail (the engine's) and head (the controller's, from CQEs), the CQ's
        # next head, and the slots whose CQE came and whose MSI-X is awaited, in order.
        sq_tail = Array(Signal(8, name=f"sq_tail{q}") for q in range(n_q))
        sq_head = Array(Signal(8, name=f"sq_head{q}") for q in range(n_q))
        cq_head = Array(Signal(8, name=f"cq_head{q}") for q in range(n_q))
        entries = Array([ADMIN_ENTRIES] + [io_entries] * queues)
        irq_wp = Array(Signal(9, name=f"irq_wp{q}") for q in range(n_q))
        irq_rp = Array(Signal(9, name=f"irq_rp{q}") for q in range(n_q))
        irq_mem = Memory(8, n_q * slots, name="nvme_irq_wait")
        irq_w = irq_mem.get_port(write_capable=True)
        irq_r = irq_mem.get_port(async_read=True)
        self.specials += irq_mem, irq_w, irq_r
        reset_queues = Signal()
        self.sync += If(reset_queues, *[s.eq(0) for arr in (sq_tail, sq_head, cq_head, irq_wp, irq_rp) for s in arr])

        # The slots ending, in order, for the record writer: (slot, result or none: computed).
        self.ending = ending = stream.SyncFIFO([("slot", 8), ("forced", 1), ("result", 4), ("when", 64)],
                                                        slots + 4)
        # The controller up: from controller_ready's rise until a timeout resets it.
        ready_d = Signal()
        reset_ctrl = Signal()
        self.sync += [
            ready_d.eq(self.controller_ready),
            If(self.controller_ready & ~ready_d, self.up.eq(1)),
            If(reset_ctrl, self.up.eq(0)),
        ]

        # ---- Descriptors in.
        d = self.desc
        raw = d.raw
        head = Signal(DESC_BITS)
        sqe_lo, sqe_hi = Signal(256), Signal(256)
        ts_submit = Signal(64)
        h_qid, h_bytes = head_field(head, "qid"), head_field(head, "data_bytes")
        h_src, h_flags = head_field(head, "data_source"), head_field(head, "flags")
        h_own = head_field(head, "nvme_flags")[0]
        h_tag, h_timeout = head_field(head, "user_tag"), head_field(head, "timeout_ticks")
        opcode = sqe_lo[:8]
        direction = opcode[:2]
        slot = Signal(8)
        pages = Signal(11)
        self.comb += pages.eq((h_bytes + PAGE - 1) >> 12)
        buf = Signal(32)
        prp2 = Signal(32)
        self.comb += [
            buf.eq(DATA + (slot << SLOT_SHIFT)),
            prp2.eq(Mux(pages <= 1, 0, Mux(pages == 2, buf + PAGE, LISTS + (slot << 12)))),
        ]
        patch = Signal()   # the engine's PRPs into the SQE
        self.comb += patch.eq(~h_own & (h_bytes != 0))
        lo_out = Signal(256)
        hi_out = Signal(256)
        self.comb += [
            lo_out.eq(sqe_lo),
            lo_out[16:32].eq(slot),
            If(patch, lo_out[192:224].eq(buf), lo_out[224:256].eq(0)),
            hi_out.eq(sqe_hi),
            If(patch, hi_out[0:32].eq(prp2), hi_out[32:64].eq(0)),
        ]
        q = Signal(5)   # (a signal: an Array indexed by a slice lowers wrongly in FSM NextValue)
        self.comb += q.eq(h_qid[:5])
        q_tail = Signal(8)
        self.comb += q_tail.eq(sq_tail[q])
        sq_room = Signal()
        self.comb += sq_room.eq(((q_tail + 1) & (entries[q] - 1)) != sq_head[q])
        h_word = head_field(head, "data_word")
        h_ram = Signal()
        self.comb += h_ram.eq((h_src == _c.FISRIG_DATA_RAM) & ~h_own & (h_bytes != 0))
        refuse = Signal()
        self.comb += refuse.eq((h_qid > queues) | (h_bytes > _c.FISRIG_NVME_DATA_MAX) | (h_src > _c.FISRIG_DATA_LFSR) |
                               (h_flags[0] & (h_src < _c.FISRIG_DATA_ZEROS) & (direction == 2)) |
                               # The window's data: 8-byte aligned, inside it.
                               (h_ram & ((h_word[:3] != 0) | (h_word + h_bytes > window_bytes))))
        # A record for a descriptor that took no slot.
        now_rec = Signal(64)
        direct_tag, direct_result, direct_qid = Signal(32), Signal(4), Signal(16)
        direct_go = Signal()
        wait_deadline = Signal(64)
        proto = desc_field(raw, "protocol")

        self.intake = fsm = FSM(reset_state="IDLE")
        fsm.act("IDLE",
            If(d.valid,
                d.ready.eq(1),
                NextValue(head, raw), NextValue(ts_submit, now),
                If(proto == _c.FISRIG_PROTO_NVME,
                    NextState("SQE_LO"),
                ).Elif(proto == _c.FISRIG_PROTO_POWER,
                    NextState("POWER"),
                ).Elif((proto == _c.FISRIG_PROTO_LINK) & (desc_field(raw, "command") == _c.FISRIG_LINK_WAIT_UP),
                    NextValue(wait_deadline, now + Mux(desc_field(raw, "timeout_ticks") != 0,
                                                       desc_field(raw, "timeout_ticks"), default_timeout)),
                    NextState("WAIT_UP"),
                ).Else(
                    NextValue(direct_result, R["REFUSED"]), NextState("DIRECT"),
                ),
            ),
        )
        fsm.act("WAIT_UP",
            If(self.up, NextValue(direct_result, R["OK"]), NextState("DIRECT")),
            If(~self.up & (now >= wait_deadline), NextValue(direct_result, R["TIMEOUT"]), NextState("DIRECT")),
        )
        p_cmd, p_kind = desc_field(head, "command"), desc_field(head, "features")
        p_count, p_delay = desc_field(head, "count"), desc_field(head, "timeout_ticks")
        self.comb += [cut.ts.eq(ts_submit), cut.kind.eq(p_kind), cut.count.eq(p_count), cut.delay.eq(p_delay)]
        fsm.act("POWER",  # its record first, then what it does (the model's order)
            NextValue(direct_result, R["OK"]),
            If(p_cmd == _c.FISRIG_POWER_OFF,
                cut.cut_now.eq(cut.rails),
            ).Elif(p_cmd == _c.FISRIG_POWER_ON,
                cut.power_on.eq(1),
            ).Elif((p_cmd == _c.FISRIG_POWER_OFF_AT_EVENT) & (p_kind == _c.FISRIG_EVENT_TIME),
                cut.arm_time.eq(1),
            ).Elif((p_cmd == _c.FISRIG_POWER_OFF_AT_EVENT) & (p_kind >= _c.FISRIG_EVENT_DOORBELL) &
                   (p_kind <= _c.FISRIG_EVENT_CQE),
                cut.arm_tlp.eq(1),
            ).Else(
                NextValue(direct_result, R["REFUSED"]),  # STAGE, SAMPLE: not on this engine yet
            ),
            NextState("DIRECT"),
        )
        fsm.act("SQE_LO", d.ready.eq(1), If(d.valid, NextValue(sqe_lo, raw), NextState("SQE_HI")))
        fsm.act("SQE_HI", d.ready.eq(1), If(d.valid, NextValue(sqe_hi, raw), NextState("CHECK")))
        alloc = Signal()
        fsm.act("CHECK",
            If(refuse,
                NextValue(direct_result, R["REFUSED"]), NextState("DIRECT"),
            ).Elif(~self.up,
                NextValue(direct_result, R["LINK_LOST"]), NextState("DIRECT"),
            ).Elif(table.any_free & sq_room,
                alloc.eq(1),
                NextValue(slot, table.free_slot),
                NextState("TAKE"),
            ),
        )
        table.move(alloc, table.free_slot, ISSUED)
        table.take(alloc, table.free_slot)
        row = Signal(16)
        self.comb += row.eq((q * io_entries + q_tail) << 1)
        fsm.act("TAKE",  # the slot's fields are the command's now, and the SQE's first half
            *f_meta.write(slot, Cat(h_tag, q, h_flags[0], h_own, direction, h_bytes[:22], h_ram, h_word[3:19])),
            *f_pat.write(slot, Cat(Mux(h_src == _c.FISRIG_DATA_NONE, _c.FISRIG_DATA_ZEROS, h_src)[:3], h_word,
                                   head_field(head, "compress_pct")[:7], sqe_hi[64:112])),
            *f_submit.write(slot, ts_submit),
            *f_deadline.write(slot, ts_submit + Mux(h_timeout != 0, h_timeout, default_timeout)),
            sq_slot_w.adr.eq(q * io_entries + q_tail), sq_slot_w.dat_w.eq(slot), sq_slot_w.we.eq(1),
            sq_w.adr.eq(row), sq_w.dat_w.eq(lo_out), sq_w.we.eq(1),
            NextState("SQE_SECOND"),
        )
        new_tail = Signal(8)
        self.comb += new_tail.eq((q_tail + 1) & (entries[q] - 1))
        fsm.act("SQE_SECOND",
            sq_w.adr.eq(row + 1), sq_w.dat_w.eq(hi_out), sq_w.we.eq(1),
            NextValue(sq_tail[q], new_tail),
            NextState("DOORBELL"),
        )
        # The engine's writes into BAR0, one requester at a time: the timeout's CC, a CQ
        # head doorbell, an SQ tail doorbell (stamped as it goes: BarWrites.sent).
        want_i, want_d, want_t = Signal(), Signal(), Signal()
        req_i = (DOORBELLS + 8 * q, sq_tail[q], 1, slot)
        v = Signal(5)
        req_d = (DOORBELLS + 8 * v + 4, cq_head[v], 0, 0)
        req_t = (_c.FISRIG_NVME_REG_CC, 0, 0, 0)
        bs = bw.sink
        self.comb += [
            bs.valid.eq(want_i | want_d | want_t),
            If(want_t, bs.offset.eq(req_t[0]), bs.value.eq(req_t[1]), bs.stamp.eq(req_t[2]), bs.slot.eq(req_t[3]))
            .Elif(want_d, bs.offset.eq(req_d[0]), bs.value.eq(req_d[1]), bs.stamp.eq(req_d[2]), bs.slot.eq(req_d[3]))
            .Else(bs.offset.eq(req_i[0]), bs.value.eq(req_i[1]), bs.stamp.eq(req_i[2]), bs.slot.eq(req_i[3])),
        ]
        granted_i = Signal()
        self.comb += granted_i.eq(want_i & ~want_d & ~want_t & bs.ready)
        fsm.act("DOORBELL",
            want_i.eq(1),
            If(granted_i, NextState("IDLE")),
        )
        self.comb += If(bw.sent & bw.sent_stamp & (now < cut.counts_until), *f_doorbell.write(bw.sent_slot, now))
        direct_sent = Signal()   # its record went
        fsm.act("DIRECT",
            direct_go.eq(1),
            If(direct_sent, NextState("IDLE")),
        )

        # ---- The SQEs the controller took: each's slot, stamped.
        sqe_slot = Signal(8)
        self.comb += [
            sq_slot_r.adr.eq(cpl_u.sqe_queue * io_entries + cpl_u.sqe_entry), sqe_slot.eq(sq_slot_r.dat_r),
            If(cpl_u.sqe_taken & (table.state[sqe_slot] == ISSUED) & (cpl_u.sqe_stamp < cut.counts_until),
               *f_sqe.write(sqe_slot, cpl_u.sqe_stamp)),
        ]

        # ---- The controller's writes: CQEs.
        c = hw.cqe
        cid = Signal(8)
        self.comb += cid.eq(c.cid[:8])
        meta_c, meta_c_ok = f_meta.read(cid)
        cqe_ours = Signal()
        cq = c.queue
        self.comb += [
            c.ready.eq(1),
            cqe_ours.eq((c.cid < slots) & (table.state[cid] == ISSUED) & meta_c_ok & (meta_c[32:37] == cq) &
                        (c.stamp < cut.counts_until)),
            If(c.valid & cqe_ours,
                *f_status.write(cid, Cat(c.status & 0xFFFE, c.dw0)),
                *f_cqe.write(cid, c.stamp),
                irq_w.adr.eq(cq * slots + (irq_wp[cq] & (slots - 1))),
                irq_w.dat_w.eq(cid), irq_w.we.eq(1),
            ),
        ]
        table.move(c.valid & cqe_ours, cid, CQE_IN)
        self.sync += If(c.valid,
            sq_head[cq].eq(c.sqhd[:8]),
            cq_head[cq].eq((c.index + 1) & (entries[cq] - 1)),
            If(cqe_ours, irq_wp[cq].eq(irq_wp[cq] + 1)).Else(self.stat_stray_cqes.eq(self.stat_stray_cqes + 1)),
        )

        # ---- MSI-X messages: every command whose CQE came before it on the vector's CQ
        # (q's vector is q) ends, stamped; then the CQ head doorbell goes.
        m = hw.msix
        timeout_busy = Signal()
        m_stamp = Signal(64)
        left = Signal(9)
        cqe_before = Signal()   # a CQE not yet taken came before the message
        self.comb += cqe_before.eq(c.valid & (c.stamp <= m.stamp))
        irq_slot = Signal(8)
        self.comb += [irq_r.adr.eq(v * slots + (irq_rp[v] & (slots - 1))), irq_slot.eq(irq_r.dat_r)]
        drain_end = Signal()
        self.drain = dr = FSM(reset_state="IDLE")
        dr.act("IDLE",
            If(m.valid & ~cqe_before & ~timeout_busy,
                m.ready.eq(1),
                If(m.vector > queues,
                    NextValue(self.stat_stray_msix, self.stat_stray_msix + 1),
                ).Else(
                    NextValue(v, m.vector), NextValue(m_stamp, m.stamp),
                    NextValue(left, irq_wp[m.vector[:5]] - irq_rp[m.vector[:5]]),
                    NextState("DRAIN"),
                ),
            ),
        )
        end_d = Signal()
        dr.act("DRAIN",
            If(left == 0,
                NextState("CQ_DOORBELL"),
            ).Elif(~timeout_busy,
                If(table.state[irq_slot] == CQE_IN,
                    If(ending.sink.ready,
                        end_d.eq(1),
                        *f_irq.write(irq_slot, m_stamp),
                        NextValue(irq_rp[v], irq_rp[v] + 1), NextValue(left, left - 1),
                    ),
                ).Else(  # a timeout ended it first
                    NextValue(irq_rp[v], irq_rp[v] + 1), NextValue(left, left - 1),
                ),
            ),
        )
        table.move(end_d, irq_slot, ENDING)
        dr.act("CQ_DOORBELL",
            want_d.eq(1),
            If(~want_t & bs.ready, NextState("IDLE")),
        )

        # ---- Data: what the completer sent of a write's, what came of a read's.
        d_slot = cpl_u.data_slot
        out_v, out_ok = f_out.read(d_slot)
        live_out = Signal()
        self.comb += [
            live_out.eq((table.state[d_slot] == ISSUED) | (table.state[d_slot] == CQE_IN)),
            If(cpl_u.data_done & live_out & (cpl_u.data_last < cut.counts_until),
                *f_out.write(d_slot, Cat(Mux(out_ok, out_v[:64], cpl_u.data_first), cpl_u.data_last,
                                         Mux(out_ok, out_v[128:148], 0) + cpl_u.data_dwords)),
            ),
        ]
        di = hw.data
        in_v, in_ok = f_in.read(di.slot)
        live_in = Signal()
        in_bad, in_last_bad = Signal(16), Signal(13)
        block0 = Signal(13)
        new_bad, new_last_bad = Signal(16), Signal(13)
        self.comb += [
            di.ready.eq(1),
            live_in.eq((table.state[di.slot] == ISSUED) | (table.state[di.slot] == CQE_IN)),
            in_bad.eq(Mux(in_ok, in_v[148:164], 0)), in_last_bad.eq(Mux(in_ok, in_v[164:177], 0)),
            block0.eq(di.offset[9:]),
            # A block counts once: the last one counted bad is kept (+ 1, 0 none).
            new_bad.eq(in_bad + (di.bad[0] & (in_last_bad != block0 + 1)) + di.bad[1]),
            new_last_bad.eq(Mux(di.bad[1], block0 + 2, Mux(di.bad[0], block0 + 1, in_last_bad))),
            If(di.valid & live_in & (di.t_last < cut.counts_until),
                *f_in.write(di.slot, Cat(Mux(in_ok, in_v[:64], di.t_first), di.t_last,
                                         Mux(in_ok, in_v[128:148], 0) + di.dwords, new_bad, new_last_bad)),
            ),
        ]

        # ---- The TLPs a cut at a TLP counts, each with the tick it ended on the link.
        self.comb += [
            cut.ev["doorbell"][0].eq(bw.sent & bw.sent_stamp), cut.ev["doorbell"][1].eq(now),
            cut.ev["sqe"][0].eq(cpl_u.sqe_taken), cut.ev["sqe"][1].eq(cpl_u.sqe_stamp),
            cut.ev["data_out"][0].eq(cpl_u.data_done), cut.ev["data_out"][1].eq(cpl_u.data_last),
            cut.ev["data_in"][0].eq(di.valid), cut.ev["data_in"][1].eq(di.t_last),
            cut.ev["cqe"][0].eq(c.valid), cut.ev["cqe"][1].eq(c.stamp),
        ]

        # ---- Deadlines: a slot a cycle; one past its deadline ends TIMEOUT, the controller is
        # reset (CC.EN cleared) and every other command in flight ends LINK_LOST.
        i = Signal(8)
        dl, dl_ok = f_deadline.read(i)
        live_i = Signal()
        self.comb += live_i.eq((table.state[i] == ISSUED) | (table.state[i] == CQE_IN))
        forced_result = Signal(4)
        end_t = Signal()
        fired_at = Signal(64)   # the tick a deadline passed: every command it ends, ends then
        self.timeouts = tm = FSM(reset_state="SCAN")
        # A cut (cut.py) ends every command in flight LINK_LOST after its record, which
        # counts them first (struct fisrig_nvme_cut_record).
        cut_seen = Signal()     # a cut fell while a timeout's ending was under way
        cut_go, cut_sent = Signal(), Signal()
        n_sent, n_fetched, n_data, n_done = (Signal(16, name=f"cut_{k}") for k in ("sent", "fetched", "data", "done"))
        db_i, db_i_ok = f_doorbell.read(i)
        sqe_i, sqe_i_ok = f_sqe.read(i)
        out_i, out_i_ok = f_out.read(i)
        in_i, in_i_ok = f_in.read(i)
        cut_tick = Signal(64)
        self.sync += If(cut.fire, cut_seen.eq(1), cut_tick.eq(now))
        self.comb += If(cut.fire, reset_ctrl.eq(1))
        tm.act("SCAN",
            If(cut_seen,
                NextValue(cut_seen, 0), NextValue(fired_at, cut_tick), NextValue(i, 0),
                *[NextValue(x, 0) for x in (n_sent, n_fetched, n_data, n_done)],
                NextState("COUNT"),
            ).Elif(live_i & dl_ok & (now >= dl),
                NextValue(fired_at, now),
                NextState("FIRE"),
            ).Else(
                NextValue(i, Mux(i == slots - 1, 0, i + 1)),
            ),
        )
        tm.act("COUNT",
            timeout_busy.eq(1),
            If(live_i,
                NextValue(n_sent, n_sent + (db_i_ok & (db_i != 0))),
                NextValue(n_fetched, n_fetched + (sqe_i_ok & (sqe_i != 0))),
                NextValue(n_data, n_data + ((out_i_ok & (out_i[:64] != 0)) | (in_i_ok & (in_i[:64] != 0)))),
                NextValue(n_done, n_done + (table.state[i] == CQE_IN)),
            ),
            NextValue(i, i + 1),
            If(i == slots - 1, NextState("CUT_RECORD")),
        )
        tm.act("CUT_RECORD",
            timeout_busy.eq(1),
            cut_go.eq(1),
            If(cut_sent, NextValue(i, 0), NextState("LOSE")),
        )
        tm.act("FIRE",
            timeout_busy.eq(1),
            If(~live_i,
                NextState("SCAN"),  # its record was on its way already
            ).Elif(ending.sink.ready,
                end_t.eq(1), forced_result.eq(R["TIMEOUT"]),
                NextValue(self.stat_timeouts, self.stat_timeouts + 1),
                NextState("RESET"),
            ),
        )
        tm.act("RESET",
            timeout_busy.eq(1),
            want_t.eq(1),
            If(bs.ready, reset_ctrl.eq(1), NextValue(i, 0), NextState("LOSE")),
        )
        tm.act("LOSE",
            timeout_busy.eq(1),
            If(live_i,
                If(ending.sink.ready,
                    end_t.eq(1), forced_result.eq(R["LINK_LOST"]),
                    NextValue(i, i + 1),
                ),
            ).Else(
                NextValue(i, i + 1),
            ),
            If(i == slots - 1, If(~live_i | ending.sink.ready, reset_queues.eq(1), NextValue(i, 0), NextState("SCAN"))),
        )
        table.move(end_t, i, ENDING)
        es = ending.sink
        self.comb += [
            es.valid.eq(end_d | end_t),
            es.slot.eq(Mux(end_t, i, irq_slot)),
            es.forced.eq(end_t), es.result.eq(forced_result), es.when.eq(fired_at),
        ]

        # ---- Records: a slot's, in the order they ended, or a descriptor's that took none.
        self.writer = wr = RecordWriter()
        w_slot, w_forced, w_result, w_when = Signal(8), Signal(), Signal(4), Signal(64)
        slot_rec, stmts = slot_record(
            {k: f.read(w_slot)[0] for k, f in (("meta", f_meta), ("submit", f_submit), ("doorbell", f_doorbell),
                                               ("sqe", f_sqe), ("irq", f_irq), ("cqe", f_cqe), ("status", f_status),
                                               ("out", f_out), ("in", f_in))},
            w_slot, w_forced, w_result, w_when)
        self.comb += stmts
        direct_rec, stmts = place({
            "user_tag": h_tag, "result": direct_result, "qid": Mux(head_field(head, "protocol") == _c.FISRIG_PROTO_NVME, h_qid, 0),
            "ts_submit": ts_submit, "ts_cqe": now_rec,
        })
        self.comb += stmts
        cut_rec, stmts = place({
            "user_tag": _c.FISRIG_USER_TAG_EVENT, "slot": _c.FISRIG_EVENT_REC_POWER_CUT, "result": R["LINK_LOST"],
            "cmds_sent": n_sent, "cmds_fetched": n_fetched, "cmds_data": n_data, "cmds_done": n_done,
            "ts_submit": fired_at, "ts_trigger": cut.trigger, "ts_status": fired_at,
        }, CUT_FIELDS)
        self.comb += stmts
        sel_direct, sel_cut = Signal(), Signal()
        self.comb += wr.record.eq(Mux(sel_direct, direct_rec, Mux(sel_cut, cut_rec, slot_rec)))
        self.comb += wr.cpl.connect(self.cpl)
        self.records = rf = FSM(reset_state="IDLE")
        ev = ending.source
        rf.act("IDLE",
            If(direct_go,
                NextValue(sel_direct, 1), NextValue(sel_cut, 0), NextValue(now_rec, now), wr.start.eq(1),
                NextState("SEND"),
            ).Elif(cut_go & ~ev.valid,  # after the records of what ended before the cut
                NextValue(sel_direct, 0), NextValue(sel_cut, 1), wr.start.eq(1), NextState("SEND"),
            ).Elif(ev.valid,
                ev.ready.eq(1),
                NextValue(sel_direct, 0), NextValue(sel_cut, 0), NextValue(w_slot, ev.slot), NextValue(w_forced, ev.forced),
                NextValue(w_result, ev.result), NextValue(w_when, ev.when),
                wr.start.eq(1), NextState("SEND"),
            ),
        )
        freed = Signal()
        rf.act("SEND",
            If(wr.done,
                If(sel_direct, direct_sent.eq(1)).Elif(sel_cut, cut_sent.eq(1)).Else(freed.eq(1)),
                NextState("IDLE"),
            ),
        )
        table.move(freed, w_slot, FREE)

