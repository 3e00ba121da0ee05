"""DMA barriers for providers that build WQEs themselves (mlx5 DevX): none apply here. The
simulated device's driver writes host memory before its doorbells in simulation order."""


def _unsupported(name):
    def function(*args, **kwargs):
        raise NotImplementedError(f"pyverbs.dma_util.{name}: no provider here builds its own "
                                  f"WQEs")
    return function


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _unsupported(name)
