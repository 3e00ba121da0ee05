"""Longest first: pytest-xdist hands items to workers in collection order, so the few long
simulations start at once instead of trailing alone at the end of the run."""

LONG_FIRST = ("test_random_traffic.py", "test_fabric.py", "test_wire.py", "megabyte", "test_rdma_dev.py")


def pytest_collection_modifyitems(items):
    def rank(item):
        return next((i for i, key in enumerate(LONG_FIRST) if key in item.nodeid),
                    len(LONG_FIRST))
    items.sort(key=rank)   # stable: the order within a rank stays
