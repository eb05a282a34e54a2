#!/usr/bin/env bash
# Installs what fisrig's native build and tests need, and only what is missing:
# Debian packages through apt-get. Safe to run again; prints nothing when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian package -> why fisrig needs it.
declare -A WHY=(
  [cmake]="configures the native build"
  [ninja-build]="builds the native parts"
  [g++]="compiles the simulated drive (C++20)"
  [libgtest-dev]="GoogleTest, the native unit tests"
  [libtomlplusplus-dev]="reads drive profiles (TOML)"
  [hdparm]="decodes the drive's IDENTIFY data in a test, as users do"
  [nvme-cli]="decodes the NVMe controller's Identify pages, logs and features in a test, as users do"
  [fio]="its json+ tool reads our summary.json in a test"
  [python3-six]="fio_jsonplus_clat2csv imports it"
  [python3]="collects benchmark figures; runs host/ (in .venv)"
  [verilator]="simulates the gateware for the cocotb benches (Debian 5.006)"
  [gcc-riscv64-unknown-elf]="builds the LiteX BIOS for the rig SoC's VexRiscv"
  [meson]="builds picolibc for the LiteX BIOS"
  [libevent-dev]="litex_sim's event loop"
  [libjson-c-dev]="litex_sim's configuration, and our drive module's arguments"
  [zlib1g-dev]="litex_sim links it"
  [valgrind]="callgrind counts the benches' instructions a command where the CPU exposes no counter; its callgrind.h marks the counted region"
  [chromium]="a test opens report.html in a real browser (headless) and keeps its screenshot"
  [clang-14]="builds the firmware VM's libFuzzer target (make fuzz, and 10 s of it in the tests)"
  [libclang-rt-14-dev]="clang's libFuzzer and sanitizer runtimes"
  [yosys]="synthesizes each board's rig SoC for its resource report (fisrig_boards.build --synth)"
  [device-tree-compiler]="Zephyr's build of the rig firmware compiles its devicetree (make zephyr)"
  [gperf]="Zephyr's build makes its kernel object tables with it (make zephyr)"
  [blktrace]="its blkparse prints the binary traces a test writes, as users' blktraces are printed, for the trace reader"
)

missing=()
for pkg in "${!WHY[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python packages into the project's .venv, pinned, then our three packages, editable, so
# that tests, scripts and the fisrig command import them by name: hw/ (fisrig_hw, the
# gateware), boards/ (fisrig_boards) and host/ (fisrig). Redone when the pins or a pyproject
# change. The build backend is the venv's own setuptools (no build isolation: nothing
# unpinned is fetched).
venv=.venv
stamp=$venv/.requirements.sha256
want=$(cat host/requirements.txt hw/pyproject.toml boards/pyproject.toml host/pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -x $venv/bin/python ] || [ "$(cat $stamp 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing host/requirements.txt, hw/, boards/ and host/ into $venv" >&2
  [ -x $venv/bin/python ] || python3 -m venv $venv
  $venv/bin/pip install -q --disable-pip-version-check -r host/requirements.txt
  $venv/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e hw -e boards -e host
  echo "$want" > $stamp
fi
