/* The VM's small helpers: its random numbers, LBA fields, status names, set-up and in-flight tags.
   A section of vm.c, compiled in its one translation unit (vm.c says why). */

/* xorshift64*: fast, and the same sequence on every platform. rng_skip moves it on as a
   draw whose value is not needed (a workload of one size or one operation). */
static FISRIG_VM_HOT FISRIG_VM_NOINLINE void rng_skip(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
}

static uint64_t rng_next(uint64_t *s) {
  rng_skip(s);
  return *s * 0x2545F4914F6CDD1Dull;
}

/* Straight-line, both: with a loop's 64-bit shifts each cost the rig's CPU about 50
   instructions a command. */
static void put_lba(uint8_t lba[6], uint64_t v) {
  uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
  lba[0] = (uint8_t)lo;
  lba[1] = (uint8_t)(lo >> 8);
  lba[2] = (uint8_t)(lo >> 16);
  lba[3] = (uint8_t)(lo >> 24);
  lba[4] = (uint8_t)hi;
  lba[5] = (uint8_t)(hi >> 8);
}

static uint64_t get_lba(const uint8_t lba[6]) {
  uint32_t lo = (uint32_t)lba[0] | (uint32_t)lba[1] << 8 | (uint32_t)lba[2] << 16 | (uint32_t)lba[3] << 24;
  uint32_t hi = (uint32_t)lba[4] | (uint32_t)lba[5] << 8;
  return (uint64_t)hi << 32 | lo;
}

static enum fisrig_vm_status bad(struct fisrig_vm *vm, uint32_t offset, const char *why) {
  vm->error_offset = offset;
  vm->error_text = why;
  return FISRIG_VM_BAD_PROGRAM;
}

const char *fisrig_vm_status_name(enum fisrig_vm_status status) {
  switch (status) {
    case FISRIG_VM_DONE: return "done";
    case FISRIG_VM_BAD_PROGRAM: return "bad_program";
    case FISRIG_VM_EXPECT_FAILED: return "expect_failed";
    case FISRIG_VM_ENGINE_STUCK: return "engine_stuck";
    case FISRIG_VM_RECORDS_LOST: return "records_lost";
    case FISRIG_VM_STOPPED: return "stopped";
  }
  return "unknown";
}

void fisrig_vm_init(struct fisrig_vm *vm, const struct fisrig_engine_ops *ops,
                    const struct fisrig_record_sink *sink) {
  memset(vm, 0, sizeof *vm);
  vm->ops = *ops;
  vm->sink = *sink;
  /* Longer than any command's own timeout (the default is the longest a descriptor can have)
     and the COMRESET recovery after one: an engine that times a command out is not stuck. */
  vm->stuck_ticks = 2 * FISRIG_DEFAULT_TIMEOUT_TICKS;
  /* The rings outlive a run: start where the engine is, not at zero. */
  vm->sq_tail = ops->sq_head(ops->ctx);
  vm->cq_head = ops->cq_tail(ops->ctx);
  for (vm->free_count = 0; vm->free_count < FISRIG_VM_INFLIGHT; ++vm->free_count)
    vm->free_tags[vm->free_count] = (uint8_t)(FISRIG_VM_INFLIGHT - 1 - vm->free_count);
}

/* In-flight entry idx is free again. */
static void release(struct fisrig_vm *vm, uint32_t idx) {
  vm->free_tags[vm->free_count++] = (uint8_t)idx;
}
