"""Protection domains. The device has no PD object: a PD is a 16-bit number the driver hands
out, which MRs, AHs and QPs carry and the device compares."""

import errno

from ._sim import DeviceObject, rdma_error
from .base import PyverbsCM, PyverbsObject


class PD(DeviceObject, PyverbsCM):
    """A protection domain of a Context. Its MRs, AHs and QPs are closed with it."""

    _close_order = 5

    def __init__(self, creator, **kwargs):
        super().__init__()
        if kwargs.get("handle") is not None:
            raise rdma_error("Failed to import PD (the device cannot share objects)",
                             errno.EOPNOTSUPP)
        self.ctx = creator
        self._pd = creator.dev.alloc_pd()
        self._register(creator)

    @property
    def handle(self):
        return self._pd.pdn

    @property
    def pd(self):
        return self._pd.pdn

    def advise_mr(self, advise, flags, sg_list):
        raise rdma_error("Failed to advise MR (the device has no on-demand paging)",
                         errno.EOPNOTSUPP)

    def unimport(self):
        self.close()


class ParentDomainInitAttr(PyverbsObject):
    def __init__(self, pd=None, pd_context=None):
        super().__init__()
        self.pd = pd
        self.pd_context = pd_context
        self.comp_mask = 0


class ParentDomainContext(PyverbsObject):
    def __init__(self, pd=None, alloc_func=None, free_func=None, user_data=None):
        super().__init__()
        self.pd = pd
        self.user_data = user_data


class ParentDomain(PD):
    def __init__(self, context, attr=None):
        PyverbsObject.__init__(self)
        raise rdma_error("Failed to allocate parent domain (not supported by the device)",
                         errno.EOPNOTSUPP)
