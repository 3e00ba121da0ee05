"""mlx5 direct verbs objects: the simulated device is not an mlx5 device."""

from .._absent import absent_class, module_getattr

Mlx5DvObj = absent_class("Mlx5DvObj", "mlx5")
__getattr__ = module_getattr(__name__, "mlx5")
