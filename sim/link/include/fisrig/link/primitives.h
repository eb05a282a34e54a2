// SATA link primitives: dwords whose first byte is a K character (K28.3 or, for ALIGN,
// K28.5), so they are sent with charisk = 0001b. Values from the Serial ATA specification.
#pragma once

#include <cstdint>
#include <string_view>

namespace fisrig::link {

namespace prim {
constexpr uint32_t kAlign = 0x7B4A4ABC;
constexpr uint32_t kCont = 0x9999AA7C;
constexpr uint32_t kSync = 0xB5B5957C;
constexpr uint32_t kRRdy = 0x4A4A957C;
constexpr uint32_t kROk = 0x3535B57C;
constexpr uint32_t kRErr = 0x5656B57C;
constexpr uint32_t kRIp = 0x5555B57C;
constexpr uint32_t kXRdy = 0x5757B57C;
constexpr uint32_t kWtrm = 0x5858B57C;
constexpr uint32_t kSof = 0x3737B57C;
constexpr uint32_t kEof = 0xD5D5B57C;
constexpr uint32_t kHold = 0xD5D5AA7C;
constexpr uint32_t kHolda = 0x9595AA7C;
}  // namespace prim

// One dword on the wire with its K flag (charisk bit 0).
struct LinkWord {
  uint32_t data = 0;
  bool k = false;
  bool operator==(const LinkWord&) const = default;
};

constexpr LinkWord primitive(uint32_t p) { return LinkWord{p, true}; }

// The primitive's name ("SYNC"), or an empty view for anything else.
std::string_view primitive_name(uint32_t dword);

}  // namespace fisrig::link
