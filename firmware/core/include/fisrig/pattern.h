/*
 * The engine's data patterns, sector by sector: the one definition that the gateware's
 * pattern generator and checker (hw/), the simulated drive's device side (sim/) and the
 * tests share. Each 512-byte sector (128 dwords) is a function of its LBA, the
 * descriptor's data_word and compress_pct alone, so any sector of any run can be
 * regenerated and checked on its own, at line rate in hardware.
 *
 *  ZEROS  every dword 0.
 *  LFSR   dword i = xorshift32 stepped i+1 times from seed(LBA, data_word): incompressible.
 *  STAMP  dword 0 = LBA 31:0; dword 1 = LBA 47:32 | compress_pct << 16 | 0x5A << 24;
 *         dword 2 = data_word (the write sequence); dwords 3..126: the first
 *         stamp_random_dwords(compress_pct) of them the LFSR stream (as above), the rest 0;
 *         dword 127 = the SATA CRC (polynomial 04C11DB7h, seed 52325032h) of dwords 0..126.
 *         A power-loss test finds lost (old sequence), shorn (CRC) and misdirected (LBA)
 *         sectors from the data alone.
 *
 * Dwords go on the wire as SATA sends them: little-endian bytes of each dword.
 */
#ifndef FISRIG_PATTERN_H
#define FISRIG_PATTERN_H

#include <stdint.h>

#define FISRIG_SECTOR_DWORDS 128u
#define FISRIG_STAMP_MAGIC 0x5Au
#define FISRIG_STAMP_RANDOM_MAX 124u /* dwords 3..126 */

static inline uint32_t fisrig_xorshift32(uint32_t x) {
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return x;
}

/* The LFSR stream's seed for one sector; never 0 (xorshift32 would stay at 0). */
static inline uint32_t fisrig_pattern_seed(uint64_t lba, uint32_t data_word) {
  uint32_t hi = (uint32_t)(lba >> 32) & 0xFFFFu;
  uint32_t s = (uint32_t)lba ^ (hi << 16) ^ (hi >> 16) ^ data_word ^ 0xA5A5A5A5u;
  return s ? s : 1u;
}

/* How many of a STAMP sector's 124 payload dwords are random: compress_pct percent,
 * rounded up; 0 means all zeros (as compressible as a sector can be). */
static inline uint32_t fisrig_stamp_random_dwords(uint8_t compress_pct) {
  uint32_t pct = compress_pct > 100 ? 100 : compress_pct;
  return (FISRIG_STAMP_RANDOM_MAX * pct + 99u) / 100u;
}

/* The SATA frame CRC (polynomial 04C11DB7h, MSB first), as the link layer computes it,
 * a dword in one step by slicing by 4: four 256-entry tables (4 KiB, built from the
 * polynomial on first use, in each file that uses them). The simulated drive makes and
 * checks every pattern sector a run moves with it, and a power-loss verify pass checks
 * each sector it reads back twice over (the model renders it, the VM checks it): 10,000
 * cut cycles of a 1 MiB span are 41 million sector CRCs. Going four bits a step (a
 * 16-entry table) took 8 steps a dword. tests/device/test_pattern_codec.cc holds it to
 * the link layer's bit-by-bit CRC. */
static inline const uint32_t (*fisrig_crc32_tables(void))[256] {
  static uint32_t t[4][256];
  static int ready;
  if (!ready) {
    uint32_t b, k;
    for (b = 0; b < 256; ++b) {
      uint32_t c = b << 24;
      for (k = 0; k < 8; ++k) c = (c << 1) ^ (c & 0x80000000u ? 0x04C11DB7u : 0u);
      t[0][b] = c;
    }
    for (k = 1; k < 4; ++k)
      for (b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] << 8) ^ t[0][t[k - 1][b] >> 24];
    ready = 1;
  }
  return (const uint32_t(*)[256])t;
}

/* The CRC after n more dwords. */
static inline uint32_t fisrig_crc32_dwords(uint32_t crc, const uint32_t *w, uint32_t n) {
  const uint32_t(*t)[256] = fisrig_crc32_tables();
  uint32_t i;
  for (i = 0; i < n; ++i) {
    uint32_t c = crc ^ w[i];
    crc = t[3][c >> 24] ^ t[2][(c >> 16) & 0xFFu] ^ t[1][(c >> 8) & 0xFFu] ^ t[0][c & 0xFFu];
  }
  return crc;
}

static inline uint32_t fisrig_crc32_step(uint32_t crc, uint32_t dword) {
  return fisrig_crc32_dwords(crc, &dword, 1);
}
#define FISRIG_CRC_SEED 0x52325032u

enum fisrig_pattern_kind { /* the same numbers as enum fisrig_data_source */
  FISRIG_PATTERN_ZEROS = 2,
  FISRIG_PATTERN_STAMP = 3,
  FISRIG_PATTERN_LFSR = 4
};

/* One sector of a pattern into out[128]. */
static inline void fisrig_pattern_sector(int kind, uint64_t lba, uint32_t data_word,
                                         uint8_t compress_pct, uint32_t out[FISRIG_SECTOR_DWORDS]) {
  uint32_t i, s = fisrig_pattern_seed(lba, data_word), crc = FISRIG_CRC_SEED;
  if (kind == FISRIG_PATTERN_LFSR) {
    for (i = 0; i < FISRIG_SECTOR_DWORDS; ++i) out[i] = s = fisrig_xorshift32(s);
    return;
  }
  if (kind != FISRIG_PATTERN_STAMP) {
    for (i = 0; i < FISRIG_SECTOR_DWORDS; ++i) out[i] = 0;
    return;
  }
  {
    uint32_t random = fisrig_stamp_random_dwords(compress_pct);
    out[0] = (uint32_t)lba;
    out[1] = ((uint32_t)(lba >> 32) & 0xFFFFu) | (uint32_t)(compress_pct > 100 ? 100 : compress_pct) << 16 |
             FISRIG_STAMP_MAGIC << 24;
    out[2] = data_word;
    for (i = 0; i < FISRIG_STAMP_RANDOM_MAX; ++i) out[3 + i] = i < random ? (s = fisrig_xorshift32(s)) : 0;
    out[FISRIG_SECTOR_DWORDS - 1] = fisrig_crc32_dwords(crc, out, FISRIG_SECTOR_DWORDS - 1);
  }
}

#endif /* FISRIG_PATTERN_H */
