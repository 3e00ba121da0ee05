// QP contexts: attributes set by the CREATE/MODIFY/QUERY/DESTROY_QP commands, ring indices moved
// by doorbells and by the engine, and the set of QPs that have work for the scheduler.
// Port A serves the requester (the sending QP: its next WQE to issue), port B the responder
// (the destination QP), port C the packet receive engine (PSN and MSN of the QP a packet is
// addressed to), ports D and E the completer (D: retransmission and errors, E: completions).
// A send queue has three indices: the producer (doorbell), the next WQE to issue and the
// consumer (completed); at most 2^SQ_WIN_LOG WQEs are between issue and completion. A QP on a
// shared receive queue has a receive ring of one slot instead, which only the responder fills:
// its producer index moves when the QP takes a WQE from the SRQ (copied into the slot), its
// consumer index when that WQE completes.
`ifndef RDMA_QP_TABLE_V
`define RDMA_QP_TABLE_V
`default_nettype none

module qp_table #(
    parameter NUM_QP = 64,         // queue pairs; QPN 0 and 1 are reserved
    parameter NUM_CQ = 16,         // completion queues, to check CQ numbers
    parameter NUM_SRQ = 16,        // shared receive queues, to check SRQ numbers
    parameter NUM_PORTS = 2,       // ports, to check port numbers
    parameter ADDR_WIDTH = 32,     // host address width
    parameter SQ_WIN_LOG = 4,      // send window: WQEs issued and not yet completed, per QP
    parameter NUM_GIDS = 4         // GID table entries per port, to check source GID indices
) (
    input  wire                     clk,
    input  wire                     rst,
    input  wire [47:0]              now,            // device clock cycles since reset

    input  wire                     cmd_valid,
    input  wire [7:0]               cmd_op,
    input  wire [15:0]              cmd_index,
    input  wire [511:0]             cmd_data,
    output reg                      cmd_done,
    output reg  [7:0]               cmd_result,
    output reg                      cmd_rdata_valid,
    output reg  [511:0]             cmd_rdata,

    input  wire                     db_valid,
    input  wire [2:0]               db_type,
    input  wire [15:0]              db_index,
    input  wire [15:0]              db_value,
    output reg                      db_refused,     // the last SQ/RQ doorbell was ignored
    input  wire [NUM_SRQ-1:0]       srq_exists,     // SRQs a CREATE_QP may name

    // QPs with work: a send WQE to issue or flush, outstanding WQEs of a QP in ERR to flush,
    // or a receive WQE to flush
    output reg  [NUM_QP-1:0]        work,
    input  wire [NUM_QP-1:0]        sq_hold,        // the completer holds the QP's next WQE
    input  wire [NUM_QP-1:0]        sq_busy,        // the QP has WQEs issued and not finished
    // a QP starts over (created, or modified to RESET): the completer forgets it
    output wire                     restart,
    output wire [QPN_BITS-1:0]      restart_qpn,

    // port A: the requester's QP
    input  wire [QPN_BITS-1:0]      a_qpn,
    output wire [2:0]               a_type,
    output wire [2:0]               a_state,
    output wire [15:0]              a_pd,
    output wire [CQN_BITS-1:0]      a_scq,
    output wire [PORT_BITS-1:0]     a_port,
    output wire [31:0]              a_qkey,
    output wire [31:0]              a_dest_qpn,
    output wire [15:0]              a_dlid,
    output wire [3:0]               a_sl,
    output wire [6:0]               a_src_path_bits,
    output wire                     a_is_global,
    output wire [7:0]               a_hop_limit,
    output wire [7:0]               a_tclass,
    output wire [19:0]              a_flow_label,
    output wire [127:0]             a_dgid,
    output wire [GID_BITS-1:0]      a_sgid_index,
    output wire [47:0]              a_dmac,
    output wire [ADDR_WIDTH-1:0]    a_sq_base,
    output wire [3:0]               a_sq_log,
    output wire [2:0]               a_sq_sge,       // SGEs a send WQE may have: 0..4 (0 counts as 1)
    output wire [15:0]              a_sq_pi,
    output wire [15:0]              a_sq_ci,
    output wire [15:0]              a_sq_ni,        // next WQE to issue
    output wire [7:0]               a_max_rd,       // max_rd_atomic
    output wire [2:0]               a_rnr_left,
    output wire [2:0]               a_rnr_retry,
    output wire                     a_rnr_waiting,  // backing off after receiver-not-ready
    output wire [2:0]               a_retry_cnt,    // transport retries (timeout, sequence NAK)
    output wire [4:0]               a_timeout,      // local ACK timeout exponent, 0 = none
    input  wire                     a_sq_issue,     // the next WQE is issued
    input  wire                     a_rnr_wait,     // receiver not ready: count a retry, back off
    input  wire [47:0]              a_rnr_cycles,   // ... for this many cycles
    output wire [2:0]               a_mtu,          // path MTU enum
    output wire [3:0]               a_rate,         // static rate divisor
    output wire [23:0]              a_sq_psn,       // PSN of the next request packet
    input  wire                     a_set_psn,
    input  wire [23:0]              a_psn_value,

    // port B: the responder's QP
    input  wire [QPN_BITS-1:0]      b_qpn,
    output wire                     b_valid,
    output wire [2:0]               b_type,
    output wire [2:0]               b_state,
    output wire [15:0]              b_pd,
    output wire [CQN_BITS-1:0]      b_rcq,
    output wire [PORT_BITS-1:0]     b_port,
    output wire [3:0]               b_access,
    output wire [31:0]              b_qkey,
    output wire [4:0]               b_min_rnr_timer, // RNR timer code its RNR NAKs carry
    output wire [ADDR_WIDTH-1:0]    b_rq_base,
    output wire [3:0]               b_rq_log,
    output wire [2:0]               b_rq_sge,       // SGEs a receive WQE may have: 0..4 (0 counts as 1)
    output wire [15:0]              b_rq_pi,
    output wire [15:0]              b_rq_ci,
    output wire                     b_srq,          // the QP takes its receive WQEs from an SRQ
    output wire [SRQN_BITS-1:0]     b_srqn,         // ... this one
    input  wire                     b_rq_take,      // it took one (into its slot)
    input  wire                     b_rq_advance,   // a receive WQE was consumed
    input  wire                     b_set_err,      // move the QP to ERR

    // port C: the receive engine's QP
    input  wire [QPN_BITS-1:0]      c_qpn,
    output wire                     c_valid,
    output wire [2:0]               c_type,
    output wire [2:0]               c_state,
    output wire [PORT_BITS-1:0]     c_port,
    output wire [31:0]              c_dest_qpn,
    output wire [31:0]              c_qkey,
    output wire [2:0]               c_mtu,
    output wire [23:0]              c_epsn,         // expected PSN of the next request packet
    output wire [23:0]              c_msn,          // messages completed as responder (RC)
    input  wire                     c_set_epsn,
    input  wire [23:0]              c_epsn_value,
    input  wire                     c_msn_inc,

    // port D: the completer's transport QP
    input  wire [QPN_BITS-1:0]      d_qpn,
    output wire [2:0]               d_state,
    output wire [15:0]              d_sq_ni,
    output wire [2:0]               d_rnr_left,
    output wire [2:0]               d_rnr_retry,
    input  wire                     d_rewind,       // go back: issue again from d_ni_value ...
    input  wire [15:0]              d_ni_value,
    input  wire [23:0]              d_psn_value,    // ... with this PSN
    input  wire                     d_set_err,      // move the QP to ERR
    input  wire                     d_rnr_wait,     // receiver not ready: count a retry, back off
    input  wire [47:0]              d_rnr_cycles,   // ... for this many cycles

    // port E: the completer's completion QP
    input  wire [QPN_BITS-1:0]      e_qpn,
    output wire [15:0]              e_sq_ci,
    output wire [CQN_BITS-1:0]      e_scq,
    input  wire                     e_sq_advance,   // the oldest issued WQE is completed
    input  wire                     e_rnr_clear     // it got through: reload the RNR retry count
);

`include "rdma_defs.vh"

localparam QPN_BITS  = $clog2(NUM_QP);
localparam CQN_BITS  = $clog2(NUM_CQ);
localparam PORT_BITS = NUM_PORTS > 1 ? $clog2(NUM_PORTS) : 1;
localparam GID_BITS = NUM_GIDS > 1 ? $clog2(NUM_GIDS) : 1;
localparam SRQN_BITS = NUM_SRQ > 1 ? $clog2(NUM_SRQ) : 1;

reg                   q_valid     [0:NUM_QP-1];
reg [2:0]             q_type      [0:NUM_QP-1];
reg [2:0]             q_state     [0:NUM_QP-1];
reg [15:0]            q_pd        [0:NUM_QP-1];
reg [CQN_BITS-1:0]    q_scq       [0:NUM_QP-1];
reg [CQN_BITS-1:0]    q_rcq       [0:NUM_QP-1];
reg [3:0]             q_sq_log    [0:NUM_QP-1];
reg [3:0]             q_rq_log    [0:NUM_QP-1];
reg [2:0]             q_sq_sge    [0:NUM_QP-1];
reg [2:0]             q_rq_sge    [0:NUM_QP-1];
reg [ADDR_WIDTH-1:0]  q_sq_base   [0:NUM_QP-1];
reg [ADDR_WIDTH-1:0]  q_rq_base   [0:NUM_QP-1];
reg [PORT_BITS-1:0]   q_port      [0:NUM_QP-1];
reg [3:0]             q_access    [0:NUM_QP-1];
reg [31:0]            q_qkey      [0:NUM_QP-1];
reg [31:0]            q_dest_qpn  [0:NUM_QP-1];
reg [2:0]             q_rnr_retry [0:NUM_QP-1];
reg [2:0]             q_rnr_left  [0:NUM_QP-1];
reg [NUM_QP-1:0]      q_rnr_wait;
reg [47:0]            q_rnr_until [0:NUM_QP-1];
reg [2:0]             q_retry_cnt [0:NUM_QP-1];
reg [4:0]             q_timeout   [0:NUM_QP-1];
reg [4:0]             q_min_rnr   [0:NUM_QP-1];
reg [7:0]             q_max_rd    [0:NUM_QP-1];
reg [7:0]             q_max_dest_rd [0:NUM_QP-1];
reg [15:0]            q_dlid      [0:NUM_QP-1];
reg [3:0]             q_sl        [0:NUM_QP-1];
reg [6:0]             q_spb       [0:NUM_QP-1];
reg                   q_global    [0:NUM_QP-1];
reg [7:0]             q_hop       [0:NUM_QP-1];
reg [7:0]             q_tclass    [0:NUM_QP-1];
reg [19:0]            q_flow      [0:NUM_QP-1];
reg [127:0]           q_dgid      [0:NUM_QP-1];
reg [GID_BITS-1:0]    q_sgid      [0:NUM_QP-1];
reg [47:0]            q_dmac      [0:NUM_QP-1];
reg [15:0]            q_sq_pi     [0:NUM_QP-1];
reg [15:0]            q_sq_ci     [0:NUM_QP-1];
reg [15:0]            q_sq_ni     [0:NUM_QP-1];
reg [15:0]            q_rq_pi     [0:NUM_QP-1];
reg [15:0]            q_rq_ci     [0:NUM_QP-1];
reg [NUM_QP-1:0]      q_srq;
reg [SRQN_BITS-1:0]   q_srqn      [0:NUM_QP-1];
reg [2:0]             q_mtu       [0:NUM_QP-1];
reg [3:0]             q_rate      [0:NUM_QP-1];
reg [23:0]            q_sq_psn    [0:NUM_QP-1];
reg [23:0]            q_epsn      [0:NUM_QP-1];
reg [23:0]            q_msn       [0:NUM_QP-1];

assign a_type          = q_type[a_qpn];
assign a_state         = q_state[a_qpn];
assign a_pd            = q_pd[a_qpn];
assign a_scq           = q_scq[a_qpn];
assign a_port          = q_port[a_qpn];
assign a_qkey          = q_qkey[a_qpn];
assign a_dest_qpn      = q_dest_qpn[a_qpn];
assign a_dlid          = q_dlid[a_qpn];
assign a_sl            = q_sl[a_qpn];
assign a_src_path_bits = q_spb[a_qpn];
assign a_is_global     = q_global[a_qpn];
assign a_hop_limit     = q_hop[a_qpn];
assign a_tclass        = q_tclass[a_qpn];
assign a_flow_label    = q_flow[a_qpn];
assign a_dgid          = q_dgid[a_qpn];
assign a_sgid_index    = q_sgid[a_qpn];
assign a_dmac          = q_dmac[a_qpn];
assign a_sq_base       = q_sq_base[a_qpn];
assign a_sq_log        = q_sq_log[a_qpn];
assign a_sq_sge        = q_sq_sge[a_qpn];
assign a_sq_pi         = q_sq_pi[a_qpn];
assign a_sq_ci         = q_sq_ci[a_qpn];
assign a_sq_ni         = q_sq_ni[a_qpn];
assign a_max_rd        = q_max_rd[a_qpn];
assign a_rnr_left      = q_rnr_left[a_qpn];
assign a_rnr_retry     = q_rnr_retry[a_qpn];
assign a_rnr_waiting   = q_rnr_wait[a_qpn];
assign a_retry_cnt     = q_retry_cnt[a_qpn];
assign a_timeout       = q_timeout[a_qpn];
assign a_mtu           = q_mtu[a_qpn];
assign a_rate          = q_rate[a_qpn];
assign a_sq_psn        = q_sq_psn[a_qpn];

assign b_valid         = q_valid[b_qpn];
assign b_type          = q_type[b_qpn];
assign b_state         = q_state[b_qpn];
assign b_pd            = q_pd[b_qpn];
assign b_rcq           = q_rcq[b_qpn];
assign b_port          = q_port[b_qpn];
assign b_access        = q_access[b_qpn];
assign b_qkey          = q_qkey[b_qpn];
assign b_min_rnr_timer = q_min_rnr[b_qpn];
assign b_rq_base       = q_rq_base[b_qpn];
assign b_rq_log        = q_rq_log[b_qpn];
assign b_rq_sge        = q_rq_sge[b_qpn];
assign b_rq_pi         = q_rq_pi[b_qpn];
assign b_rq_ci         = q_rq_ci[b_qpn];
assign b_srq           = q_srq[b_qpn];
assign b_srqn          = q_srqn[b_qpn];

assign c_valid         = q_valid[c_qpn];
assign c_type          = q_type[c_qpn];
assign c_state         = q_state[c_qpn];
assign c_port          = q_port[c_qpn];
assign c_dest_qpn      = q_dest_qpn[c_qpn];
assign c_qkey          = q_qkey[c_qpn];
assign c_mtu           = q_mtu[c_qpn];
assign c_epsn          = q_epsn[c_qpn];
assign c_msn           = q_msn[c_qpn];

assign d_state         = q_state[d_qpn];
assign d_sq_ni         = q_sq_ni[d_qpn];
assign d_rnr_left      = q_rnr_left[d_qpn];
assign d_rnr_retry     = q_rnr_retry[d_qpn];

assign e_sq_ci         = q_sq_ci[e_qpn];
assign e_scq           = q_scq[e_qpn];

localparam [15:0] SQ_WIN = 16'd1 << SQ_WIN_LOG;
integer q;
always @* begin
    for (q = 0; q < NUM_QP; q = q + 1)
        work[q] = q_valid[q] && (
            (q_sq_pi[q] != q_sq_ni[q] && q_sq_ni[q] - q_sq_ci[q] < SQ_WIN && !sq_hold[q] &&
             !q_rnr_wait[q] && (q_state[q] == QPS_RTS || q_state[q] == QPS_ERR)) ||
            (q_state[q] == QPS_ERR && (sq_busy[q] || q_rq_pi[q] != q_rq_ci[q])));
end

// ---- commands ----
wire [QPN_BITS-1:0] ci = cmd_index[QPN_BITS-1:0];
wire idx_ok = cmd_index < NUM_QP && cmd_index >= 2;

// create block
wire [7:0]  cr_type   = cmd_data[0*8 +: 8];
wire [15:0] cr_pd     = cmd_data[2*8 +: 16];
wire [15:0] cr_scq    = cmd_data[4*8 +: 16];
wire [15:0] cr_rcq    = cmd_data[6*8 +: 16];
wire [7:0]  cr_sq_log = cmd_data[8*8 +: 8];
wire [7:0]  cr_rq_log = cmd_data[9*8 +: 8];
wire [7:0]  cr_sq_sge = cmd_data[10*8 +: 8];
wire [7:0]  cr_rq_sge = cmd_data[11*8 +: 8];
wire        cr_srq    = cmd_data[12*8];        // receives from the SRQ at 0x0E
wire [15:0] cr_srqn   = cmd_data[14*8 +: 16];
wire [63:0] cr_sq_base = cmd_data[16*8 +: 64];
wire [63:0] cr_rq_base = cmd_data[24*8 +: 64];
// on an SRQ, the receive ring is the QP's one slot: its size and SGEs are the SRQ's
wire rq_ok     = cr_srq ? cr_srqn < NUM_SRQ && srq_exists[cr_srqn[SRQN_BITS-1:0]] :
                          cr_rq_log >= 8'd1 && cr_rq_log <= 8'd15 && cr_rq_sge <= SGE_MAX;
wire create_ok = (cr_type == {5'd0, QPT_RC} || cr_type == {5'd0, QPT_UC} || cr_type == {5'd0, QPT_UD}) &&
                 cr_scq < NUM_CQ && cr_rcq < NUM_CQ &&
                 cr_sq_log >= 8'd1 && cr_sq_log <= 8'd15 && rq_ok && cr_sq_sge <= SGE_MAX &&
                 cr_sq_base[63:ADDR_WIDTH] == 0 && cr_rq_base[63:ADDR_WIDTH] == 0 &&
                 cr_sq_base[5:0] == 6'd0 && cr_rq_base[5:0] == 6'd0;

// modify block
wire [7:0]  m_state_byte = cmd_data[0*8 +: 8];
wire [2:0]  m_state  = m_state_byte[2:0];
wire [7:0]  m_port   = cmd_data[1*8 +: 8];
wire [2:0]  cur      = q_state[ci];
wire legal = m_state_byte[7:3] == 5'd0 && (m_state == QPS_RESET || m_state == QPS_ERR ||
             (m_state == QPS_INIT && (cur == QPS_RESET || cur == QPS_INIT)) ||
             (m_state == QPS_RTR  && cur == QPS_INIT) ||
             (m_state == QPS_RTS  && (cur == QPS_RTR || cur == QPS_RTS)));
wire [7:0]  m_sgid   = cmd_data[62*8 +: 8];
wire port_ok = m_port >= 8'd1 && m_port <= NUM_PORTS && m_sgid < NUM_GIDS;
assign restart = cmd_valid && idx_ok &&
    ((cmd_op == CMD_CREATE_QP && !q_valid[ci] && create_ok) ||
     (cmd_op == CMD_MODIFY_QP && q_valid[ci] && legal && m_state == QPS_RESET));
assign restart_qpn = ci;

wire unused_cmd = ^{cmd_data[511:504], cmd_data[447:440], m_sgid[7:GID_BITS], cmd_data[415:408], cmd_data[255:240], cmd_data[167:164],
                    cr_srqn[15:SRQN_BITS],
                    cmd_data[23:19], cmd_data[103:99], cmd_data[111:107], cmd_data[119:117],
                    cmd_data[127:125], cr_sq_sge[7:3], cr_rq_sge[7:3],
                    cr_sq_log[7:4], cr_rq_log[7:4], cr_scq[15:CQN_BITS], cr_rcq[15:CQN_BITS],
                    m_port[7:PORT_BITS], db_index[15:QPN_BITS]};

// ---- RNR back-off: a QP that met receiver-not-ready has no work until its RNR timer ends.
//      One waiting QP is looked at per cycle (a release is late by at most NUM_QP cycles,
//      far below the 10 us RNR timer step), and none while no QP waits. ----
reg  [QPN_BITS-1:0] rnr_scan;
wire rnr_due = q_rnr_wait[rnr_scan] && $signed(now - q_rnr_until[rnr_scan]) >= 0;

// An SQ or RQ doorbell moves its producer index only forward and by at most the ring's free
// entries (ring_room), and only on a created QP out of RESET, and never the receive queue of a
// QP on an SRQ; any other is ignored (rdma_regs counts it in REG_ERRORS), so no WQE is kept for
// later or runs twice.
wire [QPN_BITS-1:0] db_qpn  = db_index[QPN_BITS-1:0];
wire                db_sq   = db_type == DB_SQ;
wire                db_mine = db_valid && (db_sq || db_type == DB_RQ);
wire [15:0]         db_pi   = db_sq ? q_sq_pi[db_qpn] : q_rq_pi[db_qpn];
wire [15:0]         db_ci   = db_sq ? q_sq_ci[db_qpn] : q_rq_ci[db_qpn];
wire [3:0]          db_log  = db_sq ? q_sq_log[db_qpn] : q_rq_log[db_qpn];
wire db_ok = q_valid[db_qpn] && q_state[db_qpn] != QPS_RESET && (db_sq || !q_srq[db_qpn]) &&
             ring_room(db_pi, db_ci, db_log, db_value);

// A QP met receiver-not-ready (the bypass's responder or an RNR NAK from the wire): count a
// retry (7 is infinite) and take its work away for `cycles` (the engines give a length, not a
// cycle: `now` in their combinational logic would wake it every cycle in simulation).
task rnr_back_off(input [QPN_BITS-1:0] qpn, input [47:0] cycles);
    begin
        q_rnr_wait[qpn]  <= 1'b1;
        q_rnr_until[qpn] <= now + cycles;
        if (q_rnr_retry[qpn] != 3'd7)
            q_rnr_left[qpn] <= q_rnr_left[qpn] - 3'd1;
    end
endtask

integer i;
always @(posedge clk) begin
    cmd_done        <= 1'b0;
    cmd_rdata_valid <= 1'b0;
    if (|q_rnr_wait) begin
        rnr_scan <= rnr_scan + 1'b1;
        if (rnr_due)
            q_rnr_wait[rnr_scan] <= 1'b0;
    end

    // engine updates
    if (a_sq_issue)
        q_sq_ni[a_qpn] <= q_sq_ni[a_qpn] + 16'd1;
    if (a_rnr_wait)
        rnr_back_off(a_qpn, a_rnr_cycles);
    if (d_rewind) begin
        q_sq_ni[d_qpn]  <= d_ni_value;
        q_sq_psn[d_qpn] <= d_psn_value;
    end
    if (d_set_err)
        q_state[d_qpn] <= QPS_ERR;
    if (d_rnr_wait)
        rnr_back_off(d_qpn, d_rnr_cycles);
    if (e_sq_advance)
        q_sq_ci[e_qpn] <= q_sq_ci[e_qpn] + 16'd1;
    if (e_rnr_clear)
        q_rnr_left[e_qpn] <= q_rnr_retry[e_qpn];
    if (b_rq_take)
        q_rq_pi[b_qpn] <= q_rq_pi[b_qpn] + 16'd1;
    if (b_rq_advance)
        q_rq_ci[b_qpn] <= q_rq_ci[b_qpn] + 16'd1;
    if (b_set_err)
        q_state[b_qpn] <= QPS_ERR;
    if (a_set_psn)
        q_sq_psn[a_qpn] <= a_psn_value;
    if (c_set_epsn)
        q_epsn[c_qpn] <= c_epsn_value;
    if (c_msn_inc)
        q_msn[c_qpn] <= q_msn[c_qpn] + 24'd1;

    // doorbells
    db_refused <= db_mine && !db_ok;
    if (db_mine && db_sq && db_ok)
        q_sq_pi[db_qpn] <= db_value;
    if (db_mine && !db_sq && db_ok)
        q_rq_pi[db_qpn] <= db_value;

    // commands (after the engine updates: software has the last word)
    if (cmd_valid && (cmd_op == CMD_CREATE_QP || cmd_op == CMD_MODIFY_QP ||
                      cmd_op == CMD_QUERY_QP || cmd_op == CMD_DESTROY_QP)) begin
        cmd_done   <= 1'b1;
        cmd_result <= CR_OK;
        if (!idx_ok) begin
            cmd_result <= CR_BAD_INDEX;
        end else if (cmd_op == CMD_CREATE_QP) begin
            if (q_valid[ci]) begin
                cmd_result <= CR_BUSY;
            end else if (!create_ok) begin
                cmd_result <= CR_BAD_PARAM;
            end else begin
                q_valid[ci]     <= 1'b1;
                q_type[ci]      <= cr_type[2:0];
                q_state[ci]     <= QPS_RESET;
                q_pd[ci]        <= cr_pd;
                q_scq[ci]       <= cr_scq[CQN_BITS-1:0];
                q_rcq[ci]       <= cr_rcq[CQN_BITS-1:0];
                q_sq_log[ci]    <= cr_sq_log[3:0];
                q_rq_log[ci]    <= cr_srq ? 4'd0 : cr_rq_log[3:0];
                q_srq[ci]       <= cr_srq;
                q_srqn[ci]      <= cr_srqn[SRQN_BITS-1:0];
                q_sq_sge[ci]    <= cr_sq_sge[2:0];
                q_rq_sge[ci]    <= cr_rq_sge[2:0];
                q_sq_base[ci]   <= cr_sq_base[ADDR_WIDTH-1:0];
                q_rq_base[ci]   <= cr_rq_base[ADDR_WIDTH-1:0];
                q_sq_pi[ci]     <= 16'd0;
                q_sq_ci[ci]     <= 16'd0;
                q_sq_ni[ci]     <= 16'd0;
                q_rq_pi[ci]     <= 16'd0;
                q_rq_ci[ci]     <= 16'd0;
                q_rnr_wait[ci]  <= 1'b0;
                // what QUERY_QP reports is defined before the first MODIFY sets it
                q_timeout[ci]   <= 5'd0;
                q_retry_cnt[ci] <= 3'd0;
                q_rnr_retry[ci] <= 3'd0;
                q_min_rnr[ci]   <= 5'd0;
                q_max_rd[ci]    <= 8'd0;
                q_max_dest_rd[ci] <= 8'd0;
                q_sq_psn[ci]    <= 24'd0;
                q_epsn[ci]      <= 24'd0;
            end
        end else if (!q_valid[ci]) begin
            cmd_result <= CR_BUSY;
        end else if (cmd_op == CMD_DESTROY_QP) begin
            q_valid[ci] <= 1'b0;
        end else if (cmd_op == CMD_QUERY_QP) begin
            cmd_rdata_valid <= 1'b1;
            // the query block (docs/host-interface.md), byte 0 in bits 7:0
            cmd_rdata <= {288'd0, 5'd0, q_rq_sge[ci], 5'd0, q_sq_sge[ci], q_max_dest_rd[ci], q_max_rd[ci], 8'd0, q_epsn[ci],
                          8'd0, q_sq_psn[ci], 3'd0, q_min_rnr[ci], 5'd0, q_rnr_retry[ci],
                          5'd0, q_retry_cnt[ci], 3'd0, q_timeout[ci],
                          q_rq_pi[ci], q_sq_pi[ci], q_rq_ci[ci], q_sq_ci[ci], 29'd0, q_state[ci]};
        end else if (!legal) begin
            cmd_result <= CR_BAD_STATE;
        end else if (!port_ok && m_state != QPS_RESET && m_state != QPS_ERR) begin
            cmd_result <= CR_BAD_PARAM;
        end else begin
            q_state[ci]     <= m_state;
            q_port[ci]      <= m_port[PORT_BITS-1:0] - 1'b1;
            q_access[ci]    <= cmd_data[3*8 +: 4];
            q_qkey[ci]      <= cmd_data[4*8 +: 32];
            q_dest_qpn[ci]  <= cmd_data[8*8 +: 32];
            q_rnr_retry[ci] <= cmd_data[12*8 +: 3];
            q_rnr_left[ci]  <= cmd_data[12*8 +: 3];
            q_rnr_wait[ci]  <= 1'b0;
            q_retry_cnt[ci] <= cmd_data[13*8 +: 3];
            q_timeout[ci]   <= cmd_data[14*8 +: 5];
            q_min_rnr[ci]   <= cmd_data[15*8 +: 5];
            q_max_rd[ci]    <= cmd_data[28*8 +: 8];
            q_max_dest_rd[ci] <= cmd_data[29*8 +: 8];
            q_dlid[ci]      <= cmd_data[16*8 +: 16];
            q_sl[ci]        <= cmd_data[18*8 +: 4];
            q_spb[ci]       <= cmd_data[19*8 +: 7];
            q_global[ci]    <= cmd_data[21*8];
            q_hop[ci]       <= cmd_data[22*8 +: 8];
            q_tclass[ci]    <= cmd_data[23*8 +: 8];
            q_flow[ci]      <= cmd_data[24*8 +: 20];
            q_dgid[ci]      <= gid_from_block(cmd_data[32*8 +: 128]);
            q_dmac[ci]      <= mac_from_block(cmd_data[56*8 +: 48]);
            q_sgid[ci]      <= m_sgid[GID_BITS-1:0];
            q_mtu[ci]       <= cmd_data[2*8 +: 3];
            q_rate[ci]      <= cmd_data[20*8 +: 4];
            // the PSNs are taken when the QP enters the state that uses them, so a later
            // MODIFY that rewrites every attribute does not rewind them
            if (m_state == QPS_RTR && cur == QPS_INIT) begin
                q_epsn[ci] <= cmd_data[52*8 +: 24];
                q_msn[ci]  <= 24'd0;
            end
            if (m_state == QPS_RTS && cur == QPS_RTR)
                q_sq_psn[ci] <= cmd_data[48*8 +: 24];
            if (m_state == QPS_RESET) begin
                q_sq_pi[ci] <= 16'd0;
                q_sq_ci[ci] <= 16'd0;
                q_sq_ni[ci] <= 16'd0;
                q_rq_pi[ci] <= 16'd0;
                q_rq_ci[ci] <= 16'd0;
            end
        end
    end

    if (rst) begin
        db_refused      <= 1'b0;
        cmd_done        <= 1'b0;
        cmd_result      <= CR_OK;
        cmd_rdata_valid <= 1'b0;
        cmd_rdata       <= 512'd0;
        rnr_scan        <= {QPN_BITS{1'b0}};
        q_rnr_wait      <= {NUM_QP{1'b0}};
        q_srq           <= {NUM_QP{1'b0}};
        for (i = 0; i < NUM_QP; i = i + 1) begin
            q_valid[i]    <= 1'b0;
            q_state[i]    <= QPS_RESET;
            q_sq_pi[i]    <= 16'd0;
            q_sq_ci[i]    <= 16'd0;
            q_sq_ni[i]    <= 16'd0;
            q_rq_pi[i]    <= 16'd0;
            q_rq_ci[i]    <= 16'd0;
        end
    end
end

endmodule

`resetall
`endif
