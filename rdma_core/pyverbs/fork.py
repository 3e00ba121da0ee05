"""ibv_fork_init and ibv_is_fork_initialized. The device's buffers are simulated host memory,
which a fork of the process running the simulation neither copies nor unmaps: fork needs no
protection here, as on a kernel with copy-on-fork support (IBV_FORK_UNNEEDED)."""

from .enums import ibv_fork_status


def fork_init():
    """Nothing to set up: returns, as ibv_fork_init does when fork protection is unneeded."""


def is_fork_initialized():
    return ibv_fork_status.IBV_FORK_UNNEEDED
