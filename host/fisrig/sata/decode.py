"""ATA completion registers and log pages, named as ACS-4 names them, for `fisrig raw`.

The bit tables are ACS-4's Status and Error fields (7.1.x "Normal outputs" and
"Error outputs"); bits ACS-4 leaves command specific or obsolete are shown by number
(status bit 4, once DSC, is what most drives still set: 0x50 is "DRDY bit 4"), so nothing
is named that the standard does not name for every command.
"""
from __future__ import annotations

from fisrig_hw import contract as _c

from fisrig.sata import ata

STATUS_BITS = {
    _c.FISRIG_ATA_STATUS_BSY: "BSY",    # busy
    _c.FISRIG_ATA_STATUS_DRDY: "DRDY",  # device ready
    _c.FISRIG_ATA_STATUS_DF: "DF",      # device fault
    _c.FISRIG_ATA_STATUS_DRQ: "DRQ",    # data request
    _c.FISRIG_ATA_STATUS_SENSE: "SENSE",  # sense data available
    _c.FISRIG_ATA_STATUS_ERR: "ERR",    # error
}
ERROR_BITS = {
    _c.FISRIG_ATA_ERROR_ICRC: "ICRC",  # interface CRC error
    _c.FISRIG_ATA_ERROR_UNC: "UNC",    # uncorrectable data
    _c.FISRIG_ATA_ERROR_IDNF: "IDNF",  # ID not found (LBA out of range)
    _c.FISRIG_ATA_ERROR_ABRT: "ABRT",  # command aborted
}
# Log addresses (ACS-4 Table A.2) the simulated drive serves or a user is likely to ask for.
LOG_NAMES = {
    _c.FISRIG_LOG_DIRECTORY: "General Purpose Log Directory",
    _c.FISRIG_LOG_DEVICE_STATISTICS: "Device Statistics",
    _c.FISRIG_LOG_NCQ_ERROR: "NCQ Command Error",
    _c.FISRIG_LOG_SATA_PHY_EVENTS: "SATA Phy Event Counters",
    _c.FISRIG_LOG_NCQ_SEND_RECEIVE: "NCQ Send and Receive",
}
# SATA Phy Event Counter identifiers (SATA 3.x, 13.7.10), named as smartctl -l sataphy names them.
PHY_EVENTS = {
    0x001: "Command failed due to ICRC error",
    0x003: "R_ERR response for device-to-host data FIS",
    0x005: "R_ERR response for non-data FIS",
    0x00A: "Device-to-host register FISes sent due to a COMRESET",
}
READ_LOG_COMMANDS = ata.READ_LOGS


def bits(value: int, names: dict[int, str]) -> str:
    """'DRDY ERR' for 0x41; bits without a name as 'bit N'; '-' for none."""
    out = []
    for b in range(7, -1, -1):
        mask = 1 << b
        if value & mask:
            out.append(names.get(mask, f"bit {b}"))
    return " ".join(out) or "-"


def status(value: int) -> str:
    return bits(value, STATUS_BITS)


def error(value: int) -> str:
    return bits(value, ERROR_BITS)


def hexdump(data: bytes, limit: int | None = None) -> list[str]:
    """Offset, 16 bytes in hex, and their ASCII; runs of identical lines fold to '*' as
    hexdump -C folds them."""
    shown = data if limit is None else data[:limit]
    lines, last, folded = [], None, False
    for off in range(0, len(shown), 16):
        chunk = shown[off:off + 16]
        if chunk == last and off + 16 < len(shown):
            if not folded:
                lines.append("*")
                folded = True
            continue
        last, folded = chunk, False
        hx = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{off:08x}  {hx[:23]:<23}  {hx[24:]:<23}  |{text}|")
    return lines


def log_page(log: int, page: bytes) -> list[str]:
    """What a log page says, for the logs the simulated drive serves; [] for others."""
    if log == _c.FISRIG_LOG_DIRECTORY:
        out = [f"GPL version {int.from_bytes(page[0:2], 'little')}"]
        for addr in range(1, 256):
            n = int.from_bytes(page[2 * addr:2 * addr + 2], "little")
            if n:
                out.append(f"log {addr:#04x} ({LOG_NAMES.get(addr, 'not named here')}): {n} page(s)")
        return out
    if log == _c.FISRIG_LOG_NCQ_ERROR:
        nq, tag = page[0] >> 7, page[0] & 0x1F
        lba = int.from_bytes(page[4:7] + page[8:11], "little")
        return [("NQ set: no queued command failed" if nq and not page[2] else
                 f"{'non-queued' if nq else f'tag {tag}'}: status {page[2]:#04x} ({status(page[2])}) "
                 f"error {page[3]:#04x} ({error(page[3])}) LBA {lba} count {int.from_bytes(page[12:14], 'little')}"),
                f"checksum {'ok' if sum(page[:512]) % 256 == 0 else 'BAD'}"]
    if log == _c.FISRIG_LOG_SATA_PHY_EVENTS:
        out, off = [], 4
        while off + 2 <= 510:
            ident = int.from_bytes(page[off:off + 2], "little")
            if not ident:
                break
            words = (ident >> 12) & 0x7
            value = int.from_bytes(page[off + 2:off + 2 + 2 * words], "little")
            out.append(f"{ident & 0xFFF:#05x} {PHY_EVENTS.get(ident & 0xFFF, 'counter')}: {value}")
            off += 2 + 2 * words
        out.append(f"checksum {'ok' if sum(page[:512]) % 256 == 0 else 'BAD'}")
        return out
    return []
