"""Shared receive queues: the device has none (ibv_create_srq fails with EOPNOTSUPP)."""

import errno

from ._sim import rdma_error
from .base import PyverbsCM, PyverbsObject
from .enums import ibv_ops_flags, ibv_ops_wr_opcode


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


class OpsWr(PyverbsObject):
    """A tag-matching operation on an SRQ (struct ibv_ops_wr, for SRQ.post_srq_ops)."""

    def __init__(self, wr_id=0, next_wr=None, opcode=ibv_ops_wr_opcode.IBV_WR_TAG_ADD,
                 flags=ibv_ops_flags.IBV_OPS_SIGNALED, unexpected_cnt=0, recv_wr_id=0,
                 num_sge=None, tag=0, mask=0, sg_list=None, handle=0):
        super().__init__()
        self.wr_id = wr_id
        self.next_wr = next_wr
        self.opcode = opcode
        self.flags = flags
        self.unexpected_cnt = unexpected_cnt
        self.recv_wr_id = recv_wr_id
        self.sg_list = list(sg_list or [])
        self.num_sge = len(self.sg_list) if num_sge is None else num_sge
        self.tag = tag
        self.mask = mask
        self.handle = handle
