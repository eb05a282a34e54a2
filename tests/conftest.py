"""What every test directory shares: how the suite's tests are handed to the two workers.

`make test` runs the suite on both cores (pytest-xdist, `-n 2 --dist loadgroup`), which hands
out tests one at a time, but a group's tests all to one worker:

- A test that uses a module-scoped fixture is put in its module's group. Handed out singly,
  a module's tests went to both workers and each made the module's fixtures: the rtl runs
  behind tests/rtl/test_line_rate.py, test_targets_agree.py, test_board_target.py (40 to
  100 s of a core each) were made twice.
- The tests marked `long` (each board's synthesis: 6 to 8 minutes of a core here with the
  quick flow, a quarter of the suite's CPU) go first, one after the other: xdist gives each
  worker its first unit, then each a second, so the first goes to one worker and the second
  to the other and both start at once. Collected in their place, both fell to one worker,
  one after the other, with the tests it had been handed waiting behind them."""

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "long: one of the suite's longest tests, started first")


def _uses_a_module_fixture(item):
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(defs[-1].scope == "module" for defs in info.name2fixturedefs.values())


@pytest.hookimpl(tryfirst=True)  # before xdist's worker names the groups in the tests' ids
def pytest_collection_modifyitems(items):
    long = [item for item in items if item.get_closest_marker("long")]
    rest = [item for item in items if not item.get_closest_marker("long")]
    for item in rest:
        if _uses_a_module_fixture(item) and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    items[:] = long + rest
