// Address handles: the address vectors UD work requests name by number (CREATE/DESTROY_AH).
`ifndef RDMA_AH_TABLE_V
`define RDMA_AH_TABLE_V
`default_nettype none

module ah_table #(
    parameter NUM_AH = 16,         // address handles
    parameter NUM_PORTS = 2,       // ports, to check port numbers
    parameter NUM_GIDS = 4         // GID table entries per port, to check source GID indices
) (
    input  wire                     clk,
    input  wire                     rst,

    input  wire                     cmd_valid,
    input  wire [7:0]               cmd_op,
    input  wire [15:0]              cmd_index,
    input  wire [511:0]             cmd_data,
    output wire                     cmd_done,
    output wire [7:0]               cmd_result,

    input  wire [31:0]              ah,           // AH number from the WQE
    output wire                     ah_valid,     // in range and created
    output wire [15:0]              ah_pd,
    output wire [PORT_BITS-1:0]     ah_port,
    output wire [15:0]              ah_dlid,
    output wire [3:0]               ah_sl,
    output wire [6:0]               ah_src_path_bits,
    output wire                     ah_is_global,
    output wire [7:0]               ah_hop_limit,
    output wire [7:0]               ah_tclass,
    output wire [19:0]              ah_flow_label,
    output wire [127:0]             ah_dgid,
    output wire [GID_BITS-1:0]      ah_sgid_index, // the port's GID table entry it sends from
    output wire [47:0]              ah_dmac,       // Ethernet: destination MAC
    output wire [3:0]               ah_rate       // static rate divisor: 0 or 1 full port rate
);

`include "rdma_defs.vh"

localparam AH_BITS   = $clog2(NUM_AH);
localparam PORT_BITS = NUM_PORTS > 1 ? $clog2(NUM_PORTS) : 1;
localparam GID_BITS = NUM_GIDS > 1 ? $clog2(NUM_GIDS) : 1;

reg  [NUM_AH-1:0]    h_valid;
reg [15:0]           h_pd     [0:NUM_AH-1];
reg [PORT_BITS-1:0]  h_port   [0:NUM_AH-1];
reg [15:0]           h_dlid   [0:NUM_AH-1];
reg [3:0]            h_sl     [0:NUM_AH-1];
reg [6:0]            h_spb    [0:NUM_AH-1];
reg                  h_global [0:NUM_AH-1];
reg [7:0]            h_hop    [0:NUM_AH-1];
reg [7:0]            h_tclass [0:NUM_AH-1];
reg [19:0]           h_flow   [0:NUM_AH-1];
reg [127:0]          h_dgid   [0:NUM_AH-1];
reg [3:0]            h_rate   [0:NUM_AH-1];
reg [GID_BITS-1:0]   h_sgid   [0:NUM_AH-1];
reg [47:0]           h_dmac   [0:NUM_AH-1];

wire [AH_BITS-1:0] ri = ah[AH_BITS-1:0];
assign ah_valid         = ah < NUM_AH && h_valid[ri];
assign ah_pd            = h_pd[ri];
assign ah_port          = h_port[ri];
assign ah_dlid          = h_dlid[ri];
assign ah_sl            = h_sl[ri];
assign ah_src_path_bits = h_spb[ri];
assign ah_is_global     = h_global[ri];
assign ah_hop_limit     = h_hop[ri];
assign ah_tclass        = h_tclass[ri];
assign ah_flow_label    = h_flow[ri];
assign ah_dgid          = h_dgid[ri];
assign ah_rate          = h_rate[ri];
assign ah_sgid_index    = h_sgid[ri];
assign ah_dmac          = h_dmac[ri];

wire [AH_BITS-1:0] ci = cmd_index[AH_BITS-1:0];
wire [7:0] c_port = cmd_data[6*8 +: 8];
wire [7:0] c_sgid = cmd_data[38*8 +: 8];

// 0x04 bits 7:4 of the static rate and the rest of the block are reserved
wire unused_cmd = ^{cmd_data[511:312], cmd_data[111:104], cmd_data[47:41], cmd_data[95:84],
                    cmd_data[39:36], cmd_data[31], cmd_data[23:20], c_port[7:PORT_BITS],
                    c_sgid[7:GID_BITS]};

wire do_create, do_destroy;
ctx_cmd #(.CREATE_OP(CMD_CREATE_AH), .DESTROY_OP(CMD_DESTROY_AH), .COUNT(NUM_AH)) cmd (
    .clk(clk), .rst(rst), .cmd_valid(cmd_valid), .cmd_op(cmd_op), .cmd_index(cmd_index),
    .exists(h_valid[ci]), .params_ok(c_port >= 8'd1 && c_port <= NUM_PORTS && c_sgid < NUM_GIDS),
    .do_create(do_create), .do_destroy(do_destroy), .cmd_done(cmd_done), .cmd_result(cmd_result)
);

always @(posedge clk) begin
    if (do_destroy)
        h_valid[ci] <= 1'b0;
    if (do_create) begin
        h_valid[ci]  <= 1'b1;
        h_dlid[ci]   <= cmd_data[0*8 +: 16];
        h_sl[ci]     <= cmd_data[2*8 +: 4];
        h_spb[ci]    <= cmd_data[3*8 +: 7];
        h_global[ci] <= cmd_data[5*8];
        h_port[ci]   <= c_port[PORT_BITS-1:0] - 1'b1;
        h_hop[ci]    <= cmd_data[7*8 +: 8];
        h_flow[ci]   <= cmd_data[8*8 +: 20];
        h_tclass[ci] <= cmd_data[12*8 +: 8];
        h_pd[ci]     <= cmd_data[14*8 +: 16];
        h_dgid[ci]   <= gid_from_block(cmd_data[16*8 +: 128]);
        h_rate[ci]   <= cmd_data[4*8 +: 4];
        h_dmac[ci]   <= mac_from_block(cmd_data[32*8 +: 48]);
        h_sgid[ci]   <= c_sgid[GID_BITS-1:0];
    end
    if (rst)
        h_valid <= {NUM_AH{1'b0}};
end

endmodule

`resetall
`endif
