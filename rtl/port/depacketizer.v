// Depacketizer (one per port): the RX link's packets, checked, to decoded headers and payload
// (docs/packet-path.md). The port's link layer is InfiniBand (LRH .. VCRC) or Ethernet (a
// RoCE v2 frame: Ethernet .. IP .. UDP .. BTH .. ICRC, padding, FCS).
//
// Structure, in the order a packet flows:
//   write    every beat of a frame goes into one of BUFFERS packet buffers (a ring) as it
//            arrives, while crc_stream (the VCRC or the FCS, over the whole frame) and ib_icrc
//            (the ICRC) run over it and the first 106 bytes are captured into a header
//            register. Both CRCs are checked by their residue: a CRC run over a message and its
//            own CRC (least-significant byte first) ends on a constant.
//   verdict  the cycle after tlast, every check on the captured header and the frame's length
//            (parallel, no chain through the fields): good or bad, the rcv_* event, and for a
//            good packet its decoded fields into the buffer's header slot.
//   header   buffers are served in ring order. A bad one is skipped (nothing of it is
//            presented). A good one's header is loaded into the m_hdr_* registers once the
//            previous packet's payload has left (headers and payloads strictly alternate).
//   fetch    independently, and up to the output register ahead of the header handshake, the
//            payload is read from the buffer: output beat k is bytes hdr_len + k*B .. + B - 1,
//            i.e. two adjacent buffer words (two read ports) through one shifter by
//            hdr_len mod B. A buffer is free again once both its header and its last payload
//            word have been taken.
// The input never waits on the output directly: s_axis_rx_tready is "the next buffer in the ring
// is free", a register. With BUFFERS = 2 and a consumer that takes headers and payload at once, a
// buffer is free exactly when the link starts the packet after next, for the shortest header
// (20 bytes) and a full 4096-byte payload, so back-to-back maximum packets stream without a gap.
`ifndef RDMA_DEPACKETIZER_V
`define RDMA_DEPACKETIZER_V
`default_nettype none

module depacketizer #(
    parameter DATA_WIDTH = 256,   // link and payload beat width in bits: 64, 128, 256 or 512
    parameter MAX_PAYLOAD = 4096, // largest payload accepted in bytes (path MTU)
    parameter BUFFERS = 2,        // whole-packet buffers: the link keeps arriving while one drains
    parameter NUM_GIDS = 4        // entries of the port's GID table
) (
    input  wire clk,
    input  wire rst,

    // RX link: one packet per frame, LRH byte 0 in tdata[7:0] of the first beat, tkeep
    // contiguous from byte 0, tlast on the beat with the VCRC's last byte; tuser (on any beat,
    // sampled with tlast) = sender aborted the packet
    input  wire [DATA_WIDTH-1:0]    s_axis_rx_tdata,
    input  wire [DATA_WIDTH/8-1:0]  s_axis_rx_tkeep,
    input  wire                     s_axis_rx_tvalid,
    output wire                     s_axis_rx_tready,
    input  wire                     s_axis_rx_tlast,
    input  wire                     s_axis_rx_tuser,
    input  wire                     s_axis_rx_tid,      // 1: the frame came from the internal loopback

    // the port: its link layer and own addresses
    input  wire                     eth,                // 0 InfiniBand, 1 Ethernet (RoCE v2)
    input  wire [15:0]              port_lid,
    input  wire [2:0]               port_lmc,
    input  wire [NUM_GIDS*128-1:0]  port_gids,          // the GID table (an all-zero entry is empty)
    input  wire [NUM_GIDS*13-1:0]   port_gid_vlans,     // Ethernet: each entry's VLAN ([12] tagged)
    input  wire [47:0]              port_mac,
    input  wire [15:0]              port_pkey,

    // header of a good packet (valid/ready; stays stable while valid)
    output wire                     m_hdr_valid,
    input  wire                     m_hdr_ready,
    output wire [7:0]               m_hdr_opcode,
    output wire                     m_hdr_se,           // BTH solicited event
    output wire [23:0]              m_hdr_dest_qpn,
    output wire                     m_hdr_ackreq,
    output wire [23:0]              m_hdr_psn,
    output wire [15:0]              m_hdr_slid,
    output wire [15:0]              m_hdr_dlid,
    output wire [3:0]               m_hdr_sl,           // Ethernet: the 802.1Q PCP
    output wire                     m_hdr_is_global,    // the packet had a GRH (always on Ethernet)
    output wire [7:0]               m_hdr_tclass,
    output wire [19:0]              m_hdr_flow_label,
    output wire [7:0]               m_hdr_hop_limit,
    output wire [127:0]             m_hdr_sgid,         // first GID byte on the wire in [127:120]
    output wire [127:0]             m_hdr_dgid,         // (Ethernet: the IP addresses, IPv4 mapped)
    output wire [47:0]              m_hdr_smac,         // Ethernet: source MAC, 0 on InfiniBand
    output wire [12:0]              m_hdr_vlan,         // Ethernet: [12] tagged, [11:0] VLAN ID
    output wire [63:0]              m_hdr_raddr,        // RETH or AtomicETH, 0 when absent
    output wire [31:0]              m_hdr_rkey,
    output wire [31:0]              m_hdr_dma_len,      // RETH only
    output wire [31:0]              m_hdr_qkey,         // DETH, 0 when absent
    output wire [23:0]              m_hdr_src_qpn,
    // ImmDt, 0 when absent: 4 opaque bytes, the first wire byte in bits [7:0] (host memory
    // order, as pkt_header takes them)
    output wire [31:0]              m_hdr_imm,
    output wire [7:0]               m_hdr_syndrome,     // AETH, 0 when absent
    output wire [23:0]              m_hdr_msn,
    // AtomicETH Swap/Add Data, or AtomicAckETH Original Remote Data; 0 when absent
    output wire [63:0]              m_hdr_atomic_a,
    output wire [63:0]              m_hdr_atomic_b,     // AtomicETH Compare Data, 0 when absent
    output wire [12:0]              m_hdr_plen,         // payload bytes (pad excluded)
    output wire                     m_hdr_internal,     // s_axis_rx_tid of this packet

    // after the header handshake, the payload (nothing when plen == 0): byte 0 in tdata[7:0],
    // every beat full but the last, tkeep contiguous, tlast on the last payload beat
    output wire [DATA_WIDTH-1:0]    m_axis_pl_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_pl_tkeep,
    output wire                     m_axis_pl_tvalid,
    input  wire                     m_axis_pl_tready,
    output wire                     m_axis_pl_tlast,
    input  wire                     pl_drop,            // instead of reading the payload: drop it

    // verdict events, one cycle each, per packet that arrived
    output reg                      rcv_pkt,            // a good packet ...
    output reg  [10:0]              rcv_pktlen,         // ... and its LRH PktLen (Ethernet: frame words)
    output reg                      rcv_error,          // a bad packet, dropped
    output reg                      rcv_ce,             // a good packet marked CE (Ethernet: IP ECN 11)
    output reg                      rcv_internal        // s_axis_rx_tid of that packet
);

localparam KEEP_WIDTH = DATA_WIDTH / 8;
localparam KEEP_BITS = $clog2(KEEP_WIDTH);
localparam HDR_MAX = 106;                     // Ethernet + 802.1Q + IPv6 + UDP + BTH + AtomicETH
localparam FRAME_MAX = HDR_MAX + MAX_PAYLOAD + 3 + 4 + 4;  // + pad, ICRC, FCS
localparam BANK_BITS = $clog2((FRAME_MAX + KEEP_WIDTH - 1) / KEEP_WIDTH);
localparam BANK_WORDS = 1 << BANK_BITS;                    // words per buffer: a power of 2
localparam BUF_BITS = BUFFERS > 1 ? $clog2(BUFFERS) : 1;
localparam MEM_WORDS = BUFFERS * BANK_WORDS;
localparam MEM_BITS = $clog2(MEM_WORDS);
localparam CNT_BITS = BANK_BITS + 1;                       // frame beats, saturating
localparam [15:0] MAX_PLEN = MAX_PAYLOAD;
localparam [31:0] ICRC_RESIDUE = 32'h2144DF1C;            // CRC-32 of anything + its CRC
localparam [15:0] VCRC_RESIDUE = 16'hAA90;                 // CRC-16 of anything + its CRC
localparam integer LAST_BUF = BUFFERS - 1;

function [BUF_BITS-1:0] next_buf(input [BUF_BITS-1:0] b);
    next_buf = (b == LAST_BUF[BUF_BITS-1:0]) ? {BUF_BITS{1'b0}} : b + 1'b1;
endfunction

`include "wire_order.vh"
`include "keep_bits.vh"

// Per-buffer state, in ring order: occ (a frame ended in it), vdone (its verdict is made),
// good, and which of the two readers (header, fetch) has passed it.
reg  [BUFFERS-1:0] occ;
reg  [BUFFERS-1:0] vdone;
reg  [BUFFERS-1:0] good;
reg  [BUFFERS-1:0] hpass;
reg  [BUFFERS-1:0] fpass;

// ------------------------------------------------------------------------------------------
// Write side

reg  [BUF_BITS-1:0] w_bank;         // buffer the arriving frame goes into
reg  [CNT_BITS-1:0] w_beat;         // beats of the frame so far, saturating at BANK_WORDS
reg                 w_user;         // tuser on an earlier beat
reg                 w_holey;        // an earlier beat was not full
reg                 w_over;         // an earlier beat did not fit the buffer

assign s_axis_rx_tready = ~occ[w_bank];
wire rx_xfer = s_axis_rx_tvalid & s_axis_rx_tready;
wire w_first = w_beat == {CNT_BITS{1'b0}};
wire w_room = ~w_beat[CNT_BITS-1];

// Buffer b is words b * BANK_WORDS .. + BANK_WORDS - 1.
reg [DATA_WIDTH-1:0] mem [0:MEM_WORDS-1];
/* verilator lint_off UNUSEDSIGNAL */  // with BUFFERS = 1 the buffer bit is always 0
wire [BUF_BITS+BANK_BITS-1:0] w_addr = {w_bank, w_beat[BANK_BITS-1:0]};
/* verilator lint_on UNUSEDSIGNAL */
always @(posedge clk) begin
    if (rx_xfer && w_room)
        mem[w_addr[MEM_BITS-1:0]] <= s_axis_rx_tdata;
end

// The frame's first beats, as far as they may hold header bytes (the first HDR_MAX bytes;
// stale bytes past a short frame's end are never used: the length checks reject a packet whose
// headers do not fit). A whole beat per write: simulators pay for a loop over bytes every beat.
localparam CAP_BEATS = (8 * HDR_MAX + DATA_WIDTH - 1) / DATA_WIDTH;
/* verilator lint_off UNUSEDSIGNAL */  // the bytes of the last beat past HDR_MAX
reg [CAP_BEATS*DATA_WIDTH-1:0] cap;
/* verilator lint_on UNUSEDSIGNAL */
wire [31:0] w_beat32 = {{(32-CNT_BITS){1'b0}}, w_beat};
always @(posedge clk) begin
    if (rx_xfer && w_beat32 < CAP_BEATS)
        cap[w_beat32*DATA_WIDTH +: DATA_WIDTH] <= s_axis_rx_tdata;
end

// A last beat's bytes must start at byte 0 and be contiguous (tkeep + 1 a power of 2):
// counted by its bits alone, a last beat with a gap would be checked and stored as other bytes.
wire rx_last_holey = (s_axis_rx_tkeep & (s_axis_rx_tkeep + 1'b1)) != {KEEP_WIDTH{1'b0}};

// Bytes in this beat.
reg [KEEP_BITS:0] rx_nbytes;
integer k;
always @* begin
    rx_nbytes = {(KEEP_BITS+1){1'b0}};
    for (k = 0; k < KEEP_WIDTH; k = k + 1)
        rx_nbytes = rx_nbytes + {{KEEP_BITS{1'b0}}, s_axis_rx_tkeep[k]};
end

wire [15:0] vcrc;
crc_stream #(
    .DATA_WIDTH(DATA_WIDTH), .CRC_WIDTH(16),
    .POLY(16'hD008), .INIT(16'hFFFF), .XOR_OUT(16'hFFFF)
) vcrc_chk (
    .clk(clk), .rst(rst),
    .s_valid(rx_xfer), .s_first(w_first), .s_data(s_axis_rx_tdata), .s_keep(s_axis_rx_tkeep),
    .m_crc(vcrc)
);
wire [31:0] fcs;
crc_stream #(
    .DATA_WIDTH(DATA_WIDTH), .CRC_WIDTH(32),
    .POLY(32'hEDB88320), .INIT(32'hFFFFFFFF), .XOR_OUT(32'hFFFFFFFF)
) fcs_chk (
    .clk(clk), .rst(rst),
    .s_valid(rx_xfer), .s_first(w_first), .s_data(s_axis_rx_tdata), .s_keep(s_axis_rx_tkeep),
    .m_crc(fcs)
);

// The ICRC check runs over LRH .. ICRC: on InfiniBand the last beat without the VCRC's two
// bytes (a last beat of only those two enables nothing, which leaves the CRC as it was); on
// Ethernet ib_icrc itself stops at the IP packet's end, before any padding and the FCS.
wire [31:0] icrc;
wire icrc_valid_unused;
ib_icrc #(.DATA_WIDTH(DATA_WIDTH)) icrc_chk (
    .clk(clk), .rst(rst), .eth(eth),
    .s_valid(rx_xfer), .s_data(s_axis_rx_tdata),
    .s_keep(s_axis_rx_tlast && !eth ? s_axis_rx_tkeep >> 2 : s_axis_rx_tkeep),
    .s_last(s_axis_rx_tlast),
    .m_icrc(icrc), .m_icrc_valid(icrc_valid_unused)
);

// The frame's tail, registered at tlast for the verdict in the next cycle.
reg                 t_valid;
reg  [BUF_BITS-1:0] t_bank;
reg  [15:0]         t_bytes;        // frame bytes, LRH .. VCRC or destination MAC .. FCS
reg                 t_bad_link;     // tuser, a CRC wrong, a hole, or too long for the buffer
reg                 t_tid;

wire [15:0] w_bytes = {{(16-CNT_BITS-KEEP_BITS){1'b0}}, w_beat, {KEEP_BITS{1'b0}}}
                    + {{(15-KEEP_BITS){1'b0}}, rx_nbytes};

always @(posedge clk) begin
    t_valid <= 1'b0;
    if (rx_xfer) begin
        if (s_axis_rx_tlast) begin
            t_valid <= 1'b1;
            t_bank <= w_bank;
            t_bytes <= w_bytes;
            t_bad_link <= w_user | s_axis_rx_tuser | w_holey | w_over | ~w_room | rx_last_holey
                        | (eth ? fcs != ICRC_RESIDUE : vcrc != VCRC_RESIDUE) | (icrc != ICRC_RESIDUE);
            t_tid <= s_axis_rx_tid;
            w_bank <= next_buf(w_bank);
            w_beat <= {CNT_BITS{1'b0}};
            w_user <= 1'b0;
            w_holey <= 1'b0;
            w_over <= 1'b0;
        end else begin
            if (w_room)
                w_beat <= w_beat + 1'b1;
            w_user <= w_user | s_axis_rx_tuser;
            w_holey <= w_holey | ~&s_axis_rx_tkeep;
            w_over <= w_over | ~w_room;
        end
    end
    if (rst) begin
        t_valid <= 1'b0;
        w_bank <= {BUF_BITS{1'b0}};
        w_beat <= {CNT_BITS{1'b0}};
        w_user <= 1'b0;
        w_holey <= 1'b0;
        w_over <= 1'b0;
    end
end

// ------------------------------------------------------------------------------------------
// Verdict: the captured header, decoded

// (VL, the reserved bits, BTH M, Resv8a and the AckReq byte's reserved bits are not checked)

// InfiniBand: LRH, the GRH when LNH is 3, the BTH after them
/* verilator lint_off UNUSEDSIGNAL */
wire [63:0]  lrh = cap[0 +: 64];
wire [15:0]  lrh_len = {lrh[39:32], lrh[47:40]};
/* verilator lint_on UNUSEDSIGNAL */
wire [319:0] grh = cap[64 +: 320];
wire         ib_glob = lrh[9:8] == 2'd3;
wire [3:0]   lver = lrh[3:0];
wire [15:0]  dlid = be16(lrh[16 +: 16]);
wire [10:0]  pktlen = lrh_len[10:0];
wire [15:0]  slid = be16(lrh[48 +: 16]);

wire [3:0]   ipver = grh[7:4];
wire [15:0]  paylen = be16(grh[32 +: 16]);
wire [7:0]   nxthdr = grh[48 +: 8];

// Ethernet: destination and source MAC, the 802.1Q tag, the EtherType, then IPv4 (20 bytes,
// no options) or IPv6 (40), UDP (8) and the BTH
wire [47:0]  e_dmac = be48(cap[0 +: 48]);
wire [47:0]  e_smac = be48(cap[48 +: 48]);
wire         e_tagged = be16(cap[96 +: 16]) == 16'h8100;
/* verilator lint_off UNUSEDSIGNAL */
wire [15:0]  e_tci = be16(cap[112 +: 16]);     // PCP, DEI (not checked), VLAN ID
/* verilator lint_on UNUSEDSIGNAL */
wire [15:0]  e_type = e_tagged ? be16(cap[128 +: 16]) : be16(cap[96 +: 16]);
/* verilator lint_off UNUSEDSIGNAL */
wire [8*HDR_MAX-145:0] e_net = e_tagged ? cap[144 +: 8*HDR_MAX-144] : cap[112 +: 8*HDR_MAX-144];
/* verilator lint_on UNUSEDSIGNAL */
wire         e_v6 = e_type == 16'h86DD;
wire [3:0]   e_ipver = e_net[7:4];
// IPv4
wire [15:0]  v4_total = be16(e_net[16 +: 16]);
/* verilator lint_off UNUSEDSIGNAL */
wire [15:0]  v4_frag = be16(e_net[48 +: 16]);  // flags (reserved, DF not checked, MF), offset
/* verilator lint_on UNUSEDSIGNAL */
wire [19:0]  v4_sum = {4'd0, be16(e_net[0 +: 16])} + {4'd0, be16(e_net[16 +: 16])}
                    + {4'd0, be16(e_net[32 +: 16])} + {4'd0, be16(e_net[48 +: 16])}
                    + {4'd0, be16(e_net[64 +: 16])} + {4'd0, be16(e_net[80 +: 16])}
                    + {4'd0, be16(e_net[96 +: 16])} + {4'd0, be16(e_net[112 +: 16])}
                    + {4'd0, be16(e_net[128 +: 16])} + {4'd0, be16(e_net[144 +: 16])};
wire [16:0]  v4_fold = {1'b0, v4_sum[15:0]} + {13'd0, v4_sum[19:16]};
wire         v4_sum_ok = v4_fold[15:0] + {15'd0, v4_fold[16]} == 16'hFFFF;
// IPv6 (the GRH's layout)
wire [15:0]  v6_paylen = be16(e_net[32 +: 16]);
wire [7:0]   e_proto = e_v6 ? e_net[48 +: 8] : e_net[72 +: 8];
wire [7:0]   e_tclass = e_v6 ? {e_net[3:0], e_net[15:12]} : e_net[15:8];
wire [19:0]  e_flow = e_v6 ? {e_net[11:8], e_net[23:16], e_net[31:24]} : 20'd0;
wire [7:0]   e_hop = e_v6 ? e_net[56 +: 8] : e_net[64 +: 8];
wire [127:0] e_sgid = e_v6 ? be128(e_net[64 +: 128]) : {96'h0000_0000_0000_0000_0000_FFFF, be32(e_net[96 +: 32])};
wire [127:0] e_dgid = e_v6 ? be128(e_net[192 +: 128]) : {96'h0000_0000_0000_0000_0000_FFFF, be32(e_net[128 +: 32])};
/* verilator lint_off UNUSEDSIGNAL */
wire [8*HDR_MAX-145:0] e_udp = e_v6 ? e_net >> 320 : e_net >> 160;
/* verilator lint_on UNUSEDSIGNAL */
wire [15:0]  udp_dport = be16(e_udp[16 +: 16]);
wire [15:0]  udp_len = be16(e_udp[32 +: 16]);
wire [6:0]   e_ether_len = e_tagged ? 7'd18 : 7'd14;
wire [6:0]   e_hdr_len = e_ether_len + (e_v6 ? 7'd40 : 7'd20) + 7'd8;   // to the BTH
wire [15:0]  ip_len = e_v6 ? v6_paylen + 16'd40 : v4_total;
wire [15:0]  ip_payload = e_v6 ? v6_paylen : v4_total - 16'd20;

// The BTH and the extension headers after it
/* verilator lint_off UNUSEDSIGNAL */
wire [95:0]  bth = eth ? e_udp[64 +: 96] : ib_glob ? cap[8*48 +: 96] : cap[8*8 +: 96];
/* verilator lint_on UNUSEDSIGNAL */
wire [223:0] ext = eth ? e_udp[160 +: 224] : ib_glob ? cap[8*60 +: 224] : cap[8*20 +: 224];
wire         glob = eth || ib_glob;
wire [7:0]   tclass = eth ? e_tclass : {grh[3:0], grh[15:12]};
wire [19:0]  flow_label = eth ? e_flow : {grh[11:8], grh[23:16], grh[31:24]};
wire [7:0]   hop_limit = eth ? e_hop : grh[56 +: 8];
wire [127:0] sgid = eth ? e_sgid : be128(grh[64 +: 128]);
wire [127:0] dgid = eth ? e_dgid : be128(grh[192 +: 128]);

wire [7:0]   opcode = bth[7:0];
wire         se = bth[15];
wire [1:0]   padcnt = bth[13:12];
wire [3:0]   tver = bth[11:8];
wire [15:0]  pkey = be16(bth[16 +: 16]);
wire [23:0]  dest_qpn = be24(bth[40 +: 24]);
wire         ackreq = bth[71];
wire [23:0]  psn = be24(bth[72 +: 24]);

// Opcodes: RC 0x00-0x14 (0x12 ATOMIC_ACKNOWLEDGE, 0x13 COMPARE_SWAP, 0x14 FETCH_ADD), 0x16,
// 0x17 (SEND LAST/ONLY with invalidate) and 0x1D (ATOMIC WRITE: a RETH and 8 bytes), UC
// 0x20-0x2B, UD 0x64 and 0x65; on Ethernet also 0x81, the CNP (16 reserved bytes, ignored).
wire [2:0]   tr = opcode[7:5];
wire [4:0]   low = opcode[4:0];
wire has_ieth = tr == 3'd0 && (low == 5'h16 || low == 5'h17);
wire is_awrite = opcode == 8'h1D;
wire is_cnp = eth && opcode == 8'h81;
wire op_known = (tr == 3'd0 && low <= 5'h14) || has_ieth || is_awrite
             || (tr == 3'd1 && low <= 5'h0B) || opcode == 8'h64 || opcode == 8'h65 || is_cnp;
wire has_deth = tr == 3'd3;
wire has_reth = low == 5'h06 || low == 5'h0A || low == 5'h0B || low == 5'h0C || is_awrite;
wire has_atomic_eth = low == 5'h13 || low == 5'h14;
wire has_aeth = low == 5'h0D || low == 5'h0F || low == 5'h10 || low == 5'h11 || low == 5'h12;
wire has_atomic_ack = low == 5'h12;
wire has_imm = low == 5'h03 || low == 5'h05 || low == 5'h09 || low == 5'h0B;
wire first_middle = low == 5'h00 || low == 5'h01 || low == 5'h06 || low == 5'h07
                 || low == 5'h0D || low == 5'h0E;

wire [31:0]  qkey = has_deth ? be32(ext[0 +: 32]) : 32'd0;
wire [23:0]  src_qpn = has_deth ? be24(ext[40 +: 24]) : 24'd0;
// RETH and AtomicETH start alike (VA, R_Key), right after the BTH (RC only: no DETH).
wire [63:0]  raddr = has_reth || has_atomic_eth ? be64(ext[0 +: 64]) : 64'd0;
// an IETH (the R_Key to invalidate) follows the BTH
wire [31:0]  rkey = has_reth || has_atomic_eth ? be32(ext[64 +: 32]) :
                    has_ieth ? be32(ext[0 +: 32]) : 32'd0;
wire [31:0]  dma_len = has_reth ? be32(ext[96 +: 32]) : 32'd0;
wire [7:0]   syndrome = has_aeth ? ext[7:0] : 8'd0;
wire [23:0]  msn = has_aeth ? be24(ext[8 +: 24]) : 24'd0;
// AtomicETH Swap/Add and Compare Data; the AtomicAckETH follows the AETH.
wire [63:0]  atomic_a = has_atomic_eth ? be64(ext[96 +: 64])
                      : has_atomic_ack ? be64(ext[32 +: 64]) : 64'd0;
wire [63:0]  atomic_b = has_atomic_eth ? be64(ext[160 +: 64]) : 64'd0;
// ImmDt follows a DETH (UD), a RETH (WRITE only with imm), or the BTH directly.
wire [31:0]  imm_wire = has_deth ? ext[64 +: 32] : has_reth ? ext[128 +: 32] : ext[0 +: 32];
wire [31:0]  imm = has_imm ? imm_wire : 32'd0;

wire [6:0]   tr_len = 7'd12 + (has_deth ? 7'd8 : 7'd0) + (is_cnp ? 7'd16 : 7'd0)
                    + (has_reth ? 7'd16 : 7'd0) + (has_atomic_eth ? 7'd28 : 7'd0)
                    + (has_aeth ? 7'd4 : 7'd0) + (has_atomic_ack ? 7'd8 : 7'd0)
                    + (has_imm || has_ieth ? 7'd4 : 7'd0);
wire [6:0]   hdr_len = (eth ? e_hdr_len : ib_glob ? 7'd48 : 7'd8) + tr_len;

// Lengths: body = BTH .. ICRC (on InfiniBand what LRH and GRH leave of LRH .. ICRC, on
// Ethernet what UDP says); the payload is what the headers, the pad and the ICRC leave.
wire [15:0]  ib_body = t_bytes - 16'd2 - (ib_glob ? 16'd48 : 16'd8);
wire [15:0]  body = eth ? udp_len - 16'd8 : ib_body;
wire [15:0]  tr_icrc_pad = {9'd0, tr_len} + 16'd4 + {14'd0, padcnt};
wire [15:0]  plen = body - tr_icrc_pad;
wire [15:0]  lmc_mask = (16'd1 << port_lmc) - 16'd1;

// The destination GID is one of the port's (an empty entry matches nothing); on Ethernet the
// entry's VLAN is the frame's too, as a VLAN interface owns its addresses, and an IPv4-mapped
// entry is an IPv4 address, which an IPv6 header cannot carry. VLAN ID 0 is no VLAN (802.1Q:
// a priority tag carries only the PCP), so the VIDs are compared with an untagged frame or
// entry as VID 0: a priority-tagged frame reaches an untagged entry, and an entry tagged
// with VID 0 (whose frames leave priority-tagged) takes untagged frames too. A loopback
// message's frames (the internal loopback) ignore path attributes, the VLAN among them: a
// message to any of the port's own GIDs is the port's, as the bypass takes it.
wire         v6_to_v4 = eth && e_v6 && dgid[127:32] == 96'h0000_0000_0000_0000_0000_FFFF;
wire [11:0]  e_vid = e_tagged ? e_tci[11:0] : 12'd0;
reg          gid_ok;
integer g;
always @* begin
    gid_ok = 1'b0;
    for (g = 0; g < NUM_GIDS; g = g + 1)
        if (port_gids[g*128 +: 128] != 128'd0 && port_gids[g*128 +: 128] == dgid && !v6_to_v4
                && (!eth || t_tid
                    || (port_gid_vlans[g*13 + 12] ? port_gid_vlans[g*13 +: 12] : 12'd0) == e_vid))
            gid_ok = 1'b1;
end

wire ib_ok = t_bytes[1:0] == 2'b10 && t_bytes >= 16'd26 && lver == 4'd0 && lrh[9]
          && {3'd0, pktlen, 2'b00} == t_bytes - 16'd2
          && (!ib_glob || (ipver == 4'd6 && nxthdr == 8'h1B && paylen == ib_body && gid_ok))
          && ((dlid ^ port_lid) & ~lmc_mask) == 16'd0;
// the frame ends with the IP packet and the FCS, or is padded to 64 bytes after a shorter one
wire [15:0] ip_end = {9'd0, e_ether_len} + ip_len + 16'd4;
wire eth_ok = t_bytes >= 16'd64 && (t_bytes == ip_end || (t_bytes == 16'd64 && ip_end < 16'd64))
           && e_dmac == port_mac && gid_ok
           && (e_v6 ? e_ipver == 4'd6
                    : e_type == 16'h0800 && e_net[7:0] == 8'h45 && v4_sum_ok
                      && v4_frag[13:0] == 14'd0 && ip_len >= 16'd28)
           && e_proto == 8'h11 && udp_dport == 16'd4791 && udp_len == ip_payload && udp_len >= 16'd8
           && udp_len[1:0] == 2'b00;   // BTH .. ICRC whole 4-byte words, as on InfiniBand
wire pkey_ok = pkey[14:0] == port_pkey[14:0] && (pkey[15] || port_pkey[15]);
// READ requests, ACKs, atomics and CNPs carry no payload: bytes past their headers make them
// malformed
wire no_payload = (tr == 3'd0 && (low == 5'h0C || (low >= 5'h11 && low <= 5'h14))) || is_cnp;
wire fits = body >= tr_icrc_pad && plen <= MAX_PLEN && !(no_payload && plen != 16'd0);
wire pad_ok = !(first_middle && padcnt != 2'd0);

wire v_good = !t_bad_link && (eth ? eth_ok : ib_ok) && tver == 4'd0 && op_known && fits && pad_ok
           && pkey_ok;

// A good packet's fields, kept with its buffer until its header is presented.
localparam HF_W = 8 + 1 + 24 + 1 + 24 + 16 + 16 + 4 + 1 + 8 + 20 + 8 + 128 + 128 + 48 + 13 + 64 + 32
                + 32 + 32 + 24 + 32 + 8 + 24 + 64 + 64 + 13 + 1;
wire [HF_W-1:0] v_fields = {
    opcode, se, dest_qpn, ackreq, psn, eth ? 16'd0 : slid, eth ? 16'd0 : dlid,
    eth ? {1'b0, e_tagged ? e_tci[15:13] : 3'd0} : lrh[15:12], glob,
    glob ? tclass : 8'd0, glob ? flow_label : 20'd0, glob ? hop_limit : 8'd0,
    glob ? sgid : 128'd0, glob ? dgid : 128'd0,
    eth ? e_smac : 48'd0, eth ? {e_tagged, e_tagged ? e_tci[11:0] : 12'd0} : 13'd0,
    raddr, rkey, dma_len, qkey, src_qpn, imm, syndrome, msn, atomic_a, atomic_b, plen[12:0],
    t_tid};

reg [HF_W-1:0] hslot [0:BUFFERS-1];
reg [19:0]     fslot [0:BUFFERS-1];       // {plen, hdr_len} for the fetch side

always @(posedge clk) begin
    rcv_pkt <= t_valid & v_good;
    rcv_error <= t_valid & ~v_good;
    rcv_ce <= t_valid & v_good & eth & tclass[1:0] == 2'b11;
    if (t_valid) begin
        rcv_pktlen <= eth ? t_bytes[12:2] + {10'd0, t_bytes[1:0] != 2'd0} : pktlen;
        rcv_internal <= t_tid;
        hslot[t_bank] <= v_fields;
        fslot[t_bank] <= {plen[12:0], hdr_len};
    end
    if (rst) begin
        rcv_pkt <= 1'b0;
        rcv_error <= 1'b0;
        rcv_ce <= 1'b0;
    end
end

// ------------------------------------------------------------------------------------------
// Header side: the m_hdr_* registers

reg  [BUF_BITS-1:0] h_bank;     // next buffer whose header is due
reg                 hv;         // m_hdr_valid
reg  [HF_W-1:0]     hout;
reg                 pl_open;    // the presented packet's payload has not all left yet
reg                 dropping;   // ... and is being dropped

reg  o_valid;                   // the output register (fetch side, below) holds a beat
reg  o_last;                    // ... its packet's last
wire o_take;                    // ... and it leaves (or is dropped) this cycle
wire pl_close = o_take & o_last;

wire h_here = occ[h_bank] & vdone[h_bank] & ~hpass[h_bank];
wire h_skip = h_here & ~good[h_bank];
wire h_load = h_here & good[h_bank] & ~hv & (~pl_open | pl_close);
wire h_pass = h_skip | h_load;
wire hshake = hv & m_hdr_ready;

assign m_hdr_valid = hv;
assign {m_hdr_opcode, m_hdr_se, m_hdr_dest_qpn, m_hdr_ackreq, m_hdr_psn, m_hdr_slid, m_hdr_dlid,
        m_hdr_sl, m_hdr_is_global, m_hdr_tclass, m_hdr_flow_label, m_hdr_hop_limit, m_hdr_sgid,
        m_hdr_dgid, m_hdr_smac, m_hdr_vlan, m_hdr_raddr, m_hdr_rkey, m_hdr_dma_len, m_hdr_qkey, m_hdr_src_qpn, m_hdr_imm,
        m_hdr_syndrome, m_hdr_msn, m_hdr_atomic_a, m_hdr_atomic_b, m_hdr_plen,
        m_hdr_internal} = hout;

wire pl_pending = pl_open | (hshake & m_hdr_plen != 13'd0);

always @(posedge clk) begin
    if (hshake)
        hv <= 1'b0;
    if (h_load) begin
        hv <= 1'b1;
        hout <= hslot[h_bank];
    end
    if (h_pass)
        h_bank <= next_buf(h_bank);
    if (hshake && m_hdr_plen != 13'd0)
        pl_open <= 1'b1;
    if (pl_drop && pl_pending)
        dropping <= 1'b1;
    if (pl_close) begin
        pl_open <= 1'b0;
        dropping <= 1'b0;
    end
    if (rst) begin
        hv <= 1'b0;
        h_bank <= {BUF_BITS{1'b0}};
        pl_open <= 1'b0;
        dropping <= 1'b0;
    end
end

// ------------------------------------------------------------------------------------------
// Fetch side: payload beats from the buffer through one shifter into the output register

reg  [BUF_BITS-1:0]  f_bank;    // buffer whose payload is being read
reg  [BANK_BITS-1:0] f_beat;    // its next output beat

wire [19:0]          f_slot = fslot[f_bank];
wire [6:0]           f_hdr_len = f_slot[6:0];
wire [12:0]          f_plen = f_slot[19:7];
wire [15:0]          f_last_beat = ({3'd0, f_plen} - 16'd1) >> KEEP_BITS;
wire [BANK_BITS-1:0] f_base = {{(BANK_BITS-7+KEEP_BITS){1'b0}}, f_hdr_len[6:KEEP_BITS]};
wire [BANK_BITS-1:0] f_word = f_base + f_beat;
wire [BANK_BITS-1:0] f_word_next = f_word + 1'b1;
/* verilator lint_off UNUSEDSIGNAL */
wire [BUF_BITS+BANK_BITS-1:0] f_addr_lo = {f_bank, f_word};
wire [BUF_BITS+BANK_BITS-1:0] f_addr_hi = {f_bank, f_word_next};
/* verilator lint_on UNUSEDSIGNAL */
wire [KEEP_BITS-1:0] f_rem = f_plen[KEEP_BITS-1:0];
wire [KEEP_WIDTH-1:0] f_last_keep = (f_rem == {KEEP_BITS{1'b0}}) ? {KEEP_WIDTH{1'b1}}
                                  : ~({KEEP_WIDTH{1'b1}} << f_rem);

// Global stall: the fetch stage and the output register move together whenever the output
// register is empty or its beat leaves.
wire en = ~o_valid | o_take;

wire f_here = occ[f_bank] & vdone[f_bank] & ~fpass[f_bank];
wire f_skip = f_here & (~good[f_bank] | f_plen == 13'd0);
wire f_rd = f_here & good[f_bank] & (f_plen != 13'd0) & en;
wire f_end = f_rd & ({{(16-BANK_BITS){1'b0}}, f_beat} == f_last_beat);
wire f_pass = f_skip | f_end;

reg                   a_valid;      // fetch stage: the two words of one output beat
reg  [DATA_WIDTH-1:0] a_lo;
reg  [DATA_WIDTH-1:0] a_hi;
reg  [KEEP_BITS-1:0]  a_shift;
reg  [KEEP_WIDTH-1:0] a_keep;
reg                   a_last;

always @(posedge clk) begin
    if (en)
        a_valid <= f_rd;
    if (en && f_rd) begin   // only a read loads the stage: an idle one costs simulators nothing
        a_lo <= mem[f_addr_lo[MEM_BITS-1:0]];
        a_hi <= mem[f_addr_hi[MEM_BITS-1:0]];
        a_shift <= f_hdr_len[KEEP_BITS-1:0];
        a_keep <= f_end ? f_last_keep : {KEEP_WIDTH{1'b1}};
        a_last <= f_end;
    end
    if (f_rd)
        f_beat <= f_end ? {BANK_BITS{1'b0}} : f_beat + 1'b1;
    if (f_pass)
        f_bank <= next_buf(f_bank);
    if (rst) begin
        a_valid <= 1'b0;
        f_bank <= {BUF_BITS{1'b0}};
        f_beat <= {BANK_BITS{1'b0}};
    end
end

/* verilator lint_off UNUSEDSIGNAL */
wire [2*DATA_WIDTH-1:0] a_pair = {a_hi, a_lo} >> {a_shift, 3'b000};   // the low half is the beat
/* verilator lint_on UNUSEDSIGNAL */

// Bytes past the payload's end read as zero (not the pad, ICRC or an older packet's bytes).
reg  [DATA_WIDTH-1:0] a_keep_bits;
always @* a_keep_bits = keep_bits(a_keep);

reg  [DATA_WIDTH-1:0] o_data;
reg  [KEEP_WIDTH-1:0] o_keep;
assign o_take = o_valid & pl_open & (m_axis_pl_tready | dropping);

always @(posedge clk) begin
    if (en)
        o_valid <= a_valid;
    if (en && a_valid) begin
        o_data <= a_pair[DATA_WIDTH-1:0] & a_keep_bits;
        o_keep <= a_keep;
        o_last <= a_last;
    end
    if (rst)
        o_valid <= 1'b0;
end

assign m_axis_pl_tvalid = o_valid & pl_open & ~dropping;
assign m_axis_pl_tdata = o_data;
assign m_axis_pl_tkeep = o_keep;
assign m_axis_pl_tlast = o_last;

// ------------------------------------------------------------------------------------------
// Buffer bookkeeping: a frame's end fills its buffer, the verdict marks it, and once both
// readers have passed it (a bad one: both skip it) it is free.

integer i;
wire book_event = f_pass || h_pass || (rx_xfer && s_axis_rx_tlast) || t_valid;
always @(posedge clk) begin
    if (book_event) begin   // nothing changes otherwise (the guard spares simulators the loop)
        for (i = 0; i < BUFFERS; i = i + 1) begin
            if ((occ[i] && (fpass[i] || (f_pass && f_bank == i[BUF_BITS-1:0])))
                    && (hpass[i] || (h_pass && h_bank == i[BUF_BITS-1:0]))) begin
                occ[i] <= 1'b0;
                vdone[i] <= 1'b0;
                good[i] <= 1'b0;
                fpass[i] <= 1'b0;
                hpass[i] <= 1'b0;
            end else begin
                if (f_pass && f_bank == i[BUF_BITS-1:0])
                    fpass[i] <= 1'b1;
                if (h_pass && h_bank == i[BUF_BITS-1:0])
                    hpass[i] <= 1'b1;
            end
            if (rx_xfer && s_axis_rx_tlast && w_bank == i[BUF_BITS-1:0])
                occ[i] <= 1'b1;
            if (t_valid && t_bank == i[BUF_BITS-1:0]) begin
                vdone[i] <= 1'b1;
                good[i] <= v_good;
            end
        end
    end
    if (rst) begin
        occ <= {BUFFERS{1'b0}};
        vdone <= {BUFFERS{1'b0}};
        good <= {BUFFERS{1'b0}};
        fpass <= {BUFFERS{1'b0}};
        hpass <= {BUFFERS{1'b0}};
    end
end

endmodule

`resetall
`endif
