"""Completion queues, completion channels and work completions.

A CQ is the device's CQ ring in simulated host memory; `poll` reads its CQEs (and lets some
clock cycles pass when there are none, so a program that polls in a loop lets the device
work). A completion channel gets the CQ's events from the device's interrupt and EVENT
register. As mlx5 does, moving a QP to RESET or destroying it removes its completions from
its CQs (`_clean`): the CQ's entries are drained into a backlog that `poll` serves first.
"""

import errno
import functools

from tb.verbs import Reg, WCFlags

from . import enums as e
from ._sim import EVENT_WAIT_CYCLES, KERNEL_COMMAND_CYCLES, DeviceObject, log, rdma_error
from .base import PyverbsCM, PyverbsObject
from .device import MAX_WQ_LOG2, NUM_COMP_VECTORS


class CompChannel(DeviceObject, PyverbsCM):
    """ibv_comp_channel: where the events of its CQs arrive."""

    _close_order = 8

    def __init__(self, context):
        super().__init__()
        self.context = context
        self.sim = context.sim
        self._register(context)

    def get_cq_event(self, expected_cq):
        """Wait for the next event of one of this channel's CQs; it must be `expected_cq`'s."""
        cqs = {cq.cqn: cq for cq in list(self._children)}
        cqn = self.sim.call(self.sim.wait_event, sorted(cqs))
        if cqn is None:
            raise rdma_error(f"Failed to get CQ event: none in {EVENT_WAIT_CYCLES} cycles",
                             errno.ETIMEDOUT)
        if cqs[cqn] is not expected_cq:
            raise rdma_error("Received event on an unexpected CQ", errno.EINVAL)
        expected_cq.num_events += 1


class _CompletionQueue(DeviceObject, PyverbsCM):
    """What ibv_cq and ibv_cq_ex share: the device's CQ of at least `cqe` entries (a power of
    two), its channel, and the completions of its ring taken oldest first."""

    _close_order = 7

    def __init__(self, context, cqe, channel, comp_vector, what):
        super().__init__()
        self.context = context
        self.sim = context.sim
        dev = context.dev
        if cqe != int(cqe) or not 1 <= cqe <= 1 << MAX_WQ_LOG2:
            raise rdma_error(what, errno.EINVAL)
        if not 0 <= comp_vector < NUM_COMP_VECTORS:
            raise rdma_error(what, errno.EINVAL)
        if len(dev.cqs) >= dev.num_cq:
            raise rdma_error(f"{what}: all {dev.num_cq} CQs of the device are in use",
                             errno.ENOMEM)
        self._cq = self.sim.verb(what, dev.create_cq, int(cqe))
        self.comp_channel = channel
        self.num_events = 0
        self._backlog = []
        if channel is not None:
            self.sim.channels[self.cqn] = channel
        self._register(context, channel)

    @property
    def cqn(self):
        return self._cq.cqn

    @property
    def cqe(self):
        return self._cq.depth

    async def _take(self, num_entries):
        """Up to `num_entries` completions, oldest first; with none, some cycles pass."""
        wcs = self._backlog[:num_entries]
        del self._backlog[:num_entries]
        if len(wcs) < num_entries:
            wcs += [WC.of(wc) for wc in await self._cq.poll(num_entries - len(wcs))]
        for wc in wcs:
            if wc.status != e.IBV_WC_SUCCESS:
                log.info("CQ %d: %s completion of QP %d, wr_id %#x, opcode %s", self.cqn,
                         cqe_status_to_str(wc.status), wc.qp_num, wc.wr_id,
                         cqe_opcode_to_str(wc.opcode))
        if not wcs:
            await self.sim.idle()
        return wcs

    async def _clean(self, qpn):
        """Take every completion out of the ring and drop those of QP `qpn`."""
        wcs = self._backlog + [WC.of(wc) for wc in await self._cq.poll()]
        self._backlog = [wc for wc in wcs if wc.qp_num != qpn]

    def _destroy(self):
        self.sim.verb("Failed to destroy CQ", destroy_cq, self.sim, self._cq)

    def _release(self):
        return functools.partial(destroy_cq, self.sim, self._cq)

    def __str__(self):
        return f"CQ\n{'Handle':<22}: {self.cqn}\n{'CQEs':<22}: {self.cqe}\n"


class CQ(_CompletionQueue):
    """ibv_cq: polled with `poll` (ibv_poll_cq)."""

    def __init__(self, context, cqe, cq_context=None, channel=None, comp_vector=0):
        super().__init__(context, cqe, channel, comp_vector,
                         f"Failed to create a CQ with cqe={cqe}, comp_vector={comp_vector}")
        self.cq_context = cq_context

    @property
    def cq(self):
        return self._cq.cqn

    def poll(self, num_entries=1):
        """(npolled, [WC]) with up to `num_entries` completions, oldest first."""
        wcs = self.sim.call(self._take, num_entries)
        return len(wcs), wcs

    def req_notify(self, solicited_only=False):
        self.sim.call(self._cq.req_notify, bool(solicited_only))

    def ack_events(self, num_events):
        self.num_events -= num_events

    def resize(self, cqe):
        """ibv_resize_cq: at least `cqe` entries, the completions not yet polled kept in order
        (RESIZE_CQ); EINVAL when more are waiting than the new size holds."""
        what = f"Failed to resize CQ to {cqe} entries"
        if cqe != int(cqe) or not 1 <= cqe <= 1 << MAX_WQ_LOG2:
            raise rdma_error(what, errno.EINVAL)
        self.sim.verb(what, self._resize, int(cqe))

    async def _resize(self, cqe):
        await self.sim.idle(KERNEL_COMMAND_CYCLES)
        await self._cq.resize(cqe)


async def destroy_cq(sim, cq):
    """DESTROY_CQ, and forget the CQ: its ring, its channel, an event of it not yet taken."""
    await cq.destroy()
    await sim.dev.write_reg(Reg.EVENT, 1 << cq.cqn)
    sim.channels.pop(cq.cqn, None)
    sim.events.pop(cq.cqn, None)
    sim.heap.free(cq.ring)


class WC(PyverbsObject):
    """ibv_wc. `imm_data` is the raw 32-bit field, in network order as the sender put it
    (socket.ntohl gives the number)."""

    def __init__(self, wr_id=0, status=0, opcode=0, vendor_err=0, byte_len=0, qp_num=0,
                 src_qp=0, imm_data=0, wc_flags=0, pkey_index=0, slid=0, sl=0,
                 dlid_path_bits=0):
        super().__init__()
        self.wr_id = wr_id
        self.status = status
        self.opcode = opcode
        self.vendor_err = vendor_err
        self.byte_len = byte_len
        self.qp_num = qp_num
        self.src_qp = src_qp
        self.imm_data = imm_data
        self.wc_flags = wc_flags
        self.pkey_index = pkey_index
        self.slid = slid
        self.sl = sl
        self.dlid_path_bits = dlid_path_bits

    @classmethod
    def of(cls, wc):
        """The WC of a tb.verbs completion. The driver gives the immediate bytes as a
        big-endian number; the C field holds them as they are, read on a little-endian host.
        With WITH_INV the field is invalidated_rkey, a number."""
        imm = wc.imm_data if wc.wc_flags & WCFlags.WITH_INV else \
            int.from_bytes(wc.imm_data.to_bytes(4, "big"), "little")
        return cls(wc.wr_id, int(wc.status), int(wc.opcode), 0, wc.byte_len, wc.qp_num,
                   wc.src_qp, imm, int(wc.wc_flags), 0, wc.slid, wc.sl, wc.dlid_path_bits)

    def __str__(self):
        return (f"WC\n{'WR ID':<22}: {self.wr_id}\n"
                f"{'status':<22}: {cqe_status_to_str(self.status)}\n"
                f"{'opcode':<22}: {cqe_opcode_to_str(self.opcode)}\n"
                f"{'byte length':<22}: {self.byte_len}\n{'QP num':<22}: {self.qp_num}\n"
                f"{'source QP':<22}: {self.src_qp}\n"
                f"{'WC flags':<22}: {cqe_flags_to_str(self.wc_flags)}\n")


class WcTmInfo(PyverbsObject):
    def __init__(self):
        super().__init__()
        self.tag = 0
        self.priv = 0


# ---------------------------------------------------------------------------------------------
# Extended CQs (ibv_create_cq_ex): the same device CQ, polled one completion at a time with
# start_poll / poll_next / end_poll, each field read by its own call

# the fields a device CQE carries (IBV_WC_STANDARD_FLAGS); no timestamps, VLANs, flow tags
CQEX_WC_FLAGS = (e.IBV_WC_EX_WITH_BYTE_LEN | e.IBV_WC_EX_WITH_IMM | e.IBV_WC_EX_WITH_QP_NUM
                 | e.IBV_WC_EX_WITH_SRC_QP | e.IBV_WC_EX_WITH_SLID | e.IBV_WC_EX_WITH_SL
                 | e.IBV_WC_EX_WITH_DLID_PATH_BITS)
ENOENT = errno.ENOENT   # start_poll / poll_next: no completion


class CqInitAttrEx(PyverbsObject):
    def __init__(self, cqe=100, channel=None, comp_vector=0, wc_flags=0, comp_mask=0, flags=0,
                 parent_domain=None):
        super().__init__()
        self.cqe = cqe
        self.comp_channel = channel
        self.comp_vector = comp_vector
        self.wc_flags = wc_flags
        self.comp_mask = comp_mask
        self.flags = flags
        self.parent_domain = parent_domain
        self.cq_context = None


class PollCqAttr(PyverbsObject):
    def __init__(self):
        super().__init__()
        self.comp_mask = 0


class CQEX(_CompletionQueue):
    """ibv_cq_ex with the `wc_flags` of CQEX_WC_FLAGS; a flag beyond them, a parent domain or
    IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN (the device reports an overrun) is EOPNOTSUPP. Reading a
    field the CQ was not created with is EINVAL (in C, a call through a NULL pointer)."""

    def __init__(self, context, init_attr):
        what = (f"Failed to create extended CQ with cqe={init_attr.cqe}, "
                f"wc_flags={init_attr.wc_flags:#x}")
        if init_attr.wc_flags & ~CQEX_WC_FLAGS:
            raise rdma_error(f"{what}: the device's CQE has no "
                             f"{create_wc_flags_to_str(init_attr.wc_flags & ~CQEX_WC_FLAGS)}",
                             errno.EOPNOTSUPP)
        mask = init_attr.comp_mask
        if mask & ~(e.IBV_CQ_INIT_ATTR_MASK_FLAGS | e.IBV_CQ_INIT_ATTR_MASK_PD):
            raise rdma_error(f"{what}: comp_mask {mask:#x}", errno.EINVAL)
        if mask & e.IBV_CQ_INIT_ATTR_MASK_PD:
            raise rdma_error(f"{what}: the device has no parent domains", errno.EOPNOTSUPP)
        if mask & e.IBV_CQ_INIT_ATTR_MASK_FLAGS and \
                init_attr.flags & ~e.IBV_CREATE_CQ_ATTR_SINGLE_THREADED:
            raise rdma_error(f"{what}: flags {init_attr.flags:#x}", errno.EOPNOTSUPP)
        super().__init__(context, init_attr.cqe, init_attr.comp_channel,
                         init_attr.comp_vector, what)
        self.cq_context = init_attr.cq_context
        self.wc_flags = init_attr.wc_flags
        self._wc = None

    def start_poll(self, attr):
        """0 with the oldest completion made current, or ENOENT when there is none."""
        if self._wc is not None:
            raise rdma_error("start_poll: a poll is already started (end_poll first)",
                             errno.EINVAL)
        return self._next()

    def poll_next(self):
        if self._wc is None:
            raise rdma_error("poll_next without start_poll", errno.EINVAL)
        return self._next()

    def end_poll(self):
        self._wc = None

    def _next(self):
        wcs = self.sim.call(self._take, 1)
        if not wcs:
            return ENOENT
        self._wc = wcs[0]
        return 0

    def _current(self):
        if self._wc is None:
            raise rdma_error("no completion is being polled", errno.EINVAL)
        return self._wc

    @property
    def status(self):
        return self._current().status

    @property
    def wr_id(self):
        return self._current().wr_id

    def read_opcode(self):
        return self._current().opcode

    def read_vendor_err(self):
        return self._current().vendor_err

    def read_wc_flags(self):
        return self._current().wc_flags

    def _field(flag, name):
        def read(self):
            if not self.wc_flags & flag:
                raise rdma_error(f"read_{name}: the CQ was created without "
                                 f"{e.ibv_create_cq_wc_flags(flag).name}", errno.EINVAL)
            return getattr(self._current(), name)
        read.__name__ = f"read_{name}"
        return read

    read_byte_len = _field(e.IBV_WC_EX_WITH_BYTE_LEN, "byte_len")
    read_imm_data = _field(e.IBV_WC_EX_WITH_IMM, "imm_data")
    read_qp_num = _field(e.IBV_WC_EX_WITH_QP_NUM, "qp_num")
    read_src_qp = _field(e.IBV_WC_EX_WITH_SRC_QP, "src_qp")
    read_slid = _field(e.IBV_WC_EX_WITH_SLID, "slid")
    read_sl = _field(e.IBV_WC_EX_WITH_SL, "sl")
    read_dlid_path_bits = _field(e.IBV_WC_EX_WITH_DLID_PATH_BITS, "dlid_path_bits")
    read_timestamp = _field(e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, "timestamp")
    read_completion_wallclock_ns = _field(e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
                                          "wallclock_ns")
    read_cvlan = _field(e.IBV_WC_EX_WITH_CVLAN, "cvlan")
    read_flow_tag = _field(e.IBV_WC_EX_WITH_FLOW_TAG, "flow_tag")
    read_tm_info = _field(e.IBV_WC_EX_WITH_TM_INFO, "tm_info")
    del _field


# ---------------------------------------------------------------------------------------------
# Names of values

def cqe_status_to_str(status):
    try:
        return e.ibv_wc_status(status).name
    except ValueError:
        return f"Unknown CQE status ({status})"


def cqe_opcode_to_str(opcode):
    try:
        return e.ibv_wc_opcode(opcode).name
    except ValueError:
        return f"Unknown CQE opcode ({opcode})"


def cqe_flags_to_str(flags):
    return " ".join(m.name for m in e.ibv_wc_flags if flags & m)


def create_wc_flags_to_str(flags):
    return " ".join(m.name for m in e.ibv_create_cq_wc_flags if flags & m)


def flags_to_str(flags, values):
    return " ".join(name for bit, name in values.items() if flags & bit)
