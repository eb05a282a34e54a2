"""How wide each field of the rig's program is, so a value that does not fit is refused with
its file and line instead of failing in struct.pack (or, worse, wrapping silently).

The widths are the C compiler's, from contract.py (generated from the firmware headers);
nothing here restates a layout.
"""
from __future__ import annotations

from fisrig_hw import contract

_WIDTH_OF = {  # plan key -> (struct, field) it is packed into
    "command": ("fisrig_cmd_desc", "command"), "features": ("fisrig_cmd_desc", "features"),
    "count": ("fisrig_cmd_desc", "count"), "device": ("fisrig_cmd_desc", "device"),
    "icc": ("fisrig_cmd_desc", "icc"), "lba": ("fisrig_cmd_desc", "lba"),
    "aux": ("fisrig_cmd_desc", "aux"), "timeout_ticks": ("fisrig_cmd_desc", "timeout_ticks"),
    "expect_status": ("fisrig_expect", "status_value"), "expect_error": ("fisrig_expect", "error_value"),
    "seed": ("fisrig_op_workload", "seed"), "zipf_theta_milli": ("fisrig_op_workload", "zipf_theta_milli"),
    "size_weight": ("fisrig_op_workload", "size_weight"),
    "stop_commands": ("fisrig_op_workload", "stop_commands"), "stop_bytes": ("fisrig_op_workload", "stop_bytes"),
    "stop_ticks": ("fisrig_op_workload", "stop_ticks"), "idle_ticks": ("fisrig_op_idle", "ticks"),
    "program_bytes": ("fisrig_program_header", "size"), "trace_entries": ("fisrig_op_trace", "entries"),
    "loop_count": ("fisrig_op_loop", "count"),
}


def bits(key: str) -> int:
    """The width in bits of what `key` is packed into (an array field: one element)."""
    struct, field = _WIDTH_OF[key]
    _, size, elements = contract.FIELDS[struct][field]
    return 8 * (size if field == "lba" else size // elements)


# Keys whose VM takes less than their field holds (program.h says why).
_VM_TOP = {"idle_ticks": contract.FISRIG_IDLE_TICKS_MAX}


def top(key: str) -> int:
    """The largest value `key` can hold."""
    return min((1 << bits(key)) - 1, _VM_TOP.get(key, 1 << 64))


def too_wide(key: str, value: int) -> str | None:
    """Why `value` does not fit `key`'s field, or None."""
    if 0 <= value <= top(key):
        return None
    if key in _VM_TOP:
        return f"{value} is more than the VM can time (0..{top(key)})"
    return f"{value} does not fit the program's {bits(key)}-bit field (0..{top(key)})"
