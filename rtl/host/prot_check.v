// Memory regions and the one protection checker both paths share: a key, a range, the QP's PD
// and the rights an access needs go in; whether the access is allowed and the host address of
// its first byte come out one cycle later. REG_MR / DEREG_MR fill the table.
`ifndef RDMA_PROT_CHECK_V
`define RDMA_PROT_CHECK_V
`default_nettype none

module prot_check #(
    parameter NUM_MR = 64,         // memory regions
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

    // check request: {need[3:0], pd[15:0], len[31:0], va[63:0], key[31:0]}
    input  wire                     s_req_valid,
    output wire                     s_req_ready,
    input  wire [REQ_WIDTH-1:0]     s_req_data,
    // answer: {host address, allowed}
    output reg                      m_rsp_valid,
    output wire [RSP_WIDTH-1:0]     m_rsp_data
);

`include "rdma_defs.vh"

localparam REQ_WIDTH = 148;
localparam RSP_WIDTH = ADDR_WIDTH + 1;
localparam MR_BITS   = $clog2(NUM_MR);

reg  [NUM_MR-1:0]     m_valid;
reg [63:0]            m_iova    [0:NUM_MR-1];
reg [31:0]            m_length  [0:NUM_MR-1];
reg [7:0]             m_variant [0:NUM_MR-1];
reg [3:0]             m_access  [0:NUM_MR-1];
reg [15:0]            m_pd      [0:NUM_MR-1];
reg [ADDR_WIDTH-1:0]  m_host    [0:NUM_MR-1];

// the request being answered
reg [31:0] r_key;
reg [63:0] r_va;
reg [31:0] r_len;
reg [15:0] r_pd;
reg [3:0]  r_need;

wire [MR_BITS-1:0] ri = r_key[8 +: MR_BITS];
wire [64:0] r_end  = {1'b0, r_va} + {33'd0, r_len};
wire [64:0] mr_end = {1'b0, m_iova[ri]} + {33'd0, m_length[ri]};
wire [63:0] offset = r_va - m_iova[ri];
wire allowed = r_key[31:8] < NUM_MR && m_valid[ri] && r_key[7:0] == m_variant[ri] &&
               r_pd == m_pd[ri] && (r_need & ~m_access[ri]) == 4'd0 &&
               r_va >= m_iova[ri] && r_end <= mr_end;

assign s_req_ready = 1'b1;
assign m_rsp_data  = {m_host[ri] + offset[ADDR_WIDTH-1:0], allowed};

// MR block fields
wire [MR_BITS-1:0] ci = cmd_index[MR_BITS-1:0];
wire [3:0]  c_access = cmd_data[13*8 +: 4];
wire [63:0] c_host   = cmd_data[16*8 +: 64];
wire c_ok = (!c_access[ACC_REMOTE_WRITE] && !c_access[ACC_REMOTE_ATOMIC]) || c_access[ACC_LOCAL_WRITE];

wire unused = ^{cmd_data[511:192], cmd_data[111:108], offset[63:ADDR_WIDTH]};

wire do_create, do_destroy;
ctx_cmd #(.CREATE_OP(CMD_REG_MR), .DESTROY_OP(CMD_DEREG_MR), .COUNT(NUM_MR)) cmd (
    .clk(clk), .rst(rst), .cmd_valid(cmd_valid), .cmd_op(cmd_op), .cmd_index(cmd_index),
    .exists(m_valid[ci]), .params_ok(c_ok && c_host[63:ADDR_WIDTH] == 0),
    .do_create(do_create), .do_destroy(do_destroy), .cmd_done(cmd_done), .cmd_result(cmd_result)
);

always @(posedge clk) begin
    m_rsp_valid <= 1'b0;
    if (s_req_valid) begin
        {r_need, r_pd, r_len, r_va, r_key} <= s_req_data;
        m_rsp_valid <= 1'b1;
    end

    if (do_destroy)
        m_valid[ci] <= 1'b0;
    if (do_create) begin
        m_valid[ci]   <= 1'b1;
        m_iova[ci]    <= cmd_data[0*8 +: 64];
        m_length[ci]  <= cmd_data[8*8 +: 32];
        m_variant[ci] <= cmd_data[12*8 +: 8];
        m_access[ci]  <= c_access;
        m_pd[ci]      <= cmd_data[14*8 +: 16];
        m_host[ci]    <= c_host[ADDR_WIDTH-1:0];
    end

    if (rst) begin
        m_rsp_valid <= 1'b0;
        r_key       <= 32'hFFFFFFFF;
        m_valid     <= {NUM_MR{1'b0}};
    end
end

endmodule

`resetall
`endif
