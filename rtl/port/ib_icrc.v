// ICRC of a packet stream, InfiniBand or RoCE v2: CRC-32 (reflected 0xEDB88320, init and final
// XOR all-ones) with the fields a switch or router may change read as all-ones.
//
// Input: the frame's beats from its first byte (LRH, or the Ethernet header's destination MAC),
// byte 0 in s_data[7:0] of the first beat. Every beat but the last carries all DATA_WIDTH/8
// bytes; the last carries s_keep contiguous from byte 0. s_valid marks a beat that is
// transferred this cycle (the caller's valid & ready). m_icrc is valid with the last beat, in
// the same cycle, and goes on the wire least-significant byte first.
//
// InfiniBand (eth = 0; LNH = LRH byte 1 bits [1:0], 3 = global, anything else is local):
//   local:  LRH byte 0 |= 0xF0 (VL), BTH byte 4 = 0xFF (Resv8a; BTH at byte 8)
//   global: LRH bytes 0-7 = 0xFF, GRH byte 0 |= 0x0F and bytes 1-3 = 0xFF (TClass, FlowLabel),
//           GRH byte 7 = 0xFF (HopLmt), BTH byte 4 = 0xFF (GRH at byte 8, BTH at byte 48)
// RoCE v2 (eth = 1; IBTA Annex A17): the CRC runs over 8 bytes of 0xFF standing for an LRH,
// then the IP header (IPv4: DSCP/ECN, TTL and header checksum all-ones; IPv6: traffic class,
// flow label and hop limit, as the GRH), the UDP header (checksum all-ones), the BTH (Resv8a
// all-ones) and the rest up to the IP packet's end: never the Ethernet padding or the FCS
// that follow it on a received frame. The Ethernet header in front (14 bytes, 18 with an
// 802.1Q tag) is not covered, so its bytes are read as a constant prefix that leaves the CRC
// register as the 8 bytes of 0xFF would: 6 bytes that bring the initial register back to
// itself, 8 bytes of 0xFF, and with a tag 4 more that keep the register where it is. The
// stream therefore needs no shifting, and the masks stay a per-beat table.
//
// Each variant (IB local, IB global, RoCE untagged or tagged over IPv4 or IPv6) is an AND and
// an OR mask per byte, chosen by the beat's index in the frame; the index saturates once the
// beat is past the last variant byte. What decides a variant (LNH, the EtherType, the IP
// version) always lies in the beat that needs it or an earlier one: the first 24 bytes are
// kept as they pass.
`ifndef RDMA_IB_ICRC_V
`define RDMA_IB_ICRC_V
`default_nettype none

module ib_icrc #(
    parameter DATA_WIDTH = 64      // beat width in bits: a multiple of 8, at least 32
) (
    input  wire                     clk,
    input  wire                     rst,

    input  wire                     eth,        // the port's link layer: 1 Ethernet (RoCE v2)

    input  wire                     s_valid,    // a beat is transferred this cycle
    input  wire [DATA_WIDTH-1:0]    s_data,
    input  wire [DATA_WIDTH/8-1:0]  s_keep,     // all ones except on the last beat
    input  wire                     s_last,     // last beat of the frame

    output wire [31:0]              m_icrc,     // ICRC of the packet, valid with m_icrc_valid
    output wire                     m_icrc_valid
);

localparam KEEP_WIDTH = DATA_WIDTH / 8;
localparam [31:0] POLY = 32'hEDB88320;
localparam LRH_BYTES = 8;
localparam GRH_BYTES = 40;
localparam LAST_VARIANT = 18 + 40 + 8 + 4;               // tagged IPv6 RoCE: BTH Resv8a
localparam MASK_BEATS = LAST_VARIANT / KEEP_WIDTH + 1;   // beats that can hold a variant byte
localparam BEAT_BITS = $clog2(MASK_BEATS + 1);
localparam MASK_BITS = MASK_BEATS * DATA_WIDTH;
localparam SEEN = 24;                                    // bytes kept: EtherType, IP version, IP length

// --- the constant prefix that stands for the Ethernet header -------------------------------

function [31:0] crc_byte(input [31:0] r, input [7:0] v);   // the register after one byte
    integer n;
    begin
        crc_byte = r ^ {24'd0, v};
        for (n = 0; n < 8; n = n + 1)
            crc_byte = crc_byte[0] ? (crc_byte >> 1) ^ POLY : crc_byte >> 1;
    end
endfunction

// The inverse of 32 zero-bit steps: POLY has bit 31 set and a step shifts a zero in at the top,
// so the top bit of a step's result says whether POLY was XORed in.
function [31:0] unstep32(input [31:0] v);
    integer n;
    begin
        unstep32 = v;
        for (n = 0; n < 32; n = n + 1)
            unstep32 = unstep32[31] ? {unstep32[30:0] ^ POLY[30:0], 1'b1} : {unstep32[30:0], 1'b0};
    end
endfunction

// Four bytes (the first in bits [7:0]) that take the register from `from` to `to`: four bytes
// XOR the register and are followed by 32 steps.
function [31:0] steer(input [31:0] from, input [31:0] to);
    steer = unstep32(to) ^ from;
endfunction

localparam [31:0] R_INIT = 32'hFFFFFFFF;
localparam [31:0] R_ZERO2 = crc_byte(crc_byte(R_INIT, 8'h00), 8'h00);
// 00 00 then four bytes back to the initial register
localparam [47:0] PREFIX_HEAD = {steer(R_ZERO2, R_INIT), 16'h0000};
function [31:0] after_ones(input integer count);           // the register after count bytes of 0xFF
    integer n;
    begin
        after_ones = R_INIT;
        for (n = 0; n < count; n = n + 1)
            after_ones = crc_byte(after_ones, 8'hFF);
    end
endfunction
localparam [31:0] R_LRH = after_ones(8);
localparam [31:0] PREFIX_TAG = steer(R_LRH, R_LRH);         // the tag's four bytes: no change

// --- the masks -----------------------------------------------------------------------------

// variant: {eth, tagged, ipv6}; on InfiniBand {0, 0, global}
// byte `at` of the frame: {AND mask, OR mask}
function [15:0] byte_rule(input [2:0] variant, input integer at);
    integer ip, udp;
    begin
        byte_rule = {8'hFF, 8'h00};
        if (!variant[2]) begin
            if (variant[0]) begin
                if (at < LRH_BYTES)
                    byte_rule[7:0] = 8'hFF;
                else if (at == LRH_BYTES)
                    byte_rule[7:0] = 8'h0F;
                else if (at >= LRH_BYTES + 1 && at <= LRH_BYTES + 3)
                    byte_rule[7:0] = 8'hFF;
                else if (at == LRH_BYTES + 7)
                    byte_rule[7:0] = 8'hFF;
                else if (at == LRH_BYTES + GRH_BYTES + 4)
                    byte_rule[7:0] = 8'hFF;
            end else begin
                if (at == 0)
                    byte_rule[7:0] = 8'hF0;
                else if (at == LRH_BYTES + 4)
                    byte_rule[7:0] = 8'hFF;
            end
        end else begin
            ip = variant[1] ? 18 : 14;
            udp = ip + (variant[0] ? 40 : 20);
            if (at < 6)
                byte_rule = {8'h00, PREFIX_HEAD[8*at +: 8]};
            else if (at < 14)
                byte_rule[7:0] = 8'hFF;
            else if (at < ip)
                byte_rule = {8'h00, PREFIX_TAG[8*(at-14) +: 8]};
            else if (variant[0] && at == ip)
                byte_rule[7:0] = 8'h0F;
            else if (variant[0] && ((at >= ip + 1 && at <= ip + 3) || at == ip + 7))
                byte_rule[7:0] = 8'hFF;
            else if (!variant[0] && (at == ip + 1 || at == ip + 8 || at == ip + 10 || at == ip + 11))
                byte_rule[7:0] = 8'hFF;
            else if (at == udp + 6 || at == udp + 7 || at == udp + 8 + 4)
                byte_rule[7:0] = 8'hFF;
        end
    end
endfunction

// Beats 0 .. MASK_BEATS-1 of one variant's AND (and_mask = 1) or OR masks.
function [MASK_BITS-1:0] beat_masks(input [2:0] variant, input and_mask);
    integer p;
    reg [15:0] rule;
    begin
        for (p = 0; p < MASK_BITS / 8; p = p + 1) begin
            rule = byte_rule(variant, p);
            beat_masks[8*p +: 8] = and_mask ? rule[15:8] : rule[7:0];
        end
    end
endfunction

localparam [MASK_BITS-1:0] OR_LOCAL = beat_masks(3'b000, 1'b0);
localparam [MASK_BITS-1:0] OR_GLOBAL = beat_masks(3'b001, 1'b0);
localparam [MASK_BITS-1:0] OR_E4 = beat_masks(3'b100, 1'b0);
localparam [MASK_BITS-1:0] OR_E6 = beat_masks(3'b101, 1'b0);
localparam [MASK_BITS-1:0] OR_T4 = beat_masks(3'b110, 1'b0);
localparam [MASK_BITS-1:0] OR_T6 = beat_masks(3'b111, 1'b0);
localparam [MASK_BITS-1:0] AND_E = beat_masks(3'b100, 1'b1);   // the same for both IP versions
localparam [MASK_BITS-1:0] AND_T = beat_masks(3'b110, 1'b1);
localparam [BEAT_BITS-1:0] BEAT_PAST = MASK_BEATS[BEAT_BITS-1:0];  // index of every later beat

reg  [BEAT_BITS-1:0]  beat;       // index of the current beat in the frame, saturating
reg  [15:0]           pos;        // frame bytes before the current beat
reg  [8*SEEN-1:0]     seen_q;     // the frame's first bytes, as far as they have passed

// The first SEEN bytes as known in this beat: the current beat's where it holds them.
wire first = beat == {BEAT_BITS{1'b0}};
reg  [8*SEEN-1:0] seen;
integer j;
always @* begin
    for (j = 0; j < SEEN; j = j + 1)
        seen[8*j +: 8] = (j / KEEP_WIDTH == {{(32-BEAT_BITS){1'b0}}, beat}) ? s_data[8*(j % KEEP_WIDTH) +: 8]
                                                                      : seen_q[8*j +: 8];
end

reg  global_q;                    // LNH of the IB packet in progress is 3
wire is_global = first ? (s_data[9:8] == 2'b11) : global_q;
wire vlan_tag = {seen[12*8 +: 8], seen[13*8 +: 8]} == 16'h8100;
wire [3:0] ip_version = vlan_tag ? seen[18*8+4 +: 4] : seen[14*8+4 +: 4];
wire ipv6 = ip_version == 4'd6;

// RoCE: the IP packet's end in the frame (IPv4 total length, or IPv6 payload length + 40)
wire [15:0] ip_at = vlan_tag ? 16'd18 : 16'd14;
wire [15:0] v4_len = vlan_tag ? {seen[20*8 +: 8], seen[21*8 +: 8]} : {seen[16*8 +: 8], seen[17*8 +: 8]};
wire [15:0] v6_len = vlan_tag ? {seen[22*8 +: 8], seen[23*8 +: 8]} : {seen[18*8 +: 8], seen[19*8 +: 8]};
wire [15:0] ip_end = ip_at + (ipv6 ? v6_len + 16'd40 : v4_len);
// the lengths are known from the beat that holds byte SEEN - 1 on
wire        len_known = pos + KEEP_WIDTH[15:0] >= SEEN[15:0];
wire [15:0] room = ip_end > pos ? ip_end - pos : 16'd0;
wire [KEEP_WIDTH-1:0] in_ip = !eth || !len_known || room >= KEEP_WIDTH[15:0] ? {KEEP_WIDTH{1'b1}}
                            : ~({KEEP_WIDTH{1'b1}} << room);

reg  [DATA_WIDTH-1:0] and_bits;
reg  [DATA_WIDTH-1:0] or_bits;
integer b;
always @* begin
    and_bits = {DATA_WIDTH{1'b1}};
    or_bits = {DATA_WIDTH{1'b0}};
    for (b = 0; b < MASK_BEATS; b = b + 1)
        if (beat == b[BEAT_BITS-1:0]) begin
            if (!eth)
                or_bits = is_global ? OR_GLOBAL[b*DATA_WIDTH +: DATA_WIDTH]
                                    : OR_LOCAL[b*DATA_WIDTH +: DATA_WIDTH];
            else begin
                and_bits = vlan_tag ? AND_T[b*DATA_WIDTH +: DATA_WIDTH] : AND_E[b*DATA_WIDTH +: DATA_WIDTH];
                or_bits = vlan_tag ? (ipv6 ? OR_T6[b*DATA_WIDTH +: DATA_WIDTH] : OR_T4[b*DATA_WIDTH +: DATA_WIDTH])
                                 : (ipv6 ? OR_E6[b*DATA_WIDTH +: DATA_WIDTH] : OR_E4[b*DATA_WIDTH +: DATA_WIDTH]);
            end
        end
end

always @(posedge clk) begin
    if (s_valid) begin
        if (s_last) begin
            beat <= {BEAT_BITS{1'b0}};
            pos <= 16'd0;
        end else begin
            if (beat != BEAT_PAST)
                beat <= beat + 1'b1;
            pos <= pos + KEEP_WIDTH[15:0];
        end
        if (first)
            global_q <= is_global;
        if (pos < SEEN[15:0])
            seen_q <= seen;
    end
    if (rst) begin
        beat     <= {BEAT_BITS{1'b0}};
        pos      <= 16'd0;
        global_q <= 1'b0;
    end
end

crc_stream #(
    .DATA_WIDTH(DATA_WIDTH),
    .CRC_WIDTH(32),
    .POLY(POLY),
    .INIT(32'hFFFFFFFF),
    .XOR_OUT(32'hFFFFFFFF)
) crc (
    .clk(clk),
    .rst(rst),
    .s_valid(s_valid),
    .s_first(first),
    .s_data((s_data & and_bits) | or_bits),
    .s_keep(s_keep & in_ip),
    .m_crc(m_icrc)
);

assign m_icrc_valid = s_valid & s_last;

endmodule

`resetall
`endif
