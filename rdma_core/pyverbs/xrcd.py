"""XRC domains: the device has no XRC transport (ibv_open_xrcd fails with EOPNOTSUPP)."""

import errno

from ._sim import rdma_error
from .base import PyverbsCM, PyverbsObject


class XRCDInitAttr(PyverbsObject):
    def __init__(self, comp_mask, oflags, fd):
        super().__init__()
        self.comp_mask = comp_mask
        self.oflags = oflags
        self.fd = fd


class XRCD(PyverbsCM):
    def __init__(self, context, init_attr):
        super().__init__()
        raise rdma_error("Failed to open XRCD (the device has no XRC transport)",
                         errno.EOPNOTSUPP)
