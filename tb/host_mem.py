"""The back door to a harness's host memory (tb/hdl/sim_axi_ram.v).

The device reaches the memory through AXI4 in HDL; the testbench reads and writes it here, in
bulk and in zero simulated time, the way software reads and writes its own buffers. Storage is
an array of wide words (self.word_BYTES, 512 bytes by default), so one simulator access moves that
many bytes; writes are immediate, so a read right after a write sees it. The interface is the one the verbs driver expects of host
memory (`read`, `write`), with numpy views beside it for bulk compares and fills.
"""

import numpy as np
from cocotb.handle import Immediate

from .signals import read_int, write_int


class HostMemory:
    """`ram` is the handle of a sim_axi_ram instance, e.g. `dut.host_mem`."""

    def __init__(self, ram, size):
        self.ram = ram
        self.size = size
        self._words = ram.mem
        self.word = int(ram.WORD_BYTES.value)   # bytes per storage word
        self._gpi = {}      # word index -> its simulator object, for the bulk path below

    def _check(self, addr, length):
        if addr < 0 or addr + length > self.size:
            raise ValueError(f"host memory [{addr:#x}, {addr + length:#x}) is outside "
                             f"[0, {self.size:#x})")

    # One word per simulator call, through the GPI object (tb/signals.py): the back door moves
    # megabytes.
    def _obj(self, index):
        obj = self._gpi.get(index)
        if obj is None:
            obj = self._gpi[index] = self._words[index]._handle
        return obj

    def _word(self, index):
        return read_int(self._obj(index)).to_bytes(self.word, "little")

    def _set_word(self, index, word):
        write_int(self._obj(index), int.from_bytes(word, "little"), 8 * self.word)

    def read_array(self, addr, length):
        """`length` bytes from `addr` as a numpy uint8 array."""
        self._check(addr, length)
        if not length:
            return np.zeros(0, dtype=np.uint8)
        first, last = addr // self.word, (addr + length - 1) // self.word
        raw = b"".join(self._word(i) for i in range(first, last + 1))
        start = addr - first * self.word
        return np.frombuffer(raw, dtype=np.uint8)[start:start + length]

    def read(self, addr, length):
        return self.read_array(addr, length).tobytes()

    def write(self, addr, data):
        """Write `data` (bytes-like or a uint8 array) at `addr`; partial words keep their
        other bytes."""
        data = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) \
            else data.astype(np.uint8, copy=False)
        length = len(data)
        self._check(addr, length)
        if not length:
            return
        first, last = addr // self.word, (addr + length - 1) // self.word
        start = addr - first * self.word
        span = np.zeros((last - first + 1) * self.word, dtype=np.uint8)
        if start:
            span[:self.word] = np.frombuffer(self._word(first), dtype=np.uint8)
        end = start + length
        if end % self.word:
            span[-self.word:] = np.frombuffer(self._word(last), dtype=np.uint8)
        span[start:end] = data
        raw = span.tobytes()
        for n, index in enumerate(range(first, last + 1)):
            self._set_word(index, raw[n * self.word:(n + 1) * self.word])

    def fill(self, addr, length, rng):
        """Random bytes from the numpy Generator `rng` over [addr, addr + length)."""
        self.write(addr, rng.integers(0, 256, length, dtype=np.uint8))

    @property
    def protocol_errors(self):
        """AXI rules the device broke so far (sim_axi_ram's header lists them)."""
        return int(self.ram.protocol_errors.value)

    @property
    def beats(self):
        """(read beats, write beats) the memory has served."""
        return int(self.ram.read_beats.value), int(self.ram.write_beats.value)

    def configure(self, read_latency=None, write_latency=None, stall_rate=None, seed=None):
        """Change the memory's timing (sim_axi_ram's header), e.g. before reset. The stall
        generator's seed must not be 0 (xorshift stays at 0)."""
        if seed == 0:
            raise ValueError("sim_axi_ram's stall generator needs a non-zero seed")
        for name, value in (("read_latency", read_latency), ("write_latency", write_latency),
                            ("stall_rate", stall_rate), ("rng", seed)):
            if value is not None:
                getattr(self.ram, name).value = Immediate(value)

    def fail(self, addr=0, length=0):
        """From now on every beat in [addr, addr + length) is answered SLVERR and writes
        nothing (sim_axi_ram's fault window); length 0 heals the memory."""
        self.ram.fault_base.value = Immediate(addr)
        self.ram.fault_limit.value = Immediate(addr + length)

    @property
    def faults(self):
        """Beats the memory answered SLVERR so far."""
        return int(self.ram.faults.value)

    def guard(self, ranges):
        """From now on every write beat must fall inside one of `ranges` ([lo, hi) pairs):
        one outside counts as a stray (sim_axi_ram's write guard); strays caught before (an
        earlier test's in the same simulation) are forgotten."""
        ram = self.ram
        width = len(ram.s_axi_awaddr)
        slots = len(ram.guard_base) // width
        if len(ranges) > slots:
            raise ValueError(f"{len(ranges)} write ranges, the guard has {slots}")
        base = limit = 0
        for i, (lo, hi) in enumerate(ranges):
            base |= lo << (i * width)
            limit |= hi << (i * width)
        ram.guard_base.value = Immediate(base)
        ram.guard_limit.value = Immediate(limit)
        ram.guard_on.value = Immediate(1)
        ram.strays.value = Immediate(0)

    def stray(self):
        """None, or the first write the guard caught: (host address, cycle, AXI ID: the
        device's DMA client) and how many beats strayed."""
        ram = self.ram
        count = int(ram.strays.value)
        if not count:
            return None
        return (int(ram.stray_addr.value), int(ram.stray_cycle.value), int(ram.stray_id.value),
                count)

