"""End-to-end tests of rdma_dev through its loopback bypass (harness top tb/hdl/tb_rdma_dev.v).

Every test is an RDMA program: it opens the device (`open_device` in tb/rdma_tb.py), registers
memory, creates CQs and QPs with the verbs driver (tb/verbs.py), posts work requests and polls
completions. The scoreboard (tb/scoreboard.py) compares every completion, the memory images,
guard bytes, QP states and indices and the counters with the reference model (tb/model.py)
when the test finishes; each test also asserts the facts it is about itself, so it reads, and
fails, on its own terms. docs/semantics.md is the contract.

Payloads and background bytes come from one seed, logged at the start of every test;
SEED=<n> replays a run.
"""

import random
import struct
from dataclasses import replace
from enum import Enum

import cocotb
import pytest
from cocotb.triggers import Event, RisingEdge

from tb import simrun
from tb.coverage import enabled as coverage_enabled
from tb.rdma_program import (
    ALL_ACCESS, DATA_OPCODES, NEEDS_RECEIVE, QKEY, SEND_WC_OPCODE, SIGNALED, UNSIGNALED,
    WITH_IMM, Rdma, assert_invalidation_refused, assert_wc,
    bind_window, free_index, grh_bytes, unregistered_key, wait_all, work_request,
)
from tb.seed import REGRESS, SEED
from tb.verbs import (
    CNP_INTERVAL_RESET, COUNTERS, GRH_BYTES, MTU, NO_SGE, QKEY_FROM_QP, SGE, Access, AHAttr, AsyncEvent, Cmd,
    CmdResult, CommandError, PortReg, QPState, QPType, QueueFull, RecvWR, Reg, RemoteAddr,
    SendFlags, SendWR, VerbsError, WCFlags, WCOpcode, WCStatus, WROpcode, atomic_fetch_and_add,
    atomic_write,
    connect, cq_arm_db, cq_ci_db, encode_modify, encode_send_wqe, local_inv, port_counter_reg,
    gid_reg, port_reg, rdma_read, rq_db, send_with_inv, sq_db, srq_db, ud_send,
)
from tools.synth import CONFIGS


# tb_rdma_dev's parameters where a runner below leaves them alone
HARNESS_DEFAULTS = dict(NUM_QP=64, NUM_CQ=16, NUM_MR=64, NUM_AH=16, NUM_SRQ=16, SQ_WIN_LOG=4,
                        BYPASS_MOVERS=4)


def device_parameters():
    """The parameters of the device this simulation runs."""
    return {**HARNESS_DEFAULTS, **simrun.build_parameters()}


# ---------------------------------------------------------------------------------------------
# 1. Every opcode and transport through the bypass

CONNECTED_OPCODES = [(t, op) for t in (QPType.RC, QPType.UC) for op in DATA_OPCODES[t]]


@cocotb.test()
@cocotb.parametrize((("transport", "opcode"), CONNECTED_OPCODES))
async def test_connected_opcode(dut, transport, opcode):
    """One RC/UC message of each opcode the transport allows: the bytes land where the opcode
    says and nowhere else, the send and receive completions carry the documented fields
    (src_qp, SLID with the source path bits, SL, DLID path bits, immediate), and
    LB_MSGS/LB_BYTES move by exactly this one message."""
    rdma = await Rdma.open(dut)
    a, b = await rdma.connected_pair(transport)
    length, src_off, dst_off, imm = 777, 5, 11, 0xC0FFEE01
    local = await rdma.region(4096)                                  # a's memory
    remote = await rdma.region(4096, iova=0x7_0000_0000 + 0x10000)  # b's, with a 64-bit iova
    source, sink = (remote, local) if opcode == WROpcode.RDMA_READ else (local, remote)
    message = source.read(src_off, length)
    untouched = sink.read()

    if opcode in NEEDS_RECEIVE:
        rsge = sink.sge(dst_off, length + 16) if opcode != WROpcode.RDMA_WRITE_WITH_IMM else NO_SGE
        await b.post_recv(RecvWR(rsge, wr_id=0xB0B))
    if opcode == WROpcode.RDMA_READ:
        wr = work_request(opcode, local.sge(dst_off, length), remote.remote(src_off), wr_id=0xA1)
    else:
        wr = work_request(opcode, local.sge(src_off, length), remote.remote(dst_off), wr_id=0xA1,
                          imm=imm if opcode in WITH_IMM else 0)
    await a.post_send(wr)

    [swc] = await a.send_cq.wait(1)
    assert_wc(swc, wr_id=0xA1, status=WCStatus.SUCCESS, opcode=SEND_WC_OPCODE[opcode],
              qp_num=a.qp_num)
    if opcode in (WROpcode.SEND, WROpcode.SEND_WITH_IMM, WROpcode.RDMA_READ):
        assert swc.byte_len == length
    assert sink.read(dst_off, length) == message, f"{opcode.name}: data differs at the sink"
    assert sink.read(0, dst_off) == untouched[:dst_off]
    assert sink.read(dst_off + length) == untouched[dst_off + length:]

    if opcode in NEEDS_RECEIVE:
        [rwc] = await b.recv_cq.wait(1)
        flags = (WCFlags.WITH_IMM if opcode in WITH_IMM else WCFlags(0)) | rdma.grh_flag(1)
        assert_wc(rwc, wr_id=0xB0B, status=WCStatus.SUCCESS, byte_len=length, qp_num=b.qp_num,
                  opcode=(WCOpcode.RECV_RDMA_WITH_IMM if opcode == WROpcode.RDMA_WRITE_WITH_IMM
                          else WCOpcode.RECV),
                  src_qp=a.qp_num, wc_flags=flags, sl=rdma.sl(1), slid=rdma.slid(1),
                  dlid_path_bits=rdma.dlid_path_bits(1))
        if opcode in WITH_IMM:
            assert rwc.imm_data == imm
    assert await b.recv_cq.poll() == [], "a receive completion for an operation that takes none"
    await rdma.assert_loopback_moves(1, length)
    local.assert_outside_untouched()
    remote.assert_outside_untouched()
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize(with_imm=[False, True], global_route=[False, True])
async def test_ud_send(dut, with_imm, global_route):
    """UD SEND with and without immediate and GRH: the receive buffer starts with the 40-byte
    GRH area (the GRH a packet would have carried, or zeros without GlobalRoute), the payload
    follows, and the receive completion reports byte_len + 40, src_qp, SLID with the source
    path bits, SL, the DLID path bits under port 1's LMC and the GRH flag."""
    rdma = await Rdma.open(dut)
    a = await rdma.ud_qp()
    b = await rdma.ud_qp()
    ah = await rdma.loopback_ah(global_route=global_route)
    length, imm = 301, 0x5EED1234  # 301: the GRH's PayLen has 3 pad bytes
    src = await rdma.region(4096)
    dst = await rdma.region(4096)
    message = src.read(3, length)
    untouched = dst.read()

    await b.post_recv(RecvWR(dst.sge(8, GRH_BYTES + length), wr_id=0xB0B))  # exactly enough
    await a.post_send(ud_send(src.sge(3, length), ah, b.qp_num, QKEY, wr_id=0xA1,
                              imm=imm if with_imm else None))

    [swc] = await a.send_cq.wait(1)
    assert_wc(swc, wr_id=0xA1, status=WCStatus.SUCCESS, opcode=WCOpcode.SEND, byte_len=length,
              qp_num=a.qp_num)
    [rwc] = await b.recv_cq.wait(1)
    flags = (WCFlags.GRH if global_route else rdma.grh_flag(1)) | (
        WCFlags.WITH_IMM if with_imm else WCFlags(0))
    assert_wc(rwc, wr_id=0xB0B, status=WCStatus.SUCCESS, opcode=WCOpcode.RECV,
              byte_len=GRH_BYTES + length, qp_num=b.qp_num, src_qp=a.qp_num, wc_flags=flags,
              sl=rdma.sl(1), slid=rdma.slid(1), dlid_path_bits=rdma.dlid_path_bits(1))
    if not rdma.ethernet(1):
        assert (rwc.slid, rwc.dlid_path_bits) == (0x13, 2)  # port 1: LID 0x10, LMC 2
    if with_imm:
        assert rwc.imm_data == imm

    link = rdma.dev.ports[1].link_layer
    grh = (grh_bytes(ah.attr.grh, rdma.dev.ports[1].gid, length, with_imm, link)
           if global_route or link == "eth" else bytes(GRH_BYTES))
    assert dst.read(8, GRH_BYTES) == grh, (
        f"GRH area: expected {grh.hex(' ')}, got {dst.read(8, GRH_BYTES).hex(' ')}")
    assert dst.read(8 + GRH_BYTES, length) == message
    assert dst.read(0, 8) == untouched[:8]
    assert dst.read(8 + GRH_BYTES + length) == untouched[8 + GRH_BYTES + length:]
    await rdma.assert_loopback_moves(1, length)
    src.assert_outside_untouched()
    dst.assert_outside_untouched()
    await rdma.finish()


# ---------------------------------------------------------------------------------------------
# 2. Lengths and alignments

def covering_offsets(n, modulus=64):
    """`n` (source offset, destination offset) pairs that together cover every source offset,
    every destination offset and every shift between them (destination - source) modulo
    `modulus`, the widest bus in bytes. Greedy: case i takes source offset i mod `modulus` and
    the smallest destination offset that is new and makes a new shift, else just new."""
    pairs, new_dst, new_shift = [], set(range(modulus)), set(range(modulus))
    for i in range(n):
        src = i % modulus
        both = [d for d in sorted(new_dst) if (d - src) % modulus in new_shift]
        if both:
            dst = both[0]
        elif new_dst:
            dst = min(new_dst)
        elif new_shift:
            dst = (src + min(new_shift)) % modulus
        else:
            dst = (7 * i + 3) % modulus
        new_dst.discard(dst)
        new_shift.discard((dst - src) % modulus)
        pairs.append((src, dst))
    assert not new_dst and not new_shift, f"{n} cases do not cover every offset and shift"
    return pairs


SWEEP_LENGTHS = [0, *range(1, 71), 127, 128, 129, 255, 256, 257, 1000, 1023, 1024, 1025,
                 4095, 4096, 4097, 8191, 8192, 8193, 65535, 65536, 65537]
SWEEP_CASES = [(length, src, dst) for length, (src, dst)
               in zip(SWEEP_LENGTHS, covering_offsets(len(SWEEP_LENGTHS)))]
MIB = 1 << 20
MIB_CASES = {  # 1 MiB + 3 from an odd offset to another for every opcode; WRITE also aligned,
    # and (over UC) one of exactly the path MTU
    WROpcode.RDMA_WRITE: ([(MIB, 0, 0)] if REGRESS else []) + [(MIB + 3, 13, 51), (4096, 7, 3)],
    WROpcode.RDMA_READ: [(MIB + 3, 51, 13)],
    WROpcode.SEND: [(MIB + 3, 13, 51)],
}
SLOT_GAP = 64  # untouched bytes after every message's slot


def slot_bases(cases):
    """Where each case's slot starts in a region (64-byte aligned; the case's offsets are
    added), and the region size holding them all with SLOT_GAP bytes after each."""
    bases, at = [], 0
    for length, src, dst in cases:
        bases.append(at)
        at += -(-(max(src, dst) + length + SLOT_GAP) // 64) * 64
    return bases, at


async def transfer_all(rdma, opcode, cases, transport=QPType.RC):
    """Move every (length, source offset, destination offset) case with `opcode` over one RC
    (or UC) QP pair, all posted in one doorbell before any completion is polled. Each message
    must arrive whole at its destination and every other byte of the destination region must
    keep its value."""
    n = len(cases)
    a, b = await rdma.connected_pair(transport, depth=n)
    bases, size = slot_bases(cases)
    local = await rdma.region(size)
    remote = await rdma.region(size)
    source, sink = (remote, local) if opcode == WROpcode.RDMA_READ else (local, remote)
    places = [(base + src, base + dst, length) for base, (length, src, dst) in zip(bases, cases)]
    expected = bytearray(sink.read())
    for src, dst, length in places:
        expected[dst:dst + length] = source.read(src, length)

    if opcode == WROpcode.SEND:
        await b.post_recv([RecvWR(sink.sge(dst, length), wr_id=i)
                           for i, (_, dst, length) in enumerate(places)])
    if opcode == WROpcode.RDMA_READ:
        wrs = [work_request(opcode, local.sge(dst, length), remote.remote(src), wr_id=i)
               for i, (src, dst, length) in enumerate(places)]
    else:
        wrs = [work_request(opcode, local.sge(src, length), remote.remote(dst), wr_id=i)
               for i, (src, dst, length) in enumerate(places)]
    await a.post_send(wrs)

    wcs = await wait_all(a.send_cq, n)
    assert [wc.wr_id for wc in wcs] == list(range(n)), "send completions out of posting order"
    for wc, (length, _, _) in zip(wcs, cases):
        assert_wc(wc, status=WCStatus.SUCCESS, opcode=SEND_WC_OPCODE[opcode])
        if opcode != WROpcode.RDMA_WRITE:
            assert wc.byte_len == length
    if opcode == WROpcode.SEND:
        rwcs = await wait_all(b.recv_cq, n)
        assert [(wc.wr_id, wc.status, wc.byte_len) for wc in rwcs] == [
            (i, WCStatus.SUCCESS, length) for i, (length, _, _) in enumerate(cases)]

    got = sink.read()
    for (length, src_off, dst_off), (_, dst, _) in zip(cases, places):
        assert got[dst:dst + length] == expected[dst:dst + length], (
            f"{opcode.name} of {length} bytes from offset {src_off} to offset {dst_off}: "
            f"data differs")
    assert got == expected, f"{opcode.name}: bytes between the messages changed"
    await rdma.assert_loopback_moves(n, sum(length for length, _, _ in cases))
    local.assert_outside_untouched()
    remote.assert_outside_untouched()
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize(opcode=[WROpcode.RDMA_WRITE, WROpcode.RDMA_READ, WROpcode.SEND])
async def test_length_alignment_sweep(dut, opcode):
    """RDMA WRITE, RDMA READ and SEND of 0, 1..70, 127..129 ... 65535..65537 bytes, with
    source and destination offsets that between them take every value and every relative
    shift modulo 64 (every byte lane of the widest bus): each message lands whole, nothing
    else in the destination changes."""
    rdma = await Rdma.open(dut)
    await transfer_all(rdma, opcode, SWEEP_CASES)


@cocotb.test()
async def test_write_with_imm_between_equal_unaligned_offsets(dut):
    """An RDMA WRITE with immediate of 300 bytes from offset 37 to offset 37 + 64 (the same
    byte lane in every beat, not lane 0): the bytes land whole and nowhere else, and the
    receive completes with the immediate and byte_len 300."""
    rdma = await Rdma.open(dut)
    a, b = await rdma.connected_pair(QPType.RC)
    local, remote = await rdma.region(4096), await rdma.region(4096)
    await b.post_recv(RecvWR(NO_SGE, wr_id=0xB2))
    await a.post_send(work_request(WROpcode.RDMA_WRITE_WITH_IMM, local.sge(37, 300),
                                   remote.remote(101), wr_id=0xA2, imm=0x5EED))
    [swc] = await rdma.poll_until(a.send_cq, 1)
    assert_wc(swc, wr_id=0xA2, status=WCStatus.SUCCESS)
    [rwc] = await rdma.poll_until(b.recv_cq, 1)
    assert_wc(rwc, wr_id=0xB2, status=WCStatus.SUCCESS, byte_len=300, imm_data=0x5EED)
    assert remote.read(101, 300) == local.read(37, 300)
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize(opcode=[WROpcode.SEND_WITH_IMM, WROpcode.SEND_WITH_INV])
async def test_sends_between_equal_unaligned_offsets(dut, opcode):
    """A SEND with immediate, or with invalidate (of a type 2 window bound on the receiver), of
    300 bytes from offset 37 into a receive at offset 37 + 64: the bytes land whole and nowhere
    else, and the receive completes with byte_len 300 and the immediate or the invalidated
    key."""
    rdma = await Rdma.open(dut)
    a, b = await rdma.connected_pair(QPType.RC)
    local = await rdma.region(4096)
    remote = await rdma.region(4096, ALL_ACCESS | Access.MW_BIND)
    if opcode == WROpcode.SEND_WITH_INV:
        mw = await rdma.pd.alloc_mw(2)
        await bind_window(rdma, b, mw, remote.sge(2048, 64), Access.REMOTE_WRITE)
        wr, fields = (send_with_inv(local.sge(37, 300), mw.rkey, wr_id=0xA2),
                      dict(imm_data=mw.rkey, wc_flags=WCFlags.WITH_INV | rdma.grh_flag(1)))
    else:
        wr, fields = (work_request(opcode, local.sge(37, 300), wr_id=0xA2, imm=0x5EED),
                      dict(imm_data=0x5EED, wc_flags=WCFlags.WITH_IMM | rdma.grh_flag(1)))
    before = remote.read()
    await b.post_recv(RecvWR(remote.sge(101, 300), wr_id=0xB2))
    await a.post_send(wr)
    [swc] = await rdma.poll_until(a.send_cq, 1)
    assert_wc(swc, wr_id=0xA2, status=WCStatus.SUCCESS)
    [rwc] = await rdma.poll_until(b.recv_cq, 1)
    assert_wc(rwc, wr_id=0xB2, status=WCStatus.SUCCESS, byte_len=300, **fields)
    assert remote.read() == before[:101] + local.read(37, 300) + before[401:]
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize(opcode=[WROpcode.RDMA_WRITE, WROpcode.RDMA_READ, WROpcode.SEND])
async def test_megabyte_messages(dut, opcode):
    """One message of 1 MiB + 3 bytes between odd offsets, RC (the WRITE over UC, with one of
    exactly the path MTU beside it, and 1 MiB aligned under REGRESS): it lands whole,
    nothing around it changes."""
    rdma = await Rdma.open(dut)
    transport = QPType.UC if opcode == WROpcode.RDMA_WRITE else QPType.RC
    await transfer_all(rdma, opcode, MIB_CASES[opcode], transport)


@cocotb.test()
@cocotb.parametrize(opcode=DATA_OPCODES[QPType.RC])
async def test_zero_length_needs_no_keys(dut, opcode):
    """RC, length 0: no byte moves, so neither the lkey nor the rkey is checked (both name no
    MR here); the WR completes SUCCESS with byte_len 0 and a SEND / WRITE_WITH_IMM still
    consumes a receive and completes it with byte_len 0."""
    rdma = await Rdma.open(dut)
    a, b = await rdma.connected_pair(QPType.RC)
    bogus = unregistered_key(rdma.dev)
    if opcode in NEEDS_RECEIVE:
        await b.post_recv(RecvWR(SGE(0x1234, 0, bogus), wr_id=0xB1))
    await a.post_send(work_request(opcode, SGE(0x5678, 0, bogus), RemoteAddr(0x9ABC, bogus),
                                   wr_id=0xA1, imm=0x42))
    [wc] = await a.send_cq.wait(1)
    assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS, opcode=SEND_WC_OPCODE[opcode])
    if opcode in NEEDS_RECEIVE:
        [rwc] = await b.recv_cq.wait(1)
        assert_wc(rwc, wr_id=0xB1, status=WCStatus.SUCCESS, byte_len=0)
    await rdma.assert_loopback_moves(1, 0)
    await rdma.finish()


# ---------------------------------------------------------------------------------------------
# 3. Many WRs outstanding on many QPs

SLOT = 2048  # one message's room in a Traffic's regions
MAX_LENGTH = SLOT - 64 - GRH_BYTES  # the longest message a slot holds at any offset


class Traffic:
    """Messages from QP `a` to QP `b` (RC, UC, or UD through `ah`), each in its own SLOT of a's
    and b's regions, so that no result depends on the order the device serves QPs in."""

    def __init__(self, rdma, a, b, local, remote, ah=None):
        self.rdma, self.a, self.b, self.local, self.remote, self.ah = rdma, a, b, local, remote, ah
        self.sends, self.recvs = [], []
        self.landed = []       # (region, offset, bytes) each message must leave behind
        self.signaled = []     # wr_ids a's send CQ must show, in this order
        self.received = []     # wr_ids b's receive CQ must show, in this order
        self.bytes = 0

    @classmethod
    async def create(cls, rdma, a, b, messages, ah=None):
        local = await rdma.region(messages * SLOT)
        remote = await rdma.region(messages * SLOT)
        return cls(rdma, a, b, local, remote, ah)

    def add(self, opcode, length, flags=SIGNALED):
        assert length <= MAX_LENGTH, f"{length} bytes do not fit a slot"
        k = len(self.sends)
        wr_id = self.a.qp_num << 16 | k
        src = k * SLOT + (7 * k) % 64
        dst = k * SLOT + (13 * k + 5) % 64
        imm = wr_id if opcode in WITH_IMM else 0
        if opcode == WROpcode.RDMA_READ:
            self.landed.append((self.local, dst, self.remote.read(src, length)))
            wr = work_request(opcode, self.local.sge(dst, length), self.remote.remote(src), wr_id)
        else:
            grh = GRH_BYTES if self.ah else 0
            self.landed.append((self.remote, dst + grh, self.local.read(src, length)))
            if opcode in NEEDS_RECEIVE:
                rsge = NO_SGE if opcode == WROpcode.RDMA_WRITE_WITH_IMM else self.remote.sge(
                    dst, grh + length)
                self.recvs.append(RecvWR(rsge, wr_id))
                self.received.append(wr_id)
            if self.ah:
                wr = ud_send(self.local.sge(src, length), self.ah, self.b.qp_num, QKEY, wr_id,
                             imm=imm if opcode in WITH_IMM else None)
            else:
                wr = work_request(opcode, self.local.sge(src, length), self.remote.remote(dst),
                                  wr_id, imm)
        self.sends.append(SendWR(wr.opcode, wr.sge, wr.wr_id, flags, wr.imm, wr.remote_addr,
                                 wr.rkey, wr.ah, wr.remote_qpn, wr.remote_qkey))
        if flags & SIGNALED:
            self.signaled.append(wr_id)
        self.bytes += length

    def add_mix(self, count, opcodes, lengths):
        for k in range(count):
            self.add(opcodes[k % len(opcodes)], lengths[k % len(lengths)])

    async def post(self):
        """The receives the messages need (one doorbell), then all the sends (one doorbell)."""
        if self.recvs:
            await self.b.post_recv(self.recvs)
        await self.a.post_send(self.sends)

    def check_landed(self):
        for k, (region, offset, data) in enumerate(self.landed):
            assert region.read(offset, len(data)) == data, (
                f"QP {self.a.qp_num} message #{k} ({self.sends[k].opcode.name}, {len(data)} "
                f"bytes): data differs at its destination")
        self.local.assert_outside_untouched()
        self.remote.assert_outside_untouched()


def by_qp(wcs):
    """Completions grouped by QP, each group in the order polled."""
    groups = {}
    for wc in wcs:
        groups.setdefault(wc.qp_num, []).append(wc)
    return groups


MIXED = [WROpcode.RDMA_WRITE, WROpcode.SEND, WROpcode.RDMA_READ, WROpcode.RDMA_WRITE_WITH_IMM,
         WROpcode.SEND_WITH_IMM, WROpcode.RDMA_WRITE, WROpcode.RDMA_READ, WROpcode.SEND]


@cocotb.test()
async def test_many_qps_many_outstanding(dut):
    """8 RC QPs (fewer on a device without 16 free) each post 24 mixed WRs in one doorbell
    before any completion is polled: all complete successfully, each send queue's completions
    in posting order, the queues served round robin in turns (a turn is at most a send
    window, 16 WQEs by default, read ahead in one fetch: no QP's run of completions is longer
    while another still has work, and the first-posted QP's last completion comes after the
    last-posted QP's first), every receive queue consumed in order, and every message's data
    in place."""
    rdma = await Rdma.open(dut)
    build = device_parameters()
    qps, per_qp, turn = min(8, (build["NUM_QP"] - 2) // 2), 24, 1 << build["SQ_WIN_LOG"]
    send_cq = await rdma.dev.create_cq(qps * per_qp)
    recv_cq = await rdma.dev.create_cq(qps * per_qp)
    traffics = []
    for i in range(qps):
        a, b = await rdma.connected_pair(QPType.RC, depth=per_qp, cqs=(send_cq, recv_cq))
        t = await Traffic.create(rdma, a, b, per_qp)
        t.add_mix(per_qp, MIXED, [1 + (97 * i + 131 * k) % MAX_LENGTH for k in range(per_qp)])
        traffics.append(t)
    for t in traffics:
        await t.post()

    wcs = await wait_all(send_cq, qps * per_qp)
    assert all(wc.status == WCStatus.SUCCESS for wc in wcs), [wc for wc in wcs if wc.status]
    groups = by_qp(wcs)
    for t in traffics:
        assert [wc.wr_id for wc in groups[t.a.qp_num]] == t.signaled, \
            f"QP {t.a.qp_num}: send completions not in posting order"
    order = [wc.qp_num for wc in wcs]
    first, last = traffics[0].a.qp_num, traffics[-1].a.qp_num
    assert len(order) - order[::-1].index(first) > order.index(last), \
        "the first QP finished all its WRs before the last QP got its first: not round robin"
    # runs of one QP's completions (a bypass message completes in the order it is issued),
    # up to where only one QP has work left
    alone = len(order) - next(k for k in range(len(order) - 1, -1, -1)
                              if order[k] != order[-1]) - 1
    run, longest = 0, 0
    for k in range(len(order) - alone):
        run = run + 1 if k and order[k] == order[k - 1] else 1
        longest = max(longest, run)
    assert longest <= turn, f"a QP was served {longest} WQEs in a row while others waited"
    rgroups = by_qp(await wait_all(recv_cq, sum(len(t.received) for t in traffics)))
    for t in traffics:
        assert [wc.wr_id for wc in rgroups[t.b.qp_num]] == t.received
        t.check_landed()
    await rdma.assert_loopback_moves(qps * per_qp, sum(t.bytes for t in traffics))
    await rdma.finish()


async def ring_reads(dut, lo, hi, done):
    """AXI read bursts whose first byte is in [lo, hi), counted until `done` is set."""
    bursts = []
    while not done.is_set():
        await RisingEdge(dut.clk)
        if dut.m_axi_arvalid.value == 1 and dut.m_axi_arready.value == 1:
            addr = int(dut.m_axi_araddr.value)
            if lo <= addr < hi:
                bursts.append((addr, int(dut.m_axi_arlen.value) + 1))
    return bursts


@cocotb.test()
@cocotb.parametrize(sges=[1, 3])
async def test_send_queue_read_ahead(dut, sges):
    """16 WRITEs posted with one doorbell: the device reads their WQEs (64 bytes, or 128 with
    room for 3 SGEs) a send window at a time (16 WQEs at the default SQ_WIN_LOG), each window
    in one or two AXI bursts, not one read each, reads each WQE once, and every WRITE lands
    and completes in posting order."""
    rdma = await Rdma.open(dut)
    a, b = await rdma.connected_pair(QPType.RC, depth=16, sges=sges)
    local, remote = await rdma.region(16 * 256), await rdma.region(16 * 256)
    ring = (a.sq.base, a.sq.base + (a.sq.stride << a.sq.log2))
    done = Event()
    watch = cocotb.start_soon(ring_reads(dut, *ring, done))
    # SGE k of a WR: 40 bytes at k * 64 of its 256-byte slot (1 or 3 of them)
    wrs = [SendWR(WROpcode.RDMA_WRITE, [local.sge(256 * n + 64 * k, 40) for k in range(sges)],
                  wr_id=n, remote_addr=remote.remote(256 * n).addr, rkey=remote.mr.rkey)
           for n in range(16)]
    await a.post_send(wrs)
    wcs = await rdma.poll_until(a.send_cq, 16)
    done.set()
    bursts = await watch
    assert [wc.wr_id for wc in wcs] == list(range(16))
    assert all(wc.status == WCStatus.SUCCESS for wc in wcs)
    beats = sum(n for _, n in bursts)
    windows = -(-16 // (1 << device_parameters()["SQ_WIN_LOG"]))
    assert 1 <= len(bursts) <= 2 * windows, f"16 WQEs read in {len(bursts)} bursts: {bursts}"
    assert beats * rdma.tb.data_width // 8 == a.sq.stride * 16, \
        f"{beats} beats read for 16 WQEs of {a.sq.stride} bytes"
    for n in range(16):
        want = b"".join(local.read(256 * n + 64 * k, 40) for k in range(sges))
        assert remote.read(256 * n, 40 * sges) == want
    await rdma.finish()


@cocotb.test()
async def test_wqe_read_error(dut):
    """A send ring whose last two slots lie past the end of host memory (reads there answer
    DECERR), and a doorbell for all four: the read-ahead's fetch fails as a whole, so each WQE
    is fetched again alone; the two in memory run and complete, the first whose own read fails
    completes with GENERAL_ERR (and the QP goes to ERR), the last is flushed, and nothing is
    written outside the WRITEs' targets."""
    rdma = await Rdma.open(dut)
    rdma.sb.stop_predicting()       # the model has no ring outside memory
    dev = rdma.dev
    end = int(dut.host_mem.MEM_BYTES.value)
    allocate = dev.alloc

    def ring_at_the_end(size, align=64, label=None):
        if label and "send ring" in label:
            dev.alloc = allocate
            return end - 2 * 64
        return allocate(size, align, label)

    dev.alloc = ring_at_the_end
    a, b = await rdma.connected_pair(QPType.RC, depth=4)
    assert a.sq.base + 2 * a.sq.stride == end and a.sq.log2 == 2
    local, remote = await rdma.region(4096), await rdma.region(4096)
    for k in range(2):
        dev.write(a.sq.slot(k), encode_send_wqe(
            work_request(WROpcode.RDMA_WRITE, local.sge(64 * k, 64), remote.remote(64 * k),
                         wr_id=0xA0 + k)))
    await dev.write_reg(sq_db(a.qp_num), 4)
    wcs = await rdma.poll_until(a.send_cq, 4)
    assert [(wc.wr_id, wc.status) for wc in wcs[:2]] == [(0xA0, WCStatus.SUCCESS),
                                                         (0xA1, WCStatus.SUCCESS)]
    assert [wc.status for wc in wcs[2:]] == [WCStatus.GENERAL_ERR, WCStatus.WR_FLUSH_ERR]
    assert remote.read(0, 128) == local.read(0, 128)
    remote.assert_outside_untouched()
    await rdma.assert_state(a, QPState.ERR)
    rdma.sb.check_device()


@cocotb.test()
async def test_bypass_messages_in_flight_keep_their_order(dut):
    """The requester goes on to the next WQE while a bypass message's payload moves, and several
    move at once; one doorbell of dependent WRs on one RC QP proves the order still holds: a
    READ of bytes an earlier WRITE wrote reads the written bytes, a FetchAdd on 8 bytes an
    earlier WRITE wrote returns them, a 64-byte WRITE over the last bytes of a 64 KiB WRITE
    posted before it lands after it, and the receive completion of a zero-length SEND (nothing
    of its own to move) posted after them finds every byte in place the moment the program
    sees it."""
    rdma = await Rdma.open(dut)
    a, b = await rdma.connected_pair(QPType.RC)
    big = 64 * 1024
    local, remote, back = await rdma.region(big), await rdma.region(big), await rdma.region(4096)
    assert local.read(0, 1000) != remote.read(0, 1000)
    assert back.read(3000, 64) != local.read(big - 64, 64)
    await b.post_recv(RecvWR(back.sge(2048, 64), wr_id=0xB0))
    await a.post_send([
        work_request(WROpcode.RDMA_WRITE, local.sge(0, 1000), remote.remote(0), wr_id=1),
        rdma_read(back.sge(0, 1000), remote.remote(0), wr_id=2),
        work_request(WROpcode.RDMA_WRITE, local.sge(1000, 8), remote.remote(1000), wr_id=3),
        atomic_fetch_and_add(back.sge(1024, 8), remote.remote(1000), 5, wr_id=4),
        work_request(WROpcode.RDMA_WRITE, local.sge(0, big), remote.remote(0), wr_id=5),
        work_request(WROpcode.RDMA_WRITE, back.sge(3000, 64), remote.remote(big - 64), wr_id=6),
        work_request(WROpcode.SEND, local.sge(2000, 0), wr_id=7)])
    [rwc] = await b.recv_cq.wait(1)
    assert_wc(rwc, wr_id=0xB0, status=WCStatus.SUCCESS)
    assert remote.read(0, big - 64) == local.read(0, big - 64), \
        "the SEND's receive completion was written before the 64 KiB WRITE ahead of it landed"
    assert remote.read(big - 64, 64) == back.read(3000, 64), \
        "a WRITE over bytes of an earlier WRITE did not land last"
    wcs = await a.send_cq.wait(7)
    assert [(wc.wr_id, wc.status) for wc in wcs] == [(n, WCStatus.SUCCESS) for n in range(1, 8)]
    assert back.read(0, 1000) == local.read(0, 1000), "the READ did not see the WRITE before it"
    assert back.read(1024, 8) == local.read(1000, 8), "the FetchAdd did not see the WRITE before it"
    await rdma.finish()


@cocotb.test()
async def test_bypass_payload_error_flushes_the_wrs_behind(dut):
    """A WRITE whose local SGE ends past the end of host memory (its last read answers DECERR)
    among WRs on the bypass: while its 4 KiB payload moves, the requester has gone on to the
    WQEs behind it (a zero-length WRITE it finishes itself, a WRITE to other bytes, which may
    move beside it, a SEND), yet it completes with GENERAL_ERR, the QP goes to ERR and every WR
    behind it is flushed: the SEND, which waits for the WRITEs ahead of it, moves nothing and
    is not received. The WRs before it complete with their data in place."""
    rdma = await Rdma.open(dut)
    rdma.sb.stop_predicting()       # the model has no memory past the end
    end = int(dut.host_mem.MEM_BYTES.value)
    a, b = await rdma.connected_pair(QPType.RC)
    local, remote = await rdma.region(4096), await rdma.region(8192)
    beyond = await rdma.pd.reg_mr(end - 4096 + 64, 4096, ALL_ACCESS)
    await b.post_recv(RecvWR(remote.sge(3072, 64), wr_id=0xB0))
    before = remote.read()
    await a.post_send([
        work_request(WROpcode.RDMA_WRITE, local.sge(0, 64), remote.remote(0), wr_id=1),
        work_request(WROpcode.RDMA_WRITE, local.sge(64, 64), remote.remote(64), wr_id=2),
        work_request(WROpcode.RDMA_WRITE, beyond.sge(0, 4096), remote.remote(4096), wr_id=3),
        work_request(WROpcode.RDMA_WRITE, local.sge(0, 0), remote.remote(2048), wr_id=4),
        work_request(WROpcode.RDMA_WRITE, local.sge(128, 64), remote.remote(1024), wr_id=5),
        work_request(WROpcode.SEND, local.sge(192, 64), wr_id=6)])
    wcs = await a.send_cq.wait(6)
    assert [(wc.wr_id, wc.status) for wc in wcs] == [
        (1, WCStatus.SUCCESS), (2, WCStatus.SUCCESS), (3, WCStatus.GENERAL_ERR),
        (4, WCStatus.WR_FLUSH_ERR), (5, WCStatus.WR_FLUSH_ERR), (6, WCStatus.WR_FLUSH_ERR)]
    assert remote.read(0, 128) == local.read(0, 128)
    assert remote.read(1024, 64) in (before[1024:1088], local.read(128, 64))
    assert remote.read(3072, 64) == before[3072:3136], "the SEND behind the failed one moved"
    assert await b.recv_cq.poll() == [], "the SEND behind the failed one was received"
    remote.assert_outside_untouched()
    await rdma.assert_state(a, QPState.ERR)
    rdma.sb.check_device()


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC, QPType.UD])
async def test_qp_sends_to_itself(dut, transport):
    """A QP whose destination is itself (RC/UC connected to its own QPN, UD addressing its own
    QPN) serves as requester and responder at once: every opcode of the transport, eight WRs
    in one doorbell, completes in order with its data and receive completions, and on its one
    CQ each message's receive completion precedes its send completion."""
    rdma = await Rdma.open(dut)
    if transport == QPType.UD:
        a, ah = await rdma.ud_qp(), await rdma.loopback_ah()
    else:
        a, ah = await rdma.qp(transport), None
        await rdma.connect(a, a.qp_num)
    t = await Traffic.create(rdma, a, a, 8, ah)
    t.add_mix(8, DATA_OPCODES[transport], [1 + 211 * k for k in range(8)])
    await t.post()
    wcs = await wait_all(a.send_cq, 8 + len(t.received))
    sends, recvs = sends_and_receives(wcs)
    assert [(wc.wr_id, wc.status) for wc in sends] == [(i, WCStatus.SUCCESS) for i in t.signaled]
    assert [(wc.wr_id, wc.status, wc.src_qp) for wc in recvs] == [
        (i, WCStatus.SUCCESS, a.qp_num) for i in t.received]
    t.check_landed()
    order = [(wc.wr_id, wc.is_recv) for wc in wcs]
    for wr_id in t.received:  # one CQ: each message's receive CQE comes before its send CQE
        assert order.index((wr_id, True)) < order.index((wr_id, False)), \
            f"WR {wr_id:#x}: send completion before the receive completion"
    await rdma.assert_loopback_moves(8, t.bytes)
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC, QPType.UD])
async def test_unsignaled_then_signaled(dut, transport):
    """Unsignaled WRs that succeed write no CQE; the signaled WR posted after them is the only
    send completion, and when it is seen all of them are done: their data is in place and the
    send queue's consumer index counts them."""
    rdma = await Rdma.open(dut)
    if transport == QPType.UD:
        a, b, ah = await rdma.ud_qp(), await rdma.ud_qp(), await rdma.loopback_ah()
    else:
        (a, b), ah = await rdma.connected_pair(transport), None
    t = await Traffic.create(rdma, a, b, 6, ah)
    opcodes = DATA_OPCODES[transport]
    for k in range(5):
        t.add(opcodes[k % len(opcodes)], 100 + 50 * k, flags=UNSIGNALED)
    t.add(WROpcode.SEND, 64)
    await t.post()

    [wc] = await a.send_cq.wait(1)
    assert_wc(wc, wr_id=t.signaled[0], status=WCStatus.SUCCESS, opcode=WCOpcode.SEND)
    t.check_landed()
    assert (await a.query()).sq_ci >= 5, "the send queue has not consumed the unsignaled WRs"
    received = await wait_all(b.recv_cq, len(t.received))
    assert [wc.wr_id for wc in received] == t.received
    assert await a.send_cq.poll() == [], "an unsignaled success wrote a CQE"
    await rdma.assert_loopback_moves(6, t.bytes)
    await rdma.finish()


@cocotb.test()
async def test_concurrent_coroutines_drive_their_qps_at_once(dut):
    """Six coroutines (fewer when the device has fewer QPs or CQs), one per RC loopback pair,
    create their QPs and CQs, then each posts 40 RDMA WRITEs in batches of 1 to 6 into an
    8-entry send queue, so that the driver asks QUERY_QP for room again and again, from all of
    them at once, and queries its QP after every batch. Every QUERY_QP answer is the asking
    QP's own (its producer index, its PSNs), no WQE still in use is overwritten, and every WR
    completes once, in order, with its bytes in place.
    Six more coroutines post to one QP at once: every WR runs once."""
    rdma = await Rdma.open(dut)
    dev = rdma.dev
    flows = min(6, (dev.num_qp - 2) // 2 - 1, dev.num_cq // 2 - 1)     # and one pair more
    count, depth, size = 40, 8, 64
    rng = random.Random(SEED)

    async def flow(n):
        a, b = await rdma.connected_pair(QPType.RC, depth=depth, sq_psn=n << 20)
        src, dst = await rdma.region(count * size), await rdma.region(count * size)
        wrs = [work_request(WROpcode.RDMA_WRITE, src.sge(k * size, size),
                            dst.remote(k * size), wr_id=n << 8 | k) for k in range(count)]
        done, k = [], 0
        while k < count:
            batch = wrs[k:k + rng.randint(1, 6)]
            try:
                await a.post_send(batch)
            except QueueFull:
                done += await rdma.poll_until(a.send_cq, 1)
                continue
            k += len(batch)
            status = await a.query()
            assert status.sq_pi == a.sq.head & 0xFFFF, \
                f"QP {a.qp_num} asked QUERY_QP and got producer index {status.sq_pi}, its own " \
                f"is {a.sq.head & 0xFFFF}"
            assert (status.sq_psn - (n << 20)) & 0xFFFFFF <= k, \
                f"QP {a.qp_num} got another QP's send PSN {status.sq_psn:#x}"
            done += await a.send_cq.poll()     # the CQ holds 16: drained as a program would
        done += await rdma.poll_until(a.send_cq, count - len(done))
        assert [(wc.wr_id, wc.status) for wc in done] == \
            [(wr.wr_id, WCStatus.SUCCESS) for wr in wrs]
        assert dst.read() == src.read()

    for task in [cocotb.start_soon(flow(n)) for n in range(flows)]:
        await task

    a, b = await rdma.connected_pair(QPType.RC, depth=64)
    src, dst = await rdma.region(36 * size), await rdma.region(36 * size)

    async def poster(n):
        for k in range(6):
            slot = 6 * n + k
            await a.post_send(work_request(WROpcode.RDMA_WRITE, src.sge(slot * size, size),
                                           dst.remote(slot * size), wr_id=slot))

    for task in [cocotb.start_soon(poster(n)) for n in range(6)]:
        await task
    wcs = await rdma.poll_until(a.send_cq, 36)
    assert sorted(wc.wr_id for wc in wcs) == list(range(36))
    assert all(wc.status == WCStatus.SUCCESS for wc in wcs)
    assert dst.read() == src.read()
    await rdma.finish()


# ---------------------------------------------------------------------------------------------
# 4. Protection

def error_wc_fields(wr_id, status, opcode, qp):
    """An error completion: wr_id, status, opcode and qp_num; every other field zero."""
    return dict(wr_id=wr_id, status=status, opcode=opcode, qp_num=qp.qp_num, byte_len=0,
                src_qp=0, wc_flags=WCFlags(0), sl=0, slid=0, dlid_path_bits=0)


def sends_and_receives(wcs):
    return [wc for wc in wcs if not wc.is_recv], [wc for wc in wcs if wc.is_recv]


async def assert_flushes(rdma, qp, opcode=WROpcode.SEND):
    """`qp` is in ERR: a send WR (unsignaled, even) and a receive posted now both complete
    WR_FLUSH_ERR."""
    await rdma.assert_state(qp, QPState.ERR)
    await qp.post_recv(RecvWR(NO_SGE, wr_id=0xF1))
    await qp.post_send(work_request(opcode, NO_SGE, RemoteAddr(0, 0), wr_id=0xF2,
                                    flags=UNSIGNALED))
    sends, recvs = sends_and_receives(await wait_all(qp.send_cq, 2))
    assert_wc(sends[0], **error_wc_fields(0xF2, WCStatus.WR_FLUSH_ERR, SEND_WC_OPCODE[opcode], qp))
    assert_wc(recvs[0], **error_wc_fields(0xF1, WCStatus.WR_FLUSH_ERR, WCOpcode.RECV, qp))


class LocalFault(Enum):
    UNREGISTERED_LKEY = "RDMA WRITE from an lkey that names no registered MR"
    LKEY_INDEX_OUT_OF_RANGE = "RDMA WRITE from the MR's lkey with NUM_MR added to its index"
    STALE_LKEY = "RDMA WRITE from the lkey of an earlier registration of the same MR index"
    LKEY_OF_OTHER_PD = "RDMA WRITE from an MR of another PD"
    SGE_BEFORE_MR = "RDMA READ into an SGE that starts one byte before the MR"
    SGE_BEYOND_MR = "RDMA READ into an SGE that ends one byte beyond the MR"
    READ_INTO_MR_WITHOUT_LOCAL_WRITE = "RDMA READ into an MR without LOCAL_WRITE"


READS_INTO_LOCAL = {LocalFault.SGE_BEFORE_MR, LocalFault.SGE_BEYOND_MR,
                    LocalFault.READ_INTO_MR_WITHOUT_LOCAL_WRITE}


@cocotb.test()
@cocotb.parametrize(fault=list(LocalFault))
async def test_local_protection_error(dut, fault):
    """A WR whose local SGE its MR does not allow completes LOC_PROT_ERR (with the error CQE's
    other fields zero), moves no byte and no LB counter, and puts the QP in ERR: the WRs
    behind it, signaled or not, and the receives posted before and after, flush with
    WR_FLUSH_ERR."""
    rdma = await Rdma.open(dut)
    a, b = await rdma.connected_pair(QPType.RC)
    remote = await rdma.region(4096)
    pd = rdma.dev.alloc_pd() if fault == LocalFault.LKEY_OF_OTHER_PD else rdma.pd
    no_local_write = fault == LocalFault.READ_INTO_MR_WITHOUT_LOCAL_WRITE
    local = await rdma.region(4096, access=Access(0) if no_local_write else Access.LOCAL_WRITE,
                              pd=pd)
    length = 256
    sge = {
        LocalFault.UNREGISTERED_LKEY: SGE(local.mr.addr, length, unregistered_key(rdma.dev)),
        LocalFault.LKEY_INDEX_OUT_OF_RANGE: SGE(local.mr.addr, length,
                                                local.lkey + (rdma.dev.num_mr << 8)),
        LocalFault.SGE_BEFORE_MR: SGE(local.mr.addr - 1, length, local.lkey),
        LocalFault.SGE_BEYOND_MR: local.sge(local.length - length + 1, length),
    }.get(fault, local.sge(0, length))
    if fault == LocalFault.STALE_LKEY:
        await local.reregister()
    opcode = WROpcode.RDMA_READ if fault in READS_INTO_LOCAL else WROpcode.RDMA_WRITE
    memory = local.read(), remote.read()

    await a.post_recv(RecvWR(local.sge(0, 16), wr_id=0xA0))
    await a.post_send([work_request(opcode, sge, remote.remote(0), wr_id=0xA1),
                       work_request(opcode, local.sge(0, 16), remote.remote(0), wr_id=0xA2),
                       work_request(opcode, local.sge(0, 16), remote.remote(0), wr_id=0xA3,
                                    flags=UNSIGNALED)])
    sends, recvs = sends_and_receives(await wait_all(a.send_cq, 4))
    wc_opcode = SEND_WC_OPCODE[opcode]
    assert_wc(sends[0], **error_wc_fields(0xA1, WCStatus.LOC_PROT_ERR, wc_opcode, a))
    assert_wc(sends[1], **error_wc_fields(0xA2, WCStatus.WR_FLUSH_ERR, wc_opcode, a))
    assert_wc(sends[2], **error_wc_fields(0xA3, WCStatus.WR_FLUSH_ERR, wc_opcode, a))
    assert_wc(recvs[0], **error_wc_fields(0xA0, WCStatus.WR_FLUSH_ERR, WCOpcode.RECV, a))
    await assert_flushes(rdma, a)
    await rdma.assert_state(b, QPState.RTS)
    assert (local.read(), remote.read()) == memory, "a refused WR moved data"
    await rdma.assert_loopback_moves(0, 0)
    local.assert_outside_untouched()
    remote.assert_outside_untouched()
    await rdma.finish()


class RemoteFault(Enum):
    UNREGISTERED_RKEY = "the rkey names no registered MR"
    RKEY_INDEX_OUT_OF_RANGE = "the MR's rkey with NUM_MR added to its index"
    RKEY_OF_OTHER_PD = "the remote MR belongs to another PD than the destination QP"
    RANGE_BEYOND_MR = "the remote range ends one byte beyond the MR"
    MR_WITHOUT_RIGHT = "the remote MR lacks REMOTE_WRITE / REMOTE_READ"
    QP_WITHOUT_RIGHT = "the destination QP's access flags lack REMOTE_WRITE / REMOTE_READ"


RDMA_ON = [(QPType.RC, WROpcode.RDMA_WRITE), (QPType.RC, WROpcode.RDMA_WRITE_WITH_IMM),
           (QPType.RC, WROpcode.RDMA_READ), (QPType.UC, WROpcode.RDMA_WRITE),
           (QPType.UC, WROpcode.RDMA_WRITE_WITH_IMM)]


@cocotb.test()
@cocotb.parametrize((("transport", "opcode"), RDMA_ON), fault=list(RemoteFault))
async def test_remote_access_error(dut, transport, opcode, fault):
    """An RDMA WRITE / READ the responder must refuse writes and reads nothing. RC: the sender
    completes REM_ACCESS_ERR and both QPs go to ERR (the destination's receive flushes).
    UC: the sender completes SUCCESS, both QPs stay in RTS, and a WRITE_WITH_IMM consumed no
    receive (a SEND after it finds the receive still there). The message still counts in
    LB_MSGS/LB_BYTES: it passed the requester and was loopback."""
    rdma = await Rdma.open(dut)
    reading = opcode == WROpcode.RDMA_READ
    right = Access.REMOTE_READ if reading else Access.REMOTE_WRITE
    other_right = Access.REMOTE_WRITE if reading else Access.REMOTE_READ
    qp_access = other_right if fault == RemoteFault.QP_WITHOUT_RIGHT else right | other_right
    a, b = await rdma.connected_pair(transport, access=qp_access)
    mr_access = (Access.LOCAL_WRITE | other_right if fault == RemoteFault.MR_WITHOUT_RIGHT
                 else ALL_ACCESS)
    pd = rdma.dev.alloc_pd() if fault == RemoteFault.RKEY_OF_OTHER_PD else rdma.pd
    remote = await rdma.region(4096, access=mr_access, pd=pd)
    local = await rdma.region(4096)
    inbox = await rdma.region(4096)
    length = 512
    target = {
        RemoteFault.UNREGISTERED_RKEY: RemoteAddr(remote.mr.addr, unregistered_key(rdma.dev)),
        RemoteFault.RKEY_INDEX_OUT_OF_RANGE: RemoteAddr(remote.mr.addr,
                                                        remote.mr.rkey + (rdma.dev.num_mr << 8)),
        RemoteFault.RANGE_BEYOND_MR: remote.remote(remote.length - length + 1),
    }.get(fault, remote.remote(0))
    memory = local.read(), remote.read(), inbox.read()

    await b.post_recv(RecvWR(inbox.sge(0, 64), wr_id=0xB1))
    await a.post_send(work_request(opcode, local.sge(0, length), target, wr_id=0xA1, imm=0xABCD))
    [wc] = await a.send_cq.wait(1)
    if transport == QPType.RC:
        assert_wc(wc, **error_wc_fields(0xA1, WCStatus.REM_ACCESS_ERR, SEND_WC_OPCODE[opcode], a))
        [rwc] = await b.recv_cq.wait(1)
        assert_wc(rwc, **error_wc_fields(0xB1, WCStatus.WR_FLUSH_ERR, WCOpcode.RECV, b))
        await assert_flushes(rdma, a)
        await assert_flushes(rdma, b)
        assert (local.read(), remote.read(), inbox.read()) == memory, "data moved"
        await rdma.assert_loopback_moves(1, length)
    else:
        assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS, opcode=WCOpcode.RDMA_WRITE)
        assert await b.recv_cq.poll() == [], "the dropped WRITE completed a receive"
        assert (local.read(), remote.read()) == memory[:2], "data moved"
        await a.post_send(work_request(WROpcode.SEND, local.sge(0, 64), wr_id=0xA2))
        [rwc] = await b.recv_cq.wait(1)
        assert_wc(rwc, wr_id=0xB1, status=WCStatus.SUCCESS, opcode=WCOpcode.RECV, byte_len=64)
        assert inbox.read(0, 64) == local.read(0, 64)
        await rdma.assert_state(a, QPState.RTS)
        await rdma.assert_state(b, QPState.RTS)
        await rdma.assert_loopback_moves(2, length + 64)
    for region in (local, remote, inbox):
        region.assert_outside_untouched()
    await rdma.finish()


class ReceiveFault(Enum):
    BUFFER_TOO_SMALL = "the receive SGE is one byte short of the message (UD: + 40)"
    UNREGISTERED_LKEY = "the receive lkey names no registered MR"
    MR_WITHOUT_LOCAL_WRITE = "the receive MR lacks LOCAL_WRITE"


RECEIVE_ERROR = {ReceiveFault.BUFFER_TOO_SMALL: (WCStatus.LOC_LEN_ERR, WCStatus.REM_INV_REQ_ERR),
                 ReceiveFault.UNREGISTERED_LKEY: (WCStatus.LOC_PROT_ERR, WCStatus.REM_OP_ERR),
                 ReceiveFault.MR_WITHOUT_LOCAL_WRITE: (WCStatus.LOC_PROT_ERR, WCStatus.REM_OP_ERR)}


async def sender_receiver(rdma, transport):
    """(a, b, AH or None): two QPs in RTS, `a` able to send to `b` over loopback."""
    if transport == QPType.UD:
        return await rdma.ud_qp(), await rdma.ud_qp(), await rdma.loopback_ah()
    a, b = await rdma.connected_pair(transport)
    return a, b, None


def send_to(b, ah, sge, wr_id, flags=SIGNALED):
    """A SEND to `b`: through `ah` (UD) or over the connection."""
    if ah is not None:
        return ud_send(sge, ah, b.qp_num, QKEY, wr_id, flags=flags)
    return work_request(WROpcode.SEND, sge, wr_id=wr_id, flags=flags)


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC, QPType.UD], fault=list(ReceiveFault))
async def test_receive_error(dut, transport, fault):
    """A SEND whose receive WQE cannot take it: the receive completes LOC_LEN_ERR (too small)
    or LOC_PROT_ERR (lkey), nothing is written. RC: the sender completes REM_INV_REQ_ERR /
    REM_OP_ERR and both QPs go to ERR (the next receive flushes). UC/UD: the sender completes
    SUCCESS, both stay in RTS, and the next SEND lands in the next receive."""
    rdma = await Rdma.open(dut)
    a, b, ah = await sender_receiver(rdma, transport)
    length = 200
    need = length + (GRH_BYTES if transport == QPType.UD else 0)
    src = await rdma.region(4096)
    inbox = await rdma.region(4096, access=Access(0) if fault == ReceiveFault.MR_WITHOUT_LOCAL_WRITE
                              else Access.LOCAL_WRITE)
    spare = await rdma.region(4096, access=Access.LOCAL_WRITE)
    rsge = {ReceiveFault.BUFFER_TOO_SMALL: inbox.sge(0, need - 1),
            ReceiveFault.UNREGISTERED_LKEY: SGE(inbox.mr.addr, need, unregistered_key(rdma.dev)),
            ReceiveFault.MR_WITHOUT_LOCAL_WRITE: inbox.sge(0, need)}[fault]
    memory = inbox.read(), spare.read()

    await b.post_recv([RecvWR(rsge, wr_id=0xB1), RecvWR(spare.sge(0, need), wr_id=0xB2)])
    await a.post_send(send_to(b, ah, src.sge(0, length), wr_id=0xA1))
    receiver_status, rc_sender_status = RECEIVE_ERROR[fault]
    [rwc] = await b.recv_cq.wait(1)
    assert_wc(rwc, **error_wc_fields(0xB1, receiver_status, WCOpcode.RECV, b))
    [wc] = await a.send_cq.wait(1)
    assert (inbox.read(), spare.read()) == memory, "the refused SEND wrote the receive buffer"
    if transport == QPType.RC:
        assert_wc(wc, **error_wc_fields(0xA1, rc_sender_status, WCOpcode.SEND, a))
        [rwc] = await b.recv_cq.wait(1)
        assert_wc(rwc, **error_wc_fields(0xB2, WCStatus.WR_FLUSH_ERR, WCOpcode.RECV, b))
        await assert_flushes(rdma, a)
        await assert_flushes(rdma, b)
        await rdma.assert_loopback_moves(1, length)
    else:
        assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS, opcode=WCOpcode.SEND)
        await a.post_send(send_to(b, ah, src.sge(0, length), wr_id=0xA2))
        [rwc] = await b.recv_cq.wait(1)
        assert_wc(rwc, wr_id=0xB2, status=WCStatus.SUCCESS, byte_len=need)
        assert spare.read(need - length, length) == src.read(0, length)
        await rdma.assert_state(a, QPState.RTS)
        await rdma.assert_state(b, QPState.RTS)
        await rdma.assert_loopback_moves(2, 2 * length)
    for region in (src, inbox, spare):
        region.assert_outside_untouched()
    await rdma.finish()


# ---------------------------------------------------------------------------------------------
# 5. Destination-side rules

class Unreachable(Enum):
    NO_SUCH_QP = "the destination QPN names no QP"
    QPN_OUT_OF_RANGE = "the destination QPN is beyond NUM_QP"
    DEST_IN_INIT = "the destination QP is in INIT"
    DEST_IN_ERR = "the destination QP is in ERR"
    OTHER_TRANSPORT = "the destination QP has another transport"
    OTHER_PORT = "the destination QP is bound to port 2"
    QKEY_MISMATCH = "UD: the WQE's Q_Key is not the destination's"
    OWN_QKEY_MISMATCH = "UD: the WQE asks for the sender QP's own Q_Key, which differs"


UNREACHABLE = [(t, r) for t in (QPType.RC, QPType.UC, QPType.UD) for r in Unreachable
               if t == QPType.UD or r not in (Unreachable.QKEY_MISMATCH,
                                              Unreachable.OWN_QKEY_MISMATCH)]
OTHER_TRANSPORT = {QPType.RC: QPType.UC, QPType.UC: QPType.RC, QPType.UD: QPType.UC}


async def destination(rdma, transport, reason, inbox, length):
    """The destination QPN for `reason`: a QP that cannot take the message (with a receive
    posted on it), or a number that names none."""
    dev = rdma.dev
    if reason == Unreachable.NO_SUCH_QP:
        return free_index(dev.qps, dev.num_qp, first=2)
    if reason == Unreachable.QPN_OUT_OF_RANGE:
        return dev.num_qp + 3
    qp_type = OTHER_TRANSPORT[transport] if reason == Unreachable.OTHER_TRANSPORT else transport
    port = 2 if reason == Unreachable.OTHER_PORT else 1
    t = await rdma.qp(qp_type)
    if reason == Unreachable.DEST_IN_INIT:
        await t.modify(QPState.INIT, port_num=port, qkey=QKEY, qp_access_flags=ALL_ACCESS)
    elif qp_type == QPType.UD:
        await t.to_rts(port=port, qkey=QKEY)
    else:
        await rdma.connect(t, 0, port)
    await t.post_recv(RecvWR(inbox.sge(0, GRH_BYTES + length), wr_id=0xD1))
    if reason == Unreachable.DEST_IN_ERR:
        await t.modify(QPState.ERR)  # its receive flushes
    return t.qp_num


@cocotb.test()
@cocotb.parametrize((("transport", "reason"), UNREACHABLE))
async def test_unreachable_destination(dut, transport, reason):
    """A loopback SEND whose destination cannot take it: RC completes RETRY_EXC_ERR (the
    requester would have timed out) and goes to ERR; UC and UD complete SUCCESS and stay in
    RTS. Either way nothing is written and no receive is consumed; the message still counts
    in LB_MSGS/LB_BYTES."""
    rdma = await Rdma.open(dut)
    length = 300
    src = await rdma.region(4096)
    inbox = await rdma.region(4096)
    memory = inbox.read()
    dest_qpn = await destination(rdma, transport, reason, inbox, length)
    if transport == QPType.UD:
        own_qkey = QKEY + 1 if reason == Unreachable.OWN_QKEY_MISMATCH else QKEY
        a = await rdma.ud_qp(qkey=own_qkey)
        qkey = {Unreachable.QKEY_MISMATCH: QKEY ^ 0x100,
                Unreachable.OWN_QKEY_MISMATCH: QKEY_FROM_QP}.get(reason, QKEY)
        wr = ud_send(src.sge(0, length), await rdma.loopback_ah(), dest_qpn, qkey, wr_id=0xA1)
    else:
        a = await rdma.qp(transport)
        await rdma.connect(a, dest_qpn)
        wr = work_request(WROpcode.SEND, src.sge(0, length), wr_id=0xA1)

    await a.post_send(wr)
    [wc] = await a.send_cq.wait(1)
    if transport == QPType.RC:
        assert_wc(wc, **error_wc_fields(0xA1, WCStatus.RETRY_EXC_ERR, WCOpcode.SEND, a))
        await assert_flushes(rdma, a)
    else:
        assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS, opcode=WCOpcode.SEND, byte_len=length)
        await rdma.assert_state(a, QPState.RTS)
    await rdma.cycles(200)
    assert inbox.read() == memory, "the unreachable destination's receive buffer was written"
    if dest_qpn in rdma.dev.qps:
        t = rdma.dev.qps[dest_qpn]
        status = await t.query()
        assert status.rq_ci == (1 if reason == Unreachable.DEST_IN_ERR else 0), \
            "the destination's receive queue moved"
    await rdma.assert_loopback_moves(1, length)
    inbox.assert_outside_untouched()
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC, QPType.UD])
async def test_destination_in_rtr_receives(dut, transport):
    """A destination QP in RTR (not yet RTS) is reachable: it takes a SEND."""
    rdma = await Rdma.open(dut)
    a, b, ah = await sender_receiver(rdma, transport)
    await b.modify(QPState.RESET)
    if transport == QPType.UD:
        await b.modify(QPState.INIT, port_num=1, qkey=QKEY)
        await b.modify(QPState.RTR)
    else:
        await b.modify(QPState.INIT, port_num=1, qp_access_flags=ALL_ACCESS)
        await b.modify(QPState.RTR)
    src = await rdma.region(4096)
    inbox = await rdma.region(4096)
    need = 128 + (GRH_BYTES if ah else 0)
    await b.post_recv(RecvWR(inbox.sge(0, need), wr_id=0xB1))
    await a.post_send(send_to(b, ah, src.sge(0, 128), wr_id=0xA1))
    [wc] = await a.send_cq.wait(1)
    assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS)
    [rwc] = await b.recv_cq.wait(1)
    assert_wc(rwc, wr_id=0xB1, status=WCStatus.SUCCESS, byte_len=need, src_qp=a.qp_num)
    assert inbox.read(need - 128, 128) == src.read(0, 128)
    await rdma.assert_state(b, QPState.RTR)
    await rdma.finish()


@cocotb.test()
async def test_ud_qkey_from_sender_qp(dut):
    """A UD WQE whose Q_Key has bit 31 set uses the sending QP's own Q_Key: it is delivered
    when that one matches the destination's."""
    rdma = await Rdma.open(dut)
    a, b, ah = await sender_receiver(rdma, QPType.UD)
    src = await rdma.region(4096)
    inbox = await rdma.region(4096)
    await b.post_recv(RecvWR(inbox.sge(0, GRH_BYTES + 64), wr_id=0xB1))
    await a.post_send(ud_send(src.sge(0, 64), ah, b.qp_num, QKEY_FROM_QP, wr_id=0xA1))
    [wc] = await a.send_cq.wait(1)
    assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS)
    [rwc] = await b.recv_cq.wait(1)
    assert_wc(rwc, wr_id=0xB1, status=WCStatus.SUCCESS, byte_len=GRH_BYTES + 64)
    assert inbox.read(GRH_BYTES, 64) == src.read(0, 64)
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize(opcode=[WROpcode.SEND, WROpcode.RDMA_WRITE_WITH_IMM], rnr_retry=[0, 3])
async def test_rc_rnr_retries_exhausted(dut, opcode, rnr_retry):
    """RC: a message that needs a receive where none is posted is retried rnr_retry times,
    then completes RNR_RETRY_EXC_ERR; the sender goes to ERR, the receiver stays in RTS and
    nothing is written. It counts once in LB_MSGS/LB_BYTES."""
    rdma = await Rdma.open(dut)
    a, b = await rdma.connected_pair(QPType.RC, rnr_retry=rnr_retry)
    local = await rdma.region(4096)
    remote = await rdma.region(4096)
    memory = remote.read()
    await a.post_send(work_request(opcode, local.sge(0, 100), remote.remote(0), wr_id=0xA1,
                                   imm=0x1234))
    [wc] = await a.send_cq.wait(1)
    assert_wc(wc, **error_wc_fields(0xA1, WCStatus.RNR_RETRY_EXC_ERR, SEND_WC_OPCODE[opcode], a))
    await assert_flushes(rdma, a)
    await rdma.assert_state(b, QPState.RTS)
    assert remote.read() == memory
    await rdma.assert_loopback_moves(1, 100)
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize(opcode=[WROpcode.SEND, WROpcode.RDMA_WRITE_WITH_IMM])
async def test_rc_rnr_retry_forever(dut, opcode):
    """RC with rnr_retry 7: a message that finds no receive waits (no completion, the send
    queue does not advance, no LB count yet: it counts on its last try) without holding up
    other QPs, and completes once a receive is posted, with its data and receive
    completion."""
    rdma = await Rdma.open(dut)
    a, b = await rdma.connected_pair(QPType.RC, rnr_retry=7)
    c, d = await rdma.connected_pair(QPType.RC)
    local = await rdma.region(4096)
    remote = await rdma.region(4096)
    await a.post_send(work_request(opcode, local.sge(0, 100), remote.remote(0), wr_id=0xA1,
                                   imm=0x1234))
    await rdma.cycles(5000)  # several RNR back-offs
    assert await a.send_cq.poll() == [], "completed without a receive"
    assert (await a.query()).sq_ci == 0
    await rdma.assert_loopback_moves(0, 0)
    await c.post_send(work_request(WROpcode.RDMA_WRITE, local.sge(0, 64), remote.remote(2048),
                                   wr_id=0xC1))
    [wc] = await c.send_cq.wait(1)  # the waiting QP blocks no other
    assert_wc(wc, wr_id=0xC1, status=WCStatus.SUCCESS)

    rsge = remote.sge(0, 100) if opcode == WROpcode.SEND else NO_SGE
    await b.post_recv(RecvWR(rsge, wr_id=0xB1))
    [wc] = await a.send_cq.wait(1)
    assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS)
    [rwc] = await b.recv_cq.wait(1)
    assert_wc(rwc, wr_id=0xB1, status=WCStatus.SUCCESS, byte_len=100)
    assert remote.read(0, 100) == local.read(0, 100)
    await rdma.assert_loopback_moves(2, 164)
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize((("transport", "opcode"), [(QPType.UC, WROpcode.SEND),
                                               (QPType.UC, WROpcode.RDMA_WRITE_WITH_IMM),
                                               (QPType.UD, WROpcode.SEND)]))
async def test_unreliable_without_receive_drops(dut, transport, opcode):
    """UC/UD: a message that needs a receive where none is posted is dropped: the sender
    completes SUCCESS, nothing is written, and a receive posted afterwards is still free for
    the next message."""
    rdma = await Rdma.open(dut)
    a, b, ah = await sender_receiver(rdma, transport)
    local = await rdma.region(4096)
    remote = await rdma.region(4096)
    memory = remote.read()
    if ah:
        wr = ud_send(local.sge(0, 100), ah, b.qp_num, QKEY, wr_id=0xA1)
    else:
        wr = work_request(opcode, local.sge(0, 100), remote.remote(0), wr_id=0xA1, imm=0x1234)
    await a.post_send(wr)
    [wc] = await a.send_cq.wait(1)
    assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS, opcode=SEND_WC_OPCODE[opcode])
    assert remote.read() == memory, "the dropped message wrote"

    need = 100 + (GRH_BYTES if ah else 0)
    await b.post_recv(RecvWR(remote.sge(1024, need), wr_id=0xB1))
    await a.post_send(send_to(b, ah, local.sge(0, 100), wr_id=0xA2))
    [rwc] = await b.recv_cq.wait(1)
    assert_wc(rwc, wr_id=0xB1, status=WCStatus.SUCCESS, byte_len=need)
    assert remote.read(1024 + need - 100, 100) == local.read(0, 100)
    await rdma.assert_loopback_moves(2, 200)
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize(path=["bypass", "packets"])
async def test_atomic_write(dut, path):
    """ATOMIC WRITE (IBTA 1.5, RC) on the bypass and through the packetizer: the WQE's 8 bytes
    (it has no SGE) land at the 8-byte aligned remote address, the bytes around untouched, and
    the WR completes ATOMIC_WRITE; a run of them to one address leaves the last one's bytes.
    Refused: a misaligned address (REM_INV_REQ_ERR, the receiver's QP to ERR), a region
    without REMOTE_WRITE (REM_ACCESS_ERR), an ATOMIC WRITE on a UC or UD QP (LOC_QP_OP_ERR)."""
    rdma = await Rdma.open(dut)
    await rdma.dev.set_bypass(path == "bypass")
    a, b = await rdma.connected_pair(QPType.RC)
    remote = await rdma.region(4096)
    before = remote.read()
    data = [rdma.payload(8) for _ in range(4)]
    await a.post_send(atomic_write(remote.remote(64), data[0], wr_id=0xA1))
    [wc] = await rdma.poll_until(a.send_cq, 1)
    assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS, opcode=WCOpcode.ATOMIC_WRITE)
    assert remote.read() == before[:64] + data[0] + before[72:]
    await a.post_send([atomic_write(remote.remote(128), d, wr_id=0xA2 + k)
                       for k, d in enumerate(data[1:])])
    assert [wc.wr_id for wc in await rdma.poll_until(a.send_cq, 3)] == [0xA2, 0xA3, 0xA4]
    assert remote.read(128, 8) == data[-1]

    read_only = await rdma.region(4096, Access.LOCAL_WRITE | Access.REMOTE_READ)
    for target, status in ((read_only.remote(0), WCStatus.REM_ACCESS_ERR),
                           (remote.remote(3), WCStatus.REM_INV_REQ_ERR)):
        c, d = await rdma.connected_pair(QPType.RC)
        await c.post_send(atomic_write(target, data[0], wr_id=0xC1))
        [wc] = await rdma.poll_until(c.send_cq, 1)
        assert_wc(wc, wr_id=0xC1, status=status)
        await rdma.assert_state(d, QPState.ERR)
    assert read_only.read(0, 8) != data[0] and remote.read(3, 8) != data[0]
    e, _ = await rdma.connected_pair(QPType.UC)
    u = await rdma.ud_qp()
    for qp in (e, u):
        await qp.post_send(atomic_write(remote.remote(256), data[0], wr_id=0xE1))
        [wc] = await rdma.poll_until(qp.send_cq, 1)
        assert_wc(wc, wr_id=0xE1, status=WCStatus.LOC_QP_OP_ERR)
    await rdma.finish()


SRQ_RECV_STRIDE = 2048      # each SRQ receive: 64 bytes at k * stride, 1200 more at + 128


def srq_recv(sink, k):
    """Receive k of test_shared_receive_queue: two SGEs in `sink`, wr_id k."""
    base = k * SRQ_RECV_STRIDE
    return RecvWR([sink.sge(base, 64), sink.sge(base + 128, 1200)], wr_id=k)


def srq_received(sink, k, length):
    """The first `length` bytes receive k holds."""
    base = k * SRQ_RECV_STRIDE
    return (sink.read(base, 64) + sink.read(base + 128, 1200))[:length]


@cocotb.test()
@cocotb.parametrize(path=["bypass", "packets"])
async def test_shared_receive_queue(dut, path):
    """Shared receive queues on the bypass and through the packetizer (docs/host-interface.md,
    "Shared receive queues"): two RC receivers on ports 1 and 2 and a UD receiver take their
    receive WQEs (two SGEs each) from one SRQ in the order messages arrive, and so does a UC
    receiver: two 1000-byte SENDs
    from both ports at once (four packets each at MTU 256, interleaved at the responder on the
    packet path) land whole, each in the WQE it took; the limit event armed at 3 fires once,
    at the take that leaves 2, and disarms (QUERY_SRQ: limit 0). With the SRQ empty a UD SEND
    is dropped and an RC SEND waits (RNR) until WQEs are posted; a receiver in ERR flushes no
    WQE of the SRQ, which the others go on taking. Refused: post_recv on a QP of the SRQ (and
    its RQ doorbell: REG_ERRORS), an SRQ doorbell past the free entries (REG_ERRORS), a limit
    not below the entries (BAD_PARAM), an SRQ that does not exist (BUSY) or past NUM_SRQ
    (BAD_INDEX), CREATE_SRQ over one (BUSY), CREATE_QP on a missing SRQ (BAD_PARAM), and
    destroying an SRQ with QPs on it."""
    rdma = await Rdma.open(dut)
    dev = rdma.dev
    await dev.set_bypass(path == "bypass")
    local = await rdma.region(4096)
    sink = await rdma.region(9 * SRQ_RECV_STRIDE)
    cq = await dev.create_cq(64)
    srq = await rdma.pd.create_srq(8, max_sge=2)
    a, c = await rdma.qp(QPType.RC, cq, cq), await rdma.qp(QPType.RC, cq, cq)
    b, d, v = [await rdma.pd.create_qp(t, cq, cq, srq=srq)
               for t in (QPType.RC, QPType.RC, QPType.UD)]
    for port, (x, y) in ((1, (a, b)), (2, (c, d))):
        await rdma.connect(x, y.qp_num, port, path_mtu=MTU.MTU256)
        await rdma.connect(y, x.qp_num, port, path_mtu=MTU.MTU256)
    u = await rdma.ud_qp(cq=cq)
    await v.to_rts(port=1, qkey=QKEY)
    ah = await rdma.loopback_ah()

    def receives(wcs):
        return {wc.wr_id: wc for wc in wcs if wc.is_recv}

    await srq.post_recv([srq_recv(sink, k) for k in range(6)])
    await srq.modify(3)
    status = await srq.query()
    assert (status.pi, status.ci, status.limit, status.log2, status.max_sge) == (6, 0, 3, 3, 2)

    # two multi-packet SENDs at once, from both ports: each lands whole in the WQE it took
    await a.post_send(work_request(WROpcode.SEND, local.sge(0, 1000), wr_id=0xA1))
    await c.post_send(work_request(WROpcode.SEND, local.sge(1000, 1000), wr_id=0xC1))
    wcs = receives(await rdma.poll_until(cq, 4))
    assert sorted(wcs) == [0, 1]
    for k, wc in wcs.items():
        assert_wc(wc, status=WCStatus.SUCCESS, opcode=WCOpcode.RECV, byte_len=1000)
        offset = 0 if wc.qp_num == b.qp_num else 1000
        assert srq_received(sink, k, 1000) == local.read(offset, 1000), f"receive {k}"
    assert not dev.async_events

    # a UD receiver and a WRITE with immediate take the next two; 2 left: the event fires
    await u.post_send(ud_send(local.sge(0, 100), ah, v.qp_num, QKEY, wr_id=0xD1))
    await a.post_send(work_request(WROpcode.RDMA_WRITE_WITH_IMM, local.sge(0, 64),
                                   sink.remote(7 * SRQ_RECV_STRIDE), wr_id=0xA2, imm=0x5151))
    wcs = receives(await rdma.poll_until(cq, 4))
    assert_wc(wcs[2], qp_num=v.qp_num, byte_len=GRH_BYTES + 100)
    assert_wc(wcs[3], qp_num=b.qp_num, opcode=WCOpcode.RECV_RDMA_WITH_IMM, imm_data=0x5151)
    await dev.collect_async_events()
    assert list(dev.async_events) == [(AsyncEvent.SRQ_LIMIT_REACHED, srq.srqn)]
    dev.async_events.clear()
    status = await srq.query()
    assert (status.ci, status.limit) == (4, 0), "the event disarms the limit"

    # empty: a UD SEND is dropped, an RC SEND waits for the next WQE posted
    for k in (4, 5):
        await c.post_send(work_request(WROpcode.SEND, local.sge(0, 10), wr_id=0xC2 + k))
    assert len(receives(await rdma.poll_until(cq, 4))) == 2
    await u.post_send(ud_send(local.sge(0, 100), ah, v.qp_num, QKEY, wr_id=0xD2))
    [wc] = await rdma.poll_until(cq, 1)
    assert_wc(wc, wr_id=0xD2, status=WCStatus.SUCCESS)
    await a.post_send(work_request(WROpcode.SEND, local.sge(0, 20), wr_id=0xA3))
    await rdma.cycles(5000)
    assert await cq.poll() == [], "an RC SEND completed without a receive"
    await srq.post_recv([srq_recv(sink, k) for k in (6, 7)])
    wcs = await rdma.poll_until(cq, 2)
    assert_wc(receives(wcs)[6], qp_num=b.qp_num, byte_len=20)

    # a receiver in ERR holds no WQE: none of the SRQ's is flushed, the others take them
    await b.modify(QPState.ERR)
    await c.post_send(work_request(WROpcode.SEND, local.sge(0, 30), wr_id=0xC8))
    wcs = await rdma.poll_until(cq, 2)
    assert_wc(receives(wcs)[7], qp_num=d.qp_num, byte_len=30)

    # a UC receiver takes from the SRQ as well
    f, g = await rdma.qp(QPType.UC, cq, cq), await rdma.pd.create_qp(QPType.UC, cq, cq, srq=srq)
    await rdma.connect(f, g.qp_num, 1)
    await rdma.connect(g, f.qp_num, 1)
    await srq.post_recv(srq_recv(sink, 8))
    await f.post_send(work_request(WROpcode.SEND, local.sge(0, 700), wr_id=0xF1))
    wcs = await rdma.poll_until(cq, 2)
    assert_wc(receives(wcs)[8], qp_num=g.qp_num, byte_len=700)
    assert srq_received(sink, 8, 700) == local.read(0, 700)

    # refusals
    with pytest.raises(VerbsError):
        await d.post_recv(srq_recv(sink, 0))
    await dev.write_reg(rq_db(d.qp_num), 1)
    await dev.write_reg(srq_db(srq.srqn), (await srq.query()).pi + srq.max_wr + 1)
    await rdma.cycles(10)
    assert (await rdma.counter_moves()).reg_errors == 2
    await assert_refused(CmdResult.BAD_PARAM, srq.modify(srq.max_wr), "a limit of every entry")
    nobody = free_index(dev.srqs, dev.num_srq)
    await assert_refused(CmdResult.BUSY, dev.command(Cmd.CREATE_SRQ, srq.srqn, bytes(16)),
                         "CREATE_SRQ over an SRQ")
    for cmd in (Cmd.MODIFY_SRQ, Cmd.QUERY_SRQ, Cmd.DESTROY_SRQ):
        await assert_refused(CmdResult.BUSY, dev.command(cmd, nobody), f"{cmd.name} of nothing")
        await assert_refused(CmdResult.BAD_INDEX, dev.command(cmd, dev.num_srq),
                             f"{cmd.name} past NUM_SRQ")
    await assert_refused(CmdResult.BAD_INDEX, dev.command(Cmd.CREATE_SRQ, dev.num_srq, bytes(16)),
                         "CREATE_SRQ past NUM_SRQ")
    await assert_refused(CmdResult.BAD_PARAM, dev.command(Cmd.CREATE_SRQ, nobody, bytes(16)),
                         "CREATE_SRQ of a one-entry ring")
    block = struct.pack("<BxHHHBBBBBxHQQ", QPType.RC, rdma.pd.pdn, cq.cqn, cq.cqn, 1, 0, 1, 1,
                        1, nobody, local.mr.host_addr, local.mr.host_addr)
    await assert_refused(CmdResult.BAD_PARAM,
                         dev.command(Cmd.CREATE_QP, free_index(dev.qps, dev.num_qp), block),
                         "CREATE_QP on an SRQ that does not exist")
    other = await rdma.pd.create_srq(2)
    on_other = await rdma.pd.create_qp(QPType.UD, cq, cq, srq=other)
    with pytest.raises(VerbsError):
        await other.destroy()
    await on_other.destroy()
    await other.destroy()
    await rdma.finish()


# ---------------------------------------------------------------------------------------------
# 6. Completion events, CQ overflow, register and command hygiene

@cocotb.test()
async def test_device_identity(dut):
    """DEV_ID reads "RDMA"; DEV_PARAMS/DEV_PARAMS2 report the build's configuration (2
    ports, its data width, QPs, CQs, MRs, AHs and SRQs: 64, 16, 64, 16, 16 by default; 32-bit
    addresses), and the port registers read back what open_device wrote; PORT_GID0..3 are entry
    0 of the port's GID table (written there, the entry reads the new GID), and CNP_INTERVAL
    holds its reset value."""
    rdma = await Rdma.open(dut)
    dev = rdma.dev
    build = device_parameters()
    assert await dev.read_reg(Reg.DEV_ID) == 0x52444D41
    assert (dev.num_ports, dev.data_bytes, dev.num_qp, dev.num_cq, dev.num_mr, dev.num_ah,
            dev.num_srq, dev.addr_width) == (2, rdma.tb.data_width // 8, build["NUM_QP"],
                                             build["NUM_CQ"], build["NUM_MR"], build["NUM_AH"],
                                             build["NUM_SRQ"], 32)
    for port, attr in dev.ports.items():
        lid, lmc = (await dev.read_reg(port_reg(port, PortReg.LID)),
                    await dev.read_reg(port_reg(port, PortReg.LMC)))
        gid = b"".join([(await dev.read_reg(port_reg(port, PortReg.GID0 + 4 * i))).to_bytes(
            4, "big") for i in range(4)])
        assert (lid, lmc, gid) == (attr.lid, attr.lmc, attr.gid), f"port {port} registers"
    gid0 = [port_reg(2, PortReg.GID0 + 4 * i) for i in range(4)]
    old = [await dev.read_reg(offset) for offset in gid0]
    new = [0xFE800000, 0x00000000, 0x02C90300, 0x00ABCDEF]
    for offset, word in zip(gid0, new):
        await dev.write_reg(offset, word)
    assert [await dev.read_reg(gid_reg(2, 0, 4 * i)) for i in range(4)] == new, \
        "PORT_GID0..3 written: GID table entry 0 does not read the new GID"
    for offset, word in zip(gid0, old):
        await dev.write_reg(offset, word)
    assert await dev.read_reg(Reg.CNP_INTERVAL) == CNP_INTERVAL_RESET
    await rdma.finish()


@cocotb.test()
async def test_rings_wrap(dut):
    """Send queue, receive queue and both CQs of two entries each, reused for 12 rounds: the
    ring indices wrap six times and the CQ owner phase flips, every WR completes in order with
    its data."""
    rdma = await Rdma.open(dut)
    a, b = await rdma.connected_pair(QPType.RC, depth=2)
    assert (a.max_send_wr, b.max_recv_wr, a.send_cq.depth) == (2, 2, 4)
    local = await rdma.region(4096)
    remote = await rdma.region(4096)
    for k in range(12):
        await b.post_recv([RecvWR(remote.sge(256 * k, 64), wr_id=2 * k),
                           RecvWR(remote.sge(256 * k + 64, 64), wr_id=2 * k + 1)])
        await a.post_send([work_request(WROpcode.SEND, local.sge(128 * k, 64), wr_id=2 * k),
                           work_request(WROpcode.SEND_WITH_IMM, local.sge(128 * k + 64, 64),
                                        wr_id=2 * k + 1, imm=k)])
        assert [wc.wr_id for wc in await a.send_cq.wait(2)] == [2 * k, 2 * k + 1]
        assert [wc.wr_id for wc in await b.recv_cq.wait(2)] == [2 * k, 2 * k + 1]
        assert remote.read(256 * k, 128) == local.read(128 * k, 128)
    await rdma.finish()


@cocotb.test()
async def test_completion_event(dut):
    """A CQ raises irq only when armed: a completion on a disarmed CQ raises nothing; after
    req_notify the next completion raises irq with the CQ's EVENT bit (and no other), writing
    the bit clears it and irq falls, the arm was for one event only, and arming then writing
    0 to CQ_ARM_DB disarms."""
    rdma = await Rdma.open(dut)
    a, b = await rdma.connected_pair(QPType.RC)
    cq = a.send_cq
    local = await rdma.region(4096)
    remote = await rdma.region(4096)

    async def write(wr_id):
        await a.post_send(work_request(WROpcode.RDMA_WRITE, local.sge(0, 64), remote.remote(0),
                                       wr_id=wr_id))

    await write(1)
    assert [wc.wr_id for wc in await rdma.poll_until(cq, 1)] == [1]
    assert not await rdma.irq_within(500), "irq from a disarmed CQ"
    assert await rdma.dev.read_reg(Reg.EVENT) == 0

    await cq.req_notify()
    assert not await rdma.irq_within(500), "irq without a completion"
    await write(2)
    assert await rdma.irq_within(5000), "no irq for a completion on an armed CQ"
    assert await rdma.dev.read_reg(Reg.EVENT) == 1 << cq.cqn
    assert [wc.wr_id for wc in await cq.poll()] == [2]
    await rdma.dev.write_reg(Reg.EVENT, 1 << cq.cqn)
    await rdma.cycles(2)
    assert not rdma.dut.irq.value, "irq stayed high after the EVENT bit was cleared"
    assert await rdma.dev.read_reg(Reg.EVENT) == 0

    await write(3)
    assert [wc.wr_id for wc in await rdma.poll_until(cq, 1)] == [3]
    assert not await rdma.irq_within(500), "the arm fired twice"

    await cq.req_notify()
    await rdma.dev.write_reg(cq_arm_db(cq.cqn), 0)  # disarm
    await write(4)
    assert [wc.wr_id for wc in await rdma.poll_until(cq, 1)] == [4]
    assert not await rdma.irq_within(500), "irq from a disarmed CQ"
    await rdma.finish()


@cocotb.test()
async def test_solicited_event(dut):
    """A CQ armed for solicited completions only stays quiet for an unsolicited SEND's receive
    completion and a successful send completion, and raises irq for the receive completion of
    a SEND with SendFlags.SOLICITED and for an error completion."""
    rdma = await Rdma.open(dut)
    a, b = await rdma.connected_pair(QPType.RC)
    local = await rdma.region(4096)
    inbox = await rdma.region(4096)
    await b.post_recv([RecvWR(inbox.sge(0, 64), wr_id=0xB1), RecvWR(inbox.sge(64, 64), wr_id=0xB2)])

    await b.recv_cq.req_notify(solicited_only=True)
    await a.post_send(work_request(WROpcode.SEND, local.sge(0, 64), wr_id=0xA1))
    assert [wc.wr_id for wc in await rdma.poll_until(b.recv_cq, 1)] == [0xB1]
    assert not await rdma.irq_within(500), "irq for an unsolicited SEND"
    await a.post_send(work_request(WROpcode.SEND, local.sge(0, 64), wr_id=0xA2,
                                   flags=SIGNALED | SendFlags.SOLICITED))
    assert await rdma.irq_within(5000), "no irq for a solicited SEND"
    assert await rdma.dev.read_reg(Reg.EVENT) == 1 << b.recv_cq.cqn
    await rdma.dev.write_reg(Reg.EVENT, 1 << b.recv_cq.cqn)
    assert [wc.wr_id for wc in await b.recv_cq.poll()] == [0xB2]
    assert [wc.wr_id for wc in await rdma.poll_until(a.send_cq, 2)] == [0xA1, 0xA2]

    await a.send_cq.req_notify(solicited_only=True)
    await a.post_send(work_request(WROpcode.RDMA_WRITE, local.sge(0, 64), inbox.remote(512),
                                   wr_id=0xA3))
    assert [wc.wr_id for wc in await rdma.poll_until(a.send_cq, 1)] == [0xA3]
    assert not await rdma.irq_within(500), "irq for a successful send completion"
    bad = SGE(local.mr.addr, 64, unregistered_key(rdma.dev))
    await a.post_send(work_request(WROpcode.RDMA_WRITE, bad, inbox.remote(512), wr_id=0xA4))
    assert await rdma.irq_within(5000), "no irq for an error completion"
    assert await rdma.dev.read_reg(Reg.EVENT) == 1 << a.send_cq.cqn
    await rdma.finish()


async def pair_on_small_cq(rdma):
    """A CQ of 4 entries, an RC QP `a` whose queues both use it, connected to a QP with a CQ
    of its own, and two regions: (cq, a, local, remote)."""
    cq = await rdma.dev.create_cq(4)
    assert cq.depth == 4
    a = await rdma.qp(QPType.RC, cq, cq)
    b = await rdma.qp(QPType.RC)
    await rdma.connect(a, b.qp_num)
    await rdma.connect(b, a.qp_num)
    return cq, a, await rdma.region(4096), await rdma.region(4096)


@cocotb.test()
async def test_cq_overflow(dut):
    """Seven signaled WRs into a CQ of four entries, nothing polled while the device works:
    all seven execute, the first four CQEs are kept, the last three are dropped and counted in
    CQ_OVERFLOWS. Once polled, the CQ takes completions again across the ring's wrap."""
    rdma = await Rdma.open(dut)
    small, a, local, remote = await pair_on_small_cq(rdma)

    def write(k):
        return work_request(WROpcode.RDMA_WRITE, local.sge(64 * k, 64), remote.remote(64 * k),
                            wr_id=k)

    await a.post_send([write(k) for k in range(7)])
    await rdma.wait_sent(a, 7)
    moved = await rdma.counter_moves()
    assert moved.cq_overflows == 3, f"CQ_OVERFLOWS moved by {moved.cq_overflows}, expected 3"
    assert [wc.wr_id for wc in await small.poll()] == [0, 1, 2, 3]
    assert remote.read(0, 7 * 64) == local.read(0, 7 * 64), "a WR whose CQE was dropped did not run"

    await a.post_send([write(k) for k in range(7, 13)])  # CQEs 4..7: the ring wraps
    await rdma.wait_sent(a, 13)
    assert [wc.wr_id for wc in await small.poll()] == [7, 8, 9, 10], \
        "the CQ did not hold exactly 4 again"
    assert (await rdma.counter_moves()).cq_overflows == 5
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize(path=["bypass", "packets"])
async def test_cq_resize(dut, path):
    """RESIZE_CQ moves a CQ to a new ring with its unconsumed completions in order, on the
    bypass and through the packetizer: grown while two CQEs wait, grown again while eight
    messages are still running (each CQE lands in the old ring or the new, none lost or
    reordered), refused (BAD_PARAM) for a ring smaller than what is unconsumed, the CQ
    untouched; shrunk to exactly what is unconsumed, it is full, and the next CQE overflows.
    A CQ that does not exist is refused with BUSY, an index past NUM_CQ with BAD_INDEX."""
    rdma = await Rdma.open(dut)
    await rdma.dev.set_bypass(path == "bypass")
    cq, a, local, remote = await pair_on_small_cq(rdma)
    posted = 0

    async def write(n):
        nonlocal posted
        await a.post_send([work_request(WROpcode.RDMA_WRITE, local.sge(64 * (k % 64), 64),
                                        remote.remote(64 * (k % 64)), wr_id=k)
                           for k in range(posted, posted + n)])
        posted += n

    await write(3)
    await rdma.wait_sent(a, 3)
    assert [wc.wr_id for wc in await cq.poll(1)] == [0]
    await cq.resize(16)
    assert cq.depth == 16
    await write(8)
    await cq.resize(32)                     # while the eight run
    await rdma.wait_sent(a, posted)
    wcs = await cq.poll()
    assert [wc.wr_id for wc in wcs] == list(range(1, 11)), "completions lost or reordered"
    assert all(wc.status == WCStatus.SUCCESS for wc in wcs)

    await write(3)
    await rdma.wait_sent(a, posted)
    await assert_refused(CmdResult.BAD_PARAM, cq.resize(2), "a ring smaller than 3 CQEs")
    assert cq.depth == 32
    await cq.resize(4)
    await write(2)                          # 3 unconsumed + 1 fills the 4; the next overflows
    await rdma.wait_sent(a, posted)
    assert (await rdma.counter_moves()).cq_overflows == 1
    assert [wc.wr_id for wc in await cq.poll()] == [11, 12, 13, 14]
    assert remote.read(0, 64 * posted) == local.read(0, 64 * posted)

    nobody = free_index(rdma.dev.cqs, rdma.dev.num_cq)
    block = struct.pack("<QBxH", local.mr.addr, 2, 0)
    await assert_refused(CmdResult.BUSY, rdma.dev.command(Cmd.RESIZE_CQ, nobody, block),
                         "RESIZE_CQ of a CQ that does not exist")
    await assert_refused(CmdResult.BAD_INDEX,
                         rdma.dev.command(Cmd.RESIZE_CQ, rdma.dev.num_cq, block),
                         "RESIZE_CQ past NUM_CQ")
    await rdma.finish()


MW_REGION = ALL_ACCESS | Access.MW_BIND


async def mw_pair(rdma, cqs):
    """An RC pair on CQs `cqs`: a writes, b owns a region windows may be bound to (in the
    pair's PD)."""
    a, b = await rdma.connected_pair(QPType.RC, cqs=cqs)
    region = await rdma.region(4096, MW_REGION)
    return a, b, region


async def write_via(rdma, a, local, remote, length=64, wr_id=0xA1):
    await a.post_send(work_request(WROpcode.RDMA_WRITE, local.sge(0, length), remote,
                                   wr_id=wr_id))
    [wc] = await rdma.poll_until(a.send_cq, 1)
    return wc


@cocotb.test()
@cocotb.parametrize(path=["bypass", "packets"])
async def test_memory_windows(dut, path):
    """Memory windows on the bypass and through the packetizer (docs/host-interface.md,
    BIND_MW): a type 2 window bound by a BIND_MW work request (completion BIND_MW) takes RDMA
    WRITEs and READs through its new key inside its range with its rights, and refuses
    (REM_ACCESS_ERR) a write past its range, a READ it does not allow, its old key, and another
    QP than the one it is bound to (and a SEND with invalidate behind the refusal is flushed);
    LOCAL_INV (completion LOCAL_INV, on RC and UC; a UC bind without MW_BIND fails) and a SEND
    with invalidate (the receive completes WITH_INV, the rkey in imm_data) unbind it, after
    which its key is refused; a SEND with invalidate naming a region's key is delivered (the
    sender SUCCESS) and its receive completes REM_INV_REQ_ERR. A type 1 window answers any QP
    of its PD and is unbound by a bind of no bytes. A bind over a region without MW_BIND, or
    of a type 2 window bound already, completes MW_BIND_ERR; DEREG_MR of a region with a
    window bound is refused (BUSY) until the window is deallocated. Regions and windows share
    one key table: ALLOC_MW over a region, DEREG_MR of a window, DEALLOC_MW of a region or of
    nothing are BUSY; past NUM_MR BAD_INDEX; a window of type 3 BAD_PARAM."""
    rdma = await Rdma.open(dut)
    await rdma.dev.set_bypass(path == "bypass")
    local = await rdma.region(4096)
    # one CQ for the writers, one for the windows' side: the test makes many pairs
    cqs = (await rdma.dev.create_cq(64), await rdma.dev.create_cq(64))
    a, b, region = await mw_pair(rdma, cqs)
    mw = await rdma.pd.alloc_mw(2)
    window = region.sge(256, 1024)
    old_key = mw.rkey
    wc = await bind_window(rdma, b, mw, window, Access.REMOTE_WRITE | Access.REMOTE_READ)
    assert_wc(wc, wr_id=0xB1D, status=WCStatus.SUCCESS, opcode=WCOpcode.BIND_MW)
    assert mw.rkey != old_key and mw.rkey >> 8 == old_key >> 8

    wc = await write_via(rdma, a, local, mw.remote(region.mr.addr + 300), 100)
    assert_wc(wc, status=WCStatus.SUCCESS, opcode=WCOpcode.RDMA_WRITE)
    assert region.read(300, 100) == local.read(0, 100), "the write through the window missed"
    await a.post_send(rdma_read(local.sge(512, 64), mw.remote(region.mr.addr + 1216), wr_id=0xA2))
    [wc] = await rdma.poll_until(a.send_cq, 1)
    assert_wc(wc, status=WCStatus.SUCCESS, opcode=WCOpcode.RDMA_READ)
    assert local.read(512, 64) == region.read(1216, 64)

    # a LOCAL_INV from the window's QP: its key is refused afterwards
    await b.post_send(local_inv(mw.rkey, wr_id=0x1A))
    [wc] = await rdma.poll_until(b.send_cq, 1)
    assert_wc(wc, wr_id=0x1A, status=WCStatus.SUCCESS, opcode=WCOpcode.LOCAL_INV)
    wc = await write_via(rdma, a, local, mw.remote(region.mr.addr + 300))
    assert_wc(wc, status=WCStatus.REM_ACCESS_ERR)
    await a.post_send(send_with_inv(local.sge(0, 8), mw.rkey, wr_id=0xA6))   # a is in ERR
    [wc] = await rdma.poll_until(a.send_cq, 1)
    assert_wc(wc, wr_id=0xA6, status=WCStatus.WR_FLUSH_ERR)

    # bound again on a fresh pair; a SEND with invalidate unbinds it at the receiver
    a, b, region = await mw_pair(rdma, cqs)
    mw2 = await rdma.pd.alloc_mw(2)
    assert_wc(await bind_window(rdma, b, mw2, region.sge(0, 512), Access.REMOTE_WRITE),
              status=WCStatus.SUCCESS)
    await b.post_recv(RecvWR(region.sge(2048, 256), wr_id=0xB0B))
    await a.post_send(send_with_inv(local.sge(0, 40), mw2.rkey, wr_id=0xA3))
    [wc] = await rdma.poll_until(b.recv_cq, 1)
    assert_wc(wc, wr_id=0xB0B, status=WCStatus.SUCCESS, opcode=WCOpcode.RECV, byte_len=40,
              imm_data=mw2.rkey)
    assert wc.wc_flags & WCFlags.WITH_INV
    [wc] = await rdma.poll_until(a.send_cq, 1)
    assert_wc(wc, wr_id=0xA3, status=WCStatus.SUCCESS, opcode=WCOpcode.SEND)
    assert region.read(2048, 40) == local.read(0, 40)
    wc = await write_via(rdma, a, local, mw2.remote(region.mr.addr))
    assert_wc(wc, status=WCStatus.REM_ACCESS_ERR)

    # a SEND with invalidate naming a region's key: delivered and completed at the sender;
    # the receive completes REM_INV_REQ_ERR and the receiver goes to ERR
    a, b, region = await mw_pair(rdma, cqs)
    await assert_invalidation_refused(rdma, a, b, local, region)

    # what a bound type 2 window refuses (each on a pair of its own: the first refusal takes
    # both QPs to ERR): past its range, a right it does not give, its old key, another QP
    for what in ("past its range", "no READ right", "its old key", "another QP"):
        a, b, region = await mw_pair(rdma, cqs)
        mw3 = await rdma.pd.alloc_mw(2)
        stale = mw3.rkey
        assert_wc(await bind_window(rdma, b, mw3, region.sge(1024, 256), Access.REMOTE_WRITE),
                  status=WCStatus.SUCCESS)
        base = region.mr.addr + 1024
        if what == "another QP":
            a, _ = await rdma.connected_pair(QPType.RC, cqs=cqs)
        if what == "no READ right":
            await a.post_send(rdma_read(local.sge(0, 8), mw3.remote(base), wr_id=0xA1))
            [wc] = await rdma.poll_until(a.send_cq, 1)
        else:
            remote = {"past its range": mw3.remote(base + 200),
                      "its old key": RemoteAddr(base, stale)}.get(what, mw3.remote(base))
            wc = await write_via(rdma, a, local, remote)
        assert wc.status == WCStatus.REM_ACCESS_ERR, f"{what}: {wc}"

    # UC: a window bound and invalidated on a UC QP, written through in between
    a, b = await rdma.connected_pair(QPType.UC, cqs=cqs)
    region = await rdma.region(1024, MW_REGION)
    mw5 = await rdma.pd.alloc_mw(2)
    assert_wc(await bind_window(rdma, b, mw5, region.sge(0, 512), Access.REMOTE_WRITE),
              status=WCStatus.SUCCESS)
    assert_wc(await write_via(rdma, a, local, mw5.remote(region.mr.addr + 8)),
              status=WCStatus.SUCCESS)
    assert region.read(8, 64) == local.read(0, 64)
    await b.post_send(local_inv(mw5.rkey, wr_id=0x1B))
    [wc] = await rdma.poll_until(b.send_cq, 1)
    assert_wc(wc, wr_id=0x1B, status=WCStatus.SUCCESS, opcode=WCOpcode.LOCAL_INV)
    plain = await rdma.region(1024)
    wc = await bind_window(rdma, b, mw5, plain.sge(0, 64), Access.REMOTE_WRITE)
    assert_wc(wc, status=WCStatus.MW_BIND_ERR, opcode=WCOpcode.BIND_MW)  # no MW_BIND on it

    # type 1: any QP of the PD; a bind of no bytes unbinds it
    a, b, region = await mw_pair(rdma, cqs)
    mw1 = await rdma.pd.alloc_mw(1)
    assert_wc(await bind_window(rdma, b, mw1, region.sge(0, 2048), Access.REMOTE_WRITE),
              status=WCStatus.SUCCESS)
    c, _ = await rdma.connected_pair(QPType.RC, cqs=cqs)
    wc = await write_via(rdma, c, local, mw1.remote(region.mr.addr + 64))
    assert_wc(wc, status=WCStatus.SUCCESS)
    assert_wc(await bind_window(rdma, b, mw1, NO_SGE, Access(0)), status=WCStatus.SUCCESS)
    wc = await write_via(rdma, c, local, mw1.remote(region.mr.addr + 64))
    assert_wc(wc, status=WCStatus.REM_ACCESS_ERR)

    # binds that fail: a region without MW_BIND; a type 2 window bound already
    a, b = await rdma.connected_pair(QPType.RC, cqs=cqs)
    plain = await rdma.region(1024)
    mw4 = await rdma.pd.alloc_mw(2)
    wc = await bind_window(rdma, b, mw4, plain.sge(0, 64), Access.REMOTE_WRITE)
    assert_wc(wc, status=WCStatus.MW_BIND_ERR, opcode=WCOpcode.BIND_MW)
    a, b, region = await mw_pair(rdma, cqs)
    assert_wc(await bind_window(rdma, b, mw4, region.sge(0, 64), Access.REMOTE_WRITE),
              status=WCStatus.SUCCESS)
    wc = await bind_window(rdma, b, mw4, region.sge(0, 64), Access.REMOTE_WRITE)
    assert_wc(wc, status=WCStatus.MW_BIND_ERR)

    # a region with a window bound stays until the window goes
    await assert_refused(CmdResult.BUSY, region.mr.dereg(), "DEREG_MR under a bound window")
    await mw4.dealloc()
    await region.mr.dereg()

    # regions and windows share one key table: an index holds one or the other
    dev, free = rdma.dev, free_index(rdma.dev.mrs, rdma.dev.num_mr)
    block = struct.pack("<BxHB", 2, rdma.pd.pdn, 1)
    for command, index, result, what in (
            (Cmd.ALLOC_MW, local.mr.index, CmdResult.BUSY, "ALLOC_MW over a region"),
            (Cmd.DEREG_MR, mw.index, CmdResult.BUSY, "DEREG_MR of a window"),
            (Cmd.DEALLOC_MW, local.mr.index, CmdResult.BUSY, "DEALLOC_MW of a region"),
            (Cmd.DEALLOC_MW, free, CmdResult.BUSY, "DEALLOC_MW of nothing"),
            (Cmd.ALLOC_MW, dev.num_mr, CmdResult.BAD_INDEX, "ALLOC_MW past NUM_MR"),
            (Cmd.DEALLOC_MW, dev.num_mr, CmdResult.BAD_INDEX, "DEALLOC_MW past NUM_MR")):
        await assert_refused(result, dev.command(command, index, block), what)
    await assert_refused(CmdResult.BAD_PARAM,
                         dev.command(Cmd.ALLOC_MW, free, struct.pack("<BxHB", 3, rdma.pd.pdn, 1)),
                         "ALLOC_MW of type 3")
    await rdma.finish()


# Writes to addresses the register map does not list (holes between registers, a hole in a
# port block, past CMD_STATUS, after a GID table entry, the GID table of a port 3, between and
# past the SRQ doorbells).
UNLISTED = [0x001C, 0x0038, 0x00FC, 0x012C, 0x0448, 0x0818, 0x0C14, 0x0D00, 0x3004, 0x4000,
            0xFFFC]


@cocotb.test()
async def test_register_hygiene(dut):
    """Writes that address nothing change nothing and count in REG_ERRORS: SQ/RQ doorbells for
    QPNs beyond NUM_QP, CQ doorbells for CQNs beyond NUM_CQ and SRQ doorbells beyond NUM_SRQ
    (each chosen to alias a live QP, CQ or SRQ if only the low bits were decoded), registers
    of a port 3 that does not exist
    (aliasing port 1), and writes to unlisted addresses, which still read 0. The write-only
    registers (doorbells, CMD) read 0 even after use."""
    rdma = await Rdma.open(dut)
    dev = rdma.dev
    a, b = await rdma.connected_pair(QPType.RC)
    cq = a.send_cq
    srq = await rdma.pd.create_srq(4)
    port_regs = [await dev.read_reg(port_reg(p, r)) for p in (1, 2) for r in PortReg]

    await dev.write_reg(sq_db(dev.num_qp + a.qp_num), 1)
    await dev.write_reg(rq_db(dev.num_qp + b.qp_num), 1)
    await dev.write_reg(cq_ci_db(dev.num_cq + cq.cqn), 5)
    await dev.write_reg(cq_arm_db(dev.num_cq + cq.cqn), 1)
    await dev.write_reg(port_reg(3, PortReg.LID), 0x77)
    await dev.write_reg(port_reg(3, PortReg.LMC), 7)
    await dev.write_reg(srq_db(dev.num_srq + srq.srqn), 1)
    assert (await rdma.counter_moves()).reg_errors == 7
    for addr in UNLISTED:
        await dev.write_reg(addr, 0xFFFFFFFF)
    assert (await rdma.counter_moves()).reg_errors == 7 + len(UNLISTED)
    for addr in UNLISTED:
        assert await dev.read_reg(addr) == 0, f"unlisted address {addr:#06x} reads nonzero"

    assert [await dev.read_reg(port_reg(p, r)) for p in (1, 2) for r in PortReg] == port_regs
    assert ((await a.query()).sq_pi, (await b.query()).rq_pi, (await srq.query()).pi) == (0, 0, 0)
    local = await rdma.region(4096)
    remote = await rdma.region(4096)
    await a.post_send(work_request(WROpcode.RDMA_WRITE, local.sge(0, 64), remote.remote(0),
                                   wr_id=0xA1))
    [wc] = await rdma.poll_until(cq, 1)  # the CQ's consumer index was not moved to 5
    assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS)
    assert not await rdma.irq_within(500), "the out-of-range arm doorbell armed a CQ"
    for name, addr in [("SQ_DB", sq_db(a.qp_num)), ("RQ_DB", rq_db(b.qp_num)),
                       ("CQ_CI_DB", cq_ci_db(cq.cqn)), ("CQ_ARM_DB", cq_arm_db(cq.cqn)),
                       ("SRQ_DB", srq_db(srq.srqn)), ("CMD", Reg.CMD)]:
        assert await dev.read_reg(addr) == 0, f"write-only {name} reads nonzero"
    await rdma.finish()


@cocotb.test()
async def test_doorbells_that_cannot_run_are_ignored_and_counted(dut):
    """An SQ or RQ doorbell is ignored and counted in REG_ERRORS when its QP cannot take it: a
    QPN with no QP, a QP in RESET (a valid WQE waits in its ring, and does not run once the QP
    reaches RTS), a producer index past the ring's free entries, or one that moves back (which
    would make the ring look 65,535 WQEs full and run completed WQEs again). The indices stay,
    nothing runs, and the QP's next WRs run once each."""
    rdma = await Rdma.open(dut)
    dev = rdma.dev
    a, b = await rdma.connected_pair(QPType.RC)
    local, remote = await rdma.region(4096), await rdma.region(4096)
    lonely = await rdma.qp(QPType.RC)           # in RESET, a WRITE ready in its ring slot 0
    dev.write(lonely.sq.slot(0), encode_send_wqe(
        work_request(WROpcode.RDMA_WRITE, local.sge(256, 64), remote.remote(256), wr_id=0xBAD)))
    nobody = free_index(dev.qps, dev.num_qp, first=2)
    refused = [(sq_db(lonely.qp_num), 1), (rq_db(lonely.qp_num), 1),
               (sq_db(nobody), 1), (rq_db(nobody), 1),
               (sq_db(a.qp_num), a.sq.size + 1), (rq_db(b.qp_num), b.rq.size + 1)]
    for offset, value in refused:
        await dev.write_reg(offset, value)
    assert (await rdma.counter_moves()).reg_errors == len(refused)
    status = await lonely.query()
    assert (status.sq_pi, status.rq_pi) == (0, 0)
    assert ((await a.query()).sq_pi, (await b.query()).rq_pi) == (0, 0)

    # two WRITEs run once each; a producer index moved back is then refused on both queues
    for i in range(2):
        await b.post_recv(RecvWR(remote.sge(1024 + 64 * i, 64), wr_id=0xB0 + i))
        await a.post_send(work_request(WROpcode.RDMA_WRITE, local.sge(64 * i, 64),
                                       remote.remote(64 * i), wr_id=0xA0 + i))
    wcs = await rdma.poll_until(a.send_cq, 2)
    assert [wc.wr_id for wc in wcs] == [0xA0, 0xA1]
    await dev.write_reg(sq_db(a.qp_num), 1)
    await dev.write_reg(rq_db(b.qp_num), 1)
    assert (await rdma.counter_moves()).reg_errors == len(refused) + 2
    assert ((await a.query()).sq_pi, (await b.query()).rq_pi) == (2, 2)

    # the lonely QP reaches RTS: the WRITE the ignored doorbell pointed at does not run
    await rdma.connect(lonely, b.qp_num)
    # ... and the pair goes on from where it was: one more WRITE, once
    await a.post_send(work_request(WROpcode.RDMA_WRITE, local.sge(128, 64), remote.remote(128),
                                   wr_id=0xA2))
    [wc] = await rdma.poll_until(a.send_cq, 1)
    assert_wc(wc, wr_id=0xA2, status=WCStatus.SUCCESS)
    await rdma.cycles(1000)
    assert await lonely.send_cq.poll() == [] and (await lonely.query()).sq_ci == 0
    assert (await rdma.counter_moves()).lb_msgs == 3
    await rdma.finish()


async def assert_refused(result, command, what):
    """The device refuses `command` (an awaitable running one command) with `result` (or one
    of a tuple of results)."""
    results = result if isinstance(result, tuple) else (result,)
    names = " or ".join(r.name for r in results)
    try:
        await command
    except CommandError as e:
        assert e.result in results, f"{what}: refused with {e.result!r}, expected {names}"
    else:
        raise AssertionError(f"{what}: accepted, expected a refusal with {names}")


LEGAL_FROM = {  # host-interface.md, besides any -> RESET and any -> ERR
    QPState.RESET: {QPState.INIT},
    QPState.INIT: {QPState.INIT, QPState.RTR},
    QPState.RTR: {QPState.RTS},
    QPState.RTS: {QPState.RTS},
    QPState.ERR: set(),
}


@cocotb.test()
async def test_illegal_qp_transitions(dut):
    """MODIFY_QP refuses every transition the host interface does not list with BAD_STATE and
    a port that does not exist with BAD_PARAM, and the QP keeps its state; walking the legal
    path RESET -> INIT -> RTR -> RTS -> ERR -> RESET -> ... RTS afterwards, the QP carries
    traffic."""
    rdma = await Rdma.open(dut)
    a = await rdma.qp(QPType.RC)
    b = await rdma.qp(QPType.RC)
    await rdma.connect(b, a.qp_num)

    async def refuse_illegal(state):
        for target in set(QPState) - LEGAL_FROM[state] - {QPState.RESET, QPState.ERR}:
            await assert_refused(CmdResult.BAD_STATE, a.modify(target),
                                 f"MODIFY_QP {state.name} -> {target.name}")
            await rdma.assert_state(a, state)

    await refuse_illegal(QPState.RESET)
    for port in (0, 3):
        await assert_refused(CmdResult.BAD_PARAM, a.modify(QPState.INIT, port_num=port),
                             f"MODIFY_QP RESET -> INIT on port {port}")
        await rdma.assert_state(a, QPState.RESET)
    await a.modify(QPState.INIT, port_num=1, qp_access_flags=ALL_ACCESS)
    await refuse_illegal(QPState.INIT)
    await a.modify(QPState.INIT)
    await assert_refused(CmdResult.BAD_PARAM, a.modify(QPState.INIT, port_num=3),
                         "MODIFY_QP INIT -> INIT on port 3")
    await a.modify(QPState.RTR, dest_qp_num=b.qp_num,
                   ah_attr=AHAttr(rdma.own_lid(1), grh=rdma.route(1, rdma.own_lid(1))))
    await refuse_illegal(QPState.RTR)
    await a.modify(QPState.RTS)
    await refuse_illegal(QPState.RTS)
    await a.modify(QPState.RTS)
    await a.modify(QPState.ERR)
    await refuse_illegal(QPState.ERR)
    await a.modify(QPState.ERR)
    await a.modify(QPState.RESET)
    await rdma.connect(a, b.qp_num)

    local = await rdma.region(4096)
    remote = await rdma.region(4096)
    await a.post_send(work_request(WROpcode.RDMA_WRITE, local.sge(0, 64), remote.remote(0),
                                   wr_id=0xA1))
    [wc] = await a.send_cq.wait(1)
    assert_wc(wc, wr_id=0xA1, status=WCStatus.SUCCESS)
    assert remote.read(0, 64) == local.read(0, 64)
    await rdma.finish()


def cq_block(ring, log2):
    return struct.pack("<QB", ring, log2)


def mr_block(host, length, access, pd):
    return struct.pack("<QIBBHQ", host, length, 0x11, access, pd, host)


def ah_block(port, pd, dlid=0x10):
    return struct.pack("<HBBBBBBIBxH16s", dlid, 0, 0, 0, 0, port, 64, 0, 0, pd, bytes(16))


def qp_block(qp_type, pd, cqn, ring, sq_log=2, rq_log=2, sq_offset=0):
    return struct.pack("<BxHHHBB6xQQ", qp_type, pd, cqn, cqn, sq_log, rq_log, ring + sq_offset,
                       ring + 1024)


@cocotb.test()
async def test_destroyed_objects_free_their_numbers(dut):
    """DESTROY_QP, DESTROY_AH, DEREG_MR, DESTROY_CQ and DESTROY_SRQ answer OK and free their
    numbers: the driver gets the same numbers again, and a WRITE and a SEND (into the new
    SRQ) through the new QPs, CQ and MR land."""
    rdma = await Rdma.open(dut)
    dev, pd = rdma.dev, rdma.pd
    cq = await dev.create_cq(16)
    srq = await pd.create_srq(4)
    a, b = await pd.create_qp(QPType.RC, cq, cq), await pd.create_qp(QPType.RC, cq, cq, srq=srq)
    ah = await pd.create_ah(1, dev.ports[1].lid, grh=rdma.route(1, dev.ports[1].lid))
    region = await rdma.region(4096)
    numbers = (cq.cqn, a.qp_num, b.qp_num, ah.ahn, region.mr.index, srq.srqn)
    for qp in (a, b):
        await qp.destroy()
    await srq.destroy()
    await ah.destroy()
    await region.mr.dereg()
    await cq.destroy()

    cq = await dev.create_cq(16)
    srq = await pd.create_srq(4)
    a, b = await pd.create_qp(QPType.RC, cq, cq), await pd.create_qp(QPType.RC, cq, cq, srq=srq)
    ah = await pd.create_ah(1, dev.ports[1].lid, grh=rdma.route(1, dev.ports[1].lid))
    region = await rdma.region(4096)
    assert (cq.cqn, a.qp_num, b.qp_num, ah.ahn, region.mr.index, srq.srqn) == numbers
    await connect(a, b, port_a=1)
    await srq.post_recv(RecvWR(region.sge(3072, 100), wr_id=9))
    await a.post_send([work_request(WROpcode.RDMA_WRITE, region.sge(0, 100), region.remote(2048),
                                    wr_id=7),
                       work_request(WROpcode.SEND, region.sge(0, 100), wr_id=8)])
    wcs = await rdma.poll_until(cq, 3)
    assert sorted((wc.wr_id, wc.status) for wc in wcs) == [(7, WCStatus.SUCCESS),
                                                          (8, WCStatus.SUCCESS),
                                                          (9, WCStatus.SUCCESS)]
    assert region.read(2048, 100) == region.read(0, 100) == region.read(3072, 100)
    await rdma.finish()


@cocotb.test()
async def test_command_refusals(dut):
    """Commands naming an index beyond the device's (or a reserved QPN), carrying a bad
    parameter, or creating an object that exists / destroying one that does not, are refused
    with BAD_INDEX, BAD_PARAM and BUSY; they create nothing (the free indices are still free)
    and break nothing (the existing QPs, CQs and MRs still carry traffic)."""
    rdma = await Rdma.open(dut)
    dev, pd = rdma.dev, rdma.pd.pdn
    a, b = await rdma.connected_pair(QPType.RC)
    local = await rdma.region(4096)
    remote = await rdma.region(4096)
    ah = await rdma.loopback_ah()
    cqn = a.send_cq.cqn
    ring = dev.alloc(4096, align=4096, label="rings for refused commands")
    qpn, free_cq = free_index(dev.qps, dev.num_qp, 2), free_index(dev.cqs, dev.num_cq)
    mrn, ahn = free_index(dev.mrs, dev.num_mr), free_index(dev.ahs, dev.num_ah)
    rc = QPType.RC
    refusals = [
        (CmdResult.BAD_INDEX, Cmd.CREATE_QP, 0, qp_block(rc, pd, cqn, ring), "reserved QPN 0"),
        (CmdResult.BAD_INDEX, Cmd.CREATE_QP, 1, qp_block(rc, pd, cqn, ring), "reserved QPN 1"),
        (CmdResult.BAD_INDEX, Cmd.CREATE_QP, dev.num_qp, qp_block(rc, pd, cqn, ring), "QPN"),
        (CmdResult.BAD_INDEX, Cmd.MODIFY_QP, dev.num_qp, b"", "QPN"),
        (CmdResult.BAD_INDEX, Cmd.QUERY_QP, dev.num_qp, b"", "QPN"),
        (CmdResult.BAD_INDEX, Cmd.DESTROY_QP, dev.num_qp, b"", "QPN"),
        (CmdResult.BUSY, Cmd.CREATE_QP, a.qp_num, qp_block(rc, pd, cqn, ring), "existing QP"),
        (CmdResult.BUSY, Cmd.MODIFY_QP, qpn, b"", "no such QP"),
        (CmdResult.BUSY, Cmd.QUERY_QP, qpn, b"", "no such QP"),
        (CmdResult.BUSY, Cmd.DESTROY_QP, qpn, b"", "no such QP"),
        (CmdResult.BAD_PARAM, Cmd.CREATE_QP, qpn, qp_block(1, pd, cqn, ring), "QP type 1"),
        (CmdResult.BAD_PARAM, Cmd.CREATE_QP, qpn, qp_block(5, pd, cqn, ring), "QP type 5"),
        (CmdResult.BAD_PARAM, Cmd.CREATE_QP, qpn, qp_block(rc, pd, dev.num_cq, ring), "CQN"),
        (CmdResult.BAD_PARAM, Cmd.CREATE_QP, qpn, qp_block(rc, pd, cqn, ring, sq_log=0), "log2 0"),
        (CmdResult.BAD_PARAM, Cmd.CREATE_QP, qpn, qp_block(rc, pd, cqn, ring, rq_log=16),
         "log2 16"),
        (CmdResult.BAD_PARAM, Cmd.CREATE_QP, qpn, qp_block(rc, pd, cqn, ring, sq_offset=32),
         "send ring not 64-byte aligned"),
        (CmdResult.BAD_INDEX, Cmd.CREATE_CQ, dev.num_cq, cq_block(ring, 2), "CQN"),
        (CmdResult.BAD_INDEX, Cmd.DESTROY_CQ, dev.num_cq, b"", "CQN"),
        (CmdResult.BUSY, Cmd.CREATE_CQ, cqn, cq_block(ring, 2), "existing CQ"),
        (CmdResult.BUSY, Cmd.DESTROY_CQ, free_cq, b"", "no such CQ"),
        (CmdResult.BAD_PARAM, Cmd.CREATE_CQ, free_cq, cq_block(ring, 0), "log2 0"),
        (CmdResult.BAD_PARAM, Cmd.CREATE_CQ, free_cq, cq_block(ring, 16), "log2 16"),
        (CmdResult.BAD_PARAM, Cmd.CREATE_CQ, free_cq, cq_block(ring + 16, 2),
         "ring not 32-byte aligned"),
        (CmdResult.BAD_INDEX, Cmd.REG_MR, dev.num_mr, mr_block(ring, 64, 1, pd), "MR index"),
        (CmdResult.BAD_INDEX, Cmd.DEREG_MR, dev.num_mr, b"", "MR index"),
        (CmdResult.BUSY, Cmd.REG_MR, local.mr.index, mr_block(ring, 64, 1, pd), "existing MR"),
        (CmdResult.BUSY, Cmd.DEREG_MR, mrn, b"", "no such MR"),
        (CmdResult.BAD_PARAM, Cmd.REG_MR, mrn, mr_block(ring, 64, Access.REMOTE_WRITE, pd),
         "REMOTE_WRITE without LOCAL_WRITE"),
        (CmdResult.BAD_PARAM, Cmd.REG_MR, mrn, mr_block(ring, 64, Access.REMOTE_ATOMIC, pd),
         "REMOTE_ATOMIC without LOCAL_WRITE"),
        (CmdResult.BAD_INDEX, Cmd.CREATE_AH, dev.num_ah, ah_block(1, pd), "AH number"),
        (CmdResult.BAD_INDEX, Cmd.DESTROY_AH, dev.num_ah, b"", "AH number"),
        (CmdResult.BUSY, Cmd.CREATE_AH, ah.ahn, ah_block(1, pd), "existing AH"),
        (CmdResult.BUSY, Cmd.DESTROY_AH, ahn, b"", "no such AH"),
        (CmdResult.BAD_PARAM, Cmd.CREATE_AH, ahn, ah_block(0, pd), "port 0"),
        (CmdResult.BAD_PARAM, Cmd.CREATE_AH, ahn, ah_block(3, pd), "port 3"),
    ]
    for result, cmd, index, block, why in refusals:
        await assert_refused(result, dev.command(cmd, index, block),
                             f"{cmd.name} {index} ({why})")
    for cmd, index in ((Cmd.QUERY_QP, qpn), (Cmd.DESTROY_CQ, free_cq), (Cmd.DEREG_MR, mrn),
                       (Cmd.DESTROY_AH, ahn)):
        await assert_refused(CmdResult.BUSY, dev.command(cmd, index),
                             f"{cmd.name} {index}: a refused command created it")

    await b.post_recv(RecvWR(remote.sge(1024, 64), wr_id=0xB1))
    await a.post_send([work_request(WROpcode.RDMA_WRITE, local.sge(0, 64), remote.remote(0),
                                    wr_id=0xA1),
                       work_request(WROpcode.SEND, local.sge(64, 64), wr_id=0xA2)])
    wcs = await a.send_cq.wait(2)
    assert [(wc.wr_id, wc.status) for wc in wcs] == [(0xA1, WCStatus.SUCCESS),
                                                     (0xA2, WCStatus.SUCCESS)]
    [rwc] = await b.recv_cq.wait(1)
    assert_wc(rwc, wr_id=0xB1, status=WCStatus.SUCCESS, byte_len=64)
    assert remote.read(0, 64) == local.read(0, 64)
    assert remote.read(1024, 64) == local.read(64, 64)
    await rdma.finish()


class BadRequest(Enum):
    UC_RDMA_READ = "RDMA READ on a UC QP"
    UD_RDMA_WRITE = "RDMA WRITE on a UD QP"
    UD_RDMA_WRITE_WITH_IMM = "RDMA WRITE with immediate on a UD QP"
    UD_RDMA_READ = "RDMA READ on a UD QP"
    UNKNOWN_OPCODE = "opcode 12, which no transport has"
    UC_UNKNOWN_OPCODE = "opcode 12 on a UC QP"
    UD_UNKNOWN_OPCODE = "opcode 12 on a UD QP"
    UC_SEND_WITH_INV = "SEND with invalidate on a UC QP"
    UD_SEND_WITH_INV = "SEND with invalidate on a UD QP"
    UD_BIND_MW = "BIND_MW on a UD QP"
    UD_LOCAL_INV = "LOCAL_INV on a UD QP"
    UD_AH_NEVER_CREATED = "an AH number that names no AH"
    UD_AH_OUT_OF_RANGE = "a live AH's number plus NUM_AH"
    UD_AH_OF_OTHER_PD = "an AH of another PD"
    UD_AH_OF_OTHER_PORT = "an AH for port 2, on a QP of port 1"
    UD_LONGER_THAN_MTU = "257 bytes over a port whose active MTU is 256"


@cocotb.test()
@cocotb.parametrize(request=list(BadRequest))
async def test_requester_refuses(dut, request):
    """The requester checks before the lkey: an opcode the transport does not have, or a UD
    AH that is missing, out of range, of another PD or of another port, completes
    LOC_QP_OP_ERR; a UD
    message longer than the port's active MTU completes LOC_LEN_ERR (one of exactly the MTU
    goes through). Nothing moves, the QP goes to ERR and flushes what follows."""
    rdma = await Rdma.open(dut)
    local = await rdma.region(4096)
    remote = await rdma.region(4096)
    memory = remote.read()
    status, moved = WCStatus.LOC_QP_OP_ERR, (0, 0)
    if request in (BadRequest.UC_RDMA_READ, BadRequest.UNKNOWN_OPCODE,
                   BadRequest.UC_UNKNOWN_OPCODE, BadRequest.UC_SEND_WITH_INV):
        a, b = await rdma.connected_pair(QPType.RC if request == BadRequest.UNKNOWN_OPCODE
                                         else QPType.UC)
        opcode = {BadRequest.UC_RDMA_READ: WROpcode.RDMA_READ,
                  BadRequest.UC_SEND_WITH_INV: WROpcode.SEND_WITH_INV}.get(request, 12)
        wr = work_request(opcode, local.sge(0, 64), remote.remote(0), wr_id=0xA1)
    else:
        a, b = await rdma.ud_qp(), await rdma.ud_qp()
        if request == BadRequest.UD_AH_NEVER_CREATED:
            ah = free_index(rdma.dev.ahs, rdma.dev.num_ah)
        elif request == BadRequest.UD_AH_OUT_OF_RANGE:
            ah = (await rdma.loopback_ah()).ahn + rdma.dev.num_ah
        elif request == BadRequest.UD_AH_OF_OTHER_PD:
            ah = await rdma.dev.alloc_pd().create_ah(1, rdma.own_lid(1),
                                                     grh=rdma.route(1, rdma.own_lid(1)))
        elif request == BadRequest.UD_AH_OF_OTHER_PORT:
            ah = await rdma.loopback_ah(port=2)
        else:
            ah = await rdma.loopback_ah()
        opcode = {BadRequest.UD_RDMA_WRITE: WROpcode.RDMA_WRITE,
                  BadRequest.UD_RDMA_WRITE_WITH_IMM: WROpcode.RDMA_WRITE_WITH_IMM,
                  BadRequest.UD_RDMA_READ: WROpcode.RDMA_READ,
                  BadRequest.UD_BIND_MW: WROpcode.BIND_MW,
                  BadRequest.UD_LOCAL_INV: WROpcode.LOCAL_INV,
                  BadRequest.UD_SEND_WITH_INV: WROpcode.SEND_WITH_INV,
                  BadRequest.UD_UNKNOWN_OPCODE: 12}.get(request, WROpcode.SEND)
        length = 64
        if request == BadRequest.UD_LONGER_THAN_MTU:
            port = rdma.dev.ports[1]
            await rdma.dev.set_port(1, port.lid, port.lmc, port.gid, mtu=MTU.MTU256)
            await b.post_recv(RecvWR(remote.sge(0, GRH_BYTES + 256), wr_id=0xB1))
            await a.post_send(ud_send(local.sge(0, 256), ah, b.qp_num, QKEY, wr_id=0xA0))
            [wc] = await a.send_cq.wait(1)
            assert_wc(wc, wr_id=0xA0, status=WCStatus.SUCCESS)  # exactly the MTU is fine
            memory = remote.read()
            status, moved, length = WCStatus.LOC_LEN_ERR, (1, 256), 257
        wr = SendWR(opcode, local.sge(0, length), 0xA1, SIGNALED, 0, remote.mr.addr,
                    remote.mr.rkey, ah, b.qp_num, QKEY)

    await a.post_send(wr)
    [wc] = await a.send_cq.wait(1)
    fields = error_wc_fields(0xA1, status, SEND_WC_OPCODE.get(opcode), a)
    if opcode not in SEND_WC_OPCODE:
        del fields["opcode"]  # the contract names no completion opcode for an unknown one
    assert_wc(wc, **fields)
    await assert_flushes(rdma, a)
    assert remote.read() == memory
    await rdma.assert_loopback_moves(*moved)
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC, QPType.UD])
async def test_refused_and_flushed_wrs_of_any_size_move_nothing(dut, transport):
    """A WR the requester refuses and the WRs posted behind it, which are flushed, move
    nothing whatever their size: RC exactly the path MTU with an lkey that names no MR
    (LOC_PROT_ERR), UC 2^31 + 1 bytes over two SGEs (LOC_LEN_ERR, before any key is looked
    at), UD 1 MiB, over the port's MTU (LOC_LEN_ERR); then 1 byte, exactly the path (UD: port)
    MTU and 1 MiB + 1 (WR_FLUSH_ERR)."""
    rdma = await Rdma.open(dut)
    bogus = unregistered_key(rdma.dev)
    if transport == QPType.UD:
        a, b = await rdma.ud_qp(), await rdma.ud_qp()
        ah = await rdma.loopback_ah()
        mtu = rdma.dev.ports[1].mtu.size
        wrs = [ud_send(SGE(0x1000, n, bogus), ah, b.qp_num, QKEY, wr_id=i)
               for i, n in enumerate((MIB, 1, mtu, MIB + 1))]
        status = WCStatus.LOC_LEN_ERR
    else:
        a, b = await rdma.connected_pair(transport, path_mtu=MTU.MTU1024, sges=2)
        wrs = [work_request(WROpcode.RDMA_WRITE, SGE(0x1000, n, bogus), RemoteAddr(0x2000, bogus),
                            wr_id=i) for i, n in enumerate((1024, 1, 1024, MIB + 1))]
        status = WCStatus.LOC_PROT_ERR
        if transport == QPType.UC:
            wrs[0] = replace(wrs[0], sge=(SGE(0x1000, 1 << 30, bogus),
                                          SGE(0x1000, (1 << 30) + 1, bogus)))
            status = WCStatus.LOC_LEN_ERR
    await a.post_send(wrs)
    wcs = await wait_all(a.send_cq, len(wrs))
    assert [(wc.wr_id, wc.status) for wc in wcs] == (
        [(0, status)] + [(i, WCStatus.WR_FLUSH_ERR) for i in range(1, len(wrs))])
    await rdma.assert_state(a, QPState.ERR)
    await rdma.assert_loopback_moves(0, 0)
    await rdma.finish()


# ---------------------------------------------------------------------------------------------
# 7. The TX links under heavy loopback traffic

@cocotb.test()
async def test_port_counters_load_clear_and_loopback_moves_none(dut):
    """Every PMA counter of both ports reads zero after reset, takes a value loaded through its
    register (all-ones too, as a saturation test starts), clears per port, ignores writes to
    its reserved words (counted in REG_ERRORS), and does not move under loopback traffic of
    every opcode."""
    rdma = await Rdma.open(dut)
    dev = rdma.dev
    loaded = {}
    for port in (1, 2):
        assert set((await dev.port_counters(port)).values()) == {0}, f"port {port} after reset"
        loaded[port] = {c: ((1 << c.bits) - 1) - port * (i + 1) for i, c in enumerate(COUNTERS)}
        loaded[port][COUNTERS[0]] = 0xFFFFFFFF   # all-ones, where saturation starts
        for counter, value in loaded[port].items():
            await dev.load_port_counter(port, counter, value)
        assert await dev.port_counters(port) == loaded[port], f"port {port} after loading"
    for reserved in (6, 7, 23, 30):
        await dev.write_reg(port_counter_reg(1, reserved), 0x1234)
        assert await dev.read_reg(port_counter_reg(1, reserved)) == 0
    await dev.write_reg(port_counter_reg(3, 0), 0x1234)   # no port 3
    assert (await rdma.counter_moves()).reg_errors == 5

    for port in (1, 2):
        a, b = await rdma.connected_pair(QPType.RC, port=port)
        local, remote = await rdma.region(8192), await rdma.region(8192)
        await b.post_recv(RecvWR(remote.sge(0, 4096), wr_id=1))
        await a.post_send([work_request(op, local.sge(0, 3000), remote.remote(4096), wr_id=op)
                           for op in (WROpcode.SEND, WROpcode.RDMA_WRITE, WROpcode.RDMA_READ)])
        await a.send_cq.wait(3)
        await b.recv_cq.wait(1)
    for port in (1, 2):
        assert await dev.port_counters(port) == loaded[port], \
            f"port {port}'s counters moved under loopback traffic"
    await dev.clear_port_counters(2)
    assert set((await dev.port_counters(2)).values()) == {0}
    assert await dev.port_counters(1) == loaded[1], "clearing port 2 touched port 1"
    await rdma.finish()


@cocotb.test()
async def test_tx_links_idle_under_loopback_load(dut):
    """Mixed loopback traffic on both ports at once (an RC, a UC and a UD pair on port 1 and on
    port 2, as many of the six as the device has QPs for, 16 WRs each, all posted before any
    completion is polled): every message completes in order and lands, LB_MSGS/LB_BYTES count
    exactly these messages, and neither port's TX link ever offers a beat."""
    rdma = await Rdma.open(dut)
    send_cq = await rdma.dev.create_cq(128)
    recv_cq = await rdma.dev.create_cq(128)
    traffics = []
    pairs = [(1, QPType.RC), (2, QPType.UC), (1, QPType.UD), (2, QPType.RC), (1, QPType.UC),
             (2, QPType.UD)][:(rdma.dev.num_qp - 2) // 2]
    for port, transport in pairs:
        if transport == QPType.UD:
            a, b = await rdma.ud_qp(port, cq=send_cq), await rdma.ud_qp(port, cq=recv_cq)
            ah = await rdma.loopback_ah(port)
        else:
            a, b = await rdma.connected_pair(transport, port, cqs=(send_cq, recv_cq))
            ah = None
        t = await Traffic.create(rdma, a, b, 16, ah)
        t.add_mix(16, DATA_OPCODES[transport],
                  [1 + (389 * k + 71 * port + 13 * transport) % MAX_LENGTH for k in range(16)])
        traffics.append(t)
    for t in traffics:
        await t.post()

    groups = by_qp(await wait_all(send_cq, 16 * len(pairs)))
    rgroups = by_qp(await wait_all(recv_cq, sum(len(t.received) for t in traffics)))
    for t in traffics:
        assert [(wc.wr_id, wc.status) for wc in groups[t.a.qp_num]] == [
            (wr_id, WCStatus.SUCCESS) for wr_id in t.signaled]
        assert [(wc.wr_id, wc.status) for wc in rgroups.get(t.b.qp_num, [])] == [
            (wr_id, WCStatus.SUCCESS) for wr_id in t.received]
        t.check_landed()
    await rdma.assert_loopback_moves(16 * len(pairs), sum(t.bytes for t in traffics))
    for port in (1, 2):
        assert rdma.tb.tx_beats(port) == 0, \
            f"port {port}'s TX link offered {rdma.tb.tx_beats(port)} beats"
    await rdma.finish()


# ---------------------------------------------------------------------------------------------
# 8. Host memory that fails

class HostFault(Enum):
    WQE = "the second WR's WQE"
    SOURCE = "bytes the second WR's data is read from"
    DESTINATION = "bytes the second WR's data is written to"


@cocotb.test()
@cocotb.parametrize(where=list(HostFault), opcode=[WROpcode.RDMA_WRITE, WROpcode.RDMA_READ])
async def test_host_memory_errors_complete_general_err(dut, where, opcode):
    """Host memory answers SLVERR to 64 bytes under the second of two loopback RC messages:
    its WQE, or bytes in the middle of what it reads or writes. The first message completes
    SUCCESS with its bytes in place; the second completes GENERAL_ERR (with wr_id 0 when its
    WQE could not be read: the device never saw it), the QP goes to ERR and a
    WR posted after it is flushed; nothing lands outside what the WRs name (the second's
    destination is left undecided). Healed, the memory serves a new QP pair."""
    rdma = await Rdma.open(dut)
    a, b = await rdma.connected_pair(QPType.RC)
    src, dst = await rdma.region(2048), await rdma.region(2048)

    def wr(k):
        return work_request(opcode, src.sge(1024 * k, 1000), dst.remote(1024 * k),
                            wr_id=0x10 + k)

    read_from, written = (src, dst) if opcode == WROpcode.RDMA_WRITE else (dst, src)
    window = {HostFault.WQE: (a.sq.slot(1), a.sq.stride),
              HostFault.SOURCE: (read_from.mr.host_addr + 1024 + 200, 64),
              HostFault.DESTINATION: (written.mr.host_addr + 1024 + 200, 64)}[where]
    rdma.host_memory_fails(*window)
    await a.post_send([wr(0), wr(1)])
    wcs = await rdma.poll_until(a.send_cq, 2)
    # a WQE the device could not read completes as an all-zero one: wr_id 0
    unread = 0 if where == HostFault.WQE else 0x11
    assert [(wc.wr_id, wc.status) for wc in wcs] == \
        [(0x10, WCStatus.SUCCESS), (unread, WCStatus.GENERAL_ERR)], f"{where.value} failed: {wcs}"
    assert rdma.tb.mem.faults > 0, "the device never touched the failing bytes"
    await rdma.assert_state(a, QPState.ERR)
    await a.post_send(wr(0))
    [wc] = await rdma.poll_until(a.send_cq, 1)
    assert_wc(wc, wr_id=0x10, status=WCStatus.WR_FLUSH_ERR)

    rdma.host_memory_fails()
    c, d = await rdma.connected_pair(QPType.RC)
    await c.post_send(wr(1))
    [wc] = await rdma.poll_until(c.send_cq, 1)
    assert_wc(wc, wr_id=0x11, status=WCStatus.SUCCESS)
    await rdma.finish()


@cocotb.test()
@cocotb.parametrize(transport=[QPType.UC, QPType.UD])
async def test_an_unreadable_wqe_completes_general_err_on_uc_and_ud(dut, transport):
    """UC and UD fetch their WQEs as RC does: host memory answering SLVERR under the second
    WQE completes it GENERAL_ERR with wr_id 0 after the first message, and the QP goes to ERR."""
    rdma = await Rdma.open(dut)
    src, dst = await rdma.region(2048), await rdma.region(2048)
    if transport == QPType.UD:
        a, b = await rdma.ud_qp(), await rdma.ud_qp()
        ah = await rdma.loopback_ah()
        await b.post_recv(RecvWR(dst.sge(0, 1024), wr_id=0x20))
        wrs = [ud_send(src.sge(0, 100), ah, b.qp_num, QKEY, wr_id=0x10 + k) for k in range(2)]
    else:
        a, b = await rdma.connected_pair(transport)
        wrs = [work_request(WROpcode.RDMA_WRITE, src.sge(1024 * k, 100), dst.remote(1024 * k),
                            wr_id=0x10 + k) for k in range(2)]
    rdma.host_memory_fails(a.sq.slot(1), a.sq.stride)
    await a.post_send(wrs)
    wcs = await rdma.poll_until(a.send_cq, 2)
    assert [(wc.wr_id, wc.status) for wc in wcs] == \
        [(0x10, WCStatus.SUCCESS), (0, WCStatus.GENERAL_ERR)], f"{wcs}"
    await rdma.assert_state(a, QPState.ERR)
    rdma.host_memory_fails()
    await rdma.finish()


# ---------------------------------------------------------------------------------------------
# Encodings wider than the fields they name are refused, not aliased.

@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UD])
async def test_destination_qpn_above_24_bits(dut, transport):
    """A destination QPN with bit 24 set is out of range (QPNs are 24-bit and the device has
    NUM_QP of them), so the destination is unreachable (RC: RETRY_EXC_ERR; UD: dropped with
    SUCCESS) -- it must not reach the QP named by the QPN's low 24 bits."""
    rdma = await Rdma.open(dut)
    src = await rdma.region(4096)
    inbox = await rdma.region(4096)
    memory = inbox.read()
    b = await rdma.ud_qp() if transport == QPType.UD else await rdma.qp(transport)
    alias = 1 << 24 | b.qp_num
    if transport == QPType.UD:
        a = await rdma.ud_qp()
        wr = ud_send(src.sge(0, 64), await rdma.loopback_ah(), alias, QKEY, wr_id=0xA1)
    else:
        a = await rdma.qp(transport)
        await rdma.connect(a, alias)
        await rdma.connect(b, a.qp_num)
        wr = work_request(WROpcode.SEND, src.sge(0, 64), wr_id=0xA1)
    await b.post_recv(RecvWR(inbox.sge(0, GRH_BYTES + 64), wr_id=0xB1))
    await a.post_send(wr)
    [wc] = await a.send_cq.wait(1)
    await rdma.cycles(200)
    assert await b.recv_cq.poll() == [] and inbox.read() == memory, \
        f"a message for QPN {alias:#x} was delivered to QP {b.qp_num}"
    expected = WCStatus.RETRY_EXC_ERR if transport == QPType.RC else WCStatus.SUCCESS
    assert wc.status == expected, f"{wc.status!r}, expected {expected.name}"
    await rdma.finish()


@cocotb.test()
async def test_modify_to_undefined_state_refused(dut):
    """MODIFY_QP to state 9 -- no QP state (RESET 0 .. ERR 6) -- is refused, and the QP keeps
    its state; it must not be taken for the state its low three bits name (9 & 7 = INIT)."""
    rdma = await Rdma.open(dut)
    qp = await rdma.qp(QPType.RC)
    await assert_refused((CmdResult.BAD_STATE, CmdResult.BAD_PARAM),
                         rdma.dev.command(Cmd.MODIFY_QP, qp.qp_num, encode_modify(9, qp.attr)),
                         "MODIFY_QP RESET -> 9")
    await rdma.assert_state(qp, QPState.RESET)
    await rdma.finish()


# ---------------------------------------------------------------------------------------------
# The pytest runner: rdma_dev end to end at each supported data width. The cocotb tests run in two
# groups per width, one simulator process each, so pytest-xdist can spread them: the 1 MiB messages
# (most of the run time at 64 bits) and everything else. Both groups of a width share one build
# (simrun builds each top and parameter set once). make test moves 1 MiB once, an RDMA WRITE at
# 256 bits (a 1 MiB SEND at 64 bits alone took 26 s of make test); make regress every opcode at
# every width, make coverage one opcode per width. At 64 and 512 bits make test runs the tests
# whose data movement the width shapes (every opcode, UD, every length and alignment, many
# messages in flight), make regress and make coverage all of them: the rules the rest check do
# not depend on the width. The ethernet group is both groups with both ports on Ethernet
# (RoCE v2: loopback by GID, the Ethernet completion fields); make test runs ETHERNET_CORE of it.

WIDTHS = [64, 256, 512]
MEGABYTE_TESTS = "test_megabyte_messages"
GROUPS = {  # COCOTB_TEST_FILTER patterns, matched against "test_rdma_dev.<test name>[/params]"
    "megabyte": rf"^test_rdma_dev\.{MEGABYTE_TESTS}(/|$)",
    "main": rf"^test_rdma_dev\.(?!{MEGABYTE_TESTS}(/|$))",
    # every test with both ports on Ethernet (RoCE v2): the loopback rule by GID
    "ethernet": r"^test_rdma_dev\.",
}
# make test runs these of the ethernet group, at 256 bits; make regress all of it at every width
# (the 1 MiB messages too)
ETHERNET_CORE = ("test_connected_opcode", "test_ud_send",
                 "test_sends_between_equal_unaligned_offsets")
MEGABYTE_OPCODE = {64: "SEND", 256: "RDMA_WRITE", 512: "RDMA_READ"}     # make coverage's
WIDTH_TESTS = ("test_connected_opcode", "test_ud_send", "test_length_alignment_sweep",
               "test_many_qps_many_outstanding", "test_bypass_messages_in_flight_keep_their_order")


@pytest.mark.parametrize("group", list(GROUPS))
@pytest.mark.parametrize("w", WIDTHS)
def test_rdma_dev(w, group):
    pattern = GROUPS[group]
    if group == "megabyte" and w != 256 and not (REGRESS or coverage_enabled()):
        pytest.skip("1 MiB messages at 64 and 512 bits: make regress and make coverage")
    if group == "megabyte" and not REGRESS:
        pattern = rf"^test_rdma_dev\.{MEGABYTE_TESTS}/opcode={MEGABYTE_OPCODE[w]}$"
    if group == "main" and w != 256 and not (REGRESS or coverage_enabled()):
        pattern = rf"^test_rdma_dev\.({'|'.join(WIDTH_TESTS)})(/|$)"
    if group == "ethernet" and not REGRESS:
        if w != 256:
            pytest.skip("Ethernet ports at 64 and 512 bits: make regress")
        pattern = rf"^test_rdma_dev\.({'|'.join(ETHERNET_CORE)})(/|$)"
    simrun.run(
        toplevel="tb_rdma_dev",
        test_module="test_rdma_dev",
        parameters={"DATA_WIDTH": w},
        extra_env={"COCOTB_TEST_FILTER": pattern,
                   "RDMA_LINK": "eth" if group == "ethernet" else "ib"},
    )


# The device make synth builds for an ECP5 (tools/synth.py: fewer QPs, MRs, CQs and AHs, a send
# window of 8, one bypass mover) is the same RTL at other parameters. make regress runs the
# main group on it, on both link layers; make test every opcode and the tests whose limits are
# those parameters, on InfiniBand.
SMALL_DEVICE = dict(next(c for c in CONFIGS if c.family == "ecp5").parameters)
SMALL_DEVICE_TESTS = (
    "test_connected_opcode", "test_ud_send", "test_many_qps_many_outstanding",
    "test_send_queue_read_ahead", "test_bypass_messages_in_flight_keep_their_order",
    "test_unreachable_destination", "test_device_identity", "test_register_hygiene",
    "test_doorbells_that_cannot_run_are_ignored_and_counted",
    "test_destroyed_objects_free_their_numbers",
)


@pytest.mark.parametrize("link", ["ib", "eth"])
def test_rdma_dev_small_device(link):
    if link == "eth" and not REGRESS:
        pytest.skip("the small device with Ethernet ports: make regress")
    pattern = GROUPS["main"] if REGRESS else \
        rf"^test_rdma_dev\.({'|'.join(SMALL_DEVICE_TESTS)})(/|$)"
    simrun.run(
        toplevel="tb_rdma_dev",
        test_module="test_rdma_dev",
        parameters=SMALL_DEVICE,
        extra_env={"COCOTB_TEST_FILTER": pattern, "RDMA_LINK": link},
    )
