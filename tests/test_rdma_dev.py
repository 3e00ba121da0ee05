"""rdma_dev end to end (tb/test_rdma_dev.py) at each supported data width.

The cocotb tests run in two groups per width, one simulator process each, so pytest-xdist can
spread them: the 1 MiB messages (most of the run time at 64 bits) and everything else. Both
groups of a width share one build folder; the build step takes a lock on it, so two workers
never compile into it at once (the second finds the build up to date).
"""

import fcntl
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import simrun  # noqa: E402

WIDTHS = [64, 256, 512]
MEGABYTE_TESTS = "test_megabyte_messages"
GROUPS = {  # COCOTB_TEST_FILTER patterns, matched against "test_rdma_dev.<test name>[/params]"
    "megabyte": rf"^test_rdma_dev\.{MEGABYTE_TESTS}(/|$)",
    "main": rf"^test_rdma_dev\.(?!{MEGABYTE_TESTS}(/|$))",
}


class _LockedBuild:
    """A cocotb runner whose build step holds an exclusive lock on `<build folder>.lock`."""

    def __init__(self, runner):
        self._runner = runner

    def build(self, *, build_dir, **kwargs):
        lock = Path(build_dir).with_name(Path(build_dir).name + ".lock")
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            self._runner.build(build_dir=build_dir, **kwargs)

    def __getattr__(self, name):
        return getattr(self._runner, name)


@pytest.mark.parametrize("group", list(GROUPS))
@pytest.mark.parametrize("w", WIDTHS)
def test_rdma_dev(w, group, monkeypatch):
    get_runner = simrun.get_runner
    monkeypatch.setattr(simrun, "get_runner", lambda sim: _LockedBuild(get_runner(sim)))
    simrun.run(
        toplevel="tb_rdma_dev",
        test_module="test_rdma_dev",
        parameters={"DATA_WIDTH": w},
        name=f"rdma_dev_w{w}",
        extra_env={"COCOTB_TEST_FILTER": GROUPS[group]},
    )
