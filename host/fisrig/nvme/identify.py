"""Identify Controller and Namespace decoded (NVMe Base 2.0 figure 275, NVM Command Set 1.0
figure 97), and printed as `nvme id-ctrl -H` and `nvme id-ns -H` print each field's line:
the name padded (to ten in id-ctrl, eight in id-ns), ": ", the value as nvme-cli formats it (`%#x`, `%d` or the text).
tests/host/test_nvme_identify.py holds every line to nvme-cli's own output for the same
pages."""
from __future__ import annotations

# Identify Controller: name -> (byte offset, bytes, format); "x" %#x, "d" decimal, "s" text,
# "ieee" nvme-cli's three bytes high first.
CONTROLLER = {
    "vid": (0, 2, "x"), "ssvid": (2, 2, "x"), "sn": (4, 20, "s"), "mn": (24, 40, "s"),
    "fr": (64, 8, "s"), "rab": (72, 1, "d"), "ieee": (73, 3, "ieee"), "cmic": (76, 1, "x"),
    "mdts": (77, 1, "d"), "cntlid": (78, 2, "x"), "ver": (80, 4, "x"), "rtd3r": (84, 4, "x"),
    "rtd3e": (88, 4, "x"), "oaes": (92, 4, "x"), "ctratt": (96, 4, "x"), "cntrltype": (111, 1, "d"),
    "oacs": (256, 2, "x"), "acl": (258, 1, "d"), "aerl": (259, 1, "d"), "frmw": (260, 1, "x"),
    "lpa": (261, 1, "x"), "elpe": (262, 1, "d"), "npss": (263, 1, "d"), "wctemp": (266, 2, "d"),
    "cctemp": (268, 2, "d"), "tnvmcap": (280, 16, "d"), "sanicap": (328, 4, "x"), "sqes": (512, 1, "x"),
    "cqes": (513, 1, "x"), "maxcmd": (514, 2, "d"), "nn": (516, 4, "d"), "oncs": (520, 2, "x"),
    "fuses": (522, 2, "x"), "fna": (524, 1, "x"), "vwc": (525, 1, "x"), "awun": (526, 2, "d"),
    "awupf": (528, 2, "d"), "acwu": (532, 2, "d"), "sgls": (536, 4, "x"), "subnqn": (768, 256, "s"),
}
# Identify Namespace.
NAMESPACE = {
    "nsze": (0, 8, "x"), "ncap": (8, 8, "x"), "nuse": (16, 8, "x"), "nsfeat": (24, 1, "x"),
    "nlbaf": (25, 1, "d"), "flbas": (26, 1, "x"), "mc": (27, 1, "x"), "dpc": (28, 1, "x"),
    "dps": (29, 1, "x"), "nmic": (30, 1, "d"), "rescap": (31, 1, "d"), "fpi": (32, 1, "d"),
    "dlfeat": (33, 1, "d"), "nawun": (34, 2, "d"), "nawupf": (36, 2, "d"), "nacwu": (38, 2, "d"),
}
ONCS_DSM = 1 << 2  # Identify Controller's ONCS: Dataset Management
LBAF_BASE = 128  # LBA format n at LBAF_BASE + 4n: metadata size 15:0, LBADS 23:16, RP 25:24


def _value(page: bytes, offset: int, size: int, kind: str):
    raw = page[offset:offset + size]
    if kind == "s":
        return raw.split(b"\0", 1)[0].decode("ascii", "replace")
    if kind == "ieee":
        return f"{raw[2]:02x}{raw[1]:02x}{raw[0]:02x}"
    return int.from_bytes(raw, "little")


def fields(page: bytes, layout: dict) -> dict:
    """The page's fields by name: numbers, or text as the page has it (padding kept)."""
    if len(page) != 4096:
        raise ValueError(f"an Identify page is 4,096 bytes, not {len(page):,}")
    return {name: _value(page, off, size, kind) for name, (off, size, kind) in layout.items()}


def _hex(value: int) -> str:
    return f"{value:#x}" if value else "0"  # C's %#x prints 0 as "0"


def _line(name: str, value, kind: str, width: int) -> str:
    return f"{name:<{width}}: {_hex(value) if kind == 'x' else value}"


def controller_lines(page: bytes) -> list[str]:
    """`nvme id-ctrl -H`'s line for each field of CONTROLLER."""
    f = fields(page, CONTROLLER)
    return [_line(n, f[n], CONTROLLER[n][2], 10) for n in CONTROLLER]


def lba_formats(page: bytes) -> list[dict]:
    """Each LBA format the namespace has: metadata bytes, data bytes, relative performance."""
    count = page[25] + 1
    out = []
    for i in range(count):
        v = int.from_bytes(page[LBAF_BASE + 4 * i:LBAF_BASE + 4 * i + 4], "little")
        out.append({"ms": v & 0xFFFF, "ds": 1 << ((v >> 16) & 0xFF), "rp": (v >> 24) & 3})
    return out


RELATIVE_PERFORMANCE = ["Best", "Better", "Good", "Degraded"]


def namespace_lines(page: bytes) -> list[str]:
    """`nvme id-ns -H`'s line for each field of NAMESPACE, and each LBA format's."""
    f = fields(page, NAMESPACE)
    lines = [_line(n, f[n], NAMESPACE[n][2], 8) for n in NAMESPACE]
    in_use = f["flbas"] & 0xF
    for i, lf in enumerate(lba_formats(page)):
        lines.append(f"LBA Format {i:2d} : Metadata Size: {lf['ms']:<3d} bytes - Data Size: {lf['ds']} bytes - "
                     f"Relative Performance: {_hex(lf['rp'])} {RELATIVE_PERFORMANCE[lf['rp']]}"
                     + (" (in use)" if i == in_use else ""))
    return lines


def run_facts(controller: bytes, namespace: bytes) -> dict:
    """What run.json's `identify` keeps of an NVMe drive: the facts a SATA run's IDENTIFY
    gives under the same names (the capacity in 512-byte blocks under lba48_sectors: the
    namespace's NSZE; `trim` ONCS's Dataset Management), then the NVMe ones, and every field
    of both pages as CONTROLLER and NAMESPACE name them (but the subsystem NQN)."""
    c, n = fields(controller, CONTROLLER), fields(namespace, NAMESPACE)
    return {"model": c["mn"].strip(), "serial": c["sn"].strip(), "firmware": c["fr"].strip(),
            "lba48_sectors": n["nsze"], "trim": bool(c["oncs"] & ONCS_DSM),
            "volatile_write_cache": bool(c["vwc"] & 1), "mdts_bytes": (4096 << c["mdts"]) if c["mdts"] else None,
            "atomic_write_blocks": c["awupf"] + 1,
            "controller": {k: v for k, v in c.items() if k != "subnqn"}, "namespace": n}
