"""The demonstration `make sim` runs: a small RDMA program on one rdma_dev whose port 1 and
port 2 are cabled to each other (harness CABLE = 1), first with both ports on InfiniBand, then
with both switched to Ethernet (RoCE v2).

InfiniBand: QPs on port 1 talk to each other (loopback: the bypass DMA engine moves the data, no
packet leaves), QPs on port 1 talk to QPs on port 2 (not loopback: packets cross the cable, the
port counters move), one loopback message goes through the port's internal loopback with the
bypass switched off, and one WR breaks the protection rules. Once the scoreboard has checked
all of that, the driver switches both ports to Ethernet (dev.set_port with ETH_PORT_SETUP; the
model follows it as an observer, the sniffers through tb.set_link), and new RC QPs and the UD
QPs address their destinations by GID: an RDMA WRITE and a SEND from port 1 to port 2 (the
driver resolves port 2's MAC from its GID), a UD SEND to port 2 on VLAN 7, and a UD SEND to one
of port 1's own GIDs, which is a loopback message and takes the bypass. Each WR is posted on
its own so the report can say, per message, which link layer and path it took (from the
device's LB_MSGS counter) and what each link carried. The scoreboard checks everything again at
the end. Each link's sniffer captured both parts; its InfiniBand packets go to a pcap of ERF
InfiniBand records and its RoCE v2 frames to an Ethernet pcap, both of which Wireshark and
tshark decode without settings. The report goes to sim/out/demo_report.txt, the pcaps to
sim/out/demo_port<p>.pcap and sim/out/demo_port<p>_roce.pcap.
"""

import ipaddress
import os
import shutil
import subprocess
import sys
from pathlib import Path

import cocotb


if __name__ == "__main__":     # run as a script: the tb package is beside tools/
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tb.rdma_tb import ETH_PORT_SETUP, IB_PORT_SETUP, open_device
from tb.verbs import (Access, GlobalRoute, PortCounter, QPType, RecvWR, RemoteAddr, connect,
                      rdma_read, rdma_write, send, ud_send)

REPORT = Path(os.environ.get("DEMO_REPORT", "demo_report.txt"))
PCAP_DIR = REPORT.parent
LINK_NAMES = {"ib": "InfiniBand", "eth": "RoCE v2"}


def pcap_name(port, link):
    return f"demo_port{port}{'_roce' if link == 'eth' else ''}.pcap"


def describe_wc(wc):
    if wc is None:
        return "-"
    extra = f" imm={wc.imm_data:#x}" if wc.wc_flags & 2 else ""
    return f"{wc.status.name} {wc.opcode.name} len={wc.byte_len}{extra}"


def describe_gid(gid):
    address = ipaddress.IPv6Address(gid)
    return str(address.ipv4_mapped or address)


async def run(tb, dev, cq, program):
    """Post each WR of `program` alone and wait for its completions; one report row each,
    with the link layer of the sending QP's port."""
    rows = []
    for title, qp, wr, recv in program:
        await dev.set_bypass(recv != "no bypass")
        if recv == "no bypass":
            recv = None
        if recv:
            await recv[0].post_recv(recv[1])
        counters = await dev.read_counters()
        beats = [tb.tx_beats(p) for p in (1, 2)]
        await qp.post_send(wr)
        expected = 2 if recv else 1
        wcs = await cq.wait(expected)
        after = await dev.read_counters()
        send_wc = next((wc for wc in wcs if not wc.is_recv), None)
        recv_wc = next((wc for wc in wcs if wc.is_recv), None)
        lb = after.lb_msgs - counters.lb_msgs
        tx = [tb.tx_beats(p) - beats[i] for i, p in enumerate((1, 2))]
        path = "bypass" if lb else "packets" if any(tx) else "internal loopback"
        link = dev.ports[qp.attr.port_num].link_layer
        rows.append((wr.wr_id, LINK_NAMES[link], title, qp.qp_num, qp.qp_type.name,
                     wr.sge.length, path, describe_wc(send_wc), describe_wc(recv_wc),
                     f"{tx[0]}/{tx[1]}"))
    await dev.set_bypass(True)
    return rows


@cocotb.test()
async def demo(dut):
    tb, dev, sb = await open_device(dut, seed=1, ports=IB_PORT_SETUP, cabled=True)
    pd = dev.alloc_pd()
    cq = await dev.create_cq(64)

    size = 64 * 1024
    src = await pd.reg_mr(dev.alloc(size), size, Access.LOCAL_WRITE | Access.REMOTE_READ)
    dst = await pd.reg_mr(dev.alloc(size), size, Access.LOCAL_WRITE | Access.REMOTE_WRITE)
    src.write(0, bytes((i * 7 + 3) & 0xFF for i in range(size)))

    a, b = [await pd.create_qp(QPType.RC, cq, cq) for _ in range(2)]
    await connect(a, b, port_a=1)
    ud_a, ud_b = [await pd.create_qp(QPType.UD, cq, cq) for _ in range(2)]
    for qp in (ud_a, ud_b):
        await qp.to_rts(port=1, qkey=0x1111)
    port1 = IB_PORT_SETUP[1]
    ah = await pd.create_ah(1, port1["lid"] + 1, sl=3, grh=GlobalRoute(port1["gid"], hop_limit=8))
    bad_a, bad_b = [await pd.create_qp(QPType.RC, cq, cq) for _ in range(2)]
    await connect(bad_a, bad_b, port_a=1)
    # a pair across the cable: port 1's QP addresses port 2's LID and back
    near, far = [await pd.create_qp(QPType.RC, cq, cq) for _ in range(2)]
    await near.to_rts(remote_qp_num=far.qp_num, dlid=IB_PORT_SETUP[2]["lid"], port=1, sl=2)
    await far.to_rts(remote_qp_num=near.qp_num, dlid=port1["lid"], port=2, sl=2)
    ud_far = await pd.create_qp(QPType.UD, cq, cq)
    await ud_far.to_rts(port=2, qkey=0x1111)
    ah_far = await pd.create_ah(1, IB_PORT_SETUP[2]["lid"],
                                grh=GlobalRoute(IB_PORT_SETUP[2]["gid"], hop_limit=4))

    program = [
        ("RDMA WRITE 4 KiB", a, rdma_write(src.sge(0, 4096), dst.remote(0), wr_id=1), None),
        ("RDMA WRITE 64 KiB, realigned", a,
         rdma_write(src.sge(5, size - 64), dst.remote(17), wr_id=2), None),
        ("SEND with immediate", a, send(src.sge(100, 300), wr_id=3, imm=0xC0FFEE),
         (b, RecvWR(dst.sge(8192, 1024), wr_id=103))),
        ("RDMA READ 1000 B", a, rdma_read(dst.sge(16384, 1000), src.remote(2000), wr_id=4), None),
        ("UD SEND with GRH", ud_a, ud_send(src.sge(0, 200), ah, ud_b.qp_num, 0x1111, wr_id=5),
         (ud_b, RecvWR(dst.sge(20000, 512), wr_id=105))),
        ("RDMA WRITE, bad rkey", bad_a,
         rdma_write(src.sge(0, 64), RemoteAddr(dst.addr, dst.rkey ^ 0x80), wr_id=6), None),
        ("RDMA WRITE 64 KiB to port 2", near,
         rdma_write(src.sge(0, size), dst.remote(0), wr_id=7), None),
        ("SEND 6000 B to port 2", near, send(src.sge(0, 6000), wr_id=8),
         (far, RecvWR(dst.sge(32768, 8192), wr_id=108))),
        ("RDMA READ 9000 B from port 1", far,
         rdma_read(dst.sge(40960, 9000), src.remote(0), wr_id=9), None),
        ("UD SEND to port 2, GRH", ud_a,
         ud_send(src.sge(0, 256), ah_far, ud_far.qp_num, 0x1111, wr_id=10, imm=0xBEEF),
         (ud_far, RecvWR(dst.sge(51200, 512), wr_id=110))),
        ("RDMA WRITE 4 KiB, bypass off", a,
         rdma_write(src.sge(0, 4096), dst.remote(0), wr_id=11), "no bypass"),
    ]

    before_all = await dev.read_counters()
    ports_before = {port: await dev.port_counters(port) for port in (1, 2)}
    rows = await run(tb, dev, cq, program)
    # every InfiniBand packet stored and checked, and the links quiet, before the switch
    await sb.check()
    ib_captures = {port: len(sniffer.captures) for port, sniffer in tb.sniffers.items()}

    # Ethernet: the same device and cable, both ports now RoCE v2 and addressed by GID
    for port, attrs in ETH_PORT_SETUP.items():
        await dev.set_port(port, **attrs)
        tb.set_link(port, dev.ports[port].link_layer)
    eth1, eth2 = ETH_PORT_SETUP[1], ETH_PORT_SETUP[2]
    roce_near, roce_far = [await pd.create_qp(QPType.RC, cq, cq) for _ in range(2)]
    await roce_near.to_rts(roce_far.qp_num, port=1, grh=GlobalRoute(eth2["gid"]))
    await roce_far.to_rts(roce_near.qp_num, port=2, grh=GlobalRoute(eth1["gid"]))
    vlan_route = GlobalRoute(eth2["gids"][1].gid, hop_limit=8, sgid_index=2)   # VLAN 7 entries
    ah_vlan = await pd.create_ah(1, sl=5, grh=vlan_route)
    ah_own = await pd.create_ah(1, grh=GlobalRoute(eth1["gids"][0].gid, sgid_index=1))

    roce_program = [
        ("RDMA WRITE 8 KiB to port 2", roce_near,
         rdma_write(src.sge(0, 8192), dst.remote(0), wr_id=12), None),
        ("SEND with immediate to port 2", roce_near,
         send(src.sge(3, 3000), wr_id=13, imm=0xFACE),
         (roce_far, RecvWR(dst.sge(32768, 4096), wr_id=113))),
        ("UD SEND to port 2, VLAN 7", ud_a,
         ud_send(src.sge(0, 256), ah_vlan, ud_far.qp_num, 0x1111, wr_id=14),
         (ud_far, RecvWR(dst.sge(51200, 512), wr_id=114))),
        ("UD SEND to port 1's IPv6 GID", ud_a,
         ud_send(src.sge(0, 200), ah_own, ud_b.qp_num, 0x1111, wr_id=15),
         (ud_b, RecvWR(dst.sge(20000, 512), wr_id=115))),
    ]
    rows += await run(tb, dev, cq, roce_program)
    after_all = await dev.read_counters()
    ports_after = {port: await dev.port_counters(port) for port in (1, 2)}
    await sb.check()

    pcaps = []
    for port, sniffer in tb.sniffers.items():
        cut = ib_captures[port]
        for link, captures in (("ib", sniffer.captures[:cut]), ("eth", sniffer.captures[cut:])):
            path = PCAP_DIR / pcap_name(port, link)
            sniffer.write_pcap(path, captures=captures, link=link)
            pcaps.append(f"{path} ({len(captures)} {LINK_NAMES[link]} packets sent by "
                         f"port {port})")

    header = ("wr", "link", "message", "qp", "type", "bytes", "path", "send completion",
              "receive completion", "tx beats p1/p2")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    lines = ["rdma_dev demonstration (DATA_WIDTH=%d)" % tb.data_width, ""]
    for r in [header] + rows:
        lines.append("  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip())
    bypassed = sum(1 for r in rows if r[header.index("path")] == "bypass")
    route = roce_near.attr.ah_attr
    lines += [
        "",
        f"work requests: {len(rows)}, through the loopback bypass: {bypassed}",
        f"LB_MSGS {before_all.lb_msgs} -> {after_all.lb_msgs}, "
        f"LB_BYTES {before_all.lb_bytes} -> {after_all.lb_bytes}",
        f"TX link beats: port 1 {tb.tx_beats(1)}, port 2 {tb.tx_beats(2)} "
        "(only the messages between the ports: loopback messages put nothing on a link)",
        *(f"port {port} counters: " + ", ".join(
            f"{c.name} {ports_before[port][c]}->{ports_after[port][c]}"
            for c in (PortCounter.XMIT_PKTS, PortCounter.XMIT_DATA, PortCounter.RCV_PKTS,
                      PortCounter.RCV_DATA, PortCounter.RCV_ERRORS))
          for port in (1, 2)),
        f"RoCE v2: port 1 ({describe_gid(eth1['gid'])}) reaches port 2 at GID "
        f"{describe_gid(route.grh.dgid)}, MAC {route.dmac.hex(':')} (resolved by the driver "
        "from the GID)",
        "scoreboard: every completion, memory image, guard byte, port counter and packet on "
        "each link matched the reference model, before and after the switch to Ethernet",
        "pcaps: " + "; ".join(pcaps),
    ]
    REPORT.write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------------------------
# Run as a script (`make sim`): build rdma_dev under Icarus, run the demonstration, print its
# report, the path of the waveform it left, and the pcaps of each link (decoded by tshark when
# it is there).

# What tshark's frame.protocols must show for every frame of a link layer's pcap: an ERF
# InfiniBand record, or InfiniBand over UDP (RoCE v2)
DECODED = {"ib": lambda protocols: protocols.startswith("erf:infiniband"),
           "eth": lambda protocols: "udp:infiniband" in protocols}


def main():
    from tb import simrun

    os.environ["WAVES"] = "1"

    report = simrun.OUT / "demo_report.txt"
    report.unlink(missing_ok=True)
    simrun.run("tb_rdma_dev", "demo", {"DATA_WIDTH": 256, "CABLE": 1}, "demo",
               extra_env={"DEMO_REPORT": str(report), "COCOTB_LOG_LEVEL": "WARNING",
                          "GPI_LOG_LEVEL": "ERROR"})
    if not report.exists():
        sys.exit("the demonstration failed: see the simulator output above")
    print()
    print(report.read_text())
    print(f"waveform: {simrun.OUT / 'demo.fst'}  (make waves opens it)")

    # Each link's pcaps, decoded by tshark when it is installed: every frame must be of the
    # pcap's link layer, and each has frames.
    for link, decoded in DECODED.items():
        for port in (1, 2):
            pcap = simrun.OUT / pcap_name(port, link)
            if not shutil.which("tshark"):
                print(f"pcap: {pcap} (tshark not installed: not decoded here)")
                continue
            out = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", "-e",
                                  "frame.protocols"],
                                 capture_output=True, text=True, check=True).stdout.split()
            good = sum(map(decoded, out))
            print(f"pcap: {pcap}: tshark decodes {good} of {len(out)} frames as "
                  f"{LINK_NAMES[link]}")
            if not out or good != len(out):
                sys.exit(f"tshark did not decode every frame of {pcap} as {LINK_NAMES[link]}")


if __name__ == "__main__":
    main()
