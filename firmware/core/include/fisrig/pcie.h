/* PCI Express's numbers the rig's root port (hw/fisrig_hw/pcie), its firmware's enumeration
 * (fisrig/pcie_enum.h) and the simulated NVMe controller's PCI function (sim/nvme) share, as
 * the PCI Express Base Specification 4.0 gives them (the configuration header's as PCI Local
 * Bus 3.0 does): TLP formats and types, completion status, the Type 0 configuration
 * header's registers and bits, and the capabilities the enumeration reads. Written once, as
 * nvme.h is for NVMe; hw/fisrig_hw/contract.py carries them to Python. */
#ifndef FISRIG_PCIE_H
#define FISRIG_PCIE_H

/* A TLP's Fmt and Type as DW0's bits 31..24 (Base 4.0, 2.2.1). */
#define FISRIG_PCIE_TLP_MRD32 0x00u  /* memory read, 32-bit address */
#define FISRIG_PCIE_TLP_MRD64 0x20u  /* memory read, 64-bit address */
#define FISRIG_PCIE_TLP_MWR32 0x40u  /* memory write, 32-bit address */
#define FISRIG_PCIE_TLP_MWR64 0x60u  /* memory write, 64-bit address */
#define FISRIG_PCIE_TLP_CFGRD0 0x04u /* configuration read, Type 0 */
#define FISRIG_PCIE_TLP_CFGWR0 0x44u /* configuration write, Type 0 */
#define FISRIG_PCIE_TLP_CPL 0x0Au    /* completion without data */
#define FISRIG_PCIE_TLP_CPLD 0x4Au   /* completion with data */

/* A completion's Completion Status (2.2.9). */
#define FISRIG_PCIE_CPL_SC 0u  /* successful */
#define FISRIG_PCIE_CPL_UR 1u  /* unsupported request (no function there) */
#define FISRIG_PCIE_CPL_CRS 2u /* configuration request retry status (not ready yet) */
#define FISRIG_PCIE_CPL_CA 4u  /* completer abort */
#define FISRIG_PCIE_CPL_NONE 7u /* the rig's own: no completion came in its time (a reserved code) */

/* The Type 0 configuration header (byte offsets). */
#define FISRIG_PCI_VENDOR_ID 0x00u
#define FISRIG_PCI_DEVICE_ID 0x02u
#define FISRIG_PCI_COMMAND 0x04u
#define FISRIG_PCI_STATUS 0x06u
#define FISRIG_PCI_CLASS_REVISION 0x08u /* revision in bits 7..0, class code in 31..8 */
#define FISRIG_PCI_HEADER_TYPE 0x0Eu
#define FISRIG_PCI_BAR0 0x10u
#define FISRIG_PCI_BAR1 0x14u
#define FISRIG_PCI_SUBSYSTEM_VENDOR_ID 0x2Cu
#define FISRIG_PCI_CAP_PTR 0x34u
#define FISRIG_PCI_INTERRUPT_LINE 0x3Cu
#define FISRIG_PCI_CONFIG_BYTES 4096u /* a PCI Express function's configuration space */

#define FISRIG_PCI_COMMAND_MEMORY 0x0002u       /* memory space enable */
#define FISRIG_PCI_COMMAND_MASTER 0x0004u       /* bus master enable */
#define FISRIG_PCI_COMMAND_INTX_DISABLE 0x0400u
#define FISRIG_PCI_STATUS_CAP_LIST 0x0010u

#define FISRIG_PCI_BAR_MEM_TYPE_MASK 0x6u /* bits 2..1 of a memory BAR */
#define FISRIG_PCI_BAR_MEM_TYPE_64 0x4u   /* a 64-bit BAR: it and the next */
#define FISRIG_PCI_BAR_PREFETCH 0x8u
#define FISRIG_PCI_BAR_ADDR_MASK 0xFFFFFFF0u

#define FISRIG_PCI_CLASS_NVME 0x010802u /* mass storage, non-volatile memory, NVM Express */

/* Capability IDs, and the list's links: an entry's ID at +0, the next entry's offset at +1. */
#define FISRIG_PCI_CAP_ID_PM 0x01u
#define FISRIG_PCI_CAP_ID_MSI 0x05u
#define FISRIG_PCI_CAP_ID_PCIE 0x10u
#define FISRIG_PCI_CAP_ID_MSIX 0x11u
#define FISRIG_PCI_CAP_NEXT 0x01u

/* The PCI Express capability (offsets from its start, 7.5.3). */
#define FISRIG_PCIE_CAP_DEVCAP 0x04u
#define FISRIG_PCIE_CAP_DEVCTL 0x08u
#define FISRIG_PCIE_DEVCAP_MPS_MASK 0x7u       /* Max_Payload_Size supported: 128 << it bytes */
#define FISRIG_PCIE_DEVCTL_MPS_SHIFT 5         /* Max_Payload_Size: 128 << it bytes (3 bits) */
#define FISRIG_PCIE_DEVCTL_MRRS_SHIFT 12       /* Max_Read_Request_Size: 128 << it bytes (3 bits) */

/* The MSI-X capability (offsets from its start, 7.7.2) and its table's entries in a BAR. */
#define FISRIG_PCI_MSIX_CONTROL 0x02u
#define FISRIG_PCI_MSIX_TABLE 0x04u /* BIR in bits 2..0, the table's offset in the BAR in 31..3 */
#define FISRIG_PCI_MSIX_PBA 0x08u
#define FISRIG_PCI_MSIX_CONTROL_ENABLE 0x8000u
#define FISRIG_PCI_MSIX_CONTROL_MASK_ALL 0x4000u
#define FISRIG_PCI_MSIX_CONTROL_TABLE_SIZE 0x07FFu /* entries - 1 */
#define FISRIG_PCI_MSIX_BIR_MASK 0x7u
#define FISRIG_PCI_MSIX_ENTRY_BYTES 16u
#define FISRIG_PCI_MSIX_ENTRY_ADDR_LO 0x0u
#define FISRIG_PCI_MSIX_ENTRY_ADDR_HI 0x4u
#define FISRIG_PCI_MSIX_ENTRY_DATA 0x8u
#define FISRIG_PCI_MSIX_ENTRY_VECTOR_CONTROL 0xCu
#define FISRIG_PCI_MSIX_VECTOR_MASKED 0x1u

#endif
