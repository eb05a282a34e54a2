"""`fisrig identify --protocol nvme` against an independent reader: Debian's nvme-cli decodes
the same controller (tests/nvme/nvme_ioctl_preload.cc answers its admin ioctls through the
controller's admin queue), and every field line fisrig prints must be one nvme-cli prints
for it, in `nvme id-ctrl -H` and `nvme id-ns -H`. Bad input ends in one line, exit 2."""
import os
import shutil
import subprocess

import pytest

from fisrig.nvme import identify as nid
from fisrig.targets.native_tools import build_dir
from cli_run import fisrig





def nvme_cli(profile, *args):
    assert shutil.which("nvme"), "nvme-cli is not installed (scripts/bootstrap.sh installs it)"
    env = dict(os.environ, LD_PRELOAD=str(build_dir() / "tests" / "nvme" / "libfisrig_nvme_ioctl.so"),
               FISRIG_NVME_PROFILE=profile)
    out = subprocess.run(["nvme", *args], capture_output=True, text=True, env=env, check=True).stdout
    return {line.rstrip() for line in out.splitlines()}


@pytest.mark.parametrize("profile", ["tiny-1gb", "fast-1gb"])
def test_every_line_is_one_nvme_cli_prints(profile):
    r = fisrig("identify", "--protocol", "nvme", "--profile", profile)
    assert r.returncode == 0, r.stderr
    text = r.stdout.split("\n\n")
    assert text[0].startswith("NVME Identify Controller:") and text[1].startswith("NVME Identify Namespace 1:")
    ours_ctrl, ours_ns = text[0].splitlines()[1:], text[1].splitlines()[1:]
    assert len(ours_ctrl) == len(nid.CONTROLLER) and len(ours_ns) == len(nid.NAMESPACE) + 1
    theirs_ctrl = nvme_cli(profile, "id-ctrl", "/dev/null", "-H")
    theirs_ns = nvme_cli(profile, "id-ns", "/dev/null", "-n", "1", "-H")
    assert [l for l in ours_ctrl if l.rstrip() not in theirs_ctrl] == []
    assert [l for l in ours_ns if l.rstrip() not in theirs_ns] == []
    # What the profile says, where a reader looks for it.
    assert any(l.startswith("mn        : fisrig SIM-") for l in ours_ctrl)
    assert "oncs      : 0xd" in ours_ctrl and "dlfeat  : 9" in ours_ns


def test_a_page_of_another_length_is_refused():
    with pytest.raises(ValueError, match="4,096 bytes, not 512"):
        nid.fields(bytes(512), nid.CONTROLLER)


@pytest.mark.parametrize("args, where", [
    (["--target", "rtl"], "--target rtl: the rig speaks SATA"),
    (["--profile", "no-such-drive"], "--profile no-such-drive"),
    (["--profile", "/nonexistent.toml"], "--profile /nonexistent.toml: no such profile file"),
])
def test_bad_input_is_one_line(args, where):
    r = fisrig("identify", "--protocol", "nvme", *args)
    assert r.returncode == 2, r
    assert len(r.stderr.strip().splitlines()) == 1 and where in r.stderr, r.stderr
