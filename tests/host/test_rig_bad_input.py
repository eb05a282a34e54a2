"""Bad input to the rig (issue 16, section 4): programs the host's compiler never makes,
handed to a target as they are. A malformed program, a descriptor whose transfer cannot
be done (its data past the RAM window the engine may touch), a workload past the end of
the drive: each is refused by the firmware's VM before anything reaches the wire, with an
END record that says where and why. A descriptor the engine cannot carry out (a LINK or
POWER operation it does not know) ends REFUSED, and the program goes on after it.
tests/rtl/test_rig_bad_input_rtl.py hands the same programs to the rig's firmware on the
gateware (`CASES`, `outcome_of`)."""
import pytest

from fisrig import program_format as pf
from fisrig.records import store
from fisrig.targets import RunSinks, make_target

CAPACITY = 1953120  # tiny-1gb's LBAs, as the program header says
IDENTIFY = pf.op_raw(pf.desc("pio_in", 0xEC, count=1, data="ram"), result=pf.RESULT["ok"])


def _workload(lba_start: int, lba_span: int) -> bytes:
    return pf.op_workload(pattern="uniform", queue_depth=1, ncq=False, data="stamp", compress_pct=100, read_pct=0,
                          trim_pct=0, flush_pct=0, fua=False, seed=1, zipf_theta=0, lba_start=lba_start,
                          lba_span=lba_span, stop_commands=4, stop_bytes=0, stop_ticks=0, sizes=[(8, 1)])


def _trace_writes_from_ram() -> bytes:
    e = pf.trace_entries(2)
    e["op"], e["lba"], e["sectors"] = pf.TRACE_OPS["W"], [0, 64], 8
    return pf.op_trace(e, queue_depth=1, ncq=False, data="ram")


def _unknown_instruction() -> list[bytes]:
    ops = [pf.op_mark(1), IDENTIFY]
    return ops + [bytes([0x7F, 0, 4, 0])]  # opcode 127, 4 bytes: a head alone


# name -> (the program's instructions, the status, the reason, the offset of the one refused
# (None: the run goes on), the (protocol, command, result) of every record but the END)
HEADER = pf.HEADER_BYTES
CASES = {
    "malformed": (_unknown_instruction(), "bad_program", "unknown instruction",
                  HEADER + len(pf.op_mark(1)) + len(IDENTIFY), []),
    "transfer past the RAM window": (
        [IDENTIFY, pf.op_raw(pf.desc("dma_in", 0x25, count=256, data="ram"))], "bad_program",
        "RAW data in RAM outside the data window", HEADER + len(IDENTIFY), []),
    "workload past the end": ([IDENTIFY, _workload(CAPACITY - 4, 8)], "bad_program",
                              "LBA span past the end of the drive", HEADER + len(IDENTIFY), []),
    "capture past its payload": (
        [IDENTIFY, pf.op_capture(pf.CAPTURE_ARM, windows=1, payload_dwords=pf.CAPTURE_MAX_PAYLOAD_DWORDS + 1)],
        "bad_program", "CAPTURE: an unknown operation or trigger, 0 windows, or too many payload dwords",
        HEADER + len(IDENTIFY), []),
    # Found by tests/fuzz/vm_fuzz.c; its input is kept in tests/fuzz/regressions/vm/.
    "trace writes from RAM": ([IDENTIFY, _trace_writes_from_ram()], "bad_program",
                              "trace writes need a generated data source", HEADER + len(IDENTIFY), []),
    "operations the engine refuses": (
        [pf.op_raw(pf.desc("link", 9), result=pf.RESULT["refused"]),
         pf.op_raw(pf.desc("power", pf.POWER_STAGE, features=9, count=1), result=pf.RESULT["refused"]),
         IDENTIFY, _workload(0, 64)], "done", "", None,
        [(pf.PROTO["link"], 9, "refused"), (pf.PROTO["power"], pf.POWER_STAGE, "refused"),
         (pf.PROTO["pio_in"], 0xEC, "ok")] + [(pf.PROTO["dma_out"], 0x35, "ok")] * 4),
}


def outcome_of(target_name: str, case: str, tmp_path) -> tuple:
    """The case's program run on a target: its outcome and its records but the END."""
    ops, *_ = CASES[case]
    program, raw = tmp_path / "program.bin", tmp_path / "records.bin"
    program.write_bytes(pf.program(ops, CAPACITY))
    outcome = make_target(target_name, "tiny-1gb").run(program, raw, RunSinks(), quiet=True)
    rec = store.read_raw(raw)
    kinds = [pf.RECORD_KINDS[k] for k in rec["kind"]]
    assert kinds[-1] == "end" and kinds.count("end") == 1, kinds  # one END, the last
    assert pf.VM_STATUS[rec["result"][-1]] == outcome.status  # it says what the outcome says
    assert int(rec["lba"][-1]) == outcome.error_offset
    return outcome, [(int(r["protocol"]), int(r["command"]), pf.RESULTS[r["result"]])
                     for r, k in zip(rec[:-1], kinds) if k in ("command", "link", "power")]


def check(case: str, outcome, records) -> None:
    _, status, why, offset, expected = CASES[case]
    assert (outcome.status, outcome.error) == (status, why), outcome
    if offset is not None:
        assert outcome.error_offset == offset, outcome
    assert records == expected, records


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_refused_with_a_record_and_the_rig_goes_on(case, tmp_path):
    check(case, *outcome_of("model", case, tmp_path))
