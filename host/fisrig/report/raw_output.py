"""What `fisrig raw` prints of one command: its completion with the status and error bits
named, its phase times, and the data it returned (a hexdump, and log pages decoded)."""
from __future__ import annotations

from fisrig.sata import decode as ata_decode

PHASES = ("t_submit_ns", "t_h2d_ns", "t_accept_ns", "t_setup_ns", "t_data_first_ns", "t_data_last_ns",
          "t_status_ns")
SHOWN_BYTES = 512  # one sector or log page on the console; --data-in keeps them all
LOG_PAGE = 512


def lines(command: int, lba: int, row: dict, data: bytes | None, data_in: bool, target: str) -> list[str]:
    out = [f"command {command:#04x}: {row['result']}  status {row['status']:#04x} ({ata_decode.status(row['status'])})"
           f"  error {row['error']:#04x} ({ata_decode.error(row['error'])})"
           f"  D2H LBA {row['d2h_lba']}  sectors {row['sectors']}"]
    for k in PHASES:
        out.append(f"  {k[2:-3]:<11} {row[k]:>12} ns")
    out.append(f"  latency     {row['latency_ns']:>12} ns")
    if not data_in:
        return out
    if data is None:
        out.append(f"data in: not shown: target {target} does not bring a command's data back yet "
                   "(--target model does)")
        return out
    if not data:
        out.append("data in: none (the command did not complete without error)")
        return out
    more = f", the first {SHOWN_BYTES} shown (--data-in FILE keeps them all)" if len(data) > SHOWN_BYTES else ""
    out.append(f"data in: {len(data)} bytes{more}")
    out += ata_decode.hexdump(data, SHOWN_BYTES)
    if command in ata_decode.READ_LOG_COMMANDS:
        log, page = lba & 0xFF, (lba >> 8) & 0xFFFF
        for i in range(0, len(data) // LOG_PAGE):
            decoded = ata_decode.log_page(log, data[i * LOG_PAGE:(i + 1) * LOG_PAGE])
            name = ata_decode.LOG_NAMES.get(log, "a log fisrig does not decode")
            out.append(f"log {log:#04x} ({name}) page {page + i}:")
            out += [f"  {d}" for d in decoded] or ["  (not decoded; the hexdump above is the page)"]
    return out
