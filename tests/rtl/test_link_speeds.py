"""The rig core at Gen1 and Gen2 (speed negotiation with the simulated drive, data at the
link's rate, stamps still on the 150 MHz counter), a drive slower than the rig's fixed
speed, and LiteSATA's own PHY datapath (with its clock crossings) in place of the rig's."""
import pytest

from fisrig_hw import contract
from fisrig_bench import rig_sim
from fisrig_hw.descriptor import EV_LINK_UP, RESULT_OK
from fisrig_hw.phy.sim_phy import CYCLES_PER_DWORD

SECTORS = 256                 # 128 KiB commands
GEN3_READ_CEILING = 591e6     # B/s, 128 KiB queued reads in 8 KiB Data FISes (docs/rtl-engine.md)


def run(exe, script, faults=""):
    return rig_sim.run(exe, script, "fast-1gb", "boot_us=100" + faults)


def write_then_read(commands, max_cycles):
    s = rig_sim.Script(max_cycles=max_cycles).link_up(1)
    for i in range(commands):
        s.ncq(True, i * SECTORS, SECTORS, 100 + i)
    s.wait()
    for i in range(commands):
        s.ncq(False, i * SECTORS, SECTORS, 200 + i, check=True)
    return s.wait()


def rate(records):
    ticks = max(r["ts_status"] for r in records) - min(r["ts_submit"] for r in records)
    return len(records) * SECTORS * 512 / (ticks / contract.FISRIG_TICK_HZ)


@pytest.mark.parametrize("gen", [2, 1])
def test_a_slower_rig_negotiates_down_and_moves_data_at_its_speed(gen):
    """The drive starts at Gen3 and steps down to the rig's speed; every write reads back
    checked, and 128 KiB reads run at the Gen3 ceiling divided by the speed ratio."""
    exe = rig_sim.build(gen=gen)
    run_ = run(exe, write_then_read(8, 6_000_000))
    assert run_.returncode == 0, run_.output[-2000:]
    assert run_.stats["link_gen"] == gen and run_.stats["link_ups"] == 1
    assert run_.events[0]["slot"] == EV_LINK_UP
    cmds = run_.commands
    recs = [cmds[100 + i] for i in range(8)] + [cmds[200 + i] for i in range(8)]
    assert all(r["result"] == RESULT_OK and r["check_errors"] == 0 for r in recs), recs
    ceiling = GEN3_READ_CEILING / CYCLES_PER_DWORD[gen]
    measured = rate(recs[8:])
    assert 0.97 * ceiling <= measured <= 1.01 * ceiling, (measured, ceiling)
    # Stamps stay 150 MHz ticks: a 128 KiB read's data takes 32,768 dwords times the
    # cycles each dword needs at this speed, plus ALIGNs and the 15 frame gaps.
    data = [r["ts_data_last"] - r["ts_data_first"] for r in recs[8:]]
    dwords = 32_768 * CYCLES_PER_DWORD[gen]
    assert all(dwords < d < dwords * 1.03 for d in data), data


def test_a_drive_slower_than_the_rig_never_links(rig_exe):
    """LiteSATA's host does not step down: a Gen2-only drive never sees a Gen3 rig's ALIGN
    it can answer, and the rig keeps retrying COMRESET; the script ends at its limit."""
    s = rig_sim.Script(max_cycles=1_500_000).link_up(1)
    run_ = run(rig_exe, s, ",max_gen=2")
    assert run_.returncode == 3, run_.output[-2000:]   # max_cycles: the link never came up
    assert run_.stats["link_ups"] == 0 and run_.stats["comresets"] >= 2
    assert not run_.records


def test_litesata_datapath_runs_the_same_commands_with_longer_turnarounds(rig_exe):
    """LiteSATA's datapath moves every dword through two clock-crossing FIFOs: the same
    commands complete the same way, each handshake a few cycles later."""
    litesata_exe = rig_sim.build(datapath="litesata")
    s = rig_sim.Script(max_cycles=3_000_000).link_up(1)
    s.ncq(True, 64, 8, 10).wait().ncq(False, 64, 8, 11, check=True).wait()
    latency = {}
    for name, exe in [("same_clock", rig_exe), ("litesata", litesata_exe)]:
        run_ = run(exe, s)
        assert run_.returncode == 0, run_.output[-2000:]
        w, r = run_.commands[10], run_.commands[11]
        assert w["result"] == r["result"] == RESULT_OK and r["check_errors"] == 0
        latency[name] = r["ts_status"] - r["ts_h2d"]
    # A lone 4 KiB queued read: the D2H, DMA Setup, Data FIS and SDB each wait at least
    # once for an answer of the host's (R_RDY, R_OK), six cycles later on LiteSATA's
    # datapath (three through each FIFO); 36 cycles in all when measured.
    assert latency["litesata"] - latency["same_clock"] >= 4 * 6, latency


def test_a_hold_storm_lasts_its_time_at_gen2():
    """Fault knobs given in time act for that time at any speed: a 20 us storm on each
    8 KiB Data FIS at Gen2 is 1,500 held dwords (3,000 ticks), and the writes take that
    much longer; every write still reads back checked."""
    exe = rig_sim.build(gen=2)
    clean = run(exe, write_then_read(2, 3_000_000))
    storm = run(exe, write_then_read(2, 3_000_000), ",hold_storm_rate=1,hold_storm_us=20")
    for r in (clean, storm):
        assert r.returncode == 0, r.output[-2000:]
        assert all(c["result"] == RESULT_OK and c["check_errors"] == 0 for c in r.commands.values())

    def write_ticks(r):
        w = [r.commands[100 + i] for i in range(2)]
        return max(c["ts_status"] for c in w) - min(c["ts_submit"] for c in w)
    fises = 2 * SECTORS * 512 // 8192
    assert storm.stats["holds_sent"] == fises * 4
    assert storm.stats["hold_cycles_sent"] == fises * 1500  # dwords: 3,000 ticks at Gen2
    assert write_ticks(storm) - write_ticks(clean) >= 0.9 * fises * 3000
