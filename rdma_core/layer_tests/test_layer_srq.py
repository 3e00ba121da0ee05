"""This layer's own checks, in the suite's style and with its resources and traffic helpers:
shared receive queues through the verbs API. rdma-core's suite creates SRQs only behind
features the device lacks (ODP, parent domains, tag matching), so without these nothing would
show that ibv_create_srq, ibv_post_srq_recv, ibv_modify_srq, ibv_query_srq and the SRQ limit
event work as a program on rxe expects. rdma_core/run_suite.py finds this module beside the
suite's as `tests.test_layer_srq`."""

import pyverbs.enums as e
from pyverbs.srq import SrqAttr

import tests.utils as u
from tests.base import RCResources, RDMATestCase, UDResources


class SrqRC(RCResources):
    def __init__(self, dev_name, ib_port, gid_index, qp_count=2):
        super().__init__(dev_name=dev_name, ib_port=ib_port, gid_index=gid_index,
                         with_srq=True, qp_count=qp_count)


class SrqUD(UDResources):
    def __init__(self, dev_name, ib_port, gid_index, qp_count=2):
        super().__init__(dev_name=dev_name, ib_port=ib_port, gid_index=gid_index,
                         with_srq=True, qp_count=qp_count)


class SrqTestCase(RDMATestCase):
    def setUp(self):
        super().setUp()
        self.iters = 10

    def create_players(self, resource, **resource_arg):
        self.client = resource(**self.dev_info, **resource_arg)
        self.server = resource(**self.dev_info, **resource_arg)
        self.client.pre_run(self.server.psns, self.server.qps_num)
        self.server.pre_run(self.client.psns, self.client.qps_num)
        self.traffic_args = {'client': self.client, 'server': self.server,
                             'iters': self.iters, 'gid_idx': self.gid_index,
                             'port': self.ib_port}

    def test_rc_srq_traffic(self):
        """Two RC QPs a side, each side's receiving from its SRQ."""
        self.create_players(SrqRC, qp_count=2)
        u.traffic(**self.traffic_args)

    def test_ud_srq_traffic(self):
        """Two UD QPs a side on an SRQ: the receives carry the GRH area first."""
        self.create_players(SrqUD, qp_count=2)
        u.traffic(**self.traffic_args)

    def test_srq_query_and_limit_event(self):
        """ibv_query_srq reports the SRQ's size and limit; a limit armed with ibv_modify_srq
        fires one IBV_EVENT_SRQ_LIMIT_REACHED when a message takes the WQE that leaves fewer,
        and reads 0 afterwards; a limit of every entry or a change of max_wr is EINVAL."""
        self.create_players(SrqRC, qp_count=1)
        srq = self.server.srq
        attr = srq.query()
        self.assertGreaterEqual(attr.max_wr, self.server.num_msgs)
        self.assertEqual(attr.srq_limit, 0)
        recv_wr = u.get_recv_wr(self.server)
        for _ in range(3):
            srq.post_recv(recv_wr)
        srq.modify(SrqAttr(srq_limit=3), e.IBV_SRQ_LIMIT)
        self.assertEqual(srq.query().srq_limit, 3)
        send_wr, _ = u.get_send_elements(self.client, False)
        u.send(self.client, send_wr, None, False, 0, None)
        u.poll_cq(self.client.cq)
        u.poll_cq(self.server.cq)
        event = self.server.ctx.get_async_event()
        event.ack()
        self.assertEqual(event.event_type, e.IBV_EVENT_SRQ_LIMIT_REACHED)
        self.assertEqual(srq.query().srq_limit, 0, "the event disarms the limit")
        for attr_mask, limit in ((e.IBV_SRQ_LIMIT, attr.max_wr), (e.IBV_SRQ_MAX_WR, 0)):
            with self.assertRaises(Exception) as refused:
                srq.modify(SrqAttr(max_wr=2 * attr.max_wr, srq_limit=limit), attr_mask)
            self.assertEqual(getattr(refused.exception, "error_code", None), 22)
