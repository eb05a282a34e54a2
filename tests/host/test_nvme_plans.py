"""Plans over NVMe (`protocol = "nvme"`, or `fisrig run --protocol nvme`) on the model target:
the NVMe engine and controller over the profile's SSD (docs/nvme.md). A plan's workloads run
on several I/O queues each kept at its depth, its TRIM is deallocate, its flush and identify
NVMe commands, and records.parquet has one schema for both protocols (the queue and the CQE's
status beside the ATA fields). A step or setting with no NVMe form yet, and every bad value,
ends in one line naming where, exit 2."""
import json
import textwrap

import pandas as pd
import pytest

from fisrig.analysis.arrays import NVME_OP_OF, OP_READ
from fisrig_hw import contract as _c
from cli_run import fisrig

PLAN = """\
[plan]
name = "nvme-queues"
protocol = "nvme"
profile = "tiny-1gb"

[[step]]
do = "identify"

[[step]]
do = "fill"
label = "fill"
span_pct = 25
queue_depth = 8
queues = 2

[[step]]
do = "workload"
label = "randread-qd32x4"
read_pct = 100
queue_depth = 32
queues = 4
commands = 8000

[[step]]
do = "trim"
label = "trim"
span_pct = 10

[[step]]
do = "flush"
label = "flush"
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("nvme")
    plan = d / "plan.toml"
    plan.write_text(PLAN)
    r = fisrig("run", str(plan), "--out", str(d / "run"), "-q")
    assert r.returncode == 0, r.stderr
    return d / "run", r.stdout


def test_an_nvme_plan_runs_on_the_queues_it_asks_for(run):
    run_dir, stdout = run
    df = pd.read_parquet(run_dir / "records.parquet")
    cmds = df[df.kind == "command"]
    assert (cmds.protocol == 9).all() and (cmds.result == "ok").all() and (cmds.nvme_status == 0).all()
    assert (cmds.status == 0).all() and (cmds.error == 0).all()
    reads = cmds[cmds.marker == "randread-qd32x4"]
    assert len(reads) == 8000 and set(reads.queue) == {1, 2, 3, 4}
    assert (reads.command == 0x02).all() and (reads.sectors == 8).all()
    # engine_if.h's order at the link: submit, doorbell, SQE in, data, CQE (t_status_ns).
    for a, b in (("t_submit_ns", "t_h2d_ns"), ("t_h2d_ns", "t_accept_ns"), ("t_accept_ns", "t_data_first_ns"),
                 ("t_data_first_ns", "t_data_last_ns"), ("t_data_last_ns", "t_status_ns")):
        assert (reads[a] < reads[b]).all(), (a, b)
    assert (reads.t_setup_ns > reads.t_status_ns).all()  # the MSI-X message, after the CQE
    identify = cmds[cmds.marker == "identify"]
    assert list(identify.queue) == [0] and list(identify.command) == [0x06]
    trims = cmds[cmds.marker == "trim"]
    assert (trims.command == 0x09).all() and trims.lbas.sum() == int(0.10 * tiny_blocks(run_dir)) // 8 * 8
    assert list(cmds[cmds.marker == "flush"].command) == [0x00]
    # The headline holds the depth the phase asked for: 4 queues of 32.
    line = next(l for l in stdout.splitlines() if l.strip().startswith("randread-qd32x4"))
    assert "of 128" in line and "max 128" in line


def tiny_blocks(run_dir):
    return json.loads((run_dir / "run.json").read_text())["identify"]["lba48_sectors"]


def test_its_summary_counts_nvme_reads_as_reads(run):
    run_dir, _ = run
    summary = json.loads((run_dir / "summary.json").read_text())
    job = next(j for j in summary["jobs"] if j["jobname"] == "randread-qd32x4")
    assert job["read"]["total_ios"] == 8000 and job["write"]["total_ios"] == 0
    assert (run_dir / "report.html").exists() and "over NVMe" in (run_dir / "report.html").read_text()
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["protocol"] == "nvme"
    # The drive as its NVMe controller's Identify pages say it (nvme.identify.run_facts).
    ident = meta["identify"]
    assert ident["model"] == "fisrig SIM-T1 tiny" and ident["lba48_sectors"] == ident["namespace"]["nsze"]
    assert ident["mdts_bytes"] == 4096 << ident["controller"]["mdts"] and ident["trim"]
    assert ident["controller"]["oncs"] & 0x4 and "words" not in ident
    html = (run_dir / "report.html").read_text()
    assert "MDTS" in html and "volatile write cache" in html
    assert NVME_OP_OF[0x02] == OP_READ


def test_the_cli_sets_the_protocol_of_a_sata_plan(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.replace('protocol = "nvme"\n', ""))
    r = fisrig("run", str(plan), "--out", str(tmp_path / "sata"), "-q")
    assert r.returncode == 2 and "queues are NVMe's" in r.stderr  # the SATA plan has queues
    r = fisrig("run", str(plan), "--protocol", "nvme", "--out", str(tmp_path / "nvme"), "-q")
    assert r.returncode == 0, r.stderr
    df = pd.read_parquet(tmp_path / "nvme" / "records.parquet")
    assert set(df[df.kind == "command"].protocol) == {9}


@pytest.mark.parametrize("edit, where, says", [
    (('protocol = "nvme"', 'protocol = "scsi"'), ":3:", "protocol = 'scsi' is not valid (closest: 'sata'"),
    (("queues = 4", "queues = 17"), ":21:", "queues = 17: the NVMe engine has 1..16"),
    (("queues = 4", "queues = 9"), ":21:", "are 288 commands in flight; the VM keeps at most 256"),
    (("queue_depth = 32", "queue_depth = 256"), ":20:", "queue_depth 256: an NVMe queue holds 1..255"),
    (("queues = 4", "ncq = false"), ":21:", "ncq = false over NVMe is one command at a time: queue_depth 1, not 32"),
    (('do = "flush"', 'do = "verify"'), ":30:", "do = 'verify' is not a step kind"),
    (('do = "flush"', 'do = "rails"\npins = ["12v"]'), ":30:", "a rails step has no NVMe form yet"),
    (("span_pct = 25", "span_pct = 25\ntransfer_kib = 256"), ":13:",
     "transfer_kib = 256: an NVMe command moves at most 128 KiB on this drive (its MDTS, Identify Controller)"),
    (('do = "flush"', 'do = "power_cut_at"\nevent = "dma_setup"'), ":31:", "event = 'dma_setup' is not valid"),
])
def test_bad_nvme_plans_end_in_one_line(tmp_path, edit, where, says):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.replace(*edit))
    r = fisrig("run", str(plan), "--out", str(tmp_path / "run"), "-q")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert says in r.stderr and "Traceback" not in r.stderr
    if where:
        assert f"plan.toml{where}" in r.stderr
    assert not (tmp_path / "run" / "records.parquet").exists()


def test_an_nvme_plan_runs_on_the_model_and_rtl_targets_only(tmp_path):
    """The rtl target runs NVMe plans on the NVMe rig's gateware (tests/rtl/test_nvme_targets_agree.py);
    a board's NVMe rig is to come, and the SATA rig's flags say they are the SATA rig's."""
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    r = fisrig("run", str(plan), "--target", "board", "--url", "localhost:1234", "--out", str(tmp_path / "run"), "-q")
    assert r.returncode == 2
    assert r.stderr.strip().endswith("--target board: an NVMe plan (protocol = \"nvme\") runs on --target model or "
                                     "rtl; a board's NVMe rig is to come (docs/nvme-rig.md)")
    for flag in (["--link-gen", "2"], ["--firmware", "baremetal"]):
        r = fisrig("run", str(plan), "--target", "rtl", *flag, "--out", str(tmp_path / "run"), "-q")
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert f"{flag[0]}: {flag[0]} is the SATA rig's" in r.stderr, r.stderr
    r = fisrig("run", str(plan), "--protocol", "fibre", "--out", str(tmp_path / "run"), "-q")
    assert r.returncode == 2 and "--protocol" in r.stderr


def test_raw_nvme_prints_the_cqe_decoded_and_keeps_the_data(tmp_path):
    out = tmp_path / "id.bin"
    r = fisrig("raw", "--protocol", "nvme", "--command", "0x06", "--queue", "0", "--cdw10", "1",
               "--data-bytes", "4096", "--data-in", str(out), "--profile", "tiny-1gb")
    assert r.returncode == 0, r.stderr
    assert "NVMe command 0x06 on the admin queue (command id 0): ok" in r.stdout
    assert "status 0x000 success (generic)" in r.stdout
    assert "data moved: 4096 bytes" in r.stdout and "doorbell +" in r.stdout and "MSI-X +" in r.stdout
    page = out.read_bytes()
    assert len(page) == 4096 and page[24:64].decode().strip() == "fisrig SIM-T1 tiny"
    # Past the namespace's end: LBA Out of Range, DNR, nothing moved, exit 1.
    r = fisrig("raw", "--protocol", "nvme", "--command", "0x02", "--nsid", "1", "--cdw10", "99999999",
               "--cdw12", "7", "--data-bytes", "4096", "--profile", "tiny-1gb")
    assert r.returncode == 1, r.stderr
    assert "error (its status)" in r.stdout and "status 0x080 lba out of range (generic), DNR" in r.stdout
    # The CQE's dword 0 (records.parquet's nvme_dw0): Get Features, Number of Queues, as the
    # controller granted them to the engine (16 pairs, counted from 0).
    r = fisrig("raw", "--protocol", "nvme", "--command", "0x0a", "--queue", "0", "--cdw10", "7", "--profile", "tiny-1gb")
    assert r.returncode == 0 and "status 0x000 success (generic), dword 0 0x000f000f" in r.stdout, r.stdout


@pytest.mark.parametrize("args, says", [
    (["--protocol", "nvme", "--command", "0x02", "--lba", "5"], "--lba: is a SATA command's"),
    (["--command", "0x25", "--cdw10", "5"], "--cdw10: is an NVMe command's (--protocol nvme)"),
    (["--protocol", "nvme", "--command", "0x02", "--queue", "40"], "--queue 40: 0 (the admin queue) or an I/O queue 1..16"),
    (["--protocol", "nvme", "--command", "0x02", "--data-bytes", "99999999"], "--data-bytes 99999999: 0..2097152"),
    (["--protocol", "nvme", "--command", "0x01", "--data-in", "x.bin"], "opcode 0x01 moves no data from the controller"),
])
def test_raw_nvme_refuses_bad_flags_in_one_line(args, says):
    r = fisrig("raw", *args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and says in r.stderr, r.stderr


def test_a_raw_step_sets_every_sqe_dword(tmp_path):
    plan = tmp_path / "plan.toml"
    out_of_range = _c.FISRIG_NVME_SCT_GENERIC << 8 | _c.FISRIG_NVME_SC_LBA_OUT_OF_RANGE  # as nvme-cli prints it
    plan.write_text(textwrap.dedent(f"""\
        [plan]
        name = "nvme-raw"
        protocol = "nvme"
        profile = "tiny-1gb"

        [[step]]
        do = "raw"
        command = 0x09
        nsid = 1
        cdw10 = 0
        cdw11 = 4
        data_out = "ranges.bin"

        [[step]]
        do = "raw"
        command = 0x02
        nsid = 1
        cdw10 = 2147483647
        data_bytes = 512
        expect = "error"
        expect_status = {out_of_range}
        """))
    (tmp_path / "ranges.bin").write_bytes(bytes(4) + (64).to_bytes(4, "little") + (128).to_bytes(8, "little"))
    r = fisrig("run", str(plan), "--out", str(tmp_path / "run"), "-q")
    assert r.returncode == 0, r.stderr
    df = pd.read_parquet(tmp_path / "run" / "records.parquet")
    cmds = df[df.kind == "command"]
    assert list(cmds.command) == [0x09, 0x02] and [s >> 1 & 0x7FF for s in cmds.nvme_status] == [0, out_of_range]
    assert list(cmds.lbas) == [64, 1] and list(cmds.lba) == [128, 2147483647]
    bad = plan.read_text().replace("nsid = 1\ncdw10 = 0", "nsid = 1\nlba = 5")
    plan.write_text(bad)
    r = fisrig("run", str(plan), "--out", str(tmp_path / "run2"), "-q")
    assert r.returncode == 2 and "plan.toml:10:" in r.stderr and "lba is a SATA raw step's" in r.stderr


def test_report_compare_draws_a_sata_run_and_an_nvme_run_on_one_chart(tmp_path):
    small = PLAN.replace("commands = 8000", "commands = 2000")
    (tmp_path / "nvme.toml").write_text(small)
    (tmp_path / "sata.toml").write_text(small.replace('protocol = "nvme"\n', "").replace("queues = 2\n", "")
                                        .replace("queues = 4\n", "ncq = true\n"))
    for name in ("sata", "nvme"):
        r = fisrig("run", str(tmp_path / f"{name}.toml"), "--out", str(tmp_path / name), "-q")
        assert r.returncode == 0, r.stderr
    r = fisrig("report", "--compare", str(tmp_path / "sata"), str(tmp_path / "nvme"), "--out", str(tmp_path / "cmp"))
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "cmp" / "compare.html").read_text()
    assert "randread-qd32x4" in html and (tmp_path / "cmp" / "compare_latency_percentiles.png").exists()
    # Each run's caption says what its commands went over.
    assert "target model over NVMe" in html and "target model, plan" in html
