"""Shared receive queues (ibv_create_srq, ibv_modify_srq, ibv_query_srq, ibv_post_srq_recv):
the device's SRQs. QPs created with `srq` take their receives from one; its limit event arrives
as an IBV_EVENT_SRQ_LIMIT_REACHED async event (Context.get_async_event). Basic SRQs only: XRC
and tag-matching SRQs are EOPNOTSUPP, and so is a change of max_wr (no SRQ resize)."""

import errno
import functools

from tb.verbs import MAX_SGE

from . import enums as e
from ._sim import DeviceObject, rdma_error
from .base import PyverbsCM, PyverbsObject
from .device import MAX_WQ_LOG2
from .enums import ibv_ops_flags, ibv_ops_wr_opcode
from .pd import PD
from .wr import post_recv_chain


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


class SRQ(DeviceObject, PyverbsCM):
    """ibv_srq: created through a PD (`SrqInitAttr`) or a Context (`SrqInitAttrEx` of type
    BASIC with a PD)."""

    _close_order = 2    # after the QPs on it

    def __init__(self, creator, attr, srq_context=None):
        super().__init__()
        what = "Failed to create SRQ"
        if isinstance(creator, PD):
            pd = creator
        else:
            if attr.comp_mask & e.IBV_SRQ_INIT_ATTR_TYPE and attr.srq_type != e.IBV_SRQT_BASIC:
                raise rdma_error(f"{what}: SRQ type {attr.srq_type} (basic SRQs only)",
                                 errno.EOPNOTSUPP)
            if not attr.comp_mask & e.IBV_SRQ_INIT_ATTR_PD or not isinstance(attr.pd, PD):
                raise rdma_error(f"{what}: ibv_create_srq_ex needs a PD", errno.EINVAL)
            pd = attr.pd
        if not 1 <= attr.max_wr <= 1 << MAX_WQ_LOG2 or not 0 <= attr.max_sge <= MAX_SGE:
            raise rdma_error(f"{what}: max_wr {attr.max_wr}, max_sge {attr.max_sge}",
                             errno.EINVAL)
        dev = pd.ctx.dev
        if len(dev.srqs) >= dev.num_srq:
            raise rdma_error(f"{what}: all {dev.num_srq} SRQs of the device are in use",
                             errno.ENOMEM)
        self.sim = pd.ctx.sim
        self.pd = pd
        self.srq_context = srq_context
        # ibv_create_srq ignores srq_limit: the limit is armed by ibv_modify_srq
        self._srq = self.sim.verb(what, pd._pd.create_srq, attr.max_wr, max(attr.max_sge, 1))
        self._register(pd)

    @property
    def srq(self):
        return self._srq.srqn

    def get_srq_num(self):
        raise rdma_error("Failed to get SRQ number (only XRC SRQs have one)", errno.EOPNOTSUPP)

    def post_recv(self, wr, bad_wr=None):
        """ibv_post_srq_recv: the chain of RecvWRs, all up to the first bad one."""
        post_recv_chain(self.sim, wr, bad_wr, self._srq.max_sge, self._srq.post_recv,
                        "Failed to post SRQ recv")

    def modify(self, attr, comp_mask):
        """ibv_modify_srq: IBV_SRQ_LIMIT arms the limit event (0 disarms); IBV_SRQ_MAX_WR is
        EINVAL (the device does not resize SRQs)."""
        what = "Failed to modify SRQ"
        if comp_mask & e.IBV_SRQ_MAX_WR or comp_mask & ~(e.IBV_SRQ_MAX_WR | e.IBV_SRQ_LIMIT):
            raise rdma_error(f"{what}: attribute mask {comp_mask:#x}", errno.EINVAL)
        if comp_mask & e.IBV_SRQ_LIMIT:
            if not 0 <= attr.srq_limit < self._srq.max_wr:
                raise rdma_error(f"{what}: srq_limit {attr.srq_limit} of {self._srq.max_wr} "
                                 f"entries", errno.EINVAL)
            self.sim.verb(what, self._srq.modify, attr.srq_limit)

    def query(self):
        status = self.sim.verb("Failed to query SRQ", self._srq.query)
        return SrqAttr(1 << status.log2, max(status.max_sge, 1), status.limit)

    def post_srq_ops(self, op, bad_op=None):
        raise rdma_error("Failed to post SRQ ops (the device has no tag matching)",
                         errno.EOPNOTSUPP)

    def _destroy(self):
        self.sim.verb("Failed to destroy SRQ", destroy_srq, self.sim, self._srq)

    def _release(self):
        return functools.partial(destroy_srq, self.sim, self._srq)

    def __str__(self):
        return f"SRQ\n{'Number':<22}: {self.srq}\n{'max_wr':<22}: {self._srq.max_wr}\n"


async def destroy_srq(sim, srq):
    await srq.destroy()
    sim.heap.free(srq.wq.base)


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
