"""A libibverbs-style driver for rdma_dev.

A test drives the device the way an RDMA program drives a NIC: open the device, allocate a
protection domain, register memory, create completion queues and queue pairs, move the QPs to
RTS, post work requests and poll completions. Everything goes through the documented register
map and host memory (docs/host-interface.md); nothing looks at RTL signals.

Every call is reported to `Device.observers` (see `Observer`), so a reference model and a
scoreboard can follow the program without the test mentioning them.

Many coroutines may use one Device at once, as many threads use one ibv_context: the driver
serializes what the device serializes (one command block: a command runs whole before the
next starts) and its own bookkeeping (each ring's producer index and room, each CQ's consumer
index; an index a create verb picks is taken before its command runs).

    dev = Device(tb.regs, tb.mem, tb.wait_event, mem_base=0x10000, mem_size=0x100000)
    await dev.open()
    await dev.set_port(1, lid=0x11)
    pd = dev.alloc_pd()
    cq = await dev.create_cq(64)
    a = await pd.create_qp(QPType.RC, cq, cq)
    b = await pd.create_qp(QPType.RC, cq, cq)
    await connect(a, b, port_a=1)
    await a.post_send(rdma_write(src.sge(0, 256), dst.remote(0), wr_id=1))
    [wc] = await cq.wait(1)
"""

from __future__ import annotations

import asyncio
import random
import struct
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from enum import IntEnum, IntFlag

import cocotb
import cocotb.triggers

from .ib_packet import is_ipv4_mapped

DEV_ID_MAGIC = 0x52444D41  # "RDMA"
GRH_BYTES = 40  # a UD receive buffer starts with this much room for the GRH
QKEY_FROM_QP = 0x80000000  # a UD WQE's remote Q_Key with bit 31 set means "use the QP's own"
CMD_POLLS = 1000  # CMD_STATUS reads before a command counts as hung (commands take a few cycles)


# ---------------------------------------------------------------------------------------------
# Registers

class Reg(IntEnum):
    DEV_ID = 0x0000
    DEV_PARAMS = 0x0004
    DEV_PARAMS2 = 0x0008
    CTRL = 0x000C           # bit 0: loopback messages take the bypass (set at reset)
    EVENT = 0x0010
    REG_ERRORS = 0x0014
    CQ_OVERFLOWS = 0x0018
    LB_MSGS = 0x0020  # 64-bit: LO here, HI at +4
    LB_BYTES = 0x0028
    SRQ_EVENT = 0x0030      # bit s: SRQ s reached its limit; write 1 to clear
    CNP_INTERVAL = 0x0034   # cycles between two CNPs of one QP (0: no limit)
    PORT_BASE = 0x0100
    CMD_DATA = 0x0400
    PORT_COUNTERS = 0x0800
    CMD = 0x0440
    CMD_STATUS = 0x0444
    SQ_DB = 0x1000
    RQ_DB = 0x1004
    CQ_CI_DB = 0x2000
    CQ_ARM_DB = 0x2004
    SRQ_DB = 0x3000


PORT_STRIDE = 0x40
CNP_INTERVAL_RESET = 1000   # CNP_INTERVAL after reset: ConnectX's 4 us at 250 MHz


class PortReg(IntEnum):
    """Offsets inside one port's register block."""
    LID = 0x00
    LMC = 0x04
    MTU = 0x08
    PKEY = 0x0C
    GID0 = 0x10  # GID1..3 follow at +4, +8, +12: entry 0 of the GID table
    LINK = 0x20  # [0] Ethernet (RoCE v2); [15:8] GID table entries (RO)
    MAC_HI = 0x24  # MAC bytes 0-1 in [15:0]
    MAC_LO = 0x28  # MAC bytes 2-5


GID_TABLE_BASE = 0x0C00     # + 0x80 * (port - 1) + 0x20 * entry
GID_TABLE_PORT_STRIDE = 0x80
GID_ENTRY_STRIDE = 0x20
GID_VLAN = 0x10             # an entry's VLAN word: [12] tagged, [11:0] VLAN ID after its GID words


def gid_reg(port, entry, offset=0):
    return GID_TABLE_BASE + GID_TABLE_PORT_STRIDE * (port - 1) + GID_ENTRY_STRIDE * entry + offset


def port_reg(port, reg):
    return Reg.PORT_BASE + PORT_STRIDE * (port - 1) + reg


PORT_COUNTERS_STRIDE = 0x80


class PortCounter(IntEnum):
    """Word index in a port's counter block (PMA PortCounters / PortCountersExtended)."""
    XMIT_DATA = 0
    RCV_DATA = 1
    XMIT_PKTS = 2
    RCV_PKTS = 3
    RCV_ERRORS = 4          # 16 bits
    XMIT_DISCARDS = 5       # 16 bits
    XMIT_DATA_EXT = 8       # 64 bits: low word here, high word next
    RCV_DATA_EXT = 10
    XMIT_PKTS_EXT = 12
    RCV_PKTS_EXT = 14
    RCV_ERRORS_EXT = 16
    XMIT_DISCARDS_EXT = 18
    # an Ethernet port's RoCE congestion counters, 32 bits (as mlx5 names them)
    NP_ECN_MARKED_ROCE_PACKETS = 20     # good packets received with IP ECN CE
    NP_CNP_SENT = 21                    # CNPs sent for them
    RP_CNP_HANDLED = 22                 # CNPs received for a QP of the port
    CLEAR = 31              # write: zero every counter of the port

    @property
    def bits(self):
        if self >= PortCounter.NP_ECN_MARKED_ROCE_PACKETS:
            return 32
        return 64 if self >= PortCounter.XMIT_DATA_EXT else 16 if self >= PortCounter.RCV_ERRORS else 32


COUNTERS = tuple(c for c in PortCounter if c != PortCounter.CLEAR)


def _new_lock():
    """An async lock of the loop the driver runs in: cocotb's in a simulation, asyncio's
    elsewhere (the unit tests' device without a simulator)."""
    return cocotb.triggers.Lock() if cocotb.is_simulation else asyncio.Lock()


def port_counter_reg(port, index):
    return Reg.PORT_COUNTERS + PORT_COUNTERS_STRIDE * (port - 1) + 4 * index


def sq_db(qpn):
    return Reg.SQ_DB + 8 * qpn


def rq_db(qpn):
    return Reg.RQ_DB + 8 * qpn


def cq_ci_db(cqn):
    return Reg.CQ_CI_DB + 8 * cqn


def cq_arm_db(cqn):
    return Reg.CQ_ARM_DB + 8 * cqn


def srq_db(srqn):
    return Reg.SRQ_DB + 8 * srqn


# ---------------------------------------------------------------------------------------------
# ibv_* constants

class QPType(IntEnum):
    RC = 2
    UC = 3
    UD = 4


class QPState(IntEnum):
    RESET = 0
    INIT = 1
    RTR = 2
    RTS = 3
    SQD = 4
    SQE = 5
    ERR = 6


class Access(IntFlag):
    LOCAL_WRITE = 1
    REMOTE_WRITE = 2
    REMOTE_READ = 4
    REMOTE_ATOMIC = 8
    MW_BIND = 16    # a region memory windows may be bound to


class WROpcode(IntEnum):
    RDMA_WRITE = 0
    RDMA_WRITE_WITH_IMM = 1
    SEND = 2
    SEND_WITH_IMM = 3
    RDMA_READ = 4
    ATOMIC_CMP_AND_SWP = 5
    ATOMIC_FETCH_AND_ADD = 6
    LOCAL_INV = 7       # rkey: the type 2 window to invalidate
    BIND_MW = 8         # rkey: the window; SGE 0: the region's range; bind_rkey, bind_access
    SEND_WITH_INV = 9   # rkey: the type 2 window the receiver invalidates (RC)
    ATOMIC_WRITE = 15   # RC: `swap`'s 8 bytes (little-endian) written at remote_addr at once


ATOMIC_OPS = (WROpcode.ATOMIC_CMP_AND_SWP, WROpcode.ATOMIC_FETCH_AND_ADD)


class SendFlags(IntFlag):
    FENCE = 1
    SIGNALED = 2
    SOLICITED = 4


class WCStatus(IntEnum):
    SUCCESS = 0
    LOC_LEN_ERR = 1
    LOC_QP_OP_ERR = 2
    LOC_EEC_OP_ERR = 3
    LOC_PROT_ERR = 4
    WR_FLUSH_ERR = 5
    MW_BIND_ERR = 6
    BAD_RESP_ERR = 7
    LOC_ACCESS_ERR = 8
    REM_INV_REQ_ERR = 9
    REM_ACCESS_ERR = 10
    REM_OP_ERR = 11
    RETRY_EXC_ERR = 12
    RNR_RETRY_EXC_ERR = 13
    LOC_RDD_VIOL_ERR = 14
    REM_INV_RD_REQ_ERR = 15
    REM_ABORT_ERR = 16
    INV_EECN_ERR = 17
    INV_EEC_STATE_ERR = 18
    FATAL_ERR = 19
    RESP_TIMEOUT_ERR = 20
    GENERAL_ERR = 21


class WCOpcode(IntEnum):
    SEND = 0
    RDMA_WRITE = 1
    RDMA_READ = 2
    COMP_SWAP = 3
    FETCH_ADD = 4
    BIND_MW = 5
    LOCAL_INV = 6
    ATOMIC_WRITE = 9
    RECV = 128  # bit 7 marks every receive opcode, as in rdma-core
    RECV_RDMA_WITH_IMM = 129


class WCFlags(IntFlag):
    GRH = 1
    WITH_IMM = 2
    WITH_INV = 4    # imm_data holds the rkey a SEND with invalidate invalidated


class MTU(IntEnum):
    MTU256 = 1
    MTU512 = 2
    MTU1024 = 3
    MTU2048 = 4
    MTU4096 = 5

    @property
    def size(self):
        return 128 << self


class Cmd(IntEnum):
    CREATE_CQ = 0x01
    DESTROY_CQ = 0x02
    REG_MR = 0x03
    DEREG_MR = 0x04
    CREATE_AH = 0x05
    DESTROY_AH = 0x06
    CREATE_QP = 0x07
    MODIFY_QP = 0x08
    QUERY_QP = 0x09
    DESTROY_QP = 0x0A
    RESIZE_CQ = 0x0B
    ALLOC_MW = 0x0C
    DEALLOC_MW = 0x0D
    CREATE_SRQ = 0x0E
    MODIFY_SRQ = 0x0F
    QUERY_SRQ = 0x10
    DESTROY_SRQ = 0x11


# commands whose answer the device writes over the whole command block
ANSWERING = (Cmd.QUERY_QP, Cmd.RESIZE_CQ, Cmd.QUERY_SRQ)


class AsyncEvent(IntEnum):
    """The asynchronous events the device reports (enum ibv_event_type)."""
    SRQ_LIMIT_REACHED = 15


class CmdResult(IntEnum):
    OK = 0
    BAD_INDEX = 1
    BAD_STATE = 2
    BAD_PARAM = 3
    BUSY = 4


def _enum(cls, value):
    """`cls(value)`, or the plain int when the device wrote a value the enum does not name."""
    try:
        return cls(value)
    except ValueError:
        return value


def _name(value):
    return f"{value.name} ({int(value)})" if isinstance(value, IntEnum) else str(value)


# ---------------------------------------------------------------------------------------------
# Errors

class VerbsError(Exception):
    """A verb refused by the driver itself (what libibverbs reports through errno)."""


class QueueFull(VerbsError):
    """More work requests than free ring entries (ENOMEM)."""


class CommandError(VerbsError):
    """The device refused a command; `result` is the CMD_STATUS result."""

    def __init__(self, what, result):
        self.result = result
        super().__init__(f"{what}: refused with {_name(result)}")


# ---------------------------------------------------------------------------------------------
# Attributes and work requests (immutable, so observers may keep them)

@dataclass(frozen=True)
class GlobalRoute:
    dgid: bytes
    flow_label: int = 0
    hop_limit: int = 64
    traffic_class: int = 0
    sgid_index: int = 0         # the sending port's GID table entry


@dataclass(frozen=True)
class AHAttr:
    """An address vector: the QP's (RC, UC) or an address handle's (UD). On an Ethernet
    port the GRH is the route (RoCE v2 has no LIDs) and `dmac` the next hop's MAC, which the
    driver resolves from the DGID when it is not given (as libibverbs does from the kernel's
    neighbour table)."""
    dlid: int = 0
    sl: int = 0
    src_path_bits: int = 0
    static_rate: int = 0
    grh: GlobalRoute | None = None
    dmac: bytes | None = None


@dataclass(frozen=True)
class QPAttr:
    """Every attribute of the modify block; the driver keeps one as the QP's shadow."""
    port_num: int = 1
    path_mtu: MTU = MTU.MTU4096
    qp_access_flags: Access = Access(0)
    qkey: int = 0
    dest_qp_num: int = 0
    rnr_retry: int = 0
    ah_attr: AHAttr = AHAttr()
    sq_psn: int = 0
    rq_psn: int = 0
    timeout: int = 6            # local ACK timeout 4.096 us x 2^timeout (6: 262 us), 0 = none
    retry_cnt: int = 7          # resends after a timeout or sequence NAK, then RETRY_EXC_ERR
    min_rnr_timer: int = 1      # RNR timer code this QP's RNR NAKs carry (1: 10 us)
    max_rd_atomic: int = 16     # RDMA READs in flight as requester
    max_dest_rd_atomic: int = 16    # ... and as responder


@dataclass(frozen=True)
class GidEntry:
    """A GID table entry; on Ethernet an IP address of the port (IPv4-mapped or IPv6) and
    the VLAN of the interface that owns it (None: untagged). An all-zero GID is empty."""
    gid: bytes = bytes(16)
    vlan: int | None = None


@dataclass(frozen=True)
class PortAttr:
    lid: int = 0
    lmc: int = 0
    gid: bytes = bytes(16)      # entry 0 of the GID table
    mtu: MTU = MTU.MTU4096
    link_layer: str = "ib"      # "ib" (InfiniBand) or "eth" (Ethernet: RoCE v2)
    mac: bytes = bytes(6)
    gid_table: tuple = ()       # every entry (GidEntry), entry 0's GID being `gid`

    def own_gids(self):
        """The port's addresses: its non-empty GID table entries."""
        return [entry for entry in self.gid_table if any(entry.gid)]


@dataclass(frozen=True)
class SGE:
    addr: int  # iova
    length: int
    lkey: int


@dataclass(frozen=True)
class RemoteAddr:
    addr: int
    rkey: int


NO_SGE = SGE(0, 0, 0)
MAX_SGE = 4     # scatter/gather elements a WQE can hold (a QP's max_send_sge / max_recv_sge)
MAX_SGE_RD = 1  # ... that an RDMA READ or an atomic may have (the device's max_sge_rd)
MAX_MSG_BYTES = 1 << 31     # a message's bytes at most (the sum of its SGEs)
ATOMIC_WRITE_BYTES = 8      # what an ATOMIC WRITE writes, from its WQE


class _ScatterGather:
    """A WR's `sge` is one SGE or a sequence of them: its scatter/gather list, in order."""

    @property
    def sg_list(self):
        return (self.sge,) if isinstance(self.sge, SGE) else tuple(self.sge)

    @property
    def length(self):
        """The bytes of the list: the sum of the SGEs' lengths."""
        return sum(s.length for s in self.sg_list)


@dataclass(frozen=True)
class SendWR(_ScatterGather):
    """One send work request. `sge` is one SGE or a sequence of up to MAX_SGE: the message is
    their bytes in order. `imm` is the 4 immediate bytes as a big-endian int, which is what
    rdma-core programs put there (htonl); the device copies the bytes as they are."""
    opcode: WROpcode | int
    sge: SGE | tuple = NO_SGE
    wr_id: int = 0
    flags: SendFlags = SendFlags.SIGNALED
    imm: int = 0
    remote_addr: int = 0
    rkey: int = 0
    ah: AH | int | None = None  # an AH, or a raw AH number to provoke errors
    remote_qpn: int = 0
    remote_qkey: int = 0
    compare_add: int = 0    # atomics: CompareSwap's compare value, FetchAdd's addend
    swap: int = 0           # CompareSwap's new value; ATOMIC_WRITE's 8 bytes
    bind_rkey: int = 0      # BIND_MW: the key the window takes (its index, a new variant)
    bind_access: Access = Access(0)     # BIND_MW: the remote rights the window gives

    @property
    def length(self):
        """The message's bytes: its SGEs', or an ATOMIC WRITE's 8 (it has no SGE)."""
        return ATOMIC_WRITE_BYTES if self.opcode == WROpcode.ATOMIC_WRITE else super().length

    @property
    def atomic_data(self):
        """ATOMIC_WRITE: the 8 bytes it writes, as the WQE holds them."""
        return (self.swap & (2**64 - 1)).to_bytes(ATOMIC_WRITE_BYTES, "little")

    @property
    def ahn(self):
        if self.ah is None:
            return 0
        return self.ah if isinstance(self.ah, int) else self.ah.ahn


@dataclass(frozen=True)
class RecvWR(_ScatterGather):
    """One receive work request: `sge` is one SGE or a sequence of up to MAX_SGE, filled in
    order."""
    sge: SGE | tuple = NO_SGE
    wr_id: int = 0


def send(sge, wr_id=0, imm=None, flags=SendFlags.SIGNALED):
    """SEND, or SEND_WITH_IMM when `imm` is given."""
    opcode = WROpcode.SEND if imm is None else WROpcode.SEND_WITH_IMM
    return SendWR(opcode, sge, wr_id, flags, imm or 0)


def rdma_write(sge, remote, wr_id=0, imm=None, flags=SendFlags.SIGNALED):
    """RDMA_WRITE to `remote` (a RemoteAddr, e.g. `mr.remote(offset)`), WITH_IMM when `imm`."""
    opcode = WROpcode.RDMA_WRITE if imm is None else WROpcode.RDMA_WRITE_WITH_IMM
    return SendWR(opcode, sge, wr_id, flags, imm or 0, remote.addr, remote.rkey)


def rdma_read(sge, remote, wr_id=0, flags=SendFlags.SIGNALED):
    return SendWR(WROpcode.RDMA_READ, sge, wr_id, flags, 0, remote.addr, remote.rkey)


def atomic_cmp_and_swp(sge, remote, compare, swap, wr_id=0, flags=SendFlags.SIGNALED):
    """CompareSwap on the 8 bytes at `remote`; the original value lands in `sge` (8 bytes)."""
    return SendWR(WROpcode.ATOMIC_CMP_AND_SWP, sge, wr_id, flags, 0, remote.addr, remote.rkey,
                  compare_add=compare, swap=swap)


def atomic_write(remote, data, wr_id=0, flags=SendFlags.SIGNALED):
    """ATOMIC WRITE (RC): the 8 bytes `data` written at `remote` (8-byte aligned) at once."""
    return SendWR(WROpcode.ATOMIC_WRITE, NO_SGE, wr_id, flags, 0, remote.addr, remote.rkey,
                  swap=int.from_bytes(bytes(data), "little"))


def atomic_fetch_and_add(sge, remote, add, wr_id=0, flags=SendFlags.SIGNALED):
    """FetchAdd on the 8 bytes at `remote`; the original value lands in `sge` (8 bytes)."""
    return SendWR(WROpcode.ATOMIC_FETCH_AND_ADD, sge, wr_id, flags, 0, remote.addr, remote.rkey,
                  compare_add=add)


def ud_send(sge, ah, remote_qpn, remote_qkey, wr_id=0, imm=None, flags=SendFlags.SIGNALED):
    opcode = WROpcode.SEND if imm is None else WROpcode.SEND_WITH_IMM
    return SendWR(opcode, sge, wr_id, flags, imm or 0, ah=ah, remote_qpn=remote_qpn,
                  remote_qkey=remote_qkey)


def inc_rkey(rkey):
    """`rkey` with its low (variant) byte incremented, as ibv_inc_rkey does."""
    return (rkey & ~0xFF) | ((rkey + 1) & 0xFF)


def local_inv(rkey, wr_id=0, flags=SendFlags.SIGNALED):
    """LOCAL_INV of the type 2 window `rkey` names."""
    return SendWR(WROpcode.LOCAL_INV, NO_SGE, wr_id, flags, rkey=rkey)


def send_with_inv(sge, rkey, wr_id=0, flags=SendFlags.SIGNALED):
    """SEND whose receiver invalidates the type 2 window `rkey` names (RC)."""
    return SendWR(WROpcode.SEND_WITH_INV, sge, wr_id, flags, rkey=rkey)


@dataclass(frozen=True)
class WC:
    wr_id: int
    status: WCStatus
    opcode: WCOpcode
    byte_len: int
    imm_data: int
    qp_num: int
    src_qp: int
    wc_flags: WCFlags
    sl: int
    slid: int
    dlid_path_bits: int

    @property
    def is_recv(self):
        return bool(self.opcode & WCOpcode.RECV)


@dataclass(frozen=True)
class QPStatus:
    """What QUERY_QP returns."""
    state: QPState
    sq_ci: int
    rq_ci: int
    sq_pi: int
    rq_pi: int
    timeout: int
    retry_cnt: int
    rnr_retry: int
    min_rnr_timer: int
    sq_psn: int             # the PSN the next new request takes
    rq_psn: int             # the PSN the responder expects next
    max_rd_atomic: int
    max_dest_rd_atomic: int
    max_send_sge: int       # as created (0 and 1 both mean one)
    max_recv_sge: int


@dataclass(frozen=True)
class SRQStatus:
    """What QUERY_SRQ returns."""
    pi: int                 # producer index (the last doorbell)
    ci: int                 # consumer index: WQEs taken by QPs (their slots are free again)
    limit: int              # 0: the limit event is not armed
    log2: int
    max_sge: int            # as created (0 and 1 both mean one)
    pd: int


@dataclass
class Counters:
    lb_msgs: int = 0
    lb_bytes: int = 0
    cq_overflows: int = 0
    reg_errors: int = 0

    def __sub__(self, other):
        return Counters(self.lb_msgs - other.lb_msgs, self.lb_bytes - other.lb_bytes,
                        self.cq_overflows - other.cq_overflows,
                        self.reg_errors - other.reg_errors)


@dataclass(frozen=True)
class Guard:
    """Random bytes the allocator put next to an allocation; nothing may change them."""
    addr: int
    data: bytes
    label: str


# ---------------------------------------------------------------------------------------------
# Byte layouts (docs/host-interface.md)

_SEND_WQE = struct.Struct("<BBBx4sQQIIQIIII8x")
_ATOMIC_WQE = struct.Struct("<BBBx4sQQIIQIIQQ")    # 0x30 compare_add, 0x38 swap over UD's fields
_RECV_WQE = struct.Struct("<2xBxxxxxQQII32x")
_SGE = struct.Struct("<QII")                       # SGEs 1-3 at 0x40, 0x50, 0x60 (128-byte WQEs)
_CQE = struct.Struct("<QI4sIIBBBBHBB")
_CQ_BLOCK = struct.Struct("<QB")
_CQ_RESIZE_BLOCK = struct.Struct("<QBxH")          # ring, log2, the consumer index
_CQ_RESIZE_ANSWER = struct.Struct("<HH")           # CQEs moved, the old producer index
_MW_BLOCK = struct.Struct("<BxHB")                 # type, PD, key variant
_MR_BLOCK = struct.Struct("<QIBBHQ")
_AH_BLOCK = struct.Struct("<HBBBBBBIBxH16s6sB")
_QP_CREATE_BLOCK = struct.Struct("<BxHHHBBBBBxHQQ")  # ... on an SRQ (flag, number), rings
_QP_MODIFY_BLOCK = struct.Struct("<BBBBIIBBBBHBBBBBBIBB2x16sII6sB")
_QP_QUERY_BLOCK = struct.Struct("<B3xHHHHBBBBIIBBBB")
_SRQ_CREATE_BLOCK = struct.Struct("<QBBHH")        # ring, log2, max SGEs, PD, limit
_SRQ_MODIFY_BLOCK = struct.Struct("<H")            # limit
_SRQ_QUERY_BLOCK = struct.Struct("<HHHBBH")        # producer, consumer, limit, log2, SGEs, PD
WQE_BYTES = 64          # a WQE with one SGE; 128 when the queue's WQEs may have more


def wqe_bytes(max_sge):
    """The ring stride of a queue whose WQEs have up to `max_sge` SGEs."""
    return 2 * WQE_BYTES if max_sge > 1 else WQE_BYTES


def _sge_tail(sges):
    """The second half of a 128-byte WQE: SGEs 1-3 (and what of more fits, for tests of the
    device's check)."""
    tail = b"".join(_SGE.pack(s.addr, s.length, s.lkey) for s in sges[1:])[:WQE_BYTES]
    return tail + bytes(WQE_BYTES - len(tail))
CQE_BYTES = 32


def encode_send_wqe(wr, size=WQE_BYTES):
    """The WQE's `size` bytes (64, or 128 with room for SGEs 1-3)."""
    sges = wr.sg_list or (NO_SGE,)
    first = sges[0]
    if wr.opcode in ATOMIC_OPS or wr.opcode == WROpcode.ATOMIC_WRITE:   # 0x38: its 8 bytes
        head = _ATOMIC_WQE.pack(wr.opcode, wr.flags, len(sges), wr.imm.to_bytes(4, "big"),
                                wr.wr_id, first.addr, first.length, first.lkey, wr.remote_addr,
                                wr.rkey, wr.ahn, wr.compare_add & (2**64 - 1), wr.swap & (2**64 - 1))
    elif wr.opcode == WROpcode.BIND_MW:     # the new key and the rights over the UD fields
        head = _SEND_WQE.pack(wr.opcode, wr.flags, len(sges), bytes(4), wr.wr_id, first.addr,
                              first.length, first.lkey, 0, wr.rkey, wr.bind_rkey,
                              int(wr.bind_access), 0)
    else:
        head = _SEND_WQE.pack(wr.opcode, wr.flags, len(sges), wr.imm.to_bytes(4, "big"),
                              wr.wr_id, first.addr, first.length, first.lkey, wr.remote_addr,
                              wr.rkey, wr.ahn, wr.remote_qpn, wr.remote_qkey)
    return head + _sge_tail(sges) if size > WQE_BYTES else head


def encode_recv_wqe(wr, size=WQE_BYTES):
    sges = wr.sg_list or (NO_SGE,)
    head = _RECV_WQE.pack(len(sges), wr.wr_id, sges[0].addr, sges[0].length, sges[0].lkey)
    return head + _sge_tail(sges) if size > WQE_BYTES else head


def decode_cqe(raw):
    """A CQE's fields as a WC, and its owner bit."""
    (wr_id, byte_len, imm, qp_num, src_qp, status, opcode, flags, sl, slid, path_bits,
     owner) = _CQE.unpack(raw)
    # immediate data is opaque bytes (read as the big-endian number htonl put there); an
    # invalidated rkey is a little-endian number
    imm_data = int.from_bytes(imm, "little" if flags & WCFlags.WITH_INV else "big")
    wc = WC(wr_id, _enum(WCStatus, status), _enum(WCOpcode, opcode), byte_len, imm_data,
            qp_num, src_qp, WCFlags(flags), sl, slid, path_bits)
    return wc, owner & 1


def encode_av(av):
    """The AV part shared by the AH and modify blocks: is_global, the GRH fields, the
    destination MAC."""
    grh = av.grh or GlobalRoute(bytes(16), hop_limit=0)
    return int(av.grh is not None), grh, bytes(av.dmac or bytes(6))


def encode_modify(state, attr):
    av = attr.ah_attr
    is_global, grh, dmac = encode_av(av)
    return _QP_MODIFY_BLOCK.pack(state, attr.port_num, attr.path_mtu, attr.qp_access_flags,
                                 attr.qkey, attr.dest_qp_num, attr.rnr_retry, attr.retry_cnt,
                                 attr.timeout, attr.min_rnr_timer, av.dlid, av.sl,
                                 av.src_path_bits, av.static_rate, is_global, grh.hop_limit,
                                 grh.traffic_class, grh.flow_label, attr.max_rd_atomic,
                                 attr.max_dest_rd_atomic, grh.dgid, attr.sq_psn, attr.rq_psn,
                                 dmac, grh.sgid_index)


def _log2_entries(n, what):
    """Ring entries for `n` requests: a power of two, at least 2, indexable by 16-bit indices."""
    log2 = max(1, (max(n, 1) - 1).bit_length())
    if log2 > 15:
        raise ValueError(f"{what}: {n} entries is more than 2^15")
    return log2


def _as_list(wrs):
    return list(wrs) if isinstance(wrs, (list, tuple)) else [wrs]


# ---------------------------------------------------------------------------------------------
# Observers

class Observer:
    """What the driver reports; subclass and override what you need. Called after the device
    accepted the operation (refused commands are not reported), with immutable arguments
    where the driver has them (attributes, work requests)."""

    def on_open(self, dev): pass
    def on_write_reg(self, offset, value): pass
    def on_read_reg(self, offset, value): pass
    def on_command(self, opcode, index, result): pass  # every command the device answered
    def on_mem_write(self, addr, data): pass  # every host-memory write the software makes
    def on_set_port(self, port, attr): pass
    def on_reg_mr(self, mr): pass
    def on_dereg_mr(self, mr): pass
    def on_alloc_mw(self, mw): pass
    def on_dealloc_mw(self, mw): pass
    def on_create_ah(self, ah): pass
    def on_destroy_ah(self, ah): pass
    def on_create_cq(self, cq): pass
    def on_destroy_cq(self, cq): pass
    def on_resize_cq(self, cq, moved): pass  # moved: the unconsumed CQEs it kept
    def on_create_qp(self, qp): pass
    def on_modify_qp(self, qp, state, attr): pass
    def on_destroy_qp(self, qp): pass
    def on_post_send(self, qp, wrs): pass
    def on_post_recv(self, qp, wrs): pass
    def on_create_srq(self, srq): pass
    def on_modify_srq(self, srq, limit): pass
    def on_destroy_srq(self, srq): pass
    def on_post_srq_recv(self, srq, wrs): pass
    def on_async_event(self, event, index): pass  # read from the device (index: its object)
    def on_poll_cq(self, cq, wcs): pass


# ---------------------------------------------------------------------------------------------
# Device

class Device:
    """One rdma_dev, its host memory and the objects created on it.

    `regs`: async read32(addr) / write32(addr, value). `mem`: read(addr, length) -> bytes and
    write(addr, data), e.g. a cocotbext-axi AxiRam. `wait_event`: async callable that returns
    when irq may have risen (or after a timeout). Host memory [mem_base, mem_base + mem_size)
    is handed out by `alloc`, which surrounds every allocation with random guard bytes.
    """

    def __init__(self, regs, mem, wait_event, mem_base, mem_size, *, seed=0, guard_bytes=64,
                 observers=()):
        self.regs = regs
        self.mem = mem
        self._wait_event = wait_event
        self.mem_base = mem_base
        self.mem_size = mem_size
        self.guard_bytes = guard_bytes
        self.observers = list(observers)
        self.guards = []
        self._cursor = mem_base
        self._rng = random.Random(seed)
        self._next_pdn = 1
        self._key_variants = {}
        self.ports = {}
        self.neighbours = {}        # GID -> MAC of addresses beyond this device (Ethernet)
        self.mrs, self.ahs, self.cqs, self.qps, self.srqs = {}, {}, {}, {}, {}
        self.async_events = deque()  # (ibv_event_type, SRQ number) read from the device
        self.counters_at_open = Counters()
        self._command_block = _new_lock()
        # what CMD_DATA holds, word by word, as far as the driver knows (None: unknown): a
        # command writes only the words that differ, as a driver saves its MMIO writes
        self._block_words = [None] * 16

    def _notify(self, event, *args):
        for observer in self.observers:
            getattr(observer, event)(*args)

    # --- registers ---------------------------------------------------------------------------

    async def read_reg(self, offset):
        value = await self.regs.read32(offset)
        self._notify("on_read_reg", offset, value)
        return value

    async def write_reg(self, offset, value):
        """Every register write goes through here and is reported, so a test may also use
        it for raw register tests (the model predicts REG_ERRORS from it)."""
        await self.regs.write32(offset, value)
        if Reg.CMD_DATA <= offset < Reg.CMD_DATA + 64:     # the word at offset & ~3
            self._block_words[(offset - Reg.CMD_DATA) // 4] = value & 0xFFFFFFFF
        elif offset == Reg.CMD and value & 0xFF in ANSWERING:
            self._block_words = [None] * 16     # the device writes its answer over the block
        self._notify("on_write_reg", offset, value)

    async def _read64(self, offset):
        hi = await self.read_reg(offset + 4)
        lo = await self.read_reg(offset)
        hi2 = await self.read_reg(offset + 4)
        if hi2 != hi:  # a carry between the reads: a low word read now pairs with hi2
            lo = await self.read_reg(offset)
        return hi2 << 32 | lo

    async def command(self, opcode, index=0, block=b"", reply=0, what=None):
        """Run one command: CMD_DATA (the words it does not hold already), CMD, poll
        CMD_STATUS. Returns `reply` bytes of the command block (QUERY answers); raises
        CommandError when the result is not OK. One command at a time: the block, CMD and
        CMD_STATUS are the device's only ones."""
        block += bytes(-len(block) % 4)
        what = what or f"{getattr(_enum(Cmd, opcode), 'name', hex(opcode))} {index}"
        async with self._command_block:
            for i in range(0, len(block), 4):
                word = int.from_bytes(block[i:i + 4], "little")
                if self._block_words[i // 4] != word:
                    await self.write_reg(Reg.CMD_DATA + i, word)
            await self.write_reg(Reg.CMD, opcode | index << 16)
            for _ in range(CMD_POLLS):
                status = await self.read_reg(Reg.CMD_STATUS)
                if not status & 1:
                    break
            else:
                raise TimeoutError(f"{what}: CMD_STATUS still busy after {CMD_POLLS} reads")
            result = _enum(CmdResult, (status >> 8) & 0xFF)
            self._notify("on_command", opcode, index, result)
            if result != CmdResult.OK:
                raise CommandError(what, result)
            words = [await self.read_reg(Reg.CMD_DATA + i) for i in range(0, reply, 4)]
            self._block_words[:len(words)] = words
        return b"".join(w.to_bytes(4, "little") for w in words)[:reply]

    @staticmethod
    @contextmanager
    def _claim(table, index, obj):
        """Hold `index` of `table` while the command that creates it runs, so that a create
        verb on another coroutine picks another index; released when the command fails."""
        table[index] = obj
        try:
            yield
        except BaseException:
            del table[index]
            raise

    async def open(self):
        """Identify the device and learn its sizes and port settings."""
        dev_id = await self.read_reg(Reg.DEV_ID)
        if dev_id != DEV_ID_MAGIC:
            raise VerbsError(f"DEV_ID reads {dev_id:#010x}, not {DEV_ID_MAGIC:#010x}")
        p1 = await self.read_reg(Reg.DEV_PARAMS)
        p2 = await self.read_reg(Reg.DEV_PARAMS2)
        self.num_ports = p1 & 0xFF
        self.data_bytes = ((p1 >> 8) & 0xFF) * 8
        self.num_qp = 1 << ((p1 >> 16) & 0xFF)
        self.num_cq = 1 << ((p1 >> 24) & 0xFF)
        self.num_mr = 1 << (p2 & 0xFF)
        self.num_ah = 1 << ((p2 >> 8) & 0xFF)
        self.addr_width = (p2 >> 16) & 0xFF
        self.num_srq = 1 << ((p2 >> 24) & 0xFF)
        self.ports = {port: await self._read_port(port) for port in range(1, self.num_ports + 1)}
        self.counters_at_open = await self.read_counters()
        self._notify("on_open", self)

    async def _read_port(self, port):
        link = await self.read_reg(port_reg(port, PortReg.LINK))
        table = []
        for entry in range((link >> 8) & 0xFF):
            gid = b""
            for i in range(4):
                gid += (await self.read_reg(gid_reg(port, entry, 4 * i))).to_bytes(4, "big")
            vlan = await self.read_reg(gid_reg(port, entry, GID_VLAN))
            table.append(GidEntry(gid, vlan & 0xFFF if vlan >> 12 & 1 else None))
        mac = ((await self.read_reg(port_reg(port, PortReg.MAC_HI)) & 0xFFFF).to_bytes(2, "big")
               + (await self.read_reg(port_reg(port, PortReg.MAC_LO))).to_bytes(4, "big"))
        return PortAttr(await self.read_reg(port_reg(port, PortReg.LID)) & 0xFFFF,
                        await self.read_reg(port_reg(port, PortReg.LMC)) & 7, table[0].gid,
                        _enum(MTU, await self.read_reg(port_reg(port, PortReg.MTU)) & 7),
                        "eth" if link & 1 else "ib", mac, tuple(table))

    async def set_port(self, port, lid=0, lmc=0, gid=bytes(16), mtu=MTU.MTU4096,
                       link_layer="ib", mac=bytes(6), gids=()):
        """Address port `port`: its link layer ("ib" or "eth"), LID and LMC (InfiniBand),
        MAC (Ethernet) and GID table: entry 0 is `gid` (untagged), entries 1.. are `gids`
        (GidEntry; the rest of the table is emptied)."""
        if port not in self.ports:
            raise VerbsError(f"no port {port}: the device has ports 1..{self.num_ports}")
        if link_layer not in ("ib", "eth"):
            raise VerbsError(f"link layer {link_layer!r}: 'ib' or 'eth'")
        size = len(self.ports[port].gid_table)
        table = (GidEntry(bytes(gid)),) + tuple(gids)
        if len(table) > size:
            raise VerbsError(f"port {port}: {len(table)} GIDs, its table holds {size}")
        table += (GidEntry(),) * (size - len(table))
        mac = bytes(mac)
        await self.write_reg(port_reg(port, PortReg.LINK), int(link_layer == "eth"))
        await self.write_reg(port_reg(port, PortReg.MAC_HI), int.from_bytes(mac[:2], "big"))
        await self.write_reg(port_reg(port, PortReg.MAC_LO), int.from_bytes(mac[2:], "big"))
        await self.write_reg(port_reg(port, PortReg.LID), lid)
        await self.write_reg(port_reg(port, PortReg.LMC), lmc)
        await self.write_reg(port_reg(port, PortReg.MTU), mtu)
        for entry, (egid, vlan) in enumerate((e.gid, e.vlan) for e in table):
            for i in range(4):  # the lowest-numbered GID byte goes in bits [31:24]
                await self.write_reg(gid_reg(port, entry, 4 * i),
                                     int.from_bytes(egid[4 * i:4 * i + 4], "big"))
            await self.write_reg(gid_reg(port, entry, GID_VLAN),
                                 0 if vlan is None else 1 << 12 | vlan)
        self.ports[port] = PortAttr(lid, lmc, table[0].gid, MTU(mtu), link_layer, mac, table)
        self._notify("on_set_port", port, self.ports[port])

    def resolve_av(self, port, av):
        """`av` as the device takes it from `port`: on Ethernet with the destination MAC
        resolved from its DGID (one of this device's ports, or `neighbours`), as libibverbs
        resolves it; an address it cannot resolve, or whose GIDs are not of one IP version
        (RoCE v2 sends IPv4 between IPv4-mapped GIDs, else IPv6), is refused."""
        table = self.ports[port].gid_table
        if self.ports[port].link_layer != "eth":
            return av
        if av.grh is None:
            raise VerbsError(f"port {port} is Ethernet: an address needs a GRH (RoCE v2)")
        dgid = bytes(av.grh.dgid)
        if av.grh.sgid_index < len(table):
            sgid = table[av.grh.sgid_index].gid
            if is_ipv4_mapped(sgid) != is_ipv4_mapped(dgid):
                raise VerbsError(f"source GID {sgid.hex()} and destination GID {dgid.hex()} "
                                 "are not of one IP version")
        if av.dmac is not None:
            return av
        macs = {entry.gid: attr.mac for attr in self.ports.values()
                for entry in attr.own_gids()}
        macs.update(self.neighbours)
        if dgid not in macs:
            raise VerbsError(f"no neighbour has GID {dgid.hex()}: its MAC is unknown")
        return replace(av, dmac=macs[dgid])

    async def set_bypass(self, enabled):
        """CTRL.BYPASS: with it cleared, loopback messages go through the packetizer and the
        port's internal loopback instead of the DMA bypass. Read, modify, write: CTRL's other
        bits (none yet) keep their values."""
        ctrl = await self.read_reg(Reg.CTRL)
        await self.write_reg(Reg.CTRL, (ctrl & ~1) | int(bool(enabled)))

    async def set_cnp_interval(self, cycles):
        """The least time between two CNPs of one QP, in cycles (0: a CNP for every packet
        that arrives marked CE)."""
        await self.write_reg(Reg.CNP_INTERVAL, cycles)

    async def set_pkey(self, port, pkey):
        await self.write_reg(port_reg(port, PortReg.PKEY), pkey)

    async def read_counters(self):
        return Counters(await self._read64(Reg.LB_MSGS), await self._read64(Reg.LB_BYTES),
                        await self.read_reg(Reg.CQ_OVERFLOWS), await self.read_reg(Reg.REG_ERRORS))

    async def port_counters(self, port):
        """Every PMA counter of `port`, {PortCounter: value}."""
        values = {}
        for counter in COUNTERS:
            reg = port_counter_reg(port, counter)
            values[counter] = (await self._read64(reg) if counter.bits == 64
                               else await self.read_reg(reg))
        return values

    async def clear_port_counters(self, port):
        await self.write_reg(port_counter_reg(port, PortCounter.CLEAR), 1)

    async def load_port_counter(self, port, counter, value):
        """Preset a counter (e.g. near all-ones, to see it saturate)."""
        await self.write_reg(port_counter_reg(port, counter), value & 0xFFFFFFFF)
        if counter.bits == 64:
            await self.write_reg(port_counter_reg(port, counter) + 4, value >> 32)

    async def wait_event(self):
        """Wait until some CQ has an event (or the TB's timeout), acknowledge every pending
        event bit so irq can rise again, and return the bits (bit c: CQ c). Asynchronous events
        that raised irq meanwhile are kept in `async_events`."""
        pending = await self.read_reg(Reg.EVENT)
        if not pending:
            await self._wait_event()
            await self.collect_async_events()
            pending = await self.read_reg(Reg.EVENT)
        if pending:
            await self.write_reg(Reg.EVENT, pending)
        return pending

    async def collect_async_events(self):
        """Read and acknowledge SRQ_EVENT: each set bit is an SRQ_LIMIT_REACHED of its SRQ,
        appended to `async_events` (ibv_get_async_event reads from there)."""
        pending = await self.read_reg(Reg.SRQ_EVENT)
        if pending:
            await self.write_reg(Reg.SRQ_EVENT, pending)
            for srqn in range(pending.bit_length()):
                if pending >> srqn & 1:
                    self.async_events.append((AsyncEvent.SRQ_LIMIT_REACHED, srqn))
                    self._notify("on_async_event", AsyncEvent.SRQ_LIMIT_REACHED, srqn)

    # --- host memory -------------------------------------------------------------------------

    def alloc(self, size, align=64, label=None):
        """Host memory for a buffer or a ring: zeroed, with random guard bytes on both sides."""
        label = label or f"buffer of {size} bytes"
        addr = -(-(self._cursor + self.guard_bytes) // align) * align
        end = addr + size
        if end + self.guard_bytes > self.mem_base + self.mem_size:
            raise MemoryError(f"host memory exhausted allocating {label}")
        self._guard(self._cursor, addr - self._cursor, f"before {label} at {addr:#x}")
        self._guard(end, self.guard_bytes, f"after {label} at {addr:#x}")
        self.write(addr, bytes(size))
        self._cursor = end + self.guard_bytes
        return addr

    def free(self, addr):
        """Give back memory `alloc` gave. This allocator never reuses memory, so its guard
        bytes stay checkable; a program with its own allocator replaces alloc and free."""

    def _guard(self, addr, length, label):
        data = self._rng.randbytes(length)
        self.write(addr, data)
        self.guards.append(Guard(addr, data, label))

    def read(self, addr, length):
        return bytes(self.mem.read(addr, length))

    def write(self, addr, data):
        """Write host memory. Tests fill buffers through here (or MR.write) so that the
        reference model sees the program's own writes."""
        data = bytes(data)
        self.mem.write(addr, data)
        self._notify("on_mem_write", addr, data)

    # --- objects -----------------------------------------------------------------------------

    @staticmethod
    def _free_index(table, first, count, what):
        for index in range(first, count):
            if index not in table:
                return index
        raise VerbsError(f"no free {what}: all {count - first} in use")

    def alloc_pd(self):
        pd = PD(self, self._next_pdn)
        self._next_pdn += 1
        return pd

    async def create_cq(self, depth):
        """A CQ with at least `depth` entries (rounded up to a power of two)."""
        cqn = self._free_index(self.cqs, 0, self.num_cq, "CQ")
        log2 = _log2_entries(depth, f"CQ {cqn}")
        ring = self.alloc(CQE_BYTES << log2, label=f"CQ {cqn} ring")
        cq = CQ(self, cqn, ring, log2)
        with self._claim(self.cqs, cqn, cq):
            await self.command(Cmd.CREATE_CQ, cqn, _CQ_BLOCK.pack(ring, log2))
        self._notify("on_create_cq", cq)
        return cq

    def _next_key_variant(self, index):
        """A new key variant for MR `index`: random at first, then stepping, so the key of
        the previous registration of the same index is stale."""
        variant = (self._key_variants.get(index, self._rng.randrange(256)) + 1) & 0xFF
        self._key_variants[index] = variant
        return variant


class PD:
    def __init__(self, dev, pdn):
        self.dev = dev
        self.pdn = pdn

    async def reg_mr(self, addr, length, access, iova=None, key=None):
        """Register host memory [addr, addr + length); work requests name it by `iova`
        (default: the host address). `key`: register under this key (its MR index must be
        free), e.g. the key of a region deregistered to be registered again (ibv_rereg_mr
        keeps a region's keys)."""
        dev = self.dev
        if key is None:
            index = dev._free_index(dev.mrs, 0, dev.num_mr, "MR")
            variant = dev._next_key_variant(index)
        else:
            index, variant = key >> 8, key & 0xFF
            if index in dev.mrs:
                raise VerbsError(f"MR index {index} of key {key:#x} is in use")
        iova = addr if iova is None else iova
        mr = MR(self, index, index << 8 | variant, iova, length, Access(access), addr)
        with dev._claim(dev.mrs, index, mr):
            await dev.command(Cmd.REG_MR, index,
                              _MR_BLOCK.pack(iova, length, variant, access, self.pdn, addr))
        dev._notify("on_reg_mr", mr)
        return mr

    async def alloc_mw(self, mw_type=2):
        """A memory window of type 1 or 2, unbound; its index comes from the MRs' key space."""
        dev = self.dev
        index = dev._free_index(dev.mrs, 0, dev.num_mr, "MR or MW index")
        variant = dev._next_key_variant(index)
        mw = MW(self, index, index << 8 | variant, mw_type)
        with dev._claim(dev.mrs, index, mw):
            await dev.command(Cmd.ALLOC_MW, index, _MW_BLOCK.pack(mw_type, self.pdn, variant))
        dev._notify("on_alloc_mw", mw)
        return mw

    async def create_ah(self, port, dlid=0, sl=0, src_path_bits=0, static_rate=0, grh=None,
                        dmac=None):
        dev = self.dev
        ahn = dev._free_index(dev.ahs, 0, dev.num_ah, "AH")
        attr = dev.resolve_av(port, AHAttr(dlid, sl, src_path_bits, static_rate, grh, dmac))
        is_global, route, mac = encode_av(attr)
        ah = AH(self, ahn, port, attr)
        with dev._claim(dev.ahs, ahn, ah):
            await dev.command(Cmd.CREATE_AH, ahn,
                              _AH_BLOCK.pack(dlid, sl, src_path_bits, static_rate, is_global,
                                             port, route.hop_limit, route.flow_label,
                                             route.traffic_class, self.pdn, route.dgid,
                                             mac, route.sgid_index))
        dev._notify("on_create_ah", ah)
        return ah

    async def create_qp(self, qp_type, send_cq, recv_cq, max_send_wr=16, max_recv_wr=16,
                        max_send_sge=1, max_recv_sge=1, srq=None):
        """A QP in RESET; its rings hold at least max_send_wr / max_recv_wr requests of up to
        max_send_sge / max_recv_sge SGEs each (1..MAX_SGE; above 1 the WQEs take 128 bytes).
        On `srq` it takes its receives from there: its receive ring is one slot of the SRQ's
        WQE size, which the device fills (max_recv_wr and max_recv_sge are the SRQ's)."""
        dev = self.dev
        qpn = dev._free_index(dev.qps, 2, dev.num_qp, "QP number")
        sq_log2 = _log2_entries(max_send_wr, f"QP {qpn} send queue")
        rq_log2 = 0 if srq else _log2_entries(max_recv_wr, f"QP {qpn} receive queue")
        sq = _WorkQueue(0, sq_log2, max_send_sge)
        rq = _WorkQueue(0, rq_log2, srq.wq.max_sge if srq else max_recv_sge)
        sq.base = dev.alloc(sq.stride << sq_log2, label=f"QP {qpn} send ring")
        rq.base = dev.alloc(rq.stride << rq_log2,
                            label=f"QP {qpn} receive slot" if srq else f"QP {qpn} receive ring")
        qp = QP(self, qpn, QPType(qp_type), send_cq, recv_cq, sq, rq, srq)
        with dev._claim(dev.qps, qpn, qp):
            await dev.command(Cmd.CREATE_QP, qpn,
                              _QP_CREATE_BLOCK.pack(qp_type, self.pdn, send_cq.cqn, recv_cq.cqn,
                                                    sq_log2, rq_log2, max_send_sge,
                                                    rq.max_sge, srq is not None,
                                                    srq.srqn if srq else 0, sq.base, rq.base))
        if srq:
            srq.qps.add(qp)
        dev._notify("on_create_qp", qp)
        return qp

    async def create_srq(self, max_wr=16, max_sge=1, limit=0):
        """A shared receive queue of at least `max_wr` WQEs of up to `max_sge` SGEs, its
        limit event armed at `limit` (0: not armed)."""
        dev = self.dev
        srqn = dev._free_index(dev.srqs, 0, dev.num_srq, "SRQ")
        log2 = _log2_entries(max_wr, f"SRQ {srqn}")
        wq = _WorkQueue(0, log2, max_sge)
        wq.base = dev.alloc(wq.stride << log2, label=f"SRQ {srqn} ring")
        srq = SRQ(self, srqn, wq, limit)
        with dev._claim(dev.srqs, srqn, srq):
            await dev.command(Cmd.CREATE_SRQ, srqn,
                              _SRQ_CREATE_BLOCK.pack(wq.base, log2, max_sge, self.pdn, limit))
        dev._notify("on_create_srq", srq)
        return srq


class MW:
    """A memory window: `rkey` is its key now (a bind gives it a new variant: `next_rkey`)."""

    def __init__(self, pd, index, rkey, mw_type):
        self.pd = pd
        self.index = index
        self.rkey = rkey
        self.type = mw_type

    def next_rkey(self):
        """The key a bind gives the window: the same index, the next variant."""
        return inc_rkey(self.rkey)

    def bind(self, mr_sge, access, wr_id=0, flags=SendFlags.SIGNALED):
        """The BIND_MW work request over `mr_sge` (a range of a region that allows MW_BIND),
        giving `access`; the window's rkey becomes next_rkey() when it completes (the caller
        calls bound())."""
        return SendWR(WROpcode.BIND_MW, mr_sge, wr_id, flags, rkey=self.rkey,
                      bind_rkey=self.next_rkey(), bind_access=Access(access))

    def bound(self, wr):
        """The bind `wr` completed: the window answers to its new key."""
        self.rkey = wr.bind_rkey

    def remote(self, addr):
        return RemoteAddr(addr, self.rkey)

    async def dealloc(self):
        dev = self.pd.dev
        await dev.command(Cmd.DEALLOC_MW, self.index)
        del dev.mrs[self.index]
        dev._notify("on_dealloc_mw", self)


class MR:
    def __init__(self, pd, index, key, iova, length, access, host_addr):
        self.pd = pd
        self.index = index
        self.lkey = self.rkey = key
        self.addr = iova
        self.length = length
        self.access = access
        self.host_addr = host_addr

    def sge(self, offset=0, length=None):
        """A scatter/gather element for bytes [offset, offset + length) of the region."""
        return SGE(self.addr + offset, self.length - offset if length is None else length,
                   self.lkey)

    def remote(self, offset=0):
        """The region as an RDMA target, at `offset`."""
        return RemoteAddr(self.addr + offset, self.rkey)

    def write(self, offset, data):
        self.pd.dev.write(self.host_addr + offset, data)

    def read(self, offset=0, length=None):
        return self.pd.dev.read(self.host_addr + offset,
                                self.length - offset if length is None else length)

    async def dereg(self):
        dev = self.pd.dev
        await dev.command(Cmd.DEREG_MR, self.index)
        del dev.mrs[self.index]
        dev._notify("on_dereg_mr", self)


class AH:
    def __init__(self, pd, ahn, port, attr):
        self.pd = pd
        self.ahn = ahn
        self.port = port
        self.attr = attr

    async def destroy(self):
        dev = self.pd.dev
        await dev.command(Cmd.DESTROY_AH, self.ahn)
        del dev.ahs[self.ahn]
        dev._notify("on_destroy_ah", self)


class CQ:
    def __init__(self, dev, cqn, ring, log2):
        self.dev = dev
        self.cqn = cqn
        self.ring = ring
        self.log2 = log2
        self.ci = 0  # consumer index, free running (the doorbell takes its low 16 bits)
        self._consumer = _new_lock()

    @property
    def depth(self):
        return 1 << self.log2

    async def poll(self, max_entries=None):
        """Up to `max_entries` (default: the depth) completions, oldest first."""
        max_entries = self.depth if max_entries is None else max_entries
        wcs = []
        async with self._consumer:
            while len(wcs) < max_entries:
                raw = self.dev.read(self.ring + CQE_BYTES * (self.ci % self.depth), CQE_BYTES)
                wc, owner = decode_cqe(raw)
                if owner != 1 ^ ((self.ci >> self.log2) & 1):
                    break
                wcs.append(wc)
                self.ci += 1
            if wcs:
                await self.dev.write_reg(cq_ci_db(self.cqn), self.ci & 0xFFFF)
                self.dev._notify("on_poll_cq", self, wcs)
        return wcs

    async def resize(self, depth):
        """Move the CQ to a new ring of at least `depth` entries (RESIZE_CQ), its unconsumed
        CQEs kept in order: the device makes them entries 0..n-1 of the new ring and writes
        the next CQE at n; the driver copies them there (owner bit of the first pass) before
        anyone polls again. Refused (BAD_PARAM) when they do not fit."""
        log2 = _log2_entries(depth, f"CQ {self.cqn}")
        ring = self.dev.alloc(CQE_BYTES << log2, label=f"CQ {self.cqn} ring")
        async with self._consumer:
            try:
                answer = await self.dev.command(
                    Cmd.RESIZE_CQ, self.cqn, _CQ_RESIZE_BLOCK.pack(ring, log2, self.ci & 0xFFFF),
                    reply=_CQ_RESIZE_ANSWER.size)
            except VerbsError:
                self.dev.free(ring)
                raise
            moved, _ = _CQ_RESIZE_ANSWER.unpack(answer)
            for k in range(moved):
                old = self.ring + CQE_BYTES * ((self.ci + k) % self.depth)
                cqe = bytearray(self.dev.read(old, CQE_BYTES))
                cqe[-1] |= 1
                self.dev.write(ring + CQE_BYTES * k, cqe)
            self.dev.free(self.ring)
            self.ring, self.log2, self.ci = ring, log2, 0
        self.dev._notify("on_resize_cq", self, moved)

    async def req_notify(self, solicited_only=False):
        await self.dev.write_reg(cq_arm_db(self.cqn), 2 if solicited_only else 1)

    async def wait(self, n=1, timeout=100, solicited_only=False):
        """Exactly `n` completions: arm, poll, wait for an event, repeat. Raises TimeoutError
        after `timeout` waits without them."""
        wcs = []
        for _ in range(timeout):
            await self.req_notify(solicited_only)
            wcs += await self.poll(n - len(wcs))  # after arming, so a CQE landing now still fires
            if len(wcs) == n:
                return wcs
            await self.dev.wait_event()
        raise TimeoutError(f"CQ {self.cqn}: {len(wcs)} of {n} completions after {timeout} "
                           f"event waits; got {wcs}")

    async def destroy(self):
        await self.dev.command(Cmd.DESTROY_CQ, self.cqn)
        del self.dev.cqs[self.cqn]
        self.dev._notify("on_destroy_cq", self)


@dataclass
class _WorkQueue:
    """One ring of WQEs of up to `max_sge` SGEs (64 bytes each, 128 when more than one SGE).
    `head` is the producer index; `tail` the consumer index as last learned from the device
    (QUERY_QP), both free running."""
    base: int
    log2: int
    max_sge: int = 1
    head: int = 0
    tail: int = 0
    producer: object = field(default_factory=_new_lock)  # held from the room check to the doorbell

    @property
    def size(self):
        return 1 << self.log2

    @property
    def stride(self):
        return wqe_bytes(self.max_sge)

    def slot(self, index):
        return self.base + self.stride * (index % self.size)


class QP:
    def __init__(self, pd, qpn, qp_type, send_cq, recv_cq, sq, rq, srq=None):
        self.pd = pd
        self.srq = srq
        self.dev = pd.dev
        self.qp_num = qpn
        self.qp_type = qp_type
        self.send_cq = send_cq
        self.recv_cq = recv_cq
        self.sq = sq
        self.rq = rq
        self.state = QPState.RESET
        self.attr = QPAttr()

    @property
    def max_send_wr(self):
        return self.sq.size

    @property
    def max_recv_wr(self):
        return self.rq.size

    @property
    def max_send_sge(self):
        return max(self.sq.max_sge, 1)

    @property
    def max_recv_sge(self):
        return max(self.rq.max_sge, 1)

    async def modify(self, state=None, **attrs):
        """Move to `state` (default: stay) with `attrs` (QPAttr field names) changed in the
        shadow; the whole shadow is written. Raises CommandError if the device refuses."""
        attr = replace(self.attr, **attrs)
        if "ah_attr" in attrs and self.qp_type != QPType.UD:     # UD's AVs are its AHs'
            attr = replace(attr, ah_attr=self.dev.resolve_av(attr.port_num, attr.ah_attr))
        state = self.state if state is None else QPState(state)
        await self.dev.command(Cmd.MODIFY_QP, self.qp_num, encode_modify(state, attr),
                               what=f"MODIFY_QP {self.qp_num} {self.state.name}->{state.name}")
        self.attr, self.state = attr, state
        if state == QPState.RESET:  # the device clears its ring indices
            self.sq.head = self.sq.tail = self.rq.head = self.rq.tail = 0
        self.dev._notify("on_modify_qp", self, state, attr)

    async def query(self):
        status = QPStatus(*_QP_QUERY_BLOCK.unpack(
            await self.dev.command(Cmd.QUERY_QP, self.qp_num, reply=_QP_QUERY_BLOCK.size)))
        status = replace(status, state=_enum(QPState, status.state))
        self.state = status.state
        return status

    async def to_rts(self, remote_qp_num=0, dlid=0, port=1, *, qkey=0,
                     access=Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC,
                     path_mtu=MTU.MTU4096,
                     rnr_retry=7, sl=0, src_path_bits=0, static_rate=0, grh=None, sq_psn=0,
                     rq_psn=0, **rc_attrs):
        """RESET -> INIT -> RTR -> RTS. RC/UC: aimed at `remote_qp_num` behind `dlid`;
        UD: only port and qkey matter (the destination is in each WR). `rc_attrs` are the
        transport's QPAttr fields (timeout, retry_cnt, min_rnr_timer, max_rd_atomic,
        max_dest_rd_atomic), taken where ibv_modify_qp takes them."""
        rtr = {k: rc_attrs.pop(k) for k in ("min_rnr_timer", "max_dest_rd_atomic")
               if k in rc_attrs}
        await self.modify(QPState.INIT, port_num=port, qp_access_flags=access, qkey=qkey)
        await self.modify(QPState.RTR, path_mtu=path_mtu, dest_qp_num=remote_qp_num,
                          rq_psn=rq_psn,
                          ah_attr=AHAttr(dlid, sl, src_path_bits, static_rate, grh), **rtr)
        await self.modify(QPState.RTS, sq_psn=sq_psn, rnr_retry=rnr_retry, **rc_attrs)

    def _check_sges(self, wrs, max_sge, what):
        _check_sges(wrs, max_sge, f"QP {self.qp_num} {what}")

    async def _reserve(self, wq, n, consumer, what):
        await _reserve(wq, n, self.query, consumer, f"QP {self.qp_num} {what}")

    async def _post(self, wq, wqes, doorbell):
        await _post(self.dev, wq, wqes, doorbell)

    async def post_send(self, wrs, sge_check=True):
        """Post one SendWR or a list; all or none (QueueFull). One SQ_DB write. A WR with more
        SGEs than the QP's WQEs hold is refused unless `sge_check` is off (then its WQE says so,
        with the SGEs that fit, as a faulty driver's would: a test of the device's own check)."""
        wrs = _as_list(wrs)
        if self.state in (QPState.RESET, QPState.INIT, QPState.RTR):
            raise VerbsError(f"QP {self.qp_num}: post_send in {self.state.name}")
        if sge_check:
            self._check_sges(wrs, self.max_send_sge, "post_send")
        async with self.sq.producer:
            await self._reserve(self.sq, len(wrs), "sq_ci", "send queue")
            await self._post(self.sq, [encode_send_wqe(wr, self.sq.stride) for wr in wrs],
                             sq_db(self.qp_num))
            self.dev._notify("on_post_send", self, wrs)

    async def post_recv(self, wrs, sge_check=True):
        """Post one RecvWR or a list; all or none (QueueFull). One RQ_DB write. `sge_check` as
        for post_send."""
        wrs = _as_list(wrs)
        if self.state == QPState.RESET:
            raise VerbsError(f"QP {self.qp_num}: post_recv in RESET")
        if self.srq is not None:
            raise VerbsError(f"QP {self.qp_num}: post_recv on a QP of SRQ {self.srq.srqn} "
                             f"(post to the SRQ)")
        if sge_check:
            self._check_sges(wrs, self.max_recv_sge, "post_recv")
        async with self.rq.producer:
            await self._reserve(self.rq, len(wrs), "rq_ci", "receive queue")
            await self._post(self.rq, [encode_recv_wqe(wr, self.rq.stride) for wr in wrs],
                             rq_db(self.qp_num))
            self.dev._notify("on_post_recv", self, wrs)

    async def destroy(self):
        await self.dev.command(Cmd.DESTROY_QP, self.qp_num)
        del self.dev.qps[self.qp_num]
        if self.srq:
            self.srq.qps.discard(self)
        self.dev._notify("on_destroy_qp", self)


class SRQ:
    """A shared receive queue: the QPs created on it take its receive WQEs in arrival order."""

    def __init__(self, pd, srqn, wq, limit):
        self.pd = pd
        self.dev = pd.dev
        self.srqn = srqn
        self.wq = wq
        self.limit = limit
        self.qps = set()

    @property
    def max_wr(self):
        return self.wq.size

    @property
    def max_sge(self):
        return max(self.wq.max_sge, 1)

    async def post_recv(self, wrs, sge_check=True):
        """Post one RecvWR or a list; all or none (QueueFull). One SRQ_DB write."""
        wrs = _as_list(wrs)
        if sge_check:
            _check_sges(wrs, self.max_sge, f"SRQ {self.srqn} post_recv")
        async with self.wq.producer:
            await _reserve(self.wq, len(wrs), self.query, "ci", f"SRQ {self.srqn}")
            await _post(self.dev, self.wq, [encode_recv_wqe(wr, self.wq.stride) for wr in wrs],
                        srq_db(self.srqn))
            self.dev._notify("on_post_srq_recv", self, wrs)

    async def modify(self, limit):
        """Arm the limit event at `limit` WQEs (0 disarms); BAD_PARAM when it is not below
        the ring's entries."""
        await self.dev.command(Cmd.MODIFY_SRQ, self.srqn, _SRQ_MODIFY_BLOCK.pack(limit))
        self.limit = limit
        self.dev._notify("on_modify_srq", self, limit)

    async def query(self):
        return SRQStatus(*_SRQ_QUERY_BLOCK.unpack(await self.dev.command(
            Cmd.QUERY_SRQ, self.srqn, reply=_SRQ_QUERY_BLOCK.size)))

    async def destroy(self):
        """Refused while QPs are on it (EBUSY in verbs): the device would leave them without
        receives."""
        if self.qps:
            raise VerbsError(f"SRQ {self.srqn}: QPs {sorted(q.qp_num for q in self.qps)} are on it")
        await self.dev.command(Cmd.DESTROY_SRQ, self.srqn)
        del self.dev.srqs[self.srqn]
        self.dev._notify("on_destroy_srq", self)


def _check_sges(wrs, max_sge, what):
    """A WR with more SGEs than the queue's WQEs hold is refused, as ibv_post_* refuses it
    (EINVAL)."""
    for wr in wrs:
        if len(wr.sg_list) > max_sge:
            raise VerbsError(f"{what}: {len(wr.sg_list)} SGEs, the queue holds {max_sge}")


async def _reserve(wq, n, query, consumer, what):
    """Room for `n` WQEs in `wq`, asking the device (`query`, its `consumer` index) how far it
    got when the ring looks full."""
    if wq.head + n - wq.tail > wq.size:
        status = await query()
        wq.tail = wq.head - ((wq.head - getattr(status, consumer)) & 0xFFFF)
    if wq.head + n - wq.tail > wq.size:
        raise QueueFull(f"{what}: {n} WRs, {wq.size - (wq.head - wq.tail)} of {wq.size} "
                        f"entries free")


async def _post(dev, wq, wqes, doorbell):
    for wqe in wqes:
        dev.write(wq.slot(wq.head), wqe)
        wq.head += 1
    await dev.write_reg(doorbell, wq.head & 0xFFFF)


async def connect(a, b, port_a=1, port_b=None, *, global_route=False, **attrs):
    """Take RC/UC QPs `a` and `b` through INIT -> RTR -> RTS aimed at each other, each
    addressing the other's port LID (and GID with `global_route`, or on Ethernet, where the
    GID is the address). `attrs` go to to_rts."""
    port_b = port_a if port_b is None else port_b
    pa, pb = a.dev.ports[port_a], b.dev.ports[port_b]
    for qp, peer, port, attr in ((a, b, port_a, pb), (b, a, port_b, pa)):
        grh = global_route or qp.dev.ports[port].link_layer == "eth"
        await qp.to_rts(peer.qp_num, attr.lid, port, grh=GlobalRoute(attr.gid) if grh else None,
                        **attrs)
