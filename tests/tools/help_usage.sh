#!/usr/bin/env bash
# fisrig-drive SUB --help (and -h) prints that subcommand's usage on stdout and exits 0, for
# every subcommand the full usage lists; a bad option is one line on stderr and exit 2.
set -uo pipefail
tool=$1
fail=0
subs=$("$tool" --help | sed -E 's/^(usage:)? +fisrig-drive ([a-z-]+).*/\2/;t;d')
[ -n "$subs" ] || { echo "fisrig-drive --help lists no subcommands"; exit 1; }
for sub in $subs; do
  for flag in --help -h; do
    out=$("$tool" "$sub" "$flag" 2>&1)
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q "^usage: fisrig-drive $sub" <<<"$out"; then
      echo "fisrig-drive $sub $flag: exit $rc, said: $out"
      fail=1
    fi
  done
done
err=$("$tool" identify --profle x 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 2 ] || [ "$(wc -l <<<"$err")" -ne 1 ] || ! grep -q -- "--profle" <<<"$err"; then
  echo "a misspelt option: exit $rc, said: $err"
  fail=1
fi
exit $fail
