// The drive's benchmarks. Each figure is printed as one JSON line
// {"name": ..., "value": ..., "unit": ..., "what": ...}; scripts/bench_collect.py
// gathers them into build/bench.json. Figures of the drive's behaviour are in simulated
// time and deterministic for a seed; only drive.cmdapi_cmds_per_s is wall clock.
#pragma once

#include <string>

namespace fisrig::tools {

// quick: small drives and short runs, to check the benchmarks work (not for figures).
// only: run just the benchmarks whose name starts with this.
int run_benchmarks(bool quick, const std::string& only);

}  // namespace fisrig::tools
