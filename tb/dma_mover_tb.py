"""The testbench of dma_mover (tb/hdl/tb_dma_mover.v): its command port driven from Python, a
cocotbext-axi AxiRam as host memory with a Python shadow of it, the payload streams on
cocotbext-axi stream models, and a monitor counting handshakes per channel. The unit tests
(tests/test_dma_mover.py) and the throughput benchmark (tools/bench_dma_mover.py) use it."""

import logging
import random

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge, with_timeout
from cocotbext.axi import AxiBus, AxiRam, AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from .seed import SEED, rng_for

# the build: dma_mover's RTL files and the harness parameters besides DATA_WIDTH
RTL_FILES = ["dma_mover.v", "dma_rd_engine.v", "dma_wr_engine.v", "dma_realign.v",
             "dma_axi_burst.v", "dma_skid.v"]
PARAMETERS = {"ADDR_WIDTH": 32, "AXI_ID_WIDTH": 4, "LEN_WIDTH": 32}

MODE_COPY = 0
MODE_STORE = 1
MODE_LOAD = 2
MODE_RD_STREAM = 3
MODE_WR_STREAM = 4
MODE_ATOMIC = 5
MODE_NONE = 6           # 6 and 7 are not commands

MEM_SIZE = 4 << 20      # host RAM: the lower half holds sources, the upper half destinations
DST_BASE = 2 << 20
# On Verilator, cocotb resumes edge triggers after the edge's register updates, so the
# cocotbext-axi models see post-edge VALID/READY; with their pause generators on, the models
# and the RTL then disagree about which beats were handed over. Backpressure runs on event
# simulators only.
ON_VERILATOR = "verilator" in getattr(cocotb, "SIM_NAME", "").lower()


class TB:
    def __init__(self, dut, test_name, backpressure=False):
        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        self.log.setLevel(logging.INFO)
        self.rng = rng_for(test_name, self.log)

        self.width = len(dut.m_axi_wdata)
        self.beat = self.width // 8

        bus = AxiBus.from_prefix(dut, "m_axi")
        # the slave models log under the bus name, their channels under theirs
        for name in {"m_axi"} | {ch._name for ch in (bus.write.aw, bus.write.w, bus.write.b,
                                                     bus.read.ar, bus.read.r)}:
            logging.getLogger(f"cocotb.{dut._name}.{name}").setLevel(logging.WARNING)
        self.ram = AxiRam(bus, dut.clk, dut.rst, size=MEM_SIZE)

        # Random initial contents: a missing or misplaced byte cannot match by luck.
        self.shadow = bytearray(self.rng.randbytes(MEM_SIZE))
        self.ram.write(0, bytes(self.shadow))

        # the payload streams: READ_STREAM out to a sink, WRITE_STREAM in from a source
        self.rd_sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_rd"), dut.clk, dut.rst)
        self.wr_source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_wr"), dut.clk, dut.rst)
        for model in (self.rd_sink, self.wr_source):
            model.log.setLevel(logging.WARNING)

        if backpressure:
            self.set_backpressure()

        # Handshake counts per channel, so tests can prove "no bus traffic" and that a done
        # pulse comes only after every burst has completed on every channel.
        self.counts = dict(ar=0, r_last=0, aw=0, w_last=0, b=0)
        self.max_reads_open = 0     # most read bursts seen in flight at once
        cocotb.start_soon(self._monitor())

        dut.s_cmd_valid.value = 0
        dut.s_cmd_mode.value = 0
        dut.s_cmd_src_addr.value = 0
        dut.s_cmd_dst_addr.value = 0
        dut.s_cmd_len.value = 0
        dut.s_cmd_data.value = 0

    def set_stream_backpressure(self):
        """Random stalls on both payload streams (tready low on READ_STREAM, tvalid gaps on
        WRITE_STREAM)."""
        for model in (self.rd_sink, self.wr_source):
            rng = random.Random(self.rng.random())
            p = self.rng.uniform(0.2, 0.6)
            model.set_pause_generator(iter(lambda: rng.random() < p, None))

    def set_backpressure(self):
        """Random stalls on all five channels, each with its own stall probability."""
        def gen(p):
            rng = random.Random(self.rng.random())
            while True:
                yield rng.random() < p

        for ch in (self.ram.write_if.aw_channel, self.ram.write_if.w_channel,
                   self.ram.write_if.b_channel, self.ram.read_if.ar_channel,
                   self.ram.read_if.r_channel):
            ch.set_pause_generator(gen(self.rng.uniform(0.2, 0.6)))

    async def _monitor(self):
        dut = self.dut
        counts = self.counts
        size = self.beat.bit_length() - 1
        while True:
            # Once the edge has settled, on any simulator, a VALID and READY both high is a
            # handshake at the next rising edge.
            await RisingEdge(dut.clk)
            await ReadOnly()
            if dut.m_axi_arvalid.value == 1 and dut.m_axi_arready.value == 1:
                counts["ar"] += 1
                assert int(dut.m_axi_arsize.value) == size and int(dut.m_axi_arburst.value) == 1
            if dut.m_axi_rvalid.value == 1 and dut.m_axi_rready.value == 1 and dut.m_axi_rlast.value == 1:
                counts["r_last"] += 1
            self.max_reads_open = max(self.max_reads_open, counts["ar"] - counts["r_last"])
            if dut.m_axi_awvalid.value == 1 and dut.m_axi_awready.value == 1:
                counts["aw"] += 1
                assert int(dut.m_axi_awsize.value) == size and int(dut.m_axi_awburst.value) == 1
            if dut.m_axi_wvalid.value == 1 and dut.m_axi_wready.value == 1 and dut.m_axi_wlast.value == 1:
                counts["w_last"] += 1
            if dut.m_axi_bvalid.value == 1 and dut.m_axi_bready.value == 1:
                counts["b"] += 1

    def check_quiet(self, what):
        """Every read burst has returned its RLAST, every write burst its WLAST and B."""
        c = self.counts
        assert c["ar"] == c["r_last"] and c["aw"] == c["w_last"] == c["b"], \
            f"{what}: done while bursts are open: {c} (SEED={SEED})"

    async def reset(self):
        dut = self.dut
        dut.rst.value = 1
        for _ in range(8):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        for _ in range(4):
            await RisingEdge(dut.clk)

    async def command(self, mode, src=0, dst=0, length=0, data=b"", timeout_cycles=None):
        """Issue one command and wait for its done pulse.

        Returns (error, done_data bytes, cycles from the accepting edge to the done edge).
        Signals are sampled at falling edges and after ReadOnly, so the result does not
        depend on whether the simulator shows pre- or post-edge values in edge callbacks.
        """
        dut = self.dut
        await FallingEdge(dut.clk)
        dut.s_cmd_mode.value = mode
        dut.s_cmd_src_addr.value = src
        dut.s_cmd_dst_addr.value = dst
        dut.s_cmd_len.value = length
        dut.s_cmd_data.value = int.from_bytes(bytes(data).ljust(64, b"\0"), "little")
        dut.s_cmd_valid.value = 1
        while dut.s_cmd_ready.value != 1:
            await FallingEdge(dut.clk)
        t0 = int(dut.cycle.value)
        await RisingEdge(dut.clk)           # the accepting edge
        dut.s_cmd_valid.value = 0
        await ReadOnly()
        if dut.m_done_valid.value != 1:
            if length and dut.s_cmd_ready.value != 0:
                raise AssertionError("s_cmd_ready still high after a command was accepted")
            if timeout_cycles is None:
                timeout_cycles = 40 * (length // self.beat) + 4000
            await with_timeout(RisingEdge(dut.m_done_valid), 4 * timeout_cycles, "ns")
            await ReadOnly()
        t1 = int(dut.cycle.value)
        self.check_quiet(f"command mode={mode} src=0x{src:x} dst=0x{dst:x} len={length}")
        error = int(dut.m_done_error.value)
        done_data = int(dut.m_done_data.value).to_bytes(64, "little")
        await RisingEdge(dut.clk)
        await FallingEdge(dut.clk)
        assert dut.m_done_valid.value == 0, "m_done_valid is longer than one cycle"
        return error, done_data, t1 - t0 - 1

    # --- the three modes, each checked against the shadow ---------------------------------

    def check_region(self, lo, hi, what):
        lo = max(lo, 0)
        hi = min(hi, MEM_SIZE)
        got = self.ram.read(lo, hi - lo)
        want = bytes(self.shadow[lo:hi])
        if got != want:
            i = next(k for k in range(len(got)) if got[k] != want[k])
            raise AssertionError(
                f"{what}: first wrong byte at 0x{lo + i:x}: got {got[i]:#04x}, want {want[i]:#04x}"
                f" (SEED={SEED})")

    def check_all(self, what):
        self.check_region(0, MEM_SIZE, what)

    def refresh(self, addr, length):
        """New random bytes at a source range, in the RAM and the shadow."""
        fresh = self.rng.randbytes(length)
        self.ram.write(addr, fresh)
        self.shadow[addr:addr + length] = fresh

    async def copy(self, src, dst, length, full_check=True, expect_error=0):
        self.refresh(src, length)
        self.shadow[dst:dst + length] = self.shadow[src:src + length]
        error, _, cycles = await self.command(MODE_COPY, src, dst, length)
        what = f"COPY src=0x{src:x} dst=0x{dst:x} len={length}"
        assert error == expect_error, f"{what}: m_done_error={error} (SEED={SEED})"
        if full_check:
            self.check_all(what)
        else:
            self.check_region(dst - 256, dst + length + 256, what)
        return cycles

    async def store(self, dst, length):
        data = self.rng.randbytes(64)
        self.shadow[dst:dst + length] = data[:length]
        error, _, _ = await self.command(MODE_STORE, 0, dst, length, data)
        what = f"STORE dst=0x{dst:x} len={length}"
        assert error == 0, f"{what}: m_done_error set (SEED={SEED})"
        self.check_region(dst - 256, dst + length + 256, what)

    async def load(self, src, length):
        self.refresh(src - 64, length + 128)   # neighbours differ too, so overreach shows
        error, data, _ = await self.command(MODE_LOAD, src, 0, length)
        what = f"LOAD src=0x{src:x} len={length}"
        assert error == 0, f"{what}: m_done_error set (SEED={SEED})"
        want = bytes(self.shadow[src:src + length]).ljust(64, b"\0")
        assert data == want, f"{what}: got {data.hex()} want {want.hex()} (SEED={SEED})"


    async def atomic(self, dst, compare_add, swap=None):
        """ATOMIC on the 8 bytes at `dst` (any alignment): FetchAdd of `compare_add`, or with
        `swap` a CompareSwap; the original value must come back in m_done_data and exactly the
        new value land, nothing around it change."""
        self.refresh(dst - 64, 136)
        orig = int.from_bytes(self.shadow[dst:dst + 8], "little")
        if swap is None:
            new, cas = (orig + compare_add) % 2**64, 0
        else:
            new, cas = (swap if orig == compare_add else orig), 1
        self.shadow[dst:dst + 8] = new.to_bytes(8, "little")
        ops = (compare_add | (swap or 0) << 64 | cas << 128).to_bytes(64, "little")
        error, data, cycles = await self.command(MODE_ATOMIC, 0, dst, 8, ops)
        what = f"ATOMIC dst=0x{dst:x} {'CompareSwap' if cas else 'FetchAdd'}"
        assert error == 0, f"{what}: m_done_error set (SEED={SEED})"
        assert data == orig.to_bytes(8, "little").ljust(64, b"\0"), \
            f"{what}: original {data[:8].hex()}, want {orig:016x} (SEED={SEED})"
        self.check_region(dst - 256, dst + 264, what)
        return cycles

    # --- the stream modes ---------------------------------------------------------------------

    async def read_stream(self, src, length):
        """READ_STREAM: the stream must carry exactly the source bytes, byte 0 in lane 0, full
        tkeep but on the last beat, zero lanes after the end, tlast on the last beat only."""
        self.refresh(src - 64, length + 128)
        error, _, cycles = await self.command(MODE_RD_STREAM, src, 0, length)
        what = f"READ_STREAM src=0x{src:x} len={length}"
        assert error == 0, f"{what}: m_done_error set (SEED={SEED})"
        frame = self.rd_sink.recv_nowait(compact=False)   # the last beat was taken before done
        assert self.rd_sink.empty(), f"{what}: more than one frame (tlast early) (SEED={SEED})"
        nbytes = -(-length // self.beat) * self.beat
        assert len(frame.tdata) == nbytes, \
            f"{what}: {len(frame.tdata)} lane bytes, want {nbytes} (SEED={SEED})"
        want = bytes(self.shadow[src:src + length]).ljust(nbytes, b"\0")
        if bytes(frame.tdata) != want:
            i = next(k for k in range(nbytes) if frame.tdata[k] != want[k])
            raise AssertionError(f"{what}: byte {i} got {frame.tdata[i]:#04x} want {want[i]:#04x} "
                                 f"(SEED={SEED})")
        assert list(frame.tkeep) == [1] * length + [0] * (nbytes - length), \
            f"{what}: tkeep wrong (SEED={SEED})"
        return cycles

    async def write_stream(self, dst, length, sent=None, expect_error=0):
        """WRITE_STREAM of `length` bytes from a stream frame of `sent` bytes (default the same).
        With a mismatch, bytes of the frame inside the range must land, bytes of the range the
        frame did not cover may be anything, and nothing outside [dst, dst+len) may change."""
        sent = length if sent is None else sent
        data = self.rng.randbytes(sent)
        await self.wr_source.send(AxiStreamFrame(data))
        n = min(length, sent)
        self.shadow[dst:dst + n] = data[:n]
        error, _, cycles = await self.command(MODE_WR_STREAM, 0, dst, length)
        what = f"WRITE_STREAM dst=0x{dst:x} len={length} frame={sent}"
        assert error == expect_error, f"{what}: m_done_error={error} (SEED={SEED})"
        # every beat of the frame was taken, also the ones after len
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        assert self.wr_source.idle(), f"{what}: the stream was not drained (SEED={SEED})"
        if n < length:   # the engine made up the missing bytes: whatever it wrote is accepted
            self.shadow[dst + n:dst + length] = self.ram.read(dst + n, length - n)
        self.check_region(dst - 4096, dst + length + 4096, what)
        return cycles
