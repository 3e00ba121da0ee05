"""Unit tests of the packetizer (rtl/port/packetizer.v through tb/hdl/tb_packetizer.v).

The test drives message descriptors, serves each payload chunk request from a Python byte array
through an AxiStreamSource, collects the TX frames with an AxiStreamSink, parses every packet
with tb/ib_packet.parse (which checks CRCs, lengths and fields on its own) and compares the
whole sequence, parsed and byte for byte, with what tb/ib_packet.packetize() (or, for the
single-packet kinds: READ request, ACK, the atomics, the Packet the test composes) gives for
the same message. It also checks
the per-packet events (PktLen), the done PSN, the static-rate gap, the goodput, and that the
payload stream is never stalled by the link (test_no_mover_stall, with link stalls and
counters made in the harness, tb/hdl/tb_packetizer.v).

The message-mix tests (test_lengths, test_kinds, test_messages_back_to_back, test_atomics,
test_resend_from_inside_a_message) run once per link layer (`link`): InfiniBand, and Ethernet,
where every packet must be the RoCE v2 frame tb/ib_packet.build makes of the RoCE fields the
test derives from the descriptor as docs/packet-path.md and rtl/port/pkt_header.v give them
(Ethernet .. 802.1Q .. IPv4 or IPv6 .. UDP .. BTH .. ICRC, padding to 64 bytes, FCS), parsed
with link="eth", pkt_sent_len its frame's 4-byte words.

Bus models run on the harness's tb_clk (the falling edge under Verilator, see the harness).
Randomness comes from one seed, printed at the start of each test; SEED=<n> replays a run.
"""

import logging

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamSink, AxiStreamSource
import pytest

import tb.ib_packet as ib
from tb import simrun
from tb.ib_packet import imm_le
from tb.seed import UNIT_WIDTHS, rng_for
from tb.tx_desc import KIND, MTU_ENUM, SINGLE, TRANSPORT
from tb.verbs import ATOMIC_WRITE_BYTES

# On Verilator, cocotb resumes edge triggers after the edge's register updates, so the
# cocotbext-axi models see post-edge VALID/READY; with their pause generators on, the models
# and the RTL disagree about which beats were handed over (the same limit tb/test_dma_mover.py
# notes). Random TX backpressure and payload pauses run on event simulators only.
ON_VERILATOR = "verilator" in getattr(cocotb, "SIM_NAME", "").lower()

ATOMICS = ("COMPARE_SWAP", "FETCH_ADD", "ATOMIC_ACKNOWLEDGE")
TRANSPORT_BASE = {"RC": 0x00, "UC": 0x20, "UD": 0x60}

# Ethernet paths: (802.1Q tagged, IPv4-mapped GIDs, a nonzero flow label); each test that runs
# on Ethernet takes them in turn (shuffled each round), so every one is met.
ETH_PATHS = [(tagged, v4, flow) for tagged in (False, True) for v4 in (False, True)
             for flow in (False, True)]


def roce_sport(flow_label, src_qpn, dest_qpn):
    """The UDP source port of a RoCE v2 flow as pkt_header.v chooses it: the flow label, or
    when it is 0 the XOR of the two QP numbers (20 bits), its upper 6 bits folded onto the
    lower 14, in 0xC000 .. 0xFFFF."""
    f = flow_label or (src_qpn ^ dest_qpn) & 0xFFFFF
    return 0xC000 | ((f & 0x3FFF) ^ (f >> 14))


def frame_words(wire, link):
    """What pkt_sent_len says of a packet: InfiniBand its PktLen (LRH .. ICRC: the packet
    without its VCRC), Ethernet the frame's 4-byte words (destination MAC .. FCS) rounded up."""
    return (len(wire) - 2) // 4 if link == "ib" else -(-len(wire) // 4)


def pauses(rng, p):
    while True:
        yield rng.random() < p


class Message:
    """One descriptor: its fields, its payload and the packets it must produce."""

    def __init__(self, rng, operation, transport, length, mtu, *, grh=False, imm=False,
                 solicited=False, rate=0, psn=None, start=0, desc_transport=None,
                 atomic=None, link="ib", path=None, port_mac=None, cnp=False):
        self.operation, self.transport, self.mtu = operation, transport, mtu
        self.cnp = cnp              # desc_cnp: a CNP whatever the kind (Ethernet)
        # the transport driven on the descriptor, if not `transport` (the atomics ignore it)
        self.desc_transport = desc_transport or transport
        self.payload = rng.randbytes(length)
        self.lrh = ib.LRH(dlid=rng.randrange(1, 0xC000), slid=rng.randrange(1, 0xC000),
                          sl=rng.randrange(16))
        # the descriptor's GRH fields; on InfiniBand sent only with `grh` (desc_is_global),
        # on Ethernet always: the IP header's (desc_is_global, DLID and SLID mean nothing there)
        self.link = link
        self.net = ib.GRH(sgid=rng.randbytes(16), dgid=rng.randbytes(16),
                          hop_limit=rng.randrange(256), tclass=rng.randrange(256),
                          flow_label=rng.randrange(1 << 20))
        self.is_global = grh
        if link == "eth":
            # path: (802.1Q tagged, IPv4-mapped GIDs, nonzero flow label)
            self.path = path or (rng.random() < 0.5, rng.random() < 0.5, rng.random() < 0.5)
            tagged, v4, flow = self.path
            if v4:
                self.net.sgid = ib.ipv4_gid(rng.randbytes(4))
                self.net.dgid = ib.ipv4_gid(rng.randbytes(4))
            elif rng.random() < 0.25:
                # an IPv4-mapped destination from an IPv6 source: still IPv6 (the SGID decides)
                self.net.dgid = ib.ipv4_gid(rng.randbytes(4))
            if not flow:
                self.net.flow_label = 0
            self.dmac = rng.randbytes(6)
            self.port_mac = port_mac
            vid = rng.choice([0, 0xFFF, rng.randrange(1 << 12)])
            # an untagged path's VLAN ID bits mean nothing
            self.desc_vlan = (1 << 12 | vid) if tagged else rng.randrange(1 << 12)
        self.grh = self.net if grh and link == "ib" else None
        self.pkey = rng.randrange(1 << 16)
        self.dest_qp = rng.randrange(1 << 24)
        self.psn = rng.randrange(1 << 24) if psn is None else psn
        self.deth = ib.DETH(qkey=rng.randrange(1 << 32), src_qp=rng.randrange(1 << 24))
        self.reth = ib.RETH(va=rng.randrange(1 << 64), rkey=rng.randrange(1 << 32),
                            dma_len=rng.randrange(1 << 32))
        self.aeth = ib.AETH(syndrome=rng.randrange(256), msn=rng.randrange(1 << 24))
        self.immdt = ib.ImmDt(rng.randrange(1 << 32)) if imm else None
        # desc_atomic_a, desc_atomic_b
        self.atomic = atomic or (rng.randrange(1 << 64), rng.randrange(1 << 64))
        self.solicited = solicited
        self.rate = rate
        self.start = start          # a resend from this packet index on

    def roce(self):
        """The RoCE v2 fields of every frame of the message, from the descriptor: the
        destination MAC, the port's MAC, with an 802.1Q tag when desc_vlan[12] (PCP the SL's
        low 3 bits, VID desc_vlan[11:0]), IPv4 when the SGID is IPv4-mapped (no flow label
        there) else IPv6, the UDP source port from the flow label or the QP numbers."""
        n, tagged = self.net, bool(self.desc_vlan >> 12)
        return ib.RoCE(dmac=self.dmac, smac=self.port_mac, sgid=n.sgid, dgid=n.dgid,
                       hop_limit=n.hop_limit, tclass=n.tclass,
                       flow_label=0 if ib.is_ipv4_mapped(n.sgid) else n.flow_label,
                       sport=roce_sport(n.flow_label, self.deth.src_qp, self.dest_qp),
                       vlan=self.desc_vlan & 0xFFF if tagged else None,
                       pcp=self.lrh.sl & 7 if tagged else 0)

    def addressing(self):
        """The Packet keyword arguments that address every packet of the message."""
        if self.link == "eth":
            return {"roce": self.roce()}
        return {"lrh": self.lrh, "grh": self.grh}

    def expected(self):
        op, tr = self.operation, self.transport
        if self.cnp:
            return [ib.Packet(roce=self.roce(), cnp=ib.CNPReserved(),
                              bth=ib.BTH(opcode=ib.CNP_OPCODE, dest_qp=self.dest_qp,
                                         psn=self.psn, pkey=self.pkey, becn=True))]
        if op in SINGLE:
            low = SINGLE[op]
            a, b = self.atomic
            ext = {
                "RDMA_READ_REQUEST": {"reth": self.reth},
                "ACKNOWLEDGE": {"aeth": self.aeth},
                "ATOMIC_ACKNOWLEDGE": {"aeth": self.aeth,
                                       "atomic_ack_eth": ib.AtomicAckETH(orig_data=a)},
                "COMPARE_SWAP": {"atomic_eth": ib.AtomicETH(va=self.reth.va, rkey=self.reth.rkey,
                                                            swap_add=a, compare=b)},
            }
            ext["FETCH_ADD"] = ext["COMPARE_SWAP"]
            # atomic requests always ask for their ACK
            bth = ib.BTH(opcode=TRANSPORT_BASE[tr] | low, dest_qp=self.dest_qp, psn=self.psn,
                         pkey=self.pkey, se=self.solicited,
                         ackreq=op in ("COMPARE_SWAP", "FETCH_ADD"))
            return [ib.Packet(bth=bth, **self.addressing(), **ext[op])]
        return ib.packetize(
            tr, op, self.payload, self.mtu, dest_qp=self.dest_qp, psn=self.psn,
            pkey=self.pkey, **self.addressing(), deth=self.deth if tr == "UD" else None,
            reth=self.reth if op in ("RDMA_WRITE", "ATOMIC_WRITE") else None,
            aeth=self.aeth if op == "RDMA_READ_RESPONSE" else None, immdt=self.immdt,
            se=self.solicited, start=self.start)

    def drive(self, dut):
        g = self.net if self.grh or self.link == "eth" else None
        eth = self.link == "eth"
        fields = {
            "kind": KIND[self.operation], "transport": TRANSPORT[self.desc_transport],
            "imm_valid": int(self.immdt is not None),
            "inv": 0, "awrite": int(self.operation == "ATOMIC_WRITE"),
            "cnp": int(self.cnp),
            "imm": imm_le(self.immdt.data) if self.immdt else 0,
            "solicited": int(self.solicited),
            "len": len(self.payload), "mtu": MTU_ENUM[self.mtu],
            "dlid": self.lrh.dlid, "slid": self.lrh.slid, "sl": self.lrh.sl,
            "is_global": int(self.is_global), "tclass": g.tclass if g else 0,
            "flow_label": g.flow_label if g else 0, "hop_limit": g.hop_limit if g else 0,
            "sgid": int.from_bytes(g.sgid, "big") if g else 0,
            "dgid": int.from_bytes(g.dgid, "big") if g else 0,
            "pkey": self.pkey, "dest_qpn": self.dest_qp,
            "psn": (self.psn + self.start) & ib.PSN_MASK, "start": self.start * self.mtu,
            "qkey": self.deth.qkey, "src_qpn": self.deth.src_qp, "raddr": self.reth.va,
            "rkey": self.reth.rkey, "dma_len": self.reth.dma_len,
            "syndrome": self.aeth.syndrome, "msn": self.aeth.msn, "rate": self.rate,
            "atomic_a": self.atomic[0], "atomic_b": self.atomic[1],
            "dmac": int.from_bytes(self.dmac, "big") if eth else 0,
            "vlan": self.desc_vlan if eth else 0,
        }
        for name, value in fields.items():
            getattr(dut, f"desc_{name}").value = value

    def describe(self):
        driven = "" if self.desc_transport == self.transport else f" (driven {self.desc_transport})"
        if self.link == "eth":
            tagged, v4, flow = self.path
            where = (f"eth {'tagged' if tagged else 'untagged'} {'IPv4' if v4 else 'IPv6'} "
                     f"flow label {self.net.flow_label:#x} is_global={int(self.is_global)}")
        else:
            where = f"grh={self.grh is not None}"
        return (f"{self.transport}{driven} {self.operation} len={len(self.payload)} "
                f"mtu={self.mtu} {where} imm={self.immdt is not None} "
                f"se={self.solicited}")


class TB:
    def __init__(self, dut, test_name, link="ib"):
        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        self.log.setLevel(logging.INFO)
        self.rng = rng_for(f"{test_name}/{link}" if link != "ib" else test_name, self.log)
        self.link = link
        self.port_mac = self.rng.randbytes(6) if link == "eth" else bytes(6)
        self.paths = []             # Ethernet paths still to take this round
        self.nbytes = len(dut.m_axis_tx_tdata) // 8
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_pl"), dut.tb_clk,
                                      dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_tx"), dut.tb_clk,
                                  dut.rst)
        self.payload = b""
        # messages handed over back to back: the payloads of those that request chunks, in
        # order; a request at offset 0 starts the next one
        self.next_payloads = None
        self.requests = []          # (offset, length) in order
        self.events = []            # PktLen of each pkt_sent
        self.dones = []             # done_psn of each done
        self.done_cycles = []       # the cycle of each done
        self.tx_beats = []          # cycle of each TX beat, and whether it was the last
        # Payload source: each request is answered `latency` cycles after it was accepted (plus
        # a random 0 .. jitter), in request order, like the DMA mover's READ_STREAM.
        self.latency = 0
        self.jitter = 0
        self.pending = []           # (cycle the chunk may start, its bytes)
        dut.desc_valid.value = 0
        dut.eth.value = int(link == "eth")
        dut.port_mac.value = int.from_bytes(self.port_mac, "big")
        dut.desc_dmac.value = 0
        dut.desc_vlan.value = 0
        dut.pl_req_ready.value = 1
        dut.cut_delay.value = 0     # no cut
        dut.rst.value = 1

    def message(self, operation, transport, length, mtu, **kwargs):
        """A Message on this TB's link; on Ethernet along the next of ETH_PATHS."""
        if self.link == "eth":
            if not self.paths:
                self.paths = self.rng.sample(ETH_PATHS, len(ETH_PATHS))
            kwargs.setdefault("path", self.paths.pop())
            kwargs.update(link="eth", port_mac=self.port_mac)
        return Message(self.rng, operation, transport, length, mtu, **kwargs)

    def words(self, wire):
        return frame_words(wire, self.link)

    async def reset(self):
        dut = self.dut
        dut.rst.value = 1
        await ClockCycles(dut.tb_clk, 4)
        dut.rst.value = 0
        await ClockCycles(dut.tb_clk, 2)
        cocotb.start_soon(self._requests())
        cocotb.start_soon(self._monitor())

    async def _requests(self):
        """Take each chunk request (ready is held high) and queue its bytes from the current
        message's payload for `latency` (+ jitter) cycles later; a second coroutine starts them
        in order."""
        dut = self.dut
        cocotb.start_soon(self._serve())
        while True:
            await RisingEdge(dut.tb_clk)
            if dut.pl_req_valid.value:
                off, n = int(dut.pl_req_offset.value), int(dut.pl_req_len.value)
                if self.next_payloads is not None and off == 0:
                    self.payload = self.next_payloads.pop(0)
                self.requests.append((off, n))
                due = int(dut.cycle.value) + self.latency
                if self.jitter:
                    due += self.rng.randrange(self.jitter + 1)
                self.pending.append((due, self.payload[off:off + n]))

    async def _serve(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.tb_clk)
            while self.pending and self.pending[0][0] <= int(dut.cycle.value):
                await self.source.send(self.pending.pop(0)[1])

    async def _monitor(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.tb_clk)
            if dut.pkt_sent.value:
                self.events.append(int(dut.pkt_sent_len.value))
            if dut.done.value:
                self.dones.append(int(dut.done_psn.value))
                self.done_cycles.append(int(dut.cycle.value))
            if dut.m_axis_tx_tvalid.value and dut.m_axis_tx_tready.value:
                self.tx_beats.append((int(dut.cycle.value), bool(dut.m_axis_tx_tlast.value)))

    async def hand(self, msg):
        """Hand the descriptor of `msg` over; returns the cycle it was taken in."""
        dut = self.dut
        msg.drive(dut)
        dut.desc_valid.value = 1
        while True:
            await RisingEdge(dut.tb_clk)
            if dut.desc_ready.value:
                break
        dut.desc_valid.value = 0
        return int(dut.cycle.value)

    def clear(self):
        """Forget the events, dones and requests seen so far."""
        for seen in (self.events, self.dones, self.requests):
            seen.clear()

    async def send(self, msg):
        """Run one message through; returns (cycles from descriptor to done)."""
        dut = self.dut
        self.payload = msg.payload
        start = int(dut.cycle.value)
        await self.hand(msg)
        while True:
            await RisingEdge(dut.tb_clk)
            if dut.done.value:
                break
        return int(dut.cycle.value) - start

    async def check(self, msg):
        """Send `msg` and check every packet it produced; returns their wire bytes."""
        self.clear()
        await self.send(msg)
        expected = msg.expected()
        await ClockCycles(self.dut.tb_clk, 3)   # done and the last event are registered
        got = []
        while not self.sink.empty():
            frame = self.sink.recv_nowait()
            assert not any(frame.tuser or []), "tuser set"
            try:
                got.append((ib.parse(frame.tdata, msg.mtu, link=self.link),
                            bytes(frame.tdata)))
            except ib.PacketError as err:
                exp = ib.build(expected[len(got)]) if len(got) < len(expected) else b""
                diff = [i for i in range(min(len(exp), len(frame.tdata)))
                        if exp[i] != frame.tdata[i]]
                raise AssertionError(
                    f"{msg.describe()}: packet {len(got)}: {err} ({len(frame.tdata)} bytes, "
                    f"expected {len(exp)}; first differing bytes {diff[:8]})") from err
        assert len(got) == len(expected), (
            f"{msg.describe()}: {len(got)} packets, expected {len(expected)}")
        for i, ((pkt, wire), exp) in enumerate(zip(got, expected)):
            assert pkt == exp, f"{msg.describe()}: packet {i}\n got {pkt}\n exp {exp}"
            # byte for byte too: parse ignores the reserved fields, the codec sends them as zeros
            assert wire == ib.build(exp), f"{msg.describe()}: packet {i} bytes differ"
        assert self.events == [self.words(wire) for _, wire in got], (
            f"{msg.describe()}: PktLen events {self.events}")
        assert self.dones == [(msg.psn + msg.start + len(expected)) & ib.PSN_MASK], (
            f"{msg.describe()}: done {self.dones}")
        with_payload = [p for p in expected if p.payload]
        assert self.requests == [((msg.start + i) * msg.mtu, len(p.payload))
                                 for i, p in enumerate(expected) if p.payload][:len(with_payload)]
        return [wire for _, wire in got]


def mtu_lengths(mtu):
    return [0, 1, mtu - 1, mtu, mtu + 1, 3 * mtu + 5]


LINKS = ["ib", "eth"]


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_lengths(dut, link):
    """RC SEND at every path MTU and the boundary lengths, TX always ready. On Ethernet also
    the shortest frame: an empty SEND ONLY over untagged IPv4 is 62 bytes with its FCS, padded
    with two zero bytes (before the FCS) to 64, pkt_sent_len 16."""
    tb = TB(dut, "test_lengths", link)
    await tb.reset()
    if link == "eth":
        shortest = tb.message("SEND", "RC", 0, 256, path=(False, True, tb.rng.random() < 0.5))
        wires = await tb.check(shortest)
        assert [len(w) for w in wires] == [64], f"{shortest.describe()}: {len(wires[0])} bytes"
        assert tb.events == [16], f"{shortest.describe()}: pkt_sent_len {tb.events}"
    for mtu in ib.VALID_MTUS:
        for length in mtu_lengths(mtu):
            await tb.check(tb.message("SEND", "RC", length, mtu))


def combos():
    """Every kind and transport the packetizer builds."""
    for tr in ("RC", "UC"):
        yield tr, "SEND"
        yield tr, "RDMA_WRITE"
    yield "UD", "SEND"
    yield "RC", "RDMA_READ_REQUEST"
    yield "RC", "RDMA_READ_RESPONSE"
    yield "RC", "ACKNOWLEDGE"
    for op in ATOMICS:
        yield "RC", op
    yield "RC", "ATOMIC_WRITE"


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_kinds(dut, link):
    """Every kind and transport, with and without GRH / immediate / solicited, boundary and
    random lengths and MTUs, random TX backpressure and payload-stream pauses; PSN wrap. On
    Ethernet every path (tagged or not, IPv4 or IPv6, flow label zero or not) in turn, the
    descriptor's is_global set and clear (ignored there)."""
    tb = TB(dut, "test_kinds", link)
    rng = tb.rng
    if not ON_VERILATOR:
        tb.sink.set_pause_generator(pauses(rng, 0.3))
        tb.source.set_pause_generator(pauses(rng, 0.2))
    await tb.reset()
    for tr, op in combos():
        for grh in (False, True):
            for flag in (False, True):
                mtu = rng.choice(ib.VALID_MTUS)
                if op in SINGLE:
                    length = 0
                elif op == "ATOMIC_WRITE":
                    length = ATOMIC_WRITE_BYTES
                elif tr == "UD":
                    length = rng.choice([0, 1, mtu - 1, mtu, rng.randrange(mtu)])
                else:
                    length = rng.choice(mtu_lengths(mtu) + [rng.randrange(3 * mtu)])
                imm = flag and op in ("SEND", "RDMA_WRITE")
                se = flag and op in ("SEND", "RDMA_WRITE") and rng.random() < 0.7
                psn = rng.choice([None, (1 << 24) - 1, (1 << 24) - 2])
                await tb.check(tb.message(op, tr, length, mtu, grh=grh, imm=imm,
                                          solicited=se, psn=psn))


@cocotb.test()
async def test_eth_cnp(dut):
    """Ethernet: a descriptor with desc_cnp is one CNP whatever its kind, transport, length
    and flags say (as rx_engine hands it over, kind ACK): opcode 0x81, BECN set, no AckReq or
    SE, 16 zero bytes after the BTH, on every path; the shortest of them padded to 64 bytes."""
    tb = TB(dut, "test_eth_cnp", "eth")
    rng = tb.rng
    await tb.reset()
    for tr, op in [("RC", "ACKNOWLEDGE"), ("UD", "SEND"), ("RC", "RDMA_WRITE")]:
        for _ in ETH_PATHS:
            await tb.check(tb.message(op, tr, 0, rng.choice(ib.VALID_MTUS), cnp=True,
                                      imm=True, solicited=True))


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_messages_back_to_back(dut, link):
    """Messages of every kind handed over as fast as the packetizer takes them: it holds two,
    so a descriptor is taken (and its payload fetched) before the message ahead of it is done.
    Every packet of every message leaves in order, byte for byte, with
    its PktLen event, one done per message in order with its PSN; random TX backpressure."""
    tb = TB(dut, "test_messages_back_to_back", link)
    rng = tb.rng
    tb.latency = 6
    if not ON_VERILATOR:
        tb.sink.set_pause_generator(pauses(rng, 0.2))
    await tb.reset()
    msgs = []
    for tr, op in list(combos()) * 2:
        mtu = rng.choice(ib.VALID_MTUS)
        length = (0 if op in SINGLE else ATOMIC_WRITE_BYTES if op == "ATOMIC_WRITE"
                  else rng.randrange(mtu if tr == "UD" else 3 * mtu))
        msgs.append(tb.message(op, tr, length, mtu, grh=rng.random() < 0.5))
    rng.shuffle(msgs)
    tb.next_payloads = [m.payload for m in msgs if m.payload and m.operation not in SINGLE]
    taken = []
    for msg in msgs:
        taken.append(await tb.hand(msg))
    while len(tb.dones) < len(msgs):
        await RisingEdge(dut.tb_clk)
    await ClockCycles(dut.tb_clk, 3)
    expected = [(msg, pkt) for msg in msgs for pkt in msg.expected()]
    frames = []
    while not tb.sink.empty():
        frames.append(bytes(tb.sink.recv_nowait().tdata))
    assert len(frames) == len(expected), f"{len(frames)} packets, expected {len(expected)}"
    for i, (wire, (msg, pkt)) in enumerate(zip(frames, expected)):
        assert wire == ib.build(pkt), f"packet {i} ({msg.describe()}) differs"
    assert tb.events == [tb.words(wire) for wire in frames]
    assert tb.dones == [(m.psn + len(m.expected())) & ib.PSN_MASK for m in msgs]
    # (not every one: with two messages held, the next waits for the older one to leave).
    # Verilator's values at a clock edge are the ones after it, so the cycle this loop sees a
    # descriptor taken in is not comparable with done's there: Icarus measures it.
    if not ON_VERILATOR:
        early = [k for k in range(1, len(msgs)) if taken[k] < tb.done_cycles[k - 1]]
        assert early, "no descriptor was taken before the message ahead was done: one held"


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_atomics(dut, link):
    """COMPARE_SWAP and FETCH_ADD requests (BTH + AtomicETH: VA, R_Key, Swap/Add and Compare
    Data, AckReq set) and ATOMIC_ACKNOWLEDGE (BTH + AETH + AtomicAckETH) byte-exact against
    tb/ib_packet.py, with and without GRH, with the operands at their extremes and random:
    one RC packet each whatever the descriptor's transport and length say, no payload chunk
    requested (tb.check compares the requests), the done PSN one past the packet's."""
    tb = TB(dut, "test_atomics", link)
    rng = tb.rng
    if not ON_VERILATOR:
        tb.sink.set_pause_generator(pauses(rng, 0.3))
    await tb.reset()
    top = (1 << 64) - 1
    operands = [(0, 0), (top, top), (0x0123456789ABCDEF, 0xFEDCBA9876543210), None, None]
    count = 0
    for op in ATOMICS:
        for grh in (False, True):
            for atomic in operands:
                # the descriptor's transport and length mean nothing to an atomic
                desc_tr = rng.choice(["RC", "RC", "UC", "UD"])
                length = rng.choice([0, 0, 1, 4096, rng.randrange(1, 1 << 20)])
                psn = rng.choice([None, (1 << 24) - 1])
                msg = tb.message(op, "RC", length, rng.choice(ib.VALID_MTUS), grh=grh,
                                 psn=psn, desc_transport=desc_tr, atomic=atomic)
                await tb.check(msg)
                assert not tb.requests, f"{msg.describe()}: payload requested {tb.requests}"
                count += 1
    tb.log.info("%d atomic packets checked", count)


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_resend_from_inside_a_message(dut, link):
    """A go-back-N resend: the descriptor names the first packet to send (a byte offset, a
    multiple of the path MTU, and that packet's PSN). The packets from there on are exactly the
    message's own (middle opcodes, no RETH, AckReq every 16 PSNs and on the last, PSN wrap),
    and the payload is fetched from that offset."""
    tb = TB(dut, "test_resend_from_inside_a_message", link)
    rng = tb.rng
    await tb.reset()
    for tr, op in (("RC", "SEND"), ("RC", "RDMA_WRITE"), ("RC", "RDMA_READ_RESPONSE")):
        for imm in (False, True):
            mtu = rng.choice(ib.VALID_MTUS[:3])
            # shorter messages on Ethernet: the resend logic is the same on both links, only
            # the headers differ
            count = rng.randrange(2, 40 if link == "ib" else 16)
            length = (count - 1) * mtu + rng.randrange(1, mtu + 1)
            for start in sorted({1, count - 1, rng.randrange(1, count)}):
                await tb.check(tb.message(op, tr, length, mtu, psn=(1 << 24) - 5,
                                          start=start, imm=imm and op != "RDMA_READ_RESPONSE"))


@cocotb.test()
async def test_cut_ends_the_message_at_a_packet_boundary(dut):
    """A cut (the QP went back) ends the message being filled at a packet boundary: with n of
    its chunks requested by the cut's cycle, n packets leave, or n + 1 when all n were already
    buffered (the next one ends it); a cut after the last chunk was requested changes nothing.
    The packets that leave are the message's own first ones byte for byte (their opcodes
    unchanged: a cut RC WRITE ends on a middle packet), one PktLen event each, one done with
    the PSN after the last, no chunk requested past them; the next message then leaves whole.
    Swept over the cut's cycle (from the one after the descriptor was taken: the harness cuts
    and counts the requests on the RTL's clock), payload latency 0 and 12, TX backpressure on
    event simulators."""
    tb = TB(dut, "test_cut_ends_the_message_at_a_packet_boundary")
    rng = tb.rng
    if not ON_VERILATOR:
        tb.sink.set_pause_generator(pauses(rng, 0.2))
    await tb.reset()
    mtu, count = 256, 8
    ends = {"short, on its chunks out": 0, "short, on the next chunk": 0, "whole": 0}
    for latency in (0, 12):
        tb.latency = latency
        # about 40 cuts over a message's time on the link, on until three came too late
        step = max(1, count * (mtu // tb.nbytes + 4) // 40)
        offset, late = 1 - step, 0
        while late < 3:
            offset += step
            msg = Message(rng, rng.choice(["RDMA_WRITE", "SEND"]), "RC",
                          (count - 1) * mtu + rng.randrange(1, mtu + 1), mtu)
            expected = msg.expected()
            tb.clear()
            tb.payload = msg.payload
            dut.cut_delay.value = offset
            await tb.hand(msg)
            while not tb.dones:
                await RisingEdge(dut.tb_clk)
            await ClockCycles(dut.tb_clk, 3)
            dut.cut_delay.value = 0
            frames = []
            while not tb.sink.empty():
                frames.append(bytes(tb.sink.recv_nowait().tdata))
            what = f"{msg.describe()}, latency {latency}, cut {offset} cycles after it was taken"
            n = int(dut.reqs_at_cut.value)
            k = len(frames)
            assert n <= k <= min(n + 1, count), f"{what}: {n} chunks requested, {k} sent"
            assert frames == [ib.build(p) for p in expected[:k]], f"{what}: not its first {k} packets"
            assert tb.requests == [(i * mtu, len(p.payload)) for i, p in enumerate(expected[:k])], (
                f"{what}: requests {tb.requests}")
            assert tb.events == [tb.words(f) for f in frames], f"{what}: {tb.events}"
            assert tb.dones == [(msg.psn + k) & ib.PSN_MASK], f"{what}: done {tb.dones}"
            late += k == count
            ends["whole" if k == count else
                 "short, on the next chunk" if k > n else "short, on its chunks out"] += 1
            # nothing of the cut message is left behind
            await tb.check(Message(rng, "SEND", "RC", 2 * mtu + rng.randrange(mtu), mtu))
    tb.log.info("cut messages: %s", ends)
    assert all(ends.values()), f"not every way of ending was met: {ends}"


@cocotb.test()
async def test_static_rate(dut):
    """A rate divisor d leaves the link idle (d - 1) * N cycles after a packet of N beats."""
    tb = TB(dut, "test_static_rate")
    await tb.reset()
    for d in (3, 1):
        msg = Message(tb.rng, "SEND", "RC", 3 * 256 + 40, 256, rate=d)
        tb.tx_beats.clear()
        await tb.check(msg)
        beats = tb.tx_beats
        # group the beats into packets
        packets, cur = [], []
        for cyc, last in beats:
            cur.append(cyc)
            if last:
                packets.append(cur)
                cur = []
        assert len(packets) == 4
        for a, b in zip(packets, packets[1:]):
            n = len(a)
            assert a[-1] - a[0] == n - 1, f"packet beats not back to back: {a}"
            gap = b[0] - a[-1] - 1
            tb.log.info("rate %d: packet of %d beats, then %d idle cycles", d, n, gap)
            if d > 1:
                assert gap == (d - 1) * n, f"rate {d}: {gap} idle cycles after {n} beats"
            else:
                assert gap == 0, f"full rate: {gap} idle cycles after {n} beats"


@cocotb.test()
async def test_goodput(dut):
    """A 64 KiB RDMA WRITE at MTU 4096 with TX always ready and a payload source that starts
    each chunk 16 cycles after its request: link goodput and descriptor-to-done goodput against
    the theoretical (payload over all wire bytes)."""
    tb = TB(dut, "test_goodput")
    tb.latency = 16
    await tb.reset()
    msg = Message(tb.rng, "RDMA_WRITE", "RC", 65536, 4096)
    tb.tx_beats.clear()
    total = await tb.send(msg)
    await ClockCycles(dut.tb_clk, 3)
    frames = []
    while not tb.sink.empty():
        frames.append(tb.sink.recv_nowait())
    wire = sum(len(f.tdata) for f in frames)
    first, last = tb.tx_beats[0][0], tb.tx_beats[-1][0]
    link_cycles = last - first + 1
    theory = 65536 / wire
    link = 65536 / (link_cycles * tb.nbytes)
    overall = 65536 / (total * tb.nbytes)
    tb.log.info("goodput at %d bits: theoretical %.4f, link window %.4f (%d cycles, %.1f%%), "
                "descriptor to done %.4f (%d cycles, %.1f%%)", 8 * tb.nbytes, theory, link,
                link_cycles, 100 * link / theory, overall, total, 100 * overall / theory)
    gaps = [(b[0] - a[0] - 1, i) for i, (a, b) in enumerate(zip(tb.tx_beats, tb.tx_beats[1:]))
            if b[0] - a[0] > 1]
    tb.log.info("idle cycles inside the link window: %d (%s)", sum(g for g, _ in gaps), gaps[:20])
    for f in frames:
        ib.parse(f.tdata, 4096)
    assert len(frames) == 16
    assert not gaps, "the link idled inside the message"
    assert link >= 0.95 * theory
    # store and forward: the first packet waits for its request latency and its whole chunk,
    # beyond that only a few pipeline cycles
    assert total <= link_cycles + tb.latency + 4096 // tb.nbytes + 12, "slow to start or end"


@cocotb.test()
async def test_no_mover_stall(dut):
    """The shared DMA mover never waits on this port's link: with the TX link held not-ready
    for long and random stretches (the harness's tx_hold, plus the sink's own random pauses on
    event simulators) and the payload source answering each request after 10..20 cycles, every
    requested chunk is taken one beat per cycle (s_axis_pl_tready never low while a requested
    chunk is outstanding; the harness counts both on the RTL's clock), and every packet still
    comes out exactly right."""
    tb = TB(dut, "test_no_mover_stall")
    rng = tb.rng
    tb.latency, tb.jitter = 10, 10
    if not ON_VERILATOR:
        tb.sink.set_pause_generator(pauses(rng, 0.2))
    dut.tx_lfsr.value = rng.randrange(1, 1 << 32)
    dut.tx_stall_en.value = 1
    await tb.reset()
    start = int(dut.cycle.value)
    messages = [Message(rng, "RDMA_WRITE", "RC", 6 * 4096 + 100, 4096, grh=True)]
    # messages with payload: packets without any request no chunk, and with short ones the
    # link would be held too seldom to test anything
    with_payload = [(tr, op) for tr, op in combos() if op not in SINGLE and op != "ATOMIC_WRITE"]
    for _ in range(14):
        tr, op = rng.choice(with_payload)
        mtu = rng.choice(ib.VALID_MTUS)
        if tr == "UD":
            length = rng.randrange(1, mtu + 1)
        else:
            length = rng.randrange(1, 8 * mtu)
        imm = op in ("SEND", "RDMA_WRITE") and rng.random() < 0.5
        messages.append(Message(rng, op, tr, length, mtu, grh=rng.random() < 0.5, imm=imm))
    for msg in messages:
        await tb.check(msg)
    dut.tx_stall_en.value = 0
    stalls = int(dut.pl_stall_cycles.value)
    assert stalls == 0, (f"s_axis_pl_tready low with a requested chunk outstanding in {stalls} "
                         f"cycles, the first at cycle {int(dut.pl_first_stall.value)}")
    gaps = int(dut.pl_chunk_gaps.value)
    assert gaps == 0, f"{gaps} cycles inside chunks without a beat taken"
    assert int(dut.pl_outstanding.value) == 0
    chunks = int(dut.pl_chunks.value)
    assert chunks == sum(1 for m in messages for p in m.expected() if p.payload)
    blocked = int(dut.tx_blocked.value)
    cycles = int(dut.cycle.value) - start
    tb.log.info("%d packets in %d cycles, a beat held back by tx_hold in %d of them; %d chunks, "
                "all taken one beat per cycle", sum(len(m.expected()) for m in messages),
                cycles, blocked, chunks)
    # a share, not a count: how many cycles the messages take depends on the seed and the width
    assert blocked * 10 > cycles, f"the link was held in only {blocked} of {cycles} cycles"


# ---------------------------------------------------------------------------------------------
# The pytest runner: packetizer unit tests at each supported data width.

RTL_FILES = ["packetizer.v", "pkt_header.v", "pkt_append.v", "crc_stream.v", "ib_icrc.v"]


@pytest.mark.parametrize("w", UNIT_WIDTHS)
def test_packetizer(w):
    simrun.run(
        toplevel="tb_packetizer",
        test_module="test_packetizer",
        parameters={"DATA_WIDTH": w},
        name=f"packetizer_w{w}",
        rtl=RTL_FILES,
    )
