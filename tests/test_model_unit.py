"""Driver, model and scoreboard logic without a simulator.

The driver runs against a register file that acknowledges every command and a bytearray as
host memory, so the tests can read the bytes it writes at the documented offsets and hand it
CQEs. The model is driven through the same driver calls a cocotb test makes, and its
predictions are compared with cases worked out by hand from docs/semantics.md.
"""

import asyncio
import functools
from types import SimpleNamespace

import pytest


from tb.ib_packet import GRH
from tb.model import network_header, ud_paylen
from tb.scoreboard import Scoreboard
from tb.verbs import (
    DEV_ID_MAGIC, NO_SGE, GidEntry, PortReg, port_reg, SGE, Access, Cmd, CmdResult, CommandError, Device, GlobalRoute,
    QPState, QPType, QueueFull, RecvWR, Reg, RemoteAddr, SendFlags, SendWR, VerbsError, WCFlags,
    WCOpcode, WCStatus, WROpcode, connect, rdma_read, rdma_write, send, ud_send,
)

MEM_SIZE = 1 << 20
MEM_BASE = 0x1000
RW = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ


def asynctest(fn):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))
    return run


class FakeRegs:
    """A register file that identifies as rdma_dev (2 ports with 4 GIDs each, 64 QPs, 16 CQs,
    64 MRs, 16 AHs) and answers every command with `result`; QUERY answers with
    `query_reply`."""

    def __init__(self):
        self.values = {Reg.DEV_ID: DEV_ID_MAGIC, Reg.DEV_PARAMS: 2 | 4 << 8 | 6 << 16 | 4 << 24,
                       Reg.DEV_PARAMS2: 6 | 4 << 8 | 32 << 16,
                       port_reg(1, PortReg.LINK): 4 << 8, port_reg(2, PortReg.LINK): 4 << 8}
        self.writes = []
        self.commands = []  # (opcode, index, the first 64 bytes of CMD_DATA)
        self.result = CmdResult.OK
        self.query_reply = bytes(12)

    def block(self):
        return b"".join(self.values.get(Reg.CMD_DATA + i, 0).to_bytes(4, "little")
                        for i in range(0, 64, 4))

    async def read32(self, addr):
        return self.values.get(addr, 0)

    async def write32(self, addr, value):
        self.writes.append((addr, value))
        if addr != Reg.CMD:
            self.values[addr] = value
            return
        opcode, index = value & 0xFF, value >> 16
        self.commands.append((opcode, index, self.block()))
        self.values[Reg.CMD_STATUS] = self.result << 8
        if opcode == Cmd.QUERY_QP:
            for i in range(0, len(self.query_reply), 4):
                self.values[Reg.CMD_DATA + i] = int.from_bytes(self.query_reply[i:i + 4], "little")


class FakeMem:
    def __init__(self, size):
        self.data = bytearray(size)

    def read(self, addr, length):
        return bytes(self.data[addr:addr + length])

    def write(self, addr, data):
        self.data[addr:addr + len(data)] = data


async def no_event():
    pass


async def fake_device(scoreboard=True):
    regs, mem = FakeRegs(), FakeMem(MEM_SIZE)
    dev = Device(regs, mem, no_event, MEM_BASE, MEM_SIZE - MEM_BASE)
    sb = Scoreboard(dev) if scoreboard else None
    await dev.open()
    await dev.set_port(1, lid=0x10, lmc=2, gid=bytes(range(16)))
    return SimpleNamespace(dev=dev, regs=regs, mem=mem, sb=sb, model=sb and sb.model,
                           pd=dev.alloc_pd())


async def buffer(t, data, access=RW, pd=None):
    """A registered buffer holding `data` (bytes, or a length for zeros)."""
    data = bytes(data) if isinstance(data, (bytes, bytearray)) else bytes(data)
    addr = t.dev.alloc(len(data))
    t.dev.write(addr, data)
    return await (pd or t.pd).reg_mr(addr, len(data), access)


async def qp_pair(t, qp_type=QPType.RC, **attrs):
    cq = await t.dev.create_cq(16)
    a = await t.pd.create_qp(qp_type, cq, cq)
    b = await t.pd.create_qp(qp_type, cq, cq)
    await connect(a, b, 1, **attrs)
    return cq, a, b


def predicted(t, cq, qp, recv):
    return [e.fields for e in t.model.expected[(cq.cqn, qp.qp_num, recv)]]


def field_at(raw, offset, size):
    return int.from_bytes(raw[offset:offset + size], "little")


# --- driver: byte layouts -------------------------------------------------------------------

@asynctest
async def test_send_wqe_fields_sit_at_the_documented_offsets():
    t = await fake_device(scoreboard=False)
    cq = await t.dev.create_cq(4)
    qp = await t.pd.create_qp(QPType.UD, cq, cq)
    await qp.to_rts(port=1, qkey=0x1111)
    ah = await t.pd.create_ah(1, 0x10)
    wr = SendWR(WROpcode.SEND_WITH_IMM, SGE(0x1122334455667788, 0x99, 0xAABBCC),
                wr_id=0x0102030405060708, flags=SendFlags.SIGNALED | SendFlags.SOLICITED,
                imm=0xDEADBEEF, remote_addr=0x1000200030004000, rkey=0x1234, ah=ah,
                remote_qpn=0x56, remote_qkey=0x80000000)
    await qp.post_send(wr)
    raw = t.mem.read(qp.sq.base, 64)
    assert raw[0x00] == 3 and raw[0x01] == 6
    assert raw[0x04:0x08] == bytes.fromhex("deadbeef")
    assert field_at(raw, 0x08, 8) == 0x0102030405060708
    assert field_at(raw, 0x10, 8) == 0x1122334455667788
    assert field_at(raw, 0x18, 4) == 0x99
    assert field_at(raw, 0x1C, 4) == 0xAABBCC
    assert field_at(raw, 0x20, 8) == 0x1000200030004000
    assert field_at(raw, 0x28, 4) == 0x1234
    assert field_at(raw, 0x2C, 4) == ah.ahn
    assert field_at(raw, 0x30, 4) == 0x56
    assert field_at(raw, 0x34, 4) == 0x80000000
    assert t.regs.writes[-1] == (Reg.SQ_DB + 8 * qp.qp_num, 1)


@asynctest
async def test_recv_wqe_fields_and_ring_wrap():
    t = await fake_device(scoreboard=False)
    cq = await t.dev.create_cq(4)
    qp = await t.pd.create_qp(QPType.RC, cq, cq, max_recv_wr=2)
    await qp.modify(QPState.INIT)
    sge = SGE(0xA0B0, 0x40, 0x0305)
    await qp.post_recv([RecvWR(sge, wr_id=1), RecvWR(sge, wr_id=2)])
    t.regs.query_reply = bytes(6) + (2).to_bytes(2, "little") + bytes(4)  # RQ consumer at 2
    await qp.post_recv(RecvWR(sge, wr_id=3))  # third request reuses slot 0
    raw = t.mem.read(qp.rq.base, 64)
    assert field_at(raw, 0x08, 8) == 3
    assert field_at(raw, 0x10, 8) == 0xA0B0
    assert field_at(raw, 0x18, 4) == 0x40
    assert field_at(raw, 0x1C, 4) == 0x0305
    assert t.regs.writes[-1] == (Reg.RQ_DB + 8 * qp.qp_num, 3)


@asynctest
async def test_command_blocks_sit_at_the_documented_offsets():
    t = await fake_device(scoreboard=False)
    cq = await t.dev.create_cq(5)  # rounded up to 8
    opcode, index, block = t.regs.commands[-1]
    assert (opcode, index) == (Cmd.CREATE_CQ, cq.cqn)
    assert field_at(block, 0x00, 8) == cq.ring and block[0x08] == 3

    addr = t.dev.alloc(256)
    mr = await t.pd.reg_mr(addr, 256, Access.LOCAL_WRITE | Access.REMOTE_READ, iova=0x7000)
    opcode, index, block = t.regs.commands[-1]
    assert (opcode, index) == (Cmd.REG_MR, mr.index) and mr.lkey == index << 8 | block[0x0C]
    assert field_at(block, 0x00, 8) == 0x7000 and field_at(block, 0x08, 4) == 256
    assert block[0x0D] == 5 and field_at(block, 0x0E, 2) == t.pd.pdn
    assert field_at(block, 0x10, 8) == addr

    gid = bytes(range(0xF0, 0x100))
    ah = await t.pd.create_ah(1, 0x1234, sl=3, src_path_bits=1, static_rate=2,
                              grh=GlobalRoute(gid, flow_label=0xABCDE, hop_limit=9,
                                              traffic_class=0x44))
    opcode, index, block = t.regs.commands[-1]
    assert (opcode, index) == (Cmd.CREATE_AH, ah.ahn)
    assert field_at(block, 0x00, 2) == 0x1234 and list(block[2:8]) == [3, 1, 2, 1, 1, 9]
    assert field_at(block, 0x08, 4) == 0xABCDE and block[0x0C] == 0x44
    assert field_at(block, 0x0E, 2) == t.pd.pdn and block[0x10:0x20] == gid

    cq2 = await t.dev.create_cq(2)
    qp = await t.pd.create_qp(QPType.UC, cq, cq2, max_send_wr=3, max_recv_wr=16)
    opcode, index, block = t.regs.commands[-1]
    assert (opcode, index) == (Cmd.CREATE_QP, qp.qp_num) and qp.qp_num == 2
    assert block[0] == 3 and field_at(block, 0x02, 2) == t.pd.pdn
    assert field_at(block, 0x04, 2) == cq.cqn and field_at(block, 0x06, 2) == cq2.cqn
    assert (block[0x08], block[0x09]) == (2, 4)
    assert field_at(block, 0x10, 8) == qp.sq.base and field_at(block, 0x18, 8) == qp.rq.base

    await qp.modify(QPState.INIT, port_num=2, qp_access_flags=Access.REMOTE_WRITE, qkey=0x11)
    await qp.modify(QPState.RTR, path_mtu=3, dest_qp_num=0x2A, rnr_retry=5, rq_psn=0x77,
                    ah_attr=ah.attr)
    await qp.modify(QPState.RTS, sq_psn=0x66)
    opcode, index, block = t.regs.commands[-1]
    assert (opcode, index) == (Cmd.MODIFY_QP, qp.qp_num)
    assert list(block[0:4]) == [QPState.RTS, 2, 3, 2]
    assert field_at(block, 0x04, 4) == 0x11 and field_at(block, 0x08, 4) == 0x2A
    assert block[0x0C] == 5 and field_at(block, 0x10, 2) == 0x1234
    assert list(block[0x12:0x18]) == [3, 1, 2, 1, 9, 0x44]
    assert field_at(block, 0x18, 4) == 0xABCDE and block[0x20:0x30] == gid
    assert field_at(block, 0x30, 4) == 0x66 and field_at(block, 0x34, 4) == 0x77


@asynctest
async def test_port_gid_lowest_byte_in_the_top_bits():
    t = await fake_device(scoreboard=False)
    await t.dev.set_port(2, lid=0x22, gid=bytes(range(1, 17)),
                         gids=[GidEntry(bytes(range(17, 33)), vlan=5)])
    assert t.regs.values[0x140] == 0x22
    # GID table of port 2 at 0xC80: entry 0, then entry 1 and its VLAN word at 0xCA0
    assert t.regs.values[0xC80] == 0x01020304 and t.regs.values[0xC8C] == 0x0D0E0F10
    assert t.regs.values[0xCA0] == 0x11121314 and t.regs.values[0xCB0] == 1 << 12 | 5


@asynctest
async def test_poll_follows_the_owner_phase_and_rings_the_ci_doorbell():
    t = await fake_device(scoreboard=False)
    cq = await t.dev.create_cq(2)

    def cqe(n, wr_id, owner):
        raw = bytearray(32)
        raw[0:8] = wr_id.to_bytes(8, "little")
        raw[0x08:0x0C] = (100).to_bytes(4, "little")
        raw[0x0C:0x10] = bytes.fromhex("01020304")
        raw[0x10:0x14] = (7).to_bytes(4, "little")
        raw[0x14:0x18] = (9).to_bytes(4, "little")
        raw[0x18:0x1C] = bytes([WCStatus.SUCCESS, WCOpcode.RECV, WCFlags.WITH_IMM, 4])
        raw[0x1C:0x1E] = (0x33).to_bytes(2, "little")
        raw[0x1E], raw[0x1F] = 2, owner
        t.mem.write(cq.ring + 32 * (n % 2), raw)

    cqe(0, 10, 1)
    cqe(1, 11, 1)
    wcs = await cq.poll()
    assert [wc.wr_id for wc in wcs] == [10, 11]
    wc = wcs[0]
    assert (wc.byte_len, wc.imm_data, wc.qp_num, wc.src_qp) == (100, 0x01020304, 7, 9)
    assert (wc.opcode, wc.wc_flags, wc.sl, wc.slid, wc.dlid_path_bits) == (
        WCOpcode.RECV, WCFlags.WITH_IMM, 4, 0x33, 2)
    assert wc.is_recv and t.regs.writes[-1] == (Reg.CQ_CI_DB + 8 * cq.cqn, 2)
    cqe(2, 12, 1)  # first-pass owner bit on the second pass: still the old entry
    assert await cq.poll() == []
    cqe(2, 12, 0)
    assert [wc.wr_id for wc in await cq.poll()] == [12]


@asynctest
async def test_refused_modify_raises_and_keeps_the_shadow():
    t = await fake_device(scoreboard=False)
    cq = await t.dev.create_cq(2)
    qp = await t.pd.create_qp(QPType.RC, cq, cq)
    t.regs.result = CmdResult.BAD_STATE
    with pytest.raises(CommandError, match="RESET->RTS: refused with BAD_STATE") as err:
        await qp.modify(QPState.RTS, dest_qp_num=5)
    assert err.value.result == CmdResult.BAD_STATE
    assert qp.state == QPState.RESET and qp.attr.dest_qp_num == 0
    with pytest.raises(TypeError):
        await qp.modify(QPState.INIT, no_such_attribute=1)


@asynctest
async def test_posting_more_than_the_ring_holds_raises():
    t = await fake_device(scoreboard=False)
    cq = await t.dev.create_cq(2)
    qp = await t.pd.create_qp(QPType.RC, cq, cq, max_send_wr=4)
    with pytest.raises(VerbsError, match="post_send in RESET"):
        await qp.post_send(send(NO_SGE))
    await qp.to_rts(qp.qp_num)
    t.regs.query_reply = bytes([QPState.RTS]) + bytes(11)  # nothing consumed yet
    with pytest.raises(QueueFull):
        await qp.post_send([send(NO_SGE)] * 5)
    await qp.post_send([send(NO_SGE)] * 4)
    with pytest.raises(QueueFull):
        await qp.post_send(send(NO_SGE))
    assert qp.sq.head == 4


def test_allocations_are_aligned_and_fenced_by_guards():
    dev = Device(FakeRegs(), FakeMem(MEM_SIZE), no_event, MEM_BASE, 4096)
    a = dev.alloc(10, align=256)
    b = dev.alloc(100)
    assert a % 256 == 0 and b % 64 == 0
    assert [(g.addr, len(g.data)) for g in dev.guards] == [
        (MEM_BASE, a - MEM_BASE), (a + 10, 64), (a + 74, b - a - 74), (b + 100, 64)]
    with pytest.raises(MemoryError):
        dev.alloc(4096)


# --- model: hand-worked predictions ---------------------------------------------------------

@asynctest
async def test_rc_write_read_and_send_predictions():
    t = await fake_device()
    cq, a, b = await qp_pair(t)
    src = await buffer(t, bytes(range(64)))
    dst = await buffer(t, 64)
    rbuf = await buffer(t, 64)
    await b.post_recv(RecvWR(rbuf.sge(8, 32), wr_id=0x50))
    await a.post_send([rdma_write(src.sge(0, 16), dst.remote(4), wr_id=1),
                       rdma_read(dst.sge(32, 8), src.remote(40), wr_id=2,
                                 flags=SendFlags(0)),
                       send(src.sge(1, 3), wr_id=3, imm=0xCAFEF00D)])
    assert t.model.image.read(dst.host_addr, 48) == (
        bytes(4) + bytes(range(16)) + bytes(12) + bytes(range(40, 48)) + bytes(8))
    assert t.model.image.read(rbuf.host_addr + 8, 3) == bytes([1, 2, 3])
    assert predicted(t, cq, a, False) == [
        dict(wr_id=1, status=WCStatus.SUCCESS, opcode=WCOpcode.RDMA_WRITE, qp_num=a.qp_num),
        dict(wr_id=3, status=WCStatus.SUCCESS, opcode=WCOpcode.SEND, qp_num=a.qp_num,
             byte_len=3)]
    # LID 0x10 with LMC 2, no path bits: SLID 0x10, DLID path bits 0
    assert predicted(t, cq, b, True) == [
        dict(wr_id=0x50, status=WCStatus.SUCCESS, opcode=WCOpcode.RECV, byte_len=3,
             qp_num=b.qp_num, src_qp=a.qp_num, wc_flags=WCFlags.WITH_IMM, sl=0, slid=0x10,
             dlid_path_bits=0, imm_data=0xCAFEF00D)]
    assert (t.model.counters.lb_msgs, t.model.counters.lb_bytes) == (3, 27)


@asynctest
async def test_lkey_of_another_pd_fails_and_flushes_what_follows():
    t = await fake_device()
    cq, a, b = await qp_pair(t)
    foreign = await buffer(t, 16, pd=t.dev.alloc_pd())
    await a.post_recv(RecvWR(foreign.sge(), wr_id=9))
    await a.post_send([send(foreign.sge(), wr_id=1, flags=SendFlags(0)),
                       send(foreign.sge(0, 0), wr_id=2, flags=SendFlags(0))])
    assert [(f["wr_id"], f["status"]) for f in predicted(t, cq, a, False)] == [
        (1, WCStatus.LOC_PROT_ERR), (2, WCStatus.WR_FLUSH_ERR)]
    assert predicted(t, cq, a, True) == [
        dict(wr_id=9, status=WCStatus.WR_FLUSH_ERR, opcode=WCOpcode.RECV, qp_num=a.qp_num,
             byte_len=0, imm_data=0, src_qp=0, wc_flags=0, sl=0, slid=0, dlid_path_bits=0)]
    assert t.model.qps[a.qp_num].state == QPState.ERR
    assert t.model.qps[b.qp_num].state == QPState.RTS
    assert t.model.counters.lb_msgs == 0


@asynctest
async def test_rkey_without_remote_write_fails_on_rc_and_is_dropped_on_uc():
    t = await fake_device()
    src = await buffer(t, b"x" * 8)
    ro = await buffer(t, 8, access=Access.LOCAL_WRITE | Access.REMOTE_READ)
    cq, a, b = await qp_pair(t)
    rbuf = await buffer(t, 8)
    await b.post_recv([RecvWR(rbuf.sge(), wr_id=7), RecvWR(rbuf.sge(), wr_id=8)])
    await a.post_send(rdma_write(src.sge(), ro.remote(), wr_id=1, imm=5))
    assert [f["status"] for f in predicted(t, cq, a, False)] == [WCStatus.REM_ACCESS_ERR]
    # WRITE_WITH_IMM failing the rkey check consumes no receive; both then flush
    assert [(f["wr_id"], f["status"]) for f in predicted(t, cq, b, True)] == [
        (7, WCStatus.WR_FLUSH_ERR), (8, WCStatus.WR_FLUSH_ERR)]
    assert t.model.qps[b.qp_num].state == QPState.ERR

    # The rkey is checked before the receive is looked for: no RNR wait for a bad rkey
    cq, a, b = await qp_pair(t, rnr_retry=7)
    await a.post_send(rdma_write(src.sge(), ro.remote(), wr_id=3, imm=6))
    assert [f["status"] for f in predicted(t, cq, a, False)] == [WCStatus.REM_ACCESS_ERR]

    cq, a, b = await qp_pair(t, QPType.UC)
    await a.post_send(rdma_write(src.sge(), ro.remote(), wr_id=2))
    assert [f["status"] for f in predicted(t, cq, a, False)] == [WCStatus.SUCCESS]
    assert t.model.qps[b.qp_num].state == QPState.RTS
    assert t.model.image.read(ro.host_addr, 8) == bytes(8)


@asynctest
async def test_ud_send_writes_the_grh_area():
    t = await fake_device()
    cq = await t.dev.create_cq(8)
    a = await t.pd.create_qp(QPType.UD, cq, cq)
    b = await t.pd.create_qp(QPType.UD, cq, cq)
    for qp in (a, b):
        await qp.to_rts(port=1, qkey=0x1234)
    route = GlobalRoute(bytes(range(16)), flow_label=0xABCDE, hop_limit=7, traffic_class=0x12)
    ah = await t.pd.create_ah(1, 0x13, sl=5, src_path_bits=3, grh=route)
    plain = await t.pd.create_ah(1, 0x11)
    src = await buffer(t, bytes(range(0xA0, 0xAA)))
    rbuf = await buffer(t, bytes([0xEE]) * 128)
    await b.post_recv([RecvWR(rbuf.sge(0, 50), wr_id=1), RecvWR(rbuf.sge(64, 50), wr_id=2),
                       RecvWR(rbuf.sge(0, 49), wr_id=3)])
    await a.post_send([ud_send(src.sge(), ah, b.qp_num, 0x80000000, imm=0x01020304),
                       ud_send(src.sge(), plain, b.qp_num, 0x1234),
                       ud_send(src.sge(), plain, b.qp_num, 0x4321),  # wrong Q_Key: dropped
                       ud_send(src.sge(), plain, b.qp_num, 0x1234)])  # 49 < 50: LOC_LEN_ERR
    # PayLen = BTH 12 + DETH 8 + ImmDt 4 + 10 + pad 2 + ICRC 4 = 40
    grh = bytes.fromhex("612abcde 00281b07") + bytes(range(16)) + bytes(range(16))
    assert network_header(ud_paylen(10, True),
                          GRH(sgid=bytes(range(16)), dgid=route.dgid, hop_limit=7, tclass=0x12,
                              flow_label=0xABCDE)) == grh
    image = t.model.image
    assert image.read(rbuf.host_addr, 50) == grh + bytes(range(0xA0, 0xAA))
    assert image.read(rbuf.host_addr + 64, 50) == bytes(40) + bytes(range(0xA0, 0xAA))
    recvs = predicted(t, cq, b, True)
    assert recvs[0]["byte_len"] == 50 and recvs[0]["wc_flags"] == WCFlags.GRH | WCFlags.WITH_IMM
    # LMC 2: SLID takes the path bits 3, DLID 0x13 has path bits 3
    assert (recvs[0]["sl"], recvs[0]["slid"], recvs[0]["dlid_path_bits"]) == (5, 0x13, 3)
    assert recvs[1]["wc_flags"] == 0 and recvs[1]["dlid_path_bits"] == 1
    assert (recvs[2]["wr_id"], recvs[2]["status"]) == (3, WCStatus.LOC_LEN_ERR)
    assert [f["status"] for f in predicted(t, cq, a, False)] == [WCStatus.SUCCESS] * 4
    assert t.model.qps[b.qp_num].state == QPState.RTS
    assert (t.model.counters.lb_msgs, t.model.counters.lb_bytes) == (4, 40)


@asynctest
async def test_ud_length_over_the_port_mtu_is_loc_len_err():
    t = await fake_device()
    await t.dev.set_port(1, lid=0x10, mtu=1)  # 256 bytes
    cq = await t.dev.create_cq(8)
    a = await t.pd.create_qp(QPType.UD, cq, cq)
    await a.to_rts(port=1)
    ah = await t.pd.create_ah(1, 0x10)
    src = await buffer(t, 257)
    await a.post_send(ud_send(src.sge(), ah, a.qp_num, 0))
    assert [f["status"] for f in predicted(t, cq, a, False)] == [WCStatus.LOC_LEN_ERR]


@asynctest
async def test_rnr_forever_waits_for_a_receive():
    t = await fake_device()
    cq, a, b = await qp_pair(t, rnr_retry=7)
    src = await buffer(t, b"hello")
    rbuf = await buffer(t, 16)
    await a.post_send([send(src.sge(), wr_id=1), send(src.sge(0, 1), wr_id=2)])
    assert predicted(t, cq, a, False) == [] and t.model.counters.lb_msgs == 1
    await b.post_recv(RecvWR(rbuf.sge(), wr_id=5))
    assert [f["wr_id"] for f in predicted(t, cq, a, False)] == [1]
    assert t.model.image.read(rbuf.host_addr, 5) == b"hello"
    await b.post_recv(RecvWR(rbuf.sge(), wr_id=6))
    assert [f["wr_id"] for f in predicted(t, cq, a, False)] == [1, 2]
    assert t.model.counters.lb_msgs == 2


@asynctest
async def test_rnr_retries_exhausted():
    t = await fake_device()
    cq, a, b = await qp_pair(t, rnr_retry=3)
    await a.post_send(send(NO_SGE, wr_id=1, flags=SendFlags(0)))
    assert [f["status"] for f in predicted(t, cq, a, False)] == [WCStatus.RNR_RETRY_EXC_ERR]
    assert t.model.qps[a.qp_num].state == QPState.ERR
    assert t.model.qps[b.qp_num].state == QPState.RTS


@asynctest
async def test_loopback_decision_masks_the_lmc_bits():
    t = await fake_device()  # port 1: LID 0x10, LMC 2 owns 0x10..0x13
    cq = await t.dev.create_cq(8)
    qps = [await t.pd.create_qp(QPType.UC, cq, cq) for _ in range(3)]
    await qps[0].to_rts(qps[0].qp_num, 0x13, 1)
    await qps[1].to_rts(qps[1].qp_num, 0x14, 1)
    await qps[2].to_rts(qps[2].qp_num, 0x10, 1, grh=GlobalRoute(bytes(16)))  # GID differs
    for qp in qps:
        await qp.post_send(rdma_write(NO_SGE, RemoteAddr(0, 0), wr_id=qp.qp_num))
    statuses = [predicted(t, cq, qp, False)[0]["status"] for qp in qps]
    # the first takes the bypass; the others leave port 1 as packets (into no cable: UC
    # completes all the same)
    assert statuses == [WCStatus.SUCCESS] * 3
    assert t.model.counters.lb_msgs == 1
    assert [p.lrh.dlid for p in t.model.wire[1]] == [0x14, 0x10]


@asynctest
async def test_cq_overflow_drops_and_counts():
    t = await fake_device()
    cq = await t.dev.create_cq(2)
    qp = await t.pd.create_qp(QPType.RC, cq, cq)
    await qp.to_rts(qp.qp_num, 0x10, 1)
    await qp.post_send([rdma_write(NO_SGE, RemoteAddr(0, 0), wr_id=i) for i in range(3)])
    assert len(predicted(t, cq, qp, False)) == 2 and t.model.counters.cq_overflows == 1


@asynctest
async def test_writes_to_nothing_are_predicted_in_reg_errors():
    t = await fake_device()
    await t.dev.write_reg(Reg.SQ_DB + 8 * 64, 1)  # QPN 64 of 64
    await t.dev.write_reg(0x100 + 0x40 * 2, 5)  # port 3's LID
    await t.dev.write_reg(Reg.CQ_ARM_DB + 8 * 15, 1)  # CQ 15 exists
    assert t.model.counters.reg_errors == 2


@asynctest
async def test_doorbells_a_qp_cannot_take_are_predicted_in_reg_errors():
    t = await fake_device()
    cq = await t.dev.create_cq(16)
    qp = await t.pd.create_qp(QPType.RC, cq, cq)            # RESET
    await t.dev.write_reg(Reg.SQ_DB + 8 * qp.qp_num, 1)
    await t.dev.write_reg(Reg.RQ_DB + 8 * 40, 1)            # no QP 40
    await qp.to_rts(qp.qp_num, 0x10, 1)
    await t.dev.write_reg(Reg.SQ_DB + 8 * qp.qp_num, qp.sq.size + 1)  # past the free entries
    await t.dev.write_reg(Reg.SQ_DB + 8 * qp.qp_num, 0xFFFF)           # back from 0
    assert t.model.counters.reg_errors == 4
    await t.dev.write_reg(Reg.RQ_DB + 8 * qp.qp_num, 0)     # where it is: taken
    await qp.post_recv(RecvWR(NO_SGE, wr_id=1))             # the driver's own doorbell
    assert t.model.counters.reg_errors == 4


# --- scoreboard -----------------------------------------------------------------------------

@asynctest
async def test_scoreboard_names_the_wr_and_field_that_differ():
    t = await fake_device()
    cq, a, b = await qp_pair(t)
    await a.post_send(rdma_write(NO_SGE, RemoteAddr(0, 0), wr_id=0x77))
    raw = bytearray(32)
    raw[0:8] = (0x77).to_bytes(8, "little")
    raw[0x10] = a.qp_num
    raw[0x18:0x1A] = bytes([WCStatus.REM_ACCESS_ERR, WCOpcode.RDMA_WRITE])
    raw[0x1F] = 1
    t.mem.write(cq.ring, raw)
    with pytest.raises(AssertionError,
                       match=r"send #0 RDMA_WRITE wr_id=0x77: status expected SUCCESS\(0\), "
                             r"got REM_ACCESS_ERR\(10\)"):
        await cq.poll()
    raw[0:8] = (0x78).to_bytes(8, "little")
    t.mem.write(cq.ring + 32, raw)
    with pytest.raises(AssertionError, match="unexpected send completion"):
        await cq.poll()


@asynctest
async def test_scoreboard_check_reports_memory_and_guard_damage():
    t = await fake_device()
    mr = await buffer(t, bytes(32))
    await t.sb.check()
    t.mem.write(mr.host_addr + 5, b"\x01\x02")
    t.mem.write(mr.host_addr + 32, b"\x00")
    with pytest.raises(AssertionError) as err:
        await t.sb.check()
    message = str(err.value)
    assert "2 byte(s) differ, first at offset 0x5" in message
    assert f"guard after buffer of 32 bytes at {mr.host_addr:#x}" in message
