"""pyverbs' base classes and errno helpers."""

import logging

from . import _sim
from .pyverbs_error import PyverbsRDMAError


def PyverbsRDMAErrno(msg):
    """A PyverbsRDMAError carrying the errno of the last verb that failed (C's errno)."""
    return PyverbsRDMAError(msg, _sim.last_errno)


def inc_rkey(rkey):
    """`rkey` with its low (key) byte incremented, as ibv_inc_rkey does."""
    return (rkey & ~0xFF) | ((rkey + 1) & 0xFF)


class PyverbsObject:
    def __init__(self):
        self.logger = logging.getLogger(type(self).__name__)

    def set_log_level(self, val):
        self.logger.setLevel(val)


class PyverbsCM(PyverbsObject):
    """A pyverbs object usable as a context manager: leaving the block closes it."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        pass
