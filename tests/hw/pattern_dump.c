/* Prints sectors of pattern.h's definition, one dword per line in hex: the reference the
 * gateware generator is compared with. Usage: pattern_dump KIND LBA WORD PCT SECTORS */
#include <stdio.h>
#include <stdlib.h>

#include "fisrig/pattern.h"

int main(int argc, char **argv) {
  uint32_t out[FISRIG_SECTOR_DWORDS];
  unsigned long long lba;
  unsigned i, s, sectors;
  if (argc != 6) return 2;
  lba = strtoull(argv[2], 0, 0);
  sectors = (unsigned)strtoul(argv[5], 0, 0);
  for (s = 0; s < sectors; ++s) {
    fisrig_pattern_sector(atoi(argv[1]), lba + s, (uint32_t)strtoul(argv[3], 0, 0),
                          (uint8_t)atoi(argv[4]), out);
    for (i = 0; i < FISRIG_SECTOR_DWORDS; ++i) printf("%08x\n", out[i]);
  }
  return 0;
}
