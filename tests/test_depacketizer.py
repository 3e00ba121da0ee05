"""Unit tests of the depacketizer (rtl/port/depacketizer.v through tb/hdl/tb_depacketizer.v).

Packets are built with tb/ib_packet.py (build, or seal over hand-damaged bytes) and sent on the
RX link with an AxiStreamSource; a monitor takes headers and payload beats (with its own ready
patterns and pl_drop) and the verdict events, and every good packet's header fields and payload
are compared with the packet that was sent, every bad one must leave nothing but its rcv_error.
One test feeds the depacketizer from the real rtl/port/packetizer.v (loop_sel) and compares every
field with what went into the packetizer's descriptor.

Most tests run once per link layer (`link`): InfiniBand, and Ethernet, where the packets are
RoCE v2 frames (tb/ib_packet.build of a Packet with `roce`) to the port's MAC and one of its
four GID table entries (IPv4-mapped and IPv6, 802.1Q tagged and untagged, each with its VLAN),
and the bad ones are broken in one Ethernet, IP, UDP or transport field at a time with every
other field, the ICRC and the FCS right (test_eth_* cover the GID table and the fields the
receiver ignores).

All models run on the rising edge of the harness clock; under Verilator the harness hands them
registered copies of the DUT outputs (their pre-edge values), so the same code is exact on both
simulators. Randomness comes from one seed, printed at the start of each test; SEED=<n>
replays a run.
"""

import logging
import zlib
from dataclasses import replace

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSource
import pytest

import tb.ib_packet as ib
from tb import simrun
from tb.ib_packet import frame_layout as layout, imm_le, marked_ce, reframe
from tb.ib_crc import fcs_bytes, roce_icrc_mask, vcrc_bytes
from tb.seed import UNIT_WIDTHS, rng_for
from tb.tx_desc import KIND, MTU_ENUM, SINGLE, TRANSPORT
from tb.verbs import ATOMIC_WRITE_BYTES

MAX_PAYLOAD = 4096

# Opcodes the depacketizer accepts, by transport (RC with the atomics, 0x12-0x14, SEND
# LAST/ONLY with invalidate, 0x16 and 0x17, and ATOMIC WRITE, 0x1D).
RC_OPS = list(range(0x00, 0x15)) + [0x16, 0x17, 0x1D]
ATOMIC_OPS = [0x12, 0x13, 0x14]
UC_OPS = list(range(0x20, 0x2C))
UD_OPS = [0x64, 0x65]
ACCEPTED = RC_OPS + UC_OPS + UD_OPS

HDR_FIELDS = ("opcode", "se", "dest_qpn", "ackreq", "psn", "slid", "dlid", "sl", "is_global",
              "tclass", "flow_label", "hop_limit", "sgid", "dgid", "smac", "vlan", "raddr",
              "rkey", "dma_len", "qkey", "src_qpn", "imm", "syndrome", "msn", "atomic_a",
              "atomic_b", "plen", "internal")

LINKS = ["ib", "eth"]
PACKETIZER_MAC = bytes.fromhex("0200000000FE")     # the harness's packetizer's port_mac


def roce_sport(flow_label, src_qpn, dest_qpn):
    """The UDP source port pkt_header.v sends: the flow label, or when it is 0 the XOR of the
    two QP numbers (20 bits), its upper 6 bits folded onto the lower 14, in 0xC000 .. 0xFFFF."""
    f = flow_label or (src_qpn ^ dest_qpn) & 0xFFFFF
    return 0xC000 | ((f & 0x3FFF) ^ (f >> 14))


def pkt_words(pkt, wire):
    """The rcv_pktlen of a good packet: InfiniBand its PktLen (LRH .. ICRC, the packet without
    its VCRC), Ethernet the frame's 4-byte words (destination MAC .. FCS) rounded up."""
    return (len(wire) - 2) // 4 if pkt.roce is None else -(-len(wire) // 4)


def expected_header(pkt, internal):
    """The m_hdr_* fields the depacketizer must present for `pkt`. A RoCE v2 packet has no
    LIDs (0), its 802.1Q PCP as the SL (0 untagged), and its IP header as a GRH (IPv4: the
    addresses IPv4-mapped, no flow label); its source MAC and {tagged, VID} come out too."""
    g, reth, deth, aeth, imm = pkt.grh, pkt.reth, pkt.deth, pkt.aeth, pkt.immdt
    r = pkt.roce
    atomic, atomic_ack, ieth = pkt.atomic_eth, pkt.atomic_ack_eth, pkt.ieth
    # VA and R_Key come from a RETH or an AtomicETH; an IETH's R_Key comes on its own
    remote = reth or atomic
    out = {
        "opcode": pkt.bth.opcode, "se": int(pkt.bth.se), "dest_qpn": pkt.bth.dest_qp,
        "ackreq": int(pkt.bth.ackreq), "psn": pkt.bth.psn,
        "slid": pkt.lrh.slid if not r else 0, "dlid": pkt.lrh.dlid if not r else 0,
        "sl": pkt.lrh.sl if not r else r.pcp, "is_global": int(g is not None or r is not None),
        "tclass": g.tclass if g else 0, "flow_label": g.flow_label if g else 0,
        "hop_limit": g.hop_limit if g else 0,
        "sgid": int.from_bytes(g.sgid, "big") if g else 0,
        "dgid": int.from_bytes(g.dgid, "big") if g else 0,
        "smac": int.from_bytes(r.smac, "big") if r else 0,
        "vlan": (1 << 12 | r.vlan) if r and r.vlan is not None else 0,
        "raddr": remote.va if remote else 0,
        "rkey": remote.rkey if remote else ieth.rkey if ieth else 0,
        "dma_len": reth.dma_len if reth else 0,
        "qkey": deth.qkey if deth else 0, "src_qpn": deth.src_qp if deth else 0,
        # the 4 ImmDt bytes in wire order, first in bits [7:0]
        "imm": imm_le(imm.data) if imm else 0,
        "syndrome": aeth.syndrome if aeth else 0, "msn": aeth.msn if aeth else 0,
        "atomic_a": atomic.swap_add if atomic else atomic_ack.orig_data if atomic_ack else 0,
        "atomic_b": atomic.compare if atomic else 0,
        "plen": len(pkt.payload), "internal": int(internal),
    }
    if r:       # the IP header's fields where a GRH's go
        out.update(tclass=r.tclass, flow_label=r.flow_label, hop_limit=r.hop_limit,
                   sgid=int.from_bytes(r.sgid, "big"), dgid=int.from_bytes(r.dgid, "big"))
    return out


def fix_lengths(body):
    """LRH PktLen and (global) GRH PayLen made right for `body` (LRH .. pad, no ICRC)."""
    body = bytearray(body)
    words = (len(body) + ib.ICRC_BYTES) // 4
    body[4:6] = (words & 0x7FF).to_bytes(2, "big")
    if body[1] & 3 == ib.LNH_GLOBAL:
        body[12:14] = (len(body) + ib.ICRC_BYTES - 48).to_bytes(2, "big")
    return bytes(body)


def body_of(wire):
    """LRH .. pad of a built packet (without ICRC and VCRC)."""
    return bytearray(wire[:-6])


def icrc_v4_layout(ip_packet):
    """The ICRC of an IP packet read as a 20-byte IPv4 header whatever its first byte says
    (the ICRC masks of an IPv4 header, the first byte as it is): how a receiver reads any IP
    version but 6. For frames broken in that byte alone."""
    masked = bytearray(roce_icrc_mask(b"\x45" + bytes(ip_packet[1:])))
    masked[8] = ip_packet[0]        # after the eight 0xFF bytes that stand for an LRH
    return zlib.crc32(masked).to_bytes(4, "little")


def cut_by_4(pkt):
    """`pkt`'s wire bytes with its last 4 bytes before the ICRC cut off, lengths and CRCs
    made right for what is left."""
    wire = ib.build(pkt)
    if pkt.roce is None:
        return ib.seal(fix_lengths(body_of(wire)[:-4]))
    at = layout(wire)
    return reframe(wire[:at.end - 8], at, lengths=True)


class Port:
    """The port's address and the packets that are addressed to it. On InfiniBand its LID
    under the LMC and GID table entry 0 (the others empty); on Ethernet (`link` "eth") its MAC
    and four GID table entries with their VLANs, one for each of IPv4-mapped or IPv6 GID and
    802.1Q tagged or untagged, in random order (the two tagged ones on different VLANs)."""

    def __init__(self, rng, link="ib"):
        self.link = link
        self.lmc = rng.randrange(8)
        self.lid = rng.randrange(1, 0xC000) & ~((1 << self.lmc) - 1) & 0xFFFF
        self.gid = rng.randbytes(16)
        self.pkey = rng.randrange(1 << 15) | 0x8000
        self.mac = bytes([rng.randrange(256) & 0xFE]) + rng.randbytes(5)    # unicast
        kinds = rng.sample([(v4, tagged) for v4 in (False, True) for tagged in (False, True)], 4)
        vids = rng.sample(range(1, 0xFFF), 2)     # VLAN IDs 1..4094: 0 is no VLAN, 0xFFF reserved
        self.gids, self.vlans = [], []      # {tagged, VID} per entry
        for v4, tagged in kinds:
            self.gids.append(ib.ipv4_gid(rng.randbytes(4)) if v4 else rng.randbytes(16))
            self.vlans.append(1 << 12 | vids.pop() if tagged else 0)

    def drive(self, dut):
        eth = self.link == "eth"
        gids = self.gids if eth else [self.gid] + [bytes(16)] * 3
        dut.port_lid.value = self.lid
        dut.port_lmc.value = self.lmc
        dut.port_gid.value = int.from_bytes(gids[0], "big")
        dut.port_gids_more.value = sum(int.from_bytes(g, "big") << (128 * i)
                                       for i, g in enumerate(gids[1:]))
        dut.port_gid_vlans.value = (sum(v << (13 * i) for i, v in enumerate(self.vlans))
                                    if eth else 0)
        dut.port_pkey.value = self.pkey
        dut.eth.value = int(eth)
        dut.port_mac.value = int.from_bytes(self.mac, "big") if eth else 0

    def entries(self, v4=None, tagged=None):
        """The GID table entries (Ethernet) of an IP version and tagging (None: any)."""
        return [e for e, (gid, vlan) in enumerate(zip(self.gids, self.vlans))
                if v4 in (None, ib.is_ipv4_mapped(gid)) and tagged in (None, bool(vlan >> 12))]

    def packet(self, rng, opcode, length, grh=None):
        """A well-formed packet to this port: random fields, `length` payload bytes. On
        Ethernet a frame to a random entry of the GID table (`grh` means nothing there)."""
        if self.link == "eth":
            return self.frame(rng, opcode, length)
        if grh is None:
            grh = rng.random() < 0.5
        lrh = ib.LRH(dlid=self.lid | rng.randrange(1 << self.lmc), slid=rng.randrange(1 << 16),
                     sl=rng.randrange(16), vl=rng.randrange(16))
        g = ib.GRH(sgid=rng.randbytes(16), dgid=self.gid, hop_limit=rng.randrange(256),
                   tclass=rng.randrange(256), flow_label=rng.randrange(1 << 20)) if grh else None
        return ib.Packet(lrh=lrh, grh=g, **self.transport(rng, opcode, length))

    def frame(self, rng, opcode, length, entry=None):
        """A well-formed RoCE v2 frame to this port's MAC and GID table entry `entry` (random
        when None), with that entry's VLAN (a random PCP when tagged) and IP version, random
        source MAC, source GID, traffic class, flow label (IPv6), hop limit and UDP source
        port."""
        if entry is None:
            entry = rng.randrange(len(self.gids))
        gid, vlan = self.gids[entry], self.vlans[entry]
        v4, tagged = ib.is_ipv4_mapped(gid), bool(vlan >> 12)
        roce = ib.RoCE(dmac=self.mac, smac=rng.randbytes(6),
                       sgid=ib.ipv4_gid(rng.randbytes(4)) if v4 else rng.randbytes(16),
                       dgid=gid, hop_limit=rng.randrange(256), sport=rng.randrange(1 << 16),
                       tclass=rng.randrange(256), flow_label=0 if v4 else rng.randrange(1 << 20),
                       vlan=vlan & 0xFFF if tagged else None,
                       pcp=rng.randrange(8) if tagged else 0)
        return ib.Packet(roce=roce, **self.transport(rng, opcode, length))

    def transport(self, rng, opcode, length):
        """BTH (with this port's P_Key), random extension headers for `opcode` and `length`
        random payload bytes, as Packet keyword arguments."""
        op = (ib.ROCE_OPCODES if self.link == "eth" else ib.OPCODES)[opcode]
        pkey = (self.pkey & 0x7FFF) | (rng.randrange(2) << 15)
        bth = ib.BTH(opcode=opcode, dest_qp=rng.randrange(1 << 24), psn=rng.randrange(1 << 24),
                     pkey=pkey, se=rng.random() < 0.5, migreq=rng.random() < 0.5,
                     ackreq=rng.random() < 0.5)
        ext = {}
        for name in op.headers:
            if name == "deth":
                ext[name] = ib.DETH(qkey=rng.randrange(1 << 32), src_qp=rng.randrange(1 << 24))
            elif name == "reth":
                ext[name] = ib.RETH(va=rng.randrange(1 << 64), rkey=rng.randrange(1 << 32),
                                    dma_len=rng.randrange(1 << 32))
            elif name == "aeth":
                ext[name] = ib.AETH(syndrome=rng.randrange(256), msn=rng.randrange(1 << 24))
            elif name == "immdt":
                ext[name] = ib.ImmDt(rng.randrange(1 << 32))
            elif name == "atomic_eth":
                ext[name] = ib.AtomicETH(va=rng.randrange(1 << 64), rkey=rng.randrange(1 << 32),
                                         swap_add=rng.randrange(1 << 64),
                                         compare=rng.randrange(1 << 64))
            elif name == "atomic_ack_eth":
                ext[name] = ib.AtomicAckETH(orig_data=rng.randrange(1 << 64))
            elif name == "ieth":
                ext[name] = ib.IETH(rng.randrange(1 << 32))
            elif name == "cnp":
                ext[name] = ib.CNPReserved()
        return dict(bth=bth, payload=rng.randbytes(length), **ext)


def legal_length(rng, opcode, choices):
    """A payload length `opcode` may carry: none for READ request, ACK and the atomics, a
    multiple of 4 on first and middle packets."""
    op = ib.OPCODES[opcode]
    if not op.payload:
        return 0
    n = rng.choice(choices)
    if op.position in (ib.FIRST, ib.MIDDLE):
        n = max(4, n & ~3)
    return n


class TB:
    def __init__(self, dut, test_name, link="ib"):
        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        self.log.setLevel(logging.INFO)
        self.rng = rng_for(f"{test_name}/{link}" if link != "ib" else test_name, self.log)
        self.nbytes = len(dut.s_axis_rx_tdata) // 8
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_rx"), dut.clk,
                                      dut.rst)
        self.source.log.setLevel(logging.WARNING)
        self.tx_source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "tx_pl"), dut.clk, dut.rst)
        self.tx_source.log.setLevel(logging.WARNING)
        self.port = Port(self.rng, link)
        self.port.drive(dut)
        dut.desc_dmac.value = 0
        dut.desc_vlan.value = 0
        # what the monitor saw
        self.headers = []           # m_hdr_* fields of each header handshake
        self.payloads = []          # (header index, payload bytes) per finished payload
        self.events = []            # ("pkt", pktlen, internal) / ("err", None, internal)
        self.stalls = 0             # cycles the RX link had a beat and was not ready
        self.rx_beats = []          # cycle of every RX beat transferred
        self.pl_beats = []          # cycle of every payload beat transferred
        self.hdr_cycles = []        # cycle of every header handshake
        # what the monitor does
        self.hdr_ready_p = 1.0      # probability of m_hdr_ready in a cycle
        self.pl_ready_p = 1.0       # probability of m_axis_pl_tready in a cycle
        self.drop_set = set()       # header indices whose payload is dropped with pl_drop
        self.stray_drop_p = 0.0     # probability of a pl_drop pulse with no payload pending
        self.stray_drops = 0
        self.drops_with_hdr = 0     # payloads dropped by a pulse in the handshake cycle
        self.late_drops = 0         # payloads dropped after some of their beats were read
        self.late_completed = set()  # drops meant to come late that the tlast beat overtook
        self.full_payloads = {}     # header index -> payload, for packets meant to be dropped
        self.tx_payload = b""
        self.expected = []          # (header, payload or None when dropped) per good packet
        self.expected_events = []
        dut.rst.value = 1
        dut.loop_sel.value = 0
        dut.loop_tid.value = 0
        dut.m_hdr_ready.value = 0
        dut.m_axis_pl_tready.value = 0
        dut.pl_drop.value = 0
        dut.desc_valid.value = 0

    async def reset(self):
        dut = self.dut
        dut.rst.value = 1
        await ClockCycles(dut.clk, 4)
        dut.rst.value = 0
        await ClockCycles(dut.clk, 2)
        cocotb.start_soon(self._monitor())
        cocotb.start_soon(self._requests())

    async def _monitor(self):
        dut = self.dut
        hdr_ready = pl_ready = 0
        drop_now = False
        drop_with_hdr = False       # pl_drop was driven together with m_hdr_ready
        late_drop = None            # header index whose payload is to be dropped midway
        current = bytearray()
        open_hdr = None             # header index whose payload is being received
        full = (1 << self.nbytes) - 1
        while True:
            await RisingEdge(dut.clk)
            # what happened at this edge (pre-edge values; our own readies as we drove them)
            if dut.rx_stall.value:
                self.stalls += 1
            if dut.rx_beat.value:
                self.rx_beats.append(int(dut.cycle.value))
            if dut.rcv_pkt.value:
                self.events.append(("pkt", int(dut.rcv_pktlen.value), int(dut.rcv_internal.value),
                                    int(dut.rcv_ce.value)))
            if dut.rcv_error.value:
                self.events.append(("err", None, int(dut.rcv_internal.value), 0))
            assert not (dut.rcv_pkt.value and dut.rcv_error.value)
            assert dut.rcv_pkt.value or not dut.rcv_ce.value, "rcv_ce without a good packet"
            if dut.m_axis_pl_tvalid.value and pl_ready:
                assert open_hdr is not None, "payload beat without a header"
                keep = int(dut.m_axis_pl_tkeep.value)
                last = bool(dut.m_axis_pl_tlast.value)
                n = bin(keep).count("1")
                assert keep == (1 << n) - 1, f"tkeep {keep:#x} not contiguous"
                assert last or keep == full, f"tkeep {keep:#x} on a beat before the last"
                data = int(dut.m_axis_pl_tdata.value).to_bytes(self.nbytes, "little")
                self.pl_beats.append(int(dut.cycle.value))
                current += data[:n]
                if last:
                    if open_hdr == late_drop:
                        self.late_completed.add(open_hdr)
                        late_drop = None
                    self.payloads.append((open_hdr, bytes(current)))
                    current = bytearray()
                    open_hdr = None
            took_hdr = bool(dut.m_hdr_valid.value) and hdr_ready
            drop_now = False
            if took_hdr:
                assert open_hdr is None, "header before the previous payload's tlast"
                hdr = {name: int(getattr(dut, f"m_hdr_{name}").value) for name in HDR_FIELDS}
                index = len(self.headers)
                self.headers.append(hdr)
                self.hdr_cycles.append(int(dut.cycle.value))
                if hdr["plen"]:
                    if index in self.drop_set and not drop_with_hdr and self.rng.random() < 0.5:
                        open_hdr = late_drop = index    # read some beats, then drop
                    elif index in self.drop_set:
                        drop_now = not drop_with_hdr
                        self.drops_with_hdr += int(drop_with_hdr)
                        self.payloads.append((index, None))
                    else:
                        open_hdr = index
            # drive the next cycle
            if late_drop is not None and open_hdr == late_drop and self.rng.random() < 0.5:
                drop_now = True                 # midway through the payload
                self.payloads.append((late_drop, None))
                self.late_drops += 1
                open_hdr = late_drop = None
                current = bytearray()
            hdr_ready = int(self.rng.random() < self.hdr_ready_p)
            pl_ready = 0 if drop_now else int(self.rng.random() < self.pl_ready_p)
            drop_with_hdr = False
            if not drop_now and open_hdr is None:
                if len(self.headers) in self.drop_set and self.rng.random() < 0.5:
                    # pl_drop in the handshake cycle itself (a stray pulse if no header comes)
                    drop_now = drop_with_hdr = True
                    hdr_ready = 1
                    pl_ready = 0
                elif self.rng.random() < self.stray_drop_p:
                    drop_now = True     # nothing pending (and no header taken with it)
                    hdr_ready = 0
                    self.stray_drops += 1
            dut.m_hdr_ready.value = hdr_ready
            dut.m_axis_pl_tready.value = pl_ready
            dut.pl_drop.value = int(drop_now)

    async def _requests(self):
        """Serve the packetizer's payload chunk requests (ready is tied high in the harness)."""
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            if dut.tx_req_valid.value:
                off, n = int(dut.tx_req_offset.value), int(dut.tx_req_len.value)
                await self.tx_source.send(self.tx_payload[off:off + n])

    # -- sending ------------------------------------------------------------------------------

    async def send_good(self, pkt, internal=0, drop=False, wire=None):
        """Send a well-formed packet and expect it presented (its payload dropped if `drop`).
        `wire`: its bytes, when not ib.build's (fields the receiver ignores changed)."""
        wire = ib.build(pkt) if wire is None else wire
        index = len(self.expected)
        if drop and pkt.payload:
            self.drop_set.add(index)
            self.full_payloads[index] = bytes(pkt.payload)
        self.expected.append((expected_header(pkt, internal),
                              None if drop and pkt.payload else bytes(pkt.payload)))
        self.expected_events.append(("pkt", pkt_words(pkt, wire), internal, int(marked_ce(pkt))))
        await self.source.send(AxiStreamFrame(wire, tid=internal))

    async def send_bad(self, wire, internal=0, tuser=0):
        """Send a frame that must be dropped with rcv_error and nothing presented. `wire` is the
        bytes, or (bytes, per-byte tkeep) for a frame with a hole."""
        self.expected_events.append(("err", None, internal, 0))
        wire, tkeep = wire if isinstance(wire, tuple) else (wire, None)
        await self.source.send(AxiStreamFrame(bytes(wire), tkeep=tkeep, tid=internal,
                                              tuser=tuser))

    async def drain(self, limit=200000):
        """Wait until everything sent has been presented (or the limit)."""
        dut = self.dut
        await self.source.wait()
        for _ in range(limit):
            await RisingEdge(dut.clk)
            if (len(self.events) >= len(self.expected_events)
                    and len(self.headers) >= len(self.expected)
                    and len(self.payloads) >= sum(1 for h, _ in self.expected if h["plen"])):
                break
        await ClockCycles(dut.clk, 20)

    def check(self, what=""):
        """Everything seen so far against everything sent."""
        got_events = [(k, n if k == "pkt" else None, i, ce) for k, n, i, ce in self.events]
        assert got_events == self.expected_events, (
            f"{what}: events\n got {got_events}\n exp {self.expected_events}")
        assert len(self.headers) == len(self.expected), (
            f"{what}: {len(self.headers)} headers, expected {len(self.expected)}")
        for i, (got, (exp, _)) in enumerate(zip(self.headers, self.expected)):
            diff = {k: (hex(got[k]), hex(exp[k])) for k in HDR_FIELDS if got[k] != exp[k]}
            assert not diff, f"{what}: header {i} (opcode {exp['opcode']:#04x}): {diff}"
        exp_payloads = [(i, p) for i, (h, p) in enumerate(self.expected) if h["plen"]]
        assert len(self.payloads) == len(exp_payloads), (
            f"{what}: {len(self.payloads)} payloads, expected {len(exp_payloads)}")
        for (gi, gp), (ei, ep) in zip(self.payloads, exp_payloads):
            assert gi == ei, f"{what}: payload for header {gi}, expected {ei}"
            if ep is None and gi in self.late_completed:
                assert gp == self.full_payloads[gi], f"{what}: payload {gi} read to its end"
            elif ep is None:
                assert gp is None, f"{what}: payload {gi} was dropped, yet it came out"
            else:
                assert gp == ep, (f"{what}: payload {gi}: {len(gp)} bytes, expected {len(ep)}; "
                                  f"first difference at "
                                  f"{next((j for j in range(min(len(gp), len(ep))) if gp[j] != ep[j]), None)}")


def pauses(rng, p):
    while True:
        yield rng.random() < p


def lengths(nbytes):
    """0, 1..8, around beat boundaries, and the largest."""
    out = list(range(0, 9))
    for k in (1, 2, 3):
        out += [k * nbytes - 1, k * nbytes, k * nbytes + 1]
    return sorted(set(out + [MAX_PAYLOAD - 1, MAX_PAYLOAD]))


# ---------------------------------------------------------------------------------------------

@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_every_opcode_and_length(dut, link):
    """Every accepted RC/UC/UD opcode, with and without GRH, every boundary payload length
    (0, 1..8, beat boundaries, 4096) its position allows: every header field and payload byte
    comes out as sent, one rcv_pkt with PktLen each. On Ethernet every opcode to each of the
    four GID table entries (IPv4 and IPv6, tagged and untagged) with one of those lengths, a
    4096-byte SEND ONLY to each entry and the shortest frames (an empty RC and UC SEND ONLY
    over untagged IPv4: 64 bytes with two of padding): the source MAC, VLAN, PCP (as the SL)
    and IP header fields (as the GRH's) come out too, rcv_pktlen the frame's words."""
    tb = TB(dut, "test_every_opcode_and_length", link)
    await tb.reset()
    rng = tb.rng
    count = 0
    for opcode in ACCEPTED:
        op = ib.OPCODES[opcode]
        if not op.payload:
            todo = [0]
        elif op.position in (ib.FIRST, ib.MIDDLE):
            todo = sorted({max(4, n & ~3) for n in lengths(tb.nbytes)})
        else:
            todo = lengths(tb.nbytes)
        if link == "eth":
            for entry in rng.sample(range(4), 4):
                await tb.send_good(tb.port.frame(rng, opcode, rng.choice(todo), entry))
                count += 1
            continue
        for grh in (False, True):
            # every length on the SEND/WRITE only opcodes, a sample on the others
            sample = todo
            if opcode not in (0x04, 0x0B, 0x64, 0x65, 0x10) and len(todo) > 4:
                sample = rng.sample(todo, 4) + [todo[-1]]
            for n in sample:
                await tb.send_good(tb.port.packet(rng, opcode, n, grh=grh))
                count += 1
    if link == "eth":
        for entry in range(4):
            await tb.send_good(tb.port.frame(rng, 0x04, MAX_PAYLOAD, entry))
        [untagged_v4] = tb.port.entries(v4=True, tagged=False)
        for opcode in (0x04, 0x24):
            pkt = tb.port.frame(rng, opcode, 0, untagged_v4)
            assert len(ib.build(pkt)) == ib.ETH_MIN_FRAME
            await tb.send_good(pkt)
        count += 6
    await tb.drain()
    tb.check("every opcode")
    tb.log.info("%d packets checked", count)


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_atomics(dut, link):
    """RC atomics: COMPARE_SWAP and FETCH_ADD requests (AtomicETH: VA on m_hdr_raddr, R_Key on
    m_hdr_rkey, Swap/Add Data on m_hdr_atomic_a, Compare Data on m_hdr_atomic_b, dma_len 0)
    and ATOMIC_ACKNOWLEDGE (AETH on m_hdr_syndrome / m_hdr_msn, Original Remote Data on
    m_hdr_atomic_a), with and without GRH, operands at their extremes and random, are
    presented and counted as good (rcv_pkt with their PktLen). Each of them cut short by 4
    bytes (PktLen and PayLen made to fit, CRCs right: only its headers do not fit) is dropped
    with rcv_error, and the good packet after it comes through. On Ethernet (GRH or not means
    nothing) the frames go to random GID table entries; the cut ones have their IP and UDP
    lengths, IPv4 checksum, ICRC and FCS made right."""
    tb = TB(dut, "test_atomics", link)
    rng = tb.rng
    await tb.reset()
    top = (1 << 64) - 1
    # (VA, R_Key, Swap/Add or Original Remote Data, Compare)
    operands = [(0, 0, 0, 0), (top, (1 << 32) - 1, top, top),
                (0x0102030405060708, 0x090A0B0C, 0x1112131415161718, 0x2122232425262728)]
    count = 0
    for opcode in ATOMIC_OPS:
        for grh in (False, True):
            for values in operands + [None, None]:
                pkt = tb.port.packet(rng, opcode, 0, grh=grh)
                if values and pkt.atomic_eth:
                    pkt.atomic_eth = ib.AtomicETH(*values)
                elif values:
                    pkt.atomic_ack_eth = ib.AtomicAckETH(orig_data=values[0])
                await tb.send_good(pkt, internal=rng.randrange(2))
                count += 1
    await tb.drain()
    tb.check("atomics")
    for opcode in ATOMIC_OPS:
        for grh in (False, True):
            await tb.send_bad(cut_by_4(tb.port.packet(rng, opcode, 0, grh=grh)),
                              internal=rng.randrange(2))
            other = rng.choice(ACCEPTED)
            await tb.send_good(tb.port.packet(rng, other, legal_length(rng, other, [0, 1, 77])))
            await tb.drain()
            tb.check(f"{ib.OPCODES[opcode].name} cut by 4 bytes, grh={grh}")
    tb.log.info("%d atomic packets presented, %d cut short dropped", count,
                2 * len(ATOMIC_OPS))


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_random_gaps_and_backpressure(dut, link):
    """Random packets with random RX gaps, header and payload backpressure and internal flags;
    everything in order and intact."""
    tb = TB(dut, "test_random_gaps_and_backpressure", link)
    rng = tb.rng
    tb.source.set_pause_generator(pauses(rng, 0.3))
    tb.hdr_ready_p = 0.6
    tb.pl_ready_p = 0.6
    await tb.reset()
    for _ in range(60):
        opcode = rng.choice(ACCEPTED)
        n = legal_length(rng, opcode, lengths(tb.nbytes) + [rng.randrange(MAX_PAYLOAD + 1)])
        await tb.send_good(tb.port.packet(rng, opcode, n), internal=rng.randrange(2))
    await tb.drain()
    tb.check("random traffic")


def bad_frames(tb):
    """(name, wire bytes, tuser) for every kind of bad packet; each is otherwise well formed.
    On Ethernet the frames of eth_bad_frames."""
    if tb.port.link == "eth":
        return eth_bad_frames(tb)
    rng, port = tb.rng, tb.port

    def good(opcode=0x04, n=None, grh=False):
        return tb.port.packet(rng, opcode, rng.randrange(1, 200) if n is None else n, grh=grh)

    def reseal(body):
        return ib.seal(bytes(body))

    def mutate(fn, opcode=0x04, n=None, grh=False, lengths=True):
        body = body_of(ib.build(good(opcode, n, grh)))
        fn(body)
        return reseal(fix_lengths(body) if lengths else body)

    out = []
    w = ib.build(good())
    out.append(("tuser on the last beat", w, [0] * (len(w) - 1) + [1]))
    w = ib.build(good(n=300))
    out.append(("tuser on the first beat only", w, [1] * tb.nbytes + [0] * (len(w) - tb.nbytes)))
    w = bytearray(ib.build(good()))
    w[-1] ^= 0x01
    out.append(("VCRC wrong", w, 0))
    w = ib.build(good(n=3 * tb.nbytes))
    keep = [1] * len(w)
    keep[tb.nbytes + 3] = 0                         # a byte missing from a middle beat
    out.append(("tkeep hole in a middle beat", (w, keep), 0))
    w = bytearray(ib.build(good(grh=True)))
    w[-3] ^= 0x80                                   # an ICRC byte, VCRC made right again
    body = bytes(w[:-2])
    out.append(("ICRC wrong", body + vcrc_bytes(body), 0))
    w = bytearray(ib.build(good(n=40)))
    w[30] ^= 0x04                                   # a payload byte: ICRC and VCRC both wrong
    out.append(("payload corrupted", w, 0))
    body = body_of(ib.build(good(n=8))) + b"\x00"
    out.append(("length not a multiple of 4", reseal(fix_lengths(body)), 0))
    out.append(("shorter than LRH+BTH+ICRC+VCRC", reseal(body_of(ib.build(good(n=0)))[:16]), 0))
    out.append(("payload larger than MAX_PAYLOAD", ib.build(good(n=MAX_PAYLOAD + 4)), 0))
    long = bytearray(rng.randbytes(9000))
    long[0:8] = body_of(ib.build(good(n=0)))[0:8]
    out.append(("frame longer than the buffer", reseal(long), 0))
    out.append(("LRH LVer 1", mutate(lambda b: b.__setitem__(0, (b[0] & 0xF0) | 1)), 0))
    for lnh in (0, 1):
        out.append((f"LRH LNH {lnh}",
                    mutate(lambda b, lnh=lnh: b.__setitem__(1, (b[1] & 0xFC) | lnh),
                           lengths=False), 0))
    out.append(("LRH PktLen one word short",
                mutate(lambda b: b.__setitem__(5, (b[5] - 1) & 0xFF), lengths=False), 0))
    out.append(("LRH PktLen counting the VCRC",
                mutate(lambda b: b.__setitem__(5, (b[5] + 1) & 0xFF), lengths=False), 0))
    out.append(("GRH IPVer 4",
                mutate(lambda b: b.__setitem__(8, (b[8] & 0x0F) | 0x40), grh=True), 0))
    out.append(("GRH NxtHdr 0x11", mutate(lambda b: b.__setitem__(14, 0x11), grh=True), 0))
    out.append(("GRH PayLen off by 4",
                mutate(lambda b: b.__setitem__(13, (b[13] + 4) & 0xFF), grh=True,
                       lengths=False), 0))
    out.append(("GRH DGID not ours", mutate(lambda b: b.__setitem__(47, b[47] ^ 1), grh=True), 0))
    out.append(("DLID not ours under the LMC",
                mutate(lambda b: b.__setitem__(2, b[2] ^ 0x40)), 0))
    above = (((port.lid >> port.lmc) + 1) << port.lmc) & 0xFFFF

    def dlid_above(b):
        b[2:4] = above.to_bytes(2, "big")
    out.append(("DLID just above the port's LMC range", mutate(dlid_above), 0))
    out.append(("BTH TVer 1", mutate(lambda b: b.__setitem__(9, (b[9] & 0xF0) | 1)), 0))
    # (0x81, RoCE v2's CNP, is not InfiniBand's)
    for opcode in (0x15, 0x18, 0x1C, 0x1E, 0x1F, 0x2C, 0x2F, 0x32, 0x33, 0x34, 0x40, 0x60, 0x63, 0x66,
                   0x72, 0x73, 0x80, 0x81, 0xC4, 0xE4, 0xFF):
        out.append((f"unknown opcode {opcode:#04x}",
                    mutate(lambda b, o=opcode: b.__setitem__(8, o), n=16), 0))
    for opcode, keep in ((0x0A, 8), (0x0C, 12), (0x11, 0), (0x64, 4), (0x0B, 16), (0x65, 8),
                         (0x10, 0), (0x13, 24), (0x14, 20), (0x12, 8), (0x12, 0), (0x17, 0),
                         (0x1D, 12)):
        out.append((f"opcode {opcode:#04x} headers cut to {keep} bytes",
                    mutate(lambda b, k=keep: b.__delitem__(slice(20 + k, None)), opcode=opcode,
                           n=0), 0))
    for opcode in (0x0C, 0x11, 0x12, 0x13, 0x14):
        body = body_of(ib.build(good(opcode, n=0))) + rng.randbytes(4)
        out.append((f"{ib.OPCODES[opcode].name} with 4 payload bytes (it carries none)",
                    reseal(fix_lengths(body)), 0))
    out.append(("PadCnt 3 with no payload",
                mutate(lambda b: b.__setitem__(9, (b[9] & 0xCF) | 0x30), n=0), 0))
    for opcode in (0x00, 0x01, 0x06, 0x07, 0x0D, 0x0E, 0x20, 0x21, 0x26, 0x27):
        out.append((f"PadCnt on {ib.OPCODES[opcode].name}",
                    ib.build(good(opcode, n=rng.choice([5, 62, 101]))), 0))
    out.append(("P_Key other partition",
                mutate(lambda b: b.__setitem__(11, b[11] ^ 0x10)), 0))
    return out


def vlan_mismatches(rng, port):
    """(name, packet) of a frame to each GID table entry's GID on each VLAN of the table but
    its own (untagged being one) and on one no entry has."""
    unused = next(v for v in range(1, 1 << 12) if (1 << 12 | v) not in port.vlans)
    for entry, vlan in enumerate(port.vlans):
        for other in sorted({v for v in port.vlans if v != vlan} | {1 << 12 | unused}):
            pkt = port.frame(rng, 0x04, rng.randrange(200), entry)
            tagged = bool(other >> 12)
            pkt.roce = replace(pkt.roce, vlan=other & 0xFFF if tagged else None,
                               pcp=rng.randrange(8) if tagged else 0)
            what = f"VLAN {other & 0xFFF}" if tagged else "untagged"
            yield f"entry {entry}'s GID (VLAN {vlan:#x}) {what}", pkt


def eth_bad_frames(tb):
    """(name, wire bytes, tuser) for every check of a RoCE v2 frame: each frame is well formed
    but in the one field named, its IPv4 checksum, ICRC and FCS made right for it (but where
    the check is that CRC). The IP-specific checks come over IPv4 and IPv6, to a random GID
    table entry of that version (tagged or not)."""
    rng, port = tb.rng, tb.port

    def good(opcode=0x04, n=None, v4=None, tagged=None):
        return port.frame(rng, opcode, rng.randrange(1, 200) if n is None else n,
                          rng.choice(port.entries(v4, tagged)))

    def mutate(fn, opcode=0x04, n=None, v4=None, tagged=None, **how):
        """A good frame with fn(body, layout) applied to its destination MAC .. pad, then
        resealed (reframe's keywords in `how`)."""
        wire = ib.build(good(opcode, n, v4, tagged))
        at = layout(wire)
        body = bytearray(wire[:at.end - ib.ICRC_BYTES])
        fn(body, at)
        return reframe(body, at, **how)

    def put(where, value):
        """fn for mutate: `value` (bytes) at where(layout)."""
        def fn(body, at):
            body[where(at):where(at) + len(value)] = value
        return fn

    def flip(where, bit=0x01):
        def fn(body, at):
            body[where(at)] ^= bit
        return fn

    def ips():
        return (("IPv4", True), ("IPv6", False))

    out = []
    # the link: tuser, the CRCs, holes, the frame's length against the IP packet
    w = ib.build(good())
    out.append(("tuser on the last beat", w, [0] * (len(w) - 1) + [1]))
    w = bytearray(ib.build(good()))
    w[-1] ^= 0x01
    out.append(("FCS wrong", w, 0))
    w = bytearray(ib.build(good(n=rng.randrange(40, 200))))
    w[layout(w).end - 2] ^= 0x80                     # an ICRC byte, the FCS made right again
    out.append(("ICRC wrong", bytes(w[:-4]) + fcs_bytes(bytes(w[:-4])), 0))
    w = bytearray(ib.build(good(n=100)))
    w[layout(w).bth + 20] ^= 0x04                    # a payload byte: ICRC and FCS both wrong
    out.append(("payload corrupted", w, 0))
    w = ib.build(good(n=3 * tb.nbytes))
    keep = [1] * len(w)
    keep[tb.nbytes + 3] = 0                         # a byte missing from a middle beat
    out.append(("tkeep hole in a middle beat", (w, keep), 0))
    long = bytearray(rng.randbytes(9000))
    w = ib.build(good(n=0))
    long[:layout(w).bth + 12] = w[:layout(w).bth + 12]
    out.append(("frame longer than the buffer", bytes(long) + fcs_bytes(bytes(long)), 0))
    [untagged_v4] = port.entries(v4=True, tagged=False)
    for name, how in (("62 bytes: not padded to 64", {"pad": False}),
                      ("padded past 64 bytes (6 zero bytes after the IP packet)",
                       {"after": bytes(6)})):
        wire = ib.build(port.frame(rng, 0x04, 0, untagged_v4))
        at = layout(wire)
        out.append((name, reframe(wire[:at.end - 4], at, **how), 0))
    for ip, v4 in ips():
        out.append((f"{ip}: 4 zero bytes after the IP packet, past 64 bytes",
                    mutate(lambda b, at: None, v4=v4, after=bytes(4)), 0))
    # Ethernet
    out.append(("destination MAC not ours", mutate(flip(lambda at: 5)), 0))
    out.append(("broadcast destination MAC", mutate(put(lambda at: 0, b"\xff" * 6)), 0))
    out.append(("EtherType 0x0806, untagged",
                mutate(put(lambda at: at.ip - 2, b"\x08\x06"), v4=True, tagged=False), 0))
    out.append(("EtherType 0x88B5 after an 802.1Q tag",
                mutate(put(lambda at: at.ip - 2, b"\x88\xb5"), v4=True, tagged=True), 0))

    def v4_as_v6(body, at):
        # version 6 in an IPv4 header; its identification read as an IPv6 payload length
        # gives the same IP end, so a receiver that reads it as IPv6 finds the ICRC right
        body[at.ip] = 0x65
        size = int.from_bytes(body[at.ip + 2:at.ip + 4], "big")
        body[at.ip + 4:at.ip + 6] = (size - 40).to_bytes(2, "big")
    out.append(("IPv4 header with version 6 under EtherType 0x0800",
                mutate(v4_as_v6, n=rng.randrange(40, 200), v4=True), 0))

    def v6_as_v4(body, at):
        # version 4 in an IPv6 header; the flow label's low 16 bits read as an IPv4 total
        # length give the same IP end (the ICRC is the one an IPv4 reading computes)
        body[at.ip] = 0x40 | body[at.ip] & 0x0F
        body[at.ip + 2:at.ip + 4] = (at.end - at.ip).to_bytes(2, "big")
    out.append(("IPv6 header with version 4 under EtherType 0x86DD",
                mutate(v6_as_v4, v4=False, icrc=icrc_v4_layout), 0))
    # IPv4
    out.append(("IPv4 IHL 6", mutate(put(lambda at: at.ip, b"\x46"), v4=True,
                                     icrc=icrc_v4_layout), 0))
    out.append(("IPv4 header checksum wrong",
                mutate(flip(lambda at: at.ip + 11), v4=True, checksum=False), 0))
    for name, flags in (("more fragments", 0x2000), ("fragment offset 1", 0x4001),
                        ("fragment offset 0x1000", 0x5000)):
        out.append((f"IPv4 {name}",
                    mutate(put(lambda at: at.ip + 6, flags.to_bytes(2, "big")), v4=True), 0))
    out.append(("IPv4 protocol 6 (TCP)", mutate(put(lambda at: at.ip + 9, b"\x06"), v4=True),
                0))
    out.append(("IPv6 next header 6 (TCP)",
                mutate(put(lambda at: at.ip + 6, b"\x06"), v4=False), 0))
    # UDP, the destination GID
    for ip, v4 in ips():
        out.append((f"{ip}: UDP destination port 4790",
                    mutate(put(lambda at: at.udp + 2, (4790).to_bytes(2, "big")), v4=v4), 0))
        for delta in (4, -4):
            def udp_len(body, at, delta=delta):
                size = int.from_bytes(body[at.udp + 4:at.udp + 6], "big") + delta
                body[at.udp + 4:at.udp + 6] = size.to_bytes(2, "big")
            out.append((f"{ip}: UDP length {delta:+d} from the IP packet's",
                        mutate(udp_len, v4=v4), 0))
        # one byte past whole words, the IP and UDP lengths agreeing
        out.append((f"{ip}: BTH .. ICRC not whole 4-byte words",
                    mutate(lambda body, at: body.append(0), n=8, v4=v4, lengths=True), 0))
        last = 19 if v4 else 39
        out.append((f"{ip}: destination address in no GID table entry",
                    mutate(flip(lambda at, last=last: at.ip + last), v4=v4), 0))
    # an IPv4-mapped entry is an IPv4 address: an IPv6 header naming it names no one here
    mapped = good(v4=True)
    out.append(("IPv6 to an IPv4-mapped GID table entry",
                ib.build(replace(mapped, roce=replace(mapped.roce, sgid=rng.randbytes(16)))), 0))
    # the transport's checks over Ethernet: its lengths come from the UDP length
    out.append(("BTH TVer 1", mutate(lambda b, at: b.__setitem__(at.bth + 1,
                                                                 b[at.bth + 1] & 0xF0 | 1)), 0))
    for opcode in (0x15, 0x1E, 0x2C, 0x66, 0xFF):
        out.append((f"unknown opcode {opcode:#04x}",
                    mutate(put(lambda at: at.bth, bytes([opcode])), n=16), 0))
    out.append(("P_Key other partition", mutate(flip(lambda at: at.bth + 3, 0x10)), 0))
    for opcode in (0x00, 0x26):
        out.append((f"PadCnt on {ib.OPCODES[opcode].name}",
                    ib.build(good(opcode, n=rng.choice([5, 62, 101]))), 0))
    for opcode in (0x13, 0x12, 0x0A):
        out.append((f"{ib.OPCODES[opcode].name} headers cut by 4 bytes",
                    cut_by_4(good(opcode, n=0)), 0))
    out.append(("RDMA_READ_REQUEST with 4 payload bytes",
                mutate(lambda b, at: b.extend(rng.randbytes(4)), opcode=0x0C, n=0,
                       lengths=True), 0))
    out.append(("payload larger than MAX_PAYLOAD", ib.build(good(n=MAX_PAYLOAD + 4)), 0))
    return out


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_bad_packets_dropped(dut, link):
    """Every kind of bad packet is dropped: rcv_error (with rcv_internal), nothing presented,
    and the good packet sent right after it comes through intact."""
    tb = TB(dut, "test_bad_packets_dropped", link)
    rng = tb.rng
    await tb.reset()
    frames = bad_frames(tb)
    for name, wire, tuser in frames:
        internal = rng.randrange(2)
        await tb.send_bad(wire, internal=internal, tuser=tuser)
        opcode = rng.choice(ACCEPTED)
        await tb.send_good(tb.port.packet(rng, opcode, legal_length(rng, opcode, [0, 1, 77, 256])),
                           internal=1 - internal)
        await tb.drain()
        tb.check(name)
    tb.log.info("%d kinds of bad packet dropped", len(frames))


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_pkey_membership(dut, link):
    """P_Key: the low 15 bits must match and at least one side be a full member."""
    tb = TB(dut, "test_pkey_membership", link)
    rng = tb.rng
    await tb.reset()
    for port_full in (1, 0):
        tb.port.pkey = (tb.port.pkey & 0x7FFF) | (port_full << 15)
        tb.port.drive(dut)
        for pkt_full in (1, 0):
            pkt = tb.port.packet(rng, 0x04, 20)
            pkt.bth.pkey = (tb.port.pkey & 0x7FFF) | (pkt_full << 15)
            if port_full or pkt_full:
                await tb.send_good(pkt)
            else:
                await tb.send_bad(ib.build(pkt))
            await tb.drain()
            tb.check(f"port full {port_full}, packet full {pkt_full}")


@cocotb.test()
async def test_eth_gid_table(dut):
    """Ethernet: a frame is taken only for a nonzero GID table entry on that entry's VLAN.
    Each entry's GID on its own VLAN comes through; on every other VLAN of the table (untagged
    included) and on one no entry has it is dropped, unless it came from the internal loopback
    (a loopback message's path attributes mean nothing). An entry made empty (all zeros) takes
    nothing: neither a frame to the GID it held nor one to the all-zero GID on its VLAN; given
    its GID back, it takes frames again."""
    tb = TB(dut, "test_eth_gid_table", "eth")
    rng, port = tb.rng, tb.port
    await tb.reset()
    for entry in range(4):
        await tb.send_good(port.frame(rng, 0x04, rng.randrange(100), entry))
    for _, pkt in vlan_mismatches(rng, port):
        await tb.send_bad(ib.build(pkt))
        await tb.send_good(pkt, internal=1)
    await tb.drain()
    tb.check("the GID table's entries and VLANs")
    for entry in range(4):
        gid = port.gids[entry]
        to_old = port.frame(rng, 0x0A, rng.randrange(100), entry)
        port.gids[entry] = bytes(16)
        port.drive(dut)
        await tb.send_bad(ib.build(to_old))
        await tb.send_bad(ib.build(port.frame(rng, 0x04, rng.randrange(100), entry)))  # to ::
        await tb.drain()
        tb.check(f"entry {entry} empty")
        port.gids[entry] = gid
        port.drive(dut)
        await tb.send_good(port.frame(rng, 0x0A, rng.randrange(100), entry))
        await tb.drain()
        tb.check(f"entry {entry} given back")


@cocotb.test()
async def test_eth_priority_tag(dut):
    """Ethernet: VLAN ID 0 is no VLAN (802.1Q: a priority tag carries only the PCP). A frame
    priority-tagged (VID 0, any PCP) to an untagged entry's GID is taken, with its tag in the
    header (tagged, VID 0); an entry tagged with VID 0 takes untagged and priority-tagged
    frames alike, and none tagged with a VLAN (the one it was on)."""
    tb = TB(dut, "test_eth_priority_tag", "eth")
    rng, port = tb.rng, tb.port
    await tb.reset()

    def to(entry, vlan):
        pkt = port.frame(rng, 0x04, rng.randrange(100), entry)
        pkt.roce = replace(pkt.roce, vlan=vlan, pcp=rng.randrange(8) if vlan is not None else 0)
        return pkt

    for entry in port.entries(tagged=False):
        await tb.send_good(to(entry, 0))
    await tb.drain()
    tb.check("priority-tagged frames to untagged entries")
    for entry in port.entries(tagged=True):
        vlan = port.vlans[entry]
        port.vlans[entry] = 1 << 12         # tagged, VID 0: its frames leave priority-tagged
        port.drive(dut)
        await tb.send_good(to(entry, None))
        await tb.send_good(to(entry, 0))
        await tb.send_bad(ib.build(to(entry, vlan & 0xFFF)))
        await tb.drain()
        tb.check(f"entry {entry} tagged with VID 0")
        port.vlans[entry] = vlan
        port.drive(dut)


@cocotb.test()
async def test_eth_ignored_fields(dut):
    """Ethernet: fields a RoCE v2 receiver does not check leave a frame good, its headers and
    payload presented as sent: IPv4 with DF clear, IPv4 identification nonzero, a nonzero
    UDP checksum (IPv4 and IPv6; the ICRC does not cover it), the 802.1Q DEI bit set."""
    tb = TB(dut, "test_eth_ignored_fields", "eth")
    rng, port = tb.rng, tb.port
    await tb.reset()

    def put(where, value):
        def fn(body, at):
            body[where(at):where(at) + len(value)] = value
        return fn

    cases = [("IPv4 DF clear", True, None, put(lambda at: at.ip + 6, b"\x00\x00")),
             ("IPv4 identification", True, None,
              put(lambda at: at.ip + 4, rng.randrange(1, 1 << 16).to_bytes(2, "big"))),
             ("IPv4 UDP checksum", True, None,
              put(lambda at: at.udp + 6, rng.randrange(1, 1 << 16).to_bytes(2, "big"))),
             ("IPv6 UDP checksum", False, None,
              put(lambda at: at.udp + 6, rng.randrange(1, 1 << 16).to_bytes(2, "big"))),
             ("802.1Q DEI", None, True, lambda b, at: b.__setitem__(14, b[14] | 0x10))]
    for name, v4, tagged, change in cases:
        for entry in port.entries(v4, tagged):
            pkt = port.frame(rng, rng.choice([0x04, 0x0A, 0x64]), rng.randrange(200), entry)
            wire = ib.build(pkt)
            at = layout(wire)
            body = bytearray(wire[:at.end - ib.ICRC_BYTES])
            change(body, at)
            changed = reframe(body, at)
            assert changed != wire, name
            await tb.send_good(pkt, wire=changed)
        await tb.drain()
        tb.check(name)


@cocotb.test()
async def test_eth_cnp(dut):
    """Ethernet: a CNP (opcode 0x81, 16 reserved bytes) to each GID table entry is taken,
    its header presented with no payload (rcv_ce when it came marked CE); one carrying 4
    payload bytes, one whose reserved bytes are cut to 12, and one whose opcode is 0x80 are
    dropped."""
    tb = TB(dut, "test_eth_cnp", "eth")
    rng, port = tb.rng, tb.port
    await tb.reset()
    for entry in range(len(port.gids)):
        for _ in range(3):
            await tb.send_good(port.frame(rng, ib.CNP_OPCODE, 0, entry))
    for change in (lambda b, at: b.extend(rng.randbytes(4)),
                   lambda b, at: b.__delitem__(slice(at.bth + 12 + 12, None)),
                   lambda b, at: b.__setitem__(at.bth, 0x80)):
        wire = ib.build(port.frame(rng, ib.CNP_OPCODE, 0))
        at = layout(wire)
        body = bytearray(wire[:at.end - ib.ICRC_BYTES])
        change(body, at)
        await tb.send_bad(reframe(body, at, lengths=True))
    await tb.drain()
    tb.check("CNPs")


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_bad_packets_back_to_back(dut, link):
    """Bad and good packets back to back with gaps and backpressure, none dropped wrongly."""
    tb = TB(dut, "test_bad_packets_back_to_back", link)
    rng = tb.rng
    tb.source.set_pause_generator(pauses(rng, 0.2))
    tb.hdr_ready_p = 0.7
    tb.pl_ready_p = 0.7
    await tb.reset()
    frames = bad_frames(tb)
    for _ in range(40):
        if rng.random() < 0.5:
            _, wire, tuser = rng.choice(frames)
            await tb.send_bad(wire, tuser=tuser, internal=rng.randrange(2))
        else:
            opcode = rng.choice(ACCEPTED)
            n = legal_length(rng, opcode, [0, 1, 3, 64, 500, rng.randrange(MAX_PAYLOAD + 1)])
            await tb.send_good(tb.port.packet(rng, opcode, n), internal=rng.randrange(2))
    await tb.drain()
    tb.check("mixed")


@cocotb.test()
async def test_pl_drop(dut):
    """pl_drop in the header handshake cycle, after it, or midway through the payload releases
    the packet: nothing more of its payload appears, the next packets come through; a pulse
    with no payload pending is ignored."""
    tb = TB(dut, "test_pl_drop")
    rng = tb.rng
    tb.pl_ready_p = 0.8
    tb.stray_drop_p = 0.05
    await tb.reset()
    # at least 60 packets, and on until each kind of pulse has happened (it depends on the seed)
    for i in range(200):
        if i >= 60 and tb.stray_drops and tb.drops_with_hdr and tb.late_drops:
            break
        opcode = rng.choice([0x04, 0x0A, 0x24, 0x64, 0x10, 0x11, 0x0C])
        n = legal_length(rng, opcode, [0, 1, 100, 1000, MAX_PAYLOAD])
        await tb.send_good(tb.port.packet(rng, opcode, n), drop=rng.random() < 0.5)
    await tb.drain()
    tb.check("pl_drop")
    tb.log.info("%d payloads dropped (%d by a pulse in the handshake cycle, %d midway, %d read "
                "to the end before the pulse), %d stray pl_drop pulses ignored",
                len(tb.drop_set), tb.drops_with_hdr, tb.late_drops, len(tb.late_completed),
                tb.stray_drops)
    assert tb.stray_drops > 0 and tb.drops_with_hdr > 0 and tb.late_drops > 0


@cocotb.test()
async def test_back_to_back_max_throughput(dut):
    """Back-to-back maximum-size packets (4096-byte SEND only, the shortest header) with the
    consumer always ready: the RX link is never stalled (not one cycle with a beat offered and
    tready low) and takes one beat a cycle; the output gives one payload beat a cycle and
    spends exactly one cycle per packet on its header handshake."""
    tb = TB(dut, "test_back_to_back_max_throughput")
    rng = tb.rng
    await tb.reset()
    count = 12
    pkts = [tb.port.packet(rng, 0x04, MAX_PAYLOAD, grh=False) for _ in range(count)]
    beats_per = -(-len(ib.build(pkts[0])) // tb.nbytes)
    for p in pkts:
        await tb.send_good(p)
    await tb.drain()
    tb.check("throughput")
    first, last = tb.rx_beats[0], tb.rx_beats[-1]
    window = last - first + 1
    tb.log.info("%d packets of %d beats at %d bits: %d RX beats in %d cycles, %d stall cycles",
                count, beats_per, 8 * tb.nbytes, len(tb.rx_beats), window, tb.stalls)
    assert len(tb.rx_beats) == count * beats_per
    assert tb.stalls == 0, f"the RX link was stalled for {tb.stalls} cycles"
    assert window == count * beats_per, "the RX link idled inside the stream"
    # The output keeps pace: a packet every max(link beats, payload beats + header) cycles.
    pl_per = MAX_PAYLOAD // tb.nbytes
    period = max(beats_per, pl_per + 1)
    out_window = tb.pl_beats[-1] - tb.pl_beats[0] + 1
    tb.log.info("output: %d payload beats in %d cycles, a packet every %s cycles",
                len(tb.pl_beats), out_window,
                sorted({b - a for a, b in zip(tb.hdr_cycles, tb.hdr_cycles[1:])}))
    assert len(tb.pl_beats) == count * pl_per
    for a, b in zip(tb.hdr_cycles, tb.hdr_cycles[1:]):
        assert b - a == period, f"headers {b - a} cycles apart, expected {period}"
    assert out_window == (count - 1) * period + pl_per, "the payload output idled"


# ---------------------------------------------------------------------------------------------
# Packets from the real packetizer


async def packetizer_message(tb, operation, transport, length, mtu, grh, imm, se, internal,
                             entry=None):
    """One descriptor through the packetizer into the depacketizer; the packets it must give,
    as ib_packet builds them, are the expectation. On Ethernet the message goes to the port's
    MAC and GID table entry `entry` (random when None) on its VLAN, from an IPv4-mapped SGID
    to an IPv4 entry, the flow label sometimes 0; `grh` (desc_is_global), the LIDs and the
    SL's top bit mean nothing there."""
    dut, rng, port = tb.dut, tb.rng, tb.port
    eth = port.link == "eth"
    payload = rng.randbytes(length)
    fields = {
        "kind": KIND[operation], "transport": TRANSPORT[transport], "imm_valid": int(imm),
        "inv": 0, "awrite": int(operation == "ATOMIC_WRITE"), "cnp": 0,
        "imm": rng.randrange(1 << 32),
        "solicited": int(se), "len": length,
        "mtu": MTU_ENUM[mtu], "dlid": port.lid | rng.randrange(1 << port.lmc),
        "slid": rng.randrange(1 << 16), "sl": rng.randrange(16), "is_global": int(grh),
        "tclass": rng.randrange(256), "flow_label": rng.randrange(1 << 20),
        "hop_limit": rng.randrange(256), "sgid": rng.randrange(1 << 128),
        "dgid": int.from_bytes(port.gid, "big"),
        "pkey": (port.pkey & 0x7FFF) | (rng.randrange(2) << 15),
        "dest_qpn": rng.randrange(1 << 24), "psn": rng.randrange(1 << 24),
        "qkey": rng.randrange(1 << 32), "src_qpn": rng.randrange(1 << 24),
        "raddr": rng.randrange(1 << 64), "rkey": rng.randrange(1 << 32),
        "dma_len": rng.randrange(1 << 32), "syndrome": rng.randrange(256),
        "msn": rng.randrange(1 << 24), "atomic_a": rng.randrange(1 << 64),
        "atomic_b": rng.randrange(1 << 64), "dmac": 0, "vlan": 0,
    }
    f = fields
    if eth:
        if entry is None:
            entry = rng.randrange(len(port.gids))
        gid, vlan = port.gids[entry], port.vlans[entry]
        v4, tagged = ib.is_ipv4_mapped(gid), bool(vlan >> 12)
        sgid = ib.ipv4_gid(rng.randbytes(4)) if v4 else rng.randbytes(16)
        f.update(dmac=int.from_bytes(port.mac, "big"), sgid=int.from_bytes(sgid, "big"),
                 dgid=int.from_bytes(gid, "big"),
                 vlan=vlan if tagged else rng.randrange(1 << 12))    # untagged: VID ignored
        if rng.random() < 0.3:
            f["flow_label"] = 0         # the UDP source port then comes from the QPNs
        addressing = {"roce": ib.RoCE(
            dmac=port.mac, smac=PACKETIZER_MAC, sgid=sgid, dgid=gid, hop_limit=f["hop_limit"],
            tclass=f["tclass"], flow_label=0 if v4 else f["flow_label"],
            sport=roce_sport(f["flow_label"], f["src_qpn"], f["dest_qpn"]),
            vlan=vlan & 0xFFF if tagged else None, pcp=f["sl"] & 7 if tagged else 0)}
    else:
        lrh = ib.LRH(dlid=f["dlid"], slid=f["slid"], sl=f["sl"])
        g = ib.GRH(sgid=f["sgid"].to_bytes(16, "big"), dgid=f["dgid"].to_bytes(16, "big"),
                   hop_limit=f["hop_limit"], tclass=f["tclass"], flow_label=f["flow_label"]) \
            if grh else None
        addressing = {"lrh": lrh, "grh": g}
    reth = ib.RETH(va=f["raddr"], rkey=f["rkey"], dma_len=f["dma_len"])
    aeth = ib.AETH(syndrome=f["syndrome"], msn=f["msn"])
    if operation in SINGLE:
        atomic = ib.AtomicETH(va=f["raddr"], rkey=f["rkey"], swap_add=f["atomic_a"],
                              compare=f["atomic_b"])
        ext = {"RDMA_READ_REQUEST": {"reth": reth}, "ACKNOWLEDGE": {"aeth": aeth},
               "ATOMIC_ACKNOWLEDGE": {"aeth": aeth,
                                      "atomic_ack_eth": ib.AtomicAckETH(f["atomic_a"])},
               "COMPARE_SWAP": {"atomic_eth": atomic}, "FETCH_ADD": {"atomic_eth": atomic}}
        bth = ib.BTH(opcode=SINGLE[operation], dest_qp=f["dest_qpn"], psn=f["psn"],
                     pkey=f["pkey"], ackreq=operation in ("COMPARE_SWAP", "FETCH_ADD"))
        pkts = [ib.Packet(bth=bth, **addressing, **ext[operation])]
    else:
        pkts = ib.packetize(
            transport, operation, payload, mtu, dest_qp=f["dest_qpn"], psn=f["psn"],
            pkey=f["pkey"], **addressing,
            deth=ib.DETH(qkey=f["qkey"], src_qp=f["src_qpn"]) if transport == "UD" else None,
            reth=reth if operation in ("RDMA_WRITE", "ATOMIC_WRITE") else None,
            aeth=aeth if operation == "RDMA_READ_RESPONSE" else None,
            immdt=ib.ImmDt(imm_le(f["imm"])) if imm else None, se=se)
    for p in pkts:
        tb.expected.append((expected_header(p, internal), bytes(p.payload)))
        tb.expected_events.append(("pkt", pkt_words(p, ib.build(p)), internal, int(marked_ce(p))))
    tb.tx_payload = payload
    for name, value in fields.items():
        getattr(dut, f"desc_{name}").value = value
    dut.loop_tid.value = internal
    dut.desc_valid.value = 1
    while True:
        await RisingEdge(dut.clk)
        if dut.desc_ready.value:
            break
    dut.desc_valid.value = 0
    while True:     # the packetizer takes the next descriptor early: let this message finish
        await RisingEdge(dut.clk)
        if dut.desc_done.value:
            break
    return len(pkts)


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_from_packetizer(dut, link):
    """Messages of every kind and transport built by rtl/port/packetizer.v (pkt_header.v) are
    received with every field equal to the descriptor's (imm, raddr, rkey, dma_len, qkey,
    src_qpn, syndrome, msn, atomic_a, atomic_b, psn, dest_qpn, GRH fields) and the payload
    intact. On Ethernet (both ends eth=1) the messages go to each GID table entry in turn
    (IPv4 and IPv6, tagged and untagged): the packetizer's MAC, the VLAN, the SL's low bits
    as PCP and the IP fields come out as the descriptor gave them."""
    tb = TB(dut, "test_from_packetizer", link)
    rng = tb.rng
    tb.tx_source.set_pause_generator(pauses(rng, 0.1))
    tb.hdr_ready_p = 0.8
    tb.pl_ready_p = 0.8
    await tb.reset()
    dut.loop_sel.value = 1
    combos = [("RC", "SEND"), ("RC", "RDMA_WRITE"), ("UC", "SEND"), ("UC", "RDMA_WRITE"),
              ("UD", "SEND"), ("RC", "RDMA_READ_REQUEST"), ("RC", "RDMA_READ_RESPONSE"),
              ("RC", "ACKNOWLEDGE"), ("RC", "COMPARE_SWAP"), ("RC", "FETCH_ADD"),
              ("RC", "ATOMIC_ACKNOWLEDGE"), ("RC", "ATOMIC_WRITE")]
    total = entry = 0
    for tr, op in combos:
        for grh in (False, True):
            for flag in (False, True):
                mtu = rng.choice(ib.VALID_MTUS)
                if op in SINGLE:
                    length = 0
                elif op == "ATOMIC_WRITE":
                    length = ATOMIC_WRITE_BYTES
                elif tr == "UD":
                    length = rng.choice([0, 1, 7, mtu - 1, mtu])
                else:
                    length = rng.choice([0, 1, 5, mtu - 1, mtu, mtu + 1, 2 * mtu + 3])
                imm = flag and op in ("SEND", "RDMA_WRITE")
                se = flag and op in ("SEND", "RDMA_WRITE")
                total += await packetizer_message(tb, op, tr, length, mtu, grh, imm, se,
                                                  internal=rng.randrange(2), entry=entry % 4)
                entry += 1
    await tb.drain()
    tb.check("from the packetizer")
    tb.log.info("%d packets from the packetizer checked", total)


# ---------------------------------------------------------------------------------------------
# The pytest runner: depacketizer unit tests at each supported data width.

RTL_FILES = ["depacketizer.v", "crc_stream.v", "ib_icrc.v",
             "packetizer.v", "pkt_header.v", "pkt_append.v"]   # the packetizer feeds one test


@pytest.mark.parametrize("w", UNIT_WIDTHS)
def test_depacketizer(w):
    simrun.run(
        toplevel="tb_depacketizer",
        test_module="test_depacketizer",
        parameters={"DATA_WIDTH": w},
        name=f"depacketizer_w{w}",
        rtl=RTL_FILES,
    )
