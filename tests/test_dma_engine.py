"""Unit tests of the multi-client DMA engine (dma_engine: a dma_sgl mover per client on one AXI4
master through dma_axi_mux), through tb/hdl/tb_dma_engine.v: four clients, clients 2 and 3 with
the deep read buffer, host memory the HDL sim_axi_ram; the testbench is tb/dma_engine_tb.py.
The pytest runner at the end runs them all at data widths 64, 256 and 512.

- test_concurrent_random_latency0 / _latency100_stalls / _latency500: all four clients run
  random COPY, STORE, LOAD, ATOMIC, WRITE_STREAM (client 1) and READ_STREAM (client 2) commands
  at once, each in its own region: every result and every byte of memory equals the model's.
- test_no_client_starves: a client running long COPYs back to back starves none of three
  clients running small commands; round robin grants no client twice while another waits.
- test_round_robin_bound_all_clients_long_copies: the same bound with all four clients busy.
- test_atomics_are_exclusive: FetchAdds and CompareSwaps of two clients on one word are
  serializable while a third client writes the bytes around it and a fourth reads them.
- test_atomics_are_atomic_against_plain_writes: no plain STORE or COPY of the word lands
  between an ATOMIC's read and its write, or is lost under it (the mux's write drain and its
  hold on writes touching the locked bytes).
- test_stalled_read_stream_blocks_no_one: a READ_STREAM whose consumer holds tready low for
  thousands of cycles stops no other client's commands and never back-pressures R; released,
  it delivers exactly the right bytes.
- test_axi_ids_routing_w_order_and_protocol: every AR/AW carries the granted client's index as
  its ID, every R/B reaches the client its ID names, W goes in AW order, each burst gets its one
  answer, sim_axi_ram sees no protocol error, and the traffic really had several clients'
  bursts open at once.
- test_store_queue_keeps_order_with_stores_in_flight (the build whose client 0 only STOREs, so
  the engine gives it a store queue): STOREs of every length at any alignment, across 4 KiB
  boundaries and onto each other's bytes, and commands it refuses, back to back under late
  and stalled writes: several are in flight at once, each is done once in command order with
  its error bit, and memory ends as the stores applied in order.
- test_store_queue_error_response_is_its_store_s_alone: a STORE answered SLVERR is done with
  its error, in its turn; the stores in flight beside it land and are done without.

Every check compares host memory with a Python shadow of it and each LOAD's and ATOMIC's result
with the model's. The harness's monitors check on every handshake that each burst carries its
client's ID and reaches the right client and that W follows AW order, and sim_axi_ram that the
AXI rules hold; every test asserts those counts stay 0 (TB.check_bus). The only timing the
tests assert is the round-robin bound (counted in grants, not cycles); a command that never
finishes fails its test as a hang. Randomness comes from one seed, printed at the start of each
test; SEED=<n> replays a run. The tests are exact on Icarus and Verilator alike (every model is
HDL or driven at falling edges).
"""

import bisect

import cocotb
import numpy as np
import pytest
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from tb import simrun
from tb.dma_engine_tb import (
    CLIENTS, MASK64, MODE_ATOMIC, MODE_COPY, MODE_LOAD, MODE_STORE, PARAMETERS, RTL_FILES,
    SHARED_BASE, TB, atomic_data, region,
)
from tb.seed import SEED, UNIT_WIDTHS


# the commands each client draws from in the random programs (weights)
KINDS = {
    0: dict(copy=4, store=2, load=2, atomic=2),
    1: dict(copy=3, store=2, load=2, atomic=2, write_stream=2),
    2: dict(copy=3, store=2, load=2, atomic=2, read_stream=2),
    3: dict(copy=4, store=2, load=2, atomic=2),
}


async def run_programs(tb, per_client, kinds=KINDS, clients=range(CLIENTS), longest=9000,
                       first_copy=False):
    """A random program on each of `clients` at once, each in its own region."""
    async def program(c):
        if first_copy:      # every client has reads and writes on the bus
            n = tb.copy_length(longest)
            src = tb.place(c, n)
            await tb.copy(c, src, tb.place(c, n, (src, n)), n)
        for _ in range(per_client):
            await tb.random_command(c, kinds[c], longest)

    tasks = [cocotb.start_soon(program(c)) for c in clients]
    for task in tasks:
        await task


async def run_concurrent(dut, name, read_latency, stall_rate, per_client):
    tb = TB(dut, name, read_latency=read_latency, write_latency=max(1, read_latency // 4),
            stall_rate=stall_rate)
    await tb.reset()
    await run_programs(tb, per_client)
    await tb.quiesce()
    tb.check_all(f"{name}: after {per_client} commands per client")
    m = tb.check_bus(name)
    tb.log.info("%s: %d commands per client in %d cycles; AR grants %s, AW grants %s", name,
                per_client, int(dut.cycle.value), m["ar_grants"], m["aw_grants"])


@cocotb.test()
async def test_concurrent_random_latency0(dut):
    """Random COPY (any alignment, 1..9000 bytes), STORE, LOAD, ATOMIC FetchAdd/CompareSwap,
    client 1's WRITE_STREAMs and client 2's READ_STREAMs on all four clients at once, each in
    its own region, read latency 0: the memory, the LOADs' and ATOMICs' results and the read
    stream equal the model's."""
    await run_concurrent(dut, "concurrent_random_latency0", 0, 0, 24)


@cocotb.test()
async def test_concurrent_random_latency100_stalls(dut):
    """The same at read latency 100 with random stalls on every channel (stall_rate 64/256)."""
    await run_concurrent(dut, "concurrent_random_latency100_stalls", 100, 64, 12)


@cocotb.test()
async def test_concurrent_random_latency500(dut):
    """The same at read latency 500."""
    await run_concurrent(dut, "concurrent_random_latency500", 500, 0, 6)


@cocotb.test()
async def test_no_client_starves(dut):
    """Client 0 runs long COPYs back to back the whole time while clients 1-3 each run small
    LOADs and STOREs: every small command completes, and from the cycle a client presents an AR
    (AW) to the cycle it is granted, no other client is granted more than once on that channel
    (counted by the harness on the mux's client side, in grants, not cycles). The test also
    shows the bound was exercised: grants went to clients while others waited."""
    tb = TB(dut, "no_client_starves", read_latency=0, write_latency=0, ar_throttle=224,
            aw_throttle=224)
    await tb.reset()
    rng = tb.rng
    small = dict(store=1, load=3)
    per_client = 40
    stop = False
    hog = dict(copies=0)

    async def hog_copies():
        while not stop:
            n = rng.randrange(6000, 9001)
            src = tb.place(0, n)
            await tb.copy(0, src, tb.place(0, n, (src, n)), n)
            hog["copies"] += 1

    hog_task = cocotb.start_soon(hog_copies())
    await run_programs(tb, per_client, {c: small for c in (1, 2, 3)}, clients=(1, 2, 3))
    small_done = [tb.clients[c].commands for c in (1, 2, 3)]
    stop = True
    await hog_task
    await tb.quiesce()
    tb.check_all("no_client_starves")
    m = tb.check_bus("no_client_starves")
    tb.check_round_robin("no_client_starves", m)
    assert small_done == [per_client] * 3, f"small commands completed: {small_done}"
    assert hog["copies"] >= 2, f"client 0 finished only {hog['copies']} long COPYs"
    assert m["ar_waited"] > 0 and m["aw_waited"] > 0, \
        (f"no AR or AW was ever granted while another client waited ({m['ar_waited']}, "
         f"{m['aw_waited']}): the round-robin bound was not put to the test")
    tb.log.info("no_client_starves: client 0 ran %d long COPYs; grants while others waited: AR "
                "%d, AW %d; most to one client while another waited: AR %d, AW %d; AR grants %s, "
                "AW grants %s", hog["copies"], m["ar_waited"], m["aw_waited"], m["ar_rr_worst"],
                m["aw_rr_worst"], m["ar_grants"], m["aw_grants"])


@cocotb.test()
async def test_round_robin_bound_all_clients_long_copies(dut):
    """All four clients run long COPYs back to back (the deep clients 2 and 3 keep several read
    bursts in flight, so ARs queue on every side): every COPY lands, and while a client's AR (AW)
    waits no other client is granted twice on that channel."""
    # AW held off 252/256 of the cycles: a long COPY's AW waits for its data, so on a free AW
    # channel the clients' AWs seldom meet; this makes them queue
    tb = TB(dut, "round_robin_bound_all_clients_long_copies", read_latency=4, write_latency=2,
            ar_throttle=224, aw_throttle=252)
    await tb.reset()
    await run_programs(tb, 3, {c: dict(long_copy=1) for c in range(CLIENTS)}, longest=9000)
    await tb.quiesce()
    tb.check_all("round_robin_bound_all_clients_long_copies")
    m = tb.check_bus("round_robin_bound_all_clients_long_copies")
    tb.check_round_robin("round_robin_bound_all_clients_long_copies", m)
    assert m["ar_waited"] > 0 and m["aw_waited"] > 0, \
        f"no grant while another client waited: AR {m['ar_waited']}, AW {m['aw_waited']}"
    tb.log.info("round_robin_bound_all_clients_long_copies: grants while others waited: AR %d, "
                "AW %d; AR grants %s, AW grants %s", m["ar_waited"], m["aw_waited"],
                m["ar_grants"], m["aw_grants"])


@cocotb.test()
async def test_w_never_waits_on_a_read_while_copies_share_it(dut):
    """The two deep clients start a COPY of 24-40 KiB each in the same cycle, any alignment,
    and the host answers reads in order at latency 0 and 100: while both write, W never has a
    burst granted without a beat offered (the harness counts such cycles), because each COPY
    burst goes out only once its mover holds all its data. (A burst a mover presented alone,
    on its first beat, may still wait when another mover starts writing: hence one copy each,
    started together.) Every copy lands."""
    for latency in (0, 100):
        tb = TB(dut, f"w_never_waits_on_a_read_while_copies_share_it latency {latency}",
                read_latency=latency)
        await tb.reset()
        rng = tb.rng

        moves = []
        for c in (2, 3):
            n = rng.randrange(24 << 10, 40 << 10)
            src = tb.place(c, n)
            moves.append((c, src, tb.place(c, n, (src, n)), n))
        tasks = [cocotb.start_soon(tb.copy(*move)) for move in moves]
        for task in tasks:
            await task
        await tb.quiesce()
        tb.check_all(f"copies at read latency {latency}")
        m = tb.check_bus(f"copies at read latency {latency}")
        assert m["aw_shared"] > 0, "the two clients' W bursts never met"
        waits = int(dut.w_waits.value)
        assert waits == 0, f"read latency {latency}: W waited on a read in {waits} cycles"


class SharedLine:
    """The 64-byte line of the atomics test: the 8-byte word the ATOMICs work on and the bytes
    around it, which one client keeps writing and another keeps reading while the atomics run.

    Only the writer writes the bytes around the word, one command at a time, so their final
    values are its last writes; every value each of those bytes ever held is kept too, for the
    reader's checks. The word's values are checked afterwards against the chain the ATOMICs'
    originals make (`chain_values`)."""

    def __init__(self, tb, line, word_off):
        self.tb = tb
        self.line = line
        self.word = line + word_off
        self.final = tb.shadow[line:line + 64].copy()       # the writer's bytes, as they stand
        self.seen = [{int(b)} for b in self.final]          # every value each byte held
        # the writer's ranges: below the word and above it (either may be empty)
        self.ranges = [(line, word_off), (self.word + 8, 56 - word_off)]
        self.ranges = [(a, n) for a, n in self.ranges if n]
        self.observed = []      # (reader's sequence number, the word's value it read)

    def writing(self, at, data):
        """The writer is about to write `data` at `at`: the reader may see it from now on."""
        for i, b in enumerate(data):
            self.seen[at + i - self.line].add(b)

    def wrote(self, at, data):
        for i, b in enumerate(data):
            self.final[at + i - self.line] = b

    def check_neighbours(self, got, at, what):
        """Bytes of the line read by the reader (not the word): each must be a value the writer
        wrote there (or the initial one)."""
        for i, b in enumerate(got):
            k = at + i - self.line
            if 0 <= k < 64 and not self.word <= at + i < self.word + 8:
                assert b in self.seen[k], \
                    (f"{what}: byte 0x{at + i:x} read {b:#04x}, a value the writer never wrote "
                     f"there (SEED={SEED})")


async def line_writer(tb, line, stop):
    """Client 2: STOREs and COPYs (from its own region) over the bytes around the word, until
    `stop`; returns the number of commands."""
    rng = tb.rng
    n = 0
    while not stop():
        at, room = rng.choice(line.ranges)
        lo = rng.randrange(0, room)
        length = rng.randrange(1, room - lo + 1)
        dst = at + lo
        if rng.random() < 0.5:
            data = rng.randbytes(length)
            line.writing(dst, data)
            await tb.clients[2].command(MODE_STORE, 0, dst, length, data)
        else:
            src = tb.place(2, length)
            data = tb.shadow[src:src + length].tobytes()
            line.writing(dst, data)
            await tb.clients[2].command(MODE_COPY, src, dst, length)
        line.wrote(dst, data)
        n += 1
    return n


async def line_reader(tb, line, stop, scratch):
    """Client 3: LOADs of the whole line, and COPYs of a stretch around it into its own region,
    until `stop`: each sees a value of the word (checked later against the chain) and, around it,
    only values the writer wrote; the COPY's bytes outside the line are exact."""
    rng = tb.rng
    n = 0
    while not stop():
        if rng.random() < 0.5:
            _, got = await tb.clients[3].command(MODE_LOAD, line.line, 0, 64)
            line.check_neighbours(got, line.line, "reader LOAD of the line")
            w = line.word - line.line
            line.observed.append((n, int.from_bytes(got[w:w + 8], "little")))
        else:
            before, after = rng.randrange(0, 3000), rng.randrange(0, 3000)
            src, length = line.line - before, before + 64 + after
            dst = scratch + rng.randrange(0, 64)
            await tb.clients[3].command(MODE_COPY, src, dst, length)
            got = tb.mem.read(dst, length)
            what = f"reader COPY src=0x{src:x} dst=0x{dst:x} len={length}"
            want = tb.shadow[src:src + length].tobytes()
            assert got[:before] == want[:before] and got[before + 64:] == want[before + 64:], \
                f"{what}: bytes outside the shared line differ from memory (SEED={SEED})"
            line.check_neighbours(got[before:before + 64], line.line, what)
            w = line.word - src
            line.observed.append((n, int.from_bytes(got[w:w + 8], "little")))
            tb.shadow[dst:dst + length] = np.frombuffer(got, dtype=np.uint8)
        n += 1
    return n


def check_chain(start, ops, what):
    """The ATOMICs' results are serializable: `ops` are (client, seq, original, new) of the
    ATOMICs that wrote; starting from `start`, each value must be the original of exactly one
    of them, whose new value is the next; every op is used once, each client's ops in its own
    order. Returns the chain of values (start .. final)."""
    by_orig = {}
    for op in ops:
        assert op[2] not in by_orig, \
            (f"{what}: two ATOMICs returned the same original {op[2]:#x} (clients {op[0]} and "
             f"{by_orig[op[2]][0]}): one of them did not see the other's write (SEED={SEED})")
        by_orig[op[2]] = op
    chain = [start]
    last_seq = {}
    value = start
    for step in range(len(ops)):
        op = by_orig.pop(value, None)
        assert op is not None, \
            (f"{what}: after {step} of {len(ops)} ATOMICs the word held {value:#x} and no ATOMIC "
             f"returned it as its original: an update was lost or torn (SEED={SEED})")
        client, seq = op[0], op[1]
        assert seq > last_seq.get(client, -1), \
            f"{what}: client {client}'s ATOMICs took effect out of their order (SEED={SEED})"
        last_seq[client] = seq
        value = op[3]
        chain.append(value)
    return chain


def check_observed(chain, observed, what):
    """The reader's values of the word: each a value of the chain, never going back."""
    index = {v: i for i, v in enumerate(chain)}
    last = 0
    for seq, value in observed:
        assert value in index, \
            (f"{what}: the reader's read {seq} saw {value:#x}, never a value of the word: a torn "
             f"or lost ATOMIC (SEED={SEED})")
        assert index[value] >= last, \
            (f"{what}: the reader's read {seq} saw {value:#x}, older than a value it had already "
             f"seen (SEED={SEED})")
        last = index[value]


@cocotb.test()
async def test_atomics_are_exclusive(dut):
    """Clients 0 and 1 each run FetchAdds on the same 8-byte word while client 2 keeps writing
    (STORE, COPY) the other bytes of its 64-byte line and client 3 keeps reading the line (LOAD,
    and COPYs of a stretch around it): the originals the FetchAdds return are all distinct and
    chain from the initial value through every addend in an order that keeps each client's own
    order (serializable), the word ends at the initial value plus the sum of the addends, every
    value the reader saw is a value of that chain and never an older one than before, and the
    bytes around the word hold what the writer last wrote. Then the same with CompareSwap: each
    of clients 0 and 1 adds to the word by CompareSwap retries; the successful swaps chain the
    same way, failed ones return a value of the chain and write nothing."""
    tb = TB(dut, "atomics_are_exclusive", read_latency=30, write_latency=10, stall_rate=32)
    dut.region_check.value = 0      # clients 2 and 3 work on memory outside their regions
    await tb.reset()
    rng = tb.rng
    line = SharedLine(tb, SHARED_BASE + 0x10000 + rng.randrange(0, 64) * 64,
                      8 * rng.randrange(0, 8))
    scratch = region(3)[0] + 0x1000
    per_client = 30
    word = line.word

    # --- FetchAdd ---
    start = tb.word(word)
    ops = []

    async def fetch_adds(c):
        for i in range(per_client):
            add = rng.randrange(1, 1 << 40)
            _, got = await tb.clients[c].command(MODE_ATOMIC, 0, word, 8, atomic_data(add))
            orig = int.from_bytes(got[:8], "little")
            ops.append((c, i, orig, (orig + add) & MASK64))

    adders = [cocotb.start_soon(fetch_adds(c)) for c in (0, 1)]
    stop = lambda: all(t.done() for t in adders)
    writer = cocotb.start_soon(line_writer(tb, line, stop))
    reader = cocotb.start_soon(line_reader(tb, line, stop, scratch))
    for t in adders:
        await t
    writes, reads = await writer, await reader
    chain = check_chain(start, ops, "FetchAdd")
    final = tb.mem.read(word, 8)
    assert int.from_bytes(final, "little") == chain[-1] == \
        (start + sum(op[3] - op[2] for op in ops)) & MASK64, \
        f"FetchAdd: the word holds {final[::-1].hex()}, want {chain[-1]:#x} (SEED={SEED})"
    check_observed(chain, line.observed, "FetchAdd")
    tb.log.info("FetchAdd: %d on one word from clients 0 and 1 chain without a gap; the writer "
                "ran %d commands, the reader %d", len(ops), writes, reads)

    # --- CompareSwap: add by retrying until the swap takes ---
    start = chain[-1]
    line.observed = []
    swaps, failed = [], []

    async def cas_adds(c):
        guess = start
        for i in range(per_client // 2):
            add = rng.randrange(1, 1 << 40)
            while True:
                _, got = await tb.clients[c].command(MODE_ATOMIC, 0, word, 8,
                                                     atomic_data(guess, (guess + add) & MASK64))
                orig = int.from_bytes(got[:8], "little")
                if orig == guess:
                    swaps.append((c, i, orig, (orig + add) & MASK64))
                    guess = (orig + add) & MASK64
                    break
                failed.append(orig)
                guess = orig

    adders = [cocotb.start_soon(cas_adds(c)) for c in (0, 1)]
    writer = cocotb.start_soon(line_writer(tb, line, stop))
    reader = cocotb.start_soon(line_reader(tb, line, stop, scratch))
    for t in adders:
        await t
    writes, reads = await writer, await reader
    chain = check_chain(start, swaps, "CompareSwap")
    assert int.from_bytes(tb.mem.read(word, 8), "little") == chain[-1], \
        f"CompareSwap: the word does not hold the last swap's value (SEED={SEED})"
    values = set(chain)
    assert all(v in values for v in failed), \
        f"CompareSwap: a failed swap returned a value the word never held (SEED={SEED})"
    check_observed(chain, line.observed, "CompareSwap")
    tb.log.info("CompareSwap: %d swaps chain without a gap, %d retries returned values of the "
                "chain; the writer ran %d commands, the reader %d", len(swaps), len(failed),
                writes, reads)

    # the bytes around the word are the writer's, everything else is as the model says
    await tb.quiesce()
    got = tb.mem.read(line.line, 64)
    for k in range(64):
        if not line.word <= line.line + k < line.word + 8:
            assert got[k] == line.final[k], \
                (f"byte 0x{line.line + k:x} of the line holds {got[k]:#04x}, the writer last "
                 f"wrote {int(line.final[k]):#04x} (SEED={SEED})")
    tb.shadow[line.line:line.line + 64] = line.final
    tb.shadow[word:word + 8] = np.frombuffer(chain[-1].to_bytes(8, "little"), dtype=np.uint8)
    tb.check_all("atomics_are_exclusive")
    tb.check_bus("atomics_are_exclusive")


MASK32 = (1 << 32) - 1


def check_tagged(start, stores, atomics, loads, final, what):
    """The word of the plain-writes test, its history checked for linearizability. The low 32
    bits of the word are a tag: 0 at the start, k after the writer's k-th write (`stores`:
    (value, accepted, done) in order); the FetchAdds (`atomics`: (client, seq, original, new,
    accepted, done)) add to the high 32 bits only, the reader's LOADs (`loads`: (value,
    accepted, done)) change nothing. Every value read (a FetchAdd's original, a LOAD's value)
    must carry a tag no older than the last write done before the read was accepted and no
    newer than the last write accepted before it was done; the FetchAdds that read tag k must
    chain from the k-th write's value as in check_chain; each client's FetchAdds and the
    reader's LOADs see values of those chains that never go back; the word ends with the last
    write's tag and the end of its chain."""
    base = [start] + [value for value, _, _ in stores]
    done = [d for _, _, d in stores]
    accepted = [a for _, a, _ in stores]

    def check_tag(value, acc, dn, whose):
        tag = value & MASK32
        oldest, newest = bisect.bisect_left(done, acc), bisect.bisect_right(accepted, dn)
        assert oldest <= tag <= newest, \
            (f"{what}: {whose} (accepted at cycle {acc}, done at {dn}) read {value:#x}, tag {tag}: "
             f"{oldest} plain writes were done before it began and {newest} accepted before it "
             f"ended: a plain write was lost under an ATOMIC, or landed between its read and "
             f"write (SEED={SEED})")
        return tag

    groups = {}
    for client, seq, orig, new, acc, dn in atomics:
        tag = check_tag(orig, acc, dn, f"client {client}'s FetchAdd {seq}")
        groups.setdefault(tag, []).append((client, seq, orig, new))
    chains = {tag: check_chain(base[tag], ops, f"{what}, after write {tag}")
              for tag, ops in groups.items()}
    position = {}
    for tag, chain in chains.items():
        position.update({v: (tag, i) for i, v in enumerate(chain)})
    position.update({v: (tag, 0) for tag, v in enumerate(base)})
    last = {}
    for client, seq, orig, _, _, _ in sorted(atomics):
        assert position[orig] > last.get(client, (-1, -1)), \
            (f"{what}: client {client}'s FetchAdd {seq} read {orig:#x}, not newer than what its "
             f"FetchAdd before had read: the word went back (SEED={SEED})")
        last[client] = position[orig]
    last = (0, 0)
    for seq, (value, acc, dn) in enumerate(loads):
        check_tag(value, acc, dn, f"the reader's LOAD {seq}")
        assert value in position, \
            (f"{what}: the reader's LOAD {seq} saw {value:#x}, never a value of the word "
             f"(SEED={SEED})")
        assert position[value] >= last, \
            (f"{what}: the reader's LOAD {seq} saw {value:#x}, older than a value it had "
             f"already seen (SEED={SEED})")
        last = position[value]
    n = len(stores)
    want = chains[n][-1] if n in chains else base[n]
    assert final == want, \
        f"{what}: the word ends at {final:#x}, want {want:#x} (SEED={SEED})"


@cocotb.test()
async def test_atomics_are_atomic_against_plain_writes(dut):
    """Clients 0 and 1 run FetchAdds on one 8-byte word while client 2 writes the whole word
    now and then with a plain STORE or COPY (8 bytes, or a longer stretch around it, up to a few
    KiB: bursts whose range covers the word), random pauses between, and client 3 LOADs it. No
    plain write may land between an ATOMIC's read and its write (the mux holds other clients'
    writes touching the word once the lock owner's read has gone, and drains every write taken
    before that read): the word's history checks out as in check_tagged (every plain write
    seen by every read that began after it was done, the FetchAdds between two plain writes
    chaining without a gap), and every byte around the word holds the writer's last write."""
    name = "atomics_are_atomic_against_plain_writes"
    tb = TB(dut, name, read_latency=30, write_latency=10, stall_rate=32)
    dut.region_check.value = 0      # client 2 writes and client 3 reads outside their regions
    await tb.reset()
    rng = tb.rng
    word = SHARED_BASE + 0x20000 + 8 * rng.randrange(0, 1024)
    start = rng.getrandbits(32) << 32
    tb.mem.write(word, start.to_bytes(8, "little"))
    tb.shadow[word:word + 8] = np.frombuffer(start.to_bytes(8, "little"), dtype=np.uint8)
    per_client = 60
    atomics, stores, loads = [], [], []

    async def fetch_adds(c):
        client = tb.clients[c]
        for i in range(per_client):
            add = rng.randrange(1, 1 << 32) << 32
            _, got = await client.command(MODE_ATOMIC, 0, word, 8, atomic_data(add))
            orig = int.from_bytes(got[:8], "little")
            atomics.append((c, i, orig, (orig + add) & MASK64, client.accepted_at,
                            client.done_at))

    adders = [cocotb.start_soon(fetch_adds(c)) for c in (0, 1)]
    busy = lambda: not all(t.done() for t in adders)

    async def writer():
        client = tb.clients[2]
        while busy():
            await tb.cycles(rng.randrange(1, 300))
            value = rng.getrandbits(32) << 32 | (len(stores) + 1)
            before, after = rng.choice([(0, 0), (rng.randrange(0, 64), rng.randrange(0, 64)),
                                        (rng.randrange(0, 3000), rng.randrange(0, 3000))])
            dst, length = word - before, before + 8 + after
            data = bytearray(rng.randbytes(length))
            data[before:before + 8] = value.to_bytes(8, "little")
            if length > 64 or rng.random() < 0.5:       # a COPY from its own region
                src = tb.place(2, length)
                tb.mem.write(src, bytes(data))
                tb.shadow[src:src + length] = np.frombuffer(bytes(data), dtype=np.uint8)
                await client.command(MODE_COPY, src, dst, length)
            else:
                await client.command(MODE_STORE, 0, dst, length, bytes(data))
            stores.append((value, client.accepted_at, client.done_at))
            tb.shadow[dst:dst + length] = np.frombuffer(bytes(data), dtype=np.uint8)

    async def reader():
        client = tb.clients[3]
        while busy():
            _, got = await client.command(MODE_LOAD, word, 0, 8)
            loads.append((int.from_bytes(got[:8], "little"), client.accepted_at, client.done_at))

    tasks = [cocotb.start_soon(writer()), cocotb.start_soon(reader())]
    for t in adders + tasks:
        await t
    await tb.quiesce()
    final = int.from_bytes(tb.mem.read(word, 8), "little")
    check_tagged(start, stores, atomics, loads, final, name)
    tb.shadow[word:word + 8] = np.frombuffer(final.to_bytes(8, "little"), dtype=np.uint8)
    tb.check_all(name)
    tb.check_bus(name)
    tb.log.info("%s: %d FetchAdds, %d plain writes of the word (%d read by a FetchAdd), %d LOADs",
                name, len(atomics), len(stores),
                len({orig & MASK32 for _, _, orig, _, _, _ in atomics} - {0}), len(loads))


STREAM_BYTES = 1 << 16      # the held READ_STREAM: 64 KiB, the capture memory's size at 64 bits
HOLD_CYCLES = 5000          # the least time the read stream's consumer holds tready low


async def reads_settle(tb, c, window):
    """Wait until client c has been granted no AR and delivered no RLAST for `window` cycles;
    returns the monitors then."""
    last = None
    for _ in range(100):
        await tb.cycles(window)
        m = tb.monitors()
        now = (m["ar_grants"][c], m["r_lasts"][c])
        if now == last:
            return m
        last = now
    raise AssertionError(f"client {c}'s reads never settled: AR grants and RLASTs {now} still "
                         f"moving after {100 * window} cycles (SEED={SEED})")


@cocotb.test()
async def test_stalled_read_stream_blocks_no_one(dut):
    """Client 2 runs a 64 KiB READ_STREAM (four times its deep read buffer at 64 and 256 bits,
    twice at 512) whose consumer holds tready low: client 2 fills its buffer, every read it was
    granted is answered, then it asks for no more. Held so, for at least 5000 cycles, clients 0,
    1 and 3 each complete two COPYs, STOREs, LOADs and ATOMICs (client 1 two WRITE_STREAMs too)
    in random order, checked against the model, while client 2's command stays open and its
    sink takes nothing. R is never back-pressured (no cycle with an R beat offered and not
    taken, counted by the harness throughout). Released (with random tready gaps), the stream
    delivers exactly the source bytes from the right lane, with tkeep and tlast as specified."""
    name = "stalled_read_stream_blocks_no_one"
    tb = TB(dut, name, read_latency=40, write_latency=10, stall_rate=16)
    await tb.reset()
    rng = tb.rng
    lane = rng.randrange(tb.beat)
    length = STREAM_BYTES - lane - rng.randrange(tb.beat)
    src = tb.place(2, length)
    dut.rd2_hold.value = 1
    stream = cocotb.start_soon(tb.read_stream(src, length, lane, timeout_cycles=2_000_000))

    held = await reads_settle(tb, 2, 4 * (tb.read_latency + 64))
    held_from = int(dut.cycle.value)
    assert not stream.done() and int(dut.rd2_count.value) == 0, \
        f"{name}: the held stream moved (SEED={SEED})"
    assert held["r_stalls"] == 0, \
        (f"{name}: R held up for {held['r_stalls']} cycles while client 2's sink was held: its "
         f"reads went past its buffer (SEED={SEED})")
    assert held["r_lasts"][2] == held["ar_grants"][2] > 0, \
        (f"{name}: client 2 has {held['ar_grants'][2]} ARs granted and {held['r_lasts'][2]} "
         f"RLASTs with its sink held (SEED={SEED})")

    async def program(c):
        kinds = ["copy", "store", "load", "atomic"] + (["write_stream"] if c == 1 else [])
        for kind in rng.sample(kinds * 2, 2 * len(kinds)):
            await tb.random_command(c, {kind: 1})

    tasks = [cocotb.start_soon(program(c)) for c in (0, 1, 3)]
    for task in tasks:
        await task
    while int(dut.cycle.value) - held_from < HOLD_CYCLES:
        await tb.cycles(500)
    m = tb.monitors()
    others = [tb.clients[c].commands for c in (0, 1, 3)]
    assert not stream.done() and int(dut.rd2_count.value) == 0, \
        f"{name}: the held stream moved (SEED={SEED})"
    assert m["ar_grants"][2] == held["ar_grants"][2], \
        (f"{name}: client 2 was granted {m['ar_grants'][2] - held['ar_grants'][2]} more ARs "
         f"with its buffer full (SEED={SEED})")
    assert m["r_stalls"] == 0, \
        f"{name}: R held up for {m['r_stalls']} cycles while client 2's sink was held (SEED={SEED})"
    held_cycles = int(dut.cycle.value) - held_from
    tb.log.info("%s: client 2's sink held for %d cycles with %d ARs answered; meanwhile clients 0, "
                "1, 3 completed %s commands", name, held_cycles, held["ar_grants"][2], others)

    await FallingEdge(dut.clk)
    dut.rd2_stall_rate.value = 64
    dut.rd2_hold.value = 0
    await stream
    await FallingEdge(dut.clk)
    dut.rd2_stall_rate.value = 0
    await tb.quiesce()
    tb.check_all(name)
    tb.check_bus(name)


@cocotb.test()
async def test_axi_ids_routing_w_order_and_protocol(dut):
    """All four clients run random programs (client 1's WRITE_STREAMs and client 2's
    READ_STREAMs among them) with AR and AW throttled and random stalls on every channel, so
    several clients' bursts are open on every channel at once. Checked by the harness on every
    handshake: each AR and AW on the shared master is the burst of the one client the mux
    granted in that cycle, with that client's index as its ID and its address and length; each R
    and B beat reaches exactly the client its ID names, which has a burst open; W beats come
    from the client of the oldest AW whose burst has not ended (AW order); every burst stays in
    its client's region. At the end each client got one RLAST per AR and one B per AW,
    sim_axi_ram counted no AXI protocol error (INCR, no 4 KiB crossing, WLAST placement), and the
    memory equals the model's. The test also shows the checks were put to the test: ARs granted
    while another client had reads open, AWs granted while another client's W burst had not
    ended. (Every other test asserts the same invariants at its end.)"""
    name = "axi_ids_routing_w_order_and_protocol"
    tb = TB(dut, name, read_latency=20, write_latency=8, stall_rate=48, ar_throttle=128,
            aw_throttle=128)
    await tb.reset()
    await run_programs(tb, 12, first_copy=True)
    await tb.quiesce()
    tb.check_all(name)
    m = tb.check_bus(name)
    assert all(m["ar_grants"]) and all(m["aw_grants"]), \
        f"{name}: a client had no AR or no AW: AR grants {m['ar_grants']}, AW {m['aw_grants']}"
    assert m["ar_shared"] > 0 and m["aw_shared"] > 0, \
        (f"{name}: no AR granted while another client's reads were open ({m['ar_shared']}) or no "
         f"AW while another's W burst was pending ({m['aw_shared']}): the IDs and W order were "
         f"not put to the test (SEED={SEED})")
    tb.log.info("%s: AR grants %s, AW grants %s; ARs with another client's reads open %d, AWs "
                "with another client's W burst pending %d", name, m["ar_grants"], m["aw_grants"],
                m["ar_shared"], m["aw_shared"])


# ---------------------------------------------------------------------------------------------
# The store queue (dma_store_queue): the engine builds one for a client that only STOREs (the
# device's CQE writer). These run in a build of their own whose client 0 is such a client.

STORE_QUEUE = simrun.build_parameters().get("MODES0") == 0x02
STORE_ONLY = {"MODES0": 0x02}


async def run_stores(tb, commands):
    """Issue `commands` ((mode, dst, data or a length) each) on client 0 back to back, one per
    cycle while it is ready (inputs change at falling edges), and collect the error bit of each
    done pulse in order; returns (errors, most commands taken and not done at once)."""
    dut = tb.dut
    cl = tb.clients[0]
    errors, taken, most = [], 0, 0

    async def watch():
        nonlocal most
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            if cl.done_valid.value:
                errors.append(int(cl.done_error.value))
            most = max(most, taken - len(errors))

    watcher = cocotb.start_soon(watch())
    for mode, dst, data in commands:
        await FallingEdge(dut.clk)
        length = data if isinstance(data, int) else len(data)
        payload = b"" if isinstance(data, int) else data
        cl.mode.value = mode
        cl.dst.value = dst
        cl.len.value = length
        cl.data.value = int.from_bytes(payload[:64].ljust(64, b"\0"), "little")
        cl.valid.value = 1
        while not cl.ready.value:               # (ready does not depend on valid)
            await FallingEdge(dut.clk)
        await RisingEdge(dut.clk)               # the accepting edge
        taken += 1
    await FallingEdge(dut.clk)
    cl.valid.value = 0
    for _ in range(100_000):
        if len(errors) >= len(commands):
            break
        await RisingEdge(dut.clk)
    await tb.quiesce()
    watcher.cancel()
    assert len(errors) == len(commands), \
        (f"{len(commands)} commands, {len(errors)} done pulses: the store queue hangs or answers "
         f"twice (SEED={SEED})\n{tb.state()}")
    return errors, most


@cocotb.test(skip=not STORE_QUEUE)
async def test_store_queue_keeps_order_with_stores_in_flight(dut):
    """STOREs of 0 to 64 bytes at any alignment, about a quarter of them across a 4 KiB boundary
    (two bursts), and most into a few hot bytes so that later stores overwrite earlier ones, with
    commands a store client refuses among them (a COPY, a STORE of more than 64 bytes), issued
    back to back while host memory answers writes 30 cycles late and stalls every channel: more
    than one is in flight at once; each command is done once, in command order, with the error
    bit exactly for the refused ones; host memory in the client's region ends as the stores
    applied in order, byte for byte, and the bus invariants hold."""
    name = "store_queue_keeps_order_with_stores_in_flight"
    tb = TB(dut, name, read_latency=2, write_latency=30, stall_rate=64)
    await tb.reset()
    rng = tb.rng
    lo, hi = region(0)
    hot = lo + 4096 * rng.randrange(2, 30)           # stores around this 4 KiB boundary
    commands, want_errors = [], []
    for _ in range(240):
        r = rng.random()
        if r < 0.05:
            commands.append((MODE_COPY, hot, 8))
            want_errors.append(1)
        elif r < 0.1:
            commands.append((MODE_STORE, hot, rng.randrange(65, 200)))
            want_errors.append(1)
        elif r < 0.15:
            commands.append((MODE_STORE, hot - rng.randrange(64), 0))
            want_errors.append(0)
        else:
            n = rng.randrange(1, 65)
            dst = hot - rng.randrange(n + 64) if rng.random() < 0.8 else \
                rng.randrange(lo, hi - 64)
            commands.append((MODE_STORE, dst, rng.randbytes(n)))
            want_errors.append(0)
    errors, most = await run_stores(tb, commands)
    assert errors == want_errors, \
        (f"{name}: done error bits {errors}, want {want_errors}: a done out of order or a wrong "
         f"error bit (SEED={SEED})")
    for mode, dst, data in commands:
        if mode == MODE_STORE and not isinstance(data, int):
            tb.shadow[dst:dst + len(data)] = np.frombuffer(data, dtype=np.uint8)
    tb.check_memory(lo, hi, f"{name}: after {len(commands)} commands")
    assert most >= 2, f"{name}: at most {most} command in flight: the stores did not overlap"
    m = tb.check_bus(name)
    crossing = sum(1 for mode, dst, data in commands if mode == MODE_STORE and
                   not isinstance(data, int) and dst // 4096 != (dst + len(data) - 1) // 4096)
    assert m["aw_grants"][0] == sum(1 for mode, dst, data in commands if mode == MODE_STORE and
                                    not isinstance(data, int)) + crossing, \
        f"{name}: {m['aw_grants'][0]} AWs for the stores (SEED={SEED})"
    tb.log.info("%s: %d commands, at most %d in flight, %d across 4 KiB", name, len(commands),
                most, crossing)


@cocotb.test(skip=not STORE_QUEUE)
async def test_store_queue_error_response_is_its_store_s_alone(dut):
    """Host memory refuses a window (SLVERR, nothing written): of STOREs issued back to back,
    those into the window are done with their error bit and change nothing; the ones before,
    between and after them, in flight together with them, land and are done without."""
    name = "store_queue_error_response_is_its_store_s_alone"
    tb = TB(dut, name, read_latency=2, write_latency=12, stall_rate=32)
    await tb.reset()
    rng = tb.rng
    lo, _ = region(0)
    bad = lo + 8192
    tb.mem.fail(bad, 256)
    commands, want_errors = [], []
    for k in range(40):
        refused = k % 3 == 1
        dst = bad + rng.randrange(192) if refused else lo + 4096 + 64 * k + rng.randrange(32)
        commands.append((MODE_STORE, dst, rng.randbytes(rng.randrange(1, 33))))
        want_errors.append(int(refused))
    errors, most = await run_stores(tb, commands)
    tb.mem.fail()
    assert errors == want_errors, \
        f"{name}: done error bits {errors}, want {want_errors} (SEED={SEED})"
    for (mode, dst, data), refused in zip(commands, want_errors):
        if not refused:
            tb.shadow[dst:dst + len(data)] = np.frombuffer(data, dtype=np.uint8)
    tb.check_memory(lo, lo + 16384, name)
    assert most >= 2, f"{name}: at most {most} command in flight"
    tb.check_bus(name)


# ---------------------------------------------------------------------------------------------
# The pytest runner: the tests at each data width, one build each.

@pytest.mark.parametrize("w", UNIT_WIDTHS)
def test_dma_engine(w):
    simrun.run(
        toplevel="tb_dma_engine",
        test_module="test_dma_engine",
        parameters={"DATA_WIDTH": w, **PARAMETERS},
        name=f"dma_engine_w{w}",
        rtl=RTL_FILES,
    )


@pytest.mark.parametrize("w", UNIT_WIDTHS)
def test_dma_engine_store_queue(w):
    simrun.run(
        toplevel="tb_dma_engine",
        test_module="test_dma_engine",
        parameters={"DATA_WIDTH": w, **PARAMETERS, **STORE_ONLY},
        name=f"dma_engine_store_queue_w{w}",
        rtl=RTL_FILES,
        extra_env={"COCOTB_TEST_FILTER": "test_store_queue"},
    )
