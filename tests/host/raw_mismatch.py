"""The raw mismatch plan (issue 58, section 5): a representative command of each protocol
sent under every command protocol, for tests/rtl/test_raw_mismatch.py (the model against
the gateware) and tests/host/test_stamp_order.py (its stamps in order).

Each command is followed by a COMRESET (a PIO-in answer under a queued protocol, by a
queued read first: `followed`): a pair the rig cannot finish ends TIMEOUT, and one
that ends early (a queued command under a non-queued protocol ends at its releasing D2H)
leaves the drive's data phase and SDB on the wire; the reset gives the next pair a clean
link and drive on both targets. Every command has a 1 ms timeout, so that the pairs the rig
waits on forever cost the rtl run little."""
from __future__ import annotations

from fisrig import plan as plan_mod
from fisrig.report.compare import apart

# The protocols a command runs (host/fisrig/cli/raw.py PROTOCOLS but power and link, which
# are not ATA protocols: a "command" sent as either is a power or link operation).
PROTOCOLS = ("non_data", "pio_in", "pio_out", "dma_in", "dma_out", "fpdma_in", "fpdma_out")
# A command of each protocol, as the drive answers it (and its LBA): FLUSH CACHE, IDENTIFY
# DEVICE and READ LOG EXT 10h, SECURITY SET PASSWORD (the drive's one PIO data-out command
# that changes nothing a later command reads), READ and WRITE DMA EXT, READ and WRITE FPDMA
# QUEUED, and DATA SET MANAGEMENT (TRIM: FEATURES 1, its one block of ranges the VM's zeros,
# which trim nothing), the drive's one data-out command that reads what it was sent. One
# sector each (COUNT 1; FEATURES 1 for the queued ones).
COMMANDS = ((0xE7, "non_data", 0), (0xEC, "pio_in", 0), (0x2F, "pio_in", 0x10), (0xF1, "pio_out", 0),
            (0x25, "dma_in", 4096), (0x35, "dma_out", 4096), (0x06, "dma_out", 0), (0x60, "fpdma_in", 4096),
            (0x61, "fpdma_out", 4096))
STAMPS = ("t_accept_ns", "t_setup_ns", "t_data_first_ns", "t_data_last_ns", "t_status_ns")
TOLERANCE_PCT = 2.0


def label(command: int, protocol: str) -> str:
    return f"{command:#04x} as {protocol}"


def followed(answer: str, protocol: str) -> bool:
    """A queued H2D the drive answers as PIO in: no D2H releases it, and the gateware held
    every later command back (until a COMRESET) where it waited for one. A queued read
    follows it before the reset, and must go."""
    return answer == "pio_in" and protocol.startswith("fpdma")


def follow_label(command: int, protocol: str) -> str:
    return label(command, protocol) + " then read"


def labels() -> set[str]:
    """Every command record's label."""
    return {label(c, p) for c, _, _ in COMMANDS for p in PROTOCOLS} | \
        {follow_label(c, p) for c, answer, _ in COMMANDS for p in PROTOCOLS if followed(answer, p)}


def plan() -> plan_mod.Plan:
    steps = []
    for command, answer, lba in COMMANDS:
        for protocol in PROTOCOLS:
            steps.append({"do": "raw", "label": label(command, protocol), "command": command, "protocol": protocol,
                          "lba": lba, "count": 1, "features": 1, "expect": "any", "timeout_ms": 1})
            if followed(answer, protocol):
                steps.append({"do": "raw", "label": follow_label(command, protocol), "command": 0x60,
                              "lba": 4096, "features": 1, "expect": "any", "timeout_ms": 1})
            steps.append({"do": "comreset", "label": label(command, protocol) + " reset"})
    return plan_mod.from_dict({"plan": {"name": "raw-mismatch", "profile": "fast-1gb",
                                        "description": "each protocol's command sent under every protocol"},
                               "step": steps}, "<raw-mismatch>")


def commands(rows: list[dict]) -> dict[str, dict]:
    """Each pair's command record, by its label."""
    return {str(r["marker"]): r for r in rows if r["kind"] == "command"}


def relative(r: dict) -> tuple[int, ...]:
    """The stamps after the H2D, in ns (0 where the phase was not stamped)."""
    return tuple(r[k] - r["t_h2d_ns"] if r[k] else 0 for k in STAMPS)


def answer(r: dict) -> tuple:
    return (r["result"], r["status"], r["error"], r["data_dwords"])


def differ(model: dict, rtl: dict, align_pairs: int = 2) -> list[str]:
    """How a pair's record on the model differs from the gateware's: its answer (result,
    status, error, data dwords), or a stamp stamped on one side only, or more than 2% and
    a tick and `align_pairs` ALIGN pairs apart (compare.apart)."""
    out = []
    if answer(model) != answer(rtl):
        out.append(f"answer {answer(model)} against {answer(rtl)}")
    for name, a, b in zip(STAMPS, relative(model), relative(rtl)):
        if (a == 0) != (b == 0) or (abs(a - b) > TOLERANCE_PCT / 100 * abs(b) and apart(a, b, align_pairs)):
            out.append(f"{name[2:-3]} {a} against {b} ns after the H2D")
    return out


def table(model: dict[str, dict], rtl: dict[str, dict]) -> list[str]:
    """Every pair, model against rtl: the result and the stamps after the H2D."""
    def cell(r):
        return f"{r['result']:<9} {r['status']:#04x}/{r['error']:#04x} dw{r['data_dwords']:<4} " + \
            " ".join(f"{v:>7}" for v in relative(r))
    head = f"{'pair':<20} {'model: result st/er dwords  accept   setup  d.first  d.last  status':<62} | rtl"
    return [head] + [f"{k:<20} {cell(model[k]):<62} | {cell(rtl[k])}{'  <<' if differ(model[k], rtl[k]) else ''}"
                     for k in model if k in rtl]
