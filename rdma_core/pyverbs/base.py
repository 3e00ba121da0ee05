"""pyverbs' base classes and errno helpers."""

import logging

from tb.verbs import inc_rkey  # noqa: F401  (pyverbs.base exports it)

from . import _sim
from .pyverbs_error import PyverbsRDMAError


def PyverbsRDMAErrno(msg):
    """A PyverbsRDMAError carrying the errno of the last verb that failed (C's errno)."""
    return PyverbsRDMAError(msg, _sim.last_errno)




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
