#!/usr/bin/env bash
# `fisrig-drive bench --quick` must produce every figure the drive issue names, each a
# positive number, in a form scripts/bench_collect.py accepts.
set -euo pipefail
tool=$1
collect=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tool" bench --quick 2>/dev/null | python3 "$collect" "$tmp/bench.json" >/dev/null
python3 - "$tmp/bench.json" <<'PY'
import json, sys
figures = json.load(open(sys.argv[1]))
names = ["drive.cmdapi_cmds_per_s", "drive.wa_uniform_op7", "drive.wa_uniform_op13",
         "drive.wa_uniform_op28", "drive.seq_write_mbps_clean", "drive.seq_write_mbps_tortured",
         "drive.seq_write_mbps_idle_recovered", "drive.seq_write_mbps_trimmed",
         "drive.seq_read_mbps_clean_compressing", "drive.seq_read_mbps_tortured_compressing",
         "drive.seq_write_mbps_tortured_compressing", "drive.rss_mb_256gb_full"]
bad = [n for n in names if n not in figures or not figures[n]["value"] > 0
       or not figures[n]["unit"] or not figures[n]["what"]]
for n in names:
    print(n, figures.get(n, {}).get("value"))
if bad:
    sys.exit("missing or non-positive: " + ", ".join(bad))
wa = [figures[f"drive.wa_uniform_op{p}"]["value"] for p in (7, 13, 28)]
if not wa[0] > wa[1] > wa[2] > 1:
    sys.exit(f"write amplification must fall as over-provisioning grows: {wa}")
PY
