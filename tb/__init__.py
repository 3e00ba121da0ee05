"""The verification library of rdma_dev: verbs-style driver (verbs), reference model (model),
scoreboard, InfiniBand packet codec (ib_packet, ib_crc), link sniffer and pcap writer, host-memory
back door (host_mem), testbench set-up (rdma_tb), shared program helpers (rdma_program), seeds
(seed) and the simulator runner (simrun). The HDL harnesses are in tb/hdl/."""
