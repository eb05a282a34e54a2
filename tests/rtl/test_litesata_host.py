"""An independent host on the simulated drive: stock LiteSATA (core, crossbar, BIST generator,
checker and IDENTIFY unit; fisrig_bench.litesata_host) on the simulated transceiver at Gen1, 2
and 3, against sim/device at the pins. None of the rig's own link composition, transport or
engine is involved, so the drive's answers are checked by a host we did not write: IDENTIFY
as the drive's own tool gives it, WRITE DMA EXT then READ DMA EXT checked dword by dword at
several LBAs and sizes, and checker errors where the data differs (so the check is real)."""
import os
import subprocess

import pytest

from fisrig_bench import litesata_host_sim as lsh
from fisrig_hw.phy.sim_phy import CYCLES_PER_DWORD

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROFILE = "fast-1gb"
MODEL = "fisrig SIM-F1 fast"      # sim/ssd/profiles/fast-1gb.toml [identity] model
CAPACITY = 1_953_120              # its 1 GB in sectors, as the drive rounds it (8-sector multiple)
DWORDS_PER_SECTOR = 128


@pytest.fixture(scope="module", params=[3, 2, 1])
def host(request):
    return request.param, lsh.build(gen=request.param)


def drive_identify():
    """The drive's IDENTIFY page from its own tool, without any link: 256 words."""
    out = subprocess.run([os.path.join(ROOT, "build", "bin", "fisrig-drive"), "identify",
                          "--profile", PROFILE], capture_output=True, text=True, check=True).stdout
    return [int(w, 16) for w in out.split()]


def ata_string(words, first, n):
    return "".join(chr(w >> 8) + chr(w & 0xFF) for w in words[first:first + n]).strip()


def run_ok(exe, script, gen):
    r = lsh.run(exe, script, PROFILE)
    assert r.returncode == 0, r.output[-2000:]
    assert r.stats["link_gen"] == gen and r.stats["link_ups"] == 1
    assert not any(op["aborted"] for op in r.ops), r.ops
    return r


def test_identify_over_the_pins_is_the_drives_page(host):
    """LiteSATA's IDENTIFY (PIO Setup + one Data FIS) receives the 256 words the drive's tool
    prints, except the current-speed field (word 77 bits 3:1) that says the negotiated
    generation, and the integrity word that seals it."""
    gen, exe = host
    words = run_ok(exe, lsh.Script().identify(), gen).identify
    assert len(words) == 256
    assert ata_string(words, 27, 20) == MODEL
    assert words[100] | words[101] << 16 | words[102] << 32 | words[103] << 48 == CAPACITY
    assert (words[77] >> 1) & 0b111 == gen
    expected = drive_identify()   # no link: it reports the fastest speed, Gen3
    differ = [i for i in range(256) if words[i] != expected[i]]
    assert differ == ([] if gen == 3 else [77, 255]), differ
    assert words[255] & 0xFF == 0xA5 and sum(sum(divmod(w, 256)) for w in words) % 256 == 0


def test_writes_read_back_exactly_at_several_lbas_and_sizes():
    """Gen3: BIST writes of 1, 16 and 256 sectors at LBA 0, the middle and the end of the
    drive, both of the BIST's patterns, then each read back by the checker: no dword differs
    and the drive counted every sector."""
    gen = 3
    exe = lsh.build(gen=gen)
    cases = [(0, 1), (1, 16), (64, 256),                                   # none overlap
             (CAPACITY // 2, 1), (CAPACITY // 2 + 8, 16), (CAPACITY // 2 + 40, 256),
             (CAPACITY - 1, 1), (CAPACITY - 17, 16), (CAPACITY - 273, 256)]
    s = lsh.Script()
    for i, (lba, count) in enumerate(cases):
        s.write(lba, count, random=bool(i & 1))
    for i, (lba, count) in enumerate(cases):
        s.read(lba, count, random=bool(i & 1))
    r = run_ok(exe, s, gen)
    reads = [op for op in r.ops if op["kind"] == "read"]
    assert [(op["lba"], op["count"]) for op in reads] == cases
    assert [op["errors"] for op in reads] == [0] * len(cases)
    sectors = sum(c for _, c in cases)
    assert r.stats["drive.sectors_written"] == sectors and r.stats["drive.sectors_read"] == sectors


def test_slower_links_move_the_same_data(host):
    """Gen1 and Gen2 (and Gen3): a 16-sector and a 1-sector write read back clean, each
    write's data at the link's rate: 2,048 dwords take at least 2,048 x the cycles a dword
    needs at this speed."""
    gen, exe = host
    lba = CAPACITY // 3
    r = run_ok(exe, lsh.Script().write(lba, 16).write(CAPACITY - 1, 1, random=True)
               .read(lba, 16).read(CAPACITY - 1, 1, random=True), gen)
    assert [op["errors"] for op in r.ops if op["kind"] == "read"] == [0, 0]
    assert all(op["cycles"] > 16 * DWORDS_PER_SECTOR * CYCLES_PER_DWORD[gen]
               for op in r.ops if op["count"] == 16), r.ops


def test_the_checker_sees_data_that_differs():
    """The check is real: a read of never-written sectors, a read with the other pattern,
    and a read over one sector rewritten with other data each count the dwords that differ
    (to the dword where the data is fully known)."""
    exe = lsh.build(gen=3)
    lba = 500_000
    s = (lsh.Script()
         .read(lba, 16)                                # never written
         .write(lba, 16).read(lba, 16, random=True)    # the other pattern
         .write(lba + 5, 1, random=True).read(lba, 16))  # sector 5 of 16 rewritten
    r = run_ok(exe, s, 3)
    reads = [op["errors"] for op in r.ops if op["kind"] == "read"]
    dwords = 16 * DWORDS_PER_SECTOR
    # Never-written sectors read as zeros or the drive's signature: the counter's dword 0
    # is 0, so at most one dword can match.
    assert reads[0] >= dwords - 1, reads
    assert reads[1] == dwords, reads
    assert reads[2] == DWORDS_PER_SECTOR, reads


def test_a_bad_script_line_is_named():
    """A script the runner cannot take ends with one line naming it (file:line), exit 2."""
    exe = lsh.build(gen=3)
    s = lsh.Script().identify()
    s.lines.append("write 0 0")
    with pytest.raises(lsh.LiteSATAHostError, match=r":3: count must be 1\.\.65535"):
        lsh.run(exe, s, PROFILE)


def test_commands_past_the_end_fail_with_idnf_and_the_drive_stays_usable():
    """A read past the last LBA ends in a Register D2H with ERR and IDNF, which LiteSATA
    reports as a failed command; the drive takes the next commands as usual. A write past
    the end is refused before any DMA Activate. (Stock LiteSATA's command layer does not
    drop a refused write's data: it sends the generator's remaining dwords as new WRITE DMA
    EXT commands, each refused again, and its responses are out of step afterwards; so a
    refused write ends the script here.)"""
    exe = lsh.build(gen=3)
    s = (lsh.Script().read(CAPACITY, 1).write(4096, 1).read(4096, 1)
         .read(CAPACITY - 1, 2).read(4096, 1).write(CAPACITY - 1, 2))
    r = lsh.run(exe, s, PROFILE)
    assert r.returncode == 0, r.output[-2000:]
    past = [op for op in r.ops if op["lba"] >= CAPACITY - 1]
    assert all(op["aborted"] and op["status"] == 0x41 and op["error"] == 0x10 for op in past), past  # ERR, IDNF
    fine = [op for op in r.ops if op["lba"] == 4096]
    assert not any(op["aborted"] or op["errors"] for op in fine) and all(op["status"] == 0x40 for op in fine), fine
    assert r.stats["fis_sent.dma_activate"] == 1               # the one good write's
    assert r.stats["drive.errors"] == r.stats["drive.commands"] - 3   # all but the 3 good ones
