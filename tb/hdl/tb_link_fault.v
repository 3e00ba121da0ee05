// Harness for the lossy link model's unit test (tests/test_link_fault.py): a cocotbext-axi
// source drives s_axis into one sim_link_fault (`link`), whose m_axis goes to a receiver made
// here in HDL that takes a beat every cycle unless `sink_hold` is set or its generator stalls
// it (probability sink_stall_rate / 256), so Python never wakes per output beat. A link tap on
// each side (s_axis_tap: what was sent, m_axis_tap: what arrived) feeds tb/sniffer.py. Clock,
// tb_clk and the cycle counter follow tb_link_loop.v.
`timescale 1ns / 1ps
`default_nettype none

module tb_link_fault #(
    parameter DATA_WIDTH = 64,     // link data width in bits: 64, 256 or 512
    parameter DEPTH = 64           // packets the link stores
) (
    input  wire                     rst,

    input  wire [DATA_WIDTH-1:0]    s_axis_tdata,
    input  wire [DATA_WIDTH/8-1:0]  s_axis_tkeep,
    input  wire                     s_axis_tvalid,
    output wire                     s_axis_tready,
    input  wire                     s_axis_tlast,
    input  wire                     s_axis_tuser
);

reg clk = 1'b0;
always #2 clk = ~clk;

// as in tb_rdma_dev.v: the sniffers' monitors wait on tb_clk
`ifdef VERILATOR
wire tb_clk = ~clk;
`else
wire tb_clk = clk;
`endif

wire [31:0] link_depth = DEPTH;    // for the test

reg [63:0] cycle = 64'd0;
always @(posedge clk)
    cycle <= cycle + 64'd1;

wire                    link_tready;
wire [DATA_WIDTH-1:0]   m_axis_tdata;
wire [DATA_WIDTH/8-1:0] m_axis_tkeep;
wire                    m_axis_tvalid, m_axis_tlast, m_axis_tuser;

// The source runs on clk. Verilator resumes a coroutine woken by the rising edge after that
// edge's register updates, so there it gets tready registered on the same edge: the value the
// link's handshake just used (as tb_dma_mover.v does).
`ifdef VERILATOR
reg link_tready_q = 1'b0;
always @(posedge clk)
    link_tready_q <= link_tready;
assign s_axis_tready = link_tready_q;
`else
assign s_axis_tready = link_tready;
`endif

// the receiver: ready unless held or stalled by its xorshift32
reg        sink_hold = 1'b0;
reg [7:0]  sink_stall_rate = 8'd0;
reg [31:0] sink_rng = 32'h2545_F491;
wire [31:0] sink_a = sink_rng ^ (sink_rng << 13);
wire [31:0] sink_b = sink_a ^ (sink_a >> 17);
always @(posedge clk)
    if (sink_stall_rate != 8'd0)
        sink_rng <= sink_b ^ (sink_b << 5);
wire m_axis_tready = !sink_hold && !(sink_rng[7:0] < sink_stall_rate);

sim_link_fault #(.DATA_WIDTH(DATA_WIDTH), .DEPTH(DEPTH)) link (
    .clk(clk), .rst(rst), .cycle(cycle),
    .s_axis_tdata(s_axis_tdata), .s_axis_tkeep(s_axis_tkeep), .s_axis_tvalid(s_axis_tvalid),
    .s_axis_tready(link_tready), .s_axis_tlast(s_axis_tlast), .s_axis_tuser(s_axis_tuser),
    .m_axis_tdata(m_axis_tdata), .m_axis_tkeep(m_axis_tkeep), .m_axis_tvalid(m_axis_tvalid),
    .m_axis_tready(m_axis_tready), .m_axis_tlast(m_axis_tlast), .m_axis_tuser(m_axis_tuser)
);

// the taps the sniffers read (tb/sniffer.py)
sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) s_axis_tap (
    .clk(clk), .cycle(cycle), .tdata(s_axis_tdata), .tkeep(s_axis_tkeep),
    .tvalid(s_axis_tvalid), .tready(link_tready), .tlast(s_axis_tlast), .tuser(s_axis_tuser)
);

sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) m_axis_tap (
    .clk(clk), .cycle(cycle), .tdata(m_axis_tdata), .tkeep(m_axis_tkeep),
    .tvalid(m_axis_tvalid), .tready(m_axis_tready), .tlast(m_axis_tlast), .tuser(m_axis_tuser)
);

endmodule

`resetall
