"""EFA enumerations: the simulated device is not an EFA device."""

from .._absent import module_getattr

__getattr__ = module_getattr(__name__, "EFA")
