"""The simulation builds never go stale: an edit to an include file (`rtl/*.vh`), which no
source list names, rebuilds a simulation built before it, and without an edit the build is
reused. Built on the simulator `make test` runs, from a copy of rtl/ in a scratch folder, so the
project's own builds are not touched."""

import shutil

from tb import simrun
from tests.test_packetizer import RTL_FILES

TOP = "tb_packetizer"       # its pkt_header.v includes wire_order.vh


def built(build_dir):
    """When the simulation was last built: its executable's time."""
    executable = "sim.vvp" if simrun.simulator() == "icarus" else TOP
    return (build_dir / executable).stat().st_mtime_ns


def test_an_include_file_edit_rebuilds(tmp_path, monkeypatch):
    rtl = tmp_path / "rtl"
    shutil.copytree(simrun.RTL, rtl)
    monkeypatch.setattr(simrun, "RTL", rtl)
    monkeypatch.setattr(simrun, "BUILD", tmp_path / "build")

    def build():
        _, build_dir = simrun.build(TOP, {"DATA_WIDTH": 64}, rtl=RTL_FILES)
        return built(build_dir)

    first = build()
    assert build() == first, "rebuilt with nothing changed"
    # a changed field byte order, as a user editing the include would make it
    include = rtl / "wire_order.vh"
    text = include.read_text()
    edited = text.replace("be16 = {v[7:0], v[15:8]};", "be16 = {v[15:8], v[7:0]};")
    assert edited != text
    include.write_text(edited)
    again = build()
    assert again > first, f"{include.name} changed and the build was reused"
    assert build() == again, "rebuilt again with nothing changed since"
