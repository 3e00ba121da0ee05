"""The testbench of the multi-client DMA engine (tb/hdl/tb_dma_engine.v: dma_engine with four
clients on one AXI4 master, ending in the HDL host memory sim_axi_ram). The tests are in
tests/test_dma_engine.py.

Python drives each client's command port (Client: a few wakes per command, none per beat, and
the cycles each command was accepted and done in) and keeps a numpy shadow of host memory; the
host memory is read and written through its back door (tb/host_mem.py). Client 2's read stream
ends in the harness's capture sink (which a test can hold) and client 1's write stream comes
from its playback source, both HDL. The harness's monitors on the engine's AXI mux count
round-robin grants, ID, routing and W-order errors, bursts outside their client's region and R
stalls; TB.check_bus asserts them, sim_axi_ram's protocol errors and one answer per burst, and
TB.check_round_robin the round-robin bound.

Every client works in a region of its own (client c: [c, c+1) << REGION_LOG) unless a test
shares memory on purpose, so each client's commands can be modelled one after the other
whatever the others do, and the harness can check that every burst with ID c stays in region c.
The TB's COPY/STORE/LOAD/ATOMIC/stream helpers issue one command and check it against the model;
random_command draws one, and the random programs of the tests are made of them.
"""

import logging

import numpy as np
import cocotb
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge, Timer, with_timeout

from .host_mem import HostMemory
from .seed import SEED, rng_for
from .signals import read_int, write_int

# the build: the engine's RTL files and the harness parameters besides DATA_WIDTH
RTL_FILES = ["dma_engine.v", "dma_axi_mux.v", "dma_sgl.v", "dma_mover.v", "dma_rd_engine.v",
             "dma_wr_engine.v", "dma_realign.v", "dma_axi_burst.v", "dma_fifo.v",
             "dma_store_queue.v"]
PARAMETERS = {"ADDR_WIDTH": 32, "AXI_ID_WIDTH": 4, "CLIENTS": 4, "DEEP": 0xC, "DEEP_LOG": 9,
              "SHALLOW_LOG": 4}

CLIENTS = 4
DEEP_CLIENTS = (2, 3)
MEM_SIZE = 1 << 21          # the harness's MEM_BYTES
REGION_LOG = 18             # the harness's REGION_LOG: client c owns [c, c+1) << 18
REGION = 1 << REGION_LOG
SHARED_BASE = CLIENTS * REGION      # memory no client owns: the tests that share memory use it
CAP_BEATS = 1 << 13         # the harness's stream capture and playback memories (CAP_LOG)

MODE_COPY = 0
MODE_STORE = 1
MODE_LOAD = 2
MODE_RD_STREAM = 3
MODE_WR_STREAM = 4
MODE_ATOMIC = 5
MODE_NAMES = {0: "COPY", 1: "STORE", 2: "LOAD", 3: "READ_STREAM", 4: "WRITE_STREAM", 5: "ATOMIC"}

CLOCK_NS = 4                # the harness toggles clk every 2 ns
MASK64 = (1 << 64) - 1


def region(c):
    return c * REGION, (c + 1) * REGION


def atomic_data(compare_add, swap=None):
    """An ATOMIC's data block: FetchAdd of compare_add, or (swap given) CompareSwap."""
    cas = swap is not None
    return ((compare_add & MASK64) | ((swap or 0) & MASK64) << 64 | int(cas) << 128) \
        .to_bytes(64, "little")


class Client:
    """One client's command port (c<i>_cmd_* / c<i>_done_*): one command at a time."""

    def __init__(self, tb, index):
        dut = tb.dut
        self.tb = tb
        self.index = index
        p = f"c{index}_"
        self.valid = getattr(dut, p + "cmd_valid")
        self.ready = getattr(dut, p + "cmd_ready")
        self.mode = getattr(dut, p + "cmd_mode")
        self.src = getattr(dut, p + "cmd_src")
        self.dst = getattr(dut, p + "cmd_dst")
        self.len = getattr(dut, p + "cmd_len")
        self.data = getattr(dut, p + "cmd_data")
        self.done_valid = getattr(dut, p + "done_valid")
        self.done_error = getattr(dut, p + "done_error")
        self.done_data = getattr(dut, p + "done_data")
        self.commands = 0
        # the last command's cycles (the harness's `cycle`): after its accepting edge, after the
        # edge of its done pulse
        self.accepted_at = self.done_at = None
        for sig in (self.valid, self.mode, self.src, self.dst, self.len, self.data):
            sig.value = 0

    async def command(self, mode, src=0, dst=0, length=0, data=b"", timeout_cycles=None):
        """Issue one command and wait for its done pulse; returns (error, done_data bytes) and
        keeps the cycles it was accepted and done in (accepted_at, done_at). Inputs change at
        falling edges and outputs are read after ReadOnly, so the result is the same on Icarus
        and Verilator. `timeout_cycles` only catches a hang (a broken engine),
        its default is far above any command's time in these tests."""
        clk = self.tb.dut.clk
        await FallingEdge(clk)
        self.mode.value = mode
        self.src.value = src
        self.dst.value = dst
        self.len.value = length
        self.data.value = int.from_bytes(bytes(data).ljust(64, b"\0"), "little")
        self.valid.value = 1
        while not self.ready.value:
            await RisingEdge(self.ready)
            await FallingEdge(clk)
        await RisingEdge(clk)               # the accepting edge
        self.valid.value = 0
        await ReadOnly()
        self.accepted_at = int(self.tb.dut.cycle.value)
        what = (f"client {self.index} {MODE_NAMES.get(mode, mode)} src=0x{src:x} dst=0x{dst:x} "
                f"len={length}")
        if not self.done_valid.value:
            if timeout_cycles is None:
                timeout_cycles = self.tb.hang_cycles(length)
            try:
                await with_timeout(RisingEdge(self.done_valid), timeout_cycles * CLOCK_NS, "ns")
            except cocotb.triggers.SimTimeoutError:
                self.tb.log.error("%s: hang:\n%s", what, self.tb.state())
                raise AssertionError(f"{what}: no done in {timeout_cycles} cycles: the engine "
                                     f"hangs (SEED={SEED})") from None
            await ReadOnly()
        self.done_at = int(self.tb.dut.cycle.value)
        error = int(self.done_error.value)
        done = int(self.done_data.value).to_bytes(64, "little")
        self.commands += 1
        assert not error, f"{what}: m_done_error set (SEED={SEED})"
        return error, done


class TB:
    def __init__(self, dut, test_name, read_latency=2, write_latency=1, stall_rate=0,
                 ar_throttle=0, aw_throttle=0):
        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        self.log.setLevel(logging.INFO)
        self.name = test_name
        self.rng = rng_for(test_name, self.log)
        self.width = len(dut.m_axi_wdata)
        self.beat = self.width // 8
        self.read_latency = read_latency
        self.mem = HostMemory(dut.host_mem, MEM_SIZE)
        self.timing = dict(read_latency=read_latency, write_latency=write_latency,
                           stall_rate=stall_rate, seed=self.rng.randrange(1, 1 << 32))
        self.log.info("%s: %d bits, read latency %d, write latency %d, stall rate %d/256, AR and "
                      "AW throttled %d/256 and %d/256", test_name, self.width, read_latency,
                      write_latency, stall_rate, ar_throttle, aw_throttle)
        self.shadow = np.zeros(MEM_SIZE, dtype=np.uint8)
        self.clients = [Client(self, c) for c in range(CLIENTS)]
        dut.rst.value = 1
        dut.rd2_hold.value = 0
        dut.rd2_stall_rate.value = 0
        dut.rd2_clear.value = 0
        dut.wr1_stall_rate.value = 0
        dut.wr1_restart.value = 0
        dut.wr1_beats.value = 0
        dut.region_check.value = 1
        dut.ar_throttle.value = ar_throttle
        dut.aw_throttle.value = aw_throttle
        self._cap = {}          # capture / playback memory word -> its GPI object

    # --- set-up ---------------------------------------------------------------------------------

    async def reset(self):
        """Reset, then random contents in every client's region and the shared area (a byte
        that lands wrong cannot match by luck)."""
        dut = self.dut
        dut.rst.value = 1
        # sim_axi_ram's timing, deposited at a falling edge in reset: on Icarus a deposit at
        # time 0, or in a clock edge's time step, can leave the memory's stall generator at X
        await FallingEdge(dut.clk)
        self.mem.configure(**self.timing)
        dut.srng.value = self.rng.randrange(1, 1 << 32)    # the harness's own stall generator
        for _ in range(8):
            await RisingEdge(dut.clk)
        ram = dut.host_mem
        assert ram.rng.value.is_resolvable and ram.rng_next.value.is_resolvable, \
            f"sim_axi_ram's stall generator is {ram.rng.value} (the deposit did not take)"
        self.protocol_base = self.mem.protocol_errors    # sim_axi_ram's count is never cleared
        dut.rst.value = 0
        for _ in range(4):
            await RisingEdge(dut.clk)
        fill = np.random.default_rng(self.rng.randrange(1 << 64))
        self.shadow[:] = fill.integers(0, 256, MEM_SIZE, dtype=np.uint8)
        self.mem.write(0, self.shadow)

    def hang_cycles(self, length):
        """How long a command may take before the test calls it a hang: ten times a slow
        estimate (every burst of a shallow mover paying the read latency, shared four ways) and
        never under 100000 cycles. Not a performance bound: the tests assert no timing."""
        bursts = length // (16 * self.beat) + 4
        return max(100_000, 10 * 4 * bursts * (self.read_latency + 64))

    def state(self):
        """The engine's handshake state, for a hang's message: the mux, each client's mover,
        the host memory's queues."""
        d = self.dut
        mux = d.dut.mux
        ram = d.host_mem

        def v(sig):
            try:
                return int(sig.value)
            except ValueError:
                return str(sig.value)

        lines = [f"cycle {v(d.cycle)}: mux arvalid={mux.s_axi_arvalid.value} "
                 f"awvalid={mux.s_axi_awvalid.value} wvalid={mux.s_axi_wvalid.value} "
                 f"s_lock={mux.s_lock.value} lk_busy={v(mux.lk_busy)} lk_owner={v(mux.lk_owner)} "
                 f"lk_read={v(mux.lk_read)} wr_out={v(mux.wr_out)} ar_hold={v(mux.ar_hold)} "
                 f"aw_hold={v(mux.aw_hold)} wo_wr={v(mux.wo_wr)} wo_rd={v(mux.wo_rd)}; master "
                 f"arvalid={v(d.m_axi_arvalid)} arready={v(d.m_axi_arready)} "
                 f"awvalid={v(d.m_axi_awvalid)} awready={v(d.m_axi_awready)} "
                 f"wvalid={v(d.m_axi_wvalid)} wready={v(d.m_axi_wready)} "
                 f"rvalid={v(d.m_axi_rvalid)} bvalid={v(d.m_axi_bvalid)}; ram aw_wr={v(ram.aw_wr)} "
                 f"aw_rd={v(ram.aw_rd)} ar_wr={v(ram.ar_wr)} ar_rd={v(ram.ar_rd)} "
                 f"b_wr={v(ram.b_wr)} b_rd={v(ram.b_rd)} stall_rate={v(ram.stall_rate)} "
                 f"rng={ram.rng.value}"]
        for c in range(CLIENTS):
            client = getattr(d.dut.client, "__getitem__")(c)
            if hasattr(client, "stores"):
                q = client.stores.mover
                lines.append(f"client {c}: store queue wr={v(q.wr_ptr)} aw={v(q.aw_ptr)} "
                             f"w={v(q.w_ptr)} b={v(q.b_ptr)} w_beat={v(q.w_beat)}")
                continue
            sgl = client.movers.mover
            mv = sgl.u_mover
            rd, wr = mv.u_rd, mv.u_wr
            lines.append(
                f"client {c}: sgl state={v(sgl.state)} mover state={v(mv.state)} "
                f"mode={v(mv.cmd_mode)} lock={v(mv.m_lock)}; rd left={v(rd.left)} "
                f"out_bursts={v(rd.out_bursts)} coming={v(rd.coming)} buf={v(rd.buf_count)} "
                f"arvalid={v(rd.m_axi_arvalid)}; wr active={v(wr.active)} w_open={v(wr.w_open)} "
                f"b_pending={v(wr.b_pending)} awvalid={v(wr.m_axi_awvalid)} "
                f"aw_left={v(wr.u_aw.left)} s_valid={v(wr.s_valid)} wvalid={v(wr.m_axi_wvalid)}")
        return "\n".join(lines)

    async def cycles(self, n):
        await Timer(n * CLOCK_NS, "ns")

    # --- the monitors -----------------------------------------------------------------------------

    def monitors(self):
        d = self.dut

        def per_client(sig):
            v = int(sig.value)
            return [(v >> (32 * c)) & 0xFFFFFFFF for c in range(CLIENTS)]

        return dict(
            ar_rr_worst=int(d.ar_rr_worst.value), aw_rr_worst=int(d.aw_rr_worst.value),
            ar_rr_over=int(d.ar_rr_over.value), aw_rr_over=int(d.aw_rr_over.value),
            ar_waited=int(d.ar_waited.value), aw_waited=int(d.aw_waited.value),
            ar_rr_first=int(d.ar_rr_first.value), aw_rr_first=int(d.aw_rr_first.value),
            id_errors=int(d.id_errors.value), region_errors=int(d.region_errors.value),
            r_stalls=int(d.r_stalls.value),
            ar_shared=int(d.ar_shared.value), aw_shared=int(d.aw_shared.value),
            protocol_errors=self.mem.protocol_errors - self.protocol_base,
            ar_grants=per_client(d.ar_grants), aw_grants=per_client(d.aw_grants),
            r_lasts=per_client(d.r_lasts), b_count=per_client(d.b_count))

    def check_bus(self, what):
        """The invariants every test keeps, checked once every command is done: the AXI rules
        sim_axi_ram checks, IDs and routing, W in AW order, bursts in their client's region
        (while region_check is on), R never held up, and each client given exactly one RLAST
        per AR and one B per AW."""
        m = self.monitors()
        assert m["protocol_errors"] == 0, \
            f"{what}: sim_axi_ram counted {m['protocol_errors']} AXI protocol errors (SEED={SEED})"
        assert m["id_errors"] == 0, \
            (f"{what}: {m['id_errors']} AR/AW/R/W/B handshakes with the wrong ID, client or "
             f"burst (SEED={SEED})")
        assert m["region_errors"] == 0, \
            f"{what}: {m['region_errors']} bursts outside their ID's client region (SEED={SEED})"
        assert m["r_stalls"] == 0, \
            f"{what}: R held up for {m['r_stalls']} cycles (SEED={SEED})"
        assert m["r_lasts"] == m["ar_grants"] and m["b_count"] == m["aw_grants"], \
            (f"{what}: per client, RLASTs {m['r_lasts']} for ARs {m['ar_grants']} and Bs "
             f"{m['b_count']} for AWs {m['aw_grants']}: a burst unanswered or answered to "
             f"another client (SEED={SEED})")
        return m

    def check_round_robin(self, what, m=None):
        m = m or self.monitors()
        for ch in ("ar", "aw"):
            first = m[f"{ch}_rr_first"]
            assert m[f"{ch}_rr_over"] == 0 and m[f"{ch}_rr_worst"] <= 1, \
                (f"{what}: {ch.upper()} round robin broken: while a client waited, another was "
                 f"granted {m[f'{ch}_rr_worst']} times ({m[f'{ch}_rr_over']} grants over the "
                 f"bound of 1; the first at cycle {first >> 16}: client {first & 3} granted "
                 f"again while client {(first >> 2) & 3} waited) (SEED={SEED})")
        return m

    async def quiesce(self):
        """Let the last B and R settle into the monitors."""
        await self.cycles(4)
        await FallingEdge(self.dut.clk)

    # --- memory model ---------------------------------------------------------------------------

    def check_memory(self, lo, hi, what):
        lo, hi = max(lo, 0), min(hi, MEM_SIZE)
        got = self.mem.read_array(lo, hi - lo)
        want = self.shadow[lo:hi]
        bad = np.flatnonzero(got != want)
        if len(bad):
            i = int(bad[0])
            raise AssertionError(
                f"{what}: {len(bad)} wrong bytes in [0x{lo:x}, 0x{hi:x}), the first at "
                f"0x{lo + i:x}: got {int(got[i]):#04x}, want {int(want[i]):#04x} (SEED={SEED})")

    def check_all(self, what):
        self.check_memory(0, MEM_SIZE, what)

    def word(self, addr):
        return int.from_bytes(self.shadow[addr:addr + 8].tobytes(), "little")

    # --- the modes, each against the model (the client's own region: nobody else writes it) ----

    def check_near(self, c, lo, hi, what):
        """[lo - 64, hi + 64) inside client c's region: only c writes there, so it must match
        the model as soon as c's command is done."""
        r_lo, r_hi = region(c)
        self.check_memory(max(lo - 64, r_lo), min(hi + 64, r_hi), what)

    async def copy(self, c, src, dst, length):
        await self.clients[c].command(MODE_COPY, src, dst, length)
        self.shadow[dst:dst + length] = self.shadow[src:src + length].copy()
        self.check_near(c, dst, dst + length,
                        f"client {c} COPY src=0x{src:x} dst=0x{dst:x} len={length}")

    async def store(self, c, dst, data):
        await self.clients[c].command(MODE_STORE, 0, dst, len(data), data)
        self.shadow[dst:dst + len(data)] = np.frombuffer(bytes(data), dtype=np.uint8)
        self.check_near(c, dst, dst + len(data), f"client {c} STORE dst=0x{dst:x} len={len(data)}")

    async def load(self, c, src, length):
        _, got = await self.clients[c].command(MODE_LOAD, src, 0, length)
        want = self.shadow[src:src + length].tobytes().ljust(64, b"\0")
        assert got == want, (f"client {c} LOAD src=0x{src:x} len={length}: got {got.hex()}, want "
                             f"{want.hex()} (SEED={SEED})")
        return got[:length]

    async def atomic(self, c, dst, compare_add, swap=None):
        """FetchAdd (or with `swap`, CompareSwap) on the 8 bytes at dst: the original comes back,
        the new value lands."""
        orig = self.word(dst)
        _, got = await self.clients[c].command(MODE_ATOMIC, 0, dst, 8,
                                               atomic_data(compare_add, swap))
        op = "CompareSwap" if swap is not None else "FetchAdd"
        what = f"client {c} ATOMIC {op} dst=0x{dst:x}"
        assert got == orig.to_bytes(8, "little").ljust(64, b"\0"), \
            f"{what}: original {got[:8].hex()}, want {orig:016x} (SEED={SEED})"
        if swap is None:
            new = (orig + compare_add) & MASK64
        else:
            new = swap if orig == compare_add else orig
        self.shadow[dst:dst + 8] = np.frombuffer(new.to_bytes(8, "little"), dtype=np.uint8)
        self.check_near(c, dst, dst + 8, what)
        return orig

    # --- client 2's read stream (capture sink) and client 1's write stream (playback source) ---

    def _cap_obj(self, mem, index):
        key = (mem, index)
        obj = self._cap.get(key)
        if obj is None:
            obj = self._cap[key] = getattr(self.dut, mem)[index]._handle
        return obj

    def captured(self):
        """The beats client 2's sink took since the last clear: [(data, keep, last)]."""
        n = int(self.dut.rd2_count.value)
        assert n <= CAP_BEATS, f"client 2's stream ran {n} beats, past the capture memory"
        b = self.beat
        beats = []
        for i in range(n):
            v = read_int(self._cap_obj("rd2_cap", i))
            beats.append(((v & ((1 << self.width) - 1)).to_bytes(b, "little"),
                          (v >> self.width) & ((1 << b) - 1), v >> (self.width + b)))
        return beats

    def frame_beats(self, data, lane):
        """A stream frame laid out as dma_mover's streams are: the first byte in lane `lane` of
        the first beat, tkeep exactly the bytes' lanes, tlast on the last beat; lanes outside
        tkeep zero. [(data, keep, last)]"""
        b = self.beat
        total = -(-(lane + len(data)) // b) * b
        raw = bytes(lane) + bytes(data) + bytes(total - lane - len(data))
        keep = [0] * lane + [1] * len(data) + [0] * (total - lane - len(data))
        beats = []
        for i in range(total // b):
            k = sum(bit << j for j, bit in enumerate(keep[i * b:(i + 1) * b]))
            beats.append((raw[i * b:(i + 1) * b], k, int(i == total // b - 1)))
        return beats

    async def clear_capture(self):
        dut = self.dut
        await FallingEdge(dut.clk)
        dut.rd2_clear.value = 1
        await FallingEdge(dut.clk)
        dut.rd2_clear.value = 0

    def check_frame(self, what, src, length, lane):
        want = self.frame_beats(self.shadow[src:src + length].tobytes(), lane)
        got = self.captured()
        assert len(got) == len(want), \
            f"{what}: {len(got)} beats on the stream, want {len(want)} (SEED={SEED})"
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                raise AssertionError(
                    f"{what}: beat {i} of {len(want)}: got data {g[0].hex()} keep {g[1]:#x} last "
                    f"{g[2]}, want data {w[0].hex()} keep {w[1]:#x} last {w[2]} (SEED={SEED})")

    async def read_stream(self, src, length, lane=0, timeout_cycles=None):
        """Client 2's READ_STREAM of [src, src+len): the stream carries exactly those bytes from
        lane `lane` (the dst low bits; upper dst bits random, ignored). `timeout_cycles` as in
        Client.command (a test that holds the sink gives it room for the hold)."""
        await self.clear_capture()
        dst = self.rng.randrange(0, 1 << 16) * self.beat + lane
        what = f"client 2 READ_STREAM src=0x{src:x} len={length} lane {lane}"
        await self.clients[2].command(MODE_RD_STREAM, src, dst, length,
                                      timeout_cycles=timeout_cycles)
        self.check_frame(what, src, length, lane)

    async def load_playback(self, beats):
        dut = self.dut
        assert len(beats) <= CAP_BEATS
        b = self.beat
        nbits = self.width + b + 1
        await FallingEdge(dut.clk)
        for i, (data, keep, last) in enumerate(beats):
            value = int.from_bytes(data, "little") | keep << self.width | last << (self.width + b)
            write_int(self._cap_obj("wr1_mem", i), value, nbits)
        dut.wr1_beats.value = len(beats)
        dut.wr1_restart.value = 1
        await FallingEdge(dut.clk)
        dut.wr1_restart.value = 0

    async def write_stream(self, dst, length, lane=0):
        """Client 1's WRITE_STREAM of a random frame (its first byte in lane `lane`, the src low
        bits; upper src bits random) to [dst, dst+len): the bytes land, the frame is taken whole,
        nothing else changes."""
        data = bytes(self.rng.randbytes(length))
        await self.load_playback(self.frame_beats(data, lane))
        src = self.rng.randrange(0, 1 << 16) * self.beat + lane
        await self.clients[1].command(MODE_WR_STREAM, src, dst, length)
        self.shadow[dst:dst + length] = np.frombuffer(data, dtype=np.uint8)
        what = f"client 1 WRITE_STREAM dst=0x{dst:x} len={length} lane {lane}"
        assert int(self.dut.wr1_ptr.value) == int(self.dut.wr1_beats.value), \
            f"{what}: the frame was not taken whole (SEED={SEED})"
        self.check_near(1, dst, dst + length, what)

    # --- random programs ------------------------------------------------------------------------

    def copy_length(self, longest=9000):
        r = self.rng.random()
        if r < 0.3:
            return self.rng.randrange(1, 257)
        if r < 0.55:
            return self.rng.randrange(1, 1025)
        return self.rng.randrange(1, longest + 1)

    def place(self, c, length, avoid=None):
        """A random start for `length` bytes in client c's region, now and then just below a
        4 KiB page end; not overlapping `avoid` (start, length)."""
        lo, hi = region(c)
        while True:
            if self.rng.random() < 0.2:
                page = self.rng.randrange(lo // 4096 + 1, hi // 4096)
                at = page * 4096 - self.rng.randrange(1, 2 * self.beat + 1)
            else:
                at = self.rng.randrange(lo, hi - length)
            if at + length > hi:
                continue
            if avoid and at < avoid[0] + avoid[1] and avoid[0] < at + length:
                continue
            return at

    async def random_command(self, c, kinds, longest=9000):
        """One random command of client c, in its own region, checked against the model."""
        rng = self.rng
        kind = rng.choices(list(kinds), weights=list(kinds.values()))[0]
        if kind in ("copy", "long_copy"):
            if kind == "copy":
                n = self.copy_length(longest)
            else:
                n = rng.randrange(longest // 2, longest + 1)
            src = self.place(c, n)
            await self.copy(c, src, self.place(c, n, (src, n)), n)
        elif kind == "store":
            n = rng.randrange(1, 65)
            await self.store(c, self.place(c, n), rng.randbytes(n))
        elif kind == "load":
            n = rng.randrange(1, 65)
            await self.load(c, self.place(c, n), n)
        elif kind == "atomic":
            lo, hi = region(c)
            dst = rng.randrange(lo, hi - 8) & ~7
            r = rng.random()
            if r < 0.5:
                await self.atomic(c, dst, rng.getrandbits(64))
            elif r < 0.75:      # CompareSwap that matches
                await self.atomic(c, dst, self.word(dst), rng.getrandbits(64))
            else:               # CompareSwap that does not
                await self.atomic(c, dst, self.word(dst) ^ (1 << rng.randrange(64)),
                                  rng.getrandbits(64))
        elif kind == "read_stream":
            assert c == 2
            n = self.copy_length(longest)
            await self.read_stream(self.place(c, n), n, rng.randrange(self.beat))
        elif kind == "write_stream":
            assert c == 1
            n = self.copy_length(longest)
            await self.write_stream(self.place(c, n), n, rng.randrange(self.beat))
        else:
            raise ValueError(kind)
