"""Testbench for rdma_dev (harness top tb_rdma_dev): bus models, reset, link sniffers.

The clock runs in the Verilog harness; nothing here runs on every idle cycle. Host memory is a
cocotbext-axi AxiRam on the DMA master, the registers are driven by an AxiLiteMaster, and each
port's TX link has a sniffer (tb/sniffer.py) that wakes only while the link carries a beat.
With the harness's CABLE = 1 the two ports are cabled to each other.
"""

import logging
import warnings

import cocotb
from cocotb.triggers import First, RisingEdge, Timer
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from sniffer import LinkSniffer

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\..*")

PORTS = (1, 2)
CLOCK_PERIOD_NS = 4  # the harness toggles clk every 2 ns


class Registers:
    """32-bit register access in the shape the verbs driver expects."""

    def __init__(self, axil):
        self.axil = axil

    async def read32(self, addr):
        return await self.axil.read_dword(addr)

    async def write32(self, addr, value):
        await self.axil.write_dword(addr, value & 0xFFFFFFFF)


class RdmaTB:
    """One device of a harness. `prefix` names its signals: "" for tb_rdma_dev (buses s_axil /
    m_axi, links link0 / link1, irq, sq_doorbell_cycle, irq_cycle), "dev0_" / "dev1_" for the
    devices of tb_fabric. `interface_base` is added to the ERF capture interface (port - 1) of
    its sniffers, so the links of two devices have distinct interfaces in pcaps."""

    def __init__(self, dut, mem_size=2**24, prefix="", interface_base=0):
        self.dut = dut
        self.prefix = prefix
        self.interface_base = interface_base
        self.log = logging.getLogger(f"cocotb.tb{'.' + prefix.rstrip('_') if prefix else ''}")
        for bus in ("m_axi", "s_axil"):
            logging.getLogger(f"cocotb.{dut._name}.{prefix}{bus}").setLevel(logging.WARNING)
        # bus models run on the harness's tb_clk (see tb/hdl/tb_rdma_dev.v)
        self.mem = AxiRam(AxiBus.from_prefix(dut, f"{prefix}m_axi"), dut.tb_clk, dut.rst,
                          size=mem_size)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, f"{prefix}s_axil"), dut.tb_clk,
                                  dut.rst)
        self.regs = Registers(self.axil)
        self.mem_size = mem_size
        self.data_width = len(getattr(dut, f"{prefix}m_axi_wdata"))
        self.irq = getattr(dut, f"{prefix}irq")
        self.sq_doorbell_cycle = getattr(dut, f"{prefix}sq_doorbell_cycle")
        self.irq_cycle = getattr(dut, f"{prefix}irq_cycle")
        self.sniffers = {}
        dut.rst.value = 1
        if prefix:
            return      # tb_fabric: the links are cabled inside the harness
        for p in range(2):
            getattr(dut, f"tx{p}_axis_tready").value = 1
            getattr(dut, f"rx{p}_axis_tvalid").value = 0
            getattr(dut, f"rx{p}_axis_tdata").value = 0
            getattr(dut, f"rx{p}_axis_tkeep").value = 0
            getattr(dut, f"rx{p}_axis_tlast").value = 0
            getattr(dut, f"rx{p}_axis_tuser").value = 0

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)
        self.start_sniffers()

    def start_sniffers(self):
        """A sniffer on each port's TX link (after reset; `reset` starts them)."""
        self.sniffers = {p: LinkSniffer(self.dut, f"{self.prefix}link{p - 1}",
                                        interface=self.interface_base + p - 1) for p in PORTS}

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


# Port addresses every test starts from: port 1 owns LIDs 0x10-0x13 (LMC 2), port 2 is 0x20.
PORT_SETUP = {
    1: dict(lid=0x10, lmc=2, gid=bytes.fromhex("fe800000000000000000000000000001")),
    2: dict(lid=0x20, lmc=0, gid=bytes.fromhex("fe800000000000000000000000000002")),
}


async def open_device(dut, seed=0, ports=PORT_SETUP, mem_size=2**24, cabled=False):
    """Reset the DUT and return (tb, dev, scoreboard) with the model observing from the start
    and both ports addressed. `cabled`: the harness was built with CABLE = 1 (port 1 and port
    2 are cabled to each other), and the model must know."""
    from scoreboard import Scoreboard
    from verbs import Device

    tb = RdmaTB(dut, mem_size=mem_size)
    await tb.reset()
    dev = Device(tb.regs, tb.mem, tb.wait_event, mem_base=0x1000, mem_size=mem_size - 0x1000,
                 seed=seed)
    sb = Scoreboard(dev, links=tb.sniffers)
    if cabled:
        sb.model.cable(1, sb.model, 2)
    await dev.open()
    for port, attrs in ports.items():
        await dev.set_port(port, **attrs)
    return tb, dev, sb


# Port addresses of the two devices of tb_fabric (topology b): dev0's are PORT_SETUP's, dev1's
# are distinct LIDs (port 1 LMC 1: LIDs 0x40-0x41) and GIDs.
FABRIC_PORT_SETUP = (
    PORT_SETUP,
    {
        1: dict(lid=0x40, lmc=1, gid=bytes.fromhex("fe800000000000000000000000001001")),
        2: dict(lid=0x50, lmc=0, gid=bytes.fromhex("fe800000000000000000000000001002")),
    },
)
FABRIC_CABLES = ((1, 1), (2, 2))   # (dev0 port, dev1 port) joined by a cable in tb_fabric.v


async def open_fabric(dut, seed=0, ports=FABRIC_PORT_SETUP, mem_size=2**24):
    """Reset tb_fabric once and return ((tb0, dev0, sb0), (tb1, dev1, sb1)): each device with
    its own AxiRam host memory, register bus, sniffers on its two TX links and scoreboard, the
    two models cabled as the harness is (dev0 port p <-> dev1 port p), and every port addressed
    from `ports` (dev0's, dev1's)."""
    from scoreboard import Scoreboard
    from verbs import Device

    tbs = [RdmaTB(dut, mem_size=mem_size, prefix=f"dev{d}_", interface_base=2 * d)
           for d in range(2)]
    await tbs[0].reset()    # rst is shared: one reset for both devices
    tbs[1].start_sniffers()
    devices = []
    for d, tb in enumerate(tbs):
        dev = Device(tb.regs, tb.mem, tb.wait_event, mem_base=0x1000, mem_size=mem_size - 0x1000,
                     seed=seed + d)
        devices.append((tb, dev, Scoreboard(dev, links=tb.sniffers)))
    (_, _, sb0), (_, _, sb1) = devices
    for port0, port1 in FABRIC_CABLES:
        sb0.model.cable(port0, sb1.model, port1)
    for (tb, dev, sb), setup in zip(devices, ports):
        await dev.open()
        for port, attrs in setup.items():
            await dev.set_port(port, **attrs)
    return tuple(devices)
