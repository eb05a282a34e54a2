// A Type 0 configuration request as the rig's root port sends it: one dword at `offset` of
// function `target` (bus << 8 | device << 3 | function), written with `value` or read.
#pragma once

#include "fisrig/nvme/tlp.h"

namespace fisrig::test {

inline nvme::Tlp config_request(bool write, uint16_t target, uint16_t offset, uint8_t tag = 0, uint32_t value = 0) {
  nvme::Tlp t;
  t.fmt_type = write ? FISRIG_PCIE_TLP_CFGWR0 : FISRIG_PCIE_TLP_CFGRD0;
  t.length = 1;
  t.first_be = 0xF;
  t.tag = tag;
  t.completer_id = target;
  t.address = offset;
  if (write) nvme::append_le32(t.data, value);
  return t;
}

}  // namespace fisrig::test
