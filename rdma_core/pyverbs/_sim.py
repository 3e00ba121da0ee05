"""The bridge between pyverbs' synchronous calls and the simulated device.

rdma-core's suite is synchronous code. It runs in a thread started with `cocotb.task.bridge`
(rdma_core/run_suite.py); each verb of this layer hands a coroutine to the simulator with
`cocotb.task.resume` and blocks until the device has answered (tb/verbs.py drives it through its
registers and host memory). Simulated time advances only through the device: a CQ poll that
finds nothing lets some clock cycles pass, a wait for a completion event waits for the
device's interrupt.

One simulation is attached at a time (`attach`); every Context opens its one device.
"""

from __future__ import annotations

import errno as errnos
import logging
import weakref

from cocotb.task import resume
from cocotb.triggers import ClockCycles

from tb.verbs import CmdResult, CommandError, QueueFull, Reg, VerbsError

from .pyverbs_error import PyverbsRDMAError

DEVICE_NAME = "rdma_dev0"
IDLE_POLL_CYCLES = 32        # a CQ poll that finds nothing lets this many cycles pass
EVENT_WAIT_CYCLES = 250_000  # get_cq_event gives up (ETIMEDOUT) after this long (1 ms at 250 MHz)
KERNEL_COMMAND_CYCLES = 2_500  # a verb that is a firmware command through the kernel
                               # (ibv_resize_cq) takes ~10 us on a host; the device works on
HEAP_ALIGN = 64

log = logging.getLogger("cocotb.pyverbs")

_current: Simulation | None = None


def attach(tb, dev):
    """Make `dev` (an opened tb.verbs.Device of harness `tb`) the device every Context opens.
    Must be called in the simulator; the verbs are then called from a bridge thread."""
    global _current
    _current = Simulation(tb, dev)
    return _current


def detach():
    global _current
    _current = None


def current():
    """The attached simulation, or the error libibverbs gives when there is no device."""
    if _current is None:
        raise PyverbsRDMAError("Failed to get devices list")
    return _current


# ---------------------------------------------------------------------------------------------
# errno, as libibverbs keeps it

last_errno = 0


def rdma_error(msg, code):
    """A PyverbsRDMAError for errno `code`, which PyverbsRDMAErrno reports afterwards."""
    global last_errno
    last_errno = abs(code)
    return PyverbsRDMAError(msg, code)


_RESULT_ERRNO = {
    CmdResult.BAD_INDEX: errnos.EINVAL,
    CmdResult.BAD_STATE: errnos.EINVAL,
    CmdResult.BAD_PARAM: errnos.EINVAL,
    CmdResult.BUSY: errnos.EBUSY,
}


def driver_errno(error):
    """The errno a provider would return for an error of the tb.verbs driver, or None."""
    if isinstance(error, CommandError):
        return _RESULT_ERRNO.get(error.result, errnos.EIO)
    if isinstance(error, (QueueFull, MemoryError)):
        return errnos.ENOMEM
    if isinstance(error, VerbsError):
        return errnos.EINVAL
    return None


# ---------------------------------------------------------------------------------------------
# The simulation

class Simulation:
    """The attached device (`dev`, a tb.verbs.Device; `tb`, its harness), its host memory
    heap, and the completion events its interrupt reported, per CQ."""

    def __init__(self, tb, dev):
        self.tb = tb
        self.dev = dev
        self.clk = tb.dut.clk
        self.heap = HostHeap(dev, dev.mem_base, dev.mem_size)
        dev.alloc = self.heap.alloc     # the driver's rings come from the heap too
        dev.free = self.heap.free
        self.channels = {}              # cqn -> the CompChannel its events go to
        self.events = {}                # cqn -> completion events seen and not yet taken
        self._deferred = []             # coroutine functions to run before the next call
        self._resume = resume(self._in_simulation)

    def call(self, function, *args, **kwargs):
        """Run coroutine function `function(*args, **kwargs)` in the simulator; block until
        it returns and give its result (or raise its exception)."""
        return self._resume(function, args, kwargs)

    def verb(self, what, function, *args, **kwargs):
        """`call`, with the tb.verbs driver's refusals turned into PyverbsRDMAError(what,
        errno) as a provider reports them."""
        try:
            return self.call(function, *args, **kwargs)
        except (VerbsError, MemoryError) as error:
            code = driver_errno(error)
            log.debug("%s: %s", what, error)
            raise rdma_error(what, code) from error

    async def _in_simulation(self, function, args, kwargs):
        while self._deferred:
            release = self._deferred.pop(0)
            try:
                await release()
            except Exception as error:      # an object the GC dropped failed to go away
                log.warning("releasing a dropped object failed: %s", error)
        return await function(*args, **kwargs)

    def defer(self, release):
        """Run coroutine function `release` at the next call (objects the garbage collector
        drops are destroyed on the device that way)."""
        self._deferred.append(release)

    def flush(self):
        """Run what `defer` queued now."""
        if self._deferred:
            self.call(_nothing)

    def cycle(self):
        """The harness's cycle counter."""
        return self.call(self._cycle)

    async def _cycle(self):
        return self.tb.cycle()

    async def idle(self, cycles=IDLE_POLL_CYCLES):
        await ClockCycles(self.clk, cycles)

    # --- completion events ---------------------------------------------------------------

    async def collect_events(self):
        """Read and acknowledge the device's EVENT register; each set bit is one completion
        event of its CQ, kept for the CQ's channel. Asynchronous events (SRQ_EVENT) go to the
        driver's queue, so that neither kind holds irq up for the other."""
        await self.dev.collect_async_events()
        pending = await self.dev.read_reg(Reg.EVENT)
        if pending:
            await self.dev.write_reg(Reg.EVENT, pending)
            for cqn in range(pending.bit_length()):
                if pending >> cqn & 1 and cqn in self.channels:
                    self.events[cqn] = self.events.get(cqn, 0) + 1

    async def wait_event(self, cqns, cycles=EVENT_WAIT_CYCLES):
        """The CQ number of the first pending event among `cqns`, waiting up to `cycles` for
        the device's interrupt; None if none came."""
        waited = 0
        while True:
            await self.collect_events()
            for cqn in cqns:
                if self.events.get(cqn):
                    self.events[cqn] -= 1
                    return cqn
            if waited >= cycles:
                return None
            start = self.tb.cycle()
            await self.tb.wait_event(min(20000, cycles - waited))
            waited += max(1, self.tb.cycle() - start)


    async def wait_async_event(self, cycles=EVENT_WAIT_CYCLES):
        """The device's next asynchronous event, (ibv_event_type, its object's number),
        waiting up to `cycles` for the interrupt; None if none came."""
        waited = 0
        while True:
            await self.collect_events()
            if self.dev.async_events:
                return self.dev.async_events.popleft()
            if waited >= cycles:
                return None
            start = self.tb.cycle()
            await self.tb.wait_event(min(20000, cycles - waited))
            waited += max(1, self.tb.cycle() - start)


async def _nothing():
    return None


# ---------------------------------------------------------------------------------------------
# Host memory

class HostHeap:
    """The simulated host's memory for buffers and rings, given back when their objects are
    destroyed (the driver's own allocator only moves forward, and the suite creates and
    destroys objects all day). Every allocation is zeroed."""

    def __init__(self, dev, base, size):
        self.dev = dev
        self.free_blocks = [(base, size)]   # (start, length), sorted, never adjacent
        self.blocks = {}                    # address handed out -> (start, length) taken

    def alloc(self, size, align=HEAP_ALIGN, label=None):
        size = -(-max(size, 1) // HEAP_ALIGN) * HEAP_ALIGN
        align = max(align, HEAP_ALIGN)
        for i, (start, length) in enumerate(self.free_blocks):
            addr = -(-start // align) * align
            if addr + size > start + length:
                continue
            rest = [(start, addr - start)] if addr > start else []
            if addr + size < start + length:
                rest.append((addr + size, start + length - addr - size))
            self.free_blocks[i:i + 1] = rest
            self.blocks[addr] = (addr, size)
            self.dev.write(addr, bytes(size))
            return addr
        raise MemoryError(f"simulated host memory exhausted allocating {size} bytes"
                          f" ({label or 'buffer'})")

    def free(self, addr):
        start, length = self.blocks.pop(addr)
        blocks = self.free_blocks
        i = 0
        while i < len(blocks) and blocks[i][0] < start:
            i += 1
        blocks.insert(i, (start, length))
        if i + 1 < len(blocks) and start + length == blocks[i + 1][0]:     # join the next
            blocks[i:i + 2] = [(start, length + blocks[i + 1][1])]
        if i > 0 and blocks[i - 1][0] + blocks[i - 1][1] == start:          # and the previous
            blocks[i - 1:i + 1] = [(blocks[i - 1][0], blocks[i - 1][1] + blocks[i][1])]

    @property
    def free_bytes(self):
        return sum(length for _, length in self.free_blocks)


# ---------------------------------------------------------------------------------------------
# Objects on the device

class DeviceObject:
    """Lifetime of a pyverbs object that stands for something on the device, as pyverbs
    keeps it: a parent (Context, PD, CQ, ...) knows its children weakly and closes them
    before itself; a child holds its parents. An object the garbage collector drops unclosed
    is destroyed on the device at the next verb (pyverbs destroys it in __dealloc__)."""

    _open = False   # set once the device object exists: a half-built object has nothing to free

    def _register(self, *parents):
        self._children = weakref.WeakSet()
        self._parents = [p for p in parents if p is not None]
        for parent in self._parents:
            parent._children.add(self)
        self._open = True

    def _init_children(self):
        if not hasattr(self, "_children"):
            self._children = weakref.WeakSet()

    def close(self):
        if not self._open:
            return
        for child in sorted(list(self._children), key=lambda c: c._close_order):
            child.close()
        self._destroy()
        self._open = False
        for parent in self._parents:
            parent._children.discard(self)

    _close_order = 0    # among siblings, lower closes first (QPs before CQs, ...)

    def _destroy(self):
        """Destroy the device object (synchronously, through the simulation)."""

    def _release(self):
        """A coroutine function that destroys the device object, for an object the GC drops;
        it must not refer to self. None: nothing to do."""
        return None

    def __del__(self):
        if self._open and _current is not None:
            release = self._release()
            if release is not None:
                _current.defer(release)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
