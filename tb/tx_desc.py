"""The packetizer's message descriptor as the port's unit tests drive it (rtl/port/packetizer.v
desc_*, rtl/pkt_fields.vh TXD_*): the kind codes per operation, the transport and path-MTU
codes, and the operations that are one packet without payload."""

# descriptor kind per operation (an ATOMIC WRITE is a WRITE with desc_awrite: one packet, 8 bytes)
KIND = {"SEND": 0, "RDMA_WRITE": 1, "RDMA_READ_REQUEST": 2, "RDMA_READ_RESPONSE": 3,
        "ACKNOWLEDGE": 4, "COMPARE_SWAP": 5, "FETCH_ADD": 6, "ATOMIC_ACKNOWLEDGE": 7,
        "ATOMIC_WRITE": 1}
# operations sent as one packet without payload, whatever the descriptor's length says, and
# their opcodes (RC)
SINGLE = {"RDMA_READ_REQUEST": 0x0C, "ACKNOWLEDGE": 0x11, "ATOMIC_ACKNOWLEDGE": 0x12,
          "COMPARE_SWAP": 0x13, "FETCH_ADD": 0x14}
TRANSPORT = {"RC": 2, "UC": 3, "UD": 4}
MTU_ENUM = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
