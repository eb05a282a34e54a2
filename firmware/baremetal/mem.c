/*
 * memcpy and memset for the rig firmware, a word at a time where both ends allow it.
 *
 * LiteX builds picolibc for size, and its memcpy and memset go a byte at a time. GCC calls
 * them for every struct copy and clear larger than a few words (a completion record is 80
 * bytes, a run record 104), and VexRiscv's data cache is write-through, so every byte
 * stored was a bus write of its own, and every byte read from the uncached ring RAM a bus
 * read: measured on a QD32 4 KiB random-read workload, the reap of a completion took 1,220
 * CPU cycles and the generation and submission of a command 1,180; with these, 830 and
 * 1,120 (docs/rtl-engine.md has the rest of the way to line rate). Linked before the
 * library, these replace its.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h> /* their prototypes */

__attribute__((hot)) void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
  uint8_t *d = dst;
  const uint8_t *s = src;
  if ((((uintptr_t)d | (uintptr_t)s) & 3u) == 0) {
    uint32_t *dw = (uint32_t *)d;
    const uint32_t *sw = (const uint32_t *)s;
    for (; n >= 4; n -= 4) *dw++ = *sw++;
    d = (uint8_t *)dw;
    s = (const uint8_t *)sw;
  }
  while (n--) *d++ = *s++;
  return dst;
}

/* With a TRIM's path (vm.c's FISRIG_VM_WARM): it clears each DSM range block. */
__attribute__((section(".text.warm"))) void *memset(void *dst, int c, size_t n) {
  uint8_t *d = dst;
  uint8_t b = (uint8_t)c;
  for (; n && ((uintptr_t)d & 3u); --n) *d++ = b;
  if (n >= 4) {
    uint32_t w = b * 0x01010101u;
    uint32_t *dw = (uint32_t *)d;
    for (; n >= 4; n -= 4) *dw++ = w;
    d = (uint8_t *)dw;
  }
  while (n--) *d++ = b;
  return dst;
}
