"""librdmacm's enumerations under the names pyverbs gives them. The simulated device has no
connection manager (no IP interface): the suite imports these names, and its RDMA-CM tests
skip before using them."""

from enum import IntEnum


class rdma_cm_event_type(IntEnum):
    RDMA_CM_EVENT_ADDR_RESOLVED = 0
    RDMA_CM_EVENT_ADDR_ERROR = 1
    RDMA_CM_EVENT_ROUTE_RESOLVED = 2
    RDMA_CM_EVENT_ROUTE_ERROR = 3
    RDMA_CM_EVENT_CONNECT_REQUEST = 4
    RDMA_CM_EVENT_CONNECT_RESPONSE = 5
    RDMA_CM_EVENT_CONNECT_ERROR = 6
    RDMA_CM_EVENT_UNREACHABLE = 7
    RDMA_CM_EVENT_REJECTED = 8
    RDMA_CM_EVENT_ESTABLISHED = 9
    RDMA_CM_EVENT_DISCONNECTED = 10
    RDMA_CM_EVENT_DEVICE_REMOVAL = 11
    RDMA_CM_EVENT_MULTICAST_JOIN = 12
    RDMA_CM_EVENT_MULTICAST_ERROR = 13
    RDMA_CM_EVENT_ADDR_CHANGE = 14
    RDMA_CM_EVENT_TIMEWAIT_EXIT = 15


class rdma_cm_join_mc_attr_mask(IntEnum):
    RDMA_CM_JOIN_MC_ATTR_ADDRESS = 1
    RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS = 2


class rdma_cm_mc_join_flags(IntEnum):
    RDMA_MC_JOIN_FLAG_FULLMEMBER = 0
    RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER = 1


class rdma_port_space(IntEnum):
    RDMA_PS_IPOIB = 2
    RDMA_PS_TCP = 0x106
    RDMA_PS_UDP = 0x111
    RDMA_PS_IB = 0x13f


# every member is also a module-level name, as in pyverbs (e.IBV_QPT_RC)
for _enum in (rdma_cm_event_type,
              rdma_cm_join_mc_attr_mask,
              rdma_cm_mc_join_flags,
              rdma_port_space):
    globals().update(_enum.__members__)
del _enum

# plain constants
RAI_FAMILY = 8
RAI_NOROUTE = 4
RAI_NUMERICHOST = 2
RAI_PASSIVE = 1
RDMA_OPTION_ID = 0
RDMA_OPTION_ID_ACK_TIMEOUT = 3
