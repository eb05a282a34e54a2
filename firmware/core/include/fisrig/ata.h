/* The SATA wire's numbers, written once (Serial ATA 3.x, ACS-3): the FIS types, the ATA
   opcodes fisrig knows and the protocol each runs with (engine_if.h's enum fisrig_protocol),
   SMART's subcommands, the status and error bits, and the log pages the rig and the drive
   read. The firmware's VM, the simulated drive and its device side (C++) include this
   header; the gateware and the host take it through scripts/gen_contract.py
   (hw/fisrig_hw/contract.py). tests/host/test_wire_once.py fails on a second definition.
   An NVMe command set goes beside it, as its own header. */
#ifndef FISRIG_ATA_H
#define FISRIG_ATA_H

#include <stdint.h>

#include "fisrig/engine_if.h"

/* FIS types (SATA 3.x 10.5). */
#define FISRIG_FIS_REG_H2D 0x27u
#define FISRIG_FIS_REG_D2H 0x34u
#define FISRIG_FIS_DMA_ACTIVATE 0x39u
#define FISRIG_FIS_DMA_SETUP 0x41u
#define FISRIG_FIS_DATA 0x46u
#define FISRIG_FIS_BIST 0x58u
#define FISRIG_FIS_PIO_SETUP 0x5Fu
#define FISRIG_FIS_SET_DEVICE_BITS 0xA1u

/* Opcodes, each with the protocol the drive answers it with (its _PROTO). */
#define FISRIG_ATA_DATA_SET_MANAGEMENT 0x06u
#define FISRIG_ATA_DATA_SET_MANAGEMENT_PROTO FISRIG_PROTO_DMA_OUT
#define FISRIG_ATA_READ_DMA_EXT 0x25u
#define FISRIG_ATA_READ_DMA_EXT_PROTO FISRIG_PROTO_DMA_IN
#define FISRIG_ATA_READ_LOG_EXT 0x2Fu
#define FISRIG_ATA_READ_LOG_EXT_PROTO FISRIG_PROTO_PIO_IN
#define FISRIG_ATA_WRITE_DMA_EXT 0x35u
#define FISRIG_ATA_WRITE_DMA_EXT_PROTO FISRIG_PROTO_DMA_OUT
#define FISRIG_ATA_WRITE_DMA_FUA_EXT 0x3Du
#define FISRIG_ATA_WRITE_DMA_FUA_EXT_PROTO FISRIG_PROTO_DMA_OUT
#define FISRIG_ATA_READ_LOG_DMA_EXT 0x47u
#define FISRIG_ATA_READ_LOG_DMA_EXT_PROTO FISRIG_PROTO_DMA_IN
#define FISRIG_ATA_READ_FPDMA_QUEUED 0x60u
#define FISRIG_ATA_READ_FPDMA_QUEUED_PROTO FISRIG_PROTO_FPDMA_IN
#define FISRIG_ATA_WRITE_FPDMA_QUEUED 0x61u
#define FISRIG_ATA_WRITE_FPDMA_QUEUED_PROTO FISRIG_PROTO_FPDMA_OUT
#define FISRIG_ATA_SEND_FPDMA_QUEUED 0x64u
#define FISRIG_ATA_SEND_FPDMA_QUEUED_PROTO FISRIG_PROTO_FPDMA_OUT
#define FISRIG_ATA_SMART 0xB0u /* its protocol is its subcommand's (FEATURES 7:0, below) */
#define FISRIG_ATA_SANITIZE 0xB4u
#define FISRIG_ATA_SANITIZE_PROTO FISRIG_PROTO_NON_DATA
#define FISRIG_ATA_FLUSH_CACHE 0xE7u
#define FISRIG_ATA_FLUSH_CACHE_PROTO FISRIG_PROTO_NON_DATA
#define FISRIG_ATA_FLUSH_CACHE_EXT 0xEAu
#define FISRIG_ATA_FLUSH_CACHE_EXT_PROTO FISRIG_PROTO_NON_DATA
#define FISRIG_ATA_IDENTIFY_DEVICE 0xECu
#define FISRIG_ATA_IDENTIFY_DEVICE_PROTO FISRIG_PROTO_PIO_IN
#define FISRIG_ATA_SET_FEATURES 0xEFu
#define FISRIG_ATA_SET_FEATURES_PROTO FISRIG_PROTO_NON_DATA
#define FISRIG_ATA_SECURITY_SET_PASSWORD 0xF1u
#define FISRIG_ATA_SECURITY_SET_PASSWORD_PROTO FISRIG_PROTO_PIO_OUT
#define FISRIG_ATA_SECURITY_ERASE_PREPARE 0xF3u
#define FISRIG_ATA_SECURITY_ERASE_PREPARE_PROTO FISRIG_PROTO_NON_DATA
#define FISRIG_ATA_SECURITY_ERASE_UNIT 0xF4u
#define FISRIG_ATA_SECURITY_ERASE_UNIT_PROTO FISRIG_PROTO_PIO_OUT

/* SMART's subcommands (FEATURES 7:0), each with its protocol. */
#define FISRIG_SMART_READ_DATA 0xD0u
#define FISRIG_SMART_READ_DATA_PROTO FISRIG_PROTO_PIO_IN
#define FISRIG_SMART_READ_THRESHOLDS 0xD1u /* obsolete since ACS-2, still what tools read */
#define FISRIG_SMART_READ_THRESHOLDS_PROTO FISRIG_PROTO_PIO_IN
#define FISRIG_SMART_ENABLE_OPERATIONS 0xD8u
#define FISRIG_SMART_ENABLE_OPERATIONS_PROTO FISRIG_PROTO_NON_DATA
#define FISRIG_SMART_DISABLE_OPERATIONS 0xD9u
#define FISRIG_SMART_DISABLE_OPERATIONS_PROTO FISRIG_PROTO_NON_DATA
#define FISRIG_SMART_RETURN_STATUS 0xDAu
#define FISRIG_SMART_RETURN_STATUS_PROTO FISRIG_PROTO_NON_DATA
/* LBA 23:8 of every SMART command: the key (RETURN STATUS answers with it while no
   threshold is exceeded). */
#define FISRIG_SMART_KEY 0xC24Fu

/* SMART READ DATA's attribute table, in the layout every SMART tool reads (smartctl,
   hdparm, the kernel): a 2-byte revision, then 30 entries of 12 bytes (id, flags (2),
   value, worst, raw (6, little-endian), reserved). ACS-3 leaves the table to the vendor. */
#define FISRIG_SMART_TABLE_OFFSET 2u
#define FISRIG_SMART_ENTRY_BYTES 12u
#define FISRIG_SMART_MAX_ATTRIBUTES 30u
#define FISRIG_SMART_RAW_OFFSET 5u /* in an entry */
/* The attributes SSD makers count host and NAND writes in (a write amplification is the
   second's growth over the first's): 512-byte units each. */
#define FISRIG_SMART_HOST_SECTORS_WRITTEN 241u
#define FISRIG_SMART_NAND_SECTORS_WRITTEN 249u

/* SANITIZE BLOCK ERASE EXT: its FEATURES and the LBA signature ACS-3 requires ("BkEr"). */
#define FISRIG_ATA_SANITIZE_BLOCK_ERASE 0x0012u
#define FISRIG_ATA_SANITIZE_BLOCK_ERASE_KEY 0x426B4572u

/* WRITE FPDMA QUEUED's DEVICE bit 7: Forced Unit Access. */
#define FISRIG_ATA_DEVICE_FUA 0x80u

/* Status register bits. */
#define FISRIG_ATA_STATUS_BSY 0x80u
#define FISRIG_ATA_STATUS_DRDY 0x40u
#define FISRIG_ATA_STATUS_DF 0x20u
#define FISRIG_ATA_STATUS_DRQ 0x08u
#define FISRIG_ATA_STATUS_SENSE 0x02u /* sense data available (ACS-3) */
#define FISRIG_ATA_STATUS_ERR 0x01u

/* Error register bits. */
#define FISRIG_ATA_ERROR_ICRC 0x80u
#define FISRIG_ATA_ERROR_UNC 0x40u
#define FISRIG_ATA_ERROR_IDNF 0x10u
#define FISRIG_ATA_ERROR_ABRT 0x04u

/* Log addresses (READ LOG EXT / READ LOG DMA EXT). */
#define FISRIG_LOG_DIRECTORY 0x00u
#define FISRIG_LOG_DEVICE_STATISTICS 0x04u
#define FISRIG_LOG_NCQ_ERROR 0x10u
#define FISRIG_LOG_SATA_PHY_EVENTS 0x11u
#define FISRIG_LOG_NCQ_SEND_RECEIVE 0x13u

/* The protocol the drive answers `command` with (SMART: by its subcommand in FEATURES);
   a command it does not know it aborts in a Register D2H: non-data. */
static inline uint8_t fisrig_ata_protocol(uint8_t command, uint16_t features) {
  switch (command) {
    case FISRIG_ATA_DATA_SET_MANAGEMENT: return FISRIG_ATA_DATA_SET_MANAGEMENT_PROTO;
    case FISRIG_ATA_READ_DMA_EXT: return FISRIG_ATA_READ_DMA_EXT_PROTO;
    case FISRIG_ATA_READ_LOG_EXT: return FISRIG_ATA_READ_LOG_EXT_PROTO;
    case FISRIG_ATA_WRITE_DMA_EXT: return FISRIG_ATA_WRITE_DMA_EXT_PROTO;
    case FISRIG_ATA_WRITE_DMA_FUA_EXT: return FISRIG_ATA_WRITE_DMA_FUA_EXT_PROTO;
    case FISRIG_ATA_READ_LOG_DMA_EXT: return FISRIG_ATA_READ_LOG_DMA_EXT_PROTO;
    case FISRIG_ATA_READ_FPDMA_QUEUED: return FISRIG_ATA_READ_FPDMA_QUEUED_PROTO;
    case FISRIG_ATA_WRITE_FPDMA_QUEUED: return FISRIG_ATA_WRITE_FPDMA_QUEUED_PROTO;
    case FISRIG_ATA_SEND_FPDMA_QUEUED: return FISRIG_ATA_SEND_FPDMA_QUEUED_PROTO;
    case FISRIG_ATA_SANITIZE: return FISRIG_ATA_SANITIZE_PROTO;
    case FISRIG_ATA_FLUSH_CACHE: return FISRIG_ATA_FLUSH_CACHE_PROTO;
    case FISRIG_ATA_FLUSH_CACHE_EXT: return FISRIG_ATA_FLUSH_CACHE_EXT_PROTO;
    case FISRIG_ATA_IDENTIFY_DEVICE: return FISRIG_ATA_IDENTIFY_DEVICE_PROTO;
    case FISRIG_ATA_SET_FEATURES: return FISRIG_ATA_SET_FEATURES_PROTO;
    case FISRIG_ATA_SECURITY_SET_PASSWORD: return FISRIG_ATA_SECURITY_SET_PASSWORD_PROTO;
    case FISRIG_ATA_SECURITY_ERASE_PREPARE: return FISRIG_ATA_SECURITY_ERASE_PREPARE_PROTO;
    case FISRIG_ATA_SECURITY_ERASE_UNIT: return FISRIG_ATA_SECURITY_ERASE_UNIT_PROTO;
    case FISRIG_ATA_SMART:
      switch (features & 0xFFu) {
        case FISRIG_SMART_READ_DATA: return FISRIG_SMART_READ_DATA_PROTO;
        case FISRIG_SMART_READ_THRESHOLDS: return FISRIG_SMART_READ_THRESHOLDS_PROTO;
        default: return FISRIG_PROTO_NON_DATA;
      }
    default: return FISRIG_PROTO_NON_DATA;
  }
}

#endif /* FISRIG_ATA_H */
