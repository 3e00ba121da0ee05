// Simulation harness for two rdma_dev instances cabled port to port (topology b): dev0 port 1
// <-> dev1 port 1 and dev0 port 2 <-> dev1 port 2, each direction a wire from one device's TX
// to the other's RX with tready back. Each device has its own register slave (devN_s_axil_*),
// DMA master (devN_m_axi_*) and irq; reset is shared. devN_link<p>_* is device N's port p+1 TX
// link as the far end takes it, for sniffers (tb/sniffer.py). Same conventions as
// tb_rdma_dev.v: the clock is made here, tb_clk is the edge the bus models sample on, `cycle`
// runs free and per-device timestamps record the last SQ doorbell write and the last irq rise.
`timescale 1ns / 1ps
`default_nettype none

module tb_fabric #(
    parameter DATA_WIDTH = 256,      // DMA and link data width in bits
    parameter ADDR_WIDTH = 32,       // host address width
    parameter AXI_ID_WIDTH = 4,      // AXI ID width of the DMA masters
    parameter AXIL_ADDR_WIDTH = 16,  // register space address width
    parameter NUM_QP = 64,           // queue pairs (QPN 0 and 1 reserved)
    parameter NUM_CQ = 16,           // completion queues
    parameter NUM_MR = 64,           // memory regions
    parameter NUM_AH = 16            // address handles
) (
    input  wire                          rst,

    input  wire [AXIL_ADDR_WIDTH-1:0]    dev0_s_axil_awaddr,
    input  wire [2:0]                    dev0_s_axil_awprot,
    input  wire                          dev0_s_axil_awvalid,
    output wire                          dev0_s_axil_awready,
    input  wire [31:0]                   dev0_s_axil_wdata,
    input  wire [3:0]                    dev0_s_axil_wstrb,
    input  wire                          dev0_s_axil_wvalid,
    output wire                          dev0_s_axil_wready,
    output wire [1:0]                    dev0_s_axil_bresp,
    output wire                          dev0_s_axil_bvalid,
    input  wire                          dev0_s_axil_bready,
    input  wire [AXIL_ADDR_WIDTH-1:0]    dev0_s_axil_araddr,
    input  wire [2:0]                    dev0_s_axil_arprot,
    input  wire                          dev0_s_axil_arvalid,
    output wire                          dev0_s_axil_arready,
    output wire [31:0]                   dev0_s_axil_rdata,
    output wire [1:0]                    dev0_s_axil_rresp,
    output wire                          dev0_s_axil_rvalid,
    input  wire                          dev0_s_axil_rready,

    output wire [AXI_ID_WIDTH-1:0]       dev0_m_axi_awid,
    output wire [ADDR_WIDTH-1:0]         dev0_m_axi_awaddr,
    output wire [7:0]                    dev0_m_axi_awlen,
    output wire [2:0]                    dev0_m_axi_awsize,
    output wire [1:0]                    dev0_m_axi_awburst,
    output wire                          dev0_m_axi_awlock,
    output wire [3:0]                    dev0_m_axi_awcache,
    output wire [2:0]                    dev0_m_axi_awprot,
    output wire                          dev0_m_axi_awvalid,
    input  wire                          dev0_m_axi_awready,
    output wire [DATA_WIDTH-1:0]         dev0_m_axi_wdata,
    output wire [DATA_WIDTH/8-1:0]       dev0_m_axi_wstrb,
    output wire                          dev0_m_axi_wlast,
    output wire                          dev0_m_axi_wvalid,
    input  wire                          dev0_m_axi_wready,
    input  wire [AXI_ID_WIDTH-1:0]       dev0_m_axi_bid,
    input  wire [1:0]                    dev0_m_axi_bresp,
    input  wire                          dev0_m_axi_bvalid,
    output wire                          dev0_m_axi_bready,
    output wire [AXI_ID_WIDTH-1:0]       dev0_m_axi_arid,
    output wire [ADDR_WIDTH-1:0]         dev0_m_axi_araddr,
    output wire [7:0]                    dev0_m_axi_arlen,
    output wire [2:0]                    dev0_m_axi_arsize,
    output wire [1:0]                    dev0_m_axi_arburst,
    output wire                          dev0_m_axi_arlock,
    output wire [3:0]                    dev0_m_axi_arcache,
    output wire [2:0]                    dev0_m_axi_arprot,
    output wire                          dev0_m_axi_arvalid,
    input  wire                          dev0_m_axi_arready,
    input  wire [AXI_ID_WIDTH-1:0]       dev0_m_axi_rid,
    input  wire [DATA_WIDTH-1:0]         dev0_m_axi_rdata,
    input  wire [1:0]                    dev0_m_axi_rresp,
    input  wire                          dev0_m_axi_rlast,
    input  wire                          dev0_m_axi_rvalid,
    output wire                          dev0_m_axi_rready,

    output wire                          dev0_irq,

    input  wire [AXIL_ADDR_WIDTH-1:0]    dev1_s_axil_awaddr,
    input  wire [2:0]                    dev1_s_axil_awprot,
    input  wire                          dev1_s_axil_awvalid,
    output wire                          dev1_s_axil_awready,
    input  wire [31:0]                   dev1_s_axil_wdata,
    input  wire [3:0]                    dev1_s_axil_wstrb,
    input  wire                          dev1_s_axil_wvalid,
    output wire                          dev1_s_axil_wready,
    output wire [1:0]                    dev1_s_axil_bresp,
    output wire                          dev1_s_axil_bvalid,
    input  wire                          dev1_s_axil_bready,
    input  wire [AXIL_ADDR_WIDTH-1:0]    dev1_s_axil_araddr,
    input  wire [2:0]                    dev1_s_axil_arprot,
    input  wire                          dev1_s_axil_arvalid,
    output wire                          dev1_s_axil_arready,
    output wire [31:0]                   dev1_s_axil_rdata,
    output wire [1:0]                    dev1_s_axil_rresp,
    output wire                          dev1_s_axil_rvalid,
    input  wire                          dev1_s_axil_rready,

    output wire [AXI_ID_WIDTH-1:0]       dev1_m_axi_awid,
    output wire [ADDR_WIDTH-1:0]         dev1_m_axi_awaddr,
    output wire [7:0]                    dev1_m_axi_awlen,
    output wire [2:0]                    dev1_m_axi_awsize,
    output wire [1:0]                    dev1_m_axi_awburst,
    output wire                          dev1_m_axi_awlock,
    output wire [3:0]                    dev1_m_axi_awcache,
    output wire [2:0]                    dev1_m_axi_awprot,
    output wire                          dev1_m_axi_awvalid,
    input  wire                          dev1_m_axi_awready,
    output wire [DATA_WIDTH-1:0]         dev1_m_axi_wdata,
    output wire [DATA_WIDTH/8-1:0]       dev1_m_axi_wstrb,
    output wire                          dev1_m_axi_wlast,
    output wire                          dev1_m_axi_wvalid,
    input  wire                          dev1_m_axi_wready,
    input  wire [AXI_ID_WIDTH-1:0]       dev1_m_axi_bid,
    input  wire [1:0]                    dev1_m_axi_bresp,
    input  wire                          dev1_m_axi_bvalid,
    output wire                          dev1_m_axi_bready,
    output wire [AXI_ID_WIDTH-1:0]       dev1_m_axi_arid,
    output wire [ADDR_WIDTH-1:0]         dev1_m_axi_araddr,
    output wire [7:0]                    dev1_m_axi_arlen,
    output wire [2:0]                    dev1_m_axi_arsize,
    output wire [1:0]                    dev1_m_axi_arburst,
    output wire                          dev1_m_axi_arlock,
    output wire [3:0]                    dev1_m_axi_arcache,
    output wire [2:0]                    dev1_m_axi_arprot,
    output wire                          dev1_m_axi_arvalid,
    input  wire                          dev1_m_axi_arready,
    input  wire [AXI_ID_WIDTH-1:0]       dev1_m_axi_rid,
    input  wire [DATA_WIDTH-1:0]         dev1_m_axi_rdata,
    input  wire [1:0]                    dev1_m_axi_rresp,
    input  wire                          dev1_m_axi_rlast,
    input  wire                          dev1_m_axi_rvalid,
    output wire                          dev1_m_axi_rready,

    output wire                          dev1_irq
);

localparam KEEP_WIDTH = DATA_WIDTH/8;

// 250 MHz: a 4 ns period, so cycle counts read straight off the simulation time.
reg clk = 1'b0;
always #2 clk = ~clk;

// The edge the testbench's bus models sample on (see tb_rdma_dev.v): under Verilator, which
// evaluates a clock edge together with everything it clocks, the falling edge.
`ifdef VERILATOR
wire tb_clk = ~clk;
`else
wire tb_clk = clk;
`endif

// Free-running cycle counter and, per device, the cycle of its last send-queue doorbell write
// (register 0x1000 + 8 * qpn) and the cycle its irq last rose.
reg [63:0] cycle = 64'd0;
reg [63:0] dev0_sq_doorbell_cycle = 64'd0;
reg [63:0] dev0_irq_cycle = 64'd0;
reg [63:0] dev1_sq_doorbell_cycle = 64'd0;
reg [63:0] dev1_irq_cycle = 64'd0;
reg        dev0_irq_q = 1'b0;
reg        dev1_irq_q = 1'b0;
always @(posedge clk) begin
    cycle <= cycle + 64'd1;
    dev0_irq_q <= dev0_irq;
    dev1_irq_q <= dev1_irq;
    if (dev0_s_axil_awvalid && dev0_s_axil_awready && dev0_s_axil_awaddr[15:12] == 4'h1
            && !dev0_s_axil_awaddr[2])
        dev0_sq_doorbell_cycle <= cycle;
    if (dev1_s_axil_awvalid && dev1_s_axil_awready && dev1_s_axil_awaddr[15:12] == 4'h1
            && !dev1_s_axil_awaddr[2])
        dev1_sq_doorbell_cycle <= cycle;
    if (dev0_irq && !dev0_irq_q)
        dev0_irq_cycle <= cycle;
    if (dev1_irq && !dev1_irq_q)
        dev1_irq_cycle <= cycle;
end

// device d's port p+1 TX link; the cable delivers it to the other device's port p+1 RX
wire [DATA_WIDTH-1:0]   dev0_link0_tdata, dev0_link1_tdata, dev1_link0_tdata, dev1_link1_tdata;
wire [KEEP_WIDTH-1:0]   dev0_link0_tkeep, dev0_link1_tkeep, dev1_link0_tkeep, dev1_link1_tkeep;
wire                    dev0_link0_tvalid, dev0_link1_tvalid, dev1_link0_tvalid, dev1_link1_tvalid;
wire                    dev0_link0_tready, dev0_link1_tready, dev1_link0_tready, dev1_link1_tready;
wire                    dev0_link0_tlast, dev0_link1_tlast, dev1_link0_tlast, dev1_link1_tlast;
wire                    dev0_link0_tuser, dev0_link1_tuser, dev1_link0_tuser, dev1_link1_tuser;

rdma_dev #(
    .DATA_WIDTH(DATA_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH),
    .AXI_ID_WIDTH(AXI_ID_WIDTH),
    .AXIL_ADDR_WIDTH(AXIL_ADDR_WIDTH),
    .NUM_PORTS(2),
    .NUM_QP(NUM_QP),
    .NUM_CQ(NUM_CQ),
    .NUM_MR(NUM_MR),
    .NUM_AH(NUM_AH)
) dev0 (
    .clk(clk),
    .rst(rst),
    .s_axil_awaddr(dev0_s_axil_awaddr), .s_axil_awprot(dev0_s_axil_awprot),
    .s_axil_awvalid(dev0_s_axil_awvalid), .s_axil_awready(dev0_s_axil_awready),
    .s_axil_wdata(dev0_s_axil_wdata), .s_axil_wstrb(dev0_s_axil_wstrb),
    .s_axil_wvalid(dev0_s_axil_wvalid), .s_axil_wready(dev0_s_axil_wready),
    .s_axil_bresp(dev0_s_axil_bresp), .s_axil_bvalid(dev0_s_axil_bvalid),
    .s_axil_bready(dev0_s_axil_bready), .s_axil_araddr(dev0_s_axil_araddr),
    .s_axil_arprot(dev0_s_axil_arprot), .s_axil_arvalid(dev0_s_axil_arvalid),
    .s_axil_arready(dev0_s_axil_arready), .s_axil_rdata(dev0_s_axil_rdata),
    .s_axil_rresp(dev0_s_axil_rresp), .s_axil_rvalid(dev0_s_axil_rvalid),
    .s_axil_rready(dev0_s_axil_rready), .m_axi_awid(dev0_m_axi_awid),
    .m_axi_awaddr(dev0_m_axi_awaddr), .m_axi_awlen(dev0_m_axi_awlen),
    .m_axi_awsize(dev0_m_axi_awsize), .m_axi_awburst(dev0_m_axi_awburst),
    .m_axi_awlock(dev0_m_axi_awlock), .m_axi_awcache(dev0_m_axi_awcache),
    .m_axi_awprot(dev0_m_axi_awprot), .m_axi_awvalid(dev0_m_axi_awvalid),
    .m_axi_awready(dev0_m_axi_awready), .m_axi_wdata(dev0_m_axi_wdata),
    .m_axi_wstrb(dev0_m_axi_wstrb), .m_axi_wlast(dev0_m_axi_wlast),
    .m_axi_wvalid(dev0_m_axi_wvalid), .m_axi_wready(dev0_m_axi_wready), .m_axi_bid(dev0_m_axi_bid),
    .m_axi_bresp(dev0_m_axi_bresp), .m_axi_bvalid(dev0_m_axi_bvalid),
    .m_axi_bready(dev0_m_axi_bready), .m_axi_arid(dev0_m_axi_arid),
    .m_axi_araddr(dev0_m_axi_araddr), .m_axi_arlen(dev0_m_axi_arlen),
    .m_axi_arsize(dev0_m_axi_arsize), .m_axi_arburst(dev0_m_axi_arburst),
    .m_axi_arlock(dev0_m_axi_arlock), .m_axi_arcache(dev0_m_axi_arcache),
    .m_axi_arprot(dev0_m_axi_arprot), .m_axi_arvalid(dev0_m_axi_arvalid),
    .m_axi_arready(dev0_m_axi_arready), .m_axi_rid(dev0_m_axi_rid), .m_axi_rdata(dev0_m_axi_rdata),
    .m_axi_rresp(dev0_m_axi_rresp), .m_axi_rlast(dev0_m_axi_rlast),
    .m_axi_rvalid(dev0_m_axi_rvalid), .m_axi_rready(dev0_m_axi_rready),
    .m_axis_tx_tdata({dev0_link1_tdata, dev0_link0_tdata}),
    .m_axis_tx_tkeep({dev0_link1_tkeep, dev0_link0_tkeep}),
    .m_axis_tx_tvalid({dev0_link1_tvalid, dev0_link0_tvalid}),
    .m_axis_tx_tready({dev0_link1_tready, dev0_link0_tready}),
    .m_axis_tx_tlast({dev0_link1_tlast, dev0_link0_tlast}),
    .m_axis_tx_tuser({dev0_link1_tuser, dev0_link0_tuser}),
    .s_axis_rx_tdata({dev1_link1_tdata, dev1_link0_tdata}),
    .s_axis_rx_tkeep({dev1_link1_tkeep, dev1_link0_tkeep}),
    .s_axis_rx_tvalid({dev1_link1_tvalid, dev1_link0_tvalid}),
    .s_axis_rx_tready({dev1_link1_tready, dev1_link0_tready}),
    .s_axis_rx_tlast({dev1_link1_tlast, dev1_link0_tlast}),
    .s_axis_rx_tuser({dev1_link1_tuser, dev1_link0_tuser}),
    .irq(dev0_irq)
);

rdma_dev #(
    .DATA_WIDTH(DATA_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH),
    .AXI_ID_WIDTH(AXI_ID_WIDTH),
    .AXIL_ADDR_WIDTH(AXIL_ADDR_WIDTH),
    .NUM_PORTS(2),
    .NUM_QP(NUM_QP),
    .NUM_CQ(NUM_CQ),
    .NUM_MR(NUM_MR),
    .NUM_AH(NUM_AH)
) dev1 (
    .clk(clk),
    .rst(rst),
    .s_axil_awaddr(dev1_s_axil_awaddr), .s_axil_awprot(dev1_s_axil_awprot),
    .s_axil_awvalid(dev1_s_axil_awvalid), .s_axil_awready(dev1_s_axil_awready),
    .s_axil_wdata(dev1_s_axil_wdata), .s_axil_wstrb(dev1_s_axil_wstrb),
    .s_axil_wvalid(dev1_s_axil_wvalid), .s_axil_wready(dev1_s_axil_wready),
    .s_axil_bresp(dev1_s_axil_bresp), .s_axil_bvalid(dev1_s_axil_bvalid),
    .s_axil_bready(dev1_s_axil_bready), .s_axil_araddr(dev1_s_axil_araddr),
    .s_axil_arprot(dev1_s_axil_arprot), .s_axil_arvalid(dev1_s_axil_arvalid),
    .s_axil_arready(dev1_s_axil_arready), .s_axil_rdata(dev1_s_axil_rdata),
    .s_axil_rresp(dev1_s_axil_rresp), .s_axil_rvalid(dev1_s_axil_rvalid),
    .s_axil_rready(dev1_s_axil_rready), .m_axi_awid(dev1_m_axi_awid),
    .m_axi_awaddr(dev1_m_axi_awaddr), .m_axi_awlen(dev1_m_axi_awlen),
    .m_axi_awsize(dev1_m_axi_awsize), .m_axi_awburst(dev1_m_axi_awburst),
    .m_axi_awlock(dev1_m_axi_awlock), .m_axi_awcache(dev1_m_axi_awcache),
    .m_axi_awprot(dev1_m_axi_awprot), .m_axi_awvalid(dev1_m_axi_awvalid),
    .m_axi_awready(dev1_m_axi_awready), .m_axi_wdata(dev1_m_axi_wdata),
    .m_axi_wstrb(dev1_m_axi_wstrb), .m_axi_wlast(dev1_m_axi_wlast),
    .m_axi_wvalid(dev1_m_axi_wvalid), .m_axi_wready(dev1_m_axi_wready), .m_axi_bid(dev1_m_axi_bid),
    .m_axi_bresp(dev1_m_axi_bresp), .m_axi_bvalid(dev1_m_axi_bvalid),
    .m_axi_bready(dev1_m_axi_bready), .m_axi_arid(dev1_m_axi_arid),
    .m_axi_araddr(dev1_m_axi_araddr), .m_axi_arlen(dev1_m_axi_arlen),
    .m_axi_arsize(dev1_m_axi_arsize), .m_axi_arburst(dev1_m_axi_arburst),
    .m_axi_arlock(dev1_m_axi_arlock), .m_axi_arcache(dev1_m_axi_arcache),
    .m_axi_arprot(dev1_m_axi_arprot), .m_axi_arvalid(dev1_m_axi_arvalid),
    .m_axi_arready(dev1_m_axi_arready), .m_axi_rid(dev1_m_axi_rid), .m_axi_rdata(dev1_m_axi_rdata),
    .m_axi_rresp(dev1_m_axi_rresp), .m_axi_rlast(dev1_m_axi_rlast),
    .m_axi_rvalid(dev1_m_axi_rvalid), .m_axi_rready(dev1_m_axi_rready),
    .m_axis_tx_tdata({dev1_link1_tdata, dev1_link0_tdata}),
    .m_axis_tx_tkeep({dev1_link1_tkeep, dev1_link0_tkeep}),
    .m_axis_tx_tvalid({dev1_link1_tvalid, dev1_link0_tvalid}),
    .m_axis_tx_tready({dev1_link1_tready, dev1_link0_tready}),
    .m_axis_tx_tlast({dev1_link1_tlast, dev1_link0_tlast}),
    .m_axis_tx_tuser({dev1_link1_tuser, dev1_link0_tuser}),
    .s_axis_rx_tdata({dev0_link1_tdata, dev0_link0_tdata}),
    .s_axis_rx_tkeep({dev0_link1_tkeep, dev0_link0_tkeep}),
    .s_axis_rx_tvalid({dev0_link1_tvalid, dev0_link0_tvalid}),
    .s_axis_rx_tready({dev0_link1_tready, dev0_link0_tready}),
    .s_axis_rx_tlast({dev0_link1_tlast, dev0_link0_tlast}),
    .s_axis_rx_tuser({dev0_link1_tuser, dev0_link0_tuser}),
    .irq(dev1_irq)
);

endmodule

`resetall
