"""Known answers for the InfiniBand CRCs, the RoCE v2 ICRC and the Ethernet FCS (no
simulator)."""

import zlib

from tb.ib_crc import (KAT_ICRC, KAT_PACKET, KAT_ROCE_ICRC, KAT_ROCE_PACKET, fcs_bytes,
                       icrc_bytes, roce_icrc_bytes, vcrc)


def test_icrc_known_answer():
    assert icrc_bytes(KAT_PACKET) == KAT_ICRC


def test_icrc_ignores_variant_fields():
    """VL and BTH Resv8a may change in flight; the ICRC must not."""
    changed = bytearray(KAT_PACKET)
    changed[0] ^= 0x50
    changed[12] ^= 0xA5
    assert icrc_bytes(bytes(changed)) == KAT_ICRC


def test_icrc_covers_invariant_fields():
    changed = bytearray(KAT_PACKET)
    changed[2] ^= 0x01  # DLID
    assert icrc_bytes(bytes(changed)) != KAT_ICRC


def test_vcrc_check_value():
    assert vcrc(b"123456789") == 0x0A3D


def test_roce_icrc_known_answer():
    """A CNP a ConnectX-4 Lx sent, its TOS, TTL, checksum and BECN (BTH Resv8a) all set."""
    assert roce_icrc_bytes(KAT_ROCE_PACKET) == KAT_ROCE_ICRC


def test_roce_icrc_ignores_variant_fields():
    """IPv4 DSCP/ECN, TTL and header checksum, the UDP checksum and BTH Resv8a may change in
    flight; the ICRC must not."""
    for at in (1, 8, 10, 11, 26, 27, 32):
        changed = bytearray(KAT_ROCE_PACKET)
        changed[at] ^= 0x5A
        assert roce_icrc_bytes(bytes(changed)) == KAT_ROCE_ICRC, at


def test_roce_icrc_covers_invariant_fields():
    # version/IHL, length, identification, flags, protocol, addresses, UDP ports and length,
    # BTH opcode and DestQP, the padding
    for at in (0, 3, 5, 6, 9, 12, 19, 20, 23, 25, 28, 35, 50):
        changed = bytearray(KAT_ROCE_PACKET)
        changed[at] ^= 0x01
        assert roce_icrc_bytes(bytes(changed)) != KAT_ROCE_ICRC, at


def test_roce_icrc_ipv6_masks_traffic_class_flow_label_hop_limit():
    ipv6 = (bytes.fromhex("6abcdef5") + (32).to_bytes(2, "big") + b"\x11\x40" + bytes(range(32))
            + bytes.fromhex("c00012b700200000") + bytes.fromhex("04000001ff00001200000005")
            + b"payload!")
    masked_away = bytearray(ipv6)
    masked_away[0:4] = b"\x60\x00\x00\x00"        # traffic class and flow label
    masked_away[7] = 1                                # hop limit
    assert roce_icrc_bytes(bytes(masked_away)) == roce_icrc_bytes(ipv6)
    kept = bytearray(ipv6)
    kept[8] ^= 1                                      # source address
    assert roce_icrc_bytes(bytes(kept)) != roce_icrc_bytes(ipv6)


def test_fcs_goes_least_significant_byte_first():
    assert fcs_bytes(b"123456789") == (0xCBF43926).to_bytes(4, "little")   # CRC-32 check value
    # a receiver running the CRC over a frame and its FCS gets CRC-32's fixed residue
    frame = bytes(range(60))
    assert zlib.crc32(frame + fcs_bytes(frame)) == 0x2144DF1C
