"""Reference model of rdma_dev, written from docs/semantics.md (the contract), not from the RTL.

The model follows the program through the driver's observer calls and predicts what the device
must do: every completion it writes (per CQ, QP and direction, in order), the bytes it writes
to host memory, QP state changes and the LB_MSGS / LB_BYTES / CQ_OVERFLOWS / REG_ERRORS moves.

How it keeps time: a send WR runs the moment it is posted, against the receives posted so far
(tests post receives before the sends that need them). An RC message that finds no receive
stays at the head of its send queue when rnr_retry is 7 (the device retries forever) and runs
when a later event (a receive posted, a QP modified) lets it; with a smaller rnr_retry it fails
with RNR_RETRY_EXC_ERR straight away, since a receive posted later would come too late for the
device's few retries. Messages run in posting order, so a test must not make a result depend on
the order the device serves different QPs in (one QP reading bytes that another QP's pending WR
writes, two senders waiting for the same receive). CQ overflow is predicted from the
completions polled so far, so a test of it must not poll while the device is still writing.
"""

from __future__ import annotations

import struct
from collections import defaultdict, deque
from dataclasses import dataclass, field

from verbs import (
    COUNTERS, GRH_BYTES, PORT_COUNTERS_STRIDE, PORT_STRIDE, QKEY_FROM_QP, WQE_BYTES, Access,
    AHAttr, Counters, Observer, PortCounter, PortReg, QPAttr, QPState, QPType, RecvWR, Reg,
    SendFlags, SendWR, WCFlags, WCOpcode, WCStatus, WROpcode,
)

RNR_RETRY_FOREVER = 7

_ALLOWED_OPCODES = {
    QPType.RC: set(WROpcode),
    QPType.UC: set(WROpcode) - {WROpcode.RDMA_READ},
    QPType.UD: {WROpcode.SEND, WROpcode.SEND_WITH_IMM},
}
_WC_OPCODE = {
    WROpcode.SEND: WCOpcode.SEND,
    WROpcode.SEND_WITH_IMM: WCOpcode.SEND,
    WROpcode.RDMA_WRITE: WCOpcode.RDMA_WRITE,
    WROpcode.RDMA_WRITE_WITH_IMM: WCOpcode.RDMA_WRITE,
    WROpcode.RDMA_READ: WCOpcode.RDMA_READ,
}
_WITH_IMM = {WROpcode.SEND_WITH_IMM, WROpcode.RDMA_WRITE_WITH_IMM}
_PORT_REGS = {PortReg.LID, PortReg.LMC, PortReg.MTU} | {PortReg.GID0 + 4 * i for i in range(4)}
_DOORBELL_SPAN = 0x1000  # the SQ/RQ doorbells fill 0x1000-0x1FFF, the CQ ones 0x2000-0x2FFF


def ud_grh(route, sgid, length, with_imm):
    """The 40-byte GRH a UD packet of `length` payload bytes would have carried: IPVer 6,
    traffic class, flow label, PayLen (BTH + DETH + ImmDt + payload + pad + ICRC), NxtHdr
    0x1B (BTH), hop limit, SGID, DGID."""
    pay_len = 12 + 8 + (4 if with_imm else 0) + length + (-length % 4) + 4
    return struct.pack(">IHBB16s16s", 6 << 28 | route.traffic_class << 20 | route.flow_label,
                       pay_len, 0x1B, route.hop_limit, sgid, route.dgid)


def error_fields(wr_id, status, opcode, qp_num):
    """An error CQE: wr_id, status, qp_num and opcode (None: the spec names no opcode for an
    unknown WR opcode, so it is not checked); every other field zero."""
    fields = dict(wr_id=wr_id, status=status, qp_num=qp_num, byte_len=0, imm_data=0, src_qp=0,
                  wc_flags=WCFlags(0), sl=0, slid=0, dlid_path_bits=0)
    if opcode is not None:
        fields["opcode"] = opcode
    return fields


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


@dataclass
class _RecvWQE:
    wr: RecvWR
    what: str


@dataclass
class ModelQP:
    """The model's view of one QP: state, queued WQEs and ring indices (free running)."""
    qpn: int
    type: QPType
    pd: int
    send_cq: int
    recv_cq: int
    state: QPState = QPState.RESET
    attr: QPAttr = QPAttr()
    sq: deque = field(default_factory=deque)  # posted, not yet completed (head: RNR waiting)
    rq: deque = field(default_factory=deque)  # posted, not yet consumed
    sq_posted: int = 0
    sq_done: int = 0
    rq_posted: int = 0
    rq_done: int = 0

    @property
    def port(self):
        return self.attr.port_num


class Model(Observer):
    """Attach it to `dev.observers` before `dev.open()` (Scoreboard does); it reads host
    memory only to learn a range's content when it starts tracking it."""

    def __init__(self):
        self.expected = defaultdict(deque)  # (cqn, qpn, recv) -> ExpectedWC not yet seen
        self.image = MemoryImage()
        self.counters = Counters()  # predicted moves since the device was opened
        self.port_counters = {}     # port -> {PortCounter: value}; loopback moves none of them
        self.ports, self.mrs, self.ahs, self.cqs, self.qps = {}, {}, {}, {}, {}
        self._read_host = None

    # --- observer: configuration ----------------------------------------------------------

    def on_open(self, dev):
        self.num_ports, self.num_qp, self.num_cq = dev.num_ports, dev.num_qp, dev.num_cq
        self.ports = dict(dev.ports)
        # opened right after reset: every port counter starts at zero
        self.port_counters = {port: dict.fromkeys(COUNTERS, 0) for port in self.ports}
        self._read_host = dev.read

    def on_write_reg(self, offset, value):
        if self._addresses_nothing(offset):
            self.counters.reg_errors += 1
        elif Reg.PORT_COUNTERS <= offset < Reg.PORT_COUNTERS + 0x800:
            self._write_port_counter(offset, value)

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

    def _addresses_nothing(self, offset):
        """A write that lands on no writable register (docs/host-interface.md)."""
        if Reg.PORT_BASE <= offset < Reg.CMD_DATA:
            port, reg = divmod(offset - Reg.PORT_BASE, PORT_STRIDE)
            return reg not in _PORT_REGS or port + 1 > self.num_ports
        if Reg.SQ_DB <= offset < Reg.SQ_DB + _DOORBELL_SPAN:
            return (offset - Reg.SQ_DB) // 8 >= self.num_qp
        if Reg.CQ_CI_DB <= offset < Reg.CQ_CI_DB + _DOORBELL_SPAN:
            return (offset - Reg.CQ_CI_DB) // 8 >= self.num_cq
        if Reg.PORT_COUNTERS <= offset < Reg.PORT_COUNTERS + 0x800:
            port, word = self._port_counter_word(offset)
            loadable = word == PortCounter.CLEAR or any(
                word in (c, c + 1) if c.bits == 64 else word == c for c in COUNTERS)
            return port > self.num_ports or not loadable
        return not (Reg.CMD_DATA <= offset <= Reg.CMD or offset == Reg.EVENT)

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

    def on_create_ah(self, ah):
        self.ahs[ah.ahn] = _AH(ah.pd.pdn, ah.port, ah.attr)

    def on_destroy_ah(self, ah):
        del self.ahs[ah.ahn]

    def on_create_cq(self, cq):
        self.cqs[cq.cqn] = _CQ(cq.depth)

    def on_destroy_cq(self, cq):
        del self.cqs[cq.cqn]

    def on_create_qp(self, qp):
        self.qps[qp.qp_num] = ModelQP(qp.qp_num, qp.qp_type, qp.pd.pdn, qp.send_cq.cqn,
                                      qp.recv_cq.cqn)
        # The device only reads the rings: tracking them catches a stray write into one.
        for wq, name in ((qp.sq, "send"), (qp.rq, "receive")):
            self.image.track(wq.base, WQE_BYTES * wq.size, f"QP {qp.qp_num} {name} ring",
                             self._read_host)

    def on_modify_qp(self, qp, state, attr):
        q = self.qps[qp.qp_num]
        q.attr = attr
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
        while q.rq:
            r = self._take_recv(q)
            self._expect(q.recv_cq, q.qpn, True,
                         error_fields(r.wr.wr_id, WCStatus.WR_FLUSH_ERR, WCOpcode.RECV, q.qpn),
                         f"{r.what}: flushed, QP in ERR")

    def _take_recv(self, q):
        q.rq_done += 1
        return q.rq.popleft()

    def _complete_send(self, q, w, status, why):
        q.sq.popleft()
        q.sq_done += 1
        wr = w.wr
        opcode = _WC_OPCODE.get(wr.opcode)
        what = f"{w.what}: {why}" if why else w.what
        if status != WCStatus.SUCCESS:
            self._expect(q.send_cq, q.qpn, False,
                         error_fields(wr.wr_id, status, opcode, q.qpn), what)
            self._set_err(q)
        elif wr.flags & SendFlags.SIGNALED:
            fields = dict(wr_id=wr.wr_id, status=status, opcode=opcode, qp_num=q.qpn)
            if opcode in (WCOpcode.SEND, WCOpcode.RDMA_READ):
                fields["byte_len"] = wr.sge.length
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
            status, why = self._requester_check(q, w.wr)
            if status == WCStatus.SUCCESS and not self._loopback(q, self._av(q, w.wr)):
                status, why = WCStatus.GENERAL_ERR, "not loopback, and no port datapath"
            if status != WCStatus.SUCCESS:
                self._complete_send(q, w, status, why)
                return True
            self.counters.lb_msgs += 1
            self.counters.lb_bytes += w.wr.sge.length
            w.started = True
        status, why = self._deliver(q, w)
        if status is None:
            return False
        self._complete_send(q, w, status, why)
        return True

    def _lookup_mr(self, key, pd, addr, length, need):
        """The MR `key` names if it may serve [addr, addr + length) with `need`, else None and
        the reason."""
        mr = self.mrs.get(key >> 8)
        if mr is None or mr.key != key:
            return None, f"key {key:#x} names no registered MR"
        if mr.pd != pd:
            return None, f"key {key:#x} is in PD {mr.pd}, not {pd}"
        if not mr.covers(addr, length):
            return None, (f"key {key:#x} covers [{mr.iova:#x}, +{mr.length:#x}), "
                          f"not [{addr:#x}, +{length:#x})")
        missing = Access(need & ~mr.access)
        if missing:
            return None, f"key {key:#x} lacks {missing.name}"
        return mr, ""

    def _requester_check(self, q, wr):
        if wr.opcode not in _ALLOWED_OPCODES[q.type]:
            return WCStatus.LOC_QP_OP_ERR, f"opcode not allowed on {q.type.name}"
        length = wr.sge.length
        if q.type == QPType.UD:
            ah = self.ahs.get(wr.ahn)
            if ah is None or ah.pd != q.pd or ah.port != q.port:
                return WCStatus.LOC_QP_OP_ERR, f"AH {wr.ahn} missing, or of another PD or port"
            mtu = self.ports[q.port].mtu.size
            if length > mtu:
                return WCStatus.LOC_LEN_ERR, f"{length} bytes exceed the port MTU {mtu}"
        if length:
            need = Access.LOCAL_WRITE if wr.opcode == WROpcode.RDMA_READ else Access(0)
            mr, why = self._lookup_mr(wr.sge.lkey, q.pd, wr.sge.addr, length, need)
            if mr is None:
                return WCStatus.LOC_PROT_ERR, f"lkey: {why}"
        return WCStatus.SUCCESS, ""

    def _av(self, q, wr):
        return self.ahs[wr.ahn].attr if q.type == QPType.UD else q.attr.ah_attr

    def _loopback(self, q, av):
        port = self.ports[q.port]
        mask = ~((1 << port.lmc) - 1) & 0xFFFF
        return ((av.dlid & mask) == (port.lid & mask)
                and (av.grh is None or av.grh.dgid == port.gid))

    def _destination(self, q, wr):
        qpn = wr.remote_qpn if q.type == QPType.UD else q.attr.dest_qp_num
        dest = self.qps.get(qpn)
        if dest is None:
            return None, f"QP {qpn} does not exist"
        if dest.port != q.port or dest.type != q.type:
            return None, f"QP {qpn} is {dest.type.name} on port {dest.port}"
        if dest.state not in (QPState.RTR, QPState.RTS):
            return None, f"QP {qpn} is in {dest.state.name}"
        if q.type == QPType.UD:
            qkey = q.attr.qkey if wr.remote_qkey & QKEY_FROM_QP else wr.remote_qkey
            if qkey != dest.attr.qkey:
                return None, f"Q_Key {qkey:#x}, QP {qpn} has {dest.attr.qkey:#x}"
        return dest, ""

    def _deliver(self, q, w):
        """The responder's side of a message that passed the requester: the sender's status
        (None: receiver not ready, retry later) and why."""
        dest, why = self._destination(q, w.wr)
        if dest is None:
            if q.type == QPType.RC:
                return WCStatus.RETRY_EXC_ERR, why
            return WCStatus.SUCCESS, f"dropped: {why}"
        if w.wr.opcode in (WROpcode.SEND, WROpcode.SEND_WITH_IMM):
            return self._deliver_send(q, w, dest)
        return self._deliver_rdma(q, w, dest)

    def _no_receive(self, q, dest):
        """The sender's status for a message that needs a receive `dest` does not have."""
        why = f"QP {dest.qpn} has no receive posted"
        if q.type != QPType.RC:
            return WCStatus.SUCCESS, f"dropped: {why}"
        if q.attr.rnr_retry == RNR_RETRY_FOREVER:
            return None, why
        return WCStatus.RNR_RETRY_EXC_ERR, why

    def _local_bytes(self, wr):
        """The bytes the sender's SGE names (validated by the requester checks)."""
        if not wr.sge.length:
            return b""
        mr = self.mrs[wr.sge.lkey >> 8]
        return self.image.read(mr.host_addr(wr.sge.addr), wr.sge.length)

    def _deliver_send(self, q, w, dest):
        wr = w.wr
        if not dest.rq:
            return self._no_receive(q, dest)
        recv = self._take_recv(dest)
        rc = q.type == QPType.RC
        total = wr.sge.length + (GRH_BYTES if q.type == QPType.UD else 0)
        if total > recv.wr.sge.length:
            why = f"{recv.what} holds {recv.wr.sge.length} bytes, the message needs {total}"
            self._recv_error(dest, recv, WCStatus.LOC_LEN_ERR, w, why)
            return (WCStatus.REM_INV_REQ_ERR if rc else WCStatus.SUCCESS), why
        if total:
            rmr, why = self._lookup_mr(recv.wr.sge.lkey, dest.pd, recv.wr.sge.addr, total,
                                       Access.LOCAL_WRITE)
            if rmr is None:
                why = f"{recv.what} lkey: {why}"
                self._recv_error(dest, recv, WCStatus.LOC_PROT_ERR, w, why)
                return (WCStatus.REM_OP_ERR if rc else WCStatus.SUCCESS), why
            at = rmr.host_addr(recv.wr.sge.addr)
            if q.type == QPType.UD:
                self.image.write(at, self._grh_area(q, wr))
                at += GRH_BYTES
            self.image.write(at, self._local_bytes(wr))
        self._expect_recv(q, w, dest, recv, WCOpcode.RECV, total)
        return WCStatus.SUCCESS, ""

    def _deliver_rdma(self, q, w, dest):
        """RDMA WRITE (WITH_IMM) and READ. The rkey is checked before a WRITE_WITH_IMM looks
        for its receive: a failed check consumes none, and fails even with none posted."""
        wr = w.wr
        length = wr.sge.length
        read = wr.opcode == WROpcode.RDMA_READ
        with_imm = wr.opcode == WROpcode.RDMA_WRITE_WITH_IMM
        rmr = None
        if length:
            need = Access.REMOTE_READ if read else Access.REMOTE_WRITE
            rmr, why = self._lookup_mr(wr.rkey, dest.pd, wr.remote_addr, length, need)
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
        if rmr is not None:
            remote = rmr.host_addr(wr.remote_addr)
            if read:
                local = self.mrs[wr.sge.lkey >> 8].host_addr(wr.sge.addr)
                self.image.write(local, self.image.read(remote, length))
            else:
                self.image.write(remote, self._local_bytes(wr))
        if with_imm:
            self._expect_recv(q, w, dest, self._take_recv(dest), WCOpcode.RECV_RDMA_WITH_IMM,
                              length)
        return WCStatus.SUCCESS, ""

    def _grh_area(self, q, wr):
        route = self.ahs[wr.ahn].attr.grh
        if route is None:
            return bytes(GRH_BYTES)
        return ud_grh(route, self.ports[q.port].gid, wr.sge.length,
                      wr.opcode == WROpcode.SEND_WITH_IMM)

    def _expect_recv(self, q, w, dest, recv, opcode, byte_len):
        wr = w.wr
        av = self._av(q, wr)
        # Loopback: the sending and the receiving port are the same port.
        port = self.ports[q.port]
        path_mask = (1 << port.lmc) - 1
        imm = wr.opcode in _WITH_IMM
        flags = (WCFlags.GRH if av.grh else WCFlags(0)) | (WCFlags.WITH_IMM if imm else WCFlags(0))
        fields = dict(wr_id=recv.wr.wr_id, status=WCStatus.SUCCESS, opcode=opcode,
                      byte_len=byte_len, qp_num=dest.qpn, src_qp=q.qpn, wc_flags=flags,
                      sl=av.sl, slid=(port.lid & ~path_mask) | (av.src_path_bits & path_mask),
                      dlid_path_bits=av.dlid & path_mask)
        if imm:
            fields["imm_data"] = wr.imm
        self._expect(dest.recv_cq, dest.qpn, True, fields, f"{recv.what}, for {w.what}")

    def _recv_error(self, dest, recv, status, w, why):
        self._expect(dest.recv_cq, dest.qpn, True,
                     error_fields(recv.wr.wr_id, status, WCOpcode.RECV, dest.qpn),
                     f"{recv.what}, for {w.what}: {why}")
        if dest.type == QPType.RC:
            self._set_err(dest)
