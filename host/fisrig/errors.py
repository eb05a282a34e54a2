"""The one kind of refusal: an input that cannot be used, where it is and what is wrong.

Every bad plan, flag, file or field becomes an InputError before anything runs; the
`fisrig` command prints it as one line, `fisrig: WHERE: WHAT`, and exits 2. WHERE is a
file and line (`plan.toml:14`), a flag as typed (`--fault busy_rate=2`) or a path.
"""
from __future__ import annotations

import difflib
from typing import Iterable


def one_line(text: str) -> str:
    """`text` with its control characters escaped (a newline as \\n): what an input put in a
    name or value cannot break a refusal over two lines. Found by tests/fuzz/plan_fuzz.py
    (a step kind of "id\\ntify" was named as it was in the error's "step 1 (...)")."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class InputError(ValueError):
    """An input that cannot be used: `where` it is and what is wrong with it, each on one
    line whatever the input held."""

    def __init__(self, where: str, message: str):
        self.where, self.message = one_line(where), one_line(message)
        super().__init__(f"{self.where}: {self.message}" if self.where else self.message)


def closest(name: object, valid: Iterable[str]) -> str:
    """`(closest: 'fill'; valid: a, b, c)` for an unknown name: the nearest valid one by
    difflib's ratio (always one, so a user sees what was probably meant) and all of them."""
    valid = list(valid)
    near = difflib.get_close_matches(str(name), valid, n=1, cutoff=0.0) if valid else []
    head = f"closest: {near[0]!r}; " if near else ""
    return f"({head}valid: {', '.join(valid)})"
