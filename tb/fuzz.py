"""The fuzzer: hostile packets on rdma_dev's receive side and random work requests in its rings,
beside live traffic, with the device's invariants checked as it runs (`make fuzz`,
docs/fuzzing.md).

It works across one cable between two ends (End): the peers' end and the targets' end, either
a device's two ports cabled to each other (tb_rdma_dev, CABLE = 1) or port 1 of each of two
devices (tb_fabric), their ports on InfiniBand or on Ethernet (RoCE v2: RDMA_LINK=eth, every
address a GID). Live traffic, the canaries, crosses the cable in its own protection
domain: an RC QP at the peers' end writes and sends to one at the targets' end, a UD QP sends
to one, every round, their data checked. The fuzzer owns other QPs in a PD of its own on each
device (Side): at the targets' end an RC, a UC and a UD QP (the targets), an RC QP left in
RESET and one in RTS on the device's other port, and at the peers' end the targets' peers. It
works in batches, each of one kind:

- a packet batch puts up to PACKET_BATCH packets of one kind (a field of one header mutated,
  a payload against the path MTU, a check of the link broken, a QP check broken, real
  packets replayed long after their time, or on Ethernet packets marked Congestion
  Experienced and CNPs) on a port's receive side through the harness's packet player, between
  the packets the cable delivers; the kinds are the port's link layer's (KINDS): an LRH or a
  VCRC on InfiniBand, a MAC, VLAN, IP or UDP header or an FCS on Ethernet;
- a WR batch writes random WQEs (valid ones with fields given values that matter, some wholly
  random bytes) into the targets' send rings and rings their doorbells, some with a random
  producer index, under one of WR_CONDITIONS; some are followed by random commands.

After each batch the links go quiet and the invariants are checked; the first one broken
stops the run (Violation); the test writes the last batches' packets to a pcap and prints a
replay command:

- no stray write: each device's host memory write guard (tb/hdl/sim_axi_ram.v) allows only
  its CQ rings, the canaries' destinations and the fuzzer's regions that allow a write (local
  or remote); the rings, the margins around every region, a read-only region, a region of a
  PD no QP uses and every other byte must never be written;
- no hang: the canaries complete within CANARY_BOUND cycles with their data in place, every
  WQE a doorbell handed the device is consumed within WR_BOUND cycles, register accesses are
  answered (tb/rdma_tb.Registers);
- everything accounted for: per port, every packet that arrived moved PortRcvPkts (it passed
  the link checks) or PortRcvErrors only (it did not), and a QP check's drop moved both;
  the cable's packets are never dropped; a kind whose fate the spec fixes (a link check
  broken, a QP that cannot take it, a duplicate) ends exactly so; PortXmitPkts counts exactly
  the packets the port's link carried; every packet a port sent decodes (tb/ib_packet.py; on
  Ethernet scapy agrees, tb/scapy_judge.py) but for those it aborted; no completion has a
  status the device does not produce or a wr_id nobody posted; QPs end in the states the spec
  allows (the RESET QP stays in RESET, the other port's in RTS, a QP that only received stray
  answers keeps its state, the canaries stay in RTS);
  the AXI bus stays legal;
- on Ethernet, CNPs only as docs/packet-path.md ("ECN and CNPs") says: np_cnp_sent counts
  exactly the CNPs the port's link carried, each for a packet marked CE
  (np_ecn_marked_roce_packets), and rp_cnp_handled exactly the CNPs that came over the cable
  for a QP of the port that may have sent (and at most the injected packets whose opcode is
  the CNP's beside them); a batch of marked packets draws one CNP for each marked request a QP
  took, none for answers or refused requests (the targets' device sends a CNP for every marked
  request: CNP_INTERVAL 0).

What each kind did (link-dropped, dropped by a QP check, taken by a QP; the answers it drew,
the completions it caused) is tallied per kind for the report.
"""

import re
import struct
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, replace

from cocotb.triggers import ClockCycles
from cocotb_coverage.coverage import CoverPoint

from .coverage import DMA_CLIENTS, VERBS_ONLY_STATUSES
from .ib_crc import fcs_bytes, icrc_bytes, roce_icrc_bytes, vcrc_bytes
from .ib_packet import (
    AETH, BTH, CNP_OPCODE, DETH, ECN_CE, ETH_HEADER_BYTES, ETHERTYPE_IPV4, ETHERTYPE_IPV6,
    ETHERTYPE_VLAN, EXTENSION_HEADERS, FCS_BYTES, GRH, ICRC_BYTES, IP_PROTO_UDP,
    IPV4_HEADER_BYTES, IPV6_HEADER_BYTES, LRH, OPCODES, PSN_MASK, ROCE_V2_UDP_PORT,
    UDP_HEADER_BYTES, VCRC_BYTES, VLAN_TAG_BYTES, AtomicAckETH, AtomicETH, CNPReserved, ImmDt,
    Packet, RETH, RoCE, build, ipv4_checksum, ipv4_gid, is_ipv4_mapped, seal, seal_frame,
    vlan_id,
)
from .link_faults import bth_at
from .pcap import PcapWriter
from .rdma_tb import CLOCK_PERIOD_NS
from .rdma_program import ALL_ACCESS, work_request
from .verbs import (
    ATOMIC_OPS, MTU, Access, Cmd, CmdResult, CommandError, GlobalRoute, PortCounter, QPState,
    QPType, RecvWR, SendFlags, SendWR, WCStatus, WROpcode, encode_send_wqe, port_counter_reg,
    sq_db,
)

PACKET_BATCH = 48       # packets per packet batch
WR_BATCH = 6            # WQEs per target per WR batch, at most
CANARY_BOUND = 150_000  # cycles a canary round may take, RC retries after discarded ACKs included
WR_BOUND = 300_000      # cycles within which the device must consume every WQE handed to it
QUIET = 256             # cycles without a beat on any link after which a batch is over
FUZZ_QKEY = 0x0F0F2222
CANARY_QKEY = 0x11117777
RECEIVES = 8            # receives kept posted on each fuzz QP
# what a WR batch runs under, in rounds of eleven batches (shuffled): plain six times, then the
# RC target's peer without receives (RNR), with receives whose lkey it may not write through
# (remote operational error), in ERR (no answers: retries exhausted), and host memory refusing
# the first WQE's ring slot or a piece of the payloads (READ and atomic results included)
WR_CONDITIONS = ("plain",) * 6 + ("peer without receives", "peer with a receive it may not write",
                                  "peer in ERR", "host memory fails the ring",
                                  "host memory fails payloads")
PEER_CONDITIONS = WR_CONDITIONS[6:9]
RECV_BYTES = 320        # each: a UD GRH area and a 256-byte payload, and some
FUZZ_MTU = MTU.MTU256   # the fuzz QPs' path MTU: small packets, many of them
DEVICE_STATUSES = frozenset(s for s in WCStatus if s.name not in VERBS_ONLY_STATUSES)
# Ethernet: where the fuzzer's AH for nobody points (InfiniBand: LID 0x77)
NOBODY_GID, NOBODY_MAC = ipv4_gid("10.0.0.119"), bytes.fromhex("020000000077")


class Violation(AssertionError):
    """An invariant broke: what, and the batch it broke in."""


# ---------------------------------------------------------------------------------------------
# Header fields: (header, name, offset of the field's first bit in the header, width in bits),
# reserved fields included. Headers are big-endian, bit 0 the most significant of byte 0.
# On Ethernet "eth" is the MACs and the EtherType after them (an 802.1Q tag's TPID in a tagged
# frame), "vlan" the tag's TCI and the EtherType behind it.

FIELDS = [
    ("lrh", "VL", 0, 4), ("lrh", "LVer", 4, 4), ("lrh", "SL", 8, 4), ("lrh", "Rsv2", 12, 2),
    ("lrh", "LNH", 14, 2), ("lrh", "DLID", 16, 16), ("lrh", "Rsv5", 32, 5),
    ("lrh", "PktLen", 37, 11), ("lrh", "SLID", 48, 16),
    ("grh", "IPVer", 0, 4), ("grh", "TClass", 4, 8), ("grh", "FlowLabel", 12, 20),
    ("grh", "PayLen", 32, 16), ("grh", "NxtHdr", 48, 8), ("grh", "HopLmt", 56, 8),
    ("grh", "SGID", 64, 128), ("grh", "DGID", 192, 128),
    ("eth", "DstMAC", 0, 48), ("eth", "SrcMAC", 48, 48), ("eth", "EtherType", 96, 16),
    ("vlan", "PCP", 0, 3), ("vlan", "DEI", 3, 1), ("vlan", "VID", 4, 12),
    ("vlan", "EtherType", 16, 16),
    ("ipv4", "Version", 0, 4), ("ipv4", "IHL", 4, 4), ("ipv4", "DSCP", 8, 6),
    ("ipv4", "ECN", 14, 2), ("ipv4", "TotalLen", 16, 16), ("ipv4", "ID", 32, 16),
    ("ipv4", "Flags", 48, 3), ("ipv4", "FragOff", 51, 13), ("ipv4", "TTL", 64, 8),
    ("ipv4", "Protocol", 72, 8), ("ipv4", "Checksum", 80, 16), ("ipv4", "SrcAddr", 96, 32),
    ("ipv4", "DstAddr", 128, 32),
    ("ipv6", "Version", 0, 4), ("ipv6", "TClass", 4, 8), ("ipv6", "FlowLabel", 12, 20),
    ("ipv6", "PayLen", 32, 16), ("ipv6", "NxtHdr", 48, 8), ("ipv6", "HopLmt", 56, 8),
    ("ipv6", "SrcAddr", 64, 128), ("ipv6", "DstAddr", 192, 128),
    ("udp", "SrcPort", 0, 16), ("udp", "DstPort", 16, 16), ("udp", "Length", 32, 16),
    ("udp", "Checksum", 48, 16),
    ("bth", "OpCode", 0, 8), ("bth", "SE", 8, 1), ("bth", "M", 9, 1), ("bth", "PadCnt", 10, 2),
    ("bth", "TVer", 12, 4), ("bth", "P_Key", 16, 16), ("bth", "Resv8a", 32, 8),
    ("bth", "DestQP", 40, 24), ("bth", "A", 64, 1), ("bth", "Resv7", 65, 7),
    ("bth", "PSN", 72, 24),
    ("deth", "Q_Key", 0, 32), ("deth", "Rsv8", 32, 8), ("deth", "SrcQP", 40, 24),
    ("reth", "VA", 0, 64), ("reth", "R_Key", 64, 32), ("reth", "DMALen", 96, 32),
    ("atomic_eth", "VA", 0, 64), ("atomic_eth", "R_Key", 64, 32),
    ("atomic_eth", "SwapAdd", 96, 64), ("atomic_eth", "Compare", 160, 64),
    ("aeth", "Syndrome", 0, 8), ("aeth", "MSN", 8, 24),
    ("atomic_ack_eth", "OrigData", 0, 64),
    ("immdt", "Immediate", 0, 32),
]
# the headers only one link layer has; the transport's follow them on both
LINK_HEADERS = {"ib": ("lrh", "grh"), "eth": ("eth", "vlan", "ipv4", "ipv6", "udp")}

# kinds whose fate the spec fixes: "link" ones fail a check of the link (PortRcvErrors only),
# "qp" ones pass it and fail the destination QP's (PortRcvPkts and PortRcvErrors), "replay"
# ones are real packets a QP takes as duplicates (PortRcvPkts only, nothing executed). The
# link checks are the link layer's: LRH, GRH and VCRC on InfiniBand; on Ethernet the frame's
# (the FCS, at least 64 bytes, the destination MAC, the EtherType and 802.1Q VLAN), IP's
# (version, IPv4 IHL, header checksum and no fragment, protocol, length) and UDP's (port 4791,
# length); the ICRC, BTH TVer and P_Key, the framing and the DGID on both
LINK_KINDS = {
    "ib": ("vcrc", "icrc", "truncated", "overlong", "garbage", "aborted", "dlid", "dgid",
           "lver", "tver", "pkey", "pktlen", "paylen", "ipver"),
    "eth": ("fcs", "icrc", "truncated", "overlong", "runt", "garbage", "aborted", "dmac",
            "ethertype", "vlan", "dgid", "ipver", "ihl", "checksum", "fragment", "protocol",
            "iplen", "udplen", "udpport", "tver", "pkey"),
}
IPV4_KINDS = ("ihl", "checksum", "fragment")      # Ethernet link kinds of IPv4 frames only
QP_KINDS = ("none", "reset", "other_port", "transport", "qkey")
REPLAY_KINDS = ("request", "answer", "datagram")
# payload lengths against the path MTU (256 on the fuzz QPs, the port's 4096 for UD): a first or
# middle packet short of it, any packet over it
LENGTH_KINDS = ("first short", "middle short", "first long", "middle long", "last long",
                "only long", "datagram long")
# Ethernet only: packets marked CE (IP ECN 11), whose requests a QP takes must draw a CNP each,
# and CNPs (BTH opcode 0x81) for the fuzz QPs and for QPs that cannot have sent
ECN_KINDS = ("ce", "cnp")
ANSWERS = ("RDMA_READ_RESPONSE", "ACKNOWLEDGE", "ATOMIC_ACKNOWLEDGE")   # operations of answers
KINDS = {link: [("field", f) for f in FIELDS if f[0] not in LINK_HEADERS[other]]
         + [("link", k) for k in LINK_KINDS[link]] + [("qp", k) for k in QP_KINDS]
         + [("replay", k) for k in REPLAY_KINDS] + [("length", k) for k in LENGTH_KINDS]
         + ([("ecn", k) for k in ECN_KINDS] if link == "eth" else [])
         for link, other in (("ib", "eth"), ("eth", "ib"))}


def kind_name(category, what):
    """How the report names a packet kind, e.g. "field bth.PSN", "link vcrc"."""
    return f"{category} {what[0]}.{what[1]}" if category == "field" else f"{category} {what}"


# Coverage (tb/coverage.py): each kind injected (of both link layers), and what became of the
# packets and WRs
@CoverPoint("rdma.fuzz.kind", xf=lambda name: name,
            bins=list(dict.fromkeys(kind_name(*k) for link in KINDS for k in KINDS[link]
                                    if k != ("replay", "datagram")))
            + ["field replayed datagram"])
def _sample_kind(name):
    pass


FUZZ_OUTCOMES = ["link-dropped", "QP-dropped", "taken by a QP", "answer ACK", "answer NAK",
                 "answer with data", "answer CNP", "receive completed",
                 "receive completed in error", "QP to ERR"]


@CoverPoint("rdma.fuzz.outcome", xf=lambda outcome: outcome, bins=FUZZ_OUTCOMES)
def _sample_outcome(outcome):
    pass


WR_OUTCOMES = ["doorbell taken", "doorbell refused"] + [s.name for s in sorted(DEVICE_STATUSES)]


@CoverPoint("rdma.fuzz.wr_outcome", xf=lambda outcome: outcome, bins=WR_OUTCOMES)
def _sample_wr_outcome(outcome):
    pass


# the port counters read after every batch; on Ethernet also the RoCE congestion counters
COUNTERS = (PortCounter.RCV_PKTS_EXT, PortCounter.RCV_ERRORS_EXT, PortCounter.XMIT_PKTS_EXT,
            PortCounter.XMIT_DISCARDS_EXT)
ECN_COUNTERS = (PortCounter.NP_ECN_MARKED_ROCE_PACKETS, PortCounter.NP_CNP_SENT,
                PortCounter.RP_CNP_HANDLED)
LINK_CRC_BYTES = {"ib": VCRC_BYTES, "eth": FCS_BYTES}


def header_offsets(packet):
    """Where each header of `packet` starts in its wire bytes (FIELDS' names), and its ICRC
    ("icrc")."""
    if packet.roce is None:
        offsets, at = {"lrh": 0}, LRH.SIZE
        if packet.grh is not None:
            offsets["grh"] = at
            at += GRH.SIZE
    else:
        offsets, at = {"eth": 0}, ETH_HEADER_BYTES
        if packet.roce.vlan is not None:
            offsets["vlan"] = at
            at += VLAN_TAG_BYTES
        ip, size = ("ipv4", IPV4_HEADER_BYTES) if packet.roce.ipv4 else ("ipv6", IPV6_HEADER_BYTES)
        offsets[ip], offsets["udp"] = at, at + size
        at += size + UDP_HEADER_BYTES
    offsets["bth"] = at
    at += BTH.SIZE
    for name in packet.op.headers:
        offsets[name] = at
        at += EXTENSION_HEADERS[name].SIZE
    offsets["icrc"] = at + len(packet.payload) + (-len(packet.payload) & 3)
    return offsets


def ip_at(offsets):
    """Where a RoCE v2 frame's IP header starts."""
    return offsets.get("ipv4", offsets.get("ipv6"))


def get_field(data, start, bit, width):
    span = (bit % 8 + width + 7) // 8
    value = int.from_bytes(data[start + bit // 8:start + bit // 8 + span], "big")
    return value >> (8 * span - bit % 8 - width) & ((1 << width) - 1)


def set_field(data, start, bit, width, value):
    """`data` (bytearray) with the field at header offset `start` set to `value`."""
    span = (bit % 8 + width + 7) // 8
    at = start + bit // 8
    shift = 8 * span - bit % 8 - width
    word = int.from_bytes(data[at:at + span], "big")
    mask = ((1 << width) - 1) << shift
    word = word & ~mask | (value << shift & mask)
    data[at:at + span] = word.to_bytes(span, "big")


def link_sealed(body, link):
    """`body` (a packet without its link CRC) with the link CRC appended: the VCRC, or the
    FCS."""
    return bytes(body) + (fcs_bytes if link == "eth" else vcrc_bytes)(bytes(body))


def sealed(body, offsets):
    """`body` (a packet through its pad, its headers at `offsets`) with what follows the pad
    computed: ICRC and VCRC, or the ICRC, the padding to 64 bytes and the FCS of a frame."""
    if "lrh" in offsets:
        return seal(body)
    return seal_frame(body[:ip_at(offsets)], body[ip_at(offsets):])


def reseal(data, offsets, checksum=True):
    """`data` (a whole packet, built with its headers at `offsets`) with what checks it
    computed again: ICRC and VCRC; on Ethernet the IPv4 header checksum (unless not `checksum`:
    the checksum is what is wrong), the ICRC and the FCS, the padding kept. Where the headers
    no longer say where a BTH is that the ICRC could cover (a mutated LNH, IP version or IHL),
    the old ICRC stays."""
    link = "ib" if "lrh" in offsets else "eth"
    data = bytearray(data)
    if "ipv4" in offsets and checksum:
        ip = offsets["ipv4"]
        set_field(data, ip, 80, 16, ipv4_checksum(data[ip:ip + IPV4_HEADER_BYTES]))
    body, at = bytes(data[:offsets["icrc"]]), offsets["icrc"]
    try:
        data[at:at + ICRC_BYTES] = (icrc_bytes(body) if link == "ib"
                                    else roce_icrc_bytes(body[ip_at(offsets):]))
    except IndexError:
        pass
    return link_sealed(data[:-LINK_CRC_BYTES[link]], link)


class End:
    """One end of the cable the fuzzer works across: a device's program and one of its ports,
    the packet player onto that port's RX, the taps on what the port sent and on what reached
    it; `far` is the other end, `side` the fuzzer's part of the end's device (Side)."""

    def __init__(self, rdma, port):
        self.rdma, self.port = rdma, port
        self.dev, self.tb = rdma.dev, rdma.tb
        self.player = rdma.tb.player(port)
        self.far = None
        self.side = None

    @property
    def lid(self):
        return self.dev.ports[self.port].lid

    @property
    def gid(self):
        return bytes(self.dev.ports[self.port].gid)

    @property
    def mac(self):
        return self.dev.ports[self.port].mac

    @property
    def gids(self):
        """The port's addresses (GidEntry: on Ethernet an IPv4 or IPv6 address and its VLAN)."""
        return self.dev.ports[self.port].own_gids()

    def route(self, dlid, port=None):
        """The GRH that addresses the port owning `dlid` from this end's port (or `port` of its
        device) on Ethernet, where the GID is the address (Rdma.route); None on InfiniBand."""
        return self.rdma.route(port or self.port, dlid)

    @property
    def sent_tap(self):
        return self.tb.tx_tap(self.port)

    @property
    def arrived_tap(self):
        return self.far.tb.arrived_tap(self.far.port)

    @property
    def sniffer(self):
        return self.tb.sniffers[self.port]

    def __str__(self):
        device = self.tb.prefix.rstrip("_")
        return f"{device} port {self.port}" if device else f"port {self.port}"


@dataclass(eq=False)
class Side:
    """The fuzzer's part of one device: a PD of its own and, in it, a region open to every
    access, the receive buffers, a read-only region; a region of a PD no QP uses; a stale key
    and the address it had."""
    rdma: object
    pd: object
    open_mr: object
    recv_mr: object
    ro_mr: object
    foreign_mr: object
    stale_key: int
    stale_va: int

    @property
    def keys(self):
        return [self.open_mr.lkey, self.recv_mr.lkey, self.ro_mr.lkey, self.foreign_mr.lkey,
                self.stale_key]

    @property
    def vas(self):
        return [r.mr.addr for r in (self.open_mr, self.recv_mr, self.ro_mr,
                                    self.foreign_mr)] + [self.stale_va]


@dataclass
class Batch:
    """What a batch put on the links and what became of it."""
    kind: str
    end: End = None             # the end its packets were injected at
    packets: list = None        # (bytes, aborted)
    plan: list = None           # WR batches: (target name, WQEs)
    wrs: int = 0
    condition: str = None       # WR batches: one of WR_CONDITIONS
    fault: tuple = None         # WR batches: (host address, length) host memory refuses
    cycle: int = 0              # when it started
    requests: int = 0           # "ecn ce": marked requests for QPs that can take them
    doomed: int = 0             # "ecn" batches: packets for QPs that cannot take them


class Fuzzer:
    """One fuzz run across a cable (see the module's docstring): `peers` and `targets` are
    (Rdma program, port) of its two ends, of one device cabled to itself or of two devices.
    `rng` draws everything, so a seed replays a run."""

    def __init__(self, rng, peers, targets):
        self.a, self.b = End(*peers), End(*targets)
        self.a.far, self.b.far = self.b, self.a
        self.ends = (self.a, self.b)
        # the targets' device: hostile packets, WQEs and commands aim at it
        self.dev, self.tb = self.b.dev, self.b.tb
        self.dut = self.b.rdma.dut
        self.link = self.dev.ports[self.b.port].link_layer     # "ib" or "eth", both ends'
        self.kinds = KINDS[self.link]
        self.counter_words = COUNTERS + (ECN_COUNTERS if self.link == "eth" else ())
        self.rng = rng
        self.tally = defaultdict(Counter)      # kind -> what happened
        self.wr_tally = Counter()
        self.cmd_tally = Counter()
        self.commands = 0
        self.packets = 0
        self.wrs = 0
        self.batches = 0
        self.canary_rounds = 0
        self.canary_worst = 0
        self.history = []           # the last batches (for the pcap of a failure)
        self.only = None            # the packet kinds to draw from (restrict), None: all
        self.deck = []              # the kinds still to come in this round
        self.condition_deck = []    # the WR conditions still to come in this round
        self.started = None         # when run() started (time.monotonic())
        self.taps = {(what, end): getattr(end, f"{what}_tap")
                     for what in ("sent", "arrived") for end in self.ends}

    @property
    def between(self):
        """What the cable joins, for the report."""
        return ("two devices" if self.a.dev is not self.b.dev
                else "a device's two ports")

    # -----------------------------------------------------------------------------------------
    # Set-up

    async def open(self):
        a, b = self.a, self.b
        for end in self.ends:
            end.rdma.sb.stop_predicting()   # the model cannot predict hostile traffic
        # canaries: their own PD (the programs' pd), across the cable
        self.ca, self.cb = await a.rdma.qp(QPType.RC), await b.rdma.qp(QPType.RC)
        await self.ca.to_rts(self.cb.qp_num, b.lid, a.port, timeout=1, retry_cnt=7,
                             grh=a.route(b.lid))
        await self.cb.to_rts(self.ca.qp_num, a.lid, b.port, timeout=1, retry_cnt=7,
                             grh=b.route(a.lid))
        self.cc = await a.rdma.qp(QPType.UD)
        await self.cc.to_rts(port=a.port, qkey=CANARY_QKEY)
        self.cd = await b.rdma.qp(QPType.UD)
        await self.cd.to_rts(port=b.port, qkey=CANARY_QKEY)
        self.canary_ah = await a.rdma.pd.create_ah(a.port, b.lid, grh=a.route(b.lid))
        self.c_src = await a.rdma.region(4096)
        self.c_dst = await b.rdma.region(4096)
        self.c_recv = await b.rdma.region(4096, Access.LOCAL_WRITE)
        self.c_ud = await b.rdma.region(4096, Access.LOCAL_WRITE)

        # the fuzzer's part of each device (one Side when the cable joins a device's ports)
        b.side = await self._open_side(b.rdma)
        a.side = b.side if a.dev is b.dev else await self._open_side(a.rdma)
        self.sides = list({id(end.side): end.side for end in self.ends}.values())
        self.pd, self.open_mr = b.side.pd, b.side.open_mr
        self.keys = [k for side in self.sides for k in side.keys] + [self.c_dst.lkey,
                                                                     self.c_src.lkey]
        self.vas = [va for side in self.sides for va in side.vas] + [self.c_dst.mr.addr]

        # targets at b, their peers at a; an RC QP in RESET and one in RTS on b's device's
        # other port (packets for them must be dropped)
        self.targets, self.peers = {}, {}
        for name, qp_type in (("rc", QPType.RC), ("uc", QPType.UC), ("ud", QPType.UD)):
            self.targets[name] = await self._fuzz_qp(qp_type, b.side)
            self.peers[name] = await self._fuzz_qp(qp_type, a.side)
        self.reset_qp = await self._fuzz_qp(QPType.RC, b.side)
        self.other_port_qp = await self._fuzz_qp(QPType.RC, b.side)
        await self.other_port_qp.to_rts(self.peers["rc"].qp_num, a.lid, 3 - b.port,
                                        access=ALL_ACCESS, path_mtu=FUZZ_MTU,
                                        grh=b.route(a.lid, port=3 - b.port))
        for name in self.targets:
            await self._bring_up(name)
        self.scratch = self.dev.alloc(8192, label="fuzz scratch: rings of random commands")
        self.none_qpn = next(i for i in reversed(range(2, self.dev.num_qp))
                             if i not in self.dev.qps)
        nobody = (dict(grh=GlobalRoute(NOBODY_GID), dmac=NOBODY_MAC) if self.link == "eth"
                  else {})
        self.ahs = [await self.pd.create_ah(b.port, a.lid, grh=b.route(a.lid)),  # over the cable
                    await self.pd.create_ah(b.port, b.lid, grh=b.route(b.lid)),  # loopback
                    await self.pd.create_ah(b.port, 0x77, **nobody)]            # nobody's address
        if self.link == "eth":
            # a CNP for every marked request a QP takes, not one per QP per window: a batch's
            # CNPs are known exactly
            await self.dev.set_cnp_interval(0)
        self._guard()
        self.counters = await self._read_counters()
        self.tap_counts = self._tap_counts()
        self.played = {end: int(end.player.hdl.frames.value) for end in self.ends}
        self.sent_seen = {end: len(end.sniffer.captures) for end in self.ends}

    async def _open_side(self, rdma):
        pd, foreign_pd = rdma.dev.alloc_pd(), rdma.dev.alloc_pd()
        stale = await rdma.region(4096, ALL_ACCESS, pd=pd)
        side = Side(rdma, pd,
                    open_mr=await rdma.region(8192, ALL_ACCESS, pd=pd),
                    # the targets' and the peers' receives
                    recv_mr=await rdma.region(2 * 3 * RECEIVES * RECV_BYTES, Access.LOCAL_WRITE,
                                              pd=pd),
                    ro_mr=await rdma.region(4096, Access.REMOTE_READ, pd=pd),
                    foreign_mr=await rdma.region(4096, ALL_ACCESS, pd=foreign_pd),
                    stale_key=stale.lkey, stale_va=stale.mr.addr)
        await stale.mr.dereg()
        return side

    async def _fuzz_qp(self, qp_type, side):
        cq = await side.rdma.dev.create_cq(256)
        return await side.pd.create_qp(qp_type, cq, cq, 16, 16, 4, 4)

    async def _bring_up(self, name, peer_receives=True, peer_lkey=None):
        """Target `name` and its peer from any state to RTS, aimed at each other, receives
        posted (on the peer only with `peer_receives`, under `peer_lkey` when given)."""
        a, b = self.a, self.b
        target, peer = self.targets[name], self.peers[name]
        for qp in (target, peer):
            if qp.state != QPState.RESET:
                await qp.modify(QPState.RESET)
        if name == "ud":
            await target.to_rts(port=b.port, qkey=FUZZ_QKEY)
            await peer.to_rts(port=a.port, qkey=FUZZ_QKEY)
        else:
            rc = dict(timeout=1, retry_cnt=1, rnr_retry=1, min_rnr_timer=1,
                      max_rd_atomic=4, max_dest_rd_atomic=4) if name == "rc" else {}
            await target.to_rts(peer.qp_num, a.lid, b.port, access=ALL_ACCESS,
                                path_mtu=FUZZ_MTU, grh=b.route(a.lid), **rc)
            await peer.to_rts(target.qp_num, b.lid, a.port, access=ALL_ACCESS,
                              path_mtu=FUZZ_MTU, grh=a.route(b.lid), **rc)
        await self._replenish(target)
        if peer_receives:
            await self._replenish(peer, peer_lkey)

    async def _replenish(self, qp, lkey=None, status=None):
        """Keep RECEIVES receives posted on `qp` (in RTS), each into its own slot of recv_mr
        (under `lkey` instead of the region's when given); `status`: its QUERY_QP answer, if
        the caller has it."""
        if qp.state != QPState.RTS:
            return
        status = status or await qp.query()
        missing = RECEIVES - ((status.rq_pi - status.rq_ci) & 0xFFFF)
        if missing <= 0:
            return
        first = self._fuzz_qps().index(qp) * RECEIVES
        side = (self.a if qp in self.peers.values() else self.b).side
        sges = [side.recv_mr.sge((first + (qp.rq.head + k) % RECEIVES) * RECV_BYTES, RECV_BYTES)
                for k in range(missing)]
        await qp.post_recv([RecvWR(replace(sge, lkey=lkey or sge.lkey),
                                   wr_id=0xEC00 | (qp.rq.head + k) & 0xFF)
                            for k, sge in enumerate(sges)])

    def _guard(self):
        """Arm each device's host memory write guard: its CQ rings, the canaries' destinations
        and the fuzzer's writable regions on it."""
        for side in self.sides:
            dev = side.rdma.dev
            ranges = [(cq.ring, cq.ring + 32 * cq.depth) for cq in dev.cqs.values()]
            ranges += [(r.mr.host_addr, r.mr.host_addr + r.length)
                       for r in (self.c_dst, self.c_recv, self.c_ud, side.open_mr, side.recv_mr)
                       if r.dev is dev]
            side.rdma.tb.mem.guard(ranges)

    # -----------------------------------------------------------------------------------------
    # Observation

    def _tap_counts(self):
        return {key: int(tap.packets.value) for key, tap in self.taps.items()}

    async def _read_counters(self):
        """The low words of each end's 64-bit PortRcvPkts, PortRcvErrors, PortXmitPkts,
        PortXmitDiscards, and on Ethernet its 32-bit RoCE congestion counters (deltas are taken
        modulo 2^32)."""
        out = {}
        for end in self.ends:
            for c in self.counter_words:
                out[end, c] = await end.dev.read_reg(port_counter_reg(end.port, c))
        return out

    async def _quiet(self):
        """Until the players are empty and no link has moved for QUIET cycles."""
        last = None
        while True:
            await ClockCycles(self.dut.clk, QUIET)
            now = (all(end.player.idle for end in self.ends),
                   tuple(int(t.beats.value) for t in self.taps.values()))
            if now[0] and now == last:
                return
            last = now

    async def _measure(self):
        """Counter, tap and player deltas since the last measure, taken while the links are
        quiet (again when a link moved while the counters were read)."""
        while True:
            await self._quiet()
            taps = self._tap_counts()
            counters = await self._read_counters()
            if self._tap_counts() == taps:
                break
        delta = {k: (counters[k] - self.counters[k]) & 0xFFFFFFFF for k in counters}
        tap_delta = {k: (taps[k] - self.tap_counts[k]) & 0xFFFFFFFF for k in taps}
        played = {end: int(end.player.hdl.frames.value) for end in self.ends}
        inj = {end: played[end] - self.played[end] for end in played}
        self.counters, self.tap_counts, self.played = counters, taps, played
        return delta, tap_delta, inj

    def _violation(self, what):
        raise Violation(f"batch {self.batches} ({self.current.kind}): {what}")

    async def _check_batch(self, batch):
        """Every invariant after one batch; returns the per-end fates of what arrived."""
        delta, taps, inj = await self._measure()
        fates = {}
        for end in self.ends:
            arrived = taps["arrived", end] + inj[end]
            rcv = delta[end, PortCounter.RCV_PKTS_EXT]
            err = delta[end, PortCounter.RCV_ERRORS_EXT]
            xmit = delta[end, PortCounter.XMIT_PKTS_EXT]
            if xmit != taps["sent", end]:
                self._violation(f"{end}: PortXmitPkts moved by {xmit}, its link carried "
                                f"{taps['sent', end]} packets")
            if not (rcv <= arrived <= rcv + err <= 2 * arrived):
                self._violation(f"{end}: {arrived} packets arrived, PortRcvPkts moved by "
                                f"{rcv} and PortRcvErrors by {err}: not one count each")
            link_drops = arrived - rcv
            qp_drops = err - link_drops
            # in a packet batch the peers' end sends only the canaries' requests, which the
            # targets' end takes (it also answers the hostile packets, to wherever they claim
            # to come from)
            if end is self.b and batch.wrs == 0 and not 0 <= link_drops <= inj[end]:
                self._violation(f"{end}: {link_drops} packets failed the link checks, "
                                f"{inj[end]} were injected: the cable's own were dropped")
            if end is self.b and batch.wrs == 0 and not 0 <= qp_drops <= inj[end]:
                self._violation(f"{end}: {qp_drops} packets failed a QP check, "
                                f"{inj[end]} were injected: the cable's own were dropped")
            fates[end] = (inj[end], link_drops, qp_drops)
            self._check_sent(end)
        self._check_fixed_fate(batch, fates)
        if self.link == "eth":
            self._check_ecn(batch, delta, fates)
        for side in self.sides:
            mem, where = side.rdma.tb.mem, side.rdma.tb.prefix.rstrip("_") or "the device"
            stray = mem.stray()
            if stray:
                addr, cycle, client, count = stray
                self._violation(
                    f"stray write: {where}'s host address {addr:#x} at cycle {cycle} by DMA "
                    f"client {client} ({DMA_CLIENTS[client] if client < len(DMA_CLIENTS) else '?'}"
                    f"), outside every range the guard allows ({count} stray beats)")
            if mem.protocol_errors:
                self._violation(f"{mem.protocol_errors} AXI protocol errors on {where}'s host "
                                f"memory")
        return fates

    def _check_fixed_fate(self, batch, fates):
        category, _, name = batch.kind.partition(" ")
        inj, link, qp = fates[batch.end]
        want = {"link": (inj, 0), "qp": (0, inj), "replay": (0, 0),
                "ecn": (0, batch.doomed)}.get(category)
        # a marked request that puts its target in ERR has the batch's later ones for it
        # refused too: more QP drops
        if want and (link, qp) != want and not (name == "ce" and link == 0 and qp > want[1]):
            self._violation(f"{inj} packets of kind {batch.kind} at {batch.end}: {link} "
                            f"failed the link checks and {qp} a QP check, the spec says "
                            f"{want[0]} and {want[1]}")

    def _check_sent(self, end):
        """Every packet `end`'s port sent since the last batch decodes, but for those it
        aborted (a payload host memory refused)."""
        for capture in end.sniffer.captures[self.sent_seen[end]:]:
            if capture.error and not capture.aborted:
                self._violation(f"{end} sent a packet that does not decode at cycle "
                                f"{capture.cycle}: {capture.error} ({capture.data.hex()})")

    def _cnps(self, end):
        """The CNPs `end`'s port sent since the last batch."""
        return [c.packet for c in end.sniffer.captures[self.sent_seen[end]:]
                if c.packet is not None and c.packet.bth.opcode == CNP_OPCODE]

    def _may_have_sent(self, end):
        """The QPs of `end`'s port that may have sent (neither RESET nor INIT): a CNP for one
        counts in rp_cnp_handled, a CNP for any other QP in PortRcvErrors."""
        return {qp.qp_num for qp in end.dev.qps.values() if qp.attr.port_num == end.port
                and qp.state not in (QPState.RESET, QPState.INIT)}

    def _check_ecn(self, batch, delta, fates):
        """The RoCE congestion counters of a batch on Ethernet (the module's docstring)."""
        for end in self.ends:
            marked, sent, handled = (delta[end, c] for c in ECN_COUNTERS)
            cnps = self._cnps(end)
            if sent != len(cnps):
                self._violation(f"{end}: np_cnp_sent moved by {sent}, its link carried "
                                f"{len(cnps)} CNPs")
            if sent > marked:
                self._violation(f"{end}: {sent} CNPs sent for {marked} packets marked CE "
                                f"(np_ecn_marked_roce_packets)")
            live = self._may_have_sent(end)
            came = sum(p.bth.dest_qp in live for p in self._cnps(end.far))
            injected = sum(len(data) > (at := bth_at(data, "eth")) and data[at] == CNP_OPCODE
                           for data, _ in batch.packets or ()) if batch.end is end else 0
            if not came <= handled <= came + injected:
                self._violation(f"{end}: rp_cnp_handled moved by {handled}; {came} CNPs came "
                                f"over the cable for QPs of the port that may have sent, and "
                                f"{injected} injected packets had the CNP's opcode")
        inj, _, qp = fates[self.b]
        marked, sent, handled = (delta[self.b, c] for c in ECN_COUNTERS)
        if batch.kind == "ecn ce":
            # every packet of the batch is marked and passes the link checks; the marked
            # requests for QPs that can take them draw a CNP each but for those refused after
            # a request put their QP in ERR, and those the full response queue discarded
            drawn = batch.requests - (qp - batch.doomed)
            discards = delta[self.b, PortCounter.XMIT_DISCARDS_EXT]
            if marked != inj or not drawn - discards <= sent <= drawn:
                self._violation(f"{inj} packets marked CE ({batch.requests} requests for QPs "
                                f"that can take them, {batch.doomed} packets for QPs that "
                                f"cannot, {qp} refused): np_ecn_marked_roce_packets moved by "
                                f"{marked}, np_cnp_sent by {sent} ({discards} answers "
                                f"discarded), the spec says {inj} and {drawn}")
        if batch.kind == "ecn cnp" and handled != inj - batch.doomed:
            self._violation(f"{inj} CNPs, {batch.doomed} for QPs that cannot have sent: "
                            f"rp_cnp_handled moved by {handled}")

    async def _settle_qps(self, batch):
        """Completions of the fuzz QPs checked and tallied, QP states checked, QPs in ERR
        brought back, receives replenished."""
        tally = self.tally[batch.kind] if batch.wrs == 0 else self.wr_tally
        for name in self.targets:
            for qp in (self.targets[name], self.peers[name]):
                for wc in await qp.send_cq.poll():
                    if wc.status not in DEVICE_STATUSES:
                        self._violation(f"QP {qp.qp_num}: completion status {wc.status!r}, "
                                        f"which the device never gives")
                    if wc.qp_num != qp.qp_num:
                        self._violation(f"CQ {qp.send_cq.cqn} of QP {qp.qp_num} has a "
                                        f"completion of QP {wc.qp_num}")
                    side = "recv" if wc.is_recv else "send"
                    if wc.is_recv and wc.wr_id >> 8 != 0xEC:
                        self._violation(f"QP {qp.qp_num}: a receive completion with wr_id "
                                        f"{wc.wr_id:#x}, which no receive had")
                    tally[f"{side} {WCStatus(wc.status).name}"] += 1
                    if batch.wrs and not wc.is_recv:
                        _sample_wr_outcome(WCStatus(wc.status).name)
                    elif wc.is_recv:
                        _sample_outcome("receive completed" if wc.status == WCStatus.SUCCESS
                                        else "receive completed in error")
        before = {qp.qp_num: qp.state for qp in self._fuzz_qps()}
        statuses = {}
        for name in self.targets:
            for role, qp in (("target", self.targets[name]), ("peer", self.peers[name])):
                status = statuses[qp.qp_num] = await qp.query()
                if status.state not in (QPState.RTS, QPState.ERR):
                    self._violation(f"{name} {role} QP {qp.qp_num} in {status.state!r}")
                if (role == "peer" and batch.wrs == 0
                        and status.state != before[qp.qp_num]):
                    self._violation(f"{name} peer QP {qp.qp_num} went from "
                                    f"{before[qp.qp_num].name} to {status.state.name} on stray "
                                    f"answers")
                if status.state == QPState.ERR:
                    tally[f"{name} {role} to ERR"] += 1
                    if not batch.wrs:
                        _sample_outcome("QP to ERR")
            pair = (self.targets[name], self.peers[name])
            if any(qp.state == QPState.ERR for qp in pair):
                for qp in pair:
                    if qp.state == QPState.ERR:
                        await self._drain_cq(qp)
                await self._bring_up(name)
            else:
                for qp in (self.targets[name], self.peers[name]):
                    await self._replenish(qp, status=statuses[qp.qp_num])
        if (await self.reset_qp.query()).state != QPState.RESET:
            self._violation(f"QP {self.reset_qp.qp_num} left RESET")
        if (await self.other_port_qp.query()).state != QPState.RTS:
            self._violation(f"QP {self.other_port_qp.qp_num} on the other port left RTS")

    async def _drain_cq(self, qp):
        """The flushes of a QP in ERR, before it starts again."""
        for _ in range(20):
            await ClockCycles(self.dut.clk, 200)
            for wc in await qp.send_cq.poll():
                if wc.status not in DEVICE_STATUSES:
                    self._violation(f"QP {qp.qp_num}: completion status {wc.status!r}")
            status = await qp.query()
            if status.sq_ci == status.sq_pi and status.rq_ci == status.rq_pi:
                return
        self._violation(f"QP {qp.qp_num} in ERR did not flush its queues: {status}")

    def _fuzz_qps(self):
        return [*self.targets.values(), *self.peers.values()]

    def _tally_answers(self, batch):
        """The targets' end's answers to the injected packets (those for the RC target's peer,
        CNPs among them) by kind."""
        peer = self.peers["rc"].qp_num
        for capture in self.b.sniffer.captures[self.sent_seen[self.b]:]:
            pkt = capture.packet
            if pkt is None or pkt.bth.dest_qp != peer:
                continue
            if pkt.aeth is not None and pkt.bth.opcode == 0x11:
                code = pkt.aeth.syndrome
                what = ("ACK" if code >> 5 == 0 else "RNR NAK" if code >> 5 == 1
                        else f"NAK {code:#04x}")
                _sample_outcome("answer ACK" if code >> 5 == 0 else "answer NAK")
            else:
                what = pkt.op.operation.replace("_", " ")
                _sample_outcome("answer CNP" if pkt.bth.opcode == CNP_OPCODE
                                else "answer with data")
            self.tally[batch.kind][f"answer {what}"] += 1

    # -----------------------------------------------------------------------------------------
    # Canaries

    async def _canary_post(self):
        rng = self.rng
        write_len, send_len = rng.randint(1, 4096), rng.randint(1, 4096)
        ud_len = rng.randint(1, 1024)
        data = rng.randbytes(4096)
        self.c_src.write(0, data)
        await self.cb.post_recv(RecvWR(self.c_recv.sge(0, 4096), wr_id=1))
        await self.cd.post_recv(RecvWR(self.c_ud.sge(0, 4096), wr_id=2))
        await self.ca.post_send([
            work_request(WROpcode.RDMA_WRITE, self.c_src.sge(0, write_len), self.c_dst.remote(),
                         wr_id=3),
            SendWR(WROpcode.SEND, self.c_src.sge(4096 - send_len, send_len), 4)])
        await self.cc.post_send(SendWR(WROpcode.SEND, self.c_src.sge(0, ud_len), 5,
                                       ah=self.canary_ah, remote_qpn=self.cd.qp_num,
                                       remote_qkey=CANARY_QKEY))
        return self.tb.cycle(), data, write_len, send_len, ud_len

    async def _canary_check(self, posted):
        start, data, write_len, send_len, ud_len = posted
        want = {self.ca: 2, self.cb: 1, self.cc: 1, self.cd: 1}
        got = {qp: [] for qp in want}
        while True:
            for qp in want:
                got[qp] += await qp.send_cq.poll()
            if all(len(got[qp]) >= n for qp, n in want.items()):
                break
            if self.tb.cycle() - start > CANARY_BOUND:
                self._violation("canary stalled: " + ", ".join(
                    f"QP {qp.qp_num} {len(got[qp])} of {n} completions"
                    for qp, n in want.items()) + f" after {CANARY_BOUND} cycles")
            await ClockCycles(self.dut.clk, 200)
        self.canary_worst = max(self.canary_worst, self.tb.cycle() - start)
        for qp, n in want.items():
            if len(got[qp]) != n or any(wc.status != WCStatus.SUCCESS for wc in got[qp]):
                self._violation(f"canary QP {qp.qp_num}: {got[qp]}")
        got = self.c_dst.read(0, write_len)
        if got != data[:write_len]:
            wrong = [i for i in range(write_len) if got[i] != data[i]]
            self._violation(f"canary RDMA WRITE of {write_len} bytes: the destination differs "
                            f"from the source at {len(wrong)} bytes, offsets {wrong[0]:#x} to "
                            f"{wrong[-1]:#x} (host {self.c_dst.mr.host_addr + wrong[0]:#x})")
        if self.c_recv.read(0, send_len) != data[4096 - send_len:]:
            self._violation("canary SEND: the receive buffer differs from the source")
        if self.c_ud.read(40, ud_len) != data[:ud_len]:
            self._violation("canary UD SEND: the receive buffer differs from the source")
        self.canary_rounds += 1

    # -----------------------------------------------------------------------------------------
    # Packets

    def _route(self, entry=None):
        """How a packet from the peers' end reaches the targets' end, as Packet keywords: on
        InfiniBand the LRH and, one time in four, a GRH; on Ethernet the RoCE v2 fields of a
        frame to the address of entry `entry` of the targets' port's GID table (default: any)
        from the same entry of the peers' (IPv4 or IPv6, in its VLAN; to an untagged address
        one frame in four priority-tagged, VLAN ID 0 being no VLAN), a traffic class whose ECN
        is anything but CE, and a flow label on IPv6."""
        rng, a, b = self.rng, self.a, self.b
        if self.link == "ib":
            return dict(lrh=LRH(dlid=b.lid, slid=a.lid),
                        grh=(GRH(sgid=a.gid, dgid=b.gid, hop_limit=64)
                             if rng.random() < 0.25 else None))
        entry = rng.randrange(len(b.gids)) if entry is None else entry
        src, dst = a.gids[entry], b.gids[entry]
        ipv4 = is_ipv4_mapped(src.gid) and is_ipv4_mapped(dst.gid)
        vlan = dst.vlan if dst.vlan is not None or rng.random() < 0.75 else 0
        return dict(roce=RoCE(dmac=b.mac, smac=a.mac, sgid=src.gid, dgid=dst.gid, hop_limit=64,
                              sport=0xC000 | rng.getrandbits(14),
                              tclass=rng.getrandbits(6) << 2 | rng.randrange(ECN_CE),
                              flow_label=0 if ipv4 else rng.getrandbits(20), vlan=vlan,
                              pcp=0 if vlan is None else rng.getrandbits(3)))

    def _template(self, target, epsn):
        """A well-formed packet for fuzz target `target` ("rc", "uc", "ud") at PSN `epsn`."""
        rng = self.rng
        qp = self.targets[target]
        route = self._route()
        mtu = FUZZ_MTU.size
        if target == "ud":
            opcode = rng.choice((0x64, 0x65))
            return Packet(**route,
                          bth=BTH(opcode=opcode, dest_qp=qp.qp_num, psn=rng.getrandbits(24)),
                          deth=DETH(qkey=FUZZ_QKEY, src_qp=self.peers["ud"].qp_num),
                          immdt=ImmDt(rng.getrandbits(32)) if opcode == 0x65 else None,
                          payload=self._payload(0, mtu))
        lows = range(0x00, 0x15) if target == "rc" else range(0x00, 0x0C)
        low = rng.choice(lows)
        op = OPCODES[(0x00 if target == "rc" else 0x20) | low]
        length = (mtu if op.position in ("first", "middle") else rng.randint(0, mtu))
        fields = {}
        va = self.open_mr.mr.addr + rng.randrange(0, 4096)
        if "reth" in op.headers:
            dma_len = (rng.randint(0, 1024) if op.operation == "RDMA_READ_REQUEST"
                       else length + (mtu * rng.randint(1, 3) if op.position == "first" else 0))
            fields["reth"] = RETH(va, self.open_mr.lkey, dma_len)
        if "atomic_eth" in op.headers:
            fields["atomic_eth"] = AtomicETH(va & ~7, self.open_mr.lkey, rng.getrandbits(64),
                                             rng.getrandbits(64))
        if "aeth" in op.headers:
            fields["aeth"] = AETH(rng.choice((0x1F, 0x00, 0x21, 0x60, 0x61)), rng.getrandbits(24))
        if "atomic_ack_eth" in op.headers:
            fields["atomic_ack_eth"] = AtomicAckETH(rng.getrandbits(64))
        if "immdt" in op.headers:
            fields["immdt"] = ImmDt(rng.getrandbits(32))
        return Packet(**route,
                      bth=BTH(opcode=op.code, dest_qp=qp.qp_num, psn=epsn,
                              ackreq=rng.random() < 0.5),
                      payload=self._payload(length, length) if op.payload else b"", **fields)

    def _payload(self, lo, hi):
        return self.rng.randbytes(self.rng.randint(lo, hi))

    def _field_value(self, name, width, old, epsn):
        rng = self.rng
        pick = {
            "OpCode": lambda: rng.randrange(256),
            "PSN": lambda: (epsn + rng.choice((-1, 1, 2, 15, 16, -(1 << 23), (1 << 23) - 1,
                                              1 << 23, rng.getrandbits(24)))) & PSN_MASK,
            "DestQP": lambda: rng.choice([q.qp_num for q in self._fuzz_qps()]
                                         + [self.none_qpn, self.reset_qp.qp_num,
                                            self.other_port_qp.qp_num, 0, 1,
                                            0xFFFFFF, rng.getrandbits(24)]),
            "R_Key": lambda: rng.choice(self.keys + [self.open_mr.lkey ^ 1,
                                                     rng.getrandbits(32)]),
            "VA": lambda: rng.choice([self.open_mr.mr.addr - 1, self.open_mr.mr.addr + 8192 - 1,
                                      self.open_mr.mr.addr + 8192 - 8, self.open_mr.mr.addr + 8192,
                                      old + 1, old | 4, old - 8, rng.getrandbits(64)]
                                     + self.vas),
            "DMALen": lambda: rng.choice((0, 1, old + 1, max(old - 1, 0), 256, 257, 4096, 8193,
                                          1 << 31, 0xFFFFFFFF, rng.getrandbits(32))),
            "Q_Key": lambda: rng.choice((FUZZ_QKEY ^ 1, CANARY_QKEY, 0x80000000 | FUZZ_QKEY,
                                         rng.getrandbits(32))),
            "P_Key": lambda: rng.choice((0x7FFF, 0x0000, 0x8000, 0xFFFE, 0x8001,
                                         rng.getrandbits(16))),
            "DLID": lambda: rng.choice((self.a.lid, 0x21, 0xFFFF, 0,
                                        rng.getrandbits(16))),
            # Ethernet: the other end's MAC, broadcast, multicast; EtherTypes of IP, 802.1Q,
            # 802.1ad, RoCE v1 and ARP; VLANs untagged (0) and the ports'; every address of
            # both ends' ports; UDP ports beside 4791 and VXLAN's
            "DstMAC": lambda: rng.choice((int.from_bytes(self.a.mac, "big"), (1 << 48) - 1,
                                          0x01005E000001, rng.getrandbits(48))),
            "SrcMAC": lambda: rng.choice((int.from_bytes(self.b.mac, "big"), (1 << 48) - 1,
                                          0x01005E000001, rng.getrandbits(48))),
            "EtherType": lambda: rng.choice((ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_VLAN,
                                             0x88A8, 0x8915, 0x0806, rng.getrandbits(16))),
            "VID": lambda: rng.choice([0, 0xFFF, rng.getrandbits(12)]
                                      + [e.vlan for e in self.b.gids if e.vlan is not None]),
            "SrcAddr": lambda: rng.choice(self._addresses(width) + [rng.getrandbits(width)]),
            "DstAddr": lambda: rng.choice(self._addresses(width) + [rng.getrandbits(width)]),
            "DstPort": lambda: rng.choice((ROCE_V2_UDP_PORT - 1, ROCE_V2_UDP_PORT + 1, 0, 4789,
                                           rng.getrandbits(16))),
        }.get(name)
        if pick:
            return pick() & ((1 << width) - 1)
        return rng.choice((rng.getrandbits(width), 0, (1 << width) - 1,
                           old ^ (1 << rng.randrange(width)), (old + 1) % (1 << width),
                           (old - 1) % (1 << width)))

    @staticmethod
    def _address(gid, width):
        """`gid` as an IP address of `width` bits: the GID, or an IPv4-mapped one's IPv4."""
        return int.from_bytes(gid[16 - width // 8:], "big")

    def _addresses(self, width):
        """Every address of both ends' ports as an IP address of `width` bits (IPv4: those of
        the IPv4-mapped GIDs)."""
        return [self._address(e.gid, width) for end in self.ends for e in end.gids
                if width == 128 or is_ipv4_mapped(e.gid)]

    async def _epsn(self, target):
        return (await self.targets[target].query()).rq_psn

    async def _field_batch(self, field, n):
        header, name, bit, width = field
        out = []
        epsns = {t: await self._epsn(t) for t in ("rc", "uc")}
        candidates = [t for t in self.targets if self._can_carry(t, header)]
        for _ in range(n):
            while True:     # a template with the header (a GRH, a VLAN tag, IPv4 or IPv6)
                target = self.rng.choice(candidates)
                packet = self._template(target, epsns.get(target, 0))
                offsets = header_offsets(packet)
                if header in offsets:
                    break
            data = bytearray(build(packet))
            start = offsets[header]
            old = get_field(data, start, bit, width)
            for _ in range(4):      # a value other than the template's, where it can
                value = self._field_value(name, width, old, epsns.get(target, 0))
                if value != old:
                    break
            set_field(data, start, bit, width, value)
            out.append((reseal(data, offsets, checksum=field[:2] != ("ipv4", "Checksum")),
                        False))
        return out

    @staticmethod
    def _can_carry(target, header):
        """Whether a packet for `target` may have `header`: any of the link's; of the
        transport's, UD's are BTH, DETH and ImmDt, UC's BTH, RETH and ImmDt, RC's all but
        the DETH."""
        if header in LINK_HEADERS["ib"] + LINK_HEADERS["eth"]:
            return True
        if target == "ud":
            return header in ("bth", "deth", "immdt")
        if target == "uc":
            return header in ("bth", "reth", "immdt")
        return header != "deth"

    async def _link_batch(self, kind, n):
        """Packets that fail one check of the link (LINK_KINDS), all else right: the CRCs and
        the IPv4 header checksum made good over what changed but where one is what is wrong."""
        rng, link = self.rng, self.link
        out = []
        epsns = {t: await self._epsn(t) for t in ("rc", "uc")}
        for _ in range(n):
            packet = self._link_template(kind, epsns)
            data = bytearray(build(packet))
            off = header_offsets(packet)
            icrc, crc_bytes = off["icrc"], LINK_CRC_BYTES[link]
            aborted = False
            if kind in ("vcrc", "fcs"):
                data[-1 - rng.randrange(crc_bytes)] ^= 1 << rng.randrange(8)
            elif kind == "icrc":
                data[icrc + rng.randrange(ICRC_BYTES)] ^= 1 << rng.randrange(8)
                data = link_sealed(data[:-crc_bytes], link)
            elif kind == "truncated":
                cut = rng.randrange(1, icrc)
                # both CRCs over the cut packet where it still has its BTH (the ICRC covers
                # it); else none on InfiniBand, on Ethernet the FCS: only the lengths tell
                if cut >= off["bth"] + BTH.SIZE and rng.random() < 0.5:
                    data = sealed(data[:cut], off)
                else:
                    data = data[:cut] if link == "ib" else link_sealed(data[:cut], link)
            elif kind == "overlong":
                data = sealed(data[:icrc] + self._payload(4, 64), off)
            elif kind == "runt":        # without the padding that makes the frame 64 bytes
                data = link_sealed(data[:icrc + ICRC_BYTES], link)
            elif kind == "garbage":
                data = self._payload(1, 300)
            elif kind == "aborted":
                aborted = True
            elif kind != "vlan":        # ("vlan": the template is in another VLAN)
                header, bit, width, value = (self._ib_break if link == "ib"
                                             else self._eth_break)(kind, data, off)
                old = get_field(data, off[header], bit, width)
                if value is None:
                    value = (old + rng.choice((-3, -2, -1, 1, 2, 3, 64))) % (1 << width)
                set_field(data, off[header], bit, width, value)
                data = reseal(data, off, checksum=kind != "checksum")
            out.append((bytes(data), aborted))
        return out

    def _link_template(self, kind, epsns):
        """The packet a link kind breaks: one for a target (at the PSNs `epsns`), with a GRH
        where the kind breaks one (InfiniBand); on Ethernet an IPv4 frame for the IPv4 kinds,
        the frame in another VLAN than its destination address's ("vlan": tagged with a VLAN
        where the address is untagged, else untagged, priority-tagged or in another VLAN), or
        the one frame short enough to need padding ("runt": an RC or UC SEND of nothing over
        IPv4, untagged)."""
        rng, a, b = self.rng, self.a, self.b
        if kind == "runt":
            target = rng.choice(("rc", "uc"))
            entry = next(i for i, e in enumerate(b.gids)
                         if is_ipv4_mapped(e.gid) and e.vlan is None)
            packet = Packet(**self._route(entry),
                            bth=BTH(opcode=0x04 if target == "rc" else 0x24,   # SEND ONLY
                                    dest_qp=self.targets[target].qp_num, psn=epsns[target]))
            packet.roce.vlan, packet.roce.pcp = None, 0     # no tag: the frame needs its padding
            return packet
        target = rng.choice(("rc", "uc", "ud"))
        while True:
            packet = self._template(target, epsns.get(target, 0))
            if self.link == "ib" or kind not in IPV4_KINDS or packet.roce.ipv4:
                break
        if self.link == "ib" and kind in ("dgid", "paylen", "ipver") and packet.grh is None:
            packet.grh = GRH(sgid=a.gid, dgid=b.gid, hop_limit=1)
        if kind == "vlan":
            roce = packet.roce
            roce.vlan = rng.choice([v for v in (None, 0, rng.randint(1, 4094))
                                    if vlan_id(v) != vlan_id(roce.vlan)])
            roce.pcp = 0 if roce.vlan is None else rng.getrandbits(3)
        return packet

    def _ib_break(self, kind, data, off):
        """(header, bit, width, value) of the field an InfiniBand link kind sets wrong; value
        None: the field's own a little off."""
        rng, a = self.rng, self.a
        return {
            "dlid": ("lrh", 16, 16, rng.choice((a.lid, 0x21, 0x77))),
            "lver": ("lrh", 4, 4, rng.randint(1, 15)),
            "tver": ("bth", 12, 4, rng.randint(1, 15)),
            "pkey": ("bth", 16, 16, rng.choice((0x0000, 0x8000, 0x1234, 0x8123))),
            "pktlen": ("lrh", 37, 11, None),
            "dgid": ("grh", 192 + 8 * rng.randrange(16), 8, None),
            "paylen": ("grh", 32, 16, None),
            "ipver": ("grh", 0, 4, rng.choice((0, 4, 5, 7, 15))),
        }[kind]

    def _eth_break(self, kind, data, off):
        """(header, bit, width, value) of the field an Ethernet link kind sets wrong; value
        None: the field's own a little off (a length)."""
        rng, a, b = self.rng, self.a, self.b
        ip, v4 = ("ipv4", True) if "ipv4" in off else ("ipv6", False)

        def other(right, values):
            return rng.choice([v for v in values if v != right])

        def not_ours():     # an address, of the frame's IP version, not the port's in its VLAN
            width = 32 if v4 else 128
            vlan = get_field(data, off["vlan"], 4, 12) if "vlan" in off else None
            ours = [self._address(e.gid, width) for e in b.gids
                    if vlan_id(e.vlan) == vlan_id(vlan)]
            return rng.choice([x for x in self._addresses(width) + [rng.getrandbits(width)]
                               if x not in ours])

        def wrong_checksum():   # one's complement: 0 and 0xFFFF are the same sum
            right = get_field(data, off["ipv4"], 80, 16)
            return rng.choice([v for v in (right ^ 1 << rng.randrange(16), (right + 1) % 0x10000,
                                           (right - 1) % 0x10000, 0, 0xFFFF, rng.getrandbits(16))
                               if (v - right) % 0xFFFF])

        return {
            "dmac": lambda: ("eth", 0, 48, rng.choice((
                int.from_bytes(a.mac, "big"), (1 << 48) - 1, 0x01005E000001,
                int.from_bytes(b.mac, "big") ^ 1 << rng.randrange(48), rng.getrandbits(48)))),
            "ethertype": lambda: (*(("vlan", 16) if "vlan" in off else ("eth", 96)), 16, other(
                ETHERTYPE_IPV4 if v4 else ETHERTYPE_IPV6, (ETHERTYPE_IPV4, ETHERTYPE_IPV6,
                ETHERTYPE_VLAN, 0x88A8, 0x8915, 0x0806, rng.getrandbits(16)))),
            "dgid": lambda: (ip, 128 if v4 else 192, 32 if v4 else 128, not_ours()),
            "ipver": lambda: (ip, 0, 4, other(4 if v4 else 6, (0, 4, 5, 6, 7, 15))),
            "ihl": lambda: ("ipv4", 4, 4, other(IPV4_HEADER_BYTES // 4, range(16))),
            "checksum": lambda: ("ipv4", 80, 16, wrong_checksum()),
            "fragment": lambda: ("ipv4", 50, 14, rng.choice((   # MF, a fragment offset, both
                1 << 13, rng.randint(1, (1 << 13) - 1), 1 << 13 | rng.randint(1, (1 << 13) - 1)))),
            "protocol": lambda: (ip, 72 if v4 else 48, 8,
                                 other(IP_PROTO_UDP, (0, 1, 6, 0x1B, 41, 58, rng.getrandbits(8)))),
            "iplen": lambda: (ip, 16 if v4 else 32, 16, None),
            "udplen": lambda: ("udp", 32, 16, None),
            "udpport": lambda: ("udp", 16, 16, other(ROCE_V2_UDP_PORT, (
                ROCE_V2_UDP_PORT ^ 1 << rng.randrange(16), 4789, 0, rng.getrandbits(16)))),
            "tver": lambda: ("bth", 12, 4, rng.randint(1, 15)),
            "pkey": lambda: ("bth", 16, 16, rng.choice((0x0000, 0x8000, 0x1234, 0x8123))),
        }[kind]()

    async def _qp_batch(self, kind, n):
        rng = self.rng
        out = []
        for _ in range(n):
            if kind == "transport":
                target, posing = rng.choice((("ud", "rc"), ("ud", "uc"), ("rc", "ud"),
                                             ("uc", "ud"), ("rc", "uc"), ("uc", "rc")))
                packet = self._template(posing, 0)
                packet.bth.dest_qp = self.targets[target].qp_num
            elif kind == "qkey":
                packet = self._template("ud", 0)
                packet.deth.qkey = rng.choice((FUZZ_QKEY ^ 1 << rng.randrange(31), CANARY_QKEY))
            else:
                packet = self._template(rng.choice(("rc", "uc", "ud")), 0)
                packet.bth.dest_qp = {"none": self.none_qpn, "reset": self.reset_qp.qp_num,
                                      "other_port": self.other_port_qp.qp_num}[kind]
            out.append((build(packet), False))
        return out

    async def _length_batch(self, kind, n):
        """Packets of the position `kind` names whose payload is short of or over the path
        MTU (for UD, the port's), CRCs right."""
        rng, mtu = self.rng, FUZZ_MTU.size
        position, size = kind.split()
        epsns = {t: await self._epsn(t) for t in ("rc", "uc")}
        out = []
        for _ in range(n):
            target = "ud" if position == "datagram" else rng.choice(("rc", "uc"))
            while True:
                packet = self._template(target, epsns.get(target, 0))
                op = OPCODES[packet.bth.opcode]
                if op.payload and (target == "ud" or op.position == position):
                    break
            top = self.dev.ports[self.b.port].mtu.size if target == "ud" else mtu
            length = rng.randint(0, mtu - 1) if size == "short" else top + rng.randint(1, 300)
            packet.payload = rng.randbytes(length)
            if packet.reth is not None:
                packet.reth.dma_len = max(packet.reth.dma_len, length)
            out.append((build(packet), False))
        return out

    def _replay_batch(self, kind, n):
        """Real packets of earlier rounds, shuffled and some doubled: the canary's RC requests
        (duplicates to their QP), the targets' end's answers to the canary (into the peers'
        end: answers to requests long finished), and the canary's datagrams aimed at the UD
        target."""
        rng = self.rng
        if kind == "answer":
            pool = [c for c in self.b.sniffer.captures[-4000:]
                    if c.packet is not None and c.packet.bth.dest_qp == self.ca.qp_num]
        else:
            pool = [c for c in self.a.sniffer.captures[-4000:]
                    if c.packet is not None and c.packet.bth.dest_qp
                    == (self.cb if kind == "request" else self.cd).qp_num]
        if not pool:
            return []
        out = []
        for _ in range(n):
            capture = rng.choice(pool)
            data = capture.data
            if kind == "datagram":
                off, data = header_offsets(capture.packet), bytearray(data)
                set_field(data, off["bth"], 40, 24, self.targets["ud"].qp_num)     # DestQP
                set_field(data, off["deth"], 0, 32, FUZZ_QKEY)                      # Q_Key
                data = reseal(data, off)
            out.append((bytes(data), False))
        return out

    async def _ecn_batch(self, batch, n):
        """Ethernet: "ecn ce", well-formed packets for the targets, requests and answers,
        marked Congestion Experienced: each marked request a QP takes draws one CNP, an answer
        none; "ecn cnp", CNPs (0x81, BECN mostly set, any PSN) for the targets, which count
        them in rp_cnp_handled. A quarter of either aims at QPs that cannot take them (none,
        RESET, the other port's): QP drops, no CNP drawn, none handled. Counts the batch's
        requests and doomed packets into `batch`."""
        rng, (_, kind) = self.rng, batch.kind.split()
        epsns = {t: await self._epsn(t) for t in ("rc", "uc")}
        out = []
        for _ in range(n):
            target = rng.choice(("rc", "uc", "ud"))
            if kind == "ce":
                packet = self._template(target, epsns.get(target, 0))
                packet.roce.tclass |= ECN_CE
            else:
                packet = Packet(**self._route(), cnp=CNPReserved(),
                                bth=BTH(opcode=CNP_OPCODE, dest_qp=self.targets[target].qp_num,
                                        psn=rng.choice((0, rng.getrandbits(24))),
                                        becn=rng.random() < 0.8))
            if rng.random() < 0.25:
                packet.bth.dest_qp = rng.choice((self.none_qpn, self.reset_qp.qp_num,
                                                 self.other_port_qp.qp_num))
                batch.doomed += 1
            elif kind == "ce" and packet.op.operation not in ANSWERS:
                batch.requests += 1
            out.append((build(packet), False))
        return out

    def _pick_kind(self):
        """(category, what) of the next packet batch: every kind once (among those `restrict`
        kept) in a shuffled order, then again, so a short run still covers them all."""
        if not self.deck:
            self.deck = list(self.only or self.kinds)
            self.rng.shuffle(self.deck)
        return self.deck.pop()

    def restrict(self, pattern):
        """Only the packet kinds (of the link layer's) whose name matches the regular
        expression `pattern`."""
        self.only = [k for k in self.kinds if re.search(pattern, kind_name(*k))]
        if not self.only:
            raise ValueError(f"no packet kind matches {pattern!r}")

    async def packet_batch(self, n):
        category, what = self._pick_kind()
        batch = Batch(kind_name(category, what), self.b)
        if category == "field":
            packets = await self._field_batch(what, n)
        elif category == "link":
            packets = await self._link_batch(what, n)
        elif category == "qp":
            packets = await self._qp_batch(what, n)
        elif category == "length":
            packets = await self._length_batch(what, n)
        elif category == "ecn":
            packets = await self._ecn_batch(batch, n)
        else:
            batch.end = self.a if what == "answer" else self.b
            packets = self._replay_batch(what, n)
            if what == "datagram":
                batch.kind = "field replayed datagram"     # the UD target takes them: no fixed fate
        batch.packets = packets
        await self._run(batch)
        self.packets += len(packets)

    async def _run(self, batch):
        batch.cycle = self.tb.cycle()
        self.current = batch
        self.history = (self.history + [batch])[-4:]
        posted = await self._canary_post()
        for data, aborted in batch.packets or ():
            await batch.end.player.queue(data, abort=aborted)
        if batch.wrs:
            await self._wr_run(batch)
        fates = await self._check_batch(batch)
        inj, link, qp = fates[batch.end]
        tally = self.tally[batch.kind] if not batch.wrs else self.wr_tally
        tally["injected"] += inj
        tally["link-dropped"] += link
        tally["QP-dropped"] += qp
        tally["taken by a QP"] += inj - link - qp
        if not batch.wrs:
            _sample_kind(batch.kind)
            for outcome, n in (("link-dropped", link), ("QP-dropped", qp),
                               ("taken by a QP", inj - link - qp)):
                if n:
                    _sample_outcome(outcome)
        if not batch.wrs:
            self._tally_answers(batch)
        for end in self.ends:
            self.sent_seen[end] = len(end.sniffer.captures)
        await self._settle_qps(batch)
        await self._canary_check(posted)
        self.batches += 1

    # -----------------------------------------------------------------------------------------
    # Work requests

    def _valid_wr(self, name, tag):
        """A work request target `name` could carry out: its transport's opcodes, one SGE in
        the open region of the targets' side, the remote side in the peers' side's."""
        rng, region, remote_region = self.rng, self.open_mr, self.a.side.open_mr
        ops = {"rc": list(WROpcode), "uc": [op for op in WROpcode if op not in ATOMIC_OPS
                                            and op != WROpcode.RDMA_READ],
               "ud": [WROpcode.SEND, WROpcode.SEND_WITH_IMM]}[name]
        opcode = rng.choice(ops)
        atomic = opcode in ATOMIC_OPS
        length = 8 if atomic else rng.randint(0, 256 if name == "ud" else 1024)
        local = region.sge(rng.randrange(0, 4096) & (~7 if atomic else ~0), length)
        remote = remote_region.remote(rng.randrange(0, 4096) & ~7)
        return SendWR(opcode, local, tag, rng.choice((SendFlags.SIGNALED,) * 3 + (0,)),
                      rng.getrandbits(32), remote.addr, remote.rkey,
                      self.ahs[0] if name == "ud" else None, self.peers["ud"].qp_num, FUZZ_QKEY,
                      rng.getrandbits(64), rng.getrandbits(64))

    def _wqe(self, name, qp, tag):
        """The bytes of a WQE for target `name`: a valid one with up to two fields given
        values that matter (keys of every kind, addresses at and past edges, lengths, opcodes,
        SGE counts, AH numbers, QPNs, Q_Keys), sometimes wholly random bytes. Returns them and
        the opcode byte."""
        rng = self.rng
        if rng.random() < 0.15:
            wqe = rng.randbytes(qp.sq.stride)
            return wqe, wqe[0]
        wqe = bytearray(encode_send_wqe(self._valid_wr(name, tag), qp.sq.stride))
        choices = {
            (0, 1): lambda: rng.choice((rng.choice(list(WROpcode)), rng.getrandbits(8))),
            (1, 1): lambda: rng.choice((0, 1 | 2, 4 | 2, rng.getrandbits(8))),
            (2, 1): lambda: rng.choice((0, 2, 3, 4, 5, rng.getrandbits(8))),
            (16, 8): lambda: rng.choice(self.vas + [rng.getrandbits(64)])
            + rng.choice((0, 1, 7, 4000, 4095, 8191)),
            (24, 4): lambda: rng.choice((0, 1, 4096, 4097, 8193, 1 << 31, rng.getrandbits(32))),
            (28, 4): lambda: rng.choice(self.keys + [rng.getrandbits(32)]),
            (32, 8): lambda: rng.choice(self.vas + [rng.getrandbits(64)])
            + rng.choice((0, 1, 4, 4088, 8191)),
            (40, 4): lambda: rng.choice(self.keys + [rng.getrandbits(32)]),
            (44, 4): lambda: rng.choice([ah.ahn for ah in self.ahs]
                                        + [rng.randrange(self.dev.num_ah + 4)]),
            (48, 4): lambda: rng.choice((self.targets["ud"].qp_num, self.cd.qp_num,
                                         self.none_qpn, rng.getrandbits(24))),
            (52, 4): lambda: rng.choice((0x80000000, FUZZ_QKEY ^ 1, rng.getrandbits(32))),
        }
        for at, size in rng.sample(list(choices), rng.randint(0, 2)):
            wqe[at:at + size] = (choices[at, size]() % (1 << 8 * size)).to_bytes(size, "little")
        return bytes(wqe), wqe[0]

    async def command_batch(self):
        """Random commands: random 64-byte command blocks under every command (and some
        opcodes that are none), each aimed at an index no object uses or past the table. Each
        must be answered with a documented result; whatever one created is taken away after
        (the driver never knew it)."""
        rng, dev = self.rng, self.dev
        spare = {Cmd.CREATE_CQ: dev.num_cq, Cmd.REG_MR: dev.num_mr, Cmd.CREATE_AH: dev.num_ah,
                 Cmd.CREATE_QP: dev.num_qp, Cmd.CREATE_SRQ: dev.num_srq}
        tables = {Cmd.CREATE_CQ: dev.cqs, Cmd.REG_MR: dev.mrs, Cmd.CREATE_AH: dev.ahs,
                  Cmd.CREATE_QP: dev.qps, Cmd.CREATE_SRQ: dev.srqs}
        free = {cmd: next(i for i in range(2 if cmd == Cmd.CREATE_QP else 0, count)
                          if i not in tables[cmd] and i != self.none_qpn)
                for cmd, count in spare.items()}
        # the table each command names (windows share the regions' keys)
        kind = {Cmd.CREATE_CQ: Cmd.CREATE_CQ, Cmd.DESTROY_CQ: Cmd.CREATE_CQ,
                Cmd.RESIZE_CQ: Cmd.CREATE_CQ, Cmd.REG_MR: Cmd.REG_MR, Cmd.DEREG_MR: Cmd.REG_MR,
                Cmd.ALLOC_MW: Cmd.REG_MR, Cmd.DEALLOC_MW: Cmd.REG_MR,
                Cmd.CREATE_AH: Cmd.CREATE_AH, Cmd.DESTROY_AH: Cmd.CREATE_AH,
                Cmd.CREATE_SRQ: Cmd.CREATE_SRQ, Cmd.MODIFY_SRQ: Cmd.CREATE_SRQ,
                Cmd.QUERY_SRQ: Cmd.CREATE_SRQ, Cmd.DESTROY_SRQ: Cmd.CREATE_SRQ}
        for _ in range(rng.randint(4, 12)):
            opcode = rng.choice(list(Cmd)) if rng.random() < 0.9 else rng.getrandbits(8)
            table = kind.get(opcode, Cmd.CREATE_QP)
            index = free[table] if rng.random() < 0.8 else spare[table] + rng.randrange(4)
            result = await self._command(opcode, index, self._command_block(opcode))
            name = Cmd(opcode).name if opcode in set(Cmd) else "no such command"
            self.cmd_tally[f"{name} {getattr(result, 'name', result)}"] += 1
            self.commands += 1
        # what the batch created goes again, QP first (it may use the CQ and the SRQ)
        for opcode, table in ((Cmd.DESTROY_QP, Cmd.CREATE_QP), (Cmd.DESTROY_CQ, Cmd.CREATE_CQ),
                              (Cmd.DESTROY_SRQ, Cmd.CREATE_SRQ),
                              (Cmd.DEREG_MR, Cmd.REG_MR), (Cmd.DEALLOC_MW, Cmd.REG_MR),
                              (Cmd.DESTROY_AH, Cmd.CREATE_AH)):
            await self._command(opcode, free[table], b"")

    def _command_block(self, opcode):
        """64 random bytes, or (40 %) a block the command could take, in the fuzzer's PD, with
        rings in its scratch memory, one byte of it maybe changed."""
        rng, dev = self.rng, self.dev
        block = None
        if rng.random() < 0.4:
            ring = self.scratch + rng.randrange(0, 4096, 64)
            block = {
                Cmd.CREATE_CQ: lambda: struct.pack("<QB", ring, rng.randint(1, 8)),
                Cmd.REG_MR: lambda: struct.pack("<QIBBHQ", rng.getrandbits(64),
                                                rng.randint(0, 4096), rng.getrandbits(8),
                                                rng.getrandbits(4), self.pd.pdn, ring),
                Cmd.CREATE_AH: lambda: struct.pack("<HBBBBBBIBxH16s", rng.getrandbits(16),
                                                   rng.getrandbits(4), rng.getrandbits(3), 0,
                                                   rng.getrandbits(1), rng.randint(1, 2), 64, 0, 0,
                                                   self.pd.pdn, bytes(16)),
                Cmd.CREATE_QP: lambda: struct.pack("<BxHHHBBBBBxHQQ", rng.choice((0, 1, 3)),
                                                   self.pd.pdn, rng.randrange(dev.num_cq),
                                                   rng.randrange(dev.num_cq), rng.randint(0, 6),
                                                   rng.randint(0, 6), rng.randint(1, 4),
                                                   rng.randint(1, 4), rng.getrandbits(1),
                                                   rng.randrange(dev.num_srq + 2), ring,
                                                   ring + 2048),
                Cmd.CREATE_SRQ: lambda: struct.pack("<QBBHH", ring, rng.randint(0, 6),
                                                    rng.randint(0, 5), self.pd.pdn,
                                                    rng.randrange(70)),
                Cmd.MODIFY_SRQ: lambda: struct.pack("<H", rng.randrange(70)),
            }.get(opcode, lambda: None)()
        if block is None:
            return rng.randbytes(64)
        block = bytearray(block.ljust(64, b"\0"))
        if rng.random() < 0.5:
            block[rng.randrange(len(block))] = rng.getrandbits(8)
        return bytes(block)

    async def _command(self, opcode, index, block):
        """One command; its result (a violation when it is not one the device documents)."""
        try:
            await self.dev.command(opcode, index, block)
            result = CmdResult.OK
        except CommandError as refused:
            result = refused.result
        if result not in set(CmdResult):
            self._violation(f"command {opcode:#x} at index {index}: result {result!r}")
        return result

    async def wr_batch(self):
        """WQEs on one to three targets, under the next condition of WR_CONDITIONS (a peer's
        on the RC target: only RC hears what its peer does)."""
        rng = self.rng
        if not self.condition_deck:
            self.condition_deck = list(WR_CONDITIONS)
            rng.shuffle(self.condition_deck)
        condition = self.condition_deck.pop()
        names = rng.sample(list(self.targets), rng.randint(1, 3))
        if condition in PEER_CONDITIONS:
            names = ["rc"] + [n for n in names if n != "rc"]
        plan = [(name, rng.randint(1, WR_BATCH)) for name in names]
        batch = Batch("wr", self.b, plan=plan, wrs=sum(k for _, k in plan), condition=condition)
        name = names[0]
        if batch.condition == "peer without receives":
            await self._bring_up(name, peer_receives=False)
        elif batch.condition == "peer with a receive it may not write":
            await self._bring_up(name, peer_lkey=self.a.side.ro_mr.lkey)
        elif batch.condition == "peer in ERR":
            await self.peers[name].modify(QPState.ERR)
        elif batch.condition == "host memory fails payloads":
            batch.fault = (self.open_mr.mr.host_addr + rng.randrange(0, 4096, 64),
                           rng.choice((64, 256, 2048)))
        self.wr_tally[f"condition {batch.condition}"] += 1
        await self._run(batch)
        self.wrs += batch.wrs
        if rng.random() < 0.1:
            await self.command_batch()

    async def _wr_run(self, batch):
        """Post each target's WQEs of `batch` and wait until the device consumed every WQE a
        doorbell handed it."""
        rng = self.rng
        handed = []
        if batch.fault:
            self.tb.mem.fail(*batch.fault)
        for n, (name, k) in enumerate(batch.plan):
            qp = self.targets[name]
            status = await qp.query()
            pi, ci = status.sq_pi, status.sq_ci
            if status.state == QPState.ERR:
                continue
            # under a condition the first target's first WQE is a plain SEND, so that the
            # condition decides how it ends
            conditioned = n == 0 and batch.condition != "plain"
            for i in range(k):
                slot = qp.sq.slot(pi + i)
                tag = 0xF0_0000 | self.wrs + i
                if conditioned and i == 0:
                    wr = replace(self._valid_wr(name, tag), opcode=WROpcode.SEND,
                                 sge=self.open_mr.sge(0, 64), flags=SendFlags.SIGNALED)
                    wqe, opcode = encode_send_wqe(wr, qp.sq.stride), WROpcode.SEND
                else:
                    wqe, opcode = self._wqe(name, qp, tag)
                self.dev.write(slot, wqe)
                op_name = WROpcode(opcode).name if opcode in set(WROpcode) else "invalid"
                self.wr_tally[f"opcode {op_name}"] += 1
            if conditioned and batch.condition == "host memory fails the ring":
                self.tb.mem.fail(qp.sq.slot(pi), qp.sq.stride)
            value = (pi + k) & 0xFFFF
            if not conditioned and rng.random() < 0.1:
                value = rng.getrandbits(16)
            refused = (value - pi) & 0xFFFF > qp.sq.size - ((pi - ci) & 0xFFFF)
            await self.dev.write_reg(sq_db(qp.qp_num), value)
            after = await qp.query()
            if after.sq_pi != (pi if refused else value):
                self._violation(f"QP {qp.qp_num}: doorbell {value:#x} at producer {pi:#x}, "
                                f"consumer {ci:#x}, ring {qp.sq.size}: the device took "
                                f"{after.sq_pi:#x}, the rule says {pi if refused else value:#x}")
            self.wr_tally["doorbell refused" if refused else "doorbell taken"] += 1
            _sample_wr_outcome("doorbell refused" if refused else "doorbell taken")
            qp.sq.head = qp.sq.tail = after.sq_pi
            handed.append(qp)
        start = self.tb.cycle()
        while handed:
            await ClockCycles(self.dut.clk, 500)
            left = []
            for qp in handed:
                status = await qp.query()
                if status.sq_ci != status.sq_pi and status.state != QPState.RESET:
                    left.append((qp, status))
            handed = [qp for qp, _ in left]
            if handed and self.tb.cycle() - start > WR_BOUND:
                self._violation(f"send queues not consumed {WR_BOUND} cycles after their "
                                f"doorbells ({batch.condition}, {batch.plan}): " + "; ".join(
                                    f"QP {qp.qp_num} {status}" for qp, status in left))
        self.tb.mem.fail()      # healed

    # -----------------------------------------------------------------------------------------
    # The run

    def batch_size(self, packets):
        """Packets per packet batch in a run of `packets`: PACKET_BATCH, or fewer when a round
        of every kind at that size would not fit, so a short run still covers every kind."""
        return max(1, min(PACKET_BATCH, packets // len(self.only or self.kinds)))

    async def run(self, packets, wrs):
        self.started = time.monotonic()
        size = self.batch_size(packets)
        while self.packets < packets or self.wrs < wrs:
            left_p, left_w = packets - self.packets, wrs - self.wrs
            if left_w > 0 and (left_p <= 0 or self.rng.random()
                               < left_w / WR_BATCH / (left_w / WR_BATCH + left_p / size)):
                await self.wr_batch()
            else:
                await self.packet_batch(min(size, left_p))

    def write_pcap(self, path):
        """What the links carried since the last batches began, by cycle: interface 0 and 1
        the peers' and the targets' end's TX links, 2 and 3 the packets injected into their RX
        (those at the time their batch started: the player sends them as the cable lets it).
        On Ethernet a pcap of frames, which has no place for the interface (nor for the abort
        flag): an injected frame is one no port's TX link carried."""
        records = []
        for batch in self.history:
            for data, aborted in batch.packets or ():
                records.append((batch.cycle, 2 + self.ends.index(batch.end), data, aborted))
        since = self.history[0].cycle if self.history else 0
        for i, end in enumerate(self.ends):
            records += [(c.cycle, i, c.data, c.aborted)
                        for c in end.sniffer.captures if c.cycle >= since]
        with PcapWriter(path, self.link) as pcap:
            for cycle, interface, data, aborted in sorted(records, key=lambda r: r[0]):
                pcap.write(data, cycle * CLOCK_PERIOD_NS, interface, rx_error=aborted)

    def report(self, seed, violations):
        seconds = time.monotonic() - self.started if self.started else 0.0
        kinds = {kind: dict(sorted(t.items())) for kind, t in sorted(self.tally.items())}
        return {
            "seed": seed, "between": self.between, "link": self.link, "packets": self.packets,
            "wrs": self.wrs,
            "batches": self.batches,
            "violations": violations, "seconds": round(seconds, 1),
            "packets_per_second": round(self.packets / seconds, 1) if seconds else None,
            "wrs_per_second": round(self.wrs / seconds, 1) if seconds else None,
            "canary_rounds": self.canary_rounds, "canary_worst_cycles": self.canary_worst,
            "kinds": kinds, "work_requests": dict(sorted(self.wr_tally.items())),
            "commands": self.commands, "command_results": dict(sorted(self.cmd_tally.items())),
        }
