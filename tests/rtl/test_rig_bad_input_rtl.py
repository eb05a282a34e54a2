"""Bad input to the rig on the gateware (issue 16, section 4): tests/host/test_rig_bad_input.py's
programs handed to the rig's firmware (VexRiscv) as they are: the firmware's VM refuses the
malformed program, the transfer past its RAM window and the workload past the drive's end
before anything reaches the engine, with the END record and the console saying where and
why; the engine ends the LINK and POWER operations it does not know REFUSED, and the
program goes on after them. About 5 s a case once the SoC is built."""
import pytest

from test_rig_bad_input import CASES, check, outcome_of  # tests/host (pytest.ini)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_on_the_gateware(case, tmp_path):
    check(case, *outcome_of("rtl", case, tmp_path))
