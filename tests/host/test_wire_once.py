"""The wire's numbers are defined once, in the firmware core's fisrig/ata.h (issue 59): the
FIS types, the ATA opcodes and SMART subcommands, the status and error bits and the log
addresses. The C and C++ sides include it; the Python sides take it through
hw/fisrig_hw/contract.py. This greps the tree for a second definition of any of them: a
name that ends like one of ata.h's or shares a word with it (REG_H2D, kReadDmaExt, SEND_FPDMA,
DSM) given its number, in Python, C or C++; and outside the tests, a table of three or more
opcodes written as numbers."""
import re
from pathlib import Path

import pytest

from fisrig.sata.ata import PROTOCOL_OF

ROOT = Path(__file__).resolve().parents[2]
ATA_H = ROOT / "firmware" / "core" / "include" / "fisrig" / "ata.h"
PREFIXES = ("FISRIG_FIS_", "FISRIG_ATA_", "FISRIG_SMART_", "FISRIG_LOG_")
TREES = ("host", "hw", "sim", "firmware", "tests", "scripts", "boards")
SUFFIXES = {".py", ".c", ".h", ".cc", ".cpp"}
NUMBER = r"(0x[0-9A-Fa-f]+|\d+)[uU]?"
ASSIGN = re.compile(r"^\s*(?:(?:static\s+)?(?:constexpr|const)\s+[\w:]+\s+)?([\w, ]+?)\s*=\s*(" + NUMBER + r"(?:\s*,\s*" + NUMBER + r")*)\s*[;#/]?")
DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)\s+" + NUMBER + r"\b")
HEX = r"0x[0-9A-Fa-f]{2}"
TABLE = re.compile(r"[{(\[]\s*" + HEX + r"(?:\s*:\s*\"\w+\")?(?:\s*,\s*" + HEX + r"(?:\s*:\s*\"\w+\")?){2,}\s*,?\s*[})\]]")


GENERIC = {"EXT", "QUEUED", "DATA", "SET", "DEVICE", "K"}  # tokens that say nothing alone
SYNONYMS = {"DSM": {"MANAGEMENT"}, "SDB": {"BITS"}}


def _tokens(name: str) -> set[str]:
    """The words of REG_H2D or kReadDmaExt, upper case, with the abbreviations' meanings."""
    words = {w.upper() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z0-9]+(?![a-z])", name.replace("_", " "))}
    for w in list(words):
        words |= SYNONYMS.get(w, set())
    return words - GENERIC


def _norm(name: str) -> str:
    """READ_DMA_EXT, kReadDmaExt and ReadDmaExt alike: lower case, no underscores, no k."""
    name = re.sub(r"^k(?=[A-Z])", "", name)
    return name.replace("_", "").lower()


def _wire() -> dict[str, int]:
    """{short name: value} of ata.h's numbers (not its _PROTO names), READ_DMA_EXT: 0x25."""
    out = {}
    for m in re.finditer(r"^#define (FISRIG_\w+) (0x[0-9A-Fa-f]+)u", ATA_H.read_text(), re.M):
        name = m.group(1)
        prefix = next((p for p in PREFIXES if name.startswith(p)), None)
        if prefix and not name.endswith("_PROTO"):
            out[name[len(prefix):]] = int(m.group(2), 16)
    return out


def _sources():
    for tree in TREES:
        for f in (ROOT / tree).rglob("*"):
            if f.suffix in SUFFIXES and f.is_file() and "__pycache__" not in f.parts:
                if f not in (ATA_H, Path(__file__).resolve(), ROOT / "hw" / "fisrig_hw" / "contract.py"):
                    yield f


def _definitions(text: str, wire: dict[str, int]):
    for n, line in enumerate(text.splitlines(), 1):
        pairs = []
        if m := DEFINE.match(line):
            pairs = [(m.group(1), m.group(2))]
        elif m := ASSIGN.match(line):
            names = [x.strip() for x in m.group(1).split(",")]
            values = [v.strip().rstrip("uU") for v in m.group(2).split(",")]
            pairs = list(zip(names, values)) if len(names) == len(values) else []
        for name, value in pairs:
            v = int(value, 0)
            if name.startswith("FISRIG_"):
                continue
            for short, number in wire.items():
                # Its name, or a word of it (SEND_FPDMA, IDENTIFY, DSM), and its number.
                if v == number and (_norm(name).endswith(_norm(short)) or _tokens(name) & _tokens(short)):
                    yield n, f"{name} = {value} (ata.h's {short})"
                    break


def test_ata_h_holds_what_the_host_reads():
    wire = _wire()
    assert wire["REG_H2D"] == 0x27 and wire["READ_DMA_EXT"] == 0x25 and wire["STATUS_ERR"] == 0x01
    assert PROTOCOL_OF[0x25] == "dma_in" and PROTOCOL_OF[0x61] == "fpdma_out" and 0xB0 not in PROTOCOL_OF


def test_no_second_definition_of_a_wire_number():
    wire = _wire()
    opcodes = set(PROTOCOL_OF) | {0xB0}
    found = []
    for f in _sources():
        text = f.read_text(errors="replace")
        rel = f.relative_to(ROOT)
        found += [f"{rel}:{n}: {what}" for n, what in _definitions(text, wire)]
        # A test's expected sequence of opcodes is an expectation, not a table to keep.
        for m in TABLE.finditer(text) if rel.parts[0] != "tests" else ():
            values = {int(h, 16) for h in re.findall(HEX, m.group(0))}
            if values <= opcodes:
                found.append(f"{rel}:{text[:m.start()].count(chr(10)) + 1}: a table of opcodes as numbers: {m.group(0)[:60]}")
    assert not found, "defined again (take it from fisrig/ata.h or fisrig_hw.contract):\n" + "\n".join(found)


@pytest.mark.parametrize("line,hit", [
    ("REG_H2D = 0x27", True), ("constexpr uint8_t kReadDmaExt = 0x25;", True),
    ("#define ATA_READ_DMA_EXT 0x25u", True), ("STATUS_ERR, ERROR_ABRT = 0x01, 0x04", True),
    ("SEND_FPDMA = 0x64", True), ("DSM, FLUSH_EXT, IDENTIFY = 0x06, 0xEA, 0xEC", True),
    ("REG_H2D = _c.FISRIG_FIS_REG_H2D", False), ("count = 0x25", False), ("kReadDmaExt = 0x26", False),
])
def test_the_grep_finds_a_definition(line, hit):
    assert bool(list(_definitions(line, _wire()))) is hit
