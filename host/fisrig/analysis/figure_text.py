"""How the headline and report.html write a figure, one way for both: counts and rates with
thousands separators, a latency in microseconds with one decimal below 100 us (a 4 KiB
read's 45.3 us and 36.6 us are apart; 2,074 us and 2,075 us are not)."""
from __future__ import annotations


def count(n: int | float) -> str:
    """A count or a rate (IOPS, commands a second): whole numbers, separated."""
    return f"{n:,.0f}"


# The targets whose drive is simulated: their times are simulated time, and say so.
SIMULATED_TARGETS = ("model", "rtl")


def clock_word(meta: dict) -> str:
    """"simulated " for a run (run.json `meta`) on a target that simulates the drive, else ""."""
    return "simulated " if meta.get("target") in SIMULATED_TARGETS else ""


def us(ns: float) -> str:
    """A latency in ns as microseconds: `45.3 us`, `2,074 us`."""
    v = ns / 1e3
    return f"{v:.1f} us" if v < 100 else f"{v:,.0f} us"


def us_number(ns: float) -> str:
    """us() without its unit, for a table whose column names it."""
    return us(ns)[:-3]
