"""RC reliability with the testbench as the far end (harness tb/hdl/tb_rdma_dev.v, CABLE = 0):
port 1's TX link ends at a sniffer and its RX link at the testbench, which plays a peer QP
behind LID PEER_LID (on Ethernet ports, RDMA_LINK=eth: behind FarEnd's GID and MAC, in RoCE
v2 frames): it sees every packet the device sends and answers, stays silent, NAKs or
sends requests exactly as each test needs. So each trigger of the transport is hit on purpose
and its effect checked packet by packet:

- requester: many messages in flight (the send window, one coalesced ACK completing several
  WRs in order, the implicit acknowledgement of a READ response or a NAK, max_rd_atomic,
  FENCE), the local ACK timeout (4.096 us x 2^timeout at 250 MHz, restarted by progress)
  and its edges, go-back-N resends from the oldest unacknowledged PSN inside a message,
  retry_cnt exhaustion, PSN sequence NAKs, RNR NAKs and their timer, lost READ responses,
  AckReq every 16 PSNs, PSN wrap, a WR that fails before it is sent letting the WRs before
  it be resent, a WR held back for a READ going out whichever cycle the READ finishes in, an
  ACK taken whichever cycle around a go-back it arrives in, a READ issued again already
  answered (no packet) while another QP's message leaves the port;
- responder: one NAK per sequence gap, duplicate SEND/WRITE acknowledged again and never
  executed twice, duplicate READ requests served again from their PSN, duplicate atomics
  answered from the record of their result and never executed twice, ACKs only where asked,
  PSN wrap;
- atomics as requester: the AtomicETH sent, the original value of the atomic ACK stored, a lost
  atomic ACK resent for like a lost READ response, atomics counted in max_rd_atomic.
"""

from dataclasses import replace

import cocotb
import pytest

from tb import simrun
from tb.coverage import enabled as coverage_enabled
from tb.ib_packet import (
    AETH, BTH, PSN_MASK, RETH, AtomicAckETH, AtomicETH, Packet, build, packetize,
)
from tb.rdma_program import (
    UNSIGNALED, FarEnd, Rdma, assert_wc, unregistered_key, work_request,
)
from tb.rdma_tb import LinkInjector
from tb.seed import REGRESS
from tb.verbs import (
    MTU, SGE, QPState, QPType, RecvWR, SendFlags, WCOpcode, WCStatus, WROpcode,
    atomic_cmp_and_swp, atomic_fetch_and_add,
)

PORT = 1
PEER_LID = 0x9          # not one of port 1's LIDs (0x10-0x13): every message takes the link
PEER_QPN = 0x77
MTU_BYTES = 256
ACK_UNIT = 1024         # cycles of 4.096 us at the harness's 250 MHz device clock
WAIT = 200000           # cycles any single wait may take before the test fails


class Peer:
    """The far end of port 1's link: what the device sent (the port's sniffer, in order) and
    packets put on the port's RX link, addressed as the port's link layer does."""

    def __init__(self, rdma):
        self.rdma = rdma
        self.link = LinkInjector(rdma.dut, PORT)
        self.sniffer = rdma.tb.sniffers[PORT]
        self.taken = 0
        self.far = FarEnd(rdma, PORT, lid=PEER_LID)

    def to_device(self, qp):
        """The addressing headers of a packet from the peer to device QP `qp`."""
        return self.far.to_port(PEER_QPN, qp.qp_num)

    def from_device(self, qp):
        """The addressing headers of the answers device QP `qp` sends the peer."""
        return self.far.from_port(qp.qp_num, PEER_QPN)

    async def sent(self, n, what, cycles=WAIT):
        """The next `n` packets the device sends (captures, with their cycles); fails naming
        `what` if they do not come within `cycles`."""
        start = self.rdma.tb.cycle()
        while len(self.sniffer.captures) < self.taken + n:
            if self.rdma.tb.cycle() - start > cycles:
                got = len(self.sniffer.captures) - self.taken
                raise AssertionError(f"waited {cycles} cycles for {what}: {got} of {n} packets")
            await self.rdma.cycles(20)
        got = self.sniffer.captures[self.taken:self.taken + n]
        self.taken += n
        for capture in got:
            assert capture.packet is not None, f"{what}: a bad packet ({capture.error})"
        return got

    async def quiet(self, cycles, what):
        """Nothing more is sent for `cycles` cycles."""
        await self.rdma.cycles(cycles)
        extra = self.sniffer.captures[self.taken:]
        assert not extra, (f"{what}: {len(extra)} unexpected packet(s), the first "
                           f"{extra[0].packet} at cycle {extra[0].cycle}")

    async def put(self, packets):
        for packet in packets:
            await self.link.send(build(packet))

    async def answer(self, qp, psn, syndrome=0x1F, msn=0):
        """An ACK (or NAK / RNR NAK, by `syndrome`) for PSN `psn` to device QP `qp`."""
        await self.put([Packet(**self.to_device(qp),
                               bth=BTH(opcode=0x11, dest_qp=qp.qp_num, psn=psn),
                               aeth=AETH(syndrome=syndrome, msn=msn))])

    def read_responses(self, qp, data, psn, msn=1):
        """The READ response packets carrying `data` from PSN `psn` on."""
        return packetize("RC", "RDMA_READ_RESPONSE", data, MTU_BYTES, **self.to_device(qp),
                         dest_qp=qp.qp_num, psn=psn, aeth=AETH(syndrome=0x1F, msn=msn))

    def answers(self, qp, data, psn, msn):
        """The READ responses device QP `qp` sends back to the peer carrying `data`."""
        return packetize("RC", "RDMA_READ_RESPONSE", data, MTU_BYTES, **self.from_device(qp),
                         dest_qp=PEER_QPN, psn=psn, aeth=AETH(syndrome=0x1F, msn=msn))

    def read_request(self, qp, psn, remote, length):
        """An RDMA READ request for `length` bytes at RemoteAddr `remote` to device QP `qp`."""
        return Packet(**self.to_device(qp), bth=BTH(opcode=0x0C, dest_qp=qp.qp_num, psn=psn),
                      reth=RETH(va=remote.addr, rkey=remote.rkey, dma_len=length))

    def atomic(self, qp, target, psn, add=None, compare=0, swap=0):
        """A FetchAdd of `add` (or, without it, a CompareSwap) on the 8 bytes at RemoteAddr
        `target` of device QP `qp`, at PSN `psn`."""
        eth = AtomicETH(va=target.addr, rkey=target.rkey,
                        swap_add=swap if add is None else add, compare=compare)
        return Packet(**self.to_device(qp), atomic_eth=eth,
                      bth=BTH(opcode=0x13 if add is None else 0x14, dest_qp=qp.qp_num, psn=psn,
                              ackreq=True))

    def atomic_ack(self, qp, psn, orig, msn=1, to_peer=False):
        """The atomic ACK of PSN `psn` carrying `orig`: to device QP `qp`, or (`to_peer`)
        the one that QP sends the peer."""
        return Packet(**(self.from_device(qp) if to_peer else self.to_device(qp)),
                      bth=BTH(opcode=0x12, dest_qp=PEER_QPN if to_peer else qp.qp_num, psn=psn),
                      aeth=AETH(syndrome=0x1F, msn=msn), atomic_ack_eth=AtomicAckETH(orig))

    def requests(self, qp, operation, payload, psn, **headers):
        """The request packets of one message to device QP `qp`, from PSN `psn`."""
        return packetize("RC", operation, payload, MTU_BYTES, **self.to_device(qp),
                         dest_qp=qp.qp_num, psn=psn, **headers)


async def open_peer(dut):
    rdma = await Rdma.open(dut)
    rdma.sb.stop_predicting()       # the test checks the traffic itself, packet by packet
    return rdma, Peer(rdma)


def peer_address(rdma):
    """The address vector fields that aim a port 1 QP at the peer."""
    return FarEnd(rdma, PORT, lid=PEER_LID).address()


async def requester(rdma, sq_psn=0x100, depth=16, **attrs):
    """A device RC QP on port 1 aimed at the peer."""
    qp = await rdma.qp(QPType.RC, depth=depth)
    attrs = dict(timeout=1, retry_cnt=3, path_mtu=MTU.MTU256) | attrs
    await rdma.connect(qp, PEER_QPN, port=PORT, **peer_address(rdma), sq_psn=sq_psn, **attrs)
    return qp


async def responder(rdma, rq_psn, **attrs):
    """A device RC QP on port 1 answering the peer."""
    qp = await rdma.qp(QPType.RC)
    await rdma.connect(qp, PEER_QPN, port=PORT, **peer_address(rdma), rq_psn=rq_psn,
                       path_mtu=MTU.MTU256, **attrs)
    return qp


def psns(captures):
    return [c.packet.bth.psn for c in captures]


def opcodes(captures):
    return [c.packet.bth.opcode for c in captures]


async def finish(rdma):
    rdma.sb.check_device()


# ---------------------------------------------------------------------------------------------
# Attributes

@cocotb.test()
async def test_query_qp_returns_the_transport_attributes(dut):
    """The ibv_qp_attr transport fields given on the way to RTS (min_rnr_timer and
    max_dest_rd_atomic at RTR, the rest at RTS) come back from QUERY_QP, with the PSNs: the SQ
    PSN is the next request's, the RQ PSN the one the responder expects."""
    rdma, _ = await open_peer(dut)
    qp = await rdma.qp(QPType.RC)
    attrs = dict(timeout=17, retry_cnt=5, rnr_retry=6, min_rnr_timer=12, max_rd_atomic=4,
                 max_dest_rd_atomic=8)
    await rdma.connect(qp, PEER_QPN, port=PORT, **peer_address(rdma), sq_psn=0xABCDEF,
                       rq_psn=0x123456, **attrs)
    status = await qp.query()
    got = {name: getattr(status, name) for name in attrs}
    assert got == attrs
    assert (status.state, status.sq_psn, status.rq_psn) == (QPState.RTS, 0xABCDEF, 0x123456)
    await finish(rdma)


# ---------------------------------------------------------------------------------------------
# Requester

@cocotb.test()
async def test_timeout_resends_from_the_oldest_unacknowledged_psn(dut):
    """A 5-packet RDMA WRITE that is never acknowledged is sent again, the same packets, one
    ACK timeout after its last packet left. An ACK for its second packet is progress: the
    next resend starts at the third packet, a WRITE middle without RETH carrying the third
    MTU of the payload with the same PSN. An ACK for the last PSN completes it."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, sq_psn=0x100)
    src, dst = await rdma.region(4096), await rdma.region(4096)
    length = 5 * MTU_BYTES - 50
    await qp.post_send(work_request(WROpcode.RDMA_WRITE, src.sge(0, length), dst.remote(0),
                                    wr_id=0xA1))
    first = await peer.sent(5, "the WRITE")
    assert opcodes(first) == [0x06, 0x07, 0x07, 0x07, 0x08]
    assert psns(first) == list(range(0x100, 0x105))
    assert [c.packet.bth.ackreq for c in first] == [False] * 4 + [True]
    again = await peer.sent(5, "the WRITE resent after the timeout")
    assert [c.packet for c in again] == [c.packet for c in first]
    await peer.answer(qp, 0x101)
    rest = await peer.sent(3, "the resend from the third packet")
    assert [c.packet for c in rest] == [c.packet for c in first[2:]]
    assert rest[0].packet.reth is None
    assert rest[0].packet.payload == src.read(2 * MTU_BYTES, MTU_BYTES)
    await peer.answer(qp, 0x104, msn=1)
    [wc] = await rdma.poll_until(qp.send_cq, 1, cycles=WAIT)
    assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS, opcode=WCOpcode.RDMA_WRITE)
    assert (await qp.query()).sq_psn == 0x105
    await peer.quiet(3 * ACK_UNIT * 2, "after the last ACK")
    await finish(rdma)


@cocotb.test()
async def test_ack_timeout_is_4096ns_times_2_to_the_timeout(dut):
    """The gap between a SEND's transmissions grows exactly as 4.096 us x 2^timeout (1024
    cycles x 2^timeout): for timeout 1, 2 and 3 the gaps differ by 2048 and 4096 cycles, and
    each is the timeout plus the same few cycles of pipeline (within a memory stall). The edges: an ACK that arrives
    shortly before the timer would expire completes the SEND with no further resend;
    timeout 0 means no timer at all."""
    rdma, peer = await open_peer(dut)
    gaps = {}
    for timeout in (1, 2, 3):
        qp = await requester(rdma, timeout=timeout, retry_cnt=7, sq_psn=0x10 * timeout)
        await qp.post_send(work_request(WROpcode.SEND, (await rdma.region(64)).sge(0, 64),
                                        wr_id=timeout))
        one, two = (await peer.sent(1, "the SEND"))[0], (await peer.sent(1, "its resend"))[0]
        assert two.packet == one.packet
        gaps[timeout] = two.cycle - one.cycle
        # just before the next expiry the ACK arrives: the SEND completes, nothing more is sent
        due = two.cycle + gaps[timeout]
        await rdma.cycles(due - rdma.tb.cycle() - 150)
        await peer.answer(qp, one.packet.bth.psn)
        [wc] = await rdma.poll_until(qp.send_cq, 1, cycles=WAIT)
        assert_wc(wc, wr_id=timeout, status=WCStatus.SUCCESS)
        await peer.quiet(2 * gaps[timeout], f"timeout {timeout} after the ACK")
    # the same pipeline cycles on top of each timeout, give or take a memory stall
    overhead = gaps[1] - 2 * ACK_UNIT
    assert 0 <= overhead < 100, f"gaps {gaps}"
    assert all(abs(gaps[t] - ACK_UNIT * 2 ** t - overhead) <= 8 for t in gaps), f"gaps {gaps}"
    # timeout 0: never resent, however long the answer takes
    qp = await requester(rdma, timeout=0, sq_psn=0x777)
    await qp.post_send(work_request(WROpcode.SEND, (await rdma.region(64)).sge(0, 64),
                                    wr_id=0xF0))
    await peer.sent(1, "the SEND with no timer")
    await peer.quiet(20 * ACK_UNIT, "timeout 0")
    await peer.answer(qp, 0x777)
    [wc] = await rdma.poll_until(qp.send_cq, 1, cycles=WAIT)
    assert_wc(wc, wr_id=0xF0, status=WCStatus.SUCCESS)
    await finish(rdma)


@cocotb.test()
@cocotb.parametrize(retry_cnt=[0, 2, 7])
async def test_retry_cnt_resends_then_retry_exc_err(dut, retry_cnt):
    """With no answer at all, two SENDs in flight go out exactly 1 + retry_cnt times, go-back-N
    from the oldest (7 means seven resends, not forever); then the first completes
    RETRY_EXC_ERR, the QP moves to ERR and the second, outstanding, is flushed."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, retry_cnt=retry_cnt)
    region = await rdma.region(256)
    await qp.post_send(work_request(WROpcode.SEND, region.sge(0, 100), wr_id=1))
    await qp.post_send(work_request(WROpcode.SEND, region.sge(0, 100), wr_id=2))
    tries = await peer.sent(2 * (1 + retry_cnt), "the two SENDs and their resends")
    first, second = tries[0].packet, tries[1].packet
    assert (first.bth.psn + 1) & PSN_MASK == second.bth.psn, "one message after the other"
    assert all(c.packet == (first, second)[i % 2] for i, c in enumerate(tries)), \
        "every round resends both, from the oldest"
    wcs = await rdma.poll_until(qp.send_cq, 2, cycles=WAIT)
    assert_wc(wcs[0], wr_id=1, status=WCStatus.RETRY_EXC_ERR)
    assert_wc(wcs[1], wr_id=2, status=WCStatus.WR_FLUSH_ERR)
    await rdma.assert_state(qp, QPState.ERR)
    await peer.quiet(4 * ACK_UNIT, "after RETRY_EXC_ERR")
    await finish(rdma)


@cocotb.test()
async def test_sequence_nak_resends_from_the_psn_it_names(dut):
    """A PSN sequence NAK naming the fourth packet of a 5-packet SEND acknowledges the first
    three and makes the requester resend the fourth and fifth at once (long before its
    timeout of 2^5 x 4.096 us)."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, timeout=5, sq_psn=0x200)
    region = await rdma.region(4096)
    await qp.post_send(work_request(WROpcode.SEND, region.sge(0, 5 * MTU_BYTES), wr_id=7))
    first = await peer.sent(5, "the SEND")
    await peer.answer(qp, 0x203, syndrome=0x60)
    rest = await peer.sent(2, "the resend after the NAK", cycles=2000)
    assert [c.packet for c in rest] == [c.packet for c in first[3:]]
    await peer.answer(qp, 0x204, msn=1)
    [wc] = await rdma.poll_until(qp.send_cq, 1, cycles=WAIT)
    assert_wc(wc, wr_id=7, status=WCStatus.SUCCESS, opcode=WCOpcode.SEND)
    await finish(rdma)


@cocotb.test()
async def test_a_go_back_cuts_the_messages_on_the_link(dut):
    """A PSN sequence NAK for the third packet of a 128-packet RDMA WRITE, taken while the rest
    of it is still leaving and a 64-packet WRITE waits behind it: the port ends the first WRITE
    at the next packet boundary (a few more of its own packets, in order, middle packets only)
    instead of sending the other 120 the responder would only drop, the second one after at
    most its first packet, and the resend from the third packet follows at once: the same
    packets as first sent, through the second WRITE's last. The ACK completes both."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, timeout=10, sq_psn=0x300)
    count, count2 = 128, 64
    total = count + count2
    src, dst = await rdma.region(total * MTU_BYTES), await rdma.region(total * MTU_BYTES)
    for i, (offset, n) in enumerate(((0, count), (count, count2))):
        await qp.post_send(work_request(WROpcode.RDMA_WRITE,
                                        src.sge(offset * MTU_BYTES, n * MTU_BYTES),
                                        dst.remote(offset * MTU_BYTES), wr_id=0xD1 + i))
    first = await peer.sent(4, "the first WRITE's first packets")
    await peer.answer(qp, 0x302, syndrome=0x60)
    more = []
    while True:
        [c] = await peer.sent(1, "the WRITEs or their resend")
        if c.packet.bth.psn == 0x302:
            break
        more.append(c)
    rdma.tb.log.info("%d more packets after the NAK: PSNs %s", len(more),
                     [hex(p) for p in psns(more)])
    cut1 = [c for c in more if c.packet.bth.psn < 0x300 + count]
    cut2 = more[len(cut1):]
    assert psns(cut1) == list(range(0x304, 0x304 + len(cut1))), "the WRITE's packets in order"
    assert set(opcodes(cut1)) <= {0x07}, "a cut WRITE leaves middle packets only"
    # what the port held when the go-back was decided, and what left while the NAK came in
    assert len(cut1) < 16, f"{len(cut1)} more packets of the first WRITE after the NAK"
    assert [(c.packet.bth.psn, c.packet.bth.opcode) for c in cut2] in ([], [(0x380, 0x06)]), (
        "the second WRITE was not cut")
    rest = [c] + await peer.sent(total - 3, "the resend from the third packet")
    assert psns(rest) == list(range(0x302, 0x300 + total))
    assert opcodes(rest) == [0x07] * (count - 3) + [0x08, 0x06] + [0x07] * (count2 - 2) + [0x08]
    assert [c.packet for c in rest[:2]] == [c.packet for c in first[2:]]
    assert all(c.packet.payload == src.read(i * MTU_BYTES, MTU_BYTES)
               for i, c in enumerate(rest, 2))
    await peer.answer(qp, 0x300 + total - 1, msn=2)
    wcs = await rdma.poll_until(qp.send_cq, 2, cycles=WAIT)
    for i, wc in enumerate(wcs):
        assert_wc(wc, wr_id=0xD1 + i, status=WCStatus.SUCCESS, opcode=WCOpcode.RDMA_WRITE)
    await peer.quiet(4 * ACK_UNIT, "after the last ACK")
    await finish(rdma)


@cocotb.test()
async def test_rnr_nak_waits_its_timer_then_resends_the_message(dut):
    """An RNR NAK with timer code 2 (0.02 ms, 5000 cycles at 250 MHz) makes the requester
    send the whole message again from its first PSN after at least that long; with
    rnr_retry 1 a second RNR NAK completes it RNR_RETRY_EXC_ERR."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, rnr_retry=1, sq_psn=0x300)
    region = await rdma.region(4096)
    await qp.post_send(work_request(WROpcode.SEND, region.sge(0, 3 * MTU_BYTES), wr_id=9))
    first = await peer.sent(3, "the SEND")
    await peer.answer(qp, 0x300, syndrome=0x22)
    nak_at = rdma.tb.cycle()
    again = await peer.sent(3, "the SEND after the RNR timer")
    assert [c.packet for c in again] == [c.packet for c in first]
    waited = again[0].cycle - nak_at
    assert 5000 <= waited < 5000 + 300, f"resent {waited} cycles after the RNR NAK"
    await peer.answer(qp, 0x300, syndrome=0x22)
    [wc] = await rdma.poll_until(qp.send_cq, 1, cycles=WAIT)
    assert_wc(wc, wr_id=9, status=WCStatus.RNR_RETRY_EXC_ERR)
    await finish(rdma)


@cocotb.test()
async def test_an_rnr_nak_after_an_ack_inside_the_message_waits_and_uses_an_rnr_retry(dut):
    """Found by the fuzzer: an RDMA WRITE with immediate of 18 packets asks for an ACK at its
    16th (PSN 15 mod 16); the responder acknowledges it, then finds no receive at the last
    packet and RNR NAKs the message's first PSN, behind what it acknowledged. The requester
    must take that RNR NAK as such: wait its timer, send the whole message again, and with
    rnr_retry 1 complete RNR_RETRY_EXC_ERR at the second. (It took the RNR NAK's sequence NAK
    as a gap instead and sent again at once; the ACK inside the message then counted as
    progress and restored the retries every round: the QP never completed.)"""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, rnr_retry=1, sq_psn=0x500, timeout=8)
    region = await rdma.region(8192)
    await qp.post_send(work_request(WROpcode.RDMA_WRITE_WITH_IMM, region.sge(0, 18 * MTU_BYTES),
                                    region.remote(), wr_id=0x51))
    first = await peer.sent(18, "the WRITE with immediate")
    assert [c.packet.bth.ackreq for c in first].index(True) == 15
    for round_ in range(2):
        await peer.answer(qp, 0x50F)                    # the ACK it asked for inside
        await peer.answer(qp, 0x500, syndrome=0x22)     # no receive at the last packet
        await peer.answer(qp, 0x500, syndrome=0x60)     # a later request met the gap
        if round_ == 0:
            nak_at = rdma.tb.cycle()
            again = await peer.sent(18, "the WRITE again after the RNR timer", cycles=20000)
            assert [c.packet for c in again] == [c.packet for c in first]
            assert again[0].cycle - nak_at >= 5000, \
                f"sent again {again[0].cycle - nak_at} cycles after the RNR NAK, before its timer"
    [wc] = await rdma.poll_until(qp.send_cq, 1, cycles=WAIT)
    assert_wc(wc, wr_id=0x51, status=WCStatus.RNR_RETRY_EXC_ERR)
    await finish(rdma)


@cocotb.test()
async def test_lost_read_responses_are_asked_for_again(dut):
    """An RDMA READ of four response packets: a response past a missing one makes the
    requester ask again at once for what is missing (a READ request from the missing PSN, its
    address and length moved on by the packets already stored), once per gap: the rest of the
    first round's responses arriving later ask nothing more. On a second READ, an ACK covering
    it while its responses are outstanding means they were lost: the READ goes again. Each
    local buffer ends up with every byte, and each READ completes once."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, timeout=6, sq_psn=0x400)
    local = await rdma.region(8192)
    remote_va, rkey = 0x123400, 0x4242
    data = rdma.payload(4 * MTU_BYTES)
    wr = work_request(WROpcode.RDMA_READ, local.sge(0, len(data)), wr_id=0xB1)
    await qp.post_send(replace(wr, remote_addr=remote_va, rkey=rkey))
    [req] = await peer.sent(1, "the READ request")
    assert (req.packet.bth.opcode, req.packet.bth.psn, req.packet.reth) == (
        0x0C, 0x400, RETH(va=remote_va, rkey=rkey, dma_len=len(data)))
    responses = peer.read_responses(qp, data, 0x400)
    await peer.put([responses[0], responses[2]])
    [again] = await peer.sent(1, "the READ request for the missing responses", cycles=2000)
    assert (again.packet.bth.psn, again.packet.reth) == (
        0x401, RETH(va=remote_va + MTU_BYTES, rkey=rkey, dma_len=3 * MTU_BYTES))
    await peer.put([responses[3]])      # the first round's last: the same gap, asked already
    await peer.quiet(2000, "a stale response of the same gap")
    await peer.put(peer.read_responses(qp, data[MTU_BYTES:], 0x401))
    [wc] = await rdma.poll_until(qp.send_cq, 1, cycles=WAIT)
    assert_wc(wc, wr_id=0xB1, status=WCStatus.SUCCESS, opcode=WCOpcode.RDMA_READ)
    assert local.read(0, len(data)) == data

    wr = work_request(WROpcode.RDMA_READ, local.sge(4096, len(data)), wr_id=0xB2)
    await qp.post_send(replace(wr, remote_addr=remote_va, rkey=rkey))
    [req] = await peer.sent(1, "the second READ request")
    assert req.packet.bth.psn == 0x404
    await peer.answer(qp, 0x405)
    [again] = await peer.sent(1, "the READ request after an ACK past it", cycles=2000)
    assert again.packet == req.packet
    await peer.put(peer.read_responses(qp, data, 0x404, msn=2))
    [wc] = await rdma.poll_until(qp.send_cq, 1, cycles=WAIT)
    assert_wc(wc, wr_id=0xB2, status=WCStatus.SUCCESS, opcode=WCOpcode.RDMA_READ)
    assert local.read(4096, len(data)) == data
    assert (await qp.query()).sq_psn == 0x408
    await finish(rdma)


@cocotb.test()
async def test_psn_wraps_and_ackreq_every_16_psns(dut):
    """A 40-packet WRITE from PSN 0xFFFFF8: its PSNs wrap from 0xFFFFFF to 0, and it asks for
    an ACK (AckReq) on every PSN that is 15 mod 16 and on its last. A coalesced ACK for the
    PSN after the wrap acknowledges everything before it: the resend on the timeout starts
    right after it. The ACK for the last PSN completes the WRITE; the next PSN is 0x20."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, sq_psn=0xFFFFF8, timeout=4)
    src, dst = await rdma.region(40 * MTU_BYTES), await rdma.region(40 * MTU_BYTES)
    await qp.post_send(work_request(WROpcode.RDMA_WRITE, src.sge(0, 40 * MTU_BYTES),
                                    dst.remote(0), wr_id=0xC1))
    sent = await peer.sent(40, "the WRITE")
    expected = [(0xFFFFF8 + i) & PSN_MASK for i in range(40)]
    assert psns(sent) == expected
    assert [c.packet.bth.psn for c in sent if c.packet.bth.ackreq] == [0xFFFFFF, 0x0F, 0x1F]
    await peer.answer(qp, 0x0F)
    rest = await peer.sent(16, "the resend after the coalesced ACK")
    assert psns(rest) == expected[24:]
    await peer.answer(qp, 0x1F, msn=1)
    [wc] = await rdma.poll_until(qp.send_cq, 1, cycles=WAIT)
    assert_wc(wc, wr_id=0xC1, status=WCStatus.SUCCESS)
    assert (await qp.query()).sq_psn == 0x20
    await finish(rdma)


# ---------------------------------------------------------------------------------------------
# Many in flight

LONG_TIMEOUT = 12       # 2^12 x 1024 cycles: no resend within these tests


@cocotb.test()
async def test_sixteen_messages_in_flight_and_one_ack_completes_many(dut):
    """Twenty one-packet WRITEs posted at once: the first sixteen (the QP's send window) go out
    back to back without waiting for an answer, the rest wait. One ACK for the eighth's PSN
    completes the first eight, in order, and lets four more out; an ACK for the last PSN
    completes the rest, in order (the unsignaled ones complete without a CQE)."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, sq_psn=0x600, depth=32, timeout=LONG_TIMEOUT)
    src, dst = await rdma.region(4096), await rdma.region(4096)
    for i in range(20):
        await qp.post_send(work_request(WROpcode.RDMA_WRITE, src.sge(i * 64, 64),
                                        dst.remote(i * 64), wr_id=0x100 + i,
                                        flags=UNSIGNALED if i == 3 else SendFlags.SIGNALED))
    first = await peer.sent(16, "the first sixteen WRITEs")
    assert psns(first) == list(range(0x600, 0x610))
    assert all(c.packet.bth.ackreq for c in first), "every last packet asks for an ACK"
    await peer.quiet(2000, "the send window is full")
    await peer.answer(qp, 0x607, msn=8)
    wcs = await rdma.poll_until(qp.send_cq, 7, cycles=WAIT)
    assert [wc.wr_id for wc in wcs] == [0x100, 0x101, 0x102] + list(range(0x104, 0x108))
    more = await peer.sent(4, "four more once eight are done")
    assert psns(more) == list(range(0x610, 0x614))
    await peer.quiet(2000, "all twenty sent")
    await peer.answer(qp, 0x613, msn=20)
    wcs = await rdma.poll_until(qp.send_cq, 12, cycles=WAIT)
    assert [wc.wr_id for wc in wcs] == list(range(0x108, 0x114))
    assert all(wc.status == WCStatus.SUCCESS for wc in wcs)
    status = await qp.query()
    assert (status.sq_psn, status.sq_ci) == (0x614, 20)
    await finish(rdma)


@cocotb.test()
async def test_a_read_response_acknowledges_the_writes_before_it(dut):
    """Two WRITEs and a READ go out together. The peer answers with the READ's response only:
    it acknowledges both WRITEs (the responder executes in order), which complete before the
    READ, and the READ's data lands."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, sq_psn=0x700, timeout=LONG_TIMEOUT)
    src, dst, local = [await rdma.region(4096) for _ in range(3)]
    data = rdma.payload(100)
    await qp.post_send(work_request(WROpcode.RDMA_WRITE, src.sge(0, 300), dst.remote(0),
                                    wr_id=0xE1))
    await qp.post_send(work_request(WROpcode.RDMA_WRITE, src.sge(0, 10), dst.remote(512),
                                    wr_id=0xE2))
    read = work_request(WROpcode.RDMA_READ, local.sge(0, len(data)), wr_id=0xE3)
    await qp.post_send(replace(read, remote_addr=0x5000, rkey=0x77))
    sent = await peer.sent(4, "two WRITEs (two packets and one) and the READ request")
    assert psns(sent) == [0x700, 0x701, 0x702, 0x703]
    assert sent[3].packet.bth.opcode == 0x0C
    await peer.put(peer.read_responses(qp, data, 0x703, msn=3))
    wcs = await rdma.poll_until(qp.send_cq, 3, cycles=WAIT)
    assert [(wc.wr_id, wc.status, wc.opcode) for wc in wcs] == [
        (0xE1, WCStatus.SUCCESS, WCOpcode.RDMA_WRITE), (0xE2, WCStatus.SUCCESS, WCOpcode.RDMA_WRITE),
        (0xE3, WCStatus.SUCCESS, WCOpcode.RDMA_READ)]
    assert local.read(0, len(data)) == data
    await finish(rdma)


@cocotb.test()
async def test_a_remote_nak_fails_its_wr_and_flushes_the_ones_after_it(dut):
    """Three SENDs go out together. A remote access NAK for the second's PSN acknowledges the
    first (SUCCESS), fails the second (REM_ACCESS_ERR) and flushes the third, already sent
    (WR_FLUSH_ERR); the QP is in ERR and sends nothing more."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, sq_psn=0x800, timeout=LONG_TIMEOUT)
    src = await rdma.region(4096)
    for i in range(3):
        await qp.post_send(work_request(WROpcode.SEND, src.sge(0, 20), wr_id=0xF1 + i))
    await peer.sent(3, "the three SENDs")
    await peer.answer(qp, 0x801, syndrome=0x62, msn=1)
    wcs = await rdma.poll_until(qp.send_cq, 3, cycles=WAIT)
    assert [(wc.wr_id, wc.status) for wc in wcs] == [
        (0xF1, WCStatus.SUCCESS), (0xF2, WCStatus.REM_ACCESS_ERR), (0xF3, WCStatus.WR_FLUSH_ERR)]
    await rdma.assert_state(qp, QPState.ERR)
    await peer.quiet(3000, "after the QP went to ERR")
    await finish(rdma)


@cocotb.test()
async def test_a_wr_failing_locally_lets_the_wrs_before_it_be_resent(dut):
    """A SEND goes out; the RDMA WRITE behind it names no MR, which the requester finds before
    sending anything (LOC_PROT_ERR), and holds back the WRs behind it. The SEND's ACK is lost:
    one ACK timeout later the SEND goes again (the failed WR holds back what follows it, not
    the resend of what precedes it), its ACK completes it SUCCESS, then the WRITE completes
    LOC_PROT_ERR, the SEND behind it flushes and the QP is in ERR."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, sq_psn=0x900)
    src = await rdma.region(4096)
    no_mr = SGE(src.mr.addr, 16, unregistered_key(rdma.dev))
    await qp.post_send([work_request(WROpcode.SEND, src.sge(0, 20), wr_id=0xE1),
                        work_request(WROpcode.RDMA_WRITE, no_mr, src.remote(0), wr_id=0xE2),
                        work_request(WROpcode.SEND, src.sge(0, 20), wr_id=0xE3)])
    [first] = await peer.sent(1, "the first SEND")
    [again] = await peer.sent(1, "the first SEND resent after the ACK timeout")
    assert again.packet == first.packet
    await peer.answer(qp, 0x900, msn=1)
    wcs = await rdma.poll_until(qp.send_cq, 3, cycles=WAIT)
    assert [(wc.wr_id, wc.status) for wc in wcs] == [
        (0xE1, WCStatus.SUCCESS), (0xE2, WCStatus.LOC_PROT_ERR), (0xE3, WCStatus.WR_FLUSH_ERR)]
    await rdma.assert_state(qp, QPState.ERR)
    await peer.quiet(3 * ACK_UNIT * 2, "after the QP went to ERR")
    await finish(rdma)


@cocotb.test()
async def test_an_ack_arriving_as_the_timer_fires_still_completes_the_wr(dut):
    """A SEND's one ACK arrives at one of 96 successive cycles around the SEND's resend, and
    the peer answers nothing more: before the ACK timer fires, between the go-back it starts
    and the SEND's issue again, or after, the ACK completes the SEND SUCCESS. An answer on its
    way when a go-back begins still covers the PSNs sent before it (dropped, it left the SEND
    resent to a peer that answered no more, as a responder gone to ERR does, until
    RETRY_EXC_ERR: the random program at 1 % loss between devices, SEED=927104090)."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, timeout=1, retry_cnt=1, sq_psn=0x300)
    src = await rdma.region(64)
    await qp.post_send(work_request(WROpcode.SEND, src.sge(0, 64), wr_id=0))
    one, two = (await peer.sent(1, "the SEND"))[0], (await peer.sent(1, "its resend"))[0]
    resend = two.cycle - one.cycle      # a SEND not answered goes again this much later
    await peer.answer(qp, 0x300)
    [wc] = await rdma.poll_until(qp.send_cq, 1, cycles=WAIT)
    assert_wc(wc, wr_id=0, status=WCStatus.SUCCESS)
    for k, offset in enumerate(range(-88, 8), start=1):
        psn = 0x300 + k
        await qp.post_send(work_request(WROpcode.SEND, src.sge(0, 64), wr_id=k))
        sent = (await peer.sent(1, f"SEND {k}"))[0]
        while sent.packet.bth.psn != psn:          # the previous SEND's resend
            sent = (await peer.sent(1, f"SEND {k}"))[0]
        await rdma.cycles(max(1, sent.cycle + resend + offset - rdma.tb.cycle()))
        await peer.answer(qp, psn, msn=k + 1)
        [wc] = await rdma.poll_until(qp.send_cq, 1, cycles=WAIT)
        assert_wc(wc, wr_id=k, status=WCStatus.SUCCESS)
    await finish(rdma)


@cocotb.test()
async def test_a_wr_found_answered_when_issued_again_leaves_the_port_to_its_message(dut):
    """An RDMA READ's ACK timer fires while the port is sending another QP's long UC SEND and
    the requester waits to hand it a second one; the READ's response arrives in that gap and
    is stored. When the requester comes back to the READ every PSN of it is answered: it
    completes SUCCESS without going out again, and the second UC SEND, leaving the port
    meanwhile, completes too (the READ's record, which sent nothing, took the port's done
    pulse, and the UC QP completed nothing more: the random program at 10 % loss between
    devices, SEED=3271372114)."""
    rdma, peer = await open_peer(dut)
    rc = await requester(rdma, sq_psn=0x400, timeout=1)
    uc = await rdma.qp(QPType.UC)
    await rdma.connect(uc, PEER_QPN + 1, port=PORT, **peer_address(rdma), sq_psn=0x40,
                       path_mtu=MTU.MTU256)
    long = 512 * MTU_BYTES
    src, local = await rdma.region(long), await rdma.region(64)
    data = rdma.payload(64)
    read = work_request(WROpcode.RDMA_READ, local.sge(0, len(data)), wr_id=0xA1)
    await rc.post_send(replace(read, remote_addr=0x5000, rkey=0x77))
    [first] = await peer.sent(1, "the READ request")
    await uc.post_send([work_request(WROpcode.SEND, src.sge(0, long), wr_id=0xB1),
                        work_request(WROpcode.SEND, src.sge(0, 64), wr_id=0xB2)])
    await rdma.cycles(first.cycle + 2 * ACK_UNIT + 256 - rdma.tb.cycle())   # the timer fired

    def sent_to(qpn):
        return [c.packet for c in peer.sniffer.captures if c.packet.bth.dest_qp == qpn]
    assert len(sent_to(PEER_QPN)) == 1, "the READ went again before the port was free"
    assert len(sent_to(PEER_QPN + 1)) < long // MTU_BYTES, "the long UC SEND has left already"
    await peer.put(peer.read_responses(rc, data, 0x400))
    [wc] = await rdma.poll_until(rc.send_cq, 1, cycles=WAIT)
    assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS)
    assert local.read(0, len(data)) == data
    wcs = await rdma.poll_until(uc.send_cq, 2, cycles=WAIT)
    assert [(wc.wr_id, wc.status) for wc in wcs] == [(0xB1, WCStatus.SUCCESS),
                                                     (0xB2, WCStatus.SUCCESS)]
    assert len(sent_to(PEER_QPN)) == 1, "the answered READ was sent again"
    assert len(sent_to(PEER_QPN + 1)) == long // MTU_BYTES + 1
    await finish(rdma)


@cocotb.test()
async def test_max_rd_atomic_and_fence_hold_wrs_back(dut):
    """With max_rd_atomic 2, of three READs posted together two go out and the third waits for
    the first to complete. A SEND with FENCE posted behind them waits until no READ is in
    flight; an unfenced SEND would not have."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, sq_psn=0x900, timeout=LONG_TIMEOUT, max_rd_atomic=2)
    local, src = await rdma.region(4096), await rdma.region(4096)
    data = [rdma.payload(64) for _ in range(3)]
    for i in range(3):
        read = work_request(WROpcode.RDMA_READ, local.sge(i * 64, 64), wr_id=0xA0 + i)
        await qp.post_send(replace(read, remote_addr=0x8000 + i * 64, rkey=0x99))
    await qp.post_send(work_request(WROpcode.SEND, src.sge(0, 8), wr_id=0xA3,
                                    flags=SendFlags.SIGNALED | SendFlags.FENCE))
    two = await peer.sent(2, "two READ requests")
    assert psns(two) == [0x900, 0x901]
    await peer.quiet(2000, "the third READ, beyond max_rd_atomic")
    await peer.put(peer.read_responses(qp, data[0], 0x900, msn=1))
    [third] = await peer.sent(1, "the third READ once the first is done")
    assert (third.packet.bth.opcode, third.packet.bth.psn) == (0x0C, 0x902)
    await peer.quiet(2000, "the fenced SEND behind two READs in flight")
    await peer.put(peer.read_responses(qp, data[1], 0x901, msn=2))
    await peer.quiet(2000, "the fenced SEND behind one READ in flight")
    await peer.put(peer.read_responses(qp, data[2], 0x902, msn=3))
    [send] = await peer.sent(1, "the fenced SEND once no READ is in flight")
    assert (send.packet.bth.opcode, send.packet.bth.psn) == (0x04, 0x903)
    await peer.answer(qp, 0x903, msn=4)
    wcs = await rdma.poll_until(qp.send_cq, 4, cycles=WAIT)
    assert [(wc.wr_id, wc.status) for wc in wcs] == [(0xA0 + i, WCStatus.SUCCESS) for i in range(4)]
    assert [local.read(i * 64, 64) for i in range(3)] == data
    await finish(rdma)



@cocotb.test()
async def test_a_fenced_wr_goes_out_whenever_the_read_before_it_finishes(dut):
    """A SEND with FENCE posted while a READ is in flight waits for it. The READ is of 0 bytes:
    its response stores nothing, so it finishes in whatever cycle it arrives, not in a turn of
    the DMA engine the requester also uses. The response and the SEND's doorbell start
    together, one of them delayed by up to 63 cycles, so the READ finishes at each of 96
    successive cycles around the requester's look at the SEND: before it, while it decides to
    hold the SEND back, in the same cycle, and after. Each time the SEND goes out once the READ
    is done: a hold decided from the QP's state a cycle old must not outlive the READ it waited
    for (it once did, on a QP then idle, which nothing woke again)."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, sq_psn=0x100, timeout=LONG_TIMEOUT)
    local, src = await rdma.region(4096), await rdma.region(4096)

    async def after(cycles, action):
        if cycles:
            await rdma.cycles(cycles)
        await action

    psn = 0x100
    for offset in range(-32, 64):
        read = work_request(WROpcode.RDMA_READ, local.sge(0, 0), wr_id=0x1000 + psn)
        await qp.post_send(replace(read, remote_addr=0x8000, rkey=0x99))
        await peer.sent(1, "the READ")
        send = work_request(WROpcode.SEND, src.sge(0, 8), wr_id=0x1000 + psn + 1,
                            flags=SendFlags.SIGNALED | SendFlags.FENCE)
        answer = peer.put(peer.read_responses(qp, b"", psn, msn=psn))
        both = [cocotb.start_soon(after(max(-offset, 0), qp.post_send(send))),
                cocotb.start_soon(after(max(offset, 0), answer))]
        for task in both:
            await task
        [sent] = await peer.sent(1, f"the fenced SEND, the READ answered {offset} cycles "
                                    f"after its doorbell")
        assert (sent.packet.bth.opcode, sent.packet.bth.psn) == (0x04, psn + 1)
        await peer.answer(qp, psn + 1, msn=psn + 1)
        wcs = await rdma.poll_until(qp.send_cq, 2, cycles=WAIT)
        assert [(wc.wr_id, wc.status) for wc in wcs] == [
            (0x1000 + psn, WCStatus.SUCCESS), (0x1000 + psn + 1, WCStatus.SUCCESS)], offset
        psn += 2
    await finish(rdma)

# ---------------------------------------------------------------------------------------------
# Responder

@cocotb.test()
async def test_a_sequence_gap_is_naked_once(dut):
    """Requests that arrive past the expected PSN are a sequence error: the first gets one
    NAK (syndrome 0x60) naming the expected PSN, the ones after it nothing, and nothing is
    stored; once the expected PSN arrives, the messages are taken in order and acknowledged."""
    rdma, peer = await open_peer(dut)
    qp = await responder(rdma, rq_psn=0x5000)
    inbox = await rdma.region(4096)
    for i in range(2):
        await qp.post_recv(RecvWR(inbox.sge(i * 1024, 1024), wr_id=0xD0 + i))
    one, two = rdma.payload(100), rdma.payload(200)
    await peer.put(peer.requests(qp, "SEND", two, 0x5001))
    await peer.put(peer.requests(qp, "SEND", two, 0x5001))
    [nak] = await peer.sent(1, "the sequence NAK")
    assert (nak.packet.bth.opcode, nak.packet.bth.psn, nak.packet.aeth) == (
        0x11, 0x5000, AETH(syndrome=0x60, msn=0))
    await peer.quiet(500, "the second packet of the gap")
    await peer.put(peer.requests(qp, "SEND", one, 0x5000) + peer.requests(qp, "SEND", two, 0x5001))
    acks = await peer.sent(2, "the ACKs")
    assert [(c.packet.bth.psn, c.packet.aeth) for c in acks] == [
        (0x5000, AETH(0x1F, 1)), (0x5001, AETH(0x1F, 2))]
    wcs = await rdma.poll_until(qp.recv_cq, 2)
    assert [(wc.wr_id, wc.byte_len) for wc in wcs] == [(0xD0, 100), (0xD1, 200)]
    assert inbox.read(0, 100) == one and inbox.read(1024, 200) == two
    await finish(rdma)


@cocotb.test()
async def test_duplicates_are_acknowledged_never_executed_twice(dut):
    """A SEND and a 3-packet RDMA WRITE arrive twice: each duplicate is acknowledged again
    with the last in-order PSN and the current MSN where it asks for an ACK, consumes no
    receive and writes nothing (memory changed meanwhile by the host stays as the host left
    it); a duplicate middle packet, which asks for no ACK, gets none."""
    rdma, peer = await open_peer(dut)
    qp = await responder(rdma, rq_psn=0x10)
    inbox, target = await rdma.region(1024), await rdma.region(4096)
    await qp.post_recv(RecvWR(inbox.sge(0, 512), wr_id=0xE0))
    await qp.post_recv(RecvWR(inbox.sge(512, 512), wr_id=0xE1))
    send = peer.requests(qp, "SEND", rdma.payload(64), 0x10)
    data = rdma.payload(3 * MTU_BYTES)
    write = peer.requests(qp, "RDMA_WRITE", data, 0x11,
                          reth=RETH(va=target.remote(0).addr, rkey=target.remote(0).rkey,
                                    dma_len=len(data)))
    await peer.put(send + write)
    acks = await peer.sent(2, "the ACKs of the SEND and the WRITE")
    assert [(c.packet.bth.psn, c.packet.aeth) for c in acks] == [
        (0x10, AETH(0x1F, 1)), (0x13, AETH(0x1F, 2))]
    [wc] = await rdma.poll_until(qp.recv_cq, 1)
    assert wc.wr_id == 0xE0
    assert target.read(0, len(data)) == data
    overwritten = rdma.payload(len(data))
    target.write(0, overwritten)
    await peer.put(send + write[1:2] + write)
    dups = await peer.sent(2, "the ACKs of the duplicates")
    assert [(c.packet.bth.psn, c.packet.aeth) for c in dups] == [
        (0x13, AETH(0x1F, 2)), (0x13, AETH(0x1F, 2))]
    await peer.quiet(500, "after the duplicates")
    assert await qp.recv_cq.poll() == [], "a duplicate SEND consumed a receive"
    assert target.read(0, len(data)) == overwritten, "a duplicate WRITE was written again"
    # the next new message is in order and takes the second receive
    await peer.put(peer.requests(qp, "SEND", rdma.payload(8), 0x14))
    [ack] = await peer.sent(1, "the ACK of the next SEND")
    assert (ack.packet.bth.psn, ack.packet.aeth) == (0x14, AETH(0x1F, 3))
    [wc] = await rdma.poll_until(qp.recv_cq, 1)
    assert wc.wr_id == 0xE1
    await finish(rdma)


@cocotb.test()
async def test_a_duplicate_read_is_served_again_from_its_psn(dut):
    """An RDMA READ request for three response packets is answered; the same request again
    is served again (same PSNs, same data, the MSN not moved); a request from its second PSN
    for the rest (as a requester that lost a response sends) is answered from that PSN. The
    expected PSN stays where the first request left it."""
    rdma, peer = await open_peer(dut)
    qp = await responder(rdma, rq_psn=0x40)
    source = await rdma.region(4096)
    remote = source.remote(0)
    data = source.read(0, 3 * MTU_BYTES)

    await peer.put([peer.read_request(qp, 0x40, remote, len(data))])
    first = await peer.sent(3, "the READ responses")
    assert [c.packet for c in first] == peer.answers(qp, data, 0x40, msn=1)
    await peer.put([peer.read_request(qp, 0x40, remote, len(data))])
    again = await peer.sent(3, "the READ responses again")
    assert [c.packet for c in again] == [c.packet for c in first]
    await peer.put([peer.read_request(qp, 0x41, source.remote(MTU_BYTES), 2 * MTU_BYTES)])
    rest = await peer.sent(2, "the responses from the second PSN")
    assert [c.packet for c in rest] == peer.answers(qp, data[MTU_BYTES:], 0x41, msn=1)
    assert (await qp.query()).rq_psn == 0x43
    await finish(rdma)


@cocotb.test()
async def test_a_duplicate_read_is_served_inside_an_unfinished_write(dut):
    """A READ is answered, then the first two packets of a 3-packet RDMA WRITE arrive and its
    last is lost. The READ request comes again (its response was lost too): it is served
    again although the WRITE is unfinished, and the WRITE still completes when its last
    packet comes. (A requester that lost both resends the READ first, every round: were it
    refused there, no retry could ever get past it.)"""
    rdma, peer = await open_peer(dut)
    qp = await responder(rdma, rq_psn=0x70)
    source, target = await rdma.region(4096), await rdma.region(4096)
    remote = source.remote(0)
    read = peer.read_request(qp, 0x70, remote, 100)
    await peer.put([read])
    [first] = await peer.sent(1, "the READ response")
    assert first.packet == peer.answers(qp, source.read(0, 100), 0x70, msn=1)[0]
    data = rdma.payload(3 * MTU_BYTES)
    write = peer.requests(qp, "RDMA_WRITE", data, 0x71,
                          reth=RETH(va=target.remote(0).addr, rkey=target.remote(0).rkey,
                                    dma_len=len(data)))
    await peer.put(write[:2] + [read])
    [again] = await peer.sent(1, "the READ response again, inside the WRITE")
    assert again.packet == first.packet
    await peer.put(write[2:])
    [ack] = await peer.sent(1, "the WRITE's ACK")
    assert (ack.packet.bth.psn, ack.packet.aeth) == (0x73, AETH(0x1F, 2))
    assert target.read(0, len(data)) == data
    await finish(rdma)


@cocotb.test()
async def test_acks_where_asked_and_psn_wrap_at_the_responder(dut):
    """A 3-packet SEND from PSN 0xFFFFFE (PSNs 0xFFFFFE, 0xFFFFFF, 0) asks for an ACK on its
    middle packet (PSN 15 mod 16) and on its last: each is acknowledged (MSN 0, then 1); a
    WRITE whose last packet asks for nothing gets no ACK, and the next message's ACK covers
    it (coalesced, MSN 3)."""
    rdma, peer = await open_peer(dut)
    qp = await responder(rdma, rq_psn=0xFFFFFE)
    inbox, target = await rdma.region(1024), await rdma.region(1024)
    await qp.post_recv(RecvWR(inbox.sge(0, 1024), wr_id=0xF1))
    payload = rdma.payload(2 * MTU_BYTES + 10)
    send = peer.requests(qp, "SEND", payload, 0xFFFFFE)
    assert [p.bth.ackreq for p in send] == [False, True, True]
    await peer.put(send)
    acks = await peer.sent(2, "the ACKs of the SEND")
    assert [(c.packet.bth.psn, c.packet.aeth) for c in acks] == [
        (0xFFFFFF, AETH(0x1F, 0)), (0x000000, AETH(0x1F, 1))]
    [wc] = await rdma.poll_until(qp.recv_cq, 1)
    assert wc.byte_len == len(payload) and inbox.read(0, len(payload)) == payload
    [write] = peer.requests(qp, "RDMA_WRITE", b"\x5a" * 16, 0x1,
                            reth=RETH(va=target.remote(0).addr, rkey=target.remote(0).rkey,
                                      dma_len=16))
    await peer.put([replace(write, bth=replace(write.bth, ackreq=False))])
    await peer.quiet(500, "a WRITE that asked for no ACK")
    [write2] = peer.requests(qp, "RDMA_WRITE", b"\xa5" * 16, 0x2,
                             reth=RETH(va=target.remote(16).addr, rkey=target.remote(16).rkey,
                                       dma_len=16))
    await peer.put([write2])
    [ack] = await peer.sent(1, "the coalesced ACK")
    assert (ack.packet.bth.psn, ack.packet.aeth) == (0x2, AETH(0x1F, 3))
    assert target.read(0, 32) == b"\x5a" * 16 + b"\xa5" * 16
    await finish(rdma)


# ---------------------------------------------------------------------------------------------
# Atomics

def u64(data):
    return int.from_bytes(data, "little")


@cocotb.test()
async def test_a_duplicate_atomic_is_answered_from_its_record_not_executed_again(dut):
    """A FetchAdd at PSN 0x70 and a CompareSwap at 0x71 execute and are answered with the
    original values (MSN 1, 2). The FetchAdd comes again (its ACK was lost): it is answered
    with the same original value from the responder's record, and the counter is not added to
    again. After 16 more atomics its record is gone (the responder keeps the last 16): a
    duplicate of it is dropped, while one of an atomic still kept is answered."""
    rdma, peer = await open_peer(dut)
    qp = await responder(rdma, rq_psn=0x70)
    target = await rdma.region(64)
    counter, word = target.remote(0), target.remote(8)
    start, other = u64(target.read(0, 8)), u64(target.read(8, 8))
    await peer.put([peer.atomic(qp, counter, 0x70, add=5),
                    peer.atomic(qp, word, 0x71, compare=other, swap=0x1122334455667788)])
    first, second = await peer.sent(2, "the atomic ACKs")
    assert first.packet == peer.atomic_ack(qp, 0x70, start, msn=1, to_peer=True)
    assert second.packet == peer.atomic_ack(qp, 0x71, other, msn=2, to_peer=True)
    await peer.put([peer.atomic(qp, counter, 0x70, add=5)])
    [again] = await peer.sent(1, "the duplicate's ACK")
    assert again.packet.atomic_ack_eth.orig_data == start
    assert (again.packet.bth.opcode, again.packet.bth.psn) == (0x12, 0x70)
    assert u64(target.read(0, 8)) == (start + 5) % 2**64, "the duplicate was executed"
    assert u64(target.read(8, 8)) == 0x1122334455667788
    await peer.put([peer.atomic(qp, counter, 0x72 + i, add=1) for i in range(16)])
    acks = await peer.sent(16, "the ACKs of 16 more FetchAdds")
    assert [c.packet.atomic_ack_eth.orig_data for c in acks] == \
        [(start + 5 + i) % 2**64 for i in range(16)]
    await peer.put([peer.atomic(qp, counter, 0x70, add=5)])
    await peer.quiet(1000, "a duplicate whose record is gone")
    await peer.put([peer.atomic(qp, counter, 0x72, add=1)])
    [kept] = await peer.sent(1, "the ACK of a duplicate still kept")
    assert kept.packet.atomic_ack_eth.orig_data == (start + 5) % 2**64
    assert u64(target.read(0, 8)) == (start + 5 + 16) % 2**64
    await finish(rdma)


@cocotb.test()
async def test_an_atomic_ack_lost_is_resent_for_and_its_value_stored_once(dut):
    """The device's FetchAdd goes out as an AtomicETH (add, no compare, AckReq); the peer
    stays silent, so on the ACK timeout it is sent again (same PSN); the atomic ACK that then
    comes puts its original value in the local SGE, and the WR completes FETCH_ADD with
    byte_len 8. A CompareSwap carries its swap and compare values."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, sq_psn=0x200)
    target, local = await rdma.region(64), await rdma.region(64)
    remote = target.remote(16)
    await qp.post_send(atomic_fetch_and_add(local.sge(0, 8), remote, 0x1234, wr_id=1))
    [req] = await peer.sent(1, "the FetchAdd")
    assert req.packet.bth.opcode == 0x14 and req.packet.bth.psn == 0x200 and req.packet.bth.ackreq
    assert req.packet.atomic_eth == AtomicETH(va=remote.addr, rkey=remote.rkey, swap_add=0x1234,
                                              compare=0)
    [resent] = await peer.sent(1, "the FetchAdd again, after the ACK timeout")
    assert resent.packet == req.packet
    await peer.put([peer.atomic_ack(qp, 0x200, 0xDEADBEEF00C0FFEE)])
    [wc] = await rdma.poll_until(qp.send_cq, 1)
    assert_wc(wc, wr_id=1, status=WCStatus.SUCCESS, opcode=WCOpcode.FETCH_ADD, byte_len=8)
    assert u64(local.read(0, 8)) == 0xDEADBEEF00C0FFEE
    await qp.post_send(atomic_cmp_and_swp(local.sge(8, 8), remote, 7, 9, wr_id=2))
    [cas] = await peer.sent(1, "the CompareSwap")
    assert (cas.packet.bth.opcode, cas.packet.bth.psn) == (0x13, 0x201)
    assert (cas.packet.atomic_eth.swap_add, cas.packet.atomic_eth.compare) == (9, 7)
    await peer.put([peer.atomic_ack(qp, 0x201, 7, msn=2)])
    [wc] = await rdma.poll_until(qp.send_cq, 1)
    assert_wc(wc, wr_id=2, status=WCStatus.SUCCESS, opcode=WCOpcode.COMP_SWAP, byte_len=8)
    assert u64(local.read(8, 8)) == 7
    await finish(rdma)


@cocotb.test()
async def test_atomics_count_in_max_rd_atomic(dut):
    """max_rd_atomic 2: of three FetchAdds posted together two go out; the third waits until
    the first is answered. A READ response is not taken for an atomic, nor an atomic ACK for a
    READ: the answer must match what waits at that PSN, or it is dropped."""
    rdma, peer = await open_peer(dut)
    qp = await requester(rdma, sq_psn=0x300, max_rd_atomic=2, timeout=0)
    target, local = await rdma.region(64), await rdma.region(64)
    await qp.post_send([atomic_fetch_and_add(local.sge(8 * i, 8), target.remote(0), 1,
                                             wr_id=i) for i in range(3)])
    sent = await peer.sent(2, "two atomics")
    assert psns(sent) == [0x300, 0x301]
    await peer.quiet(2000, "a third atomic beyond max_rd_atomic")
    memory = local.read()
    await peer.put(peer.read_responses(qp, b"\x55" * 8, 0x300))
    await peer.quiet(1000, "an answer to a READ response that fits no READ")
    assert local.read() == memory, "a READ response was stored for an atomic"
    await peer.put([peer.atomic_ack(qp, 0x300, 41)])
    [third] = await peer.sent(1, "the third atomic, once one is answered")
    assert third.packet.bth.psn == 0x302
    await peer.put([peer.atomic_ack(qp, 0x301, 42, msn=2), peer.atomic_ack(qp, 0x302, 43, msn=3)])
    wcs = await rdma.poll_until(qp.send_cq, 3)
    assert [(wc.wr_id, wc.status) for wc in wcs] == [(i, WCStatus.SUCCESS) for i in range(3)]
    assert [u64(local.read(8 * i, 8)) for i in range(3)] == [41, 42, 43]
    await finish(rdma)


# ---------------------------------------------------------------------------------------------
# The pytest runner: the same build as test_rdma_dev (links open to the testbench). make test
# runs the InfiniBand group at 256 bits; make regress and make coverage at every width (the
# transport's rules do not depend on the width, and test_wire and test_fabric run RC at every
# width). The ethernet group is the same tests with port 1 on Ethernet (RoCE v2 frames to and
# from the peer): make test runs ETHERNET_CORE of it at 256 bits, make regress all of it.

ETHERNET_CORE = ("test_timeout_resends_from_the_oldest_unacknowledged_psn",
                 "test_sequence_nak_resends_from_the_psn_it_names",
                 "test_a_duplicate_read_is_served_again_from_its_psn",
                 "test_a_duplicate_atomic_is_answered_from_its_record_not_executed_again")


@pytest.mark.parametrize("link", ["ib", "eth"])
@pytest.mark.parametrize("w", [64, 256, 512])
def test_rc_transport(w, link):
    if w != 256 and not (REGRESS or coverage_enabled()):
        pytest.skip("RC transport at 64 and 512 bits: make regress")
    if link == "eth" and w != 256 and not REGRESS:
        pytest.skip("RC transport on Ethernet at 64 and 512 bits: make regress")
    pattern = (rf"^test_rc_transport\.({'|'.join(ETHERNET_CORE)})(/|$)"
               if link == "eth" and not REGRESS else r"^test_rc_transport\.")
    simrun.run(toplevel="tb_rdma_dev", test_module="test_rc_transport",
               parameters={"DATA_WIDTH": w},
               extra_env={"COCOTB_TEST_FILTER": pattern, "RDMA_LINK": link})
