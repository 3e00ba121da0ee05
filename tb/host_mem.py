"""The back door to a harness's host memory (tb/hdl/sim_axi_ram.v).

The device reaches the memory through AXI4 in HDL; the testbench reads and writes it here, in
bulk and in zero simulated time, the way software reads and writes its own buffers. Storage is
an array of 512-bit words, so one simulator access moves 64 bytes; writes are immediate, so a
read right after a write sees it. The interface is the one the verbs driver expects of host
memory (`read`, `write`), with numpy views beside it for bulk compares and fills.
"""

import numpy as np
from cocotb.handle import Immediate

WORD = 64   # bytes per storage word of sim_axi_ram
NO_DELAY = 3    # the GPI's "set without delay" action, what cocotb.handle.Immediate uses
_ZEROS = str.maketrans("xXzZuUwW-", "000000000")


class HostMemory:
    """`ram` is the handle of a sim_axi_ram instance, e.g. `dut.host_mem`."""

    def __init__(self, ram, size):
        self.ram = ram
        self.size = size
        self._words = ram.mem
        self._gpi = {}      # word index -> its simulator object, for the bulk path below

    def _check(self, addr, length):
        if addr < 0 or addr + length > self.size:
            raise ValueError(f"host memory [{addr:#x}, {addr + length:#x}) is outside "
                             f"[0, {self.size:#x})")

    # One word per simulator call, straight through the GPI object under cocotb's handle: the
    # back door moves megabytes, and cocotb's LogicArray round trip would triple its cost.
    def _obj(self, index):
        obj = self._gpi.get(index)
        if obj is None:
            obj = self._gpi[index] = self._words[index]._handle
        return obj

    def _word(self, index):
        bits = self._obj(index).get_signal_val_binstr()
        try:
            value = int(bits, 2)
        except ValueError:      # X or Z (a word the RAM never initialised) reads as 0
            value = int(bits.translate(_ZEROS), 2)
        return value.to_bytes(WORD, "little")

    def _set_word(self, index, word):
        bits = format(int.from_bytes(word, "little"), f"0{8 * WORD}b")
        self._obj(index).set_signal_val_binstr(NO_DELAY, bits)

    def read_array(self, addr, length):
        """`length` bytes from `addr` as a numpy uint8 array."""
        self._check(addr, length)
        if not length:
            return np.zeros(0, dtype=np.uint8)
        first, last = addr // WORD, (addr + length - 1) // WORD
        raw = b"".join(self._word(i) for i in range(first, last + 1))
        start = addr - first * WORD
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
        first, last = addr // WORD, (addr + length - 1) // WORD
        start = addr - first * WORD
        span = np.zeros((last - first + 1) * WORD, dtype=np.uint8)
        if start:
            span[:WORD] = np.frombuffer(self._word(first), dtype=np.uint8)
        end = start + length
        if end % WORD:
            span[-WORD:] = np.frombuffer(self._word(last), dtype=np.uint8)
        span[start:end] = data
        raw = span.tobytes()
        for n, index in enumerate(range(first, last + 1)):
            self._set_word(index, raw[n * WORD:(n + 1) * WORD])

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
