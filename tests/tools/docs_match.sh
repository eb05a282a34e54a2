#!/usr/bin/env bash
# docs/drive-model.md must name every profile key and fault knob the drive accepts, and
# every fault knob it names must be one FaultKnobs::set takes (checked through a profile).
set -euo pipefail
tool=$1
doc=$2
fail=0
while read -r key; do
  leaf=${key#faults.}
  if ! grep -qF "\`$key\`" "$doc" && ! grep -qF "\`$leaf\`" "$doc"; then
    echo "docs/drive-model.md does not mention $key"
    fail=1
  fi
done < <("$tool" profile-keys)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
while read -r key; do
  case $key in
    faults.unc|faults.idnf) value='"0+1"' ;;
    faults.*) value='"0"' ;;
    *) continue ;;
  esac
  printf '[faults]\n%s = %s\n' "${key#faults.}" "$value" > "$tmp/p.toml"
  sed -n '/^\[identity\]/,$p' "$(dirname "$doc")/../sim/ssd/profiles/tiny-1gb.toml" >> "$tmp/p.toml"
  "$tool" check-profile "$tmp/p.toml" >/dev/null || { echo "fault knob $key is listed but refused"; fail=1; }
done < <("$tool" profile-keys)
exit $fail
