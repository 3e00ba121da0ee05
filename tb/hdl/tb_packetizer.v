// Simulation harness for the packetizer: makes the clock in Verilog (much faster than a cocotb
// Clock under Icarus), counts cycles, and passes every port through.
`timescale 1ns / 1ps
`default_nettype none

module tb_packetizer #(
    parameter DATA_WIDTH = 64,     // link and payload beat width in bits
    parameter MAX_PAYLOAD = 4096   // largest path MTU in bytes
) (
    input  wire                     rst,
    input  wire                          desc_valid,
    output wire                          desc_ready,
    input  wire [2:0]                    desc_kind,
    input  wire [2:0]                    desc_transport,
    input  wire                          desc_imm_valid,
    input  wire [31:0]                   desc_imm,
    input  wire                          desc_solicited,
    input  wire [31:0]                   desc_len,
    input  wire [2:0]                    desc_mtu,
    input  wire [15:0]                   desc_dlid,
    input  wire [15:0]                   desc_slid,
    input  wire [3:0]                    desc_sl,
    input  wire                          desc_is_global,
    input  wire [7:0]                    desc_tclass,
    input  wire [19:0]                   desc_flow_label,
    input  wire [7:0]                    desc_hop_limit,
    input  wire [127:0]                  desc_sgid,
    input  wire [127:0]                  desc_dgid,
    input  wire [15:0]                   desc_pkey,
    input  wire [23:0]                   desc_dest_qpn,
    input  wire [23:0]                   desc_psn,
    input  wire [31:0]                   desc_qkey,
    input  wire [23:0]                   desc_src_qpn,
    input  wire [63:0]                   desc_raddr,
    input  wire [31:0]                   desc_rkey,
    input  wire [31:0]                   desc_dma_len,
    input  wire [7:0]                    desc_syndrome,
    input  wire [23:0]                   desc_msn,
    input  wire [3:0]                    desc_rate,
    output wire                          pl_req_valid,
    input  wire                          pl_req_ready,
    output wire [31:0]                   pl_req_offset,
    output wire [12:0]                   pl_req_len,
    input  wire [DATA_WIDTH-1:0]         s_axis_pl_tdata,
    input  wire [DATA_WIDTH/8-1:0]       s_axis_pl_tkeep,
    input  wire                          s_axis_pl_tvalid,
    output wire                          s_axis_pl_tready,
    input  wire                          s_axis_pl_tlast,
    output wire [DATA_WIDTH-1:0]         m_axis_tx_tdata,
    output wire [DATA_WIDTH/8-1:0]       m_axis_tx_tkeep,
    output wire                          m_axis_tx_tvalid,
    input  wire                          m_axis_tx_tready,
    output wire                          m_axis_tx_tlast,
    output wire                          m_axis_tx_tuser,
    output wire                          pkt_sent,
    output wire [10:0]                   pkt_sent_len,
    output wire                          done,
    output wire [23:0]                   done_psn
);

// 250 MHz: a 4 ns period.
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

// Free-running cycle counter, for gap and throughput measurements.
reg [63:0] cycle = 64'd0;
always @(posedge clk) cycle <= cycle + 64'd1;

packetizer #(
    .DATA_WIDTH(DATA_WIDTH),
    .MAX_PAYLOAD(MAX_PAYLOAD)
) dut (
    .clk(clk),
    .rst(rst),
    .desc_valid(desc_valid),
    .desc_ready(desc_ready),
    .desc_kind(desc_kind),
    .desc_transport(desc_transport),
    .desc_imm_valid(desc_imm_valid),
    .desc_imm(desc_imm),
    .desc_solicited(desc_solicited),
    .desc_len(desc_len),
    .desc_mtu(desc_mtu),
    .desc_dlid(desc_dlid),
    .desc_slid(desc_slid),
    .desc_sl(desc_sl),
    .desc_is_global(desc_is_global),
    .desc_tclass(desc_tclass),
    .desc_flow_label(desc_flow_label),
    .desc_hop_limit(desc_hop_limit),
    .desc_sgid(desc_sgid),
    .desc_dgid(desc_dgid),
    .desc_pkey(desc_pkey),
    .desc_dest_qpn(desc_dest_qpn),
    .desc_psn(desc_psn),
    .desc_qkey(desc_qkey),
    .desc_src_qpn(desc_src_qpn),
    .desc_raddr(desc_raddr),
    .desc_rkey(desc_rkey),
    .desc_dma_len(desc_dma_len),
    .desc_syndrome(desc_syndrome),
    .desc_msn(desc_msn),
    .desc_rate(desc_rate),
    .pl_req_valid(pl_req_valid),
    .pl_req_ready(pl_req_ready),
    .pl_req_offset(pl_req_offset),
    .pl_req_len(pl_req_len),
    .s_axis_pl_tdata(s_axis_pl_tdata),
    .s_axis_pl_tkeep(s_axis_pl_tkeep),
    .s_axis_pl_tvalid(s_axis_pl_tvalid),
    .s_axis_pl_tready(s_axis_pl_tready),
    .s_axis_pl_tlast(s_axis_pl_tlast),
    .m_axis_tx_tdata(m_axis_tx_tdata),
    .m_axis_tx_tkeep(m_axis_tx_tkeep),
    .m_axis_tx_tvalid(m_axis_tx_tvalid),
    .m_axis_tx_tready(m_axis_tx_tready),
    .m_axis_tx_tlast(m_axis_tx_tlast),
    .m_axis_tx_tuser(m_axis_tx_tuser),
    .pkt_sent(pkt_sent),
    .pkt_sent_len(pkt_sent_len),
    .done(done),
    .done_psn(done_psn)
);

endmodule

`resetall
