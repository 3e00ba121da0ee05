// Simulation harness for rdma_dev: makes the clock in Verilog (much faster than a cocotb Clock),
// passes the AXI buses through under the names cocotbext-axi expects, and splits the per-port
// link streams into one bus per port. With CABLE = 1 port 1's TX is cabled to port 2's RX and
// back (a device talking to itself over real links); with CABLE = 0 the links end at the
// testbench, which drives rx<p>_axis_* and tx<p>_axis_tready. Either way link<p>_* is port p's
// TX link as it is taken, for sniffers. The testbench drives rst and everything else.
`timescale 1ns / 1ps
`default_nettype none

module tb_rdma_dev #(
    parameter DATA_WIDTH = 256,      // DMA and link data width in bits
    parameter ADDR_WIDTH = 32,       // host address width
    parameter AXI_ID_WIDTH = 4,      // AXI ID width of the DMA master
    parameter AXIL_ADDR_WIDTH = 16,  // register space address width
    parameter NUM_QP = 64,           // queue pairs (QPN 0 and 1 reserved)
    parameter NUM_CQ = 16,           // completion queues
    parameter NUM_MR = 64,           // memory regions
    parameter NUM_AH = 16,           // address handles
    parameter CABLE = 0              // 1: port 1 and port 2 are cabled to each other
) (
    input  wire                        rst,

    input  wire [AXIL_ADDR_WIDTH-1:0]  s_axil_awaddr,
    input  wire [2:0]                  s_axil_awprot,
    input  wire                        s_axil_awvalid,
    output wire                        s_axil_awready,
    input  wire [31:0]                 s_axil_wdata,
    input  wire [3:0]                  s_axil_wstrb,
    input  wire                        s_axil_wvalid,
    output wire                        s_axil_wready,
    output wire [1:0]                  s_axil_bresp,
    output wire                        s_axil_bvalid,
    input  wire                        s_axil_bready,
    input  wire [AXIL_ADDR_WIDTH-1:0]  s_axil_araddr,
    input  wire [2:0]                  s_axil_arprot,
    input  wire                        s_axil_arvalid,
    output wire                        s_axil_arready,
    output wire [31:0]                 s_axil_rdata,
    output wire [1:0]                  s_axil_rresp,
    output wire                        s_axil_rvalid,
    input  wire                        s_axil_rready,

    output wire [AXI_ID_WIDTH-1:0]     m_axi_awid,
    output wire [ADDR_WIDTH-1:0]       m_axi_awaddr,
    output wire [7:0]                  m_axi_awlen,
    output wire [2:0]                  m_axi_awsize,
    output wire [1:0]                  m_axi_awburst,
    output wire                        m_axi_awlock,
    output wire [3:0]                  m_axi_awcache,
    output wire [2:0]                  m_axi_awprot,
    output wire                        m_axi_awvalid,
    input  wire                        m_axi_awready,
    output wire [DATA_WIDTH-1:0]       m_axi_wdata,
    output wire [DATA_WIDTH/8-1:0]     m_axi_wstrb,
    output wire                        m_axi_wlast,
    output wire                        m_axi_wvalid,
    input  wire                        m_axi_wready,
    input  wire [AXI_ID_WIDTH-1:0]     m_axi_bid,
    input  wire [1:0]                  m_axi_bresp,
    input  wire                        m_axi_bvalid,
    output wire                        m_axi_bready,
    output wire [AXI_ID_WIDTH-1:0]     m_axi_arid,
    output wire [ADDR_WIDTH-1:0]       m_axi_araddr,
    output wire [7:0]                  m_axi_arlen,
    output wire [2:0]                  m_axi_arsize,
    output wire [1:0]                  m_axi_arburst,
    output wire                        m_axi_arlock,
    output wire [3:0]                  m_axi_arcache,
    output wire [2:0]                  m_axi_arprot,
    output wire                        m_axi_arvalid,
    input  wire                        m_axi_arready,
    input  wire [AXI_ID_WIDTH-1:0]     m_axi_rid,
    input  wire [DATA_WIDTH-1:0]       m_axi_rdata,
    input  wire [1:0]                  m_axi_rresp,
    input  wire                        m_axi_rlast,
    input  wire                        m_axi_rvalid,
    output wire                        m_axi_rready,

    output wire [DATA_WIDTH-1:0]       tx0_axis_tdata,
    output wire [DATA_WIDTH/8-1:0]     tx0_axis_tkeep,
    output wire                        tx0_axis_tvalid,
    input  wire                        tx0_axis_tready,
    output wire                        tx0_axis_tlast,
    output wire                        tx0_axis_tuser,
    output wire [DATA_WIDTH-1:0]       tx1_axis_tdata,
    output wire [DATA_WIDTH/8-1:0]     tx1_axis_tkeep,
    output wire                        tx1_axis_tvalid,
    input  wire                        tx1_axis_tready,
    output wire                        tx1_axis_tlast,
    output wire                        tx1_axis_tuser,
    input  wire [DATA_WIDTH-1:0]       rx0_axis_tdata,
    input  wire [DATA_WIDTH/8-1:0]     rx0_axis_tkeep,
    input  wire                        rx0_axis_tvalid,
    output wire                        rx0_axis_tready,
    input  wire                        rx0_axis_tlast,
    input  wire                        rx0_axis_tuser,
    input  wire [DATA_WIDTH-1:0]       rx1_axis_tdata,
    input  wire [DATA_WIDTH/8-1:0]     rx1_axis_tkeep,
    input  wire                        rx1_axis_tvalid,
    output wire                        rx1_axis_tready,
    input  wire                        rx1_axis_tlast,
    input  wire                        rx1_axis_tuser,

    output wire                        irq
);

localparam KEEP_WIDTH = DATA_WIDTH/8;

// 250 MHz: a 4 ns period, so cycle counts read straight off the simulation time. Icarus runs
// far faster with the clock made here than with a cocotb Clock.
reg clk = 1'b0;
always #2 clk = ~clk;

// The edge the testbench's bus models sample on. Verilator evaluates a clock edge together with
// everything it clocks, so a model woken by clk there would read post-edge values and miss
// handshakes; under Verilator the models run on the falling edge, where nothing changes.
`ifdef VERILATOR
wire tb_clk = ~clk;
`else
wire tb_clk = clk;
`endif

// Free-running cycle counter and two timestamps, so benchmarks measure in clock cycles without
// running Python on every cycle: the cycle of the last send-queue doorbell write (register
// 0x1000 + 8 * qpn) and the cycle irq last rose (a CQE was written to an armed CQ).
reg [63:0] cycle = 64'd0;
reg [63:0] sq_doorbell_cycle = 64'd0;
reg [63:0] irq_cycle = 64'd0;
reg        irq_q = 1'b0;
always @(posedge clk) begin
    cycle <= cycle + 64'd1;
    irq_q <= irq;
    if (s_axil_awvalid && s_axil_awready && s_axil_awaddr[15:12] == 4'h1 && !s_axil_awaddr[2])
        sq_doorbell_cycle <= cycle;
    if (irq && !irq_q)
        irq_cycle <= cycle;
end

// port p's TX link, as taken by its far end
wire [DATA_WIDTH-1:0]   link0_tdata, link1_tdata;
wire [KEEP_WIDTH-1:0]   link0_tkeep, link1_tkeep;
wire                    link0_tvalid, link1_tvalid, link0_tready, link1_tready;
wire                    link0_tlast, link1_tlast, link0_tuser, link1_tuser;
assign {tx0_axis_tdata, tx0_axis_tkeep, tx0_axis_tvalid, tx0_axis_tlast, tx0_axis_tuser} =
       {link0_tdata, link0_tkeep, link0_tvalid, link0_tlast, link0_tuser};
assign {tx1_axis_tdata, tx1_axis_tkeep, tx1_axis_tvalid, tx1_axis_tlast, tx1_axis_tuser} =
       {link1_tdata, link1_tkeep, link1_tvalid, link1_tlast, link1_tuser};

// what each port receives
wire [DATA_WIDTH-1:0]   in0_tdata, in1_tdata;
wire [KEEP_WIDTH-1:0]   in0_tkeep, in1_tkeep;
wire                    in0_tvalid, in1_tvalid, in0_tready, in1_tready;
wire                    in0_tlast, in1_tlast, in0_tuser, in1_tuser;
generate
    if (CABLE) begin : cabled
        assign {in1_tdata, in1_tkeep, in1_tvalid, in1_tlast, in1_tuser} =
               {link0_tdata, link0_tkeep, link0_tvalid, link0_tlast, link0_tuser};
        assign {in0_tdata, in0_tkeep, in0_tvalid, in0_tlast, in0_tuser} =
               {link1_tdata, link1_tkeep, link1_tvalid, link1_tlast, link1_tuser};
        assign link0_tready = in1_tready;
        assign link1_tready = in0_tready;
        assign rx0_axis_tready = 1'b0;
        assign rx1_axis_tready = 1'b0;
    end else begin : open_links
        assign {in0_tdata, in0_tkeep, in0_tvalid, in0_tlast, in0_tuser} =
               {rx0_axis_tdata, rx0_axis_tkeep, rx0_axis_tvalid, rx0_axis_tlast, rx0_axis_tuser};
        assign {in1_tdata, in1_tkeep, in1_tvalid, in1_tlast, in1_tuser} =
               {rx1_axis_tdata, rx1_axis_tkeep, rx1_axis_tvalid, rx1_axis_tlast, rx1_axis_tuser};
        assign rx0_axis_tready = in0_tready;
        assign rx1_axis_tready = in1_tready;
        assign link0_tready = tx0_axis_tready;
        assign link1_tready = tx1_axis_tready;
    end
endgenerate

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
) dut (
    .clk(clk),
    .rst(rst),
    .s_axil_awaddr(s_axil_awaddr), .s_axil_awprot(s_axil_awprot),
    .s_axil_awvalid(s_axil_awvalid), .s_axil_awready(s_axil_awready),
    .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb),
    .s_axil_wvalid(s_axil_wvalid), .s_axil_wready(s_axil_wready),
    .s_axil_bresp(s_axil_bresp), .s_axil_bvalid(s_axil_bvalid), .s_axil_bready(s_axil_bready),
    .s_axil_araddr(s_axil_araddr), .s_axil_arprot(s_axil_arprot),
    .s_axil_arvalid(s_axil_arvalid), .s_axil_arready(s_axil_arready),
    .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
    .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready),
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
    .m_axi_rlast(m_axi_rlast), .m_axi_rvalid(m_axi_rvalid), .m_axi_rready(m_axi_rready),
    .m_axis_tx_tdata({link1_tdata, link0_tdata}),
    .m_axis_tx_tkeep({link1_tkeep, link0_tkeep}),
    .m_axis_tx_tvalid({link1_tvalid, link0_tvalid}),
    .m_axis_tx_tready({link1_tready, link0_tready}),
    .m_axis_tx_tlast({link1_tlast, link0_tlast}),
    .m_axis_tx_tuser({link1_tuser, link0_tuser}),
    .s_axis_rx_tdata({in1_tdata, in0_tdata}),
    .s_axis_rx_tkeep({in1_tkeep, in0_tkeep}),
    .s_axis_rx_tvalid({in1_tvalid, in0_tvalid}),
    .s_axis_rx_tready({in1_tready, in0_tready}),
    .s_axis_rx_tlast({in1_tlast, in0_tlast}),
    .s_axis_rx_tuser({in1_tuser, in0_tuser}),
    .irq(irq)
);

endmodule

`resetall
