"""port_counters unit tests (tb/test_port_counters.py)."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import simrun  # noqa: E402


def test_port_counters():
    simrun.run(
        toplevel="tb_port_counters",
        test_module="test_port_counters",
        parameters={"PKTLEN_WIDTH": 11},
        name="port_counters",
        sources=[simrun.RTL / "port_counters.v", simrun.TB / "hdl" / "tb_port_counters.v"],
    )
