// The register bus master of the simulation harnesses: one AXI-Lite access at a time, asked for
// by the testbench (tb/rdma_tb.py, Registers), so Python wakes once per register access instead
// of stepping the bus's five channels.
//
// The testbench writes req_addr, req_data and req_write, then bumps req_count, and leaves them
// alone until the answer. The access starts at once (AW and W together for a write, AR for a
// read: the valids follow the new request combinationally, so the device sees them at the next
// clock edge), and in the cycle B or R arrives rsp_data (read data, 0 for a write) and
// rsp_resp are set and then rsp_count bumped, in that order: a testbench woken by the change
// of rsp_count reads the answer.
`timescale 1ns / 1ps
`default_nettype none

module sim_axil_master #(
    parameter ADDR_WIDTH = 16     // register space address width
) (
    input  wire                  clk,
    input  wire                  rst,

    output wire [ADDR_WIDTH-1:0] m_axil_awaddr,
    output wire [2:0]            m_axil_awprot,
    output wire                  m_axil_awvalid,
    input  wire                  m_axil_awready,
    output wire [31:0]           m_axil_wdata,
    output wire [3:0]            m_axil_wstrb,
    output wire                  m_axil_wvalid,
    input  wire                  m_axil_wready,
    input  wire [1:0]            m_axil_bresp,
    input  wire                  m_axil_bvalid,
    output wire                  m_axil_bready,
    output wire [ADDR_WIDTH-1:0] m_axil_araddr,
    output wire [2:0]            m_axil_arprot,
    output wire                  m_axil_arvalid,
    input  wire                  m_axil_arready,
    input  wire [31:0]           m_axil_rdata,
    input  wire [1:0]            m_axil_rresp,
    input  wire                  m_axil_rvalid,
    output wire                  m_axil_rready
);

// the request, written by the testbench
reg [ADDR_WIDTH-1:0] req_addr = {ADDR_WIDTH{1'b0}};
reg [31:0]           req_data = 32'd0;
reg                  req_write = 1'b0;
reg [31:0]           req_count = 32'd0;

// the answer, read by the testbench when rsp_count moves
reg [31:0]           rsp_data = 32'd0;
reg [1:0]            rsp_resp = 2'b00;
reg [31:0]           rsp_count = 32'd0;

reg [31:0] started = 32'd0;     // requests taken
reg        busy = 1'b0;         // the access in flight waits for B or R
reg        aw_left = 1'b0;      // channels of it not yet taken
reg        w_left = 1'b0;
reg        ar_left = 1'b0;

wire fresh = !rst && !busy && started != req_count;     // a request made since the last edge

assign m_axil_awaddr = req_addr;
assign m_axil_wdata = req_data;
assign m_axil_araddr = req_addr;
assign m_axil_awvalid = (fresh && req_write) || aw_left;
assign m_axil_wvalid = (fresh && req_write) || w_left;
assign m_axil_arvalid = (fresh && !req_write) || ar_left;
assign m_axil_awprot = 3'b000;
assign m_axil_arprot = 3'b000;
assign m_axil_wstrb = 4'hF;
assign m_axil_bready = 1'b1;
assign m_axil_rready = 1'b1;

always @(posedge clk) begin
    if (fresh) begin
        started <= started + 32'd1;
        busy <= 1'b1;
    end
    aw_left <= m_axil_awvalid && !m_axil_awready;
    w_left <= m_axil_wvalid && !m_axil_wready;
    ar_left <= m_axil_arvalid && !m_axil_arready;
    if (busy && (m_axil_bvalid || m_axil_rvalid)) begin
        rsp_data <= m_axil_rvalid ? m_axil_rdata : 32'd0;
        rsp_resp <= m_axil_rvalid ? m_axil_rresp : m_axil_bresp;
        rsp_count <= rsp_count + 32'd1;     // last: the answer is in place when it moves
        busy <= 1'b0;
    end
    if (rst) begin
        busy <= 1'b0;       // a request made during reset waits for its end
        aw_left <= 1'b0;
        w_left <= 1'b0;
        ar_left <= 1'b0;
    end
end

endmodule

`resetall
