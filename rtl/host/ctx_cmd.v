// The part of a CREATE/DESTROY command that every context table answers the same way: is the
// index in range, does the object exist, are the parameters acceptable. The owner supplies what
// it knows about the indexed slot and acts on the create/destroy strobes in the same cycle;
// this block registers the answer (docs/host-interface.md, command results).
`ifndef RDMA_CTX_CMD_V
`define RDMA_CTX_CMD_V
`default_nettype none

module ctx_cmd #(
    parameter [7:0] CREATE_OP = 8'h00,   // command opcode that creates an object
    parameter [7:0] DESTROY_OP = 8'h00,  // command opcode that destroys one
    parameter COUNT = 16                 // objects in the table; indices 0 .. COUNT-1
) (
    input  wire        clk,
    input  wire        rst,
    input  wire        cmd_valid,
    input  wire [7:0]  cmd_op,
    input  wire [15:0] cmd_index,
    input  wire        exists,       // the indexed object exists
    input  wire        params_ok,    // the command block is acceptable for a create
    output wire        do_create,    // store the object now
    output wire        do_destroy,   // forget the object now
    output reg         cmd_done,
    output reg  [7:0]  cmd_result
);

`include "rdma_defs.vh"

wire mine     = cmd_valid && (cmd_op == CREATE_OP || cmd_op == DESTROY_OP);
wire in_range = cmd_index < COUNT;
wire destroy  = cmd_op == DESTROY_OP;

assign do_create  = mine && in_range && !destroy && !exists && params_ok;
assign do_destroy = mine && in_range && destroy && exists;

always @(posedge clk) begin
    cmd_done <= mine;
    if (mine)
        cmd_result <= !in_range            ? CR_BAD_INDEX :
                      destroy != exists    ? CR_BUSY :       // destroy nothing, create twice
                      !destroy && !params_ok ? CR_BAD_PARAM : CR_OK;
    if (rst) begin
        cmd_done   <= 1'b0;
        cmd_result <= CR_OK;
    end
end

endmodule

`resetall
`endif
