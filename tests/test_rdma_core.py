"""rdma-core's own test suite against the device, short form (make test): a subset of the
suite's tests, unmodified, through this project's pyverbs layer (rdma_core/pyverbs): with the
ports on InfiniBand and the bypass switch on, and a few RoCE tests with the ports on Ethernet
and the bypass off. `make rdma-core-tests` runs the chosen modules whole, on both link layers,
bypass on and off.

The subset covers what every other suite test stands on: opening the device and querying it
and its ports, PDs, CQ creation refused as a provider refuses it, QPs created with the
capabilities the suite draws from the device's (scatter/gather lists), RC atomics through the
bridge (post, poll, the device's completion status), memory windows (a type 1 window bound
with ibv_bind_mw, a type 2 one bound by a work request and invalidated by a SEND with
invalidate), traffic posted with the extended QP's ibv_wr_* calls (ATOMIC WRITE among them) and
polled from an extended CQ, SRQs (this layer's own suite-style module), a skip for a missing
feature, and one
test of each module that only imports against a layer exporting every name real pyverbs
exports (fork, flow steering, RSS work queues, tag matching, ODP, parent domains, RDMA-CM),
each passing or skipped with the suite's own reason.

On Ethernet (RoCE v2), with the bypass off: the suite's RoCE test (an AH without a GRH
refused), an empty entry of the port's GID table (ENODATA), and this layer's RoCE module: the
GID table through every query, RTR without a GRH and bad source GIDs refused, and UD and RC
traffic from each of the port's GIDs (IPv4, IPv6, IPv4 on VLAN 7) as RoCE v2 frames through
the port's internal loopback, the destination MAC resolved from the DGID.
"""

import pytest

from rdma_core import suite

# test id -> the outcome rdma-core's suite must report, and for a skip its reason
SUBSET = {
    "test_device.DeviceTest.test_query_device": ("passed", ""),
    "test_device.DeviceTest.test_query_port": ("passed", ""),
    "test_device.DeviceTest.test_query_port_bad_flow": ("passed", ""),
    "test_device.DeviceTest.test_query_gid": ("passed", ""),
    "test_device.DeviceTest.test_query_gid_table_bad_flow": ("passed", ""),
    "test_pd.PDTest.test_alloc_pd": ("passed", ""),
    "test_pd.PDTest.test_dealloc_pd": ("passed", ""),
    "test_pd.PDTest.test_multiple_pd_creation": ("passed", ""),
    "test_pd.PDTest.test_destroy_pd_twice": ("passed", ""),
    "test_cq.CQAPITest.test_create_cq_bad_flow": ("passed", ""),
    "test_qp.QPTest.test_create_rc_qp_with_attr": ("passed", ""),
    "test_qp.QPTest.test_query_rc_qp": ("passed", ""),
    "test_atomic.AtomicTest.test_atomic_fetch_and_add": ("passed", ""),
    "test_atomic.AtomicTest.test_atomic_invalid_rkey": ("passed", ""),
    "test_mr.MWTest.test_mw_type1": ("passed", ""),
    "test_mr.MWTest.test_mw_type2_invalidate_remote": ("passed", ""),
    "test_fork.ForkAPITest.test_is_fork_initialized": ("passed", ""),
    "test_cqex.CQEXAPITest.test_create_cq_ex": ("passed", ""),
    "test_cqex.CqExTestCase.test_rc_traffic_cq_ex": ("passed", ""),
    "test_qpex.QpExTestCase.test_qp_ex_rc_rdma_write_imm": ("passed", ""),
    "test_qpex.QpExTestCase.test_post_send_qp_state_bad_flow": ("passed", ""),
    "test_qpex.QpExTestCase.test_qp_ex_rc_atomic_write": ("passed", ""),
    "test_shared_pd.SharedPDTestCase.test_imported_rc_ex_rdma_write":
        ("skipped", "Importing a device is not supported"),
    "test_flow.FlowTest.test_udp_spec_flow_traffic":
        ("skipped", "Must be run by root on Ethernet link layer"),
    "test_rss_traffic.RSSTrafficTest.test_rss_traffic":
        ("skipped", "Must be run by root on Ethernet link layer"),
    "test_tag_matching.TMTest.test_tm_traffic": ("skipped", "Extended CQ is not supported"),
    "test_odp.OdpTestCase.test_odp_rc_traffic": ("skipped", "ODP is not supported - No ODP caps"),
    "test_parent_domain.ParentDomainTrafficTest.test_default_allocators_rc_traffic":
        ("skipped", "Parent Domain is not supported on this device"),
    "test_rdmacm.CMTestCase.test_rdmacm_sync_traffic":
        ("skipped", "Device rdma_dev0 doesn't have net interface"),
    # this layer's own module in the suite's style (rdma_core/layer_tests)
    "test_layer_srq.SrqTestCase.test_rc_srq_traffic": ("passed", ""),
    "test_layer_srq.SrqTestCase.test_ud_srq_traffic": ("passed", ""),
    "test_layer_srq.SrqTestCase.test_srq_query_and_limit_event": ("passed", ""),
}


# the same, with the ports on Ethernet (RoCE v2) and the bypass off
ROCE_SUBSET = {
    "test_addr.AHTest.test_create_ah_roce": ("passed", ""),
    "test_device.DeviceTest.test_query_gid_ex_bad_flow": ("passed", ""),
    "test_layer_roce.RoceTestCase.test_roce_gid_table": ("passed", ""),
    "test_layer_roce.RoceTestCase.test_roce_address_errors": ("passed", ""),
    "test_layer_roce.RoceTestCase.test_ud_traffic_every_gid": ("passed", ""),
    "test_layer_roce.RoceTestCase.test_rc_traffic_every_gid": ("passed", ""),
}


def run_subset(subset, link, bypass, name):
    """Run the test ids of `subset` in one pass and check each outcome; returns the pass's
    record."""
    if not suite.install_package():
        pytest.skip(f"{suite.DEBIAN_SUITE} is missing ({suite.DEBIAN_PACKAGE} could not be "
                    f"installed)")
    modules = list(dict.fromkeys(test_id.split(".")[0] for test_id in subset))
    record = suite.run_pass(bypass, modules, list(subset), name=name, link=link)
    got = {t["id"]: (t["outcome"], t["reason"] if t["outcome"] == "skipped" else "")
           for t in record["tests"]}
    wrong = [f"  {test_id}: expected {subset[test_id]}, got {got.get(test_id, 'not run')}"
             + "".join(f"\n{t['detail']}" for t in record["tests"]
                       if t["id"] == test_id and t["detail"])
             for test_id in subset if got.get(test_id) != subset[test_id]]
    assert not wrong, "rdma-core's suite:\n" + "\n".join(wrong)
    assert record["link"] == link, f"the ports were on {record['link']}, not {link}"
    assert not record["left_on_device"], f"left on the device: {record['left_on_device']}"
    return record


def test_rdma_core_subset():
    record = run_subset(SUBSET, "ib", True, "rdma-core-subset")
    assert record["loopback_messages"] > 0, "the atomics did not take the loopback bypass"


def test_rdma_core_roce_subset():
    record = run_subset(ROCE_SUBSET, "eth", False, "rdma-core-roce-subset")
    assert record["loopback_messages"] == 0, "a message took the bypass, which was off"
