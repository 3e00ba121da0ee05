"""Testbench for rdma_dev (harness top tb_rdma_dev): bus models, reset, link watchers.

The clock runs in the Verilog harness; nothing here runs on every cycle. Host memory is a
cocotbext-axi AxiRam on the DMA master, the registers are driven by an AxiLiteMaster, and each
port's TX link is watched by a task that wakes only if tvalid ever rises.
"""

import logging
import warnings

import cocotb
from cocotb.triggers import First, ReadOnly, RisingEdge, Timer
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

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


class LinkWatcher:
    """Records every cycle a port's TX link offers a beat. It sleeps on tvalid's edges, so an
    idle link costs nothing; a loopback-only test asserts `beats == []`."""

    def __init__(self, dut, port):
        self.port = port
        self.clk = dut.clk
        self.cycle = dut.cycle
        self.tvalid = getattr(dut, f"tx{port - 1}_axis_tvalid")
        self.beats = []
        cocotb.start_soon(self._watch())

    async def _watch(self):
        while True:
            if not self.tvalid.value:
                await RisingEdge(self.tvalid)
            await RisingEdge(self.clk)
            await ReadOnly()
            if self.tvalid.value:
                self.beats.append(int(self.cycle.value))


class RdmaTB:
    def __init__(self, dut, mem_size=2**24):
        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        for prefix in ("m_axi", "s_axil"):
            logging.getLogger(f"cocotb.{dut._name}.{prefix}").setLevel(logging.WARNING)
        # bus models run on the harness's tb_clk (see tb/hdl/tb_rdma_dev.v)
        self.mem = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.tb_clk, dut.rst, size=mem_size)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.tb_clk, dut.rst)
        self.regs = Registers(self.axil)
        self.mem_size = mem_size
        self.data_width = len(dut.m_axi_wdata)
        dut.rst.value = 1
        for p in range(2):
            getattr(dut, f"tx{p}_axis_tready").value = 1
            getattr(dut, f"rx{p}_axis_tvalid").value = 0
            getattr(dut, f"rx{p}_axis_tdata").value = 0
            getattr(dut, f"rx{p}_axis_tkeep").value = 0
            getattr(dut, f"rx{p}_axis_tlast").value = 0
            getattr(dut, f"rx{p}_axis_tuser").value = 0
        self.links = {}

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)
        self.links = {p: LinkWatcher(self.dut, p) for p in PORTS}

    def cycle(self):
        """The harness's free-running cycle counter."""
        return int(self.dut.cycle.value)

    async def wait_event(self, timeout_cycles=20000):
        """Returns when irq rises or after `timeout_cycles`, whichever is first."""
        if self.dut.irq.value:
            await RisingEdge(self.dut.clk)
            return
        await First(RisingEdge(self.dut.irq), Timer(timeout_cycles * CLOCK_PERIOD_NS, "ns"))

    def tx_beats(self, port):
        return self.links[port].beats

    def assert_links_idle(self):
        """Loopback traffic must never reach a physical link."""
        for port, link in self.links.items():
            assert not link.beats, (f"port {port} TX offered {len(link.beats)} beats "
                                    f"(first at cycle {link.beats[0]}) under loopback traffic")


# Port addresses every test starts from: port 1 owns LIDs 0x10-0x13 (LMC 2), port 2 is 0x20.
PORT_SETUP = {
    1: dict(lid=0x10, lmc=2, gid=bytes.fromhex("fe800000000000000000000000000001")),
    2: dict(lid=0x20, lmc=0, gid=bytes.fromhex("fe800000000000000000000000000002")),
}


async def open_device(dut, seed=0, ports=PORT_SETUP, mem_size=2**24):
    """Reset the DUT and return (tb, dev, scoreboard) with the model observing from the start
    and both ports addressed."""
    from scoreboard import Scoreboard
    from verbs import Device

    tb = RdmaTB(dut, mem_size=mem_size)
    await tb.reset()
    dev = Device(tb.regs, tb.mem, tb.wait_event, mem_base=0x1000, mem_size=mem_size - 0x1000,
                 seed=seed)
    sb = Scoreboard(dev)
    await dev.open()
    for port, attrs in ports.items():
        await dev.set_port(port, **attrs)
    return tb, dev, sb
