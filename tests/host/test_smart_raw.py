"""SMART (B0h) as a raw command: the host knows each subcommand's protocol (READ DATA is
PIO in, RETURN STATUS non-data), and RETURN STATUS's answer comes back in the D2H LBA."""
import os
import subprocess
import sys
from pathlib import Path

from fisrig.sata.ata import SMART_PROTOCOL_OF

REPO = Path(__file__).resolve().parents[2]
KEY_LBA = "0xc24f00"  # LBA 23:8 = C24Fh, which every SMART command carries


def raw(*args):
    env = {"PATH": "/usr/bin:/bin"}
    if "FISRIG_BUILD" in os.environ:
        env["FISRIG_BUILD"] = os.environ["FISRIG_BUILD"]
    return subprocess.run([sys.executable, "-m", "fisrig.cli", "raw", "--command", "0xb0", *args,
                           "--profile", "tiny-1gb"], capture_output=True, text=True, cwd=REPO, env=env)


def test_smart_subcommands_have_their_protocols():
    assert SMART_PROTOCOL_OF[0xD0] == SMART_PROTOCOL_OF[0xD1] == "pio_in"
    assert {SMART_PROTOCOL_OF[f] for f in (0xD8, 0xD9, 0xDA)} == {"non_data"}


def test_smart_read_data_needs_no_protocol_flag():
    r = raw("--features", "0xd0", "--lba", KEY_LBA)
    assert r.returncode == 0, r.stderr
    assert "command 0xb0: ok  status 0x40" in r.stdout and "sectors 1" in r.stdout


def test_smart_return_status_answers_c24f_in_the_d2h_lba():
    r = raw("--features", "0xda", "--lba", KEY_LBA)
    assert r.returncode == 0, r.stderr
    assert f"D2H LBA {0xC24F00}" in r.stdout


def test_smart_without_its_key_is_aborted():
    r = raw("--features", "0xd0", "--lba", "0")
    assert r.returncode == 1
    assert "error 0x04 (ABRT)" in r.stdout
