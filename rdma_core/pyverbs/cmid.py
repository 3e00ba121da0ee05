"""librdmacm (RDMA connection manager): it resolves IP addresses to RDMA devices, and no IP
interface sits on the simulated device's InfiniBand ports (no IPoIB): every CM object that
would reach a device is refused with ENODEV, as rdma_getaddrinfo and rdma_create_id fail for
an address no RDMA device has. The suite skips its CM tests before asking (the device has no
net interface)."""

import errno

from ._sim import rdma_error
from .base import PyverbsCM, PyverbsObject
from .pyverbs_error import PyverbsError


def _no_cm(what):
    return rdma_error(f"Failed to {what} (no IP interface on the simulated device's ports: "
                      f"RDMA-CM has no device to reach)", errno.ENODEV)


class ConnParam(PyverbsObject):
    def __init__(self, resources=1, depth=1, flow_control=0, retry=5, rnr_retry=5, srq=0,
                 qp_num=0, data_len=0):
        super().__init__()
        self.responder_resources = resources
        self.initiator_depth = depth
        self.flow_control = flow_control
        self.retry_count = retry
        self.rnr_retry_count = rnr_retry
        self.srq = srq
        self.qpn = qp_num
        self.private_data = bytes(data_len)

    def set_private_data(self, data):
        self.private_data = bytes(data)


class JoinMCAttrEx(PyverbsObject):
    def __init__(self, addr, comp_mask=0, join_flags=0):
        super().__init__()
        self.addr = addr
        self.comp_mask = comp_mask
        self.join_flags = join_flags


class AddrInfo(PyverbsCM):
    def __init__(self, src=None, dst=None, src_service=None, dst_service=None,
                 port_space=0, flags=0):
        super().__init__()
        raise _no_cm(f"resolve {dst or src}")


class CMEventChannel(PyverbsCM):
    def __init__(self):
        super().__init__()
        raise _no_cm("create an RDMA-CM event channel")


class CMEvent(PyverbsCM):
    def __init__(self, channel):
        super().__init__()
        raise PyverbsError("CMEvent: no RDMA-CM event channel exists on this device")


class UDParam(PyverbsObject):
    def __init__(self, cm_event):
        super().__init__()
        raise PyverbsError("UDParam: no RDMA-CM event carries one on this device")


class CMID(PyverbsCM):
    def __init__(self, creator=None, qp_init_attr=None, pd=None, port_space=None,
                 listen_id=None):
        super().__init__()
        raise _no_cm("create an RDMA-CM ID")
