"""make fuzz: one fuzz run (tests/test_fuzz.py, tb/fuzz.py) of FUZZ_PACKETS packets and FUZZ_WRS
work requests (default 100,000 and 10,000) at SEED (default 1), on Verilator unless SIM says
otherwise; prints what was injected by kind and where it ended, and the rates, from the run's
sim/out/fuzz.json. FUZZ_KINDS (a regular expression) keeps only the packet kinds it matches.
Exit status 1 when an invariant broke (the run printed the seed, a replay command and a pcap)."""

import json
import os
import sys

from tb import simrun

DEFAULTS = {"SEED": "1", "FUZZ_PACKETS": "100000", "FUZZ_WRS": "10000"}
FATES = ("injected", "link-dropped", "QP-dropped", "taken by a QP")


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
    print(f"\nseed {report['seed']}: {report['packets']} packets and {report['wrs']} work requests "
          f"in {report['seconds']} s ({report['packets_per_second']} packets/s, "
          f"{report['wrs_per_second']} WRs/s), {report['batches']} batches, "
          f"{report['canary_rounds']} canary rounds (the slowest {report['canary_worst_cycles']} "
          f"cycles), {len(report['violations'])} violations")
    for violation in report["violations"]:
        print(f"  VIOLATION: {violation}")


def main():
    for name, value in DEFAULTS.items():
        os.environ.setdefault(name, value)
    os.environ["FUZZ_REPORT"] = str(simrun.OUT / "fuzz.json")
    failed = False
    try:
        simrun.run(toplevel="tb_rdma_dev", test_module="test_fuzz",
                   parameters={"DATA_WIDTH": 256, "CABLE": 1}, name="fuzz")
    except AssertionError as failure:
        print(failure)
        failed = True
    path = simrun.OUT / "fuzz.json"
    if path.exists():
        print_report(json.loads(path.read_text()))
        print(f"report: {path}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
