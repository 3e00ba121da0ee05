"""Clock-cycle benchmarks, one message at a time, on three paths:

- "bypass": a loopback RC QP pair on one device (tb_rdma_dev) through the loopback bypass;
- "packet-loopback": the same with CTRL.BYPASS cleared, through the packetizer, the port's
  internal loopback and the depacketizer (tb_rdma_dev);
- "wire": dev0 to dev1 of tb_fabric over cable 1, RC, path MTU 4096;
- "wire-roce": the same with the ports on Ethernet (RoCE v2 over IPv4, at 256 bits).

Latency is counted by the harness, not by Python: from the cycle the send-queue doorbell write
is accepted to the cycle irq rises for the armed send CQ, i.e. the send CQE is in host memory.
Host memory (the harness's sim_axi_ram) answers without backpressure, read latency 2 cycles.
Each benchmark also records how fast the simulator ran it (`Speed`: cycles and host-memory
AXI beats per wall-clock second). For a wire RDMA WRITE the record also has
the link figures: the cycles from the first to the last beat of the message's packets on the
link (`link_cycles`), and the payload bytes per link byte over them (`link_goodput`) beside
the best the packet format allows (`link_goodput_max`: payload over payload plus LRH, BTH,
the first packet's RETH, pad, ICRC and VCRC). On Ethernet a frame is Ethernet, IPv4, UDP, BTH
.. ICRC and FCS, and both figures count the 20 bytes a MAC adds to every frame (preamble, SFD
and the inter-frame gap), which the simulated link does not carry: the link time is its
cycles plus 20 byte times a frame. Which benchmarks run is chosen by
COCOTB_TEST_FILTER (`main` below); each appends its records to the JSON file in BENCH_OUT.

Atomics: an 8-byte FetchAdd's latency on each path (op FETCH_ADD, as the messages above), and
its message rate: "bypass-atomic-rate" is 64 FetchAdds posted at once on one loopback QP
through the bypass, "wire-atomic-rate" 256 over 16 QPs across the cable (below); both count
cycles from the first doorbell to the last completion polled (`cycles_per_message`).

The RC transport benchmarks (tb_fabric, dev0 to dev1 over cable 1, whose two directions are
given `link_latency` cycles and, for one row, 1 % random loss) post many messages at once and
count cycles from the first doorbell to the last completion polled: "wire-rate" is 64-byte
RDMA WRITEs over 16 QPs (`cycles_per_message`), "wire-atomic-rate" the same with FetchAdds,
"wire-stream" 64 KiB RDMA WRITEs back to back on one QP (`bytes_per_cycle`, and
`of_lossless_zero_latency`: the share of the same stream's goodput on a perfect zero-latency
cable).

Host memory latency is part of the bench: every record says the host memory's read latency
(`mem_latency`, cycles from AR to the first R beat; the harness's default is 2). "bypass-rate"
is 64-byte RDMA WRITEs over 16 loopback QPs, 16 each posted at once, through the bypass, at
read latencies of 0, 100 and 500 cycles (`cycles_per_message`, as "wire-rate" has).
"bypass-stream" is 8 RDMA WRITEs of 64 KiB posted at once on one loopback QP, to distinct
bytes, at read latencies 0 and 500 (`bytes_per_cycle`, first doorbell to last completion): the
share of the data width with the latency hidden. A single 64 KiB WRITE (its latency row) pays
two read round trips before its data streams, its WQE's and its first payload read's, which
no engine can hide.

The size sweep (at 256 bits): RDMA WRITEs of 8 B to 1 MiB through the bypass, the packet
loopback and the wire, each size's latency (one message, doorbell to send CQE) and bandwidth
(`bytes_per_cycle` of a burst of messages posted at once on one QP, first doorbell to last
completion): "bypass-sweep", "packet-loopback-sweep" and "wire-sweep" records, drawn in
sim/out/bench.svg, the perftest-style curves (ib_write_lat and ib_write_bw) that show where
the bypass wins and by how much.

dma_mover alone (tools/bench_dma_mover.py on tb_dma_mover, at every width): 64 KiB COPY,
READ_STREAM and WRITE_STREAM cycles from accept to done, small LOAD/STORE latency and how many
read bursts overlap.
"""

import json
import os
import sys
import time
from pathlib import Path

import cocotb
from cocotb.triggers import ClockCycles


if __name__ == "__main__":     # run as a script: the tb package is beside tools/
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tb import dma_mover_tb
from tb.link_faults import LinkFaults
from tb.rdma_tb import LINK, open_device, open_fabric
from tb.verbs import (
    MTU, Access, GlobalRoute, QPType, RecvWR, atomic_fetch_and_add, connect, rdma_read, rdma_write, send,
)

SIZES = (64, 4096, 65536, 1 << 20)
PACKET_SIZES = (64, 4096, 65536)    # the packet paths are slower to simulate: no 1 MiB
OPS = ("RDMA_WRITE", "SEND", "RDMA_READ", "FETCH_ADD")
ATOMIC_SIZES = (8,)
ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC
ATOMIC_BURST = 64                   # FetchAdds of a message-rate row
WIRE_MTU = MTU.MTU4096
HARNESS_MEM_LATENCY = 2             # sim_axi_ram's read latency unless a benchmark sets one
MEM_LATENCIES = (0, 100, 500)       # the read latencies of the rate rows
SWEEP_SIZES = (8, 64, 256, 1024, 4096, 16384, 65536, 262144, 1 << 20)
BYPASS_STREAM = 65536               # a bypass WRITE of this size at these read latencies:
BYPASS_STREAM_LATENCIES = (0, 500)  # the share of the data width with the latency hidden
BYPASS_STREAM_COUNT = 8             # ... in a stream of this many on one QP, to distinct bytes
SWEEP_BYTES = 2 << 20               # a size's bandwidth burst moves about this much ...
SWEEP_MESSAGES = (2, 32)            # ... in this many messages at least and at most
# bytes a packet carries besides its payload: LRH, BTH, ICRC, VCRC; RETH on a WRITE's first
LRH, BTH, RETH, ICRC, VCRC = 8, 12, 16, 4, 2
# ... on Ethernet (RoCE v2 over IPv4): Ethernet, IPv4, UDP, BTH, ICRC, FCS, at least 64 bytes,
# and the preamble, SFD and inter-frame gap a MAC puts around every frame
ETHERNET, IPV4, UDP, FCS, ETH_MIN_FRAME, MAC_GAP = 14, 20, 8, 4, 64, 20
WIRE_PATH = "wire-roce" if LINK == "eth" else "wire"     # the fabric's ports' link layer


class Speed:
    """How fast the simulator ran one benchmark: simulated cycles and host-memory AXI beats
    (read + write, counted by sim_axi_ram) per wall-clock second, from here to `record()`."""

    def __init__(self, name, tbs):
        self.name, self.tbs = name, tbs
        self.wall = time.perf_counter()
        self.cycle = tbs[0].cycle()
        self.beats = self._beats()

    def _beats(self):
        return sum(sum(tb.mem.beats) for tb in self.tbs)

    def record(self):
        wall = time.perf_counter() - self.wall
        cycles, beats = self.tbs[0].cycle() - self.cycle, self._beats() - self.beats
        return dict(path="speed", bench=self.name, simulator=os.environ.get("SIM", "icarus"),
                    data_width=self.tbs[0].data_width, cycles=cycles, axi_beats=beats,
                    wall_s=round(wall, 3), cycles_per_s=round(cycles / wall),
                    axi_beats_per_s=round(beats / wall))


def save(records):
    """Append `records` to the JSON list in BENCH_OUT."""
    out = Path(os.environ["BENCH_OUT"])
    previous = json.loads(out.read_text()) if out.exists() else []
    out.write_text(json.dumps(previous + records))


async def region(pd, dev, size):
    mr = await pd.reg_mr(dev.alloc(size), size, ACCESS)
    return mr


async def timed(tb, dev, qp, wr):
    """Post `wr` on `qp` with its send CQ armed; the cycles from the SQ doorbell write to the
    send CQE written, as the harness counts them."""
    await qp.send_cq.req_notify()
    await qp.post_send(wr)
    while not await dev.wait_event():
        pass  # the TB's wait gives up after a while; a long message takes longer
    latency = int(tb.irq_cycle.value) - int(tb.sq_doorbell_cycle.value)
    wcs = await qp.send_cq.poll()
    assert len(wcs) == 1 and wcs[0].status == 0, f"send completion {wcs}"
    return latency


def message(op, length, local_src, local_dst, remote_src, remote_dst, b):
    """(receive to post on `b` or None, the send WR) of one benchmark message."""
    if op == "SEND":
        return RecvWR(remote_dst.sge(0, length), wr_id=length), send(local_src.sge(0, length),
                                                                      wr_id=length)
    if op == "RDMA_WRITE":
        return None, rdma_write(local_src.sge(0, length), remote_dst.remote(0), wr_id=length)
    if op == "FETCH_ADD":
        return None, atomic_fetch_and_add(local_dst.sge(0, 8), remote_dst.remote(0), 1,
                                          wr_id=length)
    return None, rdma_read(local_dst.sge(0, length), remote_src.remote(0), wr_id=length)


def sizes_of(op, sizes):
    return ATOMIC_SIZES if op == "FETCH_ADD" else sizes


def record(path, op, length, data_width, latency, **extra):
    fields = dict(mem_latency=HARNESS_MEM_LATENCY, qps=1, messages=1, link_latency=0, loss=0.0)
    fields.update(extra)
    return dict(path=path, op=op, bytes=length, data_width=data_width, latency_cycles=latency,
                bytes_per_cycle=round(length / latency, 2), **fields)


def set_mem_latency(tbs, latency):
    """Every host memory of `tbs` answers reads `latency` cycles after their AR."""
    for tb in tbs:
        tb.mem.configure(read_latency=latency)


async def loopback(dut, path, sizes, bypass):
    tb, dev, sb = await open_device(dut, mem_size=2**23)
    speed = Speed(path, [tb])
    if not bypass:
        await dev.set_bypass(False)
    pd = dev.alloc_pd()
    scq, rcq = await dev.create_cq(16), await dev.create_cq(16)
    size = max(sizes)
    src, dst = await region(pd, dev, size), await region(pd, dev, size)
    src.write(0, os.urandom(size))
    a = await pd.create_qp(QPType.RC, scq, rcq)
    b = await pd.create_qp(QPType.RC, scq, rcq)
    await connect(a, b, port_a=1)

    records = []
    for op in OPS:
        for length in sizes_of(op, sizes):
            recv, wr = message(op, length, src, dst, src, dst, b)
            if recv:
                await b.post_recv(recv)
            latency = await timed(tb, dev, a, wr)
            if recv:
                await rcq.poll()
            records.append(record(path, op, length, tb.data_width, latency))
    if bypass:
        for mem_latency in BYPASS_STREAM_LATENCIES:
            set_mem_latency([tb], mem_latency)
            wr = rdma_write(src.sge(0, BYPASS_STREAM), dst.remote(0), wr_id=mem_latency)
            latency = await timed(tb, dev, a, wr)
            records.append(record(path, "RDMA_WRITE", BYPASS_STREAM, tb.data_width, latency,
                                  mem_latency=mem_latency))
            wrs = [rdma_write(src.sge(k * BYPASS_STREAM, BYPASS_STREAM),
                              dst.remote(k * BYPASS_STREAM), wr_id=k)
                   for k in range(BYPASS_STREAM_COUNT)]
            cycles = await burst([tb], [scq], [(a, wrs)])
            moved = BYPASS_STREAM * BYPASS_STREAM_COUNT
            assert dst.read(0, moved) == src.read(0, moved)
            records.append(dict(path="bypass-stream", op="RDMA_WRITE", bytes=BYPASS_STREAM,
                                data_width=tb.data_width, mem_latency=mem_latency, qps=1,
                                messages=BYPASS_STREAM_COUNT, link_latency=0, loss=0.0,
                                cycles=cycles, bytes_per_cycle=round(moved / cycles, 2)))
        set_mem_latency([tb], HARNESS_MEM_LATENCY)
        cq = await dev.create_cq(ATOMIC_BURST)
        c = await pd.create_qp(QPType.RC, cq, cq, max_send_wr=ATOMIC_BURST)
        d = await pd.create_qp(QPType.RC, cq, cq)
        await connect(c, d, port_a=1)
        wrs = [atomic_fetch_and_add(dst.sge(8 * k, 8), src.remote(0), 1, wr_id=k)
               for k in range(ATOMIC_BURST)]
        cycles = await burst([tb], [cq], [(c, wrs)])
        records.append(dict(path="bypass-atomic-rate", op="FETCH_ADD", bytes=8,
                            data_width=tb.data_width, mem_latency=HARNESS_MEM_LATENCY, qps=1,
                            messages=ATOMIC_BURST, link_latency=0, loss=0.0,
                            cycles=cycles, cycles_per_message=round(cycles / ATOMIC_BURST, 1)))
    await sb.check()
    tb.assert_links_idle()
    save(records + [speed.record()])


@cocotb.test()
async def bench_bypass(dut):
    """Loopback RC messages through the DMA bypass (tb_rdma_dev)."""
    await loopback(dut, "bypass", SIZES, bypass=True)


@cocotb.test()
async def bench_packet_loopback(dut):
    """Loopback RC messages with CTRL.BYPASS cleared: packetizer, the port's internal loopback,
    depacketizer (tb_rdma_dev)."""
    await loopback(dut, "packet-loopback", PACKET_SIZES, bypass=False)


@cocotb.test()
async def bench_bypass_rate(dut):
    """64-byte RDMA WRITEs over 16 loopback QPs (16 each, posted at once) through the bypass,
    at each host read latency of MEM_LATENCIES (tb_rdma_dev)."""
    tb, dev, sb = await open_device(dut, mem_size=2**23)
    pd = dev.alloc_pd()
    n = RATE_QPS * RATE_PER_QP
    src, dst = await region(pd, dev, 64 * n), await region(pd, dev, 64 * n)
    src.write(0, os.urandom(64 * n))
    senders = []
    for _ in range(RATE_QPS):
        cq = await dev.create_cq(64)
        a = await pd.create_qp(QPType.RC, cq, cq)
        b = await pd.create_qp(QPType.RC, cq, cq)
        await connect(a, b, port_a=1)
        senders.append(a)
    records = []
    for mem_latency in MEM_LATENCIES:
        set_mem_latency([tb], mem_latency)
        posts = [(a, [rdma_write(src.sge(64 * (RATE_PER_QP * i + k), 64),
                                 dst.remote(64 * (RATE_PER_QP * i + k)), wr_id=k)
                      for k in range(RATE_PER_QP)]) for i, a in enumerate(senders)]
        cycles = await burst([tb], [a.send_cq for a in senders], posts)
        assert dst.read(0, 64 * n) == src.read(0, 64 * n)
        records.append(dict(path="bypass-rate", op="RDMA_WRITE", bytes=64,
                            data_width=tb.data_width, mem_latency=mem_latency, qps=RATE_QPS,
                            messages=n, link_latency=0, loss=0.0, cycles=cycles,
                            cycles_per_message=round(cycles / n, 1)))
    await sb.check()
    tb.assert_links_idle()
    save(records)


def sweep_messages(length):
    low, high = SWEEP_MESSAGES
    return max(low, min(high, SWEEP_BYTES // length))


async def sweep(path, tbs, dev, sender, receive_cq, src, dst):
    """Every size of SWEEP_SIZES as one RDMA WRITE (latency) and as a burst of them on one QP
    (bandwidth), from `sender` into `dst`; the records."""
    tb = tbs[0]
    records = []
    for length in SWEEP_SIZES:
        wr = rdma_write(src.sge(0, length), dst.remote(0), wr_id=length)
        latency = await timed(tb, dev, sender, wr)
        count = sweep_messages(length)
        wrs = [rdma_write(src.sge(0, length), dst.remote(0), wr_id=k) for k in range(count)]
        cycles = await burst(tbs, [sender.send_cq], [(sender, wrs)])
        assert dst.read(0, length) == src.read(0, length)
        assert not await receive_cq.poll()
        records.append(dict(path=f"{path}-sweep", op="RDMA_WRITE", bytes=length,
                            data_width=tb.data_width, mem_latency=HARNESS_MEM_LATENCY, qps=1,
                            messages=count, link_latency=0, loss=0.0, latency_cycles=latency,
                            cycles=cycles, bytes_per_cycle=round(length * count / cycles, 3)))
    return records


@cocotb.test()
async def bench_sweep_loopback(dut):
    """The size sweep through the bypass, then through the packet loopback (tb_rdma_dev)."""
    tb, dev, sb = await open_device(dut, mem_size=2**23)
    pd = dev.alloc_pd()
    size = max(SWEEP_SIZES)
    src, dst = await region(pd, dev, size), await region(pd, dev, size)
    src.write(0, os.urandom(size))
    scq, rcq = await dev.create_cq(64), await dev.create_cq(16)
    a = await pd.create_qp(QPType.RC, scq, rcq, max_send_wr=max(SWEEP_MESSAGES))
    b = await pd.create_qp(QPType.RC, scq, rcq)
    await connect(a, b, port_a=1)
    records = await sweep("bypass", [tb], dev, a, rcq, src, dst)
    await dev.set_bypass(False)
    records += await sweep("packet-loopback", [tb], dev, a, rcq, src, dst)
    await sb.check()
    tb.assert_links_idle()
    save(records)


@cocotb.test()
async def bench_sweep_wire(dut):
    """The size sweep from dev0 to dev1 over cable 1 of tb_fabric, RC at path MTU 4096."""
    (tb0, dev0, sb0), (tb1, dev1, sb1) = await open_fabric(dut, mem_size=2**23)
    pd0, pd1 = dev0.alloc_pd(), dev1.alloc_pd()
    size = max(SWEEP_SIZES)
    src, dst = await region(pd0, dev0, size), await region(pd1, dev1, size)
    src.write(0, os.urandom(size))
    cq0, cq1 = await dev0.create_cq(64), await dev1.create_cq(16)
    a = await pd0.create_qp(QPType.RC, cq0, cq0, max_send_wr=max(SWEEP_MESSAGES))
    b = await pd1.create_qp(QPType.RC, cq1, cq1)
    await a.to_rts(b.qp_num, dev1.ports[1].lid, 1, path_mtu=WIRE_MTU)
    await b.to_rts(a.qp_num, dev0.ports[1].lid, 1, path_mtu=WIRE_MTU)
    records = await sweep("wire", [tb0, tb1], dev0, a, cq1, src, dst)
    await sb0.check()
    await sb1.check()
    save(records)


def theoretical_goodput(length, mtu, write, link="ib"):
    """Payload over the bytes of its packets at path MTU `mtu`: LRH to VCRC, or on Ethernet
    the frames and the MAC's gap around each."""
    npkts = max(1, -(-length // mtu))
    sizes = [min(mtu, length - i * mtu) for i in range(npkts)]
    first = RETH if write else 0
    if link == "eth":
        frames = [max(ETH_MIN_FRAME, ETHERNET + IPV4 + UDP + BTH + s + (-s % 4) + ICRC + FCS
                      + (first if i == 0 else 0)) + MAC_GAP for i, s in enumerate(sizes)]
        return length / sum(frames)
    return length / (sum(s + (-s % 4) + LRH + BTH + ICRC + VCRC for s in sizes) + first)


@cocotb.test()
async def bench_wire(dut):
    """dev0 to dev1 over cable 1 of tb_fabric: RC, path MTU 4096, on the link layer of
    RDMA_LINK."""
    (tb0, dev0, sb0), (tb1, dev1, sb1) = await open_fabric(dut, mem_size=2**23)
    speed = Speed(WIRE_PATH, [tb0, tb1])
    pd0, pd1 = dev0.alloc_pd(), dev1.alloc_pd()
    cq0, cq1 = await dev0.create_cq(16), await dev1.create_cq(16)
    size = max(PACKET_SIZES)
    src0, dst0 = await region(pd0, dev0, size), await region(pd0, dev0, size)
    src1, dst1 = await region(pd1, dev1, size), await region(pd1, dev1, size)
    src0.write(0, os.urandom(size))
    src1.write(0, os.urandom(size))
    a = await pd0.create_qp(QPType.RC, cq0, cq0)
    b = await pd1.create_qp(QPType.RC, cq1, cq1)
    await a.to_rts(b.qp_num, dev1.ports[1].lid, 1, path_mtu=WIRE_MTU, grh=fabric_route(dev1))
    await b.to_rts(a.qp_num, dev0.ports[1].lid, 1, path_mtu=WIRE_MTU, grh=fabric_route(dev0))
    link = tb0.sniffers[1]      # dev0 port 1's TX link: the requests (answers come back on dev1's)
    beat_bytes = tb0.data_width // 8

    records = []
    for op in OPS:
        for length in sizes_of(op, PACKET_SIZES):
            recv, wr = message(op, length, src0, dst0, src1, dst1, b)
            if recv:
                await b.post_recv(recv)
            seen = len(link.captures)
            latency = await timed(tb0, dev0, a, wr)
            extra = {}
            if op == "RDMA_WRITE":
                packets = link.captures[seen:]
                link_cycles = link.last_beat_cycle - packets[0].cycle + 1
                npb = [-(-len(c.data) // beat_bytes) for c in packets]    # beats per packet
                beats = sum(npb)
                # idle link cycles between one packet's last beat and the next one's first
                gaps = [q.cycle - p.cycle - n for p, q, n in zip(packets, packets[1:], npb)]
                mac_gaps = MAC_GAP * len(packets) if LINK == "eth" else 0
                extra = dict(packets=len(packets), link_cycles=link_cycles, link_beats=beats,
                             link_gaps=[min(gaps), max(gaps)] if gaps else None,
                             link_goodput=round(length / (beat_bytes * link_cycles + mac_gaps), 4),
                             link_goodput_max=round(theoretical_goodput(
                                 length, WIRE_MTU.size, True, LINK), 4))
            if recv:
                await cq1.poll()
            records.append(record(WIRE_PATH, op, length, tb0.data_width, latency, **extra))
    await sb0.check()
    await sb1.check()
    save(records + [speed.record()])


def fabric_route(peer):
    """The GRH to `peer`'s port 1 on Ethernet (its GID: the driver resolves the MAC); None
    on InfiniBand, where its LID is the address."""
    return GlobalRoute(peer.ports[1].gid) if LINK == "eth" else None


# wire-rate: 256 messages of 64 bytes, a full send window (16) on each of 16 QPs. A message
# rate is a steady state: the one round trip at the end of the burst (some 1,000 cycles at a
# link latency of 500) adds 4 cycles to each of 256 messages, 16 to each of 64.
RATE_QPS, RATE_PER_QP = 16, 16
STREAM_MESSAGES, STREAM_LENGTH = 16, 65536   # wire-stream: 256 packets, some 2.5 lost at 1 %
LOSS_SEED = 0x5EED
POLL_CYCLES = 32                        # completion polling step


async def burst(tbs, cqs, posts):
    """Post every (qp, wrs) of `posts` (one doorbell each), then poll `cqs` (dev0's, every
    POLL_CYCLES) until every WR has completed SUCCESS; the cycles from the first doorbell to
    the last completion's CQE written (dev0's host memory's last write response), as the
    harness timestamps them: nothing else writes there after the burst's last CQE."""
    start = None
    want = 0
    for qp, wrs in posts:
        await qp.post_send(wrs)
        if start is None:
            start = int(tbs[0].sq_doorbell_cycle.value)
        want += len(wrs)
    got = 0
    while got < want:
        for cq in cqs:
            wcs = await cq.poll()
            assert all(wc.status == 0 for wc in wcs), f"completions {wcs}"
            got += len(wcs)
        if got < want:
            await ClockCycles(tbs[0].dut.clk, POLL_CYCLES)
    return int(tbs[0].write_cycle.value) + 1 - start


@cocotb.test()
async def bench_rc_transport(dut):
    """The RC transport with many messages posted: message rate over 16 QPs and one QP's
    streaming goodput, on cables of 0 and 500 cycles latency and (stream) 1 % loss."""
    (tb0, dev0, sb0), (tb1, dev1, sb1) = await open_fabric(dut, mem_size=2**23)
    tbs = (tb0, tb1)
    for sb in (sb0, sb1):
        sb.stop_predicting()        # loss makes the packets unpredictable; the test checks
    pd0, pd1 = dev0.alloc_pd(), dev1.alloc_pd()
    stream_bytes = STREAM_MESSAGES * STREAM_LENGTH
    src = await region(pd0, dev0, stream_bytes)
    dst = await region(pd1, dev1, stream_bytes)
    src.write(0, os.urandom(stream_bytes))
    pairs = []
    for i in range(RATE_QPS):
        cq0, cq1 = await dev0.create_cq(64), await dev1.create_cq(64)
        a = await pd0.create_qp(QPType.RC, cq0, cq0)
        b = await pd1.create_qp(QPType.RC, cq1, cq1)
        await a.to_rts(b.qp_num, dev1.ports[1].lid, 1, path_mtu=WIRE_MTU, timeout=3)
        await b.to_rts(a.qp_num, dev0.ports[1].lid, 1, path_mtu=WIRE_MTU, timeout=3)
        pairs.append(a)
    width = tb0.data_width

    def set_cables(latency, loss=0.0):
        for d, tb in enumerate(tbs):
            LinkFaults(latency=latency, seed=LOSS_SEED + d, drop=loss).apply(tb.cables[1])

    records = []
    for latency in (0, 500):
        set_cables(latency)
        posts = [(a, [rdma_write(src.sge(64 * (RATE_PER_QP * i + k), 64),
                                 dst.remote(64 * (RATE_PER_QP * i + k)), wr_id=k)
                      for k in range(RATE_PER_QP)]) for i, a in enumerate(pairs)]
        cycles = await burst(tbs, [a.send_cq for a in pairs], posts)
        n = RATE_QPS * RATE_PER_QP
        records.append(dict(path="wire-rate", op="RDMA_WRITE", bytes=64, data_width=width,
                            qps=RATE_QPS, messages=n, link_latency=latency, loss=0.0,
                            cycles=cycles, cycles_per_message=round(cycles / n, 1)))
        posts = [(a, [atomic_fetch_and_add(src.sge(8 * (RATE_PER_QP * i + k), 8),
                                           dst.remote(8 * i), 1, wr_id=k)
                      for k in range(RATE_PER_QP)]) for i, a in enumerate(pairs)]
        cycles = await burst(tbs, [a.send_cq for a in pairs], posts)
        records.append(dict(path="wire-atomic-rate", op="FETCH_ADD", bytes=8, data_width=width,
                            qps=RATE_QPS, messages=n, link_latency=latency, loss=0.0,
                            cycles=cycles, cycles_per_message=round(cycles / n, 1)))
    stream = pairs[0]
    base = None
    for latency, loss in ((0, 0.0), (500, 0.0), (500, 0.01)):
        set_cables(latency, loss)
        length = STREAM_LENGTH
        wrs = [rdma_write(src.sge(length * k, length), dst.remote(length * k), wr_id=k)
               for k in range(STREAM_MESSAGES)]
        cycles = await burst(tbs, [stream.send_cq], [(stream, wrs)])
        rate = stream_bytes / cycles
        base = base or rate
        records.append(dict(path="wire-stream", op="RDMA_WRITE", bytes=length, data_width=width,
                            qps=1, messages=STREAM_MESSAGES, link_latency=latency, loss=loss,
                            cycles=cycles, bytes_per_cycle=round(rate, 2),
                            of_lossless_zero_latency=round(rate / base, 3)))
        assert dst.read(0, stream_bytes) == src.read(0, stream_bytes)
    for sb in (sb0, sb1):
        sb.check_device()
    save(records)


# ---------------------------------------------------------------------------------------------
# Run as a script (`make bench`): every benchmark at each data width on $SIM (Icarus by default),
# a table, sim/out/bench.json, the targets (exit 1 if one is missed), and how fast each
# simulator runs the bypass and wire benchmarks at 256 bits.

WIDTHS = (64, 256, 512)
RUNS = (    # (harness, benchmarks: a COCOTB_TEST_FILTER regex)
    ("tb_rdma_dev", "bench_bypass|bench_packet_loopback"),
    ("tb_fabric", "bench_wire$"),
)
TRANSPORT_RUN = ("tb_fabric", "bench_rc_transport")    # at TARGET_WIDTH only
ROCE_RUN = ("tb_fabric", "bench_wire$")     # the wire rows on Ethernet ports, at TARGET_WIDTH
# at TARGET_WIDTH only: the bypass's message rate and the size sweep of the three paths
TARGET_RUNS = (("tb_rdma_dev", "bench_bypass_rate|bench_sweep_loopback"),
               ("tb_fabric", "bench_sweep_wire"))
SWEEP_PATHS = ("bypass", "packet-loopback", "wire")
# dma_mover alone (tools/bench_dma_mover.py), built as its unit tests build it
DMA_MOVER_RUN = dict(harness="tb_dma_mover", tests="bench_dma_mover", module="bench_dma_mover",
                     parameters=dma_mover_tb.PARAMETERS, rtl=dma_mover_tb.RTL_FILES)
# 64 KiB COPY / stream from accept to done: at most this many cycles per beat, plus a fixed 64
DMA_CYCLES_PER_BEAT = 1.05
RATE_TARGET = 10            # cycles per 64-byte message over 16 QPs, 500 cycles of latency
BYPASS_RATE_TARGET = 8      # cycles per 64-byte bypass message over 16 QPs, zero memory latency
LATENCY_SHARE = 0.9         # 64 KiB stream at 500 cycles of latency, of the zero-latency goodput
LOSS_SHARE = 0.7            # ... and at 1 % loss, of the lossless goodput
SPEED_RUNS = (("tb_rdma_dev", "bench_bypass"), ("tb_fabric", "bench_wire$"))
# The same run's wall time varies by a third from one run to the next on a shared machine; the
# fastest of a few measures the simulator rather than its neighbours.
SPEED_REPEATS = 3
# Icarus AXI beats per second at 256 bits before the HDL host memory and link taps (README,
# measured 2026-12-01 with cocotb's AXI RAM, register master and per-beat sniffers), and the
# factor the issue asks on top of them
SPEED_BEFORE = {"bypass": 3500, "wire": 460}
SPEED_GAIN = 5
SIMULATORS = ("icarus", "verilator")
TARGET_WIDTH = 256          # the wire targets are the issue's, at 256 bits
WIRE_GOODPUT_SHARE = 0.98   # of the theoretical link goodput, 64 KiB wire RDMA WRITE, every width
BYPASS_STREAM_WIDTHS = (256, 512)
BYPASS_STREAM_SHARE = {0: 0.99, 500: 0.9}   # of the data width, by host read latency
LATENCY_SLACK = 1.1         # no latency row more than 10 % worse than before issue 23
# the latency rows README recorded before issue 23 (single messages, doorbell to send CQE, read
# latency 2; the file says which and how): the figures LATENCY_SLACK is judged against
BASELINE = Path(__file__).resolve().parent / "bench_baseline.json"
BYPASS_LATENCY_SHARE = 0.5  # 64 B bypass latency at most this share of the 64 B wire latency


def run(simrun, harness, tests, width, module="bench", parameters=None, rtl=None, link="ib"):
    name = f"{module}_{harness}_w{width}" + ("_eth" if link == "eth" else "")
    out = simrun.OUT / f"{name}.json"
    out.unlink(missing_ok=True)
    simrun.run(harness, module, {"DATA_WIDTH": width, **(parameters or {})}, name, rtl=rtl,
               extra_env={"BENCH_OUT": str(out), "COCOTB_TEST_FILTER": tests,
                          "COCOTB_LOG_LEVEL": "WARNING", "GPI_LOG_LEVEL": "ERROR",
                          "RDMA_LINK": link})
    records = json.loads(out.read_text())
    out.unlink()
    return records


def find(records, path, op, length, width, mem_latency=HARNESS_MEM_LATENCY):
    return next((r for r in records if (r["path"], r["op"], r["bytes"], r["data_width"],
                                        r.get("mem_latency")) ==
                 (path, op, length, width, mem_latency)), None)


def print_transport(records):
    print("\nRC transport over cable 1 of tb_fabric (first doorbell to last completion):")
    for r in records:
        if r["path"] in ("wire-rate", "wire-atomic-rate"):
            what = "64 B RDMA WRITE" if r["path"] == "wire-rate" else "8 B FetchAdd"
            print(f"  {what} x {r['messages']} over {r['qps']} QPs at {r['data_width']} "
                  f"bits, link latency {r['link_latency']}: {r['cycles_per_message']} cycles "
                  f"per message")
        elif r["path"] == "wire-stream":
            print(f"  64 KiB RDMA WRITE x {r['messages']} on 1 QP at {r['data_width']} bits, link "
                  f"latency {r['link_latency']}, loss {r['loss']:.0%}: {r['bytes_per_cycle']} "
                  f"B/cycle, {r['of_lossless_zero_latency']:.1%} of the zero-latency lossless "
                  f"stream")


def print_table(records):
    print(f"\n{'path':15} {'op':11} {'bytes':>8} {'width':>5} {'latency':>9} {'B/cycle':>8} "
          f"{'of width':>8}")
    for r in records:
        if "latency_cycles" not in r:
            continue
        share = r["bytes_per_cycle"] / (r["data_width"] / 8)
        print(f"{r['path']:15} {r['op']:11} {r['bytes']:>8} {r['data_width']:>5} "
              f"{r['latency_cycles']:>9} {r['bytes_per_cycle']:>8.2f} {share:>8.1%}")
    print("\nlatency: doorbell write to send CQE written, in cycles")
    for r in records:
        if r["path"] == "bypass-atomic-rate":
            print(f"8 B FetchAdd x {r['messages']} on one QP through the bypass at "
                  f"{r['data_width']} bits: {r['cycles_per_message']} cycles per message")
    print("\nwire RDMA WRITE on the link (dev0 port 1's TX, first to last beat of the message; "
          "RoCE v2 with 20 bytes of preamble and gap a frame):")
    for r in records:
        if r["path"] not in ("wire", "wire-roce") or "link_cycles" not in r:
            continue
        e2e = r["bytes"] / (r["data_width"] // 8 * r["latency_cycles"])
        gaps = (", %d-%d idle cycles between packets" % tuple(r["link_gaps"])
                if r["link_gaps"] else "")
        print(f"  {r['path']:9} {r['bytes']:>6} B at {r['data_width']:>3} bits: {r['packets']} packets in "
              f"{r['link_cycles']} cycles ({r['link_beats']} beats{gaps}), link goodput "
              f"{r['link_goodput']:.2%} of the link ({r['link_goodput'] / r['link_goodput_max']:.1%}"
              f" of the theoretical {r['link_goodput_max']:.2%}); doorbell to CQE {e2e:.2%} of "
              f"the link ({e2e / r['link_goodput_max']:.1%} of the theoretical)")


def print_dma_mover(records):
    print("\ndma_mover alone, 64 KiB from command accept to done (AXI RAM without stalls):")
    for r in records:
        if r["path"] == "dma_mover" and r["op"] != "small":
            print(f"  {r['op']:12} {r['case']:13} at {r['data_width']:>3} bits: {r['cycles']:>5} "
                  f"cycles for {r['beats']:>5} beats, {r['beat_share']:.1%} of a beat per cycle")
    for r in records:
        if r["path"] == "dma_mover" and r["op"] == "small":
            print(f"  at {r['data_width']:>3} bits: 64-byte LOAD {r['load64_cycles']} cycles, "
                  f"32-byte STORE {r['store32_cycles']} cycles, at most {r['max_reads_open']} "
                  f"read bursts in flight")


def fastest(speeds):
    """Of each simulator's runs of each benchmark, the fastest, with the number of runs."""
    groups = {}
    for r in speeds:
        groups.setdefault((r["simulator"], r["bench"]), []).append(r)
    return [dict(max(runs, key=lambda r: r["cycles_per_s"]), runs=len(runs))
            for runs in groups.values()]


def print_speed(speeds):
    print("\nsimulation speed (wall clock of each benchmark, set-up and checks included; the "
          "fastest of each one's runs):")
    print(f"  {'simulator':10} {'bench':16} {'width':>5} {'cycles':>9} {'AXI beats':>10} "
          f"{'wall s':>8} {'cycles/s':>9} {'beats/s':>9} {'runs':>5}")
    for r in speeds:
        print(f"  {r['simulator']:10} {r['bench']:16} {r['data_width']:>5} {r['cycles']:>9} "
              f"{r['axi_beats']:>10} {r['wall_s']:>8.2f} {r['cycles_per_s']:>9} "
              f"{r['axi_beats_per_s']:>9} {r['runs']:>5}")


def check_targets(records, speeds):
    """Print each target's verdict; the ones missed."""
    failures = []

    def verdict(ok, text):
        print(f"target: {text}: {'meets' if ok else 'MISSES'}")
        if not ok:
            failures.append(text)

    print()
    for width in BYPASS_STREAM_WIDTHS:
        for mem_latency, share in BYPASS_STREAM_SHARE.items():
            r = find(records, "bypass-stream", "RDMA_WRITE", BYPASS_STREAM, width, mem_latency)
            if r is None:
                verdict(False, f"64 KiB bypass RDMA WRITE stream at {width} bits, read latency "
                               f"{mem_latency}: no record")
                continue
            got = r["bytes_per_cycle"] / (width / 8)
            verdict(got >= share, f"64 KiB bypass RDMA WRITEs x {r['messages']} at {width} bits, "
                                  f"host read latency {mem_latency}: >= {share:.0%} of the data "
                                  f"width: {got:.1%}")
    baseline = json.loads(BASELINE.read_text())
    for old in baseline["records"]:
        r = find(records, old["path"], old["op"], old["bytes"], old["data_width"])
        if r is None:
            verdict(False, f"{old['path']} {old['op']} {old['bytes']} B at {old['data_width']} "
                           f"bits: no record")
            continue
        limit = LATENCY_SLACK * old["latency_cycles"]
        verdict(r["latency_cycles"] <= limit,
                f"{old['path']} {old['op']} {old['bytes']} B at {old['data_width']} bits: latency "
                f"{r['latency_cycles']} <= {LATENCY_SLACK:g} x {old['latency_cycles']} before")

    for path, width in [("wire", w) for w in WIDTHS] + [("wire-roce", TARGET_WIDTH)]:
        wire = find(records, path, "RDMA_WRITE", 65536, width)
        if wire is None:
            verdict(False, f"64 KiB {path} RDMA WRITE at {width} bits: no record")
            continue
        # judged on the link: doorbell to CQE adds the WQE fetch, the first read and the ACK
        on_link = wire["link_goodput"] / wire["link_goodput_max"]
        verdict(on_link >= WIRE_GOODPUT_SHARE,
                f"64 KiB {path} RDMA WRITE at {width} bits reaches >= {WIRE_GOODPUT_SHARE:.0%} "
                f"of the theoretical link goodput ({wire['link_goodput_max']:.2%}) on the link: "
                f"{on_link:.1%}")

    bypass64 = find(records, "bypass", "RDMA_WRITE", 64, TARGET_WIDTH)
    wire64 = find(records, "wire", "RDMA_WRITE", 64, TARGET_WIDTH)
    if bypass64 is None or wire64 is None:
        verdict(False, f"64 B bypass vs wire latency at {TARGET_WIDTH} bits: no record")
    else:
        verdict(bypass64["latency_cycles"] <= BYPASS_LATENCY_SHARE * wire64["latency_cycles"],
                f"64 B RDMA WRITE at {TARGET_WIDTH} bits: bypass latency "
                f"{bypass64['latency_cycles']} <= {BYPASS_LATENCY_SHARE:g} x wire latency "
                f"{wire64['latency_cycles']} = "
                f"{BYPASS_LATENCY_SHARE * wire64['latency_cycles']:g} cycles")
    for width in WIDTHS:
        b = find(records, "bypass", "RDMA_WRITE", 64, width)
        w = find(records, "wire", "RDMA_WRITE", 64, width)
        if b and w and width != TARGET_WIDTH:
            print(f"  (at {width} bits, not a target: bypass {b['latency_cycles']}, wire "
                  f"{w['latency_cycles']} cycles)")

    for r in records:
        if r["path"] == "dma_mover" and r["op"] != "small":
            limit = int(DMA_CYCLES_PER_BEAT * r["beats"]) + 64
            verdict(r["cycles"] <= limit,
                    f"dma_mover 64 KiB {r['op']} {r['case']} at {r['data_width']} bits in <= "
                    f"{DMA_CYCLES_PER_BEAT} cycles per beat + 64 = {limit}: {r['cycles']}")
        elif r["path"] == "dma_mover":
            verdict(r["max_reads_open"] >= 2,
                    f"dma_mover at {r['data_width']} bits overlaps read bursts (>= 2 in flight): "
                    f"{r['max_reads_open']}")

    def transport(path, latency, loss=0.0):
        return next((r for r in records if r["path"] == path and r["link_latency"] == latency
                     and r["loss"] == loss), None)

    for r in records:
        if r["path"] == "bypass-rate" and r["mem_latency"] == 0:
            verdict(r["cycles_per_message"] <= BYPASS_RATE_TARGET,
                    f"64 B bypass RDMA WRITE over {r['qps']} QPs at {r['data_width']} bits, zero "
                    f"read latency: <= {BYPASS_RATE_TARGET} cycles per message: "
                    f"{r['cycles_per_message']}")
    if not any(r["path"] == "bypass-rate" for r in records):
        verdict(False, "64 B bypass message rate: no record")

    rate = transport("wire-rate", 500)
    if rate is None:
        verdict(False, "64 B RC WRITE message rate at 500 cycles of latency: no record")
    else:
        verdict(rate["cycles_per_message"] <= RATE_TARGET,
                f"64 B RC WRITE over 16 QPs, 500 cycles of latency: <= {RATE_TARGET} cycles per "
                f"message: {rate['cycles_per_message']}")
    slow, lossy = transport("wire-stream", 500), transport("wire-stream", 500, 0.01)
    if slow is None or lossy is None:
        verdict(False, "64 KiB RC WRITE stream at 500 cycles of latency: no record")
    else:
        verdict(slow["of_lossless_zero_latency"] >= LATENCY_SHARE,
                f"64 KiB RC WRITE stream, 500 cycles of latency: >= {LATENCY_SHARE:.0%} of the "
                f"zero-latency goodput: {slow['of_lossless_zero_latency']:.1%}")
        share = lossy["bytes_per_cycle"] / slow["bytes_per_cycle"]
        verdict(share >= LOSS_SHARE,
                f"64 KiB RC WRITE stream at 1 % loss: >= {LOSS_SHARE:.0%} of the lossless "
                f"goodput: {share:.1%}")

    speed = {(r["simulator"], r["bench"]): r for r in speeds}
    for bench, before in SPEED_BEFORE.items():
        icarus, verilator = speed.get(("icarus", bench)), speed.get(("verilator", bench))
        if icarus is None or verilator is None:
            verdict(False, f"{bench} simulation speed: no record")
            continue
        verdict(icarus["axi_beats_per_s"] >= SPEED_GAIN * before,
                f"Icarus {bench} benchmark >= {SPEED_GAIN} x {before} AXI beats/s: "
                f"{icarus['axi_beats_per_s']} ({icarus['axi_beats_per_s'] / before:.1f} x)")
        verdict(verilator["axi_beats_per_s"] > icarus["axi_beats_per_s"],
                f"Verilator faster than Icarus on the {bench} benchmark: "
                f"{verilator['axi_beats_per_s']} AXI beats/s")
    return failures


def print_rates(records):
    print("\nmessage rates (first doorbell to last completion):")
    for r in records:
        if r["path"] == "bypass-stream":
            print(f"  64 KiB RDMA WRITE x {r['messages']} on one loopback QP through the bypass "
                  f"at {r['data_width']} bits, host read latency {r['mem_latency']}: "
                  f"{r['bytes_per_cycle']} B/cycle, {r['bytes_per_cycle'] / (r['data_width'] / 8):.1%}"
                  f" of the data width")
        if r["path"] == "bypass-rate":
            print(f"  64 B RDMA WRITE x {r['messages']} over {r['qps']} loopback QPs through the "
                  f"bypass at {r['data_width']} bits, host read latency {r['mem_latency']}: "
                  f"{r['cycles_per_message']} cycles per message")


def print_sweep(records):
    print(f"\nsize sweep, RDMA WRITE at {TARGET_WIDTH} bits: latency (cycles, doorbell to send "
          f"CQE) / bandwidth (B/cycle, a burst on one QP)")
    rows = {(r["path"][:-len("-sweep")], r["bytes"]): r for r in records
            if r["path"].endswith("-sweep")}
    print(f"  {'bytes':>8} " + " ".join(f"{p:>24}" for p in SWEEP_PATHS))
    for length in SWEEP_SIZES:
        cells = []
        for path in SWEEP_PATHS:
            r = rows.get((path, length))
            cells.append(f"{r['latency_cycles']:>10} / {r['bytes_per_cycle']:>11.2f}" if r
                         else f"{'-':>24}")
        print(f"  {length:>8} " + " ".join(cells))


def plot_sweep(records, out):
    """The size sweep as two panels, latency and bandwidth against message size, one line per
    path: `out` (SVG)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (lat, bw) = plt.subplots(1, 2, figsize=(11, 4.2))
    for path, style in zip(SWEEP_PATHS, ("o-", "s--", "^-.")):
        rows = sorted((r for r in records if r["path"] == f"{path}-sweep"),
                      key=lambda r: r["bytes"])
        if not rows:
            continue
        sizes = [r["bytes"] for r in rows]
        lat.plot(sizes, [r["latency_cycles"] for r in rows], style, label=path)
        bw.plot(sizes, [r["bytes_per_cycle"] for r in rows], style, label=path)
    width = next((r["data_width"] for r in records if r["path"].endswith("-sweep")), TARGET_WIDTH)
    for ax in (lat, bw):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("RDMA WRITE size (bytes)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    lat.set_yscale("log")
    lat.set_ylabel("latency: doorbell to send CQE (cycles)")
    lat.set_title("one message at a time")
    bw.axhline(width / 8, color="grey", linewidth=0.8, linestyle=":")
    bw.set_ylabel("bandwidth (bytes per cycle)")
    bw.set_title(f"messages posted at once on one QP (data width {width // 8} B/cycle)")
    fig.suptitle(f"rdma_dev at {width} bits, host read latency {HARNESS_MEM_LATENCY} cycles")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def main():
    from tb import simrun

    records = [r for width in WIDTHS for harness, tests in RUNS
               for r in run(simrun, harness, tests, width)]
    records += run(simrun, *TRANSPORT_RUN, TARGET_WIDTH)
    records += run(simrun, *ROCE_RUN, TARGET_WIDTH, link="eth")
    records += [r for harness, tests in TARGET_RUNS
                for r in run(simrun, harness, tests, TARGET_WIDTH)]
    records += [r for width in WIDTHS for r in run(simrun, width=width, **DMA_MOVER_RUN)]
    speeds = [r for r in records if r["path"] == "speed" and r["data_width"] == TARGET_WIDTH
              and r["bench"] in ("bypass", "wire")]
    first = simrun.simulator()
    for sim in SIMULATORS:
        os.environ["SIM"] = sim
        for _ in range(SPEED_REPEATS - (sim == first)):
            speeds += [r for harness, tests in SPEED_RUNS
                       for r in run(simrun, harness, tests, TARGET_WIDTH) if r["path"] == "speed"]
    os.environ["SIM"] = first
    speeds = fastest(speeds)
    cycles = [r for r in records if r["path"] != "speed"]
    print_table(cycles)
    print_rates(cycles)
    print_sweep(cycles)
    print_transport(cycles)
    print_dma_mover(cycles)
    print_speed(speeds)
    (simrun.OUT / "bench.json").write_text(json.dumps(cycles + speeds, indent=1) + "\n")
    plot_sweep(cycles, simrun.OUT / "bench.svg")
    print(f"\nrecords in {simrun.OUT / 'bench.json'}, the size sweep in {simrun.OUT / 'bench.svg'}")
    sys.exit(1 if check_targets(cycles, speeds) else 0)


if __name__ == "__main__":
    main()
