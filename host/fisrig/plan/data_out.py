"""The data a raw command sends (a plan's `data_out` file, `fisrig raw --data-out FILE`):
what the VM can stage, and the agreement of the file's size with the command's sector count."""
from __future__ import annotations

from fisrig_hw import contract

SECTOR = 512          # ATA's logical sector, the drives fisrig simulates
MAX_SECTORS = 65536   # a 16-bit sector count of 0


def problem(protocol: str, command: int, count: int, features: int, size: int,
            prefix: str = "") -> str | None:
    """Why `size` bytes cannot be a raw command's data-out, or None. The VM stages a raw
    command's data in one FISRIG_VM_DSM_BYTES (512-byte) slot of its data window (vm.c
    submit), so a command sends one 512-byte block at most; the bytes must also be exactly
    what the command's sector count moves, or the drive would read past them. `prefix`
    goes before the field names (`--` for the raw command's flags)."""
    if not protocol.endswith("_out"):
        return f"command {command:#04x} ({protocol}) sends no data"
    if not size:
        return "the file is empty"
    if size > contract.FISRIG_VM_DSM_BYTES:
        return (f"the file holds {size} bytes; a raw command sends at most {contract.FISRIG_VM_DSM_BYTES} "
                "(the VM stages one 512-byte block a command: FISRIG_VM_DSM_BYTES, firmware/core/include/fisrig/vm.h)")
    # The sector count is FEATURES for NCQ and COUNT otherwise (0 meaning 65536); the PIO
    # data-out commands fisrig knows (SECURITY SET PASSWORD, ERASE UNIT) send one block
    # and leave COUNT unused, so a PIO COUNT of 0 means one block here.
    field, n = (prefix + "features", features) if protocol == "fpdma_out" else (prefix + "count", count)
    sectors = n or (1 if protocol == "pio_out" else MAX_SECTORS)
    if size != sectors * SECTOR:
        return (f"the file holds {size} bytes and {field} {n} sends {sectors} sector(s), {sectors * SECTOR} bytes; "
                f"make them agree (a raw command sends one 512-byte sector: {field} 1)")
    return None
