"""Shared receive queues: the device has none (ibv_create_srq fails with EOPNOTSUPP)."""

import errno

from ._sim import rdma_error
from .base import PyverbsCM, PyverbsObject


class SrqAttr(PyverbsObject):
    def __init__(self, max_wr=100, max_sge=1, srq_limit=0):
        super().__init__()
        self.max_wr = max_wr
        self.max_sge = max_sge
        self.srq_limit = srq_limit


class SrqInitAttr(PyverbsObject):
    def __init__(self, attr=None):
        super().__init__()
        self.attr = attr if attr is not None else SrqAttr()
        self.max_wr = self.attr.max_wr
        self.max_sge = self.attr.max_sge
        self.srq_limit = self.attr.srq_limit


class SrqInitAttrEx(PyverbsObject):
    def __init__(self, max_wr=100, max_sge=1, srq_limit=0):
        super().__init__()
        self.max_wr = max_wr
        self.max_sge = max_sge
        self.srq_limit = srq_limit
        self.srq_type = 0
        self.pd = None
        self.xrcd = None
        self.cq = None
        self.comp_mask = 0
        self.tm_cap = None


class SRQ(PyverbsCM):
    def __init__(self, creator, attr, srq_context=None):
        super().__init__()
        raise rdma_error("Failed to create SRQ (the device has no shared receive queues)",
                         errno.EOPNOTSUPP)
