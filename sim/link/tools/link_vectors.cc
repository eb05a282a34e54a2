// fisrig-link-vectors: the link layer's CRC and scrambler outputs, for cross-checking
// against other implementations (tests/link/test_litesata_crosscheck.py).
//   fisrig-link-vectors scrambler N       the first N scrambler dwords
//   fisrig-link-vectors crc DWORD...      the running CRC after each dword (hex in)
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fisrig/link/crc.h"
#include "fisrig/link/scrambler.h"

int main(int argc, char** argv) {
  using namespace fisrig::link;
  std::string what = argc > 1 ? argv[1] : "";
  if (what == "scrambler" && argc == 3) {
    Scrambler s;
    for (long i = 0, n = std::strtol(argv[2], nullptr, 0); i < n; ++i) std::printf("%08x\n", s.next());
    return 0;
  }
  if (what == "crc") {
    uint32_t crc = kCrcInit;
    for (int i = 2; i < argc; ++i) {
      crc = crc_step(crc, uint32_t(std::strtoul(argv[i], nullptr, 16)));
      std::printf("%08x\n", crc);
    }
    return 0;
  }
  std::fprintf(stderr, "usage: fisrig-link-vectors scrambler N | crc DWORD...\n");
  return 2;
}
