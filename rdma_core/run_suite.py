"""The cocotb test that runs rdma-core's suite against the simulated device.

rdma_core/suite.py starts it (environment: RDMA_CORE_SUITE, the unpacked suite;
RDMA_CORE_MODULES, the suite modules to run; RDMA_CORE_TESTS, optionally only these test ids;
RDMA_CORE_LINK, the ports' link layer, "ib" or "eth"; RDMA_CORE_BYPASS, 1 or 0;
RDMA_CORE_RESULTS, the JSON file for the results). It opens the device as every test here does
(tb/rdma_tb.py: open_device, the ports addressed as IB_PORT_SETUP or ETH_PORT_SETUP), sets the
bypass switch, attaches the device to this project's pyverbs (rdma_core/pyverbs), and runs the
suite's unittest tests one by one in a thread bridged into the simulation: each verb drives
the device and returns when it has answered.

The suite imports itself as package `tests`; its __init__.py would import every module of the
suite (the mlx5 and EFA ones too), so the package is registered here without it and only the
chosen modules, with base.py and utils.py, are imported. The package also finds this layer's
own modules in the suite's style (rdma_core/layer_tests, `test_layer_*`).
"""

import gc
import importlib
import importlib.machinery
import importlib.util
import json
import os
import random
import sys
import time
import traceback
import unittest
from pathlib import Path

import cocotb
from cocotb.task import bridge

LAYER = Path(__file__).resolve().parent

if str(LAYER) not in sys.path[:1]:     # this pyverbs, before any other on the path
    sys.path.insert(0, str(LAYER))

import pyverbs                  # noqa: E402
from pyverbs import _sim        # noqa: E402

from tb.rdma_tb import ETH_PORT_SETUP, IB_PORT_SETUP, open_device    # noqa: E402
from tb.seed import SEED              # noqa: E402
from tb.verbs import PortReg, port_reg    # noqa: E402

if Path(pyverbs.__file__).resolve().parent != LAYER / "pyverbs":
    raise ImportError(f"pyverbs resolves to {pyverbs.__file__}, not {LAYER / 'pyverbs'}")


def load_suite(suite):
    """Register the unpacked suite at `suite` as package `tests` (without running its
    __init__.py) and parse its command line as run_tests.py would, with no arguments: the
    first device, port 1."""
    sys.path[:0] = [str(suite.parent), str(suite)]    # `tests`, and its args_parser module
    spec = importlib.machinery.ModuleSpec("tests", None, is_package=True)
    spec.submodule_search_locations = [str(suite), str(LAYER / "layer_tests")]
    sys.modules["tests"] = importlib.util.module_from_spec(spec)
    from args_parser import parser
    argv, sys.argv = sys.argv, ["run_tests.py"]
    try:
        parser.parse_args()
    finally:
        sys.argv = argv


def each_test(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from each_test(item)
        else:
            yield item


def short_id(test):
    return test.id().removeprefix("tests.")


def outcome_of(result):
    """(outcome, reason, detail) of one test's unittest result."""
    for _, reason in result.skipped:
        return "skipped", reason, ""
    for _, trace in result.failures + result.errors:
        lines = [line for line in trace.strip().splitlines() if line.strip()]
        return "failed", lines[-1] if lines else "", trace
    for _, trace in result.expectedFailures:
        return "passed", "expected failure", trace
    if result.unexpectedSuccesses:
        return "failed", "unexpected success", ""
    return "passed", "", ""


def run_tests(sim, modules, only, log):
    """Run the chosen tests; returns their results. Runs in the bridge thread."""
    results = []
    for name in modules:
        try:
            module = importlib.import_module(f"tests.{name}")
        except Exception:
            trace = traceback.format_exc()
            log.error("%s: import failed\n%s", name, trace)
            results.append(dict(id=f"{name} (import)", module=name, outcome="failed",
                                reason=trace.strip().splitlines()[-1], detail=trace,
                                cycles=0, seconds=0.0))
            continue
        for test in each_test(unittest.defaultTestLoader.loadTestsFromModule(module)):
            test_id = short_id(test)
            if only and test_id not in only:
                continue
            random.seed(f"{SEED}:{test_id}")     # the suite draws PSNs, sizes and caps here
            start_cycle, start = sim.cycle(), time.monotonic()
            result = unittest.TestResult()
            test.run(result)
            del test
            gc.collect()        # objects the test dropped go away on the device, as in pyverbs
            sim.flush()
            outcome, reason, detail = outcome_of(result)
            entry = dict(id=test_id, module=name, outcome=outcome, reason=reason, detail=detail,
                         cycles=sim.cycle() - start_cycle,
                         seconds=round(time.monotonic() - start, 1))
            results.append(entry)
            log_line = f"{outcome:7} {test_id}" + (f": {reason}" if reason else "") + \
                f" ({entry['cycles']} cycles, {entry['seconds']} s)"
            (log.warning if outcome == "failed" else log.info)(log_line)
            if detail and outcome == "failed":
                log.info(detail)
    return results


@cocotb.test()
async def rdma_core_suite(dut):
    """rdma-core's chosen test modules, against the device with the bypass switch as asked."""
    suite = Path(os.environ["RDMA_CORE_SUITE"])
    modules = [m for m in os.environ.get("RDMA_CORE_MODULES", "").split(",") if m]
    only = {t for t in os.environ.get("RDMA_CORE_TESTS", "").split(",") if t}
    link = os.environ.get("RDMA_CORE_LINK", "ib")
    bypass = os.environ.get("RDMA_CORE_BYPASS", "1") != "0"
    results_file = Path(os.environ["RDMA_CORE_RESULTS"])

    ports = {"ib": IB_PORT_SETUP, "eth": ETH_PORT_SETUP}[link]
    tb, dev, sb = await open_device(dut, seed=SEED, ports=ports)
    # The suite is the judge here. The reference model does not follow what this layer adds
    # on top of the driver (its heap that reuses host memory, rereg), so it does not observe.
    dev.observers.clear()
    await dev.set_bypass(bypass)
    sim = _sim.attach(tb, dev)
    load_suite(suite)
    dut._log.info("rdma-core suite from %s: %s, ports on %s, bypass %s; SEED=%d (replay with "
                  "SEED=%d)", suite, ", ".join(modules), link, "on" if bypass else "off", SEED,
                  SEED)
    try:
        results = await bridge(run_tests)(sim, modules, only, dut._log)
    finally:
        _sim.detach()
    left = {kind: len(table) for kind, table in
            (("QPs", dev.qps), ("CQs", dev.cqs), ("MRs", dev.mrs), ("AHs", dev.ahs)) if table}
    if left:
        dut._log.warning("left on the device after the suite: %s", left)
    moved = await dev.read_counters() - dev.counters_at_open
    dut._log.info("loopback bypass: %d messages, %d bytes", moved.lb_msgs, moved.lb_bytes)
    # the report names the pass by the link layer the device's ports were on (PORT_LINK)
    links = {("ib", "eth")[await dev.read_reg(port_reg(port, PortReg.LINK)) & 1]
             for port in dev.ports}
    record = dict(link="/".join(sorted(links)), bypass=bypass, seed=SEED,
                  loopback_messages=moved.lb_msgs,
                  loopback_bytes=moved.lb_bytes, cq_overflows=moved.cq_overflows, register_errors=moved.reg_errors,
                  left_on_device=left, tests=results)
    results_file.parent.mkdir(parents=True, exist_ok=True)
    results_file.write_text(json.dumps(record, indent=1) + "\n")
