"""Clock-cycle benchmarks of the loopback bypass, one message at a time.

Latency is counted by the harness, not by Python: from the cycle the send-queue doorbell write
is accepted to the cycle irq rises for the armed send CQ, i.e. the send CQE is in host memory.
Host memory (AxiRam) answers without backpressure. Records go to the JSON file in BENCH_OUT.
"""

import json
import os

import cocotb

from rdma_tb import open_device
from verbs import Access, QPType, RecvWR, connect, rdma_read, rdma_write, send

SIZES = (64, 4096, 65536, 1 << 20)
OPS = ("RDMA_WRITE", "SEND", "RDMA_READ")


@cocotb.test()
async def bench_bypass(dut):
    tb, dev, sb = await open_device(dut, mem_size=2**23)
    pd = dev.alloc_pd()
    scq, rcq = await dev.create_cq(16), await dev.create_cq(16)
    size = max(SIZES)
    access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
    src = await pd.reg_mr(dev.alloc(size), size, access)
    dst = await pd.reg_mr(dev.alloc(size), size, access)
    src.write(0, os.urandom(size))
    a = await pd.create_qp(QPType.RC, scq, rcq)
    b = await pd.create_qp(QPType.RC, scq, rcq)
    await connect(a, b, port_a=1)

    records = []
    for op in OPS:
        for length in SIZES:
            if op == "SEND":
                await b.post_recv(RecvWR(dst.sge(0, length), wr_id=length))
                wr = send(src.sge(0, length), wr_id=length)
            elif op == "RDMA_WRITE":
                wr = rdma_write(src.sge(0, length), dst.remote(0), wr_id=length)
            else:
                wr = rdma_read(dst.sge(0, length), src.remote(0), wr_id=length)
            await scq.req_notify()
            await a.post_send(wr)
            while not await dev.wait_event():
                pass  # the TB's wait gives up after a while; a 1 MiB message takes longer
            latency = int(dut.irq_cycle.value) - int(dut.sq_doorbell_cycle.value)
            await scq.poll()
            if op == "SEND":
                await rcq.poll()
            records.append(dict(path="bypass", op=op, bytes=length, data_width=tb.data_width,
                                latency_cycles=latency,
                                bytes_per_cycle=round(length / latency, 2)))
    await sb.check()
    tb.assert_links_idle()
    with open(os.environ["BENCH_OUT"], "w") as f:
        json.dump(records, f)
