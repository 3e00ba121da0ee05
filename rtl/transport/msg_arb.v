// Shares the responder between its two sources of messages, the requester's loopback bypass
// and the packet receive engine. A message is a START and, when the START let it through, an
// END (and, from the wire, CONT requests between); the bypass sends an END only for a message
// that takes a receive WQE. A client that holds `s_hold` when its answer comes keeps the grant
// for its next request, until it drops s_hold: the bypass holds it for a whole message that
// takes a receive WQE, the receive engine for one packet (the responder loads a SEND's receive
// WQE again when another QP's message came between). Lower index wins otherwise.
`ifndef RDMA_MSG_ARB_V
`define RDMA_MSG_ARB_V
`default_nettype none

module msg_arb #(
    parameter REQ_WIDTH = 8        // request bits
) (
    input  wire                   clk,
    input  wire                   rst,

    input  wire [1:0]             s_valid,
    output wire [1:0]             s_ready,
    input  wire [2*REQ_WIDTH-1:0] s_data,
    input  wire [1:0]             s_hold,      // keep the grant after the answer, while high
    output wire [1:0]             s_answer,    // the answer is for this client

    output wire                   m_valid,
    input  wire                   m_ready,
    output wire [REQ_WIDTH-1:0]   m_data,
    input  wire                   m_answer
);

reg       busy;      // a request is at the responder
reg       locked;    // the owner keeps the grant between its requests
reg       owner;

wire pick = locked ? owner : !s_valid[0];
assign m_valid  = !busy && s_valid[pick];
assign m_data   = s_data[pick*REQ_WIDTH +: REQ_WIDTH];
assign s_ready  = (!busy && m_ready) ? (2'b01 << pick) : 2'b00;
assign s_answer = m_answer ? (2'b01 << owner) : 2'b00;

always @(posedge clk) begin
    if (m_valid && m_ready) begin
        busy  <= 1'b1;
        owner <= pick;
    end
    if (!s_hold[owner])
        locked <= 1'b0;
    if (m_answer) begin
        busy   <= 1'b0;
        locked <= s_hold[owner];
    end
    if (rst) begin
        busy   <= 1'b0;
        locked <= 1'b0;
        owner  <= 1'b0;
    end
end

endmodule

`resetall
`endif
