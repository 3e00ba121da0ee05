"""A sniffer for one link of a harness: it takes each packet that crossed the link whole from
the link's HDL tap (tb/hdl/sim_link_tap.v), decodes it with ib_packet and can write the packets
to a pcap file Wireshark reads. The link is InfiniBand (packets LRH through VCRC) or Ethernet
(RoCE v2 frames, destination MAC through FCS).

The link is an AXI-Stream: byte 0 of a packet is tdata[7:0] of its first beat, the kept bytes
of every beat are its low bytes (tkeep contiguous from bit 0), tlast marks the last beat, and
tuser=1 on the last beat marks a packet the sender aborted. The tap samples on the device's
clock edge in HDL, so the sniffer sees exactly the beats the far end took, under Icarus and
Verilator alike, and Python wakes once per packet, never per beat. An Ethernet frame the codec
decodes is also judged by scapy's RoCE layer (tb/scapy_judge.py); a disagreement is the
capture's error.

LinkSniffer is a cocotb-bus BusMonitor: each capture goes to its callbacks (the captures list
is one) and wakes `wait_for_recv`.
"""

import logging
from dataclasses import dataclass

from cocotb.triggers import ReadOnly, ValueChange
from cocotb_bus.monitors import BusMonitor

from . import scapy_judge
from .ib_packet import LINKS, Packet, PacketError, parse
from .pcap import PcapWriter
from .signals import read_int

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


class LinkSniffer(BusMonitor):
    """Watches the sim_link_tap instance `tap` from construction on (start it after reset).
    `clock` and `cycle` are the harness's tb_clk and free-running cycle counter (the scoreboard
    waits on them); `mtu`, when given, is the path MTU packets are checked against;
    `interface` is the ERF capture interface of the link in InfiniBand pcaps; `link` is "ib"
    or "eth" (RoCE v2 frames, decoded with `parse(..., link="eth")`, written to Ethernet
    pcaps)."""

    _signals = ["packets", "data", "keep", "pkt_beats", "pkt_cycle", "pkt_user", "pkt_x",
                "pkt_long", "pkt_keep_ok", "pkt_last_keep", "beats", "last_beat_cycle", "tdata"]

    def __init__(self, tap, clock, cycle, mtu=None, interface=0, link="ib"):
        if link not in LINKS:
            raise ValueError(f"link {link!r} is not one of {LINKS}")
        self.cycle = cycle
        self.mtu = mtu
        self.interface = interface
        self.link = link
        self.captures = []
        self.wakes = 0              # times Python woke for this link: the cost of watching
        super().__init__(tap, None, clock, callback=self.captures.append)
        self.log = logging.getLogger(f"cocotb.sniffer.{tap._name}")
        self.beat_bytes = len(self.bus.tdata) // 8
        self.max_beats = len(self.bus.data)
        self._gpi = {}      # (array, beat) -> the simulator object of a tap word, once used
        self._beats_before = int(self.bus.beats.value)

    @property
    def beats(self):
        """Beats the link carried since the sniffer started."""
        return int(self.bus.beats.value) - self._beats_before

    @property
    def last_beat_cycle(self):
        """The cycle of the link's last beat, None before the first since the sniffer started."""
        return int(self.bus.last_beat_cycle.value) if self.beats else None

    def packets(self):
        """The packets that decoded."""
        return [capture.packet for capture in self.captures if capture.packet is not None]

    def errors(self):
        """The captures that did not decode (aborted ones included)."""
        return [capture for capture in self.captures if capture.error is not None]

    def write_pcap(self, path, period_ns=CLOCK_PERIOD_NS, captures=None, link=None):
        """Every capture (or those of `captures`, taken while the link was `link`): on
        InfiniBand as an ERF record, aborted ones flagged as RX errors; on Ethernet as a frame
        without its FCS, aborted ones unflagged (pcap has no flag)."""
        with PcapWriter(path, link or self.link) as pcap:
            for capture in self.captures if captures is None else captures:
                pcap.write(capture.data, capture.cycle * period_ns, self.interface,
                           rx_error=capture.aborted)

    async def _monitor_recv(self):
        seen = int(self.bus.packets.value)
        while True:
            await ValueChange(self.bus.packets)
            await ReadOnly()    # the tap's other registers change in the same time step
            self.wakes += 1
            count = int(self.bus.packets.value)
            if count != seen + 1:   # cannot happen while Python wakes on every change
                raise RuntimeError(f"link tap {self.bus._entity._name}: {count - seen - 1} "
                                   f"packets ended unseen")
            seen = count
            self._recv(self._take())

    def _obj(self, array, beat):
        """The simulator object of word `beat` of the tap's `array`, read straight
        (tb/signals.py)."""
        obj = self._gpi.get((array._name, beat))
        if obj is None:
            obj = self._gpi[array._name, beat] = array[beat]._handle
        return obj

    def _take(self):
        """The packet the tap holds, framing checked, as a Capture."""
        bb, nbeats = self.beat_bytes, int(self.bus.pkt_beats.value)
        cycle = int(self.bus.pkt_cycle.value)
        framing = None
        if self.bus.pkt_x.value:
            framing = "tkeep/tlast/tuser not 0/1"
        if self.bus.pkt_long.value:
            framing = framing or f"longer than the tap keeps ({self.max_beats} beats)"
            nbeats = self.max_beats
        # X or Z in a beat's unkept lanes reads as 0
        raw = b"".join(read_int(self._obj(self.bus.data, n)).to_bytes(bb, "little")
                       for n in range(nbeats))
        if self.bus.pkt_keep_ok.value and not self.bus.pkt_long.value:
            data = raw[:bb * (nbeats - 1) + int(self.bus.pkt_last_keep.value).bit_length()]
        else:
            framing = framing or "tkeep is not contiguous from byte 0"
            keep = [read_int(self._obj(self.bus.keep, n)) for n in range(nbeats)]
            data = bytes(raw[n * bb + i] for n in range(nbeats) for i in range(bb)
                         if keep[n] >> i & 1)
        return self._capture(cycle, data, framing, aborted=bool(self.bus.pkt_user.value))

    def _capture(self, cycle, data, framing, aborted):
        if aborted:
            capture = Capture(cycle, data, error="aborted by the sender", aborted=True)
        elif framing:
            capture = Capture(cycle, data, error=f"framing: {framing}")
        else:
            try:
                capture = Capture(cycle, data, packet=parse(data, self.mtu, self.link))
            except PacketError as failure:
                capture = Capture(cycle, data, error=str(failure))
            else:
                if self.link == "eth":      # a second, independent reading of the bytes
                    verdict = scapy_judge.judge(data, capture.packet)
                    capture.error = verdict and f"scapy: {verdict}"
        if aborted:
            self.log.info("cycle %d: %d bytes, aborted by the sender", cycle, len(data))
        elif capture.error:
            self.log.warning("cycle %d: %d bytes, %s", cycle, len(data), capture.error)
        else:
            self.log.debug("cycle %d: %s", cycle, capture.packet.summary())
        return capture
