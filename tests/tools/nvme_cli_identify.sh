#!/usr/bin/env bash
# The simulated NVMe controller decoded by Debian's nvme-cli, as a user decodes a real
# drive's: nvme-cli sends its admin commands through the controller's admin queue (the
# preloaded library answers its ioctls: tests/nvme/nvme_ioctl_preload.cc), and its id-ctrl,
# id-ns, smart-log and get-feature must read our model, serial, MDTS, ONCS (DSM and Write
# Zeroes), VWC, DLFEAT, the LBA format and the features as we set them.
set -euo pipefail
preload=$1
command -v nvme >/dev/null || { echo "nvme-cli is not installed (run scripts/bootstrap.sh)"; exit 1; }
run() { LD_PRELOAD=$preload FISRIG_NVME_PROFILE=tiny-1gb nvme "$@" /dev/null; }
fail=0
expect() {  # pattern, what, text
  if grep -qE -- "$1" <<<"$3"; then echo "ok: $2"; else echo "MISSING: $2 (/$1/)"; fail=1; fi
}
ctrl=$(run id-ctrl -o json)
ns=$(run id-ns -n 1 -o json)
ctrl_h=$(run id-ctrl -H)
ns_h=$(run id-ns -n 1 -H)
python3 - "$ctrl" "$ns" <<'PY' || fail=1
import json, sys
c, n = json.loads(sys.argv[1]), json.loads(sys.argv[2])
checks = [
    ("model", c["mn"].rstrip() == "fisrig SIM-T1 tiny"),
    ("serial", c["sn"].rstrip() == "FSRT001000000001"),
    ("MDTS 2^5 pages", c["mdts"] == 5),
    ("ONCS: Compare, DSM, Write Zeroes", c["oncs"] == 0x0D),
    ("a volatile write cache", c["vwc"] & 1 == 1),
    ("SQES and CQES", (c["sqes"], c["cqes"]) == (0x66, 0x44)),
    ("one namespace", c["nn"] == 1),
    ("version 2.0", c["ver"] == 0x20000),
    ("namespace size", n["nsze"] == n["ncap"] == 1953120),
    ("DLFEAT: zeros after deallocate, Write Zeroes may deallocate", n["dlfeat"] == 0x09),
    ("LBA format 0: 512-byte blocks", n["nlbaf"] == 0 and n["lbafs"][0]["ds"] == 9),
]
for what, ok in checks:
    print(("ok: " if ok else "WRONG: ") + what)
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
expect 'Write Zeroes Supported' "id-ctrl -H: Write Zeroes" "$ctrl_h"
expect 'Data Set Management Supported' "id-ctrl -H: Dataset Management" "$ctrl_h"
expect 'Volatile Write Cache Present' "id-ctrl -H: volatile write cache" "$ctrl_h"
expect 'Bytes Read From a Deallocated Logical Block and its Metadata are 0x00' "id-ns -H: deallocated blocks read zeros" "$ns_h"
expect 'Data Size: 512 bytes.*in use' "id-ns -H: the LBA format in use" "$ns_h"
expect 'Current value:0x00000001' "get-feature: the write cache on" "$(run get-feature -f 6)"
expect '"unsafe_shutdowns":"0"' "smart-log: no unsafe shutdown" "$(run smart-log -o json)"
expect 'Invalid Log Page' "get-log of a page there is not: its status" "$(run get-log --log-id=0x7f --log-len=512 2>&1 || true)"
exit $fail
