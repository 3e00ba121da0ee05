"""dma_mover unit tests (tb/test_dma_mover.py) at each supported data width."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import simrun  # noqa: E402

RTL_FILES = ["dma_mover.v", "dma_rd_engine.v", "dma_wr_engine.v", "dma_realign.v",
             "dma_axi_burst.v", "dma_skid.v"]


@pytest.mark.parametrize("w", [64, 256, 512])
def test_dma_mover(w):
    simrun.run(
        toplevel="tb_dma_mover",
        test_module="test_dma_mover",
        parameters={"DATA_WIDTH": w, "ADDR_WIDTH": 32, "AXI_ID_WIDTH": 4, "LEN_WIDTH": 32},
        name=f"dma_mover_w{w}",
        sources=[simrun.RTL / f for f in RTL_FILES] + [simrun.TB / "hdl" / "tb_dma_mover.v"],
    )
