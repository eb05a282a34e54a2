// One command while the drive processes it (private to the drive's sources).
#pragma once

#include "fisrig/drive/drive.h"

namespace fisrig::drive {

struct Drive::Ctx {
  const AtaCommand& cmd;
  Completion c{};
  bool queued = false;
  bool failed = false;
  bool abort_queue = false;  // a non-queued command that found NCQ commands outstanding
  SimTime t = 0;  // where processing has got to on the drive's clock
};

}  // namespace fisrig::drive
