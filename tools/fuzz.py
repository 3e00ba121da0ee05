"""make fuzz: fuzz runs (tests/test_fuzz.py, tb/fuzz.py) of FUZZ_PACKETS packets and FUZZ_WRS
work requests in all (default 100,000 and 10,000) at SEED (default 1), on Verilator unless SIM
says otherwise. FUZZ_BETWEEN says across what: "port" (one device, its ports cabled), "fabric"
(two devices cabled) or "both" (the default: the two runs side by side on two cores). RDMA_LINK
says on what link layer: "ib" (InfiniBand, the default), "eth" (Ethernet, RoCE v2) or "both"
(the InfiniBand runs, then the Ethernet ones). The sizes are split between the runs. Prints
what was injected by kind and where it ended, and the rates, and writes sim/out/fuzz.json: the
runs' sums, and each run's own report under "runs". FUZZ_KINDS (a regular expression) keeps
only the packet kinds it matches. Exit status 1 when an invariant broke (the run printed the
seed, a replay command and a pcap)."""

import json
import os
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from tb import simrun
from tb.rdma_tb import LINK_NAMES

HARNESSES = {"port": ("tb_rdma_dev", {"DATA_WIDTH": 256, "CABLE": 1}),
             "fabric": ("tb_fabric", {"DATA_WIDTH": 256})}
FATES = ("injected", "link-dropped", "QP-dropped", "taken by a QP")
SUMMED = ("packets", "wrs", "batches", "commands", "canary_rounds")


def run_name(between, link):
    """How a run is named (its report sim/out/fuzz-<name>.json): "port", "fabric" on
    InfiniBand, "port-eth", "fabric-eth" on Ethernet."""
    return between if link == "ib" else f"{between}-{link}"


def _others(tally, prefix):
    return ", ".join(f"{k[len(prefix):]} {v}" for k, v in tally.items() if k.startswith(prefix))


def print_report(report):
    print(f"\n{'packet kind':32} {'injected':>9} {'link drop':>9} {'QP drop':>8} {'taken':>7}  "
          f"answers; completions; QPs to ERR")
    totals = dict.fromkeys(FATES, 0)
    for kind, tally in report["kinds"].items():
        for fate in FATES:
            totals[fate] += tally.get(fate, 0)
        extra = "; ".join(filter(None, (_others(tally, "answer "),
                                        _others(tally, "send ") + _others(tally, "recv "),
                                        ", ".join(f"{k} {v}" for k, v in tally.items()
                                                  if k.endswith("to ERR")))))
        print(f"{kind:32} " + " ".join(f"{tally.get(f, 0):>{w}}" for f, w in
                                       zip(FATES, (9, 9, 8, 7))) + f"  {extra}")
    print(f"{'all':32} " + " ".join(f"{totals[f]:>{w}}" for f, w in zip(FATES, (9, 9, 8, 7))))
    wrs = report["work_requests"]
    print("\nwork requests: " + ", ".join(f"{k} {v}" for k, v in wrs.items()))
    print(f"\n{report['commands']} random commands: "
          + ", ".join(f"{k} {v}" for k, v in report["command_results"].items()))
    for run in report["runs"].values():
        print(f"across {run['between']} on {LINK_NAMES[run['link']]}: {run['packets']} packets and "
              f"{run['wrs']} work requests in {run['seconds']} s ({run['packets_per_second']} "
              f"packets/s, {run['wrs_per_second']} WRs/s), {run['batches']} batches, "
              f"{run['canary_rounds']} canary rounds (the slowest "
              f"{run['canary_worst_cycles']} cycles)")
    print(f"\nseed {report['seed']}: {report['packets']} packets and {report['wrs']} work "
          f"requests in {report['seconds']} s ({report['packets_per_second']} packets/s, "
          f"{report['wrs_per_second']} WRs/s; {report['wall_seconds']} s with the builds), "
          f"{len(report['violations'])} violations")
    for violation in report["violations"]:
        print(f"  VIOLATION: {violation}")


def merge(runs, wall_seconds):
    """One report of the runs (name -> report): counts summed, rates over the time they took,
    the runs of one link layer side by side (the longest of them), the link layers one after
    the other."""
    seconds = sum(max(run["seconds"] for run in runs.values() if run["link"] == link)
                  for link in {run["link"] for run in runs.values()})
    merged = {"seed": next(iter(runs.values()))["seed"], "between": " and ".join(runs),
              "seconds": round(seconds, 1), "wall_seconds": round(wall_seconds, 1)}
    for key in SUMMED:
        merged[key] = sum(run[key] for run in runs.values())
    for rate, count in (("packets_per_second", "packets"), ("wrs_per_second", "wrs")):
        merged[rate] = round(merged[count] / seconds, 1) if seconds else None
    merged["canary_worst_cycles"] = max(run["canary_worst_cycles"] for run in runs.values())
    merged["violations"] = [f"{name}: {v}" for name, run in runs.items()
                            for v in run["violations"]]
    kinds = {}
    for run in runs.values():
        for kind, tally in run["kinds"].items():
            kinds.setdefault(kind, Counter()).update(tally)
    merged["kinds"] = {kind: dict(sorted(t.items())) for kind, t in sorted(kinds.items())}
    for key in ("work_requests", "command_results"):
        merged[key] = dict(sorted(sum((Counter(run[key]) for run in runs.values()),
                                      Counter()).items()))
    merged["runs"] = runs
    return merged


def fuzz_one(between, link, packets, wrs):
    """One run across `between` on `link`; its report, or None when it broke before writing
    one."""
    toplevel, parameters = HARNESSES[between]
    name = run_name(between, link)
    report = simrun.OUT / f"fuzz-{name}.json"
    report.unlink(missing_ok=True)
    failed = False
    try:
        simrun.run(toplevel=toplevel, test_module="test_fuzz", parameters=parameters,
                   name=f"fuzz-{name}",
                   extra_env={"FUZZ_BETWEEN": between, "RDMA_LINK": link,
                              "FUZZ_PACKETS": str(packets), "FUZZ_WRS": str(wrs)})
    except AssertionError as failure:
        print(failure)
        failed = True
    return (json.loads(report.read_text()) if report.exists() else None), failed


def main():
    os.environ.setdefault("SEED", "1")
    # each run gets its own sizes and link layer: the runner lets the environment override
    # what it is given
    packets = int(os.environ.pop("FUZZ_PACKETS", "100000"))
    wrs = int(os.environ.pop("FUZZ_WRS", "10000"))
    between = os.environ.pop("FUZZ_BETWEEN", "both")
    link = os.environ.pop("RDMA_LINK", "ib").strip() or "ib"
    os.environ.pop("FUZZ_REPORT", None)     # each run writes its own (test_fuzz's default)
    betweens = list(HARNESSES) if between == "both" else [between]
    links = list(LINK_NAMES) if link == "both" else [link]
    if not set(betweens) <= set(HARNESSES):
        sys.exit(f"FUZZ_BETWEEN is port, fabric or both, not {between!r}")
    if not set(links) <= set(LINK_NAMES):
        sys.exit(f"RDMA_LINK is ib, eth or both, not {link!r}")
    runs = [(b, lk) for lk in links for b in betweens]
    # the first run takes the remainder of an odd split
    sizes = {r: (packets // len(runs) + (packets % len(runs) if i == 0 else 0),
                 wrs // len(runs) + (wrs % len(runs) if i == 0 else 0))
             for i, r in enumerate(runs)}
    simrun.OUT.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    results = {}
    for lk in links:        # one link layer's runs side by side, then the next's
        mine = [r for r in runs if r[1] == lk]
        with ThreadPoolExecutor(len(mine)) as pool:
            results.update(zip(mine, pool.map(lambda r: fuzz_one(*r, *sizes[r]), mine)))
    seconds = time.monotonic() - started
    failed = any(broke for _, broke in results.values())
    reports = {run_name(*r): report for r, (report, _) in results.items() if report is not None}
    path = simrun.OUT / "fuzz.json"
    if reports:
        merged = merge(reports, seconds)
        path.write_text(json.dumps(merged, indent=1))
        print_report(merged)
        print(f"report: {path}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
