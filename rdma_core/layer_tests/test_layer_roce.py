"""This layer's own checks of an Ethernet (RoCE v2) port, in the suite's style and with its
resources and traffic helpers. rdma-core's suite runs all its traffic from the first GID it
finds (entry 0, an untagged IPv4 address here) and checks only that an AH without a GRH is
refused, so without these nothing would show that every GID of a RoCE port carries traffic
from the entry the program chose (sgid_index: IPv4, IPv6, an address on a VLAN), that RTR
without a GRH is refused as the AH is, and how the RoCE v2 GID table reads through
ibv_query_gid, ibv_query_gid_ex, ibv_query_gid_type and ibv_query_gid_table. On an InfiniBand
port they skip with the suite's own reason. rdma_core/run_suite.py finds this module beside
the suite's as `tests.test_layer_roce`."""

import errno
import unittest

import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError

import tests.utils as u
from tests.base import RCResources, RDMATestCase, UDResources

IPV4_MAPPED = bytes(10) + b"\xff\xff"     # ::ffff:a.b.c.d, a RoCE v2 GID of an IPv4 address


def gid_bytes(gid):
    return bytes.fromhex(gid.gid.replace(":", ""))


class RoceTestCase(RDMATestCase):
    def setUp(self):
        super().setUp()
        self.ctx = d.Context(name=self.dev_name)
        self.addCleanup(self.ctx.close)
        link_layer = self.ctx.query_port(self.ib_port).link_layer
        if link_layer != e.IBV_LINK_LAYER_ETHERNET:
            raise unittest.SkipTest(f'Link layer of port={self.ib_port} is '
                                    f'{d.translate_link_layer(link_layer)} , skip RoCE test')
        # every GID the suite chooses from (RDMATestCase.setUp: the port's non-zero GIDs)
        self.gid_indices = [arg[2] for arg in self.args]
        self.iters = 1

    def players(self, resource, gid_index):
        self.client = resource(self.dev_name, self.ib_port, gid_index)
        self.server = resource(self.dev_name, self.ib_port, gid_index)
        self.client.pre_run(self.server.psns, self.server.qps_num)
        self.server.pre_run(self.client.psns, self.client.qps_num)

    def close_players(self):
        self.client.ctx.close()
        self.server.ctx.close()
        self.client = self.server = None

    def test_roce_gid_table(self):
        """A RoCE port has no LID; its GIDs are IP addresses of RoCE v2 type, the same through
        every query, and its empty entries read zero, ENODATA and no type, as libibverbs
        reports them."""
        port_attr = self.ctx.query_port(self.ib_port)
        self.assertEqual((port_attr.lid, port_attr.lmc), (0, 0))
        self.assertTrue(port_attr.port_cap_flags & e.IBV_PORT_IP_BASED_GIDS)
        self.assertGreater(len(self.gid_indices), 1, "a RoCE port of one address")
        max_entries = sum(self.ctx.query_port(port).gid_tbl_len
                          for port in range(1, self.ctx.query_device().phys_port_cnt + 1))
        table = {entry.gid_index: entry for entry in self.ctx.query_gid_table(max_entries)
                 if entry.port_num == self.ib_port}
        self.assertEqual(sorted(table), self.gid_indices)
        for index in range(port_attr.gid_tbl_len):
            gid = self.ctx.query_gid(self.ib_port, index)
            gid_type = self.ctx.query_gid_type(self.ib_port, index)
            if index in self.gid_indices:
                entry = self.ctx.query_gid_ex(self.ib_port, index)
                self.assertEqual((entry.gid_type, entry.gid_str()),
                                 (e.IBV_GID_TYPE_ROCE_V2, gid.gid))
                self.assertEqual(table[index].gid_str(), gid.gid)
                self.assertEqual(gid_type, e.IBV_GID_TYPE_SYSFS_ROCE_V2)
                continue
            self.assertFalse(any(gid_bytes(gid)), f"GID {index}")
            self.assertEqual(gid_type, e.IBV_GID_TYPE_SYSFS_IB_ROCE_V1)
            with self.assertRaises(PyverbsRDMAError) as ex:
                self.ctx.query_gid_ex(self.ib_port, index)
            self.assertEqual(ex.exception.error_code, errno.ENODATA)

    def test_roce_address_errors(self):
        """On RoCE an address needs a GRH, for RTR as for an AH (EINVAL), and a source GID:
        an empty entry is ENODATA and one beyond the table EINVAL, as from the kernel."""
        self.client = RCResources(self.dev_name, self.ib_port, self.gid_index)
        qp_attr = self.client.create_qp_attr()
        qp_attr.dest_qp_num = self.client.qps_num[0]
        qp_attr.ah_attr = AHAttr(port_num=self.ib_port, is_global=0)
        with self.assertRaises(PyverbsRDMAError) as ex:
            self.client.qps[0].to_rtr(qp_attr)
        self.assertEqual(ex.exception.error_code, errno.EINVAL)
        dgid = self.ctx.query_gid(self.ib_port, self.gid_index)
        gid_tbl_len = self.ctx.query_port(self.ib_port).gid_tbl_len
        bad = [(gid_tbl_len, errno.EINVAL)] + [(index, errno.ENODATA) for index in
                                               range(gid_tbl_len) if index not in self.gid_indices]
        with PD(self.ctx) as pd:
            with self.assertRaises(PyverbsRDMAError) as ex:
                AH(pd, attr=AHAttr(port_num=self.ib_port, is_global=0))
            self.assertEqual(ex.exception.error_code, errno.EINVAL)
            for sgid_index, code in bad:
                gr = GlobalRoute(dgid=dgid, sgid_index=sgid_index)
                with self.assertRaises(PyverbsRDMAError) as ex:
                    AH(pd, attr=AHAttr(port_num=self.ib_port, is_global=1, gr=gr))
                self.assertEqual(ex.exception.error_code, code, f"sgid_index {sgid_index}")

    def test_ud_traffic_every_gid(self):
        """UD traffic from and to each GID of the port: the receive buffer's GRH area holds
        the RoCE v2 IP header with the chosen GID as source and destination (IPv4: 20 zero
        bytes, then the IPv4 header; IPv6: the IPv6 header), UDP inside."""
        for index in self.gid_indices:
            gid = gid_bytes(self.ctx.query_gid(self.ib_port, index))
            self.players(UDResources, index)
            u.traffic(self.client, self.server, self.iters, index, self.ib_port)
            grh = self.client.mr.read(u.GRH_SIZE, 0)     # the server's last datagram
            self.close_players()
            if gid[:12] == IPV4_MAPPED:
                self.assertEqual((grh[:20], grh[20], grh[29]), (bytes(20), 0x45, 17),
                                 f"GID {index}: {grh.hex()}")
                self.assertEqual((grh[32:36], grh[36:40]), (gid[12:], gid[12:]), f"GID {index}")
            else:
                self.assertEqual((grh[0] >> 4, grh[6]), (6, 17), f"GID {index}: {grh.hex()}")
                self.assertEqual((grh[8:24], grh[24:40]), (gid, gid), f"GID {index}")

    def test_rc_traffic_every_gid(self):
        """RC traffic from and to each GID of the port (IPv4, IPv6, on a VLAN)."""
        for index in self.gid_indices:
            self.players(RCResources, index)
            u.traffic(self.client, self.server, self.iters, index, self.ib_port)
            self.close_players()
