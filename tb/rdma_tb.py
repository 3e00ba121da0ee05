"""Testbench for rdma_dev (harness top tb_rdma_dev): host memory, register bus, reset, link
sniffers.

The clock runs in the Verilog harness; nothing here runs on every cycle. Host memory is the
harness's HDL AXI4 RAM on the DMA master (tb/hdl/sim_axi_ram.v), read and written by the
testbench through its back door (tb/host_mem.py); register accesses go through the harness's
register master (tb/hdl/sim_axil_master.v), one Python wake each; each port's TX link has a
sniffer (tb/sniffer.py) that wakes once per packet. With the harness's CABLE = 0 a test can
put packets on a port's RX link itself (LinkInjector); with CABLE = 1 the two ports are
cabled to each other.
"""

import logging
import os
import random

from cocotb.handle import Immediate
from cocotb.triggers import FallingEdge, First, Lock, RisingEdge, Timer, ValueChange

from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSource

from . import coverage
from .host_mem import HostMemory
from .ib_packet import ipv4_gid
from .verbs import GidEntry
from .link_faults import LinkFaults
from .signals import read_int, write_int
from .sniffer import LinkSniffer

PORTS = (1, 2)
CLOCK_PERIOD_NS = 4  # the harness toggles clk every 2 ns
REGISTER_TIMEOUT_CYCLES = 10000   # a register access that takes longer is a hung bus

# Host memory timings a device runs under: (read latency in cycles from AR to the first R beat,
# stall rate: each AXI handshake held off with probability rate/256). "ideal" is the harness's
# own; MEM_TIMING=<name> runs any test under another, and some tests name theirs.
MEM_TIMINGS = {"ideal": (2, 0), "latency100": (100, 0), "latency500": (500, 0),
               "stalls": (100, 64)}


def mem_timing(name=None):
    """The timing to run under: `name`, else $MEM_TIMING, else "ideal"."""
    name = name or os.environ.get("MEM_TIMING", "ideal")
    if name not in MEM_TIMINGS:
        raise ValueError(f"MEM_TIMING={name}: not one of {', '.join(MEM_TIMINGS)}")
    return name


async def set_mem_timing(tbs, name, seed):
    """Every host memory of `tbs` answers with timing `name` (MEM_TIMINGS), its stalls drawn
    from `seed`. Set between clock edges: a deposit in the time step of an edge (or at time 0)
    can leave sim_axi_ram's stall generator at X on Icarus."""
    read_latency, stall_rate = MEM_TIMINGS[name]
    rng = random.Random(seed)
    await FallingEdge(tbs[0].dut.clk)
    for tb in tbs:
        tb.mem.configure(read_latency=read_latency, stall_rate=stall_rate,
                         seed=rng.randrange(1, 1 << 32))
        tb.mem_timing = name
    if name != "ideal":
        tbs[0].log.info("host memory: %s (read latency %d, stall rate %d/256)", name,
                        read_latency, stall_rate)


class Registers:
    """32-bit register access in the shape the verbs driver expects, through the harness's
    register master (tb/hdl/sim_axil_master.v): one access at a time, Python woken once when
    it is answered. An error response raises, as a bus error would on a host."""

    def __init__(self, master):
        self.master = master
        self.lock = Lock()
        self.requests = int(master.req_count.value)
        self.accesses = 0

    async def read32(self, addr):
        return await self._access(addr, None)

    async def write32(self, addr, value):
        await self._access(addr, value & 0xFFFFFFFF)

    async def _access(self, addr, value):
        m = self.master
        async with self.lock:
            m.req_addr.value = addr
            m.req_data.value = value or 0
            m.req_write.value = value is not None
            self.requests = (self.requests + 1) & 0xFFFFFFFF
            m.req_count.value = self.requests
            answered = ValueChange(m.rsp_count)
            fired = await First(answered, Timer(REGISTER_TIMEOUT_CYCLES * CLOCK_PERIOD_NS, "ns"))
            if fired is not answered:
                raise TimeoutError(f"register {'write' if value is not None else 'read'} at "
                                   f"{addr:#x}: no answer in {REGISTER_TIMEOUT_CYCLES} cycles")
            self.accesses += 1
            if int(m.rsp_resp.value):
                raise OSError(f"register access at {addr:#x}: bus error response "
                              f"{int(m.rsp_resp.value)}")
            return int(m.rsp_data.value)


class LinkInjector:
    """Puts whole packets on port `port`'s RX link of tb_rdma_dev (CABLE = 0), as a far end
    would: the bytes of one packet (LRH .. VCRC) per frame; `abort` marks it aborted (tuser)."""

    def __init__(self, dut, port):
        link = f"rx{port - 1}_axis"
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, link), dut.tb_clk, dut.rst)
        logging.getLogger(f"cocotb.{dut._name}.{link}").setLevel(logging.WARNING)

    async def send(self, data, abort=False):
        """Returns once the packet's last beat has been taken."""
        await self.source.send(AxiStreamFrame(data, tuser=int(abort)))
        await self.source.wait()


class PacketPlayer:
    """Puts packets on a cabled port's RX link beside what the cable delivers (a whole packet
    at a time, the cable's first; RdmaTB.player): they are queued in the harness's player
    (tb/hdl/sim_pkt_player.v) through its back door and leave one beat per cycle, so thousands
    of packets cost no Python per beat. `queue` returns at once; `idle` says whether the port
    has taken every packet queued."""

    def __init__(self, hdl, beat_bytes):
        self.hdl = hdl
        self.beat_bytes = beat_bytes
        self.depth = len(self.hdl.ring)
        self._ring = self.hdl.ring
        self._gpi = {}
        self._queued = read_int(self.hdl.queued._handle)

    def _room(self):
        return self.depth - ((self._queued - read_int(self.hdl.sent._handle)) & 0xFFFFFFFF)

    async def queue(self, data, abort=False):
        """Queue the bytes of one packet (LRH .. VCRC; `abort` marks it aborted, tuser);
        waits only while the ring is full."""
        n = self.beat_bytes
        beats = [data[i:i + n] for i in range(0, len(data), n)] or [b""]
        while self._room() < len(beats):
            await Timer(64 * CLOCK_PERIOD_NS, "ns")
        width = 8 * n + n + 2
        for k, beat in enumerate(beats):
            last = k == len(beats) - 1
            keep = (1 << len(beat)) - 1
            word = (int(abort and last) << (9 * n + 1) | int(last) << (9 * n)
                    | keep << (8 * n) | int.from_bytes(beat, "little"))
            slot = self._queued % self.depth
            obj = self._gpi.get(slot)
            if obj is None:
                obj = self._gpi[slot] = self._ring[slot]._handle
            write_int(obj, word, width)
            self._queued = (self._queued + 1) & 0xFFFFFFFF
        self.hdl.queued.value = Immediate(self._queued)

    @property
    def idle(self):
        return read_int(self.hdl.sent._handle) == self._queued


class RdmaTB:
    """One device of a harness. `prefix` names its signals: "" for tb_rdma_dev (buses s_axil /
    m_axi, links link0 / link1, irq, sq_doorbell_cycle, irq_cycle, write_cycle), "dev0_" /
    "dev1_" for the devices of tb_fabric. `interface_base` is added to the ERF capture
    interface (port - 1) of its sniffers, so the links of two devices have distinct interfaces
    in pcaps. tb_rdma_dev built with CABLE = 1 has its ports cabled to each other through
    cable models, as tb_fabric's devices are."""

    def __init__(self, dut, mem_size=2**24, prefix="", interface_base=0):
        self.dut = dut
        self.prefix = prefix
        self.interface_base = interface_base
        self.log = logging.getLogger(f"cocotb.tb{'.' + prefix.rstrip('_') if prefix else ''}")
        ram = getattr(dut, f"{prefix}host_mem")
        if int(ram.MEM_BYTES.value) < mem_size:
            raise ValueError(f"the harness's host memory has {int(ram.MEM_BYTES.value)} bytes, "
                             f"not {mem_size}")
        self.mem = HostMemory(ram, mem_size)
        self.mem_timing = "ideal"
        self.dma_watch = getattr(dut, f"{prefix}dma_watch")
        if coverage.enabled():
            coverage.before_save(self._sample_coverage)
        self.regs = Registers(getattr(dut, f"{prefix}regs"))
        self.mem_size = mem_size
        self.data_width = len(getattr(dut, f"{prefix}m_axi_wdata"))
        self.irq = getattr(dut, f"{prefix}irq")
        self.sq_doorbell_cycle = getattr(dut, f"{prefix}sq_doorbell_cycle")
        self.irq_cycle = getattr(dut, f"{prefix}irq_cycle")
        self.write_cycle = getattr(dut, f"{prefix}write_cycle")
        self.sniffers = {}
        self.arrivals = {}      # sniffers at the far end of this device's cables
        self.links = dict.fromkeys(PORTS, "ib")     # each port's link layer, as last set
        self.cables = {}        # port -> the cable model its TX link goes through
        # where the cable models and their arrival taps are: tb_fabric's top (one device's
        # links to the other's), or tb_rdma_dev's `cabled` block (port 1 to port 2 and back)
        self._cabling = ((dut, prefix) if prefix else
                         (dut.cabled, "") if int(dut.CABLE.value) else None)
        if self._cabling:
            scope, name = self._cabling
            self.cables = {p: getattr(scope, f"{name}link{p - 1}_cable") for p in PORTS}
        dut.rst.value = 1
        if prefix:
            return
        for p in range(2):
            getattr(dut, f"tx{p}_axis_tready").value = 1
            getattr(dut, f"rx{p}_axis_tvalid").value = 0
            getattr(dut, f"rx{p}_axis_tdata").value = 0
            getattr(dut, f"rx{p}_axis_tkeep").value = 0
            getattr(dut, f"rx{p}_axis_tlast").value = 0
            getattr(dut, f"rx{p}_axis_tuser").value = 0

    def _sample_coverage(self):
        coverage.sample_dma(int(self.dma_watch.together.value),
                            int(self.dma_watch.alongside.value), self.mem_timing)

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)
        self.start_sniffers()

    def tx_tap(self, port):
        """The harness's tap on port `port`'s TX link (sim_link_tap)."""
        return getattr(self.dut, f"{self.prefix}link{port - 1}_tap")

    def arrived_tap(self, port):
        """The tap at the far end of port `port`'s cable: what arrived of what it sent."""
        scope, name = self._cabling
        return getattr(scope, f"{name}link{port - 1}_arrived_tap")

    def player(self, port):
        """A PacketPlayer onto port `port`'s RX (a cabled harness's sim_port_rx)."""
        scope, name = self._cabling
        return PacketPlayer(getattr(scope, f"{name}rx{port - 1}").player, self.data_width // 8)

    def start_sniffers(self):
        """A sniffer on each port's TX link (after reset; `reset` starts them)."""
        self.sniffers = {p: LinkSniffer(self.tx_tap(p), self.dut.tb_clk, self.dut.cycle,
                                        interface=self.interface_base + p - 1,
                                        link=self.links[p]) for p in PORTS}

    def set_link(self, port, link):
        """Port `port` now speaks `link` ("ib" or "eth"): its sniffers decode it so, and the
        cable its TX goes through finds headers and CRCs so. Only this sets a cable's link
        layer: the faults a test applies (LinkFaults without a `link`) keep it."""
        self.links[port] = link
        for sniffers in (self.sniffers, self.arrivals):
            if port in sniffers:
                sniffers[port].link = link
        if port in self.cables:
            LinkFaults.set_link(self.cables[port], link)

    def watch_arrivals(self):
        """A sniffer also at the far end of each of this device's cables, for what arrived (the
        TX sniffers see what was sent); a cable that loses, duplicates, corrupts or reorders
        packets (tb/link_faults.py) makes the two differ. Returns them, port -> LinkSniffer."""
        self.arrivals = {p: LinkSniffer(self.arrived_tap(p), self.dut.tb_clk, self.dut.cycle,
                                        interface=self.interface_base + p - 1,
                                        link=self.links[p]) for p in PORTS}
        return self.arrivals

    def perfect_cables(self):
        """The cable models keep their settings over a reset: make every cable perfect."""
        for cable in self.cables.values():
            LinkFaults().apply(cable)

    def cycle(self):
        """The harness's free-running cycle counter."""
        return int(self.dut.cycle.value)

    async def wait_event(self, timeout_cycles=20000):
        """Returns when irq rises or after `timeout_cycles`, whichever is first."""
        if self.irq.value:
            await RisingEdge(self.dut.clk)
            return
        await First(RisingEdge(self.irq), Timer(timeout_cycles * CLOCK_PERIOD_NS, "ns"))

    def tx_beats(self, port):
        """Beats port `port`'s TX link has carried."""
        return self.sniffers[port].beats

    def assert_links_idle(self):
        """Loopback traffic must never reach a physical link."""
        for port, sniffer in self.sniffers.items():
            assert not sniffer.beats, (f"port {port} TX carried {sniffer.beats} beats (first "
                                       f"packet at cycle {sniffer.captures[0].cycle}) under "
                                       f"loopback traffic")


# The link layer of every port the tests open: "ib" (InfiniBand), or "eth" (RoCE v2) with
# RDMA_LINK=eth. The same RDMA programs run on both: on Ethernet a destination is its GID.
LINK = os.environ.get("RDMA_LINK", "ib").strip() or "ib"
LINK_NAMES = {"ib": "InfiniBand", "eth": "Ethernet"}

# Port addresses every test starts from: port 1 owns LIDs 0x10-0x13 (LMC 2), port 2 is 0x20.
IB_PORT_SETUP = {
    1: dict(lid=0x10, lmc=2, gid=bytes.fromhex("fe800000000000000000000000000001")),
    2: dict(lid=0x20, lmc=0, gid=bytes.fromhex("fe800000000000000000000000000002")),
}


def eth_port(lid, lmc, mac, ipv4, ipv6, vlan_ipv4):
    """An Ethernet port: its MAC, an untagged IPv4 address (entry 0), an IPv6 address and an
    IPv4 address on VLAN 7. The LIDs are kept (unused on the wire) so that a test may still
    name a port by a LID: the RDMA programs turn it into that port's GID."""
    return dict(lid=lid, lmc=lmc, link_layer="eth", mac=bytes.fromhex(mac), gid=ipv4_gid(ipv4),
                gids=[GidEntry(bytes.fromhex(ipv6)), GidEntry(ipv4_gid(vlan_ipv4), vlan=7)])


ETH_PORT_SETUP = {
    1: eth_port(0x10, 2, "020000000001", "10.0.0.1", "fd000000000000000000000000000001",
                "10.7.0.1"),
    2: eth_port(0x20, 0, "020000000002", "10.0.0.2", "fd000000000000000000000000000002",
                "10.7.0.2"),
}
PORT_SETUP = ETH_PORT_SETUP if LINK == "eth" else IB_PORT_SETUP


async def open_device(dut, seed=0, ports=PORT_SETUP, mem_size=2**24, cabled=False, timing=None):
    """Reset the DUT and return (tb, dev, scoreboard) with the model observing from the start
    and both ports addressed. `cabled`: the harness was built with CABLE = 1 (port 1 and port
    2 are cabled to each other), and the model must know. `timing`: the host memory's
    (mem_timing())."""
    from .scoreboard import Scoreboard
    from .verbs import Device

    tb = RdmaTB(dut, mem_size=mem_size)
    await tb.reset()
    await set_mem_timing([tb], mem_timing(timing), seed)
    tb.perfect_cables()
    dev = Device(tb.regs, tb.mem, tb.wait_event, mem_base=0x1000, mem_size=mem_size - 0x1000,
                 seed=seed)
    sb = Scoreboard(dev, links=tb.sniffers, cables=tb.cables)
    if cabled:
        sb.cable(1, sb, 2)
    await dev.open()
    for port, attrs in ports.items():
        await dev.set_port(port, **attrs)
        tb.set_link(port, dev.ports[port].link_layer)
    return tb, dev, sb


# Port addresses of the two devices of tb_fabric (topology b): dev0's are PORT_SETUP's, dev1's
# are distinct LIDs (port 1 LMC 1: LIDs 0x40-0x41), GIDs and MACs.
FABRIC_PORT_SETUP = (
    PORT_SETUP,
    {
        1: eth_port(0x40, 1, "020000000101", "10.0.1.1", "fd000000000000000000000000001001",
                    "10.7.1.1"),
        2: eth_port(0x50, 0, "020000000102", "10.0.1.2", "fd000000000000000000000000001002",
                    "10.7.1.2"),
    } if LINK == "eth" else {
        1: dict(lid=0x40, lmc=1, gid=bytes.fromhex("fe800000000000000000000000001001")),
        2: dict(lid=0x50, lmc=0, gid=bytes.fromhex("fe800000000000000000000000001002")),
    },
)
FABRIC_CABLES = ((1, 1), (2, 2))   # (dev0 port, dev1 port) joined by a cable in tb_fabric.v


async def open_fabric(dut, seed=0, ports=FABRIC_PORT_SETUP, mem_size=2**24, timing=None):
    """Reset tb_fabric once and return ((tb0, dev0, sb0), (tb1, dev1, sb1)): each device with
    its own AxiRam host memory, register bus, sniffers on its two TX links and scoreboard, the
    two models cabled as the harness is (dev0 port p <-> dev1 port p), and every port addressed
    from `ports` (dev0's, dev1's); both host memories with `timing` (mem_timing())."""
    from .scoreboard import Scoreboard
    from .verbs import Device

    tbs = [RdmaTB(dut, mem_size=mem_size, prefix=f"dev{d}_", interface_base=2 * d)
           for d in range(2)]
    await tbs[0].reset()    # rst is shared: one reset for both devices
    tbs[1].start_sniffers()
    await set_mem_timing(tbs, mem_timing(timing), seed)
    for tb in tbs:
        tb.perfect_cables()
    devices = []
    for d, tb in enumerate(tbs):
        dev = Device(tb.regs, tb.mem, tb.wait_event, mem_base=0x1000, mem_size=mem_size - 0x1000,
                     seed=seed + d)
        devices.append((tb, dev, Scoreboard(dev, links=tb.sniffers, cables=tb.cables)))
    (_, _, sb0), (_, _, sb1) = devices
    for port0, port1 in FABRIC_CABLES:
        sb0.cable(port0, sb1, port1)
    for (tb, dev, sb), setup in zip(devices, ports):
        await dev.open()
        for port, attrs in setup.items():
            await dev.set_port(port, **attrs)
            tb.set_link(port, dev.ports[port].link_layer)
    # each driver knows the other device's addresses, as its host's neighbour table would
    for (_, dev, _), (_, peer, _) in (devices, devices[::-1]):
        dev.neighbours.update({entry.gid: attr.mac for attr in peer.ports.values()
                               for entry in attr.own_gids()})
    return tuple(devices)
