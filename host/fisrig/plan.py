"""Test plans: TOML files (or the same structure from Python), checked before anything runs.

A plan is a [plan] table and a list of [[step]] tables, each with `do = "<kind>"`. Every
refusal names the file, the line and what is wrong, e.g.
    torture.toml:14: step 3 (workload): queue_depth 64 is over 32
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class PlanError(ValueError):
    """A plan that cannot run: where and why."""

    def __init__(self, source: str, line: int | None, message: str):
        self.source, self.line, self.message = source, line, message
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {message}")


# Every key each step kind takes, with its type; `label` and `do` are common to all.
_NUM = (int, float)
STEP_KEYS: dict[str, dict[str, Any]] = {
    "secure_erase": {},
    "sanitize": {},
    "flush": {},
    "identify": {},
    "drain": {},
    "sweep": {"direction": str, "zones": int, "zone_mib": _NUM, "transfer_kib": _NUM,
              "compress_pct": int, "span_pct": _NUM},
    "fill": {"transfer_kib": _NUM, "queue_depth": int, "ncq": bool, "compress_pct": int,
             "span_pct": _NUM, "data": str},
    "workload": {"pattern": str, "read_pct": int, "trim_pct": int, "flush_pct": int,
                 "transfer_kib": _NUM, "sizes_kib": list, "queue_depth": int, "ncq": bool,
                 "fua": bool, "data": str, "compress_pct": int, "zipf_theta": _NUM,
                 "span_pct": _NUM, "lba_start": int, "lba_count": int, "commands": int,
                 "gib": _NUM, "minutes": _NUM, "seconds": _NUM, "seed": int},
    "idle": {"minutes": _NUM, "seconds": _NUM},
    "trim": {"span_pct": _NUM, "lba_start": int, "lba_count": int, "queued": bool},
    "raw": {"command": int, "features": int, "lba": int, "count": int, "device": int,
            "aux": int, "icc": int, "protocol": str, "expect": str, "expect_status": int,
            "expect_error": int, "timeout_ms": _NUM},
    "power_off": {},
    "power_on": {},
    "power_cut_at": {"event": str, "count": int, "delay_us": _NUM},
    "comreset": {},
    "replay": {"trace": str, "queue_depth": int, "ncq": bool, "data": str, "compress_pct": int},
}
PLAN_KEYS = {"name": str, "description": str, "profile": str, "seed": int}


@dataclass
class Step:
    do: str
    label: str | None
    args: dict[str, Any]
    line: int | None = None
    index: int = 0


@dataclass
class Plan:
    name: str
    steps: list[Step]
    description: str = ""
    profile: str = "consumer-256gb"
    seed: int = 1
    source: str = "<plan>"
    lines: dict[tuple, int] = field(default_factory=dict)

    def line_of(self, step: Step, key: str | None = None) -> int | None:
        return self.lines.get(("step", step.index, key), step.line)

    def error(self, step: Step, key: str | None, message: str) -> PlanError:
        return PlanError(self.source, self.line_of(step, key), f"step {step.index + 1} ({step.do}): {message}")


_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.]+)\s*\]\]?")
_KEY = re.compile(r"^\s*([A-Za-z0-9_]+)\s*=")


def _locate(text: str) -> dict[tuple, int]:
    """Line of every key: ("plan", 0, key) and ("step", i, key); ("step", i, None) is its header."""
    lines: dict[tuple, int] = {}
    section, index = None, -1
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0]
        if m := _HEADER.match(line):
            section = m.group(2)
            if section == "step" and m.group(1) == "[[":
                index += 1
                lines[("step", index, None)] = n
            continue
        if (m := _KEY.match(line)) and section in ("plan", "step"):
            lines[(section, max(index, 0) if section == "step" else 0, m.group(1))] = n
    return lines


def _type_ok(value: Any, kind: Any) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    return isinstance(value, kind)


def from_dict(data: dict, source: str = "<plan>", lines: dict[tuple, int] | None = None) -> Plan:
    """Builds a plan from the TOML structure (or the same dict from Python) and checks its keys."""
    lines = lines or {}
    head = data.get("plan", {})
    for key in data:
        if key not in ("plan", "step"):
            raise PlanError(source, None, f"unknown table [{key}]")
    for key, value in head.items():
        if key not in PLAN_KEYS:
            raise PlanError(source, lines.get(("plan", 0, key)), f"[plan]: unknown key '{key}'")
        if not _type_ok(value, PLAN_KEYS[key]):
            raise PlanError(source, lines.get(("plan", 0, key)), f"[plan]: '{key}' has the wrong type")
    plan = Plan(name=head.get("name", Path(source).stem), steps=[], source=source, lines=lines,
                description=head.get("description", ""), profile=head.get("profile", "consumer-256gb"),
                seed=head.get("seed", 1))
    if not data.get("step"):
        raise PlanError(source, None, "the plan has no [[step]]")
    for i, raw in enumerate(data["step"]):
        raw = dict(raw)
        do = raw.pop("do", None)
        label = raw.pop("label", None)
        step = Step(do=do or "?", label=label, args=raw, line=lines.get(("step", i, None)), index=i)
        if do not in STEP_KEYS:
            known = ", ".join(sorted(STEP_KEYS))
            raise plan.error(step, "do", f"do = {do!r} is not one of: {known}")
        for key, value in raw.items():
            if key not in STEP_KEYS[do]:
                raise plan.error(step, key, f"unknown key '{key}'")
            if not _type_ok(value, STEP_KEYS[do][key]):
                raise plan.error(step, key, f"'{key}' has the wrong type ({type(value).__name__})")
        plan.steps.append(step)
    return plan


def load(path: str | Path) -> Plan:
    path = Path(path)
    text = path.read_text()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise PlanError(str(path), int(m.group(1)) if m else None, f"not valid TOML: {e}") from None
    return from_dict(data, str(path), _locate(text))


BUILTIN_DIR = Path(__file__).parent / "plans"


def builtin_plans() -> dict[str, Path]:
    return {p.stem: p for p in sorted(BUILTIN_DIR.glob("*.toml"))}


def find(name_or_path: str) -> Path:
    """A built-in plan by name, or a path."""
    plans = builtin_plans()
    if name_or_path in plans:
        return plans[name_or_path]
    path = Path(name_or_path)
    if not path.exists():
        raise PlanError(name_or_path, None, f"no such plan (built-in: {', '.join(plans)})")
    return path
