"""Packets injected on rdma_dev's RX links by the testbench (tb/test_rx_errors.py) at each
supported data width; the same build as test_rdma_dev (links open to the testbench)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import simrun  # noqa: E402


@pytest.mark.parametrize("w", [64, 256, 512])
def test_rx_errors(w):
    simrun.run(toplevel="tb_rdma_dev", test_module="test_rx_errors", parameters={"DATA_WIDTH": w})
