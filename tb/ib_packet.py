"""InfiniBand packets as they cross a link, written from the IBTA wire format: headers, the
opcode table, `build` (Packet -> wire bytes LRH..VCRC), `parse` (wire bytes -> Packet, checking
the packet on its own, independently of any RTL) and the segmentation of a message into
path-MTU packets that a packetizer must produce.

The same packets travel over Ethernet as RoCE v2 (IBTA Annex A17): a Packet with `roce` in
place of `lrh` (and no `grh`) is built as the frame, Ethernet header [802.1Q tag] + IPv4 or
IPv6 + UDP (destination port 4791) + BTH .. pad + ICRC + Ethernet padding + FCS, and
`parse(..., link="eth")` reads such frames.

Fields the packet layout determines are not stored in the header classes: LRH LVer (0), LNH
and PktLen, GRH IPVer (6), PayLen and NxtHdr (0x1B), BTH PadCnt and TVer (0), the reserved
fields, the pad, ICRC and VCRC; for RoCE v2 the EtherType, the IP version, lengths, header
checksum, fragmentation and protocol, the UDP destination port and length, the Ethernet
padding and the FCS. `build` computes them and `parse` checks them, so `parse(build(p)) == p`
for every well-formed packet `p` (`link="eth"` for RoCE v2). `build` also sends the IPv4
identification 0 with DF and a UDP checksum of 0, which `parse` does not require of a sender.
"""

import ipaddress
from dataclasses import dataclass
from typing import NamedTuple

from .ib_crc import fcs_bytes, icrc_bytes, roce_icrc_bytes, vcrc_bytes

LNH_LOCAL = 2           # BTH follows LRH
LNH_GLOBAL = 3          # GRH follows LRH
GRH_IPVER = 6
GRH_NXTHDR = 0x1B       # an IBA transport header follows the GRH
ICRC_BYTES = 4
VCRC_BYTES = 2
PSN_MASK = 0xFFFFFF     # PSNs are 24 bits and wrap
DEFAULT_PKEY = 0xFFFF   # the default partition, full member
VALID_MTUS = (256, 512, 1024, 2048, 4096)
MAX_MTU = VALID_MTUS[-1]

ROCE_V2_UDP_PORT = 4791
ETHERTYPE_VLAN = 0x8100
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
IP_PROTO_UDP = 17
IPV4_DF = 0x4000        # IPv4 flags and fragment offset: don't fragment
IPV4_FRAGMENT = 0x3FFF  # more fragments, fragment offset
ETH_HEADER_BYTES = 14
VLAN_TAG_BYTES = 4
IPV4_HEADER_BYTES = 20  # IHL 5: RoCE v2 sends no IPv4 options
IPV6_HEADER_BYTES = 40
UDP_HEADER_BYTES = 8
FCS_BYTES = 4
ETH_MIN_FRAME = 64      # with the FCS: shorter frames are padded with zeros before it
IPV4_MAPPED_PREFIX = bytes(10) + b"\xff\xff"    # ::ffff:a.b.c.d
LINKS = ("ib", "eth")


class PacketError(ValueError):
    """A packet failed a check; `check` names it (e.g. "ICRC", "LRH PktLen")."""

    def __init__(self, check, detail):
        super().__init__(f"{check}: {detail}")
        self.check = check


def _field(name, value, size):
    """`value` as `size` big-endian bytes, refusing values that do not fit."""
    if not 0 <= value < 1 << (8 * size):
        raise ValueError(f"{name}={value:#x} does not fit in {size} bytes")
    return value.to_bytes(size, "big")


def _bits(name, value, width):
    if not 0 <= value < 1 << width:
        raise ValueError(f"{name}={value:#x} does not fit in {width} bits")
    return value


# ---------------------------------------------------------------------------------------------
# Base headers: bit fields, packed by hand.

@dataclass
class LRH:
    """Local Route Header (8 bytes)."""
    dlid: int
    slid: int
    vl: int = 0
    sl: int = 0

    SIZE = 8

    def pack(self, lnh, pktlen):
        return (bytes([_bits("VL", self.vl, 4) << 4, _bits("SL", self.sl, 4) << 4 | lnh])
                + _field("DLID", self.dlid, 2) + _field("PktLen", _bits("PktLen", pktlen, 11), 2)
                + _field("SLID", self.slid, 2))

    @classmethod
    def unpack(cls, data):
        return cls(dlid=int.from_bytes(data[2:4], "big"), slid=int.from_bytes(data[6:8], "big"),
                   vl=data[0] >> 4, sl=data[1] >> 4)


@dataclass
class GRH:
    """Global Route Header (40 bytes)."""
    sgid: bytes
    dgid: bytes
    hop_limit: int
    tclass: int = 0
    flow_label: int = 0

    SIZE = 40

    def pack(self, paylen):
        for name in ("sgid", "dgid"):
            if len(getattr(self, name)) != 16:
                raise ValueError(f"GRH {name} must be 16 bytes")
        first_word = (GRH_IPVER << 28 | _bits("TClass", self.tclass, 8) << 20
                      | _bits("FlowLabel", self.flow_label, 20))
        return (first_word.to_bytes(4, "big") + _field("PayLen", paylen, 2)
                + bytes([GRH_NXTHDR]) + _field("HopLmt", self.hop_limit, 1)
                + bytes(self.sgid) + bytes(self.dgid))

    @classmethod
    def unpack(cls, data):
        first_word = int.from_bytes(data[0:4], "big")
        return cls(sgid=bytes(data[8:24]), dgid=bytes(data[24:40]), hop_limit=data[7],
                   tclass=first_word >> 20 & 0xFF, flow_label=first_word & 0xFFFFF)


@dataclass
class BTH:
    """Base Transport Header (12 bytes)."""
    opcode: int
    dest_qp: int
    psn: int
    pkey: int = DEFAULT_PKEY
    se: bool = False        # solicited event
    migreq: bool = False    # M: migration state
    ackreq: bool = False
    fecn: bool = False      # the byte after the P_Key (Resv8a, variant): FECN and BECN bits
    becn: bool = False      # (a RoCE v2 CNP has BECN set)

    SIZE = 12

    def pack(self, padcnt):
        flags = int(self.se) << 7 | int(self.migreq) << 6 | padcnt << 4   # TVer = 0
        return (_field("OpCode", self.opcode, 1) + bytes([flags]) + _field("P_Key", self.pkey, 2)
                + bytes([int(self.fecn) << 7 | int(self.becn) << 6])
                + _field("DestQP", self.dest_qp, 3)
                + bytes([int(self.ackreq) << 7]) + _field("PSN", self.psn, 3))

    @classmethod
    def unpack(cls, data):
        return cls(opcode=data[0], dest_qp=int.from_bytes(data[5:8], "big"),
                   psn=int.from_bytes(data[9:12], "big"), pkey=int.from_bytes(data[2:4], "big"),
                   se=bool(data[1] & 0x80), migreq=bool(data[1] & 0x40),
                   ackreq=bool(data[8] & 0x80), fecn=bool(data[4] & 0x80),
                   becn=bool(data[4] & 0x40))


def is_ipv4_mapped(gid):
    """Whether a GID is an IPv4-mapped IPv6 address (::ffff:a.b.c.d): RoCE v2 then sends
    IPv4."""
    return len(gid) == 16 and gid[:12] == IPV4_MAPPED_PREFIX


def vlan_id(vlan):
    """The 802.1Q VLAN a frame or GID table entry is on, `vlan` None being untagged: VID 0 is
    no VLAN (a priority tag carries only the PCP), so untagged and priority-tagged are alike."""
    return vlan or 0


def ipv4_gid(address):
    """The GID of an IPv4 address (text such as "10.0.0.1", 4 bytes or an int)."""
    return IPV4_MAPPED_PREFIX + ipaddress.IPv4Address(address).packed


# IP ECN, the traffic class's low two bits (RFC 3168): ECN-capable transport, and congestion
# experienced (set by a switch instead of dropping the packet)
ECN_ECT0, ECN_CE = 0b10, 0b11


def marked_ce(pkt):
    """A RoCE v2 packet whose IP ECN says Congestion Experienced."""
    return pkt.roce is not None and pkt.roce.tclass & 3 == ECN_CE


def ipv4_checksum(header):
    """The RFC 791 header checksum of an IPv4 header, its checksum field taken as zero: the
    one's complement of the one's complement sum of its 16-bit words."""
    words = header[:10] + bytes(2) + header[12:]
    total = sum(int.from_bytes(words[at:at + 2], "big") for at in range(0, len(words), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total ^ 0xFFFF


@dataclass
class RoCE:
    """The Ethernet, IP and UDP fields of a RoCE v2 frame, which stand in for LRH and GRH:
    IPv4 when both GIDs are IPv4-mapped (`tclass` is then the DSCP/ECN byte, `hop_limit` the
    TTL, and there is no flow label), IPv6 otherwise. `vlan` None sends the frame untagged,
    else with an 802.1Q tag of that VID and priority `pcp`. `sport` is the UDP source port the
    sender chose for the flow."""
    dmac: bytes
    smac: bytes
    sgid: bytes
    dgid: bytes
    hop_limit: int
    sport: int
    tclass: int = 0
    flow_label: int = 0
    vlan: int | None = None
    pcp: int = 0

    @property
    def ipv4(self):
        return is_ipv4_mapped(self.sgid) and is_ipv4_mapped(self.dgid)

    def pack_link(self):
        """The Ethernet header: MACs, the 802.1Q tag when there is a VLAN, the EtherType."""
        for name in ("dmac", "smac"):
            if len(getattr(self, name)) != 6:
                raise ValueError(f"RoCE {name} must be 6 bytes")
        if self.vlan is None:
            if self.pcp:
                raise ValueError(f"PCP={self.pcp} needs a VLAN tag to travel in")
            tag = b""
        else:
            tag = (_field("TPID", ETHERTYPE_VLAN, 2)
                   + _field("TCI", _bits("PCP", self.pcp, 3) << 13 | _bits("VID", self.vlan, 12),
                            2))
        ethertype = ETHERTYPE_IPV4 if self.ipv4 else ETHERTYPE_IPV6
        return bytes(self.dmac) + bytes(self.smac) + tag + _field("EtherType", ethertype, 2)

    def pack_network(self, udp_length):
        """The IP and UDP headers of a datagram whose UDP length (UDP header through ICRC) is
        `udp_length`."""
        for name in ("sgid", "dgid"):
            if len(getattr(self, name)) != 16:
                raise ValueError(f"RoCE {name} must be 16 bytes")
        if self.ipv4:
            if self.flow_label:
                raise ValueError(f"IPv4 has no flow label (flow_label={self.flow_label:#x})")
            header = (bytes([4 << 4 | IPV4_HEADER_BYTES // 4]) + _field("TOS", self.tclass, 1)
                      + _field("IPv4 total length", IPV4_HEADER_BYTES + udp_length, 2)
                      + bytes(2) + _field("flags", IPV4_DF, 2)        # identification 0
                      + _field("TTL", self.hop_limit, 1) + bytes([IP_PROTO_UDP]) + bytes(2)
                      + bytes(self.sgid[12:]) + bytes(self.dgid[12:]))
            ip = header[:10] + ipv4_checksum(header).to_bytes(2, "big") + header[12:]
        else:
            first_word = (6 << 28 | _bits("TClass", self.tclass, 8) << 20
                          | _bits("FlowLabel", self.flow_label, 20))
            ip = (first_word.to_bytes(4, "big") + _field("IPv6 payload length", udp_length, 2)
                  + bytes([IP_PROTO_UDP]) + _field("HopLmt", self.hop_limit, 1)
                  + bytes(self.sgid) + bytes(self.dgid))
        return (ip + _field("UDP sport", self.sport, 2) + _field("UDP dport", ROCE_V2_UDP_PORT, 2)
                + _field("UDP length", udp_length, 2) + bytes(2))            # checksum 0


# ---------------------------------------------------------------------------------------------
# Extension headers: whole big-endian bytes, described by a layout.

class _ByteFields:
    """A header of whole-byte big-endian fields. LAYOUT lists (field, bytes); a field named
    None is reserved: sent as zeros, ignored on receipt."""

    def pack(self):
        return b"".join(_field(f"{type(self).__name__}.{name}", getattr(self, name), size)
                        if name else bytes(size) for name, size in self.LAYOUT)

    @classmethod
    def unpack(cls, data):
        values, at = {}, 0
        for name, size in cls.LAYOUT:
            if name:
                values[name] = int.from_bytes(data[at:at + size], "big")
            at += size
        return cls(**values)


@dataclass
class DETH(_ByteFields):
    """Datagram Extended Transport Header (UD)."""
    qkey: int
    src_qp: int

    LAYOUT = (("qkey", 4), (None, 1), ("src_qp", 3))
    SIZE = 8


@dataclass
class RETH(_ByteFields):
    """RDMA Extended Transport Header: the remote buffer of a WRITE or READ."""
    va: int
    rkey: int
    dma_len: int

    LAYOUT = (("va", 8), ("rkey", 4), ("dma_len", 4))
    SIZE = 16


@dataclass
class AtomicETH(_ByteFields):
    va: int
    rkey: int
    swap_add: int
    compare: int

    LAYOUT = (("va", 8), ("rkey", 4), ("swap_add", 8), ("compare", 8))
    SIZE = 28


@dataclass
class AETH(_ByteFields):
    """ACK Extended Transport Header: syndrome (ACK / RNR NAK / NAK) and MSN."""
    syndrome: int
    msn: int

    LAYOUT = (("syndrome", 1), ("msn", 3))
    SIZE = 4


@dataclass
class AtomicAckETH(_ByteFields):
    orig_data: int

    LAYOUT = (("orig_data", 8),)
    SIZE = 8


@dataclass
class ImmDt(_ByteFields):
    """Immediate data, as the 32-bit big-endian value on the wire."""
    data: int

    LAYOUT = (("data", 4),)
    SIZE = 4


@dataclass
class IETH(_ByteFields):
    """Invalidate Extended Transport Header (RC SEND with invalidate): the R_Key to invalidate."""
    rkey: int

    LAYOUT = (("rkey", 4),)
    SIZE = 4


@dataclass
class CNPReserved(_ByteFields):
    """The 16 reserved bytes after a RoCE v2 CNP's BTH (IBTA Annex A17.9.3)."""
    LAYOUT = ((None, 16),)
    SIZE = 16


def imm_le(data):
    """ImmDt `data` as a device register holds the four bytes: in wire (and host memory) order,
    the first byte in bits [7:0]."""
    return int.from_bytes(data.to_bytes(4, "big"), "little")


# Packet attribute -> header class, in wire order after the BTH.
EXTENSION_HEADERS = {
    "deth": DETH,
    "reth": RETH,
    "atomic_eth": AtomicETH,
    "aeth": AETH,
    "atomic_ack_eth": AtomicAckETH,
    "immdt": ImmDt,
    "ieth": IETH,
    "cnp": CNPReserved,
}


# ---------------------------------------------------------------------------------------------
# Opcodes

FIRST, MIDDLE, LAST, ONLY = "first", "middle", "last", "only"


@dataclass(frozen=True)
class Opcode:
    code: int
    name: str           # as Linux names it, e.g. RC_SEND_LAST_WITH_IMMEDIATE
    transport: str      # RC, UC, UD
    operation: str      # SEND, RDMA_WRITE, RDMA_READ_REQUEST, RDMA_READ_RESPONSE, ...
    position: str       # first/middle/last/only; a single-packet operation is "only"
    headers: tuple      # Packet attributes of its extension headers, in wire order
    payload: bool       # whether it may carry payload


# Low five bits of the opcode: (name suffix, operation, position, headers, payload)
_OPERATIONS = {
    0x00: ("SEND_FIRST", "SEND", FIRST, (), True),
    0x01: ("SEND_MIDDLE", "SEND", MIDDLE, (), True),
    0x02: ("SEND_LAST", "SEND", LAST, (), True),
    0x03: ("SEND_LAST_WITH_IMMEDIATE", "SEND", LAST, ("immdt",), True),
    0x04: ("SEND_ONLY", "SEND", ONLY, (), True),
    0x05: ("SEND_ONLY_WITH_IMMEDIATE", "SEND", ONLY, ("immdt",), True),
    0x06: ("RDMA_WRITE_FIRST", "RDMA_WRITE", FIRST, ("reth",), True),
    0x07: ("RDMA_WRITE_MIDDLE", "RDMA_WRITE", MIDDLE, (), True),
    0x08: ("RDMA_WRITE_LAST", "RDMA_WRITE", LAST, (), True),
    0x09: ("RDMA_WRITE_LAST_WITH_IMMEDIATE", "RDMA_WRITE", LAST, ("immdt",), True),
    0x0A: ("RDMA_WRITE_ONLY", "RDMA_WRITE", ONLY, ("reth",), True),
    0x0B: ("RDMA_WRITE_ONLY_WITH_IMMEDIATE", "RDMA_WRITE", ONLY, ("reth", "immdt"), True),
    0x0C: ("RDMA_READ_REQUEST", "RDMA_READ_REQUEST", ONLY, ("reth",), False),
    0x0D: ("RDMA_READ_RESPONSE_FIRST", "RDMA_READ_RESPONSE", FIRST, ("aeth",), True),
    0x0E: ("RDMA_READ_RESPONSE_MIDDLE", "RDMA_READ_RESPONSE", MIDDLE, (), True),
    0x0F: ("RDMA_READ_RESPONSE_LAST", "RDMA_READ_RESPONSE", LAST, ("aeth",), True),
    0x10: ("RDMA_READ_RESPONSE_ONLY", "RDMA_READ_RESPONSE", ONLY, ("aeth",), True),
    0x11: ("ACKNOWLEDGE", "ACKNOWLEDGE", ONLY, ("aeth",), False),
    0x12: ("ATOMIC_ACKNOWLEDGE", "ATOMIC_ACKNOWLEDGE", ONLY, ("aeth", "atomic_ack_eth"), False),
    0x13: ("COMPARE_SWAP", "COMPARE_SWAP", ONLY, ("atomic_eth",), False),
    0x14: ("FETCH_ADD", "FETCH_ADD", ONLY, ("atomic_eth",), False),
    0x16: ("SEND_LAST_WITH_INVALIDATE", "SEND", LAST, ("ieth",), True),
    0x17: ("SEND_ONLY_WITH_INVALIDATE", "SEND", ONLY, ("ieth",), True),
    0x1D: ("ATOMIC_WRITE", "ATOMIC_WRITE", ONLY, ("reth",), True),     # IBTA 1.5: 8 bytes
}

# Transport -> (opcode base, the low five-bit codes it uses, headers every packet adds first)
_TRANSPORTS = {
    "RC": (0x00, (*range(0x00, 0x15), 0x16, 0x17, 0x1D), ()),
    "UC": (0x20, range(0x00, 0x0C), ()),         # SEND and RDMA WRITE only
    "UD": (0x60, (0x04, 0x05), ("deth",)),       # SEND only, always with a DETH
}


def _opcode_table():
    table = {}
    for transport, (base, lows, common) in _TRANSPORTS.items():
        for low in lows:
            suffix, operation, position, headers, payload = _OPERATIONS[low]
            table[base | low] = Opcode(base | low, f"{transport}_{suffix}", transport, operation,
                                       position, common + headers, payload)
    return table


OPCODES = _opcode_table()
# RoCE v2 adds the congestion notification packet, a transport of its own (Annex A17.9.3):
# the opcodes an Ethernet link carries
CNP_OPCODE = 0x81
ROCE_OPCODES = {**OPCODES,
                CNP_OPCODE: Opcode(CNP_OPCODE, "CNP", "RoCE", "CNP", ONLY, ("cnp",), False)}
OPCODES_BY_NAME = {op.name: op for op in OPCODES.values()}


# ---------------------------------------------------------------------------------------------
# Packets

@dataclass(kw_only=True)
class Packet:
    """One packet: headers (extension headers None when absent) and payload (without pad).
    An InfiniBand packet has an `lrh` (and a `grh` when global), a RoCE v2 one `roce` instead."""
    lrh: LRH | None = None
    bth: BTH
    grh: GRH | None = None
    roce: RoCE | None = None
    deth: DETH | None = None
    reth: RETH | None = None
    atomic_eth: AtomicETH | None = None
    aeth: AETH | None = None
    atomic_ack_eth: AtomicAckETH | None = None
    immdt: ImmDt | None = None
    ieth: IETH | None = None
    cnp: CNPReserved | None = None
    payload: bytes = b""

    @property
    def op(self):
        """The opcode's table entry (KeyError for an opcode this codec does not know)."""
        return (OPCODES if self.roce is None else ROCE_OPCODES)[self.bth.opcode]

    def summary(self):
        if self.roce is None:
            to = f"dlid={self.lrh.dlid:#x}"
        else:
            dgid = self.roce.dgid
            to = f"dip={ipaddress.ip_address(dgid[12:] if self.roce.ipv4 else dgid)}"
        return (f"{self.op.name} {to} qp={self.bth.dest_qp:#x} "
                f"psn={self.bth.psn:#x} payload={len(self.payload)}")


def seal(body):
    """Append ICRC and VCRC to a packet given from LRH through the pad. `build` uses it; tests
    use it to make packets whose CRCs are right and whose other fields are wrong."""
    with_icrc = bytes(body) + icrc_bytes(body)
    return with_icrc + vcrc_bytes(with_icrc)


def seal_frame(link, ip_packet):
    """A RoCE v2 frame from its Ethernet header `link` and `ip_packet` (IP header through the
    pad): the ICRC, Ethernet padding and FCS appended. `build` uses it; tests use it to make
    frames whose CRCs are right and whose other fields are wrong."""
    frame = bytes(link) + bytes(ip_packet) + roce_icrc_bytes(ip_packet)
    frame += bytes(max(0, ETH_MIN_FRAME - FCS_BYTES - len(frame)))
    return frame + fcs_bytes(frame)


class FrameLayout(NamedTuple):
    """Where a RoCE v2 frame's IP header, UDP header and BTH start and its IP packet ends."""
    ip: int
    udp: int
    bth: int
    end: int
    v4: bool


def frame_layout(wire):
    """The FrameLayout of a RoCE v2 frame as built (its fields still right): for tests that
    break one field and reframe() the rest right."""
    ip = ETH_HEADER_BYTES + (VLAN_TAG_BYTES if wire[12:14] == ETHERTYPE_VLAN.to_bytes(2, "big")
                             else 0)
    v4 = wire[ip] >> 4 == 4
    udp = ip + (IPV4_HEADER_BYTES if v4 else IPV6_HEADER_BYTES)
    size = (int.from_bytes(wire[ip + 2:ip + 4], "big") if v4
            else IPV6_HEADER_BYTES + int.from_bytes(wire[ip + 4:ip + 6], "big"))
    return FrameLayout(ip, udp, udp + UDP_HEADER_BYTES, ip + size, v4)


def reframe(body, at, lengths=False, checksum=True, icrc=roce_icrc_bytes, after=b"",
            pad=True):
    """A frame of `body` (destination MAC .. pad, laid out as FrameLayout `at` says) with its
    CRCs right: with `lengths` the IP and UDP lengths made to fit it, with `checksum` the IPv4
    header checksum made right; then the ICRC (`icrc` of the IP packet), `after` (bytes past
    the IP packet), the zero padding to 64 bytes (unless not `pad`) and the FCS."""
    body = bytearray(body)
    if lengths:
        size = len(body) - at.ip + ICRC_BYTES
        if at.v4:
            body[at.ip + 2:at.ip + 4] = size.to_bytes(2, "big")
        else:
            body[at.ip + 4:at.ip + 6] = (size - IPV6_HEADER_BYTES).to_bytes(2, "big")
        body[at.udp + 4:at.udp + 6] = (len(body) - at.udp + ICRC_BYTES).to_bytes(2, "big")
    if checksum and at.v4:
        header = bytes(body[at.ip:at.ip + IPV4_HEADER_BYTES])
        body[at.ip + 10:at.ip + 12] = ipv4_checksum(header).to_bytes(2, "big")
    frame = bytes(body) + icrc(bytes(body[at.ip:])) + bytes(after)
    if pad:
        frame += bytes(max(0, ETH_MIN_FRAME - FCS_BYTES - len(frame)))
    return frame + fcs_bytes(frame)


def build(packet):
    """The wire bytes of `packet`: LRH through VCRC, with LNH, PktLen, GRH PayLen, PadCnt, the
    pad and both CRCs computed; for a RoCE v2 packet the frame, destination MAC through FCS,
    with the IP and UDP lengths, the IPv4 checksum, PadCnt, the pad, the ICRC, Ethernet
    padding and the FCS computed.

    The packet must be one `parse` can read back: an LRH or RoCE fields (not both, and no GRH
    with RoCE), a known opcode with exactly its extension headers, and no payload where the
    opcode carries none (ValueError otherwise). Payload sizes are not checked, so a test can
    build a first packet shorter than the path MTU, or one larger than any MTU, and see the
    receiver reject it.
    """
    if (packet.lrh is None) == (packet.roce is None):
        raise ValueError("a packet has an LRH (InfiniBand) or RoCE fields (RoCE v2), not "
                         + ("both" if packet.roce else "neither"))
    if packet.roce is not None and packet.grh is not None:
        raise ValueError("a RoCE v2 packet has no GRH: its IP header stands in for it")
    transport = _transport(packet, OPCODES if packet.roce is None else ROCE_OPCODES)
    if packet.roce is not None:
        network = packet.roce.pack_network(UDP_HEADER_BYTES + len(transport) + ICRC_BYTES)
        return seal_frame(packet.roce.pack_link(), network + transport)
    if packet.grh is None:
        network = b""
        lnh = LNH_LOCAL
    else:
        network = packet.grh.pack(paylen=len(transport) + ICRC_BYTES)
        lnh = LNH_GLOBAL
    pktlen = (LRH.SIZE + len(network) + len(transport) + ICRC_BYTES) // 4
    return seal(packet.lrh.pack(lnh, pktlen) + network + transport)


def _transport(packet, opcodes):
    """BTH, extension headers, payload and pad: what InfiniBand and RoCE v2 carry alike, for
    an opcode of `opcodes` (the link's table)."""
    op = opcodes.get(packet.bth.opcode)
    if op is None:
        raise ValueError(f"unknown opcode {packet.bth.opcode:#04x}")
    for name in EXTENSION_HEADERS:
        present = getattr(packet, name) is not None
        if present != (name in op.headers):
            raise ValueError(f"{op.name} {'needs' if not present else 'has no'} {name}")
    if packet.payload and not op.payload:
        raise ValueError(f"{op.name} carries no payload")
    padcnt = -len(packet.payload) & 3
    return (packet.bth.pack(padcnt)
            + b"".join(getattr(packet, name).pack() for name in op.headers)
            + bytes(packet.payload) + bytes(padcnt))


def parse(data, mtu=None, link="ib"):
    """Decode the wire bytes of one packet into a Packet, checking it on its own: CRCs,
    lengths, versions, opcode, headers, pad and payload size for the opcode. First and middle
    packets must carry exactly `mtu` bytes (when given; otherwise one of the valid path MTUs),
    last and only packets at most `mtu` (or 4096). The first failed check raises PacketError
    naming it. `link` "ib" reads an InfiniBand packet, LRH through VCRC; "eth" a RoCE v2
    frame, destination MAC through FCS (`_parse_roce`).
    """
    if link not in LINKS:
        raise ValueError(f"link {link!r} is not one of {LINKS}")
    data = bytes(data)
    if link == "eth":
        return _parse_roce(data, mtu)
    shortest = LRH.SIZE + BTH.SIZE + ICRC_BYTES + VCRC_BYTES
    if len(data) < shortest:
        raise PacketError("truncated", f"{len(data)} bytes, a packet has at least {shortest}")
    # the VCRC first: it covers every byte, so a packet damaged in transit is reported as such
    body = data[:-VCRC_BYTES]
    if vcrc_bytes(body) != data[-VCRC_BYTES:]:
        raise PacketError("VCRC", f"computed {vcrc_bytes(body).hex()}, "
                                  f"packet carries {data[-VCRC_BYTES:].hex()}")

    lver = data[0] & 0xF
    if lver != 0:
        raise PacketError("LRH LVer", f"{lver}, must be 0")
    lnh = data[1] & 0x3
    if lnh not in (LNH_LOCAL, LNH_GLOBAL):
        raise PacketError("LRH LNH", f"{lnh}: not an IBA transport packet (2 local, 3 global)")
    bth_at = LRH.SIZE + (GRH.SIZE if lnh == LNH_GLOBAL else 0)
    if len(body) < bth_at + BTH.SIZE + ICRC_BYTES:
        raise PacketError("truncated", f"{len(data)} bytes, too short for LNH={lnh}")
    pktlen = int.from_bytes(data[4:6], "big") & 0x7FF
    if 4 * pktlen != len(body):
        raise PacketError("LRH PktLen", f"{pktlen} words ({4 * pktlen} bytes), packet has "
                                        f"{len(body)} bytes from LRH through ICRC")
    covered = body[:-ICRC_BYTES]
    if icrc_bytes(covered) != body[-ICRC_BYTES:]:
        raise PacketError("ICRC", f"computed {icrc_bytes(covered).hex()}, "
                                  f"packet carries {body[-ICRC_BYTES:].hex()}")

    grh = None
    if lnh == LNH_GLOBAL:
        grh_bytes = data[LRH.SIZE:bth_at]
        if grh_bytes[0] >> 4 != GRH_IPVER:
            raise PacketError("GRH IPVer", f"{grh_bytes[0] >> 4}, must be {GRH_IPVER}")
        if grh_bytes[6] != GRH_NXTHDR:
            raise PacketError("GRH NxtHdr", f"{grh_bytes[6]:#04x}, must be {GRH_NXTHDR:#04x}")
        paylen = int.from_bytes(grh_bytes[4:6], "big")
        if paylen != len(body) - bth_at:
            raise PacketError("GRH PayLen", f"{paylen}, packet has {len(body) - bth_at} bytes "
                                            "from BTH through ICRC")
        grh = GRH.unpack(grh_bytes)
    return Packet(lrh=LRH.unpack(data), grh=grh,
                  **_parse_transport(covered, bth_at, mtu, OPCODES))


def _parse_roce(data, mtu):
    """A RoCE v2 frame's checks, in the order a receiver can make them: length, FCS,
    EtherType, IP version, IPv4 IHL, checksum and fragmentation, protocol, the IP length
    against the frame (bytes past the IP packet only as zero padding up to the 64-byte
    minimum), UDP destination port and length, ICRC, then the transport's as on InfiniBand."""
    if len(data) < ETH_MIN_FRAME:
        raise PacketError("truncated", f"{len(data)} bytes, a frame has at least {ETH_MIN_FRAME}")
    body = data[:-FCS_BYTES]
    if fcs_bytes(body) != data[-FCS_BYTES:]:
        raise PacketError("FCS", f"computed {fcs_bytes(body).hex()}, "
                                 f"frame carries {data[-FCS_BYTES:].hex()}")
    ethertype = int.from_bytes(body[12:14], "big")
    ethernet = dict(dmac=body[0:6], smac=body[6:12])
    ip_at = ETH_HEADER_BYTES
    if ethertype == ETHERTYPE_VLAN:
        tci = int.from_bytes(body[14:16], "big")            # DEI ignored
        ethernet.update(vlan=tci & 0xFFF, pcp=tci >> 13)
        ethertype = int.from_bytes(body[16:18], "big")
        ip_at += VLAN_TAG_BYTES
    version = {ETHERTYPE_IPV4: 4, ETHERTYPE_IPV6: 6}.get(ethertype)
    if version is None:
        raise PacketError("EtherType", f"{ethertype:#06x}, must be {ETHERTYPE_IPV4:#06x} (IPv4) "
                                       f"or {ETHERTYPE_IPV6:#06x} (IPv6)")
    if body[ip_at] >> 4 != version:
        raise PacketError("IP version", f"{body[ip_at] >> 4} under EtherType {ethertype:#06x}")
    if version == 4:
        ihl = body[ip_at] & 0xF
        if ihl != IPV4_HEADER_BYTES // 4:
            raise PacketError("IPv4 IHL", f"{ihl}, must be 5 (no options)")
        header = body[ip_at:ip_at + IPV4_HEADER_BYTES]
        checksum = ipv4_checksum(header)
        if checksum != int.from_bytes(header[10:12], "big"):
            raise PacketError("IPv4 checksum", f"computed {checksum:#06x}, "
                                               f"header carries {header[10:12].hex()}")
        fragment = int.from_bytes(header[6:8], "big")
        if fragment & IPV4_FRAGMENT:
            raise PacketError("IPv4 fragment", f"flags and offset {fragment:#06x}: "
                                               "RoCE v2 is not fragmented")
        protocol, ip_length = header[9], int.from_bytes(header[2:4], "big")
        network = dict(sgid=ipv4_gid(header[12:16]), dgid=ipv4_gid(header[16:20]),
                       hop_limit=header[8], tclass=header[1])
    else:
        header = body[ip_at:ip_at + IPV6_HEADER_BYTES]
        first_word = int.from_bytes(header[0:4], "big")
        protocol = header[6]
        ip_length = IPV6_HEADER_BYTES + int.from_bytes(header[4:6], "big")
        network = dict(sgid=header[8:24], dgid=header[24:40], hop_limit=header[7],
                       tclass=first_word >> 20 & 0xFF, flow_label=first_word & 0xFFFFF)
    if protocol != IP_PROTO_UDP:
        raise PacketError("IP protocol", f"{protocol}, must be {IP_PROTO_UDP} (UDP)")

    udp_at = ip_at + len(header)
    ip_end = ip_at + ip_length
    shortest = len(header) + UDP_HEADER_BYTES + BTH.SIZE + ICRC_BYTES
    if ip_length < shortest:
        raise PacketError("IP length", f"{ip_length} bytes, RoCE v2 needs at least {shortest}")
    if ip_end > len(body):
        raise PacketError("IP length", f"{ip_length} bytes, the frame holds {len(body) - ip_at}")
    if ip_end < len(body) and len(body) > ETH_MIN_FRAME - FCS_BYTES:
        raise PacketError("IP length", f"{ip_length} bytes, the frame holds {len(body) - ip_at}: "
                                       f"more than padding to {ETH_MIN_FRAME} bytes")
    if any(body[ip_end:]):
        raise PacketError("Ethernet padding", f"{body[ip_end:].hex()}, must be zero")
    udp = body[udp_at:udp_at + UDP_HEADER_BYTES]
    dport = int.from_bytes(udp[2:4], "big")
    if dport != ROCE_V2_UDP_PORT:
        raise PacketError("UDP port", f"destination {dport}, must be {ROCE_V2_UDP_PORT}")
    udp_length = int.from_bytes(udp[4:6], "big")
    if udp_length != ip_end - udp_at:
        raise PacketError("UDP length", f"{udp_length}, the IP packet carries {ip_end - udp_at} "
                                        "bytes from the UDP header on")
    if udp_length % 4:
        raise PacketError("UDP length", f"{udp_length}: BTH through ICRC must be whole 4-byte "
                                        "words, as on InfiniBand")
    covered = body[ip_at:ip_end - ICRC_BYTES]
    if roce_icrc_bytes(covered) != body[ip_end - ICRC_BYTES:ip_end]:
        raise PacketError("ICRC", f"computed {roce_icrc_bytes(covered).hex()}, "
                                  f"packet carries {body[ip_end - ICRC_BYTES:ip_end].hex()}")
    roce = RoCE(sport=int.from_bytes(udp[0:2], "big"), **ethernet, **network)
    return Packet(roce=roce, **_parse_transport(covered, udp_at - ip_at + UDP_HEADER_BYTES, mtu,
                                                ROCE_OPCODES))


def _parse_transport(covered, bth_at, mtu, opcodes):
    """The BTH, extension headers and payload of `covered` (a packet through its pad, the BTH
    at `bth_at`, an opcode of `opcodes`), checked as Packet keyword arguments."""
    bth_bytes = covered[bth_at:bth_at + BTH.SIZE]
    if bth_bytes[1] & 0xF != 0:
        raise PacketError("BTH TVer", f"{bth_bytes[1] & 0xF}, must be 0")
    op = opcodes.get(bth_bytes[0])
    if op is None:
        raise PacketError("BTH OpCode", f"{bth_bytes[0]:#04x} is not an opcode of the link")
    bth = BTH.unpack(bth_bytes)

    at = bth_at + BTH.SIZE
    extensions = {}
    for name in op.headers:
        cls = EXTENSION_HEADERS[name]
        if at + cls.SIZE > len(covered):
            raise PacketError("extension headers", f"{op.name} needs a {cls.__name__} "
                                                   f"({cls.SIZE} bytes), {len(covered) - at} left")
        extensions[name] = cls.unpack(covered[at:at + cls.SIZE])
        at += cls.SIZE

    padcnt = bth_bytes[1] >> 4 & 0x3
    carried = len(covered) - at       # payload and pad
    if padcnt and (not op.payload or op.position in (FIRST, MIDDLE)):
        raise PacketError("BTH PadCnt", f"{padcnt}: only last and only packets with payload "
                                        f"carry pad, not {op.name}")
    if padcnt > carried:
        raise PacketError("BTH PadCnt", f"{padcnt}, but only {carried} bytes follow the headers")
    payload = covered[at:len(covered) - padcnt]
    if any(covered[len(covered) - padcnt:]):
        raise PacketError("pad bytes", f"{covered[len(covered) - padcnt:].hex()}, must be zero")
    _check_payload_length(op, len(payload), mtu)
    return dict(bth=bth, payload=payload, **extensions)


def _check_payload_length(op, size, mtu):
    if not op.payload:
        rule, ok = "none", size == 0
    elif op.position in (FIRST, MIDDLE):
        rule = f"the path MTU ({mtu})" if mtu else f"a path MTU {VALID_MTUS}"
        ok = size == mtu if mtu else size in VALID_MTUS
    elif op.position == LAST:
        rule, ok = f"1 to {mtu or MAX_MTU}", 1 <= size <= (mtu or MAX_MTU)
    else:
        rule, ok = f"0 to {mtu or MAX_MTU}", size <= (mtu or MAX_MTU)
    if not ok:
        raise PacketError("payload length", f"{op.name} with {size} bytes, must carry {rule}")


# ---------------------------------------------------------------------------------------------
# Segmentation of a message into packets

@dataclass(frozen=True)
class Segment:
    """One packet of a message: its opcode, PSN and the slice of the message it carries."""
    opcode: int
    psn: int
    offset: int
    length: int
    ackreq: bool


SEGMENTED_OPERATIONS = ("SEND", "RDMA_WRITE", "RDMA_READ_RESPONSE", "ATOMIC_WRITE")

# (transport, operation, position, with immediate) -> opcode
_BY_ROLE = {(op.transport, op.operation, op.position, "immdt" in op.headers): op.code
            for op in OPCODES.values() if "ieth" not in op.headers}


ACKREQ_EVERY = 16   # the device's RC requests ask for an ACK at least this often (PSN mod 16 = 15)


def segment(transport, operation, length, mtu, psn, immediate=False, start=0):
    """The packets a packetizer sends for a message of `length` bytes: path-MTU first and
    middle packets, then a last packet of 1 to MTU bytes; or one only packet (also for an
    empty message). PSNs count up from `psn` (the first packet's) modulo 2^24. Immediate data
    rides on the last or only packet; RC requests ask for an ACK (AckReq) on it and on every
    packet whose PSN is ACKREQ_EVERY - 1 modulo ACKREQ_EVERY. A resend starts at packet index
    `start`: the packets before it are left out. A UD message must fit one packet.
    """
    if mtu not in VALID_MTUS:
        raise ValueError(f"path MTU {mtu} is not one of {VALID_MTUS}")
    if operation not in SEGMENTED_OPERATIONS:
        raise ValueError(f"{operation} is not sent as a message of packets")
    count = max(1, -(-length // mtu))
    if transport == "UD" and count > 1:
        raise ValueError(f"a UD message of {length} bytes does not fit a {mtu}-byte MTU")
    segments = []
    for index in range(start, count):
        if count == 1:
            position = ONLY
        else:
            position = FIRST if index == 0 else LAST if index == count - 1 else MIDDLE
        ends = position in (LAST, ONLY)
        code = _BY_ROLE.get((transport, operation, position, immediate and ends))
        if code is None:
            raise ValueError(f"{transport} has no {operation} {position} packet"
                             + (" with immediate" if immediate else ""))
        offset = index * mtu
        seg_psn = (psn + index) & PSN_MASK
        ackreq = (transport == "RC" and operation != "RDMA_READ_RESPONSE"
                  and (ends or seg_psn % ACKREQ_EVERY == ACKREQ_EVERY - 1))
        segments.append(Segment(code, seg_psn, offset,
                                min(mtu, length - offset), ackreq))
    return segments


def packetize(transport, operation, payload, mtu, *, lrh=None, dest_qp, psn, pkey=DEFAULT_PKEY,
              grh=None, roce=None, deth=None, reth=None, aeth=None, immdt=None, se=False,
              migreq=False, start=0):
    """The packets of one message from packet index `start` on (see `segment`), each
    addressed by `lrh` (and `grh`) on InfiniBand or by `roce` on RoCE v2, with the headers its
    opcode carries:
    `deth` on every UD packet, `reth` on the first or only RDMA WRITE packet, `aeth` on the
    first, last and only READ response packets, `immdt` (which makes the message one with
    immediate) and the solicited-event bit `se` on the last or only packet."""
    offered = {"deth": deth, "reth": reth, "aeth": aeth, "immdt": immdt}
    given = {name: header for name, header in offered.items() if header is not None}
    used = set()
    packets = []
    for seg in segment(transport, operation, len(payload), mtu, psn, immediate=immdt is not None,
                       start=start):
        op = OPCODES[seg.opcode]
        missing = [name for name in op.headers if name not in given]
        if missing:
            raise ValueError(f"{op.name} needs {', '.join(missing)}")
        used.update(op.headers)
        packets.append(Packet(
            lrh=lrh, grh=grh, roce=roce,
            bth=BTH(opcode=seg.opcode, dest_qp=dest_qp, psn=seg.psn, pkey=pkey,
                    se=se and op.position in (LAST, ONLY), migreq=migreq, ackreq=seg.ackreq),
            payload=bytes(payload[seg.offset:seg.offset + seg.length]),
            **{name: given[name] for name in op.headers}))
    unused = set(given) - used
    if unused and start == 0:   # a resend may skip the packet that carries them
        raise ValueError(f"{transport} {operation} carries no {', '.join(sorted(unused))}")
    return packets
