// Harness for the link sniffer's self-test: one AXI-Stream link from s_axis to m_axis through a
// register stage, so m_axis changes on the clock edge like a device's TX link does (the case
// where sampling on the wrong edge under Verilator goes wrong). Clock, tb_clk and the cycle
// counter follow the rdma_dev harness (tb_rdma_dev.v).
`timescale 1ns / 1ps
`default_nettype none

module tb_link_loop #(
    parameter DATA_WIDTH = 64
) (
    input  wire                     rst,

    input  wire [DATA_WIDTH-1:0]    s_axis_tdata,
    input  wire [DATA_WIDTH/8-1:0]  s_axis_tkeep,
    input  wire                     s_axis_tvalid,
    output wire                     s_axis_tready,
    input  wire                     s_axis_tlast,
    input  wire                     s_axis_tuser,

    output wire [DATA_WIDTH-1:0]    m_axis_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_tkeep,
    output wire                     m_axis_tvalid,
    input  wire                     m_axis_tready,
    output wire                     m_axis_tlast,
    output wire                     m_axis_tuser
);

reg clk = 1'b0;
always #2 clk = ~clk;

// as in tb_rdma_dev.v: bus models sample on the falling edge under Verilator
`ifdef VERILATOR
wire tb_clk = ~clk;
`else
wire tb_clk = clk;
`endif

reg [63:0] cycle = 64'd0;
always @(posedge clk)
    cycle <= cycle + 64'd1;

// one register stage; it takes a beat whenever it is empty or its beat leaves
reg [DATA_WIDTH-1:0]   data_q = {DATA_WIDTH{1'b0}};
reg [DATA_WIDTH/8-1:0] keep_q = {DATA_WIDTH/8{1'b0}};
reg                    valid_q = 1'b0;
reg                    last_q = 1'b0;
reg                    user_q = 1'b0;

assign s_axis_tready = !valid_q || m_axis_tready;

always @(posedge clk) begin
    if (s_axis_tready) begin
        valid_q <= s_axis_tvalid;
        data_q <= s_axis_tdata;
        keep_q <= s_axis_tkeep;
        last_q <= s_axis_tlast;
        user_q <= s_axis_tuser;
    end
    if (rst)
        valid_q <= 1'b0;
end

assign m_axis_tdata  = data_q;
assign m_axis_tkeep  = keep_q;
assign m_axis_tvalid = valid_q;
assign m_axis_tlast  = last_q;
assign m_axis_tuser  = user_q;

// the tap the sniffer reads (tb/sniffer.py)
sim_link_tap #(.DATA_WIDTH(DATA_WIDTH)) m_axis_tap (
    .clk(clk), .cycle(cycle), .tdata(m_axis_tdata), .tkeep(m_axis_tkeep),
    .tvalid(m_axis_tvalid), .tready(m_axis_tready), .tlast(m_axis_tlast), .tuser(m_axis_tuser)
);

endmodule

`resetall
