# fisrig: the entry points a newcomer and CI use. Each target installs what it needs.
BUILD ?= build
JOBS ?= 2
PROFILE ?= consumer-256gb
# 1: the native parts compiled with gcc's profile of the model's training run
# (scripts/build_native.sh says why and how); 0: plain -O3, for a quick edit loop.
PGO ?= 1

.PHONY: all deps native test bench run scenario fuzz zephyr test-zephyr clean

all: native

deps:
	@scripts/bootstrap.sh

native: deps
	scripts/build_native.sh $(BUILD) $(JOBS) $(PGO)

# The main job: the built-in plan reproducing shared/seeds/torture-idle-trim-recovery.txt
# on the model target, ending in a report (runs/torture-idle-trim-recovery/).
# `make run` again replaces the main job's last run (fisrig itself refuses to overwrite one).
run: native
	rm -rf runs/torture-idle-trim-recovery
	bin/fisrig run torture-idle-trim-recovery --out runs/torture-idle-trim-recovery

# The drive alone, without the rig: the same states through fisrig-drive's own host.
scenario: native
	$(BUILD)/bin/fisrig-drive scenario --profile $(PROFILE)

test: native
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	.venv/bin/python -m pytest -q -rs -p no:cacheprovider -n $(JOBS) --dist loadgroup tests/host tests/link tests/hw tests/rtl

bench: native
	{ $(BUILD)/bin/fisrig-drive bench && $(BUILD)/bin/fisrig-nvme-bench && $(BUILD)/bin/fisrig-model-bench && .venv/bin/python scripts/bench_main_job.py \
	  && .venv/bin/python scripts/bench_rtl.py && .venv/bin/python scripts/bench_rtl_nvme.py && .venv/bin/python scripts/bench_litesata_host.py \
	  && .venv/bin/python scripts/bench_targets.py && .venv/bin/python scripts/bench_builtin_plans.py \
	  && .venv/bin/python scripts/bench_jedec.py && .venv/bin/python scripts/bench_power.py \
	  && .venv/bin/python scripts/bench_sweep.py && .venv/bin/python scripts/bench_capture.py \
	  && .venv/bin/python scripts/bench_boards.py && .venv/bin/python scripts/bench_zephyr.py \
	  && .venv/bin/python scripts/fuzz.py --seconds 120; } \
	  | python3 scripts/bench_collect.py $(BUILD)/bench.json

# The firmware VM (libFuzzer) and the plan parser with its compiler (atheris), FUZZ_SECONDS
# each; findings go to tests/fuzz/regressions/ (scripts/fuzz.py). The test suite runs 10 s of
# each, make bench 120 s.
FUZZ_SECONDS ?= 60
fuzz: native
	.venv/bin/python scripts/fuzz.py --seconds $(FUZZ_SECONDS)

# The rig's firmware on Zephyr (firmware/zephyr) for the simulated rig SoC: needs a Zephyr 4.3
# tree at ZEPHYR_BASE (docs/zephyr.md says how ours was had); `fisrig run --target rtl
# --firmware zephyr` then boots it.
zephyr: native
	@test -n "$(ZEPHYR_BASE)" || { echo "make zephyr: set ZEPHYR_BASE to a Zephyr 4.3 tree (docs/zephyr.md)" >&2; exit 2; }
	.venv/bin/python -m fisrig_hw.soc.soc_build
	.venv/bin/python -m fisrig_hw.soc.zephyr_build

# The tests that skip without a Zephyr tree (docs/zephyr.md, "Tests"), one file after the
# other: the Zephyr firmware on the simulated SoC, Zephyr's devicetree library on the overlay,
# the firmware built for each board (the engine's registers where the board's csr.json has
# them) and the boards' synthesis. Run it after a change to firmware/, the SoC or boards/:
# `make test` skips these without ZEPHYR_BASE, and CI has no tree. Refused before anything is
# built when ZEPHYR_BASE is unset.
test-zephyr:
	@test -n "$(ZEPHYR_BASE)" || { echo "make test-zephyr: set ZEPHYR_BASE to a Zephyr 4.3 tree (docs/zephyr.md)" >&2; exit 2; }
	@$(MAKE) --no-print-directory native
	.venv/bin/python -m pytest -q -rs -p no:cacheprovider tests/rtl/test_zephyr_firmware.py tests/host/test_zephyr_overlay.py tests/hw/test_boards.py

clean:
	rm -rf $(BUILD)
