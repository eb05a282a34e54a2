"""An NVMe command's record as `fisrig raw --protocol nvme` prints it: the CQE's status by
type and name (nvme.h's codes, by the status code type each belongs to), DNR, dword 0, and
the stamps engine_if.h defines at the rig's PCIe link, from submit."""
from __future__ import annotations

from fisrig_hw import contract as _c

# nvme.h's status codes by their type (its SCT): the names without FISRIG_NVME_SC_.
_BY_TYPE = {
    _c.FISRIG_NVME_SCT_GENERIC: ("SUCCESS", "INVALID_OPCODE", "INVALID_FIELD", "COMMAND_ID_CONFLICT",
                                 "DATA_TRANSFER_ERROR", "ABORTED_POWER_LOSS", "INTERNAL_ERROR", "ABORT_REQUESTED",
                                 "ABORTED_SQ_DELETION", "INVALID_NAMESPACE", "COMMAND_SEQUENCE_ERROR",
                                 "INVALID_PRP_OFFSET", "LBA_OUT_OF_RANGE", "CAPACITY_EXCEEDED"),
    _c.FISRIG_NVME_SCT_COMMAND_SPECIFIC: ("COMPLETION_QUEUE_INVALID", "INVALID_QUEUE_IDENTIFIER",
                                          "INVALID_QUEUE_SIZE", "ABORT_LIMIT_EXCEEDED", "ASYNC_EVENT_LIMIT_EXCEEDED",
                                          "INVALID_LOG_PAGE", "INVALID_FORMAT", "INVALID_QUEUE_DELETION",
                                          "FEATURE_NOT_CHANGEABLE"),
    _c.FISRIG_NVME_SCT_MEDIA: ("WRITE_FAULT", "UNRECOVERED_READ_ERROR", "COMPARE_FAILURE"),
}
NAMES = {(sct, getattr(_c, "FISRIG_NVME_SC_" + n)): n.replace("_", " ").lower()
         for sct, names in _BY_TYPE.items() for n in names}
TYPES = {_c.FISRIG_NVME_SCT_GENERIC: "generic", _c.FISRIG_NVME_SCT_COMMAND_SPECIFIC: "command specific",
         _c.FISRIG_NVME_SCT_MEDIA: "media"}
STAMPS = (("t_h2d_ns", "doorbell"), ("t_accept_ns", "SQE in"), ("t_data_first_ns", "first data TLP"),
          ("t_data_last_ns", "last data TLP"), ("t_status_ns", "CQE"), ("t_setup_ns", "MSI-X"))


def status_text(status: int) -> str:
    """The CQE's status field (phase bit clear) as nvme-cli's SCT << 8 | SC, type and name."""
    sct, sc = (status >> 9) & 7, (status >> 1) & 0xFF
    name = NAMES.get((sct, sc), "a code fisrig does not name")
    return f"{sct << 8 | sc:#05x} {name} ({TYPES.get(sct, f'type {sct}')}){', DNR' if status & 0x8000 else ''}"


def lines(row: dict, data: bytes | None) -> list[str]:
    """What raw prints of an NVMe command's record (records.parquet's row)."""
    queue = "the admin queue" if row["queue"] == 0 else f"I/O queue {row['queue']}"
    # records.parquet's result "ata_error" is the device's error, for NVMe a status not Successful.
    result = "error (its status)" if row["result"] == "ata_error" else row["result"]
    out = [f"NVMe command {row['command']:#04x} on {queue} (command id {row['tag']}): {result}",
           f"  status {status_text(row['nvme_status'])}, dword 0 {row['nvme_dw0']:#010x}",
           f"  data moved: {row['data_dwords'] * 4} bytes in its data TLPs"]
    t0 = row["t_submit_ns"]
    times = [f"{what} +{(row[col] - t0) / 1000:.3f} us" for col, what in STAMPS if row[col]]
    if times:
        out.append("  at the link, from submit: " + ", ".join(times))
    if data:
        out.append(f"  data in: {len(data)} bytes; first 32: {data[:32].hex(' ')}")
    return out
