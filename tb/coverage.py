"""Functional coverage of rdma_dev (cocotb-coverage): what the tests actually made the device do.

Sampled in every simulation, from the places that know the facts:
  - every send WR the reference model completes (`Model.listeners`): opcode, transport, path
    (bypass, wire, internal loopback, or none when it failed or was flushed before leaving),
    size class against the path MTU, source/destination byte alignment, completion status;
  - every register access and every command result (a driver observer);
  - every packet a link sniffer captured (ACK and NAK syndromes, READ responses);
  - every bad packet a test injected and saw dropped and counted (`sample_drop`);
  - at each check, the DMA engine's concurrency as the harness watched it (tb/hdl/
    sim_dma_watch.v: how many movers had commands at once, which had one beside another)
    and the host memory's timing (`tb/rdma_tb.py`, MEM_TIMINGS).

With FUNCTIONAL_COVERAGE=1 each simulation writes its database to sim/out/coverage/<run>.yml after each
scoreboard check; `python -m tb.coverage sim/out/coverage` (`make coverage`) merges them,
prints a table and the holes, and writes sim/out/coverage.yml. A bin the device cannot
produce is marked impossible by a rule below, with the reason; every other bin should be hit
(the report is a target, like the benchmarks': a hole does not fail the run).
"""

import os
import sys
from collections import defaultdict
from pathlib import Path

from cocotb_coverage.coverage import CoverCross, CoverPoint, coverage_db

from .ib_packet import ROCE_OPCODES as PACKET_OPCODES     # InfiniBand's and the CNP
from .verbs import (
    MTU, PORT_COUNTERS_STRIDE, PORT_STRIDE, Cmd, CmdResult, Observer, PortCounter, PortReg,
    QPType, Reg, WCStatus, WROpcode,
)

OUT = Path(__file__).resolve().parent.parent / "sim" / "out"
MIB = 1 << 20

WR_OPCODES = [op.name for op in WROpcode] + ["invalid"]     # invalid: no verbs opcode
TRANSPORTS = [t.name for t in QPType]
PATHS = ["bypass", "wire", "internal", "none"]
SIZES = ["0", "1", "<mtu", "=mtu", "multi", ">=1MiB"]
ALIGNS = ["both aligned", "same offset", "different offsets"]
SGE_COUNTS = ["1", "2", "3", "4"]
STATUSES = [s.name for s in WCStatus]
MTUS = [m.size for m in MTU]
RECV_QUEUES = ["QP", "SRQ"]      # where the SEND's receive WQE came from

# ---------------------------------------------------------------------------------------------
# Bins the device cannot produce, and why: per cover item, a rule from a bin (a tuple for a
# cross) to the reason, or None, so that one rule covers a whole family of bins.

VERBS_ONLY_STATUSES = ("LOC_EEC_OP_ERR", "INV_EECN_ERR", "INV_EEC_STATE_ERR",
               "LOC_RDD_VIOL_ERR", "REM_ABORT_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR",
               "BAD_RESP_ERR", "REM_INV_RD_REQ_ERR", "LOC_ACCESS_ERR")


def _why_status(status):
    if status in VERBS_ONLY_STATUSES:
        return ("a verbs status of features the device does not have (RD/EEC, ODP, SRQ) or "
                "that no check of the device yields (docs/semantics.md)")
    return None


def _why_opcode_transport(opcode, transport):
    if transport == "UD" and opcode not in ("SEND", "SEND_WITH_IMM"):
        return "UD carries SENDs only (the requester refuses the rest, LOC_QP_OP_ERR)"
    if transport == "UC" and opcode == "RDMA_READ":
        return "UC has no RDMA READ (the requester refuses it, LOC_QP_OP_ERR)"
    if transport == "UC" and opcode.startswith("ATOMIC"):
        return "atomics are RC only (the requester refuses them, LOC_QP_OP_ERR)"
    if transport == "UC" and opcode == "SEND_WITH_INV":
        return "SEND with invalidate is RC only (the requester refuses it, LOC_QP_OP_ERR)"
    return None


MW_OPCODES = ("BIND_MW", "LOCAL_INV")


def _why_wr_cross(opcode, transport, path):
    why = ("an invalid opcode is refused by the requester" if opcode == "invalid"
           else "a memory-window WR is carried out by the requester" if opcode in MW_OPCODES
           else _why_opcode_transport(opcode, transport))
    if why and path != "none":
        return why + ": it never leaves the requester"
    return None


def _why_size(transport, path, size):
    if transport == "UD" and size in ("multi", ">=1MiB") and path != "none":
        return "a UD message fits one packet: longer ones complete LOC_LEN_ERR, before any path"
    return None


IMPOSSIBLE_RULES = {
    "rdma.wr.status": lambda b: _why_status(b),
    "rdma.wr.opcode_transport_path": lambda b: _why_wr_cross(*b),
    "rdma.wr.transport_path_size": lambda b: _why_size(*b),
    "rdma.wr.status_transport": lambda b: _why_status(b[0]) or _why_status_transport(*b),
    "rdma.wr.recv_sges_path": lambda b: (
        "a receive is reached only by a message that left the requester" if b[1] == "none"
        else None),
    "rdma.wr.recv_queue_transport_path": lambda b: (
        "a receive is reached only by a message that left the requester" if b[2] == "none"
        else None),
    "rdma.cmd.command_result": lambda b: _why_command(*b),
    "rdma.link.aeth": lambda b: _why_aeth(b),
}


def _why_status_transport(status, transport):
    remote = ("REM_ACCESS_ERR", "REM_INV_REQ_ERR", "REM_OP_ERR", "RETRY_EXC_ERR",
              "RNR_RETRY_EXC_ERR")
    if transport != "RC" and status in remote:
        return "only RC has a responder's answer: UC and UD senders never learn the far end's error"
    if transport == "UD" and status == "MW_BIND_ERR":
        return "memory windows are bound on connected QPs: UD refuses BIND_MW (LOC_QP_OP_ERR)"
    return None


def _why_command(command, result):
    if result == "BAD_STATE" and command != "MODIFY_QP":
        return "only MODIFY_QP has state transitions to refuse"
    if result == "BAD_PARAM" and command.startswith(("DESTROY", "DEREG", "DEALLOC", "QUERY")):
        return "the command has no parameters to refuse, only an index (docs/host-interface.md)"
    return None


def _why_aeth(kind):
    if kind == "NAK invalid RD request":
        return "no Reliable Datagram"
    return None


def impossible(item, bin_):
    rule = IMPOSSIBLE_RULES.get(item)
    return rule(bin_) if rule else None


# ---------------------------------------------------------------------------------------------
# Send WRs

def size_class(length, mtu):
    if length == 0:
        return "0"
    if length == 1:
        return "1"
    if length >= MIB:
        return ">=1MiB"
    if length < mtu:
        return "<mtu"
    return "=mtu" if length == mtu else "multi"


def align_class(src, dst):
    """Byte offsets within 64 bytes (the widest bus) of the source and destination buffers."""
    if src is None or dst is None:
        return None
    a, b = src % 64, dst % 64
    if a == b:
        return "both aligned" if a == 0 else "same offset"
    return "different offsets"


@CoverPoint("rdma.wr.opcode", xf=lambda r: r["opcode"], bins=WR_OPCODES)
@CoverPoint("rdma.wr.transport", xf=lambda r: r["transport"], bins=TRANSPORTS)
@CoverPoint("rdma.wr.path", xf=lambda r: r["path"], bins=PATHS)
@CoverPoint("rdma.wr.size", xf=lambda r: r["size"], bins=SIZES)
@CoverPoint("rdma.wr.align", xf=lambda r: r["align"], bins=ALIGNS)
@CoverPoint("rdma.wr.status", xf=lambda r: r["status"], bins=STATUSES)
@CoverPoint("rdma.wr.mtu", xf=lambda r: r["mtu"], bins=MTUS)
@CoverCross("rdma.wr.opcode_transport_path",
            items=["rdma.wr.opcode", "rdma.wr.transport", "rdma.wr.path"])
@CoverCross("rdma.wr.transport_path_size",
            items=["rdma.wr.transport", "rdma.wr.path", "rdma.wr.size"])
# an ATOMIC WRITE's source is its own WQE and its target 8-byte aligned: no alignment to vary
@CoverCross("rdma.wr.opcode_align", items=["rdma.wr.opcode", "rdma.wr.align"],
            ign_bins=[("invalid", None), ("ATOMIC_WRITE", None)]
            + [(op, None) for op in MW_OPCODES])
@CoverCross("rdma.wr.status_transport", items=["rdma.wr.status", "rdma.wr.transport"])
@CoverPoint("rdma.wr.sges", xf=lambda r: r["sges"], bins=SGE_COUNTS)
@CoverCross("rdma.wr.sges_path", items=["rdma.wr.sges", "rdma.wr.path"])
@CoverPoint("rdma.wr.recv_sges", xf=lambda r: r["recv_sges"], bins=SGE_COUNTS)
@CoverCross("rdma.wr.recv_sges_path", items=["rdma.wr.recv_sges", "rdma.wr.path"])
@CoverPoint("rdma.wr.recv_queue", xf=lambda r: r["recv_queue"], bins=RECV_QUEUES)
@CoverCross("rdma.wr.recv_queue_transport_path",
            items=["rdma.wr.recv_queue", "rdma.wr.transport", "rdma.wr.path"])
def _sample_wr(record):
    pass


def _host(model, key, iova):
    mr = model.mrs.get(key >> 8) if key is not None else None
    return mr.host_addr(iova) if mr is not None and mr.key == key else None


def on_send_completed(model, q, w, status):
    """Model listener: one send WR's fate."""
    wr = w.wr
    path = ("none" if not w.started else "bypass" if not w.wire
            else "internal" if w.internal else "wire")
    far = model if not w.wire or w.internal else model.links.get(q.port, (model, 0))[0]
    first = wr.sg_list[0] if wr.sg_list else None
    local = _host(model, first.lkey, first.addr) if first is not None else None
    if wr.opcode in (WROpcode.SEND, WROpcode.SEND_WITH_IMM, WROpcode.SEND_WITH_INV):
        sge = w.recv_sges[0] if w.recv_sges else None
        remote = _host(far, sge.lkey, sge.addr) if sge is not None else None
    else:
        remote = _host(far, wr.rkey, wr.remote_addr)
    src, dst = (remote, local) if wr.opcode == WROpcode.RDMA_READ else (local, remote)
    mtu = model._path_mtu(q)
    _sample_wr({
        "opcode": WROpcode(wr.opcode).name if wr.opcode in set(WROpcode) else "invalid", "transport": QPType(q.type).name, "path": path,
        "size": size_class(wr.length, mtu), "align": align_class(src, dst),
        "status": WCStatus(status).name, "mtu": mtu,
        "sges": str(min(max(len(wr.sg_list), 1), 4)),
        "recv_sges": str(min(len(w.recv_sges), 4)) if w.recv_sges else None,
        "recv_queue": ("SRQ" if w.recv_srq else "QP") if w.recv_sges else None,
    })


# ---------------------------------------------------------------------------------------------
# Registers and commands

_FIXED = {int(r): r.name for r in Reg if r < Reg.PORT_BASE}
_FIXED.update({Reg.LB_MSGS + 4: "LB_MSGS_HI", Reg.LB_BYTES + 4: "LB_BYTES_HI",
               Reg.CMD: "CMD", Reg.CMD_STATUS: "CMD_STATUS"})
_PORT = {int(r): f"PORT_{r.name}" for r in PortReg}
_PORT.update({PortReg.GID0 + 4 * i: f"PORT_GID{i}" for i in range(1, 4)})
_COUNTER = {int(c): f"PORT_COUNTER_{c.name}" for c in PortCounter}
_READ_ONLY = {"DEV_ID", "DEV_PARAMS", "DEV_PARAMS2", "REG_ERRORS", "CQ_OVERFLOWS", "LB_MSGS",
              "LB_MSGS_HI", "LB_BYTES", "LB_BYTES_HI", "CMD_STATUS"}
_WRITE_ONLY = {"CMD", "SQ_DB", "RQ_DB", "CQ_CI_DB", "CQ_ARM_DB", "SRQ_DB", "PORT_COUNTER_CLEAR"}
_ALL = set(_FIXED.values()) | set(_PORT.values()) | set(_COUNTER.values()) | {
    "CMD_DATA", "SQ_DB", "RQ_DB", "CQ_CI_DB", "CQ_ARM_DB", "SRQ_DB"}
NOT_READABLE, NOT_WRITABLE = "write-only or unmapped", "read-only or unmapped"
READ_BINS = sorted(_ALL - _WRITE_ONLY) + [NOT_READABLE]
WRITE_BINS = sorted(_ALL - _READ_ONLY) + [NOT_WRITABLE]


def register_name(offset):
    """The register map's name for a byte offset (docs/host-interface.md), None if unmapped."""
    if offset in _FIXED:
        return _FIXED[offset]
    if Reg.CMD_DATA <= offset < Reg.CMD_DATA + 64:
        return "CMD_DATA"
    if Reg.PORT_BASE <= offset < Reg.CMD_DATA:
        return _PORT.get((offset - Reg.PORT_BASE) % PORT_STRIDE)
    if Reg.PORT_COUNTERS <= offset < Reg.SQ_DB:
        index = ((offset - Reg.PORT_COUNTERS) % PORT_COUNTERS_STRIDE) // 4
        if PortCounter.XMIT_DATA_EXT < index < PortCounter.XMIT_DISCARDS_EXT + 2 and index & 1:
            index -= 1      # the high word of a 64-bit counter
        return _COUNTER.get(index)
    if Reg.SQ_DB <= offset < Reg.CQ_CI_DB:
        return "RQ_DB" if offset & 4 else "SQ_DB"
    if Reg.CQ_CI_DB <= offset < Reg.SRQ_DB:
        return "CQ_ARM_DB" if offset & 4 else "CQ_CI_DB"
    if Reg.SRQ_DB <= offset < Reg.SRQ_DB + 0x1000 and not offset & 4:
        return "SRQ_DB"
    return None


def _read_bin(offset):
    name = register_name(offset)
    return name if name in READ_BINS else NOT_READABLE


def _write_bin(offset):
    name = register_name(offset)
    return name if name in WRITE_BINS else NOT_WRITABLE


@CoverPoint("rdma.reg.write", xf=_write_bin, bins=WRITE_BINS)
def _sample_reg_write(offset):
    pass


@CoverPoint("rdma.reg.read", xf=_read_bin, bins=READ_BINS)
def _sample_reg_read(offset):
    pass


@CoverPoint("rdma.cmd.command", xf=lambda c, r: c, bins=[c.name for c in Cmd])
@CoverPoint("rdma.cmd.result", xf=lambda c, r: r, bins=[r.name for r in CmdResult])
@CoverCross("rdma.cmd.command_result", items=["rdma.cmd.command", "rdma.cmd.result"])
def _sample_command(command, result):
    pass


class DriverCoverage(Observer):
    """A verbs-driver observer that samples register accesses and command results."""

    def on_write_reg(self, offset, value):
        _sample_reg_write(offset)

    def on_read_reg(self, offset, value):
        _sample_reg_read(offset)

    def on_command(self, opcode, index, result):
        if opcode in set(Cmd) and result in set(CmdResult):   # a raw test may send others
            _sample_command(Cmd(opcode).name, CmdResult(result).name)


# ---------------------------------------------------------------------------------------------
# Packets on the links

AETH_KINDS = ["ACK", "RNR NAK", "NAK PSN sequence error", "NAK invalid request",
              "NAK remote access error", "NAK remote operational error",
              "NAK invalid RD request"]
_NAK_CODES = {0x60: "NAK PSN sequence error", 0x61: "NAK invalid request",
              0x62: "NAK remote access error", 0x63: "NAK remote operational error",
              0x64: "NAK invalid RD request"}


def aeth_kind(syndrome):
    if syndrome >> 5 == 0:
        return "ACK"
    if syndrome >> 5 == 1:
        return "RNR NAK"
    return _NAK_CODES.get(syndrome)


@CoverPoint("rdma.link.aeth", xf=lambda kind: kind, bins=AETH_KINDS)
def _sample_aeth(kind):
    pass


@CoverPoint("rdma.link.opcode", xf=lambda name: name,
            bins=[op.name for _, op in sorted(PACKET_OPCODES.items())])
def _sample_packet(name):
    pass


def on_capture(capture):
    """LinkSniffer callback: the opcode of each packet that crossed a link, and its AETH."""
    packet = capture.packet
    if packet is None:
        return
    _sample_packet(packet.op.name)
    if packet.bth.opcode == 0x11:
        kind = aeth_kind(packet.aeth.syndrome)
        if kind:
            _sample_aeth(kind)


# ---------------------------------------------------------------------------------------------
# Packets dropped at a port (injected by tests/test_rx_errors.py)

DROP_REASONS = ["VCRC", "ICRC", "PKTLEN", "PAYLEN", "PADCNT", "LVER", "TVER", "IPVER", "OPCODE",
                "DLID", "DGID", "PKEY", "TRUNCATED", "ABORTED", "QPN", "QKEY"]


@CoverPoint("rdma.port.drop", xf=lambda reason: reason, bins=DROP_REASONS)
def sample_drop(reason):
    """A test saw a bad packet of this kind dropped and counted in PortRcvErrors."""


# ---------------------------------------------------------------------------------------------
# The DMA engine's concurrency and the host memory's timing

DMA_CLIENTS = ["CQE writer", "responder", "receive engine", "port 1 mover 1", "port 1 mover 2",
               "port 2 mover 1", "port 2 mover 2", "bypass mover 1", "bypass mover 2",
               "bypass mover 3", "bypass mover 4", "WQE read-ahead"]
# Movers with a command at the same time: 1 to 4, and 5 or more. Every mover at once is the
# unit testbench's business (tests/test_dma_engine.py runs all clients' random commands
# together); in the device the brief ones (a CQE write, a receive WQE load, a WQE fetch) meet
# the long ones (payload, stores, bypass copies) by chance, and five at once is what shows
# the ports, the receive engine and the bypass all moving data together.
DMA_MANY = 5
DMA_TOGETHER = [str(n) for n in range(1, DMA_MANY)] + [f"{DMA_MANY}+"]
MEM_TIMING_NAMES = ["ideal", "latency100", "latency500", "stalls"]


@CoverPoint("rdma.dma.movers_busy_at_once", xf=lambda n: n, bins=DMA_TOGETHER)
def _sample_together(n):
    pass


@CoverPoint("rdma.dma.busy_beside_another", xf=lambda client: client, bins=DMA_CLIENTS)
def _sample_alongside(client):
    pass


@CoverPoint("rdma.mem.timing", xf=lambda name: name, bins=MEM_TIMING_NAMES)
def _sample_timing(name):
    pass


def sample_dma(together, alongside, timing):
    """A device's DMA concurrency seen so far (sim_dma_watch's masks) and its memory timing."""
    for n in range(1, len(DMA_CLIENTS) + 1):
        if together >> n & 1:
            _sample_together(str(n) if n < DMA_MANY else f"{DMA_MANY}+")
    for c, client in enumerate(DMA_CLIENTS):
        if alongside >> c & 1:
            _sample_alongside(client)
    _sample_timing(timing)


_before_save = []


def before_save(sampler):
    """Call `sampler()` before each save (a device samples what its harness watched)."""
    _before_save.append(sampler)


# ---------------------------------------------------------------------------------------------
# Saving one simulation's database, merging many

def enabled():
    return os.environ.get("FUNCTIONAL_COVERAGE", "0") not in ("", "0")


def save():
    """Write this simulation's database (FUNCTIONAL_COVERAGE=1): sim/out/coverage/<sim>-<run>.yml."""
    if not enabled():
        return
    for sampler in _before_save:
        sampler()
    folder = OUT / "coverage"
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{os.environ.get('SIM', 'icarus')}-{Path.cwd().name}.yml"
    coverage_db.export_to_yaml(str(folder / name))


def merge(files):
    """{item: {bin: hits}} summed over the YAML databases in `files`."""
    import yaml

    merged = defaultdict(lambda: defaultdict(int))
    for path in files:
        for item, attrs in (yaml.safe_load(Path(path).read_text()) or {}).items():
            for bin_, hits in (attrs.get("bins:_hits") or {}).items():
                merged[item][bin_] += hits
    return merged


def _bin_value(text):
    """A bin as exported (str() of tuples, numbers as numbers) back to a Python value."""
    import ast

    try:
        return ast.literal_eval(text) if isinstance(text, str) else text
    except (ValueError, SyntaxError):
        return text


def report(folder):
    files = sorted(Path(folder).glob("*.yml"))
    if not files:
        sys.exit(f"no coverage databases in {folder}: run the tests with FUNCTIONAL_COVERAGE=1")
    merged = merge(files)
    rows, holes, justified = [], [], []
    result = {}
    for item in sorted(merged):
        bins = merged[item]
        hit = sum(1 for h in bins.values() if h)
        why = {b: impossible(item, _bin_value(b)) for b, h in bins.items() if not h}
        excused = sum(1 for w in why.values() if w)
        rows.append((item, len(bins), hit, excused))
        for b, w in why.items():
            (justified if w else holes).append((item, b, w))
        result[item] = {"bins": len(bins), "hit": hit, "impossible": excused,
                        "hits": {str(b): h for b, h in bins.items()},
                        "holes": [str(b) for b, w in why.items() if not w]}
    print(f"functional coverage, merged from {len(files)} simulation(s):\n")
    print(f"{'cover item':40} {'bins':>6} {'hit':>6} {'impossible':>10} {'holes':>6}")
    total = [0, 0, 0]
    for item, n, hit, excused in rows:
        print(f"{item:40} {n:>6} {hit:>6} {excused:>10} {n - hit - excused:>6}")
        total = [total[0] + n, total[1] + hit, total[2] + excused]
    n, hit, excused = total
    print(f"{'all':40} {n:>6} {hit:>6} {excused:>10} {n - hit - excused:>6}")
    print(f"\n{hit} of {n} bins hit, {excused} impossible with a reason: "
          f"{(hit + excused) / n:.1%} hit or justified")
    if holes:
        print(f"\nholes ({len(holes)}):")
        for item, b, _ in holes:
            print(f"  {item}: {b}")
    out = OUT / "coverage.yml"
    import yaml

    out.write_text(yaml.safe_dump({"items": result, "impossible": [
        {"item": i, "bin": str(b), "why": w} for i, b, w in justified]}, sort_keys=False))
    print(f"\nmerged database and the reasons for impossible bins: {out}")


if __name__ == "__main__":
    report(sys.argv[1] if len(sys.argv) > 1 else OUT / "coverage")
