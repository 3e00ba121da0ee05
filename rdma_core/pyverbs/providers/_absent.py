"""Classes and names of a provider the simulated device is not."""

import errno

from .._sim import rdma_error
from ..base import PyverbsCM


def absent_class(name, provider, base=PyverbsCM):
    """A class `name` whose objects cannot be made: the device is not a `provider` device
    (EOPNOTSUPP, as a provider's direct verbs answer on another vendor's device)."""

    def __init__(self, *args, **kwargs):
        raise rdma_error(f"{name}: the simulated device is not an {provider} device",
                         errno.EOPNOTSUPP)

    return type(name, (base,), {"__init__": __init__, "__module__": "pyverbs.providers"})


def module_getattr(module, provider):
    """A module __getattr__ that makes a class of any CamelCase name asked for (so any
    import works) and refuses other names."""

    def __getattr__(name):
        if name[:1].isupper() and not name.isupper():
            return absent_class(name, provider)
        raise AttributeError(f"module {module!r} has no attribute {name!r} (the simulated "
                             f"device is not an {provider} device)")

    return __getattr__
