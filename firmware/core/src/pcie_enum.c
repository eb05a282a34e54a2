/* The function below the root port enumerated and set up: fisrig/pcie_enum.h says what. */
#include "fisrig/pcie_enum.h"

#include <string.h>

/* A capability list of a 4 KiB space can hold at most this many entries of 4 bytes past the
 * 64-byte header: a walk longer than that is a loop. */
#define CAP_WALK_MAX 48u
#define CRS_RETRY_US 1000u

struct walk {
  const struct fisrig_pcie_ops *ops;
  const struct fisrig_pcie_plan *plan;
};

static unsigned rd(const struct walk *w, uint16_t offset, uint32_t *v) {
  return w->ops->cfg_read(w->ops->ctx, w->plan->bus, w->plan->dev, w->plan->fn, offset, v);
}

static unsigned wr(const struct walk *w, uint16_t offset, uint32_t v) {
  return w->ops->cfg_write(w->ops->ctx, w->plan->bus, w->plan->dev, w->plan->fn, offset, v);
}

/* The first read, asked again while the function answers CRS. */
static int first_read(const struct walk *w, uint32_t *id, uint32_t *retries) {
  uint32_t waited = 0;
  for (;;) {
    unsigned s = rd(w, FISRIG_PCI_VENDOR_ID, id);
    if (s == FISRIG_PCIE_CPL_SC)
      return (*id & 0xFFFFu) == 0xFFFFu ? FISRIG_PCIE_ENUM_NO_DEVICE : FISRIG_PCIE_ENUM_OK;
    if (s != FISRIG_PCIE_CPL_CRS)
      return FISRIG_PCIE_ENUM_NO_DEVICE;
    if (waited >= w->plan->ready_timeout_us)
      return FISRIG_PCIE_ENUM_NOT_READY;
    w->ops->delay_us(w->ops->ctx, CRS_RETRY_US);
    waited += CRS_RETRY_US;
    ++*retries;
  }
}

/* BAR0 (and BAR1 with it when it is 64-bit) sized and placed at the window's first address
 * aligned to its size. */
static int place_bar0(const struct walk *w, struct fisrig_pcie_function *f) {
  uint32_t lo, hi = 0xFFFFFFFFu, type;
  if (rd(w, FISRIG_PCI_BAR0, &lo) != FISRIG_PCIE_CPL_SC)
    return FISRIG_PCIE_ENUM_CONFIG_FAILED;
  if (lo & 1u)
    return FISRIG_PCIE_ENUM_BAR; /* an I/O BAR */
  type = lo & FISRIG_PCI_BAR_MEM_TYPE_MASK;
  if (wr(w, FISRIG_PCI_BAR0, 0xFFFFFFFFu) != FISRIG_PCIE_CPL_SC || rd(w, FISRIG_PCI_BAR0, &lo) != FISRIG_PCIE_CPL_SC)
    return FISRIG_PCIE_ENUM_CONFIG_FAILED;
  if (type == FISRIG_PCI_BAR_MEM_TYPE_64 &&
      (wr(w, FISRIG_PCI_BAR1, 0xFFFFFFFFu) != FISRIG_PCIE_CPL_SC || rd(w, FISRIG_PCI_BAR1, &hi) != FISRIG_PCIE_CPL_SC))
    return FISRIG_PCIE_ENUM_CONFIG_FAILED;
  {
    uint64_t mask = ((uint64_t)hi << 32) | (lo & FISRIG_PCI_BAR_ADDR_MASK);
    uint64_t size = ~mask + 1u, base;
    if (mask == 0 || (size & (size - 1u)) != 0)
      return FISRIG_PCIE_ENUM_BAR; /* implements no address bits, or not a power of two */
    base = (w->plan->window_base + size - 1u) & ~(size - 1u);
    if (base + size > w->plan->window_base + w->plan->window_bytes || base + size > ((uint64_t)1 << 32))
      return FISRIG_PCIE_ENUM_BAR;
    if (wr(w, FISRIG_PCI_BAR0, (uint32_t)base) != FISRIG_PCIE_CPL_SC)
      return FISRIG_PCIE_ENUM_CONFIG_FAILED;
    if (type == FISRIG_PCI_BAR_MEM_TYPE_64 && wr(w, FISRIG_PCI_BAR1, (uint32_t)(base >> 32)) != FISRIG_PCIE_CPL_SC)
      return FISRIG_PCIE_ENUM_CONFIG_FAILED;
    f->bar0 = base;
    f->bar0_bytes = size;
  }
  return FISRIG_PCIE_ENUM_OK;
}

/* The PCI Express and MSI-X capabilities' offsets (0: not there). */
static int find_capabilities(const struct walk *w, struct fisrig_pcie_function *f) {
  uint32_t v;
  unsigned at, n;
  if (rd(w, FISRIG_PCI_COMMAND, &v) != FISRIG_PCIE_CPL_SC)
    return FISRIG_PCIE_ENUM_CONFIG_FAILED;
  if (!((v >> 16) & FISRIG_PCI_STATUS_CAP_LIST))
    return FISRIG_PCIE_ENUM_CAPABILITIES;
  if (rd(w, FISRIG_PCI_CAP_PTR, &v) != FISRIG_PCIE_CPL_SC)
    return FISRIG_PCIE_ENUM_CONFIG_FAILED;
  at = v & 0xFCu;
  for (n = 0; at != 0; ++n) {
    if (n == CAP_WALK_MAX || at < 0x40u)
      return FISRIG_PCIE_ENUM_CAPABILITIES;
    if (rd(w, (uint16_t)at, &v) != FISRIG_PCIE_CPL_SC)
      return FISRIG_PCIE_ENUM_CONFIG_FAILED;
    if ((v & 0xFFu) == FISRIG_PCI_CAP_ID_PCIE && !f->pcie_cap)
      f->pcie_cap = (uint8_t)at;
    if ((v & 0xFFu) == FISRIG_PCI_CAP_ID_MSIX && !f->msix_cap)
      f->msix_cap = (uint8_t)at;
    at = (v >> 8) & 0xFCu;
  }
  if (!f->pcie_cap)
    return FISRIG_PCIE_ENUM_NO_PCIE_CAP;
  if (!f->msix_cap)
    return FISRIG_PCIE_ENUM_NO_MSIX;
  return FISRIG_PCIE_ENUM_OK;
}

/* Max_Payload_Size the smaller of the function's and the rig's, and Max_Read_Request_Size
 * the same: the rig answers a read with one completion (hw/fisrig_hw/pcie/rig_memory.py). */
static int set_payload_sizes(const struct walk *w, struct fisrig_pcie_function *f) {
  uint32_t cap, ctl;
  unsigned code = 0;
  if (rd(w, (uint16_t)(f->pcie_cap + FISRIG_PCIE_CAP_DEVCAP), &cap) != FISRIG_PCIE_CPL_SC ||
      rd(w, (uint16_t)(f->pcie_cap + FISRIG_PCIE_CAP_DEVCTL), &ctl) != FISRIG_PCIE_CPL_SC)
    return FISRIG_PCIE_ENUM_CONFIG_FAILED;
  while (code < (cap & FISRIG_PCIE_DEVCAP_MPS_MASK) && (128u << (code + 1)) <= w->plan->max_payload)
    ++code;
  ctl &= 0xFFFFu; /* Device Status above: its bits are cleared by writing 1, so 0 is written there */
  ctl &= ~((7u << FISRIG_PCIE_DEVCTL_MPS_SHIFT) | (7u << FISRIG_PCIE_DEVCTL_MRRS_SHIFT));
  ctl |= (code << FISRIG_PCIE_DEVCTL_MPS_SHIFT) | (code << FISRIG_PCIE_DEVCTL_MRRS_SHIFT);
  if (wr(w, (uint16_t)(f->pcie_cap + FISRIG_PCIE_CAP_DEVCTL), ctl) != FISRIG_PCIE_CPL_SC)
    return FISRIG_PCIE_ENUM_CONFIG_FAILED;
  f->max_payload = f->max_read_request = (uint16_t)(128u << code);
  return FISRIG_PCIE_ENUM_OK;
}

/* MSI-X's table written through BAR0 (memory space on), then MSI-X enabled, unmasked. */
static int set_msix(const struct walk *w, struct fisrig_pcie_function *f) {
  uint32_t head, table, control;
  unsigned k;
  if (rd(w, f->msix_cap, &head) != FISRIG_PCIE_CPL_SC ||
      rd(w, (uint16_t)(f->msix_cap + FISRIG_PCI_MSIX_TABLE), &table) != FISRIG_PCIE_CPL_SC)
    return FISRIG_PCIE_ENUM_CONFIG_FAILED;
  f->msix_entries = (uint16_t)(((head >> 16) & FISRIG_PCI_MSIX_CONTROL_TABLE_SIZE) + 1u);
  f->msix_table_offset = table & ~FISRIG_PCI_MSIX_BIR_MASK;
  if ((table & FISRIG_PCI_MSIX_BIR_MASK) != 0 || w->plan->msix_vectors > f->msix_entries ||
      f->msix_table_offset + (uint64_t)f->msix_entries * FISRIG_PCI_MSIX_ENTRY_BYTES > f->bar0_bytes)
    return FISRIG_PCIE_ENUM_NO_MSIX;
  for (k = 0; k < w->plan->msix_vectors; ++k) {
    uint64_t e = f->bar0 + f->msix_table_offset + (uint64_t)k * FISRIG_PCI_MSIX_ENTRY_BYTES;
    w->ops->mem_write(w->ops->ctx, e + FISRIG_PCI_MSIX_ENTRY_ADDR_LO, w->plan->msix_address);
    w->ops->mem_write(w->ops->ctx, e + FISRIG_PCI_MSIX_ENTRY_ADDR_HI, 0);
    w->ops->mem_write(w->ops->ctx, e + FISRIG_PCI_MSIX_ENTRY_DATA, k);
    w->ops->mem_write(w->ops->ctx, e + FISRIG_PCI_MSIX_ENTRY_VECTOR_CONTROL, 0);
  }
  control = ((head >> 16) | FISRIG_PCI_MSIX_CONTROL_ENABLE) & ~FISRIG_PCI_MSIX_CONTROL_MASK_ALL & 0xFFFFu;
  if (wr(w, f->msix_cap, (head & 0xFFFFu) | (control << 16)) != FISRIG_PCIE_CPL_SC)
    return FISRIG_PCIE_ENUM_CONFIG_FAILED;
  return FISRIG_PCIE_ENUM_OK;
}

int fisrig_pcie_enumerate(const struct fisrig_pcie_ops *ops, const struct fisrig_pcie_plan *plan,
                          struct fisrig_pcie_function *f) {
  struct walk w;
  uint32_t id, v;
  int r;
  w.ops = ops;
  w.plan = plan;
  memset(f, 0, sizeof *f);
  if ((r = first_read(&w, &id, &f->crs_retries)) != FISRIG_PCIE_ENUM_OK)
    return r;
  f->vendor = (uint16_t)id;
  f->device = (uint16_t)(id >> 16);
  if (rd(&w, FISRIG_PCI_CLASS_REVISION, &v) != FISRIG_PCIE_CPL_SC)
    return FISRIG_PCIE_ENUM_CONFIG_FAILED;
  f->class_code = v >> 8;
  if (rd(&w, 0x0Cu, &v) != FISRIG_PCIE_CPL_SC) /* header type in its byte 2 */
    return FISRIG_PCIE_ENUM_CONFIG_FAILED;
  if (((v >> 16) & 0x7Fu) != 0 || f->class_code != FISRIG_PCI_CLASS_NVME)
    return FISRIG_PCIE_ENUM_NOT_NVME;
  /* Memory space and bus mastering off while BAR0 is sized. */
  if (wr(&w, FISRIG_PCI_COMMAND, 0) != FISRIG_PCIE_CPL_SC)
    return FISRIG_PCIE_ENUM_CONFIG_FAILED;
  if ((r = place_bar0(&w, f)) != FISRIG_PCIE_ENUM_OK || (r = find_capabilities(&w, f)) != FISRIG_PCIE_ENUM_OK ||
      (r = set_payload_sizes(&w, f)) != FISRIG_PCIE_ENUM_OK)
    return r;
  if (wr(&w, FISRIG_PCI_COMMAND,
         FISRIG_PCI_COMMAND_MEMORY | FISRIG_PCI_COMMAND_MASTER | FISRIG_PCI_COMMAND_INTX_DISABLE) != FISRIG_PCIE_CPL_SC)
    return FISRIG_PCIE_ENUM_CONFIG_FAILED;
  return set_msix(&w, f);
}

const char *fisrig_pcie_enum_why(int result) {
  static const char *const why[FISRIG_PCIE_ENUM_RESULTS] = {
      "enumerated",
      "no PCI function answers below the root port",
      "the PCI function answered 'not ready' past its time",
      "the PCI function is not an NVMe controller (class 010802h, header type 0)",
      "BAR0 is not a memory BAR that fits the root port's window",
      "the PCI function's capability list is missing or broken",
      "the PCI function has no PCI Express capability",
      "the PCI function has no MSI-X table in BAR0 with the entries the rig needs",
      "a configuration request to the PCI function did not complete",
  };
  return result >= 0 && result < FISRIG_PCIE_ENUM_RESULTS ? why[result] : "unknown enumeration result";
}
