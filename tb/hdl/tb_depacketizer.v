// Simulation harness for the depacketizer: makes the clock in Verilog, counts cycles, and feeds
// the depacketizer's RX link either from the testbench (s_axis_rx_*) or, with loop_sel set, from
// a real packetizer's TX link, so packets built by rtl/port/pkt_header.v are checked end to end.
//
// Sampling convention: the Python models run on the rising edge of clk on both simulators. A
// coroutine woken by that edge resumes, on Verilator, after the edge's register updates, so
// there the models are given copies of the DUT outputs registered on the same edge, which show
// exactly the pre-edge values (as tb/hdl/tb_dma_mover.v does); under Icarus they read the
// outputs themselves, which at that moment still hold the pre-edge values.
`timescale 1ns / 1ps
`default_nettype none

module tb_depacketizer #(
    parameter DATA_WIDTH = 256,   // link and payload beat width in bits
    parameter MAX_PAYLOAD = 4096, // largest payload in bytes
    parameter BUFFERS = 2         // depacketizer packet buffers
) (
    input  wire                     rst,
    input  wire                     loop_sel,       // 1: the RX link comes from the packetizer
    input  wire                     loop_tid,       // s_axis_rx_tid while loop_sel

    // RX link from the testbench
    input  wire [DATA_WIDTH-1:0]    s_axis_rx_tdata,
    input  wire [DATA_WIDTH/8-1:0]  s_axis_rx_tkeep,
    input  wire                     s_axis_rx_tvalid,
    output wire                     s_axis_rx_tready,
    input  wire                     s_axis_rx_tlast,
    input  wire                     s_axis_rx_tuser,
    input  wire                     s_axis_rx_tid,

    input  wire [15:0]              port_lid,
    input  wire [2:0]               port_lmc,
    input  wire [127:0]             port_gid,           // GID table entry 0 ...
    input  wire [3*128-1:0]         port_gids_more,     // ... and 1 to 3
    input  wire [4*13-1:0]          port_gid_vlans,
    input  wire                     eth,                // the link layer: Ethernet (both ends)
    input  wire [47:0]              port_mac,
    input  wire [15:0]              port_pkey,

    output wire                     m_hdr_valid,
    input  wire                     m_hdr_ready,
    output wire [7:0]               m_hdr_opcode,
    output wire                     m_hdr_se,
    output wire [23:0]              m_hdr_dest_qpn,
    output wire                     m_hdr_ackreq,
    output wire [23:0]              m_hdr_psn,
    output wire [15:0]              m_hdr_slid,
    output wire [15:0]              m_hdr_dlid,
    output wire [3:0]               m_hdr_sl,
    output wire                     m_hdr_is_global,
    output wire [7:0]               m_hdr_tclass,
    output wire [19:0]              m_hdr_flow_label,
    output wire [7:0]               m_hdr_hop_limit,
    output wire [127:0]             m_hdr_sgid,
    output wire [127:0]             m_hdr_dgid,
    output wire [47:0]              m_hdr_smac,
    output wire [12:0]              m_hdr_vlan,
    output wire [63:0]              m_hdr_raddr,
    output wire [31:0]              m_hdr_rkey,
    output wire [31:0]              m_hdr_dma_len,
    output wire [31:0]              m_hdr_qkey,
    output wire [23:0]              m_hdr_src_qpn,
    output wire [31:0]              m_hdr_imm,
    output wire [7:0]               m_hdr_syndrome,
    output wire [23:0]              m_hdr_msn,
    output wire [63:0]              m_hdr_atomic_a,
    output wire [63:0]              m_hdr_atomic_b,
    output wire [12:0]              m_hdr_plen,
    output wire                     m_hdr_internal,

    output wire [DATA_WIDTH-1:0]    m_axis_pl_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_pl_tkeep,
    output wire                     m_axis_pl_tvalid,
    input  wire                     m_axis_pl_tready,
    output wire                     m_axis_pl_tlast,
    input  wire                     pl_drop,

    output wire                     rcv_pkt,
    output wire [10:0]              rcv_pktlen,
    output wire                     rcv_error,
    output wire                     rcv_ce,
    output wire                     rcv_internal,
    output wire                     rx_stall,       // the link had a beat and was not ready
    output wire                     rx_beat,        // a beat went in

    // the packetizer (loop_sel): descriptor, payload chunk requests and the chunks
    input  wire                     desc_valid,
    output wire                     desc_ready,
    output wire                     desc_done,      // the packetizer's message left whole
    input  wire [2:0]               desc_kind,
    input  wire [2:0]               desc_transport,
    input  wire                     desc_imm_valid,
    input  wire                     desc_inv,
    input  wire                     desc_awrite,
    input  wire                     desc_cnp,
    input  wire [31:0]              desc_imm,
    input  wire                     desc_solicited,
    input  wire [31:0]              desc_len,
    input  wire [2:0]               desc_mtu,
    input  wire [15:0]              desc_dlid,
    input  wire [15:0]              desc_slid,
    input  wire [3:0]               desc_sl,
    input  wire                     desc_is_global,
    input  wire [7:0]               desc_tclass,
    input  wire [19:0]              desc_flow_label,
    input  wire [7:0]               desc_hop_limit,
    input  wire [127:0]             desc_sgid,
    input  wire [127:0]             desc_dgid,
    input  wire [47:0]              desc_dmac,
    input  wire [12:0]              desc_vlan,
    input  wire [15:0]              desc_pkey,
    input  wire [23:0]              desc_dest_qpn,
    input  wire [23:0]              desc_psn,
    input  wire [31:0]              desc_qkey,
    input  wire [23:0]              desc_src_qpn,
    input  wire [63:0]              desc_raddr,
    input  wire [31:0]              desc_rkey,
    input  wire [31:0]              desc_dma_len,
    input  wire [7:0]               desc_syndrome,
    input  wire [23:0]              desc_msn,
    input  wire [63:0]              desc_atomic_a,
    input  wire [63:0]              desc_atomic_b,
    output wire                     tx_req_valid,
    output wire [31:0]              tx_req_offset,
    output wire [12:0]              tx_req_len,
    input  wire [DATA_WIDTH-1:0]    tx_pl_tdata,
    input  wire [DATA_WIDTH/8-1:0]  tx_pl_tkeep,
    input  wire                     tx_pl_tvalid,
    output wire                     tx_pl_tready,
    input  wire                     tx_pl_tlast
);

// 250 MHz: a 4 ns period.
reg clk = 1'b0;
always #2 clk = ~clk;

// Free-running cycle counter.
reg [63:0] cycle = 64'd0;
always @(posedge clk) cycle <= cycle + 64'd1;

// ------------------------------------------------------------------------------------------
// The packetizer, its TX link into the depacketizer when loop_sel

wire [DATA_WIDTH-1:0]   ptx_tdata;
wire [DATA_WIDTH/8-1:0] ptx_tkeep;
wire                    ptx_tvalid, ptx_tlast, ptx_tuser;
wire                    rx_tready;
wire                    ptx_pkt_sent_unused, ptx_done;
wire [10:0]             ptx_pkt_len_unused;
wire [23:0]             ptx_done_psn_unused;
wire                    d_desc_ready, d_req_valid, d_pl_tready;
wire [31:0]             d_req_offset;
wire [12:0]             d_req_len;

packetizer #(.DATA_WIDTH(DATA_WIDTH), .MAX_PAYLOAD(MAX_PAYLOAD)) pktz (
    .clk(clk), .rst(rst), .eth(eth), .port_mac(48'h02_00_00_00_00_FE),
    .desc_dmac(desc_dmac), .desc_vlan(desc_vlan),
    .desc_valid(desc_valid), .desc_ready(d_desc_ready),
    .desc_kind(desc_kind), .desc_transport(desc_transport), .desc_imm_valid(desc_imm_valid),
    .desc_inv(desc_inv), .desc_awrite(desc_awrite), .desc_cnp(desc_cnp), .desc_imm(desc_imm), .desc_solicited(desc_solicited), .desc_len(desc_len),
    .desc_mtu(desc_mtu), .desc_dlid(desc_dlid), .desc_slid(desc_slid), .desc_sl(desc_sl),
    .desc_is_global(desc_is_global), .desc_tclass(desc_tclass),
    .desc_flow_label(desc_flow_label), .desc_hop_limit(desc_hop_limit), .desc_sgid(desc_sgid),
    .desc_dgid(desc_dgid), .desc_pkey(desc_pkey), .desc_dest_qpn(desc_dest_qpn),
    .desc_psn(desc_psn), .desc_start(32'd0), .desc_qkey(desc_qkey), .desc_src_qpn(desc_src_qpn),
    .desc_raddr(desc_raddr), .desc_rkey(desc_rkey), .desc_dma_len(desc_dma_len),
    .desc_syndrome(desc_syndrome), .desc_msn(desc_msn), .desc_atomic_a(desc_atomic_a),
    .desc_atomic_b(desc_atomic_b), .desc_rate(4'd0), .desc_user(1'b0), .cut(1'b0),
    .pl_req_valid(d_req_valid), .pl_req_ready(1'b1), .pl_req_offset(d_req_offset),
    .pl_req_len(d_req_len), .pl_req_user(),
    .s_axis_pl_tdata(tx_pl_tdata), .s_axis_pl_tkeep(tx_pl_tkeep),
    .s_axis_pl_tvalid(tx_pl_tvalid), .s_axis_pl_tready(d_pl_tready),
    .s_axis_pl_tlast(tx_pl_tlast), .s_axis_pl_tuser(1'b0),
    .m_axis_tx_tdata(ptx_tdata), .m_axis_tx_tkeep(ptx_tkeep), .m_axis_tx_tvalid(ptx_tvalid),
    .m_axis_tx_tready(loop_sel & rx_tready), .m_axis_tx_tlast(ptx_tlast),
    .m_axis_tx_tuser(ptx_tuser), .m_axis_tx_user(),
    .pkt_sent(ptx_pkt_sent_unused), .pkt_sent_len(ptx_pkt_len_unused),
    .done(ptx_done), .done_psn(ptx_done_psn_unused), .done_user()
);

// ------------------------------------------------------------------------------------------
// The depacketizer

wire [DATA_WIDTH-1:0]   rx_tdata = loop_sel ? ptx_tdata : s_axis_rx_tdata;
wire [DATA_WIDTH/8-1:0] rx_tkeep = loop_sel ? ptx_tkeep : s_axis_rx_tkeep;
wire rx_tvalid = loop_sel ? ptx_tvalid : s_axis_rx_tvalid;
wire rx_tlast = loop_sel ? ptx_tlast : s_axis_rx_tlast;
wire rx_tuser = loop_sel ? ptx_tuser : s_axis_rx_tuser;
wire rx_tid = loop_sel ? loop_tid : s_axis_rx_tid;

wire                    d_hdr_valid;
wire [7:0]              d_opcode;
wire                    d_se;
wire [23:0]             d_dest_qpn;
wire                    d_ackreq;
wire [23:0]             d_psn;
wire [15:0]             d_slid, d_dlid;
wire [3:0]              d_sl;
wire                    d_is_global;
wire [7:0]              d_tclass;
wire [19:0]             d_flow_label;
wire [7:0]              d_hop_limit;
wire [127:0]            d_sgid, d_dgid;
wire [47:0]             d_smac;
wire [12:0]             d_vlan;
wire [63:0]             d_raddr;
wire [31:0]             d_rkey, d_dma_len, d_qkey;
wire [23:0]             d_src_qpn;
wire [31:0]             d_imm;
wire [7:0]              d_syndrome;
wire [23:0]             d_msn;
wire [63:0]             d_atomic_a, d_atomic_b;
wire [12:0]             d_plen;
wire                    d_internal;
wire [DATA_WIDTH-1:0]   d_pl_tdata;
wire [DATA_WIDTH/8-1:0] d_pl_tkeep;
wire                    d_pl_tvalid, d_pl_tlast;
wire                    d_rcv_pkt, d_rcv_error, d_rcv_ce, d_rcv_internal;
wire [10:0]             d_rcv_pktlen;

depacketizer #(.DATA_WIDTH(DATA_WIDTH), .MAX_PAYLOAD(MAX_PAYLOAD), .BUFFERS(BUFFERS), .NUM_GIDS(4)) dut (
    .clk(clk), .rst(rst),
    .s_axis_rx_tdata(rx_tdata), .s_axis_rx_tkeep(rx_tkeep), .s_axis_rx_tvalid(rx_tvalid),
    .s_axis_rx_tready(rx_tready), .s_axis_rx_tlast(rx_tlast), .s_axis_rx_tuser(rx_tuser),
    .s_axis_rx_tid(rx_tid),
    .eth(eth), .port_lid(port_lid), .port_lmc(port_lmc), .port_gids({port_gids_more, port_gid}),
    .port_gid_vlans(port_gid_vlans), .port_mac(port_mac), .port_pkey(port_pkey),
    .m_hdr_smac(d_smac), .m_hdr_vlan(d_vlan),
    .m_hdr_valid(d_hdr_valid), .m_hdr_ready(m_hdr_ready),
    .m_hdr_opcode(d_opcode), .m_hdr_se(d_se), .m_hdr_dest_qpn(d_dest_qpn),
    .m_hdr_ackreq(d_ackreq), .m_hdr_psn(d_psn), .m_hdr_slid(d_slid), .m_hdr_dlid(d_dlid),
    .m_hdr_sl(d_sl), .m_hdr_is_global(d_is_global), .m_hdr_tclass(d_tclass),
    .m_hdr_flow_label(d_flow_label), .m_hdr_hop_limit(d_hop_limit), .m_hdr_sgid(d_sgid),
    .m_hdr_dgid(d_dgid), .m_hdr_raddr(d_raddr), .m_hdr_rkey(d_rkey), .m_hdr_dma_len(d_dma_len),
    .m_hdr_qkey(d_qkey), .m_hdr_src_qpn(d_src_qpn), .m_hdr_imm(d_imm),
    .m_hdr_syndrome(d_syndrome), .m_hdr_msn(d_msn), .m_hdr_atomic_a(d_atomic_a),
    .m_hdr_atomic_b(d_atomic_b), .m_hdr_plen(d_plen),
    .m_hdr_internal(d_internal),
    .m_axis_pl_tdata(d_pl_tdata), .m_axis_pl_tkeep(d_pl_tkeep), .m_axis_pl_tvalid(d_pl_tvalid),
    .m_axis_pl_tready(m_axis_pl_tready), .m_axis_pl_tlast(d_pl_tlast), .pl_drop(pl_drop),
    .rcv_pkt(d_rcv_pkt), .rcv_pktlen(d_rcv_pktlen), .rcv_error(d_rcv_error),
    .rcv_ce(d_rcv_ce), .rcv_internal(d_rcv_internal)
);

wire d_rx_tready = ~loop_sel & rx_tready;
wire d_rx_stall = rx_tvalid & ~rx_tready;
wire d_rx_beat = rx_tvalid & rx_tready;

// ------------------------------------------------------------------------------------------
// What the Python side reads

localparam OUT_W = 1 + 8 + 1 + 24 + 1 + 24 + 16 + 16 + 4 + 1 + 8 + 20 + 8 + 128 + 128 + 48 + 13 + 64 + 32
                 + 32 + 32 + 24 + 32 + 8 + 24 + 64 + 64 + 13 + 1
                 + DATA_WIDTH + DATA_WIDTH / 8 + 1 + 1
                 + 1 + 11 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 32 + 13 + 1;
wire [OUT_W-1:0] outs = {
    d_hdr_valid, d_opcode, d_se, d_dest_qpn, d_ackreq, d_psn, d_slid, d_dlid, d_sl, d_is_global,
    d_tclass, d_flow_label, d_hop_limit, d_sgid, d_dgid, d_smac, d_vlan, d_raddr, d_rkey, d_dma_len, d_qkey,
    d_src_qpn, d_imm, d_syndrome, d_msn, d_atomic_a, d_atomic_b, d_plen, d_internal,
    d_pl_tdata, d_pl_tkeep, d_pl_tvalid, d_pl_tlast,
    d_rcv_pkt, d_rcv_pktlen, d_rcv_error, d_rcv_ce, d_rcv_internal, d_rx_tready, d_rx_stall, d_rx_beat,
    d_desc_ready, ptx_done, d_req_offset, d_req_len, d_req_valid};
wire [OUT_W-1:0] seen;

`ifdef VERILATOR
reg [OUT_W-1:0] outs_q = {OUT_W{1'b0}};
reg             pl_tready_q = 1'b0;
always @(posedge clk) begin
    outs_q <= outs;
    pl_tready_q <= d_pl_tready;
end
assign seen = outs_q;
assign tx_pl_tready = pl_tready_q;
`else
assign seen = outs;
assign tx_pl_tready = d_pl_tready;
`endif

assign {
    m_hdr_valid, m_hdr_opcode, m_hdr_se, m_hdr_dest_qpn, m_hdr_ackreq, m_hdr_psn, m_hdr_slid,
    m_hdr_dlid, m_hdr_sl, m_hdr_is_global, m_hdr_tclass, m_hdr_flow_label, m_hdr_hop_limit,
    m_hdr_sgid, m_hdr_dgid, m_hdr_smac, m_hdr_vlan, m_hdr_raddr, m_hdr_rkey, m_hdr_dma_len, m_hdr_qkey, m_hdr_src_qpn,
    m_hdr_imm, m_hdr_syndrome, m_hdr_msn, m_hdr_atomic_a, m_hdr_atomic_b, m_hdr_plen,
    m_hdr_internal,
    m_axis_pl_tdata, m_axis_pl_tkeep, m_axis_pl_tvalid, m_axis_pl_tlast,
    rcv_pkt, rcv_pktlen, rcv_error, rcv_ce, rcv_internal, s_axis_rx_tready, rx_stall, rx_beat,
    desc_ready, desc_done, tx_req_offset, tx_req_len, tx_req_valid} = seen;

endmodule

`resetall
