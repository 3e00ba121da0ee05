"""Unit test of the lossy link model (tb/hdl/sim_link_fault.v, set up through tb/link_faults.py)
on tb/hdl/tb_link_fault.v: a cocotbext-axi source sends real InfiniBand packets into the link,
an HDL receiver takes them (stalling when told), and a sniffer on each side of the link reports
what was sent and what arrived, with the cycle of each packet's first beat. Each test names the
property it proves and checks it exactly; the random ones print their seed."""

import collections
import logging
import math
import warnings

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSource
import pytest

from tb import simrun
from tb.ib_crc import icrc_bytes, vcrc_bytes
from tb.ib_packet import (AETH, BTH, DETH, GRH, LRH, OPCODES, RETH, AtomicAckETH, Packet,
                          PacketError, build, parse)
from tb.link_faults import LinkFaults, corrupt_wire
from tb.seed import rng_for
from tb.sniffer import LinkSniffer

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\..*")
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotb_bus\..*")

GRH_SAMPLE = GRH(sgid=bytes(range(16)), dgid=bytes(range(16, 32)), hop_limit=64)
LRH_SAMPLE = LRH(dlid=0x20, slid=0x10, sl=2)
TAP_BYTES = 4608        # what sim_link_tap and sim_link_fault keep of a packet


# ---------------------------------------------------------------------------------------------
# Packets: every one carries its own PSN, so an arrived packet names the packet it was.

def make(opcode, psn, qp=0x12, size=0, grh=None, **headers):
    """An RC/UC/UD packet's wire bytes with the extension headers its opcode needs."""
    op = OPCODES[opcode]
    defaults = {"reth": RETH(va=0x4000, rkey=0x99, dma_len=size),
                "aeth": AETH(0x1F, psn & 0xFFFFFF),
                "atomic_ack_eth": AtomicAckETH(0x0123456789ABCDEF),
                "deth": DETH(qkey=0x11111111, src_qp=0x31)}
    for name in op.headers:
        headers.setdefault(name, defaults[name])
    payload = bytes((psn + i) & 0xFF for i in range(size))
    return build(Packet(lrh=LRH_SAMPLE, grh=grh, bth=BTH(opcode=opcode, dest_qp=qp, psn=psn),
                        payload=payload, **headers))


def psn_of(data):
    at = 48 if data[1] & 3 == 3 else 8
    return int.from_bytes(data[at + 9:at + 12], "big")


def sends(count, size=16, first_psn=0, **kwargs):
    """`count` RC SEND only packets of `size` bytes, PSNs counting up."""
    return [make(0x04, first_psn + i, size=size, **kwargs) for i in range(count)]


def kind_of(wire):
    """requests / acks / read_responses, from ib_packet's opcode table."""
    operation = parse(wire).op.operation
    if operation == "RDMA_READ_RESPONSE":
        return "read_responses"
    return "acks" if operation in ("ACKNOWLEDGE", "ATOMIC_ACKNOWLEDGE") else "requests"


def every_kind(first_psn=0):
    """Requests (RC, UC, UD), ACK, NAK, atomic ACK and the four READ responses, each without
    and with a GRH (BTH at byte 48)."""
    wires = []
    psn = first_psn
    for grh in (None, GRH_SAMPLE):
        for opcode, size in ((0x04, 40), (0x0A, 100), (0x0C, 0), (0x24, 8), (0x64, 12),
                             (0x11, 0), (0x11, 0), (0x12, 0), (0x0D, 256), (0x0E, 256),
                             (0x0F, 30), (0x10, 5)):
            aeth = {"aeth": AETH(0x61, 7)} if opcode == 0x11 and psn % 2 else {}  # a NAK
            wires.append(make(opcode, psn, size=size, grh=grh, qp=0x40 + psn, **aeth))
            psn += 1
    return wires


def mixed(bb, first_psn=0):
    """Every fill of the last beat (and the ICRC/VCRC split across beats), GRH packets, a
    full 4096-byte payload, answers: a sample of what a port sends."""
    wires = [make(0x04, first_psn + size, size=size, grh=GRH_SAMPLE if size % 5 == 0 else None)
             for size in range(0, 2 * bb + 4)]
    psn = first_psn + 2 * bb + 4
    wires += [make(0x0A, psn, size=4096), make(0x11, psn + 1), make(0x10, psn + 2, size=77),
              make(0x0C, psn + 3, grh=GRH_SAMPLE)]
    return wires


# ---------------------------------------------------------------------------------------------

class FaultTB:
    def __init__(self, dut):
        self.dut = dut
        self.link = dut.link
        self.log = logging.getLogger("cocotb.test_link_fault")
        logging.getLogger(f"cocotb.{dut._name}.s_axis").setLevel(logging.WARNING)
        logging.getLogger("cocotb.sniffer").setLevel(logging.ERROR)
        # on clk under both simulators: the harness gives Verilator a registered tready
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.bb = len(dut.s_axis_tkeep)
        self.depth = None
        self.sent = self.arrived = None

    async def reset(self, faults=None):
        """Reset the link (queues, counters, generator; not its settings), give it `faults`
        (unless None) and start fresh sniffers on both sides."""
        dut = self.dut
        dut.sink_hold.value = 0
        dut.sink_stall_rate.value = 0
        dut.rst.value = 1
        await ClockCycles(dut.clk, 3)
        if faults is not None:
            faults.apply(self.link)
            self.log.info("link: %s", faults.describe())
        await ClockCycles(dut.clk, 1)
        dut.rst.value = 0
        await RisingEdge(dut.clk)
        self.depth = int(dut.link_depth.value)
        for sniffer in (self.sent, self.arrived):
            if sniffer is not None:
                sniffer.kill()
        self.sent = LinkSniffer(dut.s_axis_tap, dut.tb_clk, dut.cycle, interface=0)
        self.arrived = LinkSniffer(dut.m_axis_tap, dut.tb_clk, dut.cycle, interface=1)

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
        while int(self.link.in_flight.value) or int(self.link.m_axis_tvalid.value):
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
        return LinkFaults.stats(self.link)

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
    base = dict(dropped=0, duplicated=0, corrupted=0, delayed=0, reordered=0, truncated=0,
                in_flight=0)
    base.update(expected)
    assert {name: stats[name] for name in base} == base, stats


def by_psn(wires):
    return {psn_of(wire): wire for wire in wires}


# ---------------------------------------------------------------------------------------------

@cocotb.test()
async def test_zero_config_link_is_a_wire_at_full_rate(dut):
    """With its reset defaults the link delivers every packet unchanged and in order, aborted
    ones still aborted, each first beat 1 cycle after its last beat entered, and moves one beat
    per cycle in and out at once."""
    tb = FaultTB(dut)
    await tb.reset()        # the settings as the HDL starts: nothing applied
    for name, default in (("latency", 0), ("drop_rate", 0), ("dup_rate", 0),
                          ("corrupt_rate", 0), ("delay_rate", 0), ("reorder_rate", 0),
                          ("kind_mask", 7), ("qpn_set_en", 0), ("force_act", 0)):
        assert int(getattr(tb.link, name).value) == default, name

    wires = mixed(tb.bb)
    aborted = make(0x04, 999, size=50)
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
    same = sends(60, size=3 * tb.bb)
    await tb.send(same)
    await tb.drain()
    assert tb.arrived_data() == same
    tb.assert_back_to_back(tb.sent.captures)
    tb.assert_back_to_back(tb.arrived.captures)
    for into, out in zip(tb.sent.captures, tb.arrived.captures):
        assert out.cycle == tb.last_cycle(into) + 1
    assert tb.arrived.beats == tb.sent.beats == 60 * tb.beats(same[0])


@cocotb.test()
async def test_latency_is_exact(dut):
    """Latency 0, 1 and 500: a packet's first beat leaves exactly 1 + latency cycles after its
    last beat entered (later only while the packet before it is still leaving)."""
    tb = FaultTB(dut)
    for latency in (0, 1, 500):
        wires = [make(0x04, i, size=(37 * i) % (3 * tb.bb)) for i in range(12)] \
            + [make(0x0A, 12, size=4096), make(0x11, 13)]
        sent, arrived = await tb.run(wires, LinkFaults(latency=latency))
        assert sent == wires and arrived == wires
        tb.assert_back_to_back(tb.sent.captures)
        tb.assert_timing(tb.sent.captures, tb.arrived.captures, latency)
        first_in, first_out = tb.sent.captures[0], tb.arrived.captures[0]
        assert first_out.cycle - tb.last_cycle(first_in) == 1 + latency
        # a lone packet long after the burst
        await ClockCycles(dut.clk, 50)
        lone = make(0x04, 14, size=9)
        await tb.send([lone])
        await tb.drain()
        assert tb.arrived.captures[-1].data == lone
        assert tb.arrived.captures[-1].cycle == tb.last_cycle(tb.sent.captures[-1]) + 1 + latency


@cocotb.test()
async def test_backpressure_never_loses_a_packet(dut):
    """A receiver that stalls half the time, and one that stops while DEPTH packets fill the
    link: s_axis_tready drops, nothing is lost, order is kept."""
    tb = FaultTB(dut)
    await tb.reset(LinkFaults())
    dut.sink_stall_rate.value = 128
    wires = mixed(tb.bb)
    await tb.send(wires)
    await tb.drain()
    assert tb.arrived_data() == wires
    span = tb.arrived.last_beat_cycle - tb.arrived.captures[0].cycle + 1
    assert span > 1.5 * tb.arrived.beats        # the receiver did stall
    assert_counts(tb.stats(), pkts_in=len(wires), pkts_out=len(wires))

    # the receiver stops: DEPTH packets go in, then the link holds the source off
    await tb.reset()
    dut.sink_hold.value = 1
    wires = sends(tb.depth + 8, size=3 * tb.bb)       # >= 3 beats: each holds its slot
    await tb.send(wires)
    await ClockCycles(dut.clk, (tb.depth + 8) * tb.beats(wires[0]) + 100)
    assert len(tb.sent.captures) == tb.depth
    assert int(tb.link.in_flight.value) == tb.depth
    assert int(tb.link.s_axis_tready.value) == 0
    assert tb.arrived.beats == 0
    dut.sink_hold.value = 0
    await tb.drain()
    assert tb.sent_data() == wires and tb.arrived_data() == wires
    assert_counts(tb.stats(), pkts_in=len(wires), pkts_out=len(wires))


@cocotb.test()
async def test_drop_removes_exactly_that_packet(dut):
    tb = FaultTB(dut)
    wires = sends(8)
    sent, arrived = await tb.run(wires, LinkFaults(forced={0: "drop", 3: "drop", 7: "drop"}))
    assert sent == wires
    assert arrived == [w for i, w in enumerate(wires) if i not in (0, 3, 7)]
    stats = tb.stats()
    assert_counts(stats, pkts_in=8, pkts_out=5, dropped=3)
    assert (stats["last_idx"], stats["last_act"]) == (7, "drop")


@cocotb.test()
async def test_dup_delivers_the_packet_twice_back_to_back(dut):
    tb = FaultTB(dut)
    wires = sends(6, size=2 * tb.bb)
    sent, arrived = await tb.run(wires, LinkFaults(forced={1: "dup", 4: "dup"}))
    assert arrived == wires[:2] + wires[1:5] + wires[4:]
    captures = tb.arrived.captures
    for first in (1, 5):        # the copies, in arrival order
        assert captures[first + 1].cycle == tb.last_cycle(captures[first]) + 1
    assert_counts(tb.stats(), pkts_in=6, pkts_out=8, duplicated=2)


def _crc_state(data):
    """(ICRC right, VCRC right) of a packet's wire bytes."""
    return icrc_bytes(data[:-6]) == data[-6:-2], vcrc_bytes(data[:-2]) == data[-2:]


def _one_bit_flipped(a, b):
    return bin(int.from_bytes(a, "little") ^ int.from_bytes(b, "little")).count("1") == 1


@cocotb.test()
async def test_corrupt_icrc_leaves_only_the_icrc_bad(dut):
    """corrupt_kind ICRC: one bit of the ICRC flipped, the VCRC recomputed over the packet, so
    ib_crc finds the ICRC bad and the VCRC good; every size, split and a 4 KiB payload."""
    tb = FaultTB(dut)
    wires = mixed(tb.bb)
    faults = LinkFaults(seed=11, corrupt=1.0, corrupt_kind="icrc")
    sent, arrived = await tb.run(wires, faults)
    plan = faults.plan(wires)
    assert len(arrived) == len(wires)
    for wire, data, decision in zip(wires, arrived, plan):
        assert _crc_state(data) == (False, True)
        assert data[:-6] == wire[:-6] and _one_bit_flipped(data[-6:-2], wire[-6:-2])
        assert data == corrupt_wire(wire, "icrc", decision.bit)
        with pytest.raises(PacketError) as failure:
            parse(data)
        assert failure.value.check == "ICRC"
    assert {d.bit for d in plan} != {plan[0].bit}      # the bit is drawn per packet
    assert_counts(tb.stats(), pkts_in=len(wires), pkts_out=len(wires), corrupted=len(wires))


@cocotb.test()
async def test_corrupt_vcrc_leaves_only_the_vcrc_bad(dut):
    tb = FaultTB(dut)
    wires = mixed(tb.bb)
    faults = LinkFaults(seed=12, corrupt=1.0, corrupt_kind="vcrc")
    sent, arrived = await tb.run(wires, faults)
    for wire, data, decision in zip(wires, arrived, faults.plan(wires)):
        assert _crc_state(data) == (True, False)
        assert data[:-2] == wire[:-2] and _one_bit_flipped(data[-2:], wire[-2:])
        assert data == corrupt_wire(wire, "vcrc", decision.bit)
    assert len(arrived) == len(wires)
    assert [c.error.split(":")[0] for c in tb.arrived.captures] == ["VCRC"] * len(wires)


@cocotb.test()
async def test_corrupt_either_draws_the_kind_per_packet(dut):
    tb = FaultTB(dut)
    wires = sends(40, size=20)
    faults = LinkFaults(seed=13, corrupt=1.0, corrupt_kind="either")
    sent, arrived = await tb.run(wires, faults)
    plan = faults.plan(wires)
    kinds = collections.Counter(d.corrupt_kind for d in plan)
    assert kinds["icrc"] >= 5 and kinds["vcrc"] >= 5, kinds
    for wire, data, decision in zip(wires, arrived, plan):
        assert data == corrupt_wire(wire, decision.corrupt_kind, decision.bit)
        assert _crc_state(data) == ((False, True) if decision.corrupt_kind == "icrc"
                                    else (True, False))


@cocotb.test()
async def test_delay_holds_the_packet_and_later_ones_overtake(dut):
    tb = FaultTB(dut)
    wires = sends(6, size=tb.bb)
    sent, arrived = await tb.run(wires, LinkFaults(latency=3, delay_cycles=300,
                                                   forced={2: "delay"}))
    assert arrived == [wires[i] for i in (0, 1, 3, 4, 5, 2)]
    into, out = tb.sent.captures, tb.arrived.captures
    tb.assert_timing([into[i] for i in (0, 1, 3, 4, 5)], out[:5], 3)
    assert out[5].cycle == tb.last_cycle(into[2]) + 1 + 3 + 300
    assert_counts(tb.stats(), pkts_in=6, pkts_out=6, delayed=1)


@cocotb.test()
async def test_reorder_swaps_the_packet_with_the_next(dut):
    """The packet leaves right behind the next one; with no next packet it leaves alone after
    delay_cycles; a dropped next packet does not count, the one after it does."""
    tb = FaultTB(dut)
    wires = sends(6, size=tb.bb)
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
async def test_rates_are_honoured(dut):
    """10% each of drop, dup, corrupt, delay and reorder over 2000 packets: the model decides
    exactly as LinkFaults.plan predicts from the seed, each count is within 5 sigma of 200,
    the right bytes arrive, and the packets no fault moved keep their order."""
    tb = FaultTB(dut)
    rng = rng_for("test_link_fault.test_rates_are_honoured", tb.log)
    count = 2000
    faults = LinkFaults(seed=rng.getrandbits(64), drop=0.1, dup=0.1, corrupt=0.1, delay=0.1,
                        reorder=0.1, corrupt_kind="either", delay_cycles=150)
    wires = [make(0x04, i, size=rng.randrange(0, 24)) for i in range(count)]
    sent, arrived = await tb.run(wires, faults)
    assert sent == wires, faults.describe()
    plan = faults.plan(wires)
    actions = collections.Counter(d.action for d in plan)
    sigma = math.sqrt(count * 0.1 * 0.9)
    for action in ("drop", "dup", "corrupt", "delay", "reorder"):
        assert abs(actions[action] - 200) <= 5 * sigma, (faults.describe(), actions)
    expected = [out for wire, d in zip(wires, plan) for out in d.apply(wire)]
    assert collections.Counter(arrived) == collections.Counter(expected), faults.describe()
    in_order = [out for wire, d in zip(wires, plan) if d.action in ("none", "dup", "corrupt")
                for out in d.apply(wire)]
    kept = set(in_order)
    assert [data for data in arrived if data in kept] == in_order, faults.describe()
    assert_counts(tb.stats(), pkts_in=count, pkts_out=len(expected), dropped=actions["drop"],
                  duplicated=actions["dup"], corrupted=actions["corrupt"],
                  delayed=actions["delay"], reordered=actions["reorder"])


@cocotb.test()
async def test_kind_filter_aims_faults_at_those_kinds(dut):
    tb = FaultTB(dut)
    wires = every_kind()
    assert {kind_of(w) for w in wires} == {"requests", "acks", "read_responses"}
    for kinds in ({"requests"}, {"acks"}, {"read_responses"}, {"acks", "read_responses"}):
        sent, arrived = await tb.run(wires, LinkFaults(drop=1.0, kinds=kinds))
        assert arrived == [w for w in wires if kind_of(w) not in kinds], kinds
        assert tb.stats()["dropped"] == len(wires) - len(arrived)


@cocotb.test()
async def test_qpn_filter_aims_faults_at_a_set_of_qps(dut):
    """Faults hit only packets whose BTH DestQP is in the set (with or without a GRH, a QPN
    beyond the model's set never); with a kind filter as well, only packets both select."""
    tb = FaultTB(dut)
    wires = [make(0x04, 0, qp=0x12), make(0x04, 1, qp=0x13), make(0x04, 2, qp=0x1012),
             make(0x04, 3, qp=0x12, grh=GRH_SAMPLE), make(0x04, 4, qp=0x13, grh=GRH_SAMPLE),
             make(0x11, 5, qp=0x12), make(0x11, 6, qp=0x13, grh=GRH_SAMPLE),
             make(0x0E, 7, qp=0x12, size=256, grh=GRH_SAMPLE)]
    sent, arrived = await tb.run(wires, LinkFaults(drop=1.0, qpns={0x12}))
    assert [psn_of(d) for d in arrived] == [1, 2, 4, 6]   # (0x1012 is beyond the set's QPNs)
    stats = tb.stats()
    assert (stats["last_idx"], stats["last_act"], stats["last_opcode"], stats["last_qpn"],
            stats["last_psn"]) == (7, "drop", 0x0E, 0x12, 7)
    # both filters: only ACKs to QP 0x12
    sent, arrived = await tb.run(wires, LinkFaults(dup=1.0, qpns={0x12}, kinds={"acks"}))
    assert [psn_of(d) for d in arrived] == [0, 1, 2, 3, 4, 5, 5, 6, 7]
    # a set of two: every packet to 0x12 or 0x13
    sent, arrived = await tb.run(wires, LinkFaults(drop=1.0, qpns={0x12, 0x13}))
    assert [psn_of(d) for d in arrived] == [2]


@cocotb.test()
async def test_forced_faults_hit_exactly_those_packets(dut):
    """The forced table acts by packet number whatever the rates and filters say: faults on
    packets no rate may touch, and packets shielded (forced none) from a certain drop."""
    tb = FaultTB(dut)
    wires = sends(10, size=30)
    faults = LinkFaults(drop=1.0, kinds=set(), corrupt_kind="vcrc",
                        forced={0: "drop", 3: "dup", 4: "corrupt", 9: "drop"})
    sent, arrived = await tb.run(wires, faults)
    corrupted = corrupt_wire(wires[4], "vcrc", faults.plan(wires)[4].bit)
    assert arrived == wires[1:4] + [wires[3], corrupted] + wires[5:9]
    assert_counts(tb.stats(), pkts_in=10, pkts_out=9, dropped=2, duplicated=1, corrupted=1)

    sent, arrived = await tb.run(wires, LinkFaults(drop=1.0, forced={2: "none", 7: "none"}))
    assert arrived == [wires[2], wires[7]]
    assert_counts(tb.stats(), pkts_in=10, pkts_out=2, dropped=8)


@cocotb.test()
async def test_same_seed_replays_and_another_seed_differs(dut):
    tb = FaultTB(dut)
    rng = rng_for("test_link_fault.test_same_seed_replays", tb.log)
    seed = rng.getrandbits(64)
    wires = [make(0x04, i, size=rng.randrange(0, 3 * tb.bb)) for i in range(300)]

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
    assert faults(seed).plan(wires) != faults(seed ^ 1).plan(wires)


@cocotb.test()
async def test_oversized_packet_is_cut_and_aborted(dut):
    """Beats past the 4608 bytes a slot holds are dropped; the packet leaves aborted."""
    tb = FaultTB(dut)
    too_long = bytes(i & 0xFF for i in range(TAP_BYTES + 3 * tb.bb + 5))
    after = make(0x04, 1, size=8)
    sent, arrived = await tb.run([too_long, after], LinkFaults())
    assert len(arrived) == 2 and arrived[1] == after
    assert arrived[0] == too_long[:TAP_BYTES] and tb.arrived.captures[0].aborted
    assert_counts(tb.stats(), pkts_in=2, pkts_out=2, truncated=1)


# ---------------------------------------------------------------------------------------------
# The pytest runner: the link model (on tb/hdl/tb_link_fault.v) at each link width.

@pytest.mark.parametrize("w", [64, 256, 512])
def test_link_fault(w):
    simrun.run(
        toplevel="tb_link_fault",
        test_module="test_link_fault",
        parameters={"DATA_WIDTH": w},
        name=f"link_fault_w{w}",
        rtl=[],
    )
