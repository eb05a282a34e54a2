"""The record's stamps hold to engine_if.h's definitions on the real path: a monitor reads
the rig's transceiver pins cycle by cycle (the runner's trace), finds every FIS on the wire
by the SATA rules (SOF to EOF; ALIGN skipped; CONT's filler skipped until the next other
primitive; the last dword before EOF is the CRC), and every stamp of every command must be
the tick of the dword the definition names, to the tick, with the host's memory as fast as
the link and with it 3 times slower (the receive path then backs up behind it)."""
import pytest

from fisrig_bench import rig_sim
from fisrig_hw.descriptor import *

from test_rig_core import link_up, queued, run_rig

from fisrig.sata.ata import IDENTIFY_DEVICE as IDENTIFY, READ_DMA_EXT, WRITE_DMA_EXT
from fisrig_hw.engine.fis import DATA, DMA_ACTIVATE, DMA_SETUP, PIO_SETUP, REG_D2H, REG_H2D, SET_DEVICE_BITS as SDB
TRACE_FROM, TRACE_TO = 751_000, 1_000_000


def known_commands(s):
    """PIO in, DMA out and in, queued writes and reads, tags 10 to 16 (test_capture_monitor.py
    runs them too)."""
    s.desc(Protocol.PIO_IN, IDENTIFY, user_tag=10, data_source=DATA_RAM).wait()
    s.desc(Protocol.DMA_OUT, WRITE_DMA_EXT, user_tag=11, lba=64, sectors=40, data_source=DATA_STAMP,
           data_word=5).wait()
    s.desc(Protocol.DMA_IN, READ_DMA_EXT, user_tag=12, lba=64, sectors=40, data_source=DATA_RAM).wait()
    queued(s, True, 256, 24, 13, word=6)
    queued(s, True, 512, 8, 14, word=6)
    s.wait()
    queued(s, False, 256, 24, 15, data=DATA_RAM)
    queued(s, False, 512, 8, 16, data=DATA_RAM)
    return s.wait()


def script(gap):
    s = link_up(rig_sim.Script(max_cycles=3_000_000))
    if gap:
        s.ram_write_gap(gap)
    return known_commands(s).trace(TRACE_FROM, TRACE_TO)


@pytest.mark.parametrize("gap", [0, 2], ids=["memory-at-link-rate", "memory-3x-slower"])
def test_every_stamp_is_the_wire_tick_its_definition_names(rig_exe, gap):
    run = run_rig(rig_exe, script(gap))
    assert run.returncode == 0, run.output
    assert run.stats["tap_mismatch"] == 0
    tx, rx = run.wire_frames("tx"), run.wire_frames("rx")
    recs = run.commands
    assert [recs[t]["result"] for t in range(10, 17)] == [RESULT_OK] * 7, recs
    first = min(recs[t]["ts_submit"] for t in range(10, 17))
    assert first > TRACE_FROM + run.stats["now_minus_cycle"], "the trace must start before the first command"

    def between(frs, typ, t0, t1):
        return [f for f in frs if f[0] == typ and t0 <= f[1] <= t1]

    for tag in range(10, 17):
        r = recs[tag]
        t0, t1 = r["ts_submit"], r["ts_status"] + 1
        h2d = between(tx, REG_H2D, t0, t1)
        assert h2d and r["ts_h2d"] == h2d[0][1], (tag, r, h2d)
        if tag == 10:   # PIO in: PIO Setup, one Data FIS; ends at its last data dword
            setup, data = between(rx, PIO_SETUP, t0, t1), between(rx, DATA, t0, t1)
            assert (r["ts_setup"], r["ts_data_first"], r["ts_data_last"], r["ts_status"]) == \
                (setup[0][1], data[0][2], data[-1][3], data[-1][3]), (r, setup, data)
            continue
        if tag in (11, 12):  # non-queued DMA: status in a D2H
            status = between(rx, REG_D2H, t0, t1)
            assert r["ts_status"] == status[-1][1] and r["ts_accept"] == 0, (tag, r, status)
        if tag == 11:        # DMA out: a DMA Activate before each Data FIS
            act, data = between(rx, DMA_ACTIVATE, t0, t1), between(tx, DATA, t0, t1)
            assert len(data) == 3 and r["ts_setup"] == act[0][1], (r, act)
        if tag == 12:        # DMA in: data only, no setup FIS
            data = between(rx, DATA, t0, t1)
            assert len(data) == 3 and r["ts_setup"] == 0, r
        if tag in (11, 12):
            assert (r["ts_data_first"], r["ts_data_last"]) == (data[0][2], data[-1][3]), (tag, r, data)
            continue
        # NCQ: the releasing D2H, then a DMA Setup naming the tag, its data, an SDB.
        accept = between(rx, REG_D2H, r["ts_h2d"], t1)
        assert r["ts_accept"] == accept[0][1], (tag, r, accept)
        sdb = between(rx, SDB, t0, t1)
        assert r["ts_status"] in [f[1] for f in sdb], (tag, r, sdb)
        setups = [f for f in between(rx, DMA_SETUP, t0, t1) if f[1] == r["ts_setup"]]
        assert setups, (tag, r)
        data_dir = tx if tag in (13, 14) else rx
        data = [f for f in between(data_dir, DATA, r["ts_setup"], r["ts_status"])
                if f[1] > r["ts_setup"]][: (r["sectors"] + 15) // 16]
        assert (r["ts_data_first"], r["ts_data_last"]) == (data[0][2], data[-1][3]), (tag, r, data)
    # With the slow memory the receive buffer really filled: the link asked the drive to HOLD.
    holds = sum(1 for _, host, _ in run.wire if host == "HOLD")
    assert (holds > 0) == bool(gap), holds
