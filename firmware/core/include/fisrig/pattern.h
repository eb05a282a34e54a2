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

/* The SATA frame CRC, one dword at a time (MSB first), as the link layer computes it: four
 * bits a step by a 16-entry table (entry v is v << 28 stepped four bits), a quarter of the
 * work of going bit by bit; the simulated drive generates and checks every pattern sector
 * a run moves with it. */
static const uint32_t fisrig_crc32_nibble[16] = {
    0x00000000u, 0x04C11DB7u, 0x09823B6Eu, 0x0D4326D9u, 0x130476DCu, 0x17C56B6Bu, 0x1A864DB2u, 0x1E475005u,
    0x2608EDB8u, 0x22C9F00Fu, 0x2F8AD6D6u, 0x2B4BCB61u, 0x350C9B64u, 0x31CD86D3u, 0x3C8EA00Au, 0x384FBDBDu};

static inline uint32_t fisrig_crc32_step(uint32_t crc, uint32_t dword) {
  int i;
  crc ^= dword;
  for (i = 0; i < 8; ++i) crc = (crc << 4) ^ fisrig_crc32_nibble[crc >> 28];
  return crc;
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
    for (i = 0; i < FISRIG_SECTOR_DWORDS - 1; ++i) crc = fisrig_crc32_step(crc, out[i]);
    out[FISRIG_SECTOR_DWORDS - 1] = crc;
  }
}

#endif /* FISRIG_PATTERN_H */
