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
    input  wire                          desc_inv,
    input  wire                          desc_awrite,
    input  wire                          desc_cnp,
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
    input  wire [47:0]                   desc_dmac,
    input  wire [12:0]                   desc_vlan,
    input  wire                          eth,            // the port's link layer: Ethernet
    input  wire [47:0]                   port_mac,
    input  wire [15:0]                   desc_pkey,
    input  wire [23:0]                   desc_dest_qpn,
    input  wire [23:0]                   desc_psn,
    input  wire [31:0]                   desc_start,
    input  wire [31:0]                   desc_qkey,
    input  wire [23:0]                   desc_src_qpn,
    input  wire [63:0]                   desc_raddr,
    input  wire [31:0]                   desc_rkey,
    input  wire [31:0]                   desc_dma_len,
    input  wire [7:0]                    desc_syndrome,
    input  wire [23:0]                   desc_msn,
    input  wire [63:0]                   desc_atomic_a,
    input  wire [63:0]                   desc_atomic_b,
    input  wire [3:0]                    desc_rate,
    input  wire [15:0]                   cut_delay,      // cut this many cycles after a descriptor is taken (0: never)
    output reg  [15:0]                   reqs_at_cut = 16'd0, // its payload requests taken by the cut's edge
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

// The cut, made here on the RTL's clock so both simulators cut at the same edge: seen by the
// packetizer cut_delay edges after the one that took a descriptor. reqs_at_cut counts that
// descriptor's payload requests up to the cut's edge (one taken at that edge included), or
// all of them when the message ends first.
reg        cut_armed = 1'b0;
reg [15:0] cut_count = 16'd0;
wire       cut = cut_armed && cut_count == cut_delay;
wire       req_taken = pl_req_valid && pl_req_ready;
always @(posedge clk) begin
    if (desc_valid && desc_ready) begin
        cut_armed <= cut_delay != 16'd0;
        cut_count <= 16'd1;
        reqs_at_cut <= 16'd0;
    end else if (cut_armed) begin
        cut_count <= cut_count + 16'd1;
        reqs_at_cut <= reqs_at_cut + {15'd0, req_taken};
        if (cut)
            cut_armed <= 1'b0;
    end
end

// Link stalls for test_no_mover_stall, made here on the RTL's clock so the packetizer and the
// sink model agree on every handshake on both simulators: while tx_stall_en is set (by the
// test, with a nonzero tx_lfsr seed), tx_hold keeps the link not-ready in pseudo-random
// stretches: 100 .. 2147 cycles held, 1 .. 256 cycles free, or 64 .. 575 cycles of random
// per-cycle backpressure. The sink then sees tvalid only in cycles the packetizer hands over.
reg        tx_stall_en = 1'b0;
reg [31:0] tx_lfsr = 32'd1;
reg [11:0] tx_left = 12'd0;     // cycles left in the current stretch
reg        tx_random = 1'b0;    // the stretch is per-cycle random
reg        tx_hold = 1'b0;
always @(posedge clk) begin
    tx_lfsr <= {1'b0, tx_lfsr[31:1]} ^ (tx_lfsr[0] ? 32'h80200003 : 32'd0);
    if (!tx_stall_en) begin
        tx_left <= 12'd0;
        tx_hold <= 1'b0;
    end else if (tx_left == 12'd0) begin
        tx_random <= 1'b0;
        if (tx_lfsr[3:0] < 4'd6) begin
            tx_left <= 12'd100 + {1'b0, tx_lfsr[14:4]};
            tx_hold <= 1'b1;
        end else if (tx_lfsr[3:0] < 4'd11) begin
            tx_left <= {4'd0, tx_lfsr[11:4]};
            tx_hold <= 1'b0;
        end else begin
            tx_left <= 12'd64 + {3'd0, tx_lfsr[12:4]};
            tx_random <= 1'b1;
        end
    end else begin
        tx_left <= tx_left - 12'd1;
        if (tx_random)
            tx_hold <= tx_lfsr[7] & tx_lfsr[13];
    end
end

// The no-stall check, counted on the RTL's clock edge (exact on both simulators): chunk
// requests accepted whose last beat has not been taken; cycles in which one was outstanding
// while s_axis_pl_tready was low; cycles inside a chunk (after its first beat, before its last)
// in which no beat was taken (the test's payload source never pauses inside a chunk).
reg [15:0] pl_outstanding = 16'd0;
reg [31:0] pl_stall_cycles = 32'd0;
reg [63:0] pl_first_stall = 64'd0;
reg [31:0] pl_chunk_gaps = 32'd0;
reg [31:0] pl_chunks = 32'd0;
reg        pl_in_chunk = 1'b0;
wire       pl_beat = s_axis_pl_tvalid & s_axis_pl_tready;
always @(posedge clk) begin
    pl_outstanding <= pl_outstanding + {15'd0, pl_req_valid & pl_req_ready}
                      - {15'd0, pl_beat & s_axis_pl_tlast};
    if (pl_outstanding != 16'd0 && !s_axis_pl_tready) begin
        pl_stall_cycles <= pl_stall_cycles + 32'd1;
        if (pl_stall_cycles == 32'd0)
            pl_first_stall <= cycle;
    end
    if (pl_in_chunk && !pl_beat)
        pl_chunk_gaps <= pl_chunk_gaps + 32'd1;
    if (pl_beat) begin
        pl_in_chunk <= !s_axis_pl_tlast;
        if (s_axis_pl_tlast)
            pl_chunks <= pl_chunks + 32'd1;
    end
    if (rst) begin              // each test starts with a reset
        pl_outstanding <= 16'd0;
        pl_stall_cycles <= 32'd0;
        pl_chunk_gaps <= 32'd0;
        pl_chunks <= 32'd0;
        pl_in_chunk <= 1'b0;
    end
end

wire dut_tx_tvalid;
assign m_axis_tx_tvalid = dut_tx_tvalid & ~tx_hold;
reg [31:0] tx_blocked = 32'd0;  // cycles a beat waited on tx_hold
always @(posedge clk)
    if (rst)
        tx_blocked <= 32'd0;
    else if (dut_tx_tvalid && tx_hold)
        tx_blocked <= tx_blocked + 32'd1;

packetizer #(
    .DATA_WIDTH(DATA_WIDTH),
    .MAX_PAYLOAD(MAX_PAYLOAD)
) dut (
    .clk(clk),
    .rst(rst),
    .eth(eth), .port_mac(port_mac),
    .desc_valid(desc_valid),
    .desc_ready(desc_ready),
    .desc_kind(desc_kind),
    .desc_transport(desc_transport),
    .desc_imm_valid(desc_imm_valid), .desc_inv(desc_inv), .desc_awrite(desc_awrite),
    .desc_cnp(desc_cnp),
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
    .desc_dmac(desc_dmac), .desc_vlan(desc_vlan),
    .desc_pkey(desc_pkey),
    .desc_dest_qpn(desc_dest_qpn),
    .desc_psn(desc_psn),
    .desc_start(desc_start),
    .desc_qkey(desc_qkey),
    .desc_src_qpn(desc_src_qpn),
    .desc_raddr(desc_raddr),
    .desc_rkey(desc_rkey),
    .desc_dma_len(desc_dma_len),
    .desc_syndrome(desc_syndrome),
    .desc_msn(desc_msn),
    .desc_atomic_a(desc_atomic_a),
    .desc_atomic_b(desc_atomic_b),
    .desc_rate(desc_rate),
    .desc_user(1'b0),
    .cut(cut),
    .pl_req_valid(pl_req_valid),
    .pl_req_ready(pl_req_ready),
    .pl_req_offset(pl_req_offset),
    .pl_req_len(pl_req_len),
    .pl_req_user(),
    .s_axis_pl_tdata(s_axis_pl_tdata),
    .s_axis_pl_tkeep(s_axis_pl_tkeep),
    .s_axis_pl_tvalid(s_axis_pl_tvalid),
    .s_axis_pl_tready(s_axis_pl_tready),
    .s_axis_pl_tlast(s_axis_pl_tlast), .s_axis_pl_tuser(1'b0),
    .m_axis_tx_tdata(m_axis_tx_tdata),
    .m_axis_tx_tkeep(m_axis_tx_tkeep),
    .m_axis_tx_tvalid(dut_tx_tvalid),
    .m_axis_tx_tready(m_axis_tx_tready & ~tx_hold),
    .m_axis_tx_tlast(m_axis_tx_tlast),
    .m_axis_tx_tuser(m_axis_tx_tuser),
    .m_axis_tx_user(),
    .pkt_sent(pkt_sent),
    .pkt_sent_len(pkt_sent_len),
    .done(done),
    .done_psn(done_psn),
    .done_user()
);

endmodule

`resetall
