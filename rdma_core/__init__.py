"""rdma-core's own test suite against the simulated device: a pyverbs-compatible layer over
tb/verbs.py (pyverbs/), the cocotb test that runs the suite in a simulation (run_suite.py)
and the runner that unpacks the suite and starts a pass (suite.py)."""
