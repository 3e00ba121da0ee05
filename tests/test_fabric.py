"""Two rdma_dev instances cabled port to port (topology b, harness tb/hdl/tb_fabric.v): dev0
port 1 <-> dev1 port 1 and dev0 port 2 <-> dev1 port 2, every port with its own LID and GID,
LMC 2 on dev0 port 1 (LIDs 0x10-0x13) and LMC 1 on dev1 port 1 (LIDs 0x40-0x41).

Each test is an RDMA program on both devices and ends with both scoreboards' verdicts: the
completions, memory, QP states and port counters of each device against its reference model
(the two models are cabled like the harness, so each predicts what the other receives), and
the packets each of the four links carried, decoded by a sniffer that checks their CRCs and
lengths independently of the RTL. Every test also writes one pcap per link under sim/out,
named after the run and the test; the pcap test has tshark (when installed) confirm that it
decodes every frame of each as InfiniBand (the format is the same for every test, and a
tshark run costs more than a small test's simulation). With RDMA_LINK=eth every port is on
Ethernet (RoCE v2): a port is addressed by its GIDs, the pcaps hold Ethernet frames.
"""

import shutil
import subprocess
from pathlib import Path

import cocotb
import pytest

from tb import simrun
from tb.coverage import enabled as coverage_enabled
from tb.link_faults import LinkFaults
from tb.rdma_tb import LINK
from tb.rdma_program import (
    DATA_OPCODES, LOSSY_SLOT, NEEDS_RECEIVE, QKEY, SEND_WC_OPCODE, SURE_LOSSES, Rdma,
    assert_all_succeed, assert_counters_follow_cable, assert_wc, grh_bytes, long_read,
    long_read_timeout, lossy_cable, post_lossy_rc, work_request,
)
from tb.seed import REGRESS, SEED
from tb.verbs import (
    GRH_BYTES, MTU, GlobalRoute, PortCounter, QPType, RecvWR, WCFlags, WCOpcode, WCStatus,
    WROpcode, atomic_cmp_and_swp, atomic_fetch_and_add, ud_send,
)

CABLES = (1, 2)                             # dev0 port p <-> dev1 port p
LENGTHS = (0, 1, 1025, 3000)                # at path MTU 1024: 1, 1, 2 and 3 packets
SRC_BITS = 1                                # source path bits of every sender ...
DLID_BITS = 3                               # ... and the path bits of every DLID
OUT = Path(__file__).resolve().parent.parent / "sim" / "out"


def lid(rdma, port, bits):
    """A LID of `port` of `rdma`'s device with `bits` under its LMC."""
    attr = rdma.dev.ports[port]
    return attr.lid | (bits & ((1 << attr.lmc) - 1))


def path_bits(rdma, port, bits):
    """The DLID path bits a receive completion on `rdma`'s `port` reports for a DLID with
    `bits` (RoCE v2 has no LIDs: 0)."""
    return 0 if rdma.ethernet(port) else bits & ((1 << rdma.dev.ports[port].lmc) - 1)


def slid(rdma, port, bits):
    """The SLID a receive completion reports for a sender on `rdma`'s `port` with source path
    bits `bits` (RoCE v2: 0)."""
    return 0 if rdma.ethernet(port) else lid(rdma, port, bits)


def destination(packet):
    """Where a captured packet was sent: its DLID, or on Ethernet its DGID."""
    return packet.lrh.dlid if packet.roce is None else packet.roce.dgid


class Fabric:
    """Both devices' programs, r[0] on dev0 and r[1] on dev1."""

    def __init__(self, dut, r0, r1):
        self.dut = dut
        self.r = (r0, r1)

    @classmethod
    async def open(cls, dut):
        return cls(dut, *await Rdma.open_fabric(dut))

    def sniffer(self, d, port):
        """The sniffer on device d's port `port` TX link."""
        return self.r[d].tb.sniffers[port]

    async def counters(self):
        """{(device, port): {PortCounter: value}}"""
        return {(d, p): await r.dev.port_counters(p) for d, r in enumerate(self.r) for p in CABLES}

    def cable(self, d, port):
        """The cable model carrying device d's port `port` TX to the other device."""
        return self.r[d].tb.cables[port]

    def pcap_paths(self, name, arrived=False):
        run = f"{Path.cwd().name}.{cocotb.SIM_NAME.split()[0].lower()}.{name}"
        suffix = "-arrived" if arrived else ""
        return {(d, p): OUT / f"{run}.dev{d}-port{p}{suffix}.pcap" for d in (0, 1) for p in CABLES}

    async def finish(self, name, tshark=False):
        """Both scoreboards' verdicts; then one pcap per link, each checked by tshark when
        `tshark`."""
        try:
            for r in self.r:
                await r.sb.check()
        finally:
            OUT.mkdir(parents=True, exist_ok=True)
            paths = self.pcap_paths(name)
            for (d, p), path in paths.items():
                self.sniffer(d, p).write_pcap(path)
            for (d, p), path in self.pcap_paths(name, arrived=True).items():
                if p in self.r[d].tb.arrivals:
                    self.r[d].tb.arrivals[p].write_pcap(path)
        if tshark:
            self.check_pcaps(paths)
        return paths

    def check_pcaps(self, paths):
        tshark = shutil.which("tshark")
        if tshark is None:
            self.dut._log.warning("tshark is not installed: the pcaps are not checked with it "
                                  "(sim/apt-install.sh installs it)")
            return
        for (d, p), path in paths.items():
            run = subprocess.run([tshark, "-r", str(path), "-T", "fields", "-e", "frame.protocols"],
                                 capture_output=True, text=True, timeout=120)
            assert run.returncode == 0, f"tshark -r {path}: {run.stderr.strip()}"
            frames = run.stdout.splitlines()
            captured = len(self.sniffer(d, p).captures)
            assert len(frames) == captured, \
                f"{path}: tshark reads {len(frames)} frames, the sniffer captured {captured}"
            # RoCE v2: InfiniBand's transport dissected behind UDP port 4791
            want = {"infiniband", "udp"} if self.r[d].ethernet(p) else {"infiniband"}
            bad = [(i, f) for i, f in enumerate(frames, 1) if not want <= set(f.split(":"))]
            assert not bad, f"{path}: frames not decoded as {'/'.join(sorted(want))}: {bad[:5]}"


async def connected_pairs(fabric, transport, **attrs):
    """{port: (QP on dev0, QP on dev1)} RC or UC QPs joined across each cable, aimed at each
    other's LID with DLID_BITS, sending with SRC_BITS."""
    r0, r1 = fabric.r
    pairs = {}
    for port in CABLES:
        a, b = await r0.qp(transport), await r1.qp(transport)
        await r0.connect(a, b.qp_num, port, dlid=lid(r1, port, DLID_BITS),
                         src_path_bits=SRC_BITS, **attrs)
        await r1.connect(b, a.qp_num, port, dlid=lid(r0, port, DLID_BITS),
                         src_path_bits=SRC_BITS, **attrs)
        pairs[port] = (a, b)
    return pairs


def moved(before, after, key, counter):
    return after[key][counter] - before[key][counter]


# ---------------------------------------------------------------------------------------------
# 1. Every connected opcode, both ways, over both cables

CONNECTED_OPCODES = [(t, op) for t in (QPType.RC, QPType.UC) for op in DATA_OPCODES[t]]


@cocotb.test()
@cocotb.parametrize((("transport", "opcode"), CONNECTED_OPCODES))
async def test_connected_opcode_between_devices(dut, transport, opcode):
    """An RC or UC opcode from dev0 to dev1 and from dev1 to dev0 over each cable, at 0 to
    3000 bytes over a 1024-byte path MTU (one to three packets): the data lands in the other
    device's memory, the completions are right (a receive completion carries the sender's
    QPN, SL, its port's LID with the source path bits under that port's LMC as SLID, and the
    DLID's bits under the receiving port's LMC), every port sends and receives, and no
    message takes the loopback bypass."""
    fabric = await Fabric.open(dut)
    pairs = await connected_pairs(fabric, transport, path_mtu=MTU.MTU1024)
    src = [await r.region(8192) for r in fabric.r]
    dst = [await r.region(8192) for r in fabric.r]
    before = await fabric.counters()
    for port, qps in pairs.items():
        for s, t in ((0, 1), (1, 0)):
            sender, receiver = qps[s], qps[t]
            rs, rt = fabric.r[s], fabric.r[t]
            for i, length in enumerate(LENGTHS):
                wr_id = port << 12 | s << 8 | i
                if opcode in NEEDS_RECEIVE:
                    await receiver.post_recv(RecvWR(dst[t].sge(4096, 4096), wr_id=wr_id))
                read = opcode == WROpcode.RDMA_READ
                remote = (src[t] if read else dst[t]).remote(100 + i)
                local = (dst[s] if read else src[s]).sge(7 * i, length)
                await sender.post_send(work_request(opcode, local, remote, wr_id=wr_id,
                                                    imm=0x0A0B0C00 | i))
                [wc] = await rs.poll_until(sender.send_cq, 1)
                assert_wc(wc, wr_id=wr_id, status=WCStatus.SUCCESS, qp_num=sender.qp_num,
                          opcode=SEND_WC_OPCODE[opcode])
                if opcode in NEEDS_RECEIVE:
                    [rwc] = await rt.poll_until(receiver.recv_cq, 1)
                    assert_wc(rwc, wr_id=wr_id, status=WCStatus.SUCCESS, byte_len=length,
                              qp_num=receiver.qp_num, src_qp=sender.qp_num, sl=rt.sl(port),
                              slid=slid(rs, port, SRC_BITS),
                              dlid_path_bits=path_bits(rt, port, DLID_BITS),
                              opcode=(WCOpcode.RECV_RDMA_WITH_IMM
                                      if opcode == WROpcode.RDMA_WRITE_WITH_IMM else WCOpcode.RECV))
                # (a UC WRITE completes once its packets have left, perhaps before they land:
                # the scoreboard checks that memory once the links are quiet)
                if read:
                    assert dst[s].read(7 * i, length) == src[t].read(100 + i, length)
                elif transport == QPType.UC and opcode == WROpcode.RDMA_WRITE:
                    pass
                elif opcode in (WROpcode.RDMA_WRITE, WROpcode.RDMA_WRITE_WITH_IMM):
                    assert dst[t].read(100 + i, length) == src[s].read(7 * i, length)
                else:
                    assert dst[t].read(4096, length) == src[s].read(7 * i, length)
    after = await fabric.counters()
    for key in after:
        assert moved(before, after, key, PortCounter.XMIT_PKTS) > 0, f"dev{key[0]} port {key[1]}"
        assert moved(before, after, key, PortCounter.RCV_PKTS) > 0, f"dev{key[0]} port {key[1]}"
        assert moved(before, after, key, PortCounter.RCV_ERRORS) == 0, f"dev{key[0]} port {key[1]}"
    for r in fabric.r:
        await r.assert_loopback_moves(0, 0)
    await fabric.finish(f"test_connected_opcode_between_devices-{transport.name}-{opcode.name}")


@cocotb.test()
@cocotb.parametrize(global_route=[False, True], with_imm=[False, True])
async def test_ud_send_between_devices(dut, global_route, with_imm):
    """UD SEND from dev0 to dev1 and back over each cable, through an AH for the other
    device's port LID (with a GRH to the other device's port GID, or without; on Ethernet
    the GID is always the address): the receive buffer starts with the GRH the packet carried
    (SGID the sender port's GID, DGID the receiver's; on Ethernet the IP header) or 40 zero
    bytes, then the payload; the completion has the GRH flag, source QP, SL, SLID under the
    sender's LMC and DLID path bits under the receiver's (on Ethernet SL, SLID and path bits
    0)."""
    fabric = await Fabric.open(dut)
    imm = 0x51525354 if with_imm else None
    qps = {(d, p): await r.ud_qp(port=p) for d, r in enumerate(fabric.r) for p in CABLES}
    src = [await r.region(4096) for r in fabric.r]
    dst = [await r.region(8192) for r in fabric.r]
    for port in CABLES:
        for s, t in ((0, 1), (1, 0)):
            rs, rt = fabric.r[s], fabric.r[t]
            sender, receiver = qps[s, port], qps[t, port]
            dlid = lid(rt, port, DLID_BITS)
            route = rs.route(port, dlid)
            if global_route:
                route = GlobalRoute(rt.dev.ports[port].gid, flow_label=0x12345 + port,
                                    hop_limit=9, traffic_class=0x3C)
            ah = await rs.ah(port, dlid, src_path_bits=SRC_BITS, grh=route)
            for i, length in enumerate((1, 1000, 4096)):
                wr_id = port << 12 | s << 8 | i
                await receiver.post_recv(RecvWR(dst[t].sge(0, length + GRH_BYTES), wr_id=wr_id))
                await sender.post_send(ud_send(src[s].sge(0, length), ah, receiver.qp_num, QKEY,
                                               wr_id=wr_id, imm=imm))
                [rwc] = await rt.poll_until(receiver.recv_cq, 1)
                assert_wc(rwc, wr_id=wr_id, status=WCStatus.SUCCESS, byte_len=length + GRH_BYTES,
                          src_qp=sender.qp_num, sl=rt.sl(port), slid=slid(rs, port, SRC_BITS),
                          dlid_path_bits=path_bits(rt, port, DLID_BITS),
                          wc_flags=(WCFlags.GRH if route else WCFlags(0))
                          | (WCFlags.WITH_IMM if with_imm else WCFlags(0)))
                assert dst[t].read(GRH_BYTES, length) == src[s].read(0, length)
                want = (grh_bytes(route, rs.dev.ports[port].gid, length, with_imm, LINK)
                        if route else bytes(GRH_BYTES))
                assert dst[t].read(0, GRH_BYTES) == want, "GRH area"
                await rs.poll_until(sender.send_cq, 1)
    await fabric.finish(f"test_ud_send_between_devices-grh{int(global_route)}-imm{int(with_imm)}")


# ---------------------------------------------------------------------------------------------
# 2. Addresses: SLID and DLID path bits under each port's LMC

@cocotb.test()
async def test_slid_and_dlid_path_bits_follow_each_ports_lmc(dut):
    """Over cable 1 (dev0 port 1, LMC 2, LIDs 0x10-0x13; dev1 port 1, LMC 1, LIDs 0x40-0x41),
    a UC SEND for every source path bits value 0-3 and every DLID path bits value 0-3, both
    ways: the packet's LRH has SLID = sender LID | (bits under the sender's LMC) and the DLID
    asked for; the receive completion reports that SLID and the DLID's bits under the
    receiver's LMC (dev1 keeps only bit 0)."""
    fabric = await Fabric.open(dut)
    src = [await r.region(256) for r in fabric.r]
    dst = [await r.region(256) for r in fabric.r]
    cqs = [await r.dev.create_cq(16) for r in fabric.r]
    for s, t in ((0, 1), (1, 0)):
        rs, rt = fabric.r[s], fabric.r[t]
        for bits in range(4):
            for dbits in range(4):
                a, b = await rs.qp(QPType.UC, cqs[s], cqs[s]), await rt.qp(QPType.UC, cqs[t], cqs[t])
                dlid = lid(rt, 1, dbits)
                await rs.connect(a, b.qp_num, 1, dlid=dlid, src_path_bits=bits)
                await rt.connect(b, a.qp_num, 1, dlid=lid(rs, 1, 0))
                seen = len(fabric.sniffer(s, 1).captures)
                wr_id = bits << 4 | dbits
                await b.post_recv(RecvWR(dst[t].sge(), wr_id=wr_id))
                await a.post_send(work_request(WROpcode.SEND, src[s].sge(0, 64), wr_id=wr_id))
                [rwc] = await rt.poll_until(b.recv_cq, 1)
                slid = lid(rs, 1, bits)
                [capture] = fabric.sniffer(s, 1).captures[seen:]
                assert (capture.packet.lrh.slid, capture.packet.lrh.dlid) == (slid, dlid), \
                    capture.packet.summary()
                assert_wc(rwc, wr_id=wr_id, status=WCStatus.SUCCESS, slid=slid,
                          dlid_path_bits=path_bits(rt, 1, dbits))
                await rs.poll_until(a.send_cq, 1)
    await fabric.finish("test_slid_and_dlid_path_bits_follow_each_ports_lmc")


# ---------------------------------------------------------------------------------------------
# 3. A LID of the far device's other port: out on the cable, dropped at the far end

@cocotb.test()
@cocotb.parametrize(transport=[QPType.RC, QPType.UC, QPType.UD])
async def test_other_ports_lid_goes_out_on_cable_and_is_dropped(dut, transport):
    """A message from dev0 port 1 addressed to dev1 port 2's LID (0x50; on Ethernet its GID,
    at its MAC) is not loopback (no LB_MSGS move, its packets leave on dev0 port 1's link,
    cable 1), reaches dev1 port 1, which owns LIDs 0x40-0x41 (its own MAC and GIDs) and drops
    every packet as not its own (PortRcvErrors, no PortRcvPkts),
    and is not delivered: the QP on dev1 port 2 that the LID names gets nothing, cable 2
    carries nothing. RC resends it twice on its ACK timeout, then completes RETRY_EXC_ERR; UC
    and UD complete SUCCESS."""
    fabric = await Fabric.open(dut)
    r0, r1 = fabric.r
    dlid = r1.dev.ports[2].lid
    local, inbox = await r0.region(4096), await r1.region(4096)
    memory = inbox.read()
    length = 100 if transport == QPType.UD else 1500    # UD: one packet; RC/UC: two
    if transport == QPType.UD:
        a, b = await r0.ud_qp(1), await r1.ud_qp(2)
        ah = await r0.ah(1, dlid, src_path_bits=0)
        wr = ud_send(local.sge(0, length), ah, b.qp_num, QKEY, wr_id=0xA1)
        npkts = 1
    else:
        a, b = await r0.qp(transport), await r1.qp(transport)
        await r0.connect(a, b.qp_num, 1, dlid=dlid, path_mtu=MTU.MTU1024, timeout=1, retry_cnt=2)
        await r1.connect(b, a.qp_num, 2, dlid=lid(r0, 2, 0), path_mtu=MTU.MTU1024)
        wr = work_request(WROpcode.SEND, local.sge(0, length), wr_id=0xA1)
        npkts = 2
    await b.post_recv(RecvWR(inbox.sge(0, 4096), wr_id=0xB1))
    before = await fabric.counters()

    await a.post_send(wr)
    [wc] = await r0.poll_until(a.send_cq, 1, cycles=150000)
    assert_wc(wc, wr_id=0xA1, status=WCStatus.RETRY_EXC_ERR if transport == QPType.RC
              else WCStatus.SUCCESS)
    await r0.cycles(2000)
    after = await fabric.counters()
    sent = npkts * (3 if transport == QPType.RC else 1)     # RC: the first try and 2 resends
    assert moved(before, after, (0, 1), PortCounter.XMIT_PKTS) == sent
    assert moved(before, after, (1, 1), PortCounter.RCV_ERRORS) == sent
    assert moved(before, after, (1, 1), PortCounter.RCV_PKTS) == 0
    for key in ((0, 2), (1, 2)):
        assert after[key] == before[key], f"dev{key[0]} port {key[1]} counted"
    address = r1.dev.ports[2].gid if r0.ethernet(1) else dlid
    assert [destination(c.packet) for c in fabric.sniffer(0, 1).captures] == [address] * sent
    assert fabric.sniffer(0, 2).beats == 0, "cable 2 carried the message"
    assert fabric.sniffer(1, 1).beats == 0 and fabric.sniffer(1, 2).beats == 0, "an answer"
    assert await b.recv_cq.poll() == [], "delivered"
    assert inbox.read() == memory, "a packet for another port was written"
    await r0.assert_loopback_moves(0, 0)
    await r1.assert_loopback_moves(0, 0)
    await fabric.finish(f"test_other_ports_lid_goes_out_on_cable_and_is_dropped-{transport.name}")


# ---------------------------------------------------------------------------------------------
# 4. Slow, lossy cables: RC gets every message through exactly once

@cocotb.test()
@cocotb.parametrize(loss=[0.01, 0.1] if REGRESS else [0.01])     # 10 %: make regress
async def test_rc_exactly_once_over_lossy_cables(dut, loss):
    """RC WRITEs, SENDs, READs and WRITEs with immediate of 0 to 5000 bytes (up to five
    packets at a 1024-byte path MTU), both ways over both cables, while each cable holds every
    packet 300 cycles, loses `loss` of them (half dropped, half corrupted: ICRC or VCRC),
    duplicates them at `loss` and delays or reorders them at loss / 2 each, and besides drops
    its third packet and corrupts its eighth. Every WR completes SUCCESS with what a
    perfect cable gives, memory is the model's (each WRITE landed once, each SEND took one
    receive), and the port counters agree with what the cables did: a port sent what its
    cable took, and what arrived counted good, or in PortRcvErrors when corrupted."""
    fabric = await Fabric.open(dut)
    for r in fabric.r:
        r.sb.cables_lossy(r.tb.watch_arrivals())
    cables = {}
    for d in (0, 1):
        for port in CABLES:
            faults = lossy_cable(loss, SEED * 4 + 2 * d + port, forced=SURE_LOSSES)
            faults.apply(fabric.cable(d, port))
            dut._log.info("cable dev%d port %d: %s", d, port, faults.describe())
            cables[d, port] = fabric.cable(d, port)
    pairs = await connected_pairs(fabric, QPType.RC, path_mtu=MTU.MTU1024, timeout=3,
                                  retry_cnt=7)
    # each direction of each cable has its own slots: no two WRs touch the same bytes
    per_direction = 12
    src = [await r.region(4 * per_direction * LOSSY_SLOT) for r in fabric.r]
    dst = [await r.region(4 * per_direction * LOSSY_SLOT) for r in fabric.r]
    before = await fabric.counters()
    posted, rdma_of = {}, {}
    for port, qps in pairs.items():
        for s, t in ((0, 1), (1, 0)):
            rdma_of[qps[s]] = fabric.r[s]
            await post_lossy_rc(fabric.r[0].rng, qps[s], qps[t], (src[s], dst[s]),
                                (src[t], dst[t]), ((port - 1) * 2 + s) * per_direction,
                                per_direction, port << 12 | s << 8, posted)
    await assert_all_succeed(posted, rdma_of)
    await fabric.finish(f"test_rc_exactly_once_over_lossy_cables-{loss}")
    after = await fabric.counters()
    did = {key: LinkFaults.stats(cable) for key, cable in cables.items()}
    assert sum(did[key]["dropped"] + did[key]["corrupted"] for key in did) > 0, did
    for (d, port), stats in did.items():
        delta = {key: {c: moved(before, after, key, c) for c in after[key]}
                 for key in ((d, port), (1 - d, port))}
        assert_counters_follow_cable(delta[d, port], delta[1 - d, port], stats,
                                     f"dev{d} port {port}")


UNRELIABLE_OPCODES = DATA_OPCODES[QPType.UC]
WRITES = (WROpcode.RDMA_WRITE, WROpcode.RDMA_WRITE_WITH_IMM)


@cocotb.test()
async def test_uc_and_ud_lose_only_what_the_cables_lost(dut):
    """UC SENDs and RDMA WRITEs (with and without immediate, 0 to 1000 bytes: one to four
    packets at a 256-byte path MTU) and UD SENDs, both ways over both cables, while each
    cable loses 10 % of the packets (half dropped, half corrupted), duplicates 10 %, delays
    or reorders 5 % each, and besides drops its third packet and corrupts its eighth. UC and
    UD have no retransmission: every sender completes SUCCESS. A UC message that lost a
    packet is dropped from there on (what its packets wrote before stays, and its receive WQE
    takes the next message); the message after it is delivered whatever PSN its first packet
    carries; a duplicated first or only packet starts its message again. A UD datagram is
    delivered once for every copy that arrives whole. The models take each UC and UD packet
    as its cable delivered it (Model.arrived): the scoreboards check every receive completion
    and byte against that, and the cables did lose UC and UD packets."""
    fabric = await Fabric.open(dut)
    for d, r in enumerate(fabric.r):
        r.sb.cables_lossy(r.tb.watch_arrivals())
        for port in CABLES:
            faults = lossy_cable(0.1, SEED * 4 + 2 * d + port, forced=SURE_LOSSES)
            faults.apply(fabric.cable(d, port))
            dut._log.info("cable dev%d port %d: %s", d, port, faults.describe())
    per_qp = 12
    slot = 1024
    recv_cqs = [await r.dev.create_cq(128) for r in fabric.r]
    senders = []        # (device, QP, WRs)
    for port in CABLES:
        # each QP's send completions on a CQ of its own
        uc = [await r.qp(QPType.UC, await r.dev.create_cq(16), recv_cqs[d])
              for d, r in enumerate(fabric.r)]
        ud = [await r.qp(QPType.UD, await r.dev.create_cq(16), recv_cqs[d])
              for d, r in enumerate(fabric.r)]
        for d, r in enumerate(fabric.r):
            await r.connect(uc[d], uc[1 - d].qp_num, port, dlid=lid(fabric.r[1 - d], port, 0),
                            path_mtu=MTU.MTU256)
            await ud[d].to_rts(port=port, qkey=QKEY)
        for s, t in ((0, 1), (1, 0)):
            rs, rt = fabric.r[s], fabric.r[t]
            src, dst = await rs.region(per_qp * slot), await rt.region(2 * per_qp * slot)
            ah = await rs.ah(port, lid(rt, port, 0), src_path_bits=0)
            uc_wrs, ud_wrs = [], []
            for i in range(per_qp):
                opcode = rs.rng.choice(UNRELIABLE_OPCODES)
                length = rs.rng.choice([0, 1, 256, 600, 1000, rs.rng.randrange(1000)])
                wr_id = port << 12 | s << 8 | i
                if opcode in NEEDS_RECEIVE:
                    await uc[t].post_recv(RecvWR(dst.sge(i * slot, slot), wr_id=wr_id))
                remote = dst.remote(i * slot) if opcode in WRITES else None
                uc_wrs.append(work_request(opcode, src.sge(i * slot, length), remote,
                                           wr_id=wr_id, imm=i))
                length = rs.rng.randrange(slot - GRH_BYTES)
                await ud[t].post_recv(RecvWR(dst.sge((per_qp + i) * slot, slot), wr_id=wr_id))
                ud_wrs.append(ud_send(src.sge(i * slot, length), ah, ud[t].qp_num, QKEY,
                                      wr_id=wr_id))
            senders += [(s, uc[s], uc_wrs), (s, ud[s], ud_wrs)]
    for s, qp, wrs in senders:
        await qp.post_send(wrs)
    for s, qp, wrs in senders:
        wcs = await fabric.r[s].poll_until(qp.send_cq, len(wrs))
        assert [(wc.wr_id, wc.status) for wc in wcs] == \
            [(wr.wr_id, WCStatus.SUCCESS) for wr in wrs], f"QP {qp.qp_num} on dev{s}"
    await fabric.finish("test_uc_and_ud_lose_only_what_the_cables_lost")
    lost = {(d, port): sum(LinkFaults.stats(fabric.cable(d, port))[k]
                           for k in ("dropped", "corrupted"))
            for d in (0, 1) for port in CABLES}
    assert all(lost.values()), f"a cable lost nothing: {lost}"


@cocotb.test()
async def test_atomics_execute_exactly_once_when_their_acks_are_lost(dut):
    """FetchAdds (+1) on one counter and a chain of CompareSwaps (each expecting the value the
    one before it left) on another, 16 in flight at a time, from dev0 to dev1 over cable 1,
    while the cable back loses 20 % of the ACKs and atomic ACKs and every packet takes 300
    cycles each way. The requester resends after its ACK timeout; the responder answers every
    duplicate from its record of results and never executes it again. So each counter moved
    once per WR, each WR's local SGE holds the value before its own step (V, V + 1, ...), every
    WR completes SUCCESS, and ACKs were lost. (retry_cnt 7 allows eight tries: a WR whose
    answer is lost eight times in a row completes RETRY_EXC_ERR, as it should: at 30 % about
    once in 300 runs, 48 x 0.3^8 (SEED=1496305934 did); at 20 % once in 8,000.)"""
    fabric = await Fabric.open(dut)
    r0, r1 = fabric.r
    for r in fabric.r:
        r.sb.model.links_lossy()
    back = LinkFaults(latency=300, seed=(SEED * 2 + 1) & (2**64 - 1), drop=0.2,
                      kinds={"acks"})
    back.apply(fabric.cable(1, 1))
    LinkFaults(latency=300).apply(fabric.cable(0, 1))
    dut._log.info("cable dev1 port 1: %s", back.describe())
    qp, _ = (await connected_pairs(fabric, QPType.RC, timeout=3, retry_cnt=7))[1]
    counters, results = await r1.region(64), await r0.region(64 * 8)
    fetch_start = int.from_bytes(counters.read(0, 8), "little")
    swap_start = int.from_bytes(counters.read(8, 8), "little")
    wrs, want = [], []
    for i in range(48):
        k = i // 2
        if i % 2 == 0:
            wrs.append(atomic_fetch_and_add(results.sge(8 * i, 8), counters.remote(0), 1, wr_id=i))
            want.append((fetch_start + k) % 2**64)
        else:
            expect = (swap_start + k) % 2**64
            wrs.append(atomic_cmp_and_swp(results.sge(8 * i, 8), counters.remote(8), expect,
                                          (expect + 1) % 2**64, wr_id=i))
            want.append(expect)
    for at in range(0, len(wrs), 16):
        await qp.post_send(wrs[at:at + 16])
        wcs = await r0.poll_until(qp.send_cq, 16, cycles=2_000_000)
        assert [(wc.wr_id, wc.status, wc.opcode) for wc in wcs] == [
            (w.wr_id, WCStatus.SUCCESS,
             WCOpcode.FETCH_ADD if w.opcode == WROpcode.ATOMIC_FETCH_AND_ADD else WCOpcode.COMP_SWAP)
            for w in wrs[at:at + 16]]
    assert [int.from_bytes(results.read(8 * i, 8), "little") for i in range(len(wrs))] == want
    assert int.from_bytes(counters.read(0, 8), "little") == (fetch_start + 24) % 2**64
    assert int.from_bytes(counters.read(8, 8), "little") == (swap_start + 24) % 2**64
    assert LinkFaults.stats(fabric.cable(1, 1))["dropped"] > 0, "no ACK was lost"
    await fabric.finish("test_atomics_execute_exactly_once_when_their_acks_are_lost")


# make test reads 128 KiB + 7 (33 READ responses, still more than two ACK timeouts long on the
# wire at 256 bits); make regress reads 1 MiB + 7
LONG_READ = (1 << 20) + 7 if REGRESS else (128 << 10) + 7


@cocotb.test()
async def test_rc_read_longer_than_many_ack_timeouts_between_devices(dut):
    """An RC RDMA READ of 1 MiB + 7 bytes (128 KiB + 7 in make test) from an odd offset on dev1
    into an odd offset on dev0 over cable 1, with 500 cycles of cable latency each way: 257 (33)
    READ responses, far longer than one ACK timeout (timeout 1: 2048 cycles; 2 at 64 bits),
    which each arriving response restarts. It completes SUCCESS with every byte in place."""
    fabric = await Fabric.open(dut)
    for d in (0, 1):
        LinkFaults(latency=500).apply(fabric.cable(d, 1))
    timeout = long_read_timeout(fabric.r[0].tb.data_width)
    pairs = await connected_pairs(fabric, QPType.RC, timeout=timeout, retry_cnt=1)
    a, _ = pairs[1]
    await long_read(*fabric.r, a, LONG_READ)
    await fabric.finish("test_rc_read_longer_than_many_ack_timeouts_between_devices")


# ---------------------------------------------------------------------------------------------
# 5. Captures

@cocotb.test()
async def test_one_pcap_per_link_decodes_as_infiniband(dut):
    """RC WRITEs and READs both ways over both cables put requests, ACKs and READ responses on
    all four links: each link's pcap holds exactly the packets its sniffer captured, none of
    them failed a check, and tshark decodes every frame of every file as InfiniBand (on
    Ethernet as RoCE v2: InfiniBand behind UDP)."""
    fabric = await Fabric.open(dut)
    pairs = await connected_pairs(fabric, QPType.RC, path_mtu=MTU.MTU1024)
    src = [await r.region(4096) for r in fabric.r]
    dst = [await r.region(4096) for r in fabric.r]
    for port, qps in pairs.items():
        for s, t in ((0, 1), (1, 0)):
            await qps[s].post_send([
                work_request(WROpcode.RDMA_WRITE, src[s].sge(0, 2500), dst[t].remote(0), wr_id=1),
                work_request(WROpcode.RDMA_READ, dst[s].sge(0, 2000), src[t].remote(0), wr_id=2),
            ])
            await fabric.r[s].poll_until(qps[s].send_cq, 2)
    paths = await fabric.finish("test_one_pcap_per_link_decodes_as_infiniband", tshark=True)
    for (d, p), path in paths.items():
        captures = fabric.sniffer(d, p).captures
        assert captures and not fabric.sniffer(d, p).errors(), f"dev{d} port {p}"
        assert path.stat().st_size > 24 + 16 * len(captures)


# ---------------------------------------------------------------------------------------------
# The pytest runner: Two rdma_dev instances cabled port to port (on tb/hdl/tb_fabric.v) at each
# supported data width, in groups (one simulator process each, so pytest-xdist can spread
# them): the transports' long tests (lossy cables, the long READ), everything else, and the
# ethernet group: both, every port on Ethernet (RoCE v2, RDMA_LINK=eth), but the path bits test
# (RoCE v2 has no LIDs). make test runs the first two at 256 bits, with three of the nine
# connected opcodes and two of the four UD cases between devices (every opcode crosses a cable
# in make test's test_wire and between devices in its random program), and ETHERNET_CORE of the
# ethernet group at 256 bits; make regress every group whole at every width, make coverage the
# main group (the packets the width shapes cross a cable at 64 and 512 bits in make test's
# test_wire).

TRANSPORT_TESTS = ("test_rc_exactly_once_over_lossy_cables",
                   "test_uc_and_ud_lose_only_what_the_cables_lost",
                   "test_atomics_execute_exactly_once_when_their_acks_are_lost",
                   "test_rc_read_longer_than_many_ack_timeouts_between_devices")
IB_ONLY = ("test_slid_and_dlid_path_bits_follow_each_ports_lmc",)
GROUPS = {  # COCOTB_TEST_FILTER patterns, matched against "test_fabric.<test name>[/params]"
    "transport": rf"^test_fabric\.({'|'.join(TRANSPORT_TESTS)})(/|$)",
    "main": rf"^test_fabric\.(?!({'|'.join(TRANSPORT_TESTS)})(/|$))",
    "ethernet": rf"^test_fabric\.(?!({'|'.join(IB_ONLY)})(/|$))",
}
PER_CASE_TESTS = ("test_connected_opcode_between_devices", "test_ud_send_between_devices")
SHORT_CASES = (     # make test's cases of PER_CASE_TESTS
    "test_connected_opcode_between_devices/transport=RC/opcode=(RDMA_READ|SEND_WITH_IMM)",
    "test_connected_opcode_between_devices/transport=UC/opcode=RDMA_WRITE_WITH_IMM",
    "test_ud_send_between_devices/global_route=(True/with_imm=True|False/with_imm=False)",
)
SHORT_MAIN = (rf"^test_fabric\.((?!({'|'.join(TRANSPORT_TESTS + PER_CASE_TESTS)})(/|$))"
              rf"|({'|'.join(SHORT_CASES)})$)")
ETHERNET_CORE = (   # make test's part of the ethernet group
    "test_connected_opcode_between_devices/transport=RC/opcode=RDMA_READ",
    "test_ud_send_between_devices/global_route=False/with_imm=True",
    "test_other_ports_lid_goes_out_on_cable_and_is_dropped/transport=UD",
    "test_rc_exactly_once_over_lossy_cables/loss=0.01",
    "test_one_pcap_per_link_decodes_as_infiniband",
)


@pytest.mark.parametrize("group", list(GROUPS))
@pytest.mark.parametrize("w", [64, 256, 512])
def test_fabric(w, group):
    if group in ("transport", "ethernet") and w != 256 and not REGRESS:
        pytest.skip(f"the {group} group at 64 and 512 bits runs under make regress")
    if w != 256 and not (REGRESS or coverage_enabled()):
        pytest.skip("two devices at 64 and 512 bits run under make regress and make coverage")
    if REGRESS or group == "transport":
        pattern = GROUPS[group]
    elif group == "ethernet":
        pattern = rf"^test_fabric\.({'|'.join(ETHERNET_CORE)})$"
    else:
        pattern = GROUPS[group] if coverage_enabled() else SHORT_MAIN
    simrun.run(
        toplevel="tb_fabric",
        test_module="test_fabric",
        parameters={"DATA_WIDTH": w},
        extra_env={"COCOTB_TEST_FILTER": pattern,
                   "RDMA_LINK": "eth" if group == "ethernet" else "ib"},
    )
