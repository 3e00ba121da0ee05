"""Flow steering specifications (ibv_flow_spec_*): what a Flow matches on. They are data only;
the device has no flow steering (flow.Flow refuses), so nothing here reaches it. Addresses
are kept as the text they are given in; a field not given matches anything (mask 0)."""

from .base import PyverbsObject
from .enums import ibv_flow_spec_type
from .pyverbs_error import PyverbsError

U32_MASK = 0xFFFFFFFF


class Spec(PyverbsObject):
    """One specification: its type (IBV_FLOW_SPEC_*, with IBV_FLOW_SPEC_INNER for an inner
    header) and `size`, the size of its C struct."""

    spec_type = 0
    size = 0

    def __init__(self, is_inner=False):
        super().__init__()
        if is_inner:
            self.spec_type = self.spec_type | ibv_flow_spec_type.IBV_FLOW_SPEC_INNER

    @staticmethod
    def type_to_str(spec_type):
        inner = "inner " if spec_type & ibv_flow_spec_type.IBV_FLOW_SPEC_INNER else ""
        base = spec_type & ~ibv_flow_spec_type.IBV_FLOW_SPEC_INNER
        try:
            return inner + ibv_flow_spec_type(base).name.removeprefix("IBV_FLOW_SPEC_")
        except ValueError:
            return f"{inner}unknown spec type {base:#x}"


def _match(value, mask, empty=0):
    """(value, mask) of one field: not given, it matches anything."""
    return (empty, empty if isinstance(empty, str) else 0) if value is None else (value, mask)


class EthSpec(Spec):
    MAC_LEN = 6
    MAC_MASK = "ff:ff:ff:ff:ff:ff"
    ZERO_MAC = [0] * 6
    spec_type = ibv_flow_spec_type.IBV_FLOW_SPEC_ETH
    size = 40

    def __init__(self, dst_mac=None, dst_mac_mask=MAC_MASK, src_mac=None,
                 src_mac_mask=MAC_MASK, ether_type=None, ether_type_mask=0xFFFF,
                 vlan_tag=None, vlan_tag_mask=0xFFFF, is_inner=False):
        super().__init__(is_inner)
        self.dst_mac, self.dst_mac_mask = _match(dst_mac, dst_mac_mask, "")
        self.src_mac, self.src_mac_mask = _match(src_mac, src_mac_mask, "")
        self.ether_type, self.ether_type_mask = _match(ether_type, ether_type_mask)
        self.vlan_tag, self.vlan_tag_mask = _match(vlan_tag, vlan_tag_mask)


class Ipv4ExtSpec(Spec):
    spec_type = ibv_flow_spec_type.IBV_FLOW_SPEC_IPV4_EXT
    size = 32

    def __init__(self, dst_ip=None, dst_ip_mask="255.255.255.255", src_ip=None,
                 src_ip_mask="255.255.255.255", proto=None, proto_mask=0xFF, tos=None,
                 tos_mask=0xFF, ttl=None, ttl_mask=0xFF, flags=None, flags_mask=0xFF,
                 is_inner=False):
        super().__init__(is_inner)
        self.dst_ip, self.dst_ip_mask = _match(dst_ip, dst_ip_mask, "0.0.0.0")
        self.src_ip, self.src_ip_mask = _match(src_ip, src_ip_mask, "0.0.0.0")
        self.proto, self.proto_mask = _match(proto, proto_mask)
        self.tos, self.tos_mask = _match(tos, tos_mask)
        self.ttl, self.ttl_mask = _match(ttl, ttl_mask)
        self.flags, self.flags_mask = _match(flags, flags_mask)


class Ipv6Spec(Spec):
    EMPTY_IPV6 = [0] * 16
    FLOW_LABEL_MASK = 0xFFFFF
    IPV6_MASK = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
    spec_type = ibv_flow_spec_type.IBV_FLOW_SPEC_IPV6
    size = 88

    def __init__(self, dst_ip=None, dst_ip_mask=IPV6_MASK, src_ip=None, src_ip_mask=IPV6_MASK,
                 flow_label=None, flow_label_mask=FLOW_LABEL_MASK, next_hdr=None,
                 next_hdr_mask=0xFF, traffic_class=None, traffic_class_mask=0xFF,
                 hop_limit=None, hop_limit_mask=0xFF, is_inner=False):
        super().__init__(is_inner)
        self.dst_ip, self.dst_ip_mask = _match(dst_ip, dst_ip_mask, "::")
        self.src_ip, self.src_ip_mask = _match(src_ip, src_ip_mask, "::")
        self.flow_label, self.flow_label_mask = _match(flow_label, flow_label_mask)
        self.next_hdr, self.next_hdr_mask = _match(next_hdr, next_hdr_mask)
        self.traffic_class, self.traffic_class_mask = _match(traffic_class, traffic_class_mask)
        self.hop_limit, self.hop_limit_mask = _match(hop_limit, hop_limit_mask)


class TcpUdpSpec(Spec):
    size = 16

    def __init__(self, spec_type, dst_port=None, dst_port_mask=0xFFFF, src_port=None,
                 src_port_mask=0xFFFF, is_inner=False):
        if spec_type not in (ibv_flow_spec_type.IBV_FLOW_SPEC_TCP,
                             ibv_flow_spec_type.IBV_FLOW_SPEC_UDP):
            raise PyverbsError(f"TcpUdpSpec: the spec type is IBV_FLOW_SPEC_TCP or "
                               f"IBV_FLOW_SPEC_UDP, not {spec_type}")
        self.spec_type = spec_type
        super().__init__(is_inner)
        self.dst_port, self.dst_port_mask = _match(dst_port, dst_port_mask)
        self.src_port, self.src_port_mask = _match(src_port, src_port_mask)
