"""Settings, counters and predictions for the lossy link model tb/hdl/sim_link_fault.v.

`LinkFaults` holds one configuration (latency, seed, fault rates, corruption kind, the packet
kinds and QP the rates aim at, forced faults by packet number, and optionally the link layer).
`apply(handle)` writes it into a sim_link_fault instance (any cocotb handle of one, e.g.
`dut.link`), `describe()` is a one-line summary with the seed to print so a failure can be
replayed, `stats(handle)` reads the model's counters, and `plan(packets, link)` predicts, from
the same generator as the HDL, the fault each packet gets when the packets enter the link in
that order after a reset.

    faults = LinkFaults(latency=500, seed=7, drop=0.1, kinds={"requests"})
    faults.apply(dut.link)
    log.info("link: %s", faults.describe())

A cable carries InfiniBand packets (LRH .. VCRC) or, in Ethernet mode, RoCE v2 frames
(destination MAC .. FCS): the model must know which to find the BTH, the ICRC and the link CRC
(the VCRC, or the FCS). The harness sets the mode with `LinkFaults.set_link(cable, link)` when
the sending port's link layer is set (tb/rdma_tb.py RdmaTB.set_link); `apply` leaves it alone
unless the LinkFaults names a `link`, so faults a test applies keep an Ethernet cable Ethernet.
"""

from dataclasses import dataclass, field

from cocotb.handle import Immediate

from .ib_crc import fcs_bytes, vcrc_bytes
from .ib_packet import (ETH_HEADER_BYTES, ETH_MIN_FRAME, ETHERTYPE_IPV4, ETHERTYPE_IPV6,
                        ETHERTYPE_VLAN, FCS_BYTES, ICRC_BYTES, IPV4_HEADER_BYTES,
                        IPV6_HEADER_BYTES, LINKS, UDP_HEADER_BYTES, VCRC_BYTES,
                        VLAN_TAG_BYTES)

ACTIONS = ("none", "drop", "dup", "corrupt", "delay", "reorder", "mark")  # codes 0..6 in the HDL
FORCE_NONE = 7              # force_act code of a forced "none"
KINDS = ("requests", "acks", "read_responses")                       # kind_mask bits 0..2
CORRUPT_KINDS = ("icrc", "vcrc", "either")                           # corrupt_kind 0..2
RATE_ONE = 1 << 16          # rates are in 1/65536
FORCES = 8                  # entries of the model's forced-fault table
QPN_SET = 256               # QPNs the model can aim at (qpn_set bits)

_MASK64 = (1 << 64) - 1
_SEED_MIX = 0x9E3779B97F4A7C15
_ECN_CE = 0b11


def _rate(name, value):
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} rate {value} is not a probability")
    return round(value * RATE_ONE)


def _check_link(link):
    if link not in LINKS:
        raise ValueError(f"link {link!r} is not one of {LINKS}")


def packet_kind(wire, link="ib"):
    """The kind filter a packet (wire bytes, LRH..VCRC or an Ethernet frame) falls under, by
    its BTH OpCode."""
    opcode = wire[bth_at(wire, link)]
    if 0x0D <= opcode <= 0x10:
        return "read_responses"
    if opcode in (0x11, 0x12):
        return "acks"
    return "requests"


def _ip(wire):
    """(where the IP header of an Ethernet frame starts, its EtherType), past an 802.1Q tag."""
    ethertype = int.from_bytes(wire[12:14], "big")
    if ethertype == ETHERTYPE_VLAN:
        return ETH_HEADER_BYTES + VLAN_TAG_BYTES, int.from_bytes(wire[16:18], "big")
    return ETH_HEADER_BYTES, ethertype


def bth_at(wire, link="ib"):
    """Where the model finds the BTH: after the LRH, or the GRH when LNH is 3; on Ethernet
    after the Ethernet header, the IP header (IPv4 under EtherType 0x0800, IPv6 under any
    other) and UDP."""
    if link == "eth":
        ip_at, ethertype = _ip(wire)
        ip_bytes = IPV4_HEADER_BYTES if ethertype == ETHERTYPE_IPV4 else IPV6_HEADER_BYTES
        return ip_at + ip_bytes + UDP_HEADER_BYTES
    return 48 if wire[1] & 0x3 == 3 else 8


def dest_qp(wire, link="ib"):
    """The BTH DestQP of a packet's wire bytes."""
    at = bth_at(wire, link)
    return int.from_bytes(wire[at + 5:at + 8], "big")


def icrc_at(wire, link="ib"):
    """Where the ICRC starts: 4 bytes before the VCRC; on Ethernet 4 bytes before the end of
    the IP packet, by its IP header's length (a frame under 64 bytes pads after it)."""
    if link == "ib":
        return len(wire) - VCRC_BYTES - ICRC_BYTES
    ip_at, ethertype = _ip(wire)
    if ethertype == ETHERTYPE_IPV4:
        ip_end = ip_at + int.from_bytes(wire[ip_at + 2:ip_at + 4], "big")
    else:
        ip_end = ip_at + IPV6_HEADER_BYTES + int.from_bytes(wire[ip_at + 4:ip_at + 6], "big")
    return ip_end - ICRC_BYTES


def _link_crc_bytes(link):
    """The size of the link CRC: the VCRC's on InfiniBand, the FCS's on Ethernet."""
    return FCS_BYTES if link == "eth" else VCRC_BYTES


def corruptible(wire, kind, link="ib"):
    """Whether the model corrupts `wire` (else it passes unchanged, as action none): a packet
    of at least 6 bytes; on Ethernet a frame of at least 64 bytes whose ICRC ("icrc") ends
    before the FCS."""
    if link == "ib":
        return len(wire) >= 6
    return len(wire) >= ETH_MIN_FRAME and (
        kind != "icrc" or icrc_at(wire, link) + ICRC_BYTES <= len(wire) - FCS_BYTES)


def corrupt_wire(wire, kind, bit, link="ib"):
    """`wire` as the model corrupts it: bit `bit` (0..31) of the ICRC flipped and the link CRC
    recomputed ("icrc": only the ICRC is wrong), or bit `bit` of the link CRC flipped ("vcrc":
    0..15 of the VCRC on InfiniBand, 0..31 of the FCS on Ethernet); bits count from the
    field's first byte on the wire, least significant bit first."""
    data = bytearray(wire)
    crc_bytes = _link_crc_bytes(link)
    at = (icrc_at(wire, link) if kind == "icrc" else len(data) - crc_bytes) + bit // 8
    data[at] ^= 1 << (bit % 8)
    if kind == "icrc":
        data[-crc_bytes:] = (fcs_bytes if link == "eth" else vcrc_bytes)(data[:-crc_bytes])
    return bytes(data)


def _ones_add(a, b):
    total = a + b
    return (total & 0xFFFF) + (total >> 16)


def mark_wire(wire, link="ib"):
    """`wire` as a congested switch passes it on (RFC 3168): an ECN-capable (ECN 01 or 10)
    IPv4 or IPv6 Ethernet frame of at least 64 bytes marked CE (11), the IPv4 header checksum
    updated for the change (RFC 1624, eqn. 3, as the model does: a wrong one stays wrong) and
    the FCS recomputed; the ICRC is unchanged (ECN is masked out of it). Any other packet,
    every InfiniBand one among them (no ECN field), comes back unchanged."""
    if link != "eth" or len(wire) < ETH_MIN_FRAME:
        return wire
    ip_at, ethertype = _ip(wire)
    if ethertype not in (ETHERTYPE_IPV4, ETHERTYPE_IPV6):
        return wire
    shift = 0 if ethertype == ETHERTYPE_IPV4 else 4     # ECN: TOS[1:0] or traffic class[1:0]
    if (wire[ip_at + 1] >> shift & 3) not in (0b01, 0b10):
        return wire
    data = bytearray(wire)
    data[ip_at + 1] |= _ECN_CE << shift
    if ethertype == ETHERTYPE_IPV4:
        old = int.from_bytes(wire[ip_at:ip_at + 2], "big")
        new = int.from_bytes(data[ip_at:ip_at + 2], "big")
        checksum = int.from_bytes(wire[ip_at + 10:ip_at + 12], "big")
        updated = _ones_add(_ones_add(checksum ^ 0xFFFF, old ^ 0xFFFF), new) ^ 0xFFFF
        data[ip_at + 10:ip_at + 12] = updated.to_bytes(2, "big")
    data[-FCS_BYTES:] = fcs_bytes(data[:-FCS_BYTES])
    return bytes(data)


@dataclass(frozen=True)
class Decision:
    """The model's decision on one packet: its number since reset, the action, for a
    corrupted packet the kind and the bit flipped, and the link the packet crossed."""
    index: int
    action: str
    corrupt_kind: str | None = None
    bit: int | None = None
    link: str = "ib"

    def apply(self, wire):
        """The bytes the link delivers for `wire` under a drop/dup/corrupt/mark/none decision
        (a list: empty, one copy or two); delay and reorder change only when."""
        if self.action == "drop":
            return []
        if self.action == "dup":
            return [wire, wire]
        if self.action == "corrupt":
            return [corrupt_wire(wire, self.corrupt_kind, self.bit, self.link)]
        if self.action == "mark":
            return [mark_wire(wire, self.link)]
        return [wire]


@dataclass
class LinkFaults:
    """One configuration of the link. Rates are probabilities (0..1) of each action per
    eligible packet, exclusive of each other (their sum at most 1: a packet gets one action at
    most, so a marked packet is not also delayed). `kinds` and `qpns` (the BTH DestQPs aimed
    at, each below QPN_SET; None = any) choose the eligible packets; `forced` maps packet
    numbers (from 0 since reset, every packet counted) to an action name, applied whatever the
    rates and filters say. `delay_cycles` is the extra hold of a delayed packet and the
    longest a reordered packet waits for one to pass it.

    corrupt: `corrupt_kind` "icrc" flips an ICRC bit and recomputes the link CRC (only the ICRC
    is wrong), "vcrc" flips a bit of the link CRC, the VCRC on InfiniBand and the FCS on
    Ethernet (corrupt_wire), "either" draws one of them per packet. mark: an ECN-capable
    Ethernet frame leaves marked CE as a congested switch marks it (mark_wire); on InfiniBand,
    and for a frame that is not ECN-capable or already CE, a mark changes nothing and the
    packet counts as action none.

    `link` None leaves the link layer the cable has (RdmaTB.set_link sets it from the
    sending port's); "ib" or "eth" sets it. The defaults are a perfect link with no latency."""
    latency: int = 0
    seed: int = 1
    drop: float = 0.0
    dup: float = 0.0
    corrupt: float = 0.0
    delay: float = 0.0
    reorder: float = 0.0
    mark: float = 0.0
    delay_cycles: int = 1000
    corrupt_kind: str = "icrc"
    kinds: frozenset = frozenset(KINDS)
    qpns: frozenset | None = None
    forced: dict = field(default_factory=dict)
    link: str | None = None

    def __post_init__(self):
        self.kinds = frozenset(self.kinds)
        if self.qpns is not None:
            self.qpns = frozenset(self.qpns)
        self._registers()           # check everything now, not at apply

    def _registers(self):
        rates = {name: _rate(name, getattr(self, name)) for name in ACTIONS[1:]}
        if sum(rates.values()) > RATE_ONE:
            raise ValueError(f"fault rates add up to more than 1: {rates}")
        if self.corrupt_kind not in CORRUPT_KINDS:
            raise ValueError(f"corrupt_kind {self.corrupt_kind!r} is not one of {CORRUPT_KINDS}")
        unknown = self.kinds - set(KINDS)
        if unknown:
            raise ValueError(f"unknown packet kinds {sorted(unknown)}, known: {KINDS}")
        if self.qpns is not None and not all(0 <= q < QPN_SET for q in self.qpns):
            raise ValueError(f"QPNs {sorted(self.qpns)}: the model aims at QPNs below {QPN_SET}")
        if len(self.forced) > FORCES:
            raise ValueError(f"{len(self.forced)} forced faults, the model holds {FORCES}")
        force_idx = force_act = 0
        for entry, (index, action) in enumerate(sorted(self.forced.items())):
            if action not in ACTIONS or not 0 <= index < 1 << 32:
                raise ValueError(f"forced fault {index}: {action!r}")
            force_idx |= index << (32 * entry)
            force_act |= (ACTIONS.index(action) or FORCE_NONE) << (4 * entry)
        if not 0 <= self.latency < 1 << 32 or not 0 <= self.delay_cycles < 1 << 32:
            raise ValueError("latency and delay_cycles are 32-bit cycle counts")
        if self.link is not None:
            _check_link(self.link)
        return {
            "latency": self.latency,
            "seed": self.seed & _MASK64,
            **{f"{name}_rate": value for name, value in rates.items()},
            "corrupt_kind": CORRUPT_KINDS.index(self.corrupt_kind),
            "delay_cycles": self.delay_cycles,
            "kind_mask": sum(1 << KINDS.index(kind) for kind in self.kinds),
            "qpn_set_en": int(self.qpns is not None),
            "qpn_set": sum(1 << q for q in self.qpns or ()),
            "force_idx": force_idx,
            "force_act": force_act,
            **({} if self.link is None else {"link_eth": int(self.link == "eth")}),
        }

    def apply(self, handle):
        """Write this configuration into the sim_link_fault instance `handle` at once. The
        generator restarts from the seed at the model's reset, or now if the seed changed. The
        cable's link layer changes only if this LinkFaults names one."""
        for name, value in self._registers().items():
            getattr(handle, name).value = Immediate(value)

    @staticmethod
    def set_link(handle, link):
        """Make the sim_link_fault instance `handle` read its packets as `link` ("ib" or "eth")
        from now on, its faults unchanged."""
        _check_link(link)
        handle.link_eth.value = Immediate(int(link == "eth"))

    def describe(self):
        """One line: the seed and every setting that differs from a perfect link."""
        parts = [f"seed={self.seed}", f"latency={self.latency}"]
        if self.link is not None:
            parts.append(f"link={self.link}")
        for name in ACTIONS[1:]:
            if getattr(self, name):
                parts.append(f"{name}={getattr(self, name):.4g}")
        if self.corrupt:
            parts.append(f"corrupt_kind={self.corrupt_kind}")
        if self.delay or self.reorder or "delay" in self.forced.values() \
                or "reorder" in self.forced.values():
            parts.append(f"delay_cycles={self.delay_cycles}")
        if self.kinds != frozenset(KINDS):
            parts.append(f"kinds={'+'.join(k for k in KINDS if k in self.kinds) or 'none'}")
        if self.qpns is not None:
            parts.append("qpns=" + ",".join(f"{q:#x}" for q in sorted(self.qpns)))
        if self.forced:
            parts.append("forced=" + ",".join(f"{i}:{a}" for i, a in sorted(self.forced.items())))
        return "LinkFaults(" + " ".join(parts) + ")"

    @staticmethod
    def stats(handle):
        """The model's counters (cleared by its reset), its last decision and its link layer,
        as a dict."""
        names = ("pkts_in", "pkts_out", "dropped", "duplicated", "corrupted", "delayed",
                 "reordered", "marked", "truncated", "in_flight", "last_idx", "last_opcode",
                 "last_qpn", "last_psn")
        stats = {name: int(getattr(handle, name).value) for name in names}
        stats["last_act"] = ACTIONS[int(handle.last_act.value)]
        stats["link"] = LINKS[int(handle.link_eth.value)]
        if stats["last_idx"] == 0xFFFFFFFF:
            stats["last_idx"] = None        # nothing decided since reset
        return stats

    def plan(self, wires, link=None):
        """The decision the model takes for each packet (wire bytes, in the order they enter
        the link after a reset) under this configuration: a list of Decision. `link` is the
        link layer the packets crossed: by default this LinkFaults' own, else InfiniBand."""
        link = link or self.link or "ib"
        _check_link(link)
        regs = self._registers()
        state = regs["seed"] ^ _SEED_MIX or _SEED_MIX
        rates = [regs[f"{name}_rate"] for name in ACTIONS[1:]]
        decisions = []
        for index, wire in enumerate(wires):
            state ^= (state << 13) & _MASK64
            state ^= state >> 7
            state ^= (state << 17) & _MASK64
            action = "none"
            if packet_kind(wire, link) in self.kinds and (
                    self.qpns is None or dest_qp(wire, link) in self.qpns):
                draw, bound = state >> 48, 0
                for name, rate in zip(ACTIONS[1:], rates):
                    bound += rate
                    if draw < bound:
                        action = name
                        break
            action = self.forced.get(index, action)
            kind = bit = None
            if action == "corrupt":
                kind = self.corrupt_kind
                if kind == "either":
                    kind = "vcrc" if state >> 40 & 1 else "icrc"
                bit = state >> 32 & (15 if kind == "vcrc" and link == "ib" else 31)
                if not corruptible(wire, kind, link):
                    action, kind, bit = "none", None, None
            if action == "mark" and mark_wire(wire, link) == wire:
                action = "none"
            decisions.append(Decision(index, action, kind, bit, link))
        return decisions
