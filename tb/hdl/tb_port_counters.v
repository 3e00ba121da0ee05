// Simulation harness for port_counters: makes the clock in Verilog (much faster than a cocotb
// Clock) and passes every other port through.
`timescale 1ns / 1ps
`default_nettype none

module tb_port_counters #(
    parameter PKTLEN_WIDTH = 11    // LRH PktLen width
) (
    input  wire                     rst,

    input  wire                     xmit_pkt,
    input  wire [PKTLEN_WIDTH-1:0]  xmit_pktlen,
    input  wire                     rcv_pkt,
    input  wire [PKTLEN_WIDTH-1:0]  rcv_pktlen,
    input  wire                     rcv_error,
    input  wire                     xmit_discard,
    input  wire                     rcv_ce,
    input  wire                     cnp_sent,
    input  wire                     cnp_handled,
    input  wire                     clear,

    input  wire [4:0]               rd_index,
    output wire [31:0]              rd_data,
    input  wire                     wr_en,
    input  wire [4:0]               wr_index,
    input  wire [31:0]              wr_data
);

// 250 MHz: a 4 ns period.
reg clk = 1'b0;
always #2 clk = ~clk;

// The testbench drives inputs on the falling edge and reads rd_data (combinational) after
// ReadOnly in that time step, never right after a rising edge, where a Verilator build would
// show post-edge values.

port_counters #(
    .PKTLEN_WIDTH(PKTLEN_WIDTH)
) dut (
    .clk(clk),
    .rst(rst),
    .xmit_pkt(xmit_pkt), .xmit_pktlen(xmit_pktlen),
    .rcv_pkt(rcv_pkt), .rcv_pktlen(rcv_pktlen),
    .rcv_error(rcv_error), .xmit_discard(xmit_discard),
    .rcv_ce(rcv_ce), .cnp_sent(cnp_sent), .cnp_handled(cnp_handled),
    .clear(clear),
    .rd_index(rd_index), .rd_data(rd_data),
    .wr_en(wr_en), .wr_index(wr_index), .wr_data(wr_data)
);

endmodule

`resetall
