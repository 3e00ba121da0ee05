"""rdma_dev's packet path on a device whose two ports are cabled to each other
(tb/test_wire.py) at each supported data width."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import simrun  # noqa: E402


@pytest.mark.parametrize("w", [64, 256, 512])
def test_wire(w):
    simrun.run(
        toplevel="tb_rdma_dev",
        test_module="test_wire",
        parameters={"DATA_WIDTH": w, "CABLE": 1},
    )
