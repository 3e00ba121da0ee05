"""Flow steering (ibv_create_flow): the device has none (EOPNOTSUPP, as from a provider without
a create_flow verb, rxe among them)."""

import errno

from ._sim import rdma_error
from .base import PyverbsCM, PyverbsObject
from .enums import ibv_flow_attr_type


class FlowAttr(PyverbsObject):
    def __init__(self, num_of_specs=0, flow_type=ibv_flow_attr_type.IBV_FLOW_ATTR_NORMAL,
                 priority=0, port=1, flags=0):
        super().__init__()
        self.num_of_specs = num_of_specs
        self.type = flow_type
        self.priority = priority
        self.port = port
        self.flags = flags
        self.specs = []


class FlowAction(PyverbsObject):
    """A flow action (a provider's, e.g. mlx5's): none exists on this device."""


class Flow(PyverbsCM):
    def __init__(self, qp, flow_attr):
        super().__init__()
        raise rdma_error("Failed to create flow (the device has no flow steering)",
                         errno.EOPNOTSUPP)
