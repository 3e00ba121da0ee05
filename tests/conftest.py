"""Longest first, by the durations recorded in .test_durations (the file pytest-split shards
by): pytest-xdist then starts the long simulations at once, and with `--dist worksteal` the
short ones fill the cores around them, so no core idles through the last minutes. Tests with
no recorded duration go first: a new test is never the one left running alone at the end.
"""

import json
from pathlib import Path

import pytest

DURATIONS = Path(__file__).resolve().parent.parent / ".test_durations"


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items):
    yield   # after every plugin (pytest-split's shard selection among them)
    try:
        recorded = json.loads(DURATIONS.read_text())
    except FileNotFoundError:
        recorded = {}
    items.sort(key=lambda item: -recorded.get(item.nodeid, float("inf")))
