"""Link sniffer self-test (tb/test_sniffer.py on tb/hdl/tb_link_loop.v) at two link widths."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import simrun  # noqa: E402


@pytest.mark.parametrize("w", [64, 256])
def test_sniffer(w):
    simrun.run(
        toplevel="tb_link_loop",
        test_module="test_sniffer",
        parameters={"DATA_WIDTH": w},
        name=f"sniffer_w{w}",
        sources=[simrun.TB / "hdl" / "tb_link_loop.v"],
    )
