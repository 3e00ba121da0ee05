"""Unit test of the lossy link model (tb/hdl/sim_link_fault.v, set up through tb/link_faults.py)
on tb/hdl/tb_link_fault.v: a cocotbext-axi source sends real packets into the link, InfiniBand
packets or, with the link in Ethernet mode, RoCE v2 frames, an HDL receiver takes them
(stalling when told), and a sniffer on each side of the link reports what was sent and what
arrived, with the cycle of each packet's first beat. Each test names the property it proves and
checks it exactly, on both link layers; the random ones print their seed."""

import collections
from dataclasses import replace
import logging
import math
import warnings

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSource
import pytest
from scapy.compat import raw
from scapy.contrib.roce import BTH as ScapyBTH
from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Padding
from scapy.utils import checksum

from tb import simrun
from tb.ib_crc import fcs_bytes, icrc_bytes, roce_icrc_bytes, vcrc_bytes
from tb.ib_packet import (AETH, BTH, DETH, GRH, LINKS, LRH, OPCODES, RETH, AtomicAckETH, Packet,
                          PacketError, RoCE, build, ipv4_gid, parse)
from tb.link_faults import LinkFaults, corrupt_wire, mark_wire
from tb.seed import UNIT_WIDTHS, rng_for
from tb.sniffer import LinkSniffer

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\..*")
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotb_bus\..*")

GRH_SAMPLE = GRH(sgid=bytes(range(16)), dgid=bytes(range(16, 32)), hop_limit=64)
LRH_SAMPLE = LRH(dlid=0x20, slid=0x10, sl=2)
MACS = dict(dmac=bytes.fromhex("020000000002"), smac=bytes.fromhex("020000000001"))
V4_SAMPLE = RoCE(**MACS, sgid=ipv4_gid("10.0.0.1"), dgid=ipv4_gid("10.0.0.2"), hop_limit=64,
                 sport=0xC012, tclass=0x02)
V6_SAMPLE = RoCE(**MACS, sgid=bytes.fromhex("fd000000000000000000000000000001"),
                 dgid=bytes.fromhex("fd000000000000000000000000000002"), hop_limit=64,
                 sport=0xC034, tclass=0xB9, flow_label=0x12345)
# The headers a packet travels under, by link layer: InfiniBand without and with a GRH (BTH at
# byte 8 and 48); Ethernet IPv4 and IPv6, untagged and in VLAN 7 (BTH at 42, 62, 46 and 66),
# ECN-capable as RoCE v2 traffic is (ECT(0), ECT(1)).
ROUTES = {
    "ib": ({"lrh": LRH_SAMPLE}, {"lrh": LRH_SAMPLE, "grh": GRH_SAMPLE}),
    "eth": tuple({"roce": roce} for roce in (V4_SAMPLE, V6_SAMPLE,
                                             replace(V4_SAMPLE, vlan=7, pcp=3),
                                             replace(V6_SAMPLE, vlan=7))),
}
TAP_BYTES = 4608        # what sim_link_tap and sim_link_fault keep of a packet


def ip_span(frame):
    """Where a RoCE v2 frame's IP packet starts and ends, by the layout: past the Ethernet
    header and an 802.1Q tag, as long as the IPv4 total length or IPv6 payload length says."""
    ip_at = 18 if frame[12:14] == b"\x81\x00" else 14
    if frame[ip_at] >> 4 == 4:
        return ip_at, ip_at + int.from_bytes(frame[ip_at + 2:ip_at + 4], "big")
    return ip_at, ip_at + 40 + int.from_bytes(frame[ip_at + 4:ip_at + 6], "big")


# ---------------------------------------------------------------------------------------------

class FaultTB:
    """The harness with its link (`cable`) carrying `link` packets: "ib" or "eth". The link
    layer is set here once, as RdmaTB.set_link sets a cable's, and the faults each test applies
    (LinkFaults without a link) keep it."""

    def __init__(self, dut, link):
        self.dut = dut
        self.cable = dut.link
        self.link = link
        LinkFaults.set_link(self.cable, link)
        self.routes = ROUTES[link]
        self.crc_bytes = 4 if link == "eth" else 2      # the FCS, or the VCRC
        self.log = logging.getLogger("cocotb.test_link_fault")
        logging.getLogger(f"cocotb.{dut._name}.s_axis").setLevel(logging.WARNING)
        logging.getLogger("cocotb.sniffer").setLevel(logging.ERROR)
        # on clk under both simulators: the harness gives Verilator a registered tready
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.bb = len(dut.s_axis_tkeep)
        self.depth = None
        self.sent = self.arrived = None

    # Packets: every one carries its own PSN, so an arrived packet names the packet it was.

    def make(self, opcode, psn, qp=0x12, size=0, route=0, ecn=None, **headers):
        """An RC/UC/UD packet's wire bytes with the extension headers its opcode needs, under
        route `route` of the link (modulo their number); `ecn` (Ethernet) sets its IP ECN
        field."""
        op = OPCODES[opcode]
        defaults = {"reth": RETH(va=0x4000, rkey=0x99, dma_len=size),
                    "aeth": AETH(0x1F, psn & 0xFFFFFF),
                    "atomic_ack_eth": AtomicAckETH(0x0123456789ABCDEF),
                    "deth": DETH(qkey=0x11111111, src_qp=0x31)}
        for name in op.headers:
            headers.setdefault(name, defaults[name])
        link_headers = dict(self.routes[route % len(self.routes)])
        if ecn is not None:
            roce = link_headers["roce"]
            link_headers["roce"] = replace(roce, tclass=roce.tclass & ~3 | ecn)
        payload = bytes((psn + i) & 0xFF for i in range(size))
        return build(Packet(**link_headers, bth=BTH(opcode=opcode, dest_qp=qp, psn=psn),
                            payload=payload, **headers))

    def sends(self, count, size=16, first_psn=0, **kwargs):
        """`count` RC SEND only packets of `size` bytes, PSNs counting up."""
        return [self.make(0x04, first_psn + i, size=size, **kwargs) for i in range(count)]

    def every_kind(self, first_psn=0):
        """Requests (RC, UC, UD), ACK, NAK, atomic ACK and the four READ responses, each under
        every route of the link."""
        wires = []
        psn = first_psn
        for route in range(len(self.routes)):
            for opcode, size in ((0x04, 40), (0x0A, 100), (0x0C, 0), (0x24, 8), (0x64, 12),
                                 (0x11, 0), (0x11, 0), (0x12, 0), (0x0D, 256), (0x0E, 256),
                                 (0x0F, 30), (0x10, 5)):
                aeth = {"aeth": AETH(0x61, 7)} if opcode == 0x11 and psn % 2 else {}  # a NAK
                wires.append(self.make(opcode, psn, size=size, route=route, qp=0x40 + psn,
                                       **aeth))
                psn += 1
        return wires

    def mixed(self, first_psn=0):
        """Every fill of the last beat (and the CRCs split across beats) under every route,
        short Ethernet frames padded to 64 bytes, a full 4096-byte payload, answers: a sample
        of what a port sends."""
        wires = [self.make(0x04, first_psn + size, size=size, route=size)
                 for size in range(0, 2 * self.bb + 4)]
        psn = first_psn + 2 * self.bb + 4
        wires += [self.make(0x0A, psn, size=4096, route=1), self.make(0x11, psn + 1),
                  self.make(0x10, psn + 2, size=77), self.make(0x0C, psn + 3, route=1)]
        return wires

    def psn_of(self, data):
        return parse(data, link=self.link).bth.psn

    def kind_of(self, wire):
        """requests / acks / read_responses, from ib_packet's opcode table."""
        operation = parse(wire, link=self.link).op.operation
        if operation == "RDMA_READ_RESPONSE":
            return "read_responses"
        return "acks" if operation in ("ACKNOWLEDGE", "ATOMIC_ACKNOWLEDGE") else "requests"

    def icrc_span(self, data):
        """Where a packet's ICRC is, by the layout: right before the VCRC, or ending the IP
        packet (a short frame's padding follows it)."""
        if self.link == "ib":
            return slice(len(data) - 6, len(data) - 2)
        _, ip_end = ip_span(data)
        return slice(ip_end - 4, ip_end)

    def crc_state(self, data):
        """(ICRC right, link CRC right) of a packet's bytes, by ib_crc: the VCRC on
        InfiniBand, the FCS on Ethernet."""
        icrc = self.icrc_span(data)
        crc_at = len(data) - self.crc_bytes
        if self.link == "ib":
            return (icrc_bytes(data[:icrc.start]) == data[icrc],
                    vcrc_bytes(data[:crc_at]) == data[crc_at:])
        return (roce_icrc_bytes(data[ip_span(data)[0]:icrc.start]) == data[icrc],
                fcs_bytes(data[:crc_at]) == data[crc_at:])

    async def reset(self, faults=None):
        """Reset the link (queues, counters, generator; not its settings), give it `faults`
        (unless None) and start fresh sniffers on both sides."""
        dut = self.dut
        dut.sink_hold.value = 0
        dut.sink_stall_rate.value = 0
        dut.rst.value = 1
        await ClockCycles(dut.clk, 3)
        if faults is not None:
            faults.apply(self.cable)
            self.log.info("%s link: %s", self.link, faults.describe())
        await ClockCycles(dut.clk, 1)
        dut.rst.value = 0
        await RisingEdge(dut.clk)
        self.depth = int(dut.link_depth.value)
        for sniffer in (self.sent, self.arrived):
            if sniffer is not None:
                sniffer.kill()
        self.sent = LinkSniffer(dut.s_axis_tap, dut.tb_clk, dut.cycle, interface=0,
                                link=self.link)
        self.arrived = LinkSniffer(dut.m_axis_tap, dut.tb_clk, dut.cycle, interface=1,
                                   link=self.link)

    async def send(self, frames):
        """Queue every frame at once: the source sends them back to back."""
        for frame in frames:
            await self.source.send(frame)

    async def drain(self, limit=200_000):
        """Wait until everything sent has left the link (or been dropped)."""
        await self.source.wait()
        await RisingEdge(self.dut.clk)
        await ReadOnly()        # the edge that took the last beat has been seen by the link
        waited = 0
        while int(self.cable.in_flight.value) or int(self.cable.m_axis_tvalid.value):
            await ClockCycles(self.dut.clk, 8)
            await ReadOnly()
            waited += 8
            assert waited < limit, f"link not empty after {limit} cycles: {self.stats()}"
        await ClockCycles(self.dut.clk, 2)

    async def run(self, frames, faults=None):
        """Reset with `faults`, send `frames`, drain; the data sent and the data arrived."""
        await self.reset(faults)
        await self.send(frames)
        await self.drain()
        return self.sent_data(), self.arrived_data()

    def sent_data(self):
        return [capture.data for capture in self.sent.captures]

    def arrived_data(self):
        return [capture.data for capture in self.arrived.captures]

    def stats(self):
        return LinkFaults.stats(self.cable)

    def beats(self, data):
        return math.ceil(len(data) / self.bb)

    def last_cycle(self, capture):
        """The cycle of a capture's last beat, its beats being back to back."""
        return capture.cycle + self.beats(capture.data) - 1

    def assert_back_to_back(self, captures):
        """Each packet starts the cycle after the one before ends: one beat every cycle."""
        for before, after in zip(captures, captures[1:]):
            assert after.cycle == self.last_cycle(before) + 1, (before.cycle, after.cycle)

    def assert_timing(self, sent, arrived, latency):
        """Each packet's first beat leaves 1 + latency cycles after its last beat entered, or
        the cycle after the packet before it has left, whichever is later."""
        previous_end = -1
        for index, (into, out) in enumerate(zip(sent, arrived)):
            expected = max(self.last_cycle(into) + 1 + latency, previous_end + 1)
            assert out.cycle == expected, \
                f"packet {index}: first beat out in cycle {out.cycle}, expected {expected}"
            previous_end = self.last_cycle(out)


def assert_counts(stats, **expected):
    base = dict(dropped=0, duplicated=0, corrupted=0, delayed=0, reordered=0, marked=0,
                truncated=0, in_flight=0)
    base.update(expected)
    assert {name: stats[name] for name in base} == base, stats


# ---------------------------------------------------------------------------------------------

@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_zero_config_link_is_a_wire_at_full_rate(dut, link):
    """With its reset defaults the link delivers every packet unchanged and in order, aborted
    ones still aborted, each first beat 1 cycle after its last beat entered, and moves one beat
    per cycle in and out at once."""
    tb = FaultTB(dut, link)
    await tb.reset()        # the settings as the HDL starts: nothing applied but the link
    for name, default in (("latency", 0), ("drop_rate", 0), ("dup_rate", 0),
                          ("corrupt_rate", 0), ("delay_rate", 0), ("reorder_rate", 0),
                          ("mark_rate", 0), ("kind_mask", 7), ("qpn_set_en", 0),
                          ("force_act", 0)):
        assert int(getattr(tb.cable, name).value) == default, name
    assert tb.stats()["link"] == link

    wires = tb.mixed()
    aborted = tb.make(0x04, 999, size=50)
    frames = wires[:5] + [AxiStreamFrame(aborted, tuser=[0] * (len(aborted) - 1) + [1])] \
        + wires[5:]
    await tb.send(frames)
    await tb.drain()
    expected = wires[:5] + [aborted] + wires[5:]
    assert tb.sent_data() == expected
    assert tb.arrived_data() == expected
    assert [c.aborted for c in tb.arrived.captures] == [i == 5 for i in range(len(expected))]
    assert tb.arrived.errors() == tb.arrived.captures[5:6]
    tb.assert_back_to_back(tb.sent.captures)
    tb.assert_timing(tb.sent.captures, tb.arrived.captures, 0)
    assert_counts(tb.stats(), pkts_in=len(expected), pkts_out=len(expected))

    # equal packets back to back: the output is as busy as the input, one cycle behind
    await tb.reset()
    same = tb.sends(60, size=3 * tb.bb)
    await tb.send(same)
    await tb.drain()
    assert tb.arrived_data() == same
    tb.assert_back_to_back(tb.sent.captures)
    tb.assert_back_to_back(tb.arrived.captures)
    for into, out in zip(tb.sent.captures, tb.arrived.captures):
        assert out.cycle == tb.last_cycle(into) + 1
    assert tb.arrived.beats == tb.sent.beats == 60 * tb.beats(same[0])


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_latency_is_exact(dut, link):
    """Latency 0, 1 and 500: a packet's first beat leaves exactly 1 + latency cycles after its
    last beat entered (later only while the packet before it is still leaving)."""
    tb = FaultTB(dut, link)
    for latency in (0, 1, 500):
        wires = [tb.make(0x04, i, size=(37 * i) % (3 * tb.bb), route=i) for i in range(12)] \
            + [tb.make(0x0A, 12, size=4096), tb.make(0x11, 13)]
        sent, arrived = await tb.run(wires, LinkFaults(latency=latency))
        assert sent == wires and arrived == wires
        tb.assert_back_to_back(tb.sent.captures)
        tb.assert_timing(tb.sent.captures, tb.arrived.captures, latency)
        first_in, first_out = tb.sent.captures[0], tb.arrived.captures[0]
        assert first_out.cycle - tb.last_cycle(first_in) == 1 + latency
        # a lone packet long after the burst
        await ClockCycles(dut.clk, 50)
        lone = tb.make(0x04, 14, size=9)
        await tb.send([lone])
        await tb.drain()
        assert tb.arrived.captures[-1].data == lone
        assert tb.arrived.captures[-1].cycle == tb.last_cycle(tb.sent.captures[-1]) + 1 + latency


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_backpressure_never_loses_a_packet(dut, link):
    """A receiver that stalls half the time, and one that stops while DEPTH packets fill the
    link: s_axis_tready drops, nothing is lost, order is kept."""
    tb = FaultTB(dut, link)
    await tb.reset(LinkFaults())
    dut.sink_stall_rate.value = 128
    wires = tb.mixed()
    await tb.send(wires)
    await tb.drain()
    assert tb.arrived_data() == wires
    span = tb.arrived.last_beat_cycle - tb.arrived.captures[0].cycle + 1
    assert span > 1.5 * tb.arrived.beats        # the receiver did stall
    assert_counts(tb.stats(), pkts_in=len(wires), pkts_out=len(wires))

    # the receiver stops: DEPTH packets go in, then the link holds the source off
    await tb.reset()
    dut.sink_hold.value = 1
    wires = tb.sends(tb.depth + 8, size=3 * tb.bb)    # >= 3 beats: each holds its slot
    await tb.send(wires)
    await ClockCycles(dut.clk, (tb.depth + 8) * tb.beats(wires[0]) + 100)
    assert len(tb.sent.captures) == tb.depth
    assert int(tb.cable.in_flight.value) == tb.depth
    assert int(tb.cable.s_axis_tready.value) == 0
    assert tb.arrived.beats == 0
    dut.sink_hold.value = 0
    await tb.drain()
    assert tb.sent_data() == wires and tb.arrived_data() == wires
    assert_counts(tb.stats(), pkts_in=len(wires), pkts_out=len(wires))


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_drop_removes_exactly_that_packet(dut, link):
    tb = FaultTB(dut, link)
    wires = tb.sends(8)
    sent, arrived = await tb.run(wires, LinkFaults(forced={0: "drop", 3: "drop", 7: "drop"}))
    assert sent == wires
    assert arrived == [w for i, w in enumerate(wires) if i not in (0, 3, 7)]
    stats = tb.stats()
    assert_counts(stats, pkts_in=8, pkts_out=5, dropped=3)
    assert (stats["last_idx"], stats["last_act"]) == (7, "drop")


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_dup_delivers_the_packet_twice_back_to_back(dut, link):
    tb = FaultTB(dut, link)
    wires = tb.sends(6, size=2 * tb.bb)
    sent, arrived = await tb.run(wires, LinkFaults(forced={1: "dup", 4: "dup"}))
    assert arrived == wires[:2] + wires[1:5] + wires[4:]
    captures = tb.arrived.captures
    for first in (1, 5):        # the copies, in arrival order
        assert captures[first + 1].cycle == tb.last_cycle(captures[first]) + 1
    assert_counts(tb.stats(), pkts_in=6, pkts_out=8, duplicated=2)


def _one_bit_flipped(a, b):
    return bin(int.from_bytes(a, "little") ^ int.from_bytes(b, "little")).count("1") == 1


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_corrupt_icrc_leaves_only_the_icrc_bad(dut, link):
    """corrupt_kind ICRC: one bit of the ICRC flipped, the link CRC (VCRC, or FCS) recomputed
    over the packet, so ib_crc finds the ICRC bad and the link CRC good and the codec refuses
    the packet for its ICRC; every size, split and route and a 4 KiB payload. On Ethernet the
    ICRC is where the IP length puts it, before the padding of a short frame."""
    tb = FaultTB(dut, link)
    wires = tb.mixed()
    faults = LinkFaults(seed=11, corrupt=1.0, corrupt_kind="icrc")
    sent, arrived = await tb.run(wires, faults)
    plan = faults.plan(wires, link)
    assert len(arrived) == len(wires)
    for wire, data, decision in zip(wires, arrived, plan):
        icrc, crc_at = tb.icrc_span(wire), len(wire) - tb.crc_bytes
        assert tb.crc_state(data) == (False, True)
        assert data[:icrc.start] == wire[:icrc.start]
        assert data[icrc.stop:crc_at] == wire[icrc.stop:crc_at]        # the padding
        assert _one_bit_flipped(data[icrc], wire[icrc])
        assert data == corrupt_wire(wire, "icrc", decision.bit, link)
        with pytest.raises(PacketError) as failure:
            parse(data, link=link)
        assert failure.value.check == "ICRC"
    assert {d.bit for d in plan} != {plan[0].bit}      # the bit is drawn per packet
    if link == "eth":
        assert any(tb.icrc_span(w).stop < len(w) - 4 for w in wires)     # padded frames
    assert_counts(tb.stats(), pkts_in=len(wires), pkts_out=len(wires), corrupted=len(wires))


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_corrupt_vcrc_leaves_only_the_link_crc_bad(dut, link):
    """corrupt_kind VCRC: one bit of the link CRC flipped, any of the VCRC's 16 or the FCS's
    32; the rest of the packet, its ICRC included, arrives intact, and the sniffer refuses
    each packet for its VCRC or FCS."""
    tb = FaultTB(dut, link)
    wires = tb.mixed()
    faults = LinkFaults(seed=12, corrupt=1.0, corrupt_kind="vcrc")
    sent, arrived = await tb.run(wires, faults)
    plan = faults.plan(wires, link)
    n = tb.crc_bytes
    assert len(arrived) == len(wires)
    for wire, data, decision in zip(wires, arrived, plan):
        assert tb.crc_state(data) == (True, False)
        assert data[:-n] == wire[:-n] and _one_bit_flipped(data[-n:], wire[-n:])
        assert data == corrupt_wire(wire, "vcrc", decision.bit, link)
    assert max(d.bit for d in plan) >= 4 * n        # the field's upper half too
    link_crc = "FCS" if link == "eth" else "VCRC"
    assert [c.error.split(":")[0] for c in tb.arrived.captures] == [link_crc] * len(wires)


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_corrupt_either_draws_the_kind_per_packet(dut, link):
    tb = FaultTB(dut, link)
    wires = tb.sends(40, size=20)
    faults = LinkFaults(seed=13, corrupt=1.0, corrupt_kind="either")
    sent, arrived = await tb.run(wires, faults)
    plan = faults.plan(wires, link)
    kinds = collections.Counter(d.corrupt_kind for d in plan)
    assert kinds["icrc"] >= 5 and kinds["vcrc"] >= 5, kinds
    for wire, data, decision in zip(wires, arrived, plan):
        assert data == corrupt_wire(wire, decision.corrupt_kind, decision.bit, link)
        assert tb.crc_state(data) == ((False, True) if decision.corrupt_kind == "icrc"
                                      else (True, False))


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_delay_holds_the_packet_and_later_ones_overtake(dut, link):
    tb = FaultTB(dut, link)
    wires = tb.sends(6, size=tb.bb)
    sent, arrived = await tb.run(wires, LinkFaults(latency=3, delay_cycles=300,
                                                   forced={2: "delay"}))
    assert arrived == [wires[i] for i in (0, 1, 3, 4, 5, 2)]
    into, out = tb.sent.captures, tb.arrived.captures
    tb.assert_timing([into[i] for i in (0, 1, 3, 4, 5)], out[:5], 3)
    assert out[5].cycle == tb.last_cycle(into[2]) + 1 + 3 + 300
    assert_counts(tb.stats(), pkts_in=6, pkts_out=6, delayed=1)


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_reorder_swaps_the_packet_with_the_next(dut, link):
    """The packet leaves right behind the next one; with no next packet it leaves alone after
    delay_cycles; a dropped next packet does not count, the one after it does."""
    tb = FaultTB(dut, link)
    wires = tb.sends(6, size=tb.bb)
    sent, arrived = await tb.run(wires, LinkFaults(delay_cycles=400,
                                                   forced={2: "reorder", 5: "reorder"}))
    assert arrived == [wires[i] for i in (0, 1, 3, 2, 4, 5)]
    into, out = tb.sent.captures, tb.arrived.captures
    assert out[3].cycle == tb.last_cycle(out[2]) + 1          # right behind packet 3
    assert out[5].cycle == tb.last_cycle(into[5]) + 1 + 400   # no next packet: alone, late
    assert_counts(tb.stats(), pkts_in=6, pkts_out=6, reordered=2)

    sent, arrived = await tb.run(wires, LinkFaults(delay_cycles=400,
                                                   forced={1: "reorder", 2: "drop"}))
    assert arrived == [wires[i] for i in (0, 3, 1, 4, 5)]
    assert_counts(tb.stats(), pkts_in=6, pkts_out=5, reordered=1, dropped=1)


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_rates_are_honoured(dut, link):
    """10% each of drop, dup, corrupt, delay, reorder and mark over 2000 packets: the model
    decides exactly as LinkFaults.plan predicts from the seed, each count is within 5 sigma of
    200 (mark: none on InfiniBand, where a mark changes nothing), the right bytes arrive, and
    the packets no fault moved keep their order."""
    tb = FaultTB(dut, link)
    rng = rng_for("test_link_fault.test_rates_are_honoured", tb.log)
    count = 2000
    faults = LinkFaults(seed=rng.getrandbits(64), drop=0.1, dup=0.1, corrupt=0.1, delay=0.1,
                        reorder=0.1, mark=0.1, corrupt_kind="either", delay_cycles=150)
    wires = [tb.make(0x04, i, size=rng.randrange(0, 24), route=i) for i in range(count)]
    sent, arrived = await tb.run(wires, faults)
    assert sent == wires, faults.describe()
    plan = faults.plan(wires, link)
    actions = collections.Counter(d.action for d in plan)
    sigma = math.sqrt(count * 0.1 * 0.9)
    for action in ("drop", "dup", "corrupt", "delay", "reorder", "mark"):
        if action == "mark" and link == "ib":
            assert actions[action] == 0, actions
        else:
            assert abs(actions[action] - 200) <= 5 * sigma, (faults.describe(), actions)
    expected = [out for wire, d in zip(wires, plan) for out in d.apply(wire)]
    assert collections.Counter(arrived) == collections.Counter(expected), faults.describe()
    in_order = [out for wire, d in zip(wires, plan)
                if d.action in ("none", "dup", "corrupt", "mark") for out in d.apply(wire)]
    kept = set(in_order)
    assert [data for data in arrived if data in kept] == in_order, faults.describe()
    assert_counts(tb.stats(), pkts_in=count, pkts_out=len(expected), dropped=actions["drop"],
                  duplicated=actions["dup"], corrupted=actions["corrupt"],
                  delayed=actions["delay"], reordered=actions["reorder"],
                  marked=actions["mark"])


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_kind_filter_aims_faults_at_those_kinds(dut, link):
    tb = FaultTB(dut, link)
    wires = tb.every_kind()
    assert {tb.kind_of(w) for w in wires} == {"requests", "acks", "read_responses"}
    for kinds in ({"requests"}, {"acks"}, {"read_responses"}, {"acks", "read_responses"}):
        sent, arrived = await tb.run(wires, LinkFaults(drop=1.0, kinds=kinds))
        assert arrived == [w for w in wires if tb.kind_of(w) not in kinds], kinds
        assert tb.stats()["dropped"] == len(wires) - len(arrived)


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_qpn_filter_aims_faults_at_a_set_of_qps(dut, link):
    """Faults hit only packets whose BTH DestQP is in the set (under any route, a QPN beyond
    the model's set never); with a kind filter as well, only packets both select."""
    tb = FaultTB(dut, link)
    wires = [tb.make(0x04, 0, qp=0x12), tb.make(0x04, 1, qp=0x13, route=2),
             tb.make(0x04, 2, qp=0x1012), tb.make(0x04, 3, qp=0x12, route=1),
             tb.make(0x04, 4, qp=0x13, route=1), tb.make(0x11, 5, qp=0x12, route=2),
             tb.make(0x11, 6, qp=0x13, route=3), tb.make(0x0E, 7, qp=0x12, size=256, route=3)]
    sent, arrived = await tb.run(wires, LinkFaults(drop=1.0, qpns={0x12}))
    assert [tb.psn_of(d) for d in arrived] == [1, 2, 4, 6]   # (0x1012 is beyond the set's QPNs)
    stats = tb.stats()
    assert (stats["last_idx"], stats["last_act"], stats["last_opcode"], stats["last_qpn"],
            stats["last_psn"]) == (7, "drop", 0x0E, 0x12, 7)
    # both filters: only ACKs to QP 0x12
    sent, arrived = await tb.run(wires, LinkFaults(dup=1.0, qpns={0x12}, kinds={"acks"}))
    assert [tb.psn_of(d) for d in arrived] == [0, 1, 2, 3, 4, 5, 5, 6, 7]
    # a set of two: every packet to 0x12 or 0x13
    sent, arrived = await tb.run(wires, LinkFaults(drop=1.0, qpns={0x12, 0x13}))
    assert [tb.psn_of(d) for d in arrived] == [2]


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_forced_faults_hit_exactly_those_packets(dut, link):
    """The forced table acts by packet number whatever the rates and filters say: faults on
    packets no rate may touch (a mark changes an Ethernet frame only), and packets shielded
    (forced none) from a certain drop."""
    tb = FaultTB(dut, link)
    wires = tb.sends(10, size=30)
    faults = LinkFaults(drop=1.0, kinds=set(), corrupt_kind="vcrc",
                        forced={0: "drop", 3: "dup", 4: "corrupt", 6: "mark", 9: "drop"})
    sent, arrived = await tb.run(wires, faults)
    corrupted = corrupt_wire(wires[4], "vcrc", faults.plan(wires, link)[4].bit, link)
    marked = mark_wire(wires[6], link)
    assert (marked != wires[6]) == (link == "eth")
    assert arrived == wires[1:4] + [wires[3], corrupted, wires[5], marked] + wires[7:9]
    assert_counts(tb.stats(), pkts_in=10, pkts_out=9, dropped=2, duplicated=1, corrupted=1,
                  marked=int(link == "eth"))

    sent, arrived = await tb.run(wires, LinkFaults(drop=1.0, forced={2: "none", 7: "none"}))
    assert arrived == [wires[2], wires[7]]
    assert_counts(tb.stats(), pkts_in=10, pkts_out=2, dropped=8)


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_same_seed_replays_and_another_seed_differs(dut, link):
    tb = FaultTB(dut, link)
    rng = rng_for("test_link_fault.test_same_seed_replays", tb.log)
    seed = rng.getrandbits(64)
    wires = [tb.make(0x04, i, size=rng.randrange(0, 3 * tb.bb), route=i) for i in range(300)]

    def faults(s):
        return LinkFaults(seed=s, latency=20, drop=0.1, dup=0.1, corrupt=0.1, delay=0.1,
                          reorder=0.1, corrupt_kind="either", delay_cycles=100)

    runs = []
    for s in (seed, seed, seed ^ 1):
        await tb.run(wires, faults(s))
        runs.append([(c.cycle - tb.sent.captures[0].cycle, c.data)
                     for c in tb.arrived.captures])
    assert runs[0] == runs[1], faults(seed).describe()
    assert [d for _, d in runs[2]] != [d for _, d in runs[0]], faults(seed ^ 1).describe()
    assert faults(seed).plan(wires, link) != faults(seed ^ 1).plan(wires, link)


@cocotb.test()
@cocotb.parametrize(link=LINKS)
async def test_oversized_packet_is_cut_and_aborted(dut, link):
    """Beats past the 4608 bytes a slot holds are dropped; the packet leaves aborted."""
    tb = FaultTB(dut, link)
    too_long = bytes(i & 0xFF for i in range(TAP_BYTES + 3 * tb.bb + 5))
    after = tb.make(0x04, 1, size=8)
    sent, arrived = await tb.run([too_long, after], LinkFaults())
    assert len(arrived) == 2 and arrived[1] == after
    assert arrived[0] == too_long[:TAP_BYTES] and tb.arrived.captures[0].aborted
    assert_counts(tb.stats(), pkts_in=2, pkts_out=2, truncated=1)


@cocotb.test()
async def test_a_mark_sets_ce_on_ecn_capable_frames_only(dut):
    """mark, on Ethernet (a congested switch, RFC 3168): an ECN-capable frame (ECT(0), ECT(1))
    of every route, short and padded or long, arrives with ECN CE and nothing else changed but
    the IPv4 header checksum and the FCS: the codec reads it whole, scapy finds the checksum
    right, and its ICRC is the one sent, which ib_crc and scapy both compute for it (ECN is
    masked out). A frame whose IPv4 checksum was wrong keeps the same error (updated, not
    recomputed). A Not-ECT or CE frame arrives unchanged and is not counted. The model marks
    exactly the frames, and bytes, that LinkFaults.plan predicts."""
    tb = FaultTB(dut, "eth")
    variants = [(route, size, ecn) for route in range(len(tb.routes)) for size in (0, 300)
                for ecn in range(4)]
    frames = [tb.make(0x04, psn, size=size, route=route, ecn=ecn)
              for psn, (route, size, ecn) in enumerate(variants)]
    assert tb.icrc_span(frames[0]).stop < len(frames[0]) - 4            # padded
    bad_checksum = bytearray(tb.make(0x04, len(frames), size=8, ecn=0b10))     # IPv4
    bad_checksum[14 + 11] ^= 0x40           # the header checksum's low byte
    bad_checksum[-4:] = fcs_bytes(bad_checksum[:-4])        # (the ICRC does not cover it)
    frames.append(bytes(bad_checksum))
    faults = LinkFaults(mark=1.0)
    sent, arrived = await tb.run(frames, faults)
    assert len(arrived) == len(frames)

    marked = 0
    for wire, data in zip(frames, arrived):
        ip_at, ip_end = ip_span(wire)
        ipv4 = wire[ip_at] >> 4 == 4
        ecn_shift = 0 if ipv4 else 4        # TOS[1:0], or the traffic class's in byte 1
        if (wire[ip_at + 1] >> ecn_shift & 3) not in (0b01, 0b10):
            assert data == wire
            continue
        marked += 1
        assert data[ip_at + 1] == wire[ip_at + 1] | 3 << ecn_shift
        may_change = {ip_at + 1, *range(len(wire) - 4, len(wire))}
        if ipv4:
            may_change |= {ip_at + 10, ip_at + 11}
        assert {at for at in range(len(wire)) if data[at] != wire[at]} <= may_change
        icrc = tb.icrc_span(wire)
        assert data[icrc] == wire[icrc] and tb.crc_state(data) == (True, True)
        decoded = Ether(data[:-4])
        if ipv4:
            assert decoded[IP].tos & 3 == 3
            assert checksum(raw(decoded[IP])[:20]) == checksum(wire[ip_at:ip_at + 20])
        else:
            assert decoded[IPv6].tc & 3 == 3
        bth = decoded[ScapyBTH]
        bth.icrc = None                     # scapy computes it again
        if Padding in decoded:
            decoded[Padding].underlayer.remove_payload()
        assert raw(decoded) == data[:ip_end]
        if wire == frames[-1]:
            with pytest.raises(PacketError) as failure:
                parse(data, link="eth")
            assert failure.value.check == "IPv4 checksum"
        else:
            assert parse(data, link="eth").roce.tclass & 3 == 3
    assert marked == 2 * 2 * len(tb.routes) + 1         # ECT(0), ECT(1); the bad checksum
    plan = faults.plan(frames, "eth")
    assert sum(d.action == "mark" for d in plan) == marked
    assert arrived == [out for wire, d in zip(frames, plan) for out in d.apply(wire)]
    assert_counts(tb.stats(), pkts_in=len(frames), pkts_out=len(frames), marked=marked)


@cocotb.test()
async def test_a_mark_changes_nothing_on_infiniband(dut):
    """On InfiniBand the model has no ECN field to mark: with every packet drawn for a mark,
    every packet arrives unchanged, none counts as marked, and the plan says none."""
    tb = FaultTB(dut, "ib")
    wires = tb.every_kind()
    faults = LinkFaults(mark=1.0)
    sent, arrived = await tb.run(wires, faults)
    assert arrived == wires
    assert {d.action for d in faults.plan(wires, "ib")} == {"none"}
    stats = tb.stats()
    assert_counts(stats, pkts_in=len(wires), pkts_out=len(wires))
    assert stats["last_act"] == "none"


@cocotb.test()
async def test_the_link_layer_stays_until_a_link_is_named(dut):
    """A cable's link layer is a setting of its own (RdmaTB.set_link writes it when a port's
    link layer is set): a reset and faults applied without a link keep it, so Ethernet frames
    are still read as such; a LinkFaults that names a link sets it."""
    tb = FaultTB(dut, "eth")
    frames = tb.every_kind()
    sent, arrived = await tb.run(frames, LinkFaults(drop=1.0, kinds={"acks"}))
    assert tb.stats()["link"] == "eth"
    assert arrived == [w for w in frames if tb.kind_of(w) != "acks"]
    # read as InfiniBand, a frame's BTH is at byte 8, in its source MAC: no frame is an ACK
    sent, arrived = await tb.run(frames, LinkFaults(drop=1.0, kinds={"acks"}, link="ib"))
    assert tb.stats()["link"] == "ib"
    assert arrived == frames


# ---------------------------------------------------------------------------------------------
# The pytest runner: the link model (on tb/hdl/tb_link_fault.v) at each link width.

@pytest.mark.parametrize("w", UNIT_WIDTHS)
def test_link_fault(w):
    simrun.run(
        toplevel="tb_link_fault",
        test_module="test_link_fault",
        parameters={"DATA_WIDTH": w},
        name=f"link_fault_w{w}",
        rtl=[],
    )
