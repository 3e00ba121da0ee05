// Bit layouts of the two packed bundles the packet path passes between blocks (included inside
// modules; every name is a localparam). Each field is `NAME` (its lowest bit) with the width in
// the comment; the bundles are defined once here so packer and unpacker cannot disagree.
/* verilator lint_off UNUSEDPARAM */

// A message to transmit (requester -> port_tx, or a response from rx_engine -> port_tx).
localparam integer TXD_KIND = 0;            // 3: 0 SEND, 1 WRITE, 2 READ request, 3 READ response, 4 ACK,
                                            //    5 CompareSwap, 6 FetchAdd, 7 atomic ACK
localparam integer TXD_TRANSPORT = 3;       // 3: QP type (2 RC, 3 UC, 4 UD)
localparam integer TXD_IMM_VALID = 6;       // 1
localparam integer TXD_IMM = 7;             // 32: as the WQE holds it
localparam integer TXD_SOLICITED = 39;      // 1
localparam integer TXD_LEN = 40;            // 32: payload bytes of the message
localparam integer TXD_MTU = 72;            // 3: path MTU enum
localparam integer TXD_DLID = 75;           // 16
localparam integer TXD_SLID = 91;           // 16
localparam integer TXD_SL = 107;            // 4
localparam integer TXD_GLOBAL = 111;        // 1
localparam integer TXD_TCLASS = 112;        // 8
localparam integer TXD_FLOW = 120;          // 20
localparam integer TXD_HOP = 140;           // 8
localparam integer TXD_SGID = 148;          // 128
localparam integer TXD_DGID = 276;          // 128
localparam integer TXD_PKEY = 404;          // 16
localparam integer TXD_DEST_QPN = 420;      // 24
localparam integer TXD_PSN = 444;           // 24: PSN of the first packet
localparam integer TXD_QKEY = 468;          // 32
localparam integer TXD_SRC_QPN = 500;       // 24
localparam integer TXD_RADDR = 524;         // 64
localparam integer TXD_RKEY = 588;          // 32
localparam integer TXD_DMA_LEN = 620;       // 32
localparam integer TXD_SYNDROME = 652;      // 8
localparam integer TXD_MSN = 660;           // 24
localparam integer TXD_RATE = 684;          // 4: static rate divisor
localparam integer TXD_SGL = 688;           // 256: where the payload comes from: a DMA scatter/gather list
                                            //      (rdma_defs.vh), the message's byte 0 at its offset 0
localparam integer TXD_INTERNAL = 944;      // 1: a loopback message with the bypass off
localparam integer TXD_START = 945;         // 32: byte offset of the first packet to send (a resend)
localparam integer TXD_ATOMIC_A = 977;      // 64: AtomicETH swap/add data, AtomicAckETH original
localparam integer TXD_ATOMIC_B = 1041;     // 64: AtomicETH compare data
localparam integer TXD_INV = 1105;          // 1: an RC SEND with invalidate (TXD_IMM: its IETH)
localparam integer TXD_AWRITE = 1106;       // 1: an RC WRITE of 8 bytes that is an ATOMIC WRITE
localparam integer TXD_DMAC = 1107;         // 48: Ethernet: destination MAC
localparam integer TXD_VLAN = 1155;         // 13: Ethernet: [12] 802.1Q tagged, [11:0] VLAN ID
localparam integer TXD_CNP = 1168;          // 1: Ethernet: a CNP (RoCE v2 congestion notification)
localparam integer TXD_WIDTH = 1169;

// The headers of a received good packet (depacketizer -> rx_engine).
localparam integer RXH_OPCODE = 0;          // 8
localparam integer RXH_SE = 8;              // 1
localparam integer RXH_DEST_QPN = 9;        // 24
localparam integer RXH_ACKREQ = 33;         // 1
localparam integer RXH_PSN = 34;            // 24
localparam integer RXH_SLID = 58;           // 16
localparam integer RXH_DLID = 74;           // 16
localparam integer RXH_SL = 90;             // 4
localparam integer RXH_GLOBAL = 94;         // 1
localparam integer RXH_TCLASS = 95;         // 8
localparam integer RXH_FLOW = 103;          // 20
localparam integer RXH_HOP = 123;           // 8
localparam integer RXH_SGID = 131;          // 128
localparam integer RXH_DGID = 259;          // 128
localparam integer RXH_RADDR = 387;         // 64
localparam integer RXH_RKEY = 451;          // 32
localparam integer RXH_DMA_LEN = 483;       // 32
localparam integer RXH_QKEY = 515;          // 32
localparam integer RXH_SRC_QPN = 547;       // 24
localparam integer RXH_IMM = 571;           // 32
localparam integer RXH_SYNDROME = 603;      // 8
localparam integer RXH_MSN = 611;           // 24
localparam integer RXH_PLEN = 635;          // 13
localparam integer RXH_INTERNAL = 648;      // 1
localparam integer RXH_ATOMIC_A = 649;      // 64: AtomicETH swap/add data, AtomicAckETH original
localparam integer RXH_ATOMIC_B = 713;      // 64: AtomicETH compare data
localparam integer RXH_SMAC = 777;          // 48: Ethernet: source MAC
localparam integer RXH_VLAN = 825;          // 13: Ethernet: [12] 802.1Q tagged, [11:0] VLAN ID
localparam integer RXH_WIDTH = 838;         // (an IETH's R_Key arrives in RXH_RKEY)
/* verilator lint_on UNUSEDPARAM */
