"""The native tools the targets run (fisrig-model, fisrig-drive, ...): where they are, and
how a line says the way one ended. Apart from the targets, so that the drive catalog asks
fisrig-drive without importing the targets that ask it."""
from __future__ import annotations

import signal
from pathlib import Path


class TargetUnavailable(RuntimeError):
    pass


# What a signal that ends a native process says of why, where it says something a user can act on.
SIGNAL_WHY = {
    "SIGXFSZ": "a file it wrote reached the file size limit (`ulimit -f`)",
    "SIGKILL": "killed from outside, or by the kernel when memory ran out",
    "SIGSEGV": "it crashed (a bug in it)",
    "SIGBUS": "it crashed (a bug in it, or a file it had mapped was cut short)",
    "SIGABRT": "it aborted (a check in it failed)",
    "SIGTERM": "stopped from outside",
}


def exit_text(code: int) -> str:
    """How a process ended, as a line says it: `exit 1`, or for a negative code (subprocess's
    for a signal) the signal by name and what it means: `killed by SIGXFSZ: a file it wrote
    reached the file size limit`, never a bare -25."""
    if code >= 0:
        return f"exit {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    why = SIGNAL_WHY.get(name)
    return f"killed by {name}" + (f": {why}" if why else "")


def failed_text(tool: str, code: int, stderr: str, writing: list[Path]) -> str:
    """The line of a native tool that ended without its answer: how it ended (exit_text),
    for SIGXFSZ the file it was writing (of `writing`, the files it writes: the one at the
    size limit, else the first), and what it said on stderr, or that it said nothing."""
    said = " | ".join(l.strip() for l in (stderr or "").splitlines() if l.strip())
    if code >= 0:
        return f"{tool} failed ({exit_text(code)}): " + (said or "it said nothing on stderr")
    text = f"{tool} failed: {exit_text(code)}"
    if code == -signal.SIGXFSZ and writing:
        import resource
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        sizes = {f: f.stat().st_size if f.exists() else 0 for f in writing}
        at = next((f for f in writing if limit != resource.RLIM_INFINITY and sizes[f] >= limit), writing[0])
        text += f" (writing {at}, {sizes[at]:,} bytes" + \
            (f"; the file size limit is {limit:,} bytes, `ulimit -f`)" if limit != resource.RLIM_INFINITY else ")")
    return text + (f"; it said: {said}" if said else "")


def build_dir() -> Path:
    """The native build the targets run (fisrig_hw.native.native_build: FISRIG_BUILD's or build/)."""
    from fisrig_hw.native import native_build
    return Path(native_build())


def _tool(name: str) -> Path:
    path = build_dir() / "bin" / name
    if not path.exists():
        raise TargetUnavailable(f"{path} is not built: run `make native` first")
    return path
