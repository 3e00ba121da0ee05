"""Work requests: scatter/gather elements, send and receive WRs (values copied as pyverbs
copies them into the C structs; `next_wr` chains WRs)."""

import errno

from tb.verbs import RecvWR as DriverRecvWR, SGE as DriverSGE

from . import _sim
from . import enums as e
from .base import PyverbsCM, inc_rkey
from .pyverbs_error import PyverbsUserError


class SGE(PyverbsCM):
    def __init__(self, addr, length, lkey):
        super().__init__()
        self.addr = addr
        self.length = length
        self.lkey = lkey

    def read(self, length, offset):
        """`length` bytes of simulated host memory at the SGE's address + `offset`."""
        sim = _sim.current()
        return sim.call(_read, sim, self.addr + offset, length)

    def __str__(self):
        return (f"{'Address':<22}: {hex(self.addr)}\n{'Length':<22}: {self.length}\n"
                f"{'Key':<22}: {hex(self.lkey)}\n")


async def _read(sim, addr, length):
    return sim.dev.read(addr, length)


def _copy_sges(sg, num_sge):
    if num_sge < 1 or sg is None:
        return []
    if len(sg) < num_sge:
        raise PyverbsUserError(f"{num_sge} SGEs asked for, {len(sg)} given")
    return [(s.addr, s.length, s.lkey) for s in sg[:num_sge]]


class RecvWR(PyverbsCM):
    def __init__(self, wr_id=0, num_sge=0, sg=None, next_wr=None):
        super().__init__()
        if num_sge < 1 or sg is None:
            raise PyverbsUserError("A WR needs at least one SGE")
        self.sges = _copy_sges(sg, num_sge)
        self.num_sge = num_sge
        self.wr_id = wr_id
        self.next_wr = next_wr

    def __str__(self):
        return f"{'WR ID':<22}: {self.wr_id}\n{'Num SGE':<22}: {self.num_sge}\n"


class SendWR(PyverbsCM):
    """ibv_send_wr. The opcode's fields are set with set_wr_rdma, set_wr_atomic or set_wr_ud
    (a union in C: the opcode decides which one the device gets)."""

    MW_OPCODES = (e.IBV_WR_LOCAL_INV, e.IBV_WR_BIND_MW, e.IBV_WR_SEND_WITH_INV)

    def __init__(self, wr_id=0, opcode=e.IBV_WR_SEND, num_sge=0, imm_data=0, sg=None,
                 send_flags=e.IBV_SEND_SIGNALED, next_wr=None):
        super().__init__()
        if opcode not in self.MW_OPCODES and (num_sge < 1 or sg is None):
            raise PyverbsUserError("A WR needs at least one SGE")
        self.sges = _copy_sges(sg, num_sge)
        self.num_sge = num_sge
        self.wr_id = wr_id
        self.opcode = opcode
        self.send_flags = send_flags
        self.imm_data = imm_data
        self.next_wr = next_wr
        self.ah = None
        self.remote_qpn = 0
        self.remote_qkey = 0
        self.remote_addr = 0
        self._rkey = 0
        self.compare_add = 0
        self.swap = 0
        self.remote_srqn = 0
        self.bind = None        # BIND_MW: (window, MWBindInfo, the key it takes)

    @property
    def sg_list(self):
        raise AttributeError("sg_list can only be set")

    @sg_list.setter
    def sg_list(self, val):
        if self.sges:
            self.sges[0] = (val.addr, val.length, val.lkey)
        else:
            self.sges = [(val.addr, val.length, val.lkey)]

    def set_wr_ud(self, ah, rqpn, rqkey):
        self.ah = ah
        self.remote_qpn = rqpn
        self.remote_qkey = rqkey

    def set_wr_rdma(self, rkey, addr):
        self._rkey = rkey
        self.remote_addr = addr

    def set_wr_atomic(self, rkey, addr, compare_add, swap=0):
        self._rkey = rkey
        self.remote_addr = addr
        self.compare_add = compare_add
        self.swap = swap

    def set_bind_wr(self, mw, bind_info, rkey=None):
        """BIND_MW of window `mw` to `bind_info`; the window takes `rkey`, by default its key
        with the next variant (ibv_inc_rkey), as rxe's ibv_bind_mw does."""
        self.bind = (mw, inc_rkey(mw.rkey) if rkey is None else rkey, bind_info)

    def set_qp_type_xrc(self, remote_srqn):
        self.remote_srqn = remote_srqn

    @property
    def rkey(self):
        """The key a memory-window bind WR gives the window (pyverbs' meaning)."""
        return self.bind[1] if self.bind else 0

    def __str__(self):
        return (f"{'WR ID':<22}: {self.wr_id}\n{'Num SGE':<22}: {self.num_sge}\n"
                f"{'Opcode':<22}: {self.opcode}\n"
                f"{'Send flags':<22}: {send_flags_to_str(self.send_flags)}\n"
                f"{'Imm Data':<22}: {self.imm_data}\n")


def send_flags_to_str(flags):
    names = {e.IBV_SEND_FENCE: "IBV_SEND_FENCE", e.IBV_SEND_SIGNALED: "IBV_SEND_SIGNALED",
             e.IBV_SEND_SOLICITED: "IBV_SEND_SOLICITED", e.IBV_SEND_INLINE: "IBV_SEND_INLINE",
             e.IBV_SEND_IP_CSUM: "IBV_SEND_IP_CSUM"}
    return "".join(f"{name} " for bit, name in names.items() if flags & bit)


def driver_sges(wr, max_sge, what):
    """The WR's scatter/gather list as the driver's SGEs; more SGEs than the queue takes is
    EINVAL, as a provider's post verb has it."""
    if wr.num_sge > max_sge:
        raise _sim.rdma_error(f"{what}: {wr.num_sge} SGEs, the queue takes {max_sge}",
                              errno.EINVAL)
    return tuple(DriverSGE(addr & (2**64 - 1), length & 0xFFFFFFFF, lkey & 0xFFFFFFFF)
                 for addr, length, lkey in (wr.sges or [])[:wr.num_sge])


def post_recv_chain(sim, wr, bad_wr, max_sge, post, what):
    """ibv_post_recv and ibv_post_srq_recv: the RecvWRs chained from `wr`, posted with one
    `post` (a driver verb) up to the first bad one, which fails with its errno and gives its
    wr_id to `bad_wr`."""
    wrs, failed = [], None
    while wr is not None:
        try:
            wrs.append(DriverRecvWR(driver_sges(wr, max_sge, what), wr.wr_id & (2**64 - 1)))
        except Exception as error:
            failed = (wr, error)
            break
        wr = wr.next_wr
    if wrs:
        sim.verb(what, post, wrs)
    if failed:
        if bad_wr is not None:
            bad_wr.wr_id = failed[0].wr_id
        raise failed[1]
