"""The pieces report.html is built of, for every module that adds a section to it: a value
escaped, HTML made here, a table."""
from __future__ import annotations

from html import escape


def _e(v: object) -> str:
    return escape(str(v), quote=True)


class Markup:
    """HTML this module built itself (its parts escaped already)."""

    def __init__(self, html: str):
        self.html = html


def _table(head: list[str], rows: list[list[object]], numeric: set[int] = frozenset()) -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(
        f'<td{" class=n" if i in numeric else ""}>{c.html if isinstance(c, Markup) else _e(c)}</td>'
        for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"
