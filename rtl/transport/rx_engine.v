// The packet receive engine: serves the good packets the ports' depacketizers present, one at a
// time. Request packets (SEND, RDMA WRITE, RDMA READ request, atomics) are checked against the
// destination QP (existence, transport, port, state, Q_Key for UD; PSN and packet order for RC
// and UC) and go to the same responder the bypass uses: START for a message's first packet,
// CONT for later pieces that need a check, END after the last of a message that took a receive
// WQE (a SEND, a WRITE with immediate); payload is stored through the
// DMA mover (WRITE_STREAM) at the address the responder gave; a store host memory refuses ends
// the message there (RC: NAK remote operational error). RC requests are answered through
// the port's transmit side: an ACK (or NAK) per message, READ responses for an RDMA READ, an
// atomic ACK with the original value for an atomic, which the DMA mover's ATOMIC executes.
// Response packets (ACK, NAK, READ response, atomic ACK) go to the requester's waiting RC
// message; an atomic ACK's original value is stored in the local SGE.
//
// RC PSNs are compared modulo 2^24: a packet behind the expected PSN is a duplicate (a SEND or
// WRITE is not stored again but acknowledged again when it asks for an ACK; a READ request is
// served again; an atomic is never executed twice: it is answered from the QP's record of its
// last ATOMIC_RESULTS atomic results, or dropped when its result is no longer kept), one ahead
// is a sequence error (one NAK per gap, then silence until the expected PSN arrives). ACKs go
// out where the requester asked for one (AckReq).
//
// Each QP has its own message in progress (its offset, a WRITE's address and length, its first
// PSN), so the packets of many QPs' messages may interleave on a link, as they do behind a
// switch. Packets that fail the QP checks are dropped and reported per port (PortRcvErrors);
// out-of-sequence packets are dropped silently, but for an RC packet at the expected PSN whose
// opcode is out of sequence: NAK invalid request.
//
// ECN (Ethernet ports, the notification point of DCQCN): a request packet from the link that
// arrives marked CE and passes its QP check first sends a CNP to its source (the request's
// source MAC, VLAN and GIDs swapped, to the QP's remote QPN, or for UD the DETH's source QP),
// at most one per QP in each window of cnp_interval cycles (0: one per marked packet); then it
// is served as any other. Answers echo a request's traffic class with CE turned back into
// ECT(0), and a CNP goes out ECT(0) with the request's DSCP. A CNP that arrives for a QP of
// the port is counted (cnp_handled: the reaction point's hook) and goes no further.
`ifndef RDMA_RX_ENGINE_V
`define RDMA_RX_ENGINE_V
`default_nettype none

module rx_engine #(
    parameter NUM_PORTS = 2,       // ports
    parameter NUM_QP = 64,         // queue pairs
    parameter ADDR_WIDTH = 32,     // host address width
    parameter DATA_WIDTH = 256,    // payload beat width in bits
    parameter ATOMIC_RESULTS = 16  // atomic results kept per QP for duplicates (a power of two, >= max_dest_rd_atomic)
) (
    input  wire                             clk,
    input  wire                             rst,

    // headers of good packets from each port's depacketizer
    input  wire [NUM_PORTS-1:0]             s_hdr_valid,
    output wire [NUM_PORTS-1:0]             s_hdr_ready,
    input  wire [NUM_PORTS*RXH_WIDTH-1:0]   s_hdr_data,
    // and their payload
    input  wire [NUM_PORTS*DATA_WIDTH-1:0]  s_axis_pl_tdata,
    input  wire [NUM_PORTS*DATA_WIDTH/8-1:0] s_axis_pl_tkeep,
    input  wire [NUM_PORTS-1:0]             s_axis_pl_tvalid,
    output wire [NUM_PORTS-1:0]             s_axis_pl_tready,
    input  wire [NUM_PORTS-1:0]             s_axis_pl_tlast,
    output reg  [NUM_PORTS-1:0]             pl_drop,

    input  wire [NUM_PORTS*3-1:0]           port_mtu,
    input  wire [NUM_PORTS*16-1:0]          port_pkey,
    input  wire [NUM_PORTS-1:0]             port_eth,         // the port's link layer is Ethernet
    input  wire [31:0]                      cnp_interval,     // cycles between a QP's CNPs (0: any)

    // destination QP (qp_table port C)
    output wire [QPN_BITS-1:0]              qp_qpn,
    input  wire                             qp_valid,
    input  wire [2:0]                       qp_type,
    input  wire [2:0]                       qp_state,
    input  wire [PORT_BITS-1:0]             qp_port,
    input  wire [31:0]                      qp_dest_qpn,
    input  wire [31:0]                      qp_qkey,
    input  wire [2:0]                       qp_mtu,
    input  wire [23:0]                      qp_epsn,
    input  wire [23:0]                      qp_msn,
    output reg                              qp_set_epsn,
    output reg  [23:0]                      qp_epsn_value,
    output reg                              qp_msn_inc,
    input  wire                             qp_restart,       // a QP starts over (qp_table)
    input  wire [QPN_BITS-1:0]              qp_restart_qpn,

    // message to the responder (msg_arb client), fields in the order of rdma_dev's MSG bundle
    output reg                              m_msg_valid,
    input  wire                             m_msg_ready,
    output wire [MSG_WIDTH-1:0]             m_msg_data,
    output wire                             m_msg_hold,
    input  wire                             s_rsp_valid,
    input  wire [7:0]                       s_rsp_status,
    input  wire                             s_rsp_place,
    input  wire                             s_rsp_rnr,
    input  wire [4:0]                       s_rsp_rnr_timer,
    input  wire [ADDR_WIDTH-1:0]            s_rsp_addr,
    input  wire [255:0]                     s_rsp_sgl,    // a SEND piece's receive buffer (s_rsp_addr: offset in it)

    // DMA mover client (WRITE_STREAM), and the stream it stores
    output reg                              m_dma_valid,
    input  wire                             m_dma_ready,
    output wire [DMA_REQ_WIDTH-1:0]         m_dma_data,
    input  wire                             s_dma_done,
    input  wire                             s_dma_error,
    input  wire [511:0]                     s_dma_rdata,
    output wire [DATA_WIDTH-1:0]            m_axis_wr_tdata,
    output wire [DATA_WIDTH/8-1:0]          m_axis_wr_tkeep,
    output wire                             m_axis_wr_tvalid,
    input  wire                             m_axis_wr_tready,
    output wire                             m_axis_wr_tlast,

    // responses to send (port_tx response queues)
    output reg  [NUM_PORTS-1:0]             m_tx_valid,
    input  wire [NUM_PORTS-1:0]             m_tx_ready,
    output wire [TXD_WIDTH-1:0]             m_tx_desc,

    // the completer's view of the QP a response is for (qp_qpn): RC messages outstanding,
    // answers still being matched (ask again), the oldest unacknowledged PSN and, when that is
    // a READ response PSN, where its payload goes
    input  wire                             req_active,
    input  wire                             req_wait,
    input  wire [23:0]                      req_una,
    input  wire                             req_read,
    input  wire                             req_atomic,       // ... an atomic's (its ACK's)
    input  wire [ADDR_WIDTH-1:0]            req_addr,
    // what arrived for it: 0 an ACK or NAK (syndrome, PSN), 1 the READ response at req_una
    // stored, 2 a READ response past req_una (one went missing), 3 a READ response past
    // req_una acknowledging the PSNs before it (looked at again once they are matched)
    output reg                              m_ack_valid,
    output wire [QPN_BITS-1:0]              m_ack_qpn,
    output reg  [1:0]                       m_ack_kind,
    output reg                              m_ack_error,  // kind 1: host memory refused the store
    output reg  [7:0]                       m_ack_syndrome,
    output reg  [23:0]                      m_ack_psn,

    // packets dropped by the QP checks, per port (link packets only)
    output reg  [NUM_PORTS-1:0]             rcv_drop,
    // answers discarded because the port's response queue was full (link packets only)
    output reg  [NUM_PORTS-1:0]             xmit_discard,
    // CNPs queued to go out, and CNPs received for a QP of the port (link packets only)
    output reg  [NUM_PORTS-1:0]             cnp_sent,
    output reg  [NUM_PORTS-1:0]             cnp_handled
);

`include "rdma_defs.vh"
`include "pkt_fields.vh"
`include "keep_bits.vh"

localparam QPN_BITS  = $clog2(NUM_QP);
localparam PORT_BITS = NUM_PORTS > 1 ? $clog2(NUM_PORTS) : 1;
localparam KEEP_WIDTH = DATA_WIDTH / 8;
localparam DMA_REQ_WIDTH = 3 + 2*ADDR_WIDTH + 32 + 512;
// responder message: {offset, dgid, sgid, hop, flow, tclass, global, sl, dlid, slid,
//                     solicited, qkey, imm, rkey, raddr, len, port, src, dest, type, op, kind}
localparam MSG_WIDTH = 32 + 128 + 128 + 8 + 20 + 8 + 1 + 4 + 16 + 16 + 1 + 32 + 32 + 32 + 64 +
                       32 + PORT_BITS + 24 + 32 + 3 + 8 + 2;

localparam [3:0] S_IDLE = 4'd0, S_DECODE = 4'd1, S_CNP = 4'd2, S_MSG_WAIT = 4'd3,
                 S_STORE_WAIT = 4'd5, S_AFTER = 4'd6, S_END_WAIT = 4'd7,
                 S_ANSWER = 4'd8, S_DROP = 4'd9, S_ATOMIC_WAIT = 4'd10, S_REPLAY = 4'd11;
localparam RES_BITS = $clog2(ATOMIC_RESULTS);
reg [3:0] state;

// ---- the packet being served ----
reg [RXH_WIDTH-1:0]   h;
reg [PORT_BITS-1:0]   cur;
wire [7:0]   h_op      = h[RXH_OPCODE +: 8];
wire [23:0]  h_dest    = h[RXH_DEST_QPN +: 24];
wire [23:0]  h_psn     = h[RXH_PSN +: 24];
wire [12:0]  h_plen    = h[RXH_PLEN +: 13];
wire [31:0]  h_dma_len = h[RXH_DMA_LEN +: 32];
wire         h_internal = h[RXH_INTERNAL];

// opcode: transport in [7:5] (RC 0, UC 1, UD 3), operation in [4:0]
wire [4:0] code    = h_op[4:0];
wire [2:0] h_type  = h_op[7:5] == 3'd0 ? QPT_RC : h_op[7:5] == 3'd1 ? QPT_UC : QPT_UD;
wire is_resp       = h_op[7:5] == 3'd0 && code >= 5'h0D && code <= 5'h12;
wire is_ack        = is_resp && code == 5'h11;
wire is_atomic_ack = is_resp && code == 5'h12;
wire is_cnp        = h_op == 8'h81;                  // Ethernet only (the depacketizer's rule)
wire h_ackreq      = h[RXH_ACKREQ];
wire is_awrite     = code == 5'h1D;                  // ATOMIC WRITE: one packet, RC only
wire fam_write     = (code >= 5'h06 && code <= 5'h0B) || is_awrite;
// An RDMA WRITE without immediate takes no receive WQE and writes no receive CQE: it has no
// END, the message ends with its last packet's payload in place. A message that receives
// waits for its END's answer: its receive CQE is written before its ACK (and so before the
// send CQE).
wire end_quiet     = fam_write && !has_imm;
wire fam_read      = code == 5'h0C;
wire fam_atomic    = code == 5'h13 || code == 5'h14;    // RC only (the depacketizer's rule)
wire is_cas        = code == 5'h13;
wire has_inv       = code == 5'h16 || code == 5'h17;    // SEND LAST/ONLY with invalidate (RC)
wire fam_send      = code <= 5'h05 || has_inv;
wire is_first      = code == 5'h00 || code == 5'h04 || code == 5'h05 || code == 5'h06 ||
                     code == 5'h0A || code == 5'h0B || code == 5'h0C || code == 5'h17 || fam_atomic ||
                     is_awrite;
wire is_last       = code == 5'h02 || code == 5'h03 || code == 5'h04 || code == 5'h05 ||
                     code == 5'h08 || code == 5'h09 || code == 5'h0A || code == 5'h0B || code == 5'h0C ||
                     has_inv || fam_atomic || is_awrite;
wire has_imm       = code == 5'h03 || code == 5'h05 || code == 5'h09 || code == 5'h0B;
wire [7:0] ibv_op  = fam_read ? WR_RDMA_READ :
                     fam_atomic ? (is_cas ? WR_ATOMIC_CMP_AND_SWP : WR_ATOMIC_FETCH_AND_ADD) :
                     is_awrite ? WR_ATOMIC_WRITE :
                     fam_write ? (has_imm ? WR_RDMA_WRITE_IMM : WR_RDMA_WRITE) :
                     has_inv ? WR_SEND_INV : (has_imm ? WR_SEND_IMM : WR_SEND);

// ---- each QP's message in progress ----
reg  [NUM_QP-1:0]     in_msg;
reg  [NUM_QP-1:0]     msg_acked;        // some of its packets were acknowledged
reg  [NUM_QP-1:0]     msg_write;        // RDMA WRITE (else SEND)
reg  [31:0]           msg_off [0:NUM_QP-1];     // bytes of the message stored so far
reg  [31:0]           msg_dma_len [0:NUM_QP-1]; // RETH length of a WRITE
reg  [ADDR_WIDTH-1:0] msg_addr [0:NUM_QP-1];    // host address of the WRITE's first byte
reg  [23:0]           msg_psn [0:NUM_QP-1];     // PSN of its first packet
reg                   implied;          // the READ response's implied acknowledgement is sent

// ---- each QP's last atomic results, a ring: a duplicate atomic is answered from here ----
reg  [23:0]           res_psn   [0:NUM_QP*ATOMIC_RESULTS-1];
reg  [63:0]           res_orig  [0:NUM_QP*ATOMIC_RESULTS-1];
reg  [RES_BITS-1:0]   res_wp    [0:NUM_QP-1];     // the entry the next result takes
reg  [NUM_QP-1:0]     res_full;         // the ring went round: every entry holds a result
// (entries below res_wp, or all of them once full, hold results: no valid bit per entry, which
// a restart would have to clear at once, keeps the results in RAM)
reg  [RES_BITS-1:0]   scan;             // the entry S_REPLAY looks at

// ---- checks of a request packet against its QP ----
assign qp_qpn = h_dest[QPN_BITS-1:0];
wire [QPN_BITS-1:0] q = qp_qpn;         // the packet's QP (a request's, once qp_ok)
wire        q_in_msg = in_msg[q];
wire [31:0] q_off    = msg_off[q];
wire [23:0] q_psn    = msg_psn[q];
wire qp_ok  = h_dest < NUM_QP && qp_valid && qp_type == h_type && qp_port == cur &&
              (qp_state == QPS_RTR || qp_state == QPS_RTS) &&
              (h_type != QPT_UD || h[RXH_QKEY +: 32] == qp_qkey);
// UC has no retransmission: a first packet starts a new message whatever PSN it has
wire psn_ok = h_type == QPT_UD || h_psn == qp_epsn || (h_type == QPT_UC && is_first);
// RC: behind the expected PSN (modulo 2^24, within half the space) is a duplicate
wire [23:0] psn_diff = h_psn - qp_epsn;
wire duplicate = h_type == QPT_RC && psn_diff[23];
reg  [NUM_QP-1:0] nak_sent;      // a sequence NAK went out for the QP's current gap
// The QP took back PSNs it had acknowledged (a message RNR NAKed at its last packet, after an
// ACK or a sequence NAK for a packet inside it): its requester's resends land past the
// expected PSN until it hears the NAK, which is repeated for each that asks for an ACK, in
// case it went missing.
reg  [NUM_QP-1:0] took_back;
wire seq_ok = is_first ? !q_in_msg || h_type == QPT_UC
                       : q_in_msg && msg_write[q] == fam_write;
// a WRITE's later packets need no responder check unless they carry the immediate
wire write_direct = fam_write && !is_first && !has_imm;
// a WRITE packet whose payload ends past the RETH length (counted from the message's start):
// its bytes were never checked against the rkey
wire [31:0] write_end  = (is_first ? 32'd0 : q_off) + {19'd0, h_plen};
wire        write_over = fam_write && write_end > (is_first ? h_dma_len : msg_dma_len[q]);

// path MTU of the QP's answers (READ responses): the QP's when set and below the port's
wire [2:0]  my_mtu = port_mtu[cur*3 +: 3];
wire [2:0]  pmtu = (qp_mtu == 3'd0 || qp_mtu > my_mtu) ? my_mtu : qp_mtu;
wire [31:0] pmtu_mask = (32'd128 << pmtu) - 32'd1;
wire [31:0] pkts = h_dma_len == 32'd0 ? 32'd1 : (h_dma_len + pmtu_mask) >> ({1'b0, pmtu} + 4'd7);
wire [23:0] read_pkts = pkts[23:0];
// a SEND or WRITE packet from the link whose payload does not fit the QP's path MTU: a first
// or middle packet carries exactly the path MTU, a last or only one at most that (UD: the
// depacketizer checks the largest MTU, the responder the receive buffer; a loopback message's
// packets ignore path attributes)
wire [12:0] pmtu_bytes = 13'd128 << pmtu;
wire        size_bad   = (fam_write || fam_send) && h_type != QPT_UD && !h_internal &&
                         (is_last ? h_plen > pmtu_bytes : h_plen != pmtu_bytes);

// ---- ECN: CNPs for requests marked CE, at most one per QP per window ----
wire [7:0] h_tclass = h[RXH_TCLASS +: 8];
wire       ce_mark  = port_eth[cur] && !h_internal && h_tclass[1:0] == 2'b11;
reg  [NUM_QP-1:0] cnp_recent;    // the QP sent a CNP in this window
reg  [31:0]       cnp_timer;     // cycles into the window
reg               cnp_done;      // the packet being served had its CNP
reg               ans_cnp;       // the answer is a CNP
wire cnp_limited = cnp_interval != 32'd0 && cnp_recent[q];

// ---- responses to the requester's messages ----
wire [23:0] resp_ahead = h_psn - req_una;
wire resp_match = h_dest < NUM_QP && req_active && qp_port == cur;
// a response for no QP of this port that could have asked (none, another port's, not RC, not
// yet in RTR) fails the destination QP check; one its QP is not waiting for is stale
wire resp_qp_bad = h_dest >= NUM_QP || !qp_valid || qp_type != QPT_RC || qp_port != cur ||
                   qp_state == QPS_RESET || qp_state == QPS_INIT;
// a CNP is for a QP of this port that may have sent (any transport)
wire cnp_qp_ok = h_dest < NUM_QP && qp_valid && qp_port == cur &&
                 qp_state != QPS_RESET && qp_state != QPS_INIT;
assign m_ack_qpn = qp_qpn;

// ---- the message to the responder ----
reg  [1:0]  msg_kind;
wire [31:0] msg_len = msg_kind == 2'd1 ? (msg_write[q] ? msg_dma_len[q] : q_off) :
                      fam_atomic ? 32'd8 :
                      (fam_write || fam_read) && is_first ? h_dma_len : {19'd0, h_plen};
wire [23:0] src_qpn = h_type == QPT_UD ? h[RXH_SRC_QPN +: 24] : qp_dest_qpn[23:0];
assign m_msg_data = {q_off, h[RXH_DGID +: 128], h[RXH_SGID +: 128], h[RXH_HOP +: 8],
                     h[RXH_FLOW +: 20], h[RXH_TCLASS +: 8], h[RXH_GLOBAL], h[RXH_SL +: 4],
                     h[RXH_DLID +: 16], h[RXH_SLID +: 16], h[RXH_SE], h[RXH_QKEY +: 32],
                     h[RXH_IMM +: 32], h[RXH_RKEY +: 32], h[RXH_RADDR +: 64], msg_len, cur,
                     src_qpn, 8'd0, h_dest, h_type, ibv_op, msg_kind};
assign m_msg_hold = state != S_IDLE;

// ---- storing the payload ----
reg                   storing;          // the store's stream is open
reg                   stored;           // the packet's payload is taken (stored, or none)
reg [ADDR_WIDTH-1:0]  store_addr;
reg [255:0]           store_sgl;        // a SEND's piece of the receive buffer (else no bytes)
// the DMA command: the payload stream, an atomic at the responder, or an atomic ACK's
// original value into the local SGE
localparam [1:0] X_STREAM = 2'd0, X_ATOMIC = 2'd1, X_ORIG = 2'd2;
reg  [1:0]  dma_op;
wire [63:0] h_atomic_a = h[RXH_ATOMIC_A +: 64];
wire [63:0] h_atomic_b = h[RXH_ATOMIC_B +: 64];
// AtomicETH: Swap/Add Data (the swap, or the addend), Compare Data
wire [511:0] atomic_ops = atomic_block(is_cas, h_atomic_a, is_cas ? h_atomic_b : h_atomic_a);
assign m_dma_data =
    dma_op == X_ATOMIC ? {atomic_ops, 32'd8, store_addr, {ADDR_WIDTH{1'b0}}, DMA_ATOMIC} :
    dma_op == X_ORIG   ? {448'd0, h_atomic_a, 32'd8, store_addr, {ADDR_WIDTH{1'b0}}, DMA_STORE} :
                         {store_sgl, 256'd0, 19'd0, h_plen, store_addr, {ADDR_WIDTH{1'b0}}, DMA_WRITE_STREAM};
// bytes outside tkeep are don't-care on the stream; zero them so nothing undefined reaches
// the AXI write data (the strobes mask them anyway)
wire [KEEP_WIDTH-1:0] wr_keep = s_axis_pl_tkeep[cur*KEEP_WIDTH +: KEEP_WIDTH];
reg  [DATA_WIDTH-1:0] wr_keep_bits;
always @* wr_keep_bits = keep_bits(wr_keep);
wire [DATA_WIDTH-1:0] wr_data = s_axis_pl_tdata[cur*DATA_WIDTH +: DATA_WIDTH] & wr_keep_bits;
assign m_axis_wr_tdata  = wr_data;
assign m_axis_wr_tkeep  = wr_keep;
assign m_axis_wr_tvalid = storing && s_axis_pl_tvalid[cur];
assign m_axis_wr_tlast  = s_axis_pl_tlast[cur];
assign s_axis_pl_tready = (storing && m_axis_wr_tready) ? ({{(NUM_PORTS-1){1'b0}}, 1'b1} << cur)
                                                        : {NUM_PORTS{1'b0}};

// ---- answers (ACK, NAK, READ responses) ----
reg  [2:0]  ans_kind;            // 3 READ response, 4 ACK, 7 atomic ACK
reg  [63:0] ans_orig;            // an atomic ACK's original value
reg  [7:0]  ans_syndrome;
reg  [23:0] ans_msn;
reg  [23:0] ans_psn;
reg  [ADDR_WIDTH-1:0] ans_addr;
// addressed back along the request's path: its source MAC and VLAN, its GIDs swapped; the
// answering QP's number is the source QP (the UDP source port's flow is the connection's).
// On Ethernet the traffic class's ECN is the request's, CE turned into ECT(0) (a CNP answers
// only a CE request: it goes out ECT(0)).
wire [7:0] ans_tclass = port_eth[cur] && h_tclass[1:0] == 2'b11 ? {h_tclass[7:2], 2'b10}
                                                                : h_tclass;
wire [TXD_WIDTH-1:0] ans = {ans_cnp, h[RXH_VLAN +: 13], h[RXH_SMAC +: 48],
                            2'b00, 64'd0, ans_orig, 32'd0, h_internal, sgl_one(h_dma_len, ans_addr), 4'd0, ans_msn,
                            ans_syndrome, ans_kind == 3'd3 ? h_dma_len : 32'd0, 32'd0, 64'd0,
                            h_dest, 32'd0, ans_cnp ? 24'd0 : ans_psn,
                            ans_cnp ? src_qpn : qp_dest_qpn[23:0], port_pkey[cur*16 +: 16],
                            h[RXH_SGID +: 128], h[RXH_DGID +: 128], h[RXH_HOP +: 8],
                            h[RXH_FLOW +: 20], ans_tclass, h[RXH_GLOBAL], h[RXH_SL +: 4],
                            h[RXH_DLID +: 16], h[RXH_SLID +: 16], pmtu,
                            ans_kind == 3'd3 ? h_dma_len : 32'd0, 1'b0, 32'd0, 1'b0, QPT_RC,
                            ans_kind};
assign m_tx_desc = ans;
// the NAK code for the responder's verdict on an RC request
wire [7:0] nak_code = s_rsp_status == WC_REM_ACCESS_ERR ? 8'h62 :
                      s_rsp_status == WC_REM_INV_REQ_ERR ? 8'h61 : 8'h63;

// ---- picking the next packet: round robin over the ports ----
reg  [PORT_BITS-1:0] rr;
reg  [PORT_BITS-1:0] pick;
reg                  pick_valid;
integer i, j;
always @* begin
    pick = {PORT_BITS{1'b0}};
    pick_valid = 1'b0;
    for (i = NUM_PORTS; i >= 1; i = i - 1) begin
        j = ({{(32-PORT_BITS){1'b0}}, rr} + i) % NUM_PORTS;
        if (s_hdr_valid[j]) begin
            pick = j[PORT_BITS-1:0];
            pick_valid = 1'b1;
        end
    end
end
assign s_hdr_ready = (state == S_IDLE && pick_valid) ? ({{(NUM_PORTS-1){1'b0}}, 1'b1} << pick)
                                                     : {NUM_PORTS{1'b0}};

wire unused = ^{pkts[31:24], h[RXH_MSN +: 24], qp_dest_qpn[31:24], j[31:PORT_BITS],
                s_dma_rdata[511:64]};
wire [QPN_BITS+RES_BITS-1:0] res_at   = {q, res_wp[q]};    // the entry a new result takes
wire [QPN_BITS+RES_BITS-1:0] scan_at  = {q, scan};
wire                         scan_hit = (res_full[q] || scan < res_wp[q]) &&
                                        res_psn[scan_at] == h_psn;

// The payload to host memory (store_addr / store_sgl are set the same cycle: the command is
// valid the next), or an atomic ACK's original value to the local SGE
task store_payload;
    begin
        if (is_atomic_ack) begin
            dma_op      <= X_ORIG;
            m_dma_valid <= 1'b1;
            state <= S_STORE_WAIT;
        end else if (h_plen != 13'd0) begin
            dma_op      <= X_STREAM;
            m_dma_valid <= 1'b1;
            storing <= 1'b1;
            state <= S_STORE_WAIT;
        end else begin
            state <= S_AFTER;
        end
    end
endtask

// the packet's payload is in place: the QP's progress, the END after a message's last packet
task after_store;
    begin
        stored <= 1'b1;     // the payload is taken: a drop now would hit the next packet's
        if (is_resp) begin
            m_ack_valid <= 1'b1;
            m_ack_kind  <= 2'd1;
            state <= S_IDLE;
        end else begin
            msg_off[q] <= q_off + {19'd0, h_plen};
            if (h_type != QPT_UD) begin
                qp_set_epsn   <= 1'b1;
                qp_epsn_value <= h_psn + 24'd1;
            end
            if (is_last) begin
                in_msg[q] <= 1'b0;
                if (end_quiet) begin
                    end_message;
                end else begin
                    msg_kind <= 2'd1;
                    m_msg_valid <= 1'b1;
                    state <= S_END_WAIT;
                end
            end else begin
                in_msg[q] <= 1'b1;
                // an RC request that asks for an ACK before its last packet gets one
                ans_syndrome <= 8'h1F;
                if (h_type == QPT_RC && h_ackreq)
                    msg_acked[q] <= 1'b1;
                state <= h_type == QPT_RC && h_ackreq ? S_ANSWER : S_IDLE;
            end
        end
    end
endtask

// The receive path never waits for a transmit side (whose own packets may wait for this
// receive path across the link): an answer that finds its port's response queue full is
// discarded, and the requester's retransmission recovers it.
task answer;
    begin
        if (m_tx_ready[cur])
            m_tx_valid[cur] <= 1'b1;
        else if (!h_internal)
            xmit_discard[cur] <= 1'b1;
        // a NAKed packet's payload is still in the depacketizer
        if (h_plen != 13'd0 && !stored)
            pl_drop[cur] <= 1'b1;
        state <= S_IDLE;
    end
endtask

// the message is done: an RC message counts in the MSN whether or not its last packet asks for
// an ACK
task end_message;
    begin
        qp_msn_inc   <= h_type == QPT_RC;
        ans_syndrome <= 8'h1F;              // ACK, no credit count
        ans_msn      <= qp_msn + 24'd1;
        if (h_type == QPT_RC && h_ackreq)
            answer;
        else
            state <= S_IDLE;
    end
endtask

always @(posedge clk) begin
    pl_drop       <= {NUM_PORTS{1'b0}};
    rcv_drop      <= {NUM_PORTS{1'b0}};
    xmit_discard  <= {NUM_PORTS{1'b0}};
    cnp_sent      <= {NUM_PORTS{1'b0}};
    cnp_handled   <= {NUM_PORTS{1'b0}};
    qp_set_epsn   <= 1'b0;
    qp_msn_inc    <= 1'b0;
    m_ack_valid   <= 1'b0;
    if (m_msg_valid && m_msg_ready) m_msg_valid <= 1'b0;
    if (m_dma_valid && m_dma_ready) m_dma_valid <= 1'b0;
    if (|(m_tx_valid & m_tx_ready)) m_tx_valid <= {NUM_PORTS{1'b0}};
    // the payload is taken with its last beat: a drop after that would hit the next packet's
    if (storing && m_axis_wr_tvalid && m_axis_wr_tready && m_axis_wr_tlast) begin
        storing <= 1'b0;
        stored  <= 1'b1;
    end

    case (state)
        S_IDLE: if (pick_valid) begin
            stored  <= 1'b0;
            implied <= 1'b0;
            cnp_done <= 1'b0;
            h     <= s_hdr_data[pick*RXH_WIDTH +: RXH_WIDTH];
            cur   <= pick;
            rr    <= pick;
            state <= S_DECODE;
        end

        S_DECODE: begin
            ans_cnp  <= 1'b0;
            ans_kind <= 3'd4;
            scan     <= {RES_BITS{1'b0}};
            ans_msn  <= qp_msn;
            ans_psn  <= h_psn;
            m_ack_syndrome <= h[RXH_SYNDROME +: 8];
            m_ack_psn      <= h_psn;
            if (is_cnp) begin
                if (cnp_qp_ok)
                    cnp_handled[cur] <= !h_internal;
                else if (!h_internal)
                    rcv_drop[cur] <= 1'b1;
                state <= S_IDLE;
            end else if (is_resp) begin
                if (resp_qp_bad) begin
                    if (!h_internal) rcv_drop[cur] <= 1'b1;
                    state <= S_DROP;
                end else if (!resp_match) begin
                    state <= S_DROP;            // a stale response
                end else if (req_wait || m_ack_valid) begin
                    state <= S_DECODE;          // earlier answers are being matched
                end else if (is_ack) begin
                    m_ack_valid <= 1'b1;
                    m_ack_kind  <= 2'd0;
                    state <= S_IDLE;
                end else if (resp_ahead != 24'd0 && !resp_ahead[23] && !implied) begin
                    // past the oldest unacknowledged PSN: it acknowledges every PSN before it
                    // (it may be the first response of a READ behind unacknowledged WRITEs),
                    // then it is looked at again
                    m_ack_valid <= 1'b1;
                    m_ack_kind  <= 2'd3;
                    implied     <= 1'b1;
                end else if (resp_ahead != 24'd0) begin
                    // a duplicate, or one past a lost response: the completer decides
                    m_ack_valid <= !resp_ahead[23];
                    m_ack_kind  <= 2'd2;
                    state <= S_DROP;
                end else if (!req_read || req_atomic != is_atomic_ack) begin
                    state <= S_DROP;            // no READ (or atomic) waits for it
                end else begin
                    store_addr <= req_addr;
                    store_sgl  <= 256'd0;
                    store_payload;
                end
            end else if (!qp_ok) begin
                if (!h_internal) rcv_drop[cur] <= 1'b1;
                state <= S_DROP;
            end else if (ce_mark && !cnp_done && !cnp_limited) begin
                ans_cnp  <= 1'b1;               // the CNP first, then the packet from here
                cnp_done <= 1'b1;
                state <= S_CNP;
            end else if (duplicate && fam_atomic) begin
                state <= S_REPLAY;              // executed before: its recorded result
            end else if (duplicate && !fam_read) begin
                // stored before: not again; acknowledged again (the last in-order PSN, the
                // current MSN) when the requester asks
                ans_syndrome <= 8'h1F;
                ans_psn      <= qp_epsn - 24'd1;
                state <= h_ackreq ? S_ANSWER : S_DROP;
            end else if (h_type == QPT_RC && !duplicate && psn_diff != 24'd0) begin
                // packets were lost: say so once, then wait for the expected PSN
                ans_syndrome <= 8'h60;
                ans_psn      <= qp_epsn;
                nak_sent[q] <= 1'b1;
                // the NAK acknowledges the message's packets before the expected PSN
                if (q_in_msg && qp_epsn != q_psn)
                    msg_acked[q] <= 1'b1;
                state <= nak_sent[q] && !(took_back[q] && h_ackreq) ? S_DROP : S_ANSWER;
            end else if (!duplicate && (!psn_ok || !seq_ok)) begin
                // out of sequence. Not a duplicate READ: it is served again even inside a
                // later message, whose opcode sequence is the expected PSN's concern. RC at
                // the expected PSN: the opcode is out of sequence (a new request inside a
                // message, a middle or last packet of none), an invalid request (IBTA); the
                // message in progress ends there. UC: the rest of that message is lost.
                in_msg[q] <= 1'b0;
                ans_syndrome <= 8'h61;
                state <= h_type == QPT_RC ? S_ANSWER : S_DROP;
            end else begin
                if (!duplicate) begin
                    nak_sent[q]  <= 1'b0;
                    took_back[q] <= 1'b0;
                end
                if (is_first && !fam_read && !fam_atomic) begin
                    in_msg[q]      <= 1'b0;
                    msg_acked[q]   <= 1'b0;
                    msg_write[q]   <= fam_write;
                    msg_off[q]     <= 32'd0;
                    msg_dma_len[q] <= h_dma_len;
                    msg_psn[q]     <= h_psn;
                end
                msg_kind <= is_first ? 2'd0 : 2'd3;
                if (write_over || size_bad) begin
                    // more data than the RETH announced, or a packet the path MTU does not fit
                    ans_syndrome <= 8'h61;
                    state <= h_type == QPT_RC ? S_ANSWER : S_DROP;
                    in_msg[q] <= 1'b0;
                end else if (write_direct) begin
                    store_addr <= msg_addr[q] + q_off[ADDR_WIDTH-1:0];
                    store_sgl  <= 256'd0;
                    store_payload;
                end else begin
                    m_msg_valid <= 1'b1;
                    state <= S_MSG_WAIT;
                end
            end
        end

        S_MSG_WAIT: if (s_rsp_valid) begin
            if (msg_kind == 2'd0 && fam_write)
                msg_addr[q] <= s_rsp_addr;
            store_addr <= msg_write[q] && msg_kind == 2'd3 ? msg_addr[q] + q_off[ADDR_WIDTH-1:0]
                                                            : s_rsp_addr;
            store_sgl  <= msg_write[q] && msg_kind == 2'd3 ? 256'd0 : s_rsp_sgl;
            if (s_rsp_rnr) begin
                // RNR NAK with the QP's timer: the requester sends the message again from its
                // first packet
                ans_syndrome <= {3'b001, s_rsp_rnr_timer};
                ans_psn      <= q_psn;
                in_msg[q] <= 1'b0;
                qp_set_epsn   <= 1'b1;
                qp_epsn_value <= q_psn;
                took_back[q] <= msg_acked[q] && !is_first;
                state  <= S_ANSWER;
            end else if (s_rsp_status != WC_SUCCESS) begin
                ans_syndrome <= nak_code;
                in_msg[q] <= 1'b0;
                state  <= h_type == QPT_RC ? S_ANSWER : S_DROP;
            end else if (!s_rsp_place) begin
                // UC / UD: dropped by the responder (no receive WQE, or a failed check)
                in_msg[q] <= 1'b0;
                if (h_type == QPT_UC) begin
                    qp_set_epsn   <= 1'b1;
                    qp_epsn_value <= h_psn + 24'd1;
                end
                state <= S_DROP;
            end else if (fam_atomic) begin
                dma_op      <= X_ATOMIC;
                m_dma_valid <= 1'b1;
                state <= S_ATOMIC_WAIT;
            end else if (fam_read) begin
                // a duplicate is served again from its PSN and moves neither PSN nor MSN
                ans_kind     <= 3'd3;
                ans_addr     <= s_rsp_addr;
                ans_syndrome <= 8'h1F;
                ans_msn      <= duplicate ? qp_msn : qp_msn + 24'd1;
                qp_msn_inc   <= !duplicate;
                qp_set_epsn   <= !duplicate;
                qp_epsn_value <= h_psn + read_pkts;
                state <= S_ANSWER;
            end else begin
                store_payload;
            end
        end

        // executed: answered with the original value, which is kept for a duplicate
        S_ATOMIC_WAIT: if (s_dma_done) begin
            ans_msn <= qp_msn + 24'd1;
            qp_msn_inc    <= 1'b1;
            qp_set_epsn   <= 1'b1;
            qp_epsn_value <= h_psn + 24'd1;
            if (s_dma_error) begin
                ans_syndrome <= 8'h63;          // the host memory failed: remote operational error
            end else begin
                ans_kind     <= 3'd7;
                ans_orig     <= s_dma_rdata[63:0];
                ans_syndrome <= 8'h1F;
                res_psn[res_at]  <= h_psn;
                res_orig[res_at] <= s_dma_rdata[63:0];
                res_wp[q]        <= res_wp[q] + 1'b1;
                if (&res_wp[q])
                    res_full[q]  <= 1'b1;
            end
            state <= S_ANSWER;
        end

        // a duplicate atomic: the QP's recorded results, one a cycle; none: dropped
        S_REPLAY: begin
            scan <= scan + 1'b1;
            if (scan_hit) begin
                ans_kind     <= 3'd7;
                ans_orig     <= res_orig[scan_at];
                ans_syndrome <= 8'h1F;
                state <= S_ANSWER;
            end else if (&scan) begin
                state <= S_DROP;
            end
        end

        S_STORE_WAIT: if (s_dma_done) begin
            m_ack_error <= s_dma_error;
            if (s_dma_error && !is_resp) begin
                // host memory refused the request's payload: the message goes no further (no
                // END, so a SEND's receive stays posted); RC answers remote operational error
                stored       <= 1'b1;
                in_msg[q]    <= 1'b0;
                ans_syndrome <= 8'h63;
                state <= h_type == QPT_RC ? S_ANSWER : S_IDLE;
            end else begin
                after_store;
            end
        end

        S_AFTER: begin
            m_ack_error <= 1'b0;
            after_store;
        end

        // msg_off already counts this packet: END carries the message's length
        S_END_WAIT: if (s_rsp_valid) end_message;

        S_ANSWER: answer;

        // the CNP goes out like an answer (discarded, and counted so, when the queue is full)
        S_CNP: begin
            if (m_tx_ready[cur]) begin
                m_tx_valid[cur] <= 1'b1;
                cnp_sent[cur]   <= 1'b1;
            end else begin
                xmit_discard[cur] <= 1'b1;
            end
            cnp_recent[q] <= 1'b1;
            state <= S_DECODE;
        end

        // S_DROP: release the payload
        default: begin
            if (h_plen != 13'd0)
                pl_drop[cur] <= 1'b1;
            state <= S_IDLE;
        end
    endcase

    // the CNP window: every QP may send one again once it has passed
    cnp_timer <= cnp_timer + 32'd1;
    if (cnp_timer + 32'd1 >= cnp_interval) begin
        cnp_timer  <= 32'd0;
        cnp_recent <= {NUM_QP{1'b0}};
    end

    if (qp_restart) begin
        res_full[qp_restart_qpn]  <= 1'b0;
        res_wp[qp_restart_qpn]    <= {RES_BITS{1'b0}};
        in_msg[qp_restart_qpn]    <= 1'b0;
        nak_sent[qp_restart_qpn]  <= 1'b0;
        took_back[qp_restart_qpn] <= 1'b0;
    end

    if (rst) begin
        state       <= S_IDLE;
        in_msg      <= {NUM_QP{1'b0}};
        storing     <= 1'b0;
        rr          <= {PORT_BITS{1'b0}};
        m_msg_valid <= 1'b0;
        m_dma_valid <= 1'b0;
        m_tx_valid  <= {NUM_PORTS{1'b0}};
        m_ack_valid <= 1'b0;
        nak_sent    <= {NUM_QP{1'b0}};
        took_back   <= {NUM_QP{1'b0}};
        res_full    <= {NUM_QP{1'b0}};
        cnp_recent  <= {NUM_QP{1'b0}};
        cnp_timer   <= 32'd0;
        ans_cnp     <= 1'b0;
    end
end

endmodule

`resetall
`endif
