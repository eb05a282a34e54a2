"""What a plan's `capture = { trigger = "r_err", before_us = 50, after_us = 200 }` (or
`fisrig run --capture trigger=r_err,before_us=50,after_us=200`) asks: the trigger and its
value, the window's depths in ticks, how many windows, and how many of each FIS's dwords past
its first 7 (its payload) the gateware keeps (docs/capture.md)."""
from __future__ import annotations

from dataclasses import dataclass

from fisrig import program_format as pf
from fisrig.sata.ata import FIS_BY_NAME
from fisrig.errors import closest
from fisrig_hw import contract as _c

KEYS = {"trigger": str, "before_us": (int, float), "after_us": (int, float), "windows": int, "payload_dwords": int}
# The triggers a plan names, and whether each takes a value after a colon ("fis:sdb").
TRIGGERS = {"start": (_c.FISRIG_TRIGGER_ARMED, False), "fis": (_c.FISRIG_TRIGGER_FIS, True),
            "command": (_c.FISRIG_TRIGGER_COMMAND, True), "tag": (_c.FISRIG_TRIGGER_TAG, True),
            "r_err": (_c.FISRIG_TRIGGER_R_ERR, False), "timeout": (_c.FISRIG_TRIGGER_TIMEOUT, False),
            "power_cut": (_c.FISRIG_TRIGGER_POWER_CUT, False), "result": (_c.FISRIG_TRIGGER_RESULT, True),
            "error": (_c.FISRIG_TRIGGER_ERROR, False), "crc": (_c.FISRIG_TRIGGER_RESULT, False)}
# Depths fit the descriptor's 32-bit tick fields (data_word, timeout_ticks): 28.6 s.
MAX_US = ((1 << 32) - 1) * 1_000_000 // pf.TICK_HZ
MAX_WINDOWS = 0xFFFF
MAX_PAYLOAD = pf.CAPTURE_MAX_PAYLOAD_DWORDS
DEFAULT_BEFORE_US, DEFAULT_AFTER_US = 20, 100


class SpecError(ValueError):
    """A capture the rig cannot arm: `key` is the capture's key at fault (None: the table)."""

    def __init__(self, key: str | None, message: str):
        self.key = key
        super().__init__(message)


@dataclass(frozen=True)
class CaptureSpec:
    trigger: str        # as written: "r_err", "fis:sdb", "command:0x61"
    code: int           # enum fisrig_capture_trigger
    value: int
    before_ticks: int
    after_ticks: int
    windows: int
    payload_dwords: int = 0  # each FIS's dwords kept past its first 7

    def op(self) -> bytes:
        """The program's CAPTURE instruction arming it (program.h struct fisrig_op_capture)."""
        return pf.op_capture(pf.CAPTURE_ARM, self.code, self.value, self.windows, self.before_ticks,
                             self.after_ticks, self.payload_dwords)


def _trigger_value(kind: str, text: str) -> int:
    if kind == "fis":
        if text.lower() in FIS_BY_NAME:
            return FIS_BY_NAME[text.lower()]
        raise SpecError("trigger", f"fis:{text}: not a FIS type {closest(text, FIS_BY_NAME)}")
    if kind == "result":
        if text in pf.RESULT:
            return pf.RESULT[text]
        raise SpecError("trigger", f"result:{text}: not a result {closest(text, pf.RESULT)}")
    try:
        v = int(text, 0)
    except ValueError:
        raise SpecError("trigger", f"{kind}:{text}: {text!r} is not a number (decimal, or 0x hex)") from None
    top = 0xFF if kind == "command" else _c.FISRIG_ENGINE_SLOTS - 1
    if not 0 <= v <= top:
        raise SpecError("trigger", f"{kind}:{text}: {'an opcode is' if kind == 'command' else 'an NCQ tag is'} 0 to {top}")
    return v


def parse(table) -> CaptureSpec:
    """A capture table as a plan or the command line gives it; SpecError naming the key."""
    if not isinstance(table, dict):
        raise SpecError(None, f"capture is a table such as {{ trigger = \"r_err\", before_us = 50, after_us = 200 }}, "
                              f"not {type(table).__name__}")
    for key, value in table.items():
        if key not in KEYS:
            raise SpecError(key, f"capture has no key '{key}' {closest(key, KEYS)}")
        if isinstance(value, bool) or not isinstance(value, KEYS[key]):
            raise SpecError(key, f"capture's {key} must be {'a string' if key == 'trigger' else 'a number'}, not {value!r}")
    if "trigger" not in table:
        raise SpecError(None, f"capture needs a trigger (one of {', '.join(TRIGGERS)})")
    text = table["trigger"]
    kind, _, arg = text.partition(":")
    if kind not in TRIGGERS:
        raise SpecError("trigger", f"trigger {text!r}: no such trigger {closest(kind, TRIGGERS)}")
    code, takes = TRIGGERS[kind]
    if takes and not arg:
        raise SpecError("trigger", f"trigger {kind!r} takes what to look for: {kind}:<value>")
    if not takes and arg:
        raise SpecError("trigger", f"trigger {kind!r} takes no value, not {arg!r}")
    value = pf.RESULT["data_crc"] if kind == "crc" else _trigger_value(kind, arg) if takes else 0
    depth = {}
    for key, default in (("before_us", DEFAULT_BEFORE_US), ("after_us", DEFAULT_AFTER_US)):
        us = table.get(key, default)
        if not 0 <= us <= MAX_US:
            raise SpecError(key, f"{key} = {us}: a window's depth is 0 to {MAX_US:,} us")
        depth[key] = round(us * pf.TICK_HZ / 1_000_000)
    windows = table.get("windows", 1)
    if not 1 <= windows <= MAX_WINDOWS:
        raise SpecError("windows", f"windows = {windows}: 1 to {MAX_WINDOWS}")
    payload = table.get("payload_dwords", 0)
    if not 0 <= payload <= MAX_PAYLOAD:
        raise SpecError("payload_dwords", f"payload_dwords = {payload}: 0 to {MAX_PAYLOAD} (each FIS's dwords kept "
                                          f"past its first 7; {MAX_PAYLOAD} keeps the whole of the longest, an 8 KiB Data FIS)")
    return CaptureSpec(text, code, value, depth["before_us"], depth["after_us"], windows, payload)


def from_flag(text: str) -> dict:
    """`--capture trigger=r_err,before_us=50,after_us=200` as the table a plan would give;
    SpecError for a piece that is not key=value."""
    table = {}
    for piece in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = piece.partition("=")
        if not eq or not key.strip():
            raise SpecError(None, f"--capture {text!r}: {piece!r} is not key=value")
        key, value = key.strip(), value.strip()
        if key == "trigger":
            table[key] = value
        else:
            try:
                table[key] = int(value) if key in ("windows", "payload_dwords") else float(value)
            except ValueError:
                raise SpecError(key, f"--capture {key}={value}: not a number") from None
    return table


def on_plan(plan, text: str):
    """The plan with `fisrig run --capture TEXT` armed as its first step starts; InputError
    naming the flag (a first step with a capture of its own too)."""
    from fisrig.errors import InputError
    where = f"--capture {text}"
    try:
        table = from_flag(text)
        parse(table)
    except SpecError as e:
        raise InputError(where, str(e)) from None
    first = plan.steps[0]
    if "capture" in first.args:
        raise InputError(where, f"the plan's first step arms a capture of its own ({plan.source}:"
                                f"{plan.line_of(first, 'capture')}); say one")
    first.args["capture"] = table
    return plan
