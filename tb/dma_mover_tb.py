"""The testbench of the DMA engine (tb/hdl/tb_dma_mover.v: dma_sgl around dma_mover): its
command port driven from Python, a cocotbext-axi AxiRam as host memory with a Python shadow of
it, the payload streams on cocotbext-axi stream models, and a monitor counting handshakes per
channel. The unit tests (tests/test_dma_mover.py) and the throughput benchmark
(tools/bench_dma_mover.py) use it."""

import logging
import random

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge, with_timeout
from cocotbext.axi import AxiBus, AxiRam, AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from .seed import SEED, rng_for

# the build: the engine's RTL files (dma_sgl around dma_mover) and the harness parameters
# besides DATA_WIDTH
RTL_FILES = ["dma_sgl.v", "dma_mover.v", "dma_rd_engine.v", "dma_wr_engine.v", "dma_realign.v",
             "dma_axi_burst.v", "dma_fifo.v"]
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


# --- scatter/gather lists (dma_sgl) -----------------------------------------------------------
# A list is up to 4 entries (host address, length); in s_cmd_data the source list fills bytes
# 0..31, the destination list bytes 32..63, entry e as {len[31:0], addr[31:0]} at bytes 8e..8e+7.

def pack_list(entries):
    """One list half of s_cmd_data (32 bytes); None or [] is an absent list."""
    out = bytearray(32)
    for e, (addr, n) in enumerate(entries or []):
        out[8 * e:8 * e + 8] = (addr | n << 32).to_bytes(8, "little")
    return bytes(out)


def list_data(src_list=None, dst_list=None):
    return pack_list(src_list) + pack_list(dst_list)


def list_present(entries):
    return bool(entries) and any(n for _, n in entries)


def list_segments(entries, offset, length):
    """Bytes [offset, offset+length) of the list (its entries concatenated) as host ranges
    (addr, n) in order, and how many of the bytes the list covers (always a prefix)."""
    segs = []
    pos = 0
    for addr, n in entries:
        lo, hi = max(offset, pos), min(offset + length, pos + n)
        if hi > lo:
            segs.append((addr + lo - pos, hi - lo))
        pos += n
    return segs, sum(n for _, n in segs)


def side_segments(entries, addr, length):
    """A command side: its list's ranges when a list is present, else [addr, addr+length)."""
    if list_present(entries):
        return list_segments(entries, addr, length)
    return [(addr, length)], length


def pair_segments(src_segs, dst_segs):
    """Two sides walked together: (src, dst, n) pieces of the part both cover, in order."""
    out = []
    i = j = so = do = 0
    while i < len(src_segs) and j < len(dst_segs):
        (sa, sn), (da, dn) = src_segs[i], dst_segs[j]
        n = min(sn - so, dn - do)
        out.append((sa + so, da + do, n))
        so, do = so + n, do + n
        if so == sn:
            i, so = i + 1, 0
        if do == dn:
            j, do = j + 1, 0
    return out
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
        dut.w_shared.value = 0      # no other mover writes (tests set it)

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

    def fail_page(self, lo, hi):
        """Make the RAM answer SLVERR for reads of [lo, hi) and for writes of the same range in
        the destination half (DST_BASE + lo): the error tests' failing page. Returns what
        makes the RAM whole again."""
        logging.getLogger(f"cocotb.{self.dut._name}.m_axi").setLevel(logging.ERROR)
        read_ram, write_ram = self.ram.read_if._read, self.ram.write_if._write

        async def failing_read(address, length):
            if lo <= address < hi:
                raise IOError("injected read error")
            return await read_ram(address, length)

        async def failing_write(address, data):
            if DST_BASE + lo <= address < DST_BASE + hi:
                raise IOError("injected write error")
            await write_ram(address, data)

        self.ram.read_if._read = failing_read
        self.ram.write_if._write = failing_write

        def restore():
            self.ram.read_if._read, self.ram.write_if._write = read_ram, write_ram
        return restore

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

    def check_frame(self, what, want, lane=0, refused=False):
        """The read stream carried exactly one frame: the bytes `want` from lane `lane` of its
        first beat on, tkeep exactly their lanes, tlast on the last beat only (an early tlast
        makes a second frame), zero data in every lane outside tkeep, and tuser on the last
        beat exactly when host memory `refused` some of the reads."""
        length = len(want)
        if not length:
            assert self.rd_sink.empty(), f"{what}: a frame for no bytes (SEED={SEED})"
            return
        assert not self.rd_sink.empty(), f"{what}: no frame (SEED={SEED})"
        frame = self.rd_sink.recv_nowait(compact=False)   # the last beat was taken before done
        assert self.rd_sink.empty(), f"{what}: more than one frame (tlast early) (SEED={SEED})"
        nbytes = -(-(lane + length) // self.beat) * self.beat
        assert len(frame.tdata) == nbytes, \
            f"{what}: {len(frame.tdata)} lane bytes, want {nbytes} (SEED={SEED})"
        want = bytes(lane) + bytes(want) + bytes(nbytes - lane - length)
        if bytes(frame.tdata) != want:
            i = next(k for k in range(nbytes) if frame.tdata[k] != want[k])
            raise AssertionError(f"{what}: byte {i} got {frame.tdata[i]:#04x} want {want[i]:#04x} "
                                 f"(SEED={SEED})")
        assert list(frame.tkeep) == [0] * lane + [1] * length + [0] * (nbytes - lane - length), \
            f"{what}: tkeep wrong (SEED={SEED})"
        assert bool(frame.tuser[-1]) == refused, \
            f"{what}: tuser {frame.tuser[-1]} on the last beat, want {int(refused)} (SEED={SEED})"

    def stream_lane_addr(self, lane):
        """The address field of a stream's own side: 0 by default, else the lane offset under
        random upper bits (which the engine must ignore)."""
        return 0 if lane is None else self.rng.randrange(0, 1 << 20) * self.beat + lane

    async def read_stream(self, src, length, lane=None):
        """READ_STREAM: the stream must carry exactly the source bytes, byte 0 in lane 0 (or in
        lane `lane`, given in the dst low bits), tkeep exactly the lanes of the bytes, zero
        lanes outside it, tlast on the last beat only."""
        self.refresh(src - 64, length + 128)
        dst = self.stream_lane_addr(lane)
        error, _, cycles = await self.command(MODE_RD_STREAM, src, dst, length)
        what = f"READ_STREAM src=0x{src:x} dst=0x{dst:x} len={length}"
        assert error == 0, f"{what}: m_done_error set (SEED={SEED})"
        self.check_frame(what, self.shadow[src:src + length], lane or 0)
        return cycles

    async def write_stream(self, dst, length, sent=None, expect_error=0, lane=None, tkeep=None):
        """WRITE_STREAM of `length` bytes from a stream frame of `sent` bytes (default the same),
        its first byte in lane 0 (or in lane `lane`, given in the src low bits; the frame has
        random bytes under tkeep 0 below it). With a mismatch, bytes of the frame inside the
        range must land, bytes of the range the frame did not cover may be anything, and
        nothing outside [dst, dst+len) may change. `tkeep`: the frame's tkeep per byte instead
        (a wrong one: then nothing in [dst, dst+len) is checked, only outside)."""
        sent = length if sent is None else sent
        off = lane or 0
        data = self.rng.randbytes(sent)
        keep = [0] * off + [1] * sent if tkeep is None else tkeep
        await self.wr_source.send(AxiStreamFrame(self.rng.randbytes(off) + data, tkeep=keep))
        n = min(length, sent) if tkeep is None else 0
        self.shadow[dst:dst + n] = data[:n]
        src = self.stream_lane_addr(lane)
        error, _, cycles = await self.command(MODE_WR_STREAM, src, dst, length)
        what = f"WRITE_STREAM src=0x{src:x} dst=0x{dst:x} len={length} frame={sent}"
        assert error == expect_error, f"{what}: m_done_error={error} (SEED={SEED})"
        # every beat of the frame was taken, also the ones after len
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        assert self.wr_source.idle(), f"{what}: the stream was not drained (SEED={SEED})"
        if n < length:   # the engine made up the missing bytes: whatever it wrote is accepted
            self.shadow[dst + n:dst + length] = self.ram.read(dst + n, length - n)
        self.check_region(dst - 4096, dst + length + 4096, what)
        return cycles

    # --- scatter/gather lists -------------------------------------------------------------------

    def random_list(self, dst_side):
        """1..4 entries in the source (or destination) half of the RAM: lengths 0, 1, a few
        beats, up to 6000 (across 4 KiB pages), some starting just below a page end; the
        entries past the count have length 0 but an address (they must be left alone), and
        at least one length is not 0 (else the list would be absent)."""
        rng = self.rng
        base = DST_BASE if dst_side else 0
        pages = (DST_BASE - 0x20000) // 4096
        count = rng.choices((1, 2, 3, 4), (15, 20, 25, 40))[0]
        entries = []
        for e in range(4):
            r = rng.random()
            if e >= count or r < 0.12:
                n = 0
            elif r < 0.25:
                n = 1
            elif r < 0.5:
                n = rng.randrange(2, 2 * self.beat + 3)
            elif r < 0.88:
                n = rng.randrange(1, 1500)
            else:
                n = rng.randrange(1500, 6000)
            r = rng.random()
            if r < 0.5:
                off = rng.randrange(0, 4096)
            elif r < 0.75:
                off = 4096 - rng.randrange(1, 2 * self.beat + 1)
            else:
                off = rng.randrange(0, 64)
            entries.append((base + rng.randrange(1, pages) * 4096 + off, n))
        if not list_present(entries):
            e = rng.randrange(count)
            entries[e] = (entries[e][0], rng.randrange(1, 300))
        return entries

    def random_range(self, entries, covered=True):
        """An offset into the list and a length: up to the list's end (`covered`), or past it."""
        rng = self.rng
        total = sum(n for _, n in entries)
        first = next(n for _, n in entries if n)
        r = rng.random()
        # mostly from the start or inside the first entry, so that most ranges span entries
        off = 0 if r < 0.3 else rng.randrange(0, first) if r < 0.7 else rng.randrange(0, total + 1)
        room = total - off
        if not covered:
            return off, room + rng.choice([1, 2, self.beat, rng.randrange(1, 3000)])
        r = rng.random()
        if r < 0.4 or room < 2:
            return off, room
        return off, (1 if r < 0.48 else rng.randrange(1, room + 1))

    async def list_copy(self, src, dst, length, src_list=None, dst_list=None):
        """COPY with a source and/or destination list (or neither): the bytes of the covered
        part land in order, nothing else in the RAM changes, and the error is set exactly when
        either list ends before len. Returns the error."""
        src_segs, _ = side_segments(src_list, src, length)
        dst_segs, _ = side_segments(dst_list, dst, length)
        for addr, n in src_segs:
            self.refresh(addr, n)
        pieces = pair_segments(src_segs, dst_segs)
        for s, d, n in pieces:
            self.shadow[d:d + n] = self.shadow[s:s + n]
        moved = sum(n for _, _, n in pieces)
        error, _, _ = await self.command(MODE_COPY, src, dst, length,
                                         list_data(src_list, dst_list))
        what = f"list COPY src=0x{src:x} {src_list} dst=0x{dst:x} {dst_list} len={length}"
        assert error == int(moved < length), \
            f"{what}: m_done_error={error}, {moved} bytes covered (SEED={SEED})"
        self.check_all(what)
        return error

    async def list_read_stream(self, src, length, src_list):
        """READ_STREAM from bytes [src, src+len) of a source list: one frame laid out exactly
        as a plain READ_STREAM's, the bytes past the list's end as zeros, and the error (and
        tuser on the last beat) set exactly when the list ends before len. The dst field holds
        junk: it is ignored."""
        segs, covered = list_segments(src_list, src, length)
        for addr, n in segs:
            self.refresh(addr, n)
        want = b"".join(bytes(self.shadow[a:a + n]) for a, n in segs) + bytes(length - covered)
        dst = self.rng.randrange(0, 1 << 32)
        error, _, _ = await self.command(MODE_RD_STREAM, src, dst, length, list_data(src_list))
        what = f"list READ_STREAM src=0x{src:x} {src_list} dst=0x{dst:x} len={length}"
        assert error == int(covered < length), \
            f"{what}: m_done_error={error}, {covered} bytes covered (SEED={SEED})"
        self.check_frame(what, want, refused=covered < length)
        self.check_all(what)
        return error

    async def list_write_stream(self, dst, length, dst_list, sent=None):
        """WRITE_STREAM to bytes [dst, dst+len) of a destination list from a frame of `sent`
        bytes (default len), byte 0 in lane 0: the frame's bytes land in the covered part in
        order, bytes of it the frame did not reach may be anything, nothing else changes; the
        whole frame is taken; the error is set exactly when the frame is not len bytes or the
        list ends before len. The src field holds junk: it is ignored."""
        sent = length if sent is None else sent
        data = self.rng.randbytes(sent)
        await self.wr_source.send(AxiStreamFrame(data))
        segs, covered = list_segments(dst_list, dst, length)
        pos = 0
        unset = []     # parts of the list range the frame did not reach
        for addr, n in segs:
            k = max(0, min(n, sent - pos))
            self.shadow[addr:addr + k] = data[pos:pos + k]
            if k < n:
                unset.append((addr + k, n - k))
            pos += n
        src = self.rng.randrange(0, 1 << 32)
        error, _, _ = await self.command(MODE_WR_STREAM, src, dst, length, list_data(None, dst_list))
        what = (f"list WRITE_STREAM src=0x{src:x} dst=0x{dst:x} {dst_list} len={length} "
                f"frame={sent}")
        assert error == int(sent != length or covered < length), \
            f"{what}: m_done_error={error}, {covered} bytes covered (SEED={SEED})"
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        assert self.wr_source.idle(), f"{what}: the stream was not drained (SEED={SEED})"
        for addr, n in unset:
            self.shadow[addr:addr + n] = self.ram.read(addr, n)
        self.check_all(what)
        return error
