// Completion queues: their contexts (CREATE/DESTROY/RESIZE_CQ, consumer-index and arm
// doorbells), the one CQE writer both paths use, and completion events. A CQE is written
// through the DMA engine's store queue with its owner bit set from the pass over the ring; a
// full or destroyed CQ drops the CQE and counts an overflow rather than overwrite an entry
// software has not consumed. A CQE request is answered once its store is queued: its place in
// the ring is taken, and the stores land in the order they were queued (one AXI ID), so the
// next CQE need not wait for the last one's write round trip. A completion event waits for
// its CQE's store to be done, so software woken by it finds the CQE (and every earlier one).
// RESIZE_CQ waits for the CQEs being written, then moves the CQ to its new ring: the
// n CQEs software has not consumed become entries 0..n-1 of the new ring (software copies
// them: the answer says which), and the next CQE is entry n.
`ifndef RDMA_CQ_ENGINE_V
`define RDMA_CQ_ENGINE_V
`default_nettype none

module cq_engine #(
    parameter NUM_CQ = 16,         // completion queues
    parameter ADDR_WIDTH = 32,     // host address width
    parameter STORES_LOG = 2       // CQE stores queued and not done, at most 2^STORES_LOG
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
    output wire [511:0]             cmd_rdata,

    input  wire                     db_valid,
    input  wire [2:0]               db_type,
    input  wire [15:0]              db_index,
    input  wire [15:0]              db_value,

    // CQE requests: {raise_solicited, cqn[15:0], cqe[255:0] without its owner bit}
    input  wire                     s_req_valid,
    output wire                     s_req_ready,
    input  wire [272:0]             s_req_data,
    output reg                      m_rsp_valid,

    // DMA mover client: {data[511:0], len[31:0], dst, src, mode[2:0]}
    output reg                      m_dma_valid,
    input  wire                     m_dma_ready,
    output wire [DMA_REQ_WIDTH-1:0] m_dma_data,
    input  wire                     s_dma_done,

    output reg  [NUM_CQ-1:0]        cq_event,
    input  wire [NUM_CQ-1:0]        cq_event_clear,
    output reg  [31:0]              overflows
);

`include "rdma_defs.vh"

localparam DMA_REQ_WIDTH = 3 + 2*ADDR_WIDTH + 32 + 512;
localparam CQN_BITS = $clog2(NUM_CQ);

reg  [NUM_CQ-1:0]     c_valid;
reg [ADDR_WIDTH-1:0]  c_base  [0:NUM_CQ-1];
reg [3:0]             c_log   [0:NUM_CQ-1];
reg [15:0]            c_pi    [0:NUM_CQ-1];
reg [15:0]            c_ci    [0:NUM_CQ-1];
reg [1:0]             c_arm   [0:NUM_CQ-1];

localparam [1:0] S_IDLE = 2'd0, S_ROOM = 2'd1, S_WRITE = 2'd2;
reg [1:0]   state;
reg [15:0]  r_cqn;
reg         r_sol;
reg [255:0] r_cqe;

wire [CQN_BITS-1:0] q = r_cqn[CQN_BITS-1:0];
wire [15:0] depth = 16'd1 << c_log[q];
wire [ADDR_WIDTH-1:0] slot = {{(ADDR_WIDTH-16){1'b0}}, c_pi[q] & (depth - 16'd1)};
wire        owner = ~|(c_pi[q] & depth);
// a CQE request is checked as it is taken: a CQ that does not exist or is full drops it
wire [15:0] in_cqn  = s_req_data[271:256];
wire [CQN_BITS-1:0] iq = in_cqn[CQN_BITS-1:0];
wire [15:0] in_used = c_pi[iq] - c_ci[iq];
wire        in_drop = in_cqn >= NUM_CQ || !c_valid[iq] || {1'b0, in_used} >= (17'd1 << c_log[iq]);

// the CQEs queued and not yet written, oldest first: their CQ and whether they were solicited
localparam PEND = 1 << STORES_LOG;
reg [15:0]           p_cqn [0:PEND-1];
reg [PEND-1:0]       p_sol;
reg [STORES_LOG:0]   p_wr, p_rd;
localparam [STORES_LOG:0] P_FULL = PEND;
wire                 p_full  = p_wr - p_rd == P_FULL;
wire                 p_empty = p_wr == p_rd;
wire [STORES_LOG-1:0] p_head = p_rd[STORES_LOG-1:0];
wire [CQN_BITS-1:0]  pq = p_cqn[p_head][CQN_BITS-1:0];

// RESIZE_CQ, held until no CQE is being written: {ring[63:0], log2, consumer index[15:0]}
reg                 rs_pending;
reg [15:0]          rs_index;
reg [63:0]          rs_ring;
reg [7:0]           rs_log;
reg [15:0]          rs_ci;
reg                 rs_done;
reg [7:0]           rs_result;
reg [31:0]          rs_answer;        // {old producer index, CQEs moved}
wire [CQN_BITS-1:0] rq       = rs_index[CQN_BITS-1:0];
wire [15:0]         rs_moved = c_pi[rq] - rs_ci;
wire                rs_go    = rs_pending && state == S_IDLE && p_empty;

assign s_req_ready = state == S_IDLE && !rs_pending;
assign cmd_rdata   = {480'd0, rs_answer};
assign m_dma_data  = {{256'd0, r_cqe[255:249], owner, r_cqe[247:0]}, 32'd32, c_base[q] + (slot << 5),
                      {ADDR_WIDTH{1'b0}}, DMA_STORE};

wire [CQN_BITS-1:0] ci = cmd_index[CQN_BITS-1:0];
wire [CQN_BITS-1:0] di = db_index[CQN_BITS-1:0];
wire [63:0] c_ring = cmd_data[0*8 +: 64];
wire [7:0]  c_lg   = cmd_data[8*8 +: 8];

wire unused = ^{cmd_data[511:96], cmd_data[79:72], db_index[15:CQN_BITS], r_cqe[248],
                p_cqn[p_head][15:CQN_BITS]};

function [31:0] sat_inc32(input [31:0] v);
    sat_inc32 = (&v) ? v : v + 32'd1;
endfunction

// a ring the CQ may take: 2..2^15 entries, 32-byte aligned, within the host address width
wire c_ring_ok  = c_lg >= 8'd1 && c_lg <= 8'd15 && c_ring[4:0] == 5'd0 &&
                  c_ring[63:ADDR_WIDTH] == 0;
wire rs_ring_ok = rs_log >= 8'd1 && rs_log <= 8'd15 && rs_ring[4:0] == 5'd0 &&
                  rs_ring[63:ADDR_WIDTH] == 0;
wire rs_fits    = rs_moved <= c_pi[rq] - c_ci[rq] && {1'b0, rs_moved} <= (17'd1 << rs_log[3:0]);

wire       do_create, do_destroy, ctx_done;
wire [7:0] ctx_result;
ctx_cmd #(.CREATE_OP(CMD_CREATE_CQ), .DESTROY_OP(CMD_DESTROY_CQ), .COUNT(NUM_CQ)) cmd (
    .clk(clk), .rst(rst), .cmd_valid(cmd_valid), .cmd_op(cmd_op), .cmd_index(cmd_index),
    .exists(c_valid[ci]), .params_ok(c_ring_ok),
    .do_create(do_create), .do_destroy(do_destroy), .cmd_done(ctx_done), .cmd_result(ctx_result)
);
assign cmd_done   = ctx_done | rs_done;
assign cmd_result = rs_done ? rs_result : ctx_result;

always @(posedge clk) begin
    m_rsp_valid     <= 1'b0;
    cq_event        <= cq_event & ~cq_event_clear;
    rs_done         <= 1'b0;
    cmd_rdata_valid <= 1'b0;

    if (cmd_valid && cmd_op == CMD_RESIZE_CQ) begin
        rs_pending <= 1'b1;
        rs_index   <= cmd_index;
        rs_ring    <= c_ring;
        rs_log     <= c_lg;
        rs_ci      <= cmd_data[10*8 +: 16];
    end
    // the consumer index given must lie between the device's and the producer's, and what
    // is left unconsumed must fit the new ring
    if (rs_go) begin
        rs_pending <= 1'b0;
        rs_done    <= 1'b1;
        rs_result  <= rs_index >= NUM_CQ        ? CR_BAD_INDEX :
                      !c_valid[rq]              ? CR_BUSY :
                      !rs_ring_ok || !rs_fits   ? CR_BAD_PARAM : CR_OK;
    end
    if (rs_go && rs_index < NUM_CQ && c_valid[rq] && rs_ring_ok && rs_fits) begin
        c_base[rq]      <= rs_ring[ADDR_WIDTH-1:0];
        c_log[rq]       <= rs_log[3:0];
        c_pi[rq]        <= rs_moved;
        c_ci[rq]        <= 16'd0;
        rs_answer       <= {c_pi[rq], rs_moved};
        cmd_rdata_valid <= 1'b1;
    end

    case (state)
        S_IDLE: if (s_req_valid && !rs_pending) begin
            {r_sol, r_cqn, r_cqe} <= s_req_data;
            if (in_drop) begin
                overflows   <= sat_inc32(overflows);
                m_rsp_valid <= 1'b1;
            end else if (!p_full) begin
                m_dma_valid <= 1'b1;
                state       <= S_WRITE;
            end else begin
                state       <= S_ROOM;
            end
        end
        // the store queue has its CQEs not written yet: wait for one (a CQ destroyed meanwhile
        // drops the CQE)
        S_ROOM: if (!c_valid[q]) begin
            overflows   <= sat_inc32(overflows);
            m_rsp_valid <= 1'b1;
            state       <= S_IDLE;
        end else if (!p_full) begin
            m_dma_valid <= 1'b1;
            state       <= S_WRITE;
        end
        // queued: its place is taken, the client answered, its event waits for the store
        default: if (m_dma_ready) begin
            m_dma_valid <= 1'b0;
            c_pi[q]     <= c_pi[q] + 16'd1;
            p_cqn[p_wr[STORES_LOG-1:0]] <= r_cqn;
            p_sol[p_wr[STORES_LOG-1:0]] <= r_sol;
            p_wr        <= p_wr + 1'b1;
            m_rsp_valid <= 1'b1;
            state       <= S_IDLE;
        end
    endcase

    // a CQE is in host memory: an armed CQ raises its event (an arm doorbell in the same
    // cycle leaves the CQ armed, for the next CQE)
    if (s_dma_done && !p_empty) begin
        p_rd <= p_rd + 1'b1;
        if (c_valid[pq] && (c_arm[pq] == 2'd1 || (c_arm[pq] == 2'd2 && p_sol[p_head]))) begin
            cq_event[pq] <= 1'b1;
            c_arm[pq]    <= 2'd0;
        end
    end

    if (db_valid && db_type == DB_CQ_CI)
        c_ci[di] <= db_value;
    if (db_valid && db_type == DB_CQ_ARM)
        c_arm[di] <= db_value[1:0];

    if (do_destroy)
        c_valid[ci] <= 1'b0;
    if (do_create) begin
        c_valid[ci]  <= 1'b1;
        c_base[ci]   <= c_ring[ADDR_WIDTH-1:0];
        c_log[ci]    <= c_lg[3:0];
        c_pi[ci]     <= 16'd0;
        c_ci[ci]     <= 16'd0;
        c_arm[ci]    <= 2'd0;
        cq_event[ci] <= 1'b0;
    end

    if (rst) begin
        state       <= S_IDLE;
        m_rsp_valid <= 1'b0;
        m_dma_valid <= 1'b0;
        cq_event    <= {NUM_CQ{1'b0}};
        overflows   <= 32'd0;
        r_cqn       <= 16'd0;
        r_sol       <= 1'b0;
        r_cqe       <= 256'd0;
        p_wr        <= {(STORES_LOG+1){1'b0}};
        p_rd        <= {(STORES_LOG+1){1'b0}};
        rs_pending  <= 1'b0;
        rs_done     <= 1'b0;
        rs_result   <= CR_OK;
        rs_answer   <= 32'd0;
        cmd_rdata_valid <= 1'b0;
        c_valid     <= {NUM_CQ{1'b0}};   // the rest of a CQ is set when it is created
    end
end

endmodule

`resetall
`endif
