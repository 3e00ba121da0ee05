"""The seed of a simulation run: $SEED when set (to replay a failure), else a fresh one.

Every random test draws from it and prints it, so `SEED=<n> make test` replays a run.
"""

import logging
import os
import random


def seed_from_env():
    value = os.environ.get("SEED", "").strip()
    return int(value) if value else random.SystemRandom().randrange(1 << 32)


SEED = seed_from_env()


def rng_for(test_name, log=None):
    """A random stream of its own for one test, and the seed in the log to replay it."""
    (log or logging.getLogger("cocotb.tb")).info("%s: SEED=%d (replay with SEED=%d)",
                                                 test_name, SEED, SEED)
    return random.Random(f"{SEED}:{test_name}")
