"""Seeded random RDMA program on rdma_dev: many QPs, every opcode and transport, with each QP's
peer on its own port (loopback: the bypass), on the other port of the same device (harness
CABLE = 1: packets over the cable) or on the other device of tb_fabric (packets between two
devices). Software cannot tell: every placement gives the same completions and the same memory
as the loopback run of the same program in the same simulation, bar what names ports or
devices (SLID, DLID path bits, the source QPN, the GIDs in a UD GRH area) and the buffers of
failed receives, whose contents are undefined. Between devices over lossy cables RC still
gives the loopback run's results; UC and UD lose what the cables broke, so their receivers'
completions and memory are checked against the model alone, which takes each UC and UD
packet as its cable delivered it (tb/model.py, Model.arrived).

Every port is InfiniBand, or Ethernet with RDMA_LINK=eth (RoCE v2: tb/rdma_tb.py), for the
same program. On Ethernet a GID is the address: as the InfiniBand program's address vectors
vary their DLID and source path bits, each leaves from a random entry of its port's GID table
(IPv4, IPv6, or IPv4 on VLAN 7, whose frames carry the SL as their priority) for a GID of its
peer's port that the entry reaches (of its IP version, on its VLAN; a loopback takes any of
the port's own GIDs of its version, VLAN or not). Receive completions there carry no SLID, SL
or path bits, and every UD receive a GRH area: the IP header, whose addresses (and IPv4's
checksum over them) are what names the ports. `make test` runs the program on Ethernet on one
device at 256 bits; `make regress` every run on both links.

The program is what a busy RDMA application does: 38 QPs on both ports (RC, UC and UD),
several thousand work requests posted in batches with one doorbell each, refilled as
completions come back, with random lengths (mostly small, some tens of KiB) at random byte
offsets on both sides. A few dedicated QPs make protection errors and then have their later
work requests flushed. Half of the connected error-free flows give their receiver a memory
window over its arena (bound by a BIND_MW on the receiver's QP before the traffic starts):
the sender's RDMA WRITEs, and READs where no cable loses packets, use the window's key half
of the time, and an RC flow with a type 2 window ends with a SEND with invalidate, which
unbinds it. One QP of every error-free pair in three (RC, UC and UD, on both ports) takes its
receives from a shared receive queue (one QP to an SRQ: the order in which messages take its WQEs is then their sender's posting
order, in every placement and in the model; SRQs shared by several QPs, and the limit event,
are directed tests). The scoreboard checks every completion as it is polled and, at the end,
every memory image, guard, QP state, SRQ and counter.

Order independence. The reference model runs a send WR when it is posted, against the
receives posted so far; the device runs it later, interleaved with other QPs round robin.
The program is built so both orders give the same result:
  - traffic runs in *flows*: one sender QP, one receiver QP. A receive queue is fed by its
    flow's sender only, and its receives are posted before the sends that consume them;
  - every QP owns one registered arena of four areas, and each area has one writer:
        SRC   random data, never written: the source of sends and writes, read by the peer;
        SINK  written only by the peer's RDMA WRITEs (and read back by the peer's READs;
              a WRITE after such a READ fences, as a READ asked again is served again);
        RBUF  written only by this QP's own RDMA READs and atomics (the original values)
              (and sent on by this QP's WRs, with FENCE: the device has many messages in
              flight, and only a fence makes a WR wait for the READs before it);
        ATOM  8-byte words changed only by the peer's atomics (RC), which track their
              values so that a CompareSwap often matches;
        RECV  written only by the peer's SENDs, through this QP's receives;
    a QP's own WRs run in posting order on the device too (a READ behind a WRITE sees it, a
    fenced WR waits for the READs before it), so a chain such as "write to the peer, read
    it back, send what was read" has one answer;
  - the receiving side of an error flow never sends: an RC error moves both ends to ERR,
    and a receiver with sends of its own would see them succeed or flush depending on when
    the device serves the failing WR.

Each run is also checked on its own by the scoreboards: every completion, memory image, QP
state and counter, and on the packet path every packet on every link and every port counter.

The seed comes from $SEED (else a fresh one); it is logged at the start and every failure
names it: `SEED=<n> pytest tests/test_random_traffic.py` replays the run exactly. Each flow
draws its messages from its own generator, so the same seed also gives the same program at
every DATA_WIDTH (and on either link, but for its addresses); only the interleaving, which
depends on the device's timing, differs.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter, deque
from dataclasses import dataclass, replace

import cocotb
from cocotb.triggers import ClockCycles, First, RisingEdge, Timer
import pytest

from tb import simrun
from tb.ib_packet import is_ipv4_mapped, vlan_id
from tb.model import echoed_tclass
from tb.rdma_program import lossy_cable
from tb.rdma_tb import (
    CLOCK_PERIOD_NS, FABRIC_PORT_SETUP, LINK, LINK_NAMES, MEM_TIMINGS, PORT_SETUP, mem_timing,
    open_device, open_fabric,
)
from tb.seed import REGRESS, seed_from_env
from tb.verbs import (
    ATOMIC_OPS, ATOMIC_WRITE_BYTES, GRH_BYTES, MAX_SGE, MTU, NO_SGE, QKEY_FROM_QP, SGE, Access, GlobalRoute, Observer,
    QPState, QPType, QueueFull, RecvWR, Reg, RemoteAddr, SendFlags, SendWR, WCFlags, WCOpcode,
    WCStatus, WROpcode, atomic_write, rdma_read, rdma_write, send, send_with_inv, ud_send,
)

# --- program shape -----------------------------------------------------------------------------

NORMAL_PAIRS = {QPType.RC: 6, QPType.UC: 3, QPType.UD: 3}  # bidirectional, error free
ERROR_FLOWS = {QPType.RC: 3, QPType.UC: 2, QPType.UD: 2}   # sender -> passive receiver
# send WRs shared among the error-free flows: $RANDOM_WRS, else 150 (`make test`), or the full
# program of 2200 under REGRESS (`make regress`, which also runs several seeds)
NORMAL_WRS = int(os.environ.get("RANDOM_WRS", "2200" if REGRESS else "150"))
# the runs between devices in `make test` (the packet path costs twice the bypass, and go-back-N
# over lossy cables more)
FABRIC_WRS = 60
# send WRs of one error flow (the fatal one is among them): fewer in the short programs
ERROR_WRS = (12, 60) if NORMAL_WRS >= 1000 else (6, 24)
NUM_CQS = 6              # QPs pick their send and receive CQs among these
MAX_BATCH = 8            # WRs behind one doorbell
SIGNAL_RATE = 0.3        # the last WR of a batch is always signaled, others at this rate
SPLIT_RATE = 0.3         # WRs of a QP whose WQEs hold several SGEs: split into a list this often
SILENT_ERROR_RATE = 0.05  # UC/UD errors that complete SUCCESS (before the fatal error)
RECVS_AFTER_ERROR = 4    # WRs after the fatal one that still post their receive
WINDOW_RATE = 0.5        # connected error-free flows whose receiver binds a memory window
WINDOW_KEY_RATE = 0.5    # ... and their WRITEs (and READs) that use its key

# Local ACK timeout (2^t x 4.096 us = 2^t x 1024 cycles), 7 resends. Over lossy cables 3 (8192
# cycles), so that losses are recovered quickly. On a lossless link nothing is lost, yet an ACK
# may queue behind a full cable of packets into a busy receiver (64 packets of up to 4 KiB,
# more than 8192 cycles at 256 bits), time out, and make a spurious (harmless, but
# unpredictable) go-back: 6 (65,536 cycles) keeps lossless runs free of it.
RC_TIMEOUT = {True: 3, False: 6}     # by whether the cables lose packets
AREA = 48 * 1024
ATOM_BYTES = 1024
SRC, SINK, RBUF = (i * AREA for i in range(3))
ATOM = 3 * AREA
RECV = ATOM + ATOM_BYTES
ARENA = RECV + AREA
ATOM_WORDS = ATOM_BYTES // 8 - 1    # 8-byte aligned in the peer's iova space, wherever it starts
MAX_LEN = 40 * 1024      # leaves room for random offsets inside an area
SPECIAL_BYTES = 8192     # the regions that exist only to be named by bad WRs

FULL_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC
ARENA_ACCESS = FULL_ACCESS | Access.MW_BIND
PORT_MTU = {1: MTU.MTU4096, 2: MTU.MTU2048}  # the UD length limit differs between the ports
# Messages are drawn the same whichever port a QP is on, so both placements run one program:
# a UD message fits the smaller port MTU, and connected pairs share a path MTU within it.
UD_MAX = min(PORT_MTU.values()).size
PAIR_MTUS = [m for m in MTU if m <= min(PORT_MTU.values())]

# A cycle budget with no completion at all before the device counts as hung. The longest WR
# (40 KiB at 64 bits) takes about 12k cycles; a batch of them a few times that.
STALL_CYCLES = 400_000

OPCODE_WEIGHTS = {
    QPType.RC: {WROpcode.SEND: 25, WROpcode.SEND_WITH_IMM: 15, WROpcode.RDMA_WRITE: 25,
                WROpcode.RDMA_WRITE_WITH_IMM: 15, WROpcode.RDMA_READ: 20,
                WROpcode.ATOMIC_CMP_AND_SWP: 6, WROpcode.ATOMIC_FETCH_AND_ADD: 6,
                WROpcode.ATOMIC_WRITE: 4},
    QPType.UC: {WROpcode.SEND: 30, WROpcode.SEND_WITH_IMM: 20, WROpcode.RDMA_WRITE: 30,
                WROpcode.RDMA_WRITE_WITH_IMM: 20},
    QPType.UD: {WROpcode.SEND: 60, WROpcode.SEND_WITH_IMM: 40},
}
SENDS = {WROpcode.SEND, WROpcode.SEND_WITH_IMM}
WRITES = {WROpcode.RDMA_WRITE, WROpcode.RDMA_WRITE_WITH_IMM, WROpcode.ATOMIC_WRITE}
WITH_IMM = {WROpcode.SEND_WITH_IMM, WROpcode.RDMA_WRITE_WITH_IMM}
NEEDS_RECV = SENDS | {WROpcode.RDMA_WRITE_WITH_IMM}
READS_BACK = {WROpcode.RDMA_READ, *ATOMIC_OPS}     # write their local SGE (in RBUF)

# Errors that move the sender to ERR (its later WRs flush), per transport.
LKEY_ERRORS = ["lkey_variant", "lkey_stale", "lkey_unregistered", "lkey_other_pd", "lkey_oob"]
RKEY_ERRORS = ["rkey_variant", "rkey_stale", "rkey_other_pd", "rkey_oob", "rkey_access"]
RECV_ERRORS = ["recv_short", "recv_bad_lkey"]
FATAL_ERRORS = {
    QPType.RC: LKEY_ERRORS + RKEY_ERRORS + RECV_ERRORS
    + ["read_no_local_write", "atomic_misaligned", "atomic_length", "awrite_misaligned",
       "over_2g"],
    QPType.UC: LKEY_ERRORS + ["uc_read", "uc_atomic", "over_2g"],
    QPType.UD: LKEY_ERRORS + ["ud_too_long", "ah_other_pd", "ah_other_port", "ah_invalid",
                              "ud_rdma"],
}
# UC and UD errors that complete SUCCESS at the sender and leave both QPs as they were.
SILENT_ERRORS = {
    QPType.UC: RKEY_ERRORS + RECV_ERRORS,
    QPType.UD: RECV_ERRORS + ["qkey_mismatch", "ud_unreachable"],
}


def length_bucket(n):
    for limit, name in ((0, "0"), (64, "1-64"), (1024, "65-1K"), (8192, "1K-8K")):
        if n <= limit:
            return name
    return ">8K"


# --- what the program holds ---------------------------------------------------------------------

@dataclass(frozen=True)
class Message:
    """One send WR, the receive to post for it (None: it consumes none, or it is posted
    already), and what it is."""
    wr: SendWR
    recv: RecvWR | None
    kind: str


class Resources:
    """The objects every flow may name: AHs per port, and the regions and keys that exist only
    for bad work requests."""
    stale_key: int            # a key of a region deregistered (its index reused since)
    unregistered_key: int     # a key whose index was never registered
    other_pd: object          # MR of another PD, full access
    read_only: object         # MR without REMOTE_WRITE
    write_only: object        # MR without REMOTE_READ
    no_local_write: object    # MR with REMOTE_READ only
    ahs: dict                 # port -> AHs of the program's PD on that port
    other_pd_ahs: dict        # port -> an AH of another PD
    unused_ahn: int
    unused_qpn: int
    qps_by_port: dict         # port -> every QP on it (UD unreachable destinations)
    peer: dict                # port -> the port its QPs' peers are on (on the peer device)


class Flow:
    """Traffic from `src` to `dst`: src posts every send WR, and dst's receive queue is fed by
    nothing else. `quota` send WRs in all; with `error`, the WR numbered `fail_at` is a fatal
    error and the flow then keeps posting a few WRs that must flush."""

    def __init__(self, res, dst_res, src, dst, src_mr, dst_mr, index, seed, quota,
                 error=False):
        self.res = res              # the sender's device's objects
        self.dst_res = dst_res      # the receiver's (the same device, or the other one)
        self.src, self.dst = src, dst
        self.src_mr, self.dst_mr = src_mr, dst_mr
        self.read_sink = False      # a READ of the peer's SINK was drawn: later WRITEs fence
        self.atom = {}              # ATOM word -> its value once this flow's atomics ran
        self.transport = src.qp_type
        self.port = src.attr.port_num
        self.mtu = PORT_MTU[self.port].size   # what the device refuses beyond, on UD
        self.rng = random.Random(f"{seed}:messages")    # the program: same at every width
        self.batch_rng = random.Random(f"{seed}:batches")  # how it is posted: timing dependent
        self.quota = quota
        self.error = error
        self.lossy = False          # UC or UD over cables that lose packets (lossy_cables)
        self.fail_at = self.rng.randrange(quota - 3) if error else None
        self.window = None          # the receiver's memory window over its arena (MW), if any
        self.window_reads = False   # READs may use it too (no cable loses their responses)
        self.window_uses = 0        # WRs that named the window's key
        self.opcodes = dict(OPCODE_WEIGHTS[self.transport])
        if not dst.attr.qp_access_flags & Access.REMOTE_READ:
            self.opcodes.pop(WROpcode.RDMA_READ, None)
        if not dst.attr.qp_access_flags & Access.REMOTE_ATOMIC:
            for op in ATOMIC_OPS:
                self.opcodes.pop(op, None)
        # all 64 bits used; the plan index, not the QPN, so every placement has the same wr_ids
        self.wr_tag = self.rng.getrandbits(16) << 48 | index << 32
        self.generated = 0
        self.ready = deque()        # generated, not posted yet (a refused post leaves them here)
        self.outstanding = deque()  # wr_ids posted and not known complete, in posting order
        self.recvs_outstanding = 0  # receives posted whose completion is not polled yet
        self.recv_sges = {}         # wr_id -> the range of every receive posted (one SGE)
        self.sq_cap = src.max_send_wr
        self.receive_queue = dst.srq or dst   # where the flow posts its receives
        self.rq_cap = dst.srq.max_wr if dst.srq else dst.max_recv_wr
        self.stats = Counter()
        self.lengths = Counter()
        self.bytes = 0

    @property
    def name(self):
        what = "error flow" if self.error else "flow"
        return f"{self.transport.name} {what} QP {self.src.qp_num} -> QP {self.dst.qp_num}"

    @property
    def pending(self):
        return bool(self.ready) or self.generated < self.quota

    @property
    def done(self):
        return not self.pending and not self.outstanding

    # --- posting ------------------------------------------------------------------------------

    async def post_batch(self):
        """Post up to MAX_BATCH WRs with one doorbell, their receives first; returns how many.
        Holds back when the send ring (as far as completions tell) or the receive ring is
        full. The driver judges room by the device's consumer index (QUERY_QP); should it
        refuse all the same (QueueFull), the messages stay queued, their receives marked
        posted, and go with the next attempt."""
        room = self.sq_cap - len(self.outstanding)
        if not self.pending or room <= 0:
            return 0
        target = min(self.batch_rng.randint(1, MAX_BATCH), room)
        batch, recvs = [], []
        while len(batch) < target:
            if len(self.ready) == len(batch):
                if self.generated == self.quota:
                    break
                self.ready.append(self._generate())
            msg = self.ready[len(batch)]
            if msg.recv is not None and self.recvs_outstanding + len(recvs) >= self.rq_cap:
                if not self.lossy:
                    break
                # the receives of lost messages hold their places until later messages
                # take them: this one goes without, to take one of those or be dropped
                msg = self.ready[len(batch)] = replace(msg, recv=None)
            batch.append(msg)
            if msg.recv is not None:
                recvs.append(msg.recv)
        if not batch:
            return 0
        if recvs:
            try:
                await self.receive_queue.post_recv(recvs)
            except QueueFull:
                return 0
            self.recvs_outstanding += len(recvs)
            self.recv_sges.update((r.wr_id, r.sg_list[0] if len(r.sg_list) == 1 else
                                   replace(r.sg_list[0], length=r.length)) for r in recvs)
            for i, msg in enumerate(batch):  # posted: never again
                batch[i] = self.ready[i] = replace(msg, recv=None)
        # The last WR of a batch is signaled: its completion retires the whole batch.
        wrs = [msg.wr for msg in batch]
        wrs[-1] = replace(wrs[-1], flags=wrs[-1].flags | SendFlags.SIGNALED)
        try:
            await self.src.post_send(wrs)
        except QueueFull:
            return 0
        for msg in batch:
            self.ready.popleft()
            self._count(msg)
        self.outstanding.extend(wr.wr_id for wr in wrs)
        return len(wrs)

    def _count(self, msg):
        self.stats[msg.kind] += 1
        self.lengths[length_bucket(msg.wr.length)] += 1
        self.bytes += msg.wr.length

    def on_send_completion(self, wc):
        """A send completion implies every earlier WR of the queue is done (unsignaled ones
        included): retire up to it."""
        while self.outstanding:
            if self.outstanding.popleft() == wc.wr_id:
                return
        raise AssertionError(f"{self.name}: completion for wr_id {wc.wr_id:#x}, "
                             "which is not outstanding")

    def on_recv_completion(self, wc):
        self.recvs_outstanding -= 1

    # --- the program ----------------------------------------------------------------------------

    def _generate(self):
        seq = self.generated
        self.generated += 1
        if self.window is not None and self.window.type == 2 and \
                self.transport == QPType.RC and seq == self.quota - 1:
            return self._send_with_inv(seq)
        if self.fail_at is not None:
            if seq == self.fail_at:
                return self._fatal(seq)
            if seq > self.fail_at:
                # Flushed, so it consumes no receive. The first few still post theirs: a
                # receiver the error moved to ERR flushes them, and the others keep them
                # posted (a few only, or the receive ring would fill for good).
                msg = replace(self._ordinary(seq), kind="after the error")
                return msg if seq - self.fail_at <= RECVS_AFTER_ERROR else replace(msg, recv=None)
            if self.transport in SILENT_ERRORS and self.rng.random() < SILENT_ERROR_RATE:
                return self._silent(seq)
        return self._ordinary(seq)

    def _wr_id(self, seq, recv=False):
        return self.wr_tag | (1 << 31 if recv else 0) | seq

    def _length(self, cap=MAX_LEN):
        """Mostly small, a tail of a few KiB and a few tens of KiB (UD: up to the port MTU,
        the MTU itself now and then)."""
        r = self.rng.random()
        if r < 0.08:
            n = 0
        elif r < 0.60:
            n = self.rng.randint(1, 64)
        elif r < 0.85:
            n = self.rng.randint(65, 1024)
        elif r < 0.96:
            n = self.rng.randint(1025, 8192)
        else:
            n = self.rng.randint(8193, MAX_LEN)
        if n > cap:
            n = cap if self.rng.random() < 0.3 else self.rng.randint(cap // 2, cap)
        return n

    def _sge_opcodes(self):
        """The flow's opcodes whose WQEs carry SGEs (an ATOMIC WRITE's bytes are in its WQE):
        the ones a bad SGE or an rkey check sized by the SGE can fail."""
        return [op for op in self.opcodes if op != WROpcode.ATOMIC_WRITE]

    def _opcode(self, choices=None):
        choices = choices or list(self.opcodes)
        return self.rng.choices(choices, [self.opcodes.get(op, 1) for op in choices])[0]

    def _offset(self, area, length):
        """A random byte offset in `area` with room for `length` bytes; now and then the
        first or the last one, so transfers start or end right on a region's edge (SRC starts
        an arena's region, RECV ends it)."""
        r = self.rng.random()
        if r < 0.05:
            return area
        if r < 0.15:
            return area + AREA - length
        return area + self.rng.randrange(AREA - length + 1)

    def _local(self, op, length):
        """The sender's SGE: READs and atomics land in RBUF; the rest mostly send SRC,
        sometimes RBUF."""
        area = RBUF if op in READS_BACK or self.rng.random() < 0.2 else SRC
        return self.src_mr.sge(self._offset(area, length), length)

    def _in_rbuf(self, sge):
        start = sge.addr - self.src_mr.addr
        return sge.length > 0 and RBUF <= start < RBUF + AREA

    def _remote(self, op, length):
        """WRITEs go to the peer's SINK (an ATOMIC WRITE to 8 bytes there, 8-byte aligned in
        its iova); READs fetch its SRC, or its SINK to read back what this flow wrote there;
        atomics work on a word of its ATOM."""
        if op in ATOMIC_OPS:
            return self.dst_mr.remote(self._atom_offset(self.rng.randrange(ATOM_WORDS)))
        area = SINK if op in WRITES or self.rng.random() < 0.3 else SRC
        self.read_sink |= op == WROpcode.RDMA_READ and area == SINK
        offset = self._offset(area, length)
        if op == WROpcode.ATOMIC_WRITE:     # offsets `base` mod 8 are aligned in the iova
            base = (-self.dst_mr.addr) % 8
            offset = area + base + 8 * min((offset - area) // 8, (AREA - 8 - base) // 8)
        remote = self.dst_mr.remote(offset)
        # drawn whether or not the window may serve, so every placement runs one program
        through_window = self.window is not None and self.rng.random() < WINDOW_KEY_RATE
        if through_window and (op in WRITES or self.window_reads):
            self.window_uses += 1
            return RemoteAddr(remote.addr, self.window.rkey)
        return remote

    def _atom_offset(self, word):
        """The offset in the peer's region of ATOM word `word`, 8-byte aligned in its iova."""
        return ATOM + 8 * word + (-self.dst_mr.addr) % 8

    def _atomic_operands(self, op, remote):
        """(compare_add, swap) for an atomic on `remote`: a CompareSwap expects the word's
        value (as this flow's earlier atomics left it) most of the time, so both outcomes
        occur; a FetchAdd adds a small number, or any 64-bit one (wrapping)."""
        offset = remote.addr - self.dst_mr.addr
        r, small, big, other = (self.rng.random(), self.rng.randint(1, 1000),
                                self.rng.getrandbits(64), self.rng.getrandbits(64))
        if not ATOM <= offset < ATOM + ATOM_BYTES:  # a bad WR's remote: nothing to track
            return (small, 0) if op == WROpcode.ATOMIC_FETCH_AND_ADD else (other, big)
        if offset not in self.atom:     # untouched so far: its first value, read now
            self.atom[offset] = int.from_bytes(self.dst_mr.read(offset, 8), "little")
        value = self.atom[offset]
        if op == WROpcode.ATOMIC_FETCH_AND_ADD:
            add = small if r < 0.7 else big
            self.atom[offset] = (value + add) % 2**64
            return add, 0
        compare = value if r < 0.6 else other
        if compare == value:
            self.atom[offset] = big
        return compare, big

    def _flags(self, op):
        flags = SendFlags.SIGNALED if self.rng.random() < SIGNAL_RATE else SendFlags(0)
        if op in NEEDS_RECV and self.rng.random() < 0.1:
            flags |= SendFlags.SOLICITED
        if self.rng.random() < 0.05:
            flags |= SendFlags.FENCE
        return flags

    def _recv_for(self, seq, op, length):
        """The receive a message consumes: room for the message (and the GRH area on UD) plus
        some slack, at a random offset of the receiver's RECV area. A WRITE_WITH_IMM writes
        nothing through it, so its SGE may be anything, empty included."""
        if op not in NEEDS_RECV:
            return None
        if op == WROpcode.RDMA_WRITE_WITH_IMM and self.rng.random() < 0.5:
            return RecvWR(NO_SGE, self._wr_id(seq, recv=True))
        need = length + (GRH_BYTES if self.transport == QPType.UD else 0)
        slack = self.rng.choice((0, self.rng.randint(1, 64), self.rng.randint(65, 4096)))
        size = min(need + slack, AREA)
        return RecvWR(self.dst_mr.sge(self._offset(RECV, size), size), self._wr_id(seq, True))

    def _ah(self):
        return self.rng.choice(self.res.ahs[self.port])

    def _qkey(self):
        # The pair shares its Q_Key, so "use the QP's own" names the receiver's as well.
        return self.rng.choice((self.dst.attr.qkey, QKEY_FROM_QP))

    def _build(self, seq, op, sge, remote=None, recv=None, kind=None, ah=None,
               remote_qpn=None, qkey=None):
        """The WR for `op` with the given parts, the rest drawn at random."""
        wr_id = self._wr_id(seq)
        flags = self._flags(op)
        if (op not in READS_BACK and self._in_rbuf(sge)) or (op in WRITES and self.read_sink):
            # RBUF is written by this QP's own READs, which the device may still have in
            # flight when it fetches this WR's payload; a READ of SINK whose response is
            # lost is served again from memory a later WRITE may have changed: FENCE orders
            # them (as in verbs)
            flags |= SendFlags.FENCE
        imm = self.rng.getrandbits(32) if op in WITH_IMM else None
        if self.transport == QPType.UD:
            wr = ud_send(sge, self._ah() if ah is None else ah,
                         self.dst.qp_num if remote_qpn is None else remote_qpn,
                         self._qkey() if qkey is None else qkey, wr_id, imm, flags)
            if op not in SENDS:  # an RDMA opcode on UD, to be refused
                remote = remote or self._remote(op, sge.length)
                wr = replace(wr, opcode=op, imm=0, remote_addr=remote.addr, rkey=remote.rkey)
        elif op in SENDS:
            wr = send(sge, wr_id, imm, flags)
        elif op == WROpcode.SEND_WITH_INV:
            wr = send_with_inv(sge, self.window.rkey, wr_id, flags)
        elif op == WROpcode.ATOMIC_WRITE:
            wr = atomic_write(remote or self._remote(op, ATOMIC_WRITE_BYTES),
                              self.rng.randbytes(ATOMIC_WRITE_BYTES), wr_id, flags)
        elif op in WRITES:
            wr = rdma_write(sge, remote or self._remote(op, sge.length), wr_id, imm, flags)
        elif op in ATOMIC_OPS:
            remote = remote or self._remote(op, sge.length)
            compare_add, swap = self._atomic_operands(op, remote)
            wr = SendWR(op, sge, wr_id, flags, 0, remote.addr, remote.rkey,
                        compare_add=compare_add, swap=swap)
        else:
            wr = rdma_read(sge, remote or self._remote(op, sge.length), wr_id, flags)
        # Now and then the same bytes as a scatter/gather list: a send's in any order, a
        # receive's in order (its range is what a failed or UD receive leaves undefined)
        if op not in READS_BACK and op != WROpcode.ATOMIC_WRITE and self.rng.random() < SPLIT_RATE:
            wr = replace(wr, sge=self._split(sge, self.src.max_send_sge, shuffle=True))
        if recv is not None and self.rng.random() < SPLIT_RATE:
            recv = replace(recv, sge=self._split(recv.sge, self.dst.max_recv_sge))
        return Message(wr, recv, kind or f"{self.transport.name} {op.name}")

    def _send_with_inv(self, seq):
        """The flow's last message: a SEND whose receiver invalidates the window."""
        length = self._length()
        return self._build(seq, WROpcode.SEND_WITH_INV, self._local(WROpcode.SEND, length),
                           recv=self._recv_for(seq, WROpcode.SEND, length))

    def _split(self, sge, most, shuffle=False):
        """`sge`'s bytes as a list of up to `most` SGEs (some may be empty), in order or not."""
        cuts = sorted(self.rng.randrange(sge.length + 1)
                      for _ in range(self.rng.randint(1, most) - 1))
        bounds = list(zip([0] + cuts, cuts + [sge.length]))
        if shuffle:
            self.rng.shuffle(bounds)
        return tuple(SGE((sge.addr + lo) % 2**64, hi - lo, sge.lkey) for lo, hi in bounds)

    def _ordinary(self, seq):
        op = self._opcode()
        if op in ATOMIC_OPS:
            return self._build(seq, op, self._local(op, 8))
        if op == WROpcode.ATOMIC_WRITE:     # its bytes are in the WQE: no SGE
            return self._build(seq, op, NO_SGE)
        length = self._length(UD_MAX if self.transport == QPType.UD else MAX_LEN)
        if length == 0 and self.rng.random() < 0.5:
            return self._empty(seq, op)
        sge = self._local(op, length)
        return self._build(seq, op, sge, recv=self._recv_for(seq, op, length))

    def _empty(self, seq, op):
        """A zero-length message whose addresses and keys name nothing: with no byte to move,
        neither the lkey nor the rkey is checked, nor (RC, UC) the receive's lkey. A UD
        receive still takes the GRH area, so it gets a real one."""
        rng = self.rng
        sge = SGE(rng.getrandbits(64), 0, rng.getrandbits(32))
        remote = None if op in SENDS else RemoteAddr(rng.getrandbits(64), rng.getrandbits(32))
        recv = None
        if op in NEEDS_RECV:
            if self.transport == QPType.UD:
                recv = self._recv_for(seq, op, 0)
            else:
                recv = RecvWR(SGE(rng.getrandbits(64), rng.randint(0, 64), rng.getrandbits(32)),
                              self._wr_id(seq, recv=True))
        return self._build(seq, op, sge, remote=remote, recv=recv,
                           kind=f"{self.transport.name} {op.name} (0 bytes, no keys)")

    # --- bad work requests ----------------------------------------------------------------------

    def _other_variant(self, key):
        return key & ~0xFF | (key + self.rng.randint(1, 255)) & 0xFF

    def _bad_key(self, kind, mr, offset, length, res):
        """(address, key) naming `length` bytes the way `kind` gets wrong; `mr` and `offset`
        say where a good one would point, `res` is the objects of `mr`'s device."""
        if kind.endswith("variant"):
            return mr.addr + offset, self._other_variant(mr.lkey)
        if kind.endswith("stale"):
            return mr.addr + offset, res.stale_key
        if kind.endswith("unregistered"):
            return mr.addr + offset, res.unregistered_key
        if kind.endswith("other_pd"):
            other = res.other_pd
            return other.addr + self.rng.randrange(other.length - length + 1), other.lkey
        assert kind.endswith("oob"), kind
        by = 1 if self.rng.random() < 0.5 else self.rng.randint(1, length)  # often one byte
        if self.rng.random() < 0.5:  # runs past the end
            return mr.addr + mr.length - length + by, mr.lkey
        return mr.addr - by, mr.lkey  # starts before the region

    def _special(self, mr, length):
        return mr.addr + self.rng.randrange(mr.length - length + 1), mr.lkey

    def _fatal(self, seq):
        kind = self.rng.choice(FATAL_ERRORS[self.transport])
        if self.transport == QPType.RC and WROpcode.RDMA_READ not in self.opcodes:
            kind = self.rng.choice((kind, "read_refused"))  # the receiver refuses READs
        ud = self.transport == QPType.UD
        length = self.rng.randint(1, UD_MAX if ud else 4096)
        label = f"error {kind}"
        if kind.startswith("lkey"):
            op = self._opcode(self._sge_opcodes())
            length = 8 if op in ATOMIC_OPS else length
            area = RBUF if op in READS_BACK else SRC
            addr, key = self._bad_key(kind, self.src_mr, self._offset(area, length), length,
                                      self.res)
            return self._build(seq, op, SGE(addr, length, key),
                               recv=self._recv_for(seq, op, length), kind=label)
        if kind.startswith("rkey"):
            return self._bad_remote(seq, kind, length, label)
        if kind.startswith("recv"):
            return self._bad_recv(seq, kind, length, label)
        if kind == "read_no_local_write":
            addr, key = self._special(self.res.no_local_write, length)
            return self._build(seq, WROpcode.RDMA_READ, SGE(addr, length, key), kind=label)
        if kind in ("uc_read", "read_refused"):
            op = WROpcode.RDMA_READ
            return self._build(seq, op, self._local(op, length), kind=label)
        if kind in ("uc_atomic", "atomic_misaligned", "atomic_length"):
            op = self.rng.choice(ATOMIC_OPS)
            word = self.rng.randrange(ATOM_WORDS)
            skew = self.rng.randint(1, 7) if kind == "atomic_misaligned" else 0
            size = self.rng.choice((0, 1, 4, 7, 9, 16)) if kind == "atomic_length" else 8
            return self._build(seq, op, self._local(op, size), kind=label,
                               remote=self.dst_mr.remote(self._atom_offset(word) + skew))
        if kind == "awrite_misaligned":     # an ATOMIC WRITE to an address not 8-byte aligned
            remote = self._remote(WROpcode.ATOMIC_WRITE, ATOMIC_WRITE_BYTES)
            return self._build(seq, WROpcode.ATOMIC_WRITE, NO_SGE, kind=label,
                               remote=RemoteAddr(remote.addr + self.rng.randint(1, 7),
                                                 remote.rkey))
        if kind == "over_2g":      # a message of more than 2^31 bytes (its SGEs need no MR)
            op = self.rng.choice([op for op in self._sge_opcodes() if op not in READS_BACK])
            length = (1 << 31) + self.rng.randint(1, 1 << 20)
            return self._build(seq, op, SGE(self.src_mr.addr, length, self.src_mr.lkey),
                               remote=self.dst_mr.remote(SINK),
                               recv=self._recv_for(seq, op, 64), kind=label)
        if kind == "ud_too_long":
            length = self.mtu + self.rng.randint(1, 64)
            op = self._opcode()
            return self._build(seq, op, self._local(op, length),
                               recv=self._recv_for(seq, op, length), kind=label)
        if kind == "ud_rdma":
            op = self.rng.choice((WROpcode.RDMA_WRITE, WROpcode.RDMA_WRITE_WITH_IMM,
                                  WROpcode.RDMA_READ, *ATOMIC_OPS))
            return self._build(seq, op, self._local(op, length), kind=label)
        ah = {"ah_other_pd": lambda: self.res.other_pd_ahs[self.port],
              "ah_other_port": lambda: self.rng.choice(self.res.ahs[3 - self.port]),
              "ah_invalid": lambda: self.rng.choice((self.res.unused_ahn, 0x4321))}[kind]()
        op = self._opcode()
        return self._build(seq, op, self._local(op, length), ah=ah,
                           recv=self._recv_for(seq, op, length), kind=label)

    def _bad_remote(self, seq, kind, length, label):
        ops = [op for op in self._sge_opcodes() if op not in SENDS]
        op = self._opcode(ops)
        length = 8 if op in ATOMIC_OPS else length
        if kind == "rkey_access":  # a region without the right the operation needs (the
            # special regions have no REMOTE_ATOMIC)
            mr = self.dst_res.write_only if op == WROpcode.RDMA_READ else self.dst_res.read_only
            addr, key = self._special(mr, length)
            addr -= addr % 8 if op in ATOMIC_OPS else 0
        else:
            area = SINK if op in WRITES else ATOM if op in ATOMIC_OPS else SRC
            addr, key = self._bad_key(kind, self.dst_mr, self._offset(area, length), length,
                                      self.dst_res)
        # A WRITE_WITH_IMM that fails the rkey check consumes no receive: none is posted.
        return self._build(seq, op, self._local(op, length), remote=RemoteAddr(addr, key),
                           kind=label)

    def _bad_recv(self, seq, kind, length, label):
        op = self.rng.choice(sorted(SENDS))
        need = length + (GRH_BYTES if self.transport == QPType.UD else 0)
        if kind == "recv_short":
            size = self.rng.randrange(need)
            sge = self.dst_mr.sge(self._offset(RECV, size), size)
        else:
            size = need + self.rng.randint(0, 64)
            choice = self.rng.choice(("no_local_write", "other_pd", "stale", "oob"))
            if choice == "no_local_write":
                addr, key = self._special(self.dst_res.no_local_write, size)
            else:
                addr, key = self._bad_key(f"recv_{choice}", self.dst_mr,
                                          self._offset(RECV, size), size, self.dst_res)
            sge = SGE(addr, size, key)
        recv = RecvWR(sge, self._wr_id(seq, recv=True))
        return self._build(seq, op, self._local(op, length), recv=recv, kind=label)

    def _silent(self, seq):
        kind = self.rng.choice(SILENT_ERRORS[self.transport])
        label = f"silent {kind}"
        length = self.rng.randint(1, min(UD_MAX, 2048))
        if kind.startswith("rkey"):
            return self._bad_remote(seq, kind, length, label)
        if kind.startswith("recv"):
            return self._bad_recv(seq, kind, length, label)
        op = self._opcode()
        if kind == "qkey_mismatch":  # dropped: consumes no receive
            return self._build(seq, op, self._local(op, length), kind=label,
                               qkey=self.dst.attr.qkey ^ (1 << self.rng.randrange(31)))
        assert kind == "ud_unreachable"
        # the AHs lead to the peer port: its QPs of other transports, and the UD QPs of the
        # port the AHs do not lead to, are out of reach
        peer, far = self.res.peer[self.port], self.dst_res
        qpns = ([far.unused_qpn, 0, 1, 0xABCDE]
                + [q.qp_num for q in far.qps_by_port[peer] if q.qp_type != QPType.UD]
                + [q.qp_num for q in far.qps_by_port[3 - peer] if q.qp_type == QPType.UD])
        # how many there are depends on the placement: one draw of a fixed width, so the
        # flow's generator stays in step across placements (choice() draws a varying number)
        qpn = qpns[self.rng.getrandbits(32) % len(qpns)]
        return self._build(seq, op, self._local(op, length), kind=label, remote_qpn=qpn)


# --- the program ------------------------------------------------------------------------------

class RandomTraffic(Observer):
    """The program on `sides`, [(tb, dev, sb)] of one device or of two cabled ones. `peer`
    says where the peers of device 0's QPs are: port -> (side, port)."""

    def __init__(self, sides, seed, peer, lossy=False):
        self.sides = sides
        self.lossy = lossy
        self.tb, self.dev, self.sb = sides[0]
        self.seed = seed
        self.faults = {}            # (device, port): the LinkFaults of a lossy cable
        self.peer = peer
        self.rng = random.Random(f"{seed}:setup")
        self.log = self.tb.log
        self.flows = []
        self.sending = {}    # (side, qpn) -> the flow it sends for
        self.receiving = {}  # (side, qpn) -> the flow that feeds its receive queue
        self.statuses = Counter()
        self.armed = set()   # (side, cqn) of the CQs armed since their last event
        self.completions = {}  # (plan index, is_recv) -> what software sees of each, in order
        self.undefined = []    # (MR, iova, length) whose contents may differ between placements
        self.side_of = {id(dev): d for d, (_, dev, _) in enumerate(sides)}
        for _, dev, _ in sides:
            dev.observers.append(self)

    def peer_of(self, side, port):
        """(side, port) where the peers of the QPs on `side`'s `port` are."""
        if side == 0:
            return self.peer[port]
        return next((0, p) for p, (d, q) in self.peer.items() if (d, q) == (side, port))

    # --- set-up -----------------------------------------------------------------------------

    async def region(self, side, pd, size, access, name):
        """A registered region of random bytes on `side`'s device; half of them get an iova
        unrelated to the host address, so translation is exercised. Its bytes and iova come
        from `name`, so they are the same in every placement."""
        rng = random.Random(f"{self.seed}:{name}")
        dev = self.sides[side][1]
        addr = dev.alloc(size)
        dev.write(addr, rng.randbytes(size))
        iova = addr if rng.random() < 0.5 else rng.randrange(1 << 40, 1 << 63)
        return await pd.reg_mr(addr, size, access, iova=iova)

    def random_route(self):
        """The random part of an address vector: DLID path bits, SL, source path bits, half
        of the time GRH fields, and (Ethernet) the GID table entry it leaves from and the GID
        it aims at among those that entry reaches. Drawn the same whatever the port it will
        aim at (fixed-width draws: how many GIDs a route reaches depends on the placement),
        so every placement builds the same program; and on either link, so a seed's program
        differs between InfiniBand and Ethernet only in its addresses."""
        rng = self.rng
        grh = None
        if rng.random() < 0.5:
            grh = dict(flow_label=rng.getrandbits(20), hop_limit=rng.randint(1, 255),
                       traffic_class=rng.getrandbits(8))
        return dict(path_bits=rng.getrandbits(7), sl=rng.randrange(16),
                    src_path_bits=rng.randrange(8), grh=grh, sgid=rng.getrandbits(8),
                    dgid=rng.getrandbits(8))

    def address_vector(self, route, source, far):
        """`route` from `source` aimed at `far`, each (side, port): one of the far port's
        DLIDs, and its GID when global. On Ethernet (RoCE v2) the GID is the address, and the
        route always global: from the route's entry of the source port's GID table (IPv4,
        IPv6 or IPv4 on VLAN 7) to a GID of the far port that entry reaches, one of its IP
        version (the driver refuses two versions) on its VLAN; a loopback (the far port is the
        source port) reaches any of the port's own GIDs of its version, VLAN or not. A
        traffic class whose ECN field says CE (congestion experienced) would have each packet
        ask for a CNP, at a rate (CNP_INTERVAL) the models do not predict: it sends ECT(0)
        instead, as a responder echoes it."""
        attr = self.sides[far[0]][1].ports[far[1]]
        av = dict(dlid=attr.lid | (route["path_bits"] & ((1 << attr.lmc) - 1)),
                  sl=route["sl"], src_path_bits=route["src_path_bits"])
        if attr.link_layer != "eth":
            return av | dict(grh=route["grh"] and GlobalRoute(attr.gid, **route["grh"]))
        table = self.sides[source[0]][1].ports[source[1]].gid_table
        entries = [i for i, entry in enumerate(table) if any(entry.gid)]
        sgid_index = entries[route["sgid"] % len(entries)]
        mine = table[sgid_index]
        reached = [entry.gid for entry in attr.own_gids()
                   if is_ipv4_mapped(entry.gid) == is_ipv4_mapped(mine.gid)
                   and (far == source or vlan_id(entry.vlan) == vlan_id(mine.vlan))]
        grh = dict(route["grh"] or {})
        grh["traffic_class"] = echoed_tclass(grh.get("traffic_class", 0))
        return av | dict(grh=GlobalRoute(reached[route["dgid"] % len(reached)],
                                         sgid_index=sgid_index, **grh))

    def plan(self):
        """Every QP as (transport, side, port, role) and the flows between them (indices)."""
        qps, flows = [], []
        ports = iter([1, 2] * 32)
        for transport, pairs in NORMAL_PAIRS.items():
            for _ in range(pairs):
                port = next(ports)
                a, b = len(qps), len(qps) + 1
                qps += [(transport, 0, port, "both"), (transport, *self.peer[port], "both")]
                flows += [(a, b, False), (b, a, False)]
        for transport, count in ERROR_FLOWS.items():
            for _ in range(count):
                port = next(ports)
                s, r = len(qps), len(qps) + 1
                qps += [(transport, 0, port, "sender"),
                        (transport, *self.peer[port], "receiver")]
                flows.append((s, r, True))
        return qps, flows

    async def setup_side(self, side, port_setup):
        """One device's objects: its ports, PDs, a stale key, the special regions, an
        unregistered key."""
        tb, dev, _ = self.sides[side]
        for port in (2, 1):
            await dev.set_port(port, **port_setup[port], mtu=PORT_MTU[port])
        res = Resources()
        res.pd, res.other_pd_pd = dev.alloc_pd(), dev.alloc_pd()
        # A key that was valid once: its MR index is registered again below, with the next
        # variant, so the stale key differs from a live one only in its low byte.
        stale = await self.region(side, res.pd, 256, FULL_ACCESS, f"stale{side}")
        res.stale_key = stale.lkey
        await stale.dereg()
        return res

    async def setup_specials(self, side, res):
        dev = self.sides[side][1]
        pd = res.pd
        res.other_pd = await self.region(side, res.other_pd_pd, SPECIAL_BYTES, FULL_ACCESS,
                                         f"other_pd{side}")
        res.read_only = await self.region(side, pd, SPECIAL_BYTES,
                                          Access.LOCAL_WRITE | Access.REMOTE_READ,
                                          f"read_only{side}")
        res.write_only = await self.region(side, pd, SPECIAL_BYTES,
                                           Access.LOCAL_WRITE | Access.REMOTE_WRITE,
                                           f"write_only{side}")
        res.no_local_write = await self.region(side, pd, SPECIAL_BYTES, Access.REMOTE_READ,
                                               f"no_local_write{side}")
        assert dev.num_mr - 1 not in dev.mrs
        res.unregistered_key = ((dev.num_mr - 1) << 8
                                | random.Random(f"{self.seed}:unregistered").randrange(256))
        res.unused_ahn = dev.num_ah - 1
        assert res.unused_ahn not in dev.ahs
        res.unused_qpn = dev.num_qp - 1
        assert res.unused_qpn not in dev.qps

    async def setup(self, port_setups):
        """`port_setups`: each side's port addresses."""
        rng = self.rng
        sides = range(len(self.sides))
        self.res = [await self.setup_side(d, port_setups[d]) for d in sides]

        qp_plan, flow_plan = self.plan()
        # Ring sizes and how full the program keeps them. A CQ gets room for every completion
        # its QPs can have unpolled, so it never overflows whatever the timing.
        rings = []
        for _, _, _, role in qp_plan:
            sq = rng.choice((16, 32, 64)) if role != "receiver" else 2
            rq = rng.choice((16, 32, 64, 128)) if role != "sender" else 2
            sq_cap = (sq if rng.random() < 0.5 else sq // 2) if role != "receiver" else 0
            rings.append((sq, rq, sq_cap, rq if role != "sender" else 0))
        cq_choice = [(rng.randrange(NUM_CQS), rng.randrange(NUM_CQS)) for _ in qp_plan]
        sge_caps = [rng.choice((1, 2, MAX_SGE)) for _ in qp_plan]   # 64- or 128-byte WQEs
        # pair k (QPs 2k, 2k + 1) gives its second QP an SRQ when k % 3 is 0, its first when 1
        on_srq = [role == "both" and i // 2 % 3 == 1 - i % 2
                  for i, (_, _, _, role) in enumerate(qp_plan)]
        depth = [[0] * NUM_CQS for _ in sides]
        for (_, side, _, _), (scq, rcq), (_, _, sq_cap, rq_cap) in zip(qp_plan, cq_choice,
                                                                       rings):
            depth[side][scq] += sq_cap
            depth[side][rcq] += rq_cap
        cqs = [[await self.sides[d][1].create_cq(max(n, 2)) for n in depth[d]] for d in sides]
        self.cqs = [(d, cq) for d in sides for cq in cqs[d]]

        qps, arenas = [], []
        for i, ((transport, side, port, role), (sq, rq, _, _), (scq, rcq)) in enumerate(
                zip(qp_plan, rings, cq_choice)):
            pd = self.res[side].pd
            sges = sge_caps[i]
            srq = await pd.create_srq(rq, max_sge=sges) if on_srq[i] else None
            qp = await pd.create_qp(transport, cqs[side][scq], cqs[side][rcq], max_send_wr=sq,
                                    max_recv_wr=rq, max_send_sge=sges, max_recv_sge=sges,
                                    srq=srq)
            qps.append(qp)
            arenas.append(await self.region(side, pd, ARENA, ARENA_ACCESS, f"arena{i}"))
        self.arenas = arenas
        self.plan_index = {(side, qp.qp_num): i
                           for i, (qp, (_, side, _, _)) in enumerate(zip(qps, qp_plan))}
        self.side_of_qp = {id(qp): side for qp, (_, side, _, _) in zip(qps, qp_plan)}

        for d in sides:
            await self.setup_specials(d, self.res[d])
        # every port's AHs get the same routes, aimed at that port's peers
        routes = [self.random_route() for _ in range(5)]
        for d in sides:
            res = self.res[d]
            res.ahs, res.other_pd_ahs, res.peer = {}, {}, {}
            for port in (1, 2):
                far = self.peer_of(d, port)
                res.peer[port] = far[1]
                res.ahs[port] = [await res.pd.create_ah(
                    port, **self.address_vector(r, (d, port), far)) for r in routes[:4]]
                res.other_pd_ahs[port] = await res.other_pd_pd.create_ah(
                    port, **self.address_vector(routes[4], (d, port), far))
            res.qps_by_port = {p: [q for q, (_, side, port, _) in zip(qps, qp_plan)
                                   if (side, port) == (d, p)] for p in (1, 2)}

        await self.connect(qps, qp_plan, flow_plan)

        normal = [f for f in flow_plan if not f[2]]
        weights = [rng.uniform(0.5, 1.5) for _ in normal]
        quotas = iter([max(1, round(NORMAL_WRS * w / sum(weights))) for w in weights])
        for i, (s, r, error) in enumerate(flow_plan):
            quota = rng.randint(*ERROR_WRS) if error else next(quotas)
            ss, rs = qp_plan[s][1], qp_plan[r][1]
            flow = Flow(self.res[ss], self.res[rs], qps[s], qps[r], arenas[s], arenas[r], s,
                        f"{self.seed}:flow{i}", quota, error)
            flow.sq_cap, flow.rq_cap = rings[s][2], rings[r][3]
            flow.side = ss
            self.flows.append(flow)
            self.sending[(ss, qps[s].qp_num)] = flow
            self.receiving[(rs, qps[r].qp_num)] = flow
        self.qps = qps
        await self.bind_windows()

    async def bind_windows(self):
        """Memory windows for some connected error-free flows: the receiver allocates one
        (type 2 mostly, bound to its QP; type 1 now and then) and binds it over its whole arena
        with the rights its QP gives, before any traffic; the program waits for the binds."""
        rng = self.rng
        binds = []
        for i, flow in enumerate(self.flows):
            if flow.error or flow.transport == QPType.UD or rng.random() >= WINDOW_RATE:
                continue
            mw_type = 1 if rng.random() < 0.25 else 2
            mw = await flow.dst_mr.pd.alloc_mw(mw_type)
            rights = flow.dst.attr.qp_access_flags & (Access.REMOTE_WRITE | Access.REMOTE_READ)
            wr = replace(mw.bind(flow.dst_mr.sge(0, ARENA), rights,
                                 wr_id=flow.wr_tag | 1 << 30),
                         flags=SendFlags.SIGNALED)
            await flow.dst.post_send(wr)
            binds.append((flow, mw, wr))
        pending = {id(flow.dst) for flow, _, _ in binds}
        for _ in range(1000):
            if not pending:
                break
            for side, cq in self.cqs:
                for wc in await cq.poll():
                    assert wc.opcode == WCOpcode.BIND_MW and wc.status == WCStatus.SUCCESS, \
                        f"a window's bind completed {wc}"
                    pending.discard(next(id(f.dst) for f, _, w in binds
                                         if w.wr_id == wc.wr_id))
            await ClockCycles(self.tb.dut.clk, 100)
        assert not pending, f"{len(pending)} window binds did not complete"
        for flow, mw, wr in binds:
            mw.bound(wr)
            flow.window = mw
            flow.window_reads = not self.lossy

    async def connect(self, qps, qp_plan, flow_plan):
        """Every QP to RTS. RC and UC aim at their partner with a random address vector for
        the partner's port, and a path MTU the pair shares (RC READ responses are segmented by
        the responder's and placed by the requester's); the receiver of the first RC error flow
        refuses RDMA READ (an error kind of its own). UD pairs share a Q_Key."""
        rng = self.rng
        partner = {}
        for s, r, _ in flow_plan:
            partner.setdefault(s, r)
            partner.setdefault(r, s)
        no_read = next(r for s, r, error in flow_plan if error and qp_plan[s][0] == QPType.RC)
        qkeys, mtus = {}, {}
        for i, qp in enumerate(qps):
            transport, side, port, _ = qp_plan[i]
            if transport == QPType.UD:
                pair = min(i, partner[i])
                qkey = qkeys.setdefault(pair, rng.getrandbits(31))
                await qp.to_rts(port=port, qkey=qkey, sq_psn=rng.getrandbits(24))
                continue
            access = Access.REMOTE_WRITE | Access.REMOTE_ATOMIC
            if i != no_read:
                access |= Access.REMOTE_READ
            pair = min(i, partner[i])
            if pair not in mtus:
                mtus[pair] = rng.choice(PAIR_MTUS)
            # the partner's PSNs are this QP's: drawn once per pair and direction
            _, far_side, far_port, _ = qp_plan[partner[i]]
            await qp.to_rts(qps[partner[i]].qp_num, port=port, access=access,
                            path_mtu=mtus[pair], rnr_retry=rng.randrange(8),
                            timeout=RC_TIMEOUT[self.lossy],
                            sq_psn=self.psn(i), rq_psn=self.psn(partner[i]),
                            **self.address_vector(self.random_route(), (side, port),
                                                  (far_side, far_port)))

    def lossy_qpns(self, side):
        """The QPNs on `side` whose packets the cables into it may lose (tb/link_faults.py):
        every UC and UD QP's (the model takes their packets as the cables deliver them:
        Model.arrived), and the RC QPs of flows without a planned error at either end. A
        planned RC error ends in a NAK, and a lost NAK after the responder has gone to ERR
        leaves the requester RETRY_EXC_ERR, as on any RC link."""
        spoiled = {id(qp) for f in self.flows if f.error for qp in (f.src, f.dst)}
        return {qp.qp_num for f in self.flows for qp, d in ((f.src, f.side),
                                                           (f.dst, self.side_of_qp[id(f.dst)]))
                if d == side and (f.transport != QPType.RC or id(qp) not in spoiled)}

    def psn(self, i):
        """The first PSN QP number `i` of the plan sends with (its partner expects it)."""
        return random.Random(f"{self.seed}:psn{i}").getrandbits(24)

    # --- running ------------------------------------------------------------------------------

    async def poll(self):
        """Poll every CQ once and hand the completions to their flows (the scoreboard has
        checked each one by then)."""
        n = 0
        for side, cq in self.cqs:
            for wc in await cq.poll():
                kind = "recv" if wc.is_recv else "send"
                self.statuses[f"{kind} {getattr(wc.status, 'name', wc.status)}"] += 1
                if wc.is_recv:
                    self.receiving[(side, wc.qp_num)].on_recv_completion(wc)
                else:
                    self.sending[(side, wc.qp_num)].on_send_completion(wc)
                n += 1
        return n

    async def wait_for_completions(self):
        """Sleep until a CQ has an event. Each CQ is armed once per event; after arming, the
        CQs are polled again, since a completion written before the arm raises no event."""
        for side, cq in self.cqs:
            if (side, cq.cqn) not in self.armed:
                await cq.req_notify()
                self.armed.add((side, cq.cqn))
        if await self.poll():
            return
        if len(self.sides) > 1:   # either device's irq, or the TB's timeout
            await First(*(RisingEdge(tb.irq) for tb, _, _ in self.sides),
                        Timer(20000 * CLOCK_PERIOD_NS, "ns"))
        for side, (_, dev, _) in enumerate(self.sides):
            fired = await dev.read_reg(Reg.EVENT) if len(self.sides) > 1 else \
                await dev.wait_event()
            if fired and len(self.sides) > 1:
                await dev.write_reg(Reg.EVENT, fired)
            self.armed -= {(side, cq.cqn) for d, cq in self.cqs
                           if d == side and fired >> cq.cqn & 1}

    async def run(self):
        tb = self.tb
        start = last_progress = tb.cycle()
        active = list(self.flows)
        while active:
            posted = 0
            for flow in active:
                posted += await flow.post_batch()
            polled = await self.poll()
            active = [f for f in active if not f.done]
            if polled:
                last_progress = tb.cycle()
            if posted or polled or not active:
                continue
            await self.wait_for_completions()
            if tb.cycle() - last_progress > STALL_CYCLES:
                raise AssertionError(await self.stall_report(active))
        return tb.cycle() - start

    async def stall_report(self, active):
        lines = [f"no completion for {STALL_CYCLES} cycles (cycle {self.tb.cycle()}); "
                 f"{len(active)} flow(s) waiting:"]
        for flow in active:
            status = await flow.src.query()
            lines.append(f"  {flow.name}: {len(flow.outstanding)} WR(s) outstanding, first "
                         f"wr_id {flow.outstanding[0]:#x}; {flow.recvs_outstanding} receive(s) "
                         f"outstanding; sender {status}" if flow.outstanding else
                         f"  {flow.name}: nothing outstanding, {flow.quota - flow.generated} "
                         f"to generate")
        return "\n".join(lines)

    # --- results ------------------------------------------------------------------------------

    def check_program(self):
        """The program did what it meant to: every error flow's fatal WR was an error."""
        for flow in self.flows:
            posted = sum(flow.stats.values())
            assert posted == flow.quota, f"{flow.name}: posted {posted} WRs of {flow.quota}"
            if flow.error:
                state = self.sides[flow.side][2].model.qps[flow.src.qp_num].state
                assert state == QPState.ERR, (f"{flow.name}: its fatal WR #{flow.fail_at} "
                                              f"left the sender in {state.name}")

    def on_poll_cq(self, cq, wcs):
        """Every completion software polls (the program's and the scoreboard's last drain),
        as the placements must agree on it: SLID and DLID path bits name the ports, which
        differ, and are left out (on Ethernet they are 0, as the SL is). A failed receive
        leaves its buffer undefined; a UD receive with a GRH (on Ethernet, every one) has the
        sender's and the receiving port's GIDs in bytes 8-39 of its GRH area (on Ethernet the
        IP header's addresses, and IPv4's header checksum, which covers them)."""
        side = self.side_of[id(cq.dev)]
        for wc in wcs:
            # the source QPN is left out too: QPNs are numbered per device
            # and the key a SEND with invalidate invalidated: keys are numbered per device
            imm = None if wc.wc_flags & WCFlags.WITH_INV else wc.imm_data
            self.completions.setdefault((self.plan_index[(side, wc.qp_num)], wc.is_recv),
                                        []).append(
                (wc.wr_id, wc.status, wc.opcode, wc.byte_len, imm, wc.wc_flags, wc.sl))
            flow = self.receiving.get((side, wc.qp_num))
            if not wc.is_recv or flow is None or wc.wr_id not in flow.recv_sges:
                continue
            sge = flow.recv_sges[wc.wr_id]
            if wc.status != WCStatus.SUCCESS:
                self.undefined.append((flow.dst_mr, sge.addr, sge.length))
            elif wc.wc_flags & WCFlags.GRH and flow.transport == QPType.UD:
                self.undefined.append((flow.dst_mr, sge.addr + 8, 32))   # SGID, DGID

    def results(self):
        """What the program can see at the end: the completions of each queue in order, each
        QP's arena, the ranges whose contents are undefined (failed receives; the SINK and
        RECV areas of a UC or UD receiver over lossy cables) and the QPs whose receive
        completions depend on what the cables lost (plan indices)."""
        # A failed receive may name bytes outside its arena (a bad address is what failed it):
        # only its part inside the arena is undefined.
        undefined = []
        for mr, addr, length in self.undefined:
            if mr in self.arenas:
                start, end = max(addr - mr.addr, 0), min(addr - mr.addr + length, ARENA)
                if start < end:
                    undefined.append((self.arenas.index(mr), start, end - start))
        lossy = {self.arenas.index(f.dst_mr) for f in self.flows if f.lossy}
        undefined += [(i, area, AREA) for i in lossy for area in (SINK, RECV)]
        return self.completions, [mr.read(0, ARENA) for mr in self.arenas], undefined, lossy

    def summary(self, cycles, wall):
        kinds, lengths = Counter(), Counter()
        for flow in self.flows:
            kinds.update(flow.stats)
            lengths.update(flow.lengths)
        wrs = sum(kinds.values())
        data = sum(f.bytes for f in self.flows)
        transports = Counter(qp.qp_type.name for qp in self.qps)
        windows = sorted(Counter(f.window.type for f in self.flows if f.window).items())
        lines = [f"{wrs} send WRs on {len(self.qps)} QPs ({dict(transports)}) in "
                 f"{len(self.flows)} flows, {data} payload bytes, {cycles} cycles, "
                 f"{wall:.1f} s wall",
                 "  WRs: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())),
                 "  lengths: " + ", ".join(f"{k} {lengths[k]}" for k in
                                           ("0", "1-64", "65-1K", "1K-8K", ">8K")),
                 "  completions polled while running: "
                 + ", ".join(f"{k} {n}" for k, n in sorted(self.statuses.items())),
                 "  memory windows: " + ", ".join(f"type {t} {n}" for t, n in windows)
                 + f", WRs through a window's key {sum(f.window_uses for f in self.flows)}"]
        return wrs, "\n".join(lines)


SAME_PORT = {1: (0, 1), 2: (0, 2)}
OTHER_PORT = {1: (0, 2), 2: (0, 1)}
OTHER_DEVICE = {1: (1, 1), 2: (1, 2)}   # tb_fabric cables port p to the other's port p
RESULTS = {}   # placement -> results of its run, for a later test to compare with


def lossy_cables(program, seed, loss):
    """Every cable between the devices is a lossy_cable at `loss` (it loses `loss` of the
    packets, duplicates, delays and reorders others), aimed at the QPs `lossy_qpns` names;
    the models stop predicting packets and counters, and take UC and UD packets as the
    cables deliver them. UC and UD flows lose messages: their receivers' completions and
    memory are the model's, not the loopback run's."""
    for flow in program.flows:
        flow.lossy = flow.transport != QPType.RC
    for d, (tb, _, sb) in enumerate(program.sides):
        sb.cables_lossy(tb.watch_arrivals())
        qpns = program.lossy_qpns(1 - d)
        for port, cable in tb.cables.items():
            faults = lossy_cable(loss, seed << 4 | d << 2 | port, qpns=qpns)
            faults.apply(cable)
            program.faults[d, port] = faults
            tb.log.info("cable from dev%d port %d: %s", d, port, faults.describe())


def unreliable_fates(sides):
    """What the lossy cables did to UC and UD packets (the transports without retransmission):
    how many were sent, lost (never arrived whole) and duplicated. A packet is known by its
    source address (the SLID; on Ethernet the source GID), destination QP and PSN."""
    def tally(sniffers):
        return Counter((c.packet.lrh.slid if c.packet.roce is None else c.packet.roce.sgid,
                        c.packet.bth.dest_qp, c.packet.bth.psn)
                       for s in sniffers for c in s.captures
                       if c.packet is not None and c.packet.op.transport != "RC")
    sent = tally(s for t, _, _ in sides for s in t.sniffers.values())
    arrived = tally(s for t, _, _ in sides for s in t.arrivals.values())
    return (f"{sum(sent.values())} sent, {len(sent.keys() - arrived.keys())} lost, "
            f"{sum(n > 1 for n in arrived.values())} duplicated")


async def run_program(dut, placement, peer, loss=0.0):
    seed = seed_from_env()
    fabric = hasattr(dut, "dev1_irq")
    width = len((dut.dev0_m_axi_wdata if fabric else dut.m_axi_wdata))
    dut._log.info("random traffic, peers on the %s: SEED=%d, DATA_WIDTH=%d, ports on %s "
                  "(RDMA_LINK=%s; replay with SEED=%d)", placement, seed, width,
                  LINK_NAMES[LINK], LINK, seed)
    wall = time.monotonic()
    if fabric:
        sides = list(await open_fabric(dut, seed))
        port_setups = FABRIC_PORT_SETUP
    else:
        sides = [await open_device(dut, seed, cabled=True)]
        port_setups = (PORT_SETUP,)
    if peer != OTHER_DEVICE:
        sides, port_setups = sides[:1], port_setups[:1]
    tb = sides[0][0]
    program = RandomTraffic(sides, seed, peer, lossy=bool(loss))
    try:
        await program.setup(port_setups)
        if loss:
            lossy_cables(program, seed, loss)
        cycles = await program.run()
        wrs, report = program.summary(cycles, time.monotonic() - wall)
        tb.log.info("%s", report)
        for _, _, sb in sides:
            await sb.check()
        if loss:
            tb.log.info("UC and UD packets on the lossy cables: %s", unreliable_fates(sides))
        if peer == SAME_PORT:
            tb.assert_links_idle()
        else:
            assert all(t.tx_beats(p) for t, _, _ in sides for p in (1, 2)), \
                "a link carried nothing"
        program.check_program()
        assert wrs >= 0.9 * NORMAL_WRS and len(program.qps) >= 16, \
            "the program is smaller than required"
        tb.log.info("random traffic, peers on the %s: %d completions matched, SEED=%d passed",
                    placement, sum(sb.matched for _, _, sb in sides), seed)
        return program.results()
    except Exception as e:
        for d, (t, _, _) in enumerate(sides):
            t.log.info("device %d: %s", d, engine_states(dut.dev1 if d else
                                                         (dut.dev0 if fabric else dut.dut)))
        for t, _, _ in sides:   # the links' last words, for the post-mortem
            for port, sniffer in t.sniffers.items():
                for c in sniffer.captures[-12:]:
                    t.log.info("port %d link, cycle %d: %s", port, c.cycle,
                               c.packet.summary() if c.packet else c.error)
        write_link_traces(sides, program.faults, placement)
        raise AssertionError(f"random traffic (peers on the {placement}) failed at "
                             f"DATA_WIDTH={width} on {LINK_NAMES[LINK]}: {e}\nreplay with "
                             f"SEED={seed} RDMA_LINK={LINK}") from e


def write_link_traces(sides, faults, placement):
    """Every link's pcap and a text trace, each packet with the fault its cable gave it (from
    the cable model's own generator), under sim/out/ for the post-mortem."""
    simrun.OUT.mkdir(parents=True, exist_ok=True)
    where = "".join(c if c.isalnum() else "-" for c in placement)
    run = f"{cocotb.SIM_NAME.split()[0].lower()}.random-{where}"
    for d, (t, _, _) in enumerate(sides):
        for port, sniffer in t.sniffers.items():
            stem = simrun.OUT / f"{run}.dev{d}-port{port}"
            sniffer.write_pcap(f"{stem}.pcap")
            plan = faults[d, port].plan([c.data for c in sniffer.captures], sniffer.link) \
                if (d, port) in faults else [None] * len(sniffer.captures)
            with open(f"{stem}.txt", "w") as trace:
                for c, decision in zip(sniffer.captures, plan):
                    fault = decision.action if decision else "none"
                    trace.write(f"{c.cycle:>9} {'' if fault == 'none' else fault.upper():8}"
                                f"{c.packet.summary() if c.packet else c.error}\n")
            t.log.info("link trace: %s.{pcap,txt}", stem)


def engine_states(dev):
    """The device's engines at a glance, for a failure's post-mortem (Icarus: Verilator keeps
    the device's internals private, tb/hdl/harness_access.vlt)."""
    if not hasattr(dev, "req"):
        return "internal signals not visible on this simulator"
    names = ("req.state", "req.turn", "req.copies.busy", "rx.state", "rx.in_msg", "rx.cur",
             "rx.h_op", "msgs.locked", "msgs.owner", "msgs.busy", "resp.state", "cmp.c_state",
             "hdr_valid", "pl_tvalid", "dma_c_valid", "dma_c_ready", "dma_rd_tvalid",
             "dma_rd_tready", "dma_rd_tlast")
    per_port = ("tx.rq_count", "tx.chunk_busy", "tx.pk.n_full", "tx.pk.f_state",
                "tx.pk.r_out", "tx.pk.r_all", "tx.pk.pl_req_valid", "tx.pk.pl_req_len",
                "tx.s_axis_pl_tready")
    values = [f"{n}={getattr_path(dev, n).value}" for n in names]
    for p in range(2):
        values += [f"port{p + 1}.{n}={getattr_path(dev.port[p], n).value}" for n in per_port]
    return " ".join(values)


def getattr_path(obj, path):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def compare(first, second):
    """Differences between two runs' results, ignoring the undefined ranges of either and
    the receive completions of QPs whose messages a cable may have lost."""
    (wcs1, mem1, undef1, lossy1), (wcs2, mem2, undef2, lossy2) = first, second
    diffs = []
    for index, recv in sorted(set(wcs1) | set(wcs2)):
        if recv and index in lossy1 | lossy2:
            continue
        # every receive completes; a send only when signaled or failed, and which sends are
        # signaled depends on how the batches fell, which depends on timing
        one = {wc[0]: wc for wc in wcs1.get((index, recv), [])}
        two = {wc[0]: wc for wc in wcs2.get((index, recv), [])}
        must = set(one) | set(two) if recv else {
            wr_id for wr_id, wc in (one | two).items() if wc[1] != WCStatus.SUCCESS}
        for wr_id in sorted(must | (set(one) & set(two))):
            if one.get(wr_id) != two.get(wr_id):
                diffs.append(f"plan QP {index} {'receive' if recv else 'send'} wr_id "
                             f"{wr_id:#x}: {one.get(wr_id)} vs {two.get(wr_id)}")
    undefined = set(undef1) | set(undef2)
    for i, (a, b) in enumerate(zip(mem1, mem2)):
        a, b = bytearray(a), bytearray(b)
        for arena, offset, length in undefined:
            if arena == i:
                a[offset:offset + length] = b[offset:offset + length] = bytes(length)
        if a != b:
            at = next(k for k in range(len(a)) if a[k] != b[k])
            diffs.append(f"arena of plan QP {i} differs from byte {at:#x}")
    return diffs


async def compare_with_loopback(dut, placement, peer, loss=0.0):
    results = await run_program(dut, placement, peer, loss)
    assert "same port" in RESULTS, "the loopback run failed: nothing to compare with"
    diffs = compare(RESULTS["same port"], results)
    assert not diffs, (f"peers on the {placement} and on the same port differ:\n  "
                       + "\n  ".join(diffs[:20]))


@cocotb.test()
async def random_traffic_loopback(dut):
    """Thousands of random WRs over many QPs, every peer on its own port: the bypass."""
    RESULTS["same port"] = await run_program(dut, "same port", SAME_PORT)


@cocotb.test()
async def random_traffic_other_port(dut):
    """The same program with every peer on the other port: the packet path, over the cable.
    Software sees what it saw through the bypass: the same completions and memory."""
    await compare_with_loopback(dut, "other port", OTHER_PORT)


@cocotb.test()
async def random_traffic_other_device(dut):
    """The same program with every peer on the other device of tb_fabric: the packet path
    between two devices. Software sees what it saw through the bypass."""
    await compare_with_loopback(dut, "other device", OTHER_DEVICE)


@cocotb.test()
async def random_traffic_other_device_lossy(dut):
    """The same program between devices over cables that lose, duplicate, corrupt, delay and
    reorder packets at $RANDOM_LOSS: RC delivers every message exactly once, so software
    still sees what it saw through the bypass; UC and UD lose the messages the cables broke
    (and deliver a duplicated first packet or datagram again), as the models predict from
    what each cable delivered, and every sender completes as through the bypass."""
    loss = float(os.environ.get("RANDOM_LOSS", "0.01"))
    await compare_with_loopback(dut, f"other device at {loss:.0%} loss", OTHER_DEVICE, loss)


# ---------------------------------------------------------------------------------------------
# The pytest runner: Seeded random RDMA traffic at each supported data width. The seed comes from
# $SEED, else a fresh one per test, printed; a failure names it, and `SEED=<n> pytest
# tests/test_random_traffic.py` replays the run.

# The program runs with its peers on the same port (the bypass) at every width, and at 256 bits
# again with them on the other port and (test_random_traffic_other_device) on the other device,
# each compared with the first: the packet path at the other widths is covered by test_wire
# and test_fabric, and a run on the packet path costs twice one through the bypass.
TRANSPARENCY_WIDTH = 256

# Each run has an Ethernet twin (RDMA_LINK=eth, RoCE v2): the same program, its peers addressed
# by GIDs of every kind in the ports' tables, its placements told apart by the IP headers in
# UD GRH areas instead of SLIDs. make test runs one of them, on one device at 256 bits (the
# same port, then the other port: as long to simulate as its InfiniBand twin), as the link
# layer changes only the addresses and the headers around the BTH, which test_wire,
# test_rdma_dev and test_fabric check on Ethernet; make regress runs every one.
LINKS = list(LINK_NAMES)


def skip_ethernet(link, w=TRANSPARENCY_WIDTH, between_devices=False):
    """Outside make regress, the one Ethernet run is on one device at 256 bits."""
    if link == "eth" and (w != TRANSPARENCY_WIDTH or between_devices) and not REGRESS:
        pytest.skip("the program on Ethernet ports at 64 and 512 bits and between devices: "
                    "make regress")


# independent runs of each, each with its own seed: $RANDOM_RUNS (`make regress` sets it)
RUNS = range(int(os.environ.get("RANDOM_RUNS", "1")))

# The host memory's timing (tb/rdma_tb.py, MEM_TIMINGS) differs between the program's runs, so
# the engine's concurrency is exercised with the reads answered at once, late and unevenly:
# each run has its own, the next runs of make regress take the next timings in turn (500
# cycles of read latency among them: too slow to simulate for make test), and
# MEM_TIMING=<name> makes every run use that one.
TIMINGS = tuple(MEM_TIMINGS)
FIRST_TIMING = {64: "latency100", 256: "ideal", 512: "stalls", "lossy": "stalls",
                "other_device": "latency100"}


def timing_of(kind, run):
    if "MEM_TIMING" in os.environ:
        return mem_timing()
    return TIMINGS[(TIMINGS.index(FIRST_TIMING[kind]) + run) % len(TIMINGS)]


@pytest.mark.parametrize("link", LINKS)
@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("w", [64, 256, 512])
def test_random_traffic(w, run, link):
    skip_ethernet(link, w)
    seed = seed_from_env()
    timing = timing_of(w, run)
    print(f"random traffic at DATA_WIDTH={w} on {LINK_NAMES[link]}: SEED={seed} "
          f"MEM_TIMING={timing} RDMA_LINK={link}")
    runs = {"COCOTB_TEST_FILTER": r"^test_random_traffic\.random_traffic_loopback$"}
    if w == TRANSPARENCY_WIDTH:
        runs = {"COCOTB_TEST_FILTER":
                r"^test_random_traffic\.random_traffic_(loopback|other_port)$"}
    try:
        simrun.run(toplevel="tb_rdma_dev", test_module="test_random_traffic",
                   parameters={"DATA_WIDTH": w, "CABLE": 1}, name=f"random_w{w}_{run}",
                   extra_env={"SEED": str(seed), "MEM_TIMING": timing, "RDMA_LINK": link,
                              **runs})
        return
    except AssertionError as failed:  # simrun's report of the cocotb failures
        report = str(failed)
    # The seed leads the message, even when the simulator stopped before the test named it.
    pytest.fail(f"random traffic at DATA_WIDTH={w} on {LINK_NAMES[link]}: replay with "
                f"SEED={seed} MEM_TIMING={timing} RDMA_LINK={link}\n{report}", pytrace=False)


def fabric_shape():
    """The program's size between devices: FABRIC_WRS send WRs in make test."""
    return {} if REGRESS or "RANDOM_WRS" in os.environ else {"RANDOM_WRS": str(FABRIC_WRS)}


@pytest.mark.parametrize("link", LINKS)
@pytest.mark.parametrize("loss", [0.01, 0.1])
def test_random_traffic_lossy(loss, link):
    """The program between devices over lossy cables (random_traffic_other_device_lossy),
    compared with its run on one device's own ports, at 256 bits: 1 % in make test (a program
    of FABRIC_WRS send WRs, on InfiniBand), 10 % (some five times longer to simulate) and
    Ethernet under make regress."""
    if loss > 0.01 and not REGRESS:
        pytest.skip("10 % loss runs under make regress")
    skip_ethernet(link, between_devices=True)
    seed = seed_from_env()
    timing = timing_of("lossy", 0)
    print(f"random traffic between devices at {loss:.0%} loss on {LINK_NAMES[link]}: "
          f"SEED={seed} MEM_TIMING={timing} RDMA_LINK={link}")
    try:
        simrun.run(toplevel="tb_fabric", test_module="test_random_traffic",
                   parameters={"DATA_WIDTH": TRANSPARENCY_WIDTH}, name=f"random_lossy_{loss}",
                   extra_env={"SEED": str(seed), "RANDOM_LOSS": str(loss), "MEM_TIMING": timing,
                              "RDMA_LINK": link, **fabric_shape(),
                              "COCOTB_TEST_FILTER":
                              r"^test_random_traffic\.random_traffic_(loopback|other_device_lossy)$"})
        return
    except AssertionError as failed:
        report = str(failed)
    pytest.fail(f"random traffic between devices at {loss:.0%} loss on {LINK_NAMES[link]}: "
                f"replay with SEED={seed} MEM_TIMING={timing} RDMA_LINK={link}\n{report}",
                pytrace=False)


@pytest.mark.parametrize("link", LINKS)
@pytest.mark.parametrize("run", RUNS)
def test_random_traffic_other_device(run, link):
    """The same program with its peers on the other device of tb_fabric, compared with its run
    on one device's own ports (both in one simulation of tb_fabric), at 256 bits (a program of
    FABRIC_WRS send WRs in make test, on InfiniBand; Ethernet under make regress)."""
    skip_ethernet(link, between_devices=True)
    seed = seed_from_env()
    timing = timing_of("other_device", run)
    print(f"random traffic between devices on {LINK_NAMES[link]}: SEED={seed} "
          f"MEM_TIMING={timing} RDMA_LINK={link}")
    try:
        simrun.run(toplevel="tb_fabric", test_module="test_random_traffic",
                   parameters={"DATA_WIDTH": TRANSPARENCY_WIDTH}, name=f"random_fabric_{run}",
                   extra_env={"SEED": str(seed), "MEM_TIMING": timing, "RDMA_LINK": link,
                              **fabric_shape(),
                              "COCOTB_TEST_FILTER":
                              r"^test_random_traffic\.random_traffic_(loopback|other_device)$"})
        return
    except AssertionError as failed:
        report = str(failed)
    pytest.fail(f"random traffic between devices on {LINK_NAMES[link]}: replay with SEED={seed} "
                f"MEM_TIMING={timing} RDMA_LINK={link}\n{report}", pytrace=False)
