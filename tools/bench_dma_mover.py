"""Clock-cycle benchmarks of dma_mover alone (tb/hdl/tb_dma_mover.v, host memory a cocotbext-axi
AxiRam that never stalls): a 64 KiB COPY at three source/destination alignments, 64 KiB
READ_STREAM and WRITE_STREAM aligned and at offset 29, each counted from the command's accept
to its done; the latency of the small LOAD and STORE the device issues per WQE and CQE; and
the most read bursts in flight at once (reads must overlap). Each record goes to the JSON
file in BENCH_OUT; tools/bench.py runs this at every width and judges the targets."""

import cocotb

from bench import save
from tb.dma_mover_tb import DST_BASE, MODE_LOAD, MODE_STORE, TB

LENGTH = 64 << 10


def record(tb, op, case, cycles, **extra):
    beats = LENGTH // tb.beat
    return dict(path="dma_mover", op=op, case=case, bytes=LENGTH, data_width=tb.width,
                cycles=cycles, beats=beats, beat_share=beats / cycles, **extra)


@cocotb.test()
async def bench_dma_mover(dut):
    tb = TB(dut, "bench_dma_mover")
    await tb.reset()
    records = []
    for case, src, dst in (("aligned", 0x10000, DST_BASE + 0x10000),
                           ("src+3 dst+61", 0x30003, DST_BASE + 0x3003D),
                           ("src+61 dst+3", 0x5003D, DST_BASE + 0x50003)):
        records.append(record(tb, "COPY", case, await tb.copy(src, dst, LENGTH)))
    reads_open = tb.max_reads_open
    for case, off in (("aligned", 0), ("offset 29", 29)):
        records.append(record(tb, "READ_STREAM", case, await tb.read_stream(0x10000 + off, LENGTH)))
        records.append(record(tb, "WRITE_STREAM", case,
                              await tb.write_stream(DST_BASE + 0x30000 + off, LENGTH)))
    _, _, load = await tb.command(MODE_LOAD, 0x7003, 0, 64)
    _, _, store = await tb.command(MODE_STORE, 0, DST_BASE + 0x7020, 32, bytes(64))
    records.append(dict(path="dma_mover", op="small", bytes=64, data_width=tb.width, load64_cycles=load,
                        store32_cycles=store, max_reads_open=reads_open))
    save(records)
