"""The InfiniBand packet codec (tb/ib_packet.py) and the pcap writer (tb/pcap.py), no simulator.

Expected values come from the IBTA wire format as written here (header sizes, opcode table,
a published packet), not from the codec, and Wireshark decodes the pcap when it is installed.
"""

import math
import random
import shutil
import struct
import subprocess
from fractions import Fraction

import pytest

from tb.ib_crc import vcrc_bytes
from tb.ib_packet import (AETH, BTH, DETH, GRH, IETH, LRH, OPCODES, OPCODES_BY_NAME, RETH,
                          VALID_MTUS, AtomicAckETH, AtomicETH, ImmDt, Packet, PacketError, build,
                          packetize, parse, seal, segment)
from tb.pcap import PcapWriter, erf_timestamp

# Extension header sizes in bytes, from the spec.
HEADER_BYTES = {"deth": 8, "reth": 16, "atomic_eth": 28, "aeth": 4, "atomic_ack_eth": 8,
                "immdt": 4, "ieth": 4}

# Extension headers per low five opcode bits, from the spec's opcode table.
SPEC_HEADERS = {
    0x03: ("immdt",), 0x05: ("immdt",), 0x06: ("reth",), 0x09: ("immdt",), 0x0A: ("reth",),
    0x0B: ("reth", "immdt"), 0x0C: ("reth",), 0x0D: ("aeth",), 0x0F: ("aeth",),
    0x10: ("aeth",), 0x11: ("aeth",), 0x12: ("aeth", "atomic_ack_eth"),
    0x13: ("atomic_eth",), 0x14: ("atomic_eth",), 0x16: ("ieth",), 0x17: ("ieth",),
    0x1D: ("reth",),            # ATOMIC WRITE (IBTA 1.5): a RETH and 8 bytes of payload
}
NO_PAYLOAD = {0x0C, 0x11, 0x12, 0x13, 0x14}   # READ request, ACK, atomics

SAMPLE_HEADERS = {
    "deth": DETH(qkey=0x80010203, src_qp=0xABCDEF),
    "reth": RETH(va=0x0123456789ABCDEF, rkey=0xCAFEF00D, dma_len=0x12345),
    "atomic_eth": AtomicETH(va=0x1122334455667788, rkey=0x99AABBCC, swap_add=0xDDEEFF0011223344,
                            compare=0x5566778899AABBCC),
    "aeth": AETH(syndrome=0x1F, msn=0x123456),
    "atomic_ack_eth": AtomicAckETH(orig_data=0xFEDCBA9876543210),
    "immdt": ImmDt(0xDEADBEEF),
    "ieth": IETH(0x12345678),
}
SAMPLE_GRH = GRH(sgid=bytes.fromhex("fe800000000000000000000000000001"),
                 dgid=bytes.fromhex("fe800000000000000000000000000002"),
                 hop_limit=64, tclass=0xA5, flow_label=0xFEDCB)

# A published RC RDMA WRITE only packet (local), LRH through pad, and its ICRC.
KAT_BODY = bytes.fromhex(
    "7012375c000e17d20a2024870087b1b3000dec2a01710a1c015d400238f27a05"
    "0000000ebb884d85fd5cfba4728bc0690ed40000")
KAT_ICRC = bytes.fromhex("9625b75a")


def make_packet(code, payload=b"", grh=None):
    """A packet of opcode `code` with every field set to something recognisable."""
    return Packet(lrh=LRH(dlid=0x1234, slid=0x5678, vl=3, sl=9),
                  bth=BTH(opcode=code, dest_qp=0xABCDEF, psn=0x876543, pkey=0x8001, se=True,
                          migreq=True, ackreq=True),
                  grh=grh, payload=bytes(payload),
                  **{name: SAMPLE_HEADERS[name] for name in OPCODES[code].headers})


def payload_sizes(code):
    """Payload sizes valid for an opcode without a path MTU given, covering pad 0 to 3."""
    op = OPCODES[code]
    if not op.payload:
        return [0]
    if op.position in ("first", "middle"):
        return [256, 4096]
    return ([] if op.position == "last" else [0]) + [1, 2, 3, 4, 5, 4096]


def check_failure(data, check, mtu=None):
    with pytest.raises(PacketError) as failure:
        parse(data, mtu=mtu)
    assert failure.value.check == check, str(failure.value)


def resealed(wire, change):
    """`wire` with `change` applied to LRH..pad, both CRCs recomputed."""
    body = bytearray(wire[:-6])
    change(body)
    return seal(bytes(body))


# ---------------------------------------------------------------------------------------------
# Opcode table and round trips

def test_opcode_table_matches_spec():
    expected = ({code for code in range(0x00, 0x15)} | {0x16, 0x17, 0x1D}
                | {0x20 | low for low in range(0x0C)} | {0x64, 0x65})
    assert set(OPCODES) == expected
    for code, op in OPCODES.items():
        low = code & 0x1F
        extra = ("deth",) if op.transport == "UD" else ()
        assert op.headers == extra + SPEC_HEADERS.get(low, ()), op.name
        assert op.payload == (low not in NO_PAYLOAD), op.name
        assert op.transport == {0x00: "RC", 0x20: "UC", 0x60: "UD"}[code & 0xE0]
    # names as Linux's ib_pack.h spells them
    for name, code in (("RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 0x0B), ("UC_SEND_LAST", 0x22),
                       ("RC_ATOMIC_ACKNOWLEDGE", 0x12), ("UD_SEND_ONLY_WITH_IMMEDIATE", 0x65),
                       ("RC_SEND_ONLY_WITH_INVALIDATE", 0x17), ("RC_ATOMIC_WRITE", 0x1D)):
        assert OPCODES_BY_NAME[name].code == code


def test_published_packet():
    wire = KAT_BODY + KAT_ICRC + vcrc_bytes(KAT_BODY + KAT_ICRC)
    packet = parse(wire)
    assert packet.op.name == "RC_RDMA_WRITE_ONLY"
    assert packet.lrh == LRH(dlid=0x375C, slid=0x17D2, vl=7, sl=1)
    assert packet.bth == BTH(opcode=0x0A, dest_qp=0x87B1B3, psn=0x0DEC2A, pkey=0x2487)
    assert packet.reth == RETH(va=0x01710A1C015D4002, rkey=0x38F27A05, dma_len=14)
    assert packet.payload == bytes.fromhex("bb884d85fd5cfba4728bc0690ed4")
    assert build(packet) == wire


@pytest.mark.parametrize("grh", [None, SAMPLE_GRH], ids=["local", "global"])
@pytest.mark.parametrize("code", sorted(OPCODES), ids=lambda c: OPCODES[c].name)
def test_round_trip(code, grh):
    for size in payload_sizes(code):
        packet = make_packet(code, random.Random(size).randbytes(size), grh)
        wire = build(packet)
        assert parse(wire) == packet
        pad = -size & 3
        headers = 8 + (40 if grh else 0) + 12 + sum(HEADER_BYTES[h] for h in OPCODES[code].headers)
        assert len(wire) == headers + size + pad + 4 + 2
        assert wire[1] & 3 == (3 if grh else 2)                              # LNH
        assert int.from_bytes(wire[4:6], "big") == (len(wire) - 2) // 4      # PktLen
        bth = 48 if grh else 8
        assert wire[bth + 1] >> 4 & 3 == pad                                 # PadCnt
        assert wire[-6 - pad:-6] == bytes(pad)                               # zero pad
        if grh:
            assert int.from_bytes(wire[12:14], "big") == len(wire) - 2 - 48  # PayLen
            assert wire[8] >> 4 == 6 and wire[14] == 0x1B                    # IPVer, NxtHdr


# ---------------------------------------------------------------------------------------------
# Segmentation into path-MTU packets

MESSAGE_KINDS = [
    ("RC", "SEND", False), ("RC", "SEND", True), ("RC", "RDMA_WRITE", False),
    ("RC", "RDMA_WRITE", True), ("RC", "RDMA_READ_RESPONSE", False),
    ("UC", "SEND", False), ("UC", "SEND", True), ("UC", "RDMA_WRITE", False),
    ("UC", "RDMA_WRITE", True), ("UD", "SEND", False), ("UD", "SEND", True),
]


def message_packets(transport, operation, immediate, payload, mtu, psn):
    return packetize(
        transport, operation, payload, mtu, lrh=LRH(dlid=0x10, slid=0x20), dest_qp=0x42, psn=psn,
        grh=SAMPLE_GRH if transport == "UD" else None,
        deth=SAMPLE_HEADERS["deth"] if transport == "UD" else None,
        reth=RETH(va=0x1000, rkey=0x77, dma_len=len(payload)) if operation == "RDMA_WRITE"
        else None,
        aeth=SAMPLE_HEADERS["aeth"] if operation == "RDMA_READ_RESPONSE" else None,
        immdt=SAMPLE_HEADERS["immdt"] if immediate else None, se=True)


@pytest.mark.parametrize("mtu", VALID_MTUS)
@pytest.mark.parametrize("length_in_mtus", ["0", "1", "mtu-1", "mtu", "mtu+1", "3mtu", "5mtu+7"])
def test_segmentation(mtu, length_in_mtus):
    length = {"0": 0, "1": 1, "mtu-1": mtu - 1, "mtu": mtu, "mtu+1": mtu + 1, "3mtu": 3 * mtu,
              "5mtu+7": 5 * mtu + 7}[length_in_mtus]
    message = random.Random(length).randbytes(length)
    count = max(1, math.ceil(length / mtu))
    first_psn = 0xFFFFFE   # wraps from the third packet on
    for transport, operation, immediate in MESSAGE_KINDS:
        kind = f"{transport} {operation}{' imm' if immediate else ''}"
        if transport == "UD" and count > 1:
            with pytest.raises(ValueError):
                segment(transport, operation, length, mtu, first_psn)
            continue
        packets = message_packets(transport, operation, immediate, message, mtu, first_psn)
        assert len(packets) == count, kind
        received = b""
        for index, packet in enumerate(packets):
            assert parse(build(packet), mtu=mtu) == packet, kind
            op = packet.op
            position = ("only" if count == 1 else "first" if index == 0
                        else "last" if index == count - 1 else "middle")
            ends = position in ("last", "only")
            assert (op.transport, op.operation, op.position) == (transport, operation, position)
            assert packet.bth.psn == (first_psn + index) % 2**24, kind
            # RC requests ask for an ACK on their last packet and every 16 PSNs
            assert packet.bth.ackreq == (transport == "RC" and operation != "RDMA_READ_RESPONSE"
                                         and (ends or packet.bth.psn % 16 == 15)), kind
            assert packet.bth.se == ends, kind
            assert (packet.immdt is not None) == (immediate and ends), kind
            assert (packet.reth is not None) == (operation == "RDMA_WRITE"
                                                 and position in ("first", "only")), kind
            assert (packet.aeth is not None) == (operation == "RDMA_READ_RESPONSE"
                                                 and position != "middle"), kind
            assert (packet.deth is not None) == (transport == "UD"), kind
            if not ends:
                assert len(packet.payload) == mtu, kind
            received += packet.payload
        assert received == message, kind


def test_a_resend_starts_inside_the_message():
    """A go-back-N resend from packet index `start` is the message's own packets from there
    on: same opcodes, PSNs, AckReq and payload; the RETH of the first packet is not needed."""
    message = random.Random(7).randbytes(5 * 256 + 9)
    whole = message_packets("RC", "RDMA_WRITE", True, message, 256, 0xFFFFFD)
    for start in range(1, len(whole)):
        resent = packetize("RC", "RDMA_WRITE", message, 256, lrh=LRH(dlid=0x10, slid=0x20),
                           dest_qp=0x42, psn=0xFFFFFD, reth=whole[0].reth,
                           immdt=SAMPLE_HEADERS["immdt"], se=True, start=start)
        assert resent == whole[start:], start


def test_segmentation_refuses():
    with pytest.raises(ValueError):
        segment("RC", "SEND", 100, 1000, 0)                       # not a path MTU
    with pytest.raises(ValueError):
        segment("UC", "RDMA_READ_RESPONSE", 100, 256, 0)          # UC has no READ
    with pytest.raises(ValueError):
        segment("RC", "RDMA_READ_RESPONSE", 100, 256, 0, immediate=True)
    with pytest.raises(ValueError):
        segment("RC", "ACKNOWLEDGE", 0, 256, 0)                   # not a message of packets
    with pytest.raises(ValueError):                               # a WRITE needs its RETH
        packetize("RC", "RDMA_WRITE", b"x", 256, lrh=LRH(1, 2), dest_qp=3, psn=0)
    with pytest.raises(ValueError):                               # a SEND carries none
        packetize("RC", "SEND", b"x", 256, lrh=LRH(1, 2), dest_qp=3, psn=0,
                  reth=SAMPLE_HEADERS["reth"])


def test_build_refuses():
    with pytest.raises(ValueError):
        build(Packet(lrh=LRH(1, 2), bth=BTH(opcode=0x15, dest_qp=3, psn=0)))
    with pytest.raises(ValueError):                               # RETH missing
        build(Packet(lrh=LRH(1, 2), bth=BTH(opcode=0x0A, dest_qp=3, psn=0)))
    with pytest.raises(ValueError):                               # a SEND has no AETH
        build(Packet(lrh=LRH(1, 2), bth=BTH(opcode=0x04, dest_qp=3, psn=0),
                     aeth=SAMPLE_HEADERS["aeth"]))
    with pytest.raises(ValueError):                               # an ACK has no payload
        build(make_packet(0x11, b"data"))
    with pytest.raises(ValueError):                               # PSN is 24 bits
        build(Packet(lrh=LRH(1, 2), bth=BTH(opcode=0x04, dest_qp=3, psn=1 << 24)))
    with pytest.raises(ValueError):                               # PktLen is 11 bits
        build(make_packet(0x04, bytes(8192)))


# ---------------------------------------------------------------------------------------------
# Every check of parse can fail

SEND_ONLY = build(make_packet(0x04, b"hello"))            # RC SEND only, local, 3 pad bytes
GLOBAL_SEND = build(make_packet(0x04, b"hello!!!", SAMPLE_GRH))
ACK = build(make_packet(0x11))
BTH_AT = 8


def set_bits(at, mask, value):
    def change(body):
        body[at] = body[at] & ~mask | value
    return change


def set_bytes(at, value):
    def change(body):
        body[at:at + len(value)] = value
    return change


def pktlen_plus(delta):
    def change(body):
        body[4:6] = (int.from_bytes(body[4:6], "big") + delta).to_bytes(2, "big")
    return change


def with_vcrc(body):
    return bytes(body) + vcrc_bytes(body)


CORRUPTIONS = {
    "VCRC": [SEND_ONLY[:-1] + bytes([SEND_ONLY[-1] ^ 1]),
             SEND_ONLY[:30] + bytes([SEND_ONLY[30] ^ 0x10]) + SEND_ONLY[31:]],
    "ICRC": [with_vcrc(SEND_ONLY[:-3] + bytes([SEND_ONLY[-3] ^ 1])),             # ICRC itself
             with_vcrc(SEND_ONLY[:20] + b"j" + SEND_ONLY[21:-2]),                # payload
             with_vcrc(GLOBAL_SEND[:40] + bytes([GLOBAL_SEND[40] ^ 1]) + GLOBAL_SEND[41:-2])],
    "LRH LVer": [resealed(SEND_ONLY, set_bits(0, 0x0F, 1))],
    "LRH LNH": [resealed(SEND_ONLY, set_bits(1, 0x03, 0)), resealed(SEND_ONLY, set_bits(1, 3, 1))],
    "LRH PktLen": [resealed(SEND_ONLY, pktlen_plus(1)), resealed(SEND_ONLY, pktlen_plus(-1)),
                   resealed(GLOBAL_SEND, pktlen_plus(-1))],
    "GRH IPVer": [resealed(GLOBAL_SEND, set_bits(8, 0xF0, 0x40))],
    "GRH NxtHdr": [resealed(GLOBAL_SEND, set_bytes(14, b"\x11"))],
    "GRH PayLen": [resealed(GLOBAL_SEND, set_bytes(12, (len(GLOBAL_SEND) - 50 + delta)
                                                   .to_bytes(2, "big")))
                   for delta in (-4, 4)],
    "BTH TVer": [resealed(SEND_ONLY, set_bits(BTH_AT + 1, 0x0F, 1)),
                 resealed(GLOBAL_SEND, set_bits(48 + 1, 0x0F, 8))],
    "BTH OpCode": [resealed(SEND_ONLY, set_bytes(BTH_AT, bytes([code])))
                   for code in (0x15, 0x1F, 0x2C, 0x40, 0x63, 0x66, 0x80, 0xFF)],
    # an RC SEND only (5 payload bytes) relabelled RDMA WRITE only: no room for the RETH
    "extension headers": [resealed(SEND_ONLY, set_bytes(BTH_AT, b"\x0a")),
                          resealed(build(make_packet(0x04)), set_bytes(BTH_AT, b"\x64"))],
    "BTH PadCnt": [resealed(build(make_packet(0x00, bytes(256))), set_bits(BTH_AT + 1, 0x30, 0x10)),
                   resealed(ACK, set_bits(BTH_AT + 1, 0x30, 0x20)),
                   resealed(build(make_packet(0x04)), set_bits(BTH_AT + 1, 0x30, 0x30))],
    "pad bytes": [resealed(SEND_ONLY, set_bytes(len(SEND_ONLY) - 7, b"\x01"))],
    "payload length": [build(make_packet(0x00, bytes(100))),             # first, not an MTU
                       build(make_packet(0x4, bytes(4097))),             # only, beyond 4096
                       build(make_packet(0x02)),                         # last, empty
                       # an ACK with four bytes after its AETH
                       resealed(seal(ACK[:-6] + b"data"), pktlen_plus(1))],
    "truncated": [SEND_ONLY[:25], b"",
                  # a local ACK (30 bytes) claiming a GRH (its ICRC cannot be computed)
                  with_vcrc(ACK[:1] + bytes([ACK[1] | 3]) + ACK[2:-2])],
}


@pytest.mark.parametrize("check", sorted(CORRUPTIONS))
def test_parse_check_fails(check):
    for data in CORRUPTIONS[check]:
        check_failure(data, check)


def test_payload_length_against_path_mtu():
    check_failure(build(make_packet(0x01, bytes(512))), "payload length", mtu=256)   # middle
    check_failure(build(make_packet(0x04, bytes(257))), "payload length", mtu=256)   # only
    check_failure(build(make_packet(0x02, bytes(300))), "payload length", mtu=256)   # last
    assert parse(build(make_packet(0x01, bytes(512))), mtu=512).payload == bytes(512)


def test_any_truncation_or_bit_error_is_a_packet_error():
    """Damage never escapes as another exception (the sniffer relies on it)."""
    wire = build(make_packet(0x0B, b"abcdefg", SAMPLE_GRH))
    for cut in range(len(wire)):
        with pytest.raises(PacketError):
            parse(wire[:cut])
    for bit in range(8 * len(wire)):
        damaged = bytearray(wire)
        damaged[bit // 8] ^= 1 << bit % 8
        with pytest.raises(PacketError):
            parse(damaged)


# ---------------------------------------------------------------------------------------------
# pcap with ERF InfiniBand records

def test_erf_timestamp():
    assert erf_timestamp(0) == 0
    assert erf_timestamp(10**9) == 1 << 32
    assert erf_timestamp(4) == math.ceil(Fraction(4 * 2**32, 10**9))
    for ns in (1, 4, 333, 999_999_999, 123_456_789_012):
        ts = erf_timestamp(ns)
        fraction = ts & 0xFFFFFFFF
        assert (ts >> 32) * 10**9 + (fraction * 10**9 >> 32) == ns              # truncating
        assert (ts >> 32) * 10**9 + ((fraction * 10**9 + 2**31) >> 32) == ns    # rounding


def test_pcap_layout(tmp_path):
    first, second = SEND_ONLY, build(make_packet(0x64, b"ud", SAMPLE_GRH))
    path = tmp_path / "link.pcap"
    with PcapWriter(path) as pcap:
        pcap.write(first, time_ns=4 * 1000)
        pcap.write(second, time_ns=1_500_000_004, interface=1, rx_error=True)
    data = path.read_bytes()

    magic, major, minor, zone, sigfigs, snaplen, linktype = struct.unpack_from("<IHHiIII", data)
    assert (magic, major, minor, zone, sigfigs, linktype) == (0xA1B23C4D, 2, 4, 0, 0, 197)
    assert snaplen >= 16 + 8190
    at = 24
    for packet, ns, flags in ((first, 4000, 0x04), (second, 1_500_000_004, 0x04 | 0x10 | 1)):
        seconds, nanoseconds, captured, original = struct.unpack_from("<IIII", data, at)
        assert (seconds, nanoseconds) == divmod(ns, 10**9)
        assert captured == original == 16 + len(packet)
        erf = data[at + 16:at + 32]
        whole, part = divmod(ns, 10**9)
        assert int.from_bytes(erf[0:8], "little") == whole << 32 | math.ceil(
            Fraction(part * 2**32, 10**9))
        assert erf[8] == 21                                        # type: InfiniBand
        assert erf[9] == flags                                     # interface, vlen, rx error
        assert int.from_bytes(erf[10:12], "big") == 16 + len(packet)   # record length
        assert erf[12:14] == b"\x00\x00"                           # loss counter
        assert int.from_bytes(erf[14:16], "big") == len(packet)    # wire length
        assert data[at + 32:at + 32 + len(packet)] == packet
        at += 32 + len(packet)
    assert at == len(data)


TSHARK = shutil.which("tshark")


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed (Debian: apt-get install "
                                            "tshark): Wireshark's decoding is not checked")
def test_wireshark_decodes_every_opcode(tmp_path):
    # one packet of each opcode, local and global; 5 payload bytes (3 pad) where it may
    def size(code):
        op = OPCODES[code]
        return 0 if not op.payload else 256 if op.position in ("first", "middle") else 5

    packets = [make_packet(code, bytes(i & 0xFF for i in range(size(code))), grh)
               for code in sorted(OPCODES) for grh in (None, SAMPLE_GRH)]
    path = tmp_path / "every_opcode.pcap"
    with PcapWriter(path) as pcap:
        for index, packet in enumerate(packets):
            pcap.write(build(packet), time_ns=4 * index)
    fields = ["frame.time_epoch", "frame.protocols", "infiniband.lrh.lnh",
              "infiniband.lrh.pktlen", "infiniband.bth.opcode", "infiniband.bth.psn",
              "infiniband.bth.padcnt", "infiniband.grh.paylen", "_ws.expert.message"]
    result = subprocess.run(
        [TSHARK, "-r", str(path), "--disable-protocol", "rpcordma", "-T", "fields"]
        + [arg for field in fields for arg in ("-e", field)],
        capture_output=True, text=True, timeout=120, check=True)
    lines = result.stdout.splitlines()
    assert len(lines) == len(packets)
    for index, (line, packet) in enumerate(zip(lines, packets)):
        wire = build(packet)
        epoch, protocols, lnh, pktlen, opcode, psn, padcnt, paylen, expert = line.split("\t")
        assert "infiniband" in protocols.split(":"), (packet.op.name, protocols)
        assert expert == "", (packet.op.name, expert)      # e.g. "Malformed Packet"
        assert Fraction(epoch) == Fraction(4 * index, 10**9)
        assert int(lnh, 0) == (3 if packet.grh else 2)
        assert int(pktlen) == (len(wire) - 2) // 4
        assert int(opcode) == packet.bth.opcode
        assert int(psn) == packet.bth.psn
        assert int(padcnt) == -len(packet.payload) & 3
        assert paylen == (str(len(wire) - 2 - 48) if packet.grh else "")
