"""pyverbs' exceptions. PyverbsRDMAError carries the errno a verb failed with; the suite
skips a test when a verb answers EOPNOTSUPP, which is how this layer reports a feature the
simulated device does not have."""

import os


class PyverbsError(Exception):
    """Every pyverbs error. With an `error_code` the message says which errno it was, as
    pyverbs words it ("<msg>. Errno: 22, Invalid argument")."""

    def __init__(self, msg, error_code=-1):
        if error_code != -1:
            msg = f"{msg}. Errno: {error_code}, {os.strerror(error_code)}"
        super().__init__(msg)


class PyverbsRDMAError(PyverbsError):
    """A verb failed; `error_code` is its errno (negative where libibverbs returns -errno)."""

    def __init__(self, msg, error_code=-1):
        super().__init__(msg, error_code)
        self._error_code = error_code

    @property
    def error_code(self):
        return self._error_code


class PyverbsUserError(PyverbsError):
    """The caller got something wrong before any verb ran."""

    def __init__(self, msg):
        super().__init__(msg)
