"""Scoreboard: compares rdma_dev against the reference model.

Completions are checked as the program polls them: each one against the next prediction for
its (CQ, QP, send/receive) queue. Completions of different queues may interleave in any
order; within one queue the order is the contract. `await check()` then settles the rest:
every predicted completion arrived and nothing else did, each QP's state and ring indices,
each SRQ's indices, limit and limit events,
the expected image of every tracked range (registered regions, WQE rings), the allocator's
guard bytes, the counters, the AXI rules on the host-memory bus (when the memory checks them,
as the harnesses' sim_axi_ram does), and the packets each link carried (when given the links'
sniffers): every one decodes and passes its CRC and length checks, and they are the model's
packets.

    sb = Scoreboard(dev)   # before dev.open(): the model has to see everything
    await dev.open()
    ...                    # the RDMA program, polling its CQs as it likes
    await sb.check()
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from dataclasses import asdict, fields
from enum import IntEnum, IntFlag

import numpy as np
from cocotb.triggers import ClockCycles

from . import coverage
from .model import Model
from .verbs import Counters, Observer, PortCounter

DIFF_CONTEXT = 16  # bytes shown from the first difference
SETTLE_CYCLES = 2000  # a quiet link for this long: every packet it carried has been stored
# what a port that discards answers sends, and so what its far end receives, is not predicted
_XMIT_COUNTERS = {c for c in PortCounter if c.name.startswith(("XMIT_PKTS", "XMIT_DATA",
                                                                "XMIT_DISCARDS"))}
_RCV_COUNTERS = {c for c in PortCounter if c.name.startswith(("RCV_PKTS", "RCV_DATA"))}
_ANSWERS = ("RDMA_READ_RESPONSE", "ACKNOWLEDGE", "ATOMIC_ACKNOWLEDGE")   # BTH operations


def _fmt(name, value):
    if name == "wr_id":
        return f"{value:#x}"
    if isinstance(value, (IntEnum, IntFlag)):
        return f"{value.name or 0}({int(value)})"
    return str(value)


def _closest(want, others):
    """How the unexpected packet that looks like `want` (the same summary) differs from it."""
    for other in others:
        if other.summary() == want.summary():
            diffs = [f"{name} {getattr(want, name)} vs {getattr(other, name)}"
                     for name in vars(want) if getattr(want, name) != getattr(other, name)]
            return " (the unexpected one like it differs: " + "; ".join(diffs) + ")"
    return ""


def _describe(values):
    return " ".join(f"{name}={_fmt(name, value)}" for name, value in values.items())


def _bytes_diff(label, addr, want, got):
    """None when equal, else where and how `got` differs from `want`."""
    if want == got:
        return None
    differ = np.flatnonzero(np.frombuffer(want, dtype=np.uint8)
                            != np.frombuffer(got, dtype=np.uint8))
    first = int(differ[0])
    return (f"{label} [{addr:#x}, +{len(want):#x}): {len(differ)} byte(s) differ, first at "
            f"offset {first:#x} (host {addr + first:#x}): expected "
            f"{want[first:first + DIFF_CONTEXT].hex(' ')}, got "
            f"{got[first:first + DIFF_CONTEXT].hex(' ')}")


class Scoreboard(Observer):
    def __init__(self, dev, model=None, links=None, cables=None):
        self.dev = dev
        self.model = model or Model()
        self.links = links or {}    # port -> LinkSniffer on its TX link
        self.cables = cables or {}  # port -> the cable model (sim_link_fault) its TX link feeds
        self._cable_out = 0         # packets the cables had delivered at the last look
        dev.observers += [self.model, self, coverage.DriverCoverage()]
        self.model.listeners.append(coverage.on_send_completed)
        for sniffer in self.links.values():
            sniffer.add_callback(coverage.on_capture)
        self.matched = 0
        self.limit_events = Counter()   # SRQ number -> SRQ_LIMIT_REACHED events the driver read
        self._looped = 0            # Model.looped at the last check
        self.peers = {}             # port -> (Scoreboard, port) at the far end of its cable

    def cable(self, port, far, far_port):
        """Port `port`'s link leads to `far_port` of the device `far` (a Scoreboard, maybe
        this one) checks."""
        self.model.cable(port, far.model, far_port)
        self.peers[port] = (far, far_port)
        far.peers[far_port] = (self, port)

    def cables_lossy(self, arrivals):
        """This device's cables lose, duplicate, corrupt or reorder packets: the model stops
        predicting packets and counters (Model.links_lossy), and the UC and UD packets reach
        the far end's model as `arrivals` (port -> the LinkSniffer at the far end of that
        port's cable: RdmaTB.watch_arrivals) see them arrive, not when sent (Model.arrived)."""
        self.model.links_lossy()
        for port, sniffer in arrivals.items():
            far, far_port = self.peers[port]
            self.model.arriving.add(port)
            sniffer.add_callback(lambda capture, model=far.model, at=far_port:
                                 model.arrived(at, capture))

    def on_async_event(self, event, index):
        self.limit_events[index] += 1

    def on_poll_cq(self, cq, wcs):
        for wc in wcs:
            self._match(cq.cqn, wc)

    def _match(self, cqn, wc):
        queue = self.model.expected.get((cqn, wc.qp_num, wc.is_recv))
        if not queue:
            kind = "receive" if wc.is_recv else "send"
            raise AssertionError(f"CQ {cqn}: unexpected {kind} completion for QP {wc.qp_num}: "
                                 f"{_describe(asdict(wc))}{self._outstanding(cqn)}")
        expected = queue.popleft()
        diffs = [f"{name} expected {_fmt(name, want)}, got {_fmt(name, getattr(wc, name))}"
                 for name, want in expected.fields.items() if getattr(wc, name) != want]
        if diffs:
            raise AssertionError(f"CQ {cqn}: {expected.what}: {'; '.join(diffs)}\n"
                                 f"  completion: {_describe(asdict(wc))}")
        self.matched += 1

    def _outstanding(self, cqn):
        lines = [f"\n  predicted next on CQ {cqn}: {q[0].what}"
                 for (c, _, _), q in self.model.expected.items() if c == cqn and q]
        return "".join(lines) or f"\n  nothing is predicted on CQ {cqn}"

    async def check(self, timeout=100):
        """Wait (up to `timeout` event waits per CQ) for the predicted completions and for the
        links to fall quiet, then compare everything; raises AssertionError listing every
        failure."""
        # the links into this device first: a UC or UD packet still on a cable that delivers
        # packets as they arrive (cables_lossy) has no prediction yet
        await self._settle()
        await self._drain(timeout)
        await self._settle()
        coverage.save()
        # the far ends' discards too: they make this device's requests to them unpredictable
        # (every test lets the traffic of both devices end before its first check)
        discarding = set()
        for sb in {self, *(far for far, _ in self.peers.values())}:
            discarding |= {(sb, port) for port in await sb._loosen_discarded()}
        failures = (self._missing() + await self._qp_failures() + await self._srq_failures()
                    + self._memory_failures()
                    + self._guard_failures() + await self._counter_failures(discarding)
                    + self._wire_failures() + self._bus_failures())
        if failures:
            raise AssertionError(f"scoreboard: {len(failures)} failure(s)\n  "
                                 + "\n  ".join(failures))

    def stop_predicting(self):
        """For tests in which the testbench plays the far end itself: the model cannot predict
        that traffic, so from now on neither it nor the completion matching watches the
        driver; check_device() still applies."""
        self.dev.observers = [o for o in self.dev.observers if o not in (self.model, self)]

    def check_device(self):
        """What holds whatever the far end did, for tests in which the testbench plays the far
        end and checks the traffic itself: no AXI protocol error, no guard byte changed."""
        failures = self._guard_failures() + self._bus_failures()
        if failures:
            raise AssertionError(f"scoreboard: {len(failures)} failure(s)\n  "
                                 + "\n  ".join(failures))

    async def _drain(self, timeout):
        for cq in list(self.dev.cqs.values()):
            missing = sum(len(q) for (cqn, _, _), q in self.model.expected.items()
                          if cqn == cq.cqn)
            if missing:
                with contextlib.suppress(TimeoutError):  # reported by _missing()
                    await cq.wait(missing, timeout)
            await cq.poll()  # anything still there is unexpected, and _match says so

    async def _settle(self, quiet=SETTLE_CYCLES):
        """UC and UD complete a send once its packets have left, and an RC responder may
        still be storing: wait until no link has carried a beat for `quiet` cycles, time
        enough for the packets already taken to be stored. A cable stores up to 64 packets
        and a receiver slower than the link falls behind it: the quiet time also counts from
        the last packet a cable delivered. The links are this device's and those into it from
        the far ends of its cables. A port's internal loopback has no sniffer: when packets
        went that way since the last check (Model.looped), the quiet time counts from now."""
        ends = [self] + [far for far, _ in self.peers.values()]
        sniffers = list({id(s): s for sb in ends for s in sb.links.values()}.values())
        cables = list({id(c): c for sb in ends for c in sb.cables.values()}.values())
        if not sniffers:
            return
        now = lambda: int(sniffers[0].cycle.value)
        since = now() if self.model.looped != self._looped else 0
        self._looped = self.model.looped
        while True:
            delivered = sum(int(c.pkts_out.value) for c in cables)
            if delivered != self._cable_out:
                self._cable_out = delivered
                since = now()
            last = max([since] + [s.last_beat_cycle or 0 for s in sniffers])
            idle = now() - last
            if idle >= quiet:
                return
            await ClockCycles(sniffers[0].clock, quiet - idle)

    def _missing(self):
        return [f"missing on CQ {e.cqn}: {e.what}: {_describe(e.fields)}"
                for queue in self.model.expected.values() for e in queue]

    async def _qp_failures(self):
        failures = []
        for qpn, qp in self.dev.qps.items():
            want = self.model.qps[qpn]
            got = await qp.query()
            if got.state != want.state:
                failures.append(f"QP {qpn}: state expected {want.state.name}, got "
                                f"{_fmt('state', got.state)}")
            # The consumer indices count finished WQEs: the driver reuses ring slots up to
            # them, so a WQE still waiting for a receive (RNR) must not be counted yet.
            indices = [("sq_pi", want.sq_posted), ("rq_pi", want.rq_posted),
                       ("sq_ci", want.sq_done), ("rq_ci", want.rq_done)]
            for name, index in indices:
                if getattr(got, name) != index & 0xFFFF:
                    failures.append(f"QP {qpn}: {name} expected {index & 0xFFFF}, got "
                                    f"{getattr(got, name)}")
        return failures

    async def _srq_failures(self):
        await self.dev.collect_async_events()
        failures = []
        for srqn, srq in self.dev.srqs.items():
            want = self.model.srqs[srqn]
            got = await srq.query()
            for name, have, index in (("pi", got.pi, want.posted), ("ci", got.ci, want.taken),
                                      ("limit", got.limit, want.limit),
                                      ("limit events", self.limit_events[srqn],
                                       want.limit_events)):
                if have != index & 0xFFFF:
                    failures.append(f"SRQ {srqn}: {name} expected {index & 0xFFFF}, got {have}")
        return failures

    def _memory_failures(self):
        image = self.model.image
        for addr, length in image.undefined:
            image.write(addr, self.dev.read(addr, length))
        diffs = (_bytes_diff(label, addr, image.read(addr, length), self.dev.read(addr, length))
                 for addr, length, label in image.regions)
        failures = [d for d in diffs if d]
        if failures:
            failures.append("(the model sees host memory the program writes through dev.write "
                            "or MR.write, not through mem.write)")
        return failures

    def _bus_failures(self):
        errors = getattr(self.dev.mem, "protocol_errors", 0)
        return [f"host memory: {errors} AXI protocol error(s) by the device (sim_axi_ram)"
                ] if errors else []

    def _guard_failures(self):
        diffs = (_bytes_diff(f"guard {g.label}", g.addr, g.data, self.dev.read(g.addr, len(g.data)))
                 for g in self.dev.guards)
        return [d for d in diffs if d]

    def _link_diff(self, port, sniffer):
        """(missing, unexpected, every packet by its repr) of a port's link against the model,
        the packets of loose flows (Model.loose) left out."""
        loose = {qpn for p, qpn in self.model.loose if p == port}
        want = Counter(repr(p) for p in self.model.wire[port] if p.bth.dest_qp not in loose)
        got = Counter(repr(p) for p in sniffer.packets() if p.bth.dest_qp not in loose)
        packets = {repr(p): p for p in self.model.wire[port] + sniffer.packets()}
        return want - got, got - want, packets

    async def _loosen_discarded(self):
        """The ports that discarded answers: the receive path discards an ACK, NAK or READ
        response that finds the port's response queue full rather than wait, and counts it in
        PortXmitDiscards (rtl/transport/rx_engine.v). Which answers that hits depends on
        timing, and the requester's timer then resends what they answered: the answer flows of
        such a port that differ from the model's, and the request flows of its far end that
        do, become loose (Model.loosen, which pairs each with its other direction). Read from
        the counter whether or not this model still predicts its own packets, since the far
        end's model may."""
        ports = []
        for port in self.links:
            counted = (await self.dev.port_counters(port))[PortCounter.XMIT_DISCARDS_EXT] \
                - self.model.port_counters[port][PortCounter.XMIT_DISCARDS_EXT]
            if counted <= 0:
                continue
            ports.append(port)
            ends = [(self, port, True)]
            if port in self.peers:
                ends.append((*self.peers[port], False))
            for sb, p, answers in ends:
                missing, unexpected, packets = sb._link_diff(p, sb.links[p])
                flows = {packets[k].bth.dest_qp for k in missing + unexpected
                         if (packets[k].op.operation in _ANSWERS) == answers}
                for qpn in flows:
                    sb.model.loosen(p, qpn)
                if flows:
                    logging.getLogger("cocotb.scoreboard").info(
                        "port %d discarded %d answer(s): port %d's %s to QPs %s not compared",
                        port, counted, p, "answers" if answers else "requests",
                        ", ".join(f"{q:#x}" for q in sorted(flows)))
        return ports

    async def _counter_failures(self, discarding):
        """The device counters, and each port's counters against the model's. `discarding`:
        the (scoreboard, port) pairs that discarded answers; that port's transmit counts and
        its far end's receive counts are not predicted."""
        got = await self.dev.read_counters() - self.dev.counters_at_open
        want = self.model.counters
        failures = [f"counter {f.name.upper()}: expected +{getattr(want, f.name)}, got "
                    f"+{getattr(got, f.name)}"
                    for f in fields(Counters) if getattr(got, f.name) != getattr(want, f.name)]
        if not self.model.wire_exact:
            return failures     # the device's RNR retries on the wire are not predictable
        skip = set()
        for port in self.links:
            if (self, port) in discarding:
                skip |= {(port, c) for c in _XMIT_COUNTERS}
            if self.peers.get(port) in discarding:
                skip |= {(port, c) for c in _RCV_COUNTERS}
        for port, predicted in self.model.port_counters.items():
            actual = await self.dev.port_counters(port)
            predicted = {c: v for c, v in predicted.items() if (port, c) not in skip}
            if self.model.loose:
                # flows with packets not predicted one by one only add packets
                failures += [f"port {port} {counter.name}: expected at least {value}, got "
                             f"{actual[counter]}"
                             for counter, value in predicted.items() if actual[counter] < value]
            else:
                failures += [f"port {port} {counter.name}: expected {value}, got "
                             f"{actual[counter]}"
                             for counter, value in predicted.items() if actual[counter] != value]
        return failures

    def _wire_failures(self):
        """The packets on each link against the model's, as multisets: the order of one
        port's requests and its answers to the other port depends on timing. The packets of
        loose flows (Model.loose) are left out."""
        failures = []
        for port, sniffer in self.links.items():
            failures += [f"port {port} link: {c.error} (cycle {c.cycle}, {len(c.data)} bytes)"
                         for c in sniffer.errors() if not c.aborted]
            aborted = sum(c.aborted for c in sniffer.captures)
            if aborted != self.model.aborted[port]:
                failures.append(f"port {port} link: {aborted} packets aborted, expected "
                                f"{self.model.aborted[port]}")
            if not self.model.wire_exact:
                continue
            missing, unexpected, packets = self._link_diff(port, sniffer)
            failures += [f"port {port} link: missing {n} x {packets[k].summary()}"
                         + _closest(packets[k], [packets[u] for u in unexpected])
                         for k, n in missing.items()]
            failures += [f"port {port} link: unexpected {n} x {packets[k].summary()}"
                         for k, n in unexpected.items()]
        return failures
