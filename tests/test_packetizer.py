"""packetizer unit tests (tb/test_packetizer.py) at each supported data width."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import simrun  # noqa: E402

RTL_FILES = ["packetizer.v", "pkt_header.v", "pkt_append.v", "crc_stream.v", "ib_icrc.v"]


@pytest.mark.parametrize("w", [64, 256, 512])
def test_packetizer(w):
    simrun.run(
        toplevel="tb_packetizer",
        test_module="test_packetizer",
        parameters={"DATA_WIDTH": w},
        name=f"packetizer_w{w}",
        sources=[simrun.RTL / f for f in RTL_FILES] + [simrun.TB / "hdl" / "tb_packetizer.v"],
    )
