"""Names of values as pyverbs' utils prints them, and GID helpers."""

import struct

from . import enums as e
from .pyverbs_error import PyverbsUserError


def be64toh(num):
    return struct.unpack("Q", struct.pack("!Q", num))[0]


def gid_str(subnet_prefix, interface_id):
    text = f"{be64toh(subnet_prefix):016x}{be64toh(interface_id):016x}"
    return ":".join(text[i:i + 4] for i in range(0, 32, 4))


def gid_str_to_array(val):
    groups = val.split(":")
    if len(groups) != 8 or any(len(g) != 4 for g in groups):
        raise PyverbsUserError(f"Invalid GID value ({groups})")
    return [g[i:i + 2] for g in groups for i in (0, 2)]


def qp_type_to_str(qp_type):
    names = {2: "RC", 3: "UC", 4: "UD", 8: "Raw Packet", 9: "XRCD_SEND", 10: "XRCD_RECV",
             0xff: "Driver QP"}
    return names.get(qp_type, f"Unknown ({qp_type})")


def qp_state_to_str(qp_state):
    names = {0: "Reset", 1: "Init", 2: "RTR", 3: "RTS", 4: "SQD", 5: "SQE", 6: "Error",
             7: "Unknown"}
    return names.get(qp_state, f"Unknown ({qp_state})")


def mtu_to_str(mtu):
    return {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}.get(mtu, 0)


def access_flags_to_str(flags):
    names = {1: "Local write", 2: "Remote write", 4: "Remote read", 8: "Remote atomic",
             16: "MW bind", 32: "Zero based", 64: "On demand"}
    return "".join(f"{name} " for bit, name in names.items() if flags & bit)


def mig_state_to_str(mig):
    return {0: "Migrated", 1: "Re-arm", 2: "Armed"}.get(mig, f"Unknown ({mig})")


def rereg_error_to_str(error):
    try:
        return e.ibv_rereg_mr_err_code(error).name
    except ValueError:
        return f"Unknown error ({error})"
