"""The simulated host's memory, as pyverbs' mem_alloc reaches the real host's: addresses are
addresses of simulated host memory (where MR buffers live)."""

from . import _sim
from .pyverbs_error import PyverbsError


async def _alloc(sim, size, alignment):
    return sim.heap.alloc(size, alignment, "posix_memalign")


async def _read(sim, addr, length):
    return sim.dev.read(addr, length)


async def _write(sim, addr, data):
    sim.dev.write(addr, data)


def posix_memalign(size, alignment=8):
    """A zeroed block of `size` bytes of simulated host memory aligned to `alignment`."""
    sim = _sim.current()
    return sim.call(_alloc, sim, size, alignment)


def malloc(size):
    return posix_memalign(size)


def free(ptr):
    if ptr:
        _sim.current().heap.free(ptr)


def read(addr, length, offset=0):
    sim = _sim.current()
    return sim.call(_read, sim, addr + offset, length)


def write(addr, data, length, offset=0):
    if isinstance(data, str):
        data = data.encode()
    sim = _sim.current()
    sim.call(_write, sim, addr + offset, bytes(data[:length]))


def read32(addr, offset=0):
    return int.from_bytes(read(addr, 4, 4 * offset), "little")


def read64(addr, offset=0):
    return int.from_bytes(read(addr, 8, 8 * offset), "little")


def writebe32(addr, val, offset=0):
    write(addr, val.to_bytes(4, "big"), 4, 4 * offset)


def writebe64(addr, val, offset=0):
    write(addr, val.to_bytes(8, "big"), 8, 8 * offset)


def mmap(addr=0, length=0, prot=0, flags=0, fd=-1, offset=0):
    raise PyverbsError("mmap: the simulated host has no address space to map into")


def munmap(addr, length):
    raise PyverbsError("munmap: the simulated host has no address space to map into")
