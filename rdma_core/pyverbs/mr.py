"""Memory regions. An MR's buffer is simulated host memory: `buf` is its address there, which
is also the address work requests name it by (the iova), and `read` / `write` are the CPU's
loads and stores to it."""

import errno

from . import enums as e
from tb.verbs import SGE as DriverSGE

from ._sim import DeviceObject, rdma_error
from .base import PyverbsCM, PyverbsObject
from .pyverbs_error import PyverbsUserError

PAGE_SIZE = 4096
DEVICE_ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
                 | e.IBV_ACCESS_REMOTE_ATOMIC | e.IBV_ACCESS_MW_BIND)
# what the kernel accepts in ibv_reg_mr and providers like mlx5 and rxe ignore: ZERO_BASED (a
# memory-window attribute) and HUGETLB (how the buffer is allocated)
ACCEPTED_ACCESS = DEVICE_ACCESS | e.IBV_ACCESS_ZERO_BASED | e.IBV_ACCESS_HUGETLB
# the rights a window may give
MW_ACCESS = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC
OPTIONAL_ACCESS = 0x3FF00000    # IBV_ACCESS_OPTIONAL_RANGE (relaxed ordering, ...): dropped
REREG_FLAGS = (e.IBV_REREG_MR_CHANGE_TRANSLATION | e.IBV_REREG_MR_CHANGE_PD
               | e.IBV_REREG_MR_CHANGE_ACCESS)


def device_access(access, what):
    """The device's access flags for verbs access flags, refused as the kernel refuses them."""
    access = int(access) & ~OPTIONAL_ACCESS
    if access & e.IBV_ACCESS_ON_DEMAND:
        raise rdma_error(f"{what}: the device has no on-demand paging", errno.EOPNOTSUPP)
    if access & ~ACCEPTED_ACCESS:
        raise rdma_error(f"{what}: access flags {access:#x}", errno.EINVAL)
    return access & DEVICE_ACCESS


def _to_bytes(data, length):
    if isinstance(data, str):
        data = data.encode()
    data = bytes(data)
    if length < 0 or length > len(data):
        raise PyverbsUserError(f"Cannot write {length} bytes of {len(data)}")
    return data[:length]


class MR(DeviceObject, PyverbsCM):
    """A registered region with a buffer of its own (simulated host memory, page aligned and
    zeroed), or at a given `address` of that memory."""

    _close_order = 3

    def __init__(self, pd, length=0, access=0, address=None, implicit=False, **kwargs):
        super().__init__()
        what = f"Failed to register a MR. length: {length}, access flags: {access}"
        if kwargs.get("handle") is not None:
            raise rdma_error("Failed to import MR (the device cannot share objects)",
                             errno.EOPNOTSUPP)
        if implicit:
            raise rdma_error(f"{what} (implicit regions need on-demand paging)", errno.EOPNOTSUPP)
        self.pd = pd
        self.sim = pd.ctx.sim
        device = device_access(access, what)
        self._own_buf = not address
        self._buf = address or (self.sim.call(self._alloc, length) if length else 0)
        try:
            self._mr = self.sim.verb(what, pd._pd.reg_mr, self._buf, length, device)
        except Exception:
            self._free_buf()
            raise
        self._access = int(access)
        self._register(pd)

    async def _alloc(self, length):
        return self.sim.heap.alloc(length, PAGE_SIZE, "MR buffer")

    def _free_buf(self):
        if self._own_buf and self._buf:
            self.sim.heap.free(self._buf)
        self._buf = 0

    @property
    def buf(self):
        return self._buf

    @property
    def lkey(self):
        return self._mr.lkey

    @property
    def rkey(self):
        return self._mr.rkey

    @property
    def length(self):
        return self._mr.length

    @property
    def handle(self):
        return self._mr.index

    def write(self, data, length, offset=0):
        """Store `length` bytes of `data` (bytes or str) at `offset` of the buffer."""
        if not self._buf or length < 0:
            raise PyverbsUserError(f"The MR buffer isn't allocated or length {length} is invalid")
        self.sim.call(self._write, self._buf + offset, _to_bytes(data, length))

    async def _write(self, addr, data):
        self.sim.dev.write(addr, data)

    def read(self, length, offset):
        """`length` bytes of the buffer at `offset`."""
        if offset < 0:
            raise PyverbsUserError(f"Invalid offset {offset}")
        if not self._buf or length < 0:
            raise PyverbsUserError(f"The MR buffer isn't allocated or length {length} is invalid")
        return self.sim.call(self._read, self._buf + offset, length)

    async def _read(self, addr, length):
        return self.sim.dev.read(addr, length)

    def rereg(self, flags, pd=None, addr=0, length=0, access=0):
        """ibv_rereg_mr: change the region's translation (addr, length), PD or access. The
        keys stay: the device deregisters the region and registers it again under them."""
        what = "Failed to rereg MR"
        if not flags or flags & ~REREG_FLAGS:
            raise rdma_error(f"{what}: flags {flags:#x}", errno.EINVAL)
        new_pd = pd if flags & e.IBV_REREG_MR_CHANGE_PD else self.pd
        if new_pd is None:
            raise rdma_error(f"{what}: no PD", errno.EINVAL)
        if flags & e.IBV_REREG_MR_CHANGE_TRANSLATION:
            new_addr, new_length = addr, length
        else:
            new_addr, new_length = self._buf, self._mr.length
        new_access = access if flags & e.IBV_REREG_MR_CHANGE_ACCESS else self._access
        device = device_access(new_access, what)
        if device & (e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_ATOMIC) and \
                not device & e.IBV_ACCESS_LOCAL_WRITE:
            raise rdma_error(f"{what}: remote write or atomic access needs local write",
                             errno.EINVAL)
        key = self._mr.lkey
        self.sim.verb(what, self._mr.dereg)
        try:
            self._mr = self.sim.verb(what, new_pd._pd.reg_mr, new_addr, new_length, device,
                                     key=key)
        except Exception:
            self._open = False      # the region is gone: nothing is left to deregister
            raise
        if new_addr != self._buf:
            self._free_buf()
            self._buf, self._own_buf = new_addr, False
        if new_pd is not self.pd:
            self.pd._children.discard(self)
            self._parents = [new_pd]
            new_pd._children.add(self)
            self.pd = new_pd
        self._access = int(new_access)

    def _destroy(self):
        self.sim.verb("Failed to dereg MR", self._mr.dereg)
        self._free_buf()

    def _release(self):
        mr, heap, buf = self._mr, self.sim.heap, self._buf if self._own_buf else 0

        async def release():
            await mr.dereg()
            if buf:
                heap.free(buf)
        return release

    def unimport(self):
        self.close()

    def __str__(self):
        return (f"MR\n{'lkey':<22}: {self.lkey}\n{'rkey':<22}: {self.rkey}\n"
                f"{'length':<22}: {self.length}\n{'buf':<22}: {self.buf}\n")


# ---------------------------------------------------------------------------------------------
# Memory windows (types 1 and 2): keys from the regions' key space, bound by BIND_MW work
# requests (ibv_bind_mw posts one for a type 1 window)

class MWBindInfo(PyverbsCM):
    def __init__(self, mr, addr, length, mw_access_flags):
        super().__init__()
        self.mr = mr
        self.addr = addr
        self.length = length
        self.mw_access_flags = mw_access_flags


class MWBind(PyverbsCM):
    def __init__(self, info, send_flags, wr_id=0):
        super().__init__()
        self.bind_info = info
        self.send_flags = send_flags
        self.wr_id = wr_id


class MW(DeviceObject, PyverbsCM):
    """ibv_mw. `rkey` is the key ibv_alloc_mw gave; ibv_bind_mw moves a type 1 window's on
    (ibv_inc_rkey), a type 2 window's new key is the bind work request's."""

    _close_order = 2

    def __init__(self, pd, mw_type):
        super().__init__()
        what = f"Failed to allocate MW of type {mw_type}"
        if mw_type not in (e.IBV_MW_TYPE_1, e.IBV_MW_TYPE_2):
            raise rdma_error(what, errno.EINVAL)
        self.pd = pd
        self.sim = pd.ctx.sim
        self._mw = self.sim.verb(what, pd._pd.alloc_mw, int(mw_type))
        self.rkey = self._mw.rkey
        self._register(pd)

    @property
    def handle(self):
        return self._mw.index

    @property
    def type(self):
        return self._mw.type

    def _destroy(self):
        self.sim.verb("Failed to dealloc MW", self._mw.dealloc)

    def _release(self):
        return self._mw.dealloc

    def __str__(self):
        return f"MW\n{'Rkey':<22}: {self.rkey}\n{'Type':<22}: {mwtype2str(self.type)}\n"


def bind_fields(mw, new_rkey, bind_info):
    """The driver's BIND_MW fields: the window (by its index), the key it takes, the region's
    range and the rights it gives; EINVAL for rights a window cannot give."""
    access = bind_info.mw_access_flags & ~e.IBV_ACCESS_LOCAL_WRITE
    if access & ~MW_ACCESS:
        raise rdma_error(f"Failed to bind MW: access flags {bind_info.mw_access_flags:#x}",
                         errno.EINVAL)
    return dict(sge=(DriverSGE(bind_info.addr & (2**64 - 1), bind_info.length & 0xFFFFFFFF,
                               bind_info.mr.lkey),),
                rkey=mw._mw.rkey, bind_rkey=new_rkey & 0xFFFFFFFF, bind_access=access)


class DMMR(MR):
    def __init__(self, pd, length, access, dm, offset):
        PyverbsObject.__init__(self)
        raise rdma_error(f"Failed to register a device MR. length: {length}, access flags: "
                         f"{access} (the device has no device memory)", errno.EOPNOTSUPP)


class DmaBufMR(MR):
    def __init__(self, pd, length, access, dmabuf=None, offset=0, gpu=0, gtt=0):
        PyverbsObject.__init__(self)
        raise rdma_error(f"Failed to register a dma-buf MR. length: {length}, access flags: "
                         f"{access} (the device cannot register dma-buf memory)",
                         errno.EOPNOTSUPP)


def mwtype2str(mw_type):
    return {1: "IBV_MW_TYPE_1", 2: "IBV_MW_TYPE_2"}.get(mw_type, f"Unknown MW type ({mw_type})")
