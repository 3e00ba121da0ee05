"""Unit tests of dma_mover (through tb/hdl/tb_dma_mover.v) against a cocotbext-axi AxiRam.

Every check compares host memory with a Python shadow of it, so a byte written outside
[dst, dst+len) anywhere in the RAM is caught, not just in guard bands. Randomness comes from
one seed, printed at the start of each test; SEED=<n> replays a run.
"""

import logging
import random

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge, with_timeout
from cocotbext.axi import AxiBus, AxiRam, AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
import pytest

from tb import simrun
from tb.seed import REGRESS, SEED, rng_for

MODE_COPY = 0
MODE_STORE = 1
MODE_LOAD = 2
MODE_RD_STREAM = 3
MODE_WR_STREAM = 4
MODE_NONE = 5           # 5, 6 and 7 are not commands

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


def random_length(rng):
    r = rng.random()
    if r < 0.35:
        return rng.randrange(0, 257)
    if r < 0.65:
        return rng.randrange(0, 1025)
    return rng.randrange(0, 9001)


def edge_lengths(beat):
    return sorted({0, 1, 2, beat - 1, beat, beat + 1, 2 * beat - 1, 2 * beat, 2 * beat + 1,
                   4095, 4096, 4097, 8191, 8192, 8193, 256 * beat - 1, 256 * beat, 256 * beat + 1})


async def run_copies(tb, count):
    rng = tb.rng
    cases = []
    for length in edge_lengths(tb.beat):
        cases.append((rng.randrange(0, 64), rng.randrange(0, 64), length))
    # src/dst just below a 4 KiB page end, so the first burst is a short one
    for length in (1, 100, 5000):
        cases.append((4096 - rng.randrange(1, 2 * tb.beat), 4096 - rng.randrange(1, 2 * tb.beat), length))
    while len(cases) < count:
        cases.append((rng.randrange(0, 8192), rng.randrange(0, 8192), random_length(rng)))
    for i, (src_off, dst_off, length) in enumerate(cases):
        # pages picked at random inside each half, offsets anywhere in two pages
        src = rng.randrange(0, (DST_BASE - 16384) // 4096) * 4096 + src_off
        dst = DST_BASE + rng.randrange(0, (DST_BASE - 16384) // 4096) * 4096 + dst_off
        await tb.copy(src, dst, length)
    tb.log.info("%d COPY commands checked", len(cases))


async def run_store_load(tb, lengths_for):
    """Every byte offset 0..63 (all beat alignments, and every place in a 64-byte block)."""
    rng = tb.rng
    n = 0
    for off in range(64):
        for length in lengths_for(off):
            page = rng.randrange(1, (DST_BASE // 4096) - 1)
            # some cases sit at the end of a 4 KiB page, so the access crosses it
            base = page * 4096 - (64 if rng.random() < 0.25 else 0)
            await tb.store(DST_BASE + base + off, length)
            await tb.load(base + off, length)
            n += 2
    tb.check_all("after STORE/LOAD")
    tb.log.info("%d STORE/LOAD commands checked", n)


@cocotb.test()
async def test_zero_length_and_bad_mode(dut):
    """len 0 finishes at once with no bus or stream traffic; modes 5-7 finish with an error."""
    tb = TB(dut, "zero_length_and_bad_mode")
    await tb.reset()
    for mode in (MODE_COPY, MODE_STORE, MODE_LOAD, MODE_RD_STREAM, MODE_WR_STREAM):
        error, data, cycles = await tb.command(mode, 0x1234, DST_BASE + 0x567, 0, b"\xff" * 64)
        assert error == 0 and cycles <= 2, f"mode {mode} len 0: error={error} cycles={cycles}"
        assert data == bytes(64)
    for mode in (5, 6, 7):
        error, _, cycles = await tb.command(mode, 0x100, DST_BASE + 0x100, 64)
        assert error == 1 and cycles <= 2, f"mode {mode}: error={error} cycles={cycles}"
    for _ in range(10):
        await RisingEdge(dut.clk)
    assert not any(tb.counts.values()), f"bus traffic for commands that move nothing: {tb.counts}"
    assert tb.rd_sink.empty() and dut.s_axis_wr_tready.value == 0, "stream traffic"
    tb.check_all("after zero-length commands")
    # and the engine still works afterwards
    await tb.copy(0x10, DST_BASE + 0x33, 200)


@cocotb.test()
async def test_copy_random(dut):
    """A hundred COPYs (several hundred under REGRESS), all alignments and lengths 0..9000,
    plus 64 KiB and (REGRESS) 1 MiB: rdma_dev's own tests move 1 MiB through this engine at
    every width."""
    tb = TB(dut, "copy_random")
    await tb.reset()
    await run_copies(tb, 320 if REGRESS else 100)
    rng = tb.rng
    await tb.copy(rng.randrange(0, 4096), DST_BASE + rng.randrange(0, 4096), 64 << 10)
    if REGRESS:
        cycles = await tb.copy(rng.randrange(0, 4096), DST_BASE + rng.randrange(0, 4096),
                               1 << 20)
        tb.log.info("1 MiB COPY took %d cycles (%d beats of data)", cycles, (1 << 20) // tb.beat)


@cocotb.test()
async def test_store_load(dut):
    """STORE and LOAD at every byte offset 0..63 of every length 1..64 (REGRESS), or of the
    lengths that end on each side of a beat and a block boundary plus a random one."""
    tb = TB(dut, "store_load")
    await tb.reset()
    beat = tb.beat
    edges = sorted({1, 2, beat - 1, beat, min(beat + 1, 64), 63, 64})
    await run_store_load(tb, lambda off: range(1, 65) if REGRESS
                         else edges + [tb.rng.randrange(3, 63)])


@cocotb.test(skip=ON_VERILATOR)
async def test_backpressure(dut):
    """The same kinds of commands with random stalls on AW, W, B, AR and R."""
    tb = TB(dut, "backpressure", backpressure=True)
    await tb.reset()
    await run_copies(tb, 120)
    rng = tb.rng
    await tb.copy(rng.randrange(0, 4096), DST_BASE + rng.randrange(0, 4096), 64 << 10)
    # every offset, with the short, the long and a random length each
    await run_store_load(tb, lambda off: (1, rng.randrange(2, 64), 64))


@cocotb.test()
async def test_error_responses(dut):
    """SLVERR on reads or writes sets m_done_error, the command still drains and completes."""
    tb = TB(dut, "error_responses")
    await tb.reset()
    # the slave model warns about every failed beat; those failures are the point here
    logging.getLogger(f"cocotb.{dut._name}.m_axi").setLevel(logging.ERROR)
    bad_lo, bad_hi = 0x40000, 0x41000      # one page that answers SLVERR
    read_ram = tb.ram.read_if._read
    write_ram = tb.ram.write_if._write

    async def failing_read(address, length):
        if bad_lo <= address < bad_hi:
            raise IOError("injected read error")
        return await read_ram(address, length)

    async def failing_write(address, data):
        if DST_BASE + bad_lo <= address < DST_BASE + bad_hi:
            raise IOError("injected write error")
        await write_ram(address, data)

    tb.ram.read_if._read = failing_read
    tb.ram.write_if._write = failing_write

    # A read error in the middle of a long COPY: the engine does not stop, the destination gets
    # the failing beats as the zeros the slave returned and everything else as copied.
    src, dst, length = bad_lo - 3000, DST_BASE + 0x10007, 12000
    tb.refresh(src, length)
    for i in range(length):
        tb.shadow[dst + i] = 0 if bad_lo <= src + i < bad_hi else tb.shadow[src + i]
    error, _, _ = await tb.command(MODE_COPY, src, dst, length)
    assert error == 1, "read SLVERR not reported"
    tb.check_all("COPY with read errors")
    # A write error: bytes of the failing page are not written, the rest is.
    src, dst, length = 0x20003, DST_BASE + bad_lo - 1000, 9000
    tb.refresh(src, length)
    for i in range(length):
        if not DST_BASE + bad_lo <= dst + i < DST_BASE + bad_hi:
            tb.shadow[dst + i] = tb.shadow[src + i]
    error, _, _ = await tb.command(MODE_COPY, src, dst, length)
    assert error == 1, "write SLVERR not reported"
    tb.check_all("COPY with write errors")
    error, _, _ = await tb.command(MODE_LOAD, bad_lo + 5, 0, 64)
    assert error == 1, "LOAD read SLVERR not reported"
    error, _, _ = await tb.command(MODE_STORE, 0, DST_BASE + bad_lo + 9, 32, b"\x55" * 64)
    assert error == 1, "STORE write SLVERR not reported"
    # The error is per command: good commands afterwards finish clean.
    tb.check_all("after the failing STORE")
    await tb.copy(0x30001, DST_BASE + 0x30002, 5000)
    await tb.store(DST_BASE + 0x35005, 17)
    await tb.load(0x36003, 64)


@cocotb.test()
async def test_throughput(dut):
    """64 KiB COPY with a slave that never stalls: cycles from accept to done."""
    tb = TB(dut, "throughput")
    await tb.reset()
    length = 64 << 10
    beats = length // tb.beat
    limit = int(1.05 * beats) + 64
    results = []
    for name, src, dst in (("aligned", 0x10000, DST_BASE + 0x10000),
                           ("src+3 dst+61", 0x30003, DST_BASE + 0x3003D),
                           ("src+61 dst+3", 0x5003D, DST_BASE + 0x50003)):
        cycles = await tb.copy(src, dst, length)
        results.append(cycles)
        tb.log.info("THROUGHPUT w=%d %s: 64 KiB COPY in %d cycles for %d beats: %.1f%% of one beat "
                    "per cycle, %.2f bytes/cycle", tb.width, name, cycles, beats,
                    100.0 * beats / cycles, length / cycles)
        assert cycles <= limit, f"{name}: {cycles} cycles, more than {limit}"
    # latency of the small commands the device issues per WQE and CQE (informational)
    _, _, load_cycles = await tb.command(MODE_LOAD, 0x7003, 0, 64)
    _, _, store_cycles = await tb.command(MODE_STORE, 0, DST_BASE + 0x7020, 32, bytes(64))
    tb.log.info("LATENCY w=%d: 64-byte LOAD %d cycles, 32-byte STORE %d cycles",
                tb.width, load_cycles, store_cycles)
    # reads must be pipelined: more than one AR in flight while data streams
    tb.log.info("at most %d read bursts were in flight", tb.max_reads_open)
    assert tb.max_reads_open >= 2, "read bursts were not overlapped"


def stream_cases(tb):
    """(offset, length): every byte offset 0..63 with a random length 1..9000 (all beat
    alignments at every width, several times over), the edge lengths at random offsets, and
    64 KiB."""
    rng = tb.rng
    cases = [(off, max(1, random_length(rng))) for off in range(64)]
    cases += [(rng.randrange(0, 64), n) for n in edge_lengths(tb.beat) if n]
    cases.append((rng.randrange(0, 64), 64 << 10))
    rng.shuffle(cases)
    return cases


@cocotb.test()
async def test_read_stream_random(dut):
    """READ_STREAM at every source alignment, lengths 1..9000 and 64 KiB, the consumer stalling
    at random (and, on event simulators, the AXI slave too)."""
    tb = TB(dut, "read_stream_random", backpressure=not ON_VERILATOR)
    tb.set_stream_backpressure()
    await tb.reset()
    cases = stream_cases(tb)
    for off, length in cases:
        src = tb.rng.randrange(1, (DST_BASE - 0x20000) // 4096) * 4096 + off
        await tb.read_stream(src, length)
    tb.check_all("after READ_STREAM")
    tb.log.info("%d READ_STREAM commands checked", len(cases))


@cocotb.test()
async def test_write_stream_random(dut):
    """WRITE_STREAM at every destination alignment, lengths 1..9000 and 64 KiB, the producer
    pausing at random (and, on event simulators, the AXI slave stalling too)."""
    tb = TB(dut, "write_stream_random", backpressure=not ON_VERILATOR)
    tb.set_stream_backpressure()
    await tb.reset()
    cases = stream_cases(tb)
    for off, length in cases:
        dst = DST_BASE + tb.rng.randrange(1, (DST_BASE - 0x20000) // 4096) * 4096 + off
        await tb.write_stream(dst, length)
    tb.check_all("after WRITE_STREAM")
    tb.log.info("%d WRITE_STREAM commands checked", len(cases))


@cocotb.test()
async def test_write_stream_mismatch(dut):
    """A stream that ends early or late against len: error, no hang, whole stream taken,
    nothing written outside [dst, dst+len); good commands work afterwards."""
    tb = TB(dut, "write_stream_mismatch", backpressure=not ON_VERILATOR)
    tb.set_stream_backpressure()
    await tb.reset()
    b = tb.beat
    rng = tb.rng
    n = 0
    for length in (1, b - 1, b, b + 1, 3 * b + 5, 1000, 5000):
        for sent in {1, length - 1, length + 1, length - b, length + b, length // 2, 2 * length + 7,
                     length + 3 * b + 1}:
            if sent < 1 or sent == length:
                continue
            dst = DST_BASE + rng.randrange(1, 400) * 4096 + rng.randrange(0, 64)
            await tb.write_stream(dst, length, sent, expect_error=1)
            n += 1
            # and the next command, a good one, is not disturbed by the bad one
            dst = DST_BASE + rng.randrange(400, 500) * 4096 + rng.randrange(0, 64)
            await tb.write_stream(dst, rng.randrange(1, 300))
    tb.check_all("after mismatched WRITE_STREAMs")
    tb.log.info("%d mismatched WRITE_STREAM commands checked", n)


@cocotb.test()
async def test_stream_throughput(dut):
    """64 KiB READ_STREAM and WRITE_STREAM with no stalls anywhere: cycles from accept to done."""
    tb = TB(dut, "stream_throughput")
    await tb.reset()
    length = 64 << 10
    beats = length // tb.beat
    limit = int(1.05 * beats) + 64
    for name, off in (("aligned", 0), ("offset 29", 29)):
        cycles = await tb.read_stream(0x10000 + off, length)
        tb.log.info("THROUGHPUT w=%d READ_STREAM %s: 64 KiB in %d cycles for %d beats: %.1f%%",
                    tb.width, name, cycles, beats, 100.0 * beats / cycles)
        assert cycles <= limit, f"READ_STREAM {name}: {cycles} cycles, more than {limit}"
        cycles = await tb.write_stream(DST_BASE + 0x30000 + off, length)
        tb.log.info("THROUGHPUT w=%d WRITE_STREAM %s: 64 KiB in %d cycles for %d beats: %.1f%%",
                    tb.width, name, cycles, beats, 100.0 * beats / cycles)
        assert cycles <= limit, f"WRITE_STREAM {name}: {cycles} cycles, more than {limit}"


# ---------------------------------------------------------------------------------------------
# The pytest runner: dma_mover unit tests at each supported data width.

RTL_FILES = ["dma_mover.v", "dma_rd_engine.v", "dma_wr_engine.v", "dma_realign.v",
             "dma_axi_burst.v", "dma_skid.v"]


@pytest.mark.parametrize("w", [64, 256, 512])
def test_dma_mover(w):
    simrun.run(
        toplevel="tb_dma_mover",
        test_module="test_dma_mover",
        parameters={"DATA_WIDTH": w, "ADDR_WIDTH": 32, "AXI_ID_WIDTH": 4, "LEN_WIDTH": 32},
        name=f"dma_mover_w{w}",
        rtl=RTL_FILES,
    )
