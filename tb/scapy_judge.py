"""scapy as an independent judge of RoCE v2 frames: scapy's RoCE layer (scapy.contrib.roce)
reads a frame, checks its IPv4 checksum, and rebuilds it with its own IP and UDP lengths,
IPv4 checksum and ICRC; the rebuilt bytes must be the frame's. This shares no code with the
project's codec (tb/ib_packet.py), so a frame both accept is right by two readings of the
spec. The sniffer judges every Ethernet frame it captures this way.
"""

import zlib

from scapy.compat import raw
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Padding
from scapy.utils import checksum

FCS_BYTES = 4
ROCE_V2_PORT = 4791


def judge(frame, packet=None):
    """None when scapy reads `frame` (destination MAC .. FCS) as a sound RoCE v2 frame, and as
    `packet` (the codec's decoding, when given: its BTH fields), else what it disagrees on."""
    body = frame[:-FCS_BYTES]
    if zlib.crc32(body).to_bytes(4, "little") != frame[-FCS_BYTES:]:
        return "FCS wrong"
    decoded = Ether(body)
    if BTH not in decoded or UDP not in decoded:
        return f"not RoCE v2 to scapy: {decoded.summary()}"
    ip = decoded[IP] if IP in decoded else decoded[IPv6] if IPv6 in decoded else None
    if ip is None:
        return f"no IP header to scapy: {decoded.summary()}"
    ip_at = 18 if Dot1Q in decoded else 14      # (not from scapy's layers: each raw() rebuilds)
    if isinstance(ip, IP):
        if checksum(body[ip_at:ip_at + 20]) != 0:
            return f"IPv4 header checksum {ip.chksum:#06x} wrong"
        ip_end = ip_at + ip.len
        del ip.len, ip.chksum
    else:
        ip_end = ip_at + 40 + ip.plen
        del ip.plen
    udp = decoded[UDP]
    if udp.dport != ROCE_V2_PORT:
        return f"UDP destination port {udp.dport}"
    del udp.len
    bth = decoded[BTH]
    if packet is not None:
        mine = packet.bth
        want = (mine.opcode, mine.se, mine.migreq, -len(packet.payload) & 3, 0, mine.pkey,
                mine.fecn, mine.becn, mine.dest_qp, mine.ackreq, mine.psn)
        got = (bth.opcode, bth.solicited, bth.migreq, bth.padcount, bth.version, bth.pkey,
               bth.fecn, bth.becn, bth.dqpn, bth.ackreq, bth.psn)
        if tuple(map(int, got)) != want:
            return f"BTH (opcode .. PSN) {got} to scapy, {want} to the codec"
    if Padding in decoded:
        decoded[Padding].underlayer.remove_payload()
    rebuilt = raw(decoded)          # the ICRC as carried: scapy computes the rest
    if rebuilt != body[:ip_end]:
        at = next((i for i in range(min(len(rebuilt), ip_end)) if rebuilt[i] != body[i]),
                  min(len(rebuilt), ip_end))
        return (f"scapy rebuilds it differently from byte {at} on ({len(rebuilt)} bytes to "
                f"the ICRC's end, the frame has {ip_end}): IP or UDP length, or checksum")
    icrc = bth.compute_icrc(None)
    if icrc != body[ip_end - 4:ip_end]:
        return f"ICRC {body[ip_end - 4:ip_end].hex()}, scapy computes {icrc.hex()}"
    return None
