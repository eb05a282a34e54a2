/* The program VM, in one translation unit of its sections (vm/): the per-command path runs
   through several of them, and on the rig's CPU a call the compiler could not inline costs
   cycles a command, so they are compiled together, in this order, as one file. */
#include "fisrig/vm.h"

#include "fisrig/ata.h"
#include "fisrig/capture.h"
#include "fisrig/divide.h"
#include "fisrig/pattern.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define DSM_ENTRIES_PER_BLOCK 64u
#define DSM_MAX_RANGE 0xFFFFu

/* ---- where the code goes ---- */

/* Paths a line-rate workload never takes, kept out of the way of those it does: the rig
   CPU's instruction cache (VexRiscv, 4 KiB, direct-mapped) holds the hot ones only if they
   are few and together. */
#if defined(__GNUC__)
#define FISRIG_VM_COLD __attribute__((cold, noinline))
#define FISRIG_VM_HOT __attribute__((hot))
#define FISRIG_VM_NOINLINE __attribute__((noinline))
/* A TRIM instruction's per-command path: linked right after the hot functions
   (baremetal/linker.ld), so what vm.c's other code grows by does not move it in the cache.
   A check added to validation moved it by 16 bytes and made the rig's TRIMs 2.7% slower
   than the model's CPU times fitted to it (sim/model/vm_cpu_time.h). */
#define FISRIG_VM_WARM __attribute__((noinline, section(".text.warm")))
/* Called from the hot submit_entry on a TRIM's only: still cold there (its branch goes to
   submit_entry's cold part), with the TRIM path in the cache. */
#define FISRIG_VM_WARM_COLD __attribute__((cold, noinline, section(".text.warm")))
/* What runs once a phase, as it starts (a workload's setup, the instruction loop): linked
   after the cold parts (baremetal/linker.ld), so that plain code added (a check, another
   instruction) does not move it; hot, warm or cold code that grows still does. Where it lies in the cache decides when a phase's first command goes, and at queue
   depth 32 with 128 KiB writes that decided whether every status from one on was held
   behind the next command's data phase (p99.9 447.7 or 671.4 us on rtl). */
#define FISRIG_VM_PHASE __attribute__((noinline, section(".text.phase")))
/* Inlined wherever it is called, as it was while it had one caller: a second caller (the
   NVMe path's) would otherwise take it out of line and move the cold and phase code after
   its first caller's. */
#define FISRIG_VM_INLINE __attribute__((always_inline)) inline
/* The NVMe path's (vm/nvme.c): plain code in a section of its own, which GCC does not split
   into hot and cold parts, so that none of it lands among the SATA path's cold parts. */
#define FISRIG_VM_NVME __attribute__((section(".text.nvme")))
/* The code and constant data of instructions added since the rig's CPU times were fitted
   (sim/model/vm_cpu_time.h): linked after all other code and constant data
   (baremetal/linker.ld), so that nothing the fit measured moves in the caches. The SMART
   reading's 856 bytes among the plain code moved the validation after it: every run's
   first command went 7.4 us earlier on rtl, and a link event fell into the next phase
   (tests/rtl/test_link_events.py). (Zephyr's linker script places the firmware's sections
   itself: there they are plain code and data.) */
#if !defined(__ZEPHYR__)
#define FISRIG_VM_LATE __attribute__((noinline, section(".text_late")))
#define FISRIG_VM_LATE_RODATA __attribute__((section(".rodata_late")))
#else
#define FISRIG_VM_LATE
#define FISRIG_VM_LATE_RODATA
#endif
#else
#define FISRIG_VM_INLINE
#define FISRIG_VM_NVME
#define FISRIG_VM_NOINLINE
#define FISRIG_VM_COLD
#define FISRIG_VM_HOT
#define FISRIG_VM_WARM
#define FISRIG_VM_WARM_COLD
#define FISRIG_VM_PHASE
#define FISRIG_VM_LATE
#define FISRIG_VM_LATE_RODATA
#endif

_Static_assert(offsetof(struct fisrig_run_record, marker) == sizeof(struct fisrig_cpl_record) &&
                   sizeof(struct fisrig_run_record) - offsetof(struct fisrig_run_record, marker) ==
                       sizeof(struct fisrig_vm_record_tail) &&
                   offsetof(struct fisrig_run_record, lba) - offsetof(struct fisrig_run_record, marker) ==
                       offsetof(struct fisrig_vm_record_tail, lba) &&
                   offsetof(struct fisrig_run_record, seq) - offsetof(struct fisrig_run_record, marker) ==
                       offsetof(struct fisrig_vm_record_tail, seq),
               "a command's record tail is laid out as the run record's");

#include "vm/util.c"
#include "vm/rings.c"
#include "vm/policy.c"
#include "vm/instructions.c"
#include "vm/workload.c"
#include "vm/verify.c"
#include "vm/smart.c"
#include "vm/capture.c"
#if FISRIG_VM_NVME_PATH
#include "vm/nvme.c"
#endif
#include "vm/program.c"
