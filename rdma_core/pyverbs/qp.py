"""Queue pairs: creation, state transitions (modify, to_init / to_rtr / to_rts), query, and
posting work requests.

A QP is the device's QP (RC, UC or UD) with its send and receive rings in simulated host
memory. A modify is checked as the kernel checks it (the IBTA table of required and optional
attributes per transition), the attributes its mask names are put into the driver's shadow
of the QP, and the whole shadow goes to the device in one MODIFY_QP, which checks the
transition again. Work requests, posted with post_send / post_recv or built with the
extended QP's ibv_wr_* calls, become the device's WQEs: up to 4 scatter/gather elements, no
inline data; a memory-window WR's fields go where the host interface puts them.
"""

import errno

from tb.verbs import MAX_SGE, AHAttr as DriverAV, QPAttr as DriverQPAttr
from tb.verbs import SendWR as DriverSendWR

from . import enums as e
from ._sim import DeviceObject, rdma_error
from .addr import AH, AHAttr, driver_av
from .mr import bind_fields
from .base import PyverbsCM, PyverbsObject
from .cq import _CompletionQueue
from .device import MAX_RD_ATOMIC, MAX_WQ_LOG2
from .pd import PD
from .pyverbs_error import PyverbsRDMAError
from .srq import SRQ
from .wr import SGE, SendWR, driver_sges, post_recv_chain

DEVICE_QP_TYPES = (e.IBV_QPT_RC, e.IBV_QPT_UC, e.IBV_QPT_UD)
DEVICE_WR_OPCODES = (e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM, e.IBV_WR_SEND,
                     e.IBV_WR_SEND_WITH_IMM, e.IBV_WR_RDMA_READ, e.IBV_WR_ATOMIC_CMP_AND_SWP,
                     e.IBV_WR_ATOMIC_FETCH_AND_ADD, e.IBV_WR_LOCAL_INV, e.IBV_WR_BIND_MW,
                     e.IBV_WR_SEND_WITH_INV, e.IBV_WR_ATOMIC_WRITE)
# the WRs whose imm_data is the rkey to invalidate (a union in C)
INVALIDATING = (e.IBV_WR_LOCAL_INV, e.IBV_WR_SEND_WITH_INV)
ATOMIC_OPCODES = (e.IBV_WR_ATOMIC_CMP_AND_SWP, e.IBV_WR_ATOMIC_FETCH_AND_ADD)
# the ibv_wr_* builders a QP of each type takes (ibv_create_qp_ex's send_ops_flags)
SEND_OPS = {
    e.IBV_QPT_RC: (e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_SEND_WITH_IMM
                   | e.IBV_QP_EX_WITH_RDMA_WRITE | e.IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM
                   | e.IBV_QP_EX_WITH_RDMA_READ | e.IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP
                   | e.IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | e.IBV_QP_EX_WITH_LOCAL_INV
                   | e.IBV_QP_EX_WITH_BIND_MW | e.IBV_QP_EX_WITH_SEND_WITH_INV
                   | e.IBV_QP_EX_WITH_ATOMIC_WRITE),
    e.IBV_QPT_UC: (e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_SEND_WITH_IMM
                   | e.IBV_QP_EX_WITH_RDMA_WRITE | e.IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM
                   | e.IBV_QP_EX_WITH_LOCAL_INV | e.IBV_QP_EX_WITH_BIND_MW),
    e.IBV_QPT_UD: e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_SEND_WITH_IMM,
}
DEVICE_SEND_FLAGS = e.IBV_SEND_FENCE | e.IBV_SEND_SIGNALED | e.IBV_SEND_SOLICITED
QP_ACCESS = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC
PSN_MASK = 0xFFFFFF

RESET, INIT, RTR, RTS, SQD, SQE, ERR = (e.IBV_QPS_RESET, e.IBV_QPS_INIT, e.IBV_QPS_RTR,
                                        e.IBV_QPS_RTS, e.IBV_QPS_SQD, e.IBV_QPS_SQE,
                                        e.IBV_QPS_ERR)
RC, UC, UD = e.IBV_QPT_RC, e.IBV_QPT_UC, e.IBV_QPT_UD


# ---------------------------------------------------------------------------------------------
# The transitions a modify may ask for, and with which attributes (IBTA 11.2.5, as the kernel's
# ib_modify_qp_is_ok tables them): {(current, next): {type: (required, optional)}}

def _by_type(ud=(0, 0), uc=(0, 0), rc=(0, 0)):
    return {UD: ud, UC: uc, RC: rc}


_PKEY_PORT = e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT
_ANY = _by_type()
TRANSITIONS = {
    (RESET, INIT): _by_type(ud=(_PKEY_PORT | e.IBV_QP_QKEY, 0),
                            uc=(_PKEY_PORT | e.IBV_QP_ACCESS_FLAGS, 0),
                            rc=(_PKEY_PORT | e.IBV_QP_ACCESS_FLAGS, 0)),
    (INIT, INIT): _by_type(ud=(0, _PKEY_PORT | e.IBV_QP_QKEY),
                           uc=(0, _PKEY_PORT | e.IBV_QP_ACCESS_FLAGS),
                           rc=(0, _PKEY_PORT | e.IBV_QP_ACCESS_FLAGS)),
    (INIT, RTR): _by_type(
        ud=(0, e.IBV_QP_PKEY_INDEX | e.IBV_QP_QKEY),
        uc=(e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN,
            e.IBV_QP_ALT_PATH | e.IBV_QP_ACCESS_FLAGS | e.IBV_QP_PKEY_INDEX),
        rc=(e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN
            | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER,
            e.IBV_QP_ALT_PATH | e.IBV_QP_ACCESS_FLAGS | e.IBV_QP_PKEY_INDEX)),
    (RTR, RTS): _by_type(
        ud=(e.IBV_QP_SQ_PSN, e.IBV_QP_CUR_STATE | e.IBV_QP_QKEY),
        uc=(e.IBV_QP_SQ_PSN, e.IBV_QP_CUR_STATE | e.IBV_QP_ALT_PATH | e.IBV_QP_ACCESS_FLAGS
            | e.IBV_QP_PATH_MIG_STATE),
        rc=(e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN
            | e.IBV_QP_MAX_QP_RD_ATOMIC,
            e.IBV_QP_CUR_STATE | e.IBV_QP_ALT_PATH | e.IBV_QP_ACCESS_FLAGS
            | e.IBV_QP_MIN_RNR_TIMER | e.IBV_QP_PATH_MIG_STATE)),
    (RTS, RTS): _by_type(
        ud=(0, e.IBV_QP_CUR_STATE | e.IBV_QP_QKEY),
        uc=(0, e.IBV_QP_CUR_STATE | e.IBV_QP_ACCESS_FLAGS | e.IBV_QP_ALT_PATH
            | e.IBV_QP_PATH_MIG_STATE),
        rc=(0, e.IBV_QP_CUR_STATE | e.IBV_QP_ACCESS_FLAGS | e.IBV_QP_ALT_PATH
            | e.IBV_QP_PATH_MIG_STATE | e.IBV_QP_MIN_RNR_TIMER)),
    (RTS, SQD): _by_type(ud=(0, e.IBV_QP_EN_SQD_ASYNC_NOTIFY),
                         uc=(0, e.IBV_QP_EN_SQD_ASYNC_NOTIFY),
                         rc=(0, e.IBV_QP_EN_SQD_ASYNC_NOTIFY)),
    (SQE, RTS): _by_type(ud=(0, e.IBV_QP_CUR_STATE | e.IBV_QP_QKEY),
                         uc=(0, e.IBV_QP_CUR_STATE | e.IBV_QP_ACCESS_FLAGS)),
}
for _state in (RESET, INIT, RTR, RTS, SQD, SQE, ERR):
    TRANSITIONS[(_state, RESET)] = _ANY
    TRANSITIONS[(_state, ERR)] = _ANY


def transition_ok(qp_type, current, new, mask):
    """Whether `mask` names every attribute the transition needs and nothing it forbids."""
    rules = TRANSITIONS.get((current, new), {}).get(qp_type)
    if rules is None:
        return False
    required, optional = rules
    mask &= ~e.IBV_QP_STATE
    return mask & required == required and not mask & ~(required | optional)


# ---------------------------------------------------------------------------------------------
# Attribute objects

class QPCap(PyverbsObject):
    def __init__(self, max_send_wr=1, max_recv_wr=10, max_send_sge=1, max_recv_sge=1,
                 max_inline_data=0):
        super().__init__()
        self.max_send_wr = max_send_wr
        self.max_recv_wr = max_recv_wr
        self.max_send_sge = max_send_sge
        self.max_recv_sge = max_recv_sge
        self.max_inline_data = max_inline_data

    def copy(self):
        return QPCap(self.max_send_wr, self.max_recv_wr, self.max_send_sge, self.max_recv_sge,
                     self.max_inline_data)

    def __str__(self):
        return "".join(f"{name:<20}: {getattr(self, name)}\n" for name in
                       ("max_send_wr", "max_recv_wr", "max_send_sge", "max_recv_sge",
                        "max_inline_data"))


class _CapFields(PyverbsObject):
    """`cap` as a copy, and its fields straight on the object, as pyverbs has them."""

    @property
    def cap(self):
        return self._cap.copy()

    @cap.setter
    def cap(self, val):
        self._cap = val.copy() if val is not None else QPCap(0, 0, 0, 0, 0)

    def _field(name):
        return property(lambda self: getattr(self._cap, name),
                        lambda self, val: setattr(self._cap, name, val))

    max_send_wr = _field("max_send_wr")
    max_recv_wr = _field("max_recv_wr")
    max_send_sge = _field("max_send_sge")
    max_recv_sge = _field("max_recv_sge")
    max_inline_data = _field("max_inline_data")
    del _field


class QPInitAttr(_CapFields):
    def __init__(self, qp_type=e.IBV_QPT_UD, qp_context=None, scq=None, rcq=None, srq=None,
                 cap=None, sq_sig_all=1):
        super().__init__()
        self.cap = cap
        self.qp_type = qp_type
        self.qp_context = qp_context
        self.send_cq = scq
        self.recv_cq = rcq
        self.srq = srq
        self.sq_sig_all = sq_sig_all
        self.comp_mask = e.IBV_QP_INIT_ATTR_PD

    scq = property(lambda self: self.send_cq)
    rcq = property(lambda self: self.recv_cq)


class QPInitAttrEx(_CapFields):
    def __init__(self, qp_type=e.IBV_QPT_UD, qp_context=None, scq=None, rcq=None, srq=None,
                 cap=None, sq_sig_all=0, comp_mask=0, pd=None, xrcd=None, create_flags=0,
                 max_tso_header=0, source_qpn=0, hash_conf=None, ind_table=None,
                 send_ops_flags=0):
        super().__init__()
        self.cap = cap
        self.qp_type = qp_type
        self.qp_context = qp_context
        self.send_cq = scq
        self.recv_cq = rcq
        self.srq = srq
        self.sq_sig_all = sq_sig_all
        self.comp_mask = comp_mask
        self.pd = pd
        self.xrcd = xrcd
        self.create_flags = create_flags
        self.max_tso_header = max_tso_header
        self.source_qpn = source_qpn
        self.hash_conf = hash_conf
        self.ind_table = ind_table
        self.send_ops_flags = send_ops_flags

    scq = property(lambda self: self.send_cq)
    rcq = property(lambda self: self.recv_cq)


class QPAttr(_CapFields):
    """ibv_qp_attr. `ah_attr` and `cap` are copied in and out, as pyverbs copies them to
    and from the C struct."""

    def __init__(self, qp_state=e.IBV_QPS_INIT, cur_qp_state=e.IBV_QPS_RESET, port_num=1,
                 path_mtu=e.IBV_MTU_1024):
        super().__init__()
        self.cap = None
        self.qp_state = qp_state
        self.cur_qp_state = cur_qp_state
        self.port_num = port_num
        self.path_mtu = path_mtu
        self.path_mig_state = 0
        self.qkey = 0
        self.rq_psn = 0
        self.sq_psn = 0
        self.dest_qp_num = 0
        self.qp_access_flags = 0
        self._ah_attr = AHAttr(port_num=0)
        self._alt_ah_attr = AHAttr(port_num=0)
        self.pkey_index = 0
        self.alt_pkey_index = 0
        self.en_sqd_async_notify = 0
        self.sq_draining = 0
        self.max_rd_atomic = 0
        self.max_dest_rd_atomic = 0
        self.min_rnr_timer = 0
        self.timeout = 0
        self.retry_cnt = 0
        self.rnr_retry = 0
        self.alt_port_num = 0
        self.alt_timeout = 0
        self.rate_limit = 0

    @property
    def ah_attr(self):
        return self._ah_attr.copy()

    @ah_attr.setter
    def ah_attr(self, val):
        if val is not None:
            self._ah_attr = val.copy()

    @property
    def alt_ah_attr(self):
        return self._alt_ah_attr.copy()

    @alt_ah_attr.setter
    def alt_ah_attr(self, val):
        if val is not None:
            self._alt_ah_attr = val.copy()

    def __str__(self):
        return "".join(f"{name:<22}: {value}\n" for name, value in vars(self).items()
                       if not name.startswith("_") and name != "logger")


class ECE(PyverbsCM):
    def __init__(self, vendor_id=0, options=0, comp_mask=0):
        super().__init__()
        self.vendor_id = vendor_id
        self.options = options
        self.comp_mask = comp_mask


class DataBuffer(PyverbsCM):
    def __init__(self, addr, length):
        super().__init__()
        self.addr = addr
        self.length = length


# ---------------------------------------------------------------------------------------------
# QP

class QP(DeviceObject, PyverbsCM):
    """A QP created through a PD (`QPInitAttr`, ibv_create_qp) or a Context
    (`QPInitAttrEx`, ibv_create_qp_ex). With `qp_attr` it goes as far towards RTS as it can
    without a remote QP: RC and UC to INIT, UD to RTS."""

    _close_order = 1

    def __init__(self, creator, init_attr, qp_attr=None):
        super().__init__()
        what = "Failed to create QP"
        self._send_ops = 0
        if isinstance(creator, PD):
            pd, ctx = creator, creator.ctx
        else:
            ctx = creator
            pd = self._check_init_attr_ex(init_attr, what)
            if init_attr.comp_mask & e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS:
                self._send_ops = init_attr.send_ops_flags
        qp_type = init_attr.qp_type
        if qp_type not in DEVICE_QP_TYPES:
            known = qp_type in (e.IBV_QPT_RAW_PACKET, e.IBV_QPT_XRC_SEND, e.IBV_QPT_XRC_RECV,
                                e.IBV_QPT_DRIVER)
            raise rdma_error(f"{what}: QP type {qp_type}",
                             errno.EOPNOTSUPP if known else errno.EINVAL)
        srq = init_attr.srq
        if srq is not None and (not isinstance(srq, SRQ) or not srq._open):
            raise rdma_error(f"{what}: srq is not an open SRQ", errno.EINVAL)
        scq, rcq = init_attr.send_cq, init_attr.recv_cq
        if not isinstance(scq, _CompletionQueue) or not isinstance(rcq, _CompletionQueue):
            raise rdma_error(f"{what}: a send and a receive CQ are needed", errno.EINVAL)
        cap = init_attr.cap
        for name in ("max_send_wr", "max_recv_wr"):
            if not 0 <= getattr(cap, name) <= 1 << MAX_WQ_LOG2:
                raise rdma_error(f"{what}: {name} {getattr(cap, name)}", errno.EINVAL)
        for name, limit in (("max_send_sge", MAX_SGE), ("max_recv_sge", MAX_SGE),
                            ("max_inline_data", 0)):
            if not 0 <= getattr(cap, name) <= limit:
                raise rdma_error(f"{what}: {name} {getattr(cap, name)} is more than the "
                                 f"device's {limit}", errno.EINVAL)
        dev = ctx.dev
        if len(dev.qps) >= dev.num_qp - 2:
            raise rdma_error(f"{what}: all {dev.num_qp - 2} QPs of the device are in use",
                             errno.ENOMEM)
        self.sim = ctx.sim
        self.pd = pd
        self.context = ctx
        self.scq, self.rcq = scq, rcq
        self.sq_sig_all = init_attr.sq_sig_all
        self._qp = self.sim.verb(what, pd._pd.create_qp, qp_type, scq._cq, rcq._cq,
                                 cap.max_send_wr, cap.max_recv_wr, cap.max_send_sge,
                                 cap.max_recv_sge, srq=srq._srq if srq else None)
        self.srq = srq
        # the IBTA's QP starts with every attribute 0; the driver's shadow has defaults
        self._qp.attr = DriverQPAttr(port_num=1, path_mtu=0, timeout=0, retry_cnt=0,
                                     min_rnr_timer=0, max_rd_atomic=0, max_dest_rd_atomic=0)
        self._attr = QPAttr(qp_state=RESET, port_num=1, path_mtu=0)
        self._register(pd, scq, rcq if rcq is not scq else None, srq)
        if qp_attr is not None:
            (self.to_rts if qp_type == UD else self.to_init)(qp_attr)

    @staticmethod
    def _check_init_attr_ex(init_attr, what):
        mask = init_attr.comp_mask
        if not mask & e.IBV_QP_INIT_ATTR_PD or init_attr.pd is None:
            raise rdma_error(f"{what}: ibv_create_qp_ex needs a PD", errno.EINVAL)
        unsupported = {
            e.IBV_QP_INIT_ATTR_XRCD: "XRC domains",
            e.IBV_QP_INIT_ATTR_MAX_TSO_HEADER: "TSO",
            e.IBV_QP_INIT_ATTR_IND_TABLE: "receive work queue indirection",
            e.IBV_QP_INIT_ATTR_RX_HASH: "receive hashing",
        }
        for bit, feature in unsupported.items():
            if mask & bit:
                raise rdma_error(f"{what}: the device has no {feature}", errno.EOPNOTSUPP)
        if mask & e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS:
            ops = init_attr.send_ops_flags & ~SEND_OPS.get(init_attr.qp_type, 0)
            if ops:
                raise rdma_error(f"{what}: send_ops_flags {ops:#x} on QP type "
                                 f"{init_attr.qp_type}", errno.EOPNOTSUPP)
        if mask & e.IBV_QP_INIT_ATTR_CREATE_FLAGS and init_attr.create_flags:
            raise rdma_error(f"{what}: create flags {init_attr.create_flags:#x}",
                             errno.EOPNOTSUPP)
        return init_attr.pd

    # --- properties --------------------------------------------------------------------------

    @property
    def qp_num(self):
        return self._qp.qp_num

    @property
    def qp_type(self):
        return int(self._qp.qp_type)

    @property
    def qp_state(self):
        return int(self._qp.state)

    def _caps(self):
        if self.srq is not None:    # its receives are the SRQ's
            return QPCap(self._qp.max_send_wr, 0, self._qp.max_send_sge, 0, 0)
        return QPCap(self._qp.max_send_wr, self._qp.max_recv_wr, self._qp.max_send_sge,
                     self._qp.max_recv_sge, 0)

    # --- state transitions -------------------------------------------------------------------

    _STEP_MASKS = {
        "INIT": {RC: _PKEY_PORT | e.IBV_QP_ACCESS_FLAGS, UC: _PKEY_PORT | e.IBV_QP_ACCESS_FLAGS,
                 UD: _PKEY_PORT | e.IBV_QP_QKEY},
        "RTR": {RC: TRANSITIONS[(INIT, RTR)][RC][0], UC: TRANSITIONS[(INIT, RTR)][UC][0], UD: 0},
        "RTS": {RC: TRANSITIONS[(RTR, RTS)][RC][0], UC: e.IBV_QP_SQ_PSN, UD: e.IBV_QP_SQ_PSN},
    }

    def _step(self, qp_attr, state, name, text):
        """One step of the to_init / to_rtr / to_rts path, with the attributes it needs."""
        qp_attr.qp_state = state
        self._modify(qp_attr, self._STEP_MASKS[name][self.qp_type] | e.IBV_QP_STATE,
                     f"Failed to modify QP state to {text}")

    def to_init(self, qp_attr):
        self._step(qp_attr, INIT, "INIT", "init")

    def to_rtr(self, qp_attr):
        if self.qp_state != INIT:
            self.to_init(qp_attr)
        self._step(qp_attr, RTR, "RTR", "RTR")

    def to_rts(self, qp_attr):
        if self.qp_state != RTR:
            self.to_rtr(qp_attr)
        self._step(qp_attr, RTS, "RTS", "RTS")

    def modify(self, qp_attr, comp_mask):
        self._modify(qp_attr, comp_mask, "Failed to modify QP")

    def _modify(self, attr, mask, what):
        current = self.qp_state
        new = attr.qp_state if mask & e.IBV_QP_STATE else current
        if mask & e.IBV_QP_CUR_STATE and attr.cur_qp_state not in (RTS, SQD, SQE):
            raise rdma_error(f"{what}: current state {attr.cur_qp_state} given", errno.EINVAL)
        if not transition_ok(self.qp_type, current, new, mask):
            raise rdma_error(f"{what}: {current} -> {new} with attribute mask {mask:#x}",
                             errno.EINVAL)
        changes = self._driver_changes(attr, mask, what)
        self.sim.verb(what, self._modify_on_device, new, changes)
        self._remember(attr, mask)

    async def _modify_on_device(self, state, changes):
        await self._qp.modify(state, **changes)
        if state == RESET:      # its completions go with it (mlx5's __mlx5_cq_clean)
            for cq in {self.scq, self.rcq}:
                await cq._clean(self.qp_num)

    def _driver_changes(self, attr, mask, what):
        """The tb.verbs QPAttr fields the masked attributes set, checked as a provider
        checks them."""
        changes = {}

        def bad(name, value):
            return rdma_error(f"{what}: {name} {value}", errno.EINVAL)

        if mask & e.IBV_QP_PORT:
            if not 1 <= attr.port_num <= self.context.dev.num_ports:
                raise bad("port", attr.port_num)
            changes["port_num"] = attr.port_num
        if mask & e.IBV_QP_PKEY_INDEX and attr.pkey_index != 0:     # one P_Key per port
            raise bad("pkey_index", attr.pkey_index)
        if mask & e.IBV_QP_QKEY:
            changes["qkey"] = attr.qkey & 0xFFFFFFFF
        if mask & e.IBV_QP_ACCESS_FLAGS:
            changes["qp_access_flags"] = attr.qp_access_flags & QP_ACCESS
        if mask & e.IBV_QP_PATH_MTU:
            if not e.IBV_MTU_256 <= attr.path_mtu <= e.IBV_MTU_4096:
                raise bad("path_mtu", attr.path_mtu)
            changes["path_mtu"] = attr.path_mtu
        if mask & e.IBV_QP_AV:
            changes["ah_attr"] = DriverAV(**driver_av(self.context, attr._ah_attr, what))
        if mask & e.IBV_QP_DEST_QPN:
            changes["dest_qp_num"] = attr.dest_qp_num & 0xFFFFFF
        if mask & e.IBV_QP_RQ_PSN:
            changes["rq_psn"] = attr.rq_psn & PSN_MASK
        if mask & e.IBV_QP_SQ_PSN:
            changes["sq_psn"] = attr.sq_psn & PSN_MASK
        if mask & e.IBV_QP_MAX_QP_RD_ATOMIC:
            if attr.max_rd_atomic > MAX_RD_ATOMIC:
                raise bad("max_rd_atomic", attr.max_rd_atomic)
            changes["max_rd_atomic"] = attr.max_rd_atomic
        if mask & e.IBV_QP_MAX_DEST_RD_ATOMIC:
            if attr.max_dest_rd_atomic > MAX_RD_ATOMIC:
                raise bad("max_dest_rd_atomic", attr.max_dest_rd_atomic)
            changes["max_dest_rd_atomic"] = attr.max_dest_rd_atomic
        if mask & e.IBV_QP_MIN_RNR_TIMER:
            changes["min_rnr_timer"] = attr.min_rnr_timer & 0x1F
        if mask & e.IBV_QP_TIMEOUT:
            changes["timeout"] = attr.timeout & 0x1F
        if mask & e.IBV_QP_RETRY_CNT:
            if not 0 <= attr.retry_cnt <= 7:
                raise bad("retry_cnt", attr.retry_cnt)
            changes["retry_cnt"] = attr.retry_cnt
        if mask & e.IBV_QP_RNR_RETRY:
            if not 0 <= attr.rnr_retry <= 7:
                raise bad("rnr_retry", attr.rnr_retry)
            changes["rnr_retry"] = attr.rnr_retry
        if mask & e.IBV_QP_ALT_PATH:
            raise rdma_error(f"{what}: the device has no alternate path (APM)", errno.EOPNOTSUPP)
        if mask & e.IBV_QP_PATH_MIG_STATE and attr.path_mig_state != e.IBV_MIG_MIGRATED:
            raise rdma_error(f"{what}: the device has no path migration", errno.EOPNOTSUPP)
        if mask & e.IBV_QP_RATE_LIMIT:
            raise rdma_error(f"{what}: the device has no per-QP rate limit", errno.EOPNOTSUPP)
        return changes

    def _remember(self, attr, mask):
        """Keep the attributes the device has no query for (the ones it reports come from
        QUERY_QP)."""
        kept = self._attr
        for bit, name in ((e.IBV_QP_PORT, "port_num"), (e.IBV_QP_QKEY, "qkey"),
                          (e.IBV_QP_ACCESS_FLAGS, "qp_access_flags"),
                          (e.IBV_QP_PATH_MTU, "path_mtu"), (e.IBV_QP_DEST_QPN, "dest_qp_num"),
                          (e.IBV_QP_PKEY_INDEX, "pkey_index")):
            if mask & bit:
                setattr(kept, name, getattr(attr, name))
        if mask & e.IBV_QP_AV:
            kept.ah_attr = attr._ah_attr

    def query(self, attr_mask):
        """(QPAttr, QPInitAttr): the state, PSNs and transport attributes as QUERY_QP reports
        them, the rest as they were set."""
        status = self.sim.verb("Failed to query QP", self._qp.query)
        kept = self._attr
        attr = QPAttr(qp_state=int(status.state), cur_qp_state=int(status.state),
                      port_num=kept.port_num, path_mtu=kept.path_mtu)
        attr.qkey = kept.qkey
        attr.rq_psn = status.rq_psn
        attr.sq_psn = status.sq_psn
        attr.dest_qp_num = kept.dest_qp_num
        attr.qp_access_flags = kept.qp_access_flags
        attr.pkey_index = kept.pkey_index
        attr.cap = self._caps()
        ah = kept.ah_attr
        ah.port_num = kept.port_num
        attr.ah_attr = ah
        attr.max_rd_atomic = status.max_rd_atomic
        attr.max_dest_rd_atomic = status.max_dest_rd_atomic
        attr.min_rnr_timer = status.min_rnr_timer
        attr.timeout = status.timeout
        attr.retry_cnt = status.retry_cnt
        attr.rnr_retry = status.rnr_retry
        attr.path_mig_state = e.IBV_MIG_MIGRATED
        init_attr = QPInitAttr(qp_type=self.qp_type, scq=self.scq, rcq=self.rcq,
                               cap=self._caps(), sq_sig_all=self.sq_sig_all)
        return attr, init_attr

    def query_data_in_order(self, op, flags=0):
        """0: the device does not promise that a message's data lands in order."""
        return 0

    # --- work requests -----------------------------------------------------------------------

    def _check_send_state(self):
        if self.qp_state in (RESET, INIT, RTR):
            raise rdma_error(f"Failed to post send: the QP is in state {self.qp_state}",
                             errno.EINVAL)

    def post_send(self, wr, bad_wr=None):
        """Post `wr` and the WRs chained after it. A WR the device cannot take fails with
        EINVAL after the ones before it are posted (bad_wr gets its wr_id)."""
        try:
            self._check_send_state()
        except PyverbsRDMAError:
            if bad_wr is not None:
                bad_wr.wr_id = wr.wr_id
            raise
        wrs, failed = [], None
        while wr is not None:
            try:
                wrs.append(self._driver_send_wr(wr))
            except Exception as error:
                failed = (wr, error)
                break
            wr = wr.next_wr
        if wrs:
            self.sim.verb("Failed to post send", self._qp.post_send, wrs)
        if failed:
            if bad_wr is not None:
                bad_wr.wr_id = failed[0].wr_id
            raise failed[1]

    def _driver_send_wr(self, wr):
        what = "Failed to post send"
        if wr.opcode not in DEVICE_WR_OPCODES:
            raise rdma_error(f"{what}: opcode {wr.opcode} is not one the device has",
                             errno.EINVAL)
        flags = wr.send_flags | (e.IBV_SEND_SIGNALED if self.sq_sig_all else 0)
        if flags & ~DEVICE_SEND_FLAGS:
            raise rdma_error(f"{what}: send flags {flags:#x} (no inline data, no checksum "
                             f"offload)", errno.EINVAL)
        fields = dict(opcode=int(wr.opcode), wr_id=wr.wr_id & (2**64 - 1), flags=flags)
        if wr.opcode == e.IBV_WR_BIND_MW:
            if wr.bind is None:
                raise rdma_error(f"{what}: a BIND_MW WR without set_bind_wr", errno.EINVAL)
            return DriverSendWR(**fields, **bind_fields(*wr.bind))
        if wr.opcode == e.IBV_WR_ATOMIC_WRITE:
            data = getattr(wr, "atomic_wr", None)
            if data is None or len(data) != 8:
                raise rdma_error(f"{what}: an ATOMIC WRITE takes its 8 bytes from "
                                 f"ibv_wr_atomic_write", errno.EINVAL)
            return DriverSendWR(**fields, remote_addr=wr.remote_addr & (2**64 - 1),
                                rkey=wr._rkey & 0xFFFFFFFF, swap=int.from_bytes(data, "little"))
        fields["sge"] = driver_sges(wr, self._qp.max_send_sge, what)
        if wr.opcode in INVALIDATING:
            fields["rkey"] = wr.imm_data & 0xFFFFFFFF
        else:
            fields["imm"] = _wire_imm(wr.imm_data)
        if wr.opcode in ATOMIC_OPCODES or wr.opcode in (e.IBV_WR_RDMA_WRITE,
                                                        e.IBV_WR_RDMA_WRITE_WITH_IMM,
                                                        e.IBV_WR_RDMA_READ):
            fields.update(remote_addr=wr.remote_addr & (2**64 - 1), rkey=wr._rkey & 0xFFFFFFFF)
        if wr.opcode in ATOMIC_OPCODES:
            fields.update(compare_add=wr.compare_add & (2**64 - 1), swap=wr.swap & (2**64 - 1))
        if self.qp_type == UD:
            if not isinstance(wr.ah, AH) or not wr.ah._open:
                raise rdma_error(f"{what}: a UD WR needs an address handle", errno.EINVAL)
            fields.update(ah=wr.ah._ah, remote_qpn=wr.remote_qpn & 0xFFFFFF,
                          remote_qkey=wr.remote_qkey & 0xFFFFFFFF)
        return DriverSendWR(**fields)

    def post_recv(self, wr, bad_wr=None):
        if self.qp_state == RESET:
            if bad_wr is not None:
                bad_wr.wr_id = wr.wr_id
            raise rdma_error("Failed to post recv: the QP is in RESET", errno.EINVAL)
        post_recv_chain(self.sim, wr, bad_wr, self._qp.max_recv_sge, self._qp.post_recv,
                        "Failed to post recv")

    # --- what the device does not have -------------------------------------------------------

    def bind_mw(self, mw, mw_bind):
        """ibv_bind_mw: a type 1 window, bound by a BIND_MW work request on this QP; the
        window's key moves on (ibv_inc_rkey) as the request is posted."""
        if mw.type != e.IBV_MW_TYPE_1:
            raise rdma_error("Failed to Bind MW: ibv_bind_mw binds type 1 windows",
                             errno.EINVAL)
        wr = SendWR(wr_id=mw_bind.wr_id, opcode=e.IBV_WR_BIND_MW,
                    send_flags=mw_bind.send_flags)
        wr.set_bind_wr(mw, mw_bind.bind_info)
        self.post_send(wr)
        mw.rkey = wr.rkey

    def set_ece(self, ece):
        if ece.vendor_id:
            raise rdma_error("Failed to set ECE (not supported by the device)", errno.EOPNOTSUPP)

    def query_ece(self):
        raise rdma_error("Failed to query ECE (not supported by the device)", errno.EOPNOTSUPP)

    # --- lifetime ----------------------------------------------------------------------------

    def _destroy(self):
        self.sim.verb("Failed to destroy QP", self._destroy_on_device)

    async def _destroy_on_device(self):
        await self._qp.destroy()
        for cq in {self.scq, self.rcq}:
            await cq._clean(self.qp_num)
        self.sim.heap.free(self._qp.sq.base)
        self.sim.heap.free(self._qp.rq.base)

    def _release(self):
        qp, cqs, heap = self._qp, {self.scq, self.rcq}, self.sim.heap

        async def release():
            await qp.destroy()
            for cq in cqs:
                if cq._open:
                    await cq._clean(qp.qp_num)
            heap.free(qp.sq.base)
            heap.free(qp.rq.base)
        return release

    def __str__(self):
        return (f"{'QP type':<22}: {self.qp_type}\n{'  number':<22}: {self.qp_num}\n"
                f"{'  state':<22}: {self.qp_state}\n")


def _wire_imm(imm_data):
    """The driver's immediate (the 4 bytes as a big-endian number) for pyverbs' imm_data,
    a 32-bit field whose bytes (little-endian host) are what goes on the wire."""
    return int.from_bytes((imm_data & 0xFFFFFFFF).to_bytes(4, "little"), "big")


class QPEx(QP):
    """ibv_qp_ex: work requests built with the ibv_wr_* calls between wr_start and
    wr_complete, which posts them all with one doorbell, or none if one was bad (ibv_wr_post(3)).
    Each builder starts a WR with the current `wr_id` and `wr_flags`; wr_set_sge,
    wr_set_sge_list and wr_set_ud_addr complete it. They become the same WQEs as
    post_send's, checked the same way. A builder outside the QP's send_ops_flags makes
    wr_complete fail with EINVAL."""

    ind_table = None

    def __init__(self, creator, init_attr, qp_attr=None):
        super().__init__(creator, init_attr, qp_attr)
        self.wr_id = 0
        self.wr_flags = 0
        self._batch = None
        self._batch_error = None

    # --- the batch ---------------------------------------------------------------------------

    def wr_start(self):
        self._batch, self._batch_error = [], None

    def wr_complete(self):
        wrs, error = self._batch, self._batch_error
        self._batch = self._batch_error = None
        if wrs is None:
            raise rdma_error("ibv_wr_complete without ibv_wr_start", errno.EINVAL)
        if error is not None:
            raise error
        self._check_send_state()
        driver_wrs = [self._driver_send_wr(wr) for wr in wrs]
        if driver_wrs:
            self.sim.verb("Failed to post send", self._qp.post_send, driver_wrs)

    def wr_abort(self):
        self._batch = self._batch_error = None

    def _refuse(self, what, code=errno.EINVAL):
        if self._batch is not None and self._batch_error is None:
            self._batch_error = rdma_error(f"ibv_wr_complete: {what}", code)

    def _begin(self, op, opcode, imm=0, **fields):
        """A new WR of `opcode` (builder `op` of send_ops_flags), its SGEs still to come.
        `imm` is a number: pyverbs' builders store htobe32 of it, the byte swap _wire_imm
        undoes."""
        if self._batch is None:
            raise rdma_error("an ibv_wr_* builder outside wr_start / wr_complete", errno.EINVAL)
        if not self._send_ops & op:
            self._refuse(f"{e.ibv_qp_create_send_ops_flags(op).name} is not in the QP's "
                         f"send_ops_flags")
        wr = SendWR(wr_id=self.wr_id, opcode=opcode, num_sge=1, sg=[SGE(0, 0, 0)],
                    imm_data=_wire_imm(imm), send_flags=self.wr_flags)
        wr.sges, wr.num_sge = [], 0
        for name, value in fields.items():
            setattr(wr, name, value)
        self._batch.append(wr)

    def _last(self, setter):
        if not self._batch:
            raise rdma_error(f"{setter} before a builder", errno.EINVAL)
        return self._batch[-1]

    # --- builders ----------------------------------------------------------------------------

    def wr_send(self):
        self._begin(e.IBV_QP_EX_WITH_SEND, e.IBV_WR_SEND)

    def wr_send_imm(self, imm_data):
        self._begin(e.IBV_QP_EX_WITH_SEND_WITH_IMM, e.IBV_WR_SEND_WITH_IMM, imm_data)

    def wr_rdma_write(self, rkey, remote_addr):
        self._begin(e.IBV_QP_EX_WITH_RDMA_WRITE, e.IBV_WR_RDMA_WRITE, _rkey=rkey,
                    remote_addr=remote_addr)

    def wr_rdma_write_imm(self, rkey, remote_addr, imm_data):
        self._begin(e.IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, e.IBV_WR_RDMA_WRITE_WITH_IMM,
                    imm_data, _rkey=rkey, remote_addr=remote_addr)

    def wr_rdma_read(self, rkey, remote_addr):
        self._begin(e.IBV_QP_EX_WITH_RDMA_READ, e.IBV_WR_RDMA_READ, _rkey=rkey,
                    remote_addr=remote_addr)

    def wr_atomic_cmp_swp(self, rkey, remote_addr, compare, swap):
        self._begin(e.IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, e.IBV_WR_ATOMIC_CMP_AND_SWP,
                    _rkey=rkey, remote_addr=remote_addr, compare_add=compare, swap=swap)

    def wr_atomic_fetch_add(self, rkey, remote_addr, add):
        self._begin(e.IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, e.IBV_WR_ATOMIC_FETCH_AND_ADD,
                    _rkey=rkey, remote_addr=remote_addr, compare_add=add)

    def wr_send_inv(self, invalidate_rkey):
        self._begin(e.IBV_QP_EX_WITH_SEND_WITH_INV, e.IBV_WR_SEND_WITH_INV)
        self._batch[-1].imm_data = invalidate_rkey

    def wr_local_inv(self, invalidate_rkey):
        self._begin(e.IBV_QP_EX_WITH_LOCAL_INV, e.IBV_WR_LOCAL_INV)
        self._batch[-1].imm_data = invalidate_rkey

    def wr_bind_mw(self, mw, rkey, bind_info):
        """BIND_MW of `mw` to `bind_info`'s range, the window taking key `rkey`."""
        self._begin(e.IBV_QP_EX_WITH_BIND_MW, e.IBV_WR_BIND_MW)
        self._batch[-1].set_bind_wr(mw, bind_info, rkey)

    def wr_atomic_write(self, rkey, remote_addr, atomic_wr):
        """ATOMIC WRITE (IBTA 1.5): the 8 bytes `atomic_wr` written at `remote_addr` at once."""
        self._begin(e.IBV_QP_EX_WITH_ATOMIC_WRITE, e.IBV_WR_ATOMIC_WRITE, _rkey=rkey,
                    remote_addr=remote_addr)
        self._batch[-1].atomic_wr = bytes(atomic_wr)

    def wr_send_tso(self, *args, **kwargs):
        """TSO, which the device has not: a QP cannot be created with it, so it is outside
        its send_ops_flags."""
        self._refuse("the device has no such work request")

    # --- setters -----------------------------------------------------------------------------

    def wr_set_sge(self, sge):
        wr = self._last("wr_set_sge")
        wr.sges, wr.num_sge = [(sge.addr, sge.length, sge.lkey)], 1

    def wr_set_sge_list(self, sg):
        wr = self._last("wr_set_sge_list")
        wr.sges = [(sge.addr, sge.length, sge.lkey) for sge in sg]
        wr.num_sge = len(wr.sges)

    def wr_set_ud_addr(self, ah, remote_qpn, remote_rkey):
        self._last("wr_set_ud_addr").set_wr_ud(ah, remote_qpn, remote_rkey)

    def wr_set_inline_data(self, addr, length):
        self._last("wr_set_inline_data")
        self._refuse("the device takes no inline data (max_inline_data 0)")

    def wr_set_inline_data_list(self, num_buf, buf_list):
        self.wr_set_inline_data(0, 0)

    def wr_set_xrc_srqn(self, remote_srqn):
        self._last("wr_set_xrc_srqn")
        self._refuse("the device has no XRC")
