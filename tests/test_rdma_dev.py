"""rdma_dev end to end (tb/test_rdma_dev.py) at each supported data width.

The cocotb tests run in two groups per width, one simulator process each, so pytest-xdist can
spread them: the 1 MiB messages (most of the run time at 64 bits) and everything else. Both
groups of a width share one build (simrun builds each top and parameter set once).
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import simrun  # noqa: E402

WIDTHS = [64, 256, 512]
MEGABYTE_TESTS = "test_megabyte_messages"
GROUPS = {  # COCOTB_TEST_FILTER patterns, matched against "test_rdma_dev.<test name>[/params]"
    "megabyte": rf"^test_rdma_dev\.{MEGABYTE_TESTS}(/|$)",
    "main": rf"^test_rdma_dev\.(?!{MEGABYTE_TESTS}(/|$))",
}


@pytest.mark.parametrize("group", list(GROUPS))
@pytest.mark.parametrize("w", WIDTHS)
def test_rdma_dev(w, group):
    simrun.run(
        toplevel="tb_rdma_dev",
        test_module="test_rdma_dev",
        parameters={"DATA_WIDTH": w},
        extra_env={"COCOTB_TEST_FILTER": GROUPS[group]},
    )
