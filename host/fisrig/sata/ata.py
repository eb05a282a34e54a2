"""The ATA command set as the host uses it, from the firmware core's fisrig/ata.h (through
hw/fisrig_hw/contract.py, scripts/gen_contract.py): the opcodes, the protocol each runs
with, SMART's subcommands, the status and error bits, the log addresses; and the opcodes the
records' figures are counted by."""
from __future__ import annotations

from fisrig_hw import contract as _c

from fisrig.program_format import PROTO

_PROTOCOL_NAME = {number: name for name, number in PROTO.items()}


def _protocols(prefix: str) -> dict[int, str]:
    """{value: protocol name} of each of ata.h's PREFIX names with a _PROTO beside it."""
    return {getattr(_c, n): _PROTOCOL_NAME[getattr(_c, n + "_PROTO")]
            for n in _c.__dict__ if n.startswith(prefix) and hasattr(_c, n + "_PROTO")}


# The protocol each known opcode needs; a raw step with another must say `protocol = "..."`.
PROTOCOL_OF = _protocols("FISRIG_ATA_")
# SMART runs the protocol of its subcommand (FEATURES 7:0).
SMART_PROTOCOL_OF = _protocols("FISRIG_SMART_")
# FIS types by the names ata.h gives them (0x27 "reg_h2d", 0xA1 "set_device_bits"), and
# by those a plan may also write ("sdb", "h2d", "d2h").
FIS_TYPES = {getattr(_c, n): n[len("FISRIG_FIS_"):].lower() for n in dir(_c) if n.startswith("FISRIG_FIS_")}
FIS_BY_NAME = {**{v: k for k, v in FIS_TYPES.items()}, "sdb": _c.FISRIG_FIS_SET_DEVICE_BITS,
               "h2d": _c.FISRIG_FIS_REG_H2D, "d2h": _c.FISRIG_FIS_REG_D2H}
# Each known opcode's name, as ata.h spells it ("READ_FPDMA_QUEUED"): what a capture lists.
COMMAND_NAMES = {getattr(_c, n): n[len("FISRIG_ATA_"):] for n in _c.__dict__
                 if n.startswith("FISRIG_ATA_") and hasattr(_c, n + "_PROTO")}

DATA_SET_MANAGEMENT = _c.FISRIG_ATA_DATA_SET_MANAGEMENT
READ_DMA_EXT = _c.FISRIG_ATA_READ_DMA_EXT
READ_LOG_EXT = _c.FISRIG_ATA_READ_LOG_EXT
WRITE_DMA_EXT = _c.FISRIG_ATA_WRITE_DMA_EXT
WRITE_DMA_FUA_EXT = _c.FISRIG_ATA_WRITE_DMA_FUA_EXT
READ_LOG_DMA_EXT = _c.FISRIG_ATA_READ_LOG_DMA_EXT
READ_FPDMA_QUEUED = _c.FISRIG_ATA_READ_FPDMA_QUEUED
WRITE_FPDMA_QUEUED = _c.FISRIG_ATA_WRITE_FPDMA_QUEUED
SEND_FPDMA_QUEUED = _c.FISRIG_ATA_SEND_FPDMA_QUEUED
SMART = _c.FISRIG_ATA_SMART
SANITIZE = _c.FISRIG_ATA_SANITIZE
FLUSH_CACHE = _c.FISRIG_ATA_FLUSH_CACHE
FLUSH_CACHE_EXT = _c.FISRIG_ATA_FLUSH_CACHE_EXT
IDENTIFY_DEVICE = _c.FISRIG_ATA_IDENTIFY_DEVICE
SECURITY_SET_PASSWORD = _c.FISRIG_ATA_SECURITY_SET_PASSWORD
SECURITY_ERASE_PREPARE = _c.FISRIG_ATA_SECURITY_ERASE_PREPARE
SECURITY_ERASE_UNIT = _c.FISRIG_ATA_SECURITY_ERASE_UNIT
SANITIZE_BLOCK_ERASE, SANITIZE_BLOCK_ERASE_KEY = _c.FISRIG_ATA_SANITIZE_BLOCK_ERASE, _c.FISRIG_ATA_SANITIZE_BLOCK_ERASE_KEY
STATUS_ERR = _c.FISRIG_ATA_STATUS_ERR
# The SMART attributes of host and NAND writes (512-byte units each): a SMART step's default.
SMART_HOST_WRITTEN, SMART_NAND_WRITTEN = _c.FISRIG_SMART_HOST_SECTORS_WRITTEN, _c.FISRIG_SMART_NAND_SECTORS_WRITTEN
SMART_WRITES = (SMART_HOST_WRITTEN, SMART_NAND_WRITTEN)

# What the records' figures count (fio's read, write, trim and sync): READ LOG (DMA) EXT
# reads too; FLUSH CACHE (EXT) is the drive's fsync.
READS = {READ_DMA_EXT, READ_FPDMA_QUEUED, READ_LOG_DMA_EXT, READ_LOG_EXT}
WRITES = {WRITE_DMA_EXT, WRITE_DMA_FUA_EXT, WRITE_FPDMA_QUEUED}
TRIMS = {DATA_SET_MANAGEMENT, SEND_FPDMA_QUEUED}
# The queued (NCQ) opcodes: their H2D carries the tag in COUNT 7:3.
QUEUED = {READ_FPDMA_QUEUED, WRITE_FPDMA_QUEUED, SEND_FPDMA_QUEUED}
FLUSHES = {FLUSH_CACHE, FLUSH_CACHE_EXT}
READ_LOGS = {READ_LOG_EXT, READ_LOG_DMA_EXT}


def protocol_of(command: int, features: int = 0) -> str | None:
    """The protocol `command` runs with (SMART: its subcommand's, FEATURES 7:0) as ata.h
    gives it; None for an opcode or subcommand ata.h does not know (a raw step must say)."""
    if command == SMART:
        return SMART_PROTOCOL_OF.get(features & 0xFF)
    return PROTOCOL_OF.get(command)
