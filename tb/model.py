"""Reference model of rdma_dev, written from docs/semantics.md (the contract) and
docs/packet-path.md (the packets), not from the RTL.

The model follows the program through the driver's observer calls and predicts what the device
must do: every completion it writes (per CQ, QP and direction, in order), the bytes it writes
to host memory, QP state changes, the LB_MSGS / LB_BYTES / CQ_OVERFLOWS / REG_ERRORS moves,
every packet each port sends on its link and every port counter. `cable()` tells it where a
port's link leads (another port of this device, or a port of another device's model); a port
without a cable sends into the void.

How it keeps time: a send WR runs the moment it is posted, against the receives posted so far
(tests post receives before the sends that need them). An RC message that finds no receive
stays at the head of its send queue when rnr_retry is 7 (the device retries forever) and runs
when a later event (a receive posted, a QP modified) lets it; with a smaller rnr_retry it fails
with RNR_RETRY_EXC_ERR straight away, since a receive posted later would come too late for the
device's few retries. Messages run in posting order, so a test must not make a result depend on
the order the device serves different QPs in (one QP reading bytes that another QP's pending WR
writes, two senders waiting for the same receive). CQ overflow is predicted from the
completions polled so far, so a test of it must not poll while the device is still writing.
Over cables that lose packets, UC and UD messages are the exception: which of them arrive is
the cable's doing, so the far model takes their packets as the cable delivers them
(`arrived`, fed by the arrival sniffers: Scoreboard.cables_lossy).
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field, replace

from .ib_packet import (
    AETH, BTH, CNP_OPCODE, DETH, FIRST, GRH, IETH, LAST, LRH, MIDDLE, ONLY, OPCODES, RETH,
    AtomicAckETH, AtomicETH, CNPReserved, ECN_CE, ECN_ECT0, ImmDt, Packet, RoCE, is_ipv4_mapped,
    marked_ce, packetize, vlan_id,
)
from .verbs import (
    ATOMIC_OPS, CNP_INTERVAL_RESET, COUNTERS, GID_ENTRY_STRIDE, GID_TABLE_BASE, GID_TABLE_PORT_STRIDE, GID_VLAN,
    GRH_BYTES, MAX_MSG_BYTES, MAX_SGE_RD, MTU, PORT_COUNTERS_STRIDE,
    PORT_STRIDE, QKEY_FROM_QP, Access,
    AHAttr, Counters, Observer, PortCounter, PortReg, QPAttr, QPState, QPType, RecvWR, Reg,
    SendFlags, SendWR, WCFlags, WCOpcode, WCStatus, WROpcode,
)

RNR_RETRY_FOREVER = 7

_ALLOWED_OPCODES = {
    QPType.RC: set(WROpcode),
    QPType.UC: set(WROpcode) - {WROpcode.RDMA_READ, *ATOMIC_OPS, WROpcode.SEND_WITH_INV,
                                WROpcode.ATOMIC_WRITE},
    QPType.UD: {WROpcode.SEND, WROpcode.SEND_WITH_IMM},
}
_WC_OPCODE = {
    WROpcode.SEND: WCOpcode.SEND,
    WROpcode.SEND_WITH_IMM: WCOpcode.SEND,
    WROpcode.RDMA_WRITE: WCOpcode.RDMA_WRITE,
    WROpcode.RDMA_WRITE_WITH_IMM: WCOpcode.RDMA_WRITE,
    WROpcode.RDMA_READ: WCOpcode.RDMA_READ,
    WROpcode.ATOMIC_CMP_AND_SWP: WCOpcode.COMP_SWAP,
    WROpcode.ATOMIC_FETCH_AND_ADD: WCOpcode.FETCH_ADD,
    WROpcode.BIND_MW: WCOpcode.BIND_MW,
    WROpcode.LOCAL_INV: WCOpcode.LOCAL_INV,
    WROpcode.SEND_WITH_INV: WCOpcode.SEND,
    WROpcode.ATOMIC_WRITE: WCOpcode.ATOMIC_WRITE,
}
# work requests the requester finishes itself: a memory window bound or invalidated
_MW_OPS = {WROpcode.BIND_MW, WROpcode.LOCAL_INV}
_SENDS = {WROpcode.SEND, WROpcode.SEND_WITH_IMM, WROpcode.SEND_WITH_INV}
_REMOTE_RIGHTS = Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC
# what a WR reads back into its local SGE (which must allow LOCAL_WRITE)
_READS_BACK = {WROpcode.RDMA_READ, *ATOMIC_OPS}
ATOMIC_BYTES = 8
U64 = 2**64 - 1
_WITH_IMM = {WROpcode.SEND_WITH_IMM, WROpcode.RDMA_WRITE_WITH_IMM}
_PORT_REGS = ({PortReg.LID, PortReg.LMC, PortReg.MTU, PortReg.PKEY, PortReg.LINK,
               PortReg.MAC_HI, PortReg.MAC_LO} | {PortReg.GID0 + 4 * i for i in range(4)})
_TRANSPORT = {QPType.RC: "RC", QPType.UC: "UC", QPType.UD: "UD"}
PSN_MASK = 0xFFFFFF
ACK = 0x1F          # AETH syndrome of an ACK (no credit count)
RNR_NAK = 0x20      # RNR NAK; its packets carry the responder's min_rnr_timer in bits 4:0
SEQ_NAK = 0x60      # PSN sequence error NAK
NAK_CODE = {WCStatus.REM_INV_REQ_ERR: 0x61, WCStatus.REM_ACCESS_ERR: 0x62,
            WCStatus.REM_OP_ERR: 0x63}
NAK_STATUS = {code: status for status, code in NAK_CODE.items()}
_DOORBELL_SPAN = 0x1000  # the SQ/RQ doorbells fill 0x1000-0x1FFF, the CQ ones 0x2000-0x2FFF,
                         # the SRQ ones 0x3000-0x3FFF


def _atomic_write_refused(va, length):
    """Why the responder refuses an ATOMIC WRITE whose rkey passed (an invalid request), or "":
    it writes 8 bytes at an 8-byte aligned address."""
    if va % ATOMIC_BYTES or length != ATOMIC_BYTES:
        return f"an ATOMIC WRITE of {length} bytes at {va:#x}: 8 aligned bytes only"
    return ""


def ud_paylen(length, with_imm):
    """BTH through ICRC of a UD packet of `length` payload bytes: BTH, DETH, ImmDt, payload,
    pad, ICRC (the GRH's PayLen, the UDP length without its header)."""
    return 12 + 8 + (4 if with_imm else 0) + length + (-length % 4) + 4


def network_header(paylen, grh=None, roce=None):
    """A UD receive buffer's 40-byte GRH area for a packet whose BTH through ICRC take
    `paylen` bytes: its GRH; on Ethernet (`roce`) its IPv6 header, or 20 zero bytes and its
    IPv4 header (as rxe and mlx5 give it); 40 zero bytes without either."""
    if roce is not None:
        ip = roce.pack_network(paylen + 8)[:-8]     # without the UDP header
        return bytes(GRH_BYTES - len(ip)) + ip
    if grh is not None:
        return grh.pack(paylen)
    return bytes(GRH_BYTES)


def roce_sport(flow_label, qpn, other_qpn):
    """The UDP source port of a RoCE v2 flow: from the flow label when there is one, else
    from the two QP numbers (both directions alike), in 0xC000 .. 0xFFFF."""
    flow = flow_label or (qpn ^ other_qpn) & 0xFFFFF
    return 0xC000 | ((flow & 0x3FFF) ^ (flow >> 14))


def echoed_tclass(tclass):
    """The traffic class a responder's answers carry back on Ethernet: the request's, its CE
    turned into ECT(0) (the congestion was the request's path's, and a CNP reports it)."""
    return tclass & ~3 | ECN_ECT0 if tclass & 3 == ECN_CE else tclass


def error_fields(wr_id, status, opcode, qp_num):
    """An error CQE: wr_id, status, qp_num and opcode (None: the spec names no opcode for an
    unknown WR opcode, so it is not checked); every other field zero."""
    fields = dict(wr_id=wr_id, status=status, qp_num=qp_num, byte_len=0, imm_data=0, src_qp=0,
                  wc_flags=WCFlags(0), sl=0, slid=0, dlid_path_bits=0)
    if opcode is not None:
        fields["opcode"] = opcode
    return fields


def _follows(op, pkt):
    """Whether `pkt` may follow a packet of opcode `op` inside one message (RC opcode order):
    a middle or last packet of the same operation."""
    nxt = OPCODES[pkt.bth.opcode]
    return nxt.position in (MIDDLE, LAST) and nxt.operation == op.operation


@dataclass
class ExpectedWC:
    """A predicted completion. `fields` holds the WC fields the spec defines for it; the
    others (e.g. imm_data without WITH_IMM) are not compared."""
    cqn: int
    qp_num: int
    recv: bool
    fields: dict
    what: str  # the work request, and why this outcome, for failure messages


class MemoryImage:
    """Expected content of the host memory the device may write: every tracked range
    (registered regions, WQE rings), as host memory was when first tracked, plus every write
    the program or the device should have made since."""

    def __init__(self):
        self.regions = []  # (addr, length, label) as tracked, for reports
        self._spans = []  # (start, bytearray): disjoint, overlapping regions merged
        self.undefined = []  # (addr, length) whose content no rule decides: taken as found

    def track(self, addr, length, label, read_host):
        if not length:
            return
        self.regions.append((addr, length, label))
        start, end = addr, addr + length
        keep, merged = [], []
        for span in self._spans:
            s, buf = span
            (merged if s <= end and start <= s + len(buf) else keep).append(span)
        for s, buf in merged:
            start, end = min(start, s), max(end, s + len(buf))
        data = bytearray(read_host(start, end - start))
        for s, buf in merged:  # what the model already expects wins over what memory holds now
            data[s - start:s - start + len(buf)] = buf
        self._spans = keep + [(start, data)]

    def write(self, addr, data):
        """Apply a write; bytes outside tracked ranges are not modelled."""
        for s, buf in self._spans:
            lo, hi = max(addr, s), min(addr + len(data), s + len(buf))
            if lo < hi:
                buf[lo - s:hi - s] = data[lo - addr:hi - addr]

    def read(self, addr, length):
        if not length:
            return b""
        for s, buf in self._spans:
            if s <= addr and addr + length <= s + len(buf):
                return bytes(buf[addr - s:addr - s + length])
        raise KeyError(f"host memory [{addr:#x}, {addr + length:#x}) is not tracked")


@dataclass
class _MR:
    key: int
    iova: int
    length: int
    access: Access
    pd: int
    host: int

    def covers(self, addr, length):
        return self.iova <= addr and addr + length <= self.iova + self.length

    def host_addr(self, iova):
        return self.host + iova - self.iova


@dataclass
class _MW(_MR):
    """A memory window: while bound, a range of a region (iova, length, host as for a region)
    that remote accesses may use with `access`; a type 2 window only from QP `qpn`."""
    type2: bool = True
    bound: bool = False
    qpn: int = 0


@dataclass
class _AH:
    pd: int
    port: int
    attr: AHAttr


@dataclass
class _CQ:
    size: int
    produced: int = 0
    consumed: int = 0


@dataclass
class _SendWQE:
    wr: SendWR
    what: str
    started: bool = False  # passed the requester checks and was counted; RNR retries don't
    wire: bool = False     # takes the packet path
    internal: bool = False  # a loopback message on the packet path (the bypass switched off)
    recv_sges: tuple = ()          # the receive buffer (its SGEs) a SEND landed in
    recv_srq: bool = False         # ... taken from a shared receive queue


@dataclass
class _RecvWQE:
    wr: RecvWR
    what: str


@dataclass
class _SRQ:
    """A shared receive queue: posted WQEs not yet taken by a QP, and its limit event."""
    srqn: int
    pd: int
    size: int
    max_sge: int
    limit: int
    wqes: deque = field(default_factory=deque)
    posted: int = 0
    taken: int = 0
    limit_events: int = 0           # SRQ_LIMIT_REACHED events raised

    def take(self):
        """A QP takes the next WQE; fewer than an armed limit left: the event fires, once."""
        wqe = self.wqes.popleft()
        self.taken += 1
        if self.limit and len(self.wqes) < self.limit:
            self.limit = 0
            self.limit_events += 1
        return wqe


class _SRQReceives:
    """The receive queue of a QP on an SRQ, with a deque's face: the WQE the QP holds (taken
    for a message under way: the device copied it into the QP's slot), else the SRQ's next,
    which the first message to need it takes."""

    def __init__(self, srq, qp):
        self.srq, self.qp, self.held = srq, qp, None

    def __bool__(self):
        return self.held is not None or bool(self.srq.wqes)

    def __getitem__(self, index):
        assert index == 0, "a QP on an SRQ sees one receive WQE at a time"
        if self.held is None:
            self.held = self.srq.take()
            self.qp.rq_posted += 1      # the device's producer index of the QP's slot
        return self.held

    def popleft(self):
        wqe, self.held = self[0], None
        return wqe

    def clear(self):
        self.held = None


@dataclass
class ModelQP:
    """The model's view of one QP: state, queued WQEs and ring indices (free running)."""
    qpn: int
    type: QPType
    pd: int
    send_cq: int
    recv_cq: int
    sq_size: int = 0      # ring entries
    rq_size: int = 0
    max_send_sge: int = 1   # SGEs a WQE of the queue may have
    max_recv_sge: int = 1
    sq_slot: tuple = (0, 0)   # (address, bytes) of the send ring's first WQE
    state: QPState = QPState.RESET
    attr: QPAttr = QPAttr()
    sq: deque = field(default_factory=deque)  # posted, not yet completed (head: RNR waiting)
    rq: deque = field(default_factory=deque)  # posted, not yet consumed
    sq_posted: int = 0
    sq_done: int = 0
    rq_posted: int = 0
    rq_done: int = 0
    sq_psn: int = 0       # PSN of the next request packet
    epsn: int = 0         # PSN the next request packet must carry
    msn: int = 0          # messages completed as an RC responder
    srq: _SRQ = None      # its receives come from there (rq is then an _SRQReceives)

    @property
    def port(self):
        return self.attr.port_num

    @property
    def recv_pd(self):
        """The PD its receive buffers' lkeys are checked in: an SRQ's WQEs are the SRQ's."""
        return self.srq.pd if self.srq else self.pd

    def owned_receives(self):
        """The receive WQEs that are the QP's own (a QP in ERR flushes them): on an SRQ only
        the one it holds."""
        if self.srq:
            return [self.rq.held] if self.rq.held is not None else []
        return list(self.rq)


class Model(Observer):
    """Attach it to `dev.observers` before `dev.open()` (Scoreboard does); it reads host
    memory only to learn a range's content when it starts tracking it."""

    def __init__(self):
        self.expected = defaultdict(deque)  # (cqn, qpn, recv) -> ExpectedWC not yet seen
        self.image = MemoryImage()
        self.counters = Counters()  # predicted moves since the device was opened
        self.port_counters = {}     # port -> {PortCounter: value}; loopback moves none of them
        self.ports, self.mrs, self.ahs, self.cqs, self.qps, self.srqs = {}, {}, {}, {}, {}, {}
        self._read_host = None
        self.links = {}             # port -> (Model, port) at the far end of its cable
        self.bypass = True          # CTRL.BYPASS
        self.cnp_interval = CNP_INTERVAL_RESET   # CNP_INTERVAL: cycles between a QP's CNPs
        self.pkeys = defaultdict(lambda: 0xFFFF)
        self.wire = defaultdict(list)  # port -> the packets it sends on its link, in order
        self.looped = 0             # packets sent through a port's internal loopback (unsniffed)
        self.aborted = defaultdict(int)   # port -> packets it sends aborted (payload refused)
        # False once an RC message met receiver-not-ready with rnr_retry 7 on the packet path:
        # how often the device retried depends on timing, so its packets are not predictable
        self.wire_exact = True
        # (port, destination QPN) of RC flows whose packets are not predicted one by one: a
        # message that met a NAK, an RNR NAK or silence on the packet path. The device has its
        # later WQEs on the wire already (many messages in flight) and sends them again after a
        # go-back; the responder drops them (out of sequence), so only the packets vary.
        self.loose = set()
        # called with (model, qp, wqe, status) for every send WR the model completes, for
        # functional coverage (tb/coverage.py)
        self.listeners = []
        self.last_recv_sges = ()    # the receive buffer the last arriving SEND was given
        self.last_recv_srq = False  # ... from a shared receive queue
        self.failing = (0, 0)       # host memory [lo, hi) answers every access with an error
        # ports whose cable's UC and UD packets reach the far model as they arrive (arrived()),
        # not when sent: a cable that loses, duplicates, corrupts or reorders them decides
        self.arriving = set()
        # (port, UC QPN) -> [expected PSN, the message under way (_uc_start) or None]
        self.uc_messages = {}

    def loosen(self, port, dest_qpn):
        """The packets `port` sends to QP `dest_qpn`, and those its RC QP connected to that
        QP gets back, are no longer predicted one by one (Model.loose)."""
        self.loose.add((port, dest_qpn))
        far, far_port = self.links.get(port, (None, None))
        if far is None:
            return
        far.loose.update((far_port, q.qpn) for q in self.qps.values()
                         if q.port == port and q.type == QPType.RC
                         and q.attr.dest_qp_num == dest_qpn)

    def cable(self, port, far_model, far_port):
        """Port `port`'s link leads to `far_port` of `far_model` (which may be this model)."""
        self.links[port] = (far_model, far_port)
        far_model.links[far_port] = (self, port)

    # --- observer: configuration ----------------------------------------------------------

    def on_open(self, dev):
        self.num_ports, self.num_qp, self.num_cq = dev.num_ports, dev.num_qp, dev.num_cq
        self.num_srq = dev.num_srq
        self.ports = dict(dev.ports)
        self.num_gids = len(dev.ports[1].gid_table)
        # opened right after reset: every port counter starts at zero
        self.port_counters = {port: dict.fromkeys(COUNTERS, 0) for port in self.ports}
        self._read_host = dev.read

    def on_write_reg(self, offset, value):
        if self._addresses_nothing(offset) or self._doorbell_refused(offset, value):
            self.counters.reg_errors += 1
        elif Reg.PORT_COUNTERS <= offset < Reg.PORT_COUNTERS + 0x400:
            self._write_port_counter(offset, value)
        elif offset == Reg.CTRL:
            self.bypass = bool(value & 1)
        elif offset == Reg.CNP_INTERVAL:
            self.cnp_interval = value
        elif Reg.PORT_BASE <= offset < Reg.CMD_DATA:
            port, reg = divmod(offset - Reg.PORT_BASE, PORT_STRIDE)
            if reg == PortReg.PKEY:
                self.pkeys[port + 1] = value & 0xFFFF

    def _port_counter_word(self, offset):
        port, word = divmod(offset - Reg.PORT_COUNTERS, PORT_COUNTERS_STRIDE)
        return port + 1, word // 4

    def _write_port_counter(self, offset, value):
        """Software loads a counter word, or clears the port's counters."""
        port, word = self._port_counter_word(offset)
        counters = self.port_counters[port]
        if word == PortCounter.CLEAR:
            counters.update(dict.fromkeys(counters, 0))
            return
        for counter in COUNTERS:
            if counter == word:
                width = min(counter.bits, 32)
                low = value & ((1 << width) - 1)
                counters[counter] = counters[counter] & ~((1 << width) - 1) | low
            elif counter.bits == 64 and counter + 1 == word:
                counters[counter] = counters[counter] & 0xFFFFFFFF | value << 32

    def _doorbell_refused(self, offset, value):
        """An SQ, RQ or SRQ doorbell the device ignores (docs/host-interface.md): for no QP
        or one in RESET, the RQ of a QP on an SRQ, no SRQ, or moving the producer index back or
        past the ring's free entries. (The driver's own doorbells come before on_post_send:
        *_posted is still the old index.)"""
        if Reg.SRQ_DB <= offset < Reg.SRQ_DB + _DOORBELL_SPAN:
            srqn, which = divmod(offset - Reg.SRQ_DB, 8)
            if srqn >= self.num_srq or which:
                return False        # addresses nothing: counted as such
            srq = self.srqs.get(srqn)
            return (srq is None or
                    (value - srq.posted) & 0xFFFF > srq.size - (srq.posted - srq.taken))
        if not Reg.SQ_DB <= offset < Reg.SQ_DB + _DOORBELL_SPAN:
            return False
        qpn, which = divmod(offset - Reg.SQ_DB, 8)
        if qpn >= self.num_qp:
            return False            # addresses nothing: counted as such
        q = self.qps.get(qpn)
        if q is None or q.state == QPState.RESET or (which >= 4 and q.srq):
            return True
        posted, done, size = ((q.sq_posted, q.sq_done, q.sq_size) if which < 4 else
                              (q.rq_posted, q.rq_done, q.rq_size))
        return (value - posted) & 0xFFFF > size - (posted - done)

    def _addresses_nothing(self, offset):
        """A write that lands on no writable register (docs/host-interface.md)."""
        if Reg.PORT_BASE <= offset < Reg.CMD_DATA:
            port, reg = divmod(offset - Reg.PORT_BASE, PORT_STRIDE)
            return reg not in _PORT_REGS or port + 1 > self.num_ports
        if GID_TABLE_BASE <= offset < GID_TABLE_BASE + 0x400:
            port, at = divmod(offset - GID_TABLE_BASE, GID_TABLE_PORT_STRIDE)
            entry, word = divmod(at, GID_ENTRY_STRIDE)
            return port + 1 > self.num_ports or entry >= self.num_gids or word > GID_VLAN
        if Reg.SQ_DB <= offset < Reg.SQ_DB + _DOORBELL_SPAN:
            return (offset - Reg.SQ_DB) // 8 >= self.num_qp
        if Reg.CQ_CI_DB <= offset < Reg.CQ_CI_DB + _DOORBELL_SPAN:
            return (offset - Reg.CQ_CI_DB) // 8 >= self.num_cq
        if Reg.SRQ_DB <= offset < Reg.SRQ_DB + _DOORBELL_SPAN:
            srqn, which = divmod(offset - Reg.SRQ_DB, 8)
            return srqn >= self.num_srq or which != 0
        if Reg.PORT_COUNTERS <= offset < Reg.PORT_COUNTERS + 0x400:
            port, word = self._port_counter_word(offset)
            loadable = word == PortCounter.CLEAR or any(
                word in (c, c + 1) if c.bits == 64 else word == c for c in COUNTERS)
            return port > self.num_ports or not loadable
        return not (Reg.CMD_DATA <= offset <= Reg.CMD or
                    offset in (Reg.EVENT, Reg.CTRL, Reg.SRQ_EVENT, Reg.CNP_INTERVAL))

    def on_mem_write(self, addr, data):
        self.image.write(addr, data)

    def on_set_port(self, port, attr):
        self.ports[port] = attr

    def on_reg_mr(self, mr):
        self.mrs[mr.index] = _MR(mr.lkey, mr.addr, mr.length, mr.access, mr.pd.pdn, mr.host_addr)
        self.image.track(mr.host_addr, mr.length, f"MR {mr.lkey:#x} (iova {mr.addr:#x})",
                         self._read_host)

    def on_dereg_mr(self, mr):
        del self.mrs[mr.index]

    def on_alloc_mw(self, mw):
        self.mrs[mw.index] = _MW(mw.rkey, 0, 0, Access(0), mw.pd.pdn, 0, type2=mw.type == 2)

    def on_dealloc_mw(self, mw):
        del self.mrs[mw.index]

    def on_create_ah(self, ah):
        self.ahs[ah.ahn] = _AH(ah.pd.pdn, ah.port, ah.attr)

    def on_destroy_ah(self, ah):
        del self.ahs[ah.ahn]

    def on_create_cq(self, cq):
        self.cqs[cq.cqn] = _CQ(cq.depth)

    def on_destroy_cq(self, cq):
        del self.cqs[cq.cqn]

    def on_resize_cq(self, cq, moved):
        """Its unconsumed completions go along (the device refuses a ring they do not fit):
        only the room for more changes."""
        self.cqs[cq.cqn].size = cq.depth

    def on_create_qp(self, qp):
        q = self.qps[qp.qp_num] = ModelQP(qp.qp_num, qp.qp_type, qp.pd.pdn, qp.send_cq.cqn,
                                          qp.recv_cq.cqn, qp.sq.size, qp.rq.size,
                                          qp.max_send_sge, qp.max_recv_sge,
                                          sq_slot=(qp.sq.base, qp.sq.stride))
        # The device only reads the rings: tracking them catches a stray write into one. (The
        # receive slot of a QP on an SRQ is the device's to write.)
        rings = [(qp.sq, "send")]
        if qp.srq:
            q.srq = self.srqs[qp.srq.srqn]
            q.rq = _SRQReceives(q.srq, q)
        else:
            rings.append((qp.rq, "receive"))
        for wq, name in rings:
            self.image.track(wq.base, wq.stride * wq.size, f"QP {qp.qp_num} {name} ring",
                             self._read_host)

    def on_create_srq(self, srq):
        self.srqs[srq.srqn] = _SRQ(srq.srqn, srq.pd.pdn, srq.max_wr, srq.max_sge, srq.limit)
        self.image.track(srq.wq.base, srq.wq.stride * srq.wq.size, f"SRQ {srq.srqn} ring",
                         self._read_host)

    def on_modify_srq(self, srq, limit):
        self.srqs[srq.srqn].limit = limit

    def on_destroy_srq(self, srq):
        del self.srqs[srq.srqn]

    def on_post_srq_recv(self, srq, wrs):
        m = self.srqs[srq.srqn]
        for wr in wrs:
            m.wqes.append(_RecvWQE(wr, f"SRQ {m.srqn} recv #{m.posted} wr_id={wr.wr_id:#x}"))
            m.posted += 1
        self._progress()


    def on_modify_qp(self, qp, state, attr):
        q = self.qps[qp.qp_num]
        q.attr = attr
        # the PSNs are taken when the QP enters the state that uses them
        if state == QPState.RTR and q.state == QPState.INIT:
            q.epsn, q.msn = attr.rq_psn & PSN_MASK, 0
        if state == QPState.RTS and q.state == QPState.RTR:
            q.sq_psn = attr.sq_psn & PSN_MASK
        if state == QPState.RESET:  # outstanding WQEs vanish without completions
            q.sq.clear()
            q.rq.clear()
            q.sq_posted = q.sq_done = q.rq_posted = q.rq_done = 0
            q.state = state
        elif state == QPState.ERR:
            self._set_err(q)
        else:
            q.state = state
        self._progress()

    def on_destroy_qp(self, qp):
        del self.qps[qp.qp_num]

    # --- observer: work requests and completions ------------------------------------------

    def on_post_send(self, qp, wrs):
        q = self.qps[qp.qp_num]
        for wr in wrs:
            name = getattr(wr.opcode, "name", f"opcode {wr.opcode}")
            q.sq.append(_SendWQE(wr, f"QP {q.qpn} send #{q.sq_posted} {name} "
                                     f"wr_id={wr.wr_id:#x}"))
            q.sq_posted += 1
        self._progress()

    def on_post_recv(self, qp, wrs):
        q = self.qps[qp.qp_num]
        for wr in wrs:
            q.rq.append(_RecvWQE(wr, f"QP {q.qpn} recv #{q.rq_posted} wr_id={wr.wr_id:#x}"))
            q.rq_posted += 1
        if q.state == QPState.ERR:
            self._flush_rq(q)
        self._progress()

    def on_poll_cq(self, cq, wcs):
        self.cqs[cq.cqn].consumed += len(wcs)

    # --- completions and QP state ----------------------------------------------------------

    def _expect(self, cqn, qpn, recv, fields, what):
        cq = self.cqs.get(cqn)
        if cq is None or cq.produced - cq.consumed >= cq.size:
            self.counters.cq_overflows += 1
            return
        cq.produced += 1
        self.expected[(cqn, qpn, recv)].append(ExpectedWC(cqn, qpn, recv, fields, what))

    def _set_err(self, q):
        """Move to ERR: the receive queue flushes now, the send queue as it is served."""
        if q.state != QPState.ERR:
            q.state = QPState.ERR
            self._flush_rq(q)

    def _flush_rq(self, q):
        for r in q.owned_receives():
            self._take_recv(q)
            self._expect(q.recv_cq, q.qpn, True,
                         error_fields(r.wr.wr_id, WCStatus.WR_FLUSH_ERR, WCOpcode.RECV, q.qpn),
                         f"{r.what}: flushed, QP in ERR")

    def _take_recv(self, q):
        q.rq_done += 1
        return q.rq.popleft()

    def _complete_send(self, q, w, status, why):
        q.sq.popleft()
        q.sq_done += 1
        for listener in self.listeners:
            listener(self, q, w, status)
        wr = w.wr
        opcode = _WC_OPCODE.get(wr.opcode)
        what = f"{w.what}: {why}" if why else w.what
        if status != WCStatus.SUCCESS:
            self._expect(q.send_cq, q.qpn, False,
                         error_fields(wr.wr_id, status, opcode, q.qpn), what)
            self._set_err(q)
        elif wr.flags & SendFlags.SIGNALED:
            fields = dict(wr_id=wr.wr_id, status=status, opcode=opcode, qp_num=q.qpn)
            if opcode in (WCOpcode.SEND, WCOpcode.RDMA_READ, WCOpcode.COMP_SWAP,
                          WCOpcode.FETCH_ADD):
                fields["byte_len"] = wr.length
            self._expect(q.send_cq, q.qpn, False, fields, what)

    # --- the send queue engine -------------------------------------------------------------

    def _progress(self):
        """Serve send queues, one WQE per QP per round, until each is empty or waiting."""
        progress = True
        while progress:
            progress = False
            for q in list(self.qps.values()):
                if q.sq and self._serve(q):
                    progress = True

    def _serve(self, q):
        """Run the head of q's send queue; False when it has to wait."""
        w = q.sq[0]
        if q.state == QPState.ERR:
            self._complete_send(q, w, WCStatus.WR_FLUSH_ERR, "flushed, QP in ERR")
            return True
        if q.state != QPState.RTS:
            return False
        if not w.started:
            slot = q.sq_slot[0] + q.sq_slot[1] * (q.sq_done % q.sq_size)
            if self._fails(slot, q.sq_slot[1]):
                # the device never saw the WQE: it completes as an all-zero one
                w.wr = SendWR(WROpcode.RDMA_WRITE)
                self._complete_send(q, w, WCStatus.GENERAL_ERR, "its WQE could not be read")
                return True
            status, why = self._requester_check(q, w.wr)
            if status == WCStatus.SUCCESS and w.wr.opcode in _MW_OPS:
                why = self._bind(q, w.wr) if w.wr.opcode == WROpcode.BIND_MW else \
                    self._invalidate(w.wr.rkey, q.pd)
                status = WCStatus.MW_BIND_ERR if why else WCStatus.SUCCESS
            if status != WCStatus.SUCCESS or w.wr.opcode in _MW_OPS:
                self._complete_send(q, w, status, why)
                return True
            loopback = self._loopback(q, self._av(q, w.wr))
            w.wire = not (self.bypass and loopback)
            w.internal = w.wire and loopback
            if not w.wire:
                self.counters.lb_msgs += 1
                self.counters.lb_bytes += w.wr.length
            w.started = True
        status, why = self._send_packets(q, w) if w.wire else self._deliver(q, w)
        if status is None:
            return False
        self._complete_send(q, w, status, why)
        return True

    def _lookup_mr(self, key, pd, addr, length, need, qpn=None):
        """The MR (or, for a remote access by QP `qpn`, the memory window) `key` names if it
        may serve [addr, addr + length) with `need`, else None and the reason."""
        mr = self.mrs.get(key >> 8)
        if mr is None or mr.key != key:
            return None, f"key {key:#x} names no registered MR"
        if isinstance(mr, _MW):
            if qpn is None:
                return None, f"key {key:#x} names a memory window: no lkey"
            if not mr.bound:
                return None, f"key {key:#x} names a memory window that is not bound"
            if mr.type2 and mr.qpn != qpn:
                return None, f"key {key:#x} names a type 2 window bound to QP {mr.qpn}"
        if mr.pd != pd:
            return None, f"key {key:#x} is in PD {mr.pd}, not {pd}"
        if not mr.covers(addr, length):
            return None, (f"key {key:#x} covers [{mr.iova:#x}, +{mr.length:#x}), "
                          f"not [{addr:#x}, +{length:#x})")
        missing = Access(need & ~mr.access)
        if missing:
            return None, f"key {key:#x} lacks {missing.name}"
        return mr, ""

    def _bind(self, q, wr):
        """BIND_MW: why the window cannot be bound as `wr` asks, or "" once it is (a bind of
        no bytes leaves it unbound)."""
        mw = self.mrs.get(wr.rkey >> 8)     # the window by its index: any key of it
        if not isinstance(mw, _MW):
            return f"key {wr.rkey:#x} names no memory window"
        if mw.pd != q.pd:
            return f"window {wr.rkey:#x} is in PD {mw.pd}, not {q.pd}"
        if wr.bind_rkey >> 8 != wr.rkey >> 8:
            return f"new key {wr.bind_rkey:#x} names another index than {wr.rkey:#x}"
        if mw.type2 and mw.bound:
            return f"type 2 window {wr.rkey:#x} is bound already"
        sge = wr.sg_list[0]
        mr = None
        if sge.length:
            mr = self.mrs.get(sge.lkey >> 8)
            if mr is None or isinstance(mr, _MW) or mr.key != sge.lkey:
                return f"lkey {sge.lkey:#x} names no registered MR"
            if mr.pd != q.pd:
                return f"MR {sge.lkey:#x} is in PD {mr.pd}, not {q.pd}"
            if not mr.access & Access.MW_BIND:
                return f"MR {sge.lkey:#x} lacks MW_BIND"
            if not mr.covers(sge.addr, sge.length):
                return f"MR {sge.lkey:#x} does not cover [{sge.addr:#x}, +{sge.length:#x})"
            if wr.bind_access & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC) and \
                    not mr.access & Access.LOCAL_WRITE:
                return f"MR {sge.lkey:#x} lacks LOCAL_WRITE for a writable window"
        mw.key, mw.bound, mw.qpn = wr.bind_rkey, mr is not None, q.qpn
        mw.iova, mw.length = sge.addr, sge.length
        mw.access = Access(wr.bind_access) & _REMOTE_RIGHTS
        mw.host = mr.host_addr(sge.addr) if mr else 0
        return ""

    def _invalidate(self, rkey, pd, qpn=None):
        """LOCAL_INV (any QP of the PD) or a SEND with invalidate arriving at QP `qpn`: why
        `rkey` cannot be invalidated, or "" once its type 2 window is unbound."""
        mw = self.mrs.get(rkey >> 8)
        if not isinstance(mw, _MW) or mw.key != rkey or not mw.type2 or not mw.bound:
            return f"key {rkey:#x} names no bound type 2 window"
        if mw.pd != pd:
            return f"window {rkey:#x} is in PD {mw.pd}, not {pd}"
        if qpn is not None and mw.qpn != qpn:
            return f"window {rkey:#x} is bound to QP {mw.qpn}, not {qpn}"
        mw.bound = False
        return ""

    def _requester_check(self, q, wr):
        if wr.opcode not in _ALLOWED_OPCODES[q.type]:
            return WCStatus.LOC_QP_OP_ERR, f"opcode not allowed on {q.type.name}"
        if wr.opcode in _MW_OPS or wr.opcode == WROpcode.ATOMIC_WRITE:
            return WCStatus.SUCCESS, ""     # no SGE to check: an ATOMIC WRITE's bytes are its WQE's
        length, sges = wr.length, wr.sg_list
        if q.type == QPType.UD:
            ah = self.ahs.get(wr.ahn)
            if ah is None or ah.pd != q.pd or ah.port != q.port:
                return WCStatus.LOC_QP_OP_ERR, f"AH {wr.ahn} missing, or of another PD or port"
        if len(sges) > max(q.max_send_sge, 1):
            return WCStatus.LOC_QP_OP_ERR, f"{len(sges)} SGEs, the QP's WQEs hold {q.max_send_sge}"
        if wr.opcode in _READS_BACK and len(sges) > MAX_SGE_RD:
            return WCStatus.LOC_QP_OP_ERR, f"{len(sges)} SGEs, a READ or atomic takes {MAX_SGE_RD}"
        if length > MAX_MSG_BYTES:
            return WCStatus.LOC_LEN_ERR, f"{length} bytes exceed 2^31"
        if q.type == QPType.UD:
            mtu = self.ports[q.port].mtu.size
            if length > mtu:
                return WCStatus.LOC_LEN_ERR, f"{length} bytes exceed the port MTU {mtu}"
        if wr.opcode in ATOMIC_OPS and length != ATOMIC_BYTES:
            return WCStatus.LOC_LEN_ERR, f"an atomic's SGE has {length} bytes, not 8"
        need = Access.LOCAL_WRITE if wr.opcode in _READS_BACK else Access(0)
        for i, sge in enumerate(sges):
            if sge.length:
                mr, why = self._lookup_mr(sge.lkey, q.pd, sge.addr, sge.length, need)
                if mr is None:
                    return WCStatus.LOC_PROT_ERR, f"SGE {i} lkey: {why}"
        return WCStatus.SUCCESS, ""

    def _av(self, q, wr):
        return self.ahs[wr.ahn].attr if q.type == QPType.UD else q.attr.ah_attr

    def _loopback(self, q, av):
        """The seed's rule: the destination is the sending port's own address. InfiniBand:
        the DLID under the LMC and, with a GRH, the DGID one of the port's GIDs; Ethernet:
        the DGID one of the port's GIDs."""
        port = self.ports[q.port]
        own = av.grh is not None and bytes(av.grh.dgid) in {e.gid for e in port.own_gids()}
        if port.link_layer == "eth":
            return own
        mask = ~((1 << port.lmc) - 1) & 0xFFFF
        return (av.dlid & mask) == (port.lid & mask) and (av.grh is None or own)

    @staticmethod
    def _dest_qpn(q, wr):
        return wr.remote_qpn if q.type == QPType.UD else q.attr.dest_qp_num

    @staticmethod
    def _qkey(q, wr):
        """The Q_Key a UD message carries."""
        return q.attr.qkey if wr.remote_qkey & QKEY_FROM_QP else wr.remote_qkey

    def _destination(self, port, qp_type, qpn, qkey):
        """The QP `qpn` of this device a message of `qp_type` arriving on `port` reaches, or
        None and why not."""
        dest = self.qps.get(qpn)
        if dest is None:
            return None, f"QP {qpn} does not exist"
        if dest.port != port or dest.type != qp_type:
            return None, f"QP {qpn} is {dest.type.name} on port {dest.port}"
        if dest.state not in (QPState.RTR, QPState.RTS):
            return None, f"QP {qpn} is in {dest.state.name}"
        if qp_type == QPType.UD and qkey != dest.attr.qkey:
            return None, f"Q_Key {qkey:#x}, QP {qpn} has {dest.attr.qkey:#x}"
        return dest, ""

    def _deliver(self, q, w):
        """The responder's side of a loopback message that passed the requester: the sender's
        status (None: receiver not ready, retry later) and why."""
        dest, why = self._destination(q.port, q.type, self._dest_qpn(q, w.wr),
                                      self._qkey(q, w.wr))
        if not self.pkeys[q.port] & 0x8000:
            # the port's own packets would be limited to limited: dropped on arrival
            dest, why = None, f"port {q.port}'s P_Key {self.pkeys[q.port]:#06x} is a limited member"
        if dest is None:
            if q.type == QPType.RC:
                return WCStatus.RETRY_EXC_ERR, why
            return WCStatus.SUCCESS, f"dropped: {why}"
        if w.wr.opcode in _SENDS:
            return self._deliver_send(q, w, dest)
        if w.wr.opcode in ATOMIC_OPS:
            return self._deliver_atomic(q, w, dest)
        return self._deliver_rdma(q, w, dest)

    def host_fails(self, addr=0, length=0):
        """Host memory answers every access to [addr, addr + length) with an error from now
        on (HostMemory.fail; length 0: none). A WQE read from there completes GENERAL_ERR, and
        so does a loopback RDMA WRITE or READ whose data is read or written there, a READ or
        atomic on the packet path whose answer is stored there, and a SEND or WRITE on the
        packet path whose payload is read from there (_send_refused); what that message left in
        its destination is not decided (docs/semantics.md)."""
        self.failing = (addr, addr + length)

    def _fails(self, addr, length):
        lo, hi = self.failing
        return length > 0 and addr < hi and lo < addr + length

    def _local_parts(self, wr):
        """(host address, length) of each of the sender's SGEs with bytes."""
        return [(self.mrs[s.lkey >> 8].host_addr(s.addr), s.length) for s in wr.sg_list
                if s.length]

    def _no_receive(self, q, dest):
        """The sender's status for a message that needs a receive `dest` does not have."""
        why = f"QP {dest.qpn} has no receive posted"
        if q.type != QPType.RC:
            return WCStatus.SUCCESS, f"dropped: {why}"
        if q.attr.rnr_retry == RNR_RETRY_FOREVER:
            return None, why
        return WCStatus.RNR_RETRY_EXC_ERR, why

    def _local_bytes(self, wr):
        """The bytes the sender's SGEs name, in order (validated by the requester checks); an
        ATOMIC WRITE's 8 come from its WQE."""
        if wr.opcode == WROpcode.ATOMIC_WRITE:
            return wr.atomic_data
        return b"".join(self.image.read(at, n) for at, n in self._local_parts(wr))

    def _write_local(self, wr, data):
        """Bytes for the sender's own SGEs (a READ's data, an atomic's original value)."""
        pos = 0
        for s in wr.sg_list:
            if s.length and pos < len(data):
                self.image.write(self.mrs[s.lkey >> 8].host_addr(s.addr), data[pos:pos + s.length])
                pos += s.length

    def _recv_parts(self, recv, pd, lo, size):
        """Bytes [lo, lo + size) of receive WQE `recv`'s SGEs as (host address, length) parts,
        each part's lkey checked for LOCAL_WRITE; or None and why at the first that fails."""
        parts, start = [], 0
        for i, sge in enumerate(recv.wr.sg_list):
            a, b = max(start, lo), min(start + sge.length, lo + size)
            if b > a:
                mr, why = self._lookup_mr(sge.lkey, pd, sge.addr + a - start, b - a,
                                          Access.LOCAL_WRITE)
                if mr is None:
                    return None, f"{recv.what} SGE {i} lkey: {why}"
                parts.append((mr.host_addr(sge.addr + a - start), b - a))
            start += sge.length
        return parts, ""

    def _scatter(self, parts, data):
        pos = 0
        for at, n in parts:
            self.image.write(at, data[pos:pos + n])
            pos += n

    def _recv_unusable(self, dest, recv):
        """Why receive WQE `recv` cannot take data (more SGEs than the QP's WQEs hold), or ""."""
        n = len(recv.wr.sg_list)
        return (f"{recv.what} has {n} SGEs, the QP's WQEs hold {dest.max_recv_sge}"
                if n > max(dest.max_recv_sge, 1) else "")

    def _deliver_send(self, q, w, dest):
        wr = w.wr
        if not dest.rq:
            return self._no_receive(q, dest)
        recv = self._take_recv(dest)
        w.recv_sges, w.recv_srq = recv.wr.sg_list, dest.srq is not None
        rc = q.type == QPType.RC
        ud = q.type == QPType.UD
        total = wr.length + (GRH_BYTES if ud else 0)
        why = self._recv_unusable(dest, recv)
        if why:
            self._recv_error(dest, recv, WCStatus.LOC_QP_OP_ERR, w, why)
            return (WCStatus.REM_OP_ERR if rc else WCStatus.SUCCESS), why
        if total > recv.wr.length:
            why = f"{recv.what} holds {recv.wr.length} bytes, the message needs {total}"
            self._recv_error(dest, recv, WCStatus.LOC_LEN_ERR, w, why)
            return (WCStatus.REM_INV_REQ_ERR if rc else WCStatus.SUCCESS), why
        if total:
            parts, why = self._recv_parts(recv, dest.recv_pd, 0, total)
            if parts is None:
                self._recv_error(dest, recv, WCStatus.LOC_PROT_ERR, w, why)
                return (WCStatus.REM_OP_ERR if rc else WCStatus.SUCCESS), why
            grh = self._grh_area(q, wr) if ud else b""
            self._scatter(parts, grh + self._local_bytes(wr))
        if wr.opcode == WROpcode.SEND_WITH_INV:
            why = self._invalidate(wr.rkey, dest.pd, dest.qpn)
            if why:
                self._recv_error(dest, recv, WCStatus.REM_INV_REQ_ERR, w, why)
                return WCStatus.SUCCESS, f"delivered; the receiver refused the invalidation: {why}"
        self._expect_recv(q, w, dest, recv, WCOpcode.RECV, total)
        return WCStatus.SUCCESS, ""

    def _deliver_rdma(self, q, w, dest):
        """RDMA WRITE (WITH_IMM), ATOMIC WRITE and READ. The rkey is checked before a
        WRITE_WITH_IMM looks for its receive: a failed check consumes none, and fails even with
        none posted."""
        wr = w.wr
        length = wr.length
        read = wr.opcode == WROpcode.RDMA_READ
        with_imm = wr.opcode == WROpcode.RDMA_WRITE_WITH_IMM
        rmr = None
        if length:
            need = Access.REMOTE_READ if read else Access.REMOTE_WRITE
            rmr, why = self._lookup_mr(wr.rkey, dest.pd, wr.remote_addr, length, need, dest.qpn)
            if rmr is not None and not dest.attr.qp_access_flags & need:
                rmr, why = None, f"QP {dest.qpn} access flags lack {need.name}"
            if rmr is None:
                why = f"rkey: {why}"
                if q.type == QPType.RC:
                    self._set_err(dest)
                    return WCStatus.REM_ACCESS_ERR, why
                return WCStatus.SUCCESS, f"nothing written, {why}"
        if with_imm and not dest.rq:
            return self._no_receive(q, dest)
        why = (_atomic_write_refused(wr.remote_addr, length)
               if wr.opcode == WROpcode.ATOMIC_WRITE else "")
        if rmr is not None and why:     # RC only: the requester refuses it on UC and UD
            self._set_err(dest)
            return WCStatus.REM_INV_REQ_ERR, why
        if rmr is not None:
            remote = rmr.host_addr(wr.remote_addr)
            local = self._local_parts(wr)
            if any(self._fails(at, n) for at, n in local + [(remote, length)]):
                self.image.undefined += local if read else [(remote, length)]
                return WCStatus.GENERAL_ERR, "host memory failed under its data"
            if read:
                self._write_local(wr, self.image.read(remote, length))
            else:
                self.image.write(remote, self._local_bytes(wr))
        if with_imm:
            self._expect_recv(q, w, dest, self._take_recv(dest), WCOpcode.RECV_RDMA_WITH_IMM,
                              length)
        return WCStatus.SUCCESS, ""

    def _deliver_atomic(self, q, w, dest):
        wr = w.wr
        status, why, orig = self._atomic(dest, wr.remote_addr, wr.rkey, wr.opcode,
                                         wr.compare_add, wr.swap)
        if status == WCStatus.SUCCESS:
            self._write_back(wr, orig)
        return status, why

    def _atomic(self, dest, va, rkey, opcode, compare_add, swap):
        """The responder's side of an atomic: (sender's status, why, original value). The
        rkey check comes first, then the alignment (as rxe's responder has them); both fail the
        QP."""
        rmr, why = self._lookup_mr(rkey, dest.pd, va, ATOMIC_BYTES, Access.REMOTE_ATOMIC,
                                  dest.qpn)
        if rmr is not None and not dest.attr.qp_access_flags & Access.REMOTE_ATOMIC:
            rmr, why = None, f"QP {dest.qpn} access flags lack REMOTE_ATOMIC"
        if rmr is None:
            self._set_err(dest)
            return WCStatus.REM_ACCESS_ERR, f"rkey: {why}", None
        if va & 7:
            self._set_err(dest)
            return WCStatus.REM_INV_REQ_ERR, f"atomic at {va:#x} is not 8-byte aligned", None
        at = rmr.host_addr(va)
        orig = int.from_bytes(self.image.read(at, ATOMIC_BYTES), "little")
        if opcode == WROpcode.ATOMIC_FETCH_AND_ADD:
            self.image.write(at, ((orig + compare_add) & U64).to_bytes(8, "little"))
        elif orig == compare_add & U64:
            self.image.write(at, (swap & U64).to_bytes(8, "little"))
        return WCStatus.SUCCESS, "", orig

    def _write_back(self, wr, orig):
        """An atomic's original value lands in the sender's SGE."""
        self._write_local(wr, orig.to_bytes(8, "little"))

    def _grh_area(self, q, wr):
        """The GRH area a loopback UD SEND leaves: what its packet would have carried."""
        link = self._link_headers(q, self._av(q, wr), wr.remote_qpn)
        return network_header(ud_paylen(wr.length, wr.opcode == WROpcode.SEND_WITH_IMM),
                              link.get("grh"), link.get("roce"))

    def _expect_recv(self, q, w, dest, recv, opcode, byte_len):
        wr = w.wr
        av = self._av(q, wr)
        # Loopback: the sending and the receiving port are the same port.
        port = self.ports[q.port]
        path_mask = (1 << port.lmc) - 1
        self._expect_recv_fields(dest, recv, w, opcode, byte_len, src_qp=q.qpn,
                                 slid=(port.lid & ~path_mask) | (av.src_path_bits & path_mask),
                                 sl=av.sl, dlid=av.dlid, grh=av.grh is not None,
                                 imm=wr.imm if wr.opcode in _WITH_IMM else None,
                                 inv=wr.rkey if wr.opcode == WROpcode.SEND_WITH_INV else None)

    def _expect_recv_fields(self, dest, recv, w, opcode, byte_len, *, src_qp, slid, sl, dlid,
                            grh, imm, inv=None):
        """A receive completion on `dest`. On Ethernet (RoCE v2), whichever path the message
        took, there are no LIDs and no SL in it, and always a GRH."""
        if self.ports[dest.port].link_layer == "eth":
            slid, sl, dlid, grh = 0, 0, 0, True
        path_mask = (1 << self.ports[dest.port].lmc) - 1
        flags = ((WCFlags.GRH if grh else WCFlags(0))
                 | (WCFlags.WITH_IMM if imm is not None else WCFlags(0))
                 | (WCFlags.WITH_INV if inv is not None else WCFlags(0)))
        fields = dict(wr_id=recv.wr.wr_id, status=WCStatus.SUCCESS, opcode=opcode,
                      byte_len=byte_len, qp_num=dest.qpn, src_qp=src_qp, wc_flags=flags,
                      sl=sl, slid=slid, dlid_path_bits=dlid & path_mask)
        if imm is not None:
            fields["imm_data"] = imm
        if inv is not None:
            fields["imm_data"] = inv
        self._expect(dest.recv_cq, dest.qpn, True, fields, f"{recv.what}, for {w.what}")

    def _recv_error(self, dest, recv, status, w, why):
        self._expect(dest.recv_cq, dest.qpn, True,
                     error_fields(recv.wr.wr_id, status, WCOpcode.RECV, dest.qpn),
                     f"{recv.what}, for {w.what}: {why}")
        if dest.type == QPType.RC:
            self._set_err(dest)

    # --- the packet path (docs/packet-path.md) ----------------------------------------------

    def _path_mtu(self, q):
        """The path MTU in bytes: the QP's (RC, UC) when set and below the port's; UD uses
        the port's."""
        port_mtu = self.ports[q.port].mtu
        if q.type == QPType.UD or not q.attr.path_mtu or q.attr.path_mtu > port_mtu:
            return port_mtu.size
        return MTU(q.attr.path_mtu).size

    def _link_headers(self, q, av, dest_qp):
        """What a message of QP `q` to `av` carries in front of its BTH: LRH and GRH on
        InfiniBand (the source GID the AV's entry of the port's GID table), the Ethernet, IP
        and UDP fields on Ethernet (the source GID's VLAN, the SL as its priority)."""
        port = self.ports[q.port]
        if port.link_layer == "eth":
            route = av.grh
            source = port.gid_table[route.sgid_index]
            return dict(roce=RoCE(
                dmac=bytes(av.dmac), smac=port.mac, sgid=source.gid, dgid=bytes(route.dgid),
                hop_limit=route.hop_limit, tclass=route.traffic_class,
                flow_label=0 if is_ipv4_mapped(source.gid) else route.flow_label,
                vlan=source.vlan, pcp=av.sl & 7 if source.vlan is not None else 0,
                sport=roce_sport(route.flow_label, q.qpn, dest_qp)))
        path_mask = (1 << port.lmc) - 1
        lrh = LRH(dlid=av.dlid, slid=(port.lid & ~path_mask) | (av.src_path_bits & path_mask),
                  sl=av.sl)
        grh = None
        if av.grh is not None:
            grh = GRH(sgid=port.gid_table[av.grh.sgid_index].gid, dgid=bytes(av.grh.dgid),
                      hop_limit=av.grh.hop_limit, tclass=av.grh.traffic_class,
                      flow_label=av.grh.flow_label)
        return dict(lrh=lrh, grh=grh)

    def _request_packets(self, q, wr, psn):
        """The packets of a message, as the packetizer builds them."""
        dest_qp, pkey, length = self._dest_qpn(q, wr), self.pkeys[q.port], wr.length
        link = self._link_headers(q, self._av(q, wr), dest_qp)
        reth = RETH(va=wr.remote_addr, rkey=wr.rkey, dma_len=length)
        if wr.opcode in ATOMIC_OPS:
            cas = wr.opcode == WROpcode.ATOMIC_CMP_AND_SWP
            eth = AtomicETH(va=wr.remote_addr, rkey=wr.rkey,
                            swap_add=(wr.swap if cas else wr.compare_add) & U64,
                            compare=wr.compare_add & U64 if cas else 0)
            return [Packet(**link, atomic_eth=eth,
                           bth=BTH(opcode=0x13 if cas else 0x14, dest_qp=dest_qp, psn=psn,
                                   pkey=pkey, ackreq=True))]
        if wr.opcode == WROpcode.RDMA_READ:
            return [Packet(**link, reth=reth,
                           bth=BTH(opcode=0x0C, dest_qp=dest_qp, psn=psn, pkey=pkey))]
        if wr.opcode == WROpcode.ATOMIC_WRITE:
            return packetize("RC", "ATOMIC_WRITE", wr.atomic_data, self._path_mtu(q), **link,
                             dest_qp=dest_qp, psn=psn, pkey=pkey, reth=reth)
        write = wr.opcode in (WROpcode.RDMA_WRITE, WROpcode.RDMA_WRITE_WITH_IMM)
        inv = wr.opcode == WROpcode.SEND_WITH_INV
        deth = DETH(qkey=self._qkey(q, wr), src_qp=q.qpn) if q.type == QPType.UD else None
        packets = packetize(_TRANSPORT[q.type], "RDMA_WRITE" if write else "SEND",
                            self._local_bytes(wr), self._path_mtu(q), **link, dest_qp=dest_qp,
                            psn=psn, pkey=pkey, deth=deth, reth=reth if write else None,
                            immdt=ImmDt(wr.imm) if wr.opcode in _WITH_IMM or inv else None,
                            se=bool(wr.flags & SendFlags.SOLICITED))
        if inv:     # the last packet: SEND LAST / ONLY with invalidate, the IETH for the ImmDt
            last = packets[-1]
            last.bth = replace(last.bth, opcode={0x03: 0x16, 0x05: 0x17}[last.bth.opcode])
            last.immdt, last.ieth = None, IETH(wr.rkey)
        return packets

    def _answer_packets(self, port, dest, req, syndrome, data=None, mtu=None, orig=None):
        """An RC responder's answer to request packet `req`: an ACK / NAK, (with `data`)
        the READ responses, or (with `orig`) an atomic ACK, addressed back along the request's
        path (on Ethernet to its source MAC, in its VLAN, its GIDs swapped)."""
        if req.roce is not None:
            link = dict(roce=self._roce_back(port, req.roce, dest.qpn, dest.attr.dest_qp_num,
                                             echoed_tclass(req.roce.tclass)))
        else:
            grh = None
            if req.grh is not None:
                grh = GRH(sgid=req.grh.dgid, dgid=req.grh.sgid, hop_limit=req.grh.hop_limit,
                          tclass=req.grh.tclass, flow_label=req.grh.flow_label)
            link = dict(lrh=LRH(dlid=req.lrh.slid, slid=req.lrh.dlid, sl=req.lrh.sl), grh=grh)
        aeth = AETH(syndrome=syndrome, msn=dest.msn)
        if orig is not None:
            return [Packet(**link, aeth=aeth, atomic_ack_eth=AtomicAckETH(orig),
                           bth=BTH(opcode=0x12, dest_qp=dest.attr.dest_qp_num,
                                   psn=req.bth.psn, pkey=self.pkeys[port]))]
        if data is None:
            return [Packet(**link, aeth=aeth,
                           bth=BTH(opcode=0x11, dest_qp=dest.attr.dest_qp_num,
                                   psn=req.bth.psn, pkey=self.pkeys[port]))]
        return packetize("RC", "RDMA_READ_RESPONSE", data, mtu, **link, aeth=aeth,
                         dest_qp=dest.attr.dest_qp_num, psn=req.bth.psn, pkey=self.pkeys[port])

    def _roce_back(self, port, r, qpn, dest_qpn, tclass):
        """The RoCE v2 fields of a packet `port` sends back along the path of a request that
        came with `r`: to its source MAC, in its VLAN, its GIDs swapped."""
        return replace(r, dmac=r.smac, smac=self.ports[port].mac, sgid=r.dgid, dgid=r.sgid,
                       tclass=tclass, sport=roce_sport(r.flow_label, qpn, dest_qpn))

    def _notify_congestion(self, port, dest, packets):
        """ECN on an Ethernet port: request `packets` from the link that reached QP `dest`
        (they passed its QP check) and arrived marked CE each send a CNP back to their source
        QP, one per packet when CNP_INTERVAL is 0. With a window between a QP's CNPs, how many
        fall in one depends on timing: the wire and the counters are no longer predicted."""
        marked = [p for p in packets if marked_ce(p)]
        if not marked:
            return
        if self.cnp_interval:
            self.wire_exact = False
            return
        for pkt in marked:
            to_qpn = pkt.deth.src_qp if pkt.deth is not None else dest.attr.dest_qp_num
            cnp = Packet(roce=self._roce_back(port, pkt.roce, dest.qpn, to_qpn,
                                              pkt.roce.tclass & ~3 | ECN_ECT0),
                         bth=BTH(opcode=CNP_OPCODE, dest_qp=to_qpn, psn=0,
                                 pkey=self.pkeys[port], becn=True), cnp=CNPReserved())
            self._sent(port, [cnp])
            self._count_one(port, PortCounter.NP_CNP_SENT)
            far, far_port = self.links.get(port, (None, None))
            if far is not None:
                far._cnp_arrives(far_port, cnp)

    def _cnp_arrives(self, port, cnp):
        """A CNP reaches `port`: counted for a QP of the port that may have sent (the
        reaction point's hook), else dropped as addressed to no QP."""
        q = self.qps.get(cnp.bth.dest_qp)
        ok = q is not None and q.port == port and q.state not in (QPState.RESET, QPState.INIT)
        self._received(port, [cnp], dropped=0 if ok else 1)
        if ok:
            self._count_one(port, PortCounter.RP_CNP_HANDLED)

    def links_lossy(self):
        """The cables lose, duplicate, corrupt or reorder packets (tb/link_faults.py): which
        packets cross them, and so the port counters, are no longer predicted; completions
        and memory still are, since RC delivers every message exactly once."""
        self.wire_exact = False

    def _count(self, port, counter, extended, n):
        counters = self.port_counters[port]
        for c in (counter, extended):
            counters[c] = min(counters[c] + n, (1 << c.bits) - 1)

    def _count_one(self, port, counter):
        counters = self.port_counters[port]
        counters[counter] = min(counters[counter] + 1, (1 << counter.bits) - 1)

    def _sent(self, port, packets):
        """`port` sends `packets` on its physical link."""
        self.wire[port] += packets
        self._count(port, PortCounter.XMIT_PKTS, PortCounter.XMIT_PKTS_EXT, len(packets))
        self._count(port, PortCounter.XMIT_DATA, PortCounter.XMIT_DATA_EXT,
                    sum(map(pktlen, packets)))

    def _received(self, port, packets, dropped=0):
        """`port` takes `packets` from its physical link; the last `dropped` of them fail the
        checks after the link's (the QP, the packet order) and count as errors too."""
        self._count(port, PortCounter.RCV_PKTS, PortCounter.RCV_PKTS_EXT, len(packets))
        self._count(port, PortCounter.RCV_DATA, PortCounter.RCV_DATA_EXT,
                    sum(map(pktlen, packets)))
        self._count(port, PortCounter.RCV_ERRORS, PortCounter.RCV_ERRORS_EXT, dropped)
        for _ in filter(marked_ce, packets):
            self._count_one(port, PortCounter.NP_ECN_MARKED_ROCE_PACKETS)

    def _send_packets(self, q, w):
        """A message on the packet path: its packets leave the port (on the link, or on the
        port's internal loopback when it is a loopback message with the bypass off), and the
        far end's answer decides the sender's status (None: receiver not ready, retried later)."""
        wr = w.wr
        rc = q.type == QPType.RC
        dest_qpn = self._dest_qpn(q, wr)
        if dest_qpn >> 24:
            return (WCStatus.RETRY_EXC_ERR if rc else WCStatus.SUCCESS), \
                f"QPN {dest_qpn:#x} does not fit a packet: nothing sent"
        internal = self._loopback(q, self._av(q, wr))
        far, far_port = (self, q.port) if internal else self.links.get(q.port, (None, None))
        packets = self._request_packets(q, wr, q.sq_psn)
        refused = self._refused_packets(q, wr)
        if refused:
            return self._send_refused(q, wr, refused, far, far_port, internal)
        tries = 0
        resends = 0         # go-back-N resends after a local ACK timeout (no answer)
        while True:
            tries += 1
            if not internal:
                self._sent(q.port, packets)
            else:
                self.looped += len(packets)
            if far is None:
                answer, why, responses = None, f"port {q.port} has no cable", []
            elif not rc and not internal and q.port in self.arriving:
                answer, why, responses = None, "delivered as the far end sees it arrive", []
            else:
                far.last_recv_sges = ()
                answer, why, responses = far._arrive(far_port, packets, internal, w.what)
                w.recv_sges, w.recv_srq = far.last_recv_sges, far.last_recv_srq
                if not internal:
                    far._sent(far_port, responses)
                    self._received(q.port, responses)
            if not rc:
                break
            if answer is None and q.attr.timeout == 0:
                self.wire_exact = False
                return None, f"no answer and no ACK timer: {why}"
            if answer is None and resends < q.attr.retry_cnt:
                resends += 1        # the timer expired: the whole message goes again
                continue
            if answer != RNR_NAK:
                break
            if q.attr.rnr_retry == RNR_RETRY_FOREVER:
                self.wire_exact = far.wire_exact = False
                return None, why
            if tries > q.attr.rnr_retry:
                break
        if not rc:
            q.sq_psn = (q.sq_psn + len(packets)) & PSN_MASK
            return WCStatus.SUCCESS, why
        if (answer != ACK or tries > 1 or resends) and not internal:
            self.loosen(q.port, dest_qpn)
        if answer is None:
            return WCStatus.RETRY_EXC_ERR, f"no answer: {why}"
        if answer == RNR_NAK:
            return WCStatus.RNR_RETRY_EXC_ERR, why
        if answer != ACK:
            return NAK_STATUS[answer], why
        local = self._local_parts(wr)
        if wr.opcode in _READS_BACK and any(self._fails(at, n) for at, n in local):
            self.image.undefined += local
            q.sq_psn = (q.sq_psn + len(responses)) & PSN_MASK
            return WCStatus.GENERAL_ERR, "host memory refused the answer's data"
        if wr.opcode in ATOMIC_OPS:
            self._write_back(wr, responses[-1].atomic_ack_eth.orig_data)
            q.sq_psn = (q.sq_psn + 1) & PSN_MASK
        elif wr.opcode == WROpcode.RDMA_READ:
            data = b"".join(r.payload for r in responses)
            self._write_local(wr, data)
            q.sq_psn = (q.sq_psn + len(responses)) & PSN_MASK
        else:
            q.sq_psn = (q.sq_psn + len(packets)) & PSN_MASK
        return WCStatus.SUCCESS, why

    def _refused_packets(self, q, wr):
        """The packets of a SEND or WRITE (by index) whose payload bytes host memory refuses."""
        if wr.opcode in _READS_BACK:
            return []
        lo, hi = self.failing
        mtu, offset, refused = self._path_mtu(q), 0, set()
        for at, n in self._local_parts(wr):
            first, end = max(at, lo), min(at + n, hi)
            if first < end:
                refused |= set(range((offset + first - at) // mtu,
                                     (offset + end - 1 - at) // mtu + 1))
            offset += n
        return sorted(refused)

    def _send_refused(self, q, wr, refused, far, far_port, internal):
        """Host memory refused the payload of packets `refused` of the message: they leave
        aborted, the far port drops them as bad frames, and the message never arrives whole;
        the sender completes GENERAL_ERR (its QP goes to ERR, so nothing resends it). The
        packets before the first of them were taken at the far end: what they wrote (the
        remote range of a WRITE, the head receive's buffers of a SEND, whose WQE stays posted)
        is not decided. Which other packets and answers cross the links is no longer predicted
        (the far end's answers to the packets after an aborted one depend on timing)."""
        self.wire_exact = False
        if not internal:
            self.aborted[q.port] += len(refused)
            if far is not None:
                far.wire_exact = False
        if far is not None and refused[0] > 0:
            dest, _ = far._destination(far_port, q.type, self._dest_qpn(q, wr),
                                       self._qkey(q, wr))
            if dest is not None and dest.state == QPState.RTS:
                write = wr.opcode in (WROpcode.RDMA_WRITE, WROpcode.RDMA_WRITE_WITH_IMM)
                far._taken_in_part(dest, RETH(va=wr.remote_addr, rkey=wr.rkey,
                                              dma_len=wr.length) if write else None)
        return WCStatus.GENERAL_ERR, "host memory refused its payload: packets aborted"

    def _taken_in_part(self, dest, reth):
        """The first packets of a SEND (`reth` None) or an RDMA WRITE (its RETH) reached QP
        `dest` of this device and the rest never will: the bytes they may have written are
        undefined (the WRITE's remote range, the head receive's buffers); an RC WRITE whose rkey
        fails was NAKed at its first packet, which moves `dest` to ERR."""
        if reth is not None:
            rmr, _ = self._rkey_check(dest, reth, Access.REMOTE_WRITE)
            if rmr is not None:
                self.image.undefined.append((rmr.host_addr(reth.va), reth.dma_len))
            elif dest.type == QPType.RC:
                self._set_err(dest)
        elif dest.rq:
            parts, _ = self._recv_parts(dest.rq[0], dest.recv_pd, 0, dest.rq[0].wr.length)
            self.image.undefined += parts or []

    def _arrive(self, port, packets, internal, what):
        """The packets of one message reach `port` of this device: the answer (an AETH
        syndrome, or None when there is none), why, and the answer's packets."""
        first = packets[0]
        if not self._addressed(port, first, internal):
            if not internal:
                self._count(port, PortCounter.RCV_ERRORS, PortCounter.RCV_ERRORS_EXT,
                            len(packets))
            return None, f"port {port} drops packets addressed elsewhere: {first.summary()}", []
        counted = not internal
        qp_type = {0: QPType.RC, 1: QPType.UC, 3: QPType.UD}[first.bth.opcode >> 5]
        qkey = first.deth.qkey if first.deth is not None else 0
        dest, why = self._destination(port, qp_type, first.bth.dest_qp, qkey)
        if dest is None or (qp_type == QPType.RC and first.bth.psn != dest.epsn):
            if counted:
                self._received(port, packets, dropped=len(packets) if dest is None else 0)
                if dest is not None:
                    self._notify_congestion(port, dest, packets)
            return None, f"dropped: {why or 'out of sequence'}", []
        op = OPCODES[first.bth.opcode]
        operation = op.operation
        # a new request, or a packet of another operation, where a message's later packets
        # should be (RC): it cuts the message short
        cut = (qp_type == QPType.RC and op.position == FIRST
               and any(not _follows(op, p) for p in packets[1:]))
        if qp_type == QPType.RC and op.position in (MIDDLE, LAST):
            answer, why, responses, taken = self._no_message_begun(port, dest, packets)
        elif cut:
            answer, why, responses, taken = self._cut_short(port, dest, packets)
        elif operation == "RDMA_READ_REQUEST":
            answer, why, responses, taken = self._arrive_read(port, dest, first, what)
        elif operation in ("COMPARE_SWAP", "FETCH_ADD"):
            answer, why, responses, taken = self._arrive_atomic(port, dest, first)
        elif operation == "RDMA_WRITE":
            answer, why, responses, taken = self._arrive_write(port, dest, packets, what)
        elif operation == "ATOMIC_WRITE":
            answer, why, responses, taken = self._arrive_atomic_write(port, dest, first)
        else:
            answer, why, responses, taken = self._arrive_send(port, dest, packets, what)
        if counted:
            # after an RC error the QP is in ERR, and the rest of the message fails the QP check
            rest = len(packets) - taken
            failed = dest.state == QPState.ERR and qp_type == QPType.RC
            self._received(port, packets, dropped=rest if failed else 0)
            self._notify_congestion(port, dest, packets[:taken] if failed else packets)
        return answer, why, responses

    def _no_message_begun(self, port, dest, packets):
        """An RC middle or last packet at the expected PSN, with no message begun (the model's
        QPs are never inside a message between two arrivals): its opcode is out of sequence,
        an invalid request (IBTA); the packets after it are past the expected PSN, and the
        first of them draws the one sequence NAK of that gap."""
        first = packets[0]
        answer, why, nak = self._nak(port, dest, first, WCStatus.REM_INV_REQ_ERR,
                                     f"{OPCODES[first.bth.opcode].name}: no message begun")
        if len(packets) > 1:
            nak += self._answer_packets(port, dest, first, SEQ_NAK)
        return answer, why, nak, len(packets)

    def _cut_short(self, port, dest, packets):
        """RC: the first packets of a SEND or WRITE (all of `packets` but the last) arrived and
        were taken, then, at the next PSN, a new request or a packet of another operation (the
        last) where the message's next packet should be: an opcode out of sequence, an invalid
        request (IBTA). The message ends there: what its packets wrote is not decided (the
        remote range of a WRITE, the head receive's buffers of a SEND, whose WQE stays posted),
        the ACKs they asked for go out, the last packet is NAKed and not executed, and the QP
        expects its PSN again."""
        begun, new = packets[:-1], packets[-1]
        first = begun[0]
        op = OPCODES[first.bth.opcode]
        assert all(_follows(op, p) for p in begun[1:]), "one message begun, then one packet"
        assert first.reth is not None or dest.rq, "the model cuts short only a begun message"
        self._taken_in_part(dest, first.reth)
        assert dest.state != QPState.ERR, "the model cuts short only a begun message"
        dest.epsn = new.bth.psn
        asked = self._acks_asked(port, dest, begun)
        answer, why, nak = self._nak(port, dest, new, WCStatus.REM_INV_REQ_ERR,
                                     f"{OPCODES[new.bth.opcode].name} inside a message")
        return answer, why, asked + nak, len(packets)

    def receive_injected(self, port, packets):
        """The testbench put `packets` (one message that passes the link checks, or the first
        packets of one and then a packet out of its sequence) on `port`'s RX link itself: the
        port delivers or drops them and answers as for any sender."""
        answer, why, responses = self._arrive(port, packets, False,
                                              f"packets injected on port {port}")
        self._sent(port, responses)

    def arrived(self, port, capture):
        """The cable into `port` delivered `capture` (a LinkSniffer Capture at its far end),
        for a sender's port in `arriving`: its UC and UD packets are taken here, in the order
        the cable delivered them. A packet that fails a link check (corrupted) is dropped; a
        UD datagram is a message of its own, a duplicate one too; UC takes each packet as it
        comes (_arrive_uc)."""
        pkt = capture.packet
        op = pkt.op if pkt is not None else None
        if op is None or op.transport not in ("UC", "UD"):
            return      # a bad packet is counted only; RC messages (and CNPs) are taken when sent
        what = f"{op.name} PSN {pkt.bth.psn:#x} from the cable into port {port}"
        if op.transport == "UD":
            self._arrive(port, [pkt], False, what)
        else:
            self._arrive_uc(port, pkt, op, what)

    def _arrive_uc(self, port, pkt, op, what):
        """A UC SEND or WRITE packet from a cable that may lose some (docs/semantics.md): a
        first or only packet starts a new message whatever its PSN, and the message under way
        is forgotten (what its packets wrote stays, and a SEND's receive WQE stays at the
        head for the next); a middle or last packet continues the message under way at the
        expected PSN, and any other packet is dropped with the message under way."""
        key = (port, pkt.bth.dest_qp)
        epsn, msg = self.uc_messages.pop(key, (None, None))
        if op.position in (FIRST, ONLY):
            msg = self._uc_start(port, pkt, op)
        elif msg is None or pkt.bth.psn != epsn:
            return
        if msg is None:
            self.uc_messages[key] = [(pkt.bth.psn + 1) & PSN_MASK, None]
            return
        dest, last = msg["dest"], op.position in (LAST, ONLY)
        if op.operation == "SEND":
            recv = dest.rq[0]
            msg["at"], failed = self._send_piece(dest, recv, msg["at"], pkt, what)
            if failed:
                msg = None
            elif last:
                self._take_recv(dest)
                self._expect_recv_fields(dest, recv, _Named(what), WCOpcode.RECV, msg["at"],
                                         **self._recv_source(dest, pkt))
        elif last and pkt.immdt is not None and not dest.rq:
            msg = None      # no receive WQE for the immediate: the last packet is dropped
        else:
            if pkt.payload:
                self.image.write(msg["at"], pkt.payload)
                msg["at"] += len(pkt.payload)
            if last and pkt.immdt is not None:
                first = msg["first"]
                self._expect_recv_fields(dest, self._take_recv(dest), _Named(what),
                                         WCOpcode.RECV_RDMA_WITH_IMM, first.reth.dma_len,
                                         **self._recv_source(dest, pkt))
        self.uc_messages[key] = [(pkt.bth.psn + 1) & PSN_MASK, None if last else msg]

    def _uc_start(self, port, pkt, op):
        """The message a UC first or only packet starts, or None when it is dropped whole: to
        another address or QP, a SEND without a receive WQE at its first packet, a WRITE the
        rkey does not allow (nothing of it is written)."""
        dest = None
        if self._addressed(port, pkt):
            dest, _ = self._destination(port, QPType.UC, pkt.bth.dest_qp, 0)
        if dest is None or (op.operation == "SEND" and not dest.rq):
            return None
        at = 0          # SEND: the offset in the receive WQE; WRITE: the host address
        if op.operation == "RDMA_WRITE":
            rmr, _ = self._rkey_check(dest, pkt.reth, Access.REMOTE_WRITE)
            if not rmr:
                return None
            at = rmr.host_addr(pkt.reth.va) if pkt.reth.dma_len else None
        return dict(dest=dest, first=pkt, at=at)

    def _addressed(self, port, pkt, internal=False):
        """`pkt` passes `port`'s address checks: InfiniBand: DLID under the LMC mask, a GRH's
        DGID one of the port's GIDs; Ethernet: the destination MAC the port's, the DGID one of
        its GIDs in the frame's VLAN (VID 0 being none, vlan_id; any VLAN for a loopback
        message's packet, `internal`: its path attributes mean nothing); both: P_Key."""
        attr = self.ports[port]
        mine = self.pkeys[port]
        if attr.link_layer == "eth":
            to_me = (pkt.roce is not None and pkt.roce.dmac == attr.mac
                     and any(e.gid == pkt.roce.dgid
                             and (internal or vlan_id(e.vlan) == vlan_id(pkt.roce.vlan))
                             for e in attr.own_gids()))
        else:
            mask = ~((1 << attr.lmc) - 1) & 0xFFFF
            to_me = (pkt.lrh is not None and (pkt.lrh.dlid & mask) == (attr.lid & mask)
                     and (pkt.grh is None or pkt.grh.dgid in {e.gid for e in attr.own_gids()}))
        return (to_me and (pkt.bth.pkey & 0x7FFF) == (mine & 0x7FFF)
                and (pkt.bth.pkey | mine) & 0x8000)

    def count_injected_bad(self, port, n=1):
        """`n` packets the testbench put on `port`'s RX link that fail a link check."""
        self._count(port, PortCounter.RCV_ERRORS, PortCounter.RCV_ERRORS_EXT, n)

    def _acks_asked(self, port, dest, packets):
        """The ACKs an RC responder sends for the request packets of a message before its
        last that ask for one (AckReq): each acknowledges its own PSN, with the MSN so far."""
        if dest.type != QPType.RC:
            return []
        return [ack for pkt in packets if pkt.bth.ackreq
                for ack in self._answer_packets(port, dest, pkt, ACK)]

    def _nak(self, port, dest, req, status, why):
        return NAK_CODE[status], why, self._answer_packets(port, dest, req, NAK_CODE[status])

    def _ack(self, port, dest, req, npkts, data=None, mtu=None, orig=None):
        """ACK request packet `req` (a message's last, an RDMA READ request that takes
        `npkts` PSNs for its responses, or an atomic)."""
        dest.msn = (dest.msn + 1) & PSN_MASK
        dest.epsn = (req.bth.psn + npkts) & PSN_MASK
        return ACK, "", self._answer_packets(port, dest, req, ACK, data, mtu, orig)

    def _no_receive_answer(self, port, dest, req, what):
        why = f"QP {dest.qpn} has no receive posted"
        if dest.type != QPType.RC:
            return None, f"dropped: {why}", []
        return RNR_NAK, why, self._answer_packets(port, dest, req,
                                                  RNR_NAK | dest.attr.min_rnr_timer)

    def _rkey_check(self, dest, reth, need):
        if not reth.dma_len:
            return True, ""
        rmr, why = self._lookup_mr(reth.rkey, dest.pd, reth.va, reth.dma_len, need, dest.qpn)
        if rmr is not None and not dest.attr.qp_access_flags & need:
            rmr, why = None, f"QP {dest.qpn} access flags lack {need.name}"
        return rmr, f"rkey: {why}"

    def _arrive_atomic_write(self, port, dest, req):
        """(answer, why, answer packets, request packets taken): the rkey allows the write,
        then the 8 bytes at an 8-byte aligned address (else an invalid request), written at
        once and acknowledged."""
        rmr, why = self._rkey_check(dest, req.reth, Access.REMOTE_WRITE)
        if not rmr:
            self._set_err(dest)
            return (*self._nak(port, dest, req, WCStatus.REM_ACCESS_ERR, why), 1)
        why = _atomic_write_refused(req.reth.va, req.reth.dma_len)
        if why:
            self._set_err(dest)
            return (*self._nak(port, dest, req, WCStatus.REM_INV_REQ_ERR, why), 1)
        at = rmr.host_addr(req.reth.va)
        if self._fails(at, ATOMIC_BYTES):
            return (*self._store_refused(port, dest, [req], 1, [(at, ATOMIC_BYTES)]), 1)
        self.image.write(at, req.payload)
        return (*self._ack(port, dest, req, 1), 1)

    def _arrive_read(self, port, dest, req, what):
        """(answer, why, answer packets, request packets taken)"""
        rmr, why = self._rkey_check(dest, req.reth, Access.REMOTE_READ)
        if not rmr:
            self._set_err(dest)
            return (*self._nak(port, dest, req, WCStatus.REM_ACCESS_ERR, why), 1)
        data = b""
        if req.reth.dma_len:
            data = self.image.read(rmr.host_addr(req.reth.va), req.reth.dma_len)
        mtu = self._path_mtu(dest)
        npkts = max(1, -(-len(data) // mtu))
        return (*self._ack(port, dest, req, npkts, data, mtu), 1)

    def _arrive_atomic(self, port, dest, req):
        eth = req.atomic_eth
        cas = req.bth.opcode == 0x13
        status, why, orig = self._atomic(
            dest, eth.va, eth.rkey,
            WROpcode.ATOMIC_CMP_AND_SWP if cas else WROpcode.ATOMIC_FETCH_AND_ADD,
            eth.compare if cas else eth.swap_add, eth.swap_add)
        if status != WCStatus.SUCCESS:
            return (*self._nak(port, dest, req, status, why), 1)
        return (*self._ack(port, dest, req, 1, orig=orig), 1)

    def _arrive_write(self, port, dest, packets, what):
        first, last = packets[0], packets[-1]
        rc = dest.type == QPType.RC
        rmr, why = self._rkey_check(dest, first.reth, Access.REMOTE_WRITE)
        if not rmr:
            if not rc:
                return None, f"nothing written, {why}", [], 1
            self._set_err(dest)
            return (*self._nak(port, dest, first, WCStatus.REM_ACCESS_ERR, why), 1)
        with_imm = last.immdt is not None
        # a single packet needs its receive before anything is written, the last packet of
        # several after the rest is in place
        if with_imm and len(packets) == 1 and not dest.rq:
            return (*self._no_receive_answer(port, dest, first, what), 1)
        at = rmr.host_addr(first.reth.va) if first.reth.dma_len else None
        for taken, pkt in enumerate(packets[:-1], 1):
            if self._fails(at, len(pkt.payload)):
                return (*self._store_refused(port, dest, packets, taken, [(at, len(pkt.payload))]),
                        taken)
            self.image.write(at, pkt.payload)
            at += len(pkt.payload)
        asked = self._acks_asked(port, dest, packets[:-1])
        if with_imm and not dest.rq:
            # the message starts over: the RNR NAK names its first PSN
            answer, why, nak = self._no_receive_answer(port, dest, first, what)
            return answer, why, asked + nak, len(packets)
        if self._fails(at, len(last.payload)):
            return (*self._store_refused(port, dest, packets, len(packets),
                                         [(at, len(last.payload))]), len(packets))
        if last.payload:
            self.image.write(at, last.payload)
        if with_imm:
            recv = self._take_recv(dest)
            self._expect_recv_fields(dest, recv, _Named(what), WCOpcode.RECV_RDMA_WITH_IMM,
                                     first.reth.dma_len, **self._recv_source(dest, last))
        if not rc:
            return None, "", [], len(packets)
        answer, why, ack = self._ack(port, dest, last, 1)
        return answer, why, asked + ack, len(packets)

    def _arrive_send(self, port, dest, packets, what):
        first, last = packets[0], packets[-1]
        rc = dest.type == QPType.RC
        if not dest.rq:
            answer, why, nak = self._no_receive_answer(port, dest, first, what)
            if rc and len(packets) > 1:
                # the responder starts the message over: its next packet is past the
                # expected PSN, and gets the one sequence NAK of that gap
                nak += self._answer_packets(port, dest, first, SEQ_NAK)
            return answer, why, nak, 1
        recv = dest.rq[0]
        self.last_recv_sges, self.last_recv_srq = recv.wr.sg_list, dest.srq is not None
        offset = 0
        for taken, pkt in enumerate(packets, 1):
            parts = self._piece_parts(dest, recv, offset, pkt)
            if any(self._fails(at, n) for at, n in parts):
                return (*self._store_refused(port, dest, packets, taken, parts), taken)
            offset, failed = self._send_piece(dest, recv, offset, pkt, what)
            if failed:
                status, why = failed
                if not rc:
                    return None, why, [], taken
                answer, why, nak = self._nak(port, dest, pkt, status, why)
                return answer, why, self._acks_asked(port, dest, packets[:taken - 1]) + nak, taken
        self._take_recv(dest)
        if last.ieth is not None:
            why = self._invalidate(last.ieth.rkey, dest.pd, dest.qpn)
            if why:     # the message is in place and acknowledged; its receive fails
                self._recv_error(dest, recv, WCStatus.REM_INV_REQ_ERR, _Named(what), why)
                answer, why, ack = self._ack(port, dest, last, 1)
                return answer, why, self._acks_asked(port, dest, packets[:-1]) + ack, len(packets)
        self._expect_recv_fields(dest, recv, _Named(what), WCOpcode.RECV, offset,
                                 **self._recv_source(dest, last))
        if not rc:
            return None, "", [], len(packets)
        asked = self._acks_asked(port, dest, packets[:-1])
        answer, why, ack = self._ack(port, dest, last, 1)
        return answer, why, asked + ack, len(packets)

    def _piece_parts(self, dest, recv, offset, pkt):
        """Where a SEND packet's piece of receive WQE `recv` from byte `offset` goes, as far as
        its checks let it go ([] when a check fails: _send_piece says which)."""
        size = len(pkt.payload) + (GRH_BYTES if dest.type == QPType.UD else 0)
        if not size or self._recv_unusable(dest, recv) or offset + size > recv.wr.length:
            return []
        parts, _ = self._recv_parts(recv, dest.recv_pd, offset, size)
        return parts or []

    def _store_refused(self, port, dest, packets, taken, parts):
        """Host memory refused the store of packet `taken` (from 1) of a request message:
        what it was to write is not decided, the message goes no further (a SEND's receive
        stays posted), and RC answers remote operational error at that packet (the ACKs the
        packets before it asked for go first); UC and UD drop it."""
        self.image.undefined += parts
        pkt, why = packets[taken - 1], "host memory refused the payload's store"
        if dest.type != QPType.RC:
            return None, why, []
        answer, why, nak = self._nak(port, dest, pkt, WCStatus.REM_OP_ERR, why)
        return answer, why, self._acks_asked(port, dest, packets[:taken - 1]) + nak

    def _send_piece(self, dest, recv, offset, pkt, what):
        """A SEND packet's piece of receive WQE `recv` (the head of dest's queue), from byte
        `offset`: checked as it arrives (the pieces before a failing one are written already)
        and scattered. (offset after it, None) or, when it fails, the receive completed with
        the error and (offset, (the sender's status, why))."""
        size = len(pkt.payload) + (GRH_BYTES if dest.type == QPType.UD else 0)
        local = None
        unusable = self._recv_unusable(dest, recv)
        if unusable:
            status, local, why = WCStatus.REM_OP_ERR, WCStatus.LOC_QP_OP_ERR, unusable
        elif offset + size > recv.wr.length:
            status, local = WCStatus.REM_INV_REQ_ERR, WCStatus.LOC_LEN_ERR
            why = f"{recv.what} holds {recv.wr.length} bytes, the message needs more"
        elif size:
            parts, why = self._recv_parts(recv, dest.recv_pd, offset, size)
            if parts is None:
                status, local = WCStatus.REM_OP_ERR, WCStatus.LOC_PROT_ERR
        if local is not None:
            self._take_recv(dest)
            self._recv_error(dest, recv, local, _Named(what), why)
            return offset, (status, why)
        if size:
            grh = self._grh_of(pkt) if dest.type == QPType.UD else b""
            self._scatter(parts, grh + pkt.payload)
        return offset + size, None

    @staticmethod
    def _grh_of(pkt):
        """The UD receive buffer's GRH area for a packet that arrived."""
        return network_header(ud_paylen(len(pkt.payload), pkt.immdt is not None), pkt.grh,
                              pkt.roce)

    @staticmethod
    def _recv_source(dest, last):
        """Receive completion fields a message's last packet gives (a RoCE v2 frame has no
        LRH: _expect_recv_fields knows what Ethernet completions say)."""
        lrh = last.lrh or LRH(dlid=0, slid=0)
        return dict(src_qp=last.deth.src_qp if last.deth is not None else dest.attr.dest_qp_num,
                    slid=lrh.slid, sl=lrh.sl, dlid=lrh.dlid, grh=last.grh is not None,
                    imm=last.immdt.data if last.immdt is not None else None,
                    inv=last.ieth.rkey if last.ieth is not None else None)


@dataclass(frozen=True)
class _Named:
    """Something with a `what`, for the messages of another device's model."""
    what: str


def pktlen(packet):
    """What a packet adds to PortXmitData / PortRcvData: InfiniBand: its LRH PktLen, 4-byte
    words from LRH through ICRC; Ethernet: its frame's 4-byte words, destination MAC through
    FCS (padded to 64 bytes), rounded up."""
    headers = sum(getattr(packet, name).SIZE for name in packet.op.headers)
    transport = BTH.SIZE + headers + len(packet.payload) + (-len(packet.payload) & 3) + 4
    if packet.roce is not None:
        r = packet.roce
        frame = ((18 if r.vlan is not None else 14) + (20 if r.ipv4 else 40) + 8 + transport
                 + 4)
        return -(-max(frame, 64) // 4)
    return (LRH.SIZE + (GRH.SIZE if packet.grh is not None else 0) + transport) // 4
