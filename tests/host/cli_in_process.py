"""The fisrig command run in the test's own process, for the tests that hold its output and
exit codes to what the README promises."""
from __future__ import annotations

from fisrig import cli


def fisrig(argv, capsys) -> tuple[int, str, str]:
    """The command in this process: (exit code, stdout, stderr)."""
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as e:  # argparse's own refusals
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err
