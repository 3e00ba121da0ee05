"""Work queues and receive-WQ indirection tables (ibv_create_wq, ibv_create_rwq_ind_table, for
RSS): the device has none (EOPNOTSUPP, as from a provider without them, rxe among them)."""

import errno

from ._sim import rdma_error
from .base import PyverbsCM, PyverbsObject
from .enums import ibv_wq_type


class WQInitAttr(PyverbsObject):
    def __init__(self, wq_context=None, wq_pd=None, wq_cq=None, wq_type=ibv_wq_type.IBV_WQT_RQ,
                 max_wr=100, max_sge=1, comp_mask=0, create_flags=0):
        super().__init__()
        self.wq_context = wq_context
        self.pd = wq_pd
        self.cq = wq_cq
        self.wq_type = wq_type
        self.max_wr = max_wr
        self.max_sge = max_sge
        self.comp_mask = comp_mask
        self.create_flags = create_flags


class WQAttr(PyverbsObject):
    def __init__(self, attr_mask=0, wq_state=0, curr_wq_state=0, flags=0, flags_mask=0):
        super().__init__()
        self.attr_mask = attr_mask
        self.wq_state = wq_state
        self.curr_wq_state = curr_wq_state
        self.flags = flags
        self.flags_mask = flags_mask


class WQ(PyverbsCM):
    def __init__(self, ctx, attr):
        super().__init__()
        raise rdma_error("Failed to create WQ (the device has no work queues outside QPs)",
                         errno.EOPNOTSUPP)


class RxHashConf(PyverbsObject):
    def __init__(self, rx_hash_function=0, rx_hash_key_len=0, rx_hash_key=None,
                 rx_hash_fields_mask=0):
        super().__init__()
        self.rx_hash_function = rx_hash_function
        self.rx_hash_key_len = rx_hash_key_len
        self.rx_hash_key = rx_hash_key
        self.rx_hash_fields_mask = rx_hash_fields_mask


class RwqIndTableInitAttr(PyverbsObject):
    def __init__(self, log_ind_tbl_size=5, wqs_list=None, comp_mask=0):
        super().__init__()
        self.log_ind_tbl_size = log_ind_tbl_size
        self.wqs = list(wqs_list or [])
        self.comp_mask = comp_mask


class RwqIndTable(PyverbsCM):
    def __init__(self, ctx, attr):
        super().__init__()
        raise rdma_error("Failed to create RWQ indirection table (the device has no RSS)",
                         errno.EOPNOTSUPP)
