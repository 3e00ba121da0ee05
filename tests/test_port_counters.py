"""Unit tests of port_counters (through tb/hdl/tb_port_counters.v) against a Python model.

Events are driven in bursts: the inputs are set on a falling edge and held for n cycles with
one ClockCycles wait, so no Python runs per cycle. Every check reads all 32 words through the
register interface (rd_index set on the falling edge, rd_data read after ReadOnly) and compares
them with the model, so a counter moving when it should not is caught too.

Randomness comes from one seed, printed at the start of each test; SEED=<n> replays a run.
"""

import logging

import cocotb
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly

from tb import simrun
from tb.seed import SEED, rng_for


# The six counters in index order (port_counters.v): name, width, the event that moves it and
# whether it adds that event's PktLen (else 1).
COUNTERS = [
    ("PortXmitData", 32, "xmit", True),
    ("PortRcvData", 32, "rcv", True),
    ("PortXmitPkts", 32, "xmit", False),
    ("PortRcvPkts", 32, "rcv", False),
    ("PortRcvErrors", 16, "error", False),
    ("PortXmitDiscards", 16, "discard", False),
]
EXT_BASE = 8
# The RoCE congestion counters from word ROCE_BASE on, 32 bits without an extended copy: name
# and the event that adds 1.
ROCE_COUNTERS = [
    ("np_ecn_marked_roce_packets", "ce"),
    ("np_cnp_sent", "cnp_sent"),
    ("rp_cnp_handled", "cnp_handled"),
]
ROCE_BASE = 20
NUM_WORDS = 32
MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1
EVENTS = ("xmit", "rcv", "error", "discard", "ce", "cnp_sent", "cnp_handled")
PINS = {"ce": "rcv_ce", "cnp_sent": "cnp_sent", "cnp_handled": "cnp_handled"}


def ext_index(i):
    """Word index of extended counter i's low half (its high half is the next word)."""
    return EXT_BASE + 2 * i


ROCE_WORDS = list(range(ROCE_BASE, ROCE_BASE + len(ROCE_COUNTERS)))
COUNTER_WORDS = list(range(len(COUNTERS))) + list(range(EXT_BASE, ext_index(len(COUNTERS)))) \
    + ROCE_WORDS
RESERVED_WORDS = [i for i in range(NUM_WORDS) if i not in COUNTER_WORDS]


class Model:
    def __init__(self):
        self.base = [0] * len(COUNTERS)
        self.ext = [0] * len(COUNTERS)
        self.roce = [0] * len(ROCE_COUNTERS)

    def words(self):
        w = [0] * NUM_WORDS
        for i in range(len(COUNTERS)):
            w[i] = self.base[i]
            w[ext_index(i)] = self.ext[i] & 0xFFFFFFFF
            w[ext_index(i) + 1] = self.ext[i] >> 32
        w[ROCE_BASE:ROCE_BASE + len(ROCE_COUNTERS)] = self.roce
        return w

    def owner(self, index):
        """(counter, 'base' | 'lo' | 'hi' | 'roce') of a word, or None for a reserved word."""
        if index < len(COUNTERS):
            return index, "base"
        if EXT_BASE <= index < ext_index(len(COUNTERS)):
            return (index - EXT_BASE) // 2, ("lo", "hi")[(index - EXT_BASE) % 2]
        if ROCE_BASE <= index < ROCE_BASE + len(ROCE_COUNTERS):
            return index - ROCE_BASE, "roce"
        return None

    def cycles(self, n, events, write=None, clear=False):
        """n cycles of `events` ({event: PktLen or True}); a write (index, value) or a clear
        takes part in every one of them."""
        if clear:
            self.__init__()
            return
        hit = self.owner(write[0]) if write else None
        for i, (_, event) in enumerate(ROCE_COUNTERS):
            if hit == (i, "roce"):
                self.roce[i] = write[1]
            elif event in events:
                self.roce[i] = min(self.roce[i] + n, MASK32)
        if hit and hit[1] == "roce":
            hit = None
        for i, (_, width, event, adds_len) in enumerate(COUNTERS):
            if event in events:
                amount = n * (events[event] if adds_len else 1)
                if not (hit and hit[0] == i and hit[1] == "base"):
                    self.base[i] = min(self.base[i] + amount, (1 << width) - 1)
                if not (hit and hit[0] == i and hit[1] != "base"):
                    self.ext[i] = min(self.ext[i] + amount, MASK64)
        if hit:
            i, part = hit
            value = write[1]
            if part == "base":
                self.base[i] = value & ((1 << COUNTERS[i][1]) - 1)
            elif part == "lo":
                self.ext[i] = (self.ext[i] & ~0xFFFFFFFF & MASK64) | value
            else:
                self.ext[i] = (self.ext[i] & 0xFFFFFFFF) | (value << 32)


class TB:
    def __init__(self, dut, test_name):
        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        self.log.setLevel(logging.INFO)
        self.rng = rng_for(test_name, self.log)
        self.model = Model()
        self.max_len = (1 << len(dut.xmit_pktlen)) - 1
        for name in ("xmit_pkt", "xmit_pktlen", "rcv_pkt", "rcv_pktlen", "rcv_error",
                     "xmit_discard", *PINS.values(), "clear", "rd_index", "wr_en", "wr_index",
                     "wr_data"):
            getattr(dut, name).value = 0
        dut.rst.value = 1

    async def reset(self):
        dut = self.dut
        dut.rst.value = 1
        for _ in range(4):
            await FallingEdge(dut.clk)
        dut.rst.value = 0
        await FallingEdge(dut.clk)
        self.model = Model()

    def _drive(self, events, write=None, clear=False, on=1):
        dut = self.dut
        dut.xmit_pkt.value = on if "xmit" in events else 0
        dut.xmit_pktlen.value = events.get("xmit", 0) if on else 0
        dut.rcv_pkt.value = on if "rcv" in events else 0
        dut.rcv_pktlen.value = events.get("rcv", 0) if on else 0
        dut.rcv_error.value = on if "error" in events else 0
        dut.xmit_discard.value = on if "discard" in events else 0
        for event, pin in PINS.items():
            getattr(dut, pin).value = on if event in events else 0
        dut.clear.value = on if clear else 0
        dut.wr_en.value = on if write else 0
        if write:
            dut.wr_index.value = write[0]
            dut.wr_data.value = write[1]

    async def burst(self, n, events, write=None, clear=False):
        """Hold `events` ({"xmit": PktLen, "rcv": PktLen, "error": True, "discard": True}),
        and a write (index, value) and/or clear, for n cycles (we are on a falling edge)."""
        self._drive(events, write, clear)
        await ClockCycles(self.dut.clk, n, rising=False)
        self._drive(events, write, clear, on=0)
        self.model.cycles(n, events, write, clear)

    async def load(self, index, value):
        await self.burst(1, {}, write=(index, value))

    async def read(self, index):
        dut = self.dut
        dut.rd_index.value = index
        await ReadOnly()
        value = int(dut.rd_data.value)
        await FallingEdge(dut.clk)
        return value

    async def check(self, what):
        want = self.model.words()
        for index in range(NUM_WORDS):
            got = await self.read(index)
            assert got == want[index], \
                (f"{what}: word {index} ({self.name(index)}) reads {got:#010x}, want "
                 f"{want[index]:#010x} (SEED={SEED})")

    def name(self, index):
        hit = self.model.owner(index)
        if hit is None:
            return "reserved"
        if hit[1] == "roce":
            return ROCE_COUNTERS[hit[0]][0]
        return COUNTERS[hit[0]][0] + ("" if hit[1] == "base" else f" ext {hit[1]}")

    def random_events(self, p=0.5):
        rng = self.rng
        events = {}
        if rng.random() < p:
            events["xmit"] = rng.choice([0, 1, self.max_len, rng.randint(0, self.max_len)])
        if rng.random() < p:
            events["rcv"] = rng.choice([0, 1, self.max_len, rng.randint(0, self.max_len)])
        if rng.random() < p:
            events["error"] = True
        for event in ("discard", *PINS):
            if rng.random() < p:
                events[event] = True
        return events


@cocotb.test()
async def test_reset_and_reserved(dut):
    """Every word reads 0 after reset; writes to reserved words change nothing and read 0."""
    tb = TB(dut, "test_reset_and_reserved")
    await tb.reset()
    await tb.check("after reset")
    for index in RESERVED_WORDS:
        await tb.load(index, tb.rng.getrandbits(32) | 1)
    await tb.check("after writes to reserved words")


@cocotb.test()
async def test_load_readback(dut):
    """Each word loads and reads back (16-bit counters keep their low 16 bits); the other half
    of an extended counter is kept."""
    tb = TB(dut, "test_load_readback")
    await tb.reset()
    indices = list(COUNTER_WORDS)
    for _ in range(3):
        tb.rng.shuffle(indices)
        for index in indices:
            await tb.load(index, tb.rng.getrandbits(32))
        await tb.check("after loading every word")
    await tb.load(ext_index(0), 0x12345678)       # one half only
    await tb.check("after loading one half")


@cocotb.test()
async def test_increments(dut):
    """Random bursts of simultaneous events (PktLen 0 .. max) from zero and from random
    preloads, checked against the model."""
    tb = TB(dut, "test_increments")
    await tb.reset()
    rng = tb.rng
    # each event alone first
    for events in ({"xmit": 17}, {"rcv": 5}, {"error": True}, {"discard": True},
                   *({event: True} for event in PINS)):
        await tb.burst(rng.randint(1, 9), events)
        await tb.check(f"after {events}")
    # all of them in the same cycles
    await tb.burst(3, {"xmit": tb.max_len, "rcv": 1, **{event: True for event in EVENTS[2:]}})
    await tb.check("after all events together")
    for round_ in range(4):
        if round_:
            for i in range(len(COUNTERS)):
                await tb.load(i, rng.getrandbits(COUNTERS[i][1] - 2))
                await tb.load(ext_index(i), rng.getrandbits(32))
                await tb.load(ext_index(i) + 1, rng.getrandbits(31))
            for index in ROCE_WORDS:
                await tb.load(index, rng.getrandbits(31))
        for _ in range(12):
            events = tb.random_events()
            await tb.burst(rng.randint(1, 60), events)
            if rng.random() < 0.3:
                await FallingEdge(dut.clk)      # an idle cycle between bursts
        await tb.check(f"after random bursts, round {round_}")


@cocotb.test()
async def test_saturation(dut):
    """Each of the fifteen counters, loaded near all-ones, stops at all-ones and stays there;
    an exact fill reaches all-ones without wrapping; the extended copy carries past 2^32 while
    the 32-bit copy sticks."""
    tb = TB(dut, "test_saturation")
    await tb.reset()
    rng = tb.rng
    for i, (name, width, event, adds_len) in enumerate(COUNTERS):
        top = (1 << width) - 1
        length = rng.randint(2, tb.max_len) if adds_len else 1
        events = {event: length}

        # the PortCounters copy: an exact fill, then past it
        await tb.load(i, top - length)
        await tb.burst(1, events)
        await tb.check(f"{name}: exact fill")
        assert tb.model.base[i] == top
        await tb.burst(5, events)
        await tb.load(i, top - 3 * length + 1)
        await tb.burst(7, events)
        await tb.check(f"{name}: held at all-ones")

        # the extended copy: carry into the high word while the narrow copy sticks
        await tb.load(i, top - 1)
        await tb.load(ext_index(i), 0xFFFFFFFF - length)
        await tb.load(ext_index(i) + 1, 0)
        await tb.burst(3, events)
        await tb.check(f"{name}: extended carries past 2^32")
        assert tb.model.ext[i] == (1 << 32) + 2 * length - 1 and tb.model.base[i] == top

        # the extended copy at its own top
        await tb.load(ext_index(i), 0xFFFFFFFF - length)
        await tb.load(ext_index(i) + 1, 0xFFFFFFFF)
        await tb.burst(1, events)
        await tb.check(f"{name} extended: exact fill")
        assert tb.model.ext[i] == MASK64
        await tb.burst(9, events)
        await tb.check(f"{name} extended: held at all-ones")

        await tb.burst(1, {}, clear=True)

    for k, (name, event) in enumerate(ROCE_COUNTERS):
        await tb.load(ROCE_BASE + k, MASK32 - 2)
        await tb.burst(2, {event: True})
        await tb.check(f"{name}: exact fill")
        assert tb.model.roce[k] == MASK32
        await tb.burst(6, {event: True})
        await tb.check(f"{name}: held at all-ones")


@cocotb.test()
async def test_clear_and_priority(dut):
    """clear zeroes every counter, also against events in the same cycle; a write to a counter
    beats that counter's event in the same cycle while the other counters still count."""
    tb = TB(dut, "test_clear_and_priority")
    await tb.reset()
    rng = tb.rng
    for i in range(len(COUNTERS)):
        await tb.load(i, rng.getrandbits(COUNTERS[i][1]))
        await tb.load(ext_index(i), rng.getrandbits(32))
        await tb.load(ext_index(i) + 1, rng.getrandbits(32))
    for index in ROCE_WORDS:
        await tb.load(index, rng.getrandbits(32))
    await tb.burst(20, tb.random_events(1.0))
    await tb.burst(1, {}, clear=True)
    await tb.check("after clear")
    await tb.burst(4, tb.random_events(1.0))
    await tb.burst(2, tb.random_events(1.0), clear=True)
    await tb.check("after clear with events")
    await tb.burst(6, {"xmit": 9, "rcv": 3})
    await tb.check("counting again after clear")

    all_events = {"xmit": 100, "rcv": 200, **{event: True for event in EVENTS[2:]}}
    for index in COUNTER_WORDS:
        await tb.burst(1, all_events, write=(index, rng.getrandbits(32)))
        await tb.check(f"write to word {index} ({tb.name(index)}) with every event")


# ---------------------------------------------------------------------------------------------
# The pytest runner: port_counters unit tests.

def test_port_counters():
    simrun.run(
        toplevel="tb_port_counters",
        test_module="test_port_counters",
        parameters={"PKTLEN_WIDTH": 11},
        name="port_counters",
        rtl=["port_counters.v"],
    )
