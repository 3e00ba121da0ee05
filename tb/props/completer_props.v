// The completer tells software nothing the responder has not said (make formal,
// docs/formal.md). Two QPs, one port, a send window of two. The requester, the receive
// engine, the port and the bypass are free inputs, bound only by what the device around the
// completer does: each QP is RC (its messages acknowledged, or all through the bypass) or not
// (UC, UD: done when sent), the solver picks which; a WQE is recorded at its send queue's next
// issue index while the window has room, an RC message's PSNs follow the previous one's (and
// go back where a go-back says; the first PSNs are fixed, one QP's wrapping around 2^24),
// wr_id names the WQE (its QP and index), the responder answers only PSNs it was sent, a READ
// response is reported stored only at the QP's oldest unacknowledged PSN, the bypass reports
// only WQEs it was given, the port finishes only messages it holds (two), each with or
// without its packets aborted (tx_error). The QP table's part
// (the issue and completion indexes, ERR, which software may also set) is modelled here; time
// is one per cycle with the transport timers 1024 times fast. Asserted:
// - a WQE is released to software (its ring slot moves) at the completion index, and the send
//   CQEs of one QP leave in posting order (their WQE indexes increase);
// - a WQE of an RC message is released as successful only after the responder answered its
//   last PSN: an ACK at or past it, a NAK, RNR NAK or response past it, or (a READ's or
//   atomic's) its last response stored.
`default_nettype none

module completer_props #(
    parameter NUM_QP = 2,          // queue pairs
    parameter SQ_WIN_LOG = 1       // send window per QP
) (
    input wire        clk,
    input wire        rst,
    input wire        rec_valid,
    input wire        rec_qpn,
    input wire [1:0]  rec_kind,
    input wire [7:0]  rec_status,
    input wire        rec_tx,
    input wire        rec_read,
    input wire        rec_atomic,
    input wire [2:0]  rec_npsn,          // an RC message's packets (1 to 4)
    input wire [4:0]  rec_timeout,
    input wire [2:0]  rec_retry_cnt,
    input wire        rec_signaled,
    input wire        iss_busy,
    input wire        iss_qpn,
    input wire        iss_hold,
    input wire        iss_kick,
    input wire        tx_done,
    input wire        tx_error,
    input wire        bp_done,
    input wire        bp_error,
    input wire        bp_qpn,
    input wire [15:0] bp_idx,
    input wire        rsp_qpn,
    input wire        s_ack_valid,
    input wire        s_ack_qpn,
    input wire [1:0]  s_ack_kind,
    input wire        s_ack_error,
    input wire [7:0]  s_ack_syndrome,
    input wire [23:0] s_ack_psn,
    input wire        set_err,           // software moves QP err_qpn to ERR
    input wire        err_qpn,
    input wire [2:0]  d_rnr_left,
    input wire [2:0]  d_rnr_retry,
    input wire        e_scq,
    input wire        m_cqe_ready,
    input wire        s_cqe_done
);

// each QP's first PSN (fixed: the solver is much faster on concrete PSNs); QP 1's wraps around
// 2^24 within two messages
localparam [23:0] first_psn0 = 24'd0, first_psn1 = 24'hFFFFFA;
function [23:0] psn0(input qpn);
    psn0 = qpn ? first_psn1 : first_psn0;
endfunction
// each QP's transport and path, for the whole run: RC or not, and an RC QP's messages on the
// wire or through the bypass
(* anyconst *) reg [NUM_QP-1:0] rc_qp;
(* anyconst *) reg [NUM_QP-1:0] bypass_qp;

`include "rdma_defs.vh"

localparam W = 1 << SQ_WIN_LOG;

// ---- the QP table's part: issue index, completion index, next PSN, ERR ----
reg [15:0] sq_ni [0:NUM_QP-1];
reg [15:0] sq_ci [0:NUM_QP-1];
reg [23:0] next_psn [0:NUM_QP-1];
reg        err [0:NUM_QP-1];

wire        d_qpn, e_qpn;
wire [15:0] d_ni_value;
wire [23:0] d_psn_value;
wire        d_rewind, d_set_err, e_sq_advance;
wire        m_cqe_valid;
wire [272:0] m_cqe_data;
/* verilator lint_off UNUSEDSIGNAL */
wire        iss_una_valid, iss_busy_qp, iss_wired_qp, rsp_active, rsp_wait, rsp_read, rsp_atomic;
wire [23:0] iss_una, rsp_una;
wire [7:0]  iss_reads;
wire [NUM_QP-1:0] hold, going_back, busy;
wire [15:0] rsp_addr;
wire        d_rnr_wait, e_rnr_clear;
wire [47:0] d_rnr_cycles;
/* verilator lint_on UNUSEDSIGNAL */

wire [15:0] rec_idx = sq_ni[rec_qpn];
// what a CQE carries but nothing decides on: fixed, so the solver does not carry it
wire [15:0] rec_addr = 16'd0;
wire [2:0]  rec_mtu = 3'd0;
wire [7:0]  rec_wc_op = 8'd0;
wire [31:0] rec_len = 32'd0;
wire [23:0] rec_first = next_psn[rec_qpn];
wire [23:0] rec_end = rec_first + {21'd0, rec_npsn};

// time: one per cycle, and timers that run 1024 times fast, so a local ACK timeout (4.096 us x
// 2^timeout, 1,025 cycles at 250 MHz) fires within a few cycles
reg [47:0] now;
always @(posedge clk) now <= rst ? 48'd0 : now + 48'd1;

completer #(.NUM_QP(NUM_QP), .NUM_CQ(2), .NUM_PORTS(1), .ADDR_WIDTH(16),
            .SQ_WIN_LOG(SQ_WIN_LOG), .TIMER_SHIFT(10)) dut (
    .clk(clk), .rst(rst), .now(now),
    .restart(1'b0), .restart_qpn(1'b0),
    .rec_valid(rec_valid), .rec_qpn(rec_qpn), .rec_idx(rec_idx), .rec_kind(rec_kind),
    .rec_status(rec_status), .rec_port(1'b0), .rec_tx(rec_tx), .rec_read(rec_read),
    .rec_atomic(rec_atomic), .rec_first(rec_first), .rec_end(rec_end), .rec_addr(rec_addr),
    .rec_mtu(rec_mtu), .rec_timeout(rec_timeout), .rec_retry_cnt(rec_retry_cnt),
    .rec_wr_id({47'd0, rec_qpn, rec_idx}), .rec_wc_op(rec_wc_op), .rec_len(rec_len),
    .rec_signaled(rec_signaled),
    .iss_busy(iss_busy), .iss_qpn(iss_qpn), .iss_hold(iss_hold), .iss_kick(iss_kick),
    .iss_una_valid(iss_una_valid), .iss_una(iss_una), .iss_reads(iss_reads),
    .iss_busy_qp(iss_busy_qp), .iss_wired_qp(iss_wired_qp), .hold(hold),
    .going_back(going_back), .busy(busy),
    .tx_done(tx_done), .tx_error(tx_error), .bp_done(bp_done), .bp_error(bp_error), .bp_qpn(bp_qpn),
    .bp_idx(bp_idx),
    .rsp_qpn(rsp_qpn), .rsp_active(rsp_active), .rsp_wait(rsp_wait), .rsp_una(rsp_una),
    .rsp_read(rsp_read), .rsp_atomic(rsp_atomic), .rsp_addr(rsp_addr),
    .s_ack_valid(s_ack_valid), .s_ack_qpn(s_ack_qpn), .s_ack_kind(s_ack_kind),
    .s_ack_error(s_ack_error), .s_ack_syndrome(s_ack_syndrome), .s_ack_psn(s_ack_psn),
    .d_qpn(d_qpn), .d_state(err[d_qpn] ? QPS_ERR : QPS_RTS), .d_sq_ni(sq_ni[d_qpn]),
    .d_rnr_left(d_rnr_left), .d_rnr_retry(d_rnr_retry),
    .d_rewind(d_rewind), .d_ni_value(d_ni_value), .d_psn_value(d_psn_value),
    .d_set_err(d_set_err), .d_rnr_wait(d_rnr_wait), .d_rnr_cycles(d_rnr_cycles),
    .e_qpn(e_qpn), .e_sq_ci(sq_ci[e_qpn]), .e_scq(e_scq), .e_sq_advance(e_sq_advance),
    .e_rnr_clear(e_rnr_clear),
    .m_cqe_valid(m_cqe_valid), .m_cqe_ready(m_cqe_ready), .m_cqe_data(m_cqe_data),
    .s_cqe_done(s_cqe_done)
);

reg past_valid = 1'b0;
always @(posedge clk) past_valid <= 1'b1;
always @* if (!past_valid) assume (rst);

integer q;
always @(posedge clk) begin
    if (rec_valid)
        sq_ni[rec_qpn] <= sq_ni[rec_qpn] + 16'd1;
    if (rec_valid && rec_kind == REC_RC)
        next_psn[rec_qpn] <= rec_end;
    if (d_rewind) begin
        sq_ni[d_qpn]    <= d_ni_value;
        next_psn[d_qpn] <= d_psn_value;
    end
    if (e_sq_advance)
        sq_ci[e_qpn] <= sq_ci[e_qpn] + 16'd1;
    if (d_set_err)
        err[d_qpn] <= 1'b1;
    if (set_err)
        err[err_qpn] <= 1'b1;
    if (rst)
        for (q = 0; q < NUM_QP; q = q + 1) begin
            sq_ni[q] <= 16'd0;
            sq_ci[q] <= 16'd0;
            err[q]   <= 1'b0;
        end
    if (rst) begin
        next_psn[0] <= first_psn0;
        next_psn[1] <= first_psn1;
    end
end

// ---- what the responder has answered, per QP, counted in PSNs from the QP's first: every PSN
//      before ans (the responder answers only PSNs it was sent, or the one after them) ----
reg [23:0] sent [0:NUM_QP-1];      // PSNs sent so far, counted from psn0
reg [23:0] ans  [0:NUM_QP-1];
wire [23:0] a_off = s_ack_psn - psn0(s_ack_qpn);
// an ACK, or a READ response stored, answers its own PSN; a NAK, an RNR NAK or a response
// past the oldest unacknowledged PSN the ones before it
wire [23:0] a_cnt = (s_ack_kind == 2'd0 && s_ack_syndrome[7:5] == 3'b000) || s_ack_kind == 2'd1
                  ? a_off + 24'd1 : a_off;
wire [23:0] rec_cnt = rec_end - psn0(rec_qpn);
always @(posedge clk) begin
    if (s_ack_valid && a_cnt > ans[s_ack_qpn])
        ans[s_ack_qpn] <= a_cnt;
    if (rec_valid && rec_kind == REC_RC && rec_cnt > sent[rec_qpn])
        sent[rec_qpn] <= rec_cnt;
    if (rst) begin
        for (q = 0; q < NUM_QP; q = q + 1) begin
            sent[q] <= 24'd0;
            ans[q]  <= 24'd0;
        end
    end
end
always @* if (past_valid && !rst && s_ack_valid)
    assume (a_off <= sent[s_ack_qpn]);

// ---- what the device around the completer does ----
// the window's WQEs: each one's index, and for an RC message its last PSN, as recorded
reg [23:0] w_cnt  [0:NUM_QP*W-1];      // its PSNs and all before, counted from psn0
reg        w_rc   [0:NUM_QP*W-1];
reg        w_read [0:NUM_QP*W-1];
reg        w_bp   [0:NUM_QP*W-1];       // handed to the bypass, its done pulse still to come
// port messages outstanding: the port holds two
reg [1:0]  tx_n;
always @(posedge clk) begin
    if (rec_valid) begin
        w_cnt[{rec_qpn, rec_idx[SQ_WIN_LOG-1:0]}]  <= rec_cnt;
        w_rc[{rec_qpn, rec_idx[SQ_WIN_LOG-1:0]}]   <= rec_kind == REC_RC;
        w_read[{rec_qpn, rec_idx[SQ_WIN_LOG-1:0]}] <= rec_read;
        w_bp[{rec_qpn, rec_idx[SQ_WIN_LOG-1:0]}]   <= rec_kind == REC_SENT && !rec_tx;
    end
    if (bp_done)
        w_bp[{bp_qpn, bp_idx[SQ_WIN_LOG-1:0]}] <= 1'b0;
    tx_n <= tx_n + (rec_valid && rec_tx) - tx_done;
    if (rst) begin
        tx_n <= 2'd0;
        for (q = 0; q < NUM_QP * W; q = q + 1)
            w_bp[q] <= 1'b0;
    end
end

always @* if (rst)
    assume (!rec_valid && !s_ack_valid && !bp_done && !tx_done);
always @* if (past_valid && !rst) begin
    // the bypass reports a WQE it was given, once, after it was given
    if (bp_done)
        assume (w_bp[{bp_qpn, bp_idx[SQ_WIN_LOG-1:0]}] && !(rec_valid && rec_qpn == bp_qpn));
    if (rec_valid) begin
        assume (sq_ni[rec_qpn] - sq_ci[rec_qpn] < W);           // the window has room
        assume (!err[rec_qpn] || rec_status == WC_WR_FLUSH_ERR); // ERR: flushed at once
        assume (rec_kind != 2'd3);
        if (rc_qp[rec_qpn])     // an RC QP's messages are acknowledged, or go to the bypass
            assume (bypass_qp[rec_qpn] ? rec_kind != REC_RC && !rec_tx : rec_kind != REC_SENT);
        else
            assume (rec_kind != REC_RC);
        if (rec_kind == REC_RC)
            assume (rec_npsn != 3'd0 && rec_npsn <= 3'd4);
        else
            assume (!rec_read && !rec_atomic);
        if (rec_kind != REC_DONE)
            assume (rec_status == WC_SUCCESS);
        if (rec_tx)
            assume (tx_n < 2'd2 && rec_kind != REC_DONE);
    end
    if (rec_atomic)
        assume (rec_read);
    if (tx_done)
        assume (tx_n != 2'd0);
    // a READ response is reported stored at the PSN the completer waits for
    if (s_ack_valid && s_ack_kind == 2'd1)
        assume (rsp_qpn == s_ack_qpn && rsp_read && s_ack_psn == rsp_una);
end

// ---- the completions: a WQE is released to software when its ring slot moves (e_sq_advance,
//      the cycle its CQE is taken, if it is signaled or failed); its CQE follows ----
wire        cqe_qpn  = m_cqe_data[128];
wire [15:0] cqe_idx  = m_cqe_data[15:0];
wire [7:0]  cqe_stat = m_cqe_data[199:192];
wire [15:0] ci_idx   = sq_ci[e_qpn];
wire [SQ_WIN_LOG:0] ci_slot = {e_qpn, ci_idx[SQ_WIN_LOG-1:0]};
reg [15:0] last_idx [0:NUM_QP-1];
reg        any_cqe  [0:NUM_QP-1];
always @(posedge clk) begin
    if (m_cqe_valid && m_cqe_ready) begin
        last_idx[cqe_qpn] <= cqe_idx;
        any_cqe[cqe_qpn]  <= 1'b1;
    end
    if (rst)
        for (q = 0; q < NUM_QP; q = q + 1)
            any_cqe[q] <= 1'b0;
end

always @* if (past_valid && !rst) begin
    if (e_sq_advance) begin
        // the WQE at the completion index, and for an RC message every PSN of it answered
        assert (cqe_qpn == e_qpn && cqe_idx == ci_idx && ci_idx != sq_ni[e_qpn]);
        if (cqe_stat == WC_SUCCESS && w_rc[ci_slot])
            assert (ans[e_qpn] >= w_cnt[ci_slot]);
    end
    if (m_cqe_valid) begin
        assert (m_cqe_data[255:208] == 48'd0 && m_cqe_data[159:129] == 31'd0);
        assert (m_cqe_data[63:17] == 47'd0 && m_cqe_data[16] == cqe_qpn);   // the wr_id given
        if (any_cqe[cqe_qpn])
            assert (cqe_idx > last_idx[cqe_qpn]);
    end
end

endmodule

`resetall
