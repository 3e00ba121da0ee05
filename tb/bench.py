"""Clock-cycle benchmarks, one message at a time, on three paths:

- "bypass": a loopback RC QP pair on one device (tb_rdma_dev) through the loopback bypass;
- "packet-loopback": the same with CTRL.BYPASS cleared, through the packetizer, the port's
  internal loopback and the depacketizer (tb_rdma_dev);
- "wire": dev0 to dev1 of tb_fabric over cable 1, RC, path MTU 4096.

Latency is counted by the harness, not by Python: from the cycle the send-queue doorbell write
is accepted to the cycle irq rises for the armed send CQ, i.e. the send CQE is in host memory.
Host memory (AxiRam) answers without backpressure. For a wire RDMA WRITE the record also has
the link figures: the cycles from the first to the last beat of the message's packets on the
link (`link_cycles`), and the payload bytes per link byte over them (`link_goodput`) beside
the best the packet format allows (`link_goodput_max`: payload over payload plus LRH, BTH,
the first packet's RETH, pad, ICRC and VCRC). Which benchmarks run is chosen by
COCOTB_TEST_FILTER (tb/run_bench.py); each appends its records to the JSON file in BENCH_OUT.
"""

import json
import os
from pathlib import Path

import cocotb

from rdma_tb import open_device, open_fabric
from verbs import MTU, Access, QPType, RecvWR, connect, rdma_read, rdma_write, send

SIZES = (64, 4096, 65536, 1 << 20)
PACKET_SIZES = (64, 4096, 65536)    # the packet paths are slower to simulate: no 1 MiB
OPS = ("RDMA_WRITE", "SEND", "RDMA_READ")
ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
WIRE_MTU = MTU.MTU4096
# bytes a packet carries besides its payload: LRH, BTH, ICRC, VCRC; RETH on a WRITE's first
LRH, BTH, RETH, ICRC, VCRC = 8, 12, 16, 4, 2


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
    return None, rdma_read(local_dst.sge(0, length), remote_src.remote(0), wr_id=length)


def record(path, op, length, data_width, latency, **extra):
    return dict(path=path, op=op, bytes=length, data_width=data_width, latency_cycles=latency,
                bytes_per_cycle=round(length / latency, 2), **extra)


async def loopback(dut, path, sizes, bypass):
    tb, dev, sb = await open_device(dut, mem_size=2**23)
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
        for length in sizes:
            recv, wr = message(op, length, src, dst, src, dst, b)
            if recv:
                await b.post_recv(recv)
            latency = await timed(tb, dev, a, wr)
            if recv:
                await rcq.poll()
            records.append(record(path, op, length, tb.data_width, latency))
    await sb.check()
    tb.assert_links_idle()
    save(records)


@cocotb.test()
async def bench_bypass(dut):
    """Loopback RC messages through the DMA bypass (tb_rdma_dev)."""
    await loopback(dut, "bypass", SIZES, bypass=True)


@cocotb.test()
async def bench_packet_loopback(dut):
    """Loopback RC messages with CTRL.BYPASS cleared: packetizer, the port's internal loopback,
    depacketizer (tb_rdma_dev)."""
    await loopback(dut, "packet-loopback", PACKET_SIZES, bypass=False)


def theoretical_goodput(length, mtu, write):
    """Payload over the bytes of its packets (LRH to VCRC) at path MTU `mtu`."""
    npkts = max(1, -(-length // mtu))
    sizes = [min(mtu, length - i * mtu) for i in range(npkts)]
    total = sum(s + (-s % 4) + LRH + BTH + ICRC + VCRC for s in sizes) + (RETH if write else 0)
    return length / total


@cocotb.test()
async def bench_wire(dut):
    """dev0 to dev1 over cable 1 of tb_fabric: RC, path MTU 4096."""
    (tb0, dev0, sb0), (tb1, dev1, sb1) = await open_fabric(dut, mem_size=2**23)
    pd0, pd1 = dev0.alloc_pd(), dev1.alloc_pd()
    cq0, cq1 = await dev0.create_cq(16), await dev1.create_cq(16)
    size = max(PACKET_SIZES)
    src0, dst0 = await region(pd0, dev0, size), await region(pd0, dev0, size)
    src1, dst1 = await region(pd1, dev1, size), await region(pd1, dev1, size)
    src0.write(0, os.urandom(size))
    src1.write(0, os.urandom(size))
    a = await pd0.create_qp(QPType.RC, cq0, cq0)
    b = await pd1.create_qp(QPType.RC, cq1, cq1)
    await a.to_rts(b.qp_num, dev1.ports[1].lid, 1, path_mtu=WIRE_MTU)
    await b.to_rts(a.qp_num, dev0.ports[1].lid, 1, path_mtu=WIRE_MTU)
    link = tb0.sniffers[1]      # dev0 port 1's TX link: the requests (answers come back on dev1's)
    beat_bytes = tb0.data_width // 8

    records = []
    for op in OPS:
        for length in PACKET_SIZES:
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
                extra = dict(packets=len(packets), link_cycles=link_cycles, link_beats=beats,
                             link_gaps=[min(gaps), max(gaps)] if gaps else None,
                             link_goodput=round(length / (beat_bytes * link_cycles), 4),
                             link_goodput_max=round(theoretical_goodput(length, WIRE_MTU.size,
                                                                        True), 4))
            if recv:
                await cq1.poll()
            records.append(record("wire", op, length, tb0.data_width, latency, **extra))
    await sb0.check()
    await sb1.check()
    save(records)
