// The completer: every send WQE the requester issues is recorded in its QP's send window (one
// slot per WQE, 2^SQ_WIN_LOG per QP) and finished here, in order per send queue:
//  - a WQE the requester finished itself (bypass, a local error, a flush) is done at once;
//  - a UC or UD message is done when its last packet has left the port;
//  - a loopback message handed to the bypass's DMA queue is done when the queue reports its
//    data in place (GENERAL_ERR when the DMA engine answered an error);
//  - an RC message is done when every PSN of it is acknowledged: an ACK covers every PSN up to
//    its own (several messages at once), as does a NAK or a READ response implicitly; a READ (or
//    an atomic, whose one response carries the original value) is done when its responses are
//    stored, which the receive engine does in PSN order at the QP's oldest unacknowledged PSN
//    (una).
// Recovery is go-back-N (IBTA 9.7.5): on the local ACK timeout, on a PSN sequence NAK, on a READ
// response past una or an ACK past an unanswered READ, the QP's issue index goes back to its
// oldest unfinished WQE and the requester sends again from una (inside a message at a packet
// boundary); one resend per gap, retry_cnt tries, then RETRY_EXC_ERR. An RNR NAK makes the QP
// wait the time its syndrome encodes and go back the same way (rnr_retry tries, 7 = forever).
// A remote NAK or exhausted retries fail the oldest WQE, move the QP to ERR and flush the rest.
// The completion stage then writes the send CQEs (signaled or failed) in slot order and frees
// the ring slots.
`ifndef RDMA_COMPLETER_V
`define RDMA_COMPLETER_V
`default_nettype none

module completer #(
    parameter NUM_QP = 64,         // queue pairs
    parameter NUM_CQ = 16,         // completion queues
    parameter NUM_PORTS = 2,       // ports
    parameter ADDR_WIDTH = 32,     // host address width
    parameter SQ_WIN_LOG = 4,      // send window: WQEs issued and not yet completed, per QP
    parameter CLOCK_MHZ = 250,     // device clock: the transport timers count its cycles
    parameter TIMER_SHIFT = 0      // transport timers run 2^TIMER_SHIFT times fast (short simulations)
) (
    input  wire                     clk,
    input  wire                     rst,
    input  wire [47:0]              now,

    // a QP starts over (qp_table)
    input  wire                     restart,
    input  wire [QPN_BITS-1:0]      restart_qpn,

    // a WQE the requester has issued: 0 done (with rec_status), 1 done when its last packet
    // leaves rec_port (UC, UD) or, with no packets, when the bypass reports its data in place,
    // 2 RC: done when acknowledged
    input  wire                     rec_valid,
    input  wire [QPN_BITS-1:0]      rec_qpn,
    input  wire [15:0]              rec_idx,
    input  wire [1:0]               rec_kind,
    input  wire [7:0]               rec_status,
    input  wire [PORT_BITS-1:0]     rec_port,
    input  wire                     rec_tx,           // its packets went to rec_port
    input  wire                     rec_read,         // answered by responses (READ, atomic)
    input  wire                     rec_atomic,       // ... by an atomic ACK
    input  wire [23:0]              rec_first,        // its first PSN
    input  wire [23:0]              rec_end,          // one past its last
    input  wire [ADDR_WIDTH-1:0]    rec_addr,         // where READ responses go
    input  wire [2:0]               rec_mtu,          // path MTU of its packets
    input  wire [4:0]               rec_timeout,      // the QP's local ACK timeout
    input  wire [2:0]               rec_retry_cnt,    // the QP's retry_cnt
    input  wire [63:0]              rec_wr_id,
    input  wire [7:0]               rec_wc_op,
    input  wire [31:0]              rec_len,
    input  wire                     rec_signaled,

    // the requester's QP
    input  wire                     iss_busy,         // serving iss_qpn: no rewind of it now
    input  wire [QPN_BITS-1:0]      iss_qpn,
    input  wire                     iss_hold,         // its next WQE waits for a WQE to finish
    input  wire                     iss_kick,         // it is in ERR: flush what is outstanding
    output wire                     iss_una_valid,
    output wire [23:0]              iss_una,
    output wire [7:0]               iss_reads,        // READs outstanding
    output wire                     iss_busy_qp,      // WQEs outstanding
    output wire                     iss_wired_qp,     // ... some whose packets went to a port
    output wire [NUM_QP-1:0]        hold,             // no issue now (a WQE waits, or failed)
    output wire [NUM_QP-1:0]        going_back,       // a go-back is due: the ports cut its message
    output reg  [NUM_QP-1:0]        busy,

    // the ports' last packets leaving; with an error, host memory refused some of the
    // message's payload and the port aborted those packets
    input  wire [NUM_PORTS-1:0]     tx_done,
    input  wire [NUM_PORTS-1:0]     tx_error,
    // the bypass's DMA queue: the data of WQE bp_idx of QP bp_qpn is in place (or failed)
    input  wire                     bp_done,
    input  wire                     bp_error,
    input  wire [QPN_BITS-1:0]      bp_qpn,
    input  wire [15:0]              bp_idx,

    // the receive engine's responses: what it needs to know about the QP (rsp_qpn) ...
    input  wire [QPN_BITS-1:0]      rsp_qpn,
    output wire                     rsp_active,       // RC messages outstanding
    output wire                     rsp_wait,         // answers being matched: ask again
    output wire [23:0]              rsp_una,
    output wire                     rsp_read,         // una is a READ (or atomic) response PSN ...
    output wire                     rsp_atomic,       // ... an atomic's
    output wire [ADDR_WIDTH-1:0]    rsp_addr,         // ... whose payload goes here
    // ... and what arrived: 0 ACK / NAK, 1 READ response at una stored, 2 READ response past
    // una (a gap), 3 READ response past una acknowledging the PSNs before it
    input  wire                     s_ack_valid,
    input  wire [QPN_BITS-1:0]      s_ack_qpn,
    input  wire [1:0]               s_ack_kind,
    input  wire                     s_ack_error,    // kind 1: the response could not be stored
    input  wire [7:0]               s_ack_syndrome,
    input  wire [23:0]              s_ack_psn,

    // qp_table port D
    output wire [QPN_BITS-1:0]      d_qpn,
    input  wire [2:0]               d_state,
    input  wire [15:0]              d_sq_ni,
    input  wire [2:0]               d_rnr_left,
    input  wire [2:0]               d_rnr_retry,
    output reg                      d_rewind,         // these the cycle they are decided
    output reg  [15:0]              d_ni_value,
    output reg  [23:0]              d_psn_value,
    output reg                      d_set_err,
    output reg                      d_rnr_wait,
    output reg  [47:0]              d_rnr_cycles,

    // qp_table port E
    output reg  [QPN_BITS-1:0]      e_qpn,
    input  wire [15:0]              e_sq_ci,
    input  wire [CQN_BITS-1:0]      e_scq,
    output reg                      e_sq_advance,
    output reg                      e_rnr_clear,

    // CQE writer client: {raise_solicited, cqn[15:0], cqe[255:0]}
    output reg                      m_cqe_valid,
    input  wire                     m_cqe_ready,
    output reg  [272:0]             m_cqe_data,
    input  wire                     s_cqe_done
);

`include "rdma_defs.vh"
`include "ib_timers.vh"

localparam QPN_BITS  = $clog2(NUM_QP);
localparam CQN_BITS  = $clog2(NUM_CQ);
localparam PORT_BITS = NUM_PORTS > 1 ? $clog2(NUM_PORTS) : 1;
localparam SLOTS     = NUM_QP << SQ_WIN_LOG;
localparam SLOT_BITS = QPN_BITS + SQ_WIN_LOG;

// ---- the send windows: one slot per issued WQE, at {QPN, WQE index mod window}, each field
//      with one writer so that it maps to RAM; what several blocks update at once is in the
//      xor_rams below ----
reg [1:0]            s_kind   [0:SLOTS-1];
reg [7:0]            s_status [0:SLOTS-1];     // the status of a WQE the requester finished
reg [7:0]            s_final  [0:SLOTS-1];     // the status the matcher finished it with
reg                  s_read   [0:SLOTS-1];
reg                  s_atomic [0:SLOTS-1];
reg [23:0]           s_first  [0:SLOTS-1];
reg [23:0]           s_end    [0:SLOTS-1];
reg [ADDR_WIDTH-1:0] s_addr   [0:SLOTS-1];
reg [2:0]            s_mtu    [0:SLOTS-1];
reg [63:0]           s_wr_id  [0:SLOTS-1];
reg [7:0]            s_wc_op  [0:SLOTS-1];
reg [31:0]           s_len    [0:SLOTS-1];
reg                  s_sig    [0:SLOTS-1];

// ---- per QP ----
reg [15:0]  q_aw      [0:NUM_QP-1];    // oldest WQE not finished (completion <= aw <= issue)
reg [23:0]  q_una     [0:NUM_QP-1];    // oldest PSN not acknowledged
reg [23:0]  q_ackto   [0:NUM_QP-1];    // the responder has answered every PSN below this
reg [23:0]  q_sent    [0:NUM_QP-1];    // one past the last PSN sent
reg [7:0]   q_reads   [0:NUM_QP-1];
reg [2:0]   q_retry   [0:NUM_QP-1];    // retries left
reg [2:0]   q_retry_cnt [0:NUM_QP-1];
reg [4:0]   q_timeout [0:NUM_QP-1];
reg [47:0]  q_deadline [0:NUM_QP-1];
reg [7:0]   q_fail_status [0:NUM_QP-1];
reg [4:0]   q_rnr_code [0:NUM_QP-1];
reg [NUM_QP-1:0] fresh;                // nothing sent since the QP started: una not set yet
reg [NUM_QP-1:0] walk;                 // answers or records to match
reg [NUM_QP-1:0] rewind;               // a go-back is due (waits while the requester serves the QP)
reg [NUM_QP-1:0] timer_on;
reg [NUM_QP-1:0] timer_fired;
reg [NUM_QP-1:0] gap;                  // a sequence gap reported ...
reg [NUM_QP-1:0] gap_resent;           // ... and resent for: later reports wait for progress
reg [NUM_QP-1:0] nak_fail;             // a remote NAK: q_fail_status at the PSN acknowledged to
reg [NUM_QP-1:0] rnr;                  // an RNR NAK: q_rnr_code
reg [NUM_QP-1:0] failed;               // the QP failed: the rest is flushed
reg [NUM_QP-1:0] to_complete;          // finished WQEs for the completion stage
reg [NUM_QP-1:0] held;                 // the requester waits for a WQE of the QP to finish
reg [NUM_QP-1:0] stopped;              // a WQE failed in the requester: nothing more goes out
reg [NUM_QP-1:0] wired;                // WQEs whose packets went to a port, until the QP is idle
// A go-back due holds the QP too: otherwise the requester, busy issuing the QP's later WQEs,
// keeps the rewind waiting and sends the whole window past the lost PSN before resending it.
assign hold = held | rewind | (stopped & ~failed);
assign going_back = rewind;

integer i;

// ---- the WQEs whose packets are in each port, for their done pulses: a port holds two
//      messages (port_tx) and finishes them in the order it took them; port p's are entries
//      2p and 2p + 1, the older at pt_rd[p] ----
reg [QPN_BITS-1:0]  pt_qpn [0:2*NUM_PORTS-1];
reg [SLOT_BITS-1:0] pt_slot [0:2*NUM_PORTS-1];
reg [1:0]           pt_kind [0:2*NUM_PORTS-1];
reg [NUM_PORTS-1:0] pt_rd, pt_wr;
function [PORT_BITS:0] pt_entry(input [PORT_BITS-1:0] port, input older_or_newer);
    pt_entry = {port, older_or_newer};
endfunction
// the WQE of each port's older entry: its done pulse is the next
reg [QPN_BITS-1:0]  pt_done_qpn [0:NUM_PORTS-1];
reg [SLOT_BITS-1:0] pt_done_slot [0:NUM_PORTS-1];
reg [1:0]           pt_done_kind [0:NUM_PORTS-1];
integer po;
always @* begin
    for (po = 0; po < NUM_PORTS; po = po + 1) begin
        pt_done_qpn[po]  = pt_qpn[pt_entry(po[PORT_BITS-1:0], pt_rd[po])];
        pt_done_slot[po] = pt_slot[pt_entry(po[PORT_BITS-1:0], pt_rd[po])];
        pt_done_kind[po] = pt_kind[pt_entry(po[PORT_BITS-1:0], pt_rd[po])];
    end
end

// ---- PSN order modulo 2^24: a before b when b - a is in (0, 2^23) ----
function psn_lt(input [23:0] a, input [23:0] b);
    reg [23:0] d;
    begin
        d = b - a;
        psn_lt = d != 24'd0 && !d[23];
    end
endfunction

// ---- round robin over a QP vector: the first set bit after one-hot `cur`, else the first ----
function [NUM_QP-1:0] next_of(input [NUM_QP-1:0] v, input [NUM_QP-1:0] cur);
    reg [NUM_QP-1:0] above;
    begin
        above = v & ~((cur << 1) - {{(NUM_QP-1){1'b0}}, 1'b1}) & ~cur;
        next_of = |above ? above & (~above + 1'b1) : v & (~v + 1'b1);
    end
endfunction
// the QPs whose number has bit b set, to turn a one-hot choice into a number
function [NUM_QP-1:0] bit_mask(input integer b);
    integer k;
    for (k = 0; k < NUM_QP; k = k + 1)
        bit_mask[k] = ((k >> b) & 1) == 1;
endfunction

// ---- the requester's QP ----
assign iss_una_valid = !fresh[iss_qpn];
assign iss_una       = q_una[iss_qpn];
assign iss_reads     = q_reads[iss_qpn];
assign iss_busy_qp   = busy[iss_qpn];
assign iss_wired_qp  = wired[iss_qpn];

// Answers are taken while a QP has RC packets out: while WQEs are in its window, and after a
// go-back until the requester has issued them again. An answer on its way when the go-back
// began still covers the PSNs sent before it; dropped, it would leave nothing to complete them
// if the responder has failed since (it answers no resent packet then). Never before the QP's
// first RC message: its una and PSN state are not set yet, so a stray answer (in the cycle the
// first one is recorded too) would set them from whatever they held.
function answerable(input busy_q, input fresh_q, input [23:0] una, input [23:0] sent);
    answerable = !fresh_q && (busy_q || psn_lt(una, sent));
endfunction

// ---- the receive engine's QP: a READ response is taken at una, in the oldest WQE ----
wire [SLOT_BITS-1:0] rsp_head = {rsp_qpn, q_aw[rsp_qpn][SQ_WIN_LOG-1:0]};
wire                 rsp_live;
wire [23:0] rsp_off = q_una[rsp_qpn] - s_first[rsp_head];
assign rsp_active = answerable(busy[rsp_qpn], fresh[rsp_qpn], q_una[rsp_qpn], q_sent[rsp_qpn]);
assign rsp_wait   = walk[rsp_qpn];
assign rsp_una    = q_una[rsp_qpn];
assign rsp_read   = rsp_live && s_kind[rsp_head] == REC_RC && s_read[rsp_head] &&
                    psn_lt(q_una[rsp_qpn], s_end[rsp_head]) && !psn_lt(q_una[rsp_qpn], s_first[rsp_head]);
assign rsp_atomic = s_atomic[rsp_head];
assign rsp_addr   = s_addr[rsp_head] +
                    ({{(ADDR_WIDTH-24){1'b0}}, rsp_off} << ({1'b0, s_mtu[rsp_head]} + 4'd7));

// The timers are looked at one running timer per cycle, round robin: exact while one runs,
// late by at most the number running otherwise (never early).
reg  [NUM_QP-1:0]   t_sel;
wire [QPN_BITS-1:0] t_q;
wire t_expired = timer_on[t_q] && t_sel[t_q] && $signed(now - q_deadline[t_q]) >= 0;

// ---- the matcher: one step per cycle on one QP with answers to match or a go-back due ----
reg  [NUM_QP-1:0]   w_sel;
wire [NUM_QP-1:0]   w_pick = next_of(walk | rewind, w_sel);
wire [QPN_BITS-1:0] w_q;
assign d_qpn = w_q;
wire [SLOT_BITS-1:0] w_slot = {w_q, q_aw[w_q][SQ_WIN_LOG-1:0]};
// a REC_SENT slot whose done pulse came ({done, error}), and an RC one whose payload host
// memory refused, are finished like a REC_DONE one
wire [1:0]  w_done;
wire [1:0]  w_recorded = s_kind[w_slot];
wire [1:0]  w_kind   = w_done[1] && (w_recorded == REC_SENT || w_done[0]) ? REC_DONE : w_recorded;
wire [7:0]  w_status = w_recorded == REC_DONE ? s_status[w_slot] :
                       w_done[0] ? WC_GENERAL_ERR : WC_SUCCESS;
wire        w_read   = s_read[w_slot];
wire [23:0] w_first  = s_first[w_slot];
wire [23:0] w_end    = s_end[w_slot];
wire [23:0] w_una    = q_una[w_q];
wire [23:0] w_ackto  = q_ackto[w_q];
wire        w_empty  = q_aw[w_q] == d_sq_ni || !busy[w_q];
wire        w_err    = failed[w_q] || d_state == QPS_ERR;
wire        w_rnr_ok = d_rnr_retry == 3'd7 || d_rnr_left != 3'd0;
// an RC slot is acknowledged: a READ by its responses, anything else by an ACK at or past it
wire        w_acked  = w_read ? !psn_lt(w_una, w_end) : !psn_lt(w_ackto, w_end);
// a remote NAK (or exhausted retries) at a PSN of this slot
wire        w_nak    = nak_fail[w_q] && !psn_lt(w_ackto, w_first) && psn_lt(w_ackto, w_end);
wire        w_retry  = timer_fired[w_q] || gap[w_q] ||
                       (w_read && psn_lt(w_una, w_ackto) && !gap_resent[w_q]);
// another block touches the QP this cycle: match it next cycle
reg         w_touched;
integer     tp;
always @* begin
    w_touched = (s_ack_valid && s_ack_qpn == w_q) || (rec_valid && rec_qpn == w_q) ||
                (t_expired && t_q == w_q) || (restart && restart_qpn == w_q) ||
                (bp_done && bp_qpn == w_q);
    for (tp = 0; tp < NUM_PORTS; tp = tp + 1)
        if (tx_done[tp] && pt_done_qpn[tp] == w_q) w_touched = 1'b1;
end

localparam [3:0] A_NONE = 4'd0, A_REWIND = 4'd1, A_IDLE = 4'd2, A_FINISH = 4'd3, A_WAIT = 4'd4,
                 A_PART = 4'd5, A_RNR = 4'd6, A_RETRY = 4'd7;
reg [3:0] w_act;
always @* begin
    if (!(|(walk | rewind)) || w_touched)
        w_act = A_NONE;
    else if (rewind[w_q] && (w_empty || !(iss_busy && iss_qpn == w_q)))
        w_act = A_REWIND;
    else if (!walk[w_q])
        w_act = A_NONE;                 // the go-back waits while the requester serves the QP
    else if (w_empty)
        w_act = A_IDLE;
    else if (w_err || w_kind == REC_DONE || (w_kind == REC_RC && (w_acked || w_nak)))
        w_act = A_FINISH;
    else if (w_kind == REC_SENT)
        w_act = A_WAIT;                 // its last packet has not left yet
    else if (!w_read && psn_lt(w_una, w_ackto))
        w_act = A_PART;                 // acknowledged part of the way
    else if (rnr[w_q] && !rewind[w_q])
        w_act = A_RNR;
    else if (w_retry && !rewind[w_q])
        w_act = A_RETRY;
    else
        w_act = A_WAIT;
end
wire w_fails = !w_err && ((w_kind == REC_DONE && w_status != WC_SUCCESS) || (w_kind == REC_RC && !w_acked));

// the QP context changes go to qp_table the cycle they are decided
always @* begin
    d_rewind    = w_act == A_REWIND && !w_empty;
    d_ni_value  = q_aw[w_q];
    d_psn_value = w_first;
    d_set_err   = w_act == A_FINISH && (w_fails || (w_err && d_state != QPS_ERR));
    d_rnr_wait  = w_act == A_RNR && w_rnr_ok;
    d_rnr_cycles = rnr_cycles(q_rnr_code[w_q]);
end

// ---- what arrived ----
wire [QPN_BITS-1:0] a_q = s_ack_qpn;
wire [23:0] a_una  = q_una[a_q];
wire a_open = answerable(busy[a_q], fresh[a_q], a_una, q_sent[a_q]);
wire [23:0] a_next = s_ack_psn + 24'd1;
// in range: from una to the last PSN sent (the PSN one past it for a sequence NAK)
wire a_in      = psn_lt(s_ack_psn, q_sent[a_q]) && !psn_lt(s_ack_psn, a_una);
wire a_upto    = a_in || s_ack_psn == q_sent[a_q];
// behind una, at the first PSN of the oldest unfinished WQE (a SEND or WRITE)
wire [SLOT_BITS-1:0] a_head = {a_q, q_aw[a_q][SQ_WIN_LOG-1:0]};
wire a_live;
wire a_back    = a_live && psn_lt(s_ack_psn, a_una) && s_ack_psn == s_first[a_head] &&
                 s_kind[a_head] == REC_RC && !s_read[a_head];
wire a_ack     = s_ack_kind == 2'd0 && s_ack_syndrome[7:5] == 3'b000;
wire a_rnr     = s_ack_kind == 2'd0 && s_ack_syndrome[7:5] == 3'b001;
wire a_nak     = s_ack_kind == 2'd0 && s_ack_syndrome[7:5] == 3'b011;
wire a_seq     = a_nak && s_ack_syndrome[4:0] == 5'd0;
wire [7:0] a_nak_status = s_ack_syndrome[4:0] == 5'd1 ? WC_REM_INV_REQ_ERR :
                          s_ack_syndrome[4:0] == 5'd2 ? WC_REM_ACCESS_ERR : WC_REM_OP_ERR;
// everything below `to` is answered
function [23:0] psn_max(input [23:0] a, input [23:0] b);
    psn_max = psn_lt(a, b) ? b : a;
endfunction

// ---- the completion stage ----
localparam [1:0] C_IDLE = 2'd0, C_PICK = 2'd1, C_WRITE = 2'd2;
reg [1:0]  c_state;
reg [NUM_QP-1:0] c_sel;
wire [NUM_QP-1:0]   c_pick = next_of(to_complete, c_sel);
wire [QPN_BITS-1:0] c_q;

genvar gb;
generate
    for (gb = 0; gb < QPN_BITS; gb = gb + 1) begin : qpn_bit
        localparam [NUM_QP-1:0] MASK = bit_mask(gb);
        assign t_q[gb] = |(t_sel & MASK);
        assign w_q[gb] = |(w_pick & MASK);
        assign c_q[gb] = |(c_pick & MASK);
    end
endgenerate
wire [SLOT_BITS-1:0] c_slot = {e_qpn, e_sq_ci[SQ_WIN_LOG-1:0]};
wire c_ok = s_final[c_slot] == WC_SUCCESS;
wire [255:0] c_cqe = {48'd0, s_wc_op[c_slot], s_final[c_slot], 32'd0,
                      {{(32-QPN_BITS){1'b0}}, e_qpn}, 32'd0,
                      c_ok ? s_len[c_slot] : 32'd0, s_wr_id[c_slot]};

// Progress on QP q: una moves to `upto`, the ACK timer and the retries start over.
task progress(input [QPN_BITS-1:0] q, input [23:0] upto);
    begin
        q_una[q]       <= upto;
        q_retry[q]     <= q_retry_cnt[q];
        q_deadline[q]  <= now + ack_cycles(q_timeout[q]);
        timer_on[q]    <= q_timeout[q] != 5'd0;
        timer_fired[q] <= 1'b0;
        gap_resent[q]  <= 1'b0;
    end
endtask

wire [SLOT_BITS-1:0] rec_slot = {rec_qpn, rec_idx[SQ_WIN_LOG-1:0]};
wire [SLOT_BITS-1:0] bp_slot  = {bp_qpn, bp_idx[SQ_WIN_LOG-1:0]};
wire unused_idx = ^{rec_idx[15:SQ_WIN_LOG], bp_idx[15:SQ_WIN_LOG]};

// ---- slot state that several blocks change in one cycle (never the same slot) ----
// Live: recorded and not finished yet; a done pulse or an answer for a slot the matcher has
// finished (flushed) changes nothing. Set by the record, cleared by the matcher's finish.
wire [NUM_PORTS*SLOT_BITS-1:0] pt_done_slot_v;    // pt_done_slot as one vector
wire [NUM_PORTS-1:0] pt_live;
wire                 bp_live;
wire w_finish = w_act == A_FINISH;
xor_ram #(.ADDR_BITS(SLOT_BITS), .WIDTH(1), .WRITES(2), .READS(NUM_PORTS + 3)) live_ram (
    .clk(clk),
    .wr_en({w_finish, rec_valid}), .wr_addr({w_slot, rec_slot}), .wr_data(2'b01),
    .rd_addr({pt_done_slot_v, bp_slot, a_head, rsp_head}),
    .rd_data({pt_live, bp_live, a_live, rsp_live}));
// Done: a REC_SENT WQE's source finished it ({done, error}): its last packet left port p, or
// its bypass data is in place (error: the DMA engine answered an error); or an RC WQE's
// packets left with some aborted ({1, 1}: it fails whatever the answers). The record clears
// it, so a go-back that issues the WQE again reads its payload again.
wire [NUM_PORTS-1:0] pt_sent_done, pt_failed;
wire [2*NUM_PORTS-1:0] pt_done_data;
wire bp_sent_done = bp_done && bp_live && s_kind[bp_slot] == REC_SENT;
genvar gp;
generate
    for (gp = 0; gp < NUM_PORTS; gp = gp + 1) begin : port_done
        assign pt_done_slot_v[gp*SLOT_BITS +: SLOT_BITS] = pt_done_slot[gp];
        assign pt_sent_done[gp] = tx_done[gp] && pt_done_kind[gp] == REC_SENT && pt_live[gp];
        assign pt_failed[gp] = tx_done[gp] && tx_error[gp] && pt_live[gp];
        assign pt_done_data[gp*2 +: 2] = {1'b1, tx_error[gp]};
    end
endgenerate
xor_ram #(.ADDR_BITS(SLOT_BITS), .WIDTH(2), .WRITES(NUM_PORTS + 2), .READS(1)) done_ram (
    .clk(clk),
    .wr_en({bp_sent_done, pt_sent_done | pt_failed, rec_valid}),
    .wr_addr({bp_slot, pt_done_slot_v, rec_slot}),
    .wr_data({1'b1, bp_error, pt_done_data, 2'b00}),
    .rd_addr(w_slot), .rd_data(w_done));

always @(posedge clk) begin
    e_sq_advance <= 1'b0;
    e_rnr_clear  <= 1'b0;
    if (m_cqe_valid && m_cqe_ready) m_cqe_valid <= 1'b0;

    // ---- the completion stage: the oldest finished WQE of one QP at a time ----
    case (c_state)
        C_IDLE: if (|to_complete) begin
            c_sel   <= c_pick;
            e_qpn   <= c_q;
            c_state <= C_PICK;
        end else if (w_finish) begin
            // the WQE the matcher finishes now: picked in the same cycle
            c_sel   <= w_pick;
            e_qpn   <= w_q;
            c_state <= C_PICK;
        end
        C_PICK: begin
            if (e_sq_ci == q_aw[e_qpn]) begin
                to_complete[e_qpn] <= 1'b0;
                c_state <= C_IDLE;
            end else begin
                // the ring slot moves before the CQE is written, so software that sees the
                // CQE also sees the ring space; the CQE is taken now, as the slot may be reused
                e_sq_advance <= 1'b1;
                e_rnr_clear  <= c_ok;
                m_cqe_data   <= {!c_ok, {{(16-CQN_BITS){1'b0}}, e_scq}, c_cqe};
                if (!c_ok || s_sig[c_slot]) begin
                    m_cqe_valid <= 1'b1;
                    c_state <= C_WRITE;
                end else begin
                    c_state <= C_IDLE;
                end
            end
        end
        C_WRITE: if (s_cqe_done) c_state <= C_IDLE;
        default: c_state <= C_IDLE;
    endcase

    // The requester decided from busy a cycle ago: a QP that has meanwhile gone idle has no
    // WQE left to finish and wake it (A_IDLE clears held for the same reason)
    if (iss_hold && busy[iss_qpn])
        held[iss_qpn] <= 1'b1;

    // ---- the matcher ----
    w_sel <= w_pick;
    case (w_act)
        A_REWIND: begin
            // go back: the requester issues again from the oldest unfinished WQE, at its PSN
            rewind[w_q]   <= 1'b0;
            held[w_q]     <= 1'b0;
            // the WQEs before one that failed in the requester go again, and it is checked again
            stopped[w_q]  <= 1'b0;
            busy[w_q]     <= 1'b0;
            q_reads[w_q]  <= 8'd0;
            timer_on[w_q] <= 1'b0;
            timer_fired[w_q] <= 1'b0;
            gap[w_q]      <= 1'b0;
        end
        A_IDLE: begin
            walk[w_q]        <= 1'b0;
            wired[w_q]       <= 1'b0;
            held[w_q]        <= 1'b0;
            busy[w_q]        <= 1'b0;
            timer_on[w_q]    <= 1'b0;
            timer_fired[w_q] <= 1'b0;
            gap[w_q]         <= 1'b0;
        end
        A_FINISH: begin
            // after a failure everything is flushed, also a WQE the requester had finished
            // while an earlier one's data was still moving on the bypass
            s_final[w_slot] <= w_err ? (w_kind == REC_DONE && !failed[w_q] ? w_status
                                                                           : WC_WR_FLUSH_ERR) :
                               w_kind == REC_DONE ? w_status :
                               w_acked ? WC_SUCCESS : q_fail_status[w_q];
            if (w_fails || w_err) begin
                failed[w_q]   <= 1'b1;
                nak_fail[w_q] <= 1'b0;
            end
            q_aw[w_q]        <= q_aw[w_q] + 16'd1;
            held[w_q]        <= 1'b0;
            to_complete[w_q] <= 1'b1;
            if (w_kind == REC_RC && w_read)
                q_reads[w_q] <= q_reads[w_q] - 8'd1;
            if (w_kind == REC_RC && w_acked && !w_err) begin
                progress(w_q, w_end);
                q_ackto[w_q] <= psn_max(w_ackto, w_end);
            end
        end
        A_PART: progress(w_q, w_ackto);
        A_RNR: begin
            // the responder starts the message over after its RNR time: so do we
            rnr[w_q] <= 1'b0;
            if (w_rnr_ok) begin
                rewind[w_q] <= 1'b1;
            end else begin
                nak_fail[w_q]      <= 1'b1;
                q_fail_status[w_q] <= WC_RNR_RETRY_EXC_ERR;
                q_ackto[w_q]       <= w_una;
            end
        end
        A_RETRY: begin
            // go back N (for an ACK past an unanswered READ too: its responses were lost)
            timer_fired[w_q] <= 1'b0;
            gap[w_q]         <= 1'b0;
            q_ackto[w_q]     <= w_una;
            if (q_retry[w_q] == 3'd0) begin
                nak_fail[w_q]      <= 1'b1;
                q_fail_status[w_q] <= WC_RETRY_EXC_ERR;
            end else begin
                q_retry[w_q]    <= q_retry[w_q] - 3'd1;
                gap_resent[w_q] <= !timer_fired[w_q];
                rewind[w_q]     <= 1'b1;
            end
        end
        A_WAIT: begin
            walk[w_q] <= 1'b0;
            if (w_read && psn_lt(w_una, w_ackto))
                q_ackto[w_q] <= w_una;      // a gap being resent already
        end
        default: ;
    endcase

    // ---- a WQE issued (the matcher leaves the QPs touched here for the next cycle) ----
    if (rec_valid) begin
        s_kind[rec_slot]   <= rec_kind;
        s_status[rec_slot] <= rec_status;
        s_read[rec_slot]   <= rec_read;
        s_atomic[rec_slot] <= rec_atomic;
        s_first[rec_slot]  <= rec_first;
        s_end[rec_slot]    <= rec_end;
        s_addr[rec_slot]   <= rec_addr;
        s_mtu[rec_slot]    <= rec_mtu;
        s_wr_id[rec_slot]  <= rec_wr_id;
        s_wc_op[rec_slot]  <= rec_wc_op;
        s_len[rec_slot]    <= rec_len;
        s_sig[rec_slot]    <= rec_signaled;
        busy[rec_qpn] <= 1'b1;
        walk[rec_qpn] <= 1'b1;
        if (rec_tx)
            wired[rec_qpn] <= 1'b1;
        if (rec_kind == REC_DONE && rec_status != WC_SUCCESS && rec_status != WC_WR_FLUSH_ERR)
            stopped[rec_qpn] <= 1'b1;
        if (rec_kind == REC_RC) begin
            q_timeout[rec_qpn]   <= rec_timeout;
            q_retry_cnt[rec_qpn] <= rec_retry_cnt;
            if (rec_read)
                q_reads[rec_qpn] <= q_reads[rec_qpn] + 8'd1;
            if (fresh[rec_qpn]) begin
                fresh[rec_qpn]   <= 1'b0;
                q_una[rec_qpn]   <= rec_first;
                q_ackto[rec_qpn] <= rec_first;
                q_sent[rec_qpn]  <= rec_end;
                q_retry[rec_qpn] <= rec_retry_cnt;
            end else if (psn_lt(q_sent[rec_qpn], rec_end)) begin
                q_sent[rec_qpn]  <= rec_end;
            end
        end
        // Only a WQE whose packets went to the port owns its done pulse: one issued again
        // with every PSN acknowledged sends nothing, while another QP's message is leaving
        if (rec_tx) begin
            pt_qpn[pt_entry(rec_port, pt_wr[rec_port])]  <= rec_qpn;
            pt_slot[pt_entry(rec_port, pt_wr[rec_port])] <= rec_slot;
            pt_kind[pt_entry(rec_port, pt_wr[rec_port])] <= rec_kind;
            pt_wr[rec_port] <= !pt_wr[rec_port];
        end
    end
    if (iss_kick)
        walk[iss_qpn] <= 1'b1;

    // ---- last packets out: a UC / UD message is done, an RC QP's ACK timer starts; a
    //      message with packets aborted stops the QP ----
    for (i = 0; i < NUM_PORTS; i = i + 1)
        if (tx_done[i]) begin
            pt_rd[i] <= !pt_rd[i];
            if (pt_failed[i])
                stopped[pt_done_qpn[i]] <= 1'b1;
            if (pt_sent_done[i] || pt_failed[i]) begin
                walk[pt_done_qpn[i]] <= 1'b1;
            end else if (pt_done_kind[i] == REC_RC && q_timeout[pt_done_qpn[i]] != 5'd0) begin
                timer_on[pt_done_qpn[i]]   <= 1'b1;
                q_deadline[pt_done_qpn[i]] <= now + ack_cycles(q_timeout[pt_done_qpn[i]]);
            end
        end

    // ---- bypass data in place: the message is done; a DMA error stops the QP ----
    if (bp_sent_done) begin
        walk[bp_qpn] <= 1'b1;
        if (bp_error)
            stopped[bp_qpn] <= 1'b1;
    end

    // ---- the timers ----
    t_sel <= next_of(timer_on, t_sel);
    if (t_expired) begin
        timer_on[t_q]    <= 1'b0;
        timer_fired[t_q] <= 1'b1;
        walk[t_q]        <= 1'b1;
    end

    // ---- answers: taken the cycle they arrive, matched to WQEs by the matcher ----
    if (s_ack_valid && a_open && !failed[a_q]) begin
        if (s_ack_kind == 2'd1) begin
            walk[a_q] <= 1'b1;
            if (s_ack_error) begin
                // host memory refused the READ response at una (or the atomic's original
                // value): the WQE fails there, and no later response makes up for it
                nak_fail[a_q]      <= 1'b1;
                q_fail_status[a_q] <= WC_GENERAL_ERR;
                q_ackto[a_q]       <= a_una;
            end else if (!nak_fail[a_q]) begin
                // the READ response at una is stored
                progress(a_q, a_una + 24'd1);
                q_ackto[a_q] <= psn_max(q_ackto[a_q], a_una + 24'd1);
            end
        end else if (a_in) begin
            walk[a_q] <= 1'b1;
            if (a_ack) begin
                q_ackto[a_q] <= psn_max(q_ackto[a_q], a_next);
            end else if (a_rnr) begin
                q_ackto[a_q]    <= psn_max(q_ackto[a_q], s_ack_psn);
                rnr[a_q]        <= 1'b1;
                q_rnr_code[a_q] <= s_ack_syndrome[4:0];
            end else if (s_ack_kind == 2'd3) begin
                q_ackto[a_q] <= psn_max(q_ackto[a_q], s_ack_psn);
            end else if (a_nak && !a_seq) begin
                q_ackto[a_q]       <= psn_max(q_ackto[a_q], s_ack_psn);
                nak_fail[a_q]      <= 1'b1;
                q_fail_status[a_q] <= a_nak_status;
            end else begin
                // a sequence NAK, or a READ response past una: everything before it is
                // answered, what follows went missing (one resend per gap)
                q_ackto[a_q] <= psn_max(q_ackto[a_q], s_ack_psn);
                if (!gap_resent[a_q])
                    gap[a_q] <= 1'b1;
            end
        end else if (a_seq && a_upto) begin
            q_ackto[a_q] <= psn_max(q_ackto[a_q], s_ack_psn);
            walk[a_q]    <= 1'b1;
        end else if (a_seq && a_back) begin
            // the responder took the oldest message back part of the way (an RNR NAK at its
            // last packet, which went missing): it goes again from its first PSN
            q_una[a_q]      <= s_ack_psn;
            q_ackto[a_q]    <= s_ack_psn;
            gap[a_q]        <= 1'b1;
            gap_resent[a_q] <= 1'b0;
            walk[a_q]       <= 1'b1;
        end else if (a_rnr && a_back) begin
            // that RNR NAK itself, after an ACK inside the message: the message starts over
            // after the RNR time and uses an RNR retry, as for one that came in order (taken
            // as a sequence gap instead, it went again at once and the ACK inside it restored
            // the retries every round: a livelock the fuzzer found)
            q_una[a_q]      <= s_ack_psn;
            q_ackto[a_q]    <= s_ack_psn;
            rnr[a_q]        <= 1'b1;
            q_rnr_code[a_q] <= s_ack_syndrome[4:0];
            walk[a_q]       <= 1'b1;
        end
    end

    // ---- a QP that starts over ----
    if (restart) begin
        q_aw[restart_qpn]        <= 16'd0;
        q_reads[restart_qpn]     <= 8'd0;
        fresh[restart_qpn]       <= 1'b1;
        walk[restart_qpn]        <= 1'b0;
        rewind[restart_qpn]      <= 1'b0;
        held[restart_qpn]        <= 1'b0;
        stopped[restart_qpn]     <= 1'b0;
        wired[restart_qpn]       <= 1'b0;
        busy[restart_qpn]        <= 1'b0;
        timer_on[restart_qpn]    <= 1'b0;
        timer_fired[restart_qpn] <= 1'b0;
        gap[restart_qpn]         <= 1'b0;
        gap_resent[restart_qpn]  <= 1'b0;
        nak_fail[restart_qpn]    <= 1'b0;
        rnr[restart_qpn]         <= 1'b0;
        failed[restart_qpn]      <= 1'b0;
        to_complete[restart_qpn] <= 1'b0;
    end

    if (rst) begin
        fresh       <= {NUM_QP{1'b1}};
        walk        <= {NUM_QP{1'b0}};
        rewind      <= {NUM_QP{1'b0}};
        held        <= {NUM_QP{1'b0}};
        stopped     <= {NUM_QP{1'b0}};
        wired       <= {NUM_QP{1'b0}};
        busy        <= {NUM_QP{1'b0}};
        timer_on    <= {NUM_QP{1'b0}};
        timer_fired <= {NUM_QP{1'b0}};
        gap         <= {NUM_QP{1'b0}};
        gap_resent  <= {NUM_QP{1'b0}};
        nak_fail    <= {NUM_QP{1'b0}};
        rnr         <= {NUM_QP{1'b0}};
        failed      <= {NUM_QP{1'b0}};
        to_complete <= {NUM_QP{1'b0}};
        t_sel       <= {NUM_QP{1'b0}};
        w_sel       <= {NUM_QP{1'b0}};
        c_sel       <= {NUM_QP{1'b0}};
        c_state     <= C_IDLE;
        e_sq_advance <= 1'b0;
        e_rnr_clear <= 1'b0;
        m_cqe_valid <= 1'b0;
        e_qpn       <= {QPN_BITS{1'b0}};
        for (i = 0; i < NUM_QP; i = i + 1) begin
            q_aw[i]    <= 16'd0;
            q_reads[i] <= 8'd0;
        end
        for (i = 0; i < 2 * NUM_PORTS; i = i + 1)
            pt_kind[i] <= REC_DONE;
        pt_rd <= {NUM_PORTS{1'b0}};
        pt_wr <= {NUM_PORTS{1'b0}};
    end
end

endmodule

`resetall
`endif
