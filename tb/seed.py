"""The seed of a simulation run: $SEED when set (to replay a failure), else a fresh one; and
the tier the random tests size themselves for.

Every random test draws from the seed and prints it, so `SEED=<n> make test` replays a run.
`make regress` sets REGRESS=1: the random tests then run their long forms (more iterations,
the biggest transfers), which `make test` leaves out to stay within its time.
"""

import logging
import os
import random


def seed_from_env():
    value = os.environ.get("SEED", "").strip()
    return int(value) if value else random.SystemRandom().randrange(1 << 32)


SEED = seed_from_env()
REGRESS = os.environ.get("REGRESS", "0") not in ("", "0")
# The data widths a block's own tests (tests/test_<block>.py) build: make test the two ends, as
# every device test runs the blocks at 256 bits; make regress and make coverage all three.
UNIT_WIDTHS = [64, 256, 512] if REGRESS or os.environ.get("FUNCTIONAL_COVERAGE", "0") not in \
    ("", "0") else [64, 512]


def rng_for(test_name, log=None):
    """A random stream of its own for one test, and the seed in the log to replay it."""
    (log or logging.getLogger("cocotb.tb")).info("%s: SEED=%d (replay with SEED=%d)",
                                                 test_name, SEED, SEED)
    return random.Random(f"{SEED}:{test_name}")
