/* The firmware's enumeration of the PCI function below the rig's root port (NVMe, part 2:
 * docs/nvme-rig.md): its IDs and class checked, BAR0 sized and placed in the rig's memory
 * window, Max_Payload_Size and Max_Read_Request_Size set to what the rig takes, MSI-X's
 * table written (entry k's message is the dword k at the rig's address) and enabled, and
 * memory space and bus mastering on. Portable C99: the rig's firmware reaches the link
 * through the root port's config requester and BAR window (ops), the tests through the
 * simulated controller's PCI function (tests/nvme/test_pci_enumeration.cc). */
#ifndef FISRIG_PCIE_ENUM_H
#define FISRIG_PCIE_ENUM_H

#include <stdint.h>

#include "fisrig/pcie.h"

struct fisrig_pcie_ops {
  void *ctx;
  /* A Type 0 configuration read or write of the dword at byte `offset` of bus:dev.fn's
   * space; returns the completion's status (FISRIG_PCIE_CPL_*, FISRIG_PCIE_CPL_NONE when no
   * completion came). */
  unsigned (*cfg_read)(void *ctx, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t offset, uint32_t *value);
  unsigned (*cfg_write)(void *ctx, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t offset, uint32_t value);
  /* A dword written in the device's memory space (its MSI-X table, in BAR0). */
  void (*mem_write)(void *ctx, uint64_t address, uint32_t value);
  /* About `us` microseconds pass (a device answering "not ready yet" is asked again after). */
  void (*delay_us)(void *ctx, uint32_t us);
};

struct fisrig_pcie_plan {
  uint8_t bus, dev, fn;          /* where the function is: 1:0.0, below the root port */
  uint64_t window_base;          /* where BARs may go: the root port's window, below 4 GB */
  uint64_t window_bytes;
  uint16_t max_payload;          /* the rig's Max_Payload_Size, bytes: the device is set to no more */
  uint32_t msix_address;         /* where MSI-X messages go, in the rig's memory */
  uint16_t msix_vectors;         /* table entries to write and unmask: entry k's data is k */
  uint32_t ready_timeout_us;     /* how long the function may answer CRS (PCIe: 1 s after a reset) */
};

struct fisrig_pcie_function {
  uint16_t vendor, device;
  uint32_t class_code;
  uint64_t bar0, bar0_bytes;
  uint16_t max_payload, max_read_request;  /* bytes, as set */
  uint8_t pcie_cap, msix_cap;              /* the capabilities' offsets */
  uint16_t msix_entries;                   /* the table's size */
  uint32_t msix_table_offset;              /* in BAR0 */
  uint32_t crs_retries;                    /* times it answered "not ready yet" */
};

enum fisrig_pcie_enum_result {
  FISRIG_PCIE_ENUM_OK = 0,
  FISRIG_PCIE_ENUM_NO_DEVICE,     /* no function answered there (UR, no completion, vendor FFFFh) */
  FISRIG_PCIE_ENUM_NOT_READY,     /* it answered CRS past ready_timeout_us */
  FISRIG_PCIE_ENUM_NOT_NVME,      /* not an endpoint of class 010802h */
  FISRIG_PCIE_ENUM_BAR,           /* BAR0 is not a memory BAR, or does not fit the window */
  FISRIG_PCIE_ENUM_CAPABILITIES,  /* no capability list, or one that loops or leaves the space */
  FISRIG_PCIE_ENUM_NO_PCIE_CAP,
  FISRIG_PCIE_ENUM_NO_MSIX,       /* no MSI-X, its table not in BAR0, or fewer entries than asked */
  FISRIG_PCIE_ENUM_CONFIG_FAILED, /* a configuration request after the first did not complete */
  FISRIG_PCIE_ENUM_RESULTS
};

/* Enumerates and sets up the function `plan` names; `out` says what it found and set (as
 * far as it got). Returns a fisrig_pcie_enum_result. */
int fisrig_pcie_enumerate(const struct fisrig_pcie_ops *ops, const struct fisrig_pcie_plan *plan,
                          struct fisrig_pcie_function *out);
/* A result's words, for the run's error. */
const char *fisrig_pcie_enum_why(int result);

#endif
