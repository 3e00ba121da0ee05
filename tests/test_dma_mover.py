"""Unit tests of the DMA engine, dma_mover and the scatter/gather wrapper dma_sgl in front of it
(through tb/hdl/tb_dma_mover.v), against a cocotbext-axi AxiRam. Commands without a list pass
through dma_sgl to dma_mover unchanged, so the tests of the plain modes test dma_mover.

Every check compares host memory with a Python shadow of it, so a byte written outside
[dst, dst+len) (or outside a list's ranges) anywhere in the RAM is caught, not just in guard
bands. Randomness comes from one seed, printed at the start of each test; SEED=<n> replays a
run.
"""

import itertools
import logging
import random

import cocotb
from cocotb.triggers import RisingEdge
import pytest

from tb import simrun
from tb.dma_mover_tb import (
    DST_BASE, MODE_ATOMIC, MODE_COPY, MODE_LOAD, MODE_RD_STREAM, MODE_STORE, MODE_WR_STREAM,
    ON_VERILATOR, PARAMETERS, RTL_FILES, TB, list_data, list_segments,
)
from tb.seed import REGRESS, UNIT_WIDTHS


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
    """len 0 finishes at once with no bus or stream traffic; modes 6 and 7 finish with an
    error."""
    tb = TB(dut, "zero_length_and_bad_mode")
    await tb.reset()
    for mode in (MODE_COPY, MODE_STORE, MODE_LOAD, MODE_RD_STREAM, MODE_WR_STREAM, MODE_ATOMIC):
        error, data, cycles = await tb.command(mode, 0x1234, DST_BASE + 0x567, 0, b"\xff" * 64)
        assert error == 0 and cycles <= 2, f"mode {mode} len 0: error={error} cycles={cycles}"
        assert data == bytes(64)
    for mode in (6, 7):
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
    """Sixty COPYs (several hundred under REGRESS), all alignments and lengths 0..9000,
    plus 64 KiB and (REGRESS) 1 MiB: rdma_dev's own tests move 1 MiB through this engine at
    every width."""
    tb = TB(dut, "copy_random")
    await tb.reset()
    await run_copies(tb, 320 if REGRESS else 60)
    rng = tb.rng
    await tb.copy(rng.randrange(0, 4096), DST_BASE + rng.randrange(0, 4096), 64 << 10)
    if REGRESS:
        cycles = await tb.copy(rng.randrange(0, 4096), DST_BASE + rng.randrange(0, 4096),
                               1 << 20)
        tb.log.info("1 MiB COPY took %d cycles (%d beats of data)", cycles, (1 << 20) // tb.beat)


@cocotb.test(skip=ON_VERILATOR)
async def test_copy_waits_for_a_bursts_data_while_w_is_shared(dut):
    """The host answers reads in order, so a COPY write burst presented on its first beat may
    hold the shared W channel while the rest of its data waits behind other reads. While
    another mover writes (w_shared), a COPY burst goes out only once the read buffer holds
    all its data: with the R channel stalling at random, W never waits inside a burst (the
    harness counts such cycles). Alone (w_shared low), the first beat is enough and W does
    wait: the count can see it. Every copy's bytes are checked either way."""
    tb = TB(dut, "copy_waits_for_a_bursts_data_while_w_is_shared")
    rng = tb.rng
    stalls = random.Random(rng.random())
    tb.ram.read_if.r_channel.set_pause_generator(stalls.random() < 0.5 for _ in itertools.count())
    await tb.reset()
    for shared in (1, 0):
        dut.w_shared.value = shared
        before = int(dut.w_waits.value)
        for _ in range(6):
            await tb.copy(rng.randrange(0, 8192), DST_BASE + rng.randrange(0, 8192),
                          rng.randrange(2048, 40000), full_check=False)
        waits = int(dut.w_waits.value) - before
        tb.log.info("w_shared %d: W waited inside a burst in %d cycles", shared, waits)
        if shared:
            assert waits == 0, f"W waited on R inside a burst in {waits} cycles"
        else:
            assert waits > 0, "alone, a burst goes out on its first beat and W waits for R"
    tb.check_all("after the copies")


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
    """The same kinds of commands with random stalls on AW, W, B, AR and R (and, under
    REGRESS, more of them and a 64 KiB COPY)."""
    tb = TB(dut, "backpressure", backpressure=True)
    await tb.reset()
    await run_copies(tb, 120 if REGRESS else 50)
    rng = tb.rng
    if REGRESS:
        await tb.copy(rng.randrange(0, 4096), DST_BASE + rng.randrange(0, 4096), 64 << 10)
    # every offset, with the short, the long and a random length each
    await run_store_load(tb, lambda off: (1, rng.randrange(2, 64), 64))


@cocotb.test()
async def test_error_responses(dut):
    """SLVERR on reads or writes sets m_done_error (and a READ_STREAM's tuser), the command
    still drains and completes."""
    tb = TB(dut, "error_responses")
    await tb.reset()
    bad_lo, bad_hi = 0x40000, 0x41000      # one page that answers SLVERR
    tb.fail_page(bad_lo, bad_hi)

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
    # A READ_STREAM over the failing page still delivers its length, the failing beats as the
    # zeros the slave returned, and says so with tuser on its last beat.
    src, length = bad_lo - 700, 3000
    tb.refresh(src, length)
    error, _, _ = await tb.command(MODE_RD_STREAM, src, 0, length)
    assert error == 1, "READ_STREAM read SLVERR not reported"
    tb.check_frame("READ_STREAM with read errors",
                   bytes(0 if bad_lo <= src + i < bad_hi else tb.shadow[src + i]
                         for i in range(length)), refused=True)
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
async def test_atomic(dut):
    """ATOMIC at every byte offset in a beat and across a beat boundary: FetchAdd (wrapping
    modulo 2^64), CompareSwap that matches (writes) and that does not (writes nothing): the
    original comes back, the 8 bytes hold the new value, no byte around them changes. A read
    error reports the error and writes nothing; a write error is reported."""
    tb = TB(dut, "atomic")
    await tb.reset()
    rng = tb.rng
    beat = tb.beat
    for off in list(range(0, 16)) + [beat - 4, beat - 1, 3 * beat - 5]:
        dst = DST_BASE + 0x1000 + off
        await tb.atomic(dst, rng.getrandbits(64))
        await tb.atomic(dst, 2**64 - 1)
        await tb.atomic(dst, rng.getrandbits(64), swap=rng.getrandbits(64))   # no match
    # a CompareSwap that must match: the value is set right before it
    dst = DST_BASE + 0x2003
    tb.refresh(dst - 64, 136)
    value = int.from_bytes(tb.shadow[dst:dst + 8], "little")
    ops = (value | 0x1122334455667788 << 64 | 1 << 128).to_bytes(64, "little")
    error, data, _ = await tb.command(MODE_ATOMIC, 0, dst, 8, ops)
    assert error == 0 and data[:8] == value.to_bytes(8, "little")
    tb.shadow[dst:dst + 8] = (0x1122334455667788).to_bytes(8, "little")
    tb.check_region(dst - 256, dst + 264, "CompareSwap that matches")

    logging.getLogger(f"cocotb.{dut._name}.m_axi").setLevel(logging.ERROR)
    read_ram, write_ram = tb.ram.read_if._read, tb.ram.write_if._write
    bad = DST_BASE + 0x3000

    async def failing_read(address, length):
        if bad <= address < bad + 0x1000:
            raise IOError("injected read error")
        return await read_ram(address, length)

    async def failing_write(address, data):
        if bad + 0x800 <= address < bad + 0x1000:
            raise IOError("injected write error")
        await write_ram(address, data)

    tb.ram.read_if._read = failing_read
    error, _, _ = await tb.command(MODE_ATOMIC, 0, bad + 8, 8, (5).to_bytes(64, "little"))
    assert error == 1, "ATOMIC read SLVERR not reported"
    tb.check_all("an ATOMIC whose read failed writes nothing")
    tb.ram.read_if._read = read_ram
    tb.ram.write_if._write = failing_write
    error, _, _ = await tb.command(MODE_ATOMIC, 0, bad + 0x808, 8, (5).to_bytes(64, "little"))
    assert error == 1, "ATOMIC write SLVERR not reported"
    tb.ram.write_if._write = write_ram
    tb.shadow[bad + 0x808:bad + 0x810] = tb.ram.read(bad + 0x808, 8)
    tb.check_all("after the failing ATOMIC")
    await tb.atomic(DST_BASE + 0x4005, 1)


def stream_cases(tb):
    """(offset, length): every byte offset 0..63 with a random length 1..9000 (all beat
    alignments at every width, several times over), the edge lengths at random offsets, and
    (REGRESS) 64 KiB."""
    rng = tb.rng
    cases = [(off, max(1, random_length(rng))) for off in range(64)]
    cases += [(rng.randrange(0, 64), n) for n in edge_lengths(tb.beat) if n]
    if REGRESS:
        cases.append((rng.randrange(0, 64), 64 << 10))
    rng.shuffle(cases)
    return cases


@cocotb.test()
async def test_read_stream_random(dut):
    """READ_STREAM at every source alignment, lengths 1..9000 (and 64 KiB), the consumer stalling
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
    """WRITE_STREAM at every destination alignment, lengths 1..9000 (and 64 KiB), the producer
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
async def test_stream_lane_offsets(dut):
    """Plain READ_STREAM with the dst low bits set: the first beat's tkeep starts at that lane,
    data is zero outside tkeep, the upper dst bits are ignored. Plain WRITE_STREAM with the src
    low bits set: a frame whose first byte sits in that lane lands exactly; a first beat whose
    tkeep has a hole, a lane below the offset, or starts at lane 0 instead sets the error, the
    stream is still taken to its tlast and nothing outside [dst, dst+len) changes. Every lane,
    the consumer and producer pausing at random."""
    tb = TB(dut, "stream_lane_offsets", backpressure=not ON_VERILATOR)
    tb.set_stream_backpressure()
    await tb.reset()
    rng = tb.rng
    b = tb.beat

    def some_length():
        r = rng.random()
        return 1 if r < 0.1 else rng.randrange(1, 2 * b + 2) if r < 0.6 else rng.randrange(1, 700)

    for lane in range(b):
        src = rng.randrange(1, (DST_BASE - 0x20000) // 4096) * 4096 + rng.randrange(0, 64)
        await tb.read_stream(src, some_length(), lane=lane)
        dst = DST_BASE + rng.randrange(1, (DST_BASE - 0x20000) // 4096) * 4096 + rng.randrange(0, 64)
        await tb.write_stream(dst, some_length(), lane=lane)
    # wrong first beats
    n = 0
    for lane in sorted({1, 2, b // 2, b - 1, rng.randrange(1, b)}):
        for length in (1, b - lane, b - lane + 1, rng.randrange(b + 1, 400)):
            if length < 1:
                continue
            good = [0] * lane + [1] * length
            hole = list(good)
            hole[rng.randrange(lane, min(b, lane + length))] = 0   # a lane of the first beat missing
            below = list(good)
            below[rng.randrange(0, lane)] = 1                       # a lane below the offset kept
            for keep in (hole, below, None):
                dst = DST_BASE + rng.randrange(1, 400) * 4096 + rng.randrange(0, 64)
                if keep is None:   # the frame starts at lane 0, the command says `lane`
                    keep = [1] * length + [0] * lane
                await tb.write_stream(dst, length, expect_error=1, lane=lane, tkeep=keep)
                n += 1
            # a good command right after is not disturbed
            dst = DST_BASE + rng.randrange(400, 500) * 4096 + rng.randrange(0, 64)
            await tb.write_stream(dst, some_length(), lane=rng.randrange(0, b))
    tb.check_all("after the lane-offset streams")
    tb.log.info("%d lanes each way, %d wrong first beats checked", b, n)


async def run_list_copies(tb, count, covered=True):
    """`count` list COPYs, a third each with a source list, a destination list and both; the
    other side of the first two a plain address with room for the length."""
    rng = tb.rng
    n_err = 0
    for i in range(count):
        kind = ("src", "dst", "both")[i % 3]
        src_list = tb.random_list(False) if kind != "dst" else None
        dst_list = tb.random_list(True) if kind != "src" else None
        if kind == "both":
            # offsets into each; the list with less room left decides the coverage
            src, _ = tb.random_range(src_list)
            dst, _ = tb.random_range(dst_list)
            room = min(sum(n for _, n in src_list) - src, sum(n for _, n in dst_list) - dst)
            if not covered:
                length = room + rng.randrange(1, 2 * tb.beat)
            else:
                r = rng.random()
                length = room if r < 0.3 or room < 2 else rng.randrange(1, room + 1)
        elif kind == "src":
            src, length = tb.random_range(src_list, covered)
            dst = DST_BASE + rng.randrange(1, (DST_BASE - 0x30000) // 4096) * 4096 + rng.randrange(0, 4096)
        else:
            dst, length = tb.random_range(dst_list, covered)
            src = rng.randrange(1, (DST_BASE - 0x30000) // 4096) * 4096 + rng.randrange(0, 4096)
        n_err += await tb.list_copy(src, dst, length, src_list, dst_list)
    return n_err


@cocotb.test()
async def test_list_copy_random(dut):
    """COPY with random scatter/gather lists on the source side, the destination side and both
    (1..4 entries, lengths 0, 1, a few beats and up to 6000 across 4 KiB pages, empty entries
    anywhere), random offsets into the lists and lengths up to a list's end (also exactly to
    it): every byte lands where the lists say, nothing else changes, no error."""
    tb = TB(dut, "list_copy_random")
    await tb.reset()
    count = 200 if REGRESS else 36
    assert await run_list_copies(tb, count) == 0
    tb.log.info("%d list COPY commands checked", count)


async def run_list_streams(tb, write):
    """Random list WRITE_STREAMs (or READ_STREAMs): the first quarter steady, the rest with the
    stream side pausing at random (and, on event simulators, the AXI slave stalling)."""
    await tb.reset()
    count = 120 if REGRESS else 24
    for i in range(count):
        if i == count // 4:
            tb.set_stream_backpressure()
            if not ON_VERILATOR:
                tb.set_backpressure()
        entries = tb.random_list(write)
        at, length = tb.random_range(entries)
        run = tb.list_write_stream if write else tb.list_read_stream
        assert await run(at, length, entries) == 0
    tb.log.info("%d list %s commands checked", count, "WRITE_STREAM" if write else "READ_STREAM")


@cocotb.test()
async def test_list_read_stream_random(dut):
    """READ_STREAM from random source lists at random offsets and lengths up to the list's end:
    one frame with the list's bytes, byte 0 in lane 0, tkeep full but on the last beat, zero
    lanes outside tkeep, tlast on the last beat only; first without stalls, then with the
    consumer stalling at random (and, on event simulators, the AXI slave too)."""
    await run_list_streams(TB(dut, "list_read_stream_random"), write=False)


@cocotb.test()
async def test_list_write_stream_random(dut):
    """WRITE_STREAM to random destination lists at random offsets and lengths up to the list's
    end, the frame from an AxiStreamSource (byte 0 in lane 0), first steady, then pausing at
    random (and, on event simulators, the AXI slave stalling): the bytes land where the list
    says, nothing else changes, the frame is taken whole, no error."""
    await run_list_streams(TB(dut, "list_write_stream_random"), write=True)


@cocotb.test()
async def test_list_not_covered(dut):
    """Lists that end before the range does (also ranges that start at or past the list's
    end): COPY moves the covered part only, READ_STREAM still delivers exactly len bytes with
    the rest as zeros, WRITE_STREAM still takes its frame to tlast and writes the covered part
    only; each sets m_done_error, and a good command afterwards is clean."""
    tb = TB(dut, "list_not_covered", backpressure=not ON_VERILATOR)
    tb.set_stream_backpressure()
    await tb.reset()
    rng = tb.rng
    assert await run_list_copies(tb, 12, covered=False) == 12
    for i in range(8):
        entries = tb.random_list(False)
        total = sum(n for _, n in entries)
        src, length = (total + rng.randrange(0, 3), rng.randrange(1, 300)) if i == 0 \
            else tb.random_range(entries, covered=False)
        assert await tb.list_read_stream(src, length, entries) == 1
        entries = tb.random_list(True)
        total = sum(n for _, n in entries)
        dst, length = (total + rng.randrange(0, 3), rng.randrange(1, 300)) if i == 0 \
            else tb.random_range(entries, covered=False)
        sent = length if i % 2 else rng.randrange(1, length + 2 * tb.beat)
        assert await tb.list_write_stream(dst, length, entries, sent) == 1
    # and the engine is clean afterwards
    entries = tb.random_list(False)
    assert await tb.list_read_stream(*tb.random_range(entries), entries) == 0
    entries = tb.random_list(True)
    dst, length = tb.random_range(entries)
    assert await tb.list_write_stream(dst, length, entries) == 0


@cocotb.test()
async def test_list_write_stream_mismatch(dut):
    """WRITE_STREAM to a list whose frame ends early or late, at, around and one beat from each
    piece boundary and the end: the error is set, nothing hangs, the frame is taken whole,
    nothing outside the list's range changes; a good command right after is clean."""
    tb = TB(dut, "list_write_stream_mismatch", backpressure=not ON_VERILATOR)
    tb.set_stream_backpressure()
    await tb.reset()
    rng = tb.rng
    b = tb.beat
    n = 0
    for _ in range(4):
        entries = tb.random_list(True)
        while len([1 for _, k in entries if k]) < 2:     # at least one boundary
            entries = tb.random_list(True)
        total = sum(k for _, k in entries)
        dst = rng.randrange(0, min(total - 1, 2 * b))
        length = total - dst - rng.randrange(0, 2)
        if length < 2:
            dst, length = 0, total
        segs, _ = list_segments(entries, dst, length)
        bounds, pos = [], 0
        for _, k in segs[:-1]:
            pos += k
            bounds.append(pos)
        sents = set()
        for edge in bounds[:2] + [length]:
            sents |= {edge - 1, edge, edge + 1, edge - b, edge + b}
        sents = sorted(x for x in sents if 1 <= x != length)
        for sent in rng.sample(sents, min(len(sents), 8)):
            assert await tb.list_write_stream(dst, length, entries, sent) == 1
            n += 1
        entries = tb.random_list(True)
        dst, length = tb.random_range(entries)
        assert await tb.list_write_stream(dst, length, entries) == 0
    tb.log.info("%d mismatched list WRITE_STREAM commands checked", n)


@cocotb.test()
async def test_list_error_responses(dut):
    """A list entry on a page that answers SLVERR: the list command still moves every piece
    (the failing source beats as the zeros the slave returned, the failing destination page
    unwritten), finishes with m_done_error, and READ_STREAM keeps its beat layout."""
    tb = TB(dut, "list_error_responses")
    await tb.reset()
    rng = tb.rng
    bad_lo, bad_hi = 0x50000, 0x51000      # one page that answers SLVERR, in each half
    heal = tb.fail_page(bad_lo, bad_hi)

    def entries(base):
        return [(base + 0x10000 + rng.randrange(0, 64), rng.randrange(1, 300)),
                (base + bad_lo + rng.randrange(0, 3000), rng.randrange(1, 1000)),
                (base + 0x60000 + rng.randrange(0, 64), rng.randrange(1, 300))]

    # COPY from a list with a failing entry, to a plain destination
    src_list = entries(0)
    length = sum(n for _, n in src_list)
    dst = DST_BASE + 0x70000 + rng.randrange(0, 64)
    segs, _ = list_segments(src_list, 0, length)
    pos = 0
    for a, n in segs:
        tb.refresh(a, n)
        for i in range(n):
            tb.shadow[dst + pos + i] = 0 if bad_lo <= a + i < bad_hi else tb.shadow[a + i]
        pos += n
    error, _, _ = await tb.command(MODE_COPY, 0, dst, length, list_data(src_list))
    assert error == 1, "list COPY: read SLVERR not reported"
    tb.check_all("list COPY with a failing source entry")

    # COPY to a list with a failing entry, from a plain source: the whole list, so the copy
    # reaches the failing entry
    dst_list = entries(DST_BASE)
    length = sum(n for _, n in dst_list)
    src = 0x80000 + rng.randrange(0, 64)
    tb.refresh(src, length)
    segs, _ = list_segments(dst_list, 0, length)
    pos = 0
    for a, n in segs:
        for i in range(n):
            if not DST_BASE + bad_lo <= a + i < DST_BASE + bad_hi:
                tb.shadow[a + i] = tb.shadow[src + pos + i]
        pos += n
    error, _, _ = await tb.command(MODE_COPY, src, 0, length, list_data(None, dst_list))
    assert error == 1, "list COPY: write SLVERR not reported"
    tb.check_all("list COPY with a failing destination entry")

    # READ_STREAM from a list with a failing entry: every byte still comes, in place
    src_list = entries(0)
    length = sum(n for _, n in src_list)
    want = bytearray()
    for a, n in src_list:
        tb.refresh(a, n)
        want += bytes(0 if bad_lo <= a + i < bad_hi else tb.shadow[a + i] for i in range(n))
    error, _, _ = await tb.command(MODE_RD_STREAM, 0, 0, length, list_data(src_list))
    assert error == 1, "list READ_STREAM: read SLVERR not reported"
    tb.check_frame("list READ_STREAM with a failing entry", bytes(want), refused=True)

    # the error is per command
    heal()
    assert await tb.list_copy(0, DST_BASE + 0x90000, length, src_list) == 0
    dst_list = tb.random_list(True)
    assert await tb.list_write_stream(*tb.random_range(dst_list), dst_list) == 0


@cocotb.test()
async def test_modes_taken_and_refused(dut):
    """A mover built for some modes (MODES, as the device builds each client's) moves every
    mode it takes, lists too where the mode has them, and ends every other mode at once in
    error with no bus or stream traffic and no byte written."""
    tb = TB(dut, "modes_taken_and_refused")
    await tb.reset()
    modes = simrun.build_parameters().get("MODES", 0x3F)
    rng = tb.rng
    page = lambda: rng.randrange(1, (DST_BASE // 4096) - 2) * 4096 + rng.randrange(0, 64)
    for mode in range(8):
        if modes >> mode & 1:
            for length in (1, 13, 64):   # STORE and LOAD take at most 64 bytes
                if mode == MODE_COPY:
                    await tb.copy(page(), DST_BASE + page(), length * 7)
                    src_list, dst_list = tb.random_list(False), tb.random_list(True)
                    await tb.list_copy(*tb.random_range(src_list), tb.random_range(dst_list)[0],
                                       src_list, dst_list)
                elif mode == MODE_STORE:
                    await tb.store(DST_BASE + page(), length)
                elif mode == MODE_LOAD:
                    await tb.load(page(), length)
                elif mode == MODE_RD_STREAM:
                    await tb.read_stream(page(), length * 5)
                    src_list = tb.random_list(False)
                    await tb.list_read_stream(*tb.random_range(src_list), src_list)
                elif mode == MODE_WR_STREAM:
                    await tb.write_stream(DST_BASE + page(), length * 5)
                    dst_list = tb.random_list(True)
                    assert await tb.list_write_stream(*tb.random_range(dst_list), dst_list) == 0
                elif mode == MODE_ATOMIC:
                    await tb.atomic(DST_BASE + page(), rng.getrandbits(64))
                    await tb.atomic(DST_BASE + page(), rng.getrandbits(64), rng.getrandbits(64))
            continue
        before = dict(tb.counts)
        src, dst = page(), DST_BASE + page()
        # with lists too: a refused mode is refused before any list is looked at
        error, data, cycles = await tb.command(
            mode, src, dst, 64, list_data(tb.random_list(False), tb.random_list(True)))
        assert error == 1 and cycles <= 2, \
            f"mode {mode} not in MODES {modes:#x}: error={error} cycles={cycles}"
        assert data == bytes(64), f"mode {mode}: done data {data.hex()} from a refused command"
        for _ in range(10):
            await RisingEdge(dut.clk)
        assert tb.counts == before, f"mode {mode}: bus traffic for a refused command"
        assert tb.rd_sink.empty(), f"mode {mode}: stream traffic for a refused command"
        tb.check_all(f"after refused mode {mode}")


# ---------------------------------------------------------------------------------------------
# The pytest runner: the unit tests at each supported data width.

@pytest.mark.parametrize("w", UNIT_WIDTHS)
def test_dma_mover(w):
    simrun.run(
        toplevel="tb_dma_mover",
        test_module="test_dma_mover",
        parameters={"DATA_WIDTH": w, **PARAMETERS},
        name=f"dma_mover_w{w}",
        rtl=RTL_FILES,
    )


# The movers rdma_dev builds, by the modes their clients use (rdma_dev.v's dma_modes)
CLIENT_MODES = {
    "cqe_writer": 1 << MODE_STORE,
    "responder": 1 << MODE_STORE | 1 << MODE_LOAD,
    "rx_engine": 1 << MODE_WR_STREAM | 1 << MODE_ATOMIC | 1 << MODE_STORE,
    "port_or_wqe_read_ahead": 1 << MODE_RD_STREAM,
    "bypass": 1 << MODE_COPY | 1 << MODE_ATOMIC | 1 << MODE_STORE,
}


@pytest.mark.parametrize("client", sorted(CLIENT_MODES))
def test_dma_mover_client_modes(client):
    simrun.run(
        toplevel="tb_dma_mover",
        test_module="test_dma_mover",
        parameters={"DATA_WIDTH": 64, **PARAMETERS, "MODES": CLIENT_MODES[client]},
        name=f"dma_mover_{client}",
        rtl=RTL_FILES,
        extra_env={"COCOTB_TEST_FILTER": r"^test_dma_mover\.test_modes_taken_and_refused$"},
    )
