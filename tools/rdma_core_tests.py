"""rdma-core's own test suite against the simulated device (`make rdma-core-tests`).

Runs the suite modules of rdma_core/suite.py (MODULES) from Debian's python3-pyverbs, unmodified,
against tb_rdma_dev at 256 bits through this project's pyverbs layer (rdma_core/pyverbs), in
one pass per link layer of the ports (InfiniBand; Ethernet, RoCE v2) and bypass setting: with
the bypass switch on (the suite's loopback traffic takes the bypass DMA engine) and off (the
same traffic through the packetizer and the port's internal loopback). Prints passed /
skipped / failed per module and pass, every skip with rdma-core's own reason, every failure,
whether the bypass settings agree on each link layer, what changes on Ethernet, and writes it
all to sim/out/rdma-core-tests.json. Exits 1 when a test failed.

    python tools/rdma_core_tests.py                      # both link layers, bypass on and off
    python tools/rdma_core_tests.py --link eth --bypass off --modules test_qp
    RDMA_LINK=eth python tools/rdma_core_tests.py        # Ethernet only
    python tools/rdma_core_tests.py --tests test_device.DeviceTest.test_query_port
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

if __name__ == "__main__":     # run as a script: the tb and rdma_core packages are beside tools/
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rdma_core import suite  # noqa: E402

BYPASS = {"on": True, "off": False}
LINK_NAMES = {"ib": "InfiniBand", "eth": "Ethernet (RoCE v2)"}
OUTCOMES = ("passed", "skipped", "failed")
COLUMN = 24     # a pass's columns: passed, skipped, failed


def package_version():
    done = subprocess.run(["dpkg-query", "-W", "-f=${Version}", suite.DEBIAN_PACKAGE],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or None


def modules_of(tests):
    return list(dict.fromkeys(t.split(".")[0] for t in tests))


def pass_name(link, bypass):
    return f"{link}, bypass {bypass}"


def print_table(passes, modules):
    """passes: pass name -> record. One column group per pass, headed by its link layer and
    bypass setting."""
    names = list(passes)
    print(f"{'':<24}" + "".join(f"  {n:>{COLUMN - 2}}" for n in names))
    print(f"{'module':<24}"
          + f"  {'passed':>{COLUMN - 17}}{'skipped':>8}{'failed':>7}" * len(names))
    totals = {n: dict.fromkeys(OUTCOMES, 0) for n in names}

    def line(label, counts_of):
        row = f"{label:<24}"
        for n in names:
            counts = counts_of(n)
            row += f"  {counts['passed']:>{COLUMN - 17}}{counts['skipped']:>8}{counts['failed']:>7}"
        print(row)

    for module in modules:
        for n in names:
            for outcome in OUTCOMES:
                totals[n][outcome] += passes[n]["modules"].get(module, {}).get(outcome, 0)
        line(module, lambda n: passes[n]["modules"].get(module, dict.fromkeys(OUTCOMES, 0)))
    line("total", lambda n: totals[n])
    return totals


def grouped(passes, outcome):
    """{reason: {test id: [pass names]}} of the tests with `outcome`."""
    by_reason = {}
    for n, record in passes.items():
        for test in record["tests"]:
            if test["outcome"] == outcome:
                by_reason.setdefault(test["reason"], {}).setdefault(test["id"], []).append(n)
    return by_reason


def print_skips(passes):
    """Every skip, grouped by rdma-core's reason, with the passes it happened in."""
    by_reason = grouped(passes, "skipped")
    if not by_reason:
        return
    print("\nskipped, with rdma-core's reason:")
    for reason, tests in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        print(f"  {reason} ({len(tests)}):")
        for test_id, where in tests.items():
            note = "" if len(where) == len(passes) else f"  [{'; '.join(where)} only]"
            print(f"    {test_id}{note}")


def print_failures(passes):
    """Every failure, grouped by its exception, with the passes it happened in."""
    by_reason = grouped(passes, "failed")
    if by_reason:
        print("\nfailed (the traceback of each is in the log above and in the JSON):")
        for reason, tests in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
            print(f"  {reason} ({len(tests)}):")
            for test_id, where in tests.items():
                print(f"    {test_id}  [{'; '.join(where)}]")
    return by_reason


def outcome_table(records, with_reasons=False):
    """{test id: {key: outcome}} over records, key -> pass record; with_reasons: a skip's
    outcome is "skipped: " and its reason."""
    outcomes = {}
    for key, record in records.items():
        for test in record["tests"]:
            outcome = test["outcome"]
            if with_reasons and outcome == "skipped":
                outcome += f": {test['reason']}"
            outcomes.setdefault(test["id"], {})[key] = outcome
    return outcomes


def bypass_differences(runs):
    """Tests whose outcome differs between the bypass settings on one link layer (software
    cannot tell the paths apart, so there should be none). runs: (link, bypass) -> record."""
    found = []
    for link in dict.fromkeys(link for link, _ in runs):
        settings = {bypass: record for (on, bypass), record in runs.items() if on == link}
        if len(settings) < 2:
            continue
        for test_id, by_bypass in outcome_table(settings).items():
            if len(set(by_bypass.values())) > 1 or len(by_bypass) < len(settings):
                found.append({"id": test_id, "link": link,
                              **{f"bypass {b}": o for b, o in by_bypass.items()}})
    return found


def link_differences(runs):
    """Tests whose outcome (or skip reason) on Ethernet differs from InfiniBand's with the same
    bypass setting: what RoCE v2 ports change (the RoCE tests run, and the suite asks a RoCE
    port for what it lacks). One entry per test and pair of outcomes, with the bypass
    settings it was seen with."""
    found = {}
    for bypass in dict.fromkeys(bypass for _, bypass in runs):
        by_link = {link: record for (link, b), record in runs.items() if b == bypass}
        if len(by_link) < 2:
            continue
        for test_id, outcomes in outcome_table(by_link, with_reasons=True).items():
            pair = (outcomes.get("ib", "not run"), outcomes.get("eth", "not run"))
            if pair[0] != pair[1]:
                found.setdefault((test_id, pair), []).append(bypass)
    return [{"id": test_id, "ib": ib, "eth": eth, "bypass": settings}
            for (test_id, (ib, eth)), settings in found.items()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--link", choices=("ib", "eth", "both"),
                        default=os.environ.get("RDMA_LINK", "").strip() or "both",
                        help="the ports' link layer: InfiniBand, Ethernet (RoCE v2) or one pass "
                             "each (default: RDMA_LINK if set, else both)")
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
    links = list(suite.LINKS) if args.link == "both" else [args.link]
    settings = list(BYPASS) if args.bypass == "both" else [args.bypass]
    version = package_version()
    print(f"rdma-core's suite ({suite.DEBIAN_PACKAGE} {version}, unpacked in {source}) on "
          f"{suite.HARNESS} {suite.PARAMETERS}, {simrun.simulator()}; SEED={SEED} (replay with "
          f"SEED={SEED})")

    runs = {}       # (link, bypass) -> the pass's record
    for link in links:
        for bypass in settings:
            print(f"\n=== ports on {LINK_NAMES[link]}, bypass {bypass}: {', '.join(modules)}",
                  flush=True)
            start = time.monotonic()
            record = suite.run_pass(BYPASS[bypass], modules, tests, seed=SEED, link=link)
            if record["link"] != link:
                sys.exit(f"the pass for {link} ran with the ports on {record['link']}")
            record["modules"] = suite.summary(record["tests"])
            record["seconds"] = round(time.monotonic() - start, 1)
            runs[link, bypass] = record
    passes = {pass_name(*key): record for key, record in runs.items()}

    print(f"\nrdma-core tests on the simulated device ({simrun.simulator()}):")
    totals = print_table(passes, modules)
    print_skips(passes)
    failed = print_failures(passes)
    differ = bypass_differences(runs)
    if len(settings) > 1:
        if differ:
            print("\nthe bypass settings differ:")
            for d in differ:
                print(f"  {d['id']} ({d['link']}): " + ", ".join(
                    f"bypass {b} {d.get(f'bypass {b}', '-')}" for b in settings))
        else:
            print("\nthe bypass settings agree: on each link layer the same tests passed and "
                  "skipped with the bypass on and off")
    on_ethernet = link_differences(runs)
    if on_ethernet:
        print("\non Ethernet, unlike InfiniBand:")
        for d in on_ethernet:
            print(f"  {d['id']} (bypass {', '.join(d['bypass'])}):\n    Ethernet {d['eth']}"
                  f"\n    InfiniBand {d['ib']}")
    for n, record in passes.items():
        print(f"{n}: the loopback bypass moved {record['loopback_messages']} messages "
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
        "totals": totals,
        "passes": {pass_name(link, bypass): {
            "link": link,
            "bypass": bypass,
            "modules": record["modules"],
            "loopback_messages": record["loopback_messages"],
            "loopback_bytes": record["loopback_bytes"],
            "left_on_device": record["left_on_device"],
            "seconds": record["seconds"],
            "tests": [{k: t[k] for k in ("id", "module", "outcome", "reason", "cycles")}
                      | ({"detail": t["detail"]} if t["outcome"] == "failed" else {})
                      for t in record["tests"]],
        } for (link, bypass), record in runs.items()},
        "bypass_settings_agree": not differ,
        "bypass_differences": differ,
        "ethernet_differences": on_ethernet,
    }
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"results in {out}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
