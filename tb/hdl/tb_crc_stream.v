// Simulation harness for the CRC blocks: makes the clock in Verilog (much faster than a cocotb
// Clock) and passes two streams through.
//   icrc: a packet stream (LRH through pad) into ib_icrc, which gives the ICRC with the last beat.
//   crc:  a raw byte stream into two crc_stream instances side by side, CRC-32 (the ICRC
//         function without masking, i.e. zlib.crc32) and CRC-16 (the VCRC function).
`timescale 1ns / 1ps
`default_nettype none

module tb_crc_stream #(
    parameter DATA_WIDTH = 64      // beat width in bits
) (
    input  wire                     rst,

    input  wire                     icrc_eth,       // the ICRC of RoCE v2 frames
    input  wire                     icrc_valid,
    input  wire [DATA_WIDTH-1:0]    icrc_data,
    input  wire [DATA_WIDTH/8-1:0]  icrc_keep,
    input  wire                     icrc_last,
    output wire [31:0]              icrc,
    output wire                     icrc_out_valid,

    input  wire                     crc_valid,
    input  wire                     crc_first,
    input  wire [DATA_WIDTH-1:0]    crc_data,
    input  wire [DATA_WIDTH/8-1:0]  crc_keep,
    output wire [31:0]              crc32,
    output wire [15:0]              crc16
);

// 250 MHz: a 4 ns period.
reg clk = 1'b0;
always #2 clk = ~clk;

// The testbench drives inputs on the falling edge and reads the combinational CRC outputs
// after ReadOnly in that same time step: it never samples right after a rising edge, where
// a Verilator build would show post-edge values.

ib_icrc #(
    .DATA_WIDTH(DATA_WIDTH)
) dut_icrc (
    .clk(clk),
    .rst(rst),
    .eth(icrc_eth),
    .s_valid(icrc_valid), .s_data(icrc_data), .s_keep(icrc_keep), .s_last(icrc_last),
    .m_icrc(icrc), .m_icrc_valid(icrc_out_valid)
);

crc_stream #(
    .DATA_WIDTH(DATA_WIDTH),
    .CRC_WIDTH(32),
    .POLY(32'hEDB88320),
    .INIT(32'hFFFFFFFF),
    .XOR_OUT(32'hFFFFFFFF)
) dut_crc32 (
    .clk(clk),
    .rst(rst),
    .s_valid(crc_valid), .s_first(crc_first), .s_data(crc_data), .s_keep(crc_keep),
    .m_crc(crc32)
);

crc_stream #(
    .DATA_WIDTH(DATA_WIDTH),
    .CRC_WIDTH(16),
    .POLY(16'hD008),
    .INIT(16'hFFFF),
    .XOR_OUT(16'hFFFF)
) dut_crc16 (
    .clk(clk),
    .rst(rst),
    .s_valid(crc_valid), .s_first(crc_first), .s_data(crc_data), .s_keep(crc_keep),
    .m_crc(crc16)
);

endmodule

`resetall
