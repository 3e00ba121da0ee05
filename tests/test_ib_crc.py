"""Known answers for the InfiniBand CRCs (no simulator)."""

from tb.ib_crc import KAT_ICRC, KAT_PACKET, icrc_bytes, vcrc


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
