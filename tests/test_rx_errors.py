"""Packets the testbench puts on rdma_dev's RX links itself (harness tb/hdl/tb_rdma_dev.v with
CABLE = 0: the links end at the testbench).

Each bad packet is a good one (built by tb/ib_packet.py) with one thing wrong and, unless the
thing wrong is a CRC, both CRCs recomputed, so only the field under test can make the device
drop it. A dropped packet counts once in the port's PortRcvErrors and changes no memory; a good
packet right after it is delivered. The scoreboard checks memory, completions and every port
counter against the model, which is told what was injected.

With RDMA_LINK=eth the ports are on Ethernet and every packet is a RoCE v2 frame from a far
end behind a GID (tb/rdma_program.FarEnd): the same transport checks, and the frame's own
(FCS, destination MAC, EtherType, IPv4 checksum and fragments, protocol, UDP port and length,
the frame's length, the destination GID and its VLAN) in place of LRH, GRH and VCRC.
"""

from dataclasses import replace
from enum import Enum

import cocotb
import pytest

from tb import coverage, simrun
from tb.ib_crc import fcs_bytes, icrc_bytes, vcrc_bytes
from tb.ib_packet import (
    AETH, BTH, DETH, GRH, ICRC_BYTES, OPCODES, OPCODES_BY_NAME, RETH, ImmDt, Packet, build,
    frame_layout, packetize, reframe,
)
from tb.model import pktlen
from tb.rdma_program import QKEY, FarEnd, Rdma, assert_wc, free_index
from tb.rdma_tb import LINK, LinkInjector
from tb.seed import REGRESS
from tb.verbs import GRH_BYTES, MTU, PortCounter, QPState, QPType, RecvWR, WCStatus

PORT = 2            # injected on port 2's RX link (LID 0x20, LMC 0)
PAYLOAD = bytes(range(48, 48 + 37))


class Bad(Enum):
    # either link: the transport's checks, the ICRC, the frame's end
    ICRC = "ICRC wrong (VCRC or FCS right over it)"
    PADCNT = "PadCnt 2 on a SEND first packet, whose payload must be whole words"
    TVER = "BTH TVer 1"
    OPCODE = "opcode 0x13 (RC compare-and-swap: not supported)"
    PKEY = "P_Key of another partition"
    TRUNCATED = "ends inside the BTH"
    ABORTED = "aborted by the sender (tuser)"
    QPN = "destination QP that does not exist"
    QKEY = "UD Q_Key that is not the QP's"
    # InfiniBand
    VCRC = "VCRC wrong"
    PKTLEN = "LRH PktLen one word short"
    PAYLEN = "GRH PayLen one word long"
    LVER = "LRH LVer 1"
    IPVER = "GRH IPVer 4"
    DLID = "DLID of another port"
    DGID = "DGID not one of the port's"
    # Ethernet (RoCE v2)
    FCS = "FCS wrong"
    DMAC = "destination MAC not the port's"
    ETHERTYPE = "EtherType 0x0806 (ARP)"
    IPV4_CHECKSUM = "IPv4 header checksum wrong"
    FRAGMENT = "IPv4 more fragments"
    PROTOCOL = "IPv4 protocol 6 (TCP)"
    UDP_PORT = "UDP destination port 4790"
    UDP_LENGTH = "UDP length one word longer than the IP packet's"
    TRAILER = "4 bytes between the IP packet and the FCS, the frame past 64 bytes"
    DEST_IP = "destination IPv4 address in no GID table entry"
    VLAN = "tagged for VLAN 9, which the destination GID's entry is not on"


ETHERNET_ONLY = {Bad.FCS, Bad.DMAC, Bad.ETHERTYPE, Bad.IPV4_CHECKSUM, Bad.FRAGMENT, Bad.PROTOCOL,
                 Bad.UDP_PORT, Bad.UDP_LENGTH, Bad.TRAILER, Bad.DEST_IP, Bad.VLAN}
IB_ONLY = {Bad.VCRC, Bad.PKTLEN, Bad.PAYLEN, Bad.LVER, Bad.IPVER, Bad.DLID, Bad.DGID}
# bad at the link: the depacketizer drops them; the model is only told to count them
LINK_BAD = set(Bad) - {Bad.QPN, Bad.QKEY}


def ud_packet(rdma, dest_qp, qkey=QKEY, grh=False):
    """A good UD SEND only packet to port 2 from a far end's QP 0x99 (with a GRH on
    InfiniBand when `grh`; on Ethernet the IP header is always there)."""
    headers = FarEnd(rdma, PORT).to_port(0x99, dest_qp, sl=1)
    if grh and not rdma.ethernet(PORT):
        headers["grh"] = GRH(sgid=bytes(16), dgid=bytes(rdma.dev.ports[PORT].gid), hop_limit=5)
    return Packet(**headers, bth=BTH(opcode=0x64, dest_qp=dest_qp, psn=0),
                  deth=DETH(qkey=qkey, src_qp=0x99), payload=PAYLOAD)


def reseal(body):
    """Good CRCs over `body` (LRH through pad)."""
    with_icrc = body + icrc_bytes(body)
    return with_icrc + vcrc_bytes(with_icrc)


def patch(data, at, value):
    """`data` without its CRCs, byte `at` replaced by `value`, resealed."""
    body = bytearray(data[:-6])
    body[at] = value
    return reseal(bytes(body))


def bad_packet(rdma, bad, qp):
    """The wire bytes of a packet with `bad`, aimed at UD QP `qp` on port 2."""
    if rdma.ethernet(PORT):
        return bad_frame(rdma, bad, qp)
    good = build(ud_packet(rdma, qp.qp_num))
    bth = 8                         # BTH offset without a GRH
    if bad == Bad.VCRC:
        return good[:-1] + bytes([good[-1] ^ 0x01])
    if bad == Bad.ICRC:
        body = good[:-6]
        icrc = bytes([icrc_bytes(body)[0] ^ 0x80]) + icrc_bytes(body)[1:]
        return body + icrc + vcrc_bytes(body + icrc)
    if bad == Bad.PKTLEN:
        return patch(good, 5, good[5] - 1)
    if bad == Bad.PAYLEN:
        data = build(ud_packet(rdma, qp.qp_num, grh=True))
        return patch(data, 8 + 5, data[8 + 5] + 4)
    if bad == Bad.PADCNT:
        data = build(uc_send_first(rdma, qp))
        return patch(data, bth + 1, data[bth + 1] | 0x20)
    if bad == Bad.LVER:
        return patch(good, 0, good[0] | 0x01)
    if bad == Bad.TVER:
        return patch(good, bth + 1, good[bth + 1] | 0x01)
    if bad == Bad.IPVER:
        data = build(ud_packet(rdma, qp.qp_num, grh=True))
        return patch(data, 8, 0x40 | data[8] & 0x0F)
    if bad == Bad.OPCODE:
        return patch(good, bth, 0x13)
    if bad == Bad.DLID:
        return patch(good, 3, rdma.dev.ports[1].lid)
    if bad == Bad.DGID:
        data = build(ud_packet(rdma, qp.qp_num, grh=True))
        return patch(data, 8 + 39, data[8 + 39] ^ 0x01)
    if bad == Bad.PKEY:
        return patch(good, bth + 3, 0x00)     # P_Key 0xFF00
    if bad == Bad.TRUNCATED:
        return reseal(good[:bth + 6])
    if bad == Bad.QPN:
        return build(ud_packet(rdma, 0x3E))
    if bad == Bad.QKEY:
        return build(ud_packet(rdma, qp.qp_num, qkey=QKEY ^ 1))
    return good                                # ABORTED: the frame itself is fine


def uc_send_first(rdma, qp):
    """A UC SEND first packet of 32 bytes to `qp` (whose PadCnt must be 0)."""
    return Packet(**FarEnd(rdma, PORT).to_port(0x99, qp.qp_num),
                  bth=BTH(opcode=0x20, dest_qp=qp.qp_num, psn=0), payload=PAYLOAD[:32])


def bad_frame(rdma, bad, qp):
    """The RoCE v2 frame with `bad`, aimed at UD QP `qp` on port 2: a good frame with the one
    field broken and its IPv4 checksum, ICRC and FCS made right for it (but where the check
    is that CRC)."""
    good = build(ud_packet(rdma, qp.qp_num))
    at = frame_layout(good)

    def edited(edit, wire=good, **how):
        """`wire` with edit(body) applied to its destination MAC .. pad, resealed (reframe's
        keywords in `how`)."""
        body = bytearray(wire[:at.end - ICRC_BYTES])
        edit(body)
        return reframe(body, at, **how)

    def put(offset, value, **how):
        return edited(lambda body: body.__setitem__(slice(offset, offset + len(value)), value),
                      **how)

    if bad == Bad.FCS:
        return good[:-1] + bytes([good[-1] ^ 0x01])
    if bad == Bad.ICRC:
        body = bytearray(good[:-4])
        body[at.end - 1] ^= 0x80
        return bytes(body) + fcs_bytes(bytes(body))
    if bad == Bad.PADCNT:
        return edited(lambda body: body.__setitem__(at.bth + 1, body[at.bth + 1] | 0x20),
                      build(uc_send_first(rdma, qp)))
    if bad == Bad.TVER:
        return put(at.bth + 1, bytes([good[at.bth + 1] | 0x01]))
    if bad == Bad.OPCODE:
        return put(at.bth, b"\x13")
    if bad == Bad.PKEY:
        return put(at.bth + 3, b"\x00")              # P_Key 0xFF00
    if bad == Bad.TRUNCATED:
        return edited(lambda body: body.__delitem__(slice(at.bth + 6, None)), lengths=True)
    if bad == Bad.DMAC:
        return put(5, bytes([good[5] ^ 0x01]))
    if bad == Bad.ETHERTYPE:
        return put(at.ip - 2, b"\x08\x06")
    if bad == Bad.IPV4_CHECKSUM:
        return put(at.ip + 11, bytes([good[at.ip + 11] ^ 0x01]), checksum=False)
    if bad == Bad.FRAGMENT:
        return put(at.ip + 6, b"\x20\x00")
    if bad == Bad.PROTOCOL:
        return put(at.ip + 9, b"\x06")
    if bad == Bad.UDP_PORT:
        return put(at.udp + 2, (4790).to_bytes(2, "big"))
    if bad == Bad.UDP_LENGTH:
        udp_length = int.from_bytes(good[at.udp + 4:at.udp + 6], "big")
        return put(at.udp + 4, (udp_length + 4).to_bytes(2, "big"))
    if bad == Bad.TRAILER:
        return edited(lambda body: None, after=bytes(4))
    if bad == Bad.DEST_IP:
        return put(at.ip + 19, bytes([good[at.ip + 19] ^ 0x01]))
    if bad == Bad.VLAN:
        packet = ud_packet(rdma, qp.qp_num)
        return build(replace(packet, roce=replace(packet.roce, vlan=9)))
    if bad == Bad.QPN:
        return build(ud_packet(rdma, 0x3E))
    if bad == Bad.QKEY:
        return build(ud_packet(rdma, qp.qp_num, qkey=QKEY ^ 1))
    return good                                # ABORTED: the frame itself is fine


@cocotb.test()
@cocotb.parametrize(bad=[bad for bad in Bad
                         if bad not in (IB_ONLY if LINK == "eth" else ETHERNET_ONLY)])
async def test_bad_packet_dropped_and_counted(dut, bad):
    """A packet with one thing wrong arrives on port 2 for a UD QP with a receive posted: it is
    dropped, PortRcvErrors moves by one (PortRcvPkts only for the two that pass the link checks
    and fail at the QP), nothing is written and no completion appears; the same packet made
    good is then delivered into the same receive."""
    rdma = await Rdma.open(dut)
    model = rdma.sb.model
    qp = await rdma.ud_qp(port=PORT)
    inbox = await rdma.region(4096)
    await qp.post_recv(RecvWR(inbox.sge(0, 1024), wr_id=0xB1))
    before = await rdma.dev.port_counters(PORT)
    memory = inbox.read()
    link = LinkInjector(dut, PORT)

    await link.send(bad_packet(rdma, bad, qp), abort=bad == Bad.ABORTED)
    if bad in LINK_BAD:
        model.count_injected_bad(PORT)
    else:
        model.receive_injected(PORT, [ud_packet(rdma, 0x3E if bad == Bad.QPN else qp.qp_num,
                                                qkey=QKEY ^ 1 if bad == Bad.QKEY else QKEY)])
    await rdma.cycles(300)
    after = await rdma.dev.port_counters(PORT)
    assert after[PortCounter.RCV_ERRORS] - before[PortCounter.RCV_ERRORS] == 1, \
        f"{bad.value}: PortRcvErrors did not move by one"
    assert after[PortCounter.RCV_PKTS] - before[PortCounter.RCV_PKTS] == (bad not in LINK_BAD)
    assert inbox.read() == memory, f"{bad.value}: memory changed"
    assert await qp.recv_cq.poll() == [], f"{bad.value}: a completion appeared"
    coverage.sample_drop(bad.name)

    good = ud_packet(rdma, qp.qp_num)
    await link.send(build(good))
    model.receive_injected(PORT, [good])
    [wc] = await rdma.poll_until(qp.recv_cq, 1)
    assert_wc(wc, wr_id=0xB1, status=WCStatus.SUCCESS, byte_len=len(PAYLOAD) + GRH_BYTES,
              src_qp=0x99, slid=FarEnd(rdma, PORT).slid)
    assert inbox.read(GRH_BYTES, len(PAYLOAD)) == PAYLOAD
    await rdma.finish()


async def receiving_rc_qp(rdma, rq_psn, wr_id, **attrs):
    """An RC QP of port 2 connected to the far end's QP 0x77 and expecting PSN `rq_psn`
    (`attrs`: more QP attributes), one receive of a 4 KiB region posted (`wr_id`): the QP,
    the far end and the region."""
    far = FarEnd(rdma, PORT)
    qp = await rdma.qp(QPType.RC)
    await rdma.connect(qp, 0x77, port=PORT, **far.address(), rq_psn=rq_psn, **attrs)
    inbox = await rdma.region(4096)
    await qp.post_recv(RecvWR(inbox.sge(0, 4096), wr_id=wr_id))
    return qp, far, inbox


@cocotb.test()
async def test_injected_rc_message_is_acknowledged(dut):
    """An RC SEND of three packets (first, middle, last) put on port 2's link for an RC QP in
    RTR/RTS expecting PSN 0x123456: the data lands, the receive completes, and port 2 answers
    with one ACK carrying the last PSN and MSN 1 on its TX link — the packets the model
    predicts."""
    rdma = await Rdma.open(dut)
    model = rdma.sb.model
    qp, far, inbox = await receiving_rc_qp(rdma, 0x123456, 0xC1, path_mtu=MTU.MTU256)
    data = bytes((7 * i) & 0xFF for i in range(256 * 2 + 100))
    packets = [Packet(**far.to_port(0x77, qp.qp_num, sl=3),
                      bth=BTH(opcode=code, dest_qp=qp.qp_num, psn=0x123456 + i,
                              ackreq=code == 0x02),
                      payload=data[256 * i:256 * (i + 1)])
               for i, code in enumerate((0x00, 0x01, 0x02))]
    link = LinkInjector(dut, PORT)
    for packet in packets:
        await link.send(build(packet))
    model.receive_injected(PORT, packets)
    [wc] = await rdma.poll_until(qp.recv_cq, 1)
    assert_wc(wc, wr_id=0xC1, status=WCStatus.SUCCESS, byte_len=len(data), src_qp=0x77,
              slid=far.slid, sl=rdma.sl(PORT, 3))
    assert inbox.read(0, len(data)) == data
    await rdma.cycles(300)
    [ack] = rdma.tb.sniffers[PORT].packets()
    assert (ack.bth.opcode, ack.bth.psn, ack.aeth.msn) == (0x11, 0x123458, 1)
    assert far.sent_to(ack), ack.summary()
    await rdma.finish(links_idle=False)


@cocotb.test(skip=LINK != "eth")
async def test_a_priority_tagged_request_reaches_an_untagged_gid(dut):
    """Ethernet: VLAN ID 0 is no VLAN (802.1Q), so an RC SEND whose frame carries a priority
    tag (VID 0, PCP 5) to the port's untagged GID is delivered as an untagged one would be; the
    ACK goes back in the request's VLAN, priority-tagged too — the packets the model predicts."""
    rdma = await Rdma.open(dut)
    assert rdma.ethernet(PORT), "an Ethernet test: test_rx_errors[w-eth] runs it"
    model = rdma.sb.model
    assert rdma.dev.ports[PORT].gid_table[0].vlan is None, "the port's GID 0 is untagged"
    qp, far, inbox = await receiving_rc_qp(rdma, 0x40, 0xC2)
    headers = far.to_port(0x77, qp.qp_num)
    headers["roce"] = replace(headers["roce"], vlan=0, pcp=5)
    packet = Packet(**headers, bth=BTH(opcode=0x04, dest_qp=qp.qp_num, psn=0x40, ackreq=True),
                    payload=PAYLOAD)
    await LinkInjector(dut, PORT).send(build(packet))
    model.receive_injected(PORT, [packet])
    [wc] = await rdma.poll_until(qp.recv_cq, 1)
    assert_wc(wc, wr_id=0xC2, status=WCStatus.SUCCESS, byte_len=len(PAYLOAD), src_qp=0x77)
    assert inbox.read(0, len(PAYLOAD)) == PAYLOAD
    await rdma.cycles(300)
    [ack] = rdma.tb.sniffers[PORT].packets()
    assert (ack.bth.opcode, ack.bth.psn, ack.roce.vlan) == (0x11, 0x40, 0), ack.summary()
    assert far.sent_to(ack), ack.summary()
    await rdma.finish(links_idle=False)


@cocotb.test()
async def test_interleaved_messages_of_many_qps_all_land(dut):
    """Three-packet messages of three QPs arrive interleaved packet by packet on port 2, as
    behind a switch merging three senders, with a UD packet among them: an RC SEND, a UC SEND
    and an RC RDMA WRITE. Each QP keeps its own message in progress, so all three land whole,
    both receives complete, and the RC QPs answer each with one ACK — the packets and memory
    the model predicts message by message."""
    rdma = await Rdma.open(dut)
    model = rdma.sb.model
    far = FarEnd(rdma, PORT)
    size = 256 * 2 + 100
    messages, checks = [], []
    for n, (qp_type, op) in enumerate(((QPType.RC, "SEND"), (QPType.UC, "SEND"),
                                       (QPType.RC, "RDMA_WRITE"))):
        qp = await rdma.qp(qp_type)
        psn = 0x100 * (n + 1)
        await rdma.connect(qp, 0x70 + n, port=PORT, **far.address(), rq_psn=psn,
                           path_mtu=MTU.MTU256)
        inbox = await rdma.region(4096)
        data = bytes((n + 3 * i) & 0xFF for i in range(size))
        reth = None
        if op == "SEND":
            await qp.post_recv(RecvWR(inbox.sge(0, 4096), wr_id=0xD0 + n))
            checks.append((qp, 0xD0 + n, inbox, 0, data, 0x70 + n))
        else:
            target = inbox.remote(64)
            reth = RETH(va=target.addr, rkey=target.rkey, dma_len=size)
            checks.append((None, None, inbox, 64, data, 0x70 + n))
        messages.append(packetize(qp_type.name, op, data, 256,
                                  **far.to_port(0x70 + n, qp.qp_num, sl=3), dest_qp=qp.qp_num,
                                  psn=psn, reth=reth))
    ud = await rdma.ud_qp(port=PORT)
    ud_inbox = await rdma.region(4096)
    await ud.post_recv(RecvWR(ud_inbox.sge(0, 1024), wr_id=0xDF))
    link = LinkInjector(dut, PORT)
    for i in range(3):
        for packets in messages:
            await link.send(build(packets[i]))
        if i == 1:
            await link.send(build(ud_packet(rdma, ud.qp_num)))
    for packets in messages:
        model.receive_injected(PORT, packets)
        if packets is messages[1]:
            model.receive_injected(PORT, [ud_packet(rdma, ud.qp_num)])
    for qp, wr_id, inbox, offset, data, peer in checks:
        if qp is not None:
            [wc] = await rdma.poll_until(qp.recv_cq, 1)
            assert_wc(wc, wr_id=wr_id, status=WCStatus.SUCCESS, byte_len=len(data),
                      src_qp=peer, slid=far.slid, sl=rdma.sl(PORT, 3))
    [wc] = await rdma.poll_until(ud.recv_cq, 1)
    assert_wc(wc, wr_id=0xDF, status=WCStatus.SUCCESS, byte_len=len(PAYLOAD) + GRH_BYTES)
    for qp, wr_id, inbox, offset, data, peer in checks:
        # a WRITE has no completion here: its last packet may still be being stored
        for _ in range(20):
            if qp is not None or inbox.read(offset, len(data)) == data:
                break
            await rdma.cycles(100)
        assert inbox.read(offset, len(data)) == data, \
            f"the message from QP {peer:#x} did not land whole"
    await rdma.cycles(300)
    acks = [(p.bth.dest_qp, p.bth.psn) for p in rdma.tb.sniffers[PORT].packets()]
    assert acks == [(0x70, 0x102), (0x72, 0x302)], f"ACKs: {acks}"
    await rdma.finish(links_idle=False)


@cocotb.test()
async def test_rnr_after_a_sequence_nak_takes_the_message_back(dut):
    """A three-packet RC WRITE with immediate loses its middle packet: the responder NAKs the
    middle PSN (which acknowledges the first), takes the middle and last packets when they are
    resent, and at the last finds no receive WQE: an RNR NAK naming the message's first PSN.
    The requester in this test missed that RNR NAK and resends from the middle again: the
    first resent packet, and then each that asks for an ACK, gets a sequence NAK naming the
    first PSN, since the requester may believe the first packet acknowledged. Sent whole once
    a receive is posted, the message lands and completes once."""
    rdma = await Rdma.open(dut)
    model = rdma.sb.model
    model.links_lossy()         # the answers to this test's own loss are checked here
    psn = 0x200
    far = FarEnd(rdma, PORT)
    qp = await rdma.qp(QPType.RC)
    await rdma.connect(qp, 0x77, port=PORT, **far.address(), rq_psn=psn, path_mtu=MTU.MTU256)
    inbox = await rdma.region(4096)
    data = bytes((5 * i + 1) & 0xFF for i in range(256 * 2 + 40))
    target = inbox.remote(100)
    first, middle, last = packetize(
        "RC", "RDMA_WRITE", data, 256, **far.to_port(0x77, qp.qp_num, sl=3),
        dest_qp=qp.qp_num, psn=psn, reth=RETH(va=target.addr, rkey=target.rkey,
                                              dma_len=len(data)), immdt=ImmDt(0xC0FFEE))
    link = LinkInjector(dut, PORT)
    sniffer = rdma.tb.sniffers[PORT]

    async def answers(*packets):
        seen = len(sniffer.captures)
        for packet in packets:
            await link.send(build(packet))
        await rdma.cycles(400)
        return [(p.bth.psn, p.aeth.syndrome) for p in sniffer.packets()[seen:]]

    assert await answers(first, last) == [(psn + 1, 0x60)], "the lost middle packet is NAKed"
    rnr = await answers(middle, last)
    assert [(p, s & 0xE0) for p, s in rnr] == [(psn, 0x20)], \
        f"no receive WQE at the last packet: an RNR NAK for the first PSN, got {rnr}"
    assert await answers(middle, last) == [(psn, 0x60)] * 2, \
        "a resend from inside the message is told to go back to its first PSN, and told again " \
        "where it asks for an ACK"
    assert await answers(last) == [(psn, 0x60)], "... however often it asks"
    await qp.post_recv(RecvWR(inbox.sge(0, 16), wr_id=0xE1))
    model.receive_injected(PORT, [first, middle, last])
    assert await answers(first, middle, last) == [(psn + 2, 0x1F)]
    [wc] = await rdma.poll_until(qp.recv_cq, 1)
    assert_wc(wc, wr_id=0xE1, status=WCStatus.SUCCESS, byte_len=len(data), src_qp=0x77,
              slid=far.slid, sl=rdma.sl(PORT, 3))
    assert inbox.read(100, len(data)) == data
    await rdma.finish(links_idle=False)


@cocotb.test()
async def test_a_duplicate_just_before_the_psn_wrap_is_acknowledged_not_naked(dut):
    """RDMA WRITE only packets with PSNs 0xFFFFFE, 0xFFFFFF and 0 land on an RC QP expecting
    0xFFFFFE, which then expects PSN 1. The packet of PSN 0xFFFFFF comes again with other bytes:
    across the 24-bit wrap it lies just behind the expected PSN, so it is a duplicate,
    acknowledged with the last in-order PSN (0) and MSN 3, not NAKed as a sequence gap, and its
    bytes are not written again. PSN 2, just ahead across the same wrap, is a gap: NAKed for
    PSN 1."""
    rdma = await Rdma.open(dut)
    model = rdma.sb.model
    model.links_lossy()     # the model takes messages in order: the answers are checked here
    first_psn = 0xFFFFFE
    far = FarEnd(rdma, PORT)
    qp = await rdma.qp(QPType.RC)
    await rdma.connect(qp, 0x77, port=PORT, **far.address(), rq_psn=first_psn)
    inbox = await rdma.region(4096)
    link = LinkInjector(dut, PORT)
    sniffer = rdma.tb.sniffers[PORT]

    def write_only(n, fill):
        """The RDMA WRITE only packet of PSN first_psn + n, 40 bytes of `fill` at offset 64 n."""
        target = inbox.remote(64 * n)
        [packet] = packetize("RC", "RDMA_WRITE", bytes([fill]) * 40, 256,
                             **far.to_port(0x77, qp.qp_num, sl=3), dest_qp=qp.qp_num,
                             psn=(first_psn + n) & 0xFFFFFF,
                             reth=RETH(va=target.addr, rkey=target.rkey, dma_len=40))
        return packet

    async def answers(packet):
        seen = len(sniffer.captures)
        await link.send(build(packet))
        model.receive_injected(PORT, [packet])
        await rdma.cycles(400)
        return [(p.bth.psn, p.aeth.syndrome & 0xE0, p.aeth.msn) for p in sniffer.packets()[seen:]]

    for n in range(3):
        assert await answers(write_only(n, 0xA0 + n)) == [((first_psn + n) & 0xFFFFFF, 0, n + 1)]
    assert await answers(write_only(1, 0x5D)) == [(0, 0, 3)], \
        "PSN 0xFFFFFF while PSN 1 is expected is a duplicate: ACKed with PSN 0 and MSN 3"
    assert inbox.read(64, 40) == bytes([0xA1]) * 40, "the duplicate was written again"
    assert await answers(write_only(4, 0xA4)) == [(1, 0x60, 3)], \
        "PSN 2 while PSN 1 is expected is a sequence gap"
    for n in (3, 4):
        assert await answers(write_only(n, 0xA0 + n)) == [(n - 2, 0, n + 1)]
    assert [inbox.read(64 * n, 40) for n in range(5)] == [bytes([0xA0 + n]) * 40 for n in range(5)]
    await rdma.finish(links_idle=False)


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC, QPType.UD])
async def test_a_packet_for_a_qp_of_the_other_port_is_dropped_and_counted(dut, transport):
    """A good SEND only packet arrives on port 2 for a QP bound to port 1 that would take it
    there (in RTS, a receive posted, for RC and UC connected to this sender at this PSN): port 2
    drops it and counts it in PortRcvErrors (and PortRcvPkts); nothing is written, no
    completion appears, no answer leaves and port 1 counts nothing. The same packet put on
    port 1's link is delivered."""
    rdma = await Rdma.open(dut)
    model = rdma.sb.model
    far = {port: FarEnd(rdma, port) for port in (1, 2)}
    if transport == QPType.UD:
        qp = await rdma.ud_qp(port=1)
    else:
        qp = await rdma.qp(transport)
        await rdma.connect(qp, 0x77, port=1, **far[1].address(), rq_psn=0x40)
    inbox = await rdma.region(4096)
    await qp.post_recv(RecvWR(inbox.sge(0, 1024), wr_id=0xF1))
    memory = inbox.read()

    def send_only(port):
        headers = far[port].to_port(0x77, qp.qp_num, sl=3)
        if transport == QPType.UD:
            return Packet(**headers, bth=BTH(opcode=0x64, dest_qp=qp.qp_num, psn=0),
                          deth=DETH(qkey=QKEY, src_qp=0x77), payload=PAYLOAD)
        [packet] = packetize(transport.name, "SEND", PAYLOAD, 256, **headers,
                             dest_qp=qp.qp_num, psn=0x40)
        return packet

    before = {port: await rdma.dev.port_counters(port) for port in (1, 2)}
    await LinkInjector(dut, 2).send(build(send_only(2)))
    model.receive_injected(2, [send_only(2)])
    await rdma.cycles(400)
    after = {port: await rdma.dev.port_counters(port) for port in (1, 2)}
    moved = {port: {c.name: after[port][c] - before[port][c] for c in after[port]
                    if after[port][c] != before[port][c]} for port in (1, 2)}
    words = pktlen(send_only(2))
    assert moved == {1: {}, 2: {"RCV_ERRORS": 1, "RCV_ERRORS_EXT": 1, "RCV_PKTS": 1,
                                "RCV_PKTS_EXT": 1, "RCV_DATA": words,
                                "RCV_DATA_EXT": words}}, f"counters moved: {moved}"
    assert inbox.read() == memory, "memory changed"
    assert await qp.recv_cq.poll() == [], "a completion appeared"
    assert rdma.tb.sniffers[2].packets() == [], "port 2 answered"

    await LinkInjector(dut, 1).send(build(send_only(1)))
    model.receive_injected(1, [send_only(1)])
    [wc] = await rdma.poll_until(qp.recv_cq, 1)
    offset = GRH_BYTES if transport == QPType.UD else 0
    assert_wc(wc, wr_id=0xF1, status=WCStatus.SUCCESS, byte_len=len(PAYLOAD) + offset,
              src_qp=0x77, slid=far[1].slid)
    assert inbox.read(offset, len(PAYLOAD)) == PAYLOAD
    await rdma.finish(links_idle=False)


@cocotb.test()
@cocotb.parametrize(target=["no QP", "UD QP", "QP in RESET", "QP in INIT", "QP of port 1",
                            "RC QP in RTS waiting for nothing"])
async def test_a_response_for_a_qp_that_cannot_have_asked_is_dropped_and_counted(dut, target):
    """Found by the fuzzer: an ACK or a READ response for a QP that cannot have sent a request
    on this port (none, another transport, RESET or INIT, bound to the other port) fails the
    destination QP check like a request would: dropped, counted in PortRcvErrors beside
    PortRcvPkts (it was silently dropped, so such packets were counted nowhere). A response
    an RC QP in RTS is not waiting for is stale: dropped without counting."""
    rdma = await Rdma.open(dut)
    rdma.sb.stop_predicting()       # the model does not take injected responses
    if target == "no QP":
        qpn = free_index(rdma.dev.qps, rdma.dev.num_qp, first=2)
    elif target == "UD QP":
        qpn = (await rdma.ud_qp(port=PORT)).qp_num
    else:
        qp = await rdma.qp(QPType.RC)
        if target == "QP in INIT":
            await qp.modify(QPState.INIT, port_num=PORT)
        elif target != "QP in RESET":
            port = 1 if target == "QP of port 1" else PORT
            await rdma.connect(qp, 0x77, port=port, **FarEnd(rdma, port).address())
        qpn = qp.qp_num
    headers = FarEnd(rdma, PORT).to_port(0x77, qpn)
    answers = [Packet(**headers, bth=BTH(opcode=0x11, dest_qp=qpn, psn=0), aeth=AETH(0x1F, 0)),
               Packet(**headers, bth=BTH(opcode=0x10, dest_qp=qpn, psn=0), aeth=AETH(0x1F, 0),
                      payload=PAYLOAD)]
    before = await rdma.dev.port_counters(PORT)
    link = LinkInjector(dut, PORT)
    for packet in answers:
        await link.send(build(packet))
    await rdma.cycles(300)
    after = await rdma.dev.port_counters(PORT)
    counted = 0 if target.startswith("RC QP in RTS") else len(answers)
    assert after[PortCounter.RCV_PKTS] - before[PortCounter.RCV_PKTS] == len(answers)
    assert after[PortCounter.RCV_ERRORS] - before[PortCounter.RCV_ERRORS] == counted, \
        f"responses for {target}: PortRcvErrors moved by " \
        f"{after[PortCounter.RCV_ERRORS] - before[PortCounter.RCV_ERRORS]}, not {counted}"
    assert rdma.tb.sniffers[PORT].packets() == [], "port 2 answered a response"
    rdma.sb.check_device()


# RC packets at the expected PSN whose opcode is out of sequence: (what went before, the packet)
OUT_OF_SEQUENCE = {
    "SEND middle, no message begun": ((), 0x01),
    "RDMA WRITE last, no message begun": ((), 0x08),
    "SEND last inside an RDMA WRITE": ((0x06,), 0x02),
    "SEND only inside a SEND": ((0x00,), 0x04),
    "RDMA WRITE first inside a SEND": ((0x00, 0x01), 0x06),
    "RDMA READ request inside an RDMA WRITE": ((0x06,), 0x0C),
}


@cocotb.test()
@cocotb.parametrize(case=list(OUT_OF_SEQUENCE))
async def test_an_rc_opcode_out_of_sequence_is_naked_invalid_request(dut, case):
    """An RC packet at the expected PSN whose opcode does not follow (a middle or last packet
    with no message begun or of another operation, a new request where a message's next
    packet should be) is an invalid request (IBTA): NAK 0x61 at its PSN, nothing executed.
    The message it cut short goes no further (what it wrote is not decided; a SEND's receive
    stays posted), and the QP expects the NAKed PSN again: a SEND only sent there lands in
    the receive — the packets, memory and counters the model predicts."""
    before, opcode = OUT_OF_SEQUENCE[case]
    rdma = await Rdma.open(dut)
    model = rdma.sb.model
    qp, far, inbox = await receiving_rc_qp(rdma, 0x300, 0xC3, path_mtu=MTU.MTU256)
    target = (await rdma.region(4096)).remote(0)
    reth = RETH(va=target.addr, rkey=target.rkey, dma_len=1024)
    headers = far.to_port(0x77, qp.qp_num)
    chunk = bytes(range(256))

    def packet(code, psn):
        op = OPCODES[code]
        return Packet(**headers, bth=BTH(opcode=code, dest_qp=qp.qp_num, psn=psn),
                      reth=reth if "reth" in op.headers else None,
                      payload=chunk if op.payload else b"")

    packets = [packet(code, 0x300 + i) for i, code in enumerate(before + (opcode,))]
    link = LinkInjector(dut, PORT)
    for p in packets:
        await link.send(build(p))
    model.receive_injected(PORT, packets)
    await rdma.cycles(300)
    [nak] = rdma.tb.sniffers[PORT].packets()
    assert (nak.bth.opcode, nak.bth.psn, nak.aeth.syndrome) == \
        (0x11, packets[-1].bth.psn, 0x61), nak.summary()
    again = Packet(**headers, bth=BTH(opcode=0x04, dest_qp=qp.qp_num, psn=packets[-1].bth.psn,
                                      ackreq=True), payload=PAYLOAD)
    await link.send(build(again))
    model.receive_injected(PORT, [again])
    [wc] = await rdma.poll_until(qp.recv_cq, 1)
    assert_wc(wc, wr_id=0xC3, status=WCStatus.SUCCESS, byte_len=len(PAYLOAD), src_qp=0x77)
    assert inbox.read(0, len(PAYLOAD)) == PAYLOAD
    await rdma.finish(links_idle=False)


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC], dma_len=[0, 8],
                    opcode=["RDMA_WRITE_ONLY", "RDMA_WRITE_FIRST"])
async def test_a_write_whose_first_packet_overruns_its_reth_length_writes_nothing(
        dut, transport, dma_len, opcode):
    """Found by the fuzzer: an RDMA WRITE whose first (or only) packet carries more payload
    than its RETH's DMA length. The rkey covers only the DMA length (none at all for length 0,
    whose address is never translated), so the payload was written past it, at host address
    0 for length 0. Now it is refused like a later packet that overruns: RC answers NAK 0x61
    (invalid request), UC drops it; not one byte is written (the host memory's write guard
    allows only the CQ rings)."""
    rdma = await Rdma.open(dut)
    rdma.sb.stop_predicting()       # the model only sends WRITEs whose lengths agree
    far = FarEnd(rdma, PORT)
    qp = await rdma.qp(transport)
    await rdma.connect(qp, 0x77, port=PORT, **far.address(), path_mtu=MTU.MTU256)
    target = await rdma.region(4096)
    rdma.tb.mem.guard([(cq.ring, cq.ring + 32 * cq.depth) for cq in rdma.dev.cqs.values()])
    payload = bytes(range(256)) if opcode.endswith("FIRST") else PAYLOAD
    packet = Packet(**far.to_port(0x77, qp.qp_num),
                    bth=BTH(opcode=OPCODES_BY_NAME[f"{transport.name}_{opcode}"].code,
                            dest_qp=qp.qp_num, psn=0, ackreq=True),
                    reth=RETH(target.mr.addr if dma_len else 0x28, target.lkey, dma_len),
                    payload=payload)
    await LinkInjector(dut, PORT).send(build(packet))
    await rdma.cycles(400)
    assert rdma.tb.mem.stray() is None, \
        f"the WRITE wrote outside what its rkey allowed: {rdma.tb.mem.stray()}"
    answers = [(p.bth.opcode, p.aeth.syndrome) for p in rdma.tb.sniffers[PORT].packets()]
    assert answers == ([(0x11, 0x61)] if transport == QPType.RC else []), \
        f"answers {answers}: RC must NAK 0x61 (invalid request), UC answers nothing"
    rdma.sb.check_device()


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC],
                    packet=[("SEND_ONLY", 300), ("SEND_FIRST", 128), ("RDMA_WRITE_FIRST", 260)])
async def test_a_packet_its_path_mtu_does_not_fit_is_refused(dut, transport, packet):
    """Found by the fuzzer: a SEND or WRITE packet whose payload does not fit the receiving
    QP's path MTU (256 here): an only packet over it, a first packet short of it or over it.
    Such a packet was taken (an only packet of 300 bytes completed its receive). Now RC answers
    NAK 0x61 (invalid request) and UC drops it; nothing is written and no receive completes."""
    rdma = await Rdma.open(dut)
    rdma.sb.stop_predicting()       # the model only sends packets that fit
    opcode, length = packet
    far = FarEnd(rdma, PORT)
    qp = await rdma.qp(transport)
    await rdma.connect(qp, 0x77, port=PORT, **far.address(), path_mtu=MTU.MTU256)
    inbox = await rdma.region(4096)
    await qp.post_recv(RecvWR(inbox.sge(0, 4096), wr_id=0xA7))
    memory = inbox.read()
    reth = RETH(inbox.mr.addr, inbox.lkey, 1024) if "WRITE" in opcode else None
    await LinkInjector(dut, PORT).send(build(Packet(
        **far.to_port(0x77, qp.qp_num),
        bth=BTH(opcode=OPCODES_BY_NAME[f"{transport.name}_{opcode}"].code, dest_qp=qp.qp_num,
                psn=0, ackreq=True),
        reth=reth, payload=bytes(i & 0xFF for i in range(length)))))
    await rdma.cycles(400)
    answers = [(p.bth.opcode, p.aeth.syndrome) for p in rdma.tb.sniffers[PORT].packets()]
    assert answers == ([(0x11, 0x61)] if transport == QPType.RC else []), \
        f"{opcode} of {length} bytes at path MTU 256: answers {answers}"
    assert inbox.read() == memory, "the packet was written"
    assert await qp.recv_cq.poll() == [], "a receive completed"
    rdma.sb.check_device()


# ---------------------------------------------------------------------------------------------
# The pytest runner: Packets injected on rdma_dev's RX links by the testbench at each supported
# data width; the same build as test_rdma_dev (links open to the testbench). On Ethernet ports
# (RDMA_LINK=eth) at 256 bits in make test, at every width under make regress.

@pytest.mark.parametrize("link", ["ib", "eth"])
@pytest.mark.parametrize("w", [64, 256, 512])
def test_rx_errors(w, link):
    if link == "eth" and w != 256 and not REGRESS:
        pytest.skip("injected frames on Ethernet ports at 64 and 512 bits: make regress")
    simrun.run(toplevel="tb_rdma_dev", test_module="test_rx_errors", parameters={"DATA_WIDTH": w},
               extra_env={"RDMA_LINK": link})
