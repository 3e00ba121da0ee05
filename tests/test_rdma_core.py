"""rdma-core's own test suite against the device, short form (make test): a subset of the
suite's tests, unmodified, through this project's pyverbs layer (rdma_core/pyverbs), with the
bypass switch on. `make rdma-core-tests` runs the chosen modules whole, bypass on and off.

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


def test_rdma_core_subset():
    if not suite.install_package():
        pytest.skip(f"{suite.DEBIAN_SUITE} is missing ({suite.DEBIAN_PACKAGE} could not be "
                    f"installed)")
    modules = list(dict.fromkeys(test_id.split(".")[0] for test_id in SUBSET))
    record = suite.run_pass(True, modules, list(SUBSET), name="rdma-core-subset")
    got = {t["id"]: (t["outcome"], t["reason"] if t["outcome"] == "skipped" else "")
           for t in record["tests"]}
    wrong = [f"  {test_id}: expected {SUBSET[test_id]}, got {got.get(test_id, 'not run')}"
             + "".join(f"\n{t['detail']}" for t in record["tests"]
                       if t["id"] == test_id and t["detail"])
             for test_id in SUBSET if got.get(test_id) != SUBSET[test_id]]
    assert not wrong, "rdma-core's suite:\n" + "\n".join(wrong)
    assert record["loopback_messages"] > 0, "the atomics did not take the loopback bypass"
    assert not record["left_on_device"], f"left on the device: {record['left_on_device']}"
