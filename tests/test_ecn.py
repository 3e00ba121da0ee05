"""ECN and congestion notification on Ethernet ports (RoCE v2, the hook DCQCN needs), on a
device whose port 1 and port 2 are cabled to each other (tb/hdl/tb_rdma_dev.v, CABLE = 1).

A request that arrives marked Congestion Experienced (IP ECN 11) is counted
(np_ecn_marked_roce_packets) and, once it has passed its QP check, answered with a CNP (BTH
opcode 0x81, BECN) to its source QP, at most one per QP in each CNP_INTERVAL window (0: one per
marked packet); the sender counts the CNPs it gets for its QPs (rp_cnp_handled). Nothing else
changes: the data, the completions and the answers are those of an unmarked message, and the
answers go back ECT(0), not CE. Mostly the senders mark their own packets through the traffic
class of their address vectors; in one test a congested switch marks them on the way (the
cable model, tb/link_faults.py), which gives the receiver the same packets.

With CNP_INTERVAL 0 the reference model predicts every CNP and counter, and the scoreboard
compares them; with a window it does not (which packets share one depends on timing), and the
test counts them itself.
"""

import cocotb

from tb import simrun
from tb.link_faults import LinkFaults
from tb.seed import SEED
from tb.ib_packet import CNP_OPCODE, ECN_CE, ECN_ECT0, marked_ce
from tb.rdma_program import QKEY, Rdma, work_request
from tb.rdma_tb import IB_PORT_SETUP
from tb.verbs import MTU, GlobalRoute, PortCounter, QPType, RecvWR, WCStatus, WROpcode, ud_send

DSCP = 0x2E << 2            # expedited forwarding, in the traffic class's upper six bits
FOREVER = 0xFFFFFFFF        # a CNP window longer than any test


async def marked_pair(rdma, transport, tclass_a, tclass_b=DSCP | ECN_ECT0):
    """QPs a (port 1) and b (port 2) aimed at each other across the cable, a sending with
    traffic class `tclass_a`, b with `tclass_b`."""
    a = await rdma.qp(transport)
    b = await rdma.qp(transport)
    for qp, port, peer, tclass in ((a, 1, b, tclass_a), (b, 2, a, tclass_b)):
        lid = rdma.own_lid(3 - port)
        await rdma.connect(qp, peer.qp_num, port=port, dlid=lid, path_mtu=MTU.MTU1024,
                           grh=rdma.route(port, lid, traffic_class=tclass))
    return a, b


PACKETS = 6                 # the request packets of exchange()


async def exchange(rdma, a, b, src, dst):
    """From a to b: a WRITE of three packets, a SEND of two (received), a READ request (two
    responses); each completes successfully."""
    wrs = [work_request(WROpcode.RDMA_WRITE, src.sge(0, 3000), dst.remote(0), wr_id=1),
           work_request(WROpcode.SEND, src.sge(0, 2000), wr_id=2),
           work_request(WROpcode.RDMA_READ, dst.sge(4096, 1500), src.remote(100), wr_id=3)]
    await b.post_recv(RecvWR(dst.sge(8192, 4096), wr_id=20))
    for wr in wrs:
        await a.post_send(wr)
        [wc] = await rdma.poll_until(a.send_cq, 1)
        assert wc.status == WCStatus.SUCCESS and wc.wr_id == wr.wr_id, wc
    [rwc] = await rdma.poll_until(b.recv_cq, 1)
    assert rwc.status == WCStatus.SUCCESS and rwc.byte_len == 2000, rwc


async def counters(rdma):
    return {p: await rdma.dev.port_counters(p) for p in (1, 2)}


def moves(before, after, port, counter):
    return after[port][counter] - before[port][counter]


def cnps(rdma, port):
    return [p for p in rdma.tb.sniffers[port].packets() if p.bth.opcode == CNP_OPCODE]


@cocotb.test()
async def test_every_marked_request_gets_a_cnp_without_a_window(dut):
    """CNP_INTERVAL 0: each of the 6 request packets a sends marked CE (WRITE, SEND, READ
    request) is counted at port 2 and answered with a CNP to a's QP: BECN set, PSN 0, the
    request's DSCP with ECT(0), its GIDs swapped; port 1 counts each. b's requests, ECT(0) but
    not CE, send none. The ACKs and READ responses go back ECT(0), and the data and
    completions are those of unmarked messages (the scoreboard: the model predicts every
    packet and counter)."""
    rdma = await Rdma.open(dut, cabled=True)
    await rdma.dev.set_cnp_interval(0)
    a, b = await marked_pair(rdma, QPType.RC, DSCP | ECN_CE)
    src, dst = await rdma.region(8192), await rdma.region(16384)
    before = await counters(rdma)
    await exchange(rdma, a, b, src, dst)
    await exchange(rdma, b, a, src, dst)
    after = await counters(rdma)

    marked = [p for p in rdma.tb.sniffers[1].packets() if marked_ce(p)]
    assert len(marked) == PACKETS, [p.summary() for p in marked]
    notes = cnps(rdma, 2)
    assert len(notes) == len(marked)
    for cnp in notes:
        assert cnp.bth.dest_qp == a.qp_num and cnp.bth.becn and cnp.bth.psn == 0, cnp
        assert cnp.roce.tclass == DSCP | ECN_ECT0, cnp.roce
        assert (cnp.roce.sgid, cnp.roce.dgid) == (marked[0].roce.dgid, marked[0].roce.sgid)
    answers = [p for p in rdma.tb.sniffers[2].packets() if p.bth.opcode != CNP_OPCODE]
    assert answers and all(p.roce.tclass == DSCP | ECN_ECT0 for p in answers)
    assert not cnps(rdma, 1), "b's requests were not marked CE: no CNP for them"
    assert moves(before, after, 2, PortCounter.NP_ECN_MARKED_ROCE_PACKETS) == len(marked)
    assert moves(before, after, 2, PortCounter.NP_CNP_SENT) == len(marked)
    assert moves(before, after, 1, PortCounter.RP_CNP_HANDLED) == len(marked)
    for counter in (PortCounter.NP_ECN_MARKED_ROCE_PACKETS, PortCounter.NP_CNP_SENT):
        assert moves(before, after, 1, counter) == 0
    assert moves(before, after, 2, PortCounter.RP_CNP_HANDLED) == 0
    await rdma.finish(links_idle=False)


@cocotb.test()
async def test_a_ud_datagram_marked_ce_notifies_its_source_qp(dut):
    """A UD SEND marked CE, from each of port 1's addresses to port 2's of the same kind
    (IPv4, IPv6, IPv4 on VLAN 7), gets its CNP addressed to the DETH's source QP, in the
    sender's VLAN when the address it used is on one."""
    rdma = await Rdma.open(dut, cabled=True)
    await rdma.dev.set_cnp_interval(0)
    sender, receiver = await rdma.ud_qp(port=1), await rdma.ud_qp(port=2)
    src, dst = await rdma.region(4096), await rdma.region(4096)
    for sgid_index, peer in enumerate(rdma.dev.ports[2].own_gids()):
        ah = await rdma.pd.create_ah(1, rdma.own_lid(2), grh=GlobalRoute(
            peer.gid, traffic_class=DSCP | ECN_CE, sgid_index=sgid_index))
        await receiver.post_recv(RecvWR(dst.sge(0, 4096), wr_id=sgid_index))
        await sender.post_send(ud_send(src.sge(0, 300), ah, receiver.qp_num, QKEY,
                                       wr_id=sgid_index))
        await rdma.poll_until(sender.send_cq, 1)
        await rdma.poll_until(receiver.recv_cq, 1)
    notes = cnps(rdma, 2)
    assert [n.bth.dest_qp for n in notes] == [sender.qp_num] * len(notes) and notes
    sent = [p for p in rdma.tb.sniffers[1].packets() if marked_ce(p)]
    assert [n.roce.vlan for n in notes] == [p.roce.vlan for p in sent] == [None, None, 7]
    await rdma.finish(links_idle=False)


@cocotb.test()
async def test_a_window_lets_each_qp_send_one_cnp(dut):
    """A CNP window longer than the test: two QPs each send many marked packets and each
    gets exactly one CNP, counted at both ends; with the window then set to 0 every marked
    packet gets one again."""
    rdma = await Rdma.open(dut, cabled=True)
    await rdma.dev.set_cnp_interval(FOREVER)
    pairs = [await marked_pair(rdma, QPType.RC, DSCP | ECN_CE) for _ in range(2)]
    src, dst = await rdma.region(8192), await rdma.region(16384)
    before = await counters(rdma)
    for a, b in pairs:
        await exchange(rdma, a, b, src, dst)
    after = await counters(rdma)
    assert sorted(n.bth.dest_qp for n in cnps(rdma, 2)) == sorted(a.qp_num for a, _ in pairs)
    assert moves(before, after, 2, PortCounter.NP_ECN_MARKED_ROCE_PACKETS) == 2 * PACKETS
    assert moves(before, after, 2, PortCounter.NP_CNP_SENT) == 2
    assert moves(before, after, 1, PortCounter.RP_CNP_HANDLED) == 2

    await rdma.dev.set_cnp_interval(0)
    a, b = pairs[0]
    await exchange(rdma, a, b, src, dst)
    assert len(cnps(rdma, 2)) == 2 + PACKETS
    assert moves(after, await counters(rdma), 1, PortCounter.RP_CNP_HANDLED) == PACKETS
    await rdma.finish(links_idle=False)


@cocotb.test()
async def test_a_switch_marking_half_the_requests_gets_a_cnp_for_each(dut):
    """The cable from port 1 marks half of the ECN-capable (ECT(0)) requests CE, as a
    congested switch does: port 2 counts exactly the frames the cable marked, sends one CNP
    for each to a's QP, and port 1 counts them; the data and completions are those of an
    unmarked path. (The model does not see which packets a cable marks: this test counts.)"""
    rdma = await Rdma.open(dut, cabled=True)
    await rdma.dev.set_cnp_interval(0)
    cable = rdma.tb.cables[1]
    LinkFaults(mark=0.5, kinds={"requests"}, seed=SEED).apply(cable)
    rdma.sb.cables_lossy(rdma.tb.watch_arrivals())
    a, b = await marked_pair(rdma, QPType.RC, DSCP | ECN_ECT0)
    src, dst = await rdma.region(8192), await rdma.region(16384)
    before = await counters(rdma)
    for _ in range(3):
        await exchange(rdma, a, b, src, dst)
    after = await counters(rdma)
    marked = LinkFaults.stats(cable)["marked"]
    arrived = [p for p in rdma.tb.arrivals[1].packets() if marked_ce(p)]
    assert 0 < marked == len(arrived) < 3 * PACKETS
    assert not any(marked_ce(p) for p in rdma.tb.sniffers[1].packets()), "a sent ECT(0)"
    assert [n.bth.dest_qp for n in cnps(rdma, 2)] == [a.qp_num] * marked
    assert moves(before, after, 2, PortCounter.NP_ECN_MARKED_ROCE_PACKETS) == marked
    assert moves(before, after, 2, PortCounter.NP_CNP_SENT) == marked
    assert moves(before, after, 1, PortCounter.RP_CNP_HANDLED) == marked
    await rdma.finish(links_idle=False)


@cocotb.test()
async def test_infiniband_ports_have_no_ecn(dut):
    """The same marked traffic class on InfiniBand ports is only a GRH TClass: no CNP, no
    congestion counter moves."""
    rdma = await Rdma.open(dut, cabled=True)
    for port, attrs in IB_PORT_SETUP.items():
        await rdma.dev.set_port(port, **attrs)
        rdma.tb.set_link(port, "ib")
    await rdma.dev.set_cnp_interval(0)
    a, b = await marked_pair(rdma, QPType.RC, DSCP | ECN_CE)
    src, dst = await rdma.region(8192), await rdma.region(16384)
    before = await counters(rdma)
    await exchange(rdma, a, b, src, dst)
    after = await counters(rdma)
    for port in (1, 2):
        for counter in (PortCounter.NP_ECN_MARKED_ROCE_PACKETS, PortCounter.NP_CNP_SENT,
                        PortCounter.RP_CNP_HANDLED):
            assert moves(before, after, port, counter) == 0
    await rdma.finish(links_idle=False)


def test_ecn():
    simrun.run(
        toplevel="tb_rdma_dev",
        test_module="test_ecn",
        parameters={"DATA_WIDTH": 256, "CABLE": 1},
        extra_env={"RDMA_LINK": "eth"},
    )
