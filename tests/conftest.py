"""What every test directory shares: the order the suite starts in.

`make test` runs the suite on both cores (pytest-xdist, `-n 2 --dist load`), which hands
the first tests out one a worker, in collection order. The tests marked `long` (each board's
synthesis: 6 to 12 minutes of a core here, a third of the suite's CPU) go first, so that each
starts at once on a core of its own while the other tests share out the rest; collected
last, as their directory is, they would leave one core idle at the end."""

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "long: one of the suite's longest tests, started first")


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.get_closest_marker("long") is None)  # stable: the rest keep their order
