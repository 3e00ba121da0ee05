"""`make sim`: build rdma_dev under Icarus, run the demonstration, print its report, the path
of the waveform it left, and the pcap of each link (decoded by tshark when it is there)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
os.environ["WAVES"] = "1"
import simrun  # noqa: E402

report = simrun.OUT / "demo_report.txt"
report.unlink(missing_ok=True)
simrun.run("tb_rdma_dev", "demo", {"DATA_WIDTH": 256, "CABLE": 1}, "demo",
           extra_env={"DEMO_REPORT": str(report), "COCOTB_LOG_LEVEL": "WARNING",
                      "GPI_LOG_LEVEL": "ERROR"})
if not report.exists():
    sys.exit("the demonstration failed: see the simulator output above")
print()
print(report.read_text())
print(f"waveform: {simrun.OUT / 'demo.fst'}  (make waves opens it)")

# Each link's pcap, decoded by tshark when it is installed: every frame must be InfiniBand.
for pcap in sorted(simrun.OUT.glob("demo_port*.pcap")):
    if not shutil.which("tshark"):
        print(f"pcap: {pcap} (tshark not installed: not decoded here)")
        continue
    out = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", "-e", "frame.protocols"],
                         capture_output=True, text=True, check=True).stdout.split()
    ib = sum("infiniband" in frame for frame in out)
    print(f"pcap: {pcap}: tshark decodes {ib} of {len(out)} frames as InfiniBand")
    if ib != len(out):
        sys.exit(f"tshark did not decode every frame of {pcap} as InfiniBand")
