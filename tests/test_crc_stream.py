"""crc_stream and ib_icrc unit tests (tb/test_crc_stream.py) at each supported data width."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import simrun  # noqa: E402

RTL_FILES = ["crc_stream.v", "ib_icrc.v"]


@pytest.mark.parametrize("w", [64, 256, 512])
def test_crc_stream(w):
    simrun.run(
        toplevel="tb_crc_stream",
        test_module="test_crc_stream",
        parameters={"DATA_WIDTH": w},
        name=f"crc_stream_w{w}",
        sources=[simrun.RTL / f for f in RTL_FILES] + [simrun.TB / "hdl" / "tb_crc_stream.v"],
    )
