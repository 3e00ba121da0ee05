"""dma-buf allocation from a GPU's DRI render node: the simulated host has no GPU."""

import errno

from ._sim import rdma_error
from .base import PyverbsCM


class DmaBuf(PyverbsCM):
    def __init__(self, size, gpu=0, gtt=0):
        super().__init__()
        raise rdma_error(f"Failed to open /dev/dri/renderD{128 + gpu} (the simulated host has "
                         f"no GPU)", errno.ENOENT)
