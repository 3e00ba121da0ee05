"""InfiniBand ICRC and VCRC, written from the IBTA rules (docs: ../reference in the brief),
and the RoCE v2 ICRC and Ethernet FCS.

ICRC: CRC-32 (zlib's: reflected 0xEDB88320, init and final XOR all-ones) over LRH through the
pad, with the fields a switch or router may change replaced by all-ones. VCRC: CRC-16 with the
reflected polynomial 0xD008 (0x100B), init and final XOR all-ones, over LRH through the ICRC.
Both go on the wire least-significant byte first.

RoCE v2 (IBTA Annex A17): the same ICRC over eight all-ones bytes standing for the LRH, then
the IP header, UDP header and BTH through the pad, with the fields a router may change (and the
UDP checksum) replaced by all-ones. The Ethernet FCS is zlib's CRC-32 of the frame, destination
MAC through the last padding byte, least-significant byte first.
"""

import zlib

# A published RC RDMA WRITE only packet (local, LNH=2), LRH through pad, and the ICRC it
# carries on the wire: the known answer every ICRC implementation here is checked against.
KAT_PACKET = bytes.fromhex(
    "7012375c000e17d20a2024870087b1b3000dec2a01710a1c015d400238f27a05"
    "0000000ebb884d85fd5cfba4728bc0690ed40000")
KAT_ICRC = bytes.fromhex("9625b75a")

# A RoCE v2 CNP captured on a ConnectX-4 Lx (published), IPv4 header through the pad, and the
# ICRC it carries: the known answer for the RoCE v2 ICRC. Its TOS, TTL, checksum and BTH
# Resv8a (BECN set) are all variant, so the mask is checked too.
KAT_ROCE_PACKET = bytes.fromhex(
    "45c2003c718c4000401191610a0011010a001201000012b700280000"
    "8100ffff4000011800000000" + "00" * 16)
KAT_ROCE_ICRC = bytes.fromhex("82fd002a")

LRH_BYTES = 8
GRH_BYTES = 40
LNH_GLOBAL = 3
UDP_BYTES = 8


def icrc_mask(packet):
    """The bytes the ICRC covers, variant fields set to ones. `packet` runs from LRH to the
    end of the pad (no ICRC, no VCRC)."""
    masked = bytearray(packet)
    if masked[1] & 0x3 == LNH_GLOBAL:
        masked[0:LRH_BYTES] = b"\xff" * LRH_BYTES
        masked[LRH_BYTES] |= 0x0F                          # GRH traffic class, low nibble
        masked[LRH_BYTES + 1:LRH_BYTES + 4] = b"\xff\xff\xff"  # traffic class, flow label
        masked[LRH_BYTES + 7] = 0xFF                       # hop limit
        bth = LRH_BYTES + GRH_BYTES
    else:
        masked[0] |= 0xF0                                  # VL
        bth = LRH_BYTES
    masked[bth + 4] = 0xFF                                 # BTH Resv8a
    return bytes(masked)


def icrc(packet):
    """The ICRC value of a packet from LRH to the end of the pad."""
    return zlib.crc32(icrc_mask(packet))


def icrc_bytes(packet):
    return icrc(packet).to_bytes(4, "little")


def roce_icrc_mask(ip_packet):
    """The bytes a RoCE v2 ICRC covers: eight all-ones bytes for the LRH, then `ip_packet`
    (IP header through the pad: no ICRC, no Ethernet padding) with its variant fields set to
    ones. IPv4: type of service, TTL and header checksum; IPv6: traffic class, flow label and
    hop limit; both: the UDP checksum and BTH Resv8a."""
    masked = bytearray(ip_packet)
    if masked[0] >> 4 == 4:
        masked[1] = 0xFF                                   # DSCP and ECN
        masked[8] = 0xFF                                   # TTL
        masked[10:12] = b"\xff\xff"                        # header checksum
        udp = 4 * (masked[0] & 0xF)
    else:
        masked[0] |= 0x0F                                  # traffic class, high nibble
        masked[1:4] = b"\xff\xff\xff"                      # traffic class, flow label
        masked[7] = 0xFF                                   # hop limit
        udp = GRH_BYTES
    masked[udp + 6:udp + 8] = b"\xff\xff"                  # UDP checksum
    masked[udp + UDP_BYTES + 4] = 0xFF                     # BTH Resv8a
    return b"\xff" * LRH_BYTES + bytes(masked)


def roce_icrc(ip_packet):
    """The ICRC value of a RoCE v2 packet from its IP header to the end of the pad."""
    return zlib.crc32(roce_icrc_mask(ip_packet))


def roce_icrc_bytes(ip_packet):
    return roce_icrc(ip_packet).to_bytes(4, "little")


def fcs_bytes(frame):
    """The Ethernet FCS of `frame` (destination MAC through the last padding byte), in wire
    order."""
    return zlib.crc32(frame).to_bytes(4, "little")


def _crc16_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xD008 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_VCRC_TABLE = _crc16_table()  # a byte at a time: sniffing megabytes stays cheap


def vcrc(data):
    """The VCRC value of LRH through ICRC."""
    crc = 0xFFFF
    for byte in data:
        crc = (crc >> 8) ^ _VCRC_TABLE[(crc ^ byte) & 0xFF]
    return crc ^ 0xFFFF


def vcrc_bytes(data):
    return vcrc(data).to_bytes(2, "little")
