"""A plan's steps over NVMe (`protocol = "nvme"` in [plan]): each step whose meaning carries
over becomes the NVMe engine's instructions (program.h FISRIG_OP_NVME_*, docs/nvme.md), and
a step without an NVMe form yet is refused with its file and line."""
from __future__ import annotations

import struct

from fisrig import program_format as pf
from fisrig.compile.estimate import Cost
from fisrig.plan import Step

# nvme.h's numbers the steps send.
ADMIN_IDENTIFY, ADMIN_FORMAT_NVM, ADMIN_SANITIZE = 0x06, 0x80, 0x84
CMD_FLUSH, CMD_DATASET_MANAGEMENT = 0x00, 0x09
CNS_CONTROLLER = 0x01
DSM_AD = 1 << 2
FORMAT_SES_USER_DATA = 1 << 9   # Format NVM's SES: user data erase
SANITIZE_BLOCK_ERASE = 2        # Sanitize's SANACT
DSM_RANGES = pf.NVME_RAW_BYTES // 16  # a command's ranges: its data-out, 16 bytes each
DSM_RANGE_MAX = 0xFFFFFFFF            # a range's blocks
STATUS_TYPE_AND_CODE = 0x7FE          # the CQE status field's SCT and SC (phase bit clear)
NAMESPACE = 1

# The step kinds an NVMe plan takes; the others say so (their NVMe forms are to come:
# docs/nvme.md, "Not yet").
NVME_STEPS = {"workload", "fill", "sweep", "flush", "identify", "trim", "secure_erase", "sanitize", "drain",
              "idle", "comreset", "power_off", "power_on", "power_cut_at", "power_loss", "pts_iops", "replay", "current", "raw"}
# A raw step's SATA fields, which an NVMe one does not take; and its own, which a SATA one does not.
SATA_RAW_KEYS = ("features", "lba", "count", "device", "aux", "icc", "protocol", "expect_error")
NVME_RAW_KEYS = ("queue", "nsid", "cdw2", "cdw3", "cdw10", "cdw11", "cdw12", "cdw13", "cdw14", "cdw15", "data_bytes")
DWORD = 0xFFFFFFFF


class NvmeSteps:
    """The compiler's NVMe forms (mixed into compile._Compiler)."""

    def check_nvme_step(self, step: Step) -> None:
        if step.do not in NVME_STEPS:
            raise self.err(step, "do", f"a {step.do} step has no NVMe form yet (protocol = \"nvme\"; "
                                       f"NVMe plans take: {', '.join(sorted(NVME_STEPS))})")

    def nvme_queue_count(self, step: Step, qd: int) -> int:
        """The I/O queues a generator keeps `qd` deep: its `queues` (1 unless said)."""
        queues = step.args.get("queues", 1)
        if not 1 <= queues <= pf.NVME_QUEUES:
            raise self.err(step, "queues", f"queues = {queues}: the NVMe engine has 1..{pf.NVME_QUEUES}")
        if queues * qd > pf.NVME_INFLIGHT:
            raise self.err(step, "queues", f"queues = {queues} at queue_depth {qd} are {queues * qd} commands in "
                                           f"flight; the VM keeps at most {pf.NVME_INFLIGHT}")
        return queues

    def nvme_queue_depth(self, step: Step, default_qd: int) -> int:
        qd = step.args.get("queue_depth", default_qd)
        # NVMe queues every command: SATA's DMA (ncq = false, one command at a time) carries
        # over as queue depth 1, NCQ as the queue depth asked.
        if step.args.get("ncq", True) is False and qd != 1:
            raise self.err(step, "ncq", f"ncq = false over NVMe is one command at a time: queue_depth 1, not {qd} "
                                        "(NVMe queues every command, on `queues` I/O queues)")
        if not 1 <= qd < pf.NVME_QUEUE_ENTRIES:
            raise self.err(step, "queue_depth", f"queue_depth {qd}: an NVMe queue holds 1..{pf.NVME_QUEUE_ENTRIES - 1}")
        return qd

    def nvme_raw(self, step: Step) -> None:
        """One NVMe command with every SQE field the step gives (the command identifier and
        the PRPs are the engine's), on `queue`, its expectation on the result and the CQE's
        status (`expect_status`: SCT << 8 | SC, as nvme-cli prints it)."""
        a = step.args
        for key in SATA_RAW_KEYS:
            if key in a:
                raise self.err(step, key, f"{key} is a SATA raw step's; an NVMe one takes command (the opcode), "
                                          f"{', '.join(NVME_RAW_KEYS)}, expect, expect_status, timeout_ms, data_out")
        if "command" not in a:
            raise self.err(step, None, "raw needs command (the NVMe opcode)")
        opcode = a["command"]
        if not 0 <= opcode <= 0xFF:
            raise self.err(step, "command", f"command = {opcode}: an NVMe opcode is 0..255")
        for key in NVME_RAW_KEYS[1:-1]:
            if not 0 <= a.get(key, 0) <= DWORD:
                raise self.err(step, key, f"{key} = {a[key]}: a dword is 0..{DWORD:#x}")
        qid = a.get("queue", 1)
        if not 0 <= qid <= pf.NVME_QUEUES:
            raise self.err(step, "queue", f"queue = {qid}: 0 (admin) or an I/O queue 1..{pf.NVME_QUEUES}")
        data_bytes = a.get("data_bytes", 0)
        if not 0 <= data_bytes <= pf.NVME_DATA_MAX:
            raise self.err(step, "data_bytes", f"data_bytes = {data_bytes}: 0..{pf.NVME_DATA_MAX} (the engine's buffer)")
        data_out = self.nvme_data_out(step)
        expect = a.get("expect", "ok")
        self.one_of(step, "expect", expect, ("ok", "error", "any"))
        status = a.get("expect_status")
        if status is not None and not 0 <= status <= 0x7FF:
            raise self.err(step, "expect_status", f"expect_status = {status}: SCT << 8 | SC is 0..0x7ff")
        if (expect == "ok" and status) or (expect == "error" and status == 0) or (expect == "any" and status is not None):
            raise self.err(step, "expect_status", f"expect = {expect!r} cannot match expect_status = {status:#x}")
        timeout = self.fits(step, "timeout_ms", "timeout_ticks", int(a.get("timeout_ms", 0) * pf.TICK_HZ / 1000),
                            "in 150 MHz ticks")
        entry = pf.sqe(opcode, nsid=a.get("nsid", 0), cdw2=a.get("cdw2", 0), cdw3=a.get("cdw3", 0),
                       **{f"cdw{i}": a.get(f"cdw{i}", 0) for i in range(10, 16)})
        head = pf.nvme_desc(qid, data_bytes=max(data_bytes, len(data_out)),
                            data="ram" if data_out or data_bytes else "none", timeout_ticks=timeout)
        result = {"ok": pf.RESULT["ok"], "error": pf.RESULT["ata_error"], "any": pf.ANY_RESULT}[expect]
        want = 0 if expect == "ok" else status
        self.ops.append(pf.op_nvme_raw(head, entry, result=result, data_out=data_out,
                                       status_mask=STATUS_TYPE_AND_CODE if want is not None else 0,
                                       status_value=(want or 0) << 1))
        self.cost(Cost(commands=1))

    def nvme_data_out(self, step: Step) -> bytes:
        """An NVMe raw step's `data_out` file: at most the bytes the VM stages."""
        return self.read_data_out(step, lambda size: None if 0 < size <= pf.NVME_RAW_BYTES else
                                  f"{size} bytes; an NVMe raw command sends 1..{pf.NVME_RAW_BYTES}")

    def nvme_command(self, qid: int, entry: bytes, *, data_bytes: int = 0, data_out: bytes = b"") -> None:
        """One NVMe command that must end OK (Successful status)."""
        self.ops.append(nvme_op(qid, entry, data_bytes=data_bytes, data_out=data_out))
        self.cost(Cost(commands=1))

    def nvme_flush(self, step: Step | None = None) -> None:
        self.nvme_command(1, FLUSH)

    def nvme_identify(self, step: Step) -> None:
        self.nvme_command(0, pf.sqe(ADMIN_IDENTIFY, cdw10=CNS_CONTROLLER), data_bytes=4096)

    def nvme_secure_erase(self, step: Step) -> None:
        self.nvme_command(0, pf.sqe(ADMIN_FORMAT_NVM, nsid=NAMESPACE, cdw10=FORMAT_SES_USER_DATA))

    def nvme_sanitize(self, step: Step) -> None:
        self.nvme_command(0, pf.sqe(ADMIN_SANITIZE, cdw10=SANITIZE_BLOCK_ERASE))

    def nvme_trim(self, step: Step) -> None:
        """Deallocate: Dataset Management with the AD bit, 256 ranges a command at most."""
        for op in deallocate_ops(*self.span(step)):
            self.ops.append(op)
            self.cost(Cost(commands=1))


def nvme_op(qid: int, entry: bytes, *, data_bytes: int = 0, data_out: bytes = b"", must_succeed: bool = True) -> bytes:
    """One NVMe command's instruction: one that must end OK (Successful status), or any way."""
    head = pf.nvme_desc(qid, data_bytes=max(data_bytes, len(data_out)), data="ram" if data_out or data_bytes else "none")
    if not must_succeed:
        return pf.op_nvme_raw(head, entry, data_out=data_out)
    return pf.op_nvme_raw(head, entry, result=pf.RESULT["ok"], status_mask=STATUS_TYPE_AND_CODE, status_value=0,
                          data_out=data_out)


FLUSH = pf.sqe(CMD_FLUSH, nsid=NAMESPACE)


def deallocate_ops(start: int, count: int, must_succeed: bool = True) -> list[bytes]:
    """Deallocates of [start, start + count) on queue 1: DSM_RANGES ranges a command."""
    ranges = []
    while count:
        n = min(count, DSM_RANGE_MAX)
        ranges.append(struct.pack("<IIQ", 0, n, start))
        start, count = start + n, count - n
    return [nvme_op(1, pf.sqe(CMD_DATASET_MANAGEMENT, nsid=NAMESPACE, cdw10=len(part) - 1, cdw11=DSM_AD),
                    data_out=b"".join(part), must_succeed=must_succeed)
            for part in (ranges[i:i + DSM_RANGES] for i in range(0, len(ranges), DSM_RANGES))]
