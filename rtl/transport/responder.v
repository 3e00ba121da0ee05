// The responder: what the destination QP does with an arriving message, whichever path brought
// it. START validates the message against the destination QP (state, transport, Q_Key, rkey and
// access rights), consumes a receive WQE where the operation needs one, checks the receive
// buffer, writes the UD GRH area, and answers with where the payload goes (a SEND's piece: the
// list of host ranges it takes in the receive SGEs, each part's lkey checked; for RDMA READ,
// where it comes from; for an atomic, the 8 bytes it works on, which must be 8-byte aligned).
// END, of a message that took a receive WQE (a SEND, an RDMA WRITE with immediate), writes the
// receive completion once the payload is in place; a SEND with invalidate first invalidates
// the rkey it names (a type 2 window bound to this QP): refused, the receive completes with
// REM_INV_REQ_ERR and the QP goes to ERR.
// FLUSH completes one receive WQE of a QP in ERR with WR_FLUSH_ERR. A message from the wire
// arrives in packets: START with the first, CONT for each later packet that needs a check
// (a SEND's next piece of the receive buffer, the receive WQE of a WRITE_WITH_IMM's last
// packet), END after the last; s_msg_offset is the piece's byte offset in the message.
// Messages of different QPs may interleave: the receive WQE a SEND's START took stays at the
// QP's rq_ci until its END, and is loaded again when another QP's message came in between. A
// QP on a shared receive queue takes a WQE from the SRQ when it has none: the WQE is copied
// into the QP's one-slot receive ring and the SRQ moves on, so from then on it is the QP's.
`ifndef RDMA_RESPONDER_V
`define RDMA_RESPONDER_V
`default_nettype none

module responder #(
    parameter NUM_QP = 64,         // queue pairs
    parameter NUM_CQ = 16,         // completion queues
    parameter NUM_PORTS = 2,       // ports
    parameter ADDR_WIDTH = 32      // host address width
) (
    input  wire                     clk,
    input  wire                     rst,

    // message from the requester (bypass) side
    input  wire                     s_msg_valid,
    output wire                     s_msg_ready,
    input  wire [1:0]               s_msg_kind,       // 0 START, 1 END, 2 FLUSH (receive queue of s_msg_dest_qpn), 3 CONT
    input  wire [7:0]               s_msg_op,         // ibv_wr_opcode
    input  wire [2:0]               s_msg_type,       // sender's transport
    input  wire [31:0]              s_msg_dest_qpn,   // 32 bits: a QPN above 24 bits is unreachable, not aliased
    input  wire [23:0]              s_msg_src_qpn,
    input  wire [PORT_BITS-1:0]     s_msg_port,       // port the message arrived on
    input  wire [31:0]              s_msg_len,        // START/CONT: bytes of this piece; END: of the message
    input  wire [31:0]              s_msg_offset,     // CONT: byte offset of the piece
    input  wire [63:0]              s_msg_raddr,
    input  wire [31:0]              s_msg_rkey,
    input  wire [31:0]              s_msg_imm,
    input  wire [31:0]              s_msg_qkey,
    input  wire                     s_msg_solicited,
    input  wire [15:0]              s_msg_slid,
    input  wire [15:0]              s_msg_dlid,
    input  wire [3:0]               s_msg_sl,
    input  wire                     s_msg_is_global,
    input  wire [7:0]               s_msg_tclass,
    input  wire [19:0]              s_msg_flow_label,
    input  wire [7:0]               s_msg_hop_limit,
    input  wire [127:0]             s_msg_sgid,
    input  wire [127:0]             s_msg_dgid,
    // answer: the sender's completion status, whether to move the payload, and its host address
    output reg                      m_rsp_valid,
    output reg  [7:0]               m_rsp_status,
    output reg                      m_rsp_place,
    output reg                      m_rsp_rnr,
    output wire [4:0]               m_rsp_rnr_timer,  // with m_rsp_rnr: the QP's min_rnr_timer code
    output reg  [ADDR_WIDTH-1:0]    m_rsp_addr,       // host address; with m_rsp_sgl: offset in it
    output reg  [255:0]             m_rsp_sgl,        // a SEND's receive buffer for this piece
                                                      // (a DMA list, rdma_defs.vh), else no bytes

    input  wire [NUM_PORTS*3-1:0]   port_lmc,
    input  wire [NUM_PORTS-1:0]     port_eth,         // link layer: 1 Ethernet (the GRH area's form)

    // destination QP context (qp_table port B)
    output wire [QPN_BITS-1:0]      qp_qpn,
    input  wire                     qp_valid,
    input  wire [2:0]               qp_type,
    input  wire [2:0]               qp_state,
    input  wire [15:0]              qp_pd,
    input  wire [CQN_BITS-1:0]      qp_rcq,
    input  wire [PORT_BITS-1:0]     qp_port,
    input  wire [3:0]               qp_access,
    input  wire [31:0]              qp_qkey,
    input  wire [4:0]               qp_min_rnr_timer,
    input  wire [ADDR_WIDTH-1:0]    qp_rq_base,
    input  wire [3:0]               qp_rq_log,
    input  wire [2:0]               qp_rq_sge,        // SGEs its receive WQEs may have (0 counts as 1)
    input  wire [15:0]              qp_rq_pi,
    input  wire [15:0]              qp_rq_ci,
    output reg                      qp_rq_advance,
    output reg                      qp_set_err,
    input  wire                     qp_srq,           // the QP takes its receive WQEs from an SRQ
    output reg                      qp_rq_take,       // it took the SRQ's WQE at srq_ci

    // the QP's SRQ (srq_table)
    input  wire                     srq_valid,
    input  wire [15:0]              srq_pd,
    input  wire [ADDR_WIDTH-1:0]    srq_base,
    input  wire [3:0]               srq_log,
    input  wire [2:0]               srq_sge,          // SGEs its WQEs may have (0 counts as 1)
    input  wire [15:0]              srq_pi,
    input  wire [15:0]              srq_ci,

    // protection checker client
    output reg                      m_prot_valid,
    input  wire                     m_prot_ready,
    output wire [237:0]             m_prot_data,      // PROT_REQ_WIDTH (prot_request)
    input  wire                     s_prot_valid,
    input  wire [ADDR_WIDTH:0]      s_prot_data,

    // DMA mover client: {data[511:0], len[31:0], dst, src, mode[2:0]}
    output reg                      m_dma_valid,
    input  wire                     m_dma_ready,
    output wire [DMA_REQ_WIDTH-1:0] m_dma_data,
    input  wire                     s_dma_done,
    input  wire [511:0]             s_dma_rdata,

    // CQE writer client: {raise_solicited, cqn[15:0], cqe[255:0]}
    output reg                      m_cqe_valid,
    input  wire                     m_cqe_ready,
    output wire [272:0]             m_cqe_data,
    input  wire                     s_cqe_done
);

`include "rdma_defs.vh"
`include "wire_order.vh"
`include "ip_headers.vh"

localparam QPN_BITS  = $clog2(NUM_QP);
localparam CQN_BITS  = $clog2(NUM_CQ);
localparam PORT_BITS = NUM_PORTS > 1 ? $clog2(NUM_PORTS) : 1;
localparam DMA_REQ_WIDTH = 3 + 2*ADDR_WIDTH + 32 + 512;

localparam [4:0] S_IDLE = 5'd0, S_CHECK = 5'd1, S_RKEY = 5'd2, S_RKEY_WAIT = 5'd3,
                 S_RQ = 5'd4, S_RQ_WAIT = 5'd5, S_LKEY = 5'd6, S_LKEY_WAIT = 5'd7,
                 S_GRH_WAIT = 5'd8, S_CQE = 5'd9, S_CQE_WAIT = 5'd10, S_RESPOND = 5'd11,
                 S_RQ2_WAIT = 5'd12, S_WALK = 5'd13, S_GRH = 5'd14, S_INV_WAIT = 5'd15,
                 S_TAKE_WAIT = 5'd16, S_TAKE2_WAIT = 5'd17, S_TAKEN = 5'd18;
reg [4:0] state;

// the message being served
reg [1:0]   r_kind;
reg [7:0]   r_op;
reg [2:0]   r_type;
reg [31:0]  r_dest;
reg [23:0]  r_src;
reg [PORT_BITS-1:0] r_port;
reg [31:0]  r_len;
reg [31:0]  r_off;
reg [63:0]  r_raddr;
reg [31:0]  r_rkey;
reg [31:0]  r_imm;
reg [31:0]  r_qkey;
reg         r_sol;
reg [15:0]  r_slid;
reg [15:0]  r_dlid;
reg [3:0]   r_sl;
reg         r_global;
reg [7:0]   r_tclass;
reg [19:0]  r_flow;
reg [7:0]   r_hop;
reg [127:0] r_sgid;
reg [127:0] r_dgid;

// the receive WQE it consumed, and the QP it belongs to; taking: it is being loaded from the
// QP's SRQ (and copied into the QP's slot), not from the QP's own ring
reg         taking;
reg [QPN_BITS-1:0] rq_qpn;
reg [63:0]  rq_wr_id;
reg [7:0]   rq_nsge;           // 0x02: SGEs in the WQE (0 and 1: SGE 0 alone)
reg [63:0]  rq_addr [0:3];     // SGE 0 at 0x10, SGEs 1-3 at 0x40, 0x50, 0x60 of a 128-byte WQE
reg [31:0]  rq_len  [0:3];
reg [31:0]  rq_lkey [0:3];

// ---- scatter: the receive buffer is the SGEs' bytes in order ----
// a QP on an SRQ has the SRQ's WQEs (their size and SGEs) in its slot, in the SRQ's PD
wire [2:0]  rx_sge  = qp_srq ? srq_sge : qp_rq_sge;
wire [15:0] rx_pd   = qp_srq ? srq_pd : qp_pd;
wire [2:0]  rq_cap  = rx_sge == 3'd0 ? 3'd1 : rx_sge;
wire [7:0]  rq_n    = rq_nsge == 8'd0 ? 8'd1 : rq_nsge;
wire        rq_bad  = rq_n > {5'd0, rq_cap};
wire [33:0] rlen0 = {2'd0, rq_len[0]};
wire [33:0] rlen1 = rq_n > 8'd1 ? {2'd0, rq_len[1]} : 34'd0;
wire [33:0] rlen2 = rq_n > 8'd2 ? {2'd0, rq_len[2]} : 34'd0;
wire [33:0] rlen3 = rq_n > 8'd3 ? {2'd0, rq_len[3]} : 34'd0;
wire [33:0] rq_total = rlen0 + rlen1 + rlen2 + rlen3;
// the walk over the SGEs: SGE wk starts at byte wk_start of the buffer; the piece is
// [piece_lo, piece_hi), and the part of it in SGE wk is [ov_lo, ov_hi)
reg  [1:0]  wk;
reg  [33:0] wk_start;
wire [33:0] wk_len  = wk == 2'd0 ? rlen0 : wk == 2'd1 ? rlen1 : wk == 2'd2 ? rlen2 : rlen3;
wire [33:0] wk_end  = wk_start + wk_len;

// the completion to write, and what to answer after it
reg [7:0]   cqe_status;
reg         r_set_err;

wire is_ud      = r_type == QPT_UD;
wire is_rc      = r_type == QPT_RC;
wire is_read    = r_op == WR_RDMA_READ;
wire is_atomic  = r_op == WR_ATOMIC_CMP_AND_SWP || r_op == WR_ATOMIC_FETCH_AND_ADD;
wire is_awrite  = r_op == WR_ATOMIC_WRITE;    // 8 bytes, 8-byte aligned, written at once
wire has_imm    = r_op == WR_SEND_IMM || r_op == WR_RDMA_WRITE_IMM;
wire is_inv     = r_op == WR_SEND_INV;
wire is_send    = r_op == WR_SEND || r_op == WR_SEND_IMM || is_inv;
wire needs_rq   = is_send || r_op == WR_RDMA_WRITE_IMM;
wire is_cont    = r_kind == 2'd3;
// bytes a SEND puts in the receive buffer: UD adds the 40-byte GRH area
wire [32:0] recv_need = {1'b0, r_len} + (is_ud ? 33'd40 : 33'd0);
wire [33:0] piece_lo = {2'd0, r_off};
wire [33:0] piece_hi = piece_lo + {1'b0, recv_need};
wire [33:0] ov_lo = wk_start > piece_lo ? wk_start : piece_lo;
wire [33:0] ov_hi = wk_end < piece_hi ? wk_end : piece_hi;
wire        ov_any = ov_hi > ov_lo;
wire [33:0] ov_len = ov_hi - ov_lo;
wire [33:0] ov_skip = ov_lo - wk_start;
wire        has_tail = s_dma_rdata[2*8 +: 8] > 8'd1 && s_dma_rdata[2*8 +: 8] <= {5'd0, rq_cap};
wire        walk_last = wk == 2'd3 || wk_end >= piece_hi;   // no SGE after this one takes bytes
wire [31:0] lkey_host = s_prot_data[ADDR_WIDTH:1];

assign s_msg_ready = state == S_IDLE;
// a new RDMA WRITE, READ or atomic message: its rkey is checked first
wire s_rkey_first = s_msg_kind == 2'd0 && (s_msg_len != 32'd0 || s_msg_op == WR_ATOMIC_WRITE) &&
                    (s_msg_op == WR_RDMA_WRITE || s_msg_op == WR_RDMA_WRITE_IMM ||
                     s_msg_op == WR_ATOMIC_WRITE || s_msg_op == WR_RDMA_READ ||
                     s_msg_op == WR_ATOMIC_CMP_AND_SWP || s_msg_op == WR_ATOMIC_FETCH_AND_ADD);

// the packet would have been dropped: RC times out, UC and UD never know
task unreachable;
    begin
        m_rsp_status <= is_rc ? WC_RETRY_EXC_ERR : WC_SUCCESS;
        state <= S_RESPOND;
    end
endtask
assign m_rsp_rnr_timer = qp_min_rnr_timer;
assign qp_qpn = r_dest[QPN_BITS-1:0];

wire reachable = r_dest < NUM_QP && qp_valid && qp_port == r_port && qp_type == r_type &&
                 (qp_state == QPS_RTR || qp_state == QPS_RTS) && (!is_ud || r_qkey == qp_qkey);
wire [3:0] rkey_need = is_read ? (4'd1 << ACC_REMOTE_READ) : is_atomic ? (4'd1 << ACC_REMOTE_ATOMIC)
                                                                   : (4'd1 << ACC_REMOTE_WRITE);
wire qp_allows = |(qp_access & rkey_need);
wire srq_has   = qp_srq && srq_valid && srq_pi != srq_ci;   // the QP's SRQ has a WQE to take
wire [15:0] rq_mask = (16'd1 << qp_rq_log) - 16'd1;

// protection requests: the rkey range for RDMA, the receive buffer for SEND, the rkey a SEND
// with invalidate names
reg  prot_is_rkey, prot_is_inv;
reg  inv_done;
wire [23:0] dest_qpn = {{(24-QPN_BITS){1'b0}}, qp_qpn};
assign m_prot_data =
    prot_is_inv  ? prot_request(PROT_INV_REMOTE, dest_qpn, 32'd0, 32'd0, 4'd0, qp_pd, 32'd0,
                                64'd0, r_rkey) :
    prot_is_rkey ? prot_request(PROT_CHECK, dest_qpn, 32'd0, 32'd0, rkey_need, qp_pd, r_len,
                                r_raddr, r_rkey) :
                   prot_request(PROT_CHECK, dest_qpn, 32'd0, 32'd0, 4'd1 << ACC_LOCAL_WRITE, rx_pd,
                                ov_len[31:0], rq_addr[wk] + {32'd0, ov_skip[31:0]}, rq_lkey[wk]);

// DMA: load the receive WQE (both halves of a 128-byte one), copy a WQE taken from the SRQ into
// the QP's slot (both halves), or store the UD GRH area: the first 40 bytes of the piece's list,
// one store per list entry they touch
localparam [2:0] R_WQE = 3'd0, R_WQE2 = 3'd1, R_GRH = 3'd2, R_TAKE = 3'd3, R_TAKE2 = 3'd4;
reg  [2:0] dma_sel;
reg  [1:0] gj;                 // the list entry
reg  [5:0] gp;                 // GRH bytes stored so far
wire [31:0] g_len  = m_rsp_sgl[gj*64 + 32 +: 32];
wire [31:0] g_addr = m_rsp_sgl[gj*64 +: 32];
wire [31:0] g_left = 32'd40 - {26'd0, gp};
wire [31:0] g_take = g_len < g_left ? g_len : g_left;
// The GRH area: the GRH on InfiniBand; on Ethernet the IPv6 header, or 20 zero bytes and the
// IPv4 header (as rxe and mlx5 give them); first byte in bits [7:0]
wire [5:0]  pad      = (6'd0 - r_len[5:0]) & 6'd3;
wire [15:0] pay_len  = 16'd24 + (has_imm ? 16'd4 : 16'd0) + r_len[15:0] + {10'd0, pad};  // BTH .. ICRC
wire        r_eth    = port_eth[r_port];
wire [15:0] udp_len  = pay_len + 16'd8;
wire [319:0] grh_area =
    !r_global ? 320'd0 :
    !r_eth    ? ipv6_header(r_tclass, r_flow, pay_len, 8'h1B, r_hop, r_sgid, r_dgid) :
    ipv4_mapped(r_sgid) ? {ipv4_header(r_tclass, udp_len + 16'd20, r_hop, r_sgid[31:0], r_dgid[31:0]), 160'd0} :
                ipv6_header(r_tclass, r_flow, udp_len, 8'h11, r_hop, r_sgid, r_dgid);
wire [511:0] grh_le = {192'd0, grh_area};
// 64-byte WQEs, or 128-byte ones when the QP's receive WQEs may have more than one SGE
wire [15:0] srq_mask = (16'd1 << srq_log) - 16'd1;
wire [15:0] rq_index = taking ? srq_ci & srq_mask : qp_rq_ci & rq_mask;
wire [ADDR_WIDTH-1:0] rq_slot = (taking ? srq_base : qp_rq_base) +
                                ({{(ADDR_WIDTH-16){1'b0}}, rq_index} << (rq_cap > 3'd1 ? 7 : 6));
wire [ADDR_WIDTH-1:0] rq_slot_tail = rq_slot + 64;   // SGEs 1-3 of a 128-byte WQE
// the taken WQE as the QP's slot keeps it: the fields the responder reads, in their places
wire [511:0] take_head = {256'd0, rq_lkey[0], rq_len[0], rq_addr[0], rq_wr_id, 40'd0, rq_nsge, 16'd0};
wire [511:0] take_tail = {128'd0, rq_lkey[3], rq_len[3], rq_addr[3], rq_lkey[2], rq_len[2], rq_addr[2],
                          rq_lkey[1], rq_len[1], rq_addr[1]};
wire [ADDR_WIDTH-1:0] own_slot = qp_rq_base;          // the QP's one slot (its ring of one)
wire [ADDR_WIDTH-1:0] own_slot_tail = own_slot + 64;
assign m_dma_data =
    dma_sel == R_GRH   ? {grh_le >> {gp, 3'd0}, g_take, g_addr[ADDR_WIDTH-1:0], {ADDR_WIDTH{1'b0}}, DMA_STORE} :
    dma_sel == R_TAKE  ? {take_head, 32'd64, own_slot, {ADDR_WIDTH{1'b0}}, DMA_STORE} :
    dma_sel == R_TAKE2 ? {take_tail, 32'd48, own_slot_tail, {ADDR_WIDTH{1'b0}}, DMA_STORE} :
    dma_sel == R_WQE2  ? {512'd0, 32'd48, {ADDR_WIDTH{1'b0}}, rq_slot_tail, DMA_LOAD} :
                         {512'd0, 32'd64, {ADDR_WIDTH{1'b0}}, rq_slot, DMA_LOAD};

// the receive completion
wire [2:0]  lmc       = port_lmc[r_port*3 +: 3];
wire [15:0] lmc_mask  = (16'd1 << lmc) - 16'd1;
wire        ok_cqe    = cqe_status == WC_SUCCESS;
wire [7:0]  cqe_op    = r_op == WR_RDMA_WRITE_IMM && r_kind != 2'd2 ? WCO_RECV_RDMA_IMM : WCO_RECV;
wire [7:0]  cqe_flags = ok_cqe ? {5'd0, is_inv, has_imm, r_global} : 8'd0;
wire [31:0] byte_len  = is_send ? recv_need[31:0] : r_len;
// RoCE v2 has no LIDs, and its priority travels in the VLAN tag: SL, SLID and DLID path bits
// are 0 on Ethernet, whichever path the message took
wire [6:0]  cqe_path  = r_eth ? 7'd0 : r_dlid[6:0] & lmc_mask[6:0];
wire [15:0] cqe_slid  = r_eth ? 16'd0 : r_slid;
wire [3:0]  cqe_sl    = r_eth ? 4'd0 : r_sl;
wire [255:0] cqe = ok_cqe ?
    {8'd0, 1'b0, cqe_path, cqe_slid, 4'd0, cqe_sl, cqe_flags, cqe_op, cqe_status,
     8'd0, r_src, r_dest, has_imm ? r_imm : is_inv ? r_rkey : 32'd0, byte_len, rq_wr_id} :
    {48'd0, cqe_op, cqe_status, 32'd0, r_dest, 64'd0, rq_wr_id};
assign m_cqe_data = {r_sol || !ok_cqe, {{(16-CQN_BITS){1'b0}}, qp_rcq}, cqe};

wire unused = ^{s_prot_data[0], s_dma_rdata[511:384],
                r_dlid[15:7], lmc_mask[15:7], ov_len[33:32], ov_skip[33:32], g_addr};

// the receive WQE is in hand: a WQE taken from the SRQ is copied into the QP's slot first
task loaded;
    begin
        if (taking) begin
            dma_sel     <= R_TAKE;
            m_dma_valid <= 1'b1;
            state <= S_TAKE_WAIT;
        end else begin
            state <= S_LKEY;
        end
    end
endtask

// every SGE the piece touches is checked: the answer is ready (UD: the payload follows the GRH
// area, which is stored first)
task walk_done;
    begin
        m_rsp_addr  <= is_ud ? 40 : 0;
        m_rsp_place <= 1'b1;
        gj <= 2'd0;
        gp <= 6'd0;
        state <= is_ud ? S_GRH : S_RESPOND;
    end
endtask

integer n;
always @(posedge clk) begin
    m_rsp_valid   <= 1'b0;
    qp_rq_advance <= 1'b0;
    qp_rq_take    <= 1'b0;
    qp_set_err    <= 1'b0;
    if (m_prot_valid && m_prot_ready) m_prot_valid <= 1'b0;
    if (m_dma_valid && m_dma_ready)   m_dma_valid  <= 1'b0;
    if (m_cqe_valid && m_cqe_ready)   m_cqe_valid  <= 1'b0;

    case (state)
        S_IDLE: if (s_msg_valid) begin
            r_kind <= s_msg_kind;   r_op <= s_msg_op;        r_type <= s_msg_type;
            r_dest <= s_msg_dest_qpn; r_src <= s_msg_src_qpn; r_port <= s_msg_port;
            r_len  <= s_msg_len;    r_raddr <= s_msg_raddr;  r_rkey <= s_msg_rkey;
            r_off  <= s_msg_offset;
            r_imm  <= s_msg_imm;    r_qkey <= s_msg_qkey;    r_sol <= s_msg_solicited;
            r_slid <= s_msg_slid;   r_dlid <= s_msg_dlid;    r_sl <= s_msg_sl;
            r_global <= s_msg_is_global; r_tclass <= s_msg_tclass; r_flow <= s_msg_flow_label;
            r_hop  <= s_msg_hop_limit; r_sgid <= s_msg_sgid; r_dgid <= s_msg_dgid;
            m_rsp_status <= WC_SUCCESS;
            m_rsp_sgl    <= 256'd0;
            m_rsp_place  <= 1'b0;
            m_rsp_rnr    <= 1'b0;
            r_set_err    <= 1'b0;
            inv_done     <= 1'b0;
            taking       <= 1'b0;
            cqe_status   <= WC_SUCCESS;
            state <= s_msg_kind == 2'd1 ? S_CQE : s_msg_kind == 2'd2 ? S_RQ :
                     s_rkey_first ? S_RKEY_WAIT : S_CHECK;
            if (s_rkey_first) begin
                // the rkey check leaves now (its fields are the registers this edge loads, the
                // PD the QP's): whether the QP may take the message is decided with its answer
                prot_is_rkey <= 1'b1;
                prot_is_inv  <= 1'b0;
                m_prot_valid <= 1'b1;
            end
            if (s_msg_kind == 2'd2) begin
                // flushing: the same receive WQE load, then an error completion
                r_op       <= WR_SEND;
                cqe_status <= WC_WR_FLUSH_ERR;
            end
        end

        // a message with no rkey to check
        S_CHECK: begin
            if (!reachable) begin
                unreachable;
            end else begin
                state <= S_RKEY;
            end
        end

        S_RKEY_WAIT: if (s_prot_valid) begin
            m_rsp_addr <= s_prot_data[ADDR_WIDTH:1];
            if (!reachable) begin
                unreachable;
            end else if (!s_prot_data[0] || !qp_allows) begin
                m_rsp_status <= is_rc ? WC_REM_ACCESS_ERR : WC_SUCCESS;
                r_set_err    <= is_rc;
                state <= S_RESPOND;
            end else if ((is_atomic || is_awrite) && r_raddr[2:0] != 3'd0 ||
                         is_awrite && r_len != 32'd8) begin
                // a misaligned atomic, or an ATOMIC WRITE of other than its 8 bytes, is an
                // invalid request (as rxe's responder has it)
                m_rsp_status <= WC_REM_INV_REQ_ERR;
                r_set_err    <= 1'b1;
                state <= S_RESPOND;
            end else if (!needs_rq) begin
                // no receive WQE to take: the answer is ready now
                m_rsp_place <= 1'b1;
                m_rsp_valid <= 1'b1;
                state <= S_IDLE;
            end else begin
                state <= S_RKEY;
            end
        end

        // rights are fine: take a receive WQE if the operation consumes one
        S_RKEY: begin
            if (!needs_rq) begin
                m_rsp_place <= 1'b1;
                state <= S_RESPOND;
            end else if (is_cont && is_send && rq_qpn == qp_qpn) begin
                state <= S_LKEY;    // the message's receive WQE is already taken
            end else if (is_cont && is_send) begin
                state <= S_RQ;      // ... and another QP's message came in between
            end else if (qp_rq_pi == qp_rq_ci && !srq_has) begin
                m_rsp_rnr    <= is_rc;
                state <= S_RESPOND;
            end else begin
                // the QP's own next WQE, or the one it holds; else take the SRQ's next
                taking <= qp_rq_pi == qp_rq_ci;
                state <= S_RQ;
            end
        end

        S_RQ: begin
            if (r_kind == 2'd2 && qp_rq_pi == qp_rq_ci) begin
                state <= S_RESPOND;
            end else begin
                dma_sel     <= R_WQE;
                m_dma_valid <= 1'b1;
                state <= S_RQ_WAIT;
            end
        end

        S_RQ_WAIT: if (s_dma_done) begin
            rq_qpn     <= qp_qpn;
            rq_wr_id   <= s_dma_rdata[8*8 +: 64];
            rq_nsge    <= s_dma_rdata[2*8 +: 8];
            rq_addr[0] <= s_dma_rdata[16*8 +: 64];
            rq_len[0]  <= s_dma_rdata[24*8 +: 32];
            rq_lkey[0] <= s_dma_rdata[28*8 +: 32];
            if (r_kind == 2'd2 || r_kind == 2'd1) begin
                state <= S_CQE;
            end else if (has_tail) begin
                // SGEs 1-3 in the WQE's second half
                dma_sel     <= R_WQE2;
                m_dma_valid <= 1'b1;
                state <= S_RQ2_WAIT;
            end else begin
                loaded;
            end
        end

        S_RQ2_WAIT: if (s_dma_done) begin
            for (n = 1; n < 4; n = n + 1) begin
                rq_addr[n] <= s_dma_rdata[(n-1)*128 +: 64];
                rq_len[n]  <= s_dma_rdata[(n-1)*128 + 64 +: 32];
                rq_lkey[n] <= s_dma_rdata[(n-1)*128 + 96 +: 32];
            end
            loaded;
        end

        // a WQE taken from the SRQ is in the QP's slot: the SRQ moves on
        S_TAKE_WAIT: if (s_dma_done) begin
            if (rq_n > 8'd1 && !rq_bad) begin
                dma_sel     <= R_TAKE2;
                m_dma_valid <= 1'b1;
                state <= S_TAKE2_WAIT;
            end else begin
                state <= S_TAKEN;
            end
        end

        S_TAKE2_WAIT: if (s_dma_done) state <= S_TAKEN;

        S_TAKEN: begin
            qp_rq_take <= 1'b1;
            taking     <= 1'b0;
            state <= S_LKEY;
        end

        S_LKEY: begin
            if (is_send && rq_bad) begin
                // more SGEs than the QP's receive WQEs hold: a WQE the device cannot use
                cqe_status   <= WC_LOC_QP_OP_ERR;
                m_rsp_status <= is_rc ? WC_REM_OP_ERR : WC_SUCCESS;
                r_set_err    <= is_rc;
                state <= S_CQE;
            end else if (is_send && piece_hi > rq_total) begin
                cqe_status   <= WC_LOC_LEN_ERR;
                m_rsp_status <= is_rc ? WC_REM_INV_REQ_ERR : WC_SUCCESS;
                r_set_err    <= is_rc;
                state <= S_CQE;
            end else if (is_send && recv_need != 33'd0) begin
                prot_is_rkey <= 1'b0;
                prot_is_inv  <= 1'b0;
                wk       <= 2'd0;
                wk_start <= 34'd0;
                state <= S_WALK;
            end else begin
                // RDMA WRITE with immediate: the payload went to the rkey's address
                m_rsp_place <= 1'b1;
                state <= S_RESPOND;
            end
        end

        // each SGE the piece touches: its lkey, PD, bounds and LOCAL_WRITE over the part it
        // takes; the answer's list is those parts, in order
        S_WALK: begin
            if (ov_any) begin
                m_prot_valid <= 1'b1;
                state <= S_LKEY_WAIT;
            end else if (walk_last) begin
                walk_done;
            end else begin
                wk       <= wk + 2'd1;
                wk_start <= wk_end;
            end
        end

        S_LKEY_WAIT: if (s_prot_valid) begin
            if (!s_prot_data[0]) begin
                cqe_status   <= WC_LOC_PROT_ERR;
                m_rsp_status <= is_rc ? WC_REM_OP_ERR : WC_SUCCESS;
                r_set_err    <= is_rc;
                state <= S_CQE;
            end else begin
                m_rsp_sgl[wk*64 +: 64] <= {ov_len[31:0], lkey_host};
                if (walk_last) begin
                    walk_done;
                end else begin
                    wk       <= wk + 2'd1;
                    wk_start <= wk_end;
                    state <= S_WALK;
                end
            end
        end

        S_GRH: begin
            if (gp == 6'd40) begin
                state <= S_RESPOND;
            end else if (g_len == 32'd0) begin
                gj <= gj + 2'd1;
                if (gj == 2'd3)
                    state <= S_RESPOND;
            end else begin
                dma_sel     <= R_GRH;
                m_dma_valid <= 1'b1;
                state <= S_GRH_WAIT;
            end
        end

        S_GRH_WAIT: if (s_dma_done) begin
            gp    <= gp + g_take[5:0];
            gj    <= gj + 2'd1;
            state <= gj == 2'd3 ? S_RESPOND : S_GRH;
        end

        S_CQE: begin
            if (r_kind == 2'd1 && rq_qpn != qp_qpn) begin
                state <= S_RQ;          // its receive WQE again
            end else if (r_kind == 2'd1 && is_inv && cqe_status == WC_SUCCESS && !inv_done) begin
                prot_is_inv  <= 1'b1;
                m_prot_valid <= 1'b1;
                state <= S_INV_WAIT;
            end else begin
                // the receive WQE is consumed and the QP state set before the CQE is written,
                // so software that sees the CQE sees both
                qp_rq_advance <= 1'b1;
                qp_set_err    <= r_set_err;
                m_cqe_valid   <= 1'b1;
                state <= S_CQE_WAIT;
            end
        end

        S_CQE_WAIT: if (s_cqe_done) state <= S_RESPOND;

        S_INV_WAIT: if (s_prot_valid) begin
            inv_done <= 1'b1;
            if (!s_prot_data[0]) begin
                cqe_status <= WC_REM_INV_REQ_ERR;
                r_set_err  <= 1'b1;
            end
            state <= S_CQE;
        end

        default: begin
            m_rsp_valid <= 1'b1;
            qp_set_err  <= r_set_err;
            state <= S_IDLE;
        end
    endcase

    if (rst) begin
        state        <= S_IDLE;
        m_rsp_valid  <= 1'b0;
        m_prot_valid <= 1'b0;
        m_dma_valid  <= 1'b0;
        m_cqe_valid  <= 1'b0;
        r_dest       <= 32'd0;
        r_port       <= {PORT_BITS{1'b0}};
    end
end

endmodule

`resetall
`endif
