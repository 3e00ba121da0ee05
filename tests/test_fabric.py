"""Two rdma_dev instances cabled port to port (tb/test_fabric.py on tb/hdl/tb_fabric.v) at each
supported data width."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import simrun  # noqa: E402


@pytest.mark.parametrize("w", [64, 256, 512])
def test_fabric(w):
    simrun.run(
        toplevel="tb_fabric",
        test_module="test_fabric",
        parameters={"DATA_WIDTH": w},
    )
