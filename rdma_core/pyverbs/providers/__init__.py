"""Provider-specific pyverbs modules. The simulated device is neither an mlx5 nor an EFA
device: the suite imports these modules and their tests skip, as on any other device."""
