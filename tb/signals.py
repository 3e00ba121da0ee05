"""Fast access to wide HDL vectors, for the testbench parts that move many bits at once (the
host-memory back door, the link taps): straight through the GPI object under cocotb's handle,
as a Python int, because cocotb's LogicArray round trip costs several times more per access."""

NO_DELAY = 3    # the GPI's "set without delay" action, what cocotb.handle.Immediate uses
_ZEROS = str.maketrans("xXzZ", "0000")


def read_int(obj):
    """The value of the GPI object `obj` (a handle's `_handle`); X and Z bits read as 0."""
    bits = obj.get_signal_val_binstr()
    try:
        return int(bits, 2)
    except ValueError:
        return int(bits.translate(_ZEROS), 2)


def write_int(obj, value, width):
    """Set the GPI object `obj` of `width` bits to `value` at once (readable right after)."""
    obj.set_signal_val_binstr(NO_DELAY, format(value, f"0{width}b"))
