// Simulation harness for two rdma_dev instances cabled port to port (topology b): dev0 port 1
// <-> dev1 port 1 and dev0 port 2 <-> dev1 port 2, each direction a wire from one device's TX
// to the other's RX with tready back. Each device has its own register slave (devN_s_axil_*),
// host memory (devN_host_mem, a sim_axi_ram on its DMA master) and irq; reset is shared.
// devN_link<p>_* is device N's port p+1 TX link as the far end takes it, tapped for the
// sniffers (devN_link<p>_tap); each port's RX also takes what its packet player plays
// (devN_rx<p>.player, e.g. a fuzzer's packets). Same conventions as tb_rdma_dev.v: the clock
// is made here, tb_clk is the edge the bus models sample on, `cycle` runs free and per-device
// timestamps record the last SQ doorbell write and the last irq rise.
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
    parameter NUM_AH = 16,           // address handles
    parameter MEM_BYTES = 1 << 24    // host memory size of each device
) (
    input  wire                          rst,

    output wire                          dev0_irq,

    output wire                          dev1_irq
);

localparam KEEP_WIDTH = DATA_WIDTH/8;

// the register bus, driven by the testbench's register master
wire [AXIL_ADDR_WIDTH-1:0]    dev0_s_axil_awaddr;
wire [2:0]                    dev0_s_axil_awprot;
wire                         dev0_s_axil_awvalid;
wire                         dev0_s_axil_awready;
wire [31:0]                   dev0_s_axil_wdata;
wire [3:0]                    dev0_s_axil_wstrb;
wire                         dev0_s_axil_wvalid;
wire                         dev0_s_axil_wready;
wire [1:0]                    dev0_s_axil_bresp;
wire                         dev0_s_axil_bvalid;
wire                         dev0_s_axil_bready;
wire [AXIL_ADDR_WIDTH-1:0]    dev0_s_axil_araddr;
wire [2:0]                    dev0_s_axil_arprot;
wire                         dev0_s_axil_arvalid;
wire                         dev0_s_axil_arready;
wire [31:0]                   dev0_s_axil_rdata;
wire [1:0]                    dev0_s_axil_rresp;
wire                         dev0_s_axil_rvalid;
wire                         dev0_s_axil_rready;
wire [AXIL_ADDR_WIDTH-1:0]    dev1_s_axil_awaddr;
wire [2:0]                    dev1_s_axil_awprot;
wire                         dev1_s_axil_awvalid;
wire                         dev1_s_axil_awready;
wire [31:0]                   dev1_s_axil_wdata;
wire [3:0]                    dev1_s_axil_wstrb;
wire                         dev1_s_axil_wvalid;
wire                         dev1_s_axil_wready;
wire [1:0]                    dev1_s_axil_bresp;
wire                         dev1_s_axil_bvalid;
wire                         dev1_s_axil_bready;
wire [AXIL_ADDR_WIDTH-1:0]    dev1_s_axil_araddr;
wire [2:0]                    dev1_s_axil_arprot;
wire                         dev1_s_axil_arvalid;
wire                         dev1_s_axil_arready;
wire [31:0]                   dev1_s_axil_rdata;
wire [1:0]                    dev1_s_axil_rresp;
wire                         dev1_s_axil_rvalid;
wire                         dev1_s_axil_rready;

// the DMA master, ending at the host memory model
wire [AXI_ID_WIDTH-1:0]       dev0_m_axi_awid;
wire [ADDR_WIDTH-1:0]         dev0_m_axi_awaddr;
wire [7:0]                    dev0_m_axi_awlen;
wire [2:0]                    dev0_m_axi_awsize;
wire [1:0]                    dev0_m_axi_awburst;
wire                         dev0_m_axi_awlock;
wire [3:0]                    dev0_m_axi_awcache;
wire [2:0]                    dev0_m_axi_awprot;
wire                         dev0_m_axi_awvalid;
wire                         dev0_m_axi_awready;
wire [DATA_WIDTH-1:0]         dev0_m_axi_wdata;
wire [DATA_WIDTH/8-1:0]       dev0_m_axi_wstrb;
wire                         dev0_m_axi_wlast;
wire                         dev0_m_axi_wvalid;
wire                         dev0_m_axi_wready;
wire [AXI_ID_WIDTH-1:0]       dev0_m_axi_bid;
wire [1:0]                    dev0_m_axi_bresp;
wire                         dev0_m_axi_bvalid;
wire                         dev0_m_axi_bready;
wire [AXI_ID_WIDTH-1:0]       dev0_m_axi_arid;
wire [ADDR_WIDTH-1:0]         dev0_m_axi_araddr;
wire [7:0]                    dev0_m_axi_arlen;
wire [2:0]                    dev0_m_axi_arsize;
wire [1:0]                    dev0_m_axi_arburst;
wire                         dev0_m_axi_arlock;
wire [3:0]                    dev0_m_axi_arcache;
wire [2:0]                    dev0_m_axi_arprot;
wire                         dev0_m_axi_arvalid;
wire                         dev0_m_axi_arready;
wire [AXI_ID_WIDTH-1:0]       dev0_m_axi_rid;
wire [DATA_WIDTH-1:0]         dev0_m_axi_rdata;
wire [1:0]                    dev0_m_axi_rresp;
wire                         dev0_m_axi_rlast;
wire                         dev0_m_axi_rvalid;
wire                         dev0_m_axi_rready;
wire [AXI_ID_WIDTH-1:0]       dev1_m_axi_awid;
wire [ADDR_WIDTH-1:0]         dev1_m_axi_awaddr;
wire [7:0]                    dev1_m_axi_awlen;
wire [2:0]                    dev1_m_axi_awsize;
wire [1:0]                    dev1_m_axi_awburst;
wire                         dev1_m_axi_awlock;
wire [3:0]                    dev1_m_axi_awcache;
wire [2:0]                    dev1_m_axi_awprot;
wire                         dev1_m_axi_awvalid;
wire                         dev1_m_axi_awready;
wire [DATA_WIDTH-1:0]         dev1_m_axi_wdata;
wire [DATA_WIDTH/8-1:0]       dev1_m_axi_wstrb;
wire                         dev1_m_axi_wlast;
wire                         dev1_m_axi_wvalid;
wire                         dev1_m_axi_wready;
wire [AXI_ID_WIDTH-1:0]       dev1_m_axi_bid;
wire [1:0]                    dev1_m_axi_bresp;
wire                         dev1_m_axi_bvalid;
wire                         dev1_m_axi_bready;
wire [AXI_ID_WIDTH-1:0]       dev1_m_axi_arid;
wire [ADDR_WIDTH-1:0]         dev1_m_axi_araddr;
wire [7:0]                    dev1_m_axi_arlen;
wire [2:0]                    dev1_m_axi_arsize;
wire [1:0]                    dev1_m_axi_arburst;
wire                         dev1_m_axi_arlock;
wire [3:0]                    dev1_m_axi_arcache;
wire [2:0]                    dev1_m_axi_arprot;
wire                         dev1_m_axi_arvalid;
wire                         dev1_m_axi_arready;
wire [AXI_ID_WIDTH-1:0]       dev1_m_axi_rid;
wire [DATA_WIDTH-1:0]         dev1_m_axi_rdata;
wire [1:0]                    dev1_m_axi_rresp;
wire                         dev1_m_axi_rlast;
wire                         dev1_m_axi_rvalid;
wire                         dev1_m_axi_rready;

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
// (register 0x1000 + 8 * qpn), the cycle its irq last rose and the cycle of its host memory's
// last write response.
reg [63:0] cycle = 64'd0;
reg [63:0] dev0_sq_doorbell_cycle = 64'd0;
reg [63:0] dev0_irq_cycle = 64'd0;
reg [63:0] dev0_write_cycle = 64'd0;
reg [63:0] dev1_sq_doorbell_cycle = 64'd0;
reg [63:0] dev1_irq_cycle = 64'd0;
reg [63:0] dev1_write_cycle = 64'd0;
reg        dev0_irq_q = 1'b0;
reg        dev1_irq_q = 1'b0;
always @(posedge clk) begin
    cycle <= cycle + 64'd1;
    dev0_irq_q <= dev0_irq;
    dev1_irq_q <= dev1_irq;
    if (dev0_m_axi_bvalid && dev0_m_axi_bready)
        dev0_write_cycle <= cycle;
    if (dev1_m_axi_bvalid && dev1_m_axi_bready)
        dev1_write_cycle <= cycle;
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

// each device's DMA concurrency, for functional coverage (N: rdma_dev's DMA_CLIENTS): a mover
// holds a command while it is not ready for another, the CQE writer's store queue while a
// store it took is not done
wire dev0_cqe_stores = dev0.dma.client[0].stores.mover.b_ptr !=
                      dev0.dma.client[0].stores.mover.wr_ptr;
wire dev1_cqe_stores = dev1.dma.client[0].stores.mover.b_ptr !=
                      dev1.dma.client[0].stores.mover.wr_ptr;
sim_dma_watch #(.N(12)) dev0_dma_watch (.rst(rst),
                                        .busy({~dev0.dma_c_ready[11:1], dev0_cqe_stores}),
                                        // read by the testbench (tb/coverage.py)
                                        .together(), .alongside());
sim_dma_watch #(.N(12)) dev1_dma_watch (.rst(rst),
                                        .busy({~dev1.dma_c_ready[11:1], dev1_cqe_stores}),
                                        // read by the testbench (tb/coverage.py)
                                        .together(), .alongside());

// device d's port p+1 TX link (devd_link<p>) goes through a cable model (devd_link<p>_cable, a
// sim_link_fault: perfect until a test sets latency or faults) whose output (devd_link<p>_rx)
// is the other device's port p+1 RX
wire [DATA_WIDTH-1:0]   dev0_link0_tdata, dev0_link1_tdata, dev1_link0_tdata, dev1_link1_tdata;
wire [KEEP_WIDTH-1:0]   dev0_link0_tkeep, dev0_link1_tkeep, dev1_link0_tkeep, dev1_link1_tkeep;
wire                    dev0_link0_tvalid, dev0_link1_tvalid, dev1_link0_tvalid, dev1_link1_tvalid;
wire                    dev0_link0_tready, dev0_link1_tready, dev1_link0_tready, dev1_link1_tready;
wire                    dev0_link0_tlast, dev0_link1_tlast, dev1_link0_tlast, dev1_link1_tlast;
wire                    dev0_link0_tuser, dev0_link1_tuser, dev1_link0_tuser, dev1_link1_tuser;
wire [DATA_WIDTH-1:0]   dev0_link0_rx_tdata, dev0_link1_rx_tdata, dev1_link0_rx_tdata, dev1_link1_rx_tdata;
wire [KEEP_WIDTH-1:0]   dev0_link0_rx_tkeep, dev0_link1_rx_tkeep, dev1_link0_rx_tkeep, dev1_link1_rx_tkeep;
wire                    dev0_link0_rx_tvalid, dev0_link1_rx_tvalid, dev1_link0_rx_tvalid, dev1_link1_rx_tvalid;
wire                    dev0_link0_rx_tready, dev0_link1_rx_tready, dev1_link0_rx_tready, dev1_link1_rx_tready;
wire                    dev0_link0_rx_tlast, dev0_link1_rx_tlast, dev1_link0_rx_tlast, dev1_link1_rx_tlast;
wire                    dev0_link0_rx_tuser, dev0_link1_rx_tuser, dev1_link0_rx_tuser, dev1_link1_rx_tuser;

// what device d's port p+1 receives (devd_in<p>): the other device's cable (devd_link<p>_rx)
// and a packet player (devd_rx<p>.player, sim_port_rx: packets a testbench queues itself, a
// fuzzer's), a whole packet at a time, the cable first
wire [DATA_WIDTH-1:0]   dev0_in0_tdata, dev0_in1_tdata, dev1_in0_tdata, dev1_in1_tdata;
wire [KEEP_WIDTH-1:0]   dev0_in0_tkeep, dev0_in1_tkeep, dev1_in0_tkeep, dev1_in1_tkeep;
wire                    dev0_in0_tvalid, dev0_in1_tvalid, dev1_in0_tvalid, dev1_in1_tvalid;
wire                    dev0_in0_tready, dev0_in1_tready, dev1_in0_tready, dev1_in1_tready;
wire                    dev0_in0_tlast, dev0_in1_tlast, dev1_in0_tlast, dev1_in1_tlast;
wire                    dev0_in0_tuser, dev0_in1_tuser, dev1_in0_tuser, dev1_in1_tuser;

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
    .s_axis_rx_tdata({dev0_in1_tdata, dev0_in0_tdata}),
    .s_axis_rx_tkeep({dev0_in1_tkeep, dev0_in0_tkeep}),
    .s_axis_rx_tvalid({dev0_in1_tvalid, dev0_in0_tvalid}),
    .s_axis_rx_tready({dev0_in1_tready, dev0_in0_tready}),
    .s_axis_rx_tlast({dev0_in1_tlast, dev0_in0_tlast}),
    .s_axis_rx_tuser({dev0_in1_tuser, dev0_in0_tuser}),
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
    .s_axis_rx_tdata({dev1_in1_tdata, dev1_in0_tdata}),
    .s_axis_rx_tkeep({dev1_in1_tkeep, dev1_in0_tkeep}),
    .s_axis_rx_tvalid({dev1_in1_tvalid, dev1_in0_tvalid}),
    .s_axis_rx_tready({dev1_in1_tready, dev1_in0_tready}),
    .s_axis_rx_tlast({dev1_in1_tlast, dev1_in0_tlast}),
    .s_axis_rx_tuser({dev1_in1_tuser, dev1_in0_tuser}),
    .irq(dev1_irq)
);

// the register master (tb/rdma_tb.py drives it)
sim_axil_master #(.ADDR_WIDTH(AXIL_ADDR_WIDTH)) dev0_regs (
    .clk(clk),
    .rst(rst),
    .m_axil_awaddr(dev0_s_axil_awaddr), .m_axil_awprot(dev0_s_axil_awprot),
    .m_axil_awvalid(dev0_s_axil_awvalid), .m_axil_awready(dev0_s_axil_awready),
    .m_axil_wdata(dev0_s_axil_wdata), .m_axil_wstrb(dev0_s_axil_wstrb),
    .m_axil_wvalid(dev0_s_axil_wvalid), .m_axil_wready(dev0_s_axil_wready),
    .m_axil_bresp(dev0_s_axil_bresp), .m_axil_bvalid(dev0_s_axil_bvalid),
    .m_axil_bready(dev0_s_axil_bready), .m_axil_araddr(dev0_s_axil_araddr),
    .m_axil_arprot(dev0_s_axil_arprot), .m_axil_arvalid(dev0_s_axil_arvalid),
    .m_axil_arready(dev0_s_axil_arready), .m_axil_rdata(dev0_s_axil_rdata),
    .m_axil_rresp(dev0_s_axil_rresp), .m_axil_rvalid(dev0_s_axil_rvalid),
    .m_axil_rready(dev0_s_axil_rready)
);

sim_axil_master #(.ADDR_WIDTH(AXIL_ADDR_WIDTH)) dev1_regs (
    .clk(clk),
    .rst(rst),
    .m_axil_awaddr(dev1_s_axil_awaddr), .m_axil_awprot(dev1_s_axil_awprot),
    .m_axil_awvalid(dev1_s_axil_awvalid), .m_axil_awready(dev1_s_axil_awready),
    .m_axil_wdata(dev1_s_axil_wdata), .m_axil_wstrb(dev1_s_axil_wstrb),
    .m_axil_wvalid(dev1_s_axil_wvalid), .m_axil_wready(dev1_s_axil_wready),
    .m_axil_bresp(dev1_s_axil_bresp), .m_axil_bvalid(dev1_s_axil_bvalid),
    .m_axil_bready(dev1_s_axil_bready), .m_axil_araddr(dev1_s_axil_araddr),
    .m_axil_arprot(dev1_s_axil_arprot), .m_axil_arvalid(dev1_s_axil_arvalid),
    .m_axil_arready(dev1_s_axil_arready), .m_axil_rdata(dev1_s_axil_rdata),
    .m_axil_rresp(dev1_s_axil_rresp), .m_axil_rvalid(dev1_s_axil_rvalid),
    .m_axil_rready(dev1_s_axil_rready)
);

// host memory (tb/host_mem.py is its back door) and a tap on every TX link for the sniffers
// (what was sent) and on every cable's far end (what arrived)
sim_axi_ram #(
    .DATA_WIDTH(DATA_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH),
    .ID_WIDTH(AXI_ID_WIDTH),
    .MEM_BYTES(MEM_BYTES)
) dev0_host_mem (
    .clk(clk),
    .rst(rst),
    .s_axi_awid(dev0_m_axi_awid), .s_axi_awaddr(dev0_m_axi_awaddr),
    .s_axi_awlen(dev0_m_axi_awlen), .s_axi_awsize(dev0_m_axi_awsize),
    .s_axi_awburst(dev0_m_axi_awburst), .s_axi_awvalid(dev0_m_axi_awvalid),
    .s_axi_awready(dev0_m_axi_awready), .s_axi_wdata(dev0_m_axi_wdata),
    .s_axi_wstrb(dev0_m_axi_wstrb), .s_axi_wlast(dev0_m_axi_wlast),
    .s_axi_wvalid(dev0_m_axi_wvalid), .s_axi_wready(dev0_m_axi_wready),
    .s_axi_bid(dev0_m_axi_bid), .s_axi_bresp(dev0_m_axi_bresp), .s_axi_bvalid(dev0_m_axi_bvalid),
    .s_axi_bready(dev0_m_axi_bready), .s_axi_arid(dev0_m_axi_arid),
    .s_axi_araddr(dev0_m_axi_araddr), .s_axi_arlen(dev0_m_axi_arlen),
    .s_axi_arsize(dev0_m_axi_arsize), .s_axi_arburst(dev0_m_axi_arburst),
    .s_axi_arvalid(dev0_m_axi_arvalid), .s_axi_arready(dev0_m_axi_arready),
    .s_axi_rid(dev0_m_axi_rid), .s_axi_rdata(dev0_m_axi_rdata), .s_axi_rresp(dev0_m_axi_rresp),
    .s_axi_rlast(dev0_m_axi_rlast), .s_axi_rvalid(dev0_m_axi_rvalid),
    .s_axi_rready(dev0_m_axi_rready)
);

sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) dev0_link0_tap (
    .clk(clk), .cycle(cycle), .tdata(dev0_link0_tdata), .tkeep(dev0_link0_tkeep),
    .tvalid(dev0_link0_tvalid), .tready(dev0_link0_tready), .tlast(dev0_link0_tlast),
    .tuser(dev0_link0_tuser)
);

sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) dev0_link1_tap (
    .clk(clk), .cycle(cycle), .tdata(dev0_link1_tdata), .tkeep(dev0_link1_tkeep),
    .tvalid(dev0_link1_tvalid), .tready(dev0_link1_tready), .tlast(dev0_link1_tlast),
    .tuser(dev0_link1_tuser)
);

sim_axi_ram #(
    .DATA_WIDTH(DATA_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH),
    .ID_WIDTH(AXI_ID_WIDTH),
    .MEM_BYTES(MEM_BYTES)
) dev1_host_mem (
    .clk(clk),
    .rst(rst),
    .s_axi_awid(dev1_m_axi_awid), .s_axi_awaddr(dev1_m_axi_awaddr),
    .s_axi_awlen(dev1_m_axi_awlen), .s_axi_awsize(dev1_m_axi_awsize),
    .s_axi_awburst(dev1_m_axi_awburst), .s_axi_awvalid(dev1_m_axi_awvalid),
    .s_axi_awready(dev1_m_axi_awready), .s_axi_wdata(dev1_m_axi_wdata),
    .s_axi_wstrb(dev1_m_axi_wstrb), .s_axi_wlast(dev1_m_axi_wlast),
    .s_axi_wvalid(dev1_m_axi_wvalid), .s_axi_wready(dev1_m_axi_wready),
    .s_axi_bid(dev1_m_axi_bid), .s_axi_bresp(dev1_m_axi_bresp), .s_axi_bvalid(dev1_m_axi_bvalid),
    .s_axi_bready(dev1_m_axi_bready), .s_axi_arid(dev1_m_axi_arid),
    .s_axi_araddr(dev1_m_axi_araddr), .s_axi_arlen(dev1_m_axi_arlen),
    .s_axi_arsize(dev1_m_axi_arsize), .s_axi_arburst(dev1_m_axi_arburst),
    .s_axi_arvalid(dev1_m_axi_arvalid), .s_axi_arready(dev1_m_axi_arready),
    .s_axi_rid(dev1_m_axi_rid), .s_axi_rdata(dev1_m_axi_rdata), .s_axi_rresp(dev1_m_axi_rresp),
    .s_axi_rlast(dev1_m_axi_rlast), .s_axi_rvalid(dev1_m_axi_rvalid),
    .s_axi_rready(dev1_m_axi_rready)
);

sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) dev1_link0_tap (
    .clk(clk), .cycle(cycle), .tdata(dev1_link0_tdata), .tkeep(dev1_link0_tkeep),
    .tvalid(dev1_link0_tvalid), .tready(dev1_link0_tready), .tlast(dev1_link0_tlast),
    .tuser(dev1_link0_tuser)
);

sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) dev1_link1_tap (
    .clk(clk), .cycle(cycle), .tdata(dev1_link1_tdata), .tkeep(dev1_link1_tkeep),
    .tvalid(dev1_link1_tvalid), .tready(dev1_link1_tready), .tlast(dev1_link1_tlast),
    .tuser(dev1_link1_tuser)
);

sim_link_fault #(.DATA_WIDTH(DATA_WIDTH)) dev0_link0_cable (
    .clk(clk), .rst(rst), .cycle(cycle),
    .s_axis_tdata(dev0_link0_tdata), .s_axis_tkeep(dev0_link0_tkeep), .s_axis_tvalid(dev0_link0_tvalid),
    .s_axis_tready(dev0_link0_tready), .s_axis_tlast(dev0_link0_tlast), .s_axis_tuser(dev0_link0_tuser),
    .m_axis_tdata(dev0_link0_rx_tdata), .m_axis_tkeep(dev0_link0_rx_tkeep), .m_axis_tvalid(dev0_link0_rx_tvalid),
    .m_axis_tready(dev0_link0_rx_tready), .m_axis_tlast(dev0_link0_rx_tlast), .m_axis_tuser(dev0_link0_rx_tuser)
);

sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) dev0_link0_arrived_tap (
    .clk(clk), .cycle(cycle), .tdata(dev0_link0_rx_tdata), .tkeep(dev0_link0_rx_tkeep),
    .tvalid(dev0_link0_rx_tvalid), .tready(dev0_link0_rx_tready), .tlast(dev0_link0_rx_tlast),
    .tuser(dev0_link0_rx_tuser)
);

sim_link_fault #(.DATA_WIDTH(DATA_WIDTH)) dev0_link1_cable (
    .clk(clk), .rst(rst), .cycle(cycle),
    .s_axis_tdata(dev0_link1_tdata), .s_axis_tkeep(dev0_link1_tkeep), .s_axis_tvalid(dev0_link1_tvalid),
    .s_axis_tready(dev0_link1_tready), .s_axis_tlast(dev0_link1_tlast), .s_axis_tuser(dev0_link1_tuser),
    .m_axis_tdata(dev0_link1_rx_tdata), .m_axis_tkeep(dev0_link1_rx_tkeep), .m_axis_tvalid(dev0_link1_rx_tvalid),
    .m_axis_tready(dev0_link1_rx_tready), .m_axis_tlast(dev0_link1_rx_tlast), .m_axis_tuser(dev0_link1_rx_tuser)
);

sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) dev0_link1_arrived_tap (
    .clk(clk), .cycle(cycle), .tdata(dev0_link1_rx_tdata), .tkeep(dev0_link1_rx_tkeep),
    .tvalid(dev0_link1_rx_tvalid), .tready(dev0_link1_rx_tready), .tlast(dev0_link1_rx_tlast),
    .tuser(dev0_link1_rx_tuser)
);

sim_link_fault #(.DATA_WIDTH(DATA_WIDTH)) dev1_link0_cable (
    .clk(clk), .rst(rst), .cycle(cycle),
    .s_axis_tdata(dev1_link0_tdata), .s_axis_tkeep(dev1_link0_tkeep), .s_axis_tvalid(dev1_link0_tvalid),
    .s_axis_tready(dev1_link0_tready), .s_axis_tlast(dev1_link0_tlast), .s_axis_tuser(dev1_link0_tuser),
    .m_axis_tdata(dev1_link0_rx_tdata), .m_axis_tkeep(dev1_link0_rx_tkeep), .m_axis_tvalid(dev1_link0_rx_tvalid),
    .m_axis_tready(dev1_link0_rx_tready), .m_axis_tlast(dev1_link0_rx_tlast), .m_axis_tuser(dev1_link0_rx_tuser)
);

sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) dev1_link0_arrived_tap (
    .clk(clk), .cycle(cycle), .tdata(dev1_link0_rx_tdata), .tkeep(dev1_link0_rx_tkeep),
    .tvalid(dev1_link0_rx_tvalid), .tready(dev1_link0_rx_tready), .tlast(dev1_link0_rx_tlast),
    .tuser(dev1_link0_rx_tuser)
);

sim_link_fault #(.DATA_WIDTH(DATA_WIDTH)) dev1_link1_cable (
    .clk(clk), .rst(rst), .cycle(cycle),
    .s_axis_tdata(dev1_link1_tdata), .s_axis_tkeep(dev1_link1_tkeep), .s_axis_tvalid(dev1_link1_tvalid),
    .s_axis_tready(dev1_link1_tready), .s_axis_tlast(dev1_link1_tlast), .s_axis_tuser(dev1_link1_tuser),
    .m_axis_tdata(dev1_link1_rx_tdata), .m_axis_tkeep(dev1_link1_rx_tkeep), .m_axis_tvalid(dev1_link1_rx_tvalid),
    .m_axis_tready(dev1_link1_rx_tready), .m_axis_tlast(dev1_link1_rx_tlast), .m_axis_tuser(dev1_link1_rx_tuser)
);

sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) dev1_link1_arrived_tap (
    .clk(clk), .cycle(cycle), .tdata(dev1_link1_rx_tdata), .tkeep(dev1_link1_rx_tkeep),
    .tvalid(dev1_link1_rx_tvalid), .tready(dev1_link1_rx_tready), .tlast(dev1_link1_rx_tlast),
    .tuser(dev1_link1_rx_tuser)
);

sim_port_rx #(.DATA_WIDTH(DATA_WIDTH)) dev0_rx0 (
    .clk(clk), .rst(rst),
    .s_axis_tdata(dev1_link0_rx_tdata), .s_axis_tkeep(dev1_link0_rx_tkeep), .s_axis_tvalid(dev1_link0_rx_tvalid),
    .s_axis_tready(dev1_link0_rx_tready), .s_axis_tlast(dev1_link0_rx_tlast), .s_axis_tuser(dev1_link0_rx_tuser),
    .m_axis_tdata(dev0_in0_tdata), .m_axis_tkeep(dev0_in0_tkeep), .m_axis_tvalid(dev0_in0_tvalid),
    .m_axis_tready(dev0_in0_tready), .m_axis_tlast(dev0_in0_tlast), .m_axis_tuser(dev0_in0_tuser)
);

sim_port_rx #(.DATA_WIDTH(DATA_WIDTH)) dev0_rx1 (
    .clk(clk), .rst(rst),
    .s_axis_tdata(dev1_link1_rx_tdata), .s_axis_tkeep(dev1_link1_rx_tkeep), .s_axis_tvalid(dev1_link1_rx_tvalid),
    .s_axis_tready(dev1_link1_rx_tready), .s_axis_tlast(dev1_link1_rx_tlast), .s_axis_tuser(dev1_link1_rx_tuser),
    .m_axis_tdata(dev0_in1_tdata), .m_axis_tkeep(dev0_in1_tkeep), .m_axis_tvalid(dev0_in1_tvalid),
    .m_axis_tready(dev0_in1_tready), .m_axis_tlast(dev0_in1_tlast), .m_axis_tuser(dev0_in1_tuser)
);

sim_port_rx #(.DATA_WIDTH(DATA_WIDTH)) dev1_rx0 (
    .clk(clk), .rst(rst),
    .s_axis_tdata(dev0_link0_rx_tdata), .s_axis_tkeep(dev0_link0_rx_tkeep), .s_axis_tvalid(dev0_link0_rx_tvalid),
    .s_axis_tready(dev0_link0_rx_tready), .s_axis_tlast(dev0_link0_rx_tlast), .s_axis_tuser(dev0_link0_rx_tuser),
    .m_axis_tdata(dev1_in0_tdata), .m_axis_tkeep(dev1_in0_tkeep), .m_axis_tvalid(dev1_in0_tvalid),
    .m_axis_tready(dev1_in0_tready), .m_axis_tlast(dev1_in0_tlast), .m_axis_tuser(dev1_in0_tuser)
);

sim_port_rx #(.DATA_WIDTH(DATA_WIDTH)) dev1_rx1 (
    .clk(clk), .rst(rst),
    .s_axis_tdata(dev0_link1_rx_tdata), .s_axis_tkeep(dev0_link1_rx_tkeep), .s_axis_tvalid(dev0_link1_rx_tvalid),
    .s_axis_tready(dev0_link1_rx_tready), .s_axis_tlast(dev0_link1_rx_tlast), .s_axis_tuser(dev0_link1_rx_tuser),
    .m_axis_tdata(dev1_in1_tdata), .m_axis_tkeep(dev1_in1_tkeep), .m_axis_tvalid(dev1_in1_tvalid),
    .m_axis_tready(dev1_in1_tready), .m_axis_tlast(dev1_in1_tlast), .m_axis_tuser(dev1_in1_tuser)
);

endmodule

`resetall
