// Debian's nvme-cli against the simulated controller, as a user runs it against a drive:
// preloaded into nvme-cli (LD_PRELOAD), this answers its admin ioctls by sending each
// command through the controller's admin queue, the data through PRPs, and giving back
// the CQE's result and status, as the kernel's NVMe driver does. The drive is the
// profile FISRIG_NVME_PROFILE names (tiny-1gb without). tests/tools/nvme_cli_identify.sh
// is the test that uses it.
#include <dlfcn.h>
#include <sys/ioctl.h>
#include <linux/nvme_ioctl.h>

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>

#include "fisrig/nvme/queue_host.h"

namespace {

using fisrig::nvme::QueueHost;
constexpr uint64_t kList = QueueHost::kData - 0x100000;  // a PRP list's page, below the data

struct Host : QueueHost {
  Host() : QueueHost(fisrig::drive::load_profile(std::getenv("FISRIG_NVME_PROFILE") ? std::getenv("FISRIG_NVME_PROFILE") : "tiny-1gb")) {}

  int admin(nvme_admin_cmd* cmd) {
    fisrig_nvme_sqe s{};
    s.opcode = cmd->opcode;
    s.flags = cmd->flags;
    s.nsid = cmd->nsid;
    s.cdw2 = cmd->cdw2, s.cdw3 = cmd->cdw3;
    s.cdw10 = cmd->cdw10, s.cdw11 = cmd->cdw11, s.cdw12 = cmd->cdw12;
    s.cdw13 = cmd->cdw13, s.cdw14 = cmd->cdw14, s.cdw15 = cmd->cdw15;
    // The buffer in the controller's host memory, page aligned: PRP1, then PRP2 or a list.
    auto* user = reinterpret_cast<uint8_t*>(uintptr_t(cmd->addr));
    if (cmd->data_len) {
      s.prp1 = kData;
      uint32_t pages = (cmd->data_len + 4095) / 4096;
      if (pages == 2) s.prp2 = kData + 4096;
      for (uint32_t i = 1; pages > 2 && i < pages; ++i) {
        uint64_t page = kData + 4096ull * i;
        mem.write(kList + 8 * (i - 1), &page, 8);
      }
      if (pages > 2) s.prp2 = kList;
      if (cmd->opcode & 1) mem.write(kData, user, cmd->data_len);  // host to controller
    }
    fisrig_nvme_cqe e{};
    if (!run(0, s, e)) {
      errno = ETIMEDOUT;
      return -1;
    }
    if (cmd->data_len && (cmd->opcode & 2)) mem.read(kData, user, cmd->data_len);  // controller to host
    cmd->result = e.dw0;
    return status(e);  // as the kernel's driver: the status, 0 for success
  }
};

}  // namespace

extern "C" int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  if (request == NVME_IOCTL_ADMIN_CMD) {
    static Host host;
    return host.admin(static_cast<nvme_admin_cmd*>(arg));
  }
  if (request == NVME_IOCTL_ID) return 1;  // namespace 1
  using Real = int (*)(int, unsigned long, ...);
  static Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "ioctl"));
  return real(fd, request, arg);
}
