"""Seeded random RDMA traffic (tb/test_random_traffic.py) at each supported data width.

The seed comes from $SEED, else a fresh one per test, printed; a failure names it, and
`SEED=<n> pytest tests/test_random_traffic.py` replays the run.
"""

import os
import random
import sys
import xml.etree.ElementTree as ET

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import simrun  # noqa: E402


def _seed():
    value = os.environ.get("SEED", "")
    return int(value) if value.strip() else random.SystemRandom().randrange(1 << 32)


def _failure_messages(name):
    """The failure messages in the run's results file (under pytest the runner names it after
    the test), if any."""
    files = sorted((simrun.BUILD / simrun.simulator() / name).glob("*.xml"),
                   key=lambda path: path.stat().st_mtime)
    try:
        root = ET.parse(files[-1]).getroot()
    except (IndexError, OSError, ET.ParseError):
        return ""
    return "\n".join(f.get("message", "") for f in root.iter("failure"))


@pytest.mark.parametrize("w", [64, 256, 512])
def test_random_traffic(w):
    seed = _seed()
    name = f"random_w{w}"
    print(f"random traffic at DATA_WIDTH={w}: SEED={seed}")
    # The cocotb runner hands the simulator this process's sys.path as PYTHONPATH, where this
    # folder (with a file of the same name) comes first: put tb/ ahead for the run.
    sys.path.insert(0, str(simrun.TB))
    try:
        simrun.run(toplevel="tb_rdma_dev", test_module="test_random_traffic",
                   parameters={"DATA_WIDTH": w}, name=name, extra_env={"SEED": str(seed)})
    except SystemExit as e:  # how the runner reports a failed test under pytest
        pytest.fail(f"random traffic failed at DATA_WIDTH={w} (exit {e.code}); replay with "
                    f"SEED={seed}\n{_failure_messages(name)}", pytrace=False)
    finally:
        sys.path.remove(str(simrun.TB))
