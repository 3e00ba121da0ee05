"""Seeded random RDMA traffic (tb/test_random_traffic.py) at each supported data width.

The seed comes from $SEED, else a fresh one per test, printed; a failure names it, and
`SEED=<n> pytest tests/test_random_traffic.py` replays the run.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import simrun  # noqa: E402

sys.path.append(str(simrun.TB))
from seed import seed_from_env  # noqa: E402


# The program runs with its peers on the same port (the bypass) at every width, and at 256 bits
# again with them on the other port and (test_random_traffic_other_device) on the other device,
# each compared with the first: the packet path at the other widths is covered by test_wire
# and test_fabric, and a run on the packet path costs twice one through the bypass.
TRANSPARENCY_WIDTH = 256


@pytest.mark.parametrize("w", [64, 256, 512])
def test_random_traffic(w):
    seed = seed_from_env()
    print(f"random traffic at DATA_WIDTH={w}: SEED={seed}")
    runs = {"COCOTB_TEST_FILTER": r"^test_random_traffic\.random_traffic_loopback$"}
    if w == TRANSPARENCY_WIDTH:
        runs = {"COCOTB_TEST_FILTER":
                r"^test_random_traffic\.random_traffic_(loopback|other_port)$"}
    try:
        simrun.run(toplevel="tb_rdma_dev", test_module="test_random_traffic",
                   parameters={"DATA_WIDTH": w, "CABLE": 1}, name=f"random_w{w}",
                   extra_env={"SEED": str(seed), **runs})
        return
    except AssertionError as failed:  # simrun's report of the cocotb failures
        report = str(failed)
    # The seed leads the message, even when the simulator stopped before the test named it.
    pytest.fail(f"random traffic at DATA_WIDTH={w}: replay with SEED={seed}\n{report}",
                pytrace=False)


def test_random_traffic_other_device():
    """The same program with its peers on the other device of tb_fabric, compared with its run
    on one device's own ports (both in one simulation of tb_fabric), at 256 bits."""
    seed = seed_from_env()
    print(f"random traffic between devices: SEED={seed}")
    try:
        simrun.run(toplevel="tb_fabric", test_module="test_random_traffic",
                   parameters={"DATA_WIDTH": TRANSPARENCY_WIDTH}, name="random_fabric",
                   extra_env={"SEED": str(seed), "COCOTB_TEST_FILTER":
                              r"^test_random_traffic\.random_traffic_(loopback|other_device)$"})
        return
    except AssertionError as failed:
        report = str(failed)
    pytest.fail(f"random traffic between devices: replay with SEED={seed}\n{report}",
                pytrace=False)
