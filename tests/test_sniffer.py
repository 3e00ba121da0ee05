"""Self-test of the link sniffer (tb/sniffer.py) on tb/hdl/tb_link_loop.v: a cocotbext-axi
source drives packets into a wire-through link, a sink takes them (with backpressure), and the
sniffer on the link must report exactly what the sink received, when it received it."""

import logging
import math
import random
import struct
import warnings

import cocotb
from cocotb.simtime import convert
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
import pytest

from tb import simrun
from tb.ib_crc import vcrc_bytes
from tb.ib_packet import (AETH, BTH, DETH, GRH, LRH, RETH, AtomicETH, ImmDt, Packet, build,
                          packetize, parse)
from tb.sniffer import LinkSniffer

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\..*")

# Under Verilator the cocotbext-axi models run on the falling edge and see a handshake half a
# cycle late (docs/debugging.md): with pauses they would disagree with the link about which
# beats moved, and the HDL tap sees the link exactly. There they run without pauses.
ON_VERILATOR = "verilator" in getattr(cocotb, "SIM_NAME", "").lower()

GRH_SAMPLE = GRH(sgid=bytes(range(16)), dgid=bytes(range(16, 32)), hop_limit=64)


class LoopTB:
    def __init__(self, dut):
        self.dut = dut
        for prefix in ("s_axis", "m_axis"):
            logging.getLogger(f"cocotb.{dut._name}.{prefix}").setLevel(logging.WARNING)
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.tb_clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.tb_clk, dut.rst)
        self.beat_bytes = len(dut.m_axis_tkeep)
        self.sniffer = None

    async def reset(self):
        self.dut.rst.value = 1
        await ClockCycles(self.dut.tb_clk, 4)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.tb_clk)
        self.sniffer = LinkSniffer(self.dut.m_axis_tap, self.dut.tb_clk, self.dut.cycle, mtu=256,
                                   interface=2)


def pauses(rng, probability):
    while True:
        yield rng.random() < probability


def sample_packets(beat_bytes):
    """Multi-packet messages, every single-packet kind, and UD packets whose lengths leave
    every possible number of bytes in the last beat."""
    lrh = LRH(dlid=0x20, slid=0x10, sl=2)
    message = bytes(i & 0xFF for i in range(700))
    packets = packetize("RC", "SEND", message, 256, lrh=lrh, dest_qp=0x12, psn=0xFFFFFF)
    packets += packetize("UC", "RDMA_WRITE", message[:300], 256, lrh=lrh, dest_qp=0x13, psn=7,
                         grh=GRH_SAMPLE, reth=RETH(va=0x4000, rkey=0x99, dma_len=300),
                         immdt=ImmDt(0x01020304))
    packets += [
        Packet(lrh=lrh, bth=BTH(opcode=0x11, dest_qp=0x12, psn=5), aeth=AETH(0x1F, 3)),
        Packet(lrh=lrh, bth=BTH(opcode=0x0C, dest_qp=0x12, psn=6, ackreq=True),
               reth=RETH(va=0x8000, rkey=0x55, dma_len=4096)),
        Packet(lrh=lrh, bth=BTH(opcode=0x13, dest_qp=0x12, psn=7),
               atomic_eth=AtomicETH(va=0x10, rkey=0x55, swap_add=1, compare=2)),
    ]
    packets += [Packet(lrh=lrh, grh=GRH_SAMPLE if size % 3 else None,
                       bth=BTH(opcode=0x64, dest_qp=0x30, psn=size),
                       deth=DETH(qkey=0x11111111, src_qp=0x31), payload=bytes([size]) * size)
                for size in range(0, 2 * beat_bytes + 4)]
    return packets


def cycle_at(steps):
    """The harness's cycle counter during the clock cycle that ends at or after `steps`: clk
    rises at 2 ns + 4 ns * k, and the counter counts the rising edges before."""
    return math.ceil((convert(steps, "step", to="ns") - 2) / 4)


@cocotb.test()
async def test_reassembles_packets_under_backpressure(dut):
    tb = LoopTB(dut)
    await tb.reset()
    rng = random.Random(1)
    wires = [build(packet) for packet in sample_packets(tb.beat_bytes)]
    if not ON_VERILATOR:
        tb.sink.set_pause_generator(pauses(rng, 0.3))

    # first half queued at once: back to back, tvalid may stay high across packets
    half = len(wires) // 2
    for wire in wires[:half]:
        await tb.source.send(wire)
    await tb.source.wait()
    # then with the source pausing mid-packet and idle gaps between packets
    if not ON_VERILATOR:
        tb.source.set_pause_generator(pauses(rng, 0.2))
    for wire in wires[half:]:
        await tb.source.send(wire)
        await tb.source.wait()
        await ClockCycles(dut.tb_clk, rng.randrange(0, 6))

    received = [await tb.sink.recv() for _ in wires]
    await RisingEdge(dut.tb_clk)    # the sniffer takes a packet at the end of its last beat's step
    assert [bytes(frame.tdata) for frame in received] == wires      # the link itself
    captures = tb.sniffer.captures
    assert [capture.data for capture in captures] == wires
    assert tb.sniffer.errors() == []
    assert tb.sniffer.packets() == [parse(wire) for wire in wires]
    assert [capture.cycle for capture in captures] == [cycle_at(frame.sim_time_start)
                                                       for frame in received]


@cocotb.test()
async def test_python_wakes_once_per_packet(dut):
    """An idle link costs nothing, and a packet of many beats wakes the sniffer once; the beat
    count and the last beat's cycle come from the tap."""
    tb = LoopTB(dut)
    await tb.reset()
    await ClockCycles(dut.tb_clk, 2000)
    assert tb.sniffer.wakes == 0 and tb.sniffer.beats == 0
    assert tb.sniffer.last_beat_cycle is None
    wire = build(sample_packets(tb.beat_bytes)[0])
    await tb.source.send(wire)
    await tb.source.wait()
    [frame] = [await tb.sink.recv()]
    await ClockCycles(dut.tb_clk, 2000)
    beats = math.ceil(len(wire) / tb.beat_bytes)
    assert beats > 4 and tb.sniffer.wakes == 1, tb.sniffer.wakes
    assert tb.sniffer.beats == beats
    assert tb.sniffer.last_beat_cycle == cycle_at(frame.sim_time_end)
    assert len(tb.sniffer.packets()) == 1


@cocotb.test()
async def test_bad_packets_are_kept_as_errors(dut):
    tb = LoopTB(dut)
    await tb.reset()
    good = build(sample_packets(tb.beat_bytes)[-1])
    body = bytearray(good[:-2])
    body[-1] ^= 0xFF                                            # the ICRC
    bad_icrc = bytes(body) + vcrc_bytes(body)
    sent = [
        bad_icrc,
        bytes(10),
        AxiStreamFrame(good, tuser=[0] * (len(good) - 1) + [1]),   # aborted on its last beat
        AxiStreamFrame(good, tkeep=[1, 1, 0] + [1] * (len(good) - 3)),
        good,
    ]
    for frame in sent:
        await tb.source.send(frame)
    await tb.source.wait()
    await ClockCycles(dut.tb_clk, 4)

    captures = tb.sniffer.captures
    assert len(captures) == len(sent)
    assert captures[0].error.startswith("ICRC:") and captures[0].data == bad_icrc
    assert captures[1].error.startswith("truncated:")
    assert captures[2].aborted and captures[2].data == good
    assert captures[3].error.startswith("framing: tkeep")
    assert captures[4].error is None and captures[4].data == good
    assert tb.sniffer.errors() == captures[:4]

    tb.sniffer.write_pcap("sniffed.pcap")
    with open("sniffed.pcap", "rb") as pcap:
        data = pcap.read()
    assert struct.unpack_from("<I", data, 20) == (197,)             # link type ERF
    at = 24
    for capture in captures:
        length = struct.unpack_from("<I", data, at + 8)[0]
        erf = data[at + 16:at + 32]
        assert erf[9] == 2 | 0x04 | (0x10 if capture.aborted else 0)   # interface 2
        assert data[at + 32:at + 16 + length] == capture.data
        at += 16 + length
    assert at == len(data)


# ---------------------------------------------------------------------------------------------
# The pytest runner: Link sniffer self-test (on tb/hdl/tb_link_loop.v) at two link widths.

@pytest.mark.parametrize("w", [64, 256])
def test_sniffer(w):
    simrun.run(
        toplevel="tb_link_loop",
        test_module="test_sniffer",
        parameters={"DATA_WIDTH": w},
        name=f"sniffer_w{w}",
        rtl=[],
    )
