"""Known answers for the InfiniBand CRCs (no simulator)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tb"))
from ib_crc import icrc_bytes, vcrc  # noqa: E402

# A published RC RDMA WRITE only packet (local, LNH=2) and the ICRC it carries on the wire.
KAT_PACKET = bytes.fromhex(
    "7012375c000e17d20a2024870087b1b3000dec2a01710a1c015d400238f27a05"
    "0000000ebb884d85fd5cfba4728bc0690ed40000")
KAT_ICRC = bytes.fromhex("9625b75a")


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
