"""The simulated controller's TLP codec (sim/nvme's tlp.h, through the fisrig-tlp tool) held
to an independent one, cocotbext-pcie's: 400 TLPs of every kind the rig's link carries (memory
reads and writes with 32- and 64-bit addresses, Type 0 configuration reads and writes,
completions with and without data), made at random by cocotbext-pcie, are decoded by ours
to the same fields, and encoded by ours from those fields to the same bytes; malformed ones
are refused with why; and the codec's beats are beats.py's (the gateware tests' own)."""
from __future__ import annotations

import random
import subprocess

from cocotbext.pcie.core.tlp import CplStatus, PcieId, Tlp, TlpType

from fisrig.targets.native_tools import build_dir
from fisrig_hw import contract as c
from fisrig_hw.pcie.beats import tlp_to_beats

FIELDS = ("fmt_type", "tc", "attr", "td", "ep", "length", "requester_id", "completer_id", "tag", "first_be",
          "last_be", "address", "status", "bcm", "byte_count", "lower_address", "data")
CODE = {TlpType.MEM_READ: c.FISRIG_PCIE_TLP_MRD32, TlpType.MEM_READ_64: c.FISRIG_PCIE_TLP_MRD64,
        TlpType.MEM_WRITE: c.FISRIG_PCIE_TLP_MWR32, TlpType.MEM_WRITE_64: c.FISRIG_PCIE_TLP_MWR64,
        TlpType.CFG_READ_0: c.FISRIG_PCIE_TLP_CFGRD0, TlpType.CFG_WRITE_0: c.FISRIG_PCIE_TLP_CFGWR0,
        TlpType.CPL: c.FISRIG_PCIE_TLP_CPL, TlpType.CPL_DATA: c.FISRIG_PCIE_TLP_CPLD}


def tool(mode: str, lines: list[str]) -> list[str]:
    out = subprocess.run([str(build_dir() / "bin" / "fisrig-tlp"), mode], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def pid(rng) -> PcieId:
    return PcieId(rng.randrange(256), rng.randrange(32), rng.randrange(8))


def random_tlp(rng: random.Random) -> Tlp:
    kind = rng.choice(list(CODE))
    t = Tlp()
    t.fmt_type = kind
    t.requester_id, t.tag, t.tc = pid(rng), rng.randrange(256), rng.randrange(8)
    t.ep = rng.random() < 0.1
    if kind in (TlpType.MEM_READ, TlpType.MEM_READ_64, TlpType.MEM_WRITE, TlpType.MEM_WRITE_64):
        wide = kind in (TlpType.MEM_READ_64, TlpType.MEM_WRITE_64)
        addr = rng.randrange(1 << 32, 1 << 48) if wide else rng.randrange(0, 1 << 32)
        size = rng.randrange(1, 512)
        addr = min(addr, (addr | 0xFFF) - size + 1)  # no request crosses a 4 KiB boundary
        if kind in (TlpType.MEM_WRITE, TlpType.MEM_WRITE_64):
            t.set_addr_be_data(addr, bytes(rng.randrange(256) for _ in range(size)))
        else:
            t.set_addr_be(addr, size)
    elif kind in (TlpType.CFG_READ_0, TlpType.CFG_WRITE_0):
        t.completer_id = pid(rng)
        reg = rng.randrange(1024) * 4
        if kind == TlpType.CFG_WRITE_0:
            t.set_addr_be_data(reg, bytes(rng.randrange(256) for _ in range(4)))
        else:
            t.set_addr_be(reg, 4)
    else:
        t.completer_id = pid(rng)
        t.status = rng.choice([CplStatus.SC, CplStatus.UR, CplStatus.CRS, CplStatus.CA])
        t.byte_count = rng.randrange(1, 4097)
        t.lower_address = rng.randrange(128)
        if kind == TlpType.CPL_DATA:
            t.set_data(bytes(rng.randrange(256) for _ in range(4 * rng.randrange(1, 65))))
            t.byte_count = max(t.byte_count, 4 * t.length)
    return t


def fields_of(t: Tlp) -> dict:
    cfg = t.fmt_type in (TlpType.CFG_READ_0, TlpType.CFG_WRITE_0)
    cpl = t.fmt_type in (TlpType.CPL, TlpType.CPL_DATA)
    return {
        "fmt_type": CODE[t.fmt_type], "tc": int(t.tc), "attr": int(t.attr), "td": int(t.td), "ep": int(t.ep),
        "length": t.length % 1024, "requester_id": int(t.requester_id),
        "completer_id": int(t.completer_id) if cfg or cpl else 0, "tag": t.tag,
        "first_be": 0 if cpl else t.first_be, "last_be": 0 if cpl else t.last_be,
        "address": 0 if cpl else t.address, "status": int(t.status) if cpl else 0, "bcm": int(t.bcm) if cpl else 0,
        "byte_count": t.byte_count if cpl else 0, "lower_address": t.lower_address if cpl else 0,
        "data": bytes(t.data).hex(),
    }


def parse(line: str) -> dict:
    out = {}
    for kv in line.split():
        k, v = kv.split("=", 1)
        out[k] = v if k == "data" else int(v)
    return out


def test_ours_decodes_cocotbext_pcies_tlps_to_their_fields_and_encodes_them_to_their_bytes():
    rng = random.Random(63)
    tlps = [random_tlp(rng) for _ in range(400)]
    assert {t.fmt_type for t in tlps} == set(CODE)
    packed = [t.pack() for t in tlps]
    decoded = tool("decode", [p.hex() for p in packed])
    for t, line in zip(tlps, decoded):
        assert parse(line) == fields_of(t), (t, line)
    encoded = tool("encode", [" ".join(f"{k}={v}" for k, v in fields_of(t).items()) for t in tlps])
    for t, p, line in zip(tlps, packed, encoded):
        assert bytes.fromhex(line) == p, t
        back = Tlp.unpack(bytes.fromhex(line))
        assert fields_of(back) == fields_of(t)


def test_malformed_tlps_are_refused_with_why():
    wr = Tlp()
    wr.fmt_type, wr.requester_id = TlpType.MEM_WRITE, PcieId(1, 0, 0)
    wr.set_addr_be_data(0x1000, bytes(8))
    good = wr.pack()
    msg = bytes.fromhex("30000000" "01000020" "00000000" "00000000")  # a message (PM_PME) to the root complex
    lines = tool("decode", [good[:-4].hex(),            # a payload short of its length
                            (good + bytes(4)).hex(),    # a dword past it
                            good[:10].hex(),            # not whole dwords
                            msg.hex(),                  # a message: not a kind the rig's link carries
                            "zz"])
    assert lines[0].startswith("error: a TLP of 16 bytes whose header says 20")
    assert lines[1].startswith("error: a TLP of 24 bytes whose header says 20")
    assert lines[2].startswith("error: a TLP of 10 bytes")
    assert lines[3].startswith("error: a TLP of Fmt/Type")
    assert lines[4] == "error: not hex"


def test_its_beats_are_the_gateware_tests_beats():
    rng = random.Random(64)
    packed = [random_tlp(rng).pack() for _ in range(100)]
    for p, line in zip(packed, tool("beats", [p.hex() for p in packed])):
        ours = [tuple(int(x, 16) for x in beat.split("/")) for beat in line.split()]
        assert ours == tlp_to_beats(p)
