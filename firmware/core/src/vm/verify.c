/* The VM's verify pass (struct fisrig_op_verify): sectors read back and decoded, findings emitted.
   A section of vm.c, compiled in its one translation unit (vm.c says why). */

/* ---- the verify pass (struct fisrig_op_verify) ---- */

static uint32_t le32(const uint8_t *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint32_t popcount32(uint32_t x) {
  uint32_t n = 0;
  for (; x; x &= x - 1) n++;
  return n;
}

/* What one sector read back holds (enum fisrig_finding), the write sequence its stamp
   carries, the LBA it names and, for a damaged stamp, its bits that differ from the whole
   stamp of that LBA and sequence. */
struct finding {
  uint8_t what;
  uint32_t seq;
  uint64_t lba;
  uint32_t bits;
};

static struct finding decode_sector(const uint8_t *data, uint64_t lba) {
  struct finding f;
  uint32_t w[FISRIG_SECTOR_DWORDS], i, any = 0, crc = FISRIG_CRC_SEED, pct;
  for (i = 0; i < FISRIG_SECTOR_DWORDS; ++i) any |= w[i] = le32(data + 4 * i);
  memset(&f, 0, sizeof f);
  f.lba = lba;
  if (!any) {
    f.what = FISRIG_FOUND_ZEROS;
    return f;
  }
  pct = (w[1] >> 16) & 0xFFu;
  if (w[1] >> 24 != FISRIG_STAMP_MAGIC || pct > 100) {
    f.what = FISRIG_FOUND_FOREIGN;
    return f;
  }
  f.seq = w[2];
  f.lba = (uint64_t)w[0] | (uint64_t)(w[1] & 0xFFFFu) << 32;
  crc = fisrig_crc32_dwords(crc, w, FISRIG_SECTOR_DWORDS - 1);
  if (crc == w[FISRIG_SECTOR_DWORDS - 1]) {
    f.what = f.lba == lba ? FISRIG_FOUND_STAMP : FISRIG_FOUND_OTHER_LBA;
    return f;
  }
  if (f.lba != lba) { /* a header that names another LBA and a failed CRC: not a stamp */
    f.what = FISRIG_FOUND_FOREIGN;
    f.lba = lba;
    f.seq = 0;
    return f;
  }
  {
    uint32_t good[FISRIG_SECTOR_DWORDS], bits = 0;
    fisrig_pattern_sector(FISRIG_PATTERN_STAMP, lba, f.seq, (uint8_t)pct, good);
    for (i = 0; i < FISRIG_SECTOR_DWORDS; ++i) bits += popcount32(good[i] ^ w[i]);
    f.what = FISRIG_FOUND_DAMAGED;
    f.bits = bits > 0xFFFFu ? 0xFFFFu : bits;
  }
  return f;
}

/* Sectors [lba, lba + n) of one read: each run of sectors with one finding (a stamp run:
   one sequence, the LBAs it names rising with them) as a STAMP record. A damaged sector is
   a record of its own (its bit count is its own). */
static enum fisrig_vm_status emit_findings(struct fisrig_vm *vm, const struct fisrig_cpl_record *read,
                                           uint64_t lba, uint32_t n) {
  struct fisrig_run_record r;
  struct finding run, f;
  uint32_t i, len = 0;
  int failed = read->result != FISRIG_RESULT_OK;
  memset(&r, 0, sizeof r);
  r.cpl = *read;
  r.marker = vm->marker;
  r.kind = FISRIG_RECORD_STAMP;
  r.command = FISRIG_ATA_READ_DMA_EXT;
  r.protocol = FISRIG_PROTO_DMA_IN;
#if FISRIG_VM_NVME_PATH
  if (vm->nvme) { /* the reads were NVMe's (run_nvme_verify) */
    r.command = FISRIG_NVME_CMD_READ;
    r.protocol = FISRIG_PROTO_NVME;
  }
#endif
  if (failed) {
    r.detail = FISRIG_FOUND_UNREADABLE;
    r.lba = lba;
    r.lbas = n;
    return emit(vm, &r) ? FISRIG_VM_RECORDS_LOST : FISRIG_VM_DONE;
  }
  if (vm->ops.data_in) vm->ops.data_in(vm->ops.ctx);
  memset(&run, 0, sizeof run);
  for (i = 0; i <= n; ++i) {
    int joins = 0;
    if (i < n) {
      f = decode_sector(vm->ops.data_window + (uint64_t)i * 512u, lba + i);
      joins = len && f.what == run.what && f.what != FISRIG_FOUND_DAMAGED && f.seq == run.seq &&
              f.lba == run.lba + len;
    }
    if (len && !joins) {
      r.detail = run.what;
      r.seq = run.seq;
      r.lba = lba + i - len;
      r.lbas = len;
      put_lba(r.cpl.lba, run.lba);
      r.cpl.check_errors = (uint16_t)run.bits;
      if (emit(vm, &r)) return FISRIG_VM_RECORDS_LOST;
      len = 0;
    }
    if (i < n) {
      if (!len) run = f;
      len++;
    }
  }
  return FISRIG_VM_DONE;
}

static enum fisrig_vm_status run_verify(struct fisrig_vm *vm, struct cursor *c) {
  struct fisrig_op_verify verify;
  const struct fisrig_op_verify *op = op_at(c, &verify, sizeof verify);
  uint64_t lba = op->lba_start, end = op->lba_start + op->sectors;
  struct fisrig_cmd_desc d;
  struct fisrig_cpl_record done;
  enum fisrig_vm_status s = drain(vm, NULL);
  if (s != FISRIG_VM_DONE) return s;
  if (op->identify) {
    struct fisrig_run_record r;
    uint32_t crc = FISRIG_CRC_SEED, i;
    memset(&d, 0, sizeof d);
    d.protocol = FISRIG_PROTO_PIO_IN;
    d.command = FISRIG_ATA_IDENTIFY_DEVICE;
    d.count = 1;
    d.data_source = FISRIG_DATA_RAM;
    d.timeout_ticks = op->timeout_ticks;
    memset(vm->ops.data_window, 0, 512);
    submit(vm, &d, FISRIG_RECORD_COMMAND, NULL, 0);
    s = drain(vm, &done);
    if (s != FISRIG_VM_DONE) return s;
    memset(&r, 0, sizeof r);
    r.cpl = done;
    r.marker = vm->marker;
    r.kind = FISRIG_RECORD_IDENTIFY;
    r.command = FISRIG_ATA_IDENTIFY_DEVICE;
    r.protocol = FISRIG_PROTO_PIO_IN;
    if (done.result == FISRIG_RESULT_OK) {
      const uint8_t *w = vm->ops.data_window;
      if (vm->ops.data_in) vm->ops.data_in(vm->ops.ctx);
      r.lba = (uint64_t)le32(w + 200) | (uint64_t)(le32(w + 204) & 0xFFFFu) << 32; /* words 100-103 */
      for (i = 0; i < FISRIG_SECTOR_DWORDS; ++i) crc = fisrig_crc32_step(crc, le32(w + 4 * i));
      r.seq = crc;
    }
    if (emit(vm, &r)) return FISRIG_VM_RECORDS_LOST;
  }
  while (lba < end) {
    uint32_t n = end - lba < op->sectors_per_read ? (uint32_t)(end - lba) : op->sectors_per_read;
    memset(&d, 0, sizeof d);
    d.protocol = FISRIG_PROTO_DMA_IN;
    d.command = FISRIG_ATA_READ_DMA_EXT;
    d.device = 0x40;
    d.count = (uint16_t)n;
    d.data_source = FISRIG_DATA_RAM; /* at data_word 0: nothing else is in flight */
    d.timeout_ticks = op->timeout_ticks;
    put_lba(d.lba, lba);
    submit(vm, &d, FISRIG_RECORD_COMMAND, NULL, 0);
    s = drain(vm, &done);
    if (s != FISRIG_VM_DONE) return s;
    s = emit_findings(vm, &done, lba, n);
    if (s != FISRIG_VM_DONE) return s;
    lba += n;
    if (vm->stop_requested) return FISRIG_VM_STOPPED;
  }
  return FISRIG_VM_DONE;
}
