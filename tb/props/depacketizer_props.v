// The depacketizer never delivers a packet whose lengths or framing are wrong, whatever the
// link brings and whatever its CRC units say (make formal, docs/formal.md). The link is free:
// any bytes, any tkeep, tuser and tlast on any beat, valid dropped at will; the proof cuts the
// CRC units' outputs loose (any value each cycle), so it holds for any CRC verdict (the CRC
// arithmetic is beyond the solver: docs/formal.md). Beside the depacketizer this module works
// out each frame's verdict on its own, from the spec: the bytes in order (a frame whose tkeep
// is not full on every beat but the last, or not contiguous from byte 0 on the last, is
// malformed), the LRH's PktLen against the frame's length, LNH 2 or 3 and room for LRH, GRH
// and BTH, no abort (tuser). Asserted:
// - one verdict event (rcv_pkt or rcv_error) per frame, in frame order, and rcv_pkt only for a
//   frame whose checks above all pass;
// - a header is presented only for a frame that had rcv_pkt, and its payload length is at
//   most MAX_PAYLOAD.
`default_nettype none

module depacketizer_props #(
    parameter DATA_WIDTH = 64,     // link beat width in bits
    parameter MAX_PAYLOAD = 32,    // largest payload accepted: small keeps the buffers small
    parameter BUFFERS = 2          // whole-packet buffers, as the device has them
) (
    input wire                    clk,
    input wire                    rst,
    input wire [DATA_WIDTH-1:0]   s_axis_rx_tdata,
    input wire [DATA_WIDTH/8-1:0] s_axis_rx_tkeep,
    input wire                    s_axis_rx_tvalid,
    input wire                    s_axis_rx_tlast,
    input wire                    s_axis_rx_tuser,
    input wire                    s_axis_rx_tid,
    input wire [15:0]             port_lid,
    input wire [2:0]              port_lmc,
    input wire [127:0]            port_gid,
    input wire [15:0]             port_pkey,
    input wire                    m_hdr_ready,
    input wire                    m_axis_pl_tready,
    input wire                    pl_drop
);

localparam B = DATA_WIDTH / 8;

wire        s_axis_rx_tready;
wire        m_hdr_valid;
wire [12:0] m_hdr_plen;
wire        rcv_pkt, rcv_error;
/* verilator lint_off UNUSEDSIGNAL */   // decoded fields: not what this proof is about
wire [7:0]   m_hdr_opcode, m_hdr_tclass, m_hdr_hop_limit, m_hdr_syndrome;
wire         m_hdr_se, m_hdr_ackreq, m_hdr_is_global, m_hdr_internal, rcv_internal;
wire [23:0]  m_hdr_dest_qpn, m_hdr_psn, m_hdr_src_qpn, m_hdr_msn;
wire [15:0]  m_hdr_slid, m_hdr_dlid;
wire [3:0]   m_hdr_sl;
wire [19:0]  m_hdr_flow_label;
wire [127:0] m_hdr_sgid, m_hdr_dgid;
wire [47:0]  m_hdr_smac;
wire [12:0]  m_hdr_vlan;
wire [63:0]  m_hdr_raddr, m_hdr_atomic_a, m_hdr_atomic_b;
wire [31:0]  m_hdr_rkey, m_hdr_dma_len, m_hdr_qkey, m_hdr_imm;
wire [DATA_WIDTH-1:0] m_axis_pl_tdata;
wire [B-1:0] m_axis_pl_tkeep;
wire         m_axis_pl_tvalid, m_axis_pl_tlast;
wire [10:0]  rcv_pktlen;
/* verilator lint_on UNUSEDSIGNAL */

depacketizer #(.DATA_WIDTH(DATA_WIDTH), .MAX_PAYLOAD(MAX_PAYLOAD), .BUFFERS(BUFFERS)) dut (
    .clk(clk), .rst(rst),
    .s_axis_rx_tdata(s_axis_rx_tdata), .s_axis_rx_tkeep(s_axis_rx_tkeep),
    .s_axis_rx_tvalid(s_axis_rx_tvalid), .s_axis_rx_tready(s_axis_rx_tready),
    .s_axis_rx_tlast(s_axis_rx_tlast), .s_axis_rx_tuser(s_axis_rx_tuser),
    .s_axis_rx_tid(s_axis_rx_tid),
    .eth(1'b0), .port_lid(port_lid), .port_lmc(port_lmc), .port_gids({384'd0, port_gid}),
    .port_gid_vlans(52'd0), .port_mac(48'd0), .port_pkey(port_pkey),
    .m_hdr_smac(m_hdr_smac), .m_hdr_vlan(m_hdr_vlan),
    .m_hdr_valid(m_hdr_valid), .m_hdr_ready(m_hdr_ready), .m_hdr_opcode(m_hdr_opcode),
    .m_hdr_se(m_hdr_se), .m_hdr_dest_qpn(m_hdr_dest_qpn), .m_hdr_ackreq(m_hdr_ackreq),
    .m_hdr_psn(m_hdr_psn), .m_hdr_slid(m_hdr_slid), .m_hdr_dlid(m_hdr_dlid),
    .m_hdr_sl(m_hdr_sl), .m_hdr_is_global(m_hdr_is_global), .m_hdr_tclass(m_hdr_tclass),
    .m_hdr_flow_label(m_hdr_flow_label), .m_hdr_hop_limit(m_hdr_hop_limit),
    .m_hdr_sgid(m_hdr_sgid), .m_hdr_dgid(m_hdr_dgid), .m_hdr_raddr(m_hdr_raddr),
    .m_hdr_rkey(m_hdr_rkey), .m_hdr_dma_len(m_hdr_dma_len), .m_hdr_qkey(m_hdr_qkey),
    .m_hdr_src_qpn(m_hdr_src_qpn), .m_hdr_imm(m_hdr_imm), .m_hdr_syndrome(m_hdr_syndrome),
    .m_hdr_msn(m_hdr_msn), .m_hdr_atomic_a(m_hdr_atomic_a), .m_hdr_atomic_b(m_hdr_atomic_b),
    .m_hdr_plen(m_hdr_plen), .m_hdr_internal(m_hdr_internal),
    .m_axis_pl_tdata(m_axis_pl_tdata), .m_axis_pl_tkeep(m_axis_pl_tkeep),
    .m_axis_pl_tvalid(m_axis_pl_tvalid), .m_axis_pl_tready(m_axis_pl_tready),
    .m_axis_pl_tlast(m_axis_pl_tlast), .pl_drop(pl_drop),
    .rcv_pkt(rcv_pkt), .rcv_pktlen(rcv_pktlen), .rcv_error(rcv_error),
    .rcv_internal(rcv_internal)
);

reg past_valid = 1'b0;
always @(posedge clk) past_valid <= 1'b1;
always @* if (!past_valid) assume (rst);

// ---- the frame so far ----
reg [15:0] f_bytes;       // bytes so far (saturating well above any frame this proof reaches)
reg        f_global;      // LRH LNH = 3
reg        f_lnh_ok;      // LNH is 2 or 3
reg [10:0] f_pktlen;      // LRH PktLen
reg        f_bad;         // tuser, or a beat not full before the last

wire rx_fire = s_axis_rx_tvalid && s_axis_rx_tready;

// the beat's bytes appended, one at a time
reg [15:0] n_bytes;
reg        n_global, n_lnh_ok;
reg [10:0] n_pktlen;
reg        n_holey;       // tkeep on this beat is not contiguous from byte 0
reg [7:0]  byte_in;
integer    l;
always @* begin
    n_bytes = f_bytes;
    n_global = f_global;
    n_lnh_ok = f_lnh_ok;
    n_pktlen = f_pktlen;
    n_holey = 1'b0;
    for (l = 0; l < B; l = l + 1) begin
        if (l > 0 && s_axis_rx_tkeep[l] && !s_axis_rx_tkeep[l - 1])
            n_holey = 1'b1;
        if (s_axis_rx_tkeep[l]) begin
            byte_in = s_axis_rx_tdata[8 * l +: 8];
            if (n_bytes == 1) begin                // LRH byte 1: SL, 2 reserved bits, LNH
                n_global = byte_in[1:0] == 2'd3;
                n_lnh_ok = byte_in[1];
            end
            if (n_bytes == 4)                      // LRH bytes 4-5: 5 reserved bits, PktLen
                n_pktlen[10:8] = byte_in[2:0];
            if (n_bytes == 5)
                n_pktlen[7:0] = byte_in;
            if (n_bytes != 16'hFFFF)
                n_bytes = n_bytes + 16'd1;
        end
    end
end

// the frame's verdict as the spec gives it, on its last beat: PktLen counts LRH .. ICRC in
// words, and the VCRC's two bytes follow; LRH, a GRH when LNH is 3, BTH, ICRC, VCRC at least
wire ref_good = !f_bad && !s_axis_rx_tuser && !n_holey && n_lnh_ok
             && n_bytes >= (n_global ? 16'd66 : 16'd26)
             && n_bytes == {3'd0, n_pktlen, 2'b00} + 16'd2;

always @(posedge clk) begin
    if (rx_fire) begin
        if (s_axis_rx_tlast) begin
            f_bytes <= 16'd0;
            f_bad   <= 1'b0;
        end else begin
            f_bytes  <= n_bytes;
            f_global <= n_global;
            f_lnh_ok <= n_lnh_ok;
            f_pktlen <= n_pktlen;
            f_bad    <= f_bad || s_axis_rx_tuser || s_axis_rx_tkeep != {B{1'b1}};
        end
    end
    if (rst) begin
        f_bytes <= 16'd0;
        f_bad   <= 1'b0;
    end
end

// ---- verdicts owed, in frame order ----
reg [3:0] v_q;           // the spec's verdicts of frames ended and not yet judged, oldest in [0]
reg [2:0] v_n;
wire      judged = rcv_pkt || rcv_error;
always @(posedge clk) begin
    if (judged)
        v_q <= v_q >> 1;
    if (rx_fire && s_axis_rx_tlast)
        v_q[v_n - judged] <= ref_good;
    v_n <= v_n + (rx_fire && s_axis_rx_tlast) - judged;
    if (rst)
        v_n <= 3'd0;
end

// headers presented and good verdicts given
reg [7:0] hdr_n, good_n;
always @(posedge clk) begin
    hdr_n  <= hdr_n + (m_hdr_valid && m_hdr_ready);
    good_n <= good_n + rcv_pkt;
    if (rst) begin
        hdr_n  <= 8'd0;
        good_n <= 8'd0;
    end
end

always @* if (past_valid && !rst) begin
    assert (!(rcv_pkt && rcv_error));
    if (judged)
        assert (v_n != 0);
    if (rcv_pkt)
        assert (v_q[0]);
    assert (v_n <= 4);
    if (m_hdr_valid) begin
        assert (hdr_n < good_n);
        assert (m_hdr_plen <= MAX_PAYLOAD);
    end
end

endmodule

`resetall
