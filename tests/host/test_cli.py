"""The `fisrig` command as a user types it."""
from cli_run import fisrig





def test_plans_lists_the_builtins():
    r = fisrig("plans")
    assert r.returncode == 0
    assert "torture-idle-trim-recovery" in r.stdout and "smoke-tiny" in r.stdout


def test_board_asks_for_its_server():
    """The board target's runs are tests/rtl/test_board_target.py's."""
    r = fisrig("run", "smoke-tiny", "--target", "board")
    assert r.returncode == 2
    assert "--target board needs --url HOST:PORT" in r.stderr


def test_link_speed_is_refused_where_the_link_is_gen3_only():
    r = fisrig("run", "smoke-tiny", "--link-gen", "1")
    assert r.returncode == 2
    assert "runs its link at Gen3 only; --link-gen 1 needs --target rtl" in r.stderr
    r = fisrig("run", "smoke-tiny", "--target", "rtl", "--link-gen", "4")
    assert r.returncode == 2 and "invalid choice: 4" in r.stderr


def test_firmware_is_the_rtl_targets_and_zephyr_needs_its_tree(tmp_path):
    """The Zephyr firmware's runs are tests/rtl/test_zephyr_firmware.py's (with a tree)."""
    for args, says in [((), "--firmware is the rtl target's (the firmware it boots); target 'model' runs none"),
                       (("--target", "board", "--url", "127.0.0.1:1234"), "target 'board' runs whichever the board booted"),
                       (("--target", "rtl"), "--firmware zephyr needs a Zephyr 4.3 tree: set ZEPHYR_BASE")]:
        r = fisrig("run", "smoke-tiny", "--firmware", "zephyr", "--out", str(tmp_path / "run"), *args)
        assert r.returncode == 2 and says in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "run").exists(), r.stderr
    r = fisrig("run", "smoke-tiny", "--target", "rtl", "--firmware", "linux")
    assert r.returncode == 2 and "invalid choice: 'linux'" in r.stderr


def test_raw_prints_completion_and_timing():
    r = fisrig("raw", "--command", "0x25", "--lba", "0", "--count", "8", "--profile", "tiny-1gb")
    assert r.returncode == 0, r.stderr
    assert "command 0x25: ok  status 0x40" in r.stdout
    assert "h2d" in r.stdout and "status" in r.stdout


def test_raw_past_the_end_reports_idnf():
    r = fisrig("raw", "--command", "0x25", "--lba", "1953120", "--count", "8", "--profile", "tiny-1gb")
    assert r.returncode == 1
    assert "ata_error  status 0x41 (DRDY ERR)  error 0x10 (IDNF)" in r.stdout


def test_bad_plan_file_is_refused_with_its_line(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('[plan]\nname = "x"\n[[step]]\ndo = "fill"\nqueue_depth = 40\n')
    r = fisrig("run", str(p), "--profile", "tiny-1gb", "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert f"{p}:5: step 1 (fill): queue_depth 40 is over 32" in r.stderr
    assert not (tmp_path / "out").exists()  # nothing ran


def test_identify():
    r = fisrig("identify", "--profile", "tiny-1gb")
    assert r.returncode == 0
    assert "NCQ depth: 32" in r.stdout and "TRIM:      yes" in r.stdout
