// Simulation harness for the DMA engine: dma_sgl, the scatter/gather wrapper, which has
// dma_mover's ports and passes every command without a list straight to it, so one harness
// tests both. It makes the clock in Verilog (much faster than a cocotb Clock), keeps a
// free-running cycle counter for throughput figures, and passes every other port through, the
// AXI master under the m_axi_* names cocotbext-axi expects and the two payload streams under
// m_axis_rd_* / s_axis_wr_*.
`timescale 1ns / 1ps
`default_nettype none

module tb_dma_mover #(
    parameter DATA_WIDTH = 256,    // AXI data width in bits: 64, 128, 256 or 512
    parameter ADDR_WIDTH = 32,     // AXI address width
    parameter AXI_ID_WIDTH = 4,    // AXI ID width
    parameter LEN_WIDTH = 32,      // command length width in bytes
    parameter RD_BUF_LOG = 9,      // read buffer of 2^RD_BUF_LOG beats (the device's payload movers')
    parameter [7:0] MODES = 8'h3F  // the modes the mover takes, a bit each (dma_mover)
) (
    input  wire                     rst,

    input  wire                     s_cmd_valid,
    output wire                     s_cmd_ready,
    input  wire [2:0]               s_cmd_mode,
    input  wire [ADDR_WIDTH-1:0]    s_cmd_src_addr,
    input  wire [ADDR_WIDTH-1:0]    s_cmd_dst_addr,
    input  wire [LEN_WIDTH-1:0]     s_cmd_len,
    input  wire [511:0]             s_cmd_data,
    output wire                     m_done_valid,
    output wire                     m_done_error,
    output wire [511:0]             m_done_data,
    output wire                     m_lock,
    output wire [ADDR_WIDTH-1:0]    m_lock_addr,
    input  wire                     w_shared,       // another mover writes host memory
    output wire                     w_busy,         // ... and this one does

    output wire [DATA_WIDTH-1:0]    m_axis_rd_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_rd_tkeep,
    output wire                     m_axis_rd_tvalid,
    input  wire                     m_axis_rd_tready,
    output wire                     m_axis_rd_tlast,
    output wire                     m_axis_rd_tuser,
    input  wire [DATA_WIDTH-1:0]    s_axis_wr_tdata,
    input  wire [DATA_WIDTH/8-1:0]  s_axis_wr_tkeep,
    input  wire                     s_axis_wr_tvalid,
    output wire                     s_axis_wr_tready,
    input  wire                     s_axis_wr_tlast,

    output wire [AXI_ID_WIDTH-1:0]  m_axi_awid,
    output wire [ADDR_WIDTH-1:0]    m_axi_awaddr,
    output wire [7:0]               m_axi_awlen,
    output wire [2:0]               m_axi_awsize,
    output wire [1:0]               m_axi_awburst,
    output wire                     m_axi_awlock,
    output wire [3:0]               m_axi_awcache,
    output wire [2:0]               m_axi_awprot,
    output wire                     m_axi_awvalid,
    input  wire                     m_axi_awready,
    output wire [DATA_WIDTH-1:0]    m_axi_wdata,
    output wire [DATA_WIDTH/8-1:0]  m_axi_wstrb,
    output wire                     m_axi_wlast,
    output wire                     m_axi_wvalid,
    input  wire                     m_axi_wready,
    input  wire [AXI_ID_WIDTH-1:0]  m_axi_bid,
    input  wire [1:0]               m_axi_bresp,
    input  wire                     m_axi_bvalid,
    output wire                     m_axi_bready,
    output wire [AXI_ID_WIDTH-1:0]  m_axi_arid,
    output wire [ADDR_WIDTH-1:0]    m_axi_araddr,
    output wire [7:0]               m_axi_arlen,
    output wire [2:0]               m_axi_arsize,
    output wire [1:0]               m_axi_arburst,
    output wire                     m_axi_arlock,
    output wire [3:0]               m_axi_arcache,
    output wire [2:0]               m_axi_arprot,
    output wire                     m_axi_arvalid,
    input  wire                     m_axi_arready,
    input  wire [AXI_ID_WIDTH-1:0]  m_axi_rid,
    input  wire [DATA_WIDTH-1:0]    m_axi_rdata,
    input  wire [1:0]               m_axi_rresp,
    input  wire                     m_axi_rlast,
    input  wire                     m_axi_rvalid,
    output wire                     m_axi_rready
);

// 250 MHz: a 4 ns period, so cycle counts read straight off the simulation time.
reg clk = 1'b0;
always #2 clk = ~clk;

// The stream models read the DUT's stream outputs. Verilator resumes a coroutine woken by the
// rising edge of clk after that edge's register updates, so a model would read the values of
// the next handshake instead of the one that just happened; under Verilator the models get
// copies registered on the same edge, which then show exactly the pre-edge values.
wire [DATA_WIDTH-1:0]   rd_tdata;
wire [DATA_WIDTH/8-1:0] rd_tkeep;
wire                    rd_tvalid, rd_tlast, rd_tuser, wr_tready;
`ifdef VERILATOR
reg [DATA_WIDTH-1:0]    rd_tdata_q;
reg [DATA_WIDTH/8-1:0]  rd_tkeep_q;
reg                     rd_tvalid_q = 1'b0, rd_tlast_q, rd_tuser_q, wr_tready_q = 1'b0;
always @(posedge clk) begin
    rd_tdata_q  <= rd_tdata;
    rd_tkeep_q  <= rd_tkeep;
    rd_tvalid_q <= rd_tvalid;
    rd_tlast_q  <= rd_tlast;
    rd_tuser_q  <= rd_tuser;
    wr_tready_q <= wr_tready;
end
assign m_axis_rd_tdata = rd_tdata_q;
assign m_axis_rd_tkeep = rd_tkeep_q;
assign m_axis_rd_tvalid = rd_tvalid_q;
assign m_axis_rd_tlast = rd_tlast_q;
assign m_axis_rd_tuser = rd_tuser_q;
assign s_axis_wr_tready = wr_tready_q;
`else
assign m_axis_rd_tdata = rd_tdata;
assign m_axis_rd_tkeep = rd_tkeep;
assign m_axis_rd_tvalid = rd_tvalid;
assign m_axis_rd_tlast = rd_tlast;
assign m_axis_rd_tuser = rd_tuser;
assign s_axis_wr_tready = wr_tready;
`endif

// Free-running cycle counter: throughput checks read it at command accept and at done.
reg [63:0] cycle = 64'd0;
always @(posedge clk) cycle <= cycle + 64'd1;

// W waits: cycles in which a write burst whose AW the host took has no beat on W (its data
// is not at hand, so the shared W channel idles)
reg signed [31:0] w_bursts = 32'sd0;     // AWs taken minus WLASTs (W may lead its AW)
reg        [31:0] w_waits = 32'd0;
always @(posedge clk) begin
    w_bursts <= w_bursts + ((m_axi_awvalid && m_axi_awready) ? 32'sd1 : 32'sd0)
                         - ((m_axi_wvalid && m_axi_wready && m_axi_wlast) ? 32'sd1 : 32'sd0);
    if (w_bursts > 32'sd0 && !m_axi_wvalid)
        w_waits <= w_waits + 32'd1;
end

dma_sgl #(
    .DATA_WIDTH(DATA_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH),
    .AXI_ID_WIDTH(AXI_ID_WIDTH),
    .LEN_WIDTH(LEN_WIDTH),
    .RD_BUF_LOG(RD_BUF_LOG),
    .MODES(MODES)
) dut (
    .clk(clk),
    .rst(rst),
    .s_cmd_valid(s_cmd_valid), .s_cmd_ready(s_cmd_ready), .s_cmd_mode(s_cmd_mode),
    .s_cmd_src_addr(s_cmd_src_addr), .s_cmd_dst_addr(s_cmd_dst_addr),
    .s_cmd_len(s_cmd_len), .s_cmd_data(s_cmd_data),
    .m_done_valid(m_done_valid), .m_done_error(m_done_error), .m_done_data(m_done_data),
    .m_lock(m_lock), .m_lock_addr(m_lock_addr), .w_shared(w_shared), .w_busy(w_busy),
    .m_axis_rd_tdata(rd_tdata), .m_axis_rd_tkeep(rd_tkeep),
    .m_axis_rd_tvalid(rd_tvalid), .m_axis_rd_tready(m_axis_rd_tready),
    .m_axis_rd_tlast(rd_tlast), .m_axis_rd_tuser(rd_tuser),
    .s_axis_wr_tdata(s_axis_wr_tdata), .s_axis_wr_tkeep(s_axis_wr_tkeep),
    .s_axis_wr_tvalid(s_axis_wr_tvalid), .s_axis_wr_tready(wr_tready),
    .s_axis_wr_tlast(s_axis_wr_tlast),
    .m_axi_awid(m_axi_awid), .m_axi_awaddr(m_axi_awaddr), .m_axi_awlen(m_axi_awlen),
    .m_axi_awsize(m_axi_awsize), .m_axi_awburst(m_axi_awburst), .m_axi_awlock(m_axi_awlock),
    .m_axi_awcache(m_axi_awcache), .m_axi_awprot(m_axi_awprot),
    .m_axi_awvalid(m_axi_awvalid), .m_axi_awready(m_axi_awready),
    .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb), .m_axi_wlast(m_axi_wlast),
    .m_axi_wvalid(m_axi_wvalid), .m_axi_wready(m_axi_wready),
    .m_axi_bid(m_axi_bid), .m_axi_bresp(m_axi_bresp),
    .m_axi_bvalid(m_axi_bvalid), .m_axi_bready(m_axi_bready),
    .m_axi_arid(m_axi_arid), .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen),
    .m_axi_arsize(m_axi_arsize), .m_axi_arburst(m_axi_arburst), .m_axi_arlock(m_axi_arlock),
    .m_axi_arcache(m_axi_arcache), .m_axi_arprot(m_axi_arprot),
    .m_axi_arvalid(m_axi_arvalid), .m_axi_arready(m_axi_arready),
    .m_axi_rid(m_axi_rid), .m_axi_rdata(m_axi_rdata), .m_axi_rresp(m_axi_rresp),
    .m_axi_rlast(m_axi_rlast), .m_axi_rvalid(m_axi_rvalid), .m_axi_rready(m_axi_rready)
);

endmodule

`resetall
