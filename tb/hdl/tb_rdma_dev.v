// Simulation harness for rdma_dev. Everything that would otherwise run Python on every cycle
// is HDL here: the clock (about 40 times faster on Icarus than a cocotb Clock), the host memory
// on the DMA master (sim_axi_ram, which the testbench reads and writes through its back door),
// the register bus master (sim_axil_master, one Python wake per access) and a tap on each TX
// link (sim_link_tap, one Python wake per packet). With CABLE = 1 port 1's TX is cabled to port
// 2's RX and back (a device talking to itself over real links): each direction is a cable model
// (cabled.link<p>_cable, sim_link_fault: a perfect link until the testbench sets latency or
// faults) with a tap on what arrives (cabled.link<p>_arrived_tap), and port p's RX takes, a
// packet at a time, what the cable brings and what its packet player plays (cabled.rx<p-1>,
// sim_port_rx: packets the testbench queues itself, a fuzzer's); with CABLE = 0 the links end
// at the testbench, which drives rx<p>_axis_* and tx<p>_axis_tready. Either way link<p>_* is
// port p's TX link as it is taken. The testbench drives rst.
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
    parameter NUM_SRQ = 16,          // shared receive queues
    parameter SQ_WIN_LOG = 4,        // send window: 2^SQ_WIN_LOG WQEs per QP in flight
    parameter BYPASS_MOVERS = 4,     // bypass payload moves running at once
    parameter MEM_BYTES = 1 << 24,   // host memory size
    parameter CABLE = 0              // 1: port 1 and port 2 are cabled to each other
) (
    input  wire                        rst,

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

// the register bus, driven by the testbench's register master
wire [AXIL_ADDR_WIDTH-1:0]    s_axil_awaddr;
wire [2:0]                    s_axil_awprot;
wire                         s_axil_awvalid;
wire                         s_axil_awready;
wire [31:0]                   s_axil_wdata;
wire [3:0]                    s_axil_wstrb;
wire                         s_axil_wvalid;
wire                         s_axil_wready;
wire [1:0]                    s_axil_bresp;
wire                         s_axil_bvalid;
wire                         s_axil_bready;
wire [AXIL_ADDR_WIDTH-1:0]    s_axil_araddr;
wire [2:0]                    s_axil_arprot;
wire                         s_axil_arvalid;
wire                         s_axil_arready;
wire [31:0]                   s_axil_rdata;
wire [1:0]                    s_axil_rresp;
wire                         s_axil_rvalid;
wire                         s_axil_rready;

// the DMA master, ending at the host memory model
wire [AXI_ID_WIDTH-1:0]       m_axi_awid;
wire [ADDR_WIDTH-1:0]         m_axi_awaddr;
wire [7:0]                    m_axi_awlen;
wire [2:0]                    m_axi_awsize;
wire [1:0]                    m_axi_awburst;
wire                         m_axi_awlock;
wire [3:0]                    m_axi_awcache;
wire [2:0]                    m_axi_awprot;
wire                         m_axi_awvalid;
wire                         m_axi_awready;
wire [DATA_WIDTH-1:0]         m_axi_wdata;
wire [DATA_WIDTH/8-1:0]       m_axi_wstrb;
wire                         m_axi_wlast;
wire                         m_axi_wvalid;
wire                         m_axi_wready;
wire [AXI_ID_WIDTH-1:0]       m_axi_bid;
wire [1:0]                    m_axi_bresp;
wire                         m_axi_bvalid;
wire                         m_axi_bready;
wire [AXI_ID_WIDTH-1:0]       m_axi_arid;
wire [ADDR_WIDTH-1:0]         m_axi_araddr;
wire [7:0]                    m_axi_arlen;
wire [2:0]                    m_axi_arsize;
wire [1:0]                    m_axi_arburst;
wire                         m_axi_arlock;
wire [3:0]                    m_axi_arcache;
wire [2:0]                    m_axi_arprot;
wire                         m_axi_arvalid;
wire                         m_axi_arready;
wire [AXI_ID_WIDTH-1:0]       m_axi_rid;
wire [DATA_WIDTH-1:0]         m_axi_rdata;
wire [1:0]                    m_axi_rresp;
wire                         m_axi_rlast;
wire                         m_axi_rvalid;
wire                         m_axi_rready;

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

// Free-running cycle counter and three timestamps, so benchmarks measure in clock cycles without
// running Python on every cycle: the cycle of the last send-queue doorbell write (register
// 0x1000 + 8 * qpn), the cycle irq last rose (a CQE was written to an armed CQ) and the cycle
// of the host memory's last write response (once a burst's last CQE is seen: its write's).
reg [63:0] cycle = 64'd0;
reg [63:0] sq_doorbell_cycle = 64'd0;
reg [63:0] irq_cycle = 64'd0;
reg [63:0] write_cycle = 64'd0;
reg        irq_q = 1'b0;
always @(posedge clk) begin
    cycle <= cycle + 64'd1;
    irq_q <= irq;
    if (m_axi_bvalid && m_axi_bready)
        write_cycle <= cycle;
    if (s_axil_awvalid && s_axil_awready && s_axil_awaddr[15:12] == 4'h1 && !s_axil_awaddr[2])
        sq_doorbell_cycle <= cycle;
    if (irq && !irq_q)
        irq_cycle <= cycle;
end

// the DMA engine's concurrency, for functional coverage (N: rdma_dev's DMA_CLIENTS): a mover
// holds a command while it is not ready for another, the CQE writer's store queue while a
// store it took is not done
localparam DMA_N = 4 + 2*2 + BYPASS_MOVERS;
wire cqe_stores = dut.dma.client[0].stores.mover.b_ptr != dut.dma.client[0].stores.mover.wr_ptr;
sim_dma_watch #(.N(DMA_N)) dma_watch (.rst(rst),
                                      .busy({~dut.dma_c_ready[DMA_N-1:1], cqe_stores}),
                                      // read by the testbench (tb/coverage.py)
                                      .together(), .alongside());

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
        // port 1's TX (link0) to port 2's RX (in1), port 2's TX (link1) to port 1's RX (in0);
        // what arrives from the cable (arrive<p>, tapped) shares the port's RX with a packet
        // player (rx<p>.player: packets the testbench puts there itself, e.g. a fuzzer's)
        wire [DATA_WIDTH-1:0]   arrive0_tdata, arrive1_tdata;
        wire [KEEP_WIDTH-1:0]   arrive0_tkeep, arrive1_tkeep;
        wire                    arrive0_tvalid, arrive1_tvalid, arrive0_tready, arrive1_tready;
        wire                    arrive0_tlast, arrive1_tlast, arrive0_tuser, arrive1_tuser;
        sim_link_fault #(.DATA_WIDTH(DATA_WIDTH)) link0_cable (
            .clk(clk), .rst(rst), .cycle(cycle),
            .s_axis_tdata(link0_tdata), .s_axis_tkeep(link0_tkeep), .s_axis_tvalid(link0_tvalid),
            .s_axis_tready(link0_tready), .s_axis_tlast(link0_tlast), .s_axis_tuser(link0_tuser),
            .m_axis_tdata(arrive1_tdata), .m_axis_tkeep(arrive1_tkeep),
            .m_axis_tvalid(arrive1_tvalid), .m_axis_tready(arrive1_tready),
            .m_axis_tlast(arrive1_tlast), .m_axis_tuser(arrive1_tuser)
        );
        sim_link_fault #(.DATA_WIDTH(DATA_WIDTH)) link1_cable (
            .clk(clk), .rst(rst), .cycle(cycle),
            .s_axis_tdata(link1_tdata), .s_axis_tkeep(link1_tkeep), .s_axis_tvalid(link1_tvalid),
            .s_axis_tready(link1_tready), .s_axis_tlast(link1_tlast), .s_axis_tuser(link1_tuser),
            .m_axis_tdata(arrive0_tdata), .m_axis_tkeep(arrive0_tkeep),
            .m_axis_tvalid(arrive0_tvalid), .m_axis_tready(arrive0_tready),
            .m_axis_tlast(arrive0_tlast), .m_axis_tuser(arrive0_tuser)
        );
        sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) link0_arrived_tap (
            .clk(clk), .cycle(cycle), .tdata(arrive1_tdata), .tkeep(arrive1_tkeep),
            .tvalid(arrive1_tvalid), .tready(arrive1_tready), .tlast(arrive1_tlast),
            .tuser(arrive1_tuser)
        );
        sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) link1_arrived_tap (
            .clk(clk), .cycle(cycle), .tdata(arrive0_tdata), .tkeep(arrive0_tkeep),
            .tvalid(arrive0_tvalid), .tready(arrive0_tready), .tlast(arrive0_tlast),
            .tuser(arrive0_tuser)
        );
        sim_port_rx #(.DATA_WIDTH(DATA_WIDTH)) rx0 (
            .clk(clk), .rst(rst),
            .s_axis_tdata(arrive0_tdata), .s_axis_tkeep(arrive0_tkeep),
            .s_axis_tvalid(arrive0_tvalid), .s_axis_tready(arrive0_tready),
            .s_axis_tlast(arrive0_tlast), .s_axis_tuser(arrive0_tuser),
            .m_axis_tdata(in0_tdata), .m_axis_tkeep(in0_tkeep), .m_axis_tvalid(in0_tvalid),
            .m_axis_tready(in0_tready), .m_axis_tlast(in0_tlast), .m_axis_tuser(in0_tuser)
        );
        sim_port_rx #(.DATA_WIDTH(DATA_WIDTH)) rx1 (
            .clk(clk), .rst(rst),
            .s_axis_tdata(arrive1_tdata), .s_axis_tkeep(arrive1_tkeep),
            .s_axis_tvalid(arrive1_tvalid), .s_axis_tready(arrive1_tready),
            .s_axis_tlast(arrive1_tlast), .s_axis_tuser(arrive1_tuser),
            .m_axis_tdata(in1_tdata), .m_axis_tkeep(in1_tkeep), .m_axis_tvalid(in1_tvalid),
            .m_axis_tready(in1_tready), .m_axis_tlast(in1_tlast), .m_axis_tuser(in1_tuser)
        );
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
    .NUM_AH(NUM_AH),
    .NUM_SRQ(NUM_SRQ),
    .SQ_WIN_LOG(SQ_WIN_LOG),
    .BYPASS_MOVERS(BYPASS_MOVERS)
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

// the register master (tb/rdma_tb.py drives it)
sim_axil_master #(.ADDR_WIDTH(AXIL_ADDR_WIDTH)) regs (
    .clk(clk),
    .rst(rst),
    .m_axil_awaddr(s_axil_awaddr), .m_axil_awprot(s_axil_awprot), .m_axil_awvalid(s_axil_awvalid),
    .m_axil_awready(s_axil_awready), .m_axil_wdata(s_axil_wdata), .m_axil_wstrb(s_axil_wstrb),
    .m_axil_wvalid(s_axil_wvalid), .m_axil_wready(s_axil_wready), .m_axil_bresp(s_axil_bresp),
    .m_axil_bvalid(s_axil_bvalid), .m_axil_bready(s_axil_bready), .m_axil_araddr(s_axil_araddr),
    .m_axil_arprot(s_axil_arprot), .m_axil_arvalid(s_axil_arvalid),
    .m_axil_arready(s_axil_arready), .m_axil_rdata(s_axil_rdata), .m_axil_rresp(s_axil_rresp),
    .m_axil_rvalid(s_axil_rvalid), .m_axil_rready(s_axil_rready)
);

// host memory (tb/host_mem.py is its back door) and a tap on every TX link for the sniffers
sim_axi_ram #(
    .DATA_WIDTH(DATA_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH),
    .ID_WIDTH(AXI_ID_WIDTH),
    .MEM_BYTES(MEM_BYTES)
) host_mem (
    .clk(clk),
    .rst(rst),
    .s_axi_awid(m_axi_awid), .s_axi_awaddr(m_axi_awaddr), .s_axi_awlen(m_axi_awlen),
    .s_axi_awsize(m_axi_awsize), .s_axi_awburst(m_axi_awburst), .s_axi_awvalid(m_axi_awvalid),
    .s_axi_awready(m_axi_awready), .s_axi_wdata(m_axi_wdata), .s_axi_wstrb(m_axi_wstrb),
    .s_axi_wlast(m_axi_wlast), .s_axi_wvalid(m_axi_wvalid), .s_axi_wready(m_axi_wready),
    .s_axi_bid(m_axi_bid), .s_axi_bresp(m_axi_bresp), .s_axi_bvalid(m_axi_bvalid),
    .s_axi_bready(m_axi_bready), .s_axi_arid(m_axi_arid), .s_axi_araddr(m_axi_araddr),
    .s_axi_arlen(m_axi_arlen), .s_axi_arsize(m_axi_arsize), .s_axi_arburst(m_axi_arburst),
    .s_axi_arvalid(m_axi_arvalid), .s_axi_arready(m_axi_arready), .s_axi_rid(m_axi_rid),
    .s_axi_rdata(m_axi_rdata), .s_axi_rresp(m_axi_rresp), .s_axi_rlast(m_axi_rlast),
    .s_axi_rvalid(m_axi_rvalid), .s_axi_rready(m_axi_rready)
);

sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) link0_tap (
    .clk(clk), .cycle(cycle), .tdata(link0_tdata), .tkeep(link0_tkeep),
    .tvalid(link0_tvalid), .tready(link0_tready), .tlast(link0_tlast),
    .tuser(link0_tuser)
);

sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) link1_tap (
    .clk(clk), .cycle(cycle), .tdata(link1_tdata), .tkeep(link1_tkeep),
    .tvalid(link1_tvalid), .tready(link1_tready), .tlast(link1_tlast),
    .tuser(link1_tuser)
);

endmodule

`resetall
