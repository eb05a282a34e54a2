"""The NVMe queue engine's gateware (fisrig_hw/nvme) on the root port, in Verilator, against
the simulated controller at its TLP interface (fisrig_bench.nvme_sim: the firmware's own
pcie_enum.c enumerates it through the config requester first). Each record's result and
every stamp are held to a wire monitor at the PHY's beats that decodes each TLP with
cocotbext-pcie (an independent codec): ts_doorbell is the last beat of the doorbell write
that made the command's SQE visible, ts_sqe the last beat of the completion carrying its
SQE, ts_data_* the first and last beats of its data TLPs, ts_cqe the last beat of its CQE's
write and ts_irq the MSI-X message's after it (engine_if.h)."""
from __future__ import annotations

import struct

import pytest
from cocotbext.pcie.core.tlp import Tlp, TlpType

from fisrig_bench import nvme_sim
from fisrig_bench.nvme_sim import IO_ENTRIES, QUEUES, SLOTS, Script
from fisrig_hw import contract as c
from fisrig_hw.nvme import memory_map as mm
from fisrig_hw.pcie.beats import beats_to_tlp

R = {k[len("FISRIG_RESULT_"):]: getattr(c, k) for k in c.ENUMS["fisrig_result"]}
WRITE, READ, FLUSH = c.FISRIG_NVME_CMD_WRITE, c.FISRIG_NVME_CMD_READ, c.FISRIG_NVME_CMD_FLUSH
Z = c.FISRIG_DATA_ZEROS
DWORD = 0xFFFFFFFF
FAST = "enable_us=5"   # CC.EN to CSTS.RDY in 5 us, not the controller's 1 ms


def decoded(run):
    """(way, tick of the first beat, of the last, Tlp) for each TLP the run printed."""
    return [(way, tf, tl, Tlp.unpack(beats_to_tlp(beats))) for way, tf, tl, beats in run.tlps]


def check_stamps(wire, r, bar0):
    """Each of the record's stamps is the tick its TLP crossed the PHY, as the monitor saw it."""
    s, q, t0 = r["slot"], r["qid"], r["ts_submit"]
    size = mm.ADMIN_ENTRIES if q == 0 else IO_ENTRIES
    reads, sqe, entry = {}, None, None   # the controller's reads by tag: their address
    data = []
    for way, tf, tl, t in wire:
        if way == "up" and t.fmt_type == TlpType.MEM_READ:
            reads[t.tag] = t.address
        if tl < t0:
            continue
        at = reads.get(t.tag, -1) if way == "down" and t.fmt_type == TlpType.CPL_DATA else None
        if (sqe is None and at is not None and mm.sq_address(q) <= at < mm.sq_address(q) + 64 * size
                and struct.unpack_from("<I", bytes(t.data))[0] >> 16 == s):
            sqe, entry = tl, (at - mm.sq_address(q)) // 64
        buf = mm.buffer_address(s)
        if sqe is not None and tl <= r["ts_cqe"]:
            if at is not None and buf <= at < buf + mm.SLOT_BYTES:
                data.append((tf, tl, t.length))
            if way == "up" and t.fmt_type == TlpType.MEM_WRITE and buf <= t.address < buf + mm.SLOT_BYTES:
                data.append((tf, tl, t.length))
    assert sqe == r["ts_sqe"], (r, sqe)
    doorbell = bar0 + c.FISRIG_NVME_REG_DOORBELLS + 8 * q
    rung = [tl for way, tf, tl, t in wire if way == "down" and t.fmt_type == TlpType.MEM_WRITE and tl >= t0
            and t.address == doorbell and struct.unpack("<I", bytes(t.data))[0] == (entry + 1) % size]
    assert rung and rung[0] == r["ts_doorbell"], (r, rung[:2])
    cq = mm.cq_address(q)
    cqes = [tl for way, tf, tl, t in wire if way == "up" and t.fmt_type == TlpType.MEM_WRITE and tl >= sqe
            and cq <= t.address < cq + 16 * size and struct.unpack("<4I", bytes(t.data))[3] & 0xFFFF == s]
    assert cqes and cqes[0] == r["ts_cqe"], (r, cqes[:2])
    irqs = [tl for way, tf, tl, t in wire if way == "up" and t.fmt_type == TlpType.MEM_WRITE
            and t.address == mm.MSIX and struct.unpack("<I", bytes(t.data))[0] == q and tl >= r["ts_cqe"]]
    assert irqs and irqs[0] == r["ts_irq"], (r, irqs[:2])
    assert sum(n for _, _, n in data) == r["data_dwords"], (r, data)
    if data:
        assert (data[0][0], data[-1][1]) == (r["ts_data_first"], r["ts_data_last"]), (r, data[0], data[-1])
    else:
        assert r["ts_data_first"] == r["ts_data_last"] == 0, r
    assert t0 <= r["ts_doorbell"] <= r["ts_sqe"] <= r["ts_cqe"] <= r["ts_irq"]


def counters_clean(run):
    for k in ("stray_cqes", "stray_msix", "timeouts", "stray_writes", "tap_mismatch", "cqe_packed", "refused_reads",
              "tap_overflow", "discarded", "malformed", "unsupported", "bad_completions"):
        assert run.stats[k] == 0, (k, run.stats)


def bar0_of(wire):
    """Where the enumeration put BAR0: the first memory write's page (the MSI-X table's)."""
    first = next(t for way, _, _, t in wire if way == "down" and t.fmt_type == TlpType.MEM_WRITE)
    return first.address & ~0xFFFF


def test_commands_end_with_the_controllers_status_and_every_stamp_where_its_tlp_crossed_the_link(nvme_exe):
    s = Script(max_cycles=20_000_000).wire()
    steps = [
        lambda: s.io(1, WRITE, 1, 0, 8, data_bytes=4096, source=Z),
        lambda: s.io(1, READ, 2, 0, 8, data_bytes=4096, source=Z, check=True),
        lambda: s.io(2, WRITE, 3, 256, 256, data_bytes=128 << 10, source=Z),            # a PRP list
        lambda: s.io(2, READ, 4, 256, 256, data_bytes=128 << 10, source=Z, check=True),
        # Four at once on four queues.
        lambda: [s.io(1 + k, READ, 10 + k, 8 * k, 8, data_bytes=4096) for k in range(4)],
        # The controller's data from the engine's own PRP list (not zeros): read back, checked.
        # (Its data TLPs are no slot buffer's: counted nowhere, engine.py says.)
        lambda: s.io(3, WRITE, 20, 512, 8, own_prp=True, prp1=mm.list_address(SLOTS - 1)),
        lambda: s.io(3, READ, 21, 512, 8, data_bytes=4096, source=Z, check=True),
        lambda: s.io(4, READ, 22, 1 << 40, 8, data_bytes=4096),                                 # past the namespace
        lambda: s.nvme(1, FLUSH, 23, nsid=1),
        lambda: s.nvme(0, c.FISRIG_NVME_ADMIN_GET_FEATURES, 24, cdw10=c.FISRIG_NVME_FEAT_NUMBER_OF_QUEUES),
        lambda: s.io(1, WRITE, 25, 0, 8, data_bytes=4096, source=7),                      # no such source
        lambda: s.io(QUEUES + 1, READ, 26, 0, 8, data_bytes=4096),                        # no such queue
    ]
    for step in steps:
        step()
        s.wait()
    run = nvme_sim.run(nvme_exe, s, faults=FAST)
    assert run.returncode == 0, run.output[-2000:]
    assert run.up[1] == QUEUES
    by = run.commands
    assert len(by) == 15
    for tag, dwords in ((1, 1024), (2, 1024), (3, 32768), (4, 32768), (10, 1024), (11, 1024), (12, 1024),
                        (13, 1024), (20, 0), (23, 0), (24, 0)):
        r = by[tag]
        assert r["data_dwords"] == dwords and r["blocks"] == dwords // 128, r
        assert r["result"] == R["OK"] and r["status"] == 0 and r["check_errors"] == 0, r
    assert by[24]["dw0"] == (QUEUES - 1) << 16 | (QUEUES - 1)   # Get Features: the queues granted
    assert by[21]["result"] == R["CHECK_FAILED"] and by[21]["check_errors"] == 8, by[21]
    assert by[22]["result"] == R["ATA_ERROR"] and by[22]["status"] == \
        c.FISRIG_NVME_SC_LBA_OUT_OF_RANGE << 1 | c.FISRIG_NVME_STATUS_DNR, by[22]
    for tag in (25, 26):
        assert by[tag]["result"] == R["REFUSED"] and by[tag]["ts_doorbell"] == 0, by[tag]
    assert len({by[t]["slot"] for t in (10, 11, 12, 13)}) == 4   # in flight together
    wire = decoded(run)
    bar0 = bar0_of(wire)
    for r in run.records:
        if r["result"] != R["REFUSED"]:
            check_stamps(wire, r, bar0)
    counters_clean(run)
    for _, _, _, t in wire:
        assert t.check()
        if t.fmt_type == TlpType.CPL_DATA:
            assert t.byte_count == 4 * t.length
    # A 128 KiB read's data came in 512 writes of 256 bytes (the payload size the enumeration set).
    r = by[4]
    assert sum(1 for way, tf, tl, t in wire if way == "up" and t.fmt_type == TlpType.MEM_WRITE and t.length == 64
               and r["ts_sqe"] <= tf and tl <= r["ts_cqe"]
               and mm.buffer_address(r["slot"]) <= t.address < mm.buffer_address(r["slot"] + 1)) == 512


@pytest.mark.parametrize("queues", [1, 2])
def test_thirty_two_in_flight_on_each_queue(nvme_exe, queues):
    s = Script(max_cycles=20_000_000)
    for k in range(32 * queues):
        s.io(1 + k % queues, READ, 100 + k, 8 * k, 8, data_bytes=4096)
    run = nvme_sim.run(nvme_exe, s.wait(), faults=FAST)
    assert run.returncode == 0, run.output[-2000:]
    assert [r["result"] for r in run.records] == [R["OK"]] * 32 * queues
    # The most in flight at once: commands whose SQ doorbell went and whose CQE had not come.
    events = sorted([(r["ts_doorbell"], 1) for r in run.records] + [(r["ts_cqe"], -1) for r in run.records])
    most, n = 0, 0
    for _, d in events:
        n += d
        most = max(most, n)
    assert most == 32 * queues
    assert len({r["slot"] for r in run.records}) == 32 * queues
    counters_clean(run)


def test_a_command_past_its_deadline_ends_timeout_the_controller_is_reset_and_the_rest_end_link_lost(nvme_exe):
    # The controller answers nothing after its 12th command (the bring-up's nine among them).
    s = Script(max_cycles=20_000_000)
    for k in range(3):
        s.io(1, READ, k, 8 * k, 8, data_bytes=4096)
    s.wait()
    s.io(1, READ, 10, 0, 8, data_bytes=4096, timeout=15_000)    # 100 us
    s.io(2, READ, 11, 8, 8, data_bytes=4096)                     # the default timeout: lost at the reset
    s.wait()
    s.io(1, READ, 12, 0, 8, data_bytes=4096)
    s.wait()
    run = nvme_sim.run(nvme_exe, s, faults=FAST + ",hang_after_commands=12")
    assert run.returncode == 0, run.output[-2000:]
    by = run.commands
    assert [by[k]["result"] for k in range(3)] == [R["OK"]] * 3
    t = by[10]
    # Fetched, never answered; the record ends at the deadline, with what it had.
    assert t["result"] == R["TIMEOUT"] and t["ts_sqe"] > 0 and t["ts_irq"] == 0, t
    assert t["ts_submit"] + 15_000 <= t["ts_cqe"] <= t["ts_submit"] + 15_100, t
    assert by[11]["result"] == R["LINK_LOST"] and by[11]["ts_cqe"] == t["ts_cqe"] and by[11]["ts_doorbell"] > 0
    assert by[12]["result"] == R["LINK_LOST"] and by[12]["ts_doorbell"] == 0   # the controller down: taken at once
    assert run.stats["timeouts"] == 1


def test_a_bad_script_is_refused_in_one_line(nvme_exe, tmp_path):
    s = Script()
    s.lines.append("queues 9")
    with pytest.raises(nvme_sim.NvmeSimError, match=r":2: queues: 1 to 4 'queues 9'"):
        nvme_sim.run(nvme_exe, s)
    with pytest.raises(nvme_sim.NvmeSimError, match="device: .*no-such-profile"):
        nvme_sim.run(nvme_exe, Script(), profile="no-such-profile")


KINDS = {c.FISRIG_EVENT_DOORBELL: "doorbell", c.FISRIG_EVENT_SQE: "sqe", c.FISRIG_EVENT_DATA_TLP: "data",
         c.FISRIG_EVENT_CQE: "cqe"}


def first_of_kind(wire, kind, after, bar0):
    """The end tick of the first TLP of a cut's kind to cross after `after`, as the monitor saw it."""
    reads = {}
    for way, tf, tl, t in wire:
        if way == "up" and t.fmt_type == TlpType.MEM_READ:
            reads[t.tag] = t.address
        if tl < after:
            continue
        at = reads.get(t.tag) if way == "down" and t.fmt_type == TlpType.CPL_DATA else None
        up_write = way == "up" and t.fmt_type == TlpType.MEM_WRITE
        if kind == "doorbell" and way == "down" and t.fmt_type == TlpType.MEM_WRITE and \
                bar0 + c.FISRIG_NVME_REG_DOORBELLS <= t.address < bar0 + c.FISRIG_NVME_REG_DOORBELLS + 0x100 and \
                (t.address - bar0 - c.FISRIG_NVME_REG_DOORBELLS) % 8 == 0:
            return tl
        if kind == "sqe" and at is not None and mm.IO_QUEUES <= at < mm.DATA and (at >> 19) & 1:
            return tl
        if kind == "data" and ((at is not None and at >= mm.DATA) or (up_write and t.address >= mm.DATA)):
            return tl
        if kind == "cqe" and up_write and mm.IO_QUEUES <= t.address < mm.LISTS and not (t.address >> 19) & 1:
            return tl
    return None


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_cut_at_a_tlp_falls_on_the_tick_asked_and_ends_what_was_in_flight(nvme_exe, kind):
    delay = 40 + 7 * (kind - c.FISRIG_EVENT_DOORBELL)
    s = Script(max_cycles=40_000_000).wire()
    s.io(1, WRITE, 1, 0, 64, data_bytes=32 << 10, source=Z).wait()
    s.power(c.FISRIG_POWER_OFF_AT_EVENT, 2, kind=kind, count=1, delay=delay).wait()
    s.io(1, WRITE, 3, 1024, 256, data_bytes=128 << 10, source=Z)
    s.io(2, READ, 4, 0, 64, data_bytes=32 << 10, source=Z, check=True)
    s.wait()
    s.power(c.FISRIG_POWER_ON, 5).wait().bring_up()
    s.io(2, READ, 6, 0, 64, data_bytes=32 << 10, source=Z, check=True).wait()
    run = nvme_sim.run(nvme_exe, s, faults=FAST + ",boot_us=100")
    assert run.returncode == 0, run.output[-2000:]
    by = run.commands
    assert by[1]["result"] == by[2]["result"] == by[5]["result"] == by[6]["result"] == R["OK"]
    [cut] = run.cuts
    assert cut["result"] == R["LINK_LOST"]
    # On the tick asked: delay ticks after the TLP's end, which the monitor saw there.
    assert cut["ts_status"] - cut["ts_trigger"] == delay, cut
    wire = decoded(run)
    assert cut["ts_trigger"] == first_of_kind(wire, KINDS[kind], by[2]["ts_cqe"], bar0_of(wire)), cut
    assert [on for on, _ in run.rails] == [0, 1] and run.rails[0][1] == cut["ts_status"]
    # What was in flight ends LINK_LOST with the stamps it had by the cut, none after it; what
    # had ended (its MSI-X in) before the cut ends OK.
    lost = [r for r in (by[3], by[4]) if r["result"] != R["OK"]]
    assert lost and all(r["result"] == R["LINK_LOST"] and r["ts_cqe"] == cut["ts_status"] for r in lost), lost
    assert all(r["ts_irq"] < cut["ts_status"] for r in (by[3], by[4]) if r["result"] == R["OK"])
    for r in lost:
        assert all(r[k] < cut["ts_status"] for k in ("ts_doorbell", "ts_sqe", "ts_data_first", "ts_data_last")
                   if r[k]), r
    assert cut["cmds_sent"] == sum(r["ts_doorbell"] > 0 for r in lost)
    assert cut["cmds_fetched"] == sum(r["ts_sqe"] > 0 for r in lost)
    assert cut["cmds_data"] == sum(r["ts_data_first"] > 0 for r in lost)
    # The rig sent nothing after the cut until the rails came back; the drive at most the TLP
    # it had begun to present (the simulated PHY has no link-down to cut it short).
    after = [(way, tf) for way, tf, tl, t in wire if cut["ts_status"] < tf < run.rails[1][1]]
    assert not [a for a in after if a[0] == "down"] and len(after) <= 1, after
    assert run.up[1] == QUEUES and by[6]["check_errors"] == 0


def test_power_off_now_and_at_a_time_and_descriptors_this_engine_does_not_take(nvme_exe):
    s = Script(max_cycles=40_000_000)
    s.power(c.FISRIG_POWER_OFF_AT_EVENT, 1, kind=c.FISRIG_EVENT_TIME, delay=3000)
    s.io(1, READ, 2, 0, 256, data_bytes=128 << 10).wait()
    s.power(c.FISRIG_POWER_ON, 3).wait().bring_up()
    s.io(1, READ, 4, 0, 8, data_bytes=4096).wait()
    s.power(c.FISRIG_POWER_OFF, 5).wait()
    s.io(1, READ, 6, 0, 8, data_bytes=4096).wait()                  # the controller down: at once
    s.power(c.FISRIG_POWER_SAMPLE, 7).wait()                          # not on this engine yet
    run = nvme_sim.run(nvme_exe, s, faults=FAST + ",boot_us=100")
    assert run.returncode == 0, run.output[-2000:]
    by = run.commands
    timed, now = run.cuts
    assert timed["ts_trigger"] == by[1]["ts_submit"] and timed["ts_status"] == by[1]["ts_submit"] + 3000, timed
    assert by[2]["result"] == R["LINK_LOST"] and by[2]["ts_cqe"] == timed["ts_status"]
    assert by[4]["result"] == R["OK"]
    assert now["ts_trigger"] == by[5]["ts_submit"] and now["ts_status"] >= by[5]["ts_submit"], now
    assert run.records.index(by[5]) < run.records.index(now)         # its record, then the cut's
    assert by[6]["result"] == R["LINK_LOST"] and by[6]["ts_doorbell"] == 0
    assert by[7]["result"] == R["REFUSED"]
    assert [on for on, _ in run.rails] == [0, 1, 0]


def test_data_in_the_window_identify_a_dataset_management_range_list_and_a_write_read_back(nvme_exe):
    r_ = c.FISRIG_DATA_RAM
    data = [(k * 0x9E3779B1 + 7) & DWORD for k in range(1024)]   # 4 KiB, not zeros
    s = Script(max_cycles=40_000_000)
    s.ram(2048, data)                                         # at byte 8192 of the window
    s.ram(1024, [0, 8, 64, 0])                                # a range: 8 blocks at LBA 64
    s.nvme(0, c.FISRIG_NVME_ADMIN_IDENTIFY, 1, data_bytes=4096, source=r_, cdw10=1).wait()
    s.io(1, WRITE, 2, 64, 8, data_bytes=4096, source=r_, data_word=8192).wait()
    s.io(1, READ, 3, 64, 8, data_bytes=4096, source=r_, data_word=4096 + 8192).wait()   # into 12 KiB on
    s.nvme(1, c.FISRIG_NVME_CMD_DATASET_MANAGEMENT, 4, data_bytes=16, source=r_, data_word=4096, nsid=1,
           cdw10=0, cdw11=1 << 2).wait()
    s.io(1, READ, 5, 64, 8, data_bytes=4096, source=Z, check=True).wait()   # deallocated: zeros
    s.io(1, READ, 6, 0, 8, data_bytes=4096, source=r_, data_word=4).wait()  # not 8-byte aligned: refused
    s.dump(0, 4).dump(3072, 1024)
    run = nvme_sim.run(nvme_exe, s, faults=FAST)
    assert run.returncode == 0, run.output[-2000:]
    by = run.commands
    for tag in (1, 2, 3, 4, 5):
        assert by[tag]["result"] == R["OK"], by[tag]
    assert by[1]["data_dwords"] == by[2]["data_dwords"] == by[3]["data_dwords"] == 1024
    assert run.dumps[0][0] & 0xFFFF == c.FISRIG_NVME_SIM_VENDOR_ID      # Identify Controller's VID
    assert run.dumps[3072] == data                                       # the write, read back whole
    assert by[5]["check_errors"] == 0
    assert by[6]["result"] == R["REFUSED"]
    counters_clean(run)


@pytest.mark.parametrize("source, pct", [(c.FISRIG_DATA_STAMP, 100), (c.FISRIG_DATA_STAMP, 40), (c.FISRIG_DATA_LFSR, 100)])
def test_generated_data_goes_as_pattern_h_has_it_and_reads_back_checked(nvme_exe, source, pct):
    s = Script(max_cycles=40_000_000).wire()
    s.io(1, WRITE, 1, 4096, 256, data_bytes=128 << 10, source=source, data_word=77, compress_pct=pct).wait()
    kw = dict(data_bytes=4096, source=source, compress_pct=pct, check=True)
    s.io(2, READ, 2, 4096, 256, data_word=77, **{**kw, "data_bytes": 128 << 10}).wait()
    s.io(2, READ, 3, 4096 + 8, 8, data_word=77, **kw).wait()   # from its LBA on
    s.io(2, READ, 4, 4096, 8, data_word=78, **kw).wait()       # another write's word
    run = nvme_sim.run(nvme_exe, s, faults=FAST)
    assert run.returncode == 0, run.output[-2000:]
    by = run.commands
    assert [by[t]["result"] for t in (1, 2, 3)] == [R["OK"]] * 3, [by[t] for t in (1, 2, 3)]
    assert by[2]["check_errors"] == 0 and by[2]["blocks"] == 256
    assert by[4]["result"] == R["CHECK_FAILED"] and by[4]["check_errors"] == 8, by[4]
    counters_clean(run)
    # The write's data on the wire: the completions for its buffer, in the order they went,
    # are pattern.h's sectors from LBA 4096 (pattern_dump, as the SATA engine's are held).
    wire = decoded(run)
    reads, data = {}, b""
    buf = mm.buffer_address(by[1]["slot"])
    for way, tf, tl, t in wire:
        if way == "up" and t.fmt_type == TlpType.MEM_READ:
            reads[t.tag] = t.address
        if way == "down" and t.fmt_type == TlpType.CPL_DATA and buf <= reads.get(t.tag, -1) < buf + mm.SLOT_BYTES \
                and tl <= by[1]["ts_cqe"]:
            data += bytes(t.data)
    assert len(data) == 128 << 10
    import subprocess, os
    exe = os.path.join(os.path.dirname(nvme_exe), "pattern_dump")
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    subprocess.run(["cc", "-std=c99", "-I", os.path.join(root, "firmware/core/include"), "-o", exe,
                    os.path.join(root, "tests/hw/pattern_dump.c")], check=True)
    out = subprocess.run([exe, str(source), "4096", "77", str(pct), "256"], check=True, capture_output=True,
                         text=True).stdout
    want = b"".join(int(x, 16).to_bytes(4, "little") for x in out.split())
    assert data == want
