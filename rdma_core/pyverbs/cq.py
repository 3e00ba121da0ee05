"""Completion queues, completion channels and work completions.

A CQ is the device's CQ ring in simulated host memory; `poll` reads its CQEs (and lets some
clock cycles pass when there are none, so a program that polls in a loop lets the device
work). A completion channel gets the CQ's events from the device's interrupt and EVENT
register. As mlx5 does, moving a QP to RESET or destroying it removes its completions from
its CQs (`_clean`): the CQ's entries are drained into a backlog that `poll` serves first.
"""

import errno
import functools

from tb.verbs import Reg

from . import enums as e
from ._sim import EVENT_WAIT_CYCLES, DeviceObject, log, rdma_error
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


class CQ(DeviceObject, PyverbsCM):
    """ibv_cq: a CQ of at least `cqe` entries (a power of two)."""

    _close_order = 7

    def __init__(self, context, cqe, cq_context=None, channel=None, comp_vector=0):
        super().__init__()
        what = f"Failed to create a CQ with cqe={cqe}, comp_vector={comp_vector}"
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
        self.cq_context = cq_context
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

    @property
    def cq(self):
        return self._cq.cqn

    def poll(self, num_entries=1):
        """(npolled, [WC]) with up to `num_entries` completions, oldest first."""
        wcs = self.sim.call(self._poll, num_entries)
        return len(wcs), wcs

    async def _poll(self, num_entries):
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

    def req_notify(self, solicited_only=False):
        self.sim.call(self._cq.req_notify, bool(solicited_only))

    def ack_events(self, num_events):
        self.num_events -= num_events

    def resize(self, cqe):
        raise rdma_error("Failed to resize CQ (the device cannot resize a CQ)", errno.EOPNOTSUPP)

    def _destroy(self):
        self.sim.verb("Failed to destroy CQ", destroy_cq, self.sim, self._cq)

    def _release(self):
        return functools.partial(destroy_cq, self.sim, self._cq)

    def __str__(self):
        return f"CQ\n{'Handle':<22}: {self.cqn}\n{'CQEs':<22}: {self.cqe}\n"


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
        big-endian number; the C field holds them as they are, read on a little-endian host."""
        imm = int.from_bytes(wc.imm_data.to_bytes(4, "big"), "little")
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
# Extended CQs: the device has no provider support for ibv_create_cq_ex

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


class CQEX(PyverbsCM):
    def __init__(self, context, init_attr):
        super().__init__()
        raise rdma_error("Failed to create extended CQ (not supported by the device)",
                         errno.EOPNOTSUPP)


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
