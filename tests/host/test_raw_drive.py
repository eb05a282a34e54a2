"""`fisrig raw` as a firmware engineer uses it (issue 58, section 5): a kept drive
(`--drive DIR`) that carries what it was sent from one call to the next, the drive each
call used named in its output, `--fault` as `fisrig run` takes it, and a command sent
under another protocol than its opcode's recorded as the rig sees it."""
from __future__ import annotations

import json

from fisrig.records import run_dir

from cli_in_process import fisrig

SECTOR = bytes(range(256)) * 2
TINY = ("--profile", "tiny-1gb")


def raw(capsys, *args):
    return fisrig(["raw", *args], capsys)


def test_a_kept_drive_reads_back_what_the_last_call_wrote(tmp_path, capsys):
    drive, sector = tmp_path / "drive", tmp_path / "sector.bin"
    sector.write_bytes(SECTOR)
    code, out, err = raw(capsys, "--command", "0x35", "--lba", "100", "--count", "1", "--data-out", sector,
                         "--drive", drive, *TINY)
    assert code == 0, err
    assert out.splitlines()[0] == f"drive: kept in {drive}, new (profile tiny-1gb, faults none): this is its first command"
    sector.write_bytes(bytes(512))  # the drive keeps its own copy of what it was sent
    code, out, err = raw(capsys, "--command", "0x25", "--lba", "100", "--count", "1", "--drive", drive,
                         "--data-in", tmp_path / "back.bin")
    assert code == 0, err
    assert out.splitlines()[0] == (f"drive: kept in {drive} (profile tiny-1gb, faults none): 1 command before this "
                                   "one, replayed; no time passes between calls (the drive's idle time is not simulated)")
    assert (tmp_path / "back.bin").read_bytes() == SECTOR
    assert "data in: 512 bytes" in out
    state = json.loads((drive / "drive.json").read_text())
    assert [c["command"] for c in state["commands"]] == [0x35, 0x25]
    assert state["commands"][0]["data_out"] == "data-out-00001.bin" and state["data_in_bytes"] == [0, 512]
    # and again: the third call replays both
    code, out, _ = raw(capsys, "--command", "0x25", "--lba", "100", "--count", "1", "--drive", drive)
    assert code == 0 and "2 commands before this one" in out and "00000000  00 01 02 03" in out


def test_without_a_kept_drive_each_call_gets_a_fresh_one(tmp_path, capsys):
    sector = tmp_path / "sector.bin"
    sector.write_bytes(SECTOR)
    assert raw(capsys, "--command", "0x35", "--lba", "100", "--count", "1", "--data-out", sector, *TINY)[0] == 0
    code, out, err = raw(capsys, "--command", "0x25", "--lba", "100", "--count", "1", "--data-in",
                         tmp_path / "back.bin", *TINY)
    assert code == 0, err
    assert out.splitlines()[0] == ("drive: fresh (profile tiny-1gb, faults none): a new drive for this one command "
                                   "(--drive DIR keeps one between calls)")
    assert (tmp_path / "back.bin").read_bytes() == bytes(512)


def test_a_kept_drive_refuses_another_drive_in_one_line(tmp_path, capsys):
    drive = tmp_path / "drive"
    assert raw(capsys, "--command", "0xe7", "--drive", drive, *TINY, "--fault", "busy_rate=0.5")[0] == 0
    state = (drive / "drive.json").read_text()
    cases = [
        (["--profile", "consumer-256gb"],
         f"fisrig: --drive {drive}: --profile consumer-256gb, where the drive kept there is tiny-1gb: a kept drive "
         "keeps the profile and faults of its first call (leave them out, or name another --drive)"),
        (["--fault", "busy_rate=0.1"],
         f"fisrig: --drive {drive}: --fault busy_rate=0.1, where the drive kept there has faults busy_rate=0.5: "),
        (["--target", "rtl"],
         f"fisrig: --drive {drive}: a kept drive is the model target's (the commands it had are replayed); "
         "--target rtl starts a fresh drive each time"),
    ]
    for args, message in cases:
        code, out, err = raw(capsys, "--command", "0xe7", "--drive", drive, *args)
        assert code == 2 and err.startswith(message) and len(err.splitlines()) == 1 and not out, (args, err)
    assert (drive / "drive.json").read_text() == state  # nothing sent, nothing logged
    # the same identity again, or none given: the kept one
    assert raw(capsys, "--command", "0xe7", "--drive", drive, *TINY, "--fault", "busy_rate=0.5")[0] == 0
    code, out, _ = raw(capsys, "--command", "0xe7", "--drive", drive)
    assert code == 0 and "(profile tiny-1gb, faults busy_rate=0.5): 2 commands before this one" in out


def test_a_kept_drive_is_one_callers_at_a_time(tmp_path, capsys):
    drive = tmp_path / "drive"
    assert raw(capsys, "--command", "0xe7", "--drive", drive, *TINY)[0] == 0
    with run_dir.take(drive, "test", what="raw"):  # another raw call holding it
        code, out, err = raw(capsys, "--command", "0xe7", "--drive", drive)
    assert code == 2 and err.startswith(f"fisrig: --drive {drive}: is in use by `fisrig raw` (pid ")
    assert "a kept drive takes one command at a time" in err
    other = tmp_path / "a run"
    other.mkdir()
    (other / "run.json").write_text("{}")
    code, _, err = raw(capsys, "--command", "0xe7", "--drive", other)
    assert code == 2 and err.startswith(f"fisrig: --drive {other}: holds 1 files and no drive.json (run.json): "
                                        "not a kept drive")


def test_a_failed_first_call_leaves_no_kept_drive(tmp_path, capsys):
    drive = tmp_path / "drive"
    code, _, err = raw(capsys, "--command", "0xe7", "--drive", drive, *TINY, "--fault", "busy_rate=7")
    assert code == 2 and "--fault busy_rate=7" in err
    assert not drive.exists()


def test_raw_takes_faults(capsys):
    """A READ over an UNC range ends as the fault says: the drive's UNC error, its first
    failing sector in the D2H, the good sectors before it moved."""
    code, out, err = raw(capsys, "--command", "0x25", "--lba", "4096", "--count", "8", "--fault", "unc=4100+4", *TINY)
    assert code == 1, err
    assert out.splitlines()[0] == "drive: fresh (profile tiny-1gb, faults unc=4100+4): a new drive for this one " \
                                  "command (--drive DIR keeps one between calls)"
    assert "command 0x25: ata_error  status 0x41 (DRDY ERR)  error 0x40 (UNC)  D2H LBA 4100  sectors 4" in out
    code, _, err = raw(capsys, "--command", "0x25", "--count", "1", "--fault", "no_such_knob=1", *TINY)
    assert code == 2 and err.startswith("fisrig: --fault no_such_knob=1: no such fault knob 'no_such_knob'")


def test_raw_help_says_what_it_takes(capsys):
    code, out, _ = fisrig(["raw", "--help"], capsys)
    assert code == 0
    text = " ".join(out.split())
    assert "--fault KNOB=VALUE" in text and "--drive DIR" in text and "fault knobs (--fault KNOB=VALUE" in text
    assert "no time passes between calls" in text


def test_a_command_under_another_protocol_is_what_the_rig_sees(tmp_path, capsys):
    """WRITE DMA EXT sent as DMA in: the drive asks for data the rig does not send (empty
    Data FISes): no data comes back and nothing is written; the rig times it out. READ LOG
    EXT as DMA in ends with its D2H, after its data."""
    drive = tmp_path / "drive"
    code, out, _ = raw(capsys, "--command", "0x35", "--protocol", "dma_in", "--lba", "100", "--count", "1",
                       "--drive", drive, *TINY)
    assert code == 1 and "command 0x35: timeout" in out
    assert "data in: none (the command did not complete without error)" in out
    code, out, _ = raw(capsys, "--command", "0x25", "--lba", "100", "--count", "1", "--drive", drive,
                       "--data-in", tmp_path / "back.bin")
    assert code == 0 and (tmp_path / "back.bin").read_bytes() == bytes(512)  # the link back, the sector unwritten
    code, out, _ = raw(capsys, "--command", "0x2f", "--protocol", "dma_in", "--lba", "0x10", "--count", "1", *TINY)
    assert code == 0
    times = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()
             if line.startswith("  ") and line.split()[-1] == "ns"}
    assert times["data_last"] <= times["status"]
