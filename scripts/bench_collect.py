#!/usr/bin/env python3
"""Gathers benchmark figures (JSON lines on stdin) into build/bench.json and prints a table.

Each line is {"name", "value", "unit", "what"}. Figures already in the file from other
benchmarks are kept; a figure measured again replaces the old one.
"""
import json
import sys
from pathlib import Path


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "build/bench.json")
    figures = json.loads(out.read_text()) if out.exists() else {}
    fresh = []
    for line in sys.stdin:
        line = line.strip()
        if not line.startswith("{"):
            continue
        rec = json.loads(line)
        figures[rec["name"]] = {"value": rec["value"], "unit": rec["unit"], "what": rec["what"]}
        fresh.append(rec["name"])
    if not fresh:
        print("bench: no figures were produced", file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    width = max(len(n) for n in fresh)
    for name in fresh:
        f = figures[name]
        print(f"{name:<{width}}  {f['value']:>14.6g} {f['unit']:<11} {f['what']}")
    print(f"bench: {len(fresh)} figures written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
