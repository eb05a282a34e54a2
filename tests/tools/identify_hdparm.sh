#!/usr/bin/env bash
# IDENTIFY DEVICE from fisrig-drive, decoded by Debian's hdparm as a user would decode a
# real drive's: the model, capacity, NCQ depth, TRIM and deterministic zeros after TRIM
# must all come out right, and hdparm must find the integrity word correct.
set -euo pipefail
tool=$1
profile=${2:-consumer-256gb}
command -v hdparm >/dev/null || { echo "hdparm is not installed (run scripts/bootstrap.sh)"; exit 1; }
out=$("$tool" identify --profile "$profile" | hdparm --Istdin)
fail=0
expect() {
  if grep -qE -- "$1" <<<"$out"; then echo "ok: $2"; else echo "MISSING: $2 (/$1/)"; fail=1; fi
}
case $profile in
  consumer-256gb)
    expect 'Model Number: +fisrig SIM-C256 consumer MLC' "model"
    expect 'LBA48 +user addressable sectors: +500118192' "LBA48 capacity (IDEMA 256 GB)"
    ;;
  tiny-1gb)
    expect 'Model Number: +fisrig SIM-T1 tiny' "model"
    expect 'LBA48 +user addressable sectors: +1953120' "LBA48 capacity"
    ;;
esac
expect 'Queue depth: 32' "NCQ queue depth 32"
expect '\*[[:space:]]+Native Command Queueing \(NCQ\)' "NCQ supported"
expect '\*[[:space:]]+Data Set Management TRIM supported \(limit 8 blocks\)' "TRIM supported with its range limit"
expect '\*[[:space:]]+Deterministic read ZEROs after TRIM' "deterministic zeros after TRIM"
expect '\*[[:space:]]+Gen3 signaling speed \(6.0Gb/s\)' "SATA Gen3"
expect '\*[[:space:]]+Write cache' "write cache enabled"
expect 'WRITE_\{DMA\|MULTIPLE\}_FUA_EXT' "FUA"
expect 'Nominal Media Rotation Rate: Solid State Device' "solid state"
expect 'Checksum: correct' "integrity word"
exit $fail
