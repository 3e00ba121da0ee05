"""Unit tests of crc_stream and ib_icrc (through tb/hdl/tb_crc_stream.v) against tb/ib_crc.py.

The harness has two input streams: `icrc_*` feeds ib_icrc a packet (LRH through pad, or with
`icrc_eth` a RoCE v2 frame), and
`crc_*` feeds a raw CRC-32 and a CRC-16 (VCRC) crc_stream side by side. Inputs change on the
falling edge; the combinational CRC outputs are read after ReadOnly in that time step, which
is what the next rising edge sees on any simulator. Disabled bytes and idle cycles carry random
junk (and idle cycles random last/first), so masking and valid gating are checked on the way.

Randomness comes from one seed, printed at the start of each test; SEED=<n> replays a run.
"""

import logging
import zlib

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly
import pytest

from tb import simrun
from tb import ib_packet as ib
from tb.ib_crc import KAT_ICRC, KAT_PACKET, icrc, icrc_bytes, icrc_mask, roce_icrc, vcrc
from tb.seed import SEED, UNIT_WIDTHS, rng_for


LNH_LOCAL = 2
LNH_GLOBAL = 3
MIN_LOCAL = 28          # LRH + BTH + a little payload
MIN_GLOBAL = 60         # LRH + GRH + BTH
MAX_LEN = 600


class TB:
    def __init__(self, dut, test_name):
        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        self.log.setLevel(logging.INFO)
        self.rng = rng_for(test_name, self.log)
        self.nbytes = len(dut.icrc_data) // 8
        for name in ("icrc_eth", "icrc_valid", "icrc_data", "icrc_keep", "icrc_last",
                     "crc_valid", "crc_first", "crc_data", "crc_keep"):
            getattr(dut, name).value = 0
        dut.rst.value = 1

    async def reset(self):
        dut = self.dut
        dut.rst.value = 1
        for _ in range(4):
            await FallingEdge(dut.clk)
        dut.rst.value = 0
        await FallingEdge(dut.clk)

    def _beat(self, chunk):
        """A beat's data with junk in the disabled bytes, and its keep."""
        junk = self.rng.randbytes(self.nbytes - len(chunk))
        return int.from_bytes(chunk + junk, "little"), (1 << len(chunk)) - 1

    async def _idle(self, prefix, gap):
        """Idle cycles (probability `gap` each) with junk on the stream's other inputs."""
        dut = self.dut
        while gap and self.rng.random() < gap:
            getattr(dut, f"{prefix}_valid").value = 0
            getattr(dut, f"{prefix}_data").value = self.rng.getrandbits(self.nbytes * 8)
            getattr(dut, f"{prefix}_keep").value = self.rng.getrandbits(self.nbytes)
            getattr(dut, "icrc_last" if prefix == "icrc" else "crc_first").value = 1
            await FallingEdge(dut.clk)

    async def icrc_packets(self, packets, gap=0.0):
        """Drive packets through ib_icrc, one beat a cycle (idle cycles with probability
        `gap` between beats and packets). Returns the ICRC read with each last beat."""
        dut = self.dut
        n = self.nbytes
        results = []
        for pkt in packets:
            offsets = range(0, len(pkt), n)
            for i, off in enumerate(offsets):
                await self._idle("icrc", gap)
                data, keep = self._beat(pkt[off:off + n])
                last = i == len(offsets) - 1
                dut.icrc_valid.value = 1
                dut.icrc_data.value = data
                dut.icrc_keep.value = keep
                dut.icrc_last.value = int(last)
                if last or i == 0:
                    await ReadOnly()
                    assert int(dut.icrc_out_valid.value) == int(last), \
                        f"icrc_out_valid={dut.icrc_out_valid.value} on beat {i} of {len(offsets)}"
                    if last:
                        results.append(int(dut.icrc.value))
                await FallingEdge(dut.clk)
            dut.icrc_valid.value = 0
        return results

    async def crc_streams(self, streams, gap=0.0, ragged=False, probe=False):
        """Drive byte strings through the raw CRC-32 and CRC-16 engines, `crc_first` on each
        stream's first beat. `ragged`: each beat carries a random number of bytes (0 .. all),
        not only the last. `probe`: also read the CRCs at one random beat, and in an idle
        cycle after the stream (no beat: the CRC so far).
        Returns, per stream, [(bytes so far, crc32, crc16), ...]."""
        dut = self.dut
        n = self.nbytes
        rng = self.rng
        results = []
        for data in streams:
            sizes = []
            left = len(data)
            while left or not sizes:
                if ragged and rng.random() < 0.6:
                    take = rng.randint(0, min(left, n))
                else:
                    take = min(left, n)
                sizes.append(take)
                left -= take
            if ragged and rng.random() < 0.2:
                sizes.append(0)                 # an empty beat after the data changes nothing
            probe_at = rng.randrange(len(sizes)) if probe else None
            seen = []
            off = 0
            for i, take in enumerate(sizes):
                await self._idle("crc", gap)
                beat, keep = self._beat(data[off:off + take])
                off += take
                dut.crc_valid.value = 1
                dut.crc_first.value = int(i == 0)
                dut.crc_data.value = beat
                dut.crc_keep.value = keep
                if i == len(sizes) - 1 or i == probe_at:
                    await ReadOnly()
                    seen.append((off, int(dut.crc32.value), int(dut.crc16.value)))
                await FallingEdge(dut.clk)
            dut.crc_valid.value = 0
            if probe:
                # an idle cycle (junk, no crc_first) shows the CRC of the stream so far
                dut.crc_first.value = 0
                dut.crc_data.value = rng.getrandbits(8 * n)
                dut.crc_keep.value = rng.getrandbits(n)
                await ReadOnly()
                seen.append((off, int(dut.crc32.value), int(dut.crc16.value)))
                await FallingEdge(dut.clk)
            results.append(seen)
        return results

    def random_packet(self, is_global=None, length=None):
        rng = self.rng
        if is_global is None:
            is_global = rng.random() < 0.5
        if length is None:
            lo = MIN_GLOBAL if is_global else MIN_LOCAL
            length = rng.randint(lo, MAX_LEN)
            if rng.random() < 0.8:              # real packets are whole 4-byte words
                length = max(lo, length & ~3)
        pkt = bytearray(rng.randbytes(length))   # random variant fields too
        pkt[1] = (pkt[1] & 0xFC) | (LNH_GLOBAL if is_global else LNH_LOCAL)
        return bytes(pkt)


def check_crcs(streams, results, what):
    for k, (data, seen) in enumerate(zip(streams, results)):
        for upto, c32, c16 in seen:
            part = data[:upto]
            assert c32 == zlib.crc32(part), \
                (f"{what} {k} ({len(data)} bytes, through byte {upto}): CRC-32 {c32:#010x}, "
                 f"want {zlib.crc32(part):#010x} (SEED={SEED})")
            assert c16 == vcrc(part), \
                (f"{what} {k} ({len(data)} bytes, through byte {upto}): CRC-16 {c16:#06x}, "
                 f"want {vcrc(part):#06x} (SEED={SEED})")


def check_icrcs(packets, results, what):
    for k, (pkt, got) in enumerate(zip(packets, results)):
        want = icrc(pkt)
        assert got == want, \
            (f"{what} {k} ({len(pkt)} bytes, LNH={pkt[1] & 3}): ICRC {got:#010x}, want "
             f"{want:#010x} (SEED={SEED})")


@cocotb.test()
async def test_known_answer(dut):
    """The published RC RDMA WRITE packet: ICRC on the wire 96 25 b7 5a, the same with its
    variant fields changed, and its VCRC and plain CRC-32 against the reference."""
    tb = TB(dut, "test_known_answer")
    await tb.reset()
    changed = bytearray(KAT_PACKET)
    changed[0] ^= 0x50          # VL
    changed[12] ^= 0xA5         # BTH Resv8a
    got = await tb.icrc_packets([KAT_PACKET, bytes(changed), KAT_PACKET])
    for value in got:
        assert value.to_bytes(4, "little") == KAT_ICRC, f"ICRC {value:#010x}, want {KAT_ICRC.hex()}"
    wire = KAT_PACKET + KAT_ICRC
    streams = [wire, icrc_mask(KAT_PACKET), KAT_PACKET]
    check_crcs(streams, await tb.crc_streams(streams), "known answer")


@cocotb.test()
async def test_icrc_random_packets(dut):
    """Random local and global packets, 28..600 bytes, back to back and with idle cycles, on
    the ICRC stream; at the same time the VCRC of each packet with its ICRC appended on the raw
    stream."""
    tb = TB(dut, "test_icrc_random_packets")
    await tb.reset()
    count = 200 if tb.nbytes <= 8 else 300
    n = tb.nbytes
    edges = [(False, MIN_LOCAL), (True, MIN_GLOBAL), (False, n), (True, 2 * n), (False, 3 * n + 4),
             (True, 4 * n - 4), (False, 2 * n - 1), (True, MIN_GLOBAL + 1)]
    packets = [tb.random_packet(g, max(length, MIN_GLOBAL if g else MIN_LOCAL))
               for g, length in edges]
    packets += [tb.random_packet() for _ in range(count - len(packets))]
    tb.rng.shuffle(packets)
    wires = [p + icrc_bytes(p) for p in packets]
    for gap in (0.0, 0.3):
        half = slice(0, count // 2) if gap == 0.0 else slice(count // 2, count)
        icrc_task = cocotb.start_soon(tb.icrc_packets(packets[half], gap))
        crc_task = cocotb.start_soon(tb.crc_streams(wires[half], gap))
        check_icrcs(packets[half], await icrc_task, f"gap {gap}: packet")
        check_crcs(wires[half], await crc_task, f"gap {gap}: packet+ICRC")


@cocotb.test()
async def test_icrc_variant_fields(dut):
    """Every header byte of a local and a global packet changed in turn: the ICRC follows the
    reference, which means it ignores exactly the variant fields, wherever they fall in a beat."""
    tb = TB(dut, "test_icrc_variant_fields")
    await tb.reset()
    rng = tb.rng
    # bits the ICRC reads as ones, by packet byte
    local_ones = {0: 0xF0, 8 + 4: 0xFF}
    global_ones = {p: 0xFF for p in range(8)}
    global_ones.update({8: 0x0F, 9: 0xFF, 10: 0xFF, 11: 0xFF, 15: 0xFF, 8 + 40 + 4: 0xFF})
    for is_global, header, ones in ((False, 8 + 12, local_ones), (True, 8 + 40 + 12, global_ones)):
        base = tb.random_packet(is_global, header + 4 * rng.randint(1, 20))
        packets = [base]
        flips = []
        for pos in range(header):
            pkt = bytearray(base)
            flip = rng.randrange(1, 256)
            if pos in ones and rng.random() < 0.5:
                flip = (flip & ones[pos]) or ones[pos]   # only bits the ICRC ignores
            if pos == 1:
                flip = (flip & 0xFC) or 0x04    # keep LNH: it chooses the masking
            pkt[pos] ^= flip
            packets.append(bytes(pkt))
            flips.append(flip)
        got = await tb.icrc_packets(packets, gap=0.1)
        kind = "global" if is_global else "local"
        check_icrcs(packets, got, f"{kind} mutation")
        for pos, (flip, value) in enumerate(zip(flips, got[1:])):
            ignored = flip & ~ones.get(pos, 0) == 0
            same = value == got[0]
            assert same == ignored, \
                (f"{kind} byte {pos} ^= {flip:#04x}: ICRC {'same' if same else 'differs'}"
                 f" (SEED={SEED})")


def random_roce_frame(rng):
    """A RoCE v2 frame (Ethernet .. FCS) of a random opcode and payload, tagged or not, over
    IPv4 or IPv6, and where its IP packet lies in it."""
    v4 = rng.random() < 0.5
    gid = (lambda: ib.ipv4_gid(rng.randbytes(4))) if v4 else (lambda: rng.randbytes(16))
    tagged = rng.random() < 0.5
    roce = ib.RoCE(dmac=rng.randbytes(6), smac=rng.randbytes(6), sgid=gid(), dgid=gid(),
                   hop_limit=rng.randrange(256), sport=rng.randrange(0xC000, 0x10000),
                   tclass=rng.randrange(256), flow_label=0 if v4 else rng.randrange(1 << 20),
                   vlan=rng.randrange(4096) if tagged else None,
                   pcp=rng.randrange(8) if tagged else 0)
    op = rng.choice(list(ib.OPCODES.values()))
    headers = {name: ib.EXTENSION_HEADERS[name].unpack(rng.randbytes(ib.EXTENSION_HEADERS[name].SIZE))
               for name in op.headers}
    payload = rng.randbytes(rng.choice([0, 1, 3, rng.randint(1, 300)])) if op.payload else b""
    packet = ib.Packet(roce=roce, payload=payload, **headers,
                       bth=ib.BTH(opcode=op.code, dest_qp=rng.randrange(1 << 24),
                                  psn=rng.randrange(1 << 24), pkey=rng.randrange(1 << 16)))
    frame = ib.build(packet)
    ip_at = 18 if tagged else 14
    ip_len = (int.from_bytes(frame[ip_at + 2:ip_at + 4], "big") if v4
              else 40 + int.from_bytes(frame[ip_at + 4:ip_at + 6], "big"))
    return frame, ip_at, ip_at + ip_len


ICRC_RESIDUE = 0x2144DF1C   # the CRC-32 of anything followed by its own CRC


@cocotb.test()
async def test_icrc_roce_frames(dut):
    """RoCE v2 frames (icrc_eth): sent as a packetizer feeds the engine (Ethernet header .. pad,
    before the ICRC) the ICRC is the reference's, over the IP packet with its variant fields
    masked, whatever the Ethernet header, the tag and the IP version; received whole (ICRC,
    Ethernet padding and FCS too) the engine stops at the IP packet's end and ends on the CRC
    residue. Random bytes of the headers changed in turn (not the EtherTypes and the IP
    version and lengths, which choose the layout) keep the ICRC equal to the reference's."""
    tb = TB(dut, "test_icrc_roce_frames")
    await tb.reset()
    dut.icrc_eth.value = 1
    rng = tb.rng
    frames = [random_roce_frame(rng) for _ in range(120)]
    for frame, ip_at, ip_end in frames[:40]:
        for _ in range(3):
            changed = bytearray(frame)
            pos = rng.randrange(ip_end - 4)
            # the layout: EtherTypes, IP version, IP lengths
            if pos not in (12, 13, ip_at - 2, ip_at - 1, ip_at, ip_at + 2, ip_at + 3, ip_at + 4, ip_at + 5):
                changed[pos] ^= rng.randrange(1, 256)
            frames.append((bytes(changed), ip_at, ip_end))
    sent = [frame[:ip_end - 4] for frame, _, ip_end in frames]
    got = await tb.icrc_packets(sent, gap=0.2)
    for k, ((frame, ip_at, ip_end), value) in enumerate(zip(frames, got)):
        want = roce_icrc(frame[ip_at:ip_end - 4])
        assert value == want, \
            (f"frame {k} ({len(frame)} bytes, IP at {ip_at}): ICRC {value:#010x}, want "
             f"{want:#010x} (SEED={SEED})")
    whole = [frame for frame, _, _ in frames[:120]]
    for k, value in enumerate(await tb.icrc_packets(whole, gap=0.2)):
        assert value == ICRC_RESIDUE, \
            f"received frame {k} ({len(whole[k])} bytes): {value:#010x}, not the residue (SEED={SEED})"


@cocotb.test()
async def test_crc_stream_ragged(dut):
    """The raw engines over 0..600 random bytes with beats of random fill (empty beats too),
    junk in disabled bytes, idle cycles carrying crc_first, a random beat and an idle cycle
    probed."""
    tb = TB(dut, "test_crc_stream_ragged")
    await tb.reset()
    rng = tb.rng
    lengths = [0, 1, 2, 3, 4, 5, tb.nbytes - 1, tb.nbytes, tb.nbytes + 1]
    lengths += [rng.randint(0, MAX_LEN) for _ in range(100 if tb.nbytes <= 8 else 150)]
    streams = [rng.randbytes(n) for n in lengths]
    results = await tb.crc_streams(streams, gap=0.2, ragged=True, probe=True)
    check_crcs(streams, results, "stream")


# ---------------------------------------------------------------------------------------------
# The pytest runner: crc_stream and ib_icrc unit tests at each supported data width.

RTL_FILES = ["crc_stream.v", "ib_icrc.v"]


@pytest.mark.parametrize("w", UNIT_WIDTHS)
def test_crc_stream(w):
    simrun.run(
        toplevel="tb_crc_stream",
        test_module="test_crc_stream",
        parameters={"DATA_WIDTH": w},
        name=f"crc_stream_w{w}",
        rtl=RTL_FILES,
    )
