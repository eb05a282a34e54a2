/* NVMe's numbers, as the NVM Express Base Specification 2.0 and the NVM Command Set
 * Specification 1.0 give them: the controller's registers and their fields, the admin and
 * NVM opcodes, Identify's CNS values, the features, the log pages, the status code types
 * and codes, and the submission and completion queue entries' layout. Written once, as
 * ata.h is for SATA: the simulated controller (sim/nvme), the engine and the host take them
 * from here. */
#ifndef FISRIG_NVME_H
#define FISRIG_NVME_H

#include <stdint.h>

/* The simulated controller's PCI IDs (its configuration space and Identify Controller's VID
 * and SSVID): not a PCI-SIG vendor's. */
#define FISRIG_NVME_SIM_VENDOR_ID 0x1D1Du
#define FISRIG_NVME_SIM_DEVICE_ID 0x0001u

/* Controller registers (byte offsets in BAR0). */
#define FISRIG_NVME_REG_CAP 0x00u   /* 64-bit: capabilities */
#define FISRIG_NVME_REG_VS 0x08u    /* version */
#define FISRIG_NVME_REG_INTMS 0x0Cu /* interrupt mask set */
#define FISRIG_NVME_REG_INTMC 0x10u /* interrupt mask clear */
#define FISRIG_NVME_REG_CC 0x14u    /* controller configuration */
#define FISRIG_NVME_REG_CSTS 0x1Cu  /* controller status */
#define FISRIG_NVME_REG_NSSR 0x20u  /* NVM subsystem reset */
#define FISRIG_NVME_REG_AQA 0x24u   /* admin queue attributes */
#define FISRIG_NVME_REG_ASQ 0x28u   /* 64-bit: admin submission queue base */
#define FISRIG_NVME_REG_ACQ 0x30u   /* 64-bit: admin completion queue base */
#define FISRIG_NVME_REG_DOORBELLS 0x1000u /* SQy tail at (2y) << (2 + DSTRD), CQy head at (2y + 1) << (2 + DSTRD) */

/* CAP's fields: shift and width. */
#define FISRIG_NVME_CAP_MQES_SHIFT 0   /* maximum queue entries supported, 0's based (16 bits) */
#define FISRIG_NVME_CAP_CQR_SHIFT 16   /* contiguous queues required */
#define FISRIG_NVME_CAP_AMS_SHIFT 17   /* arbitration mechanisms beyond round robin (2 bits) */
#define FISRIG_NVME_CAP_TO_SHIFT 24    /* worst-case time to ready, 500 ms units (8 bits) */
#define FISRIG_NVME_CAP_DSTRD_SHIFT 32 /* doorbell stride: 4 << DSTRD bytes (4 bits) */
#define FISRIG_NVME_CAP_NSSRS_SHIFT 36 /* NVM subsystem reset supported */
#define FISRIG_NVME_CAP_CSS_SHIFT 37   /* command sets supported (8 bits; bit 0 the NVM set) */
#define FISRIG_NVME_CAP_MPSMIN_SHIFT 48 /* memory page size minimum, 2^(12 + MPSMIN) (4 bits) */
#define FISRIG_NVME_CAP_MPSMAX_SHIFT 52 /* memory page size maximum (4 bits) */

/* CC's fields. */
#define FISRIG_NVME_CC_EN 0x1u
#define FISRIG_NVME_CC_CSS_SHIFT 4     /* I/O command set selected (3 bits) */
#define FISRIG_NVME_CC_MPS_SHIFT 7     /* memory page size, 2^(12 + MPS) (4 bits) */
#define FISRIG_NVME_CC_AMS_SHIFT 11    /* arbitration mechanism selected (3 bits) */
#define FISRIG_NVME_CC_SHN_SHIFT 14    /* shutdown notification (2 bits) */
#define FISRIG_NVME_CC_IOSQES_SHIFT 16 /* I/O SQ entry size, 2^n bytes (4 bits) */
#define FISRIG_NVME_CC_IOCQES_SHIFT 20 /* I/O CQ entry size, 2^n bytes (4 bits) */
#define FISRIG_NVME_SHN_NONE 0u
#define FISRIG_NVME_SHN_NORMAL 1u
#define FISRIG_NVME_SHN_ABRUPT 2u

/* CSTS's fields. */
#define FISRIG_NVME_CSTS_RDY 0x1u
#define FISRIG_NVME_CSTS_CFS 0x2u      /* controller fatal status */
#define FISRIG_NVME_CSTS_SHST_SHIFT 2  /* shutdown status (2 bits) */
#define FISRIG_NVME_SHST_NORMAL 0u
#define FISRIG_NVME_SHST_OCCURRING 1u
#define FISRIG_NVME_SHST_COMPLETE 2u

/* AQA's fields: the admin queues' sizes, 0's based. */
#define FISRIG_NVME_AQA_ASQS_SHIFT 0   /* 12 bits */
#define FISRIG_NVME_AQA_ACQS_SHIFT 16  /* 12 bits */

/* Admin command opcodes. */
#define FISRIG_NVME_ADMIN_DELETE_IO_SQ 0x00u
#define FISRIG_NVME_ADMIN_CREATE_IO_SQ 0x01u
#define FISRIG_NVME_ADMIN_GET_LOG_PAGE 0x02u
#define FISRIG_NVME_ADMIN_DELETE_IO_CQ 0x04u
#define FISRIG_NVME_ADMIN_CREATE_IO_CQ 0x05u
#define FISRIG_NVME_ADMIN_IDENTIFY 0x06u
#define FISRIG_NVME_ADMIN_ABORT 0x08u
#define FISRIG_NVME_ADMIN_SET_FEATURES 0x09u
#define FISRIG_NVME_ADMIN_GET_FEATURES 0x0Au
#define FISRIG_NVME_ADMIN_ASYNC_EVENT_REQUEST 0x0Cu
#define FISRIG_NVME_ADMIN_FORMAT_NVM 0x80u
#define FISRIG_NVME_ADMIN_SANITIZE 0x84u

/* NVM command set opcodes (I/O queues). */
#define FISRIG_NVME_CMD_FLUSH 0x00u
#define FISRIG_NVME_CMD_WRITE 0x01u
#define FISRIG_NVME_CMD_READ 0x02u
#define FISRIG_NVME_CMD_COMPARE 0x05u
#define FISRIG_NVME_CMD_WRITE_ZEROES 0x08u
#define FISRIG_NVME_CMD_DATASET_MANAGEMENT 0x09u

/* Read and Write's CDW12: NLB (15:0, 0's based), FUA (bit 30); Write Zeroes' DEAC (bit 25). */
#define FISRIG_NVME_RW_FUA (1u << 30)
#define FISRIG_NVME_WRITE_ZEROES_DEAC (1u << 25)
/* Dataset Management's CDW11: AD (deallocate, bit 2); CDW10: NR (7:0, 0's based). */
#define FISRIG_NVME_DSM_AD (1u << 2)
#define FISRIG_NVME_DSM_RANGE_BYTES 16u  /* context attributes, length in blocks, starting LBA */

/* Identify's CNS (CDW10 7:0). */
#define FISRIG_NVME_CNS_NAMESPACE 0x00u
#define FISRIG_NVME_CNS_CONTROLLER 0x01u
#define FISRIG_NVME_CNS_ACTIVE_NAMESPACES 0x02u
#define FISRIG_NVME_IDENTIFY_BYTES 4096u

/* Feature identifiers (Set/Get Features CDW10 7:0). */
#define FISRIG_NVME_FEAT_ARBITRATION 0x01u
#define FISRIG_NVME_FEAT_POWER_MANAGEMENT 0x02u
#define FISRIG_NVME_FEAT_VOLATILE_WRITE_CACHE 0x06u
#define FISRIG_NVME_FEAT_NUMBER_OF_QUEUES 0x07u

/* Log page identifiers (Get Log Page CDW10 7:0). */
#define FISRIG_NVME_LOG_ERROR 0x01u
#define FISRIG_NVME_LOG_SMART 0x02u
#define FISRIG_NVME_LOG_FIRMWARE_SLOT 0x03u

/* Status code types (the CQE's SCT). */
#define FISRIG_NVME_SCT_GENERIC 0u
#define FISRIG_NVME_SCT_COMMAND_SPECIFIC 1u
#define FISRIG_NVME_SCT_MEDIA 2u

/* Generic command status (SCT 0). */
#define FISRIG_NVME_SC_SUCCESS 0x00u
#define FISRIG_NVME_SC_INVALID_OPCODE 0x01u
#define FISRIG_NVME_SC_INVALID_FIELD 0x02u
#define FISRIG_NVME_SC_COMMAND_ID_CONFLICT 0x03u
#define FISRIG_NVME_SC_DATA_TRANSFER_ERROR 0x04u
#define FISRIG_NVME_SC_ABORTED_POWER_LOSS 0x05u
#define FISRIG_NVME_SC_INTERNAL_ERROR 0x06u
#define FISRIG_NVME_SC_ABORT_REQUESTED 0x07u
#define FISRIG_NVME_SC_ABORTED_SQ_DELETION 0x08u
#define FISRIG_NVME_SC_INVALID_NAMESPACE 0x0Bu
#define FISRIG_NVME_SC_COMMAND_SEQUENCE_ERROR 0x0Cu
#define FISRIG_NVME_SC_INVALID_PRP_OFFSET 0x13u
#define FISRIG_NVME_SC_LBA_OUT_OF_RANGE 0x80u
#define FISRIG_NVME_SC_CAPACITY_EXCEEDED 0x81u

/* Command specific status (SCT 1). */
#define FISRIG_NVME_SC_COMPLETION_QUEUE_INVALID 0x00u
#define FISRIG_NVME_SC_INVALID_QUEUE_IDENTIFIER 0x01u
#define FISRIG_NVME_SC_INVALID_QUEUE_SIZE 0x02u
#define FISRIG_NVME_SC_ABORT_LIMIT_EXCEEDED 0x03u
#define FISRIG_NVME_SC_ASYNC_EVENT_LIMIT_EXCEEDED 0x05u
#define FISRIG_NVME_SC_INVALID_LOG_PAGE 0x09u
#define FISRIG_NVME_SC_INVALID_FORMAT 0x0Au
#define FISRIG_NVME_SC_INVALID_QUEUE_DELETION 0x0Cu
#define FISRIG_NVME_SC_FEATURE_NOT_CHANGEABLE 0x0Eu

/* Media and data integrity errors (SCT 2). */
#define FISRIG_NVME_SC_WRITE_FAULT 0x80u
#define FISRIG_NVME_SC_UNRECOVERED_READ_ERROR 0x81u
#define FISRIG_NVME_SC_COMPARE_FAILURE 0x85u

/* The submission queue entry: 64 bytes, 16 dwords. */
#define FISRIG_NVME_SQE_BYTES 64u
#define FISRIG_NVME_CQE_BYTES 16u
struct fisrig_nvme_sqe {
  uint8_t opcode;
  uint8_t flags;        /* FUSE (1:0), PSDT (7:6): 0 for PRPs (SGLs: Invalid Field) */
  uint16_t cid;         /* command identifier */
  uint32_t nsid;
  uint32_t cdw2, cdw3;
  uint64_t mptr;
  uint64_t prp1, prp2;  /* the data pointer as PRPs */
  uint32_t cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;
};

/* The completion queue entry: 16 bytes. The status field (dword 3, 31:16): P (bit 0), SC
 * (8:1), SCT (11:9), CRD (13:12), M (14), DNR (15). */
struct fisrig_nvme_cqe {
  uint32_t dw0;         /* command specific */
  uint32_t dw1;
  uint16_t sqhd;        /* the SQ head pointer the controller has consumed to */
  uint16_t sqid;
  uint16_t cid;
  uint16_t status;
};
#define FISRIG_NVME_STATUS_P 0x1u
#define FISRIG_NVME_STATUS_SC_SHIFT 1
#define FISRIG_NVME_STATUS_SCT_SHIFT 9
#define FISRIG_NVME_STATUS_DNR 0x8000u

/* The status field of a CQE (phase bit aside) from a type and a code. */
static inline uint16_t fisrig_nvme_status(uint32_t sct, uint32_t sc, int dnr) {
  return (uint16_t)((sc << FISRIG_NVME_STATUS_SC_SHIFT) | (sct << FISRIG_NVME_STATUS_SCT_SHIFT) |
                    (dnr ? FISRIG_NVME_STATUS_DNR : 0u));
}

#endif
