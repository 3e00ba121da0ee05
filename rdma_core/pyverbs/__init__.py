"""A pyverbs-compatible layer over the simulated rdma_dev (tb/verbs.py drives the device).

rdma-core's test suite imports `pyverbs` and runs unmodified against this package: every
verb drives the device in the simulation and returns when the device has answered
(`_sim.py` is the bridge). A feature the device does not have fails with the errno a real
provider gives (EOPNOTSUPP in most cases), so the suite skips its tests.
"""
