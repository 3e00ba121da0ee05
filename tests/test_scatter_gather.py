"""Scatter/gather lists: work requests of up to four SGEs on rdma_dev (harness tb/hdl/tb_rdma_dev.v
built with CABLE = 1, so each program runs through the loopback bypass, the port's internal
loopback and the cable between port 1 and port 2).

A send WR's message is its SGEs' bytes in order; a receive WR's buffer is its SGEs in order,
filled from the first. The tests check the bytes themselves and the scoreboard checks every
byte of host memory, the completions and the packets against the reference model, so a byte
landing in the wrong SGE, or anywhere outside the SGEs, fails the run.
"""

import cocotb
import pytest

from tb import simrun
from tb.rdma_tb import LINK
from tb.seed import REGRESS
from tb.rdma_program import (
    NEEDS_RECEIVE, QKEY, SEND_WC_OPCODE, Rdma, assert_wc,
    grh_bytes, unregistered_key, work_request,
)
from tb.verbs import (
    GRH_BYTES, MAX_SGE, MTU, SGE, CommandError, GlobalRoute, QPState, QPType, RecvWR,
    VerbsError, WCStatus, WROpcode, atomic_fetch_and_add, ud_send,
)

PATHS = ("bypass", "internal loopback", "cable")
LENGTHS = (0, 1, 255, 700, 2100)      # at path MTU 256: pieces cross packet boundaries
UD_LENGTHS = (0, 1, 100, 1000)


async def pair(rdma, transport, path, sges=MAX_SGE, **attrs):
    """RC or UC QPs a and b for `path`, their WQEs holding `sges` SGEs: loopback on port 1 with
    the bypass on or off, or port 1 to port 2 across the cable."""
    await rdma.dev.set_bypass(path == "bypass")
    if path != "cable":
        return await rdma.connected_pair(transport, sges=sges, **attrs)
    a = await rdma.qp(transport, sges=sges)
    b = await rdma.qp(transport, sges=sges)
    await rdma.connect(a, b.qp_num, port=1, dlid=rdma.own_lid(2), **attrs)
    await rdma.connect(b, a.qp_num, port=2, dlid=rdma.own_lid(1), **attrs)
    return a, b


def cut(rng, total, n):
    """`total` split into `n` lengths (some may be 0)."""
    points = sorted(rng.randrange(total + 1) for _ in range(n - 1))
    return [hi - lo for lo, hi in zip([0] + points, points + [total])]


def sg_list(rng, region, lengths, start=0):
    """SGEs of `lengths` in `region`, in order from about `start`, at random alignments with a
    gap after each (so a byte in the wrong SGE lands somewhere it is seen)."""
    sges, offset = [], start + rng.randrange(64)
    for length in lengths:
        sges.append(region.sge(offset, length))
        offset += length + rng.randrange(1, 64)
    assert offset <= region.length, "region too small for the list"
    return sges


def gathered(region, sges):
    """The bytes of `sges` (all in `region`), in order."""
    base = region.mr.addr
    return b"".join(region.read(s.addr - base, s.length) for s in sges if s.length)


# ---------------------------------------------------------------------------------------------
# Data lands where the lists say, on every path

@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC])
async def test_gather_and_scatter_on_every_path(dut, transport):
    """SEND, SEND_WITH_IMM, RDMA WRITE and WRITE_WITH_IMM with 1 to 4 send SGEs (random
    lengths, some empty, at any alignment) into 1 to 4 receive SGEs (a SEND's) or one remote
    range (a WRITE's), at path MTU 256 so packets and SGEs cut the message at different places:
    the receiver's SGEs, in order, hold exactly the sender's gathered bytes (a longer receive
    buffer keeps its tail), the completions report the whole message, and the bypass, the
    internal loopback and the cable give the same result."""
    rdma = await Rdma.open(dut, cabled=True)
    rng = rdma.rng
    opcodes = [WROpcode.SEND, WROpcode.SEND_WITH_IMM, WROpcode.RDMA_WRITE,
               WROpcode.RDMA_WRITE_WITH_IMM]
    for path in PATHS:
        a, b = await pair(rdma, transport, path, path_mtu=MTU.MTU256)
        src, dst = await rdma.region(16384), await rdma.region(16384)
        for opcode in opcodes:
            for length in LENGTHS:
                sends = sg_list(rng, src, cut(rng, length, rng.randint(1, MAX_SGE)))
                recvs, remote = [], dst.remote(rng.randrange(4096))
                if opcode in NEEDS_RECEIVE:
                    size = length + rng.randrange(0, 100) if opcode != \
                        WROpcode.RDMA_WRITE_WITH_IMM else 0
                    recvs = sg_list(rng, dst, cut(rng, size, rng.randint(1, MAX_SGE)), 8192)
                    before = gathered(dst, recvs)
                    await b.post_recv(RecvWR(recvs, wr_id=length))
                await a.post_send(work_request(opcode, sends, remote, wr_id=length, imm=length))
                [wc] = await rdma.poll_until(a.send_cq, 1)
                assert_wc(wc, wr_id=length, status=WCStatus.SUCCESS,
                          opcode=SEND_WC_OPCODE[opcode])
                data = gathered(src, sends)
                if opcode in NEEDS_RECEIVE:
                    [rwc] = await rdma.poll_until(b.recv_cq, 1)
                    assert_wc(rwc, wr_id=length, status=WCStatus.SUCCESS, byte_len=length)
                if opcode in (WROpcode.SEND, WROpcode.SEND_WITH_IMM):
                    assert gathered(dst, recvs) == data + before[length:], \
                        f"{path}: {opcode.name} of {length} bytes from {sends} into {recvs}"
                else:
                    # UC completes a WRITE when its last packet has left: the far end may still
                    # be storing it
                    at = remote.addr - dst.mr.addr
                    for _ in range(50):
                        if dst.read(at, length) == data:
                            break
                        await rdma.cycles(100)
                    assert dst.read(at, length) == data, \
                        f"{path}: {opcode.name} of {length} bytes from {sends}"
    await rdma.finish(links_idle=False)


@cocotb.test()
@cocotb.parametrize(global_route=[False, True])
async def test_ud_grh_area_spans_receive_sges(dut, global_route):
    """UD SENDs whose receive lists begin with SGEs shorter than the 40-byte GRH area (the GRH
    then spans two or three SGEs, and the payload starts inside one), from a gather list, on
    every path: the receive list holds the GRH the packet carried (or 40 zero bytes; on
    Ethernet always the IP header) and then the payload, and byte_len counts both."""
    rdma = await Rdma.open(dut, cabled=True)
    rng = rdma.rng
    for path in PATHS:
        await rdma.dev.set_bypass(path == "bypass")
        peer_port = 2 if path == "cable" else 1
        a = await rdma.ud_qp(port=1, sges=MAX_SGE)
        b = await rdma.ud_qp(port=peer_port, sges=MAX_SGE)
        dlid = rdma.own_lid(peer_port)
        route = GlobalRoute(rdma.dev.ports[peer_port].gid, flow_label=0x2468A, hop_limit=33,
                            traffic_class=0x66) if global_route else rdma.route(1, dlid)
        ah = await rdma.ah(1, dlid, grh=route)
        src, dst = await rdma.region(8192), await rdma.region(8192)
        for i, length in enumerate(UD_LENGTHS):
            firsts = ([7, 20, 13], [16, 30], [40], [1, 39])[i % 4]    # the GRH area's SGEs
            rest = length + rng.randrange(8)
            recvs = sg_list(rng, dst, firsts + cut(rng, rest, MAX_SGE - len(firsts)))
            sends = sg_list(rng, src, cut(rng, length, rng.randint(1, MAX_SGE)))
            await b.post_recv(RecvWR(recvs, wr_id=i))
            await a.post_send(ud_send(sends, ah, b.qp_num, QKEY, wr_id=i))
            [rwc] = await rdma.poll_until(b.recv_cq, 1)
            assert_wc(rwc, wr_id=i, status=WCStatus.SUCCESS, byte_len=length + GRH_BYTES)
            grh = (grh_bytes(route, rdma.dev.ports[1].gid, length, False, LINK) if route
                   else bytes(GRH_BYTES))
            got = gathered(dst, recvs)
            assert got[:GRH_BYTES + length] == grh + gathered(src, sends), \
                f"{path}: {length} bytes into {recvs}"
        await rdma.poll_until(a.send_cq, len(UD_LENGTHS))
    await rdma.finish(links_idle=False)


# ---------------------------------------------------------------------------------------------
# Faults in a list: the same completion on every path

FAULTS = {  # what the sender's and the receiver's completions are, on RC
    "second send SGE's lkey names no MR": (WCStatus.LOC_PROT_ERR, None),
    "third receive SGE past its MR": (WCStatus.REM_OP_ERR, WCStatus.LOC_PROT_ERR),
    "receive SGEs too short together": (WCStatus.REM_INV_REQ_ERR, WCStatus.LOC_LEN_ERR),
    "empty SGEs with bad keys": (WCStatus.SUCCESS, WCStatus.SUCCESS),
    "RDMA READ with two SGEs": (WCStatus.LOC_QP_OP_ERR, None),
    "atomic with two 4-byte SGEs": (WCStatus.LOC_QP_OP_ERR, None),
    "messages over 2^31 bytes": (WCStatus.LOC_LEN_ERR, None),
    "more SGEs than the send WQE holds": (WCStatus.LOC_QP_OP_ERR, None),
    "more SGEs than the receive WQE holds": (WCStatus.REM_OP_ERR, WCStatus.LOC_QP_OP_ERR),
}


@cocotb.test()
@cocotb.parametrize(fault=list(FAULTS))
async def test_a_faulty_list_fails_the_same_on_every_path(dut, fault):
    """One RC SEND (or READ, or FetchAdd) whose scatter/gather list has one fault, through the
    bypass, the internal loopback and the cable: the same send and receive completions on
    each. Every SGE with bytes is checked (an empty one is not, whatever its key); READs and
    atomics take one SGE (max_sge_rd 1); a message is at most 2^31 bytes; a WQE saying it has
    more SGEs than its QP's WQEs hold is refused (the driver refuses to post one, so the test
    writes it past the driver's check). The receiver's faults move its QP to ERR, as a bad
    receive lkey does; nothing else is written."""
    rdma = await Rdma.open(dut, cabled=True)
    send_status, recv_status = FAULTS[fault]
    bad = unregistered_key(rdma.dev)
    for path in PATHS:
        sges = 2 if "WQE holds" in fault else MAX_SGE
        a, b = await pair(rdma, QPType.RC, path, sges=sges)
        src, dst = await rdma.region(4096), await rdma.region(4096)
        sends = [src.sge(0, 100), src.sge(200, 50)]
        recvs = [dst.sge(0, 60), dst.sge(100, 60)]
        wr = work_request(WROpcode.SEND, sends, wr_id=0xA1)
        if fault == "second send SGE's lkey names no MR":
            sends[1] = SGE(sends[1].addr, 50, bad)
            wr = work_request(WROpcode.SEND, sends, wr_id=0xA1)
        elif fault == "third receive SGE past its MR":
            recvs += [dst.sge(4090, 200)]      # its first 30 bytes, needed, cross the end
        elif fault == "receive SGEs too short together":
            recvs = [dst.sge(0, 60), dst.sge(100, 89)]
        elif fault == "empty SGEs with bad keys":
            wr = work_request(WROpcode.SEND, [SGE(0, 0, bad)] + sends + [SGE(7, 0, 0)],
                              wr_id=0xA1)
            recvs = [SGE(3, 0, bad), *recvs, dst.sge(300, 100)]
        elif fault == "RDMA READ with two SGEs":
            wr = work_request(WROpcode.RDMA_READ, [dst.sge(0, 8), dst.sge(64, 8)],
                              src.remote(0), wr_id=0xA1)
        elif fault == "atomic with two 4-byte SGEs":
            wr = atomic_fetch_and_add([dst.sge(0, 4), dst.sge(64, 4)], src.remote(0), 1,
                                      wr_id=0xA1)
        elif fault == "messages over 2^31 bytes":
            wr = work_request(WROpcode.SEND, [SGE(0, 1 << 30, src.lkey),
                                              SGE(0, (1 << 30) + 1, src.lkey)], wr_id=0xA1)
        elif fault == "more SGEs than the send WQE holds":
            wr = work_request(WROpcode.SEND, sends + [src.sge(300, 10)], wr_id=0xA1)
            try:
                await a.post_send(wr)
            except VerbsError:
                pass
            else:
                raise AssertionError("the driver posted 3 SGEs on a QP whose WQEs hold 2")
        elif fault == "more SGEs than the receive WQE holds":
            recvs += [dst.sge(300, 10)]
        memory = (src.read(), dst.read())
        if wr.opcode in NEEDS_RECEIVE:
            await b.post_recv(RecvWR(recvs, wr_id=0xB1), sge_check=False)
        await a.post_send(wr, sge_check=False)
        [wc] = await rdma.poll_until(a.send_cq, 1)
        assert_wc(wc, wr_id=0xA1, status=send_status)
        if recv_status is not None:
            [rwc] = await rdma.poll_until(b.recv_cq, 1)
            assert_wc(rwc, wr_id=0xB1, status=recv_status)
        if send_status == WCStatus.SUCCESS:
            assert gathered(dst, recvs)[:150] == gathered(src, sends), path
        else:
            assert (src.read(), dst.read()) == memory, path
            await rdma.assert_state(a, QPState.ERR)
            await rdma.assert_state(b, QPState.ERR if recv_status not in (None, WCStatus.SUCCESS)
                                    else QPState.RTS)
    await rdma.finish(links_idle=False)


@cocotb.test()
async def test_qp_sge_capacity_is_created_and_queried(dut):
    """CREATE_QP takes each queue's SGE count (0 to 4; 0 and 1 give 64-byte WQEs, 2 to 4
    128-byte ones) and refuses 5 with BAD_PARAM; QUERY_QP reports what was created; the driver
    refuses to post more SGEs than a queue holds."""
    rdma = await Rdma.open(dut, cabled=True)
    cq = await rdma.dev.create_cq(16)
    for send_sges, recv_sges in ((0, 1), (2, 4), (4, 3)):
        qp = await rdma.pd.create_qp(QPType.RC, cq, cq, 4, 4, send_sges, recv_sges)
        status = await qp.query()
        assert (status.max_send_sge, status.max_recv_sge) == (send_sges, recv_sges)
        assert (qp.sq.stride, qp.rq.stride) == (64 if send_sges < 2 else 128,
                                                64 if recv_sges < 2 else 128)
        await rdma.connect(qp, qp.qp_num, 1)
        src = await rdma.region(64)
        try:
            await qp.post_recv(RecvWR([src.sge(0, 1)] * (max(recv_sges, 1) + 1)))
        except VerbsError:
            pass
        else:
            raise AssertionError(f"posted {max(recv_sges, 1) + 1} receive SGEs, {recv_sges} held")
    try:
        await rdma.pd.create_qp(QPType.RC, cq, cq, 4, 4, MAX_SGE + 1, 1)
    except CommandError:
        pass
    else:
        raise AssertionError(f"CREATE_QP accepted {MAX_SGE + 1} send SGEs")
    await rdma.finish(links_idle=False)


# ---------------------------------------------------------------------------------------------
# The pytest runner: the same build as test_wire (tb_rdma_dev with CABLE = 1). make test runs it
# at 256 bits (the list machinery itself, dma_sgl, is tested at every width by test_dma_mover,
# and the random program's lists run at 64 and 256), and on Ethernet ports the UD test, whose
# GRH area there is the IP header; make regress everything on both link layers at every width.

ETHERNET_CORE = "test_ud_grh_area_spans_receive_sges"


@pytest.mark.parametrize("link", ["ib", "eth"])
@pytest.mark.parametrize("w", [64, 256, 512])
def test_scatter_gather(w, link):
    if w != 256 and not REGRESS:
        pytest.skip("make regress runs the scatter/gather programs at 64 and 512 bits")
    pattern = (rf"^test_scatter_gather\.{ETHERNET_CORE}(/|$)" if link == "eth" and not REGRESS
               else r"^test_scatter_gather\.")
    simrun.run(
        toplevel="tb_rdma_dev",
        test_module="test_scatter_gather",
        parameters={"DATA_WIDTH": w, "CABLE": 1},
        extra_env={"COCOTB_TEST_FILTER": pattern, "RDMA_LINK": link},
    )
