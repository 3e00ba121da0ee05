// Shares one request/response server (the DMA mover, the CQE writer, the protection checker)
// among several clients. A client holds its request valid until it is granted; the grant is held
// until the server answers, and the answer goes back only to that client. Lower index wins. The
// cycle of an answer may already pass the next request on (if the server is ready for it), so a
// busy server loses no cycle between requests.
`ifndef RDMA_REQ_ARB_V
`define RDMA_REQ_ARB_V
`default_nettype none

module req_arb #(
    parameter CLIENTS = 2,        // number of clients
    parameter REQ_WIDTH = 8,      // request payload bits
    parameter RSP_WIDTH = 8       // response payload bits
) (
    input  wire                           clk,
    input  wire                           rst,

    input  wire [CLIENTS-1:0]             s_req_valid,
    output wire [CLIENTS-1:0]             s_req_ready,
    input  wire [CLIENTS*REQ_WIDTH-1:0]   s_req_data,
    output wire [CLIENTS-1:0]             s_rsp_valid,
    output wire [RSP_WIDTH-1:0]           s_rsp_data,

    output wire                           m_req_valid,
    input  wire                           m_req_ready,
    output wire [REQ_WIDTH-1:0]           m_req_data,
    input  wire                           m_rsp_valid,
    input  wire [RSP_WIDTH-1:0]           m_rsp_data
);

localparam SEL_WIDTH = CLIENTS > 1 ? $clog2(CLIENTS) : 1;

reg                  busy;      // a request has been passed on and its answer is awaited
reg [SEL_WIDTH-1:0]  owner;     // the client that request came from
wire                 free = !busy || m_rsp_valid;   // a new request may be passed on

// The first requesting client; only used while free.
reg [SEL_WIDTH-1:0]  pick;
integer i;
always @* begin
    pick = {SEL_WIDTH{1'b0}};
    for (i = CLIENTS-1; i >= 0; i = i - 1)
        if (s_req_valid[i]) pick = i[SEL_WIDTH-1:0];
end

wire any_req = |s_req_valid;

assign m_req_valid = free && any_req;
assign m_req_data  = s_req_data[pick*REQ_WIDTH +: REQ_WIDTH];
assign s_req_ready = (free && m_req_ready) ? ({{(CLIENTS-1){1'b0}}, 1'b1} << pick) : {CLIENTS{1'b0}};
assign s_rsp_valid = m_rsp_valid ? ({{(CLIENTS-1){1'b0}}, 1'b1} << owner) : {CLIENTS{1'b0}};
assign s_rsp_data  = m_rsp_data;

always @(posedge clk) begin
    if (m_rsp_valid)
        busy <= 1'b0;
    if (m_req_valid && m_req_ready) begin
        busy  <= 1'b1;
        owner <= pick;
    end
    if (rst) begin
        busy  <= 1'b0;
        owner <= {SEL_WIDTH{1'b0}};
    end
end

endmodule

`resetall
`endif
