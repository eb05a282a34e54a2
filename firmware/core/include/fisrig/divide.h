/*
 * Division of 64-bit numbers by a divisor fixed for a while (a workload's block count, its
 * size weights' total, 100), exact, with multiplications only. The rig's CPU (rv32im) has
 * a 32-bit divider alone, and libgcc's 64-bit division cost it about 430 cycles each: four
 * of them a generated command halved the rate the firmware could issue at. The quotient
 * and remainder are those of `/` and `%`, so a seed draws the same commands on every
 * target.
 *
 * Method: m = floor((2^64 - 1) / n), computed once; for x = q n + r, floor(x m / 2^64) is
 * q, q - 1 or q - 2 (x < 2^64 and m > (2^64 - 1 - n) / n), so at most two corrections.
 */
#ifndef FISRIG_DIVIDE_H
#define FISRIG_DIVIDE_H

#include <stdint.h>

struct fisrig_divisor {
  uint64_t n; /* at least 1 */
  uint64_t m; /* floor((2^64 - 1) / n) */
};

static inline struct fisrig_divisor fisrig_divisor_of(uint64_t n) {
  struct fisrig_divisor d;
  d.n = n ? n : 1u;
  d.m = UINT64_MAX / d.n;
  return d;
}

/* The high 64 bits of a * b, from 32-bit halves (a widening multiply on rv32im). */
static inline uint64_t fisrig_mulhi64(uint64_t a, uint64_t b) {
  uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
  uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* x / d.n; *rem (if not null) gets x % d.n. */
static inline uint64_t fisrig_divide(uint64_t x, const struct fisrig_divisor *d, uint64_t *rem) {
  uint64_t q = fisrig_mulhi64(x, d->m);
  uint64_t r = x - q * d->n;
  while (r >= d->n) {
    r -= d->n;
    ++q;
  }
  if (rem) *rem = r;
  return q;
}

static inline uint64_t fisrig_modulo(uint64_t x, const struct fisrig_divisor *d) {
  uint64_t r;
  fisrig_divide(x, d, &r);
  return r;
}

#endif
