"""Contexts on the simulated device, its attributes and its ports.

The simulation has one device (`_sim.DEVICE_NAME`): a channel adapter with the ports, QPs,
CQs, MRs and AHs its registers report, each port InfiniBand or Ethernet (RoCE v2) as its
PORT_LINK register says. What it can do is reported the way a provider reports it
(docs/host-interface.md is where the numbers come from): up to four scatter/gather elements
per WQE, basic SRQs (no resize), memory windows of types 1 and 2, a GID table of NUM_GIDS
entries per port (RoCE v2 GIDs on an Ethernet port); no device memory, ODP, XRC, raw packet
QPs or multicast; RC atomics within the device (IBV_ATOMIC_HCA).
"""

import errno
import os

from tb.rdma_tb import CLOCK_PERIOD_NS
from tb.verbs import DEV_ID_MAGIC, MAX_SGE, MAX_SGE_RD, PortReg, Reg, gid_reg, port_reg

from . import _sim
from . import enums as e
from ._sim import DeviceObject, rdma_error
from .addr import GID
from .base import PyverbsCM, PyverbsObject
from .pyverbs_error import PyverbsRDMAError, PyverbsUserError

NODE_GUID = 0x5244_4D41_0000_0001   # "RDMA" and a serial number
VENDOR_ID = 0x52444D                # not an assigned OUI: the suite's vendor checks see no Mellanox
VENDOR_PART_ID = 0x41
FW_VERSION = "1.0.0"
MAX_MSG_SIZE = 1 << 31              # an SGE's length field (docs/host-interface.md)
MAX_MR_SIZE = (1 << 32) - 1         # the MR block's length field
MAX_WQ_LOG2 = 15                    # rings are indexed by 16-bit free-running indices
MAX_RD_ATOMIC = 16                  # the send window of a QP
MAX_PD = 1 << 16                    # PDs are 16-bit numbers
PAGE_SIZE_CAP = 0xFFFFF000          # regions are contiguous host memory: any page size
NUM_COMP_VECTORS = 1                # the device has one interrupt
# device_cap_flags the device honours: RNR NAKs, the AH's port checked against the QP's, a
# system image GUID, memory windows of type 1 and type 2B (bound to a QP)
DEVICE_CAPS = (e.IBV_DEVICE_RC_RNR_NAK_GEN | e.IBV_DEVICE_UD_AV_PORT_ENFORCE
               | e.IBV_DEVICE_SYS_IMAGE_GUID | e.IBV_DEVICE_MEM_WINDOW
               | e.IBV_DEVICE_MEM_WINDOW_TYPE_2B)
PORT_CAPS = 0
# an Ethernet port's GIDs are its IP addresses (IPv4-mapped or IPv6), as on every RoCE port
ETH_PORT_CAPS = e.IBV_PORT_IP_BASED_GIDS
# IB lane speeds (ibv active_speed codes, Gb/s per lane); the port reports 4X lanes at the
# fastest speed its link (data width x clock) carries
LANE_SPEEDS = ((1, 2.5), (2, 5.0), (4, 10.0), (16, 14.0625), (32, 25.78125), (64, 53.125),
               (128, 106.25))
WIDTH_4X = 2


# ---------------------------------------------------------------------------------------------
# Devices

class Device(PyverbsObject):
    """An entry of the device list: name (bytes), node and transport type, GUID."""

    def __init__(self, name, guid, node_type, transport_type, index=0):
        super().__init__()
        self._name = name
        self._guid = guid
        self._node_type = node_type
        self._transport_type = transport_type
        self._index = index

    name = property(lambda self: self._name)
    guid = property(lambda self: self._guid)
    node_type = property(lambda self: self._node_type)
    transport_type = property(lambda self: self._transport_type)
    index = property(lambda self: self._index)

    def __str__(self):
        return (f"Device {self.name.decode()}, node type {translate_node_type(self.node_type)}, "
                f"transport type {translate_transport_type(self.transport_type)}, "
                f"guid {guid_to_hex(self.guid)}")


def get_device_list():
    _sim.current()
    return [Device(_sim.DEVICE_NAME.encode(), NODE_GUID, e.IBV_NODE_CA, e.IBV_TRANSPORT_IB)]


def rdma_get_devices():
    raise rdma_error("Failed to get RDMA devices (no RDMA CM on the simulated host)",
                     errno.EOPNOTSUPP)


# ---------------------------------------------------------------------------------------------
# Context

class Context(DeviceObject, PyverbsCM):
    """An open device. Objects created on it (PDs, CQs, completion channels; QPs and MRs
    through PDs) are closed when it is."""

    def __init__(self, **kwargs):
        super().__init__()
        for unsupported in ("cmd_fd", "attr", "cmid"):
            if kwargs.get(unsupported) is not None:
                raise rdma_error(f"Failed to open device: {unsupported} (import or provider "
                                 f"attributes) is not supported", errno.EOPNOTSUPP)
        name = kwargs.get("name")
        if name is None:
            raise PyverbsUserError("Device name must be provided")
        self.name = name
        self.sim = _sim.current()
        if name != _sim.DEVICE_NAME:
            raise PyverbsRDMAError(f"Failed to find device {name}")
        dev_id = self.sim.call(self.sim.dev.read_reg, Reg.DEV_ID)
        if dev_id != DEV_ID_MAGIC:
            raise rdma_error(f"Failed to open device {name}", errno.ENODEV)
        # the descriptor a program dups to import the context elsewhere (ibv_import_device),
        # which the device refuses (EOPNOTSUPP above): here it stands for the device file
        self._cmd_fd = os.open(os.devnull, os.O_RDONLY)
        self._register()

    _close_order = 9

    def _destroy(self):
        os.close(self._cmd_fd)

    def _release(self):
        os.close(self._cmd_fd)

    @property
    def context(self):
        return self

    @property
    def num_comp_vectors(self):
        return NUM_COMP_VECTORS

    @property
    def cmd_fd(self):
        return self._cmd_fd

    @property
    def dev(self):
        """The tb.verbs.Device this context drives."""
        return self.sim.dev

    def query_device(self):
        return DeviceAttr(self.dev)

    def query_device_ex(self, ex_input=None):
        return DeviceAttrEx(self.dev)

    def _check_port(self, port_num, what):
        if not 1 <= port_num <= self.dev.num_ports:
            raise rdma_error(what, errno.EINVAL)

    def query_port(self, port_num):
        self._check_port(port_num, f"Failed to query port {port_num}")
        return PortAttr(*self.sim.call(self._read_port, port_num), self.dev.data_bytes)

    async def _read_port(self, port):
        """(Ethernet?, GID table entries, LID, LMC, active MTU) from the port's registers."""
        dev = self.dev
        link = await dev.read_reg(port_reg(port, PortReg.LINK))
        lid = await dev.read_reg(port_reg(port, PortReg.LID)) & 0xFFFF
        lmc = await dev.read_reg(port_reg(port, PortReg.LMC)) & 7
        mtu = await dev.read_reg(port_reg(port, PortReg.MTU)) & 7
        return bool(link & 1), link >> 8 & 0xFF, lid, lmc, mtu

    async def _read_gids(self, port, indices):
        """The port's link layer (Ethernet?) and the GIDs (bytes) of its GID table entries
        `indices` (None: every entry), from its registers; an all-zero GID is an empty entry.
        An index beyond the table gives None."""
        link = await self.dev.read_reg(port_reg(port, PortReg.LINK))
        entries = link >> 8 & 0xFF
        gids = []
        for index in range(entries) if indices is None else indices:
            if not 0 <= index < entries:
                gids.append(None)
                continue
            words = [await self.dev.read_reg(gid_reg(port, index, 4 * i)) for i in range(4)]
            gids.append(b"".join(w.to_bytes(4, "big") for w in words))
        return bool(link & 1), gids

    def _gid(self, port_num, index, what):
        """GID `index` of port `port_num` (bytes, all zero when the entry is empty) and the
        ibv_gid_type of the port's GIDs; EINVAL for a port or an index the device has not."""
        self._check_port(port_num, what)
        ethernet, (raw,) = self.sim.call(self._read_gids, port_num, [index])
        if raw is None:
            raise rdma_error(what, errno.EINVAL)
        return raw, e.IBV_GID_TYPE_ROCE_V2 if ethernet else e.IBV_GID_TYPE_IB

    def query_gid(self, port_num, index):
        """ibv_query_gid: an empty entry reads all zero, as libibverbs keeps it."""
        gid = GID()
        gid.raw, _ = self._gid(port_num, index, f"Failed to query gid {index} of port {port_num}")
        return gid

    def query_gid_type(self, port_num, index):
        """ibv_query_gid_type, in sysfs' terms: RoCE v2 for an Ethernet port's GIDs (the device
        speaks no RoCE v1); IB_ROCE_V1 for InfiniBand's and for an empty entry, as libibverbs
        answers for one."""
        raw, gid_type = self._gid(port_num, index, f"Failed to query gid type {index} of port "
                                                   f"{port_num}")
        return (e.IBV_GID_TYPE_SYSFS_ROCE_V2 if any(raw) and gid_type == e.IBV_GID_TYPE_ROCE_V2
                else e.IBV_GID_TYPE_SYSFS_IB_ROCE_V1)

    def query_gid_table(self, max_entries, flags=0):
        """ibv_query_gid_table: every non-empty entry of every port, in port and index order."""
        table = []
        for port in range(1, self.dev.num_ports + 1):
            ethernet, gids = self.sim.call(self._read_gids, port, None)
            gid_type = e.IBV_GID_TYPE_ROCE_V2 if ethernet else e.IBV_GID_TYPE_IB
            table += [GIDEntry(raw, index, port, gid_type) for index, raw in enumerate(gids)
                      if any(raw)]
        if len(table) > max_entries or flags:
            # ibv_query_gid_table returns -errno, and pyverbs passes it on as it is
            raise rdma_error("Failed to query gid table", -errno.EINVAL)
        return table

    def query_gid_ex(self, port_num, gid_index, flags=0):
        what = f"Failed to query gid {gid_index} of port {port_num}"
        if flags:
            raise rdma_error(what, errno.EINVAL)
        raw, gid_type = self._gid(port_num, gid_index, what)
        if not any(raw):
            raise rdma_error(what, errno.ENODATA)
        return GIDEntry(raw, gid_index, port_num, gid_type)

    def query_pkey(self, port_num, index):
        if not 1 <= port_num <= self.dev.num_ports or index != 0:
            raise rdma_error(f"Failed to query pkey {index} of port {port_num}", errno.EINVAL)
        return self.sim.call(self.dev.read_reg, port_reg(port_num, PortReg.PKEY)) & 0xFFFF

    def query_rt_values_ex(self, comp_mask=0):
        raise rdma_error("Failed to query real time values (the device has no clock to read)",
                         errno.EOPNOTSUPP)

    def get_async_event(self):
        """ibv_get_async_event: the device's next asynchronous event (it has one kind, the SRQ
        limit event), waiting for the interrupt; ETIMEDOUT after EVENT_WAIT_CYCLES, where
        libibverbs would block."""
        event = self.sim.call(self.sim.wait_async_event)
        if event is None:
            raise rdma_error("Failed to get async event: none came", errno.ETIMEDOUT)
        return AsyncEvent(*event)

    def __str__(self):
        return f"Context {self.name}"


# ---------------------------------------------------------------------------------------------
# Attributes

class DeviceAttr(PyverbsObject):
    """ibv_device_attr of the simulated device."""

    def __init__(self, dev):
        super().__init__()
        self.fw_version = FW_VERSION
        self.node_guid = NODE_GUID
        self.sys_image_guid = NODE_GUID
        self.max_mr_size = MAX_MR_SIZE
        self.page_size_cap = PAGE_SIZE_CAP
        self.vendor_id = VENDOR_ID
        self.vendor_part_id = VENDOR_PART_ID
        self.hw_ver = dev.data_bytes * 8
        self.max_qp = dev.num_qp - 2            # QPNs 0 and 1 are reserved
        self.max_qp_wr = 1 << MAX_WQ_LOG2
        self.device_cap_flags = DEVICE_CAPS
        self.max_sge = MAX_SGE
        self.max_sge_rd = MAX_SGE_RD
        self.max_cq = dev.num_cq
        self.max_cqe = 1 << MAX_WQ_LOG2
        self.max_mr = dev.num_mr
        self.max_pd = MAX_PD
        self.max_qp_rd_atom = MAX_RD_ATOMIC
        self.max_ee_rd_atom = 0
        self.max_res_rd_atom = MAX_RD_ATOMIC * (dev.num_qp - 2)
        self.max_qp_init_rd_atom = MAX_RD_ATOMIC
        self.max_ee_init_rd_atom = 0
        self.atomic_caps = e.IBV_ATOMIC_HCA
        self.max_ee = 0
        self.max_rdd = 0
        self.max_mw = dev.num_mr      # windows share the regions' key space
        self.max_raw_ipv6_qps = 0
        self.max_raw_ethy_qp = 0
        self.max_mcast_grp = 0
        self.max_mcast_qp_attach = 0
        self.max_ah = dev.num_ah
        self.max_fmr = 0
        self.max_map_per_fmr = 0
        self.max_srq = dev.num_srq
        self.max_srq_wr = 1 << MAX_WQ_LOG2
        self.max_srq_sge = MAX_SGE
        self.max_pkeys = 1
        self.local_ca_ack_delay = 0
        self.phys_port_cnt = dev.num_ports

    def __str__(self):
        return "".join(f"{name:<22}: {value}\n" for name, value in vars(self).items()
                       if name != "logger")


class _Caps(PyverbsObject):
    """A group of zero capabilities (the device has none of these)."""

    def __init__(self, **fields):
        super().__init__()
        self.__dict__.update(fields)


class ODPCaps(_Caps):
    def __init__(self):
        super().__init__(general_caps=0, rc_odp_caps=0, uc_odp_caps=0, ud_odp_caps=0,
                         xrc_odp_caps=0)


class TSOCaps(_Caps):
    def __init__(self):
        super().__init__(max_tso=0, supported_qpts=0)


class RSSCaps(_Caps):
    def __init__(self):
        super().__init__(supported_qpts=0, max_rwq_indirection_tables=0, rx_hash_fields_mask=0,
                         rx_hash_function=0, max_rwq_indirection_table_size=0)


class PacketPacingCaps(_Caps):
    def __init__(self):
        super().__init__(qp_rate_limit_min=0, qp_rate_limit_max=0, supported_qpts=0)


class TMCaps(_Caps):
    def __init__(self):
        super().__init__(max_rndv_hdr_size=0, max_num_tags=0, flags=0, max_ops=0, max_sge=0)


class CQModerationCaps(_Caps):
    def __init__(self):
        super().__init__(max_cq_count=0, max_cq_period=0)


class PCIAtomicCaps(_Caps):
    def __init__(self):
        super().__init__(fetch_add=0, swap=0, compare_swap=0)


class DeviceAttrEx(PyverbsObject):
    """ibv_device_attr_ex: the plain attributes and the extensions, all absent."""

    def __init__(self, dev):
        super().__init__()
        self.orig_attr = DeviceAttr(dev)
        self.comp_mask = 0
        self.odp_caps = ODPCaps()
        self.completion_timestamp_mask = 0
        self.hca_core_clock = 0
        self.device_cap_flags_ex = DEVICE_CAPS
        self.tso_caps = TSOCaps()
        self.rss_caps = RSSCaps()
        self.max_wq_type_rq = 0
        self.packet_pacing_caps = PacketPacingCaps()
        self.raw_packet_caps = 0
        self.tm_caps = TMCaps()
        self.cq_mod_caps = CQModerationCaps()
        self.max_dm_size = 0
        self.pci_atomic_caps = PCIAtomicCaps()
        self.phys_port_cnt_ex = dev.num_ports


class QueryDeviceExInput(PyverbsObject):
    def __init__(self, comp_mask=0):
        super().__init__()
        self.comp_mask = comp_mask


def lane_speed(data_bytes):
    """The ibv speed code of 4X lanes at the fastest IB speed the link carries."""
    link_gbps = data_bytes * 8 * 1000 / CLOCK_PERIOD_NS / 1000
    code = LANE_SPEEDS[0][0]
    for speed, gbps in LANE_SPEEDS:
        if 4 * gbps <= link_gbps:
            code = speed
    return code


class PortAttr(PyverbsObject):
    """ibv_port_attr of one port: always active, one P_Key, the device's GID table; on
    Ethernet (RoCE v2) no LID, LMC or subnet manager, as a RoCE port reports them."""

    def __init__(self, ethernet, gid_tbl_len, lid, lmc, active_mtu, data_bytes):
        super().__init__()
        self.state = e.IBV_PORT_ACTIVE
        self.max_mtu = e.IBV_MTU_4096
        self.active_mtu = active_mtu
        self.gid_tbl_len = gid_tbl_len
        self.port_cap_flags = ETH_PORT_CAPS if ethernet else PORT_CAPS
        self.max_msg_sz = MAX_MSG_SIZE
        self.bad_pkey_cntr = 0
        self.qkey_viol_cntr = 0
        self.pkey_tbl_len = 1
        self.lid = 0 if ethernet else lid
        self.sm_lid = 0
        self.lmc = 0 if ethernet else lmc
        self.max_vl_num = 1
        self.sm_sl = 0
        self.subnet_timeout = 0
        self.init_type_reply = 0
        self.active_width = WIDTH_4X
        self.active_speed = lane_speed(data_bytes)
        self.phys_state = 5     # LinkUp
        self.link_layer = e.IBV_LINK_LAYER_ETHERNET if ethernet else e.IBV_LINK_LAYER_INFINIBAND
        self.flags = 0
        self.port_cap_flags2 = 0

    def __str__(self):
        return (f"{'State':<22}: {port_state_to_str(self.state)}\n"
                f"{'Active MTU':<22}: {translate_mtu(self.active_mtu)}\n"
                f"{'LID':<22}: {self.lid}\n{'LMC':<22}: {self.lmc}\n"
                f"{'Link layer':<22}: {translate_link_layer(self.link_layer)}\n")


class GIDEntry(PyverbsObject):
    def __init__(self, raw, gid_index, port_num, gid_type):
        super().__init__()
        self.gid_subnet_prefix = int.from_bytes(raw[:8], "big")
        self.gid_interface_id = int.from_bytes(raw[8:], "big")
        self.gid_index = gid_index
        self.port_num = port_num
        self.gid_type = gid_type
        self.ndev_ifindex = 0   # the simulated host has no net devices (see RDMA-CM)
        self._raw = raw

    def gid_str(self):
        return GID.format(self._raw)


# ---------------------------------------------------------------------------------------------
# Device memory: the device has none

class AllocDmAttr(PyverbsObject):
    def __init__(self, length=0, log_align_req=0, comp_mask=0):
        super().__init__()
        self.length = length
        self.log_align_req = log_align_req
        self.comp_mask = comp_mask


class DM(PyverbsCM):
    def __init__(self, context, dm_attr=None, **kwargs):
        super().__init__()
        raise rdma_error("Failed to allocate device memory (the device has none)",
                         errno.EOPNOTSUPP)


class AsyncEvent(PyverbsObject):
    """ibv_async_event: its type and (`element`) the number of the object it is about."""

    def __init__(self, event_type=0, element=0):
        super().__init__()
        self.event_type = int(event_type)
        self.element = element

    def ack(self):
        pass


# ---------------------------------------------------------------------------------------------
# Names of values, as pyverbs prints them

_PHYS_STATES = {1: "Sleep", 2: "Polling", 3: "Disabled", 4: "Port configuration training",
                5: "Link up", 6: "Link error recovery", 7: "Phy test"}
_PORT_STATES = {0: "NOP", 1: "Down", 2: "Init", 3: "Armed", 4: "Active", 5: "Defer"}
_WIDTHS = {1: "1X", 2: "4X", 4: "8X", 8: "12X", 16: "2X"}
_SPEEDS = {0: "0.0 Gbps", 1: "2.5 Gbps", 2: "5.0 Gbps", 4: "5.0 Gbps", 8: "10.0 Gbps",
           16: "14.0 Gbps", 32: "25.0 Gbps", 64: "50.0 Gbps", 128: "100.0 Gbps"}
_LINK_LAYERS = {0: "Unspecified", 1: "InfiniBand", 2: "Ethernet"}
_NODE_TYPES = {1: "CA", 2: "Switch", 3: "Router", 4: "RNIC", 5: "USNIC", 6: "USNIC UDP"}
_TRANSPORT_TYPES = {0: "IB", 1: "IWARP", 2: "USNIC", 3: "USNIC UDP"}


def phys_state_to_str(att):
    return f"{_PHYS_STATES[att]} ({att})" if att in _PHYS_STATES else "Invalid physical state"


def port_state_to_str(port_state):
    return (f"{_PORT_STATES[port_state]} ({port_state})" if port_state in _PORT_STATES
            else f"Invalid state ({port_state})")


def translate_mtu(mtu):
    return f"{128 << mtu} ({mtu})" if 1 <= mtu <= 5 else f"Invalid MTU ({mtu})"


def width_to_str(width):
    return f"{_WIDTHS[width]} ({width})" if width in _WIDTHS else "Invalid width"


def speed_to_str(speed):
    return f"{_SPEEDS[speed]} ({speed})" if speed in _SPEEDS else "Invalid speed"


def translate_link_layer(ll):
    return _LINK_LAYERS.get(ll, f"Invalid link layer ({ll})")


def translate_node_type(node_type):
    return _NODE_TYPES.get(node_type, "Unknown")


def translate_transport_type(transport_type):
    return _TRANSPORT_TYPES.get(transport_type, "Unknown")


def translate_gid_type(gid_type):
    return {0: "IB", 1: "RoCE v1", 2: "RoCE v2"}.get(gid_type, f"Unknown ({gid_type})")


def translate_event_type(event_type):
    try:
        return e.ibv_event_type(event_type).name
    except ValueError:
        return f"Unknown event ({event_type})"


def guid_to_hex(node_guid):
    return hex(node_guid).replace("0x", "")


def guid_format(num):
    """A GUID as four 16-bit groups in the byte order of its memory image."""
    hex_str = num.to_bytes(8, "little").hex()
    return ":".join(hex_str[i:i + 4] for i in range(0, 16, 4))


def str_from_flags(flags, dictionary):
    return "".join(f"\n  {name}" for bit, name in dictionary.items() if flags & bit) + "\n"


def translate_device_caps(flags):
    return str_from_flags(flags, {int(m): m.name for m in e.ibv_device_cap_flags})


def translate_port_cap_flags(flags):
    return str_from_flags(flags, {int(m): m.name for m in e.ibv_port_cap_flags})


def translate_port_cap_flags2(flags):
    return str_from_flags(flags, {int(m): m.name for m in e.ibv_port_cap_flags2})
