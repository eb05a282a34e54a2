"""A capture as an analyzer lists it (`fisrig capture show RUN`): a line per entry, with its
time, the time since the entry before, its direction, its command's tag, and the FIS's
fields decoded (the H2D's command, LBA and count; a status FIS's status and error; the Set
Device Bits' SActive bits; a setup's transfer count; a DSM's range list), and with --payload
each FIS's payload the capture kept, as a hex dump under it."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

import pyarrow.parquet as pq

from fisrig.capture.format import CAPTURE_BIN, CAPTURE_PARQUET, ticks_to_ns, window_ticks
from fisrig.errors import InputError
from fisrig.records import store
from fisrig.sata import ata

ARROW = {"to_device": "H>D", "to_host": "D>H"}
NAMES = {"reg_h2d": "Reg H2D", "reg_d2h": "Reg D2H", "set_device_bits": "SDB", "dma_setup": "DMA Setup",
         "dma_activate": "DMA Act", "pio_setup": "PIO Setup", "data": "Data", "bist": "BIST"}


def read(run_dir: Path, columns=None):
    """capture.parquet of a run as a pandas frame; InputError when the run has none."""
    run_dir = Path(run_dir)
    path = run_dir / CAPTURE_PARQUET
    if not path.exists():
        why = (f"{CAPTURE_BIN} is there: `fisrig report {run_dir}` makes it" if (run_dir / CAPTURE_BIN).exists()
               else "its plan armed no capture (a step's `capture = {...}`, or `fisrig run --capture`)")
        raise InputError(str(run_dir), f"no {CAPTURE_PARQUET}: {why}")
    with store.reading_parquet(path):
        return pq.read_table(path, columns=columns).to_pandas()


def num(v) -> int | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)


def fis_dwords(row) -> list[int]:
    """The FIS's dwords the capture kept: its first 7 (to its end) and its payload's."""
    head = [int(d) for d in row["dwords"]][:max(0, min(len(row["dwords"]), int(row["count"])))]
    pay = row.get("payload")
    if pay is None or (isinstance(pay, float) and math.isnan(pay)):
        return head
    return head + [int(d) for d in np.frombuffer(pay, dtype="<u4")]


def ranges_text(dwords, whole: bool = False) -> str:
    """A DSM range list as a Data FIS's payload carries it (ACS-3 7.5.3: 8 bytes each, LBA 47:0
    and a count; a zero count is padding), from the captured dwords (the type dword first);
    `whole`: they are every dword of the FIS, not its first few alone."""
    out = []
    for lo, hi in zip(dwords[1::2], dwords[2::2]):
        lba, count = int(lo) | (int(hi) & 0xFFFF) << 32, int(hi) >> 16
        if count:
            out.append(f"{lba}+{count}")
    text = "ranges " + (", ".join(out) if out else "(none in the captured dwords)")
    return text if whole or not out else text + ", ... (the first captured)"


def hex_lines(payload: bytes, indent: int) -> list[str]:
    """A payload as an analyzer dumps it: its offset in the FIS (past the type dword and the
    6 after it: byte 28), 16 bytes a line."""
    pad = " " * indent
    return [f"{pad}{28 + at:04x}  " + " ".join(payload[k:k + 4].hex() for k in range(at, min(at + 16, len(payload)), 4))
            for at in range(0, len(payload), 16)]


def fields_text(row, dsm: bool = False) -> str:
    """What an analyzer shows of the entry beside its name; `dsm`: a Data FIS carrying a DSM
    range list (its command's H2D was DATA SET MANAGEMENT or SEND FPDMA QUEUED)."""
    kind, name = row["kind"], row["name"]
    if kind == "trigger":
        first, last = window_ticks(row["dwords"])
        dropped = int(row["dwords"][5])
        return "window {:.3f} .. {:.3f} us{}{}".format(
            int(ticks_to_ns(first)) / 1000, int(ticks_to_ns(last)) / 1000,
            ", cut short" if row["cut_short"] else "", f", {dropped:,} entries dropped" if dropped else "")
    if kind == "event":
        return ""
    if kind == "primitive":
        return f"x{row['count']}" + (" (CONT)" if row.get("cont") else "")
    cmd, status, error = num(row["command"]), num(row["status"]), num(row["error"])
    parts = []
    if name == "reg_h2d" and cmd is not None:
        feat, count = num(row["features"]), num(row["fis_count"])
        parts.append(f"{ata.COMMAND_NAMES.get(cmd, 'command')} ({cmd:02X}h)")
        if cmd in ata.QUEUED:
            parts.append(f"tag {count >> 3} LBA {num(row['lba'])} sectors {feat or 65536}")
        else:
            parts.append(f"LBA {num(row['lba'])} count {count} features {feat:04X}h")
    elif status is not None:
        parts.append(f"status {status:02X}h error {error:02X}h")
        if name == "set_device_bits":
            parts.append(f"SActive {num(row['sactive']):08X}h")
        elif name == "reg_d2h" and num(row["lba"]):
            parts.append(f"LBA {num(row['lba'])}")
        if name == "pio_setup":
            parts.append(f"transfer {num(row['transfer_bytes'])} bytes")
    elif name == "dma_setup":
        parts.append(f"tag {num(row['dma_tag'])} transfer {num(row['transfer_bytes'])} bytes")
    elif name == "data":
        parts.append(f"{(row['count'] - 1) * 4} bytes")
        if dsm and not row["modelled"]:  # the gateware keeps a Data FIS's first dwords, and its payload if asked
            dwords = fis_dwords(row)
            parts.append(ranges_text(dwords, whole=len(dwords) >= int(row["count"])))
    pay = row.get("payload")
    if isinstance(pay, bytes):
        parts.append(f"(payload {len(pay)} bytes kept)")
    if row["bad"]:
        parts.append("R_ERR")
    if row["cut_short"]:
        parts.append("cut short")
    return " ".join(parts)


def lines(run_dir: Path, t_from_ns: int | None = None, t_to_ns: int | None = None,
          window: int | None = None, payload: bool = False) -> list[str]:
    """The listing of a run's capture, within [t_from_ns, t_to_ns] and of one window if asked;
    `payload`: each FIS's payload dumped under it."""
    d = read(run_dir)
    if window is not None:
        if window not in set(d["window"]):
            have = ", ".join(map(str, sorted(set(d["window"])))) or "none"
            raise InputError(f"--window {window}", f"no such window: the capture's windows are {have}")
        d = d[d["window"] == window]
    if t_from_ns is not None:
        d = d[d["t_ns"] >= t_from_ns]
    if t_to_ns is not None:
        d = d[d["t_ns"] <= t_to_ns]
    out = [f"{'time (us)':>14} {'+ns':>8}  dir  tag  {'entry':<10} fields", ]
    modelled = bool(d["modelled"].any()) if len(d) else False
    last = None
    sent = None  # the last H2D's command: a DSM's data carries its range list
    for row in d.to_dict("records"):
        if row["name"] == "reg_h2d":
            sent = num(row["command"])
        if row["kind"] == "trigger":
            out.append(f"-- window {row['window']}: trigger {row['name']} at {row['t_ns'] / 1000:.3f} us "
                       f"({fields_text(row)})")
            last = None
            continue
        delta = "" if last is None else f"{row['t_ns'] - last:>8}"
        last = row["t_ns"]
        tag = "" if num(row["tag"]) is None else str(num(row["tag"]))
        label = NAMES.get(row["name"], row["name"]) if row["kind"] == "fis" else row["name"]
        if row["kind"] == "event":
            label = f"[{row['name']}]"
        dsm = row["name"] == "data" and row["direction"] == "to_device" and sent in ata.TRIMS
        out.append(f"{row['t_ns'] / 1000:>14.3f} {delta:>8}  {ARROW.get(row['direction'], '   ')}  {tag:>3}  "
                   f"{label:<10} {fields_text(row, dsm)}".rstrip())
        if payload and isinstance(row.get("payload"), bytes):
            out += hex_lines(row["payload"], 34)
    if modelled:
        out.append("(modelled: the model target's FISes where its wire model places them; primitives are not "
                   "modelled: docs/capture.md)")
    return out
