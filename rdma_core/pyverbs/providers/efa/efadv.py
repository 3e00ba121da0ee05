"""EFA direct verbs: the simulated device is not an EFA device."""

from ...cq import CQEX
from .._absent import absent_class, module_getattr

EfaCQ = absent_class("EfaCQ", "EFA", CQEX)
__getattr__ = module_getattr(__name__, "EFA")
