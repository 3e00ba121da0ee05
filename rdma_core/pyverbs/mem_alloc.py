"""The simulated host's memory, as pyverbs' mem_alloc reaches the real host's: addresses are
addresses of simulated host memory (where MR buffers live)."""

from . import _sim
from .pyverbs_error import PyverbsError

# mmap's protections and flags (Linux's values)
PROT_NONE_ = 0x0
PROT_READ_ = 0x1
PROT_WRITE_ = 0x2
PROT_EXEC_ = 0x4
MAP_SHARED_ = 0x1
MAP_PRIVATE_ = 0x2
MAP_FIXED_ = 0x10
MAP_ANONYMOUS_ = 0x20
MAP_GROWSDOWN_ = 0x100
MAP_LOCKED_ = 0x2000
MAP_NORESERVE_ = 0x4000
MAP_POPULATE_ = 0x8000
MAP_STACK_ = 0x20000
MAP_HUGETLB_ = 0x40000
PAGE_SIZE = 4096
HUGE_PAGE_SIZE = 2 << 20


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


def mmap(addr=0, length=0, prot=PROT_READ_ | PROT_WRITE_,
         flags=MAP_PRIVATE_ | MAP_ANONYMOUS_, fd=-1, offset=0):
    """An anonymous mapping: `length` zeroed bytes of simulated host memory on a page (a huge
    page with MAP_HUGETLB_). There are no files to map, nor fixed addresses to map at."""
    if not flags & MAP_ANONYMOUS_ or flags & MAP_FIXED_:
        raise PyverbsError("mmap: the simulated host maps anonymous memory only, at an "
                           "address of its choosing")
    if length <= 0:
        raise PyverbsError(f"mmap: length {length} is not positive")
    return posix_memalign(length, HUGE_PAGE_SIZE if flags & MAP_HUGETLB_ else PAGE_SIZE)


def munmap(addr, length):
    free(addr)
