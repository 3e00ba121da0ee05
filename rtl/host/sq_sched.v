// Round-robin choice among the QPs that have work, so that one busy QP cannot starve the rest.
`ifndef RDMA_SQ_SCHED_V
`define RDMA_SQ_SCHED_V
`default_nettype none

module sq_sched #(
    parameter NUM_QP = 64          // queue pairs, a power of two
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire [NUM_QP-1:0]    work,     // QPs with something to do
    output reg                  valid,    // some QP has work
    output reg  [QPN_BITS-1:0]  qpn,      // the next one after the last served
    input  wire                 take      // the requester starts serving qpn
);

localparam QPN_BITS = $clog2(NUM_QP);

reg [QPN_BITS-1:0] last;

integer i;
reg [QPN_BITS-1:0] idx;   // wraps: NUM_QP is a power of two
always @* begin
    valid = 1'b0;
    qpn   = {QPN_BITS{1'b0}};
    for (i = NUM_QP; i >= 1; i = i - 1) begin
        idx = last + i[QPN_BITS-1:0];
        if (work[idx]) begin
            valid = 1'b1;
            qpn   = idx;
        end
    end
end

always @(posedge clk) begin
    if (take)
        last <= qpn;
    if (rst)
        last <= {QPN_BITS{1'b0}};
end

endmodule

`resetall
`endif
