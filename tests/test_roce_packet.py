"""RoCE v2 frames (IBTA Annex A17) in the packet codec (tb/ib_packet.py), the Ethernet pcap
(tb/pcap.py) and the sniffer's Ethernet decoding, no simulator.

Expected values come from the frame layout (Ethernet II, 802.1Q, IPv4, IPv6, UDP offsets), not
from the codec; scapy decodes and rebuilds every frame as an independent judge, frames scapy
builds must parse, and Wireshark decodes the pcap when tshark is installed.
"""

import ipaddress
import logging
import random
import shutil
import struct
import subprocess
import zlib
from dataclasses import replace

import pytest
from scapy.compat import raw
from scapy.contrib.roce import BTH as ScapyBTH
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Padding, Raw
from scapy.utils import checksum

from tb.ib_packet import (AETH, BTH, CNP_OPCODE, DETH, GRH, IETH, LRH, RETH, ROCE_OPCODES,
                          ROCE_V2_UDP_PORT, AtomicAckETH, AtomicETH, CNPReserved, ImmDt, Packet,
                          PacketError, RoCE, build, ipv4_gid, is_ipv4_mapped, packetize, parse,
                          seal_frame)
from tb.pcap import PcapWriter
from tb.scapy_judge import judge
from tb.sniffer import LinkSniffer

# Each extension header as a sample value and its bytes on the wire, from the spec's layouts.
SAMPLE_HEADERS = {
    "deth": (DETH(qkey=0x80010203, src_qp=0xABCDEF), "80010203" "00" "abcdef"),
    "reth": (RETH(va=0x0123456789ABCDEF, rkey=0xCAFEF00D, dma_len=0x12345),
             "0123456789abcdef" "cafef00d" "00012345"),
    "atomic_eth": (AtomicETH(va=0x1122334455667788, rkey=0x99AABBCC,
                             swap_add=0xDDEEFF0011223344, compare=0x5566778899AABBCC),
                   "1122334455667788" "99aabbcc" "ddeeff0011223344" "5566778899aabbcc"),
    "aeth": (AETH(syndrome=0x1F, msn=0x123456), "1f" "123456"),
    "atomic_ack_eth": (AtomicAckETH(orig_data=0xFEDCBA9876543210), "fedcba9876543210"),
    "immdt": (ImmDt(0xDEADBEEF), "deadbeef"),
    "ieth": (IETH(0x12345678), "12345678"),
    "cnp": (CNPReserved(), "00" * 16),
}

DMAC = bytes.fromhex("0c42a1000002")
SMAC = bytes.fromhex("0c42a1000001")
V4_SGID, V4_DGID = ipv4_gid("192.168.7.1"), ipv4_gid("192.168.7.2")
V6_SGID = bytes.fromhex("fe80000000000000020c42fffea10001")
V6_DGID = bytes.fromhex("20010db8000000000000000000000002")

ROCE = {
    "ipv4": RoCE(dmac=DMAC, smac=SMAC, sgid=V4_SGID, dgid=V4_DGID, hop_limit=64, sport=0xC0DE,
                 tclass=0x8A),
    "ipv4-vlan": RoCE(dmac=DMAC, smac=SMAC, sgid=V4_SGID, dgid=V4_DGID, hop_limit=16, sport=49152,
                      tclass=0x69, vlan=0x123, pcp=5),
    "ipv6": RoCE(dmac=DMAC, smac=SMAC, sgid=V6_SGID, dgid=V6_DGID, hop_limit=255, sport=0xFFFF,
                 tclass=0xA5, flow_label=0xFEDCB),
    "ipv6-vlan": RoCE(dmac=DMAC, smac=SMAC, sgid=V6_SGID, dgid=V6_DGID, hop_limit=1, sport=1,
                      tclass=0x03, flow_label=0x00001, vlan=4095, pcp=7),
}


def make_packet(code, payload, roce):
    """A RoCE v2 packet of opcode `code` with every field set to something recognisable."""
    return Packet(roce=roce, bth=BTH(opcode=code, dest_qp=0xABCDEF, psn=0x876543, pkey=0x8001,
                                     se=True, migreq=True, ackreq=True),
                  payload=bytes(payload),
                  **{name: SAMPLE_HEADERS[name][0] for name in ROCE_OPCODES[code].headers})


def payload_sizes(code):
    """Payload sizes valid for an opcode without a path MTU given: empty where allowed, pad 0
    to 3, and the largest MTU."""
    op = ROCE_OPCODES[code]
    if not op.payload:
        return [0]
    if op.position in ("first", "middle"):
        return [256, 4096]
    return ([] if op.position == "last" else [0]) + [1, 2, 3, 4, 5, 4096]


def every_packet(roce):
    return [make_packet(code, random.Random(size).randbytes(size), roce)
            for code in sorted(ROCE_OPCODES) for size in payload_sizes(code)]


def with_fcs(body):
    """`body` (destination MAC through padding) with its FCS, computed here from zlib."""
    return bytes(body) + zlib.crc32(bytes(body)).to_bytes(4, "little")


def ip_span(frame):
    """Where a frame's IP packet starts and ends, from its EtherType and IP length fields."""
    ip_at = 18 if frame[12:14] == b"\x81\x00" else 14
    if frame[ip_at] >> 4 == 4:
        return ip_at, ip_at + int.from_bytes(frame[ip_at + 2:ip_at + 4], "big")
    return ip_at, ip_at + 40 + int.from_bytes(frame[ip_at + 4:ip_at + 6], "big")


def resealed(frame, change, fix_checksum=True):
    """`frame` with `change` applied to destination MAC..pad (a bytearray), then the IPv4
    header checksum (computed by scapy; unless `fix_checksum` is false), ICRC, Ethernet padding
    and FCS made right again for the changed bytes."""
    ip_at, ip_end = ip_span(frame)
    body = bytearray(frame[:ip_end - 4])
    change(body)
    if fix_checksum:
        body[ip_at + 10:ip_at + 12] = bytes(2)
        body[ip_at + 10:ip_at + 12] = checksum(bytes(body[ip_at:ip_at + 20])).to_bytes(2, "big")
    return seal_frame(body[:ip_at], body[ip_at:])


def set_bytes(at, value):
    def change(body):
        body[at:at + len(value)] = value
    return change


def set_bits(at, mask, value):
    def change(body):
        body[at] = body[at] & ~mask | value
    return change


def check_failure(data, check, mtu=None):
    with pytest.raises(PacketError) as failure:
        parse(data, mtu=mtu, link="eth")
    assert failure.value.check == check, str(failure.value)


# ---------------------------------------------------------------------------------------------
# Round trips and the frame's layout

@pytest.mark.parametrize("variant", sorted(ROCE))
@pytest.mark.parametrize("code", sorted(ROCE_OPCODES), ids=lambda c: ROCE_OPCODES[c].name)
def test_round_trip(code, variant):
    roce = ROCE[variant]
    ipv4 = variant.startswith("ipv4")
    tag = 4 if "vlan" in variant else 0
    ip_at = 14 + tag
    ip_header = 20 if ipv4 else 40
    bth_at = ip_at + ip_header + 8
    for size in payload_sizes(code):
        packet = make_packet(code, random.Random(size).randbytes(size), roce)
        frame = build(packet)
        assert parse(frame, link="eth") == packet
        pad = -size & 3
        headers = 12 + sum(len(SAMPLE_HEADERS[h][1]) // 2 for h in ROCE_OPCODES[code].headers)
        ip_length = ip_header + 8 + headers + size + pad + 4
        assert len(frame) == max(ip_at + ip_length, 60) + 4
        assert frame[0:6] == DMAC and frame[6:12] == SMAC
        assert frame[ip_at - 2:ip_at] == (b"\x08\x00" if ipv4 else b"\x86\xdd")     # EtherType
        if tag:
            assert frame[12:14] == b"\x81\x00"
            assert int.from_bytes(frame[14:16], "big") == roce.pcp << 13 | roce.vlan    # TCI
        if ipv4:
            assert frame[ip_at] == 0x45                                     # version, IHL
            assert frame[ip_at + 1] == roce.tclass
            assert int.from_bytes(frame[ip_at + 2:ip_at + 4], "big") == ip_length
            assert frame[ip_at + 4:ip_at + 8] == b"\x00\x00\x40\x00"        # id 0, DF
            assert frame[ip_at + 8:ip_at + 10] == bytes([roce.hop_limit, 17])
            assert frame[ip_at + 12:ip_at + 20] == roce.sgid[12:] + roce.dgid[12:]
        else:
            assert int.from_bytes(frame[ip_at:ip_at + 4], "big") == (
                6 << 28 | roce.tclass << 20 | roce.flow_label)
            assert int.from_bytes(frame[ip_at + 4:ip_at + 6], "big") == ip_length - 40
            assert frame[ip_at + 6:ip_at + 8] == bytes([17, roce.hop_limit])
            assert frame[ip_at + 8:ip_at + 40] == roce.sgid + roce.dgid
        udp = frame[ip_at + ip_header:bth_at]
        assert struct.unpack(">HHHH", udp) == (roce.sport, 4791, ip_length - ip_header, 0)
        assert frame[bth_at] == code
        assert frame[bth_at + 1] >> 4 & 3 == pad                            # PadCnt
        ip_end = ip_at + ip_length
        assert frame[ip_end - 4 - pad:ip_end - 4] == bytes(pad)             # zero pad
        assert frame[ip_end:-4] == bytes(len(frame) - 4 - ip_end)           # Ethernet padding
        assert frame[-4:] == zlib.crc32(frame[:-4]).to_bytes(4, "little")   # FCS


def test_an_empty_send_over_untagged_ipv4_is_padded_to_64_bytes():
    frame = build(make_packet(0x04, b"", ROCE["ipv4"]))
    # 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 4 ICRC = 58, two bytes of padding, 4 FCS
    assert len(frame) == 64
    assert frame[58:60] == b"\x00\x00"
    assert int.from_bytes(frame[16:18], "big") == 44                # IPv4 total length
    assert int.from_bytes(frame[38:40], "big") == 24                # UDP length
    assert parse(frame, link="eth") == make_packet(0x04, b"", ROCE["ipv4"])
    # tagged, the same packet is 62 bytes before the FCS: no padding
    assert len(build(make_packet(0x04, b"", ROCE["ipv4-vlan"]))) == 66


def test_ipv4_mapped_gids():
    assert ipv4_gid("10.1.2.3") == bytes(10) + b"\xff\xff" + bytes([10, 1, 2, 3])
    assert ipv4_gid(bytes([10, 1, 2, 3])) == ipv4_gid(0x0A010203) == ipv4_gid("10.1.2.3")
    assert is_ipv4_mapped(ipv4_gid("0.0.0.0"))
    assert not is_ipv4_mapped(V6_SGID)
    assert not is_ipv4_mapped(bytes(10) + b"\xff\xfe" + bytes(4))
    assert not is_ipv4_mapped(bytes(11) + b"\xff" + bytes(4))
    assert ROCE["ipv4"].ipv4 and not ROCE["ipv6"].ipv4


def test_one_ipv4_mapped_gid_is_not_enough_for_ipv4():
    """IPv4 needs both ends IPv4-mapped; otherwise the mapped GID travels as an IPv6 address."""
    roce = RoCE(dmac=DMAC, smac=SMAC, sgid=V4_SGID, dgid=V6_DGID, hop_limit=9, sport=7)
    packet = make_packet(0x11, b"", roce)
    frame = build(packet)
    assert frame[12:14] == b"\x86\xdd" and frame[14] >> 4 == 6
    assert frame[22:38] == V4_SGID
    assert parse(frame, link="eth") == packet


def test_vlan_priority_tags_and_dei():
    """VID 0 (a priority tag) and 4095 round trip; a DEI bit set by a bridge is not part of
    the packet's fields."""
    for vid in (0, 1, 4095):
        packet = make_packet(0x64, b"ud", RoCE(dmac=DMAC, smac=SMAC, sgid=V4_SGID, dgid=V4_DGID,
                                                hop_limit=64, sport=2, vlan=vid, pcp=6))
        assert parse(build(packet), link="eth") == packet
    frame = build(packet)
    with_dei = with_fcs(frame[:14] + bytes([frame[14] | 0x10]) + frame[15:-4])
    assert parse(with_dei, link="eth") == packet


def test_packetize_over_roce():
    message = random.Random(3).randbytes(3 * 256 + 10)
    packets = packetize("RC", "RDMA_WRITE", message, 256, roce=ROCE["ipv6-vlan"], dest_qp=0x42,
                        psn=0xFFFFFE, reth=RETH(va=0x1000, rkey=0x77, dma_len=len(message)),
                        immdt=ImmDt(5))
    assert [p.op.name for p in packets] == [
        "RC_RDMA_WRITE_FIRST", "RC_RDMA_WRITE_MIDDLE", "RC_RDMA_WRITE_MIDDLE",
        "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE"]
    for packet in packets:
        assert packet.lrh is None and packet.grh is None and packet.roce == ROCE["ipv6-vlan"]
        assert parse(build(packet), mtu=256, link="eth") == packet
    assert b"".join(p.payload for p in packets) == message


def test_summary():
    assert make_packet(0x04, b"abc", ROCE["ipv4"]).summary() == (
        "RC_SEND_ONLY dip=192.168.7.2 qp=0xabcdef psn=0x876543 payload=3")
    assert make_packet(0x11, b"", ROCE["ipv6"]).summary() == (
        "RC_ACKNOWLEDGE dip=2001:db8::2 qp=0xabcdef psn=0x876543 payload=0")


def test_build_refuses_a_packet_with_no_link_or_two():
    bth = BTH(opcode=0x04, dest_qp=3, psn=0)
    with pytest.raises(ValueError):                               # neither LRH nor RoCE
        build(Packet(bth=bth))
    with pytest.raises(ValueError):                               # both
        build(Packet(lrh=LRH(1, 2), roce=ROCE["ipv4"], bth=bth))
    with pytest.raises(ValueError):                               # a GRH beside the IP header
        build(Packet(roce=ROCE["ipv6"], grh=GRH(sgid=V6_SGID, dgid=V6_DGID, hop_limit=1),
                     bth=bth))


UNSENDABLE = {
    "flow label on IPv4": dict(flow_label=1), "PCP untagged": dict(pcp=1),
    "VID": dict(vlan=4096), "PCP": dict(vlan=1, pcp=8), "MAC": dict(dmac=bytes(5)),
    "GID": dict(sgid=bytes(15)), "sport": dict(sport=1 << 16), "tclass": dict(tclass=256),
    "hop limit": dict(hop_limit=256), "IPv6 flow label": dict(sgid=V6_SGID, flow_label=1 << 20),
}


@pytest.mark.parametrize("fields", UNSENDABLE.values(), ids=UNSENDABLE)
def test_build_refuses_fields_that_do_not_fit(fields):
    with pytest.raises(ValueError):
        build(make_packet(0x04, b"", replace(ROCE["ipv4"], **fields)))


# ---------------------------------------------------------------------------------------------
# scapy as an independent judge

def scapy_layers(roce):
    """scapy's Ethernet [802.1Q] IP or IPv6 and UDP layers for `roce`, UDP checksum 0."""
    link = Ether(dst=roce.dmac.hex(":"), src=roce.smac.hex(":"))
    if roce.vlan is not None:
        link = link / Dot1Q(prio=roce.pcp, vlan=roce.vlan)
    if roce.ipv4:
        ip = IP(src=".".join(map(str, roce.sgid[12:])), dst=".".join(map(str, roce.dgid[12:])),
                tos=roce.tclass, ttl=roce.hop_limit, id=0, flags="DF")
    else:
        ip = IPv6(src=str(ipaddress.IPv6Address(roce.sgid)),
                  dst=str(ipaddress.IPv6Address(roce.dgid)), tc=roce.tclass, fl=roce.flow_label,
                  hlim=roce.hop_limit)
    return link / ip / UDP(sport=roce.sport, dport=ROCE_V2_UDP_PORT, chksum=0)


@pytest.mark.parametrize("variant", sorted(ROCE))
def test_scapy_decodes_every_frame(variant):
    """scapy reads our frames as RoCE v2 with our BTH fields and the right IP checksum (IPv4:
    DF, no fragment), and rebuilding each with its own IP and UDP lengths and IPv4 checksum
    gives our bytes back, its ICRC ours (tb/scapy_judge.py, which the sniffer runs on every
    Ethernet frame)."""
    for packet in every_packet(ROCE[variant]):
        frame = build(packet)
        assert judge(frame, packet) is None, (packet.op.name, judge(frame, packet))
        if variant.startswith("ipv4"):
            decoded = Ether(frame[:-4])
            assert decoded[IP].flags == "DF" and decoded[IP].frag == 0


def test_scapy_judge_catches_what_it_must():
    """The judge is not a rubber stamp: one bit wrong in the IPv4 checksum, the UDP length,
    the ICRC, a BTH field or the FCS, each with the other CRCs made right, and it says so."""
    packet = every_packet(ROCE["ipv4"])[0]
    frame = build(packet)
    start, end = ip_span(frame)
    for name, at in (("IPv4 checksum", start + 10), ("UDP length", start + 24),
                     ("ICRC", end - 1), ("BTH PSN", start + 28 + 11)):
        body = bytearray(frame[:-4])
        body[at] ^= 0x01
        assert judge(with_fcs(bytes(body)), packet) is not None, name
    assert judge(frame[:-1] + bytes([frame[-1] ^ 1]), packet) == "FCS wrong"


@pytest.mark.parametrize("variant", sorted(ROCE))
def test_frames_scapy_builds_parse(variant):
    """Frames scapy builds, its ICRC included (our padding and FCS added), parse into the
    packets they stand for."""
    roce = ROCE[variant]
    for code in sorted(ROCE_OPCODES):
        op = ROCE_OPCODES[code]
        size = 0 if not op.payload else 256 if op.position in ("first", "middle") else 7
        payload = random.Random(code).randbytes(size)
        pad = -size & 3
        headers = bytes.fromhex("".join(SAMPLE_HEADERS[h][1] for h in op.headers))
        frame = raw(scapy_layers(roce) / ScapyBTH(
            opcode=code, solicited=1, migreq=1, padcount=pad, pkey=0x8001, dqpn=0xABCDEF,
            ackreq=1, psn=0x876543) / Raw(headers + payload + bytes(pad)))
        frame += bytes(max(0, 60 - len(frame)))
        assert parse(with_fcs(frame), link="eth") == make_packet(code, payload, roce), op.name


# ---------------------------------------------------------------------------------------------
# Every check of parse can fail

V4 = build(make_packet(0x04, b"hello", ROCE["ipv4"]))         # 70 bytes, 3 pad bytes
V6T = build(make_packet(0x04, b"hello!!!", ROCE["ipv6-vlan"]))
PADDED = build(make_packet(0x04, b"", ROCE["ipv4"]))          # 58 bytes + 2 padding + FCS
V4_BTH = 14 + 20 + 8
V6T_BTH = 18 + 40 + 8


def v4_length_plus(delta):
    return lambda body: set_bytes(16, (int.from_bytes(body[16:18], "big") + delta)
                                  .to_bytes(2, "big"))(body)


def v6_length_plus(delta):
    return lambda body: set_bytes(22, (int.from_bytes(body[22:24], "big") + delta)
                                  .to_bytes(2, "big"))(body)


def udp_length_plus(delta, at):
    return lambda body: set_bytes(at, (int.from_bytes(body[at:at + 2], "big") + delta)
                                  .to_bytes(2, "big"))(body)


CORRUPTIONS = {
    "truncated": [V4[:63], V4[:20], b"", PADDED[:-1]],
    "FCS": [V4[:-1] + bytes([V4[-1] ^ 1]),
            V4[:50] + bytes([V4[50] ^ 0x40]) + V4[51:],
            V6T[:-4]],                                           # a frame without its FCS
    "EtherType": [with_fcs(V4[:12] + code + V4[14:-4])
                  for code in (b"\x08\x06", b"\x89\x15", b"\x88\xa8", b"\x00\x00")]
                 + [with_fcs(V6T[:16] + b"\x81\x00" + V6T[18:-4])],     # two tags
    "IP version": [with_fcs(V4[:14] + bytes([0x65]) + V4[15:-4]),
                   with_fcs(V4[:12] + b"\x86\xdd" + V4[14:-4]),           # IPv4 as IPv6
                   with_fcs(V6T[:18] + bytes([0x40 | V6T[18] & 0xF]) + V6T[19:-4])],
    "IPv4 IHL": [resealed(V4, set_bits(14, 0x0F, ihl)) for ihl in (0, 4, 6)],
    "IPv4 checksum": [resealed(V4, set_bytes(22, b"\x05"), fix_checksum=False),   # TTL
                      resealed(V4, set_bytes(24, bytes([V4[24] ^ 1, V4[25]])),
                               fix_checksum=False)],
    "IPv4 fragment": [resealed(V4, set_bytes(20, flags))
                      for flags in (b"\x60\x00", b"\x20\x00", b"\x40\x01", b"\x1f\xff")],
    "IP protocol": [resealed(V4, set_bytes(23, b"\x06")),
                    resealed(V6T, set_bytes(24, b"\x3a")), resealed(V6T, set_bytes(24, b"\x00"))],
    "IP length": [resealed(V4, v4_length_plus(-4)), resealed(V4, v4_length_plus(4)),
                  resealed(V4, set_bytes(16, (43).to_bytes(2, "big"))),  # too short for RoCE
                  resealed(V6T, v6_length_plus(-4)), resealed(V6T, v6_length_plus(1)),
                  # bytes after the IP packet that are not padding to the minimum
                  with_fcs(PADDED[:-4] + bytes(1)), with_fcs(V4[:-4] + bytes(2))],
    "Ethernet padding": [with_fcs(PADDED[:-6] + b"\x00\x01"),
                         with_fcs(PADDED[:-6] + b"\x80\x00")],
    "UDP port": [resealed(V4, set_bytes(36, port.to_bytes(2, "big"))) for port in (4792, 4789, 0)]
                + [resealed(V6T, set_bytes(60, b"\x00\x00"))],
    "UDP length": [resealed(V4, udp_length_plus(delta, 38)) for delta in (-4, 4, -28)]
                  + [resealed(V6T, udp_length_plus(1, 62)),
                     # one byte more, the IP and UDP lengths agreeing: not whole words
                     resealed(V4, lambda body: (body.append(0), v4_length_plus(1)(body),
                                                udp_length_plus(1, 38)(body)))],
    "ICRC": [with_fcs(V4[:62] + bytes([V4[62] ^ 1]) + V4[63:-4]),    # the ICRC itself
             with_fcs(V4[:V4_BTH + 12] + b"J" + V4[V4_BTH + 13:-4]),  # payload
             with_fcs(V4[:34] + b"\x12\x34" + V4[36:-4]),               # UDP source port
             with_fcs(V4[:V4_BTH + 5] + b"\x00\x00\x01" + V4[V4_BTH + 8:-4]),  # DestQP
             with_fcs(V6T[:30] + bytes([V6T[30] ^ 1]) + V6T[31:-4])],     # IPv6 source
    "BTH TVer": [resealed(V4, set_bits(V4_BTH + 1, 0x0F, 1)),
                 resealed(V6T, set_bits(V6T_BTH + 1, 0x0F, 8))],
    "BTH OpCode": [resealed(V4, set_bytes(V4_BTH, bytes([code]))) for code in (0x15, 0x80, 0xFF)],
    "extension headers": [resealed(V4, set_bytes(V4_BTH, b"\x0a"))],  # no room for a RETH
    "BTH PadCnt": [resealed(PADDED, set_bits(V4_BTH + 1, 0x30, 0x10))],
    "pad bytes": [resealed(V4, set_bytes(V4_BTH + 12 + 5, b"\x00\x01"))],
    "payload length": [build(make_packet(0x00, bytes(100), ROCE["ipv6"])),   # first, not an MTU
                       build(make_packet(0x02, b"", ROCE["ipv4-vlan"]))],     # last, empty
}


@pytest.mark.parametrize("check", sorted(CORRUPTIONS))
def test_parse_check_fails(check):
    for data in CORRUPTIONS[check]:
        check_failure(data, check)


def test_payload_length_against_path_mtu():
    check_failure(build(make_packet(0x01, bytes(512), ROCE["ipv4"])), "payload length", mtu=256)
    assert parse(build(make_packet(0x01, bytes(512), ROCE["ipv4"])), mtu=512, link="eth")


def test_variant_fields_may_change_in_flight():
    """A router may rewrite the DSCP/ECN byte and TTL (and the IPv4 checksum with them), the
    IPv6 traffic class, flow label and hop limit, the UDP checksum and BTH Resv8a: the ICRC
    still holds, and the packet reads with the new values."""
    v4 = bytearray(V4[:-4])
    v4[15], v4[22] = 0x03, 1                                # ECN CE, TTL 1
    v4[24:26] = bytes(2)
    v4[24:26] = checksum(bytes(v4[14:34])).to_bytes(2, "big")
    v4[40:42] = b"\xbe\xef"                                 # UDP checksum
    v4[V4_BTH + 4] = 0xC0                                   # BTH Resv8a (FECN, BECN)
    packet = parse(with_fcs(v4), link="eth")
    assert (packet.roce.tclass, packet.roce.hop_limit) == (0x03, 1)
    assert packet.bth == replace(make_packet(0x04, b"hello", ROCE["ipv4"]).bth, fecn=True,
                                 becn=True)

    v6 = bytearray(V6T[:-4])
    v6[18:22] = (6 << 28 | 0x12 << 20 | 0x54321).to_bytes(4, "big")
    v6[25] = 2
    v6[64:66] = b"\x12\x34"
    packet = parse(with_fcs(v6), link="eth")
    assert (packet.roce.tclass, packet.roce.flow_label, packet.roce.hop_limit) == (0x12, 0x54321, 2)


def test_any_truncation_or_bit_error_is_an_fcs_or_length_failure():
    for frame in (V4, V6T, PADDED):
        for cut in range(len(frame)):
            with pytest.raises(PacketError) as failure:
                parse(frame[:cut], link="eth")
            assert failure.value.check in ("truncated", "FCS")
        for bit in range(8 * len(frame)):
            damaged = bytearray(frame)
            damaged[bit // 8] ^= 1 << bit % 8
            check_failure(damaged, "FCS")


def test_no_damage_escapes_as_another_exception():
    """Any byte changed with the FCS made right again is a PacketError or a packet (a MAC, the
    identification, a variant field): never another exception (the sniffer relies on it)."""
    for frame in (V4, V6T, PADDED):
        for at in range(len(frame) - 4):
            for flip in (0x01, 0x0F, 0x80, 0xFF):
                damaged = bytearray(frame[:-4])
                damaged[at] ^= flip
                try:
                    parse(with_fcs(damaged), link="eth")
                except PacketError:
                    pass


def test_parse_refuses_an_unknown_link():
    with pytest.raises(ValueError):
        parse(V4, link="ethernet")


# ---------------------------------------------------------------------------------------------
# Ethernet pcap, the sniffer, Wireshark

def test_ethernet_pcap_layout(tmp_path):
    frames = [V4, PADDED, V6T]
    path = tmp_path / "eth.pcap"
    with PcapWriter(path, link="eth") as pcap:
        for index, frame in enumerate(frames):
            pcap.write(frame, time_ns=1_000_000_007 * index)
    data = path.read_bytes()
    magic, major, minor, zone, sigfigs, snaplen, linktype = struct.unpack_from("<IHHiIII", data)
    assert (magic, major, minor, zone, sigfigs, linktype) == (0xA1B23C4D, 2, 4, 0, 0, 1)
    assert snaplen >= 9018                                  # a jumbo frame with a tag
    at = 24
    for index, frame in enumerate(frames):
        seconds, nanoseconds, captured, original = struct.unpack_from("<IIII", data, at)
        assert (seconds, nanoseconds) == divmod(1_000_000_007 * index, 10**9)
        assert captured == original == len(frame) - 4
        assert data[at + 16:at + 16 + captured] == frame[:-4]   # no FCS
        at += 16 + captured
    assert at == len(data)


def sniffer_without_a_simulator(link):
    """A LinkSniffer's decoding and pcap writing, without the bus it watches in simulation."""
    sniffer = object.__new__(LinkSniffer)
    sniffer.mtu, sniffer.interface, sniffer.link = None, 0, link
    sniffer.log = logging.getLogger("test.sniffer")
    return sniffer


def test_sniffer_decodes_and_writes_ethernet(tmp_path):
    sniffer = sniffer_without_a_simulator("eth")
    sniffer.captures = [sniffer._capture(10, V4, None, aborted=False),
                        sniffer._capture(20, V4[:-1] + bytes([V4[-1] ^ 1]), None, aborted=False)]
    assert sniffer.captures[0].packet == make_packet(0x04, b"hello", ROCE["ipv4"])
    assert sniffer.captures[1].packet is None
    assert sniffer.captures[1].error.startswith("FCS:")
    sniffer.write_pcap(tmp_path / "eth.pcap")
    data = (tmp_path / "eth.pcap").read_bytes()
    assert struct.unpack_from("<I", data, 20)[0] == 1                       # LINKTYPE_ETHERNET
    assert data[24 + 16:24 + 16 + len(V4) - 4] == V4[:-4]
    # the same sniffer on InfiniBand reads the frame as a broken IB packet, as before
    assert sniffer_without_a_simulator("ib")._capture(10, V4, None, aborted=False).error
    with pytest.raises(ValueError):
        LinkSniffer(None, None, None, link="roce")


TSHARK = shutil.which("tshark")


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed (Debian: apt-get install "
                                            "tshark): Wireshark's decoding is not checked")
def test_wireshark_decodes_every_opcode_as_roce_v2(tmp_path):
    # one packet of each opcode over each variant; 5 payload bytes (3 pad) where it may, and an
    # empty SEND that needs Ethernet padding
    def size(code):
        op = ROCE_OPCODES[code]
        return 0 if not op.payload else 256 if op.position in ("first", "middle") else 5

    packets = [make_packet(code, bytes(i & 0xFF for i in range(size(code))), ROCE[variant])
               for code in sorted(ROCE_OPCODES) for variant in sorted(ROCE)]
    packets.append(make_packet(0x04, b"", ROCE["ipv4"]))
    path = tmp_path / "roce.pcap"
    with PcapWriter(path, link="eth") as pcap:
        for index, packet in enumerate(packets):
            pcap.write(build(packet), time_ns=4 * index)
    fields = ["frame.protocols", "ip.checksum.status", "udp.dstport", "udp.length",
              "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
              "infiniband.bth.padcnt", "infiniband.invariant.crc", "eth.padding",
              "_ws.expert.message"]
    result = subprocess.run(
        [TSHARK, "-r", str(path), "--disable-protocol", "rpcordma", "-o", "ip.check_checksum:TRUE",
         "-T", "fields"] + [arg for field in fields for arg in ("-e", field)],
        capture_output=True, text=True, timeout=120, check=True)
    lines = result.stdout.splitlines()
    assert len(lines) == len(packets)
    for line, packet in zip(lines, packets):
        frame = build(packet)
        (protocols, ip_checksum, dport, udp_length, opcode, destqp, psn, padcnt, icrc, padding,
         expert) = line.split("\t")
        name = packet.op.name
        layers = protocols.split(":")
        # the payload, if any, as "data"
        assert layers[layers.index("udp"):] in (["udp", "infiniband"],
                                                ["udp", "infiniband", "data"]), (name, protocols)
        assert ("ip" in layers) == packet.roce.ipv4
        assert ("vlan" in layers) == (packet.roce.vlan is not None)
        assert ip_checksum == ("1" if packet.roce.ipv4 else ""), name       # 1: good
        # IPv6 forbids a zero UDP checksum (RFC 8200) but RoCE v2 sends zero; nothing else
        assert expert == ("" if packet.roce.ipv4 else "Illegal checksum value (0)"), (name, expert)
        assert int(dport) == 4791
        ip_at, ip_end = ip_span(frame)
        assert int(udp_length) == ip_end - ip_at - (20 if packet.roce.ipv4 else 40)
        assert int(opcode) == packet.bth.opcode
        assert int(destqp, 0) == packet.bth.dest_qp
        assert int(psn) == packet.bth.psn
        assert int(padcnt) == -len(packet.payload) & 3
        # Wireshark 4.0 knows neither ATOMIC WRITE (IBTA 1.5) nor the CNP: it stops after
        # their BTH
        if icrc or packet.bth.opcode not in (0x1D, CNP_OPCODE):
            assert int(icrc, 0).to_bytes(4, "big") == frame[ip_end - 4:ip_end], name
        assert bytes.fromhex(padding) == bytes(len(frame) - 4 - ip_end), name
