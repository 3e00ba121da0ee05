"""The fuzzer (tb/fuzz.py) across a cable: hostile packets on both receive sides and random
work requests in the rings, beside live traffic, with every invariant checked after each
batch; on a device whose ports are cabled to each other, and between two devices; the ports
on InfiniBand, or on Ethernet (RoCE v2) with RDMA_LINK=eth.
FUZZ_PACKETS and FUZZ_WRS size the run (make test: a short one; make fuzz splits 100,000 and
10,000 between its runs), SEED replays it. The run writes sim/out/fuzz-port.json or
sim/out/fuzz-fabric.json (fuzz-port-eth.json, fuzz-fabric-eth.json on Ethernet; FUZZ_REPORT
names another file); a violation also writes the packets of the last batches as a pcap and
says how to replay it."""

import json
import os
from pathlib import Path

import cocotb
import pytest

from tb import coverage, simrun
from tb import fuzz as fuzzer_kinds
from tb.fuzz import Fuzzer, Violation
from tb.rdma_program import Rdma
from tb.rdma_tb import LINK, LINK_NAMES
from tb.seed import REGRESS, SEED, rng_for
from tools.fuzz import HARNESSES, run_name

# make test runs across each cable: 2,000 packets and 200 WRs in all on InfiniBand; make
# regress and make coverage 2,500 and 250 across each
PACKETS = int(os.environ.get("FUZZ_PACKETS", "2500" if REGRESS or coverage.enabled() else "1000"))
WRS = int(os.environ.get("FUZZ_WRS", "250" if REGRESS or coverage.enabled() else "100"))
KINDS = os.environ.get("FUZZ_KINDS", "")      # a regular expression: only these packet kinds
# what the run fuzzes across: "port" (tb_rdma_dev, its two ports cabled) or "fabric" (tb_fabric,
# port 1 of one device to port 1 of the other)
BETWEEN = os.environ.get("FUZZ_BETWEEN", "port")
REPORT = Path(os.environ.get("FUZZ_REPORT",
                            str(simrun.OUT / f"fuzz-{run_name(BETWEEN, LINK)}.json")))


async def fuzz(dut, programs, peers, targets):
    fuzzer = Fuzzer(rng_for("fuzz", dut._log), peers, targets)
    if KINDS:
        fuzzer.restrict(KINDS)
    await fuzzer.open()
    violations = []
    try:
        await fuzzer.run(PACKETS, WRS)
    except Violation as failure:
        violations.append(str(failure))
        pcap = REPORT.with_name(f"{REPORT.stem}-{SEED}.pcap")
        fuzzer.write_pcap(pcap)
        dut._log.error("%s\n  the last batches' packets: %s\n  replay: make fuzz SEED=%d "
                       "FUZZ_PACKETS=%d FUZZ_WRS=%d SIM=%s FUZZ_BETWEEN=%s RDMA_LINK=%s",
                       failure, pcap, SEED, PACKETS, WRS, simrun.simulator(), BETWEEN, LINK)
    finally:
        summary = fuzzer.report(SEED, violations)
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        with open(REPORT, "w") as out:
            json.dump(summary, out, indent=1)
    assert not violations, violations[0]
    dut._log.info("fuzz across %s on %s: %d packets, %d WRs in %.0f s (%.0f packets/s, "
                  "%.0f WRs/s), %d canary rounds (worst %d cycles), %d cycles", fuzzer.between,
                  LINK_NAMES[fuzzer.link], fuzzer.packets,
                  fuzzer.wrs, summary["seconds"], summary["packets_per_second"],
                  summary["wrs_per_second"], fuzzer.canary_rounds, fuzzer.canary_worst,
                  fuzzer.tb.cycle())
    for rdma in programs:
        rdma.sb.check_device()
    coverage.save()


@cocotb.test()
async def test_fuzzed_packets_and_work_requests_break_no_invariant(dut):
    """Mutated, broken and replayed packets at both ends of the cable and random WQEs and
    doorbells, beside an RC and a UD flow that must keep completing with their data: no stray
    write, no hang, every packet counted once, every WQE consumed, every completion and QP
    state one the spec allows."""
    if BETWEEN == "fabric":
        rdma0, rdma1 = await Rdma.open_fabric(dut)
        await fuzz(dut, (rdma0, rdma1), (rdma0, 1), (rdma1, 1))
    else:
        rdma = await Rdma.open(dut, cabled=True)
        await fuzz(dut, (rdma,), (rdma, 1), (rdma, 2))


# ---------------------------------------------------------------------------------------------
# The pytest runner: a short fuzz in make test, 2,500 packets and 250 WRs on InfiniBand across
# each cable, and on Ethernet across a device's two ports 69 packets of the link and ECN kinds
# (LINK_AND_ECN: the kinds whose fate the spec fixes and the counters check exactly, three of
# each) and 40 WRs, some 30 s of simulation (make coverage: three of every Ethernet kind);
# make fuzz sizes its runs (tools/fuzz.py). The
# environment's RDMA_LINK, FUZZ_PACKETS, FUZZ_WRS and FUZZ_KINDS, when set, override these.

LINK_AND_ECN = r"^(link|ecn) "
ETHERNET = {"FUZZ_PACKETS": "69", "FUZZ_WRS": "40", "FUZZ_KINDS": LINK_AND_ECN}
if coverage.enabled():
    # make coverage: every Ethernet kind (the coverage bins are the kinds), three of each
    ETHERNET = {"FUZZ_PACKETS": str(3 * len(fuzzer_kinds.KINDS["eth"])), "FUZZ_WRS": "40"}
RUNS = {"port": ("port", "ib", {}), "fabric": ("fabric", "ib", {}),
        "port-eth": ("port", "eth", ETHERNET)}


@pytest.mark.parametrize("run", list(RUNS))
def test_fuzz(run):
    between, link, sizes = RUNS[run]
    toplevel, parameters = HARNESSES[between]
    simrun.run(toplevel=toplevel, test_module="test_fuzz", parameters=parameters,
               extra_env={"FUZZ_BETWEEN": between, "RDMA_LINK": link, **sizes})
