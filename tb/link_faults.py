"""Settings, counters and predictions for the lossy link model tb/hdl/sim_link_fault.v.

`LinkFaults` holds one configuration (latency, seed, fault rates, corruption kind, the packet
kinds and QP the rates aim at, forced faults by packet number). `apply(handle)` writes it into
a sim_link_fault instance (any cocotb handle of one, e.g. `dut.link`), `describe()` is a
one-line summary with the seed to print so a failure can be replayed, `stats(handle)` reads the
model's counters, and `plan(packets)` predicts, from the same generator as the HDL, the fault
each packet gets when the packets enter the link in that order after a reset.

    faults = LinkFaults(latency=500, seed=7, drop=0.1, kinds={"requests"})
    faults.apply(dut.link)
    log.info("link: %s", faults.describe())
"""

from dataclasses import dataclass, field

from cocotb.handle import Immediate

from .ib_crc import vcrc_bytes

ACTIONS = ("none", "drop", "dup", "corrupt", "delay", "reorder")     # codes 0..5 in the HDL
KINDS = ("requests", "acks", "read_responses")                       # kind_mask bits 0..2
CORRUPT_KINDS = ("icrc", "vcrc", "either")                           # corrupt_kind 0..2
RATE_ONE = 1 << 16          # rates are in 1/65536
FORCES = 8                  # entries of the model's forced-fault table
QPN_SET = 256               # QPNs the model can aim at (qpn_set bits)

_MASK64 = (1 << 64) - 1
_SEED_MIX = 0x9E3779B97F4A7C15


def _rate(name, value):
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} rate {value} is not a probability")
    return round(value * RATE_ONE)


def packet_kind(wire):
    """The kind filter a packet (wire bytes LRH..VCRC) falls under, by its BTH OpCode."""
    opcode = wire[bth_at(wire)]
    if 0x0D <= opcode <= 0x10:
        return "read_responses"
    if opcode in (0x11, 0x12):
        return "acks"
    return "requests"


def bth_at(wire):
    return 48 if wire[1] & 0x3 == 3 else 8


def dest_qp(wire):
    """The BTH DestQP of a packet's wire bytes."""
    at = bth_at(wire)
    return int.from_bytes(wire[at + 5:at + 8], "big")


def corrupt_wire(wire, kind, bit):
    """`wire` as the model corrupts it: bit `bit` (0..31) of the ICRC flipped and the VCRC
    recomputed ("icrc"), or bit `bit` (0..15) of the VCRC flipped ("vcrc"); bits count from
    the field's first byte on the wire, least significant bit first."""
    data = bytearray(wire)
    at = len(data) - (6 if kind == "icrc" else 2) + bit // 8
    data[at] ^= 1 << (bit % 8)
    if kind == "icrc":
        data[-2:] = vcrc_bytes(data[:-2])
    return bytes(data)


@dataclass(frozen=True)
class Decision:
    """The model's decision on one packet: its number since reset, the action, and for a
    corrupted packet the kind and the bit flipped."""
    index: int
    action: str
    corrupt_kind: str | None = None
    bit: int | None = None

    def apply(self, wire):
        """The bytes the link delivers for `wire` under a drop/dup/corrupt/none decision (a list:
        empty, one copy or two); delay and reorder change only when."""
        if self.action == "drop":
            return []
        if self.action == "dup":
            return [wire, wire]
        if self.action == "corrupt":
            return [corrupt_wire(wire, self.corrupt_kind, self.bit)]
        return [wire]


@dataclass
class LinkFaults:
    """One configuration of the link. Rates are probabilities (0..1) of each action per
    eligible packet, exclusive of each other (their sum at most 1). `kinds` and `qpns` (the
    BTH DestQPs aimed at, each below QPN_SET; None = any) choose the eligible packets; `forced` maps packet numbers (from 0 since reset, every
    packet counted) to an action name, applied whatever the rates and filters say.
    `delay_cycles` is the extra hold of a delayed packet and the longest a reordered packet
    waits for one to pass it. The defaults are a perfect link with no latency."""
    latency: int = 0
    seed: int = 1
    drop: float = 0.0
    dup: float = 0.0
    corrupt: float = 0.0
    delay: float = 0.0
    reorder: float = 0.0
    delay_cycles: int = 1000
    corrupt_kind: str = "icrc"
    kinds: frozenset = frozenset(KINDS)
    qpns: frozenset | None = None
    forced: dict = field(default_factory=dict)

    def __post_init__(self):
        self.kinds = frozenset(self.kinds)
        if self.qpns is not None:
            self.qpns = frozenset(self.qpns)
        self._registers()           # check everything now, not at apply

    def _registers(self):
        rates = {name: _rate(name, getattr(self, name))
                 for name in ("drop", "dup", "corrupt", "delay", "reorder")}
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
            force_act |= (ACTIONS.index(action) or 6) << (4 * entry)     # 6: forced none
        if not 0 <= self.latency < 1 << 32 or not 0 <= self.delay_cycles < 1 << 32:
            raise ValueError("latency and delay_cycles are 32-bit cycle counts")
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
        }

    def apply(self, handle):
        """Write this configuration into the sim_link_fault instance `handle` at once. The
        generator restarts from the seed at the model's reset, or now if the seed changed."""
        for name, value in self._registers().items():
            getattr(handle, name).value = Immediate(value)

    def describe(self):
        """One line: the seed and every setting that differs from a perfect link."""
        parts = [f"seed={self.seed}", f"latency={self.latency}"]
        for name in ("drop", "dup", "corrupt", "delay", "reorder"):
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
        """The model's counters (cleared by its reset) and its last decision, as a dict."""
        names = ("pkts_in", "pkts_out", "dropped", "duplicated", "corrupted", "delayed",
                 "reordered", "truncated", "in_flight", "last_idx", "last_opcode", "last_qpn",
                 "last_psn")
        stats = {name: int(getattr(handle, name).value) for name in names}
        stats["last_act"] = ACTIONS[int(handle.last_act.value)]
        if stats["last_idx"] == 0xFFFFFFFF:
            stats["last_idx"] = None        # nothing decided since reset
        return stats

    def plan(self, wires):
        """The decision the model takes for each packet (wire bytes LRH..VCRC, in the order
        they enter the link after a reset) under this configuration: a list of Decision."""
        regs = self._registers()
        state = regs["seed"] ^ _SEED_MIX or _SEED_MIX
        rates = [regs[f"{name}_rate"] for name in ("drop", "dup", "corrupt", "delay", "reorder")]
        decisions = []
        for index, wire in enumerate(wires):
            state ^= (state << 13) & _MASK64
            state ^= state >> 7
            state ^= (state << 17) & _MASK64
            action = "none"
            if packet_kind(wire) in self.kinds and (self.qpns is None
                                                     or dest_qp(wire) in self.qpns):
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
                bit = state >> 32 & (31 if kind == "icrc" else 15)
                if len(wire) < 6:
                    action, kind, bit = "none", None, None
            decisions.append(Decision(index, action, kind, bit))
        return decisions
