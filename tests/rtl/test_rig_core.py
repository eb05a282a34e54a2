"""The whole SATA path in Verilator: LiteSATA's real PHY control and link layer, the rig's
PHY datapath, our transport, engine and power controller, against the simulated drive's
device side at the transceiver pins (sim/rtl/rig_core_runner.cpp plays the ring front end)."""
from fisrig_bench import rig_sim
from fisrig_hw.descriptor import *

from fisrig.sata.ata import DATA_SET_MANAGEMENT as DSM, FLUSH_CACHE_EXT as FLUSH_EXT, IDENTIFY_DEVICE as IDENTIFY, READ_DMA_EXT, SEND_FPDMA_QUEUED as SEND_FPDMA, STATUS_ERR, WRITE_DMA_EXT
from fisrig_hw.contract import FISRIG_ATA_ERROR_ABRT as ERROR_ABRT, FISRIG_ATA_ERROR_ICRC as ERROR_ICRC
FISRIG_CURRENT_PIN_CYCLES = 128  # sim/device pins.h
PHASE_ORDER = ["ts_submit", "ts_h2d", "ts_accept", "ts_setup", "ts_data_first", "ts_data_last",
               "ts_status"]


def run_rig(exe, script, faults=None):
    """Runs a script with a drive that boots in 100 us (the profile's boot time is
    seconds of simulated time; the RTL simulation runs about a millisecond a second)."""
    return rig_sim.run(exe, script, faults="boot_us=100" + ("," + faults if faults else ""))


def link_up(script=None, tag=1):
    """Every script starts as the firmware does: wait for the link and the signature."""
    return (script or rig_sim.Script(max_cycles=20_000_000)).link_up(tag)


def queued(script, write, lba, sectors, tag, word=7, check=False, data=DATA_STAMP):
    return script.ncq(write, lba, sectors, tag, data_word=word, check=check, data_source=data)


def assert_stamps_in_order(run):
    for r in run.commands.values():
        stamps = [r[k] for k in PHASE_ORDER if r[k]]
        assert stamps == sorted(stamps), r


def test_link_comes_up_against_the_simulated_drive(rig_exe):
    run = run_rig(rig_exe, link_up().trace(751_000, 751_600))
    assert run.returncode == 0, run.output
    up = run.events[0]
    assert up["slot"] == EV_LINK_UP
    # OOB takes a few thousand cycles, then LiteSATA waits 5 ms (750,000 cycles) of stable
    # ALIGNs before it calls the link ready; the signature follows.
    assert 750_000 <= up["ts_status"] < 760_000, up
    assert run.commands[1]["result"] == RESULT_OK
    assert run.commands[1]["ts_status"] >= up["ts_status"]
    # The signature FIS on the wire, as the runner's trace names it: the drive's X_RDY, SOF,
    # the frame, EOF and WTRM; LiteSATA's R_RDY, R_IP and R_OK.
    assert run.wire and run.wire[0][0] == 751_000
    host, drive = [w[1] for w in run.wire], [w[2] for w in run.wire]
    assert {"X_RDY", "SOF", "EOF", "WTRM"} <= set(drive)
    assert drive.index("X_RDY") < drive.index("SOF") < drive.index("EOF") < drive.index("WTRM")
    assert host.index("R_RDY") < host.index("R_IP") < host.index("R_OK")
    s = run.stats
    assert s["link_ups"] == 1 and s["comresets"] == 1 and s["fis_sent.reg_d2h"] == 1
    assert s["protocol_errors"] == 0 and s["frames_aborted"] == 0


def test_commands_behind_a_link_wait_go_once_the_link_is_up(rig_exe):
    """Descriptors sent right behind LINK WAIT_UP, before the link is up, wait for it
    instead of ending LINK_LOST (the host bridge can ring the doorbell that early)."""
    s = rig_sim.Script(max_cycles=20_000_000)
    s.desc(Protocol.LINK, LINK_WAIT_UP, user_tag=1)
    s.desc(Protocol.PIO_IN, IDENTIFY, user_tag=2, data_source=DATA_RAM)
    queued(s, True, 0, 8, 3)
    run = run_rig(rig_exe, s.wait())
    assert run.returncode == 0, run.output
    recs = run.commands
    assert [recs[t]["result"] for t in (1, 2, 3)] == [RESULT_OK] * 3
    up = run.events[0]
    assert up["slot"] == EV_LINK_UP and recs[2]["ts_h2d"] > up["ts_status"]


def test_commands_through_litesata_to_the_simulated_drive(rig_exe):
    """IDENTIFY into RAM, 32 queued STAMP writes and 32 queued checked reads, checked DMA
    reads (one with the right sequence, one with a wrong one), FLUSH: the whole path."""
    s = link_up()
    s.desc(Protocol.PIO_IN, IDENTIFY, user_tag=10, data_source=DATA_RAM).wait()
    for i in range(32):
        queued(s, True, 1000 + 16 * i, 16, 100 + i, word=77)
    s.wait()
    for i in range(32):
        queued(s, False, 1000 + 16 * i, 16, 200 + i, word=77, check=True)
    s.wait()
    s.desc(Protocol.DMA_IN, READ_DMA_EXT, user_tag=300, lba=1000, sectors=64, data_source=DATA_STAMP,
           data_word=77, check=True)
    s.desc(Protocol.DMA_IN, READ_DMA_EXT, user_tag=301, lba=1000, sectors=64, data_source=DATA_STAMP,
           data_word=78, check=True)
    s.desc(Protocol.NON_DATA, FLUSH_EXT, user_tag=400).dump(0, 128)
    run = run_rig(rig_exe, s)
    assert run.returncode == 0, run.output
    recs = run.commands
    ident = recs[10]
    assert ident["result"] == RESULT_OK and ident["sectors"] == 1 and ident["status"] & 0xC9 == 0x40
    # IDENTIFY words 27..46: the model number, two characters a word, high byte first.
    words = run.dumps[0]
    model = "".join(chr((words[w // 2] >> (16 * (w % 2) + 8)) & 0xFF) +
                    chr((words[w // 2] >> (16 * (w % 2))) & 0xFF) for w in range(27, 47))
    assert model.strip() == "fisrig SIM-T1 tiny", model
    for t in range(100, 132):
        assert recs[t]["result"] == RESULT_OK and recs[t]["sectors"] == 16, recs[t]
        assert recs[t]["ts_accept"] and recs[t]["ts_setup"]
    for t in range(200, 232):
        assert recs[t]["result"] == RESULT_OK and recs[t]["check_errors"] == 0, recs[t]
    assert recs[300]["result"] == RESULT_OK and recs[300]["sectors"] == 64
    # Data written with sequence 77 read as if it were 78: every sector fails the check.
    assert recs[301]["result"] == RESULT_CHECK_FAILED and recs[301]["check_errors"] == 64
    assert recs[400]["result"] == RESULT_OK
    assert_stamps_in_order(run)


def test_a_descriptor_with_data_past_the_ram_window_is_refused(rig_exe):
    """The engine checks a descriptor's RAM data against the window it was given (the
    harness's 4 MiB, as the firmware gives the SoC's): a read whose last sector would land
    past it, a PIO read past it and a write from past it end REFUSED, nothing on the wire
    (no H2D stamp); the same read one sector shorter and everything after them run."""
    end = 4 << 20
    s = link_up()
    s.desc(Protocol.DMA_IN, READ_DMA_EXT, user_tag=1, lba=0, sectors=2, data_source=DATA_RAM, data_word=end - 512)
    s.desc(Protocol.PIO_IN, IDENTIFY, user_tag=2, data_source=DATA_RAM, data_word=end)
    s.ncq(True, 64, 8, 3, data_word=end - 1024, data_source=DATA_RAM)
    s.wait()
    s.desc(Protocol.DMA_IN, READ_DMA_EXT, user_tag=4, lba=0, sectors=1, data_source=DATA_RAM, data_word=end - 512)
    s.desc(Protocol.PIO_IN, IDENTIFY, user_tag=5, data_source=DATA_RAM, data_word=0)
    run = run_rig(rig_exe, s)
    assert run.returncode == 0, run.output
    recs = run.commands
    for t in (1, 2, 3):
        assert recs[t]["result"] == RESULT_REFUSED and recs[t]["ts_h2d"] == 0, recs[t]
        assert 0 < recs[t]["ts_status"] - recs[t]["ts_submit"] <= 2, recs[t]  # taken, refused at once
    assert recs[4]["result"] == RESULT_OK and recs[4]["sectors"] == 1, recs[4]
    assert recs[5]["result"] == RESULT_OK, recs[5]


def test_power_cut_mid_ncq_writes_and_link_comes_back(rig_exe):
    """Rails cut 100 ticks after the 3rd Data FIS of eight queued 64-sector writes; POWER
    ON; the same LBAs read back checked."""
    s = link_up()
    s.desc(Protocol.POWER, POWER_OFF_AT_EVENT, user_tag=2, features=EVENT_DATA, count=3,
           timeout_ticks=100)
    for i in range(8):
        queued(s, True, 4096 + 64 * i, 64, 100 + i, word=5)
    s.wait().desc(Protocol.POWER, POWER_ON, user_tag=3).wait()
    for i in range(8):
        queued(s, False, 4096 + 64 * i, 64, 200 + i, word=5, check=True)
    run = run_rig(rig_exe, s)
    assert run.returncode == 0, run.output
    recs, events = run.commands, run.events
    codes = [e["slot"] for e in events]
    # link up, the cut, the link going down, link up again after POWER ON
    assert codes == [EV_LINK_UP, EV_POWER_CUT, EV_LINK_DOWN, EV_LINK_UP], codes
    cut = events[1]["ts_status"]
    assert events[2]["ts_status"] > cut and events[3]["ts_status"] > events[2]["ts_status"]
    writes = [recs[100 + i] for i in range(8)]
    lost = [w for w in writes if w["result"] == RESULT_LINK_LOST]
    assert lost, "the cut came mid-write: some writes must end LINK_LOST"
    assert all(w["result"] in (RESULT_OK, RESULT_LINK_LOST) for w in writes)
    assert all(w["ts_status"] >= cut for w in lost)
    on = recs[3]
    assert on["result"] == RESULT_OK and on["ts_status"] >= events[3]["ts_status"]
    reads = [recs[200 + i] for i in range(8)]
    assert all(r["result"] in (RESULT_OK, RESULT_ATA_ERROR, RESULT_CHECK_FAILED) for r in reads)
    # A write the cut ended was never committed (the drive takes a write whole, after its
    # last Data FIS): its LBAs read back as they were, zeros, and fail the STAMP check.
    for i, w in enumerate(writes):
        if w["result"] == RESULT_LINK_LOST:
            assert reads[i]["result"] == RESULT_CHECK_FAILED and reads[i]["check_errors"] == 64
    # The engine had handed three Data FISes (48 sectors) of the first write to the link;
    # two had crossed the pins (the third was 100 ticks in): what the record counts.
    assert writes[0]["result"] == RESULT_LINK_LOST and writes[0]["sectors"] == 32
    # The cut's record: the slots' state on the cut's tick (engine_if.h's struct
    # fisrig_cut_record), before the records of the commands it ended, and what they say.
    m = events[1]["cut"]
    order = [r["user_tag"] for r in run.records]
    assert all(order.index(w["user_tag"]) > order.index(USER_TAG_EVENT) for w in lost)
    bits = lambda key: sum(1 << w["slot"] for w in lost if w[key])
    assert m["slots_issued"] == bits("ts_h2d") and m["slots_queued"] == bits("ts_accept")
    assert m["slots_data"] == bits("data_dwords") and m["slots_data"] >> writes[0]["slot"] & 1
    assert m["slots_done"] == 0 and events[2].get("cut") is None


def test_power_cut_at_a_time_falls_its_delay_after_the_arming(rig_exe):
    """FISRIG_EVENT_TIME: rails off timeout_ticks after the arming (its record's ts_submit),
    to the tick, with queued writes under way; the model target places it the same
    (tests/model/test_model.cc, CutAtATimeFallsItsDelayAfterTheArming)."""
    s = link_up()
    s.desc(Protocol.POWER, POWER_OFF_AT_EVENT, user_tag=2, features=EVENT_TIME, timeout_ticks=30001)
    for i in range(8):
        queued(s, True, 4096 + 64 * i, 64, 100 + i, word=5)
    s.wait().desc(Protocol.POWER, POWER_ON, user_tag=3).wait()
    run = run_rig(rig_exe, s)
    assert run.returncode == 0, run.output
    cuts = [e for e in run.events if e["slot"] == EV_POWER_CUT]
    assert len(cuts) == 1
    assert cuts[0]["ts_status"] == run.commands[2]["ts_submit"] + 30001
    assert any(run.commands[100 + i]["result"] == RESULT_LINK_LOST for i in range(8))


def current_records(run):
    return [e for e in run.events if e["slot"] == EV_CURRENT]


def test_the_current_sampler_takes_every_period_from_its_start_to_its_stop(rig_exe):
    """POWER SAMPLE (engine_if.h): a sample every period from the descriptor's tick, 30 to
    a record, records without a gap; the drive's idle draw (tiny-1gb: 60 mA) while nothing
    runs, more while its flush programs NAND, 0 once a POWER OFF has taken its rails (within
    the current pins' conversion time, pins.h); a stop sends what was taken since the last
    record. The model target's sampler is held to the same in tests/model/test_model.cc
    (ModelEngine.CurrentSamplerTakesEveryPeriodFromItsStart)."""
    period = 150
    s = link_up()
    s.desc(Protocol.POWER, POWER_SAMPLE, user_tag=2, count=1, timeout_ticks=period).wait()
    for i in range(8):
        queued(s, True, 4096 + 64 * i, 64, 100 + i, word=5)
    s.wait().desc(Protocol.NON_DATA, FLUSH_EXT, user_tag=3).wait()
    s.desc(Protocol.POWER, POWER_OFF, user_tag=4).wait()
    s.desc(Protocol.LINK, LINK_COMRESET, user_tag=6, timeout_ticks=3000).wait()  # 20 us unanswered
    s.desc(Protocol.POWER, POWER_SAMPLE, user_tag=5, count=0).wait()
    run = run_rig(rig_exe, s)
    assert run.returncode == 0, run.output
    recs = current_records(run)
    assert recs and all(r["current"]["period_ticks"] == period for r in recs)
    start, stop = run.commands[2], run.commands[5]
    assert start["result"] == stop["result"] == RESULT_OK
    assert recs[0]["current"]["ts_first"] == start["ts_submit"]
    for a, b in zip(recs, recs[1:]):
        assert len(a["current"]["ma"]) == CURRENT_SAMPLES
        assert b["current"]["ts_first"] == a["current"]["ts_first"] + CURRENT_SAMPLES * period
    last = recs[-1]["current"]
    assert 0 < len(last["ma"]) <= CURRENT_SAMPLES
    assert last["ts_first"] + (len(last["ma"]) - 1) * period <= stop["ts_submit"] < last["ts_first"] + len(last["ma"]) * period + period
    samples = [(r["current"]["ts_first"] + i * period, ma) for r in recs for i, ma in enumerate(r["current"]["ma"])]
    off = run.commands[4]["ts_submit"]
    before_writes = [ma for t, ma in samples if t < run.commands[100]["ts_submit"]]
    assert before_writes and set(before_writes) == {60}, before_writes
    busy = [ma for t, ma in samples if run.commands[3]["ts_submit"] <= t < run.commands[3]["ts_status"]]
    assert max(busy) > 60, busy
    unpowered = [ma for t, ma in samples if t > off + FISRIG_CURRENT_PIN_CYCLES + 4]
    assert len(unpowered) > 15 and set(unpowered) == {0}, unpowered
    assert run.stats.get("current_lost", 0) == 0


def test_a_record_port_held_full_loses_current_samples_and_says_so(rig_exe):
    """The sampler's two buffers carry it through a held record port for a record's time;
    held longer, it drops the newer buffer each time one fills, counts the samples
    (current_lost) and says in the next record how many records it dropped: the gap in the
    ticks is exactly those, and no sample is made up."""
    period = 150
    s = link_up()
    s.desc(Protocol.POWER, POWER_SAMPLE, user_tag=2, count=1, timeout_ticks=period).wait()
    s.hold_records(8 * CURRENT_SAMPLES * period)
    s.desc(Protocol.LINK, LINK_WAIT_UP, user_tag=3).wait()
    s.desc(Protocol.POWER, POWER_SAMPLE, user_tag=4, count=0).wait()
    run = run_rig(rig_exe, s)
    assert run.returncode == 0, run.output
    recs = current_records(run)
    gaps = [(b["current"]["ts_first"] - a["current"]["ts_first"] - len(a["current"]["ma"]) * period) // period
            for a, b in zip(recs, recs[1:])]
    dropped = [r["current"]["dropped"] for r in recs]
    assert sum(dropped) >= 5, dropped
    assert gaps == [d * CURRENT_SAMPLES for d in dropped[1:]], (gaps, dropped)
    assert run.stats["current_lost"] == sum(dropped) * CURRENT_SAMPLES


def trim_ranges(ranges):
    """DSM range entries (LBA 47:0, length 63:48), one 512-byte block, as RAM words."""
    words = []
    for lba, n in ranges + [(0, 0)] * (64 - len(ranges)):
        entry = lba | (n << 48)
        words += [entry & 0xFFFFFFFF, entry >> 32]
    return words


def test_trim_then_read_zeros_queued_and_not(rig_exe):
    """STAMP writes over two regions; TRIM one with DATA SET MANAGEMENT and the other with
    SEND FPDMA QUEUED (DSM), the ranges DMA'd from RAM; both read back as zeros, checked by
    the engine's checker, while an untrimmed region keeps its stamps."""
    s = link_up()
    for i in range(12):
        queued(s, True, 8192 + 64 * i, 64, 100 + i, word=9)
    s.wait()
    s.ram(0, trim_ranges([(8192, 256)])).ram(128, trim_ranges([(8192 + 256, 256)]))
    s.desc(Protocol.DMA_OUT, DSM, user_tag=20, sectors=1, features=1, data_source=DATA_RAM,
           data_word=0).wait()
    s.desc(Protocol.FPDMA_OUT, SEND_FPDMA, user_tag=21, sectors=1, aux=1, data_source=DATA_RAM,
           data_word=512).wait()
    for i in range(12):
        zeros = i < 8
        queued(s, False, 8192 + 64 * i, 64, 200 + i, word=0 if zeros else 9, check=True,
               data=DATA_ZEROS if zeros else DATA_STAMP)
    s.wait()
    # And the other way round: trimmed LBAs do not read back as their old stamps.
    queued(s, False, 8192, 64, 300, word=9, check=True)
    run = run_rig(rig_exe, s)
    assert run.returncode == 0, run.output
    recs = run.commands
    assert all(recs[100 + i]["result"] == RESULT_OK for i in range(12))
    assert recs[20]["result"] == RESULT_OK and recs[20]["sectors"] == 1
    assert recs[21]["result"] == RESULT_OK and recs[21]["ts_accept"] and recs[21]["ts_setup"]
    for i in range(12):
        assert recs[200 + i]["result"] == RESULT_OK and recs[200 + i]["check_errors"] == 0, (i, recs[200 + i])
    assert recs[300]["result"] == RESULT_CHECK_FAILED and recs[300]["check_errors"] == 64
    assert run.stats["ram_out_of_range"] == 0
    assert_stamps_in_order(run)


def write_then_check(count, lba=2048, sectors=32):
    s = link_up()
    for i in range(count):
        queued(s, True, lba + sectors * i, sectors, 100 + i, word=3)
    s.wait()
    for i in range(count):
        queued(s, False, lba + sectors * i, sectors, 200 + i, word=3, check=True)
    return s.wait()


def test_device_r_err_on_host_frames_is_resent_or_reported(rig_exe):
    """The drive answers R_ERR to a share of the host's FISes and drops them: a Register H2D
    goes again; a Data FIS the drive refused ends its command with an error the record
    carries. Nothing hangs, and what was reported OK reads back intact."""
    run = run_rig(rig_exe, write_then_check(32), faults="r_err_rate=0.05,seed=3")
    assert run.returncode == 0, run.output
    assert run.stats["r_err_injected"] > 0
    recs = run.commands
    assert len(recs) == 65
    writes = [recs[100 + i] for i in range(32)]
    assert all(w["result"] in (RESULT_OK, RESULT_ATA_ERROR, RESULT_NCQ_ABORTED) for w in writes), writes
    for i, w in enumerate(writes):
        r = recs[200 + i]
        if w["result"] == RESULT_OK:
            assert r["result"] == RESULT_OK and r["check_errors"] == 0, (w, r)


def test_crc_error_on_read_data_ends_the_command_with_icrc(rig_exe):
    """The drive corrupts the CRC of a share of its read Data FISes and ends that command
    with ICRC|ABRT (an NCQ error when queued): the engine's link counts the CRC errors,
    reads log 10h and names the failing tag; every other tag ends aborted or OK."""
    run = run_rig(rig_exe, write_then_check(16), faults="data_fis_crc_error_rate=0.1,seed=5")
    assert run.returncode == 0, run.output
    recs = run.commands
    reads = [recs[200 + i] for i in range(16)]
    failed = [r for r in reads if r["result"] == RESULT_ATA_ERROR]
    assert failed, reads
    for r in failed:
        assert r["status"] & STATUS_ERR and r["error"] & ERROR_ICRC, r
    assert all(r["result"] in (RESULT_OK, RESULT_ATA_ERROR, RESULT_NCQ_ABORTED) for r in reads)
    assert all(r["check_errors"] == 0 for r in reads if r["result"] == RESULT_OK)


def test_hold_storms_slow_writes_but_lose_nothing(rig_exe):
    """The drive throttles incoming Data FISes with HOLD bursts: LiteSATA's link holds,
    every write completes and reads back checked."""
    clean = run_rig(rig_exe, write_then_check(16))
    storm = run_rig(rig_exe, write_then_check(16), faults="hold_storm_rate=1,hold_storm_us=20")
    for run in (clean, storm):
        assert run.returncode == 0, run.output
        assert all(r["result"] == RESULT_OK and r["check_errors"] == 0 for r in run.commands.values())

    def write_ticks(run):
        w = [run.commands[100 + i] for i in range(16)]
        return max(r["ts_status"] for r in w) - min(r["ts_submit"] for r in w)
    # Each of the 32 Data FISes (16 KiB writes, 8 KiB a FIS) is held 20 us (3,000 ticks) in
    # four bursts; the link can hide none of it, since the host cannot send while held.
    held = storm.stats["hold_cycles_sent"]
    assert storm.stats["holds_sent"] == 32 * 4 and held == 32 * 3000
    assert write_ticks(storm) - write_ticks(clean) >= 0.9 * held


def test_drive_hang_times_out_and_comreset_recovers(rig_exe):
    """The drive stops answering after its 5th command: the engine's slot timeout ends it
    TIMEOUT, the engine sends COMRESET, the link comes back and the drive answers again."""
    s = link_up()
    for i in range(6):
        s.desc(Protocol.DMA_OUT, WRITE_DMA_EXT, user_tag=100 + i, lba=64 * i, sectors=8,
               data_source=DATA_STAMP, data_word=1, timeout_ticks=150_000)
        s.wait()
    # As the firmware does after a TIMEOUT record: wait for the link the COMRESET brings back.
    link_up(s, tag=200)
    s.desc(Protocol.NON_DATA, FLUSH_EXT, user_tag=300).wait()  # programs NAND: over 1 ms
    run = run_rig(rig_exe, s, faults="hang_after_commands=5")
    assert run.returncode == 0, run.output
    recs = run.commands
    assert [recs[100 + i]["result"] for i in range(5)] == [RESULT_OK] * 5
    hung = recs[105]
    assert hung["result"] == RESULT_TIMEOUT
    assert hung["ts_status"] - hung["ts_submit"] >= 150_000
    assert [e["slot"] for e in run.events] == [EV_LINK_UP, EV_LINK_DOWN, EV_LINK_UP]
    assert run.stats["comresets"] >= 2  # ours, and any OOB retry of LiteSATA's PHY control
    assert recs[200]["result"] == RESULT_OK and recs[300]["result"] == RESULT_OK
    assert recs[300]["ts_submit"] > run.events[2]["ts_status"]


def test_a_stuck_run_ends_at_its_cycle_limit(rig_exe):
    """A script whose commands can never finish in time ends with exit 3 and every record
    taken so far, instead of hanging the test."""
    s = link_up(rig_sim.Script(max_cycles=300_000))
    run = run_rig(rig_exe, s)
    assert run.returncode == 3
    assert "stuck: 1 descriptors" in run.output
