"""What every test directory shares: the order the suite starts in.

`make test` runs the suite on both cores (pytest-xdist, `-n 2 --dist load`), which hands
each worker a first run of consecutive tests, then the rest as they free up. The tests
marked `long` (each board's synthesis: 6 to 12 minutes of a core here, a third of the
suite's CPU) go first, so the first worker starts on them at once while the other takes
the rest; collected last, as their directory is, they would run on after everything else
and leave one core idle for most of their time (measured: pytest 21.9 min against 37.7 on
one core)."""

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "long: one of the suite's longest tests, started first")


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.get_closest_marker("long") is None)  # stable: the rest keep their order
