"""`make sim`: build rdma_dev under Icarus, run the demonstration, print its report and the
path of the waveform it left."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
os.environ["WAVES"] = "1"
import simrun  # noqa: E402

report = simrun.OUT / "demo_report.txt"
report.unlink(missing_ok=True)
simrun.run("tb_rdma_dev", "demo", {"DATA_WIDTH": 256}, "demo",
           extra_env={"DEMO_REPORT": str(report), "COCOTB_LOG_LEVEL": "WARNING",
                      "GPI_LOG_LEVEL": "ERROR"})
if not report.exists():
    sys.exit("the demonstration failed: see the simulator output above")
print()
print(report.read_text())
print(f"waveform: {simrun.OUT / 'demo.fst'}  (make waves opens it)")
