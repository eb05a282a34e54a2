"""atheris target: any bytes as a plan file, through what `fisrig run` does with one before
anything runs (parse and check, compile for the tiny-1gb drive, estimate). The only
acceptable refusal is an InputError of one line (the CLI prints it as `fisrig: WHERE: WHAT`
and exits 2); any other exception, a compiled program without the program header's magic,
or an estimate that cannot be (no records, or a disk bound under its expected size) is a
finding.

Run by scripts/fuzz.py (make fuzz), with libFuzzer's flags: corpus directories, then
-max_total_time=N and the rest."""
import sys

import atheris

# The plan's path (parse, check, compile, estimate) is instrumented; the trace generators
# and readers are numpy inside, where atheris's comparison hook keeps the arrays an `==`
# returns alive (the process grew to 4 GB in 240 s), and they take no plan text.
with atheris.instrument_imports(include=["fisrig"], exclude=["fisrig.traces"]):
    from fisrig.compile import estimate
    from fisrig import plan
    from fisrig.compile import compile_plan
    from fisrig.errors import InputError
    from fisrig.program_format import PROGRAM_MAGIC

CAPACITY = 1953120  # the tiny-1gb drive's LBAs, as tests/host/test_plan_fuzz.py compiles for


def one(data: bytes) -> None:
    try:
        p = plan.parse(data, "<fuzz>")
        compiled = compile_plan(p, CAPACITY)
    except InputError as e:
        if "\n" in str(e):
            raise AssertionError(f"a refusal of more than one line: {e!r}") from None
        return
    program = bytes(compiled.program)
    if int.from_bytes(program[:4], "little") != PROGRAM_MAGIC:
        raise AssertionError(f"compiled to {len(program)} bytes that are not a program")
    est = estimate.of(compiled.costs, len(program))
    if est.records < 1 or not est.disk_bytes_max >= est.disk_bytes > 0:
        raise AssertionError(f"an estimate that cannot be: {est}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, one)
    atheris.Fuzz()
