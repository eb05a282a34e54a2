"""What the simulated drive offers: its built-in profiles and its fault knobs.

One list, the drive's own: both are asked of `fisrig-drive` (`profiles`, `profile-keys`),
which reads sim/ssd/profiles/ and the knob table in sim/ssd/src/config.cc, so a profile
or knob added there is known here, in `--help` and in every check, without a second list.
The values a knob takes are checked by the drive itself (FaultKnobs::set); its message is
passed on as it is.
"""
from __future__ import annotations

import functools
import subprocess

from fisrig.errors import InputError, closest
from fisrig.targets.native_tools import TargetUnavailable, _tool, exit_text


class DriveRefused(InputError):
    """fisrig-drive refused a profile or a fault knob; its own message, one line."""


# The shipped drives that lie at a power cut (sim/ssd/profiles/plp-*.toml), each with the
# class the power-loss verdicts must name its lie by (docs/power-loss.md's table;
# tests/host/test_power_loss.py runs each, scripts/bench_power.py counts them).
LYING_PROFILES = {
    "plp-lies-flush": "lost_flushed",
    "plp-tears": "shorn",
    "plp-reorders": "unserializable",
    "plp-misdirects": "flying",
    "plp-loses-map": "lost_at_rest",
    "plp-bit-errors": "corrupt",
    "plp-dies": "no_return",
    "plp-8mib": "identity_changed",
}


def ask(*args: str) -> str:
    """fisrig-drive's stdout for `args`; DriveRefused with its message when it says no."""
    proc = subprocess.run([str(_tool("fisrig-drive")), *args], capture_output=True, text=True)
    if proc.returncode:
        lines = [l.strip() for l in proc.stderr.splitlines() if l.strip()]
        why = lines[-1] if lines else f"fisrig-drive {exit_text(proc.returncode)}, saying nothing"
        for prefix in ("fisrig-drive: bad profile: ", "fisrig-drive: "):
            if why.startswith(prefix):
                why = why[len(prefix):]
                break
        raise DriveRefused("", why)
    return proc.stdout


def nvme_identify_pages(profile: str) -> dict[str, bytes]:
    """The drive's Identify Controller and Namespace 1 over NVMe (sim/nvme), 4,096 bytes each,
    by "controller" and "namespace"."""
    out = ask("nvme-identify", "--profile", profile)
    return {name: bytes.fromhex(hexes) for name, hexes in (l.split() for l in out.splitlines() if l.strip())}


@functools.lru_cache(maxsize=None)
def profiles() -> dict[str, str]:
    """Built-in profile name -> the drive's one-line description of it."""
    out = {}
    for line in ask("profiles").splitlines():
        if line.strip():
            name, _, rest = line.strip().partition(" ")
            out[name] = " ".join(rest.split())
    return out


@functools.lru_cache(maxsize=None)
def profile_keys() -> list[str]:
    """Every key a profile file may set, SECTION.KEY (the drive's list)."""
    return ask("profile-keys").split()


def fault_knobs() -> list[str]:
    return [l[len("faults."):] for l in profile_keys() if l.startswith("faults.")]


def is_path(profile: str) -> bool:
    """As the drive's load_profile decides: a name with '/' or '.toml' in it is a file."""
    return "/" in profile or ".toml" in profile


def check_profile(profile: object, where: str) -> None:
    """A built-in profile's name or a profile file that exists; InputError at `where`."""
    if not isinstance(profile, str) or not profile:
        raise InputError(where, f"profile {profile!r}: a profile is a name or a file")
    if is_path(profile):
        from pathlib import Path
        if not Path(profile).is_file():
            raise InputError(where, f"no such profile file {profile!r}")
        return
    try:
        known = profiles()
    except (TargetUnavailable, DriveRefused):
        return  # no list to hold it to (no drive built, or one of its profiles is broken):
        # the drive itself refuses a bad name next, with its own message
    if profile not in known:
        raise InputError(where, f"no such drive profile {profile!r} {closest(profile, known)}")


def check_fault(text: object, where: str) -> None:
    """KNOB=VALUE with a knob the drive has; its value is the drive's to check."""
    knob, eq, value = str(text).partition("=")
    if not eq or not knob or not value:
        raise InputError(where, "a fault is KNOB=VALUE, e.g. busy_rate=0.01")
    try:
        knobs = fault_knobs()
    except (TargetUnavailable, DriveRefused):
        return  # the drive refuses an unknown knob itself, next
    if knob not in knobs:
        raise InputError(where, f"no such fault knob {knob!r} {closest(knob, knobs)}")


def help_text() -> str:
    """The profiles and fault knobs for --help, from the drive; a plain note when the drive
    is not built yet."""
    try:
        known, knobs = profiles(), fault_knobs()
    except (TargetUnavailable, InputError) as e:
        return f"drive profiles and fault knobs: the drive could not list them ({e})"
    width = max(map(len, known), default=0)
    lines = ["drive profiles (--profile NAME, or a profile TOML file):"]
    lines += [f"  {name:<{width}}  {what}" for name, what in known.items()]
    lines.append("fault knobs (--fault KNOB=VALUE, repeatable; the drive checks each value):")
    lines.append("  " + ", ".join(knobs))
    return "\n".join(lines)
