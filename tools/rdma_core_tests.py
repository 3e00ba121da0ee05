"""rdma-core's own test suite against the simulated device (`make rdma-core-tests`).

Runs the suite modules of rdma_core/suite.py (MODULES) from Debian's python3-pyverbs, unmodified,
against tb_rdma_dev at 256 bits through this project's pyverbs layer (rdma_core/pyverbs),
twice: with the bypass switch on (the suite's loopback traffic takes the bypass DMA engine)
and off (the same traffic through the packetizer and the port's internal loopback). Prints
passed / skipped / failed per module and pass, every skip with rdma-core's own reason, every
failure, whether the two passes agree, and writes it all to sim/out/rdma-core-tests.json.
Exits 1 when a test failed.

    python tools/rdma_core_tests.py                      # both passes, every module
    python tools/rdma_core_tests.py --bypass off --modules test_qp
    python tools/rdma_core_tests.py --tests test_device.DeviceTest.test_query_port
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

if __name__ == "__main__":     # run as a script: the tb and rdma_core packages are beside tools/
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rdma_core import suite  # noqa: E402

PASSES = {"on": True, "off": False}
OUTCOMES = ("passed", "skipped", "failed")


def package_version():
    done = subprocess.run(["dpkg-query", "-W", "-f=${Version}", suite.DEBIAN_PACKAGE],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or None


def modules_of(tests):
    return list(dict.fromkeys(t.split(".")[0] for t in tests))


def print_table(passes, modules):
    names = list(passes)
    header = f"{'module':<24}" + "".join(f"  {'bypass ' + n + ':':<13}{'passed':>7}{'skipped':>8}"
                                         f"{'failed':>7}" for n in names)
    print(header)
    totals = {n: dict.fromkeys(OUTCOMES, 0) for n in names}
    for module in modules:
        line = f"{module:<24}"
        for n in names:
            counts = passes[n]["modules"].get(module, dict.fromkeys(OUTCOMES, 0))
            for outcome in OUTCOMES:
                totals[n][outcome] += counts[outcome]
            line += f"  {'':<13}{counts['passed']:>7}{counts['skipped']:>8}{counts['failed']:>7}"
        print(line)
    line = f"{'total':<24}"
    for n in names:
        t = totals[n]
        line += f"  {'':<13}{t['passed']:>7}{t['skipped']:>8}{t['failed']:>7}"
    print(line)
    return totals


def print_skips(passes):
    """Every skip, grouped by rdma-core's reason, with the passes it happened in."""
    by_reason = {}
    for n, record in passes.items():
        for test in record["tests"]:
            if test["outcome"] == "skipped":
                by_reason.setdefault(test["reason"], {}).setdefault(test["id"], []).append(n)
    if not by_reason:
        return
    print("\nskipped, with rdma-core's reason:")
    for reason, tests in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        print(f"  {reason} ({len(tests)}):")
        for test_id, where in tests.items():
            note = "" if len(where) == len(passes) else f"  [bypass {', '.join(where)} only]"
            print(f"    {test_id}{note}")


def print_failures(passes):
    """Every failure, grouped by its exception, with the passes it happened in."""
    by_reason = {}
    for n, record in passes.items():
        for test in record["tests"]:
            if test["outcome"] == "failed":
                by_reason.setdefault(test["reason"], {}).setdefault(test["id"], []).append(n)
    if by_reason:
        print("\nfailed (the traceback of each is in the log above and in the JSON):")
        for reason, tests in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
            print(f"  {reason} ({len(tests)}):")
            for test_id, where in tests.items():
                print(f"    {test_id}  [bypass {', '.join(where)}]")
    return by_reason


def differences(passes):
    """Tests whose outcome differs between the passes (software cannot tell the paths apart,
    so there should be none)."""
    if len(passes) < 2:
        return []
    outcomes = {}
    for n, record in passes.items():
        for test in record["tests"]:
            outcomes.setdefault(test["id"], {})[n] = test["outcome"]
    return [{"id": test_id, **by_pass} for test_id, by_pass in outcomes.items()
            if len(set(by_pass.values())) > 1 or len(by_pass) < len(passes)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bypass", choices=("on", "off", "both"), default="both")
    parser.add_argument("--modules", default=",".join(suite.MODULES),
                        help="suite modules, comma separated (default: %(default)s)")
    parser.add_argument("--tests", default="",
                        help="only these test ids, comma separated, e.g. "
                             "test_device.DeviceTest.test_query_port")
    parser.add_argument("--json", default=None, help="results file (default: "
                        "sim/out/rdma-core-tests.json)")
    args = parser.parse_args()

    from tb import simrun
    from tb.seed import SEED

    if not suite.install_package():
        sys.exit(f"{suite.DEBIAN_SUITE} is missing and {suite.DEBIAN_PACKAGE} could not be "
                 f"installed")
    source = suite.unpack()
    tests = [t for t in args.tests.split(",") if t]
    modules = [m for m in args.modules.split(",") if m]
    if tests:
        modules = [m for m in modules if m in modules_of(tests)] or modules_of(tests)
    names = list(PASSES) if args.bypass == "both" else [args.bypass]
    version = package_version()
    print(f"rdma-core's suite ({suite.DEBIAN_PACKAGE} {version}, unpacked in {source}) on "
          f"{suite.HARNESS} {suite.PARAMETERS}, {simrun.simulator()}; SEED={SEED} (replay with "
          f"SEED={SEED})")

    passes = {}
    for n in names:
        print(f"\n=== bypass {n}: {', '.join(modules)}", flush=True)
        start = time.monotonic()
        record = suite.run_pass(PASSES[n], modules, tests, seed=SEED)
        record["modules"] = suite.summary(record["tests"])
        record["seconds"] = round(time.monotonic() - start, 1)
        passes[n] = record

    print(f"\nrdma-core tests on the simulated device ({simrun.simulator()}):")
    totals = print_table(passes, modules)
    print_skips(passes)
    failed = print_failures(passes)
    differ = differences(passes)
    if len(passes) > 1:
        if differ:
            print("\nthe passes differ:")
            for d in differ:
                print(f"  {d['id']}: " + ", ".join(f"bypass {n} {d.get(n, '-')}" for n in names))
        else:
            print("\nthe passes agree: the same tests passed and skipped with the bypass on "
                  "and off")
    for n, record in passes.items():
        print(f"bypass {n}: the loopback bypass moved {record['loopback_messages']} messages "
              f"({record['loopback_bytes']} bytes); {record['seconds']} s"
              + (f"; left on the device: {record['left_on_device']}"
                 if record["left_on_device"] else ""))

    out = Path(args.json) if args.json else simrun.OUT / "rdma-core-tests.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "suite": {"package": suite.DEBIAN_PACKAGE, "version": version, "source": str(source)},
        "harness": suite.HARNESS,
        "parameters": suite.PARAMETERS,
        "simulator": simrun.simulator(),
        "seed": SEED,
        "modules": modules,
        "totals": {f"bypass {n}": totals[n] for n in names},
        "passes": {f"bypass {n}": {
            "modules": record["modules"],
            "loopback_messages": record["loopback_messages"],
            "loopback_bytes": record["loopback_bytes"],
            "left_on_device": record["left_on_device"],
            "seconds": record["seconds"],
            "tests": [{k: t[k] for k in ("id", "module", "outcome", "reason", "cycles")}
                      | ({"detail": t["detail"]} if t["outcome"] == "failed" else {})
                      for t in record["tests"]],
        } for n, record in passes.items()},
        "passes_agree": not differ,
        "differences": differ,
    }
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"results in {out}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
