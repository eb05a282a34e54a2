"""A kept drive for `fisrig raw --drive DIR`: one simulated drive across calls, model target.

The simulated drive keeps no state on disk, but it is deterministic for its profile, its
faults (the `seed` knob among them) and the commands it is sent. So DIR holds the drive's
identity, fixed at the first call, and the log of the commands sent to it so far (with a
copy of each --data-out payload), and each call replays that log before the new command:
the replayed commands' records are dropped, the new command's reported. Its media, FTL
and SMART counters are then what they would be had the drive been kept powered between
the calls, but for the time between them: none passes (the drive gets no idle time, no
background GC, no cache flush on its idle timer between calls), and a command that left
the link down is followed by a wait for the link, as the next call finds it up.

DIR is taken with a run directory's lock (run_dir.take) for the whole call, so two raw
calls on one kept drive never interleave; drive.json is put in place whole.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from fisrig.targets import drive_catalog
from fisrig.records import run_dir
from fisrig import program_format as pf
from fisrig.errors import InputError

STATE = "drive.json"
PROFILE_COPY = "profile.toml"
FORMAT = 1
DEFAULT_PROFILE = "consumer-256gb"
# The phase of a kept drive's replayed commands (their records are dropped): the log's
# steps, each after a wait for the link (FISRIG_LINK_WAIT_UP: at once when the link is up).
KEPT_LABEL = "kept drive"
WAIT_FOR_LINK = {"do": "raw", "label": KEPT_LABEL, "protocol": "link", "command": pf.LINK_WAIT_UP, "expect": "any"}


@dataclass
class KeptDrive:
    path: Path
    profile: str          # as the drive is run: a name, or DIR/profile.toml
    profile_shown: str    # as the first call gave it
    faults: list[str]
    commands: list[dict] = field(default_factory=list)  # the raw steps sent so far, in order
    data_in_bytes: list[int] = field(default_factory=list)  # what each brought back (the capture's)
    claim: run_dir.Claim | None = None
    new: bool = False

    def __post_init__(self):
        self.before = len(self.commands)  # the commands it had when this call took it

    def steps(self) -> list[dict]:
        """The log as plan steps: each command after a wait for the link, its data_out the copy in DIR."""
        out = []
        for c in self.commands:
            s = {**c, "label": KEPT_LABEL}
            if "data_out" in s:
                s["data_out"] = str((self.path / s["data_out"]).resolve())
            out += [dict(WAIT_FOR_LINK), s]
        return out + [dict(WAIT_FOR_LINK)]

    def data_in_offset(self) -> int:
        return sum(self.data_in_bytes)

    def keep_data_out(self, source: Path) -> str:
        """--data-out's file copied into DIR for the replays; its name there."""
        name = f"data-out-{len(self.commands) + 1:05d}.bin"
        shutil.copyfile(source, self.path / name)
        return name

    def record(self, step: dict, data_in_bytes: int) -> None:
        """The command sent, logged (drive.json put in place whole)."""
        self.commands.append(step)
        self.data_in_bytes.append(data_in_bytes)
        _write(self.path, {"format": FORMAT, "profile": self.profile_shown,
                           "profile_sha256": _sha(self.path / PROFILE_COPY) if self.profile != self.profile_shown else None,
                           "faults": self.faults, "commands": self.commands, "data_in_bytes": self.data_in_bytes})

    def abandon(self, data_out: str | None) -> None:
        """A call that sent nothing (refused or failed): what it put in DIR goes, so DIR stays
        what it was (a new drive's directory goes with the claim, empty)."""
        if data_out:
            (self.path / data_out).unlink(missing_ok=True)
        if self.new:
            (self.path / PROFILE_COPY).unlink(missing_ok=True)

    def release(self) -> None:
        if self.claim is not None:
            self.claim.release()
            self.claim = None


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _write(path: Path, state: dict) -> None:
    from fisrig.records.store import write_json
    write_json(path / STATE, state)


def _faults_text(faults: list[str]) -> str:
    return ", ".join(faults) if faults else "none"


def open_drive(path: Path, profile: str | None, faults: list[str]) -> KeptDrive:
    """DIR taken for this call, the kept drive's identity read (or, for a new one, fixed
    from these flags); InputError in one line naming DIR for a directory that is not a
    kept drive, or flags that name another drive than the one kept there."""
    where = f"--drive {path}"
    path = Path(path)
    claim = run_dir.take(path, where, what="raw")
    try:
        kd = _read(path, where, profile, faults)
        kd.claim = claim
        return kd
    except BaseException:
        claim.release()
        raise


def _read(path: Path, where: str, profile: str | None, faults: list[str]) -> KeptDrive:
    state_file = path / STATE
    others = sorted(p.name for p in path.iterdir() if p.name != run_dir.LOCK)
    if not state_file.exists():
        if others:
            raise InputError(where, f"holds {len(others)} files and no {STATE} ({', '.join(others[:4])}"
                                    f"{', ...' if len(others) > 4 else ''}): not a kept drive; name a new or "
                                    "empty directory")
        shown = profile or DEFAULT_PROFILE
        run_as = shown
        if drive_catalog.is_path(shown):
            drive_catalog.check_profile(shown, f"--profile {shown}")
            shutil.copyfile(shown, path / PROFILE_COPY)  # the drive's profile as it was made
            shown = str(Path(shown).resolve())
            run_as = str((path / PROFILE_COPY).resolve())
        return KeptDrive(path, run_as, shown, list(faults), new=True)
    try:
        state = json.loads(state_file.read_text())
        if state.get("format") != FORMAT:
            raise ValueError(f"format {state.get('format')!r}, not {FORMAT}")
        shown, kept_faults = state["profile"], list(state["faults"])
        commands, data_in = list(state["commands"]), list(state["data_in_bytes"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"{where}", f"{STATE} cannot be read as a kept drive's ({e})") from None
    run_as = str((path / PROFILE_COPY).resolve()) if state.get("profile_sha256") else shown
    differs = []
    if profile is not None:
        if drive_catalog.is_path(profile) and state.get("profile_sha256"):
            if not Path(profile).is_file() or _sha(profile) != state["profile_sha256"]:
                same = Path(profile).resolve() == Path(shown).resolve()
                differs.append(f"--profile {profile} has changed since the drive kept there was made from it (DIR "
                               f"keeps that copy, {PROFILE_COPY})" if same else
                               f"--profile {profile} is not the profile file the drive kept there was made with "
                               f"({shown})")
        elif profile != shown:
            differs.append(f"--profile {profile}, where the drive kept there is {shown}")
    if faults and sorted(faults) != sorted(kept_faults):
        differs.append(f"--fault {', --fault '.join(faults)}, where the drive kept there has faults "
                       f"{_faults_text(kept_faults)}")
    if differs:
        raise InputError(where, "; ".join(differs) + ": a kept drive keeps the profile and faults of its first "
                                "call (leave them out, or name another --drive)")
    return KeptDrive(path, run_as, shown, kept_faults, commands, data_in)


def describe(kd: KeptDrive | None, profile: str, faults: list[str], target: str = "model") -> str:
    """The line `fisrig raw` prints about the drive it used."""
    if target == "board":
        return "drive: the board's own (its state is what it was sent before, on any host)"
    what = f"profile {profile}, faults {_faults_text(faults)}"
    if kd is None:
        keep = " (--drive DIR keeps one between calls)" if target == "model" else ""
        return f"drive: fresh ({what}): a new drive for this one command{keep}"
    what = f"profile {kd.profile_shown}, faults {_faults_text(kd.faults)}"
    if kd.new:
        return f"drive: kept in {kd.path}, new ({what}): this is its first command"
    n = kd.before
    return (f"drive: kept in {kd.path} ({what}): {n} command{'s' if n != 1 else ''} before this one, replayed; "
            "no time passes between calls (the drive's idle time is not simulated)")
