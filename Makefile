# fisrig: the entry points a newcomer and CI use. Each target installs what it needs.
BUILD ?= build
JOBS ?= 2
PROFILE ?= consumer-256gb

.PHONY: all deps native test bench scenario clean

all: native

deps:
	@scripts/bootstrap.sh

$(BUILD)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

native: deps $(BUILD)/build.ninja
	ninja -C $(BUILD) -j $(JOBS)

# The main job until the model target exists: the torture / idle / TRIM recovery
# scenario of shared/seeds/torture-idle-trim-recovery.txt on the simulated drive.
scenario: native
	$(BUILD)/bin/fisrig-drive scenario --profile $(PROFILE)

test: native
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

bench: native
	{ $(BUILD)/bin/fisrig-drive bench && $(BUILD)/bin/fisrig-model-bench; } | python3 scripts/bench_collect.py $(BUILD)/bench.json

clean:
	rm -rf $(BUILD)
