"""A raw command sent under another protocol than its opcode's (issue 58, section 5): the
model does what the gateware does. The drive answers by its opcode; the gateware runs the
protocol it was given as far as that decides anything and records what the drive then
does (sim/model/protocol_mismatch.h says what that comes to). Before, the model ran the
drive's answer to its end whatever the protocol: `raw --command 0x35 --protocol dma_in`
completed OK with 512 bytes "read", where the gateware answers the drive's DMA Activate
with empty Data FISes until the command times out, and READ LOG EXT sent as DMA in
recorded its last data dword 33 ns after its status (the gateware: its D2H's).

One plan holds every pair (tests/host/raw_mismatch.py: a command of each protocol under
each of the seven, 56 commands, each followed by a COMRESET, each with a 1 ms timeout), run
once on each target: about 40 s of rtl time. The four pairs that answer a queued H2D as PIO
in are followed by a queued read before their reset (raw_mismatch.followed). Each pair's record must have the same
result, status, error and data dwords on both, the same phases stamped, and each stamp
after the H2D within 2% of the gateware's or within a tick and two ALIGN pairs
(compare.apart with align_pairs=2): every pair starts after its own COMRESET, at no set
point of either end's ALIGN period, and the gateware's own run moves by two pairs with it
(READ DMA EXT's status 1,040 ns after its H2D under non_data and dma_in, 1,067 under
dma_out, the same FISes)."""
import pyarrow.parquet as pq
import pytest

from fisrig.report.compare import apart
from fisrig.run import run_plan

import raw_mismatch as rm


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    out = tmp_path_factory.mktemp("raw-mismatch")
    runs = {t: run_plan(rm.plan(), out / t, target=t, quiet=True) for t in ("model", "rtl")}
    for t, r in runs.items():
        assert r.status == "done", (t, r.outcome)
    return {t: rm.commands(pq.read_table(r.run_dir / "records.parquet").to_pylist()) for t, r in runs.items()}


def test_every_pair_is_in_the_plan(records):
    assert set(records["model"]) == set(records["rtl"]) == rm.labels()


def test_a_pio_in_answer_to_a_queued_h2d_holds_nothing_back(records):
    """IDENTIFY DEVICE and READ LOG EXT sent as FPDMA: the drive answers with a PIO Setup
    and its data, and no D2H releases the queued H2D. The gateware took the PIO Setup as
    the command's but kept waiting for that D2H, and took no other command until a COMRESET
    (an hour of wall time for the next read's timeout); the queued read sent next ends OK,
    on both targets, its stamps within the others' tolerance (test_each_pair_...)."""
    follows = sorted(k for k in rm.labels() if k.endswith(" then read"))
    assert len(follows) == 4
    for t, r in records.items():
        for k in follows:
            assert (r[k]["result"], r[k]["data_dwords"]) == ("ok", 128), (t, k, r[k])


def test_each_pair_ends_as_on_the_gateware(records):
    model, rtl = records["model"], records["rtl"]
    table = "\n".join(rm.table(model, rtl))
    bad = {k: why for k in rtl if (why := rm.differ(model[k], rtl[k], align_pairs=2))}
    assert not bad, f"{bad}\n{table}"


def test_what_the_issue_saw(records):
    """WRITE DMA EXT as DMA in: no data, TIMEOUT (the gateware's empty Data FISes, until the
    1 ms timeout); READ LOG EXT as DMA in: its status is its D2H, after its last data."""
    for t, r in records.items():
        w = r["0x35 as dma_in"]
        assert (w["result"], w["data_dwords"]) == ("timeout", 0), t
        log = r["0x2f as dma_in"]
        assert log["result"] == "ok" and log["t_data_last_ns"] <= log["t_status_ns"], t


def test_the_tolerance_is_the_compare_one():
    assert not apart(1040, 1067, align_pairs=2) and apart(1040, 1067)
