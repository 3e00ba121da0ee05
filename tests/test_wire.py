"""rdma_dev's packet path, on a device whose port 1 and port 2 are cabled to each other
(harness tb/hdl/tb_rdma_dev.v built with CABLE = 1).

Every test is an RDMA program like those of test_rdma_dev.py, and the scoreboard's verdict at
the end covers the packet path too: the sniffer on each link decoded every packet and checked
its CRCs and lengths (tb/ib_packet.py, independent of the RTL), the packets on each link are
exactly the ones the reference model predicts (tb/model.py), and every port counter equals the
model's. Each test also asserts the facts it is about itself.
"""

from dataclasses import replace
from enum import Enum

import cocotb
import pytest

from tb import simrun
from tb.coverage import enabled as coverage_enabled
from tb.link_faults import LinkFaults
from tb.rdma_tb import LINK
from tb.seed import REGRESS, SEED
from tb.rdma_program import (
    ALL_ACCESS, DATA_OPCODES, LOSSY_SLOT, NEEDS_RECEIVE, QKEY, SEND_WC_OPCODE, SL,
    SURE_LOSSES, WITH_IMM, Rdma, assert_all_succeed, assert_counters_follow_cable,
    assert_invalidation_refused, assert_wc, bind_window, grh_area, long_read, long_read_timeout,
    lossy_cable, post_lossy_rc, unregistered_key, work_request,
)
from tb.verbs import (
    GRH_BYTES, MTU, SGE, Access, RemoteAddr, GlobalRoute, PortCounter, QPState, QPType, RecvWR, WCFlags,
    WCOpcode, WCStatus, WROpcode, atomic_cmp_and_swp, atomic_fetch_and_add, atomic_write,
    rdma_read, send_with_inv, ud_send,
)

PEER = {1: 2, 2: 1}
LENGTHS = (0, 1, 255, 1024, 1025, 3000)    # at path MTU 1024: 1 to 3 packets


def port_lid(rdma, port):
    """The LID a peer addresses `port` with: port 1's own LID with path bits (LMC 2), or
    port 2's LID."""
    return rdma.own_lid(port)


async def wire_pair(rdma, transport, cq=None, **attrs):
    """RC or UC QPs a (port 1) and b (port 2) aimed at each other across the cable (each with
    its own CQ unless `cq` is given)."""
    a = await rdma.qp(transport, cq, cq)
    b = await rdma.qp(transport, cq, cq)
    await rdma.connect(a, b.qp_num, port=1, dlid=port_lid(rdma, 2), **attrs)
    await rdma.connect(b, a.qp_num, port=2, dlid=port_lid(rdma, 1), **attrs)
    return a, b


async def counters(rdma, port):
    return await rdma.dev.port_counters(port)


def moved(before, after, counter):
    return after[counter] - before[counter]


# ---------------------------------------------------------------------------------------------
# 1. Every opcode and transport across the cable

CONNECTED_OPCODES = [(t, op) for t in (QPType.RC, QPType.UC) for op in DATA_OPCODES[t]]


@cocotb.test()
@cocotb.parametrize((("transport", "opcode"), CONNECTED_OPCODES))
async def test_wire_opcode(dut, transport, opcode):
    """An RC or UC opcode from port 1 to port 2 and back, at lengths 0 to 3000 bytes over a
    1024-byte path MTU (one to three packets, every first/middle/last/only opcode): the data
    lands, the completions are right (the receiver's carry the sender's SLID with its source
    path bits), the packets are the model's, and both ports count them."""
    rdma = await Rdma.open(dut, cabled=True)
    a, b = await wire_pair(rdma, transport, path_mtu=MTU.MTU1024)
    src = await rdma.region(8192)
    dst = await rdma.region(8192)
    before = {p: await counters(rdma, p) for p in (1, 2)}
    for sender, receiver in ((a, b), (b, a)):
        for i, length in enumerate(LENGTHS):
            wr_id = sender.qp_num << 8 | i
            if opcode in NEEDS_RECEIVE:
                await receiver.post_recv(RecvWR(dst.sge(4096, 4096), wr_id=wr_id))
            remote = (src if opcode == WROpcode.RDMA_READ else dst).remote(100 + i)
            local = (dst if opcode == WROpcode.RDMA_READ else src).sge(7 * i, length)
            await sender.post_send(work_request(opcode, local, remote, wr_id=wr_id,
                                                imm=0x0A0B0C00 | i))
            [wc] = await rdma.poll_until(sender.send_cq, 1)
            assert_wc(wc, wr_id=wr_id, status=WCStatus.SUCCESS, opcode=SEND_WC_OPCODE[opcode])
            if opcode in NEEDS_RECEIVE:
                [rwc] = await rdma.poll_until(receiver.recv_cq, 1)
                assert_wc(rwc, status=WCStatus.SUCCESS, byte_len=length,
                          slid=rdma.slid(1 if sender is a else 2),
                          imm_data=0x0A0B0C00 | i if opcode in WITH_IMM else 0)
    after = {p: await counters(rdma, p) for p in (1, 2)}
    for port in (1, 2):
        assert moved(before[port], after[port], PortCounter.XMIT_PKTS) > 0
        assert moved(before[port], after[port], PortCounter.RCV_PKTS) > 0
    await rdma.assert_loopback_moves(0, 0)
    await rdma.finish(links_idle=False)


@cocotb.test()
@cocotb.parametrize(with_imm=[False, True], global_route=[False, True])
async def test_wire_ud_send(dut, with_imm, global_route):
    """UD SEND from port 1 to port 2 through an AH for port 2 (with a GRH to port 2's GID with
    a flow label, hop limit and traffic class, or without; on Ethernet the GRH, the IP header,
    is always there): the receive buffer gets the GRH the packet carried, byte for byte (or 40
    zero bytes), and the payload; the completion reports the GRH flag when the packet had
    one, the source QP, and the SLID and SL of the link layer (RoCE v2 has neither: 0)."""
    rdma = await Rdma.open(dut, cabled=True)
    a, b = await rdma.ud_qp(port=1), await rdma.ud_qp(port=2)
    route = dict(grh=GlobalRoute(rdma.dev.ports[2].gid, flow_label=0x12345, hop_limit=9,
                                 traffic_class=0x3C)) if global_route else {}
    ah = await rdma.ah(1, port_lid(rdma, 2), **route)
    src, dst = await rdma.region(4096), await rdma.region(8192)
    imm = 0x51525354 if with_imm else None
    for i, length in enumerate((0, 1, 333, 4096)):
        seen = len(rdma.tb.sniffers[1].captures)
        await b.post_recv(RecvWR(dst.sge(0, length + GRH_BYTES), wr_id=i))
        await a.post_send(ud_send(src.sge(0, length), ah, b.qp_num, QKEY, wr_id=i, imm=imm))
        [rwc] = await rdma.poll_until(b.recv_cq, 1)
        [sent] = rdma.tb.sniffers[1].captures[seen:]
        carried_grh = sent.packet.grh is not None or sent.packet.roce is not None
        assert carried_grh == (global_route or rdma.ethernet(1))
        assert_wc(rwc, wr_id=i, status=WCStatus.SUCCESS, byte_len=length + GRH_BYTES,
                  src_qp=a.qp_num, slid=rdma.slid(1), sl=rdma.sl(2),
                  wc_flags=(WCFlags.GRH if carried_grh else WCFlags(0))
                  | (WCFlags.WITH_IMM if with_imm else WCFlags(0)))
        assert dst.read(GRH_BYTES, length) == src.read(0, length)
        assert dst.read(0, GRH_BYTES) == grh_area(sent), "GRH area"
    await rdma.poll_until(a.send_cq, 4)
    await rdma.finish(links_idle=False)


# ---------------------------------------------------------------------------------------------
# 2. Not loopback: packets appear and counters move

class Remote(Enum):
    # InfiniBand
    OTHER_PORT_LID = "port 2's LID, from a QP on port 1"
    LID_ABOVE_LMC_RANGE = "LID 0x14, one above port 1's 0x10-0x13"
    OTHER_GID = "port 1's own LID, but a GRH to another GID"
    # Ethernet (RoCE v2): the GID is the address, the AV's sgid_index the entry it leaves from
    OTHER_PORT_IPV4 = "port 2's IPv4 GID (entry 0), from port 1's"
    OTHER_PORT_IPV6 = "port 2's IPv6 GID (entry 1), from port 1's"
    OTHER_PORT_VLAN = "port 2's GID on VLAN 7 (entry 2), from port 1's"
    OTHER_PORT_VLAN_UNTAGGED = "port 2's GID on VLAN 7, from port 1's untagged entry 0"
    GID_NOBODY_HAS = "port 1's GID with a bit flipped, which the host's neighbours put at port 2"
    OWN_IPV6 = "port 1's own IPv6 GID (entry 1), from that entry"
    OWN_VLAN = "port 1's own GID on VLAN 7 (entry 2), from its untagged entry 0"


REMOTES = {
    "ib": [Remote.OTHER_PORT_LID, Remote.LID_ABOVE_LMC_RANGE, Remote.OTHER_GID],
    "eth": [Remote.OTHER_PORT_IPV4, Remote.OTHER_PORT_IPV6, Remote.OTHER_PORT_VLAN,
            Remote.OTHER_PORT_VLAN_UNTAGGED, Remote.GID_NOBODY_HAS, Remote.OWN_IPV6,
            Remote.OWN_VLAN],
}
GID_REMOTES = {     # (port, its GID table entry, port 1's sgid_index)
    Remote.OTHER_PORT_IPV4: (2, 0, 0),
    Remote.OTHER_PORT_IPV6: (2, 1, 1),
    Remote.OTHER_PORT_VLAN: (2, 2, 2),
    Remote.OTHER_PORT_VLAN_UNTAGGED: (2, 2, 0),
    Remote.OWN_IPV6: (1, 1, 1),
    Remote.OWN_VLAN: (1, 2, 0),
}
DELIVERED = {Remote.OTHER_PORT_LID, Remote.OTHER_PORT_IPV4, Remote.OTHER_PORT_IPV6,
             Remote.OTHER_PORT_VLAN}
OWN = {Remote.OWN_IPV6, Remote.OWN_VLAN}


def remote_address(rdma, remote):
    """(DLID, GlobalRoute or None) of `remote` for a QP on port 1 (on Ethernet the GRH is the
    route: DLID 0)."""
    port1 = rdma.dev.ports[1]
    if remote in GID_REMOTES:
        port, entry, sgid_index = GID_REMOTES[remote]
        return 0, GlobalRoute(rdma.dev.ports[port].gid_table[entry].gid, sgid_index=sgid_index)
    nobodys = port1.gid[:15] + bytes([port1.gid[15] ^ 0x80])
    if remote == Remote.GID_NOBODY_HAS:
        rdma.dev.neighbours[nobodys] = rdma.dev.ports[2].mac    # a stale neighbour entry
        return 0, GlobalRoute(nobodys)
    if remote == Remote.OTHER_PORT_LID:
        return rdma.dev.ports[2].lid, None
    if remote == Remote.LID_ABOVE_LMC_RANGE:
        return port1.lid + (1 << port1.lmc), None
    return rdma.own_lid(1), GlobalRoute(nobodys)


@cocotb.test()
async def test_memory_windows_across_the_cable(dut):
    """A type 2 window on port 2's QP, bound by BIND_MW, takes an RDMA WRITE from port 1
    through its key; a three-packet SEND with invalidate (SEND_FIRST, SEND_MIDDLE,
    SEND_LAST_WITH_INVALIDATE with its IETH, as the sniffer decodes them) unbinds it: the
    receive completes WITH_INV with the rkey, the next WRITE through the key is refused
    (REM_ACCESS_ERR). A SEND with invalidate naming a region's key is delivered and
    acknowledged, and its receive completes REM_INV_REQ_ERR (the receiver's QP goes to ERR)."""
    rdma = await Rdma.open(dut, cabled=True)
    a, b = await wire_pair(rdma, QPType.RC, path_mtu=MTU.MTU1024)
    local = await rdma.region(4096)
    region = await rdma.region(4096, ALL_ACCESS | Access.MW_BIND)
    mw = await rdma.pd.alloc_mw(2)
    wc = await bind_window(rdma, b, mw, region.sge(0, 1024), Access.REMOTE_WRITE, wr_id=0xB1)
    assert_wc(wc, wr_id=0xB1, status=WCStatus.SUCCESS, opcode=WCOpcode.BIND_MW)
    await a.post_send(work_request(WROpcode.RDMA_WRITE, local.sge(0, 512),
                                   mw.remote(region.mr.addr + 256), wr_id=0xA1))
    [wc] = await rdma.poll_until(a.send_cq, 1)
    assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS)
    assert region.read(256, 512) == local.read(0, 512)

    await b.post_recv(RecvWR(region.sge(1024, 3072), wr_id=0xB2))
    await a.post_send(send_with_inv(local.sge(0, 3000), mw.rkey, wr_id=0xA2))
    [wc] = await rdma.poll_until(b.recv_cq, 1)
    assert_wc(wc, wr_id=0xB2, status=WCStatus.SUCCESS, opcode=WCOpcode.RECV, byte_len=3000,
              imm_data=mw.rkey)
    assert WCFlags.WITH_INV in wc.wc_flags      # (GRH too on Ethernet: the model's to check)
    [wc] = await rdma.poll_until(a.send_cq, 1)
    assert_wc(wc, wr_id=0xA2, status=WCStatus.SUCCESS, opcode=WCOpcode.SEND)
    assert region.read(1024, 3000) == local.read(0, 3000)

    c, d = await wire_pair(rdma, QPType.RC, path_mtu=MTU.MTU1024)
    await assert_invalidation_refused(rdma, c, d, local, region)

    await a.post_send(work_request(WROpcode.RDMA_WRITE, local.sge(0, 64),
                                   mw.remote(region.mr.addr), wr_id=0xA3))
    [wc] = await rdma.poll_until(a.send_cq, 1)
    assert_wc(wc, wr_id=0xA3, status=WCStatus.REM_ACCESS_ERR)
    await rdma.finish(links_idle=False)


@cocotb.test()
async def test_atomic_write_across_the_cable(dut):
    """An ATOMIC WRITE from port 1 to port 2 is one RC_ATOMIC_WRITE packet (opcode 0x1D, a RETH
    of 8 bytes and the WQE's 8 bytes, as the sniffer decodes it), acknowledged; its bytes land
    at the remote address. One to a misaligned address is NAKed invalid request."""
    rdma = await Rdma.open(dut, cabled=True)
    a, b = await wire_pair(rdma, QPType.RC)
    remote = await rdma.region(4096)
    data = rdma.payload(8)
    seen = len(rdma.tb.sniffers[1].captures)
    await a.post_send(atomic_write(remote.remote(8), data, wr_id=0xA1))
    [wc] = await rdma.poll_until(a.send_cq, 1)
    assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS, opcode=WCOpcode.ATOMIC_WRITE)
    [sent] = rdma.tb.sniffers[1].captures[seen:]
    assert sent.packet.bth.opcode == 0x1D and sent.packet.payload == data
    assert (sent.packet.reth.va, sent.packet.reth.dma_len) == (remote.mr.addr + 8, 8)
    assert remote.read(8, 8) == data
    await a.post_send(atomic_write(remote.remote(12), data, wr_id=0xA2))
    [wc] = await rdma.poll_until(a.send_cq, 1)
    assert_wc(wc, wr_id=0xA2, status=WCStatus.REM_INV_REQ_ERR)
    await rdma.finish(links_idle=False)


@cocotb.test()
async def test_shared_receive_queue_across_the_cable(dut):
    """One SRQ feeds an RC QP on port 2, an RC QP on port 1 and a UD QP on port 2: two
    three-packet SENDs cross the cable in opposite directions at once, so their packets reach
    the responder interleaved, and a UD SEND follows; each message lands whole in the SRQ WQE
    it took. With the SRQ empty the RC receiver answers RNR NAK (the packet on the wire) and
    the SEND completes once a WQE is posted."""
    rdma = await Rdma.open(dut, cabled=True)
    dev = rdma.dev
    local = await rdma.region(8192)
    sink = await rdma.region(4 * 4096)
    cq = await dev.create_cq(32)
    srq = await rdma.pd.create_srq(8)
    a, d = await rdma.qp(QPType.RC, cq, cq), await rdma.pd.create_qp(QPType.RC, cq, cq, srq=srq)
    c, b = await rdma.qp(QPType.RC, cq, cq), await rdma.pd.create_qp(QPType.RC, cq, cq, srq=srq)
    for x, y, port in ((a, b, 1), (b, a, 2), (c, d, 2), (d, c, 1)):
        await rdma.connect(x, y.qp_num, port=port, dlid=port_lid(rdma, PEER[port]),
                           path_mtu=MTU.MTU1024)
    u = await rdma.ud_qp(1, cq=cq)
    v = await rdma.pd.create_qp(QPType.UD, cq, cq, srq=srq)
    await v.to_rts(port=2, qkey=QKEY)
    ah = await rdma.ah(1, port_lid(rdma, 2))
    await srq.post_recv([RecvWR(sink.sge(4096 * k, 4096), wr_id=k) for k in range(3)])

    await a.post_send(work_request(WROpcode.SEND, local.sge(0, 3000), wr_id=0xA1))
    await c.post_send(work_request(WROpcode.SEND, local.sge(4096, 3000), wr_id=0xC1))
    await u.post_send(ud_send(local.sge(0, 900), ah, v.qp_num, QKEY, wr_id=0xD1))
    recvs = {wc.qp_num: wc for wc in await rdma.poll_until(cq, 6) if wc.is_recv}
    assert sorted(recvs) == sorted((b.qp_num, d.qp_num, v.qp_num))
    for qp, offset, length, lead in ((b, 0, 3000, 0), (d, 4096, 3000, 0),
                                     (v, 0, 900, GRH_BYTES)):
        wc = recvs[qp.qp_num]
        assert_wc(wc, status=WCStatus.SUCCESS, byte_len=length + lead)
        assert sink.read(4096 * wc.wr_id + lead, length) == local.read(offset, length), \
            f"QP {qp.qp_num}'s message in receive {wc.wr_id}"

    before = await counters(rdma, 2)
    await a.post_send(work_request(WROpcode.SEND, local.sge(0, 100), wr_id=0xA2))
    await rdma.cycles(4000)
    assert await cq.poll() == [], "completed without a receive"
    assert moved(before, await counters(rdma, 2), PortCounter.XMIT_PKTS) >= 1, \
        "port 2 answered the SEND with no RNR NAK"
    await srq.post_recv(RecvWR(sink.sge(3 * 4096, 4096), wr_id=3))
    wcs = await rdma.poll_until(cq, 2)
    assert {(wc.wr_id, wc.status) for wc in wcs} == {(0xA2, WCStatus.SUCCESS),
                                                     (3, WCStatus.SUCCESS)}
    assert sink.read(3 * 4096, 100) == local.read(0, 100)
    await rdma.finish(links_idle=False)


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC, QPType.UD], remote=REMOTES[LINK])
async def test_not_loopback(dut, transport, remote):
    """A message to an address that is not the sending port's own is packetized: its packets
    leave port 1 and port 1's transmit counters move, while LB_MSGS/LB_BYTES stay still. Port
    2 takes the packets addressed to it and delivers them; it drops the others as not its
    own, counting them in PortRcvErrors, and nothing lands (RC then completes RETRY_EXC_ERR,
    having sent it 1 + retry_cnt times without an answer). InfiniBand: the other port's LID
    is delivered; a LID just outside the port's LMC range, or the port's own LID with another
    GID, is dropped. Ethernet: each of the other port's GIDs, from port 1's entry of its kind,
    is delivered; its VLAN 7 GID sent untagged, or a GID nobody has, sent to its MAC, is
    dropped. And a GID of port 1's own is loopback whichever entry holds it, not only the
    one sent from (its IPv6 GID, and its VLAN 7 GID sent from its untagged entry): the
    message takes the bypass to a QP on port 1, no link carries a beat and no port counter
    moves."""
    rdma = await Rdma.open(dut, cabled=True)
    dlid, grh = remote_address(rdma, remote)
    far = 1 if remote in OWN else 2
    local, inbox = await rdma.region(4096), await rdma.region(4096)
    memory = inbox.read()
    delivered = remote in DELIVERED | OWN
    if transport == QPType.UD:
        a, b = await rdma.ud_qp(1), await rdma.ud_qp(far)
        wr = ud_send(local.sge(0, 100), await rdma.ah(1, dlid, grh=grh), b.qp_num, QKEY,
                     wr_id=0xA1)
    else:
        a, b = await rdma.qp(transport), await rdma.qp(transport)
        await rdma.connect(a, b.qp_num, port=1, dlid=dlid, grh=grh, timeout=1, retry_cnt=2)
        await rdma.connect(b, a.qp_num, port=far, dlid=port_lid(rdma, 1))
        wr = work_request(WROpcode.SEND, local.sge(0, 100), wr_id=0xA1)
    need = 100 + (GRH_BYTES if transport == QPType.UD else 0)
    await b.post_recv(RecvWR(inbox.sge(0, need), wr_id=0xB1))
    before = {p: await counters(rdma, p) for p in (1, 2)}

    await a.post_send(wr)
    [wc] = await rdma.poll_until(a.send_cq, 1, cycles=100000)
    failed = transport == QPType.RC and not delivered
    assert_wc(wc, wr_id=0xA1,
              status=WCStatus.RETRY_EXC_ERR if failed else WCStatus.SUCCESS)
    if delivered:
        [rwc] = await rdma.poll_until(b.recv_cq, 1)
        assert_wc(rwc, wr_id=0xB1, status=WCStatus.SUCCESS, byte_len=need)
    after = {p: await counters(rdma, p) for p in (1, 2)}
    if remote in OWN:
        assert after == before, "a loopback message moved a port counter"
        await rdma.assert_loopback_moves(1, 100)
    else:
        assert moved(before[1], after[1], PortCounter.XMIT_PKTS) >= 1
        assert rdma.tb.tx_beats(1) > 0, "nothing left port 1"
        await rdma.assert_loopback_moves(0, 0)
    if not delivered:
        tries = 3 if transport == QPType.RC else 1      # RC: the first try and 2 resends
        assert moved(before[2], after[2], PortCounter.RCV_ERRORS) == tries
        assert moved(before[2], after[2], PortCounter.RCV_PKTS) == 0
        assert inbox.read() == memory, "a packet not addressed to port 2 was delivered"
    await rdma.finish(links_idle=remote in OWN)


# ---------------------------------------------------------------------------------------------
# 3. The bypass switch

@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC, QPType.UD])
async def test_bypass_switch_same_results(dut, transport):
    """The same loopback program (every opcode of the transport, lengths 1 to 5000 over a
    1024-byte path MTU) run with the bypass on, then off: the second run goes through the
    packetizer, the port's internal loopback and the depacketizer, yet gives the same
    completions and the same memory, puts no beat on any link and moves no port counter;
    LB_MSGS / LB_BYTES count the first run only. (UC and UD complete a send when its packets
    have left, so each run ends with a SEND whose receive completion says the rest landed.)
    On Ethernet the loopback address is port 1's GID on VLAN 7, sent from its untagged entry:
    a loopback message's path attributes mean nothing, its VLAN among them, on either path."""
    rdma = await Rdma.open(dut, cabled=True)
    results = []
    counts_before = {p: await counters(rdma, p) for p in (1, 2)}
    route = None
    if rdma.ethernet(1):
        [vlan_gid] = [e.gid for e in rdma.dev.ports[1].own_gids() if e.vlan is not None]
        route = GlobalRoute(vlan_gid, sgid_index=0, hop_limit=17, traffic_class=0x5A)
    for bypass in (True, False):
        await rdma.dev.set_bypass(bypass)
        if transport == QPType.UD:
            a, b = await rdma.ud_qp(), await rdma.ud_qp()
            ah = await (rdma.ah(grh=route) if route else rdma.loopback_ah(global_route=True))
        else:
            a, b = await rdma.connected_pair(transport, path_mtu=MTU.MTU1024,
                                             **({"grh": route} if route else {}))
            ah = None
        src = await rdma.region(8192)
        src.write(0, bytes(range(256)) * 32)     # the same bytes in both runs
        dst = await rdma.region(32768)
        dst.write(0, bytes(32768))
        wcs = []
        lengths = (1, 1000, 4096) if ah else (1, 1025, 5000)
        for i, length in enumerate(lengths):
            for k, opcode in enumerate(DATA_OPCODES[transport]):
                slot = 8192 * (k % 4)
                if opcode in NEEDS_RECEIVE:
                    await b.post_recv(RecvWR(dst.sge(slot, 8192 + GRH_BYTES if ah else 8192),
                                             wr_id=i))
                if ah:
                    wr = ud_send(src.sge(0, length), ah, b.qp_num, QKEY, wr_id=i,
                                 imm=0x1000 + i if opcode in WITH_IMM else None)
                else:
                    remote = (src if opcode == WROpcode.RDMA_READ else dst).remote(slot)
                    local = (dst.sge(slot, length) if opcode == WROpcode.RDMA_READ
                             else src.sge(0, length))
                    wr = work_request(opcode, local, remote, wr_id=i, imm=0x1000 + i)
                await a.post_send(wr)
                wcs += await rdma.poll_until(a.send_cq, 1)
                if opcode in NEEDS_RECEIVE:
                    wcs += await rdma.poll_until(b.recv_cq, 1)
        results.append(dst.read())
        # what software sees, bar the QP numbers of the two runs' QPs
        results.append([(wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.imm_data, wc.wc_flags,
                         wc.sl, wc.slid, wc.dlid_path_bits) for wc in wcs])
    half = len(results) // 2
    assert results[:half] == results[half:], "the bypass and the packet path differ"
    for port in (1, 2):
        assert await counters(rdma, port) == counts_before[port], f"port {port} counted"
    rdma.tb.assert_links_idle()
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC, QPType.UD])
async def test_a_limited_partition_member_drops_its_loopback_on_both_paths(dut, transport):
    """Port 1's P_Key a limited member (0x7FFF): a message a port sends itself is limited to
    limited, which the IB partition rule drops on arrival. The same SEND, with a receive
    posted, runs with the bypass on and then off, and software sees the same on both paths:
    RC completes RETRY_EXC_ERR (the drop is silent: the requester hears nothing), UC and UD
    complete SUCCESS, no receive completes and nothing is written. With a full member
    (0xFFFF) the same SEND is delivered."""
    rdma = await Rdma.open(dut, cabled=True)
    seen = {}
    for pkey, bypass in ((0x7FFF, True), (0x7FFF, False), (0xFFFF, True)):
        await rdma.dev.set_pkey(1, pkey)
        await rdma.dev.set_bypass(bypass)
        src, dst = await rdma.region(4096), await rdma.region(4096)
        if transport == QPType.UD:
            a, b = await rdma.ud_qp(), await rdma.ud_qp()
            wr = ud_send(src.sge(0, 100), await rdma.loopback_ah(), b.qp_num, QKEY, wr_id=1)
        else:
            a, b = await rdma.connected_pair(transport, timeout=1, retry_cnt=1)
            wr = work_request(WROpcode.SEND, src.sge(0, 100), wr_id=1)
        await b.post_recv(RecvWR(dst.sge(0, 4096), wr_id=2))
        await a.post_send(wr)
        [wc] = await rdma.poll_until(a.send_cq, 1)
        await rdma.cycles(2000)
        received = await b.recv_cq.poll()
        seen[pkey, bypass] = (wc.status, [(r.wr_id, r.status) for r in received],
                              dst.read(GRH_BYTES if transport == QPType.UD else 0, 100)
                              == src.read(0, 100))
    dropped = (WCStatus.RETRY_EXC_ERR if transport == QPType.RC else WCStatus.SUCCESS, [], False)
    assert seen[0x7FFF, True] == seen[0x7FFF, False] == dropped, seen
    assert seen[0xFFFF, True] == (WCStatus.SUCCESS, [(2, WCStatus.SUCCESS)], True), seen
    rdma.tb.assert_links_idle()
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC, QPType.UD])
async def test_every_size_class_through_the_internal_loopback(dut, transport):
    """With the bypass off, SENDs of every size class against the path MTU (0, 1 byte, less
    than, exactly and more than one MTU; UD: up to the port's MTU, its limit) go through the
    packetizer, the internal loopback and the depacketizer: every one lands and completes as
    through the bypass, and no link carries a beat."""
    rdma = await Rdma.open(dut, cabled=True)
    await rdma.dev.set_bypass(False)
    if transport == QPType.UD:
        a, b = await rdma.ud_qp(), await rdma.ud_qp()
        ah = await rdma.loopback_ah()
        mtu, extra = rdma.dev.ports[1].mtu.size, GRH_BYTES
        lengths = (0, 1, 700, mtu)
    else:
        a, b = await rdma.connected_pair(transport, path_mtu=MTU.MTU1024)
        ah, mtu, extra = None, 1024, 0
        lengths = (0, 1, 700, mtu, 3 * mtu + 5)
    src, dst = await rdma.region(8192), await rdma.region(8192)
    for i, length in enumerate(lengths):
        await b.post_recv(RecvWR(dst.sge(0, length + extra), wr_id=i))
        wr = (ud_send(src.sge(0, length), ah, b.qp_num, QKEY, wr_id=i) if ah
              else work_request(WROpcode.SEND, src.sge(0, length), None, wr_id=i))
        await a.post_send(wr)
        [wc] = await rdma.poll_until(a.send_cq, 1)
        assert_wc(wc, wr_id=i, status=WCStatus.SUCCESS)
        [rwc] = await rdma.poll_until(b.recv_cq, 1)
        assert_wc(rwc, wr_id=i, status=WCStatus.SUCCESS, byte_len=length + extra)
        assert dst.read(extra, length) == src.read(0, length)
    rdma.tb.assert_links_idle()
    await rdma.finish()


# ---------------------------------------------------------------------------------------------
# 4. Path attributes

# ---------------------------------------------------------------------------------------------
# One rule book: every responder rule gives the same on both paths

async def rule_case(rdma, rule):
    """(sender QP, receiver QP or None, the WR, the receive to post or None, the region whose
    bytes must not change unless the WR succeeds) for a WR that `rule` judges."""
    src, dst = await rdma.region(256), await rdma.region(256)
    rc = dict(timeout=1, retry_cnt=1, rnr_retry=0)       # a lost RC message fails soon
    transport = QPType.UD if rule == "UD Q_Key not the QP's" else (
        QPType.UC if rule.startswith("UC") else QPType.RC)
    if transport == QPType.UD:
        a, b = await rdma.ud_qp(), await rdma.ud_qp(qkey=QKEY ^ 1)
        wr = ud_send(src.sge(0, 100), await rdma.loopback_ah(), b.qp_num, QKEY, wr_id=1)
        return a, b, wr, RecvWR(dst.sge(0, 256), wr_id=2), dst
    if rule in ("no such QP", "destination in INIT", "destination of another transport"):
        a = await rdma.qp(transport)
        b = await rdma.qp(QPType.UC if rule == "destination of another transport" else transport)
        if rule == "destination of another transport":
            await rdma.connect(b, a.qp_num)
        elif rule == "destination in INIT":
            await b.modify(QPState.INIT, port_num=1, qp_access_flags=ALL_ACCESS)
        await rdma.connect(a, b.qp_num + 7 if rule == "no such QP" else b.qp_num, **rc)
        recv = None if rule == "no such QP" else RecvWR(dst.sge(0, 256), wr_id=2)  # b in RESET
        return a, b, work_request(WROpcode.SEND, src.sge(0, 100), wr_id=1), recv, dst
    access = (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC
              if rule == "QP access without REMOTE_READ" else ALL_ACCESS)
    a, b = await rdma.connected_pair(transport, access=access,
                                     **(rc if transport == QPType.RC else {}))
    remote = dst.remote(0)
    if rule.endswith("rkey names no MR"):
        remote = RemoteAddr(remote.addr, unregistered_key(rdma.dev))
    elif rule == "rkey of another PD":
        other = await rdma.region(256, pd=rdma.dev.alloc_pd())
        remote = other.remote(0)
    elif rule == "rkey past the MR":
        remote = dst.remote(200)
    elif rule == "MR without REMOTE_WRITE":
        remote = (await rdma.region(256, access=Access.LOCAL_WRITE | Access.REMOTE_READ)).remote(0)
    if rule == "QP access without REMOTE_READ":
        return a, b, work_request(WROpcode.RDMA_READ, dst.sge(0, 100), src.remote(0), wr_id=1), \
            None, dst
    if rule in ("no receive posted", "receive too short", "receive lkey names no MR"):
        recv = {"no receive posted": None,
                "receive too short": RecvWR(dst.sge(0, 99), wr_id=2),
                "receive lkey names no MR": RecvWR(SGE(dst.sge(0).addr, 256,
                                                       unregistered_key(rdma.dev)), wr_id=2)}[rule]
        return a, b, work_request(WROpcode.SEND, src.sge(0, 100), wr_id=1), recv, dst
    return a, b, work_request(WROpcode.RDMA_WRITE, src.sge(0, 100), remote, wr_id=1), None, dst


RESPONDER_RULES = {     # the sender's status: the responder's verdict, or the silence of a drop
    "no such QP": WCStatus.RETRY_EXC_ERR,
    "destination in INIT": WCStatus.RETRY_EXC_ERR,
    "destination of another transport": WCStatus.RETRY_EXC_ERR,
    "UD Q_Key not the QP's": WCStatus.SUCCESS,
    "rkey names no MR": WCStatus.REM_ACCESS_ERR,
    "rkey of another PD": WCStatus.REM_ACCESS_ERR,
    "rkey past the MR": WCStatus.REM_ACCESS_ERR,
    "MR without REMOTE_WRITE": WCStatus.REM_ACCESS_ERR,
    "QP access without REMOTE_READ": WCStatus.REM_ACCESS_ERR,
    "UC rkey names no MR": WCStatus.SUCCESS,
    "no receive posted": WCStatus.RNR_RETRY_EXC_ERR,
    "receive too short": WCStatus.REM_INV_REQ_ERR,
    "receive lkey names no MR": WCStatus.REM_OP_ERR,
}


@cocotb.test()
@cocotb.parametrize(rule=list(RESPONDER_RULES))
async def test_each_responder_rule_judges_the_same_on_both_paths(dut, rule):
    """One WR that a responder rule judges (destination QP, Q_Key, rkey, PD, range, access,
    receive WQE), run with the bypass on and then off: the sender's completion, the receive
    completions, the receiver's QP state and the target's bytes are the same on both paths,
    and the status is the rule's."""
    rdma = await Rdma.open(dut, cabled=True)
    seen = {}
    for bypass in (True, False):
        await rdma.dev.set_bypass(bypass)
        a, b, wr, recv, target = await rule_case(rdma, rule)
        before = target.read()
        if recv is not None:
            await b.post_recv(recv)
        await a.post_send(wr)
        [wc] = await rdma.poll_until(a.send_cq, 1, cycles=100000)
        await rdma.cycles(2000)
        received = [(r.wr_id, r.status, r.byte_len if r.status == WCStatus.SUCCESS else None)
                    for r in await b.recv_cq.poll()]
        state = (await b.query()).state
        seen[bypass] = (wc.status, received, state, target.read() == before)
    assert seen[True] == seen[False], seen
    assert seen[True][0] == RESPONDER_RULES[rule], seen
    rdma.tb.assert_links_idle()
    await rdma.finish()


# ---------------------------------------------------------------------------------------------
# Atomics: the same results whichever path carries them

U64 = 2**64 - 1
ATOMIC_PATHS = ("bypass", "internal loopback", "cable")


async def atomic_pair(rdma, path, **attrs):
    """RC QPs a and b for an atomic `path`: loopback on port 1 with the bypass on or off, or
    port 1 to port 2 across the cable."""
    await rdma.dev.set_bypass(path == "bypass")
    if path == "cable":
        return await wire_pair(rdma, QPType.RC, **attrs)
    return await rdma.connected_pair(QPType.RC, **attrs)


def u64(value):
    return (value & U64).to_bytes(8, "little")


@cocotb.test()
@cocotb.parametrize(timing=["ideal", "latency500"])
async def test_atomics_give_the_same_results_on_every_path(dut, timing):
    """FetchAdd and CompareSwap, posted together (all in flight at once), through the bypass,
    the internal loopback and the cable: FetchAdd wraps modulo 2^64 and adds 2^64 - 1 as -1,
    a CompareSwap that matches swaps and one that does not leaves the value; each WR's local
    SGE gets the original value, completes COMP_SWAP / FETCH_ADD with byte_len 8, and the three
    paths leave the same bytes (the bypass counts its messages in LB_MSGS / LB_BYTES, 8 bytes
    each; only the cable moves port counters). Also with the host memory answering reads 500
    cycles late, so every read-modify-write holds the DMA engine's lock that long while the
    other WRs' traffic goes on."""
    rdma = await Rdma.open(dut, cabled=True, timing=timing)
    start = (U64 - 1, 5, 0x1234)
    # (opcode, word, compare or add, swap, original it must return); WR i returns its original
    # to local word i, so WR 1 and WR 2 have the same offset on both sides
    steps = [
        (WROpcode.ATOMIC_FETCH_AND_ADD, 0, 3, 0, U64 - 1),
        (WROpcode.ATOMIC_CMP_AND_SWP, 1, 5, 0xAAAA5555AAAA5555, 5),
        (WROpcode.ATOMIC_FETCH_AND_ADD, 2, U64, 0, 0x1234),
        (WROpcode.ATOMIC_CMP_AND_SWP, 1, 5, 7, 0xAAAA5555AAAA5555),
        (WROpcode.ATOMIC_FETCH_AND_ADD, 0, 1, 0, 1),
    ]
    final = (2, 0xAAAA5555AAAA5555, 0x1233)
    for path in ATOMIC_PATHS:
        a, b = await atomic_pair(rdma, path)
        target, local = await rdma.region(64), await rdma.region(64)
        target.write(0, b"".join(map(u64, start)))
        before = await rdma.counter_moves()
        wrs = []
        for i, (opcode, word, value, swap, _) in enumerate(steps):
            if opcode == WROpcode.ATOMIC_CMP_AND_SWP:
                wrs.append(atomic_cmp_and_swp(local.sge(8 * i, 8), target.remote(8 * word),
                                              value, swap, wr_id=i))
            else:
                wrs.append(atomic_fetch_and_add(local.sge(8 * i, 8), target.remote(8 * word),
                                                value, wr_id=i))
        await a.post_send(wrs)
        wcs = await rdma.poll_until(a.send_cq, len(steps))
        for i, (wc, (opcode, *_)) in enumerate(zip(wcs, steps)):
            assert_wc(wc, wr_id=i, status=WCStatus.SUCCESS, byte_len=8,
                      opcode=SEND_WC_OPCODE[opcode])
        assert target.read(0, 24) == b"".join(map(u64, final)), path
        assert local.read(0, 8 * len(steps)) == b"".join(u64(s[4]) for s in steps), path
        moved_now = (await rdma.counter_moves()) - before
        bypassed = len(steps) if path == "bypass" else 0
        assert (moved_now.lb_msgs, moved_now.lb_bytes) == (bypassed, 8 * bypassed), path
    await rdma.finish(links_idle=False)


ATOMIC_FAULTS = {   # what a faulty atomic completes with, on every path
    "misaligned": WCStatus.REM_INV_REQ_ERR,
    "no REMOTE_ATOMIC on the MR": WCStatus.REM_ACCESS_ERR,
    "no REMOTE_ATOMIC on the QP": WCStatus.REM_ACCESS_ERR,
    "rkey past the MR": WCStatus.REM_ACCESS_ERR,
    "4-byte SGE": WCStatus.LOC_LEN_ERR,
    "local MR not writable": WCStatus.LOC_PROT_ERR,
}


@cocotb.test()
@cocotb.parametrize(fault=list(ATOMIC_FAULTS))
async def test_a_faulty_atomic_fails_the_same_on_every_path(dut, fault):
    """A FetchAdd with one fault, through the bypass, the internal loopback and the cable: the
    same completion status on each (the responder's faults, as rxe's responder has them, also
    move the responder's QP to ERR; the requester's own are found before anything is sent),
    and no byte of the target or the local SGE changes."""
    rdma = await Rdma.open(dut, cabled=True)
    responder_fails = ATOMIC_FAULTS[fault] in (WCStatus.REM_INV_REQ_ERR, WCStatus.REM_ACCESS_ERR)
    for path in ATOMIC_PATHS:
        qp_access = (Access.REMOTE_WRITE | Access.REMOTE_READ
                     if fault == "no REMOTE_ATOMIC on the QP" else None)
        attrs = {} if qp_access is None else {"access": qp_access}
        a, b = await atomic_pair(rdma, path, **attrs)
        target = await rdma.region(64, access=Access.LOCAL_WRITE | Access.REMOTE_WRITE
                                   if fault == "no REMOTE_ATOMIC on the MR" else ALL_ACCESS)
        local = await rdma.region(64, access=Access.REMOTE_READ
                                  if fault == "local MR not writable" else ALL_ACCESS)
        remote = target.remote({"misaligned": 4, "rkey past the MR": 64}.get(fault, 8))
        sge = local.sge(0, 4 if fault == "4-byte SGE" else 8)
        memory = (target.read(), local.read())
        await a.post_send(atomic_fetch_and_add(sge, remote, 1, wr_id=0xA1))
        [wc] = await rdma.poll_until(a.send_cq, 1)
        assert_wc(wc, wr_id=0xA1, status=ATOMIC_FAULTS[fault])
        assert (target.read(), local.read()) == memory, path
        await rdma.assert_state(a, QPState.ERR)
        await rdma.assert_state(b, QPState.ERR if responder_fails else QPState.RTS)
    await rdma.finish(links_idle=False)


@cocotb.test()
@cocotb.parametrize(transport=[QPType.UC, QPType.UD])
async def test_atomics_are_refused_on_uc_and_ud(dut, transport):
    """Atomics are RC only: a FetchAdd or CompareSwap on a UC or UD QP completes
    LOC_QP_OP_ERR with the bypass on and off, and nothing is sent or written."""
    rdma = await Rdma.open(dut, cabled=True)
    for bypass in (True, False):
        await rdma.dev.set_bypass(bypass)
        for op in (atomic_fetch_and_add, atomic_cmp_and_swp):
            target, local = await rdma.region(64), await rdma.region(64)
            memory = (target.read(), local.read())
            args = (1,) if op is atomic_fetch_and_add else (1, 2)
            wr = op(local.sge(0, 8), target.remote(0), *args, wr_id=7)
            if transport == QPType.UD:
                a, b = await rdma.ud_qp(), await rdma.ud_qp()
                wr = replace(wr, ah=await rdma.loopback_ah(), remote_qpn=b.qp_num,
                             remote_qkey=QKEY)
            else:
                a, _ = await rdma.connected_pair(transport)
            await a.post_send(wr)
            [wc] = await rdma.poll_until(a.send_cq, 1)
            assert_wc(wc, wr_id=7, status=WCStatus.LOC_QP_OP_ERR)
            assert (target.read(), local.read()) == memory
    await rdma.assert_loopback_moves(0, 0)
    await rdma.finish()


@cocotb.test()
async def test_path_mtu_sets_packets_not_loopback_cycles(dut):
    """An 8 KiB RDMA WRITE at each path MTU from 256 to 4096 bytes: on the wire it takes
    8192 / MTU packets; through the bypass the same message takes the same number of cycles
    whatever the MTU."""
    rdma = await Rdma.open(dut, cabled=True)
    src, dst = await rdma.region(8192), await rdma.region(8192)
    cq = await rdma.dev.create_cq(64)
    loopback_cycles = set()
    for mtu in MTU:
        a, b = await wire_pair(rdma, QPType.RC, cq, path_mtu=mtu)
        seen = len(rdma.tb.sniffers[1].captures)
        await a.post_send(work_request(WROpcode.RDMA_WRITE, src.sge(), dst.remote(), wr_id=mtu))
        await rdma.poll_until(cq, 1)
        sent = rdma.tb.sniffers[1].captures[seen:]
        assert len(sent) == 8192 // mtu.size, f"MTU {mtu.size}: {len(sent)} packets"
        assert all(len(c.packet.payload) == mtu.size for c in sent)

        c, d = await rdma.connected_pair(QPType.RC, cqs=(cq, cq), path_mtu=mtu)
        wc, cycles = await rdma.timed_send(c, work_request(WROpcode.RDMA_WRITE, src.sge(),
                                                           dst.remote(), wr_id=mtu))
        assert_wc(wc, status=WCStatus.SUCCESS)
        loopback_cycles.add(cycles)
    assert len(loopback_cycles) == 1, f"loopback cycles vary with the MTU: {loopback_cycles}"
    await rdma.finish(links_idle=False)


@cocotb.test()
async def test_static_rate_slows_wire_not_loopback(dut):
    """An 8 KiB RDMA WRITE with static rate 1 (full) and 4 (a quarter of the port's rate): at
    rate 4 every packet of N beats is followed by at least 3N idle link cycles, so the message
    spans more cycles on the wire; through the bypass, where the rate is ignored, both take
    the same number of cycles."""
    rdma = await Rdma.open(dut, cabled=True)
    src, dst = await rdma.region(8192), await rdma.region(8192)
    beat_bytes = rdma.tb.data_width // 8
    spans, loopback = {}, {}
    for rate in (1, 4):
        a, b = await wire_pair(rdma, QPType.RC, static_rate=rate, path_mtu=MTU.MTU1024)
        seen = len(rdma.tb.sniffers[1].captures)
        await a.post_send(work_request(WROpcode.RDMA_WRITE, src.sge(), dst.remote(), wr_id=rate))
        await rdma.poll_until(a.send_cq, 1)
        sent = rdma.tb.sniffers[1].captures[seen:]
        spans[rate] = sent[-1].cycle - sent[0].cycle
        if rate == 4:
            for p, q in zip(sent, sent[1:]):
                beats = -(-len(p.data) // beat_bytes)
                assert q.cycle - p.cycle >= 4 * beats, \
                    f"packet at cycle {p.cycle} ({beats} beats), next at {q.cycle}"
        c, d = await rdma.connected_pair(QPType.RC, static_rate=rate)
        wc, loopback[rate] = await rdma.timed_send(
            c, work_request(WROpcode.RDMA_WRITE, src.sge(), dst.remote(), wr_id=rate))
    assert spans[4] > spans[1], f"wire spans: {spans}"
    assert loopback[1] == loopback[4], f"loopback cycles: {loopback}"
    await rdma.finish(links_idle=False)


@cocotb.test()     # InfiniBand only (RoCE v2 has no LIDs): the next test is its counterpart
async def test_source_path_bits_in_slid(dut):
    """Port 1 has LMC 2: a QP sending with each source path bits value 0-3 puts LID | bits in
    the SLID of its packets on the wire, and the receive completion on port 2 reports that
    SLID."""
    rdma = await Rdma.open(dut, cabled=True)
    src, dst = await rdma.region(256), await rdma.region(256)
    for bits in range(4):
        a, b = await wire_pair(rdma, QPType.UC, src_path_bits=bits)
        seen = len(rdma.tb.sniffers[1].captures)
        await b.post_recv(RecvWR(dst.sge(), wr_id=bits))
        await a.post_send(work_request(WROpcode.SEND, src.sge(0, 64), wr_id=bits))
        [rwc] = await rdma.poll_until(b.recv_cq, 1)
        slid = rdma.dev.ports[1].lid | bits
        [capture] = rdma.tb.sniffers[1].captures[seen:]
        assert capture.packet.lrh.slid == slid
        assert_wc(rwc, slid=slid, status=WCStatus.SUCCESS)
        await rdma.poll_until(a.send_cq, 1)
    await rdma.finish(links_idle=False)


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UD])
async def test_sgid_index_chooses_the_source_address_and_vlan(dut, transport):
    """Ethernet's counterpart of the source path bits (RoCE v2 has no LIDs): the AV's
    sgid_index picks the entry of port 1's GID table a message leaves from. A SEND from each
    entry to port 2's GID of the same kind: from the IPv4 entry an untagged IPv4 frame leaves,
    from the IPv6 entry an IPv6 frame, from the VLAN 7 entry a frame tagged VID 7 with PCP =
    the AV's SL, each with that entry's address as its source, and port 2 takes it. RC's ACK
    comes back along the same path (in the request's VLAN and priority, to its source MAC,
    the addresses swapped); a UD receive's GRH area holds the IP header the frame carried."""
    rdma = await Rdma.open(dut, cabled=True)
    assert rdma.ethernet(1), "an Ethernet program: the ethernet group runs it (RDMA_LINK=eth)"
    src, dst = await rdma.region(256), await rdma.region(256)
    theirs = rdma.dev.ports[2].gid_table
    kinds = []
    for index, mine in enumerate(rdma.dev.ports[1].gid_table):
        if not any(mine.gid):
            continue
        route = GlobalRoute(theirs[index].gid, sgid_index=index)
        if transport == QPType.UD:
            a, b = await rdma.ud_qp(1), await rdma.ud_qp(2)
            wr = ud_send(src.sge(0, 64), await rdma.ah(1, port_lid(rdma, 2), grh=route),
                         b.qp_num, QKEY, wr_id=index)
        else:
            a, b = await rdma.qp(transport), await rdma.qp(transport)
            await rdma.connect(a, b.qp_num, port=1, dlid=port_lid(rdma, 2), grh=route)
            await rdma.connect(b, a.qp_num, port=2, dlid=port_lid(rdma, 1))
            wr = work_request(WROpcode.SEND, src.sge(0, 64), wr_id=index)
        seen = {port: len(rdma.tb.sniffers[port].captures) for port in PEER}
        await b.post_recv(RecvWR(dst.sge(0, 64 + GRH_BYTES), wr_id=index))
        await a.post_send(wr)
        [wc] = await rdma.poll_until(b.recv_cq, 1)
        assert_wc(wc, wr_id=index, status=WCStatus.SUCCESS)
        [wc] = await rdma.poll_until(a.send_cq, 1)
        assert_wc(wc, wr_id=index, status=WCStatus.SUCCESS)
        [sent] = rdma.tb.sniffers[1].captures[seen[1]:]
        frame = sent.packet.roce
        assert (frame.sgid, frame.dgid, frame.vlan) == (mine.gid, theirs[index].gid, mine.vlan)
        assert frame.pcp == (SL if mine.vlan is not None else 0)
        kinds.append((frame.ipv4, frame.vlan))
        if transport == QPType.UD:
            assert dst.read(0, GRH_BYTES) == grh_area(sent), "GRH area"
        else:
            [ack] = rdma.tb.sniffers[2].captures[seen[2]:]
            back = ack.packet.roce
            assert (back.dmac, back.sgid, back.dgid, back.vlan, back.pcp) == (
                frame.smac, frame.dgid, frame.sgid, frame.vlan, frame.pcp)
    assert kinds == [(True, None), (False, None), (True, 7)], \
        f"the port's GID table gave frames {kinds}, not IPv4, IPv6 and IPv4 on VLAN 7"
    await rdma.finish(links_idle=False)


# ---------------------------------------------------------------------------------------------
# 5. Counters

@cocotb.test()
async def test_port_counters_saturate(dut):
    """Counters loaded one below all-ones (32-bit PortXmitPkts / PortRcvPkts, 16-bit
    PortRcvErrors, the 64-bit extended ones below 2^32) and then moved by traffic on the wire
    stop at all-ones, while the 64-bit ones carry past 2^32."""
    rdma = await Rdma.open(dut, cabled=True)
    dev = rdma.dev
    for port in (1, 2):
        await dev.load_port_counter(port, PortCounter.XMIT_PKTS, 0xFFFFFFFE)
        await dev.load_port_counter(port, PortCounter.RCV_PKTS, 0xFFFFFFFE)
        await dev.load_port_counter(port, PortCounter.XMIT_DATA, 0xFFFFFFF0)
        await dev.load_port_counter(port, PortCounter.RCV_ERRORS, 0xFFFE)
        await dev.load_port_counter(port, PortCounter.XMIT_PKTS_EXT, 0xFFFFFFFE)
    a, b = await wire_pair(rdma, QPType.UC, path_mtu=MTU.MTU256)
    src, dst = await rdma.region(4096), await rdma.region(4096)
    await a.post_send(work_request(WROpcode.RDMA_WRITE, src.sge(), dst.remote(), wr_id=1))
    # and three packets to an address nobody has: port 2 counts them as errors
    dlid, grh = remote_address(rdma, Remote.GID_NOBODY_HAS if rdma.ethernet(1)
                               else Remote.LID_ABOVE_LMC_RANGE)
    c = await rdma.qp(QPType.UC)
    await rdma.connect(c, b.qp_num, port=1, dlid=dlid, grh=grh, path_mtu=MTU.MTU256)
    await c.post_send(work_request(WROpcode.RDMA_WRITE, src.sge(0, 768), dst.remote(), wr_id=2))
    await rdma.poll_until(a.send_cq, 1)
    await rdma.poll_until(c.send_cq, 1)
    # UC completes once the last packet has left port 1: port 2 counts it a little later, so
    # the counters are read once the scoreboard has seen the links fall quiet
    await rdma.finish(links_idle=False)
    one = await counters(rdma, 1)
    two = await counters(rdma, 2)
    assert one[PortCounter.XMIT_PKTS] == 0xFFFFFFFF
    assert one[PortCounter.XMIT_DATA] == 0xFFFFFFFF
    assert one[PortCounter.XMIT_PKTS_EXT] == 0xFFFFFFFE + 16 + 3
    assert two[PortCounter.RCV_PKTS] == 0xFFFFFFFF
    assert two[PortCounter.RCV_ERRORS] == 0xFFFF


# ---------------------------------------------------------------------------------------------
# 6. RC answers: NAKs, RNR, no answer

class Fault(Enum):
    BAD_RKEY = "RDMA WRITE with an rkey of no MR: NAK remote access error"
    RECEIVE_TOO_SMALL = "SEND of 3000 bytes into a 2000-byte receive: NAK invalid request"
    RECEIVE_BAD_LKEY = "SEND into a receive whose lkey names no MR: NAK remote operational error"
    NO_RECEIVE = "SEND with no receive posted and rnr_retry 2: three RNR NAKs"
    NO_SUCH_QP = "SEND to a QPN that does not exist: no answer, resent twice, then RETRY_EXC_ERR"


@cocotb.test()
@cocotb.parametrize(fault=list(Fault))
async def test_rc_faults_on_the_wire(dut, fault):
    """RC faults detected by the responder on port 2 reach the requester on port 1 as NAKs (or
    as silence): each completes with its verbs status, the destination QP moves to ERR where
    the rule says so, and the NAK and retried packets are the model's and counted."""
    rdma = await Rdma.open(dut, cabled=True)
    a, b = await wire_pair(rdma, QPType.RC, path_mtu=MTU.MTU1024, rnr_retry=2)
    src, dst = await rdma.region(4096), await rdma.region(4096)
    if fault == Fault.BAD_RKEY:
        remote = dst.remote(0)
        wr = replace(work_request(WROpcode.RDMA_WRITE, src.sge(0, 100), remote, wr_id=1),
                     rkey=remote.rkey ^ 0x5500)
        status = WCStatus.REM_ACCESS_ERR
    elif fault == Fault.RECEIVE_TOO_SMALL:
        await b.post_recv(RecvWR(dst.sge(0, 2000), wr_id=7))
        wr = work_request(WROpcode.SEND, src.sge(0, 3000), wr_id=1)
        status = WCStatus.REM_INV_REQ_ERR
    elif fault == Fault.RECEIVE_BAD_LKEY:
        await b.post_recv(RecvWR(SGE(dst.sge().addr, 4096, unregistered_key(rdma.dev)), wr_id=7))
        wr = work_request(WROpcode.SEND, src.sge(0, 100), wr_id=1)
        status = WCStatus.REM_OP_ERR
    elif fault == Fault.NO_RECEIVE:
        wr = work_request(WROpcode.SEND, src.sge(0, 3000), wr_id=1)
        status = WCStatus.RNR_RETRY_EXC_ERR
    else:
        c = await rdma.qp(QPType.RC)
        await rdma.connect(c, 0xFFFF, port=1, dlid=port_lid(rdma, 2), timeout=1, retry_cnt=2)
        a = c
        wr = work_request(WROpcode.SEND, src.sge(0, 100), wr_id=1)
        status = WCStatus.RETRY_EXC_ERR
    await a.post_send(wr)
    [wc] = await rdma.poll_until(a.send_cq, 1, cycles=100000)
    assert_wc(wc, wr_id=1, status=status)
    if fault in (Fault.RECEIVE_TOO_SMALL, Fault.RECEIVE_BAD_LKEY):
        [rwc] = await rdma.poll_until(b.recv_cq, 1)
        assert_wc(rwc, wr_id=7, opcode=WCOpcode.RECV, status=(
            WCStatus.LOC_LEN_ERR if fault == Fault.RECEIVE_TOO_SMALL else WCStatus.LOC_PROT_ERR))
    await rdma.finish(links_idle=False)


@cocotb.test()
async def test_answers_that_find_the_response_queue_full_are_discarded_and_recovered(dut):
    """Port 2 sends an RC WRITE at static rate 15 (each 1 KiB packet followed by 14 times its
    length of idle link: some 3,800 cycles at any width) while port 1 sends it 48 small RC
    WRITEs on 3 QPs: port 2's transmit side is busy with the slow message, its response queue
    (16 answers) fills, and the receive path discards the ACKs that find it full rather than
    wait, counting them in PortXmitDiscards. Every WR still completes SUCCESS with its bytes in
    place (a later ACK covers a discarded one, the requester's timer resends what none
    covers), and the scoreboard leaves the flows the discards made unpredictable out of its
    comparison of the links."""
    rdma = await Rdma.open(dut, cabled=True)
    long_a, long_b = await wire_pair(rdma, QPType.RC, static_rate=15, path_mtu=MTU.MTU1024)
    # timeout 3 (8192 cycles) outlasts the slow message: no resend before the queue drains
    pairs = [await wire_pair(rdma, QPType.RC, timeout=3) for _ in range(3)]
    length = 1024 * rdma.tb.data_width // 32      # packets of 8192 / width beats each
    big_src, big_dst = await rdma.region(length), await rdma.region(length)
    small_src, small_dst = await rdma.region(48 * 64), await rdma.region(48 * 64)
    before = await counters(rdma, 2)
    await long_b.post_send(work_request(WROpcode.RDMA_WRITE, big_src.sge(0, length),
                                        big_dst.remote(0), wr_id=0xB16))
    for q, (a, _) in enumerate(pairs):
        await a.post_send([work_request(WROpcode.RDMA_WRITE, small_src.sge(64 * (16 * q + k), 64),
                                        small_dst.remote(64 * (16 * q + k)), wr_id=k)
                           for k in range(16)])
    [wc] = await rdma.poll_until(long_b.send_cq, 1, cycles=500_000)
    assert_wc(wc, wr_id=0xB16, status=WCStatus.SUCCESS)
    for a, _ in pairs:
        wcs = await rdma.poll_until(a.send_cq, 16, cycles=500_000)
        assert [(wc.wr_id, wc.status) for wc in wcs] == [(k, WCStatus.SUCCESS) for k in range(16)]
    after = await counters(rdma, 2)
    assert moved(before, after, PortCounter.XMIT_DISCARDS_EXT) > 0, \
        "port 2 discarded no answer: the test did not fill its response queue"
    await rdma.finish(links_idle=False)


@cocotb.test()
async def test_a_port_sends_its_answers_before_new_requests(dut):
    """Port 1 is sending two 32 KiB RDMA WRITEs (path MTU 1024: 32 packets each) when an RDMA
    READ request from port 2 reaches it, and a third WRITE is waiting for room: the READ
    response, queued behind the WRITE being sent, leaves before the third WRITE."""
    rdma = await Rdma.open(dut, cabled=True)
    writer, sink = await wire_pair(rdma, QPType.RC, path_mtu=MTU.MTU1024)
    server, reader = await wire_pair(rdma, QPType.RC)
    sizes = (32768, 32768, 4096)
    src, dst = await rdma.region(sum(sizes)), await rdma.region(sum(sizes))
    window, inbox = await rdma.region(64), await rdma.region(64)
    writes = [work_request(WROpcode.RDMA_WRITE, src.sge(sum(sizes[:k]), size),
                           dst.remote(sum(sizes[:k])), wr_id=k) for k, size in enumerate(sizes)]
    await writer.post_send(writes[:2])
    # the READ before the third WRITE: the requester, which serves both ports, then waits at
    # port 1 with that WRITE until port 1 has room
    await reader.post_send(rdma_read(inbox.sge(0, 64), window.remote(0), wr_id=0x99))
    await writer.post_send(writes[2])
    [wc] = await rdma.poll_until(reader.send_cq, 1)
    assert_wc(wc, wr_id=0x99, status=WCStatus.SUCCESS)
    assert inbox.read() == window.read()
    wcs = await rdma.poll_until(writer.send_cq, len(sizes), cycles=500_000)
    assert [wc.status for wc in wcs] == [WCStatus.SUCCESS] * len(sizes)

    sniffers = rdma.tb.sniffers
    [request] = [c.cycle for c in sniffers[2].captures if c.packet.bth.dest_qp == server.qp_num]
    [response] = [c.cycle for c in sniffers[1].captures if c.packet.bth.dest_qp == reader.qp_num]
    base = dst.remote(0).addr
    starts = {c.packet.reth.va - base: c.cycle for c in sniffers[1].captures     # first packets
              if c.packet.reth is not None}
    packets = [c.cycle for c in sniffers[1].captures if c.packet.bth.dest_qp == sink.qp_num]
    rdma.tb.log.info("READ request sent at cycle %d, response at %d; WRITEs from %s",
                     request, response, starts)
    assert request < packets[(sizes[0] + sizes[1]) // 1024 - 1], \
        "the READ request came after the second WRITE had left: the test came too late"
    assert sorted(starts) == [0, sizes[0], sizes[0] + sizes[1]]
    assert response < starts[sizes[0] + sizes[1]], \
        f"the third WRITE (cycle {starts[sizes[0] + sizes[1]]}) left before the READ response " \
        f"(cycle {response})"
    await rdma.finish(links_idle=False)


@cocotb.test()
@cocotb.parametrize(opcode=[WROpcode.RDMA_READ, WROpcode.ATOMIC_FETCH_AND_ADD])
async def test_an_answer_host_memory_refuses_completes_general_err(dut, opcode):
    """An RC READ of 3000 bytes (three responses at path MTU 1024) or a FetchAdd from port 1
    to port 2, whose local buffer host memory answers SLVERR to in part: the answer arrives
    whole, but its data cannot be stored, so the WQE completes GENERAL_ERR (not SUCCESS over
    bytes that never landed), the QP goes to ERR and the next WR is flushed."""
    rdma = await Rdma.open(dut, cabled=True)
    a, b = await wire_pair(rdma, QPType.RC, path_mtu=MTU.MTU1024)
    local, remote = await rdma.region(4096), await rdma.region(4096)
    if opcode == WROpcode.RDMA_READ:
        wr = work_request(opcode, local.sge(0, 3000), remote.remote(0), wr_id=0x31)
        window = (local.mr.host_addr + 1500, 64)        # in the second response's bytes
    else:
        wr = atomic_fetch_and_add(local.sge(0, 8), remote.remote(8), 5, wr_id=0x31)
        window = (local.mr.host_addr, 8)
    await fails_general_err_then_flushes(rdma, a, wr, window)
    await rdma.finish(links_idle=False)


async def message_across(rdma, transport, opcode, wr_id):
    """QPs a (port 1) and b (port 2) of `transport`, two regions of 4 KiB (local, inbox) and
    a message from a to b: `opcode` of 3000 bytes at path MTU 1024 (three packets; a WRITE
    goes to inbox), or on UD a SEND of 1000 bytes."""
    local, inbox = await rdma.region(4096), await rdma.region(4096)
    if transport == QPType.UD:
        a, b = await rdma.ud_qp(1), await rdma.ud_qp(2)
        ah = await rdma.ah(1, port_lid(rdma, 2))
        wr = ud_send(local.sge(0, 1000), ah, b.qp_num, QKEY, wr_id=wr_id)
    else:
        a, b = await wire_pair(rdma, transport, path_mtu=MTU.MTU1024)
        wr = work_request(opcode, local.sge(0, 3000), inbox.remote(0), wr_id=wr_id)
    return a, b, local, inbox, wr


async def fails_general_err_then_flushes(rdma, qp, wr, window):
    """`wr`, posted on `qp` while host memory refuses `window`, completes GENERAL_ERR and
    moves `qp` to ERR; with host memory healed, the next WR is flushed."""
    rdma.host_memory_fails(*window)
    await qp.post_send(wr)
    [wc] = await rdma.poll_until(qp.send_cq, 1)
    assert_wc(wc, wr_id=wr.wr_id, status=WCStatus.GENERAL_ERR)
    assert rdma.tb.mem.faults > 0
    await rdma.assert_state(qp, QPState.ERR)
    rdma.host_memory_fails()
    await qp.post_send(replace(wr, wr_id=wr.wr_id + 1))
    [wc] = await rdma.poll_until(qp.send_cq, 1)
    assert_wc(wc, wr_id=wr.wr_id + 1, status=WCStatus.WR_FLUSH_ERR)


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC, QPType.UD])
async def test_a_payload_host_memory_refuses_leaves_aborted_and_completes_general_err(
        dut, transport):
    """A SEND of 3000 bytes (three packets at path MTU 1024; UD: one datagram of 1000 bytes)
    from port 1 to port 2, 64 bytes of whose payload host memory answers SLVERR to (in the
    second packet; UD's only one): the packet they were to fill leaves aborted (tuser), port 2
    drops it as a bad frame (PortRcvErrors), no receive completes, and the sender completes
    GENERAL_ERR, not SUCCESS over bytes it never read; its QP goes to ERR and the next WR is
    flushed. The receive stays posted (what the first packet wrote into it is not decided),
    and no PSN-checked packet after the aborted one is taken."""
    rdma = await Rdma.open(dut, cabled=True)
    a, b, local, inbox, wr = await message_across(rdma, transport, WROpcode.SEND, 0x41)
    # in the second packet's bytes (UD: the datagram's)
    window = (local.mr.host_addr + (512 if transport == QPType.UD else 1536), 64)
    await b.post_recv(RecvWR(inbox.sge(0, 4096), wr_id=0x51))
    before = {p: await counters(rdma, p) for p in (1, 2)}
    await fails_general_err_then_flushes(rdma, a, wr, window)
    await rdma.cycles(2000)
    assert await b.recv_cq.poll() == [], "a message with an aborted packet was delivered"
    aborted = [c for c in rdma.tb.sniffers[1].captures if c.aborted]
    assert len(aborted) == 1, f"{len(aborted)} packets left port 1 aborted, expected 1"
    after = {p: await counters(rdma, p) for p in (1, 2)}
    assert moved(before[2], after[2], PortCounter.RCV_ERRORS) == 1
    assert moved(before[1], after[1], PortCounter.XMIT_PKTS) == \
        moved(before[2], after[2], PortCounter.RCV_PKTS) + 1
    await rdma.finish(links_idle=False)


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC, QPType.UD])
async def test_a_payload_the_responder_cannot_store_is_not_taken(dut, transport):
    """Port 2's host memory answers SLVERR to 64 bytes of where an arriving message goes (an
    RC WRITE of 3000 bytes at path MTU 1024, in its second packet's range; a UC SEND of 3000
    bytes, in its second packet's piece of the receive; a UD SEND of 1000 bytes): the
    message goes no further. RC answers remote operational error at that packet, so the
    sender completes REM_OP_ERR, not SUCCESS over bytes that never landed; UC and UD drop
    it as if lost (the sender completes SUCCESS, no receive completes, the receive stays
    posted and takes the next message)."""
    rdma = await Rdma.open(dut, cabled=True)
    opcode = WROpcode.RDMA_WRITE if transport == QPType.RC else WROpcode.SEND
    a, b, _, inbox, wr = await message_across(rdma, transport, opcode, 0x61)
    window = (inbox.mr.host_addr + (GRH_BYTES + 512 if transport == QPType.UD else 1536), 64)
    await b.post_recv(RecvWR(inbox.sge(0, 4096), wr_id=0x71))
    rdma.host_memory_fails(*window)
    await a.post_send(wr)
    [wc] = await rdma.poll_until(a.send_cq, 1)
    assert_wc(wc, wr_id=0x61, status=WCStatus.REM_OP_ERR if transport == QPType.RC
              else WCStatus.SUCCESS)
    assert rdma.tb.mem.faults > 0
    await rdma.cycles(2000)
    assert await b.recv_cq.poll() == [], "a message host memory refused was delivered"
    rdma.host_memory_fails()
    if transport != QPType.RC:
        # the receive is still posted: the next message takes it
        await a.post_send(replace(wr, wr_id=0x62))
        [wc] = await rdma.poll_until(a.send_cq, 1)
        assert_wc(wc, wr_id=0x62, status=WCStatus.SUCCESS)
        [rwc] = await rdma.poll_until(b.recv_cq, 1)
        assert_wc(rwc, wr_id=0x71, status=WCStatus.SUCCESS)
    await rdma.finish(links_idle=False)


@cocotb.test()
@cocotb.parametrize(loss=[0.01, 0.1] if REGRESS else [0.01])     # 10 %: make regress
async def test_rc_exactly_once_over_the_lossy_cable(dut, loss):
    """RC WRITEs, SENDs, READs and WRITEs with immediate of 0 to 5000 bytes (up to five
    packets at a 1024-byte path MTU) from port 1 to port 2 and back over the device's own
    cable, while each direction holds every packet 300 cycles, loses `loss` of them (half
    dropped, half corrupted: ICRC or VCRC), duplicates them at `loss` and delays or reorders
    them at loss / 2 each, and besides drops its third packet and corrupts its eighth (some 80
    packets cross each way: the rates alone may leave a run without a loss). Every WR completes SUCCESS with
    what a perfect cable gives, memory is the model's (each WRITE landed once, each SEND took
    one receive), and the port counters agree with what the cable did: a port sent what its
    direction took, and what arrived counted good, or in PortRcvErrors when corrupted. The
    pcaps under sim/out/ show each direction as sent and as arrived."""
    rdma = await Rdma.open(dut, cabled=True)
    rdma.sb.cables_lossy(rdma.tb.watch_arrivals())
    for port, cable in rdma.tb.cables.items():
        faults = lossy_cable(loss, SEED * 2 + port, forced=SURE_LOSSES)
        faults.apply(cable)
        dut._log.info("cable from port %d: %s", port, faults.describe())
    a, b = await wire_pair(rdma, QPType.RC, path_mtu=MTU.MTU1024, timeout=3, retry_cnt=7)
    per_direction = 12
    src = await rdma.region(2 * per_direction * LOSSY_SLOT)
    dst = await rdma.region(2 * per_direction * LOSSY_SLOT)
    before = {p: await counters(rdma, p) for p in PEER}
    posted = {}
    for s, (sender, receiver) in enumerate(((a, b), (b, a))):
        await post_lossy_rc(rdma.rng, sender, receiver, (src, dst), (src, dst),
                            s * per_direction, per_direction, s << 8, posted)
    await assert_all_succeed(posted, {a: rdma, b: rdma})
    # what each port sent and what reached the far end, one pcap each
    run = f"test_wire.lossy_cable-w{rdma.tb.data_width}-loss{loss}"
    simrun.OUT.mkdir(parents=True, exist_ok=True)
    for port in PEER:
        rdma.tb.sniffers[port].write_pcap(simrun.OUT / f"{run}.port{port}.pcap")
        rdma.tb.arrivals[port].write_pcap(simrun.OUT / f"{run}.port{port}-arrived.pcap")
    await rdma.finish(links_idle=False)
    after = {p: await counters(rdma, p) for p in PEER}
    delta = {p: {c: moved(before[p], after[p], c) for c in after[p]} for p in PEER}
    for port, cable in rdma.tb.cables.items():
        stats = LinkFaults.stats(cable)
        assert stats["dropped"] > 0 and stats["corrupted"] > 0, (port, stats)
        assert_counters_follow_cable(delta[port], delta[PEER[port]], stats, f"port {port}")


@cocotb.test()
async def test_rc_read_of_1mib_plus_7_over_the_cable(dut):
    """An RC RDMA READ of 1 MiB + 7 bytes from an odd offset on port 2 to an odd offset on port
    1 across the cable: 257 READ responses at a 4096-byte path MTU, far longer on the wire than
    one ACK timeout (timeout 1: 2048 cycles; 2 at 64 bits), which each arriving response
    restarts. It completes SUCCESS with every byte in place; nothing around it changes."""
    rdma = await Rdma.open(dut, cabled=True)
    a, _ = await wire_pair(rdma, QPType.RC, timeout=long_read_timeout(rdma.tb.data_width),
                           retry_cnt=1)
    await long_read(rdma, rdma, a, (1 << 20) + 7)
    await rdma.finish(links_idle=False)


class PacketPath(Enum):
    CABLE = "port 1 to port 2 across the cable"
    INTERNAL_LOOPBACK = "port 1 to itself, the bypass off"


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC], path=list(PacketPath))
async def test_megabyte_write_on_the_packet_path(dut, transport, path):
    """An RC or UC RDMA WRITE of 1 MiB + 3 bytes between odd offsets, across the cable or
    through the port's internal loopback (the bypass off): 257 packets at a 4096-byte path MTU;
    the message lands whole, nothing around it changes, and the scoreboard checks every
    packet."""
    rdma = await Rdma.open(dut, cabled=True)
    await rdma.dev.set_bypass(path != PacketPath.INTERNAL_LOOPBACK)
    if path == PacketPath.CABLE:
        a, _ = await wire_pair(rdma, transport)
    else:
        a, _ = await rdma.connected_pair(transport)
    length = (1 << 20) + 3
    local, remote = await rdma.region(length + 64), await rdma.region(length + 64)
    before = remote.read()
    await a.post_send(work_request(WROpcode.RDMA_WRITE, local.sge(13, length), remote.remote(51),
                                   wr_id=0xAC))
    [wc] = await rdma.poll_until(a.send_cq, 1, cycles=2_000_000)
    assert_wc(wc, wr_id=0xAC, status=WCStatus.SUCCESS, opcode=WCOpcode.RDMA_WRITE)
    # a UC WRITE completes once its packets have left: wait for them to land
    await rdma.finish(links_idle=False)
    after = remote.read()
    assert after[51:51 + length] == local.read(13, length), "the message differs"
    assert after[:51] == before[:51] and after[51 + length:] == before[51 + length:], (
        "bytes around the message changed")


# ---------------------------------------------------------------------------------------------
# 7. Mixed traffic: the sniffers see the wire messages and nothing of the loopback ones

@cocotb.test()
async def test_mixed_traffic_sniffed(dut):
    """Loopback pairs on each port and pairs across the cable, RC, UC and UD, all posted before
    anything is polled: every message lands; the packets on the links are exactly the model's
    (the scoreboard), every one of them belongs to a QP pair across the cable, and the port
    counters equal the model's; LB_MSGS counts exactly the loopback messages."""
    rdma = await Rdma.open(dut, cabled=True)
    cq = await rdma.dev.create_cq(256)
    src, dst = await rdma.region(4096), await rdma.region(48 * 4096)
    senders, wire_qpns, expected_lb = [], set(), [0, 0]
    slot = 0
    for transport in (QPType.RC, QPType.UC, QPType.UD):
        for across in (False, True):
            for port in (1, 2):
                if transport == QPType.UD:
                    a = await rdma.ud_qp(port, cq=cq)
                    b = await rdma.ud_qp(PEER[port] if across else port, cq=cq)
                    ah = await rdma.ah(port, port_lid(rdma, b.attr.port_num))
                else:
                    a, b = await rdma.qp(transport, cq, cq), await rdma.qp(transport, cq, cq)
                    far = PEER[port] if across else port
                    await rdma.connect(a, b.qp_num, port=port, dlid=port_lid(rdma, far),
                                       path_mtu=MTU.MTU1024)
                    await rdma.connect(b, a.qp_num, port=far, dlid=port_lid(rdma, port),
                                       path_mtu=MTU.MTU1024)
                    ah = None
                wrs = []
                for k, opcode in enumerate(DATA_OPCODES[transport]):
                    length = 1 + (977 * (slot + k)) % 3000
                    if opcode in NEEDS_RECEIVE:
                        await b.post_recv(RecvWR(dst.sge(slot * 4096, 4096), wr_id=slot))
                    if ah:
                        wrs.append(ud_send(src.sge(0, min(length, 2000)), ah, b.qp_num, QKEY,
                                           wr_id=slot))
                    else:
                        remote = (src if opcode == WROpcode.RDMA_READ else dst).remote(
                            slot * 4096 if opcode != WROpcode.RDMA_READ else 0)
                        local = (dst.sge(slot * 4096, length)
                                 if opcode == WROpcode.RDMA_READ else src.sge(0, length))
                        wrs.append(work_request(opcode, local, remote, wr_id=slot))
                    slot += 1
                senders.append((a, wrs))
                if across:
                    wire_qpns |= {a.qp_num, b.qp_num}
                else:
                    expected_lb[0] += len(wrs)
                    expected_lb[1] += sum(wr.sge.length for wr in wrs)
    for a, wrs in senders:
        await a.post_send(wrs)
    total = sum(len(wrs) for _, wrs in senders)
    wcs = [wc for wc in await rdma.poll_until(cq, total + sum(
        1 for _, wrs in senders for wr in wrs if wr.opcode in NEEDS_RECEIVE), cycles=400000)]
    assert all(wc.status == WCStatus.SUCCESS for wc in wcs)
    for port in (1, 2):
        for packet in rdma.tb.sniffers[port].packets():
            assert packet.bth.dest_qp in wire_qpns, \
                f"a packet on port {port}'s link for QP {packet.bth.dest_qp}, a loopback pair"
        assert rdma.tb.sniffers[port].packets(), f"nothing on port {port}'s link"
    await rdma.assert_loopback_moves(*expected_lb)
    await rdma.finish(links_idle=False)


# ---------------------------------------------------------------------------------------------
# The pytest runner: rdma_dev's packet path on a device whose two ports are cabled to each other at
# each supported data width, in two groups per width (one simulator process each): the 1 MiB
# messages, which make regress runs at every width and make coverage at 256 bits (make test
# reads 128 KiB + 7 between devices in test_fabric), and everything else. At 64 and 512 bits
# make test runs the tests whose packets the width shapes (every opcode and size class over
# the cable, UD, path MTUs, mixed traffic) and make regress and make coverage all of them:
# the rules the rest check do not depend on the width, and its packetizer, depacketizer and
# DMA engine have tests of their own at every width.

MIB_TESTS = "(test_rc_read_of_1mib_plus_7_over_the_cable|test_megabyte_write_on_the_packet_path)"
WIDTH_TESTS = ("(test_wire_opcode|test_wire_ud_send|test_every_size_class_through_the_internal_"
               "loopback|test_path_mtu_sets_packets_not_loopback_cycles|test_mixed_traffic_sniffed)")
# The "ethernet" group runs the same programs with both ports on Ethernet (RoCE v2,
# RDMA_LINK=eth): every test but test_source_path_bits_in_slid (RoCE v2 has no LIDs), and
# ETHERNET_ONLY, its counterpart, which the "main" group leaves out. They address their peers
# through the RDMA program's helpers (a LID stands for the GID of the port that owns it;
# test_not_loopback's addresses are the link's own) and leave the completion fields Ethernet
# changes (no SLID or SL, always a GRH) to the model. make test runs ETHERNET_CORE at 256
# bits: every opcode over the cable, RC over a lossy cable, the bypass switch, atomics on
# every path, the internal loopback's size classes and the frames of each GID table entry
# (IPv4, IPv6, VLAN 7; UD, and RC's answers); make regress all of them at every width, the
# 1 MiB messages too.
ETHERNET_ONLY = ("test_sgid_index_chooses_the_source_address_and_vlan",)
ETHERNET_CORE = ("test_wire_opcode", "test_rc_exactly_once_over_the_lossy_cable",
                 "test_bypass_switch_same_results", "test_atomics_give_the_same_results_on_every_path",
                 "test_every_size_class_through_the_internal_loopback") + ETHERNET_ONLY
ETHERNET_TESTS = ETHERNET_CORE + (
    "test_a_faulty_atomic_fails_the_same_on_every_path",
    "test_a_limited_partition_member_drops_its_loopback_on_both_paths",
    "test_a_payload_host_memory_refuses_leaves_aborted_and_completes_general_err",
    "test_a_payload_the_responder_cannot_store_is_not_taken",
    "test_a_port_sends_its_answers_before_new_requests",
    "test_an_answer_host_memory_refuses_completes_general_err",
    "test_answers_that_find_the_response_queue_full_are_discarded_and_recovered",
    "test_atomic_write_across_the_cable", "test_atomics_are_refused_on_uc_and_ud",
    "test_each_responder_rule_judges_the_same_on_both_paths",
    "test_megabyte_write_on_the_packet_path", "test_memory_windows_across_the_cable",
    "test_mixed_traffic_sniffed", "test_not_loopback",
    "test_path_mtu_sets_packets_not_loopback_cycles", "test_port_counters_saturate",
    "test_rc_faults_on_the_wire", "test_rc_read_of_1mib_plus_7_over_the_cable",
    "test_shared_receive_queue_across_the_cable", "test_static_rate_slows_wire_not_loopback",
    "test_wire_ud_send")
GROUPS = {  # COCOTB_TEST_FILTER patterns, matched against "test_wire.<test name>[/params]"
    "megabyte": rf"^test_wire\.{MIB_TESTS}(/|$)",
    "main": rf"^test_wire\.(?!({MIB_TESTS}|{'|'.join(ETHERNET_ONLY)})(/|$))",
    "ethernet": rf"^test_wire\.({'|'.join(ETHERNET_TESTS)})(/|$)",
}


@pytest.mark.parametrize("group", list(GROUPS))
@pytest.mark.parametrize("w", [64, 256, 512])
def test_wire(w, group):
    if group == "megabyte" and not (REGRESS or (coverage_enabled() and w == 256)):
        pytest.skip("the 1 MiB messages on the packet path run under make regress "
                    "(and make coverage)")
    if group == "ethernet" and w != 256 and not REGRESS:
        pytest.skip("Ethernet ports at 64 and 512 bits: make regress")
    pattern = GROUPS[group]
    if group == "main" and w != 256 and not (REGRESS or coverage_enabled()):
        pattern = rf"^test_wire\.{WIDTH_TESTS}(/|$)"
    if group == "ethernet" and not REGRESS:
        pattern = rf"^test_wire\.({'|'.join(ETHERNET_CORE)})(/|$)"
    simrun.run(
        toplevel="tb_rdma_dev",
        test_module="test_wire",
        parameters={"DATA_WIDTH": w, "CABLE": 1},
        extra_env={"COCOTB_TEST_FILTER": pattern,
                   "RDMA_LINK": "eth" if group == "ethernet" else "ib"},
    )
