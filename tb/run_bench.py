"""`make bench`: run tb/bench.py at each data width, print a table, write sim/out/bench.json,
and say whether the targets are met (exit 1 if not)."""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import simrun  # noqa: E402

WIDTHS = (64, 256, 512)

records = []
for width in WIDTHS:
    out = simrun.OUT / f"bench_w{width}.json"
    out.unlink(missing_ok=True)
    simrun.run("tb_rdma_dev", "bench", {"DATA_WIDTH": width}, f"bench_w{width}",
               extra_env={"BENCH_OUT": str(out), "COCOTB_LOG_LEVEL": "WARNING",
                          "GPI_LOG_LEVEL": "ERROR"})
    records += json.loads(out.read_text())
    out.unlink()
(simrun.OUT / "bench.json").write_text(json.dumps(records, indent=1) + "\n")

print()
print(f"{'path':8} {'op':11} {'bytes':>8} {'width':>5} {'latency':>9} {'B/cycle':>8} {'of width':>8}")
for r in records:
    share = r["bytes_per_cycle"] / (r["data_width"] / 8)
    print(f"{r['path']:8} {r['op']:11} {r['bytes']:>8} {r['data_width']:>5} "
          f"{r['latency_cycles']:>9} {r['bytes_per_cycle']:>8.2f} {share:>8.1%}")
print(f"\nlatency: doorbell write to send CQE written, in cycles; records in {simrun.OUT / 'bench.json'}")

failures = []
for r in records:
    if r["op"] == "RDMA_WRITE" and r["bytes"] == 65536:
        need = 0.9 * r["data_width"] / 8
        verdict = "meets" if r["bytes_per_cycle"] >= need else "MISSES"
        print(f"target: 64 KiB RDMA WRITE at {r['data_width']} bits >= {need:.1f} B/cycle: "
              f"{r['bytes_per_cycle']:.2f}, {verdict}")
        if verdict != "meets":
            failures.append(r)
    if r["op"] == "RDMA_WRITE" and r["bytes"] == 64:
        verdict = "meets" if r["latency_cycles"] <= 100 else "MISSES"
        print(f"target: 64 B RDMA WRITE latency at {r['data_width']} bits <= 100 cycles: "
              f"{r['latency_cycles']}, {verdict}")
        if verdict != "meets":
            failures.append(r)
sys.exit(1 if failures else 0)
