"""A cocotb sniffer for one link stream of a harness: it reassembles the packets that cross the
link, decodes each with ib_packet and can write them to a pcap file Wireshark reads.

The link is an AXI-Stream `<prefix>_tdata/_tkeep/_tvalid/_tready/_tlast/_tuser`: byte 0 of a
packet is tdata[7:0] of its first beat, the kept bytes of every beat are its low bytes (tkeep
contiguous from bit 0), tlast marks the last beat, and tuser=1 on the last beat marks a packet
the sender aborted. The harness supplies `tb_clk` (the edge bus models sample on: the clock
under Icarus, its falling edge under Verilator, see tb/hdl/tb_rdma_dev.v) and the free-running
`cycle` counter.
"""

import logging
from dataclasses import dataclass

import cocotb
from cocotb.triggers import RisingEdge

from ib_packet import Packet, PacketError, parse
from pcap import PcapWriter

CLOCK_PERIOD_NS = 4     # the harnesses' clock: pcap timestamps are cycle x 4 ns


@dataclass
class Capture:
    """One packet seen on the link: the cycle of its first beat, its bytes, and either its
    decoding or why there is none (aborted, broken framing, or the failed ib_packet check)."""
    cycle: int
    data: bytes
    packet: Packet | None = None
    error: str | None = None
    aborted: bool = False


class LinkSniffer:
    """Watches `<prefix>_*` of `dut` from construction on (start it after reset). An idle link
    costs nothing: the sniffer sleeps until tvalid rises and steps one cycle at a time only
    while tvalid is high. `mtu`, when given, is the path MTU packets are checked against."""

    def __init__(self, dut, prefix, mtu=None, interface=0):
        self.log = logging.getLogger(f"cocotb.sniffer.{prefix}")
        self.clock = dut.tb_clk
        self.cycle = dut.cycle
        self.tdata = getattr(dut, f"{prefix}_tdata")
        self.tkeep = getattr(dut, f"{prefix}_tkeep")
        self.tvalid = getattr(dut, f"{prefix}_tvalid")
        self.tready = getattr(dut, f"{prefix}_tready")
        self.tlast = getattr(dut, f"{prefix}_tlast")
        self.tuser = getattr(dut, f"{prefix}_tuser")
        self.mtu = mtu
        self.interface = interface
        self.captures = []
        self.beats = 0              # beats the link carried
        self.last_beat_cycle = None
        self.sampled_cycles = 0     # clock edges the sniffer woke on: the cost of watching
        cocotb.start_soon(self._run())

    def packets(self):
        """The packets that decoded."""
        return [capture.packet for capture in self.captures if capture.packet is not None]

    def errors(self):
        """The captures that did not decode (aborted ones included)."""
        return [capture for capture in self.captures if capture.error is not None]

    def write_pcap(self, path, period_ns=CLOCK_PERIOD_NS):
        """Every capture as an ERF InfiniBand record, aborted ones flagged as RX errors."""
        with PcapWriter(path) as pcap:
            for capture in self.captures:
                pcap.write(capture.data, capture.cycle * period_ns, self.interface,
                           rx_error=capture.aborted)

    async def _run(self):
        data = bytearray()
        start = None
        framing = None      # the first framing fault of the packet in flight
        while True:
            if self.tvalid.value != 1:
                await RisingEdge(self.tvalid)
            # at a tb_clk edge the link holds the beat that a clock edge takes: this edge under
            # Icarus, the next one under Verilator (tb_clk is the falling edge there)
            await RisingEdge(self.clock)
            self.sampled_cycles += 1
            if self.tvalid.value != 1 or self.tready.value != 1:
                continue
            self.beats += 1
            self.last_beat_cycle = int(self.cycle.value)
            if start is None:
                start = int(self.cycle.value)
            keep, last, user = self.tkeep.value, self.tlast.value, self.tuser.value
            if not (keep.is_resolvable and last.is_resolvable and user.is_resolvable):
                framing = framing or f"tkeep/tlast/tuser not 0/1 ({keep}, {last}, {user})"
                keep = keep.resolve("zeros")
            keep = int(keep)
            beat = self.tdata.value.resolve("zeros").to_bytes(byteorder="little")
            if keep & (keep + 1) == 0:
                data += beat[:keep.bit_length()]
            else:
                framing = framing or f"tkeep {keep:#x} is not contiguous from byte 0"
                data += bytes(byte for lane, byte in enumerate(beat) if keep >> lane & 1)
            if last == 1:
                self._capture(start, bytes(data), framing, aborted=user == 1)
                data = bytearray()
                start = None
                framing = None

    def _capture(self, cycle, data, framing, aborted):
        if aborted:
            capture = Capture(cycle, data, error="aborted by the sender", aborted=True)
        elif framing:
            capture = Capture(cycle, data, error=f"framing: {framing}")
        else:
            try:
                capture = Capture(cycle, data, packet=parse(data, self.mtu))
            except PacketError as failure:
                capture = Capture(cycle, data, error=str(failure))
        if aborted:
            self.log.info("cycle %d: %d bytes, aborted by the sender", cycle, len(data))
        elif capture.error:
            self.log.warning("cycle %d: %d bytes, %s", cycle, len(data), capture.error)
        else:
            self.log.debug("cycle %d: %s", cycle, capture.packet.summary())
        self.captures.append(capture)
