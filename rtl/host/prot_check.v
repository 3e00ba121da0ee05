// Memory keys and the one protection checker both paths share. A key names an entry of one
// table: a memory region (REG_MR / DEREG_MR) or a memory window (ALLOC_MW / DEALLOC_MW) that a
// BIND_MW work request places over part of a region. Requests, answered one cycle later:
//   CHECK      a key, a range, the QP's PD and QPN and the rights an access needs: allowed, and
//              the host address of the first byte. A window answers remote accesses only, while
//              bound, and a type 2 window only its QP's.
//   BIND       a window (the index of its key) and the key it takes, a region's lkey, the range
//              and the rights the window gives: done or refused (docs/host-interface.md).
//   INV_LOCAL  a type 2 window's key (LOCAL_INV): unbound, if its PD is the QP's.
//   INV_REMOTE the same for SEND_WITH_INV, and only the window's own QP may.
// A region with windows bound cannot be deregistered (BUSY). Key-table commands run the cycle
// after CMD, in a cycle no request is taken, so a command and a bind never meet.
`ifndef RDMA_PROT_CHECK_V
`define RDMA_PROT_CHECK_V
`default_nettype none

module prot_check #(
    parameter NUM_MR = 64,         // memory keys: regions and windows
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

    // request: {op[1:0], qpn[23:0], mr_key[31:0], new_key[31:0], need[3:0], pd[15:0],
    //           len[31:0], va[63:0], key[31:0]} (prot_request in rdma_defs.vh)
    input  wire                     s_req_valid,
    output wire                     s_req_ready,
    input  wire [237:0]             s_req_data,      // PROT_REQ_WIDTH
    // answer: {host address, allowed / done}
    output reg                      m_rsp_valid,
    output wire [RSP_WIDTH-1:0]     m_rsp_data
);

`include "rdma_defs.vh"

localparam RSP_WIDTH = ADDR_WIDTH + 1;
localparam MR_BITS   = $clog2(NUM_MR);

reg  [NUM_MR-1:0]     m_valid;
reg  [NUM_MR-1:0]     m_window;  // a memory window (else a region)
reg  [NUM_MR-1:0]     m_type2;   // a type 2 window: bound to a QP
reg  [NUM_MR-1:0]     m_bound;   // a window bound to a region
reg [63:0]            m_iova    [0:NUM_MR-1];
reg [31:0]            m_length  [0:NUM_MR-1];
reg [7:0]             m_variant [0:NUM_MR-1];
reg [4:0]             m_access  [0:NUM_MR-1];   // ACC_* and, for a region, MW_BIND
reg [15:0]            m_pd      [0:NUM_MR-1];
reg [ADDR_WIDTH-1:0]  m_host    [0:NUM_MR-1];
reg [23:0]            m_qpn     [0:NUM_MR-1];   // a type 2 window's QP
reg [MR_BITS-1:0]     m_parent  [0:NUM_MR-1];   // the region a window is bound to
reg [7:0]             m_windows [0:NUM_MR-1];   // windows bound to a region

// the request being answered
reg        r_act;
reg [1:0]  r_op;
reg [23:0] r_qpn;
reg [31:0] r_mr_key, r_new_key, r_key, r_len;
reg [63:0] r_va;
reg [15:0] r_pd;
reg [3:0]  r_need;

wire [MR_BITS-1:0] ri = r_key[8 +: MR_BITS];
wire [MR_BITS-1:0] mi = r_mr_key[8 +: MR_BITS];
wire [64:0] r_end  = {1'b0, r_va} + {33'd0, r_len};
wire [64:0] ri_end = {1'b0, m_iova[ri]} + {33'd0, m_length[ri]};
wire [64:0] mi_end = {1'b0, m_iova[mi]} + {33'd0, m_length[mi]};
wire [63:0] offset = r_va - m_iova[ri];
wire [63:0] bind_offset = r_va - m_iova[mi];
wire remote = |r_need[3:1];

wire entry_ok = r_key[31:8] < NUM_MR && m_valid[ri] && r_pd == m_pd[ri];
wire key_ok   = entry_ok && r_key[7:0] == m_variant[ri];
wire range_ok = r_va >= m_iova[ri] && r_end <= ri_end;
wire allowed  = key_ok && (r_need & ~m_access[ri][3:0]) == 4'd0 && range_ok &&
                (!m_window[ri] || (remote && m_bound[ri] && (!m_type2[ri] || m_qpn[ri] == r_qpn)));
// BIND: a window of the QP's PD, not bound already if type 2, keeping its index; the range
// inside a region of the same PD that allows binding, and remote writes or atomics only over
// a region that is locally writable. A bind of no bytes leaves the window unbound.
wire bind_mr  = r_mr_key[31:8] < NUM_MR && m_valid[mi] && !m_window[mi] &&
                r_mr_key[7:0] == m_variant[mi] && m_pd[mi] == r_pd && m_access[mi][ACC_MW_BIND] &&
                r_va >= m_iova[mi] && r_end <= mi_end &&
                (!(r_need[ACC_REMOTE_WRITE] || r_need[ACC_REMOTE_ATOMIC]) ||
                 m_access[mi][ACC_LOCAL_WRITE]);
wire bind_ok  = entry_ok && m_window[ri] && r_new_key[31:8] == r_key[31:8] &&
                !(m_type2[ri] && m_bound[ri]) && (r_len == 32'd0 || bind_mr);
wire binds    = r_len != 32'd0;
wire inv_ok   = key_ok && m_window[ri] && m_type2[ri] && m_bound[ri] &&
                (r_op == PROT_INV_LOCAL || m_qpn[ri] == r_qpn);
wire done     = r_op == PROT_CHECK ? allowed : r_op == PROT_BIND ? bind_ok : inv_ok;
// what the request answered in this cycle does to the window it names
wire bound_now   = r_act && r_op == PROT_BIND && bind_ok;
wire unbound_now = r_act && (r_op == PROT_INV_LOCAL || r_op == PROT_INV_REMOTE) && inv_ok;

assign m_rsp_data = {m_host[ri] + offset[ADDR_WIDTH-1:0], done};

// ---- commands, the cycle after CMD ----
wire key_cmd = cmd_valid && (cmd_op == CMD_REG_MR || cmd_op == CMD_DEREG_MR ||
                             cmd_op == CMD_ALLOC_MW || cmd_op == CMD_DEALLOC_MW);
reg        k_valid;
reg [7:0]  k_op;
reg [15:0] k_index;
assign s_req_ready = !key_cmd;

// MR block fields
wire [MR_BITS-1:0] ci = k_index[MR_BITS-1:0];
wire [4:0]  c_access = cmd_data[13*8 +: 5];
wire [63:0] c_host   = cmd_data[16*8 +: 64];
wire c_ok = (!c_access[ACC_REMOTE_WRITE] && !c_access[ACC_REMOTE_ATOMIC]) || c_access[ACC_LOCAL_WRITE];
// MW block fields
wire [7:0]  w_type    = cmd_data[0*8 +: 8];
wire [15:0] w_pd      = cmd_data[2*8 +: 16];
wire [7:0]  w_variant = cmd_data[4*8 +: 8];

wire unused = ^{cmd_data[511:192], cmd_data[111:109], cmd_data[15:8], offset[63:ADDR_WIDTH],
                bind_offset[63:ADDR_WIDTH], r_new_key[7:0], r_mr_key[7:0]};

wire reg_mr, dereg_mr, alloc_mw, dealloc_mw, mr_done, mw_done;
wire [7:0] mr_result, mw_result;
// a region: created in a free entry; destroyed when it is one, with no window bound to it
ctx_cmd #(.CREATE_OP(CMD_REG_MR), .DESTROY_OP(CMD_DEREG_MR), .COUNT(NUM_MR)) mr_cmd (
    .clk(clk), .rst(rst), .cmd_valid(k_valid), .cmd_op(k_op), .cmd_index(k_index),
    .exists(k_op == CMD_DEREG_MR ? m_valid[ci] && !m_window[ci] && m_windows[ci] == 8'd0
                                 : m_valid[ci]),
    .params_ok(c_ok && c_host[63:ADDR_WIDTH] == 0),
    .do_create(reg_mr), .do_destroy(dereg_mr), .cmd_done(mr_done), .cmd_result(mr_result)
);
ctx_cmd #(.CREATE_OP(CMD_ALLOC_MW), .DESTROY_OP(CMD_DEALLOC_MW), .COUNT(NUM_MR)) mw_cmd (
    .clk(clk), .rst(rst), .cmd_valid(k_valid), .cmd_op(k_op), .cmd_index(k_index),
    .exists(k_op == CMD_DEALLOC_MW ? m_valid[ci] && m_window[ci] : m_valid[ci]),
    .params_ok(w_type == 8'd1 || w_type == 8'd2),
    .do_create(alloc_mw), .do_destroy(dealloc_mw), .cmd_done(mw_done), .cmd_result(mw_result)
);
assign cmd_done   = mr_done | mw_done;
assign cmd_result = mr_done ? mr_result : mw_result;

// the windows bound to each region: one released (an unbind, a rebind, a window freed) and
// one taken (a bind) in a cycle, on the same region or two
wire               w_release = (bound_now && m_bound[ri]) || unbound_now ||
                               (dealloc_mw && m_bound[ci]);
wire [MR_BITS-1:0] w_release_at = dealloc_mw ? m_parent[ci] : m_parent[ri];
wire               w_take = bound_now && binds;

always @(posedge clk) begin
    m_rsp_valid <= 1'b0;
    r_act       <= 1'b0;
    k_valid     <= key_cmd;
    k_op        <= cmd_op;
    k_index     <= cmd_index;
    if (s_req_valid && s_req_ready) begin
        {r_op, r_qpn, r_mr_key, r_new_key, r_need, r_pd, r_len, r_va, r_key} <= s_req_data;
        r_act       <= 1'b1;
        m_rsp_valid <= 1'b1;
    end

    if (w_release && w_take && w_release_at == mi) begin
        // rebound over the same region: its count stays
    end else begin
        if (w_release) m_windows[w_release_at] <= m_windows[w_release_at] - 8'd1;
        if (w_take)    m_windows[mi] <= m_windows[mi] + 8'd1;
    end
    if (bound_now) begin
        m_bound[ri]   <= binds;
        m_variant[ri] <= r_new_key[7:0];
        m_iova[ri]    <= r_va;
        m_length[ri]  <= r_len;
        m_access[ri]  <= {1'b0, r_need & 4'b1110};
        m_qpn[ri]     <= r_qpn;
        m_parent[ri]  <= mi;
        m_host[ri]    <= m_host[mi] + bind_offset[ADDR_WIDTH-1:0];
    end
    if (unbound_now)
        m_bound[ri] <= 1'b0;

    if (dereg_mr || dealloc_mw)
        m_valid[ci] <= 1'b0;
    if (reg_mr) begin
        m_valid[ci]   <= 1'b1;
        m_window[ci]  <= 1'b0;
        m_bound[ci]   <= 1'b0;
        m_iova[ci]    <= cmd_data[0*8 +: 64];
        m_length[ci]  <= cmd_data[8*8 +: 32];
        m_variant[ci] <= cmd_data[12*8 +: 8];
        m_access[ci]  <= c_access;
        m_pd[ci]      <= cmd_data[14*8 +: 16];
        m_host[ci]    <= c_host[ADDR_WIDTH-1:0];
        m_windows[ci] <= 8'd0;
    end
    if (alloc_mw) begin
        m_valid[ci]   <= 1'b1;
        m_window[ci]  <= 1'b1;
        m_type2[ci]   <= w_type == 8'd2;
        m_bound[ci]   <= 1'b0;
        m_variant[ci] <= w_variant;
        m_pd[ci]      <= w_pd;
    end

    if (rst) begin
        m_rsp_valid <= 1'b0;
        r_act       <= 1'b0;
        k_valid     <= 1'b0;
        r_key       <= 32'hFFFFFFFF;
        m_valid     <= {NUM_MR{1'b0}};
    end
end

endmodule

`resetall
`endif
