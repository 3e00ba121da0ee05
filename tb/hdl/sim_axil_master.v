// The register bus master of the simulation harnesses: one AXI-Lite access at a time, asked for
// by the testbench (tb/rdma_tb.py, Registers), so Python wakes once per register access instead
// of stepping the bus's five channels.
//
// The testbench writes req_addr, req_data, req_write and then bumps req_count; the master runs
// the access (AW and W together for a write, AR for a read) and, the cycle after B or R,
// bumps rsp_count with rsp_data (read data, 0 for a write) and rsp_resp already stable.
`timescale 1ns / 1ps
`default_nettype none

module sim_axil_master #(
    parameter ADDR_WIDTH = 16     // register space address width
) (
    input  wire                  clk,
    input  wire                  rst,

    output reg  [ADDR_WIDTH-1:0] m_axil_awaddr = {ADDR_WIDTH{1'b0}},
    output wire [2:0]            m_axil_awprot,
    output reg                   m_axil_awvalid = 1'b0,
    input  wire                  m_axil_awready,
    output reg  [31:0]           m_axil_wdata = 32'd0,
    output wire [3:0]            m_axil_wstrb,
    output reg                   m_axil_wvalid = 1'b0,
    input  wire                  m_axil_wready,
    input  wire [1:0]            m_axil_bresp,
    input  wire                  m_axil_bvalid,
    output wire                  m_axil_bready,
    output reg  [ADDR_WIDTH-1:0] m_axil_araddr = {ADDR_WIDTH{1'b0}},
    output wire [2:0]            m_axil_arprot,
    output reg                   m_axil_arvalid = 1'b0,
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
reg        busy = 1'b0;
reg        answered = 1'b0;     // rsp_* were set last cycle

assign m_axil_awprot = 3'b000;
assign m_axil_arprot = 3'b000;
assign m_axil_wstrb = 4'hF;
assign m_axil_bready = 1'b1;
assign m_axil_rready = 1'b1;

always @(posedge clk) begin
    answered <= 1'b0;
    if (answered)
        rsp_count <= rsp_count + 32'd1;
    if (m_axil_awvalid && m_axil_awready)
        m_axil_awvalid <= 1'b0;
    if (m_axil_wvalid && m_axil_wready)
        m_axil_wvalid <= 1'b0;
    if (m_axil_arvalid && m_axil_arready)
        m_axil_arvalid <= 1'b0;
    if (busy && m_axil_bvalid) begin
        rsp_data <= 32'd0;
        rsp_resp <= m_axil_bresp;
        busy <= 1'b0;
        answered <= 1'b1;
    end
    if (busy && m_axil_rvalid) begin
        rsp_data <= m_axil_rdata;
        rsp_resp <= m_axil_rresp;
        busy <= 1'b0;
        answered <= 1'b1;
    end
    if (!rst && !busy && !answered && started != req_count) begin
        started <= started + 32'd1;
        busy <= 1'b1;
        if (req_write) begin
            m_axil_awaddr <= req_addr;
            m_axil_awvalid <= 1'b1;
            m_axil_wdata <= req_data;
            m_axil_wvalid <= 1'b1;
        end else begin
            m_axil_araddr <= req_addr;
            m_axil_arvalid <= 1'b1;
        end
    end
    if (rst) begin
        m_axil_awvalid <= 1'b0;
        m_axil_wvalid <= 1'b0;
        m_axil_arvalid <= 1'b0;
        busy <= 1'b0;
        answered <= 1'b0;       // a request made during reset waits for its end
    end
end

endmodule

`resetall
