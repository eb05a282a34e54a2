/*
 * The program VM: runs a compiled program (fisrig/program.h) against the engine through
 * its descriptor rings (fisrig/engine_if.h) and hands every completion to a record sink.
 * Portable C99: no allocation, no OS calls; the platform supplies the ring access, the
 * clock and the waiting.
 */
#ifndef FISRIG_VM_H
#define FISRIG_VM_H

#include <stdint.h>

#include "fisrig/engine_if.h"
#include "fisrig/program.h"

#define FISRIG_VM_INFLIGHT 64u      /* descriptors between doorbell and record */
/* Phase changes (MARK) the VM remembers with their ticks, to give each current sample its
   phase: a sampler record's 30 samples span 120 us, in which a few short steps may begin. */
#define FISRIG_VM_MARK_HISTORY 8u
#define FISRIG_VM_LOOP_DEPTH 8u
#define FISRIG_VM_STEADY_WINDOW_MAX 8u /* passes an until-steady loop's window can hold */
#define FISRIG_VM_TRACES_SHARED 16u    /* of a program's traces, the first this many can be replayed again */
#define FISRIG_VM_DSM_BYTES 512u    /* one TRIM range block per in-flight descriptor */
/* Lost links recovered in a row with no command ending OK between, before a
   generator gives the link up (program.h, struct fisrig_op_policy). */
#define FISRIG_VM_RECOVERIES_MAX 4u

/* How the platform reaches the engine. */
struct fisrig_engine_ops {
  void *ctx;
  struct fisrig_cmd_desc *sq;            /* submission ring, sq_entries (power of two) */
  uint32_t sq_entries;
  const struct fisrig_cpl_record *cq;    /* completion ring, cq_entries (power of two) */
  uint32_t cq_entries;
  /* Data-out staging the engine can DMA from; the VM gives each in-flight slot
     FISRIG_VM_DSM_BYTES at offset index * FISRIG_VM_DSM_BYTES. */
  uint8_t *data_window;
  uint32_t data_window_bytes;
  void (*doorbell)(void *ctx, uint32_t sq_tail);
  uint32_t (*sq_head)(void *ctx);         /* descriptors the engine has fetched */
  uint32_t (*cq_tail)(void *ctx);
  void (*cq_consumed)(void *ctx, uint32_t cq_head);
  uint64_t (*now)(void *ctx);
  /* Returns when a completion may be waiting or the clock reaches `until`, whichever is
     first (hardware: poll or sleep; the model: advance simulated time). */
  void (*wait)(void *ctx, uint64_t until);
  /* Optional (null: nothing to do): read data the engine wrote into the data window is
     about to be read by the CPU (a cached window: drop its stale lines). */
  void (*data_in)(void *ctx);
};

/* Where records go; a non-zero return stops the run (FISRIG_VM_RECORDS_LOST). */
struct fisrig_record_sink {
  void *ctx;
  int (*emit)(void *ctx, const struct fisrig_run_record *record);
  /* Optional, both or neither: where the next record is to be written (null: refused, as
     emit's non-zero), and that it has been. The VM then builds a command's record in place:
     on the rig, straight into the record ring, where a record built on the stack and copied
     cost the CPU a bus write a word twice. Other records go through emit. */
  struct fisrig_run_record *(*place)(void *ctx);
  int (*placed)(void *ctx);
};

enum fisrig_vm_status {
  FISRIG_VM_DONE = 0,
  FISRIG_VM_BAD_PROGRAM = 1,    /* error_offset points at the instruction */
  FISRIG_VM_EXPECT_FAILED = 2,  /* a RAW expectation missed */
  FISRIG_VM_ENGINE_STUCK = 3,   /* outstanding descriptors never completed */
  FISRIG_VM_RECORDS_LOST = 4,  /* the record sink refused one: the run stops */
  FISRIG_VM_STOPPED = 5         /* the platform asked to stop */
};

/* What a command's run record says besides its completion: struct fisrig_run_record's
   fields after cpl, in its layout, so that a completion's record takes them in one copy
   (vm.c asserts the layout). */
struct fisrig_vm_record_tail {
  uint32_t marker;
  uint8_t command;
  uint8_t protocol;
  uint8_t kind;
  uint8_t detail;                 /* without the attempt, which reap adds */
  uint64_t lba;
  uint32_t lbas;
  uint32_t seq;
};

struct fisrig_vm_inflight {
  struct fisrig_cmd_desc desc;    /* as submitted: what goes again if the policy says so */
  struct fisrig_vm_record_tail tail;
  uint8_t attempt;                /* 0: its first send */
  uint8_t retried;                /* retries its own failures spent (struct fisrig_op_policy) */
};

/*
 * The NVMe path (program.h FISRIG_OP_NVME_*) is built where the engine may be an NVMe one
 * (the model target's, FISRIG_VM_NVME_PATH 1, as firmware/core/CMakeLists.txt builds it).
 * The SATA rig's firmware leaves it out, and struct fisrig_vm's last field with it: its VM
 * keeps, byte for byte, the layout in the rig CPU's caches that the model's CPU times are
 * fitted to (sim/model/vm_cpu_time.h), and refuses NVMe instructions as unknown.
 */
#ifndef FISRIG_VM_NVME_PATH
#define FISRIG_VM_NVME_PATH 0
#endif

/*
 * An NVMe engine's commands in flight (FISRIG_OP_NVME_*), the platform's to give when its
 * engine is an NVMe one (engine_if.h FISRIG_PROTO_NVME): apart from the SATA path's table,
 * whose place in the rig CPU's data cache the model's CPU times are fitted to, and larger
 * (queues x depth: 4 queues at QD32 are 128). Each in-flight entry stages a DSM's range at
 * its index x FISRIG_VM_DSM_BYTES in the data window.
 */
#define FISRIG_VM_NVME_INFLIGHT 256u
/* An NVMe descriptor's user_tag: this bit and its in-flight index (the SATA path's are below it). */
#define FISRIG_VM_NVME_TAG 0x100u
struct fisrig_vm_nvme_inflight {
  struct fisrig_vm_inflight base; /* base.desc: the descriptor's head (engine_if.h's layout) */
  struct fisrig_nvme_sqe sqe;
};
struct fisrig_vm_nvme {
  uint16_t queues;         /* the engine's I/O queue pairs (qids 1..queues) */
  uint16_t queue_entries;  /* each queue's entries: a queue holds one less in flight */
  uint32_t outstanding;
  uint32_t queue_outstanding[FISRIG_VM_NVME_INFLIGHT]; /* by qid */
  uint32_t free_count;
  uint8_t free_tags[FISRIG_VM_NVME_INFLIGHT];
  uint32_t requeue_head, requeue_tail;
  uint8_t requeue[FISRIG_VM_NVME_INFLIGHT];
  struct fisrig_vm_nvme_inflight inflight[FISRIG_VM_NVME_INFLIGHT];
};

struct fisrig_vm {
  struct fisrig_engine_ops ops;
  struct fisrig_record_sink sink;
  volatile int stop_requested;    /* set from elsewhere to end the run cleanly */
  uint64_t stuck_ticks;           /* no completion for this long with work outstanding */

  /* run state */
  uint32_t marker;
  uint8_t sampling;               /* a POWER SAMPLE started the current sampler (and none stopped it) */
  uint32_t marks;                 /* phase changes remembered while sampling; the last
                                     FISRIG_VM_MARK_HISTORY are below */
  uint32_t mark_marker[FISRIG_VM_MARK_HISTORY];
  uint64_t mark_tick[FISRIG_VM_MARK_HISTORY];
  uint32_t sq_tail;
  uint32_t cq_head;
  uint32_t outstanding;
  /* In-flight entries free, the last freed on top: at queue depth 32 the entries in use
     stay among 32 of them (2 KiB) and the next is one the rig CPU's data cache likely
     still holds; handed out in turn they went round all 64 (4 KiB, its whole cache). */
  uint32_t free_count;
  uint8_t free_tags[FISRIG_VM_INFLIGHT];
  uint32_t write_seq;             /* the stamp word of the next write */
  uint64_t drive_sectors;
  int link_lost;                  /* a record said the link went down */
  int power_cut;                  /* the plan's cut fired (its event record came) */
  uint8_t on_error, retries;      /* the error policy (struct fisrig_op_policy) */
  uint32_t timeout_ticks;         /* its generated commands' timeout (0: the engine's) */
  uint32_t link_timeout_ticks;    /* its wait for a lost link, and COMRESET (0: the engine's) */
  uint8_t requeue_on;             /* the running instruction sends commands again */
  uint32_t recoveries_in_row;     /* lost links recovered since a command last ended OK */
  uint32_t requeue_head, requeue_tail; /* the requeue list: inflight indices */
  uint8_t requeue[FISRIG_VM_INFLIGHT];
  struct fisrig_vm_inflight inflight[FISRIG_VM_INFLIGHT];

  /* what a run did */
  uint64_t commands;
  uint64_t bytes;
  uint64_t errors;
  uint32_t error_offset;          /* BAD_PROGRAM / EXPECT_FAILED: instruction offset */
  const char *error_text;         /* a static string saying what was wrong */
  struct fisrig_cpl_record last_failed;
#if FISRIG_VM_NVME_PATH
  /* The platform's NVMe state, set after fisrig_vm_init where the engine is an NVMe one
     (fisrig_vm_nvme_init); null, NVMe instructions are refused. */
  struct fisrig_vm_nvme *nvme;
#endif
};

/* The status's name as run outcomes and reports spell it ("done", "expect_failed", ...). */
const char *fisrig_vm_status_name(enum fisrig_vm_status status);

void fisrig_vm_init(struct fisrig_vm *vm, const struct fisrig_engine_ops *ops,
                    const struct fisrig_record_sink *sink);
#if FISRIG_VM_NVME_PATH
/* Gives an initialised VM the NVMe engine's state (its queues: count and entries). */
void fisrig_vm_nvme_init(struct fisrig_vm *vm, struct fisrig_vm_nvme *nvme, uint16_t queues, uint16_t queue_entries);
#endif
/* Checks a program's structure without running it; returns DONE or BAD_PROGRAM. */
enum fisrig_vm_status fisrig_vm_validate(struct fisrig_vm *vm, const uint8_t *program, uint32_t size);
/* Runs it. Every descriptor submitted is waited for before this returns (unless the
   engine is stuck), and a final FISRIG_RECORD_END record says how the run ended. */
enum fisrig_vm_status fisrig_vm_run(struct fisrig_vm *vm, const uint8_t *program, uint32_t size);

#endif /* FISRIG_VM_H */
