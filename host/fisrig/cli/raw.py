"""`fisrig identify` and `fisrig raw`: one command to the drive, its answer printed (cli/ parses)."""
from __future__ import annotations

import tempfile
from pathlib import Path

from fisrig.nvme import identify as nvme_identify
from fisrig.sata import ata
from fisrig.targets import drive_catalog, kept_drive
from fisrig.plan import limits
from fisrig import program_format as pf
from fisrig import plan as plan_mod
from fisrig.plan.data_out import problem as data_out_problem
from fisrig.errors import InputError
from fisrig.run import execute, prepare
from fisrig.targets import identify_fields, make_target

PROTOCOLS = list(pf.SATA_PROTO)
DATA_IN = ("pio_in", "dma_in", "fpdma_in")
RAW_LABEL = "raw"  # the new command's phase; a kept drive's replayed commands are kept_drive.KEPT_LABEL's


def cmd_identify(a) -> int:
    drive_catalog.check_profile(a.profile, f"--profile {a.profile}")
    if a.protocol == "nvme":
        return _identify_nvme(a)
    try:
        words = make_target(a.target, a.profile, link_gen=a.link_gen, url=a.url, firmware=a.firmware).identify()
    except drive_catalog.DriveRefused as e:
        raise InputError(f"--profile {a.profile}", e.message) from None
    f = identify_fields(words)
    print(f"model:     {f['model']}\nserial:    {f['serial']}\nfirmware:  {f['firmware']}")
    print(f"capacity:  {f['lba48_sectors']} sectors ({f['lba48_sectors'] * 512 / 1e9:.1f} GB)")
    print(f"NCQ depth: {f['ncq_depth']}\nTRIM:      {'yes' if f['trim'] else 'no'}")
    return 0


def _identify_nvme(a) -> int:
    """Identify Controller and Namespace 1 of the simulated NVMe controller over the profile's
    SSD, each field's line as `nvme id-ctrl -H` and `nvme id-ns -H` print it."""
    if a.target != "model":
        raise InputError(f"--target {a.target}", "the rig speaks SATA; NVMe is the simulated controller's alone so "
                                                 "far: --target model (docs/nvme.md)")
    try:
        pages = drive_catalog.nvme_identify_pages(a.profile)
    except drive_catalog.DriveRefused as e:
        raise InputError(f"--profile {a.profile}", e.message) from None
    print("NVME Identify Controller:")
    print("\n".join(nvme_identify.controller_lines(pages["controller"])))
    print("\nNVME Identify Namespace 1:")
    print("\n".join(nvme_identify.namespace_lines(pages["namespace"])))
    return 0


def _check_raw_flags(a) -> None:
    """Each H2D field given as a flag fits its field in the descriptor."""
    for key in ("command", "lba", "count", "features", "device", "aux"):
        if why := limits.too_wide(key, getattr(a, key)):
            raise InputError(f"--{key} {getattr(a, key)}", why)
    if why := plan_mod.policy_problem("timeout_ms", a.timeout_ms):
        raise InputError(f"--timeout-ms {a.timeout_ms:g}", why.split(": ", 1)[1])
    if a.protocol is not None and a.protocol not in PROTOCOLS:
        from fisrig.errors import closest
        raise InputError(f"--protocol {a.protocol}", f"no such protocol {closest(a.protocol, PROTOCOLS)}")


def _nvme_flags_only(a) -> None:
    """A SATA command takes none of the NVMe flags (nor they an H2D field's)."""
    nvme = a.protocol == "nvme"
    sata_given = [f"--{k}" for k in ("lba", "count", "features", "aux") if getattr(a, k)] + \
                 (["--device"] if a.device != 0x40 else []) + (["--drive"] if a.drive else [])
    nvme_given = [f"--{k.replace('_', '-')}" for k in ("nsid", "data_bytes", *(f"cdw{i}" for i in (2, 3, 10, 11, 12, 13, 14, 15)))
                  if getattr(a, k)] + (["--queue"] if a.queue != 1 else [])
    if nvme and sata_given:
        raise InputError(sata_given[0], "is a SATA command's; an NVMe one takes --queue, --nsid, --cdw10.. --cdw15, "
                                        "--data-bytes")
    if not nvme and nvme_given:
        raise InputError(nvme_given[0], "is an NVMe command's (--protocol nvme)")


def _raw_nvme(a) -> int:
    """One NVMe command on the model target's NVMe engine: its CQE decoded, its stamps."""
    if not 0 <= a.queue <= pf.NVME_QUEUES:
        raise InputError(f"--queue {a.queue}", f"0 (the admin queue) or an I/O queue 1..{pf.NVME_QUEUES}")
    if not 0 <= a.data_bytes <= pf.NVME_DATA_MAX:
        raise InputError(f"--data-bytes {a.data_bytes}", f"0..{pf.NVME_DATA_MAX} (the engine's buffer)")
    for k in ("nsid", *(f"cdw{i}" for i in (2, 3, 10, 11, 12, 13, 14, 15))):
        if not 0 <= getattr(a, k) <= 0xFFFFFFFF:
            raise InputError(f"--{k} {getattr(a, k)}", "a dword is 0..0xffffffff")
    if not 0 <= a.command <= 0xFF:
        raise InputError(f"--command {a.command}", "an NVMe opcode is 0..255")
    step = {"do": "raw", "label": RAW_LABEL, "command": a.command, "queue": a.queue, "nsid": a.nsid,
            "data_bytes": a.data_bytes, "expect": "any", **{f"cdw{i}": getattr(a, f"cdw{i}") for i in (2, 3, 10, 11, 12, 13, 14, 15)}}
    if a.timeout_ms:
        step["timeout_ms"] = a.timeout_ms
    if a.data_out is not None:
        step["data_out"] = str(Path(a.data_out).resolve())
    if a.data_in is not None:
        if not a.command & 2:
            raise InputError(f"--data-in {a.data_in}", f"opcode {a.command:#04x} moves no data from the controller "
                                                       "(its bits 1:0)")
        if Path(a.data_in).exists():
            raise InputError(f"--data-in {a.data_in}", "already exists; name a new file")
    plan = plan_mod.from_dict({"plan": {"name": "raw", "protocol": "nvme"}, "step": [step]}, "<raw>")
    profile = a.profile or kept_drive.DEFAULT_PROFILE
    p = prepare(plan, a.target, profile, a.fault, link_gen=a.link_gen, url=a.url, firmware=a.firmware)
    with tempfile.TemporaryDirectory() as tmp:
        if a.command & 2:
            p.data_in = Path(tmp) / "data_in.bin"
        r = execute(p, Path(tmp) / "run", quiet=True)
        import pyarrow.parquet as pq
        row = _own_record(pq.read_table(r.run_dir / "records.parquet").to_pylist())
        data = p.data_in.read_bytes() if p.data_in is not None and p.data_in.exists() else None
    from fisrig.nvme import completion
    print(kept_drive.describe(None, profile, a.fault, a.target))
    for line in completion.lines(row, data):
        print(line)
    if data is not None and a.data_in is not None:
        Path(a.data_in).write_bytes(data)
        print(f"data in: {len(data)} bytes written to {a.data_in}")
    return 0 if row["result"] == "ok" else 1


def cmd_raw(a) -> int:
    _nvme_flags_only(a)
    if a.protocol == "nvme":
        if why := plan_mod.policy_problem("timeout_ms", a.timeout_ms):
            raise InputError(f"--timeout-ms {a.timeout_ms:g}", why.split(": ", 1)[1])
        return _raw_nvme(a)
    _check_raw_flags(a)
    if a.drive is not None and a.target != "model":
        raise InputError(f"--drive {a.drive}", f"a kept drive is the model target's (the commands it had are "
                                               f"replayed); --target {a.target} starts a fresh drive each time")
    step = {"do": "raw", "label": RAW_LABEL, "command": a.command, "lba": a.lba, "count": a.count,
            "features": a.features, "device": a.device, "aux": a.aux, "expect": "any"}
    if a.protocol:
        step["protocol"] = a.protocol
    if a.timeout_ms:
        step["timeout_ms"] = a.timeout_ms
    # The protocol the rig runs (--protocol, else the opcode's), and the one the drive answers
    # with (the opcode's, whatever --protocol says): data comes back if either brings it.
    answer = ata.protocol_of(a.command, a.features)
    protocol = a.protocol or answer
    data_in = protocol in DATA_IN or answer in DATA_IN
    data_out = _raw_data_out(a, protocol)
    if a.data_in is not None:
        if not data_in:
            raise InputError(f"--data-in {a.data_in}", f"command {a.command:#04x} ({protocol or 'protocol unknown'}) "
                                                       "returns no data")
        if Path(a.data_in).exists():
            raise InputError(f"--data-in {a.data_in}", "already exists; name a new file")
    kept = kept_drive.open_drive(Path(a.drive), a.profile, a.fault) if a.drive is not None else None
    kept_data_out = None
    try:
        profile = kept.profile if kept else a.profile or kept_drive.DEFAULT_PROFILE
        faults = kept.faults if kept else a.fault
        if data_out is not None:
            if kept:
                kept_data_out = kept.keep_data_out(Path(a.data_out))
                step["data_out"] = str((kept.path / kept_data_out).resolve())
            else:
                step["data_out"] = str(Path(a.data_out).resolve())
        steps = (kept.steps() if kept else []) + [step]
        plan = plan_mod.from_dict({"plan": {"name": "raw"}, "step": steps}, "<raw>")
        p = prepare(plan, a.target, profile, faults, link_gen=a.link_gen, url=a.url, firmware=a.firmware)
        captures = getattr(p.target, "captures_data_in", False)
        keeps = (data_in or kept is not None) and captures
        if a.data_in is not None and not keeps:
            raise InputError(f"--data-in {a.data_in}", f"target {a.target} does not bring a command's data back "
                                                       "yet; --target model does")
        with tempfile.TemporaryDirectory() as tmp:
            if keeps:
                p.data_in = Path(tmp) / "data_in.bin"
            r = execute(p, Path(tmp) / "run", quiet=True)
            import pyarrow.parquet as pq
            rows = pq.read_table(r.run_dir / "records.parquet").to_pylist()
            captured = p.data_in.read_bytes() if keeps else None
        # The replayed commands' data came first (targets/kept_drive.py): this command's is the rest.
        data = captured[kept.data_in_offset():] if captured is not None and kept else captured
        row = _own_record(rows)
        if kept:
            logged = {k: v for k, v in step.items() if k != "label"}
            if kept_data_out:
                logged["data_out"] = kept_data_out
            kept.record(logged, len(data or b""))
            kept_data_out = None  # logged: it stays
    except BaseException:
        if kept:
            kept.abandon(kept_data_out)
        raise
    finally:
        if kept:
            kept.release()
    from fisrig.report import raw_output
    print(kept_drive.describe(kept, profile, faults, a.target))
    for line in raw_output.lines(a.command, a.lba, row, data if data_in else None, data_in, a.target):
        print(line)
    if data is not None and a.data_in is not None:
        Path(a.data_in).write_bytes(data)
        print(f"data in: {len(data)} bytes written to {a.data_in}")
    if data_out is not None:
        print(f"data out: {len(data_out)} bytes from {a.data_out}; the record counts {row['data_dwords'] * 4} "
              "bytes moved in Data FISes")
    return 0 if row["result"] == "ok" else 1


def _own_record(rows: list[dict]) -> dict:
    """The raw command's own record: its command record, or, for a power or link operation,
    the last record of that kind. Not the engine's link events: on the rtl target a command
    that times out is followed by the link's fall under the COMRESET that ends it (a power
    record), which raw printed as the command's ("link_lost", no stamps)."""
    own = [x for x in rows if x["marker"] == RAW_LABEL]
    commands = [x for x in own if x["kind"] == "command"]
    return commands[-1] if commands else [x for x in own if x["kind"] in ("power", "link")][-1]


def _raw_data_out(a, protocol: str | None) -> bytes | None:
    """--data-out FILE's bytes, refused (naming the flag) where the command sends no data,
    the file cannot be read, or its size and the command's sector count disagree."""
    if a.data_out is None:
        return None
    where = f"--data-out {a.data_out}"
    path = Path(a.data_out)
    if not path.is_file():
        raise InputError(where, "is a directory, not a file" if path.is_dir() else "no such file")
    if protocol is None:
        raise InputError(f"--command {a.command:#04x}", f"say which protocol with --protocol "
                                                        f"({', '.join(PROTOCOLS)})")
    if why := data_out_problem(protocol, a.command, a.count, a.features, path.stat().st_size, prefix="--"):
        raise InputError(where, why)
    return path.read_bytes()
