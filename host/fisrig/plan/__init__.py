"""Test plans: TOML files (or the same structure from Python), checked before anything runs.

A plan is a [plan] table and a list of [[step]] tables, each with `do = "<kind>"`. Every
refusal names the file, the line and what is wrong, e.g.
    torture.toml:14: step 3 (workload): queue_depth 64 is over 32
"""
from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fisrig import program_format as pf
from fisrig.plan import capture as capture_spec
from fisrig.errors import InputError, closest


class PlanError(InputError):
    """A plan that cannot run: where (its file and line) and why."""

    def __init__(self, source: str, line: int | None, message: str):
        self.source, self.line = source, line
        super().__init__(f"{source}:{line}" if line else source, message)


# Every key each step kind takes, with its type; `label` and `do` are common to all.
_NUM = (int, float)
STEP_KEYS: dict[str, dict[str, Any]] = {
    "secure_erase": {},
    "sanitize": {},
    "flush": {},
    "identify": {},
    "smart": {"attributes": list},
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
            "expect_error": int, "timeout_ms": _NUM, "data_out": str},
    "power_off": {},
    "power_on": {},
    "power_cut_at": {"event": str, "count": int, "delay_us": _NUM},
    "rails": {"pins": list, "off_ms": list, "on_ms": list},
    "current": {"on": bool, "every_us": _NUM},
    "comreset": {},
    "power_loss": {"cycles": int, "cut_in": str, "event": str, "count": int, "delay_ticks": int,
                   "delay_ticks_to": int, "delay_ns": _NUM, "delay_ns_to": _NUM, "queue_depth": int,
                   "ncq": bool, "transfer_kib": _NUM, "sizes_kib": list, "flush_pct": int, "fua": bool,
                   "commands": int, "span_pct": _NUM, "lba_start": int, "lba_count": int, "off_ms": _NUM,
                   "ready_timeout_ms": _NUM, "seed": int, "data": str, "compress_pct": int, "run_cycles": list},
    "replay": {"trace": str, "format": str, "generator": str, "commands": int, "seed": int, "trims": str,
               "queue_depth": int, "ncq": bool, "data": str, "compress_pct": int},
    "pts_iops": {"block_sizes_kib": list, "read_pcts": list, "seconds_per_cell": _NUM, "max_rounds": int,
                 "window": int, "range_pct": int, "slope_pct": int, "track_kib": _NUM, "track_read_pct": int,
                 "queue_depth": int, "data": str, "compress_pct": int, "span_pct": _NUM},
}
# The queue depth each step kind keeps when its plan does not say (sweeps and TRIM go one
# command at a time); the report compares the depth a phase held with this.
DEFAULT_QUEUE_DEPTH = {"fill": 32, "replay": 32, "workload": 1, "sweep": 1, "trim": 1, "pts_iops": 32}
# What a generator's commands do on an error (program.h, struct fisrig_op_policy): the plan's
# for every step that generates commands, or a step's own.
POLICY_KEYS = {"on_error": str, "retries": int, "timeout_ms": _NUM, "link_timeout_ms": _NUM}
ON_ERROR = tuple(pf.ON_ERROR)  # enum fisrig_on_error: "fail", "requeue", "retry"
MAX_RETRIES = pf.MAX_RETRIES  # the attempt fits the record's detail bits
for _kind in ("sweep", "fill", "workload", "replay", "pts_iops"):
    STEP_KEYS[_kind].update(POLICY_KEYS)
PLAN_KEYS = {"name": str, "description": str, "profile": str, "seed": int, "data": str, "compress_pct": int,
             "current_us": _NUM, "protocol": str, **POLICY_KEYS}
# What the plan's commands go to the drive over: SATA (the rig's SATA engine), or NVMe (an
# NVMe engine, docs/nvme.md; the model target's for now).
PROTOCOLS = ("sata", "nvme")
# An NVMe plan's generators take their I/O queues (each kept queue_depth deep), and its raw
# steps an SQE's fields: the queue (0 admin), the namespace, dwords 2, 3 and 10..15, and the
# data-in buffer's bytes (`command` is the opcode).
for _kind in ("fill", "workload", "power_loss", "pts_iops", "replay"):
    STEP_KEYS[_kind]["queues"] = int
NVME_RAW_KEYS = {"queue": int, "nsid": int, "cdw2": int, "cdw3": int, "cdw10": int, "cdw11": int, "cdw12": int,
                 "cdw13": int, "cdw14": int, "cdw15": int, "data_bytes": int}
STEP_KEYS["raw"].update(NVME_RAW_KEYS)
# Keys every step takes beside label: the analyzer's capture, armed as the step starts
# (plan/capture.py, docs/capture.md).
COMMON_STEP_KEYS = {"capture": dict}


def phase_label(label: str | None, current: str | None, do: str) -> str:
    """The label a step's records carry: its own, else the phase it follows, else its kind."""
    return label or current or do


def asked_queue_depth(do: str, args: dict) -> int | None:
    """The commands in flight a step asks for (over NVMe, each of its queues that deep); None
    for steps that issue a command or two."""
    if do not in DEFAULT_QUEUE_DEPTH:
        return None
    return args.get("queue_depth", DEFAULT_QUEUE_DEPTH[do]) * args.get("queues", 1)


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
    data: str = "stamp"       # what writes carry, unless a step says (`data`, `compress_pct`)
    compress_pct: int = 100
    on_error: str = "fail"    # the error policy, unless a step says (`on_error`, `retries`,
    retries: int | None = None  # `timeout_ms`: each generated command's, `link_timeout_ms`: a
    timeout_ms: float = 0       # lost link's wait; 0 the engine's 30 s)
    link_timeout_ms: float = 0
    current_us: float = 0     # the drive's current sampled every current_us us, the whole plan (0: not)
    protocol: str = "sata"    # PROTOCOLS
    source: str = "<plan>"
    lines: dict[tuple, int] = field(default_factory=dict)

    def line_of(self, step: Step, key: str | None = None) -> int | None:
        return self.lines.get(("step", step.index, key), step.line)

    def error(self, step: Step, key: str | None, message: str) -> PlanError:
        return PlanError(self.source, self.line_of(step, key), f"step {step.index + 1} ({step.do}): {message}")


_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.]+)\s*\]\]?")
_KEY = re.compile(r'^\s*("?)([A-Za-z0-9_.]+)\1\s*=')  # a bare key, or a quoted one ("plan.seed")


def locate(text: str, tables: tuple[str, ...] = ("plan", "step")) -> dict[tuple, int]:
    """The line of every key of `tables` in a TOML file's text: (table, i, key), i counting an
    array of tables' entries ([[step]]: 0, 1, ...; 0 for a plain [table]), and (table, i,
    None) each [[table]]'s header: where a refusal points (plans; sweep files,
    fisrig.sweep.spec)."""
    lines: dict[tuple, int] = {}
    section, counts = None, dict.fromkeys(tables, -1)
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0]
        if m := _HEADER.match(line):
            section = m.group(2)
            if section in counts and m.group(1) == "[[":
                counts[section] += 1
                lines[(section, counts[section], None)] = n
            continue
        if (m := _KEY.match(line)) and section in counts:
            lines[(section, max(counts[section], 0), m.group(2))] = n
    return lines


def _type_ok(value: Any, kind: Any) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    return isinstance(value, kind)


def _type_name(kind: Any) -> str:
    names = {int: "a whole number", str: "a string", bool: "true or false", list: "a list",
             _NUM: "a number", dict: "a table"}
    return names.get(kind, getattr(kind, "__name__", str(kind)))


def _number_problem(value: Any) -> str | None:
    """Every number a plan holds is finite and not negative (no key takes a negative value:
    LBAs, sizes, times, percentages, seeds); lists are checked item by item."""
    if isinstance(value, list):
        return next((p for p in map(_number_problem, value) if p), None)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number"
    if value < 0:
        return f"{value} is negative"
    # Floats too: 1.2e300 microseconds of delay made infinity in ticks (the plan fuzzer's).
    if value >= 1 << 64:
        return f"{value} is wider than 64 bits"
    return None


def _check_name(name: Any, source: str, line: int | None) -> None:
    """The run directory's default name (runs/<name>): one path component."""
    if not isinstance(name, str) or not name or name.startswith(".") or len(name) > 128 or \
            any(c in name for c in "/\\") or not name.isprintable():
        raise PlanError(source, line, f"[plan]: name {name!r} must be 1 to 128 printable characters, "
                                      "without '/' or '\\', not starting with '.'")


def from_dict(data: Any, source: str = "<plan>", lines: dict[tuple, int] | None = None) -> Plan:
    """Builds a plan from the TOML structure (or the same dict from Python) and checks its keys,
    their types and that every number is finite and not negative; PlanError otherwise."""
    lines = lines or {}
    if not isinstance(data, dict):
        raise PlanError(source, None, f"a plan is a table ([plan] and [[step]]s), not {type(data).__name__}")
    head = data.get("plan", {})
    for key in data:
        if key not in ("plan", "step"):
            raise PlanError(source, None, f"unknown table [{key}] {closest(key, ['plan', 'step'])}")
    if not isinstance(head, dict):
        raise PlanError(source, lines.get(("plan", 0, None)), "[plan] must be one table, not " + type(head).__name__)
    for key, value in head.items():
        where = lines.get(("plan", 0, key))
        if key not in PLAN_KEYS:
            raise PlanError(source, where, f"[plan]: unknown key '{key}' {closest(key, PLAN_KEYS)}")
        if not _type_ok(value, PLAN_KEYS[key]):
            raise PlanError(source, where, f"[plan]: '{key}' must be {_type_name(PLAN_KEYS[key])}, "
                                           f"not {type(value).__name__}")
        if problem := _number_problem(value):
            raise PlanError(source, where, f"[plan]: {key} = {problem}")
    name = head.get("name", Path(source).stem)
    _check_name(name, source, lines.get(("plan", 0, "name")))
    for key in ("data", "compress_pct", "current_us", "protocol", *POLICY_KEYS):
        if key in head and (why := _setting_problem(key, head[key])):
            raise PlanError(source, lines.get(("plan", 0, key)), f"[plan]: {why}")
    plan = Plan(name=name, steps=[], source=source, lines=lines,
                description=head.get("description", ""), profile=head.get("profile", "consumer-256gb"),
                seed=head.get("seed", 1), data=head.get("data", "stamp"), compress_pct=head.get("compress_pct", 100),
                on_error=head.get("on_error", "fail"), retries=head.get("retries"),
                timeout_ms=head.get("timeout_ms", 0), link_timeout_ms=head.get("link_timeout_ms", 0),
                current_us=head.get("current_us", 0), protocol=head.get("protocol", "sata"))
    steps = data.get("step")
    if not steps:
        raise PlanError(source, None, "the plan has no [[step]]")
    if not isinstance(steps, list):
        raise PlanError(source, None, "steps are [[step]] tables (a list), not " + type(steps).__name__)
    for i, raw in enumerate(steps):
        if not isinstance(raw, dict):
            raise PlanError(source, lines.get(("step", i, None)),
                            f"step {i + 1} must be a table, not {type(raw).__name__}")
        raw = dict(raw)
        do = raw.pop("do", None)
        label = raw.pop("label", None)
        step = Step(do=do if isinstance(do, str) else "?", label=label, args=raw,
                    line=lines.get(("step", i, None)), index=i)
        if do is None:
            raise plan.error(step, None, f"a step needs do = \"<kind>\" (valid: {', '.join(STEP_KEYS)})")
        if not isinstance(do, str):
            raise plan.error(step, "do", f"do must be a string naming the step kind, not {type(do).__name__}")
        if do not in STEP_KEYS:
            raise plan.error(step, "do", f"do = {do!r} is not a step kind {closest(do, STEP_KEYS)}")
        if label is not None and (not isinstance(label, str) or not label):
            raise plan.error(step, "label", f"label must be a non-empty string, not {label!r}")
        keys = {**STEP_KEYS[do], **COMMON_STEP_KEYS}
        for key, value in raw.items():
            if key not in keys:
                raise plan.error(step, key, f"unknown key '{key}' {closest(key, STEP_KEYS[do])}"
                                 if STEP_KEYS[do] else f"unknown key '{key}': {do} takes no keys but label "
                                                       f"and {', '.join(COMMON_STEP_KEYS)}")
            if not _type_ok(value, keys[key]):
                raise plan.error(step, key, f"'{key}' must be {_type_name(keys[key])}, "
                                            f"not {type(value).__name__} ({value!r})")
            if problem := _number_problem(value):
                raise plan.error(step, key, f"{key} = {problem}")
        if "capture" in raw:
            try:
                capture_spec.parse(raw["capture"])
            except capture_spec.SpecError as e:
                raise plan.error(step, "capture", str(e)) from None
        plan.steps.append(step)
    _check_phases(plan)
    return plan


def _check_phases(plan: Plan) -> None:
    """A label names one phase: one step, or steps in a row (a step without a label
    continues the phase before it, so `label` on each of them says the same). A label that
    is an earlier phase's, another step between them, is refused naming both lines: its
    records would go into that phase and its figures be the two steps' together."""
    first: dict[str, Step] = {}  # each phase's first step
    current = None
    for step in plan.steps:
        label = phase_label(step.label, current, step.do)
        if step.label is not None and label != current and label in first:
            was = first[label]
            line = plan.line_of(was, "label" if was.label is not None else None)
            where = f" (line {line})" if line else ""
            whose = f"step {was.index + 1}'s{where}" if was.label is not None else \
                f"step {was.index + 1}'s{where}, which has no label: its phase is its kind's"
            raise plan.error(step, "label", f"label {step.label!r} is already {whose}; a phase label names "
                                            "one step, or steps in a row")
        first.setdefault(label, step)
        current = label


DATA_SOURCES = ("stamp", "zeros", "lfsr")


# The current sampler's shortest period: the current pins convert every 0.85 us (sim/device
# pins.h), so a faster sampler would read each conversion again.
CURRENT_MIN_US = 1


def current_period_problem(key: str, value: Any) -> str | None:
    """What is wrong with a current sampling period in us (the plan's `current_us`, 0 for
    none, or a `current` step's `every_us`), or None."""
    if key == "current_us" and value == 0:
        return None
    if not CURRENT_MIN_US <= value or value * pf.TICK_HZ / 1e6 >= 1 << 32:
        return (f"{key} = {value:g}: the current is sampled every {CURRENT_MIN_US} us at the fastest and "
                f"{((1 << 32) - 1) / pf.TICK_HZ:.1f} s at the slowest"
                + (" (0: not sampled)" if key == "current_us" else ""))
    return None


def _setting_problem(key: str, value: Any) -> str | None:
    """What is wrong with a plan-wide `data` or `compress_pct` (what writes carry),
    `current_us` or one of the error policy's POLICY_KEYS, or None."""
    if key == "current_us":
        return current_period_problem(key, value)
    if key == "data" and value not in DATA_SOURCES:
        return f"data = {value!r} is not valid {closest(value, DATA_SOURCES)}"
    if key == "compress_pct" and not 0 <= value <= 100:
        return f"compress_pct = {value}: must be 0..100"
    if key == "protocol" and value not in PROTOCOLS:
        return f"protocol = {value!r} is not valid {closest(value, PROTOCOLS)}"
    return policy_problem(key, value)


def policy_problem(key: str, value: Any) -> str | None:
    """What is wrong with a value of one of POLICY_KEYS (a plan's or a step's), or None."""
    if key == "on_error" and value not in ON_ERROR:
        return f"on_error = {value!r} is not valid {closest(value, ON_ERROR)}"
    if key == "retries" and not 0 <= value <= MAX_RETRIES:
        return f"retries = {value}: must be 0..{MAX_RETRIES}"
    if key in ("timeout_ms", "link_timeout_ms") and not (0 <= value * pf.TICK_HZ / 1e3 < 1 << 32 and
                                                         not 0 < value * pf.TICK_HZ / 1e3 < 0.5):
        return (f"{key} = {value}: a timeout is over one tick and at most "
                f"{((1 << 32) - 1) / pf.TICK_HZ * 1e3:.0f} ms (0 means the engine's 30 s)")
    return None


def with_settings(plan: Plan, settings: list[str]) -> Plan:
    """The plan with [plan] keys set from the command line (`--set data=lfsr`, `--set
    compress_pct=25`): each KEY=VALUE, VALUE as TOML reads it (a bare word is a string),
    checked as the same key in the file would be; InputError naming the --set."""
    for text in settings:
        where = f"--set {text}"
        key, eq, value = text.partition("=")
        key = key.strip()
        if not eq or not key:
            raise InputError(where, "expected KEY=VALUE, e.g. --set data=lfsr")
        if key not in PLAN_KEYS:
            raise InputError(where, f"unknown [plan] key '{key}' {closest(key, PLAN_KEYS)}")
        try:
            parsed = tomllib.loads(f"v = {value.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            parsed = value.strip()
        if not _type_ok(parsed, PLAN_KEYS[key]):
            raise InputError(where, f"'{key}' must be {_type_name(PLAN_KEYS[key])}, not {parsed!r}")
        if problem := _number_problem(parsed):
            raise InputError(where, f"{key} = {problem}")
        if key == "name":
            _check_name(parsed, where, None)
        if key in ("data", "compress_pct", "current_us", "protocol", *POLICY_KEYS) and (why := _setting_problem(key, parsed)):
            raise InputError(where, why)
        setattr(plan, key, parsed)
    return plan


# A plan is a few kilobytes; a file far bigger is a mistake (a trace belongs in a replay step),
# and parsing a 100 MB TOML file took 7.8 GB of memory.
MAX_PLAN_BYTES = 4 << 20


def load(path: str | Path) -> Plan:
    """A plan file, checked; PlanError for a directory, a binary or oversized file, bad TOML."""
    path = Path(path)
    if path.is_dir():
        raise PlanError(str(path), None, "is a directory, not a plan file")
    try:
        size = path.stat().st_size
        if size > MAX_PLAN_BYTES:
            raise PlanError(str(path), None, f"{size} bytes: a plan file is at most {MAX_PLAN_BYTES} bytes")
        raw = path.read_bytes()
    except OSError as e:
        raise PlanError(str(path), None, f"cannot read the plan: {e.strerror or e}") from None
    return parse(raw, str(path))


def parse(raw: bytes, source: str) -> Plan:
    """A plan file's bytes, checked (`source` names it in errors); PlanError for a binary,
    bad TOML or a bad plan. tests/fuzz/plan_fuzz.py fuzzes it with the compiler behind it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PlanError(source, raw.count(b"\n", 0, e.start) + 1,
                        f"not a text file (byte {e.start} is not UTF-8): a plan is TOML") from None
    if "\0" in text:
        raise PlanError(source, text.count("\n", 0, text.index("\0")) + 1,
                        "not a text file (a NUL byte): a plan is TOML")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise PlanError(source, int(m.group(1)) if m else None, f"not valid TOML: {e}") from None
    return from_dict(data, source, locate(text))


BUILTIN_DIR = Path(__file__).parent / "builtin"


def builtin_plans() -> dict[str, Path]:
    return {p.stem: p for p in sorted(BUILTIN_DIR.glob("*.toml"))}


def find(name_or_path: str) -> Path:
    """A built-in plan by name, or a path."""
    plans = builtin_plans()
    if name_or_path in plans:
        return plans[name_or_path]
    path = Path(name_or_path)
    if not path.exists():
        raise PlanError(name_or_path, None, f"no such plan file or built-in plan {closest(name_or_path, plans)}")
    return path
