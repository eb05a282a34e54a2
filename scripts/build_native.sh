#!/usr/bin/env bash
# `make native`: the native parts (CMakeLists.txt) in BUILD, by default compiled with gcc's
# profile of the model's own run (PGO=1; PGO=0 builds plain -O3).
#
# Why: the model's time is branches and code laid out for the common case more than
# arithmetic; the profile of a short training run (sim/model/training: the main job's and the
# JEDEC test's steps on a 16 GB drive, about 6 s) made the main job's model 13% faster and
# the JEDEC test's NCQ+TRIM pass 16% faster, records byte for byte the same (2026-11-28).
#
# How: BUILD/pgo/gen is an instrumented build of fisrig-model and fisrig-drive; the training
# (scripts/model_pgo_train.py) writes the profile into BUILD/pgo/data; BUILD is then
# compiled with it. The training runs again when the sources it covers or the compiler
# change (BUILD/pgo/data/digest), and the objects the old or new profile covered are
# compiled again. An edit to sim/ therefore costs a training run and those objects
# (about 40 s here): for a quick edit-and-ctest loop use a build of its own,
# `make native BUILD=build-dev PGO=0`.
#
#   build_native.sh BUILD JOBS PGO
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1 jobs=$2 pgo=$3

configure() {  # build directory, then cache settings
  local dir=$1
  shift
  mkdir -p "$dir"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >"$dir/cmake.log" 2>&1 ||
    { cat "$dir/cmake.log" >&2; echo "build_native: cmake failed in $dir" >&2; exit 1; }
}
case "$pgo" in
  0)
    configure "$build" -DFISRIG_PGO=off
    exec ninja -C "$build" -j "$jobs" ;;
  1) ;;
  *) echo "build_native: PGO must be 0 or 1, not '$pgo'" >&2; exit 2 ;;
esac

mkdir -p "$build"
root=$(cd "$build" && pwd)
gen=$root/pgo/gen
data=$root/pgo/data
# What the profile depends on: the sources of the model and the drive, the training, the
# compiler. (A change to the Python compiler changes the training program a little, not
# which code the profile describes: it does not retrain.)
digest=$({ c++ --version
           find CMakeLists.txt sim/CMakeLists.txt sim/ssd sim/sata sim/nvme sim/model sim/bench firmware/core -type f \
             \( -name '*.cc' -o -name '*.c' -o -name '*.h' -o -name '*.toml' -o -name CMakeLists.txt \) \
             -print0 | sort -z | xargs -0 sha256sum
           sha256sum scripts/model_pgo_train.py; } | sha256sum | cut -c1-16)

covered=()
if [ "$(cat "$data/digest" 2>/dev/null)" != "$digest" ]; then
  echo "build_native: training the model for gcc's profile (sources changed or first build)"
  shopt -s nullglob
  covered+=("$data"/*.gcda)  # objects compiled with the old profile
  configure "$gen" -DFISRIG_PGO=generate -DFISRIG_PGO_DATA="$data"
  ninja -C "$gen" -j "$jobs" fisrig-model fisrig-drive
  rm -rf "$data"
  mkdir -p "$data"
  .venv/bin/python scripts/model_pgo_train.py "$gen"
  covered+=("$data"/*.gcda)
  echo "$digest" >"$data/digest"
fi
configure "$build" -DFISRIG_PGO=use -DFISRIG_PGO_DATA="$data"
# A profile's file is named by its object's path under the build (-fprofile-prefix-path,
# '/' as '#'): that object is compiled again with the new profile.
for f in "${covered[@]}"; do
  o=$(basename "$f" .gcda)
  rm -f "$root/${o//#//}.o"
done
exec ninja -C "$build" -j "$jobs"
