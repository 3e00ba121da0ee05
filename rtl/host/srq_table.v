// Shared receive queues: their contexts (CREATE/MODIFY/QUERY/DESTROY_SRQ), the producer-index
// doorbell, the responder's port, and the SRQ limit event. An SRQ is a ring of receive WQEs that
// the QPs created on it take from in arrival order; a WQE is taken (its slot free for software
// again) when the responder has copied it into the taking QP's own receive slot, so a QP's
// message that spans packets keeps its WQE however other QPs' messages interleave. The limit
// event is armed by a nonzero limit and fires once, when a take leaves fewer WQEs than the limit
// (docs/host-interface.md, "Shared receive queues").
`ifndef RDMA_SRQ_TABLE_V
`define RDMA_SRQ_TABLE_V
`default_nettype none

module srq_table #(
    parameter NUM_SRQ = 16,        // shared receive queues, a power of two, at most 32
    parameter ADDR_WIDTH = 32      // host address width
) (
    input  wire                     clk,
    input  wire                     rst,

    input  wire                     cmd_valid,
    input  wire [7:0]               cmd_op,
    input  wire [15:0]              cmd_index,
    input  wire [511:0]             cmd_data,
    output wire                     cmd_done,
    output wire [7:0]               cmd_result,
    output reg                      cmd_rdata_valid,
    output reg  [511:0]             cmd_rdata,

    input  wire                     db_valid,
    input  wire [2:0]               db_type,
    input  wire [15:0]              db_index,
    input  wire [15:0]              db_value,
    output reg                      db_refused,     // the last SRQ doorbell was ignored

    output reg  [NUM_SRQ-1:0]       exists,         // for CREATE_QP's check of the SRQ it names

    // the responder's SRQ
    input  wire [SRQN_BITS-1:0]     r_srqn,
    output wire                     r_valid,
    output wire [15:0]              r_pd,
    output wire [ADDR_WIDTH-1:0]    r_base,
    output wire [3:0]               r_log,
    output wire [2:0]               r_sge,          // SGEs its WQEs may have: 0..4 (0 counts as 1)
    output wire [15:0]              r_pi,
    output wire [15:0]              r_ci,
    input  wire                     r_take,         // the WQE at r_ci was taken

    output reg  [NUM_SRQ-1:0]       limit_event,    // SRQ s reached its limit
    input  wire [NUM_SRQ-1:0]       limit_event_clear
);

`include "rdma_defs.vh"

localparam SRQN_BITS = NUM_SRQ > 1 ? $clog2(NUM_SRQ) : 1;

reg [15:0]            s_pd    [0:NUM_SRQ-1];
reg [ADDR_WIDTH-1:0]  s_base  [0:NUM_SRQ-1];
reg [3:0]             s_log   [0:NUM_SRQ-1];
reg [2:0]             s_sge   [0:NUM_SRQ-1];
reg [15:0]            s_pi    [0:NUM_SRQ-1];
reg [15:0]            s_ci    [0:NUM_SRQ-1];
reg [15:0]            s_limit [0:NUM_SRQ-1];   // 0: the event is not armed

assign r_valid = exists[r_srqn];
assign r_pd    = s_pd[r_srqn];
assign r_base  = s_base[r_srqn];
assign r_log   = s_log[r_srqn];
assign r_sge   = s_sge[r_srqn];
assign r_pi    = s_pi[r_srqn];
assign r_ci    = s_ci[r_srqn];

// ---- commands ----
wire [SRQN_BITS-1:0] ci = cmd_index[SRQN_BITS-1:0];
wire in_range = cmd_index < NUM_SRQ;

// create block: ring base, log2 entries, max SGEs, PD, limit
wire [63:0] cr_base  = cmd_data[0*8 +: 64];
wire [7:0]  cr_log   = cmd_data[8*8 +: 8];
wire [7:0]  cr_sge   = cmd_data[9*8 +: 8];
wire [15:0] cr_pd    = cmd_data[10*8 +: 16];
wire [15:0] cr_limit = cmd_data[12*8 +: 16];
// modify block: the limit
wire [15:0] md_limit = cmd_data[0*8 +: 16];
wire create_ok = cr_log >= 8'd1 && cr_log <= 8'd15 && cr_sge <= SGE_MAX &&
                 cr_base[63:ADDR_WIDTH] == 0 && cr_base[5:0] == 6'd0 &&
                 {1'b0, cr_limit} < (17'd1 << cr_log[3:0]);
wire limit_ok  = {1'b0, md_limit} < (17'd1 << s_log[ci]);

wire       do_create, do_destroy, ctx_done;
wire [7:0] ctx_result;
ctx_cmd #(.CREATE_OP(CMD_CREATE_SRQ), .DESTROY_OP(CMD_DESTROY_SRQ), .COUNT(NUM_SRQ)) cmd (
    .clk(clk), .rst(rst), .cmd_valid(cmd_valid), .cmd_op(cmd_op), .cmd_index(cmd_index),
    .exists(exists[ci]), .params_ok(create_ok),
    .do_create(do_create), .do_destroy(do_destroy), .cmd_done(ctx_done), .cmd_result(ctx_result)
);

// MODIFY_SRQ and QUERY_SRQ are answered here
wire       md_mine = cmd_valid && (cmd_op == CMD_MODIFY_SRQ || cmd_op == CMD_QUERY_SRQ);
reg        md_done;
reg [7:0]  md_result;
assign cmd_done   = ctx_done | md_done;
assign cmd_result = md_done ? md_result : ctx_result;

// ---- the SRQ doorbell: the same rule as a QP's receive queue ----
wire [SRQN_BITS-1:0] di = db_index[SRQN_BITS-1:0];
wire db_mine = db_valid && db_type == DB_SRQ;
wire db_ok   = db_index < NUM_SRQ && exists[di] && ring_room(s_pi[di], s_ci[di], s_log[di], db_value);

// a take leaves pi - (ci + 1) WQEs: below an armed limit, the event fires and disarms
wire [15:0] left_after = r_pi - r_ci - 16'd1;
wire        limit_hit  = r_take && s_limit[r_srqn] != 16'd0 && left_after < s_limit[r_srqn];

wire unused = ^{cmd_data[511:112], cr_sge[7:3], cr_log[7:4], cmd_index[15:SRQN_BITS],
                db_index[15:SRQN_BITS]};

always @(posedge clk) begin
    md_done         <= 1'b0;
    cmd_rdata_valid <= 1'b0;
    db_refused      <= db_mine && !db_ok;
    limit_event     <= limit_event & ~limit_event_clear;

    if (r_take) begin
        s_ci[r_srqn] <= r_ci + 16'd1;
        if (limit_hit) begin
            limit_event[r_srqn] <= 1'b1;
            s_limit[r_srqn]     <= 16'd0;
        end
    end
    if (db_mine && db_ok)
        s_pi[di] <= db_value;

    if (md_mine) begin
        md_done   <= 1'b1;
        md_result <= !in_range ? CR_BAD_INDEX : !exists[ci] ? CR_BUSY :
                     cmd_op == CMD_MODIFY_SRQ && !limit_ok ? CR_BAD_PARAM : CR_OK;
        if (in_range && exists[ci] && cmd_op == CMD_MODIFY_SRQ && limit_ok)
            s_limit[ci] <= md_limit;
        if (in_range && exists[ci] && cmd_op == CMD_QUERY_SRQ) begin
            cmd_rdata_valid <= 1'b1;
            // the query block (docs/host-interface.md), byte 0 in bits 7:0
            cmd_rdata <= {432'd0, s_pd[ci], 5'd0, s_sge[ci], 4'd0, s_log[ci], s_limit[ci],
                          s_ci[ci], s_pi[ci]};
        end
    end

    if (do_destroy)
        exists[ci] <= 1'b0;
    if (do_create) begin
        exists[ci]      <= 1'b1;
        s_pd[ci]        <= cr_pd;
        s_base[ci]      <= cr_base[ADDR_WIDTH-1:0];
        s_log[ci]       <= cr_log[3:0];
        s_sge[ci]       <= cr_sge[2:0];
        s_pi[ci]        <= 16'd0;
        s_ci[ci]        <= 16'd0;
        s_limit[ci]     <= cr_limit;
        limit_event[ci] <= 1'b0;
    end

    if (rst) begin
        md_done         <= 1'b0;
        md_result       <= CR_OK;
        cmd_rdata_valid <= 1'b0;
        cmd_rdata       <= 512'd0;
        db_refused      <= 1'b0;
        exists          <= {NUM_SRQ{1'b0}};   // the rest of an SRQ is set when it is created
        limit_event     <= {NUM_SRQ{1'b0}};
    end
end

endmodule

`resetall
`endif
