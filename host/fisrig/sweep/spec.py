"""A sweep file: a plan and the axes it is run over, checked before anything runs.

    [sweep]
    name = "op-sweep"              # the sweep directory's default name (runs/sweeps/<name>)
    plan = "fill-delete-fill"      # a built-in plan or a plan file (relative to this file)
    profile = "consumer-256gb"     # the plan's own when not given
    target = "model"

    [[axis]]                       # the points are the product of the axes ...
    key = "profile.capacity.user_gb"
    values = [224, 240, 256]

    [[point]]                      # ... or, instead of axes, listed one by one
    "plan.seed" = 1
    "fault.r_err_rate" = 0.001

An axis key is one of:
- `plan`: the plan (a built-in name or a plan file, relative to this file) the point runs;
- `plan.KEY`: a [plan] key (seed, data, protocol, ...), as `fisrig run --set KEY=VALUE`;
- `step.LABEL.KEY` (or `step.N.KEY`, N from 1): a key of the plan's step with that label;
- `profile`: the drive profile (a built-in name or a profile file) the point runs on;
- `profile.SECTION.KEY`: a drive-profile key (`fisrig-drive profile-keys`), written into a
  profile file of the point's own that takes the rest from the point's profile (`base`);
- `fault.KNOB`: a fault knob's value (`fisrig run --fault KNOB=VALUE`);
- `target`: the target the point runs on.
Every point's plan, profile and knobs are checked as `fisrig run` checks them, each error
naming this file's line of the value that made it.
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fisrig import plan as plan_mod
from fisrig.errors import InputError, closest
from fisrig.sweep.campaign import axis as campaign_axis
from fisrig.targets import TARGETS

SWEEP_KEYS = {"name": str, "plan": str, "profile": str, "target": str, "description": str}
AXIS_KINDS = ("plan", "step", "profile", "fault", "target")
# A sweep is a grid of runs, each a process's work for minutes; more points than this is a
# typing mistake in an axis, not a campaign (a campaign's cycles are one point's plan).
MAX_POINTS = 10000


@dataclass
class Axis:
    key: str
    values: list[Any]
    line: int | None


@dataclass
class Sweep:
    name: str
    source: str
    plan_path: Path
    plan_data: dict           # the plan file's TOML, as read
    plan_text: str
    profile: str | None
    target: str
    axes: list[Axis]
    points: list[dict[str, Any]]  # each: axis key -> value
    lines: dict[tuple, int] = field(default_factory=dict)  # ("point", i, key) and ("axis", i, key)
    description: str = ""
    # A `plan` axis's plans by the value that names them: (path, TOML tables, text).
    plans: dict[str, tuple[Path, dict, str]] = field(default_factory=dict)
    campaign: dict | None = None  # a [campaign]'s step, cycles, chunk_cycles and axis key (campaign.py)

    def plan_of(self, point: int) -> tuple[Path, dict, str]:
        """The plan file point `point` runs: its path, tables and text."""
        name = self.points[point].get("plan")
        return self.plans[name] if name is not None else (self.plan_path, self.plan_data, self.plan_text)

    def where(self, point: int, key: str) -> str:
        """This file's line for a point's value of `key` (its axis's, or its [[point]]'s)."""
        line = self.lines.get(("point", point, key))
        if line is None:
            line = next((a.line for a in self.axes if a.key == key), None)
        return f"{self.source}:{line}" if line else self.source

    def digest(self) -> str:
        """What the sweep is: its plan, profile, target and points (not its name or
        description): a sweep directory holds one sweep's points."""
        what = {"plan": self.plan_text, "profile": self.profile, "target": self.target, "points": self.points}
        if self.plans:
            what["plans"] = {k: text for k, (_, _, text) in self.plans.items()}
        return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


BUILTIN_DIR = Path(__file__).parent / "builtin"


def builtin_sweeps() -> dict[str, Path]:
    return {p.stem: p for p in sorted(BUILTIN_DIR.glob("*.toml"))}


def find(name_or_path: str) -> Path:
    """A built-in sweep by name, or a path (load refuses one that is not there)."""
    return builtin_sweeps().get(name_or_path, Path(name_or_path))


def load(path: str | Path) -> Sweep:
    """A sweep file, checked (its own keys and every point's plan keys); InputError with
    file:line otherwise. The profile keys, knobs and targets are checked by check()."""
    path = Path(path)
    source = str(path)
    if path.is_dir() or not path.is_file():
        raise InputError(source, "is a directory, not a sweep file" if path.is_dir() else "no such sweep file")
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(source, f"cannot read the sweep: {e}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise InputError(f"{source}:{m.group(1)}" if m else source, f"not valid TOML: {e}") from None
    lines = plan_mod.locate(text, ("sweep", "axis", "point", "campaign"))

    def at(key: tuple) -> str:
        return f"{source}:{lines[key]}" if key in lines else source

    for key in data:
        if key not in ("sweep", "axis", "point", "campaign"):
            raise InputError(source, f"unknown table [{key}] {closest(key, ['sweep', 'axis', 'point', 'campaign'])}")
    head = data.get("sweep")
    if not isinstance(head, dict):
        raise InputError(source, "a sweep needs a [sweep] table naming its plan")
    for key, value in head.items():
        if key not in SWEEP_KEYS:
            raise InputError(at(("sweep", 0, key)), f"[sweep]: unknown key '{key}' {closest(key, SWEEP_KEYS)}")
        if not isinstance(value, SWEEP_KEYS[key]) or not value:
            raise InputError(at(("sweep", 0, key)), f"[sweep]: '{key}' must be a non-empty string, not {value!r}")
    target = head.get("target", "model")
    if target not in TARGETS:
        raise InputError(at(("sweep", 0, "target")), f"no such target {target!r} {closest(target, TARGETS)}")
    raw_axes = data.get("axis", [])
    plan_axis = next((i for i, ax in enumerate(raw_axes if isinstance(raw_axes, list) else [])
                      if isinstance(ax, dict) and ax.get("key") == "plan"), None)
    plans: dict[str, tuple[Path, dict, str]] = {}
    if plan_axis is not None:
        values = raw_axes[plan_axis].get("values")
        where = at(("axis", plan_axis, "values"))
        if not isinstance(values, list) or not values or not all(isinstance(v, str) and v for v in values):
            raise InputError(where, "axis plan: values are plans, each a built-in name or a plan file")
        for v in values:
            found, _ = _plan_file(v, path, where)
            text_v = found.read_text()
            plans[v] = (found, tomllib.loads(text_v), text_v)
    if "plan" not in head and plan_axis is None:
        raise InputError(at(("sweep", 0, None)), "[sweep] needs plan = \"<built-in name or plan file>\"")
    plan_path, base = _plan_file(head["plan"], path, at(("sweep", 0, "plan"))) if "plan" in head else \
        _plan_file(raw_axes[plan_axis]["values"][0], path, at(("axis", plan_axis, "values")))
    plan_text = plan_path.read_text()
    name = head.get("name", path.stem)
    plan_mod._check_name(name, at(("sweep", 0, "name")), None)

    axes: list[Axis] = []
    raw_points = data.get("point", [])
    if not isinstance(raw_axes, list) or not isinstance(raw_points, list):
        raise InputError(source, "axes are [[axis]] tables and points [[point]] tables")
    if raw_axes and raw_points:
        raise InputError(at(("point", 0, None)), "a sweep has [[axis]] tables or [[point]] tables, not both")
    if "campaign" in data and raw_points:
        raise InputError(at(("point", 0, None)), "a campaign's chunks are its points: its other axes are [[axis]] tables")
    if not raw_axes and not raw_points and "campaign" not in data:
        raise InputError(source, "a sweep needs [[axis]] tables (key, values) or [[point]] tables")
    for i, ax in enumerate(raw_axes):
        where = at(("axis", i, None))
        if not isinstance(ax, dict):
            raise InputError(where, "an axis is a table: key = \"...\", values = [...]")
        for k in ax:
            if k not in ("key", "values"):
                raise InputError(at(("axis", i, k)), f"axis: unknown key '{k}' (valid: key, values)")
        key, values = ax.get("key"), ax.get("values")
        if not isinstance(key, str):
            raise InputError(where, "an axis needs key = \"<plan.KEY | step.LABEL.KEY | profile.SECTION.KEY | "
                                    "fault.KNOB | target>\"")
        if not isinstance(values, list) or not values:
            raise InputError(at(("axis", i, "values")) if "values" in ax else where,
                             f"axis {key}: values must be a non-empty list")
        if any(a.key == key for a in axes):
            raise InputError(at(("axis", i, "key")), f"axis {key} is given twice")
        _check_key(key, None if plans else base, at(("axis", i, "key")))
        for v in values:
            _check_target(key, v, at(("axis", i, "values")))
        axes.append(Axis(key, values, lines.get(("axis", i, "values"), lines.get(("axis", i, "key")))))
    campaign_info = None
    if "campaign" in data:
        key, chunks, campaign_info = campaign_axis(data["campaign"], base, at)
        if any(a.key == key for a in axes):
            raise InputError(at(("campaign", 0, "step")), f"axis {key} is the campaign's: its chunks set it")
        axes.append(Axis(key, chunks, lines.get(("campaign", 0, "chunk_cycles"), lines.get(("campaign", 0, "step")))))
        campaign_info["key"] = key
    points: list[dict[str, Any]] = []
    if axes:
        count = 1
        for a in axes:
            count *= len(a.values)
        if count > MAX_POINTS:
            raise InputError(source, f"the axes make {count} points; a sweep holds at most {MAX_POINTS}")
        points = [dict(zip((a.key for a in axes), combo)) for combo in itertools.product(*(a.values for a in axes))]
    for i, pt in enumerate(raw_points):
        if not isinstance(pt, dict) or not pt:
            raise InputError(at(("point", i, None)), "a point is a table of axis keys and values, e.g. \"plan.seed\" = 2")
        for key, v in pt.items():
            if key == "plan":
                raise InputError(at(("point", i, key)), "a point's plan is a plan axis's (an [[axis]] key = \"plan\")")
            _check_key(key, base, at(("point", i, key)))
            _check_target(key, v, at(("point", i, key)))
        points.append(dict(pt))
    if len(points) > MAX_POINTS:
        raise InputError(source, f"{len(points)} points; a sweep holds at most {MAX_POINTS}")
    sweep = Sweep(name=name, source=source, plan_path=plan_path, plan_data=tomllib.loads(plan_text),
                  plan_text=plan_text, profile=head.get("profile"), target=target, axes=axes, points=points,
                  lines=lines, description=head.get("description", ""), plans=plans, campaign=campaign_info)
    for i in range(len(points)):
        point_plan(sweep, i)  # each point's plan checked now, with this file's line
    return sweep


def _plan_file(name: str, sweep_path: Path, where: str) -> tuple[Path, plan_mod.Plan]:
    """A plan named in a sweep file: a file beside it, else a built-in plan or a path; the
    plan itself checked as `fisrig run` would."""
    local = sweep_path.parent / name
    try:
        found = local if local.is_file() else plan_mod.find(name)
    except InputError as e:
        raise InputError(where, f"plan {name!r}: {e.message}") from None
    return found, plan_mod.load(found)  # a plan's own error names its file and line


def _check_key(key: str, base: plan_mod.Plan | None, where: str) -> None:
    """An axis key, checked; its step label against `base` (None: each point's own plan, when
    a plan axis makes them differ, is checked as the point's plan is made)."""
    kind, _, rest = key.partition(".")
    if kind not in AXIS_KINDS or (kind == "target" and rest) or (kind in ("step", "fault") and not rest):
        raise InputError(where, f"axis key {key!r}: it is plan, plan.KEY, step.LABEL.KEY, profile (a drive "
                                f"profile), profile.SECTION.KEY, fault.KNOB or target {closest(kind, AXIS_KINDS)}")
    if kind == "plan" and rest and rest not in plan_mod.PLAN_KEYS:
        raise InputError(where, f"axis key {key!r}: no [plan] key '{rest}' {closest(rest, plan_mod.PLAN_KEYS)}")
    if kind == "step":
        label, _, step_key = rest.rpartition(".")
        if not label or not step_key:
            raise InputError(where, f"axis key {key!r}: a step's key is step.LABEL.KEY (or step.N.KEY, N from 1)")
        if base is not None:
            _step_index(base, label, where)
    if kind == "profile" and rest and rest.count(".") != 1:
        raise InputError(where, f"axis key {key!r}: a profile key is profile.SECTION.KEY, e.g. profile.capacity.user_gb")


def _check_target(key: str, value: Any, where: str) -> None:
    if key == "target" and value not in TARGETS:
        raise InputError(where, f"no such target {value!r} {closest(value, TARGETS)}")


def _step_index(base: plan_mod.Plan, label: str, where: str) -> int:
    labels = [s.label for s in base.steps]
    if label in labels:
        if labels.count(label) > 1:
            raise InputError(where, f"step label {label!r} names {labels.count(label)} steps of the plan: use step.N")
        return labels.index(label)
    if label.isdigit() and 1 <= int(label) <= len(base.steps):
        return int(label) - 1
    raise InputError(where, f"the plan has no step labelled {label!r} and no step {label} "
                            f"{closest(label, [l for l in labels if l])}")


def point_plan(sweep: Sweep, i: int) -> plan_mod.Plan:
    """Point i's plan: the plan file's tables with the point's plan and step keys set,
    checked as a plan file is; InputError naming the sweep's line of the value."""
    return point_tables(sweep, i)[0]


def point_tables(sweep: Sweep, i: int) -> tuple[plan_mod.Plan, dict]:
    """Point i's plan and the tables it was made from (what a worker makes it from again)."""
    plan_path, plan_data, plan_text = sweep.plan_of(i)
    data = copy.deepcopy(plan_data)
    for key, value in sweep.points[i].items():
        kind, _, rest = key.partition(".")
        if kind == "plan" and rest:
            data.setdefault("plan", {})[rest] = value
        elif kind == "step":
            label, _, step_key = rest.rpartition(".")
            base = plan_mod.Plan(name="", steps=[plan_mod.Step(do=s.get("do", "?"), label=s.get("label"), args={})
                                                 for s in data["step"]])
            data["step"][_step_index(base, label, sweep.where(i, key))][step_key] = value
    try:
        plan = plan_mod.from_dict(data, str(plan_path), plan_mod.locate(plan_text))
    except InputError as e:
        keys = [k for k in sweep.points[i] if k.split(".")[0] in ("plan", "step")]
        raise InputError(sweep.where(i, keys[0]) if keys else sweep.source,
                         f"point {i + 1} ({label_of(sweep.points[i])}): {e}") from None
    return plan, data


def label_of(point: dict[str, Any]) -> str:
    """A point as people read it: `profile.capacity.user_gb=240, plan.seed=2`."""
    return ", ".join(f"{k}={v}" for k, v in point.items())


def profile_text(base: str, keys: dict[str, Any]) -> str:
    """A profile file taking `base` and setting `keys` (section.key -> value): TOML."""
    by_section: dict[str, list[str]] = {}
    for key, value in keys.items():
        section, _, name = key.partition(".")
        by_section.setdefault(section, []).append(f"{name} = {_toml(value)}")
    out = [f"base = {_toml(base)}"]
    for section, entries in by_section.items():
        out += ["", f"[{section}]", *entries]
    return "\n".join(out) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise InputError("", f"{value!r}: a profile value is a number, a string, true/false or a list of them")
