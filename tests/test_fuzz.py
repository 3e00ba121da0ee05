"""The fuzzer (tb/fuzz.py) on a device whose ports are cabled to each other: hostile packets on
both receive sides and random work requests in the rings, beside live traffic, with every
invariant checked after each batch. FUZZ_PACKETS and FUZZ_WRS size the run (make test: a
short one; make fuzz: 100,000 and 10,000), SEED replays it. The run writes sim/out/fuzz.json
(FUZZ_REPORT names another file); a violation also writes the packets of the last batches as a
pcap and says how to replay it."""

import json
import os

import cocotb
import pytest

from tb import coverage, simrun
from tb.fuzz import Fuzzer, Violation
from tb.rdma_program import Rdma
from tb.rdma_tb import PacketPlayer
from tb.seed import SEED, rng_for

PACKETS = int(os.environ.get("FUZZ_PACKETS", "5000"))
WRS = int(os.environ.get("FUZZ_WRS", "500"))
REPORT = os.environ.get("FUZZ_REPORT", str(simrun.OUT / "fuzz.json"))
KINDS = os.environ.get("FUZZ_KINDS", "")      # a regular expression: only these packet kinds


@cocotb.test()
async def test_fuzzed_packets_and_work_requests_break_no_invariant(dut):
    """Mutated, broken and replayed packets on both ports and random WQEs and doorbells, beside
    an RC and a UD flow that must keep completing with their data: no stray write, no hang,
    every packet counted once, every WQE consumed, every completion and QP state one the spec
    allows."""
    rdma = await Rdma.open(dut, cabled=True)
    fuzzer = Fuzzer(rdma, rng_for("fuzz", dut._log), {p: PacketPlayer(dut, p) for p in (1, 2)})
    if KINDS:
        fuzzer.restrict(KINDS)
    await fuzzer.open()
    violations = []
    try:
        await fuzzer.run(PACKETS, WRS)
    except Violation as failure:
        violations.append(str(failure))
        pcap = simrun.OUT / f"fuzz-{SEED}.pcap"
        fuzzer.write_pcap(pcap)
        dut._log.error("%s\n  the last batches' packets: %s\n  replay: make fuzz SEED=%d "
                       "FUZZ_PACKETS=%d FUZZ_WRS=%d SIM=%s", failure, pcap, SEED, PACKETS, WRS,
                       simrun.simulator())
    finally:
        report = fuzzer.report(SEED, violations)
        simrun.OUT.mkdir(parents=True, exist_ok=True)
        with open(REPORT, "w") as out:
            json.dump(report, out, indent=1)
    assert not violations, violations[0]
    dut._log.info("fuzz: %d packets, %d WRs in %.0f s (%.0f packets/s, %.0f WRs/s), %d canary "
                  "rounds (worst %d cycles), %d cycles, %d register accesses", fuzzer.packets,
                  fuzzer.wrs, report["seconds"], report["packets_per_second"],
                  report["wrs_per_second"], fuzzer.canary_rounds, fuzzer.canary_worst,
                  rdma.tb.cycle(), rdma.tb.regs.accesses)
    rdma.sb.check_device()
    coverage.save()


# ---------------------------------------------------------------------------------------------
# The pytest runner: a short fuzz in make test (5,000 packets and 500 WRs); make fuzz sizes it
# (tools/fuzz.py).

def test_fuzz():
    simrun.run(toplevel="tb_rdma_dev", test_module="test_fuzz",
               parameters={"DATA_WIDTH": 256, "CABLE": 1})
