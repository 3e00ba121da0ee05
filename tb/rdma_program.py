"""What every rdma_dev test program shares: the constants of its addressing, work-request
and completion helpers, registered regions with guard margins, and `Rdma`, one test's RDMA
program (device, protection domain, QP set-up, counters). Test modules import from here."""

import random

from cocotb.triggers import ClockCycles

from .ib_packet import (ETH_HEADER_BYTES, GRH, IPV4_HEADER_BYTES, IPV6_HEADER_BYTES, LRH,
                        VLAN_TAG_BYTES, RoCE, ipv4_gid, is_ipv4_mapped)
from .link_faults import LinkFaults
from .model import network_header, roce_sport, ud_paylen
from .rdma_tb import LINK, LINK_NAMES, open_device, open_fabric
from .seed import SEED
from .verbs import (
    GRH_BYTES, Access, GlobalRoute, PortCounter, QPState, QPType, RecvWR, SendFlags, SendWR,
    WCFlags, WCOpcode, WCStatus, WROpcode, send_with_inv,
)


ALL_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC
QKEY = 0x1234ABCD
MARGIN = 64          # bytes of an allocation just outside its MR, on each side
DLID_PATH_BITS = 2   # port 1 owns LIDs 0x10-0x13 (LMC 2): QPs address it as 0x12 ...
SRC_PATH_BITS = 3    # ... and send from 0x13
SL = 5

SIGNALED = SendFlags.SIGNALED
UNSIGNALED = SendFlags(0)
NEEDS_RECEIVE = {WROpcode.SEND, WROpcode.SEND_WITH_IMM, WROpcode.RDMA_WRITE_WITH_IMM}
WITH_IMM = {WROpcode.SEND_WITH_IMM, WROpcode.RDMA_WRITE_WITH_IMM}
SEND_WC_OPCODE = {
    WROpcode.RDMA_WRITE: WCOpcode.RDMA_WRITE,
    WROpcode.RDMA_WRITE_WITH_IMM: WCOpcode.RDMA_WRITE,
    WROpcode.SEND: WCOpcode.SEND,
    WROpcode.SEND_WITH_IMM: WCOpcode.SEND,
    WROpcode.RDMA_READ: WCOpcode.RDMA_READ,
    WROpcode.ATOMIC_CMP_AND_SWP: WCOpcode.COMP_SWAP,
    WROpcode.ATOMIC_FETCH_AND_ADD: WCOpcode.FETCH_ADD,
    WROpcode.LOCAL_INV: WCOpcode.LOCAL_INV,
    WROpcode.BIND_MW: WCOpcode.BIND_MW,
    WROpcode.SEND_WITH_INV: WCOpcode.SEND,
}
# the opcodes that move a buffer of any length, per transport (the atomics, RC only, work on
# 8 bytes: verbs.ATOMIC_OPS; SEND_WITH_INV needs a memory window to invalidate, and BIND_MW
# and LOCAL_INV move nothing)
_MOVING = [WROpcode.RDMA_WRITE, WROpcode.RDMA_WRITE_WITH_IMM, WROpcode.SEND,
           WROpcode.SEND_WITH_IMM]
DATA_OPCODES = {
    QPType.RC: _MOVING + [WROpcode.RDMA_READ],
    QPType.UC: _MOVING,
    QPType.UD: [WROpcode.SEND, WROpcode.SEND_WITH_IMM],
}



# ---------------------------------------------------------------------------------------------
# Shared set-up

def work_request(opcode, sge, remote=None, wr_id=0, imm=0, flags=SIGNALED):
    """A send WR of any opcode; `remote` is a RemoteAddr for RDMA WRITE / READ."""
    return SendWR(opcode, sge, wr_id, flags, imm,
                  remote.addr if remote else 0, remote.rkey if remote else 0)


def assert_wc(wc, **want):
    """The completion has every field in `want`."""
    wrong = [f"{name}: expected {value!r}, got {getattr(wc, name)!r}"
             for name, value in want.items() if getattr(wc, name) != value]
    assert not wrong, "completion " + ", ".join(wrong) + f"\n  {wc}"


async def bind_window(rdma, qp, mw, sge, access, wr_id=0xB1D):
    """Post a BIND_MW of window `mw` over `sge` on `qp` and take its completion; once it
    succeeded the window answers to its new key."""
    wr = mw.bind(sge, access, wr_id=wr_id)
    await qp.post_send(wr)
    [wc] = await rdma.poll_until(qp.send_cq, 1)
    if wc.status == WCStatus.SUCCESS:
        mw.bound(wr)
    return wc


async def assert_invalidation_refused(rdma, sender, receiver, local, region,
                                      wr_id=0xA5):
    """A SEND with invalidate from `sender` naming `region`'s key (no window): delivered and
    completed SUCCESS at the sender, while the receive completes REM_INV_REQ_ERR and the
    receiver goes to ERR (docs/semantics.md, responder checks)."""
    await receiver.post_recv(RecvWR(region.sge(0, 256), wr_id=wr_id | 1 << 8))
    await sender.post_send(send_with_inv(local.sge(0, 64), region.mr.rkey, wr_id=wr_id))
    [wc] = await rdma.poll_until(receiver.recv_cq, 1)
    assert_wc(wc, wr_id=wr_id | 1 << 8, status=WCStatus.REM_INV_REQ_ERR)
    [wc] = await rdma.poll_until(sender.send_cq, 1)
    assert_wc(wc, wr_id=wr_id, status=WCStatus.SUCCESS, opcode=WCOpcode.SEND)
    assert (await receiver.query()).state == QPState.ERR


def long_read_timeout(data_width):
    """The ACK timeout for a long READ's QP: one timeout (2048 cycles at 1) is far shorter
    than the READ, but the first 4 KiB response must come back within it. At 64 bits that
    response is 512 beats on the link, which the requester's depacketizer takes whole before
    passing it on, and it completes more than 2048 cycles after the request left: timeout 1
    would expire first (a retransmission the protocol allows but the model does not predict)."""
    return 2 if data_width < 128 else 1


async def long_read(local_rdma, remote_rdma, qp, length):
    """An RC RDMA READ on `qp` (of `local_rdma`'s device) of `length` bytes from an odd offset
    of a region on `remote_rdma`'s device to an odd offset of one on its own: it must complete
    SUCCESS with every byte in place."""
    local, remote = await local_rdma.region(length + 64), await remote_rdma.region(length + 64)
    await qp.post_send(work_request(WROpcode.RDMA_READ, local.sge(13, length),
                                    remote.remote(51), wr_id=0xAB))
    [wc] = await local_rdma.poll_until(qp.send_cq, 1, cycles=2_000_000)
    assert_wc(wc, wr_id=0xAB, status=WCStatus.SUCCESS, opcode=WCOpcode.RDMA_READ,
              byte_len=length)
    assert local.read(13, length) == remote.read(51, length)


class Region:
    """An MR in the middle of a larger allocation: the MARGIN bytes on each side belong to the
    program but not to the MR, and no operation on the MR may change them."""

    def __init__(self, dev, mr, before, after):
        self.dev = dev
        self.mr = mr
        self.before = before
        self.after = after

    @property
    def lkey(self):
        return self.mr.lkey

    @property
    def length(self):
        return self.mr.length

    def sge(self, offset=0, length=None):
        return self.mr.sge(offset, length)

    def remote(self, offset=0):
        return self.mr.remote(offset)

    def read(self, offset=0, length=None):
        return self.mr.read(offset, length)

    def write(self, offset, data):
        self.mr.write(offset, data)

    async def reregister(self):
        """Deregister and register the same memory again: same MR index, new key variant, so
        the old key is stale."""
        old = self.mr
        await old.dereg()
        self.mr = await old.pd.reg_mr(old.host_addr, old.length, old.access, iova=old.addr)
        assert self.mr.index == old.index and self.mr.lkey != old.lkey

    def assert_outside_untouched(self):
        host = self.mr.host_addr
        assert self.dev.read(host - MARGIN, MARGIN) == self.before, \
            f"the {MARGIN} bytes before MR {self.lkey:#x} (host {host:#x}) changed"
        assert self.dev.read(host + self.length, MARGIN) == self.after, \
            f"the {MARGIN} bytes after MR {self.lkey:#x} (host {host:#x} +{self.length:#x}) changed"


class Rdma:
    """One test's RDMA program: the device, a protection domain, and the set-up many tests
    share. Every test ends with `await rdma.finish()`."""

    def __init__(self, dut, tb, dev, sb):
        self.dut = dut
        self.tb = tb
        self.dev = dev
        self.sb = sb
        self.pd = dev.alloc_pd()
        self.rng = random.Random(SEED)

    @classmethod
    async def open(cls, dut, cabled=False, timing=None):
        """`cabled`: the harness has port 1 and port 2 cabled to each other (CABLE = 1);
        `timing`: the host memory's (rdma_tb.MEM_TIMINGS; $MEM_TIMING or "ideal" by default)."""
        dut._log.info("SEED=%d (replay with SEED=%d), ports on %s (RDMA_LINK)", SEED, SEED,
                      LINK_NAMES[LINK])
        tb, dev, sb = await open_device(dut, seed=SEED, cabled=cabled, timing=timing)
        return cls(dut, tb, dev, sb)

    @classmethod
    def of(cls, dut, tb, dev, sb):
        """The program of an already opened device (e.g. one of `open_fabric`'s triples)."""
        return cls(dut, tb, dev, sb)

    @classmethod
    async def open_fabric(cls, dut):
        """The programs of tb_fabric's two devices, cabled to each other (rdma_tb.open_fabric)."""
        dut._log.info("SEED=%d (replay with SEED=%d)", SEED, SEED)
        return tuple(cls.of(dut, *triple) for triple in await open_fabric(dut, seed=SEED))

    async def finish(self, links_idle=True):
        """The scoreboard's verdict on everything (with the packets every link carried), and
        (`links_idle`, for loopback-only programs) no beat on any TX link."""
        await self.sb.check()
        if links_idle:
            self.tb.assert_links_idle()

    def own_lid(self, port, path_bits=DLID_PATH_BITS):
        """A LID of `port` itself (a loopback destination), with `path_bits` under its LMC."""
        attr = self.dev.ports[port]
        return attr.lid | (path_bits & ((1 << attr.lmc) - 1))

    def ethernet(self, port):
        return self.dev.ports[port].link_layer == "eth"

    def slid(self, port):
        """The SLID a receive completion reports for a sender on `port` using SRC_PATH_BITS
        (RoCE v2 has no LIDs: 0)."""
        return 0 if self.ethernet(port) else self.own_lid(port, SRC_PATH_BITS)

    def dlid_path_bits(self, port):
        return 0 if self.ethernet(port) else DLID_PATH_BITS & ((1 << self.dev.ports[port].lmc) - 1)

    def grh_flag(self, port):
        """The GRH flag of a receive completion on `port` for a sender without a GRH: set on
        Ethernet, where every packet carries its IP header as one."""
        return WCFlags.GRH if self.ethernet(port) else WCFlags(0)

    def sl(self, port, sl=SL):
        """The SL a receive completion on `port` reports for a sender using `sl` (RoCE v2
        carries none: 0)."""
        return 0 if self.ethernet(port) else sl

    def route(self, port, dlid, **grh):
        """On an Ethernet `port`, the GRH that stands for an address named by its LID: the
        GID of the port (of this device, or of a device cabled to it) owning `dlid`; None on
        InfiniBand, where the LID is the address."""
        if not self.ethernet(port):
            return None
        for attr in self.peers_ports():
            mask = ~((1 << attr.lmc) - 1) & 0xFFFF
            if (attr.lid ^ dlid) & mask == 0:
                return GlobalRoute(attr.gid, **grh)
        raise ValueError(f"no port has LID {dlid:#x}")

    def peers_ports(self):
        """The ports this program may address: its device's, then those of every device the
        scoreboard is cabled to."""
        ports = list(self.dev.ports.values())
        for far, _ in self.sb.model.links.values():
            ports += far.ports.values()
        return ports

    def payload(self, length):
        return self.rng.randbytes(length)

    async def region(self, size, access=ALL_ACCESS, pd=None, iova=None, fill=True):
        """A registered region of `size` bytes filled with random bytes (`fill`), with MARGIN
        unregistered random bytes on each side."""
        host = self.dev.alloc(size + 2 * MARGIN, label=f"region of {size} bytes")
        before, after = self.payload(MARGIN), self.payload(MARGIN)
        self.dev.write(host, before)
        self.dev.write(host + MARGIN + size, after)
        mr = await (pd or self.pd).reg_mr(host + MARGIN, size, access, iova=iova)
        if fill and size:
            mr.write(0, self.payload(size))
        return Region(self.dev, mr, before, after)

    async def qp(self, qp_type, send_cq=None, recv_cq=None, depth=16, pd=None, sges=1):
        """A QP in RESET, with its own CQ unless given; its WQEs hold `sges` SGEs."""
        cq = send_cq or recv_cq or await self.dev.create_cq(2 * depth)
        return await (pd or self.pd).create_qp(qp_type, send_cq or cq, recv_cq or cq, depth, depth,
                                               sges, sges)

    async def connect(self, qp, dest_qp_num, port=1, dlid=None, **attrs):
        """Take an RC/UC QP to RTS aimed at `dest_qp_num` behind `dlid` (default: the port's
        own LID with DLID_PATH_BITS, i.e. loopback), sending with SRC_PATH_BITS and SL."""
        dlid = self.own_lid(port) if dlid is None else dlid
        await qp.to_rts(dest_qp_num, dlid, port, **self._av_attrs(port, dlid, attrs))

    async def connected_pair(self, qp_type, port=1, depth=16, cqs=None, sges=1, **attrs):
        """Two RC or UC QPs on `port` in RTS, aimed at each other through the port's own
        address. Each has its own CQ for both queues, unless `cqs` gives (a's CQ, b's CQ); their
        WQEs hold `sges` SGEs."""
        cq_a, cq_b = cqs or (None, None)
        a = await self.qp(qp_type, cq_a, cq_a, depth, sges=sges)
        b = await self.qp(qp_type, cq_b, cq_b, depth, sges=sges)
        await self.connect(a, b.qp_num, port, **attrs)
        await self.connect(b, a.qp_num, port, **attrs)
        return a, b

    async def ud_qp(self, port=1, qkey=QKEY, depth=16, cq=None, sges=1):
        """A UD QP in RTS on `port` (with its own CQ unless given; WQEs of `sges` SGEs)."""
        qp = await self.qp(QPType.UD, cq, cq, depth, sges=sges)
        await qp.to_rts(port=port, qkey=qkey)
        return qp

    def _av_attrs(self, port, dlid, attrs):
        """`attrs` of an address vector from `port` to `dlid`, with SRC_PATH_BITS, SL and the
        route (route()) where they do not say otherwise."""
        attrs = dict(src_path_bits=SRC_PATH_BITS, sl=SL) | attrs
        if "grh" not in attrs:
            attrs["grh"] = self.route(port, dlid)
        return attrs

    async def ah(self, port=1, dlid=None, **attrs):
        """A UD address handle on `port` for the port that owns `dlid` (default: `port`'s own
        LID with DLID_PATH_BITS, i.e. loopback), sending with SRC_PATH_BITS and SL: a LID route
        on InfiniBand; on Ethernet the GRH to that port's GID, whose MAC the driver resolves
        from it (unless `attrs` give a `grh` of their own)."""
        dlid = self.own_lid(port) if dlid is None else dlid
        return await self.pd.create_ah(port, dlid, **self._av_attrs(port, dlid, attrs))

    async def loopback_ah(self, port=1, global_route=False, **attrs):
        """An AH for `port`'s own address (ah()), with `global_route` a GRH aimed at the
        port's own GID with a flow label, hop limit and traffic class."""
        if global_route:
            attrs = dict(grh=GlobalRoute(self.dev.ports[port].gid, flow_label=0x9ABCD,
                                         hop_limit=17, traffic_class=0x5A)) | attrs
        return await self.ah(port, **attrs)

    async def counter_moves(self):
        """How far LB_MSGS, LB_BYTES, CQ_OVERFLOWS and REG_ERRORS moved since the device was
        opened."""
        return await self.dev.read_counters() - self.dev.counters_at_open

    async def assert_loopback_moves(self, msgs, nbytes):
        moved = await self.counter_moves()
        assert (moved.lb_msgs, moved.lb_bytes) == (msgs, nbytes), \
            f"LB_MSGS/LB_BYTES moved by {moved.lb_msgs}/{moved.lb_bytes}, expected {msgs}/{nbytes}"

    async def cycles(self, n):
        await ClockCycles(self.dut.clk, n)

    def host_memory_fails(self, addr=0, length=0):
        """Host memory answers SLVERR to [addr, addr + length) from now on (length 0: heals),
        and the model expects what that does (Model.host_fails)."""
        self.tb.mem.fail(addr, length)
        self.sb.model.host_fails(addr, length)

    async def assert_state(self, qp, state):
        got = (await qp.query()).state
        assert got == state, f"QP {qp.qp_num} is in {got!r}, expected {state.name}"

    async def poll_until(self, cq, n, cycles=50000):
        """Exactly `n` completions from `cq`, polled without ever arming it."""
        wcs = []
        for _ in range(cycles // 100):
            wcs += await cq.poll(n - len(wcs))
            if len(wcs) == n:
                return wcs
            await self.cycles(100)
        raise TimeoutError(f"CQ {cq.cqn}: {len(wcs)} of {n} completions after {cycles} cycles")

    async def wait_sent(self, qp, n, cycles=50000):
        """Until the device has finished `n` send WQEs of `qp` (its SQ consumer index), without
        polling any CQ."""
        for _ in range(cycles // 100):
            if (await qp.query()).sq_ci == n:
                return
            await self.cycles(100)
        raise TimeoutError(f"QP {qp.qp_num}: fewer than {n} send WQEs done after {cycles} cycles")

    async def timed_send(self, qp, wr):
        """Post `wr` alone on `qp` and return its send completion and the cycles from the SQ
        doorbell write to the CQE written, as the harness counts them."""
        await qp.send_cq.req_notify()
        await qp.post_send(wr)
        while not await self.dev.wait_event():
            pass    # the TB's wait gives up after a while; a long message takes longer
        cycles = int(self.tb.irq_cycle.value) - int(self.tb.sq_doorbell_cycle.value)
        [wc] = await qp.send_cq.poll()
        return wc, cycles

    async def irq_within(self, cycles):
        """Whether irq is high now or rises within `cycles`."""
        await self.tb.wait_event(cycles)
        return bool(self.tb.irq.value)


class FarEnd:
    """A sender beyond a port's RX link that the testbench plays (rdma_tb.LinkInjector puts
    its packets on the link, the port's sniffer shows what the device sends it): LID `lid`
    on InfiniBand; on Ethernet GID `gid` (not one of the device's) at MAC `mac`, which the
    host's neighbour table gives (`address` adds it)."""

    def __init__(self, rdma, port, lid=0x9, gid=ipv4_gid("10.0.0.9"),
                 mac=bytes.fromhex("020000000009"), hop_limit=64):
        self.port = rdma.dev.ports[port]
        self.ethernet = rdma.ethernet(port)
        self.lid, self.gid, self.mac, self.hop_limit = lid, gid, mac, hop_limit
        if self.ethernet:
            rdma.dev.neighbours[gid] = mac

    def address(self):
        """The address vector fields that aim a QP of the port at the far end."""
        if self.ethernet:
            return dict(dlid=0, grh=GlobalRoute(self.gid, hop_limit=self.hop_limit))
        return dict(dlid=self.lid)

    def to_port(self, qpn, dest_qpn, sl=0):
        """The addressing headers of a packet from far QP `qpn` to the port's QP `dest_qpn`,
        sent on SL `sl` (InfiniBand)."""
        if self.ethernet:
            return dict(roce=RoCE(dmac=self.port.mac, smac=self.mac, sgid=self.gid,
                                  dgid=self.port.gid, hop_limit=self.hop_limit,
                                  sport=roce_sport(0, qpn, dest_qpn)))
        return dict(lrh=LRH(dlid=self.port.lid, slid=self.lid, sl=sl))

    def from_port(self, qpn, far_qpn):
        """The addressing headers of the answers the port's QP `qpn` (aimed by address())
        sends far QP `far_qpn` for requests to_port() addressed (SL 0, to its LID)."""
        if self.ethernet:
            return dict(roce=RoCE(dmac=self.mac, smac=self.port.mac, sgid=self.port.gid,
                                  dgid=self.gid, hop_limit=self.hop_limit,
                                  sport=roce_sport(0, qpn, far_qpn)))
        return dict(lrh=LRH(dlid=self.lid, slid=self.port.lid, sl=0))

    @property
    def slid(self):
        """The SLID a receive completion reports for the far end (RoCE v2: 0)."""
        return 0 if self.ethernet else self.lid

    def sent_to(self, packet):
        """Whether a packet the port sent is addressed to the far end."""
        if self.ethernet:
            return (packet.roce.dmac, packet.roce.dgid) == (self.mac, self.gid)
        return packet.lrh.dlid == self.lid


def free_index(table, count, first=0):
    """The highest index in [first, count) that `table` (e.g. dev.qps) does not use."""
    return next(i for i in reversed(range(first, count)) if i not in table)


def unregistered_key(dev):
    """A key whose MR index has no registration."""
    return free_index(dev.mrs, dev.num_mr) << 8 | 0x5A


async def wait_all(cq, n):
    """Exactly `n` completions from `cq`, however slowly they come."""
    return await cq.wait(n, timeout=n + 100)


def grh_bytes(route, sgid, length, with_imm, link="ib"):
    """The GRH area of a UD receive of `length` payload bytes sent along `route` (a
    GlobalRoute) from `sgid`: on InfiniBand the GRH the packet carried, on Ethernet its IP
    header (IPv6, or between IPv4-mapped GIDs 20 zero bytes and the IPv4 header, which has no
    flow label), as the codec builds them."""
    dgid = bytes(route.dgid)
    if link == "eth":
        return network_header(ud_paylen(length, with_imm), roce=RoCE(
            dmac=bytes(6), smac=bytes(6), sgid=sgid, dgid=dgid, hop_limit=route.hop_limit,
            sport=0, tclass=route.traffic_class,
            flow_label=0 if is_ipv4_mapped(sgid) else route.flow_label))
    return network_header(ud_paylen(length, with_imm), grh=GRH(
        sgid=sgid, dgid=dgid, hop_limit=route.hop_limit, tclass=route.traffic_class,
        flow_label=route.flow_label))


def grh_area(capture):
    """The 40-byte GRH area a UD receive of the sniffed packet `capture` holds, cut from its
    wire bytes: the GRH after the LRH, or 40 zero bytes without one; on Ethernet the IPv6
    header, or 20 zero bytes and the IPv4 header, after the MACs, any 802.1Q tag and the
    EtherType."""
    packet, data = capture.packet, capture.data
    if packet.roce is None:
        return data[LRH.SIZE:LRH.SIZE + GRH_BYTES] if packet.grh else bytes(GRH_BYTES)
    at = ETH_HEADER_BYTES + (VLAN_TAG_BYTES if packet.roce.vlan is not None else 0)
    ip = data[at:at + (IPV4_HEADER_BYTES if packet.roce.ipv4 else IPV6_HEADER_BYTES)]
    return bytes(GRH_BYTES - len(ip)) + ip


# ---------------------------------------------------------------------------------------------
# RC over lossy cables (tests/test_wire.py between one device's ports, test_fabric.py between
# devices): random WRs, all of which must complete SUCCESS, and port counters that agree with
# what the cables did

LOSSY_OPCODES = (WROpcode.RDMA_WRITE, WROpcode.SEND, WROpcode.RDMA_READ,
                 WROpcode.RDMA_WRITE_WITH_IMM)
LOSSY_SLOT = 5120        # bytes of each WR's own slot in the regions


# Forced faults for a short lossy run: its third packet dropped, its eighth corrupted. A run of
# some tens of packets per cable may otherwise cross at 1 % without a single loss.
SURE_LOSSES = {2: "drop", 7: "corrupt"}


def lossy_cable(loss, seed, **extra):
    """A cable that holds every packet 300 cycles and loses `loss` of them, half dropped and
    half corrupted (ICRC or VCRC), duplicates packets at `loss` and delays or reorders them at
    loss / 2 each. (Dropping and corrupting at `loss` each would lose twice `loss`: at 10 % an
    RDMA READ, request and response, would fail 8 tries in a row about once in 4,000, and a
    program of some 2,400 WRs would end RETRY_EXC_ERR about once in ten runs.)"""
    return LinkFaults(latency=300, seed=seed & (2**64 - 1), drop=loss / 2, dup=loss,
                      corrupt=loss / 2, delay=loss / 2, reorder=loss / 2, delay_cycles=700,
                      corrupt_kind="either", **extra)


async def post_lossy_rc(rng, sender, receiver, local, remote, first, count, wr_base, posted):
    """`count` RC WRs of LOSSY_OPCODES and 0 to 5000 bytes from `sender` to `receiver`, each in
    its own slot from slot `first` of the regions `local` (src, dst: the sender's) and `remote`
    (src, dst: the receiver's), with the receives they need. `posted[(qp, is_recv)]` gathers
    their wr_ids (wr_base | i) in posting order."""
    for i in range(count):
        base = (first + i) * LOSSY_SLOT
        opcode = rng.choice(LOSSY_OPCODES)
        length = rng.choice([0, 1, 1024, 2049, 5000, rng.randrange(5000)])
        wr_id = wr_base | i
        if opcode in NEEDS_RECEIVE:
            await receiver.post_recv(RecvWR(remote[1].sge(base, LOSSY_SLOT), wr_id=wr_id))
            posted.setdefault((receiver, True), []).append(wr_id)
        read = opcode == WROpcode.RDMA_READ
        target = (remote[0] if read else remote[1]).remote(base + rng.randrange(64))
        sge = (local[1] if read else local[0]).sge(base + rng.randrange(64), length)
        await sender.post_send(work_request(opcode, sge, target, wr_id=wr_id))
        posted.setdefault((sender, False), []).append(wr_id)


async def assert_all_succeed(posted, rdma_of):
    """Every WR of `posted` completes SUCCESS, in posting order per queue (each QP has one CQ for
    both its queues); `rdma_of[qp]` is the program of the QP's device."""
    for qp in dict.fromkeys(qp for qp, _ in posted):
        expected = len(posted.get((qp, False), [])) + len(posted.get((qp, True), []))
        wcs = await rdma_of[qp].poll_until(qp.send_cq, expected, cycles=3_000_000)
        for is_recv in (False, True):
            got = [(wc.wr_id, wc.status) for wc in wcs if wc.is_recv == is_recv]
            want = [(w, WCStatus.SUCCESS) for w in posted.get((qp, is_recv), [])]
            assert got == want, f"QP {qp.qp_num} {'receive' if is_recv else 'send'}"


def assert_counters_follow_cable(sent, received, stats, name):
    """The sending port's counter moves (`sent`) and the far port's (`received`) against the
    cable's counts: the port sent what the cable took, and what arrived counted good, or in
    PortRcvErrors when corrupted."""
    assert sent[PortCounter.XMIT_PKTS] == stats["pkts_in"], (name, stats)
    assert received[PortCounter.RCV_PKTS] == stats["pkts_out"] - stats["corrupted"], (name, stats)
    assert received[PortCounter.RCV_ERRORS] == stats["corrupted"], (name, stats)
