"""The data a raw command sends: `fisrig raw --data-out FILE` and a plan's raw `data_out`,
one 512-byte sector (the VM's staging slot), its size and the sector count in agreement."""

import pytest

from fisrig import plan as plan_mod
from fisrig.plan.data_out import problem
from fisrig.run import execute, prepare
import cli_run

SECTOR = bytes(range(256)) * 2


def fisrig(*args):
    return cli_run.fisrig("raw", *args, "--profile", "tiny-1gb")


def test_the_rules():
    assert problem("dma_out", 0x35, 1, 0, 512) is None
    assert problem("fpdma_out", 0x61, 0, 1, 512) is None
    assert problem("pio_out", 0xF1, 0, 0, 512) is None  # SECURITY SET PASSWORD: one block, COUNT unused
    assert "sends no data" in problem("dma_in", 0x25, 1, 0, 512)
    assert "at most 512" in problem("dma_out", 0x35, 2, 0, 1024)
    assert "count 0 sends 65536 sector(s)" in problem("dma_out", 0x35, 0, 0, 512)
    assert "--features 2 sends 2 sector(s)" in problem("fpdma_out", 0x61, 1, 2, 512, prefix="--")
    assert problem("dma_out", 0x35, 1, 0, 0) == "the file is empty"


def test_a_plan_writes_the_files_bytes_and_reads_them_back(tmp_path):
    (tmp_path / "sector.bin").write_bytes(SECTOR)
    plan = plan_mod.from_dict({"plan": {"name": "t", "profile": "tiny-1gb"}, "step": [
        {"do": "raw", "command": 0x35, "lba": 100, "count": 1, "data_out": str(tmp_path / "sector.bin")},
        {"do": "raw", "command": 0x61, "lba": 200, "features": 1, "data_out": str(tmp_path / "sector.bin")},
        {"do": "raw", "command": 0x25, "lba": 100, "count": 1},
        {"do": "raw", "command": 0x25, "lba": 200, "count": 1}]}, "<plan>")
    p = prepare(plan)
    p.data_in = tmp_path / "in.bin"
    assert execute(p, tmp_path / "run", quiet=True).status == "done"
    assert (tmp_path / "in.bin").read_bytes() == SECTOR * 2  # the drive kept the bytes, not a pattern


def test_a_plans_data_out_is_relative_to_the_plan_and_checked(tmp_path):
    (tmp_path / "two.bin").write_bytes(SECTOR * 2)
    (tmp_path / "p.toml").write_text('[plan]\nname = "p"\n[[step]]\ndo = "raw"\ncommand = 0x35\ncount = 1\n'
                                     'data_out = "two.bin"\n')
    with pytest.raises(plan_mod.PlanError) as e:
        prepare(plan_mod.load(tmp_path / "p.toml"))
    assert str(e.value).startswith(f"{tmp_path / 'p.toml'}:7: step 1 (raw): data_out = 'two.bin': "
                                   "the file holds 1024 bytes; a raw command sends at most 512")


def test_raw_data_out_on_the_command_line(tmp_path):
    f = tmp_path / "sector.bin"
    f.write_bytes(SECTOR)
    r = fisrig("--command", "0x35", "--lba", "100", "--count", "1", "--data-out", str(f))
    assert r.returncode == 0, r.stderr
    assert "command 0x35: ok  status 0x40 (DRDY)" in r.stdout and "sectors 1" in r.stdout
    assert f"data out: 512 bytes from {f}; the record counts 512 bytes moved in Data FISes" in r.stdout


def test_raw_data_out_refusals_name_the_flag(tmp_path):
    one, two = tmp_path / "one.bin", tmp_path / "two.bin"
    one.write_bytes(SECTOR)
    two.write_bytes(SECTOR * 2)
    cases = [
        (["--command", "0x35", "--count", "2", "--data-out", str(two)],
         f"--data-out {two}: the file holds 1024 bytes; a raw command sends at most 512 (the VM stages"),
        (["--command", "0x35", "--data-out", str(one)],
         f"--data-out {one}: the file holds 512 bytes and --count 0 sends 65536 sector(s), 33554432 bytes; "
         "make them agree (a raw command sends one 512-byte sector: --count 1)"),
        (["--command", "0x61", "--features", "8", "--data-out", str(one)],
         f"--data-out {one}: the file holds 512 bytes and --features 8 sends 8 sector(s)"),
        (["--command", "0x25", "--count", "1", "--data-out", str(one)],
         f"--data-out {one}: command 0x25 (dma_in) sends no data"),
        (["--command", "0x35", "--count", "1", "--data-out", str(tmp_path / "none.bin")],
         f"--data-out {tmp_path / 'none.bin'}: no such file"),
        (["--command", "0x35", "--count", "1", "--data-out", str(tmp_path)],
         f"--data-out {tmp_path}: is a directory, not a file"),
    ]
    for args, message in cases:
        r = fisrig(*args)
        assert r.returncode == 2 and r.stderr.startswith(f"fisrig: {message}"), (args, r.stderr)
        assert len(r.stderr.splitlines()) == 1 and not r.stdout
