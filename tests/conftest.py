"""What every test directory shares: the order the suite starts in.

`make test` runs the suite on both cores (pytest-xdist, `-n 2 --dist load --maxschedchunk 1`:
each worker holds two tests at first, then takes one more as it finishes one). The tests
marked `long` (each board's synthesis: 6 to 8 minutes of a core here with the quick flow,
8 to 14 with the full one; a quarter of the suite's CPU) go first, a short test after
each, so that the first worker starts on one and the second on the other at once. Collected in their place, both fell to one worker, one
after the other, with the tests it had been handed waiting behind them."""

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "long: one of the suite's longest tests, started first")


def pytest_collection_modifyitems(items):
    long = [item for item in items if item.get_closest_marker("long")]
    rest = [item for item in items if not item.get_closest_marker("long")]
    ordered = []
    for item in long:  # long, short, long, short, ...: the first two go to different workers
        ordered += [item] + rest[:1]
        rest = rest[1:]
    items[:] = ordered + rest
