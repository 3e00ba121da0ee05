"""libibverbs' enumerations under the names pyverbs gives them: one IntEnum per C enum
(ibv_qp_type, ibv_access_flags, ...), each member also a module-level name. The values are
the libibverbs ABI (infiniband/verbs.h of rdma-core 44), which every provider shares; a value
the simulated device does not implement is still named here, so the suite can ask for it
and be told it is not supported."""

from enum import IntEnum


class ibv_access_flags(IntEnum):
    IBV_ACCESS_LOCAL_WRITE = 1
    IBV_ACCESS_REMOTE_WRITE = 2
    IBV_ACCESS_REMOTE_READ = 4
    IBV_ACCESS_REMOTE_ATOMIC = 8
    IBV_ACCESS_MW_BIND = 16
    IBV_ACCESS_ZERO_BASED = 32
    IBV_ACCESS_ON_DEMAND = 64
    IBV_ACCESS_HUGETLB = 128
    IBV_ACCESS_RELAXED_ORDERING = 0x100000


class ibv_atomic_cap(IntEnum):
    IBV_ATOMIC_NONE = 0
    IBV_ATOMIC_HCA = 1
    IBV_ATOMIC_GLOB = 2


class ibv_counter_description(IntEnum):
    IBV_COUNTER_PACKETS = 0
    IBV_COUNTER_BYTES = 1


class ibv_cq_init_attr_mask(IntEnum):
    IBV_CQ_INIT_ATTR_MASK_FLAGS = 1
    IBV_CQ_INIT_ATTR_MASK_PD = 2


class ibv_create_cq_attr_flags(IntEnum):
    IBV_CREATE_CQ_ATTR_SINGLE_THREADED = 1
    IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN = 2


class ibv_create_cq_wc_flags(IntEnum):
    IBV_WC_EX_WITH_BYTE_LEN = 1
    IBV_WC_EX_WITH_IMM = 2
    IBV_WC_EX_WITH_QP_NUM = 4
    IBV_WC_EX_WITH_SRC_QP = 8
    IBV_WC_EX_WITH_SLID = 16
    IBV_WC_EX_WITH_SL = 32
    IBV_WC_EX_WITH_DLID_PATH_BITS = 64
    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP = 128
    IBV_WC_EX_WITH_CVLAN = 0x100
    IBV_WC_EX_WITH_FLOW_TAG = 0x200
    IBV_WC_EX_WITH_TM_INFO = 0x400
    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK = 0x800


class ibv_device_cap_flags(IntEnum):
    IBV_DEVICE_RESIZE_MAX_WR = 1
    IBV_DEVICE_BAD_PKEY_CNTR = 2
    IBV_DEVICE_BAD_QKEY_CNTR = 4
    IBV_DEVICE_RAW_MULTI = 8
    IBV_DEVICE_AUTO_PATH_MIG = 16
    IBV_DEVICE_CHANGE_PHY_PORT = 32
    IBV_DEVICE_UD_AV_PORT_ENFORCE = 64
    IBV_DEVICE_CURR_QP_STATE_MOD = 128
    IBV_DEVICE_SHUTDOWN_PORT = 0x100
    IBV_DEVICE_INIT_TYPE = 0x200
    IBV_DEVICE_PORT_ACTIVE_EVENT = 0x400
    IBV_DEVICE_SYS_IMAGE_GUID = 0x800
    IBV_DEVICE_RC_RNR_NAK_GEN = 0x1000
    IBV_DEVICE_SRQ_RESIZE = 0x2000
    IBV_DEVICE_N_NOTIFY_CQ = 0x4000
    IBV_DEVICE_MEM_WINDOW = 0x20000
    IBV_DEVICE_UD_IP_CSUM = 0x40000
    IBV_DEVICE_XRC = 0x100000
    IBV_DEVICE_MEM_MGT_EXTENSIONS = 0x200000
    IBV_DEVICE_MEM_WINDOW_TYPE_2A = 0x800000
    IBV_DEVICE_MEM_WINDOW_TYPE_2B = 0x1000000
    IBV_DEVICE_RC_IP_CSUM = 0x2000000
    IBV_DEVICE_RAW_IP_CSUM = 0x4000000
    IBV_DEVICE_MANAGED_FLOW_STEERING = 0x20000000


class ibv_event_type(IntEnum):
    IBV_EVENT_CQ_ERR = 0
    IBV_EVENT_QP_FATAL = 1
    IBV_EVENT_QP_REQ_ERR = 2
    IBV_EVENT_QP_ACCESS_ERR = 3
    IBV_EVENT_COMM_EST = 4
    IBV_EVENT_SQ_DRAINED = 5
    IBV_EVENT_PATH_MIG = 6
    IBV_EVENT_PATH_MIG_ERR = 7
    IBV_EVENT_DEVICE_FATAL = 8
    IBV_EVENT_PORT_ACTIVE = 9
    IBV_EVENT_PORT_ERR = 10
    IBV_EVENT_LID_CHANGE = 11
    IBV_EVENT_PKEY_CHANGE = 12
    IBV_EVENT_SM_CHANGE = 13
    IBV_EVENT_SRQ_ERR = 14
    IBV_EVENT_SRQ_LIMIT_REACHED = 15
    IBV_EVENT_QP_LAST_WQE_REACHED = 16
    IBV_EVENT_CLIENT_REREGISTER = 17
    IBV_EVENT_GID_CHANGE = 18
    IBV_EVENT_WQ_FATAL = 19


class ibv_flow_attr_type(IntEnum):
    IBV_FLOW_ATTR_NORMAL = 0
    IBV_FLOW_ATTR_ALL_DEFAULT = 1
    IBV_FLOW_ATTR_MC_DEFAULT = 2
    IBV_FLOW_ATTR_SNIFFER = 3


class ibv_flow_flags(IntEnum):
    IBV_FLOW_ATTR_FLAGS_DONT_TRAP = 2
    IBV_FLOW_ATTR_FLAGS_EGRESS = 4


class ibv_flow_spec_type(IntEnum):
    IBV_FLOW_SPEC_ETH = 32
    IBV_FLOW_SPEC_IPV4 = 48
    IBV_FLOW_SPEC_IPV6 = 49
    IBV_FLOW_SPEC_IPV4_EXT = 50
    IBV_FLOW_SPEC_ESP = 52
    IBV_FLOW_SPEC_TCP = 64
    IBV_FLOW_SPEC_UDP = 65
    IBV_FLOW_SPEC_VXLAN_TUNNEL = 80
    IBV_FLOW_SPEC_GRE = 81
    IBV_FLOW_SPEC_MPLS = 96
    IBV_FLOW_SPEC_INNER = 0x100
    IBV_FLOW_SPEC_ACTION_TAG = 0x1000
    IBV_FLOW_SPEC_ACTION_DROP = 0x1001
    IBV_FLOW_SPEC_ACTION_HANDLE = 0x1002
    IBV_FLOW_SPEC_ACTION_COUNT = 0x1003


class ibv_fork_status(IntEnum):
    IBV_FORK_DISABLED = 0
    IBV_FORK_ENABLED = 1
    IBV_FORK_UNNEEDED = 2


class ibv_gid_type(IntEnum):
    IBV_GID_TYPE_IB = 0
    IBV_GID_TYPE_ROCE_V1 = 1
    IBV_GID_TYPE_ROCE_V2 = 2


class ibv_gid_type_sysfs(IntEnum):
    IBV_GID_TYPE_SYSFS_IB_ROCE_V1 = 0
    IBV_GID_TYPE_SYSFS_ROCE_V2 = 1


class ibv_mig_state(IntEnum):
    IBV_MIG_MIGRATED = 0
    IBV_MIG_REARM = 1
    IBV_MIG_ARMED = 2


class ibv_mtu(IntEnum):
    IBV_MTU_256 = 1
    IBV_MTU_512 = 2
    IBV_MTU_1024 = 3
    IBV_MTU_2048 = 4
    IBV_MTU_4096 = 5


class ibv_mw_type(IntEnum):
    IBV_MW_TYPE_1 = 1
    IBV_MW_TYPE_2 = 2


class ibv_node_type(IntEnum):
    IBV_NODE_UNKNOWN = -1
    IBV_NODE_CA = 1
    IBV_NODE_SWITCH = 2
    IBV_NODE_ROUTER = 3
    IBV_NODE_RNIC = 4
    IBV_NODE_USNIC = 5
    IBV_NODE_USNIC_UDP = 6
    IBV_NODE_UNSPECIFIED = 7


class ibv_odp_general_caps(IntEnum):
    IBV_ODP_SUPPORT = 1
    IBV_ODP_SUPPORT_IMPLICIT = 2


class ibv_odp_transport_cap_bits(IntEnum):
    IBV_ODP_SUPPORT_SEND = 1
    IBV_ODP_SUPPORT_RECV = 2
    IBV_ODP_SUPPORT_WRITE = 4
    IBV_ODP_SUPPORT_READ = 8
    IBV_ODP_SUPPORT_ATOMIC = 16
    IBV_ODP_SUPPORT_SRQ_RECV = 32


class ibv_ops_flags(IntEnum):
    IBV_OPS_SIGNALED = 1
    IBV_OPS_TM_SYNC = 2


class ibv_ops_wr_opcode(IntEnum):
    IBV_WR_TAG_ADD = 0
    IBV_WR_TAG_DEL = 1
    IBV_WR_TAG_SYNC = 2


class ibv_parent_domain_init_attr_mask(IntEnum):
    IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS = 1
    IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT = 2


class ibv_port_cap_flags(IntEnum):
    IBV_PORT_SM = 2
    IBV_PORT_NOTICE_SUP = 4
    IBV_PORT_TRAP_SUP = 8
    IBV_PORT_OPT_IPD_SUP = 16
    IBV_PORT_AUTO_MIGR_SUP = 32
    IBV_PORT_SL_MAP_SUP = 64
    IBV_PORT_MKEY_NVRAM = 128
    IBV_PORT_PKEY_NVRAM = 0x100
    IBV_PORT_LED_INFO_SUP = 0x200
    IBV_PORT_SYS_IMAGE_GUID_SUP = 0x800
    IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP = 0x1000
    IBV_PORT_EXTENDED_SPEEDS_SUP = 0x4000
    IBV_PORT_CAP_MASK2_SUP = 0x8000
    IBV_PORT_CM_SUP = 0x10000
    IBV_PORT_SNMP_TUNNEL_SUP = 0x20000
    IBV_PORT_REINIT_SUP = 0x40000
    IBV_PORT_DEVICE_MGMT_SUP = 0x80000
    IBV_PORT_VENDOR_CLASS_SUP = 0x100000
    IBV_PORT_DR_NOTICE_SUP = 0x200000
    IBV_PORT_CAP_MASK_NOTICE_SUP = 0x400000
    IBV_PORT_BOOT_MGMT_SUP = 0x800000
    IBV_PORT_LINK_LATENCY_SUP = 0x1000000
    IBV_PORT_CLIENT_REG_SUP = 0x2000000
    IBV_PORT_IP_BASED_GIDS = 0x4000000


class ibv_port_cap_flags2(IntEnum):
    IBV_PORT_SET_NODE_DESC_SUP = 1
    IBV_PORT_INFO_EXT_SUP = 2
    IBV_PORT_VIRT_SUP = 4
    IBV_PORT_SWITCH_PORT_STATE_TABLE_SUP = 8
    IBV_PORT_LINK_WIDTH_2X_SUP = 16
    IBV_PORT_LINK_SPEED_HDR_SUP = 32
    IBV_PORT_LINK_SPEED_NDR_SUP = 0x400


class ibv_port_state(IntEnum):
    IBV_PORT_NOP = 0
    IBV_PORT_DOWN = 1
    IBV_PORT_INIT = 2
    IBV_PORT_ARMED = 3
    IBV_PORT_ACTIVE = 4
    IBV_PORT_ACTIVE_DEFER = 5


class ibv_qp_attr_mask(IntEnum):
    IBV_QP_STATE = 1
    IBV_QP_CUR_STATE = 2
    IBV_QP_EN_SQD_ASYNC_NOTIFY = 4
    IBV_QP_ACCESS_FLAGS = 8
    IBV_QP_PKEY_INDEX = 16
    IBV_QP_PORT = 32
    IBV_QP_QKEY = 64
    IBV_QP_AV = 128
    IBV_QP_PATH_MTU = 0x100
    IBV_QP_TIMEOUT = 0x200
    IBV_QP_RETRY_CNT = 0x400
    IBV_QP_RNR_RETRY = 0x800
    IBV_QP_RQ_PSN = 0x1000
    IBV_QP_MAX_QP_RD_ATOMIC = 0x2000
    IBV_QP_ALT_PATH = 0x4000
    IBV_QP_MIN_RNR_TIMER = 0x8000
    IBV_QP_SQ_PSN = 0x10000
    IBV_QP_MAX_DEST_RD_ATOMIC = 0x20000
    IBV_QP_PATH_MIG_STATE = 0x40000
    IBV_QP_CAP = 0x80000
    IBV_QP_DEST_QPN = 0x100000
    IBV_QP_RATE_LIMIT = 0x2000000


class ibv_qp_create_flags(IntEnum):
    IBV_QP_CREATE_BLOCK_SELF_MCAST_LB = 2
    IBV_QP_CREATE_SCATTER_FCS = 0x100
    IBV_QP_CREATE_CVLAN_STRIPPING = 0x200
    IBV_QP_CREATE_SOURCE_QPN = 0x400
    IBV_QP_CREATE_PCI_WRITE_END_PADDING = 0x800


class ibv_qp_create_send_ops_flags(IntEnum):
    IBV_QP_EX_WITH_RDMA_WRITE = 1
    IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM = 2
    IBV_QP_EX_WITH_SEND = 4
    IBV_QP_EX_WITH_SEND_WITH_IMM = 8
    IBV_QP_EX_WITH_RDMA_READ = 16
    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP = 32
    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD = 64
    IBV_QP_EX_WITH_LOCAL_INV = 128
    IBV_QP_EX_WITH_BIND_MW = 0x100
    IBV_QP_EX_WITH_SEND_WITH_INV = 0x200
    IBV_QP_EX_WITH_TSO = 0x400
    IBV_QP_EX_WITH_ATOMIC_WRITE = 0x1000


class ibv_qp_init_attr_mask(IntEnum):
    IBV_QP_INIT_ATTR_PD = 1
    IBV_QP_INIT_ATTR_XRCD = 2
    IBV_QP_INIT_ATTR_CREATE_FLAGS = 4
    IBV_QP_INIT_ATTR_MAX_TSO_HEADER = 8
    IBV_QP_INIT_ATTR_IND_TABLE = 16
    IBV_QP_INIT_ATTR_RX_HASH = 32
    IBV_QP_INIT_ATTR_SEND_OPS_FLAGS = 64


class ibv_qp_state(IntEnum):
    IBV_QPS_RESET = 0
    IBV_QPS_INIT = 1
    IBV_QPS_RTR = 2
    IBV_QPS_RTS = 3
    IBV_QPS_SQD = 4
    IBV_QPS_SQE = 5
    IBV_QPS_ERR = 6
    IBV_QPS_UNKNOWN = 7


class ibv_qp_type(IntEnum):
    IBV_QPT_RC = 2
    IBV_QPT_UC = 3
    IBV_QPT_UD = 4
    IBV_QPT_RAW_PACKET = 8
    IBV_QPT_XRC_SEND = 9
    IBV_QPT_XRC_RECV = 10
    IBV_QPT_DRIVER = 255


class ibv_raw_packet_caps(IntEnum):
    IBV_RAW_PACKET_CAP_CVLAN_STRIPPING = 1
    IBV_RAW_PACKET_CAP_SCATTER_FCS = 2
    IBV_RAW_PACKET_CAP_IP_CSUM = 4
    IBV_RAW_PACKET_CAP_DELAY_DROP = 8


class ibv_read_counters_flags(IntEnum):
    IBV_READ_COUNTERS_ATTR_PREFER_CACHED = 1


class ibv_rereg_mr_err_code(IntEnum):
    IBV_REREG_MR_ERR_INPUT = -1
    IBV_REREG_MR_ERR_DONT_FORK_NEW = -2
    IBV_REREG_MR_ERR_DO_FORK_OLD = -3
    IBV_REREG_MR_ERR_CMD = -4
    IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW = -5


class ibv_rereg_mr_flags(IntEnum):
    IBV_REREG_MR_CHANGE_TRANSLATION = 1
    IBV_REREG_MR_CHANGE_PD = 2
    IBV_REREG_MR_CHANGE_ACCESS = 4


class ibv_rx_hash_fields(IntEnum):
    IBV_RX_HASH_SRC_IPV4 = 1
    IBV_RX_HASH_DST_IPV4 = 2
    IBV_RX_HASH_SRC_IPV6 = 4
    IBV_RX_HASH_DST_IPV6 = 8
    IBV_RX_HASH_SRC_PORT_TCP = 16
    IBV_RX_HASH_DST_PORT_TCP = 32
    IBV_RX_HASH_SRC_PORT_UDP = 64
    IBV_RX_HASH_DST_PORT_UDP = 128


class ibv_rx_hash_function_flags(IntEnum):
    IBV_RX_HASH_FUNC_TOEPLITZ = 1


class ibv_send_flags(IntEnum):
    IBV_SEND_FENCE = 1
    IBV_SEND_SIGNALED = 2
    IBV_SEND_SOLICITED = 4
    IBV_SEND_INLINE = 8
    IBV_SEND_IP_CSUM = 16


class ibv_srq_attr_mask(IntEnum):
    IBV_SRQ_MAX_WR = 1
    IBV_SRQ_LIMIT = 2


class ibv_srq_init_attr_mask(IntEnum):
    IBV_SRQ_INIT_ATTR_TYPE = 1
    IBV_SRQ_INIT_ATTR_PD = 2
    IBV_SRQ_INIT_ATTR_XRCD = 4
    IBV_SRQ_INIT_ATTR_CQ = 8
    IBV_SRQ_INIT_ATTR_TM = 16


class ibv_srq_type(IntEnum):
    IBV_SRQT_BASIC = 0
    IBV_SRQT_XRC = 1
    IBV_SRQT_TM = 2


class ibv_tm_cap_flags(IntEnum):
    IBV_TM_CAP_RC = 1


class ibv_tmh_op(IntEnum):
    IBV_TMH_NO_TAG = 0
    IBV_TMH_RNDV = 1
    IBV_TMH_FIN = 2
    IBV_TMH_EAGER = 3


class ibv_transport_type(IntEnum):
    IBV_TRANSPORT_UNKNOWN = -1
    IBV_TRANSPORT_IB = 0
    IBV_TRANSPORT_IWARP = 1
    IBV_TRANSPORT_USNIC = 2
    IBV_TRANSPORT_USNIC_UDP = 3


class ibv_values_mask(IntEnum):
    IBV_VALUES_MASK_RAW_CLOCK = 1


class ibv_wc_flags(IntEnum):
    IBV_WC_GRH = 1
    IBV_WC_WITH_IMM = 2
    IBV_WC_IP_CSUM_OK = 4
    IBV_WC_WITH_INV = 8
    IBV_WC_TM_SYNC_REQ = 16
    IBV_WC_TM_MATCH = 32
    IBV_WC_TM_DATA_VALID = 64


class ibv_wc_opcode(IntEnum):
    IBV_WC_SEND = 0
    IBV_WC_RDMA_WRITE = 1
    IBV_WC_RDMA_READ = 2
    IBV_WC_COMP_SWAP = 3
    IBV_WC_FETCH_ADD = 4
    IBV_WC_BIND_MW = 5
    IBV_WC_LOCAL_INV = 6
    IBV_WC_TSO = 7
    IBV_WC_ATOMIC_WRITE = 9
    IBV_WC_RECV = 128
    IBV_WC_RECV_RDMA_WITH_IMM = 129
    IBV_WC_TM_ADD = 130
    IBV_WC_TM_DEL = 131
    IBV_WC_TM_SYNC = 132
    IBV_WC_TM_RECV = 133
    IBV_WC_TM_NO_TAG = 134
    IBV_WC_DRIVER2 = 136
    IBV_WC_DRIVER3 = 137


class ibv_wc_status(IntEnum):
    IBV_WC_SUCCESS = 0
    IBV_WC_LOC_LEN_ERR = 1
    IBV_WC_LOC_QP_OP_ERR = 2
    IBV_WC_LOC_EEC_OP_ERR = 3
    IBV_WC_LOC_PROT_ERR = 4
    IBV_WC_WR_FLUSH_ERR = 5
    IBV_WC_MW_BIND_ERR = 6
    IBV_WC_BAD_RESP_ERR = 7
    IBV_WC_LOC_ACCESS_ERR = 8
    IBV_WC_REM_INV_REQ_ERR = 9
    IBV_WC_REM_ACCESS_ERR = 10
    IBV_WC_REM_OP_ERR = 11
    IBV_WC_RETRY_EXC_ERR = 12
    IBV_WC_RNR_RETRY_EXC_ERR = 13
    IBV_WC_LOC_RDD_VIOL_ERR = 14
    IBV_WC_REM_INV_RD_REQ_ERR = 15
    IBV_WC_REM_ABORT_ERR = 16
    IBV_WC_INV_EECN_ERR = 17
    IBV_WC_INV_EEC_STATE_ERR = 18
    IBV_WC_FATAL_ERR = 19
    IBV_WC_RESP_TIMEOUT_ERR = 20
    IBV_WC_GENERAL_ERR = 21
    IBV_WC_TM_ERR = 22
    IBV_WC_TM_RNDV_INCOMPLETE = 23


class ibv_wq_attr_mask(IntEnum):
    IBV_WQ_ATTR_STATE = 1
    IBV_WQ_ATTR_CURR_STATE = 2
    IBV_WQ_ATTR_FLAGS = 4


class ibv_wq_flags(IntEnum):
    IBV_WQ_FLAGS_CVLAN_STRIPPING = 1
    IBV_WQ_FLAGS_SCATTER_FCS = 2
    IBV_WQ_FLAGS_DELAY_DROP = 4
    IBV_WQ_FLAGS_PCI_WRITE_END_PADDING = 8


class ibv_wq_init_attr_mask(IntEnum):
    IBV_WQ_INIT_ATTR_FLAGS = 1


class ibv_wq_state(IntEnum):
    IBV_WQS_RESET = 0
    IBV_WQS_RDY = 1
    IBV_WQS_ERR = 2
    IBV_WQS_UNKNOWN = 3


class ibv_wq_type(IntEnum):
    IBV_WQT_RQ = 0


class ibv_wr_opcode(IntEnum):
    IBV_WR_RDMA_WRITE = 0
    IBV_WR_RDMA_WRITE_WITH_IMM = 1
    IBV_WR_SEND = 2
    IBV_WR_SEND_WITH_IMM = 3
    IBV_WR_RDMA_READ = 4
    IBV_WR_ATOMIC_CMP_AND_SWP = 5
    IBV_WR_ATOMIC_FETCH_AND_ADD = 6
    IBV_WR_LOCAL_INV = 7
    IBV_WR_BIND_MW = 8
    IBV_WR_SEND_WITH_INV = 9
    IBV_WR_TSO = 10
    IBV_WR_ATOMIC_WRITE = 15


class ibv_xrcd_init_attr_mask(IntEnum):
    IBV_XRCD_INIT_ATTR_FD = 1
    IBV_XRCD_INIT_ATTR_OFLAGS = 2
    IBV_XRCD_INIT_ATTR_RESERVED = 4


# every member is also a module-level name, as in pyverbs (e.IBV_QPT_RC)
for _enum in (ibv_access_flags,
              ibv_atomic_cap,
              ibv_counter_description,
              ibv_cq_init_attr_mask,
              ibv_create_cq_attr_flags,
              ibv_create_cq_wc_flags,
              ibv_device_cap_flags,
              ibv_event_type,
              ibv_flow_attr_type,
              ibv_flow_flags,
              ibv_flow_spec_type,
              ibv_fork_status,
              ibv_gid_type,
              ibv_gid_type_sysfs,
              ibv_mig_state,
              ibv_mtu,
              ibv_mw_type,
              ibv_node_type,
              ibv_odp_general_caps,
              ibv_odp_transport_cap_bits,
              ibv_ops_flags,
              ibv_ops_wr_opcode,
              ibv_parent_domain_init_attr_mask,
              ibv_port_cap_flags,
              ibv_port_cap_flags2,
              ibv_port_state,
              ibv_qp_attr_mask,
              ibv_qp_create_flags,
              ibv_qp_create_send_ops_flags,
              ibv_qp_init_attr_mask,
              ibv_qp_state,
              ibv_qp_type,
              ibv_raw_packet_caps,
              ibv_read_counters_flags,
              ibv_rereg_mr_err_code,
              ibv_rereg_mr_flags,
              ibv_rx_hash_fields,
              ibv_rx_hash_function_flags,
              ibv_send_flags,
              ibv_srq_attr_mask,
              ibv_srq_init_attr_mask,
              ibv_srq_type,
              ibv_tm_cap_flags,
              ibv_tmh_op,
              ibv_transport_type,
              ibv_values_mask,
              ibv_wc_flags,
              ibv_wc_opcode,
              ibv_wc_status,
              ibv_wq_attr_mask,
              ibv_wq_flags,
              ibv_wq_init_attr_mask,
              ibv_wq_state,
              ibv_wq_type,
              ibv_wr_opcode,
              ibv_xrcd_init_attr_mask):
    globals().update(_enum.__members__)
del _enum

# plain constants
IBV_LINK_LAYER_ETHERNET = 2
IBV_LINK_LAYER_INFINIBAND = 1
IBV_LINK_LAYER_UNSPECIFIED = 0
IBV_QPF_GRH_REQUIRED = 1
IBV_WC_STANDARD_FLAGS = 127
_IBV_ADVISE_MR_ADVICE_PREFETCH = 0
_IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT = 2
_IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE = 1
_IBV_ADVISE_MR_FLAG_FLUSH = 1
_IBV_ALLOCATOR_USE_DEFAULT = 0xffffffffffffffff
_IBV_DEVICE_PCI_WRITE_END_PADDING = 0x1000000000
_IBV_DEVICE_RAW_SCATTER_FCS = 0x400000000
