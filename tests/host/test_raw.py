"""`fisrig raw`: status and error bits by name, the data a command returned, log pages decoded."""
from pathlib import Path

from fisrig.sata import decode as ata_decode
from cli_run import fisrig





def test_bits_are_named():
    assert ata_decode.status(0x41) == "DRDY ERR"
    assert ata_decode.error(0x10) == "IDNF"
    assert ata_decode.error(0x84) == "ICRC ABRT"
    assert ata_decode.status(0x50) == "DRDY bit 4"  # ACS leaves bit 4 command specific
    assert ata_decode.error(0) == "-"


def test_hexdump_folds_repeats_like_hexdump_c():
    lines = ata_decode.hexdump(b"AB" + bytes(62))
    assert lines[0].startswith("00000000  41 42 00") and lines[0].endswith("|AB..............|")
    zeros = "00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|"
    assert lines[1:] == [f"00000010  {zeros}", "*", f"00000030  {zeros}"]  # the last line always shows


def test_raw_read_shows_the_data_and_keeps_it(tmp_path):
    out = tmp_path / "read.bin"
    r = fisrig("raw", "--command", "0x25", "--lba", "0", "--count", "8", "--profile", "tiny-1gb",
               "--data-in", str(out))
    assert r.returncode == 0, r.stderr
    assert "status 0x40 (DRDY)  error 0x00 (-)" in r.stdout
    assert "data in: 4096 bytes, the first 512 shown" in r.stdout
    assert out.read_bytes() == bytes(4096)  # a fresh drive reads zeros
    again = fisrig("raw", "--command", "0x25", "--count", "8", "--profile", "tiny-1gb", "--data-in", str(out))
    assert again.returncode == 2 and f"--data-in {out}: already exists" in again.stderr


def test_read_log_ext_pages_are_printed():
    r = fisrig("raw", "--command", "0x2f", "--lba", "0x00", "--count", "1", "--profile", "tiny-1gb")
    assert r.returncode == 0, r.stderr
    assert "log 0x00 (General Purpose Log Directory) page 0:" in r.stdout
    assert "log 0x10 (NCQ Command Error): 1 page(s)" in r.stdout
    r = fisrig("raw", "--command", "0x2f", "--lba", "0x11", "--count", "1", "--profile", "tiny-1gb")
    assert "0x001 Command failed due to ICRC error: 0" in r.stdout and "checksum ok" in r.stdout


def test_data_in_is_refused_where_there_is_none():
    r = fisrig("raw", "--command", "0xea", "--profile", "tiny-1gb", "--data-in", "/tmp/never-written")
    assert r.returncode == 2
    assert "--data-in /tmp/never-written: command 0xea (non_data) returns no data" in r.stderr
    r = fisrig("raw", "--command", "0x25", "--count", "1", "--target", "rtl", "--profile", "tiny-1gb",
               "--data-in", "/tmp/never-written")
    assert r.returncode == 2 and "target rtl does not bring a command's data back yet" in r.stderr
    assert not Path("/tmp/never-written").exists()


def test_timeout_ms_ends_a_command_the_drive_never_finishes():
    """WRITE DMA EXT sent as DMA in: the drive asks for data the rig never sends, and the
    command waits for its timeout; --timeout-ms makes that 1 ms where it was the engine's
    30 s (hours of wall time on the rtl target), on both targets alike."""
    for target in ("model", "rtl"):
        r = fisrig("raw", "--command", "0x35", "--protocol", "dma_in", "--count", "1", "--profile", "tiny-1gb",
                   "--timeout-ms", "1", "--target", target)
        assert r.returncode == 1, r.stderr
        assert "command 0x35: timeout" in r.stdout, r.stdout
        latency = int(next(x for x in r.stdout.splitlines() if x.strip().startswith("latency")).split()[1])
        assert 1_000_000 <= latency <= 1_001_000, (target, latency)


def test_a_trim_sent_as_data_in_times_out_on_both_targets():
    """DATA SET MANAGEMENT sent as DMA in: the drive asks for its range list, which the rig
    does not send. The model ended it ABRT at once, before any data phase; rtl prints its
    TIMEOUT, not the link's fall under the COMRESET that follows it (which raw printed as
    the command's record there: `link_lost`, no stamps)."""
    for target in ("model", "rtl"):
        r = fisrig("raw", "--command", "0x06", "--features", "1", "--count", "1", "--protocol", "dma_in",
                   "--profile", "fast-1gb", "--timeout-ms", "1", "--target", target)
        assert r.returncode == 1, r.stderr
        assert "command 0x06: timeout" in r.stdout, (target, r.stdout)
        setup = int(next(x for x in r.stdout.splitlines() if x.strip().startswith("setup")).split()[1])
        assert setup > 0, (target, r.stdout)


def test_timeout_ms_out_of_its_range_is_refused_naming_the_flag():
    for value in ("-1", "nan", "inf", "1e9", "0.000001"):
        r = fisrig("raw", "--command", "0x25", "--count", "1", "--profile", "tiny-1gb", f"--timeout-ms={value}")
        assert r.returncode == 2 and r.stderr.startswith("fisrig: --timeout-ms ") and \
            "a timeout is over one tick and at most 28633 ms" in r.stderr and len(r.stderr.splitlines()) == 1, \
            (value, r.stderr)
