/* The VM's error policy: commands sent again, a lost link recovered, a generator's next step.
   A section of vm.c, compiled in its one translation unit (vm.c says why). */

/* ---- the error policy: commands sent again, a lost link recovered ---- */

static int requeue_waiting(const struct fisrig_vm *vm) { return vm->requeue_head != vm->requeue_tail; }

/* The oldest command waiting to go again goes, its attempt one more. */
static FISRIG_VM_COLD void resend(struct fisrig_vm *vm) {
  uint32_t idx = vm->requeue[vm->requeue_head++ % FISRIG_VM_INFLIGHT];
  struct fisrig_vm_inflight *f = &vm->inflight[idx];
  f->attempt++;
  send(vm, idx);
}

/* Commands that were to go again and will not (the instruction ended): their records
   said how they failed. */
static void drop_requeued(struct fisrig_vm *vm) {
  while (requeue_waiting(vm)) release(vm, vm->requeue[vm->requeue_head++ % FISRIG_VM_INFLIGHT]);
}

/* One LINK descriptor (a LINK record), waited for; its completion in *done. */
static enum fisrig_vm_status link_op(struct fisrig_vm *vm, uint8_t op, struct fisrig_cpl_record *done) {
  struct fisrig_cmd_desc d;
  memset(&d, 0, sizeof d);
  d.protocol = FISRIG_PROTO_LINK;
  d.command = op;
  d.timeout_ticks = vm->link_timeout_ticks;
  submit(vm, &d, FISRIG_RECORD_LINK, NULL, 0);
  return drain(vm, done);
}

/* A link lost without the plan's cut, nothing outstanding: wait for it to come back (the
   engine resets the drive itself after a timeout, and its PHY goes through OOB again after
   a fall: a second reset would cost the drive another power-on handshake), and reset it
   with a COMRESET when it does not come back within the policy's link timeout. Each is a
   LINK record. A link that falls again and again with no command ending OK between is given
   up (the instruction ends, link_lost still set). */
static FISRIG_VM_COLD enum fisrig_vm_status recover_link(struct fisrig_vm *vm) {
  struct fisrig_cpl_record done;
  enum fisrig_vm_status s;
  if (vm->recoveries_in_row >= FISRIG_VM_RECOVERIES_MAX) return FISRIG_VM_DONE;
  vm->recoveries_in_row++;
  s = link_op(vm, FISRIG_LINK_WAIT_UP, &done);
  if (s == FISRIG_VM_DONE && done.result != FISRIG_RESULT_OK) s = link_op(vm, FISRIG_LINK_COMRESET, &done);
  if (s == FISRIG_VM_DONE && done.result == FISRIG_RESULT_OK) vm->link_lost = 0;
  return s;
}

/* What a generator (workload, trace) does next, its queue depth and mode given and `more`
   saying whether it has new commands to draw: a new one (NEXT_NEW), something else done
   (a command sent again, the link recovered, a completion waited for: NEXT_AGAIN), or the
   end (NEXT_END; *s says whether the run goes on). */
enum next_step { NEXT_NEW, NEXT_AGAIN, NEXT_END };

static FISRIG_VM_HOT enum next_step next_step(struct fisrig_vm *vm, int more, uint32_t queue_depth, int ncq,
                                enum fisrig_vm_status *s) {
  /* After the plan's cut the drive may run on (staged rails) until its link falls: the
     generator goes on until then, and ends there. */
  int halt = (vm->power_cut && vm->link_lost) || vm->stop_requested;
  int room = vm->outstanding < queue_depth && (ncq || vm->outstanding == 0);
  *s = FISRIG_VM_DONE;
  if (vm->link_lost && !halt) {
    if (!vm->outstanding) { /* everything in flight has ended: recover, or give up */
      *s = recover_link(vm);
      return *s != FISRIG_VM_DONE || vm->link_lost ? NEXT_END : NEXT_AGAIN;
    }
  } else if (!halt && room && requeue_waiting(vm)) {
    resend(vm);
    return NEXT_AGAIN;
  } else if (!halt && room && more) {
    return NEXT_NEW;
  } else if (!vm->outstanding && (halt || !requeue_waiting(vm))) {
    return NEXT_END;
  }
  *s = wait_some(vm, NULL);
  return *s == FISRIG_VM_DONE ? NEXT_AGAIN : NEXT_END;
}

/* A generator starts: its commands follow the policy, nothing lost or cut yet. */
static void generator_begin(struct fisrig_vm *vm) {
  vm->link_lost = 0;
  vm->power_cut = 0;
  vm->recoveries_in_row = 0;
  vm->requeue_on = 1;
}

static enum fisrig_vm_status generator_end(struct fisrig_vm *vm, enum fisrig_vm_status s) {
  drop_requeued(vm);
  vm->requeue_on = 0;
  if (s != FISRIG_VM_DONE) return s;
  return vm->stop_requested ? FISRIG_VM_STOPPED : FISRIG_VM_DONE;
}
