"""depacketizer unit tests (tb/test_depacketizer.py) at each supported data width."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import simrun  # noqa: E402

RTL_FILES = ["depacketizer.v", "crc_stream.v", "ib_icrc.v",
             "packetizer.v", "pkt_header.v", "pkt_append.v"]   # the packetizer feeds one test


@pytest.mark.parametrize("w", [64, 256, 512])
def test_depacketizer(w):
    simrun.run(
        toplevel="tb_depacketizer",
        test_module="test_depacketizer",
        parameters={"DATA_WIDTH": w},
        name=f"depacketizer_w{w}",
        sources=[simrun.RTL / f for f in RTL_FILES] + [simrun.TB / "hdl" / "tb_depacketizer.v"],
    )
