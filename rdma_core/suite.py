"""rdma-core's test suite against the simulated device: where the suite comes from, which of its
modules run, and one run of them (a "pass") in a simulation.

The suite is Debian's python3-pyverbs package's (/usr/share/doc/rdma-core/tests, some files
gzipped); `unpack` copies it into sim/build/rdma-core/tests unmodified. `run_pass` builds
tb_rdma_dev at 256 bits through simrun and runs rdma_core/run_suite.py in it, which opens the
device with its ports on InfiniBand or Ethernet (RoCE v2), sets the bypass switch and runs the
chosen suite modules against this project's pyverbs layer (rdma_core/pyverbs). The results
come back as a dict: "link", the link layer the ports were on ("ib" or "eth"); "tests", a list
with one dict per suite test ({"id", "module", "outcome" (passed / skipped / failed),
"reason", "detail" (a failure's traceback), "cycles", "seconds"}), and what the device counted:
"loopback_messages" and "loopback_bytes" (LB_MSGS / LB_BYTES: the messages the bypass moved),
"cq_overflows", "register_errors", "left_on_device" (objects not destroyed).
"""

import fcntl
import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYER = Path(__file__).resolve().parent            # holds the pyverbs package
DEBIAN_PACKAGE = "python3-pyverbs"
DEBIAN_SUITE = Path("/usr/share/doc/rdma-core/tests")
SUITE_PARENT = ROOT / "sim" / "build" / "rdma-core"
SUITE = SUITE_PARENT / "tests"
HARNESS = "tb_rdma_dev"
PARAMETERS = {"DATA_WIDTH": 256}

# the modules that run, in this order: every module of the Debian suite but the ones of other
# providers' direct verbs (test_mlx5_*, test_efa*)
LINKS = ("ib", "eth")   # the ports' link layers a pass may run on (tb.rdma_tb's PORT_SETUPs)
MODULES = ("test_device", "test_pd", "test_cq", "test_cq_events", "test_qp", "test_mr",
           "test_atomic", "test_relaxed_ordering", "test_addr", "test_qpex", "test_cqex",
           "test_shared_pd", "test_parent_domain", "test_odp", "test_fork", "test_flow",
           "test_rss_traffic", "test_tag_matching", "test_rdmacm", "test_cuda_dmabuf")


class SuiteMissing(RuntimeError):
    pass


def install_package():
    """Install python3-pyverbs from Debian when its suite is missing (sim/apt-install.sh:
    as root or through sudo). Returns whether the suite is there afterwards."""
    if not DEBIAN_SUITE.is_dir():
        subprocess.run(["sh", str(ROOT / "sim" / "apt-install.sh"), DEBIAN_PACKAGE], check=False)
    return DEBIAN_SUITE.is_dir()


def unpack(source=DEBIAN_SUITE, dest=SUITE):
    """Copy the suite from the Debian package into `dest`, gunzipping the gzipped files, when
    `dest` does not hold this copy yet. Returns `dest`."""
    if not source.is_dir():
        raise SuiteMissing(f"{source} is missing: install Debian's {DEBIAN_PACKAGE} "
                           f"(make rdma-core-tests does)")
    files = sorted(p for p in source.iterdir() if p.is_file())
    stamp = "\n".join(f"{p.name} {p.stat().st_size} {p.stat().st_mtime_ns}" for p in files)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / "unpack.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp_file = dest.parent / "unpacked-from"
        if dest.is_dir() and stamp_file.exists() and stamp_file.read_text() == stamp:
            return dest
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir()
        for path in files:
            if path.suffix == ".gz":
                (dest / path.stem).write_bytes(gzip.decompress(path.read_bytes()))
            else:
                shutil.copyfile(path, dest / path.name)
        stamp_file.write_text(stamp)
    return dest


def run_pass(bypass, modules=MODULES, tests=None, name=None, seed=None, link="ib"):
    """Run the suite's `modules` (or only the test ids `tests`, e.g.
    "test_device.DeviceTest.test_query_port") with the ports on `link` ("ib" or "eth") and the
    bypass switch on or off, in one simulation. Each suite test draws its random numbers from
    `seed` (default: tb.seed's SEED) and its id, so two passes with one seed run the same
    tests. Returns the results (see the module docstring)."""
    from tb import simrun
    from tb.seed import SEED

    if link not in LINKS:
        raise ValueError(f"link {link!r}: one of {LINKS}")
    suite = unpack()
    name = name or f"rdma-core-{link}-bypass-{'on' if bypass else 'off'}"
    if str(ROOT) not in sys.path:      # the simulator's Python gets this process's sys.path
        sys.path.insert(0, str(ROOT))
    runner, build_dir = simrun.build(HARNESS, PARAMETERS)
    test_dir = build_dir / "runs" / name
    results_file = test_dir / "rdma-core-results.json"
    results_file.unlink(missing_ok=True)
    env = {
        "PYTHONDONTWRITEBYTECODE": "",
        "RDMA_CORE_SUITE": str(suite),
        "RDMA_CORE_MODULES": ",".join(modules),
        "RDMA_CORE_TESTS": ",".join(tests or ()),
        "RDMA_CORE_LINK": link,
        "RDMA_CORE_BYPASS": "1" if bypass else "0",
        "RDMA_CORE_RESULTS": str(results_file),
        "SEED": str(SEED if seed is None else seed),
    }
    try:
        runner.test(test_module="rdma_core.run_suite", hdl_toplevel=HARNESS,
                    build_dir=build_dir, test_dir=test_dir, extra_env=env, waves=False)
    except SystemExit:      # the cocotb test failed: the results say why, if it got that far
        pass
    if not results_file.exists():
        raise RuntimeError(f"the simulation stopped before writing {results_file}; see the "
                           f"log above and {test_dir}")
    return json.loads(results_file.read_text())


def summary(tests):
    """{module: {"passed": n, "skipped": n, "failed": n}} in the order the modules ran."""
    table = {}
    for result in tests:
        counts = table.setdefault(result["module"], {"passed": 0, "skipped": 0, "failed": 0})
        counts[result["outcome"]] += 1
    return table
