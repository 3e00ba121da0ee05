"""mlx5 direct verbs: the simulated device is not an mlx5 device."""

from .._absent import absent_class, module_getattr

for _name in ("Mlx5Context", "Mlx5DVContextAttr", "Mlx5DVQPInitAttr", "Mlx5QP",
              "Mlx5DVDCInitAttr", "Mlx5DCIStreamInitAttr", "Mlx5DevxObj", "Mlx5UMEM", "Mlx5UAR",
              "WqeDataSeg", "WqeCtrlSeg", "Wqe", "Mlx5Cqe64", "Mlx5DVCQInitAttr", "Mlx5CQ"):
    globals()[_name] = absent_class(_name, "mlx5")
del _name

__getattr__ = module_getattr(__name__, "mlx5")
