"""mlx5 enumerations: the simulated device is not an mlx5 device, so only its tests, which
skip first, would use them."""

from .._absent import module_getattr

__getattr__ = module_getattr(__name__, "mlx5")
