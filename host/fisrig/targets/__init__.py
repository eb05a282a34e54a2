"""Where a program runs: the fast native model (model.py), the RTL simulation (rtl.py), or a
board (board.py), each a Target (base.py) that takes a compiled program and the sinks of its
records and writes the run's records file; each knows its drive's IDENTIFY data. `board`
reaches a board through LiteX's litex_server (fisrig.targets.rig.board_run)."""
from __future__ import annotations

from fisrig.targets.base import RunOutcome, RunSinks, Target  # noqa: F401 - as callers know them
from fisrig.targets.board import BoardTarget
from fisrig.targets.model import ModelTarget
from fisrig.targets.native_tools import TargetUnavailable
from fisrig.targets.rtl import FIRMWARES, RtlTarget  # noqa: F401 - as callers know them

TARGETS = {
    "model": ModelTarget,
    "rtl": RtlTarget,
    "board": BoardTarget,
}


def make_target(name: str, profile: str, faults: list[str] | None = None, link_gen: int | None = None,
                url: str | None = None, firmware: str | None = None):
    if name not in TARGETS:
        raise TargetUnavailable(f"unknown target '{name}': one of {', '.join(TARGETS)}")
    if url is not None and name != "board":
        raise TargetUnavailable(f"--url is the board target's (a litex_server); target '{name}' takes none")
    if firmware is not None and name != "rtl":
        raise TargetUnavailable(f"--firmware is the rtl target's (the firmware it boots); target '{name}' "
                                + ("runs whichever the board booted" if name == "board" else "runs none"))
    extra = {"url": url} if url is not None else {"firmware": firmware} if firmware is not None else {}
    return TARGETS[name](profile, faults, link_gen, **extra)


def identify_fields(words: list[int]) -> dict:
    """The IDENTIFY facts a run's metadata keeps (ATA strings are byte-swapped words)."""
    def text(first: int, n: int) -> str:
        return "".join(chr(words[i] >> 8) + chr(words[i] & 0xFF) for i in range(first, first + n)).strip()
    return {
        "model": text(27, 20), "serial": text(10, 10), "firmware": text(23, 4),
        "lba48_sectors": words[100] | words[101] << 16 | words[102] << 32 | words[103] << 48,
        "ncq_depth": (words[75] & 0x1F) + 1, "trim": bool(words[169] & 1),
        "words": [f"{w:04x}" for w in words],
    }
