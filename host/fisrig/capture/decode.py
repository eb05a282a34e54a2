"""A captured FIS's fields from its dwords (SATA 3.x 10.5), for capture.parquet's columns
and the text listing: what an analyzer decodes of each FIS type."""
from __future__ import annotations

import numpy as np

from fisrig.capture.format import FIS_BY_NAME


def _byte(dw: np.ndarray, n: int) -> np.ndarray:
    return (dw >> np.uint32(8 * n)) & np.uint32(0xFF)


def fields(kind: np.ndarray, ftype: np.ndarray, header: np.ndarray) -> dict[str, np.ndarray]:
    """Decoded columns for entries (kind, FIS type and header dwords, as capture.bin holds
    them); a field a FIS does not carry is masked (-1). Register FISes: command and features
    (H2D), status, error (D2H), LBA and count; Set Device Bits: status, error and its SActive bits; DMA
    Setup: the tag (its buffer identifier) and transfer count; PIO Setup: status, error,
    LBA, count and transfer count."""
    n = len(kind)
    fis = kind == 0
    h = header.astype(np.uint32)
    is_ = {name: fis & (ftype == code) for name, code in FIS_BY_NAME.items()}
    reg = is_["reg_h2d"] | is_["reg_d2h"] | is_["pio_setup"]
    status_fis = is_["reg_d2h"] | is_["set_device_bits"] | is_["pio_setup"]
    none = np.full(n, -1, dtype=np.int64)
    command = np.where(is_["reg_h2d"], _byte(h[:, 0], 2), none)
    features = np.where(is_["reg_h2d"], _byte(h[:, 0], 3).astype(np.int64) | _byte(h[:, 2], 3).astype(np.int64) << 8, none)
    status = np.where(status_fis, _byte(h[:, 0], 2), none)
    error = np.where(status_fis, _byte(h[:, 0], 3), none)
    lba = (h[:, 1].astype(np.int64) & 0xFFFFFF) | ((h[:, 2].astype(np.int64) & 0xFFFFFF) << 24)
    lba = np.where(reg, lba, none)
    count = np.where(reg, h[:, 3].astype(np.int64) & 0xFFFF, none)
    sactive = np.where(is_["set_device_bits"], h[:, 1].astype(np.int64), none)
    transfer = np.where(is_["dma_setup"], h[:, 5].astype(np.int64),
                        np.where(is_["pio_setup"], h[:, 4].astype(np.int64) & 0xFFFF, none))
    dma_tag = np.where(is_["dma_setup"], h[:, 1].astype(np.int64) & 0x1F, none)
    return {"command": command, "features": features, "status": status, "error": error, "lba": lba, "fis_count": count,
            "sactive": sactive, "transfer_bytes": transfer, "dma_tag": dma_tag}
