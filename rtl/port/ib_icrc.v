// InfiniBand ICRC of a packet stream: CRC-32 (reflected 0xEDB88320, init and final XOR all-ones)
// over LRH through the pad, with the fields a switch or router may change read as all-ones.
//
// Input: the packet's beats from the first LRH byte to the last pad byte (no ICRC, no VCRC),
// byte 0 of the packet in s_data[7:0] of the first beat. Every beat but the last carries all
// DATA_WIDTH/8 bytes; the last carries s_keep contiguous from byte 0. s_valid marks a beat that
// is transferred this cycle (the caller's valid & ready). m_icrc is valid with the last beat, in
// the same cycle, and goes on the wire least-significant byte first.
//
// Variant fields (LNH = LRH byte 1 bits [1:0]; LNH 3 = global, anything else is masked as local):
//   local:  LRH byte 0 |= 0xF0 (VL), BTH byte 4 = 0xFF (Resv8a; BTH at byte 8)
//   global: LRH bytes 0-7 = 0xFF, GRH byte 0 |= 0x0F and bytes 1-3 = 0xFF (TClass, FlowLabel),
//           GRH byte 7 = 0xFF (HopLmt), BTH byte 4 = 0xFF (GRH at byte 8, BTH at byte 48)
// Every replacement sets bits, so each is an OR mask chosen by the beat's index in the packet;
// the index saturates once the beat is past the last variant byte (packet byte 52).
`ifndef RDMA_IB_ICRC_V
`define RDMA_IB_ICRC_V
`default_nettype none

module ib_icrc #(
    parameter DATA_WIDTH = 64      // beat width in bits: a multiple of 8, at least 32
) (
    input  wire                     clk,
    input  wire                     rst,

    input  wire                     s_valid,    // a beat is transferred this cycle
    input  wire [DATA_WIDTH-1:0]    s_data,
    input  wire [DATA_WIDTH/8-1:0]  s_keep,     // all ones except on the last beat
    input  wire                     s_last,     // last beat of the packet (end of pad)

    output wire [31:0]              m_icrc,     // ICRC of the packet, valid with m_icrc_valid
    output wire                     m_icrc_valid
);

localparam KEEP_WIDTH = DATA_WIDTH / 8;
localparam LRH_BYTES = 8;
localparam GRH_BYTES = 40;
localparam LAST_VARIANT = LRH_BYTES + GRH_BYTES + 4;     // global BTH Resv8a
localparam MASK_BEATS = LAST_VARIANT / KEEP_WIDTH + 1;   // beats that can hold a variant byte
localparam BEAT_BITS = $clog2(MASK_BEATS + 1);
localparam MASK_BITS = MASK_BEATS * DATA_WIDTH;

// The OR mask of byte `at` of the packet, for a local or a global packet.
function [7:0] byte_mask(input is_global, input integer at);
    begin
        byte_mask = 8'h00;
        if (is_global) begin
            if (at < LRH_BYTES)
                byte_mask = 8'hFF;
            else if (at == LRH_BYTES)
                byte_mask = 8'h0F;
            else if (at >= LRH_BYTES + 1 && at <= LRH_BYTES + 3)
                byte_mask = 8'hFF;
            else if (at == LRH_BYTES + 7)
                byte_mask = 8'hFF;
            else if (at == LRH_BYTES + GRH_BYTES + 4)
                byte_mask = 8'hFF;
        end else begin
            if (at == 0)
                byte_mask = 8'hF0;
            else if (at == LRH_BYTES + 4)
                byte_mask = 8'hFF;
        end
    end
endfunction

// The masks of beats 0 .. MASK_BEATS-1, beat b in bits [b*DATA_WIDTH +: DATA_WIDTH].
function [MASK_BITS-1:0] beat_masks(input is_global);
    integer p;
    begin
        for (p = 0; p < MASK_BITS / 8; p = p + 1)
            beat_masks[8*p +: 8] = byte_mask(is_global, p);
    end
endfunction

localparam [MASK_BITS-1:0] LOCAL_MASKS = beat_masks(1'b0);
localparam [MASK_BITS-1:0] GLOBAL_MASKS = beat_masks(1'b1);
localparam [BEAT_BITS-1:0] BEAT_PAST = MASK_BEATS[BEAT_BITS-1:0];  // index of every later beat

reg  [BEAT_BITS-1:0]  beat;       // index of the current beat in the packet, saturating
reg                   global_q;   // LNH of the packet in progress is 3

// LNH is in byte 1, so the first beat decides from its own data.
wire first = (beat == {BEAT_BITS{1'b0}});
wire is_global = first ? (s_data[9:8] == 2'b11) : global_q;

reg  [DATA_WIDTH-1:0] or_bits;
integer b;
always @* begin
    or_bits = {DATA_WIDTH{1'b0}};
    for (b = 0; b < MASK_BEATS; b = b + 1)
        if (beat == b[BEAT_BITS-1:0])
            or_bits = is_global ? GLOBAL_MASKS[b*DATA_WIDTH +: DATA_WIDTH]
                                : LOCAL_MASKS[b*DATA_WIDTH +: DATA_WIDTH];
end

always @(posedge clk) begin
    if (s_valid) begin
        if (s_last)
            beat <= {BEAT_BITS{1'b0}};
        else if (beat != BEAT_PAST)
            beat <= beat + 1'b1;
        if (first)
            global_q <= is_global;
    end
    if (rst) begin
        beat     <= {BEAT_BITS{1'b0}};
        global_q <= 1'b0;
    end
end

crc_stream #(
    .DATA_WIDTH(DATA_WIDTH),
    .CRC_WIDTH(32),
    .POLY(32'hEDB88320),
    .INIT(32'hFFFFFFFF),
    .XOR_OUT(32'hFFFFFFFF)
) crc (
    .clk(clk),
    .rst(rst),
    .s_valid(s_valid),
    .s_first(first),
    .s_data(s_data | or_bits),
    .s_keep(s_keep),
    .m_crc(m_icrc)
);

assign m_icrc_valid = s_valid & s_last;

endmodule

`resetall
`endif
