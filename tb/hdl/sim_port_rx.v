// A cabled port's receive side in a harness: what the cable delivers (s_axis) and what the
// port's packet player plays (`player`, sim_pkt_player: packets the testbench queues itself, a
// fuzzer's) share the port's RX (m_axis) a whole packet at a time, the cable's first. The mux
// is combinational, so an idle player costs the cable neither a cycle nor a beat.
`timescale 1ns / 1ps
`default_nettype none

module sim_port_rx #(
    parameter DATA_WIDTH = 256     // link data width in bits
) (
    input  wire                    clk,
    input  wire                    rst,

    input  wire [DATA_WIDTH-1:0]   s_axis_tdata,
    input  wire [DATA_WIDTH/8-1:0] s_axis_tkeep,
    input  wire                    s_axis_tvalid,
    output wire                    s_axis_tready,
    input  wire                    s_axis_tlast,
    input  wire                    s_axis_tuser,

    output wire [DATA_WIDTH-1:0]   m_axis_tdata,
    output wire [DATA_WIDTH/8-1:0] m_axis_tkeep,
    output wire                    m_axis_tvalid,
    input  wire                    m_axis_tready,
    output wire                    m_axis_tlast,
    output wire                    m_axis_tuser
);

localparam KEEP_WIDTH = DATA_WIDTH / 8;

wire [DATA_WIDTH-1:0] play_tdata;
wire [KEEP_WIDTH-1:0] play_tkeep;
wire                  play_tvalid, play_tready, play_tlast, play_tuser;
wire                  from_player;  // which input the frame on m_axis came from (unused)

sim_pkt_player #(.DATA_WIDTH(DATA_WIDTH)) player (
    .clk(clk), .rst(rst),
    .m_axis_tdata(play_tdata), .m_axis_tkeep(play_tkeep), .m_axis_tvalid(play_tvalid),
    .m_axis_tready(play_tready), .m_axis_tlast(play_tlast), .m_axis_tuser(play_tuser)
);

axis_frame_mux #(.DATA_WIDTH(DATA_WIDTH)) mux (
    .clk(clk), .rst(rst),
    .s_axis_tdata({play_tdata, s_axis_tdata}),
    .s_axis_tkeep({play_tkeep, s_axis_tkeep}),
    .s_axis_tvalid({play_tvalid, s_axis_tvalid}),
    .s_axis_tready({play_tready, s_axis_tready}),
    .s_axis_tlast({play_tlast, s_axis_tlast}),
    .s_axis_tuser({play_tuser, s_axis_tuser}),
    .m_axis_tdata(m_axis_tdata), .m_axis_tkeep(m_axis_tkeep), .m_axis_tvalid(m_axis_tvalid),
    .m_axis_tready(m_axis_tready), .m_axis_tlast(m_axis_tlast), .m_axis_tuser(m_axis_tuser),
    .m_axis_tid(from_player)
);

endmodule

`resetall
