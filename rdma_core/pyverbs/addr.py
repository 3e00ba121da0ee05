"""Addresses: GIDs, global routes, address vectors (AHAttr) and address handles (AH)."""

import errno
import math

from tb.verbs import GlobalRoute as DriverRoute

from . import enums as e
from ._sim import DeviceObject, rdma_error
from .base import PyverbsCM, PyverbsObject
from .pyverbs_error import PyverbsUserError

# ibv_rate: the static rates an address vector may ask for, in Gb/s
IBV_RATE_GBPS = {2: 2.5, 3: 10, 4: 30, 5: 5, 6: 20, 7: 40, 8: 60, 9: 80, 10: 120, 11: 14,
                 12: 56, 13: 112, 14: 168, 15: 25, 16: 100, 17: 200, 18: 300, 19: 28, 20: 50,
                 21: 400, 22: 600, 23: 800, 24: 1200}


class GID(PyverbsObject):
    """A GID; `gid` is its text form, eight groups of four hex digits."""

    def __init__(self, val=None):
        super().__init__()
        self.raw = bytes(16)
        if val is not None:
            self.gid = val

    @staticmethod
    def format(raw):
        text = raw.hex()
        return ":".join(text[i:i + 4] for i in range(0, 32, 4))

    @property
    def gid(self):
        return self.format(self.raw)

    @gid.setter
    def gid(self, val):
        groups = val.split(":")
        if len(groups) != 8 or any(len(g) != 4 for g in groups):
            raise PyverbsUserError(f"Invalid GID value ({groups})")
        self.raw = bytes.fromhex("".join(groups))

    def __eq__(self, other):
        return isinstance(other, GID) and other.raw == self.raw

    def __hash__(self):
        return hash(self.raw)

    def __str__(self):
        return self.gid


class GRH(PyverbsObject):
    """A global route header as a UD receive buffer's first 40 bytes carry it."""

    def __init__(self, sgid=None, dgid=None, version_tclass_flow=0, paylen=0, next_hdr=0,
                 hop_limit=1):
        super().__init__()
        self.sgid = sgid or GID()
        self.dgid = dgid or GID()
        self.version_tclass_flow = version_tclass_flow
        self.paylen = paylen
        self.next_hdr = next_hdr
        self.hop_limit = hop_limit


class GlobalRoute(PyverbsObject):
    def __init__(self, dgid=None, flow_label=0, sgid_index=0, hop_limit=1, traffic_class=0):
        super().__init__()
        self.dgid = dgid if dgid is not None else GID()
        self.flow_label = flow_label
        self.sgid_index = sgid_index
        self.hop_limit = hop_limit
        self.traffic_class = traffic_class

    def __str__(self):
        return (f"{'dgid':<22}: {self.dgid}\n{'flow label':<22}: {self.flow_label}\n"
                f"{'sgid index':<22}: {self.sgid_index}\n{'hop limit':<22}: {self.hop_limit}\n"
                f"{'traffic class':<22}: {self.traffic_class}\n")


class AHAttr(PyverbsObject):
    """An address vector (ibv_ah_attr). The GRH fields read None unless it is global."""

    def __init__(self, dlid=0, sl=0, src_path_bits=0, static_rate=0, is_global=0, port_num=1,
                 gr=None):
        super().__init__()
        self.dlid = dlid
        self.sl = sl
        self.src_path_bits = src_path_bits
        self.static_rate = static_rate
        self.is_global = is_global
        self.port_num = port_num
        self.gr = gr if gr is not None else GlobalRoute()

    def _route(self, name):
        return getattr(self.gr, name) if self.is_global else None

    dgid = property(lambda self: self._route("dgid"))
    flow_label = property(lambda self: self._route("flow_label"))
    sgid_index = property(lambda self: self._route("sgid_index"))
    hop_limit = property(lambda self: self._route("hop_limit"))
    traffic_class = property(lambda self: self._route("traffic_class"))

    def copy(self):
        gr = GlobalRoute(GID(self.gr.dgid.gid), self.gr.flow_label, self.gr.sgid_index,
                         self.gr.hop_limit, self.gr.traffic_class)
        return AHAttr(self.dlid, self.sl, self.src_path_bits, self.static_rate, self.is_global,
                      self.port_num, gr)

    def __str__(self):
        return (f"{'port num':<22}: {self.port_num}\n{'sl':<22}: {self.sl}\n"
                f"{'source path bits':<22}: {self.src_path_bits}\n{'dlid':<22}: {self.dlid}\n"
                f"{'static rate':<22}: {self.static_rate}\n{'is global':<22}: {self.is_global}\n"
                + (str(self.gr) if self.is_global else ""))


def static_rate_divisor(static_rate, port_gbps):
    """The device's static rate (a divisor of the port's rate, docs/host-interface.md) for
    an ibv_rate: the smallest divisor that keeps the port at or under the rate."""
    if static_rate == 0:
        return 0
    if static_rate not in IBV_RATE_GBPS:
        return None
    divisor = math.ceil(port_gbps / IBV_RATE_GBPS[static_rate])
    return 0 if divisor <= 1 else min(divisor, 15)


def driver_av(ctx, attr, what):
    """The tb.verbs address vector fields of `attr` (AHAttr), checked as a provider checks
    them: port, static rate and, when global, the source GID index (EINVAL beyond the port's
    GID table, ENODATA for an empty entry, as the kernel's GID cache answers). An Ethernet
    port's address must be global (RoCE has no LIDs: mlx5 and the kernel refuse one without
    a GRH, EINVAL); the driver resolves its destination MAC from the DGID."""
    from .device import LANE_SPEEDS, lane_speed    # device imports this module

    if not 1 <= attr.port_num <= ctx.dev.num_ports:
        raise rdma_error(f"{what}: port {attr.port_num} does not exist", errno.EINVAL)
    port = ctx.dev.ports[attr.port_num]
    port_gbps = 4 * dict(LANE_SPEEDS)[lane_speed(ctx.dev.data_bytes)]
    rate = static_rate_divisor(attr.static_rate, port_gbps)
    if rate is None:
        raise rdma_error(f"{what}: static rate {attr.static_rate} is no ibv_rate", errno.EINVAL)
    if port.link_layer == "eth" and not attr.is_global:
        raise rdma_error(f"{what}: port {attr.port_num} is Ethernet (RoCE v2): the address "
                         f"needs a GRH", errno.EINVAL)
    grh = None
    if attr.is_global:
        index = attr.gr.sgid_index
        if index >= len(port.gid_table):
            raise rdma_error(f"{what}: sgid_index {index} is beyond the GID table",
                             errno.EINVAL)
        if not any(port.gid_table[index].gid):
            raise rdma_error(f"{what}: GID table entry {index} is empty", errno.ENODATA)
        grh = DriverRoute(attr.gr.dgid.raw, attr.gr.flow_label & 0xFFFFF, attr.gr.hop_limit & 0xFF,
                          attr.gr.traffic_class & 0xFF, index)
    return dict(dlid=attr.dlid & 0xFFFF, sl=attr.sl & 0xF, src_path_bits=attr.src_path_bits & 0x7F,
                static_rate=rate, grh=grh)


class AH(DeviceObject, PyverbsCM):
    """An address handle on the device (CREATE_AH), from an AHAttr (`attr=`) or from a
    received completion (`wc=`, with the receive buffer's `grh` and the `port_num`)."""

    _close_order = 2

    def __init__(self, pd, **kwargs):
        super().__init__()
        attr = kwargs.get("attr")
        if attr is None:
            wc = kwargs.get("wc")
            if wc is None:
                raise PyverbsUserError("Missing attr or wc argument")
            attr = ah_attr_from_wc(wc, kwargs.get("grh"), kwargs.get("port_num", 1))
        self.pd = pd
        self.attr = attr
        sim = pd.ctx.sim
        av = driver_av(pd.ctx, attr, "Failed to create AH")
        self._ah = sim.verb("Failed to create AH", pd._pd.create_ah, attr.port_num, **av)
        self._register(pd)

    @property
    def ahn(self):
        return self._ah.ahn

    def _destroy(self):
        self.pd.ctx.sim.verb("Failed to destroy AH", self._ah.destroy)

    def _release(self):
        return self._ah.destroy


def ah_attr_from_wc(wc, grh, port_num):
    """The address vector back to the sender of a received completion (as
    ibv_init_ah_from_wc builds it): its SLID, SL and, with a GRH, its GID."""
    attr = AHAttr(dlid=wc.slid, sl=wc.sl, src_path_bits=wc.dlid_path_bits, port_num=port_num)
    if wc.wc_flags & e.IBV_WC_GRH:
        if grh is None:
            raise PyverbsUserError("A completion with a GRH needs the GRH to build an AH")
        attr.is_global = 1
        attr.gr = GlobalRoute(dgid=grh.sgid, flow_label=grh.version_tclass_flow & 0xFFFFF,
                              hop_limit=0xFF, traffic_class=(grh.version_tclass_flow >> 20) & 0xFF)
    return attr
