// A slow, lossy link for the simulation harnesses (a testbench model, not RTL): between one
// port's TX (s_axis) and the far port's RX (m_axis) it stores whole packets (one packet per
// frame: InfiniBand, LRH .. VCRC, or with link_eth set Ethernet, a RoCE v2 frame destination
// MAC .. FCS) and delivers them `latency` cycles late, and drops, duplicates, corrupts, delays,
// reorders or ECN-marks chosen packets. The testbench sets it through the registers below
// (tb/link_faults.py); their defaults are a perfect InfiniBand link.
//
// Timing: a packet whose last beat enters in cycle T has its first beat on m_axis in cycle
// T + 1 + latency (later only while m_axis is busy with earlier packets), and then one beat per
// cycle while the receiver takes them: with latency 0 the link is a wire one packet long.
// Full rate in and out at once; up to DEPTH packets stored, then s_axis_tready drops (never a
// loss). A packet longer than MAX_BEATS is cut there and sent aborted (tuser).
//
// Faults are decided per packet as its last beat enters, from a 64-bit xorshift that restarts
// from `seed` at reset (or when `seed` changes): the same seed and packets give the same faults
// whatever the timing. Packets wait in an arrival-order ring (delayed ones in a queue sorted by
// release time, reordered ones in a hold list), so an idle link tests two bits per cycle and
// work happens only when a beat moves, a packet ends or a release time comes.
`timescale 1ns / 1ps
`default_nettype none

module sim_link_fault #(
    parameter DATA_WIDTH = 256,                     // link data width in bits: 64, 256 or 512
    parameter DEPTH = 64,                           // packets stored at once, at least 2
    parameter MAX_BEATS = (4608 * 8) / DATA_WIDTH,  // beats kept per packet: path MTU + headers
    parameter FORCES = 8,                           // entries in the forced-fault table
    parameter QPN_SET = 256                         // QPNs below this can be aimed at (qpn_set)
) (
    input  wire                    clk,
    input  wire                    rst,
    input  wire [63:0]             cycle,     // the harness's free-running cycle counter

    input  wire [DATA_WIDTH-1:0]   s_axis_tdata,
    input  wire [DATA_WIDTH/8-1:0] s_axis_tkeep,
    input  wire                    s_axis_tvalid,
    output wire                    s_axis_tready,
    input  wire                    s_axis_tlast,
    input  wire                    s_axis_tuser,

    output reg  [DATA_WIDTH-1:0]   m_axis_tdata = {DATA_WIDTH{1'b0}},
    output reg  [DATA_WIDTH/8-1:0] m_axis_tkeep = {DATA_WIDTH/8{1'b0}},
    output reg                     m_axis_tvalid = 1'b0,
    input  wire                    m_axis_tready,
    output reg                     m_axis_tlast = 1'b0,
    output reg                     m_axis_tuser = 1'b0
);

localparam KEEP = DATA_WIDTH / 8;
localparam LANE_BITS = $clog2(KEEP);
localparam HDR_BYTES = 80;     // bytes read at a packet's end: a tagged IPv6 frame's BTH ends at 78
localparam HDR_BEATS = (HDR_BYTES * 8 + DATA_WIDTH - 1) / DATA_WIDTH;
localparam SLOT_BITS = $clog2(DEPTH);
localparam [63:0] SEED_MIX = 64'h9E37_79B9_7F4A_7C15;
localparam [2:0] ACT_NONE = 3'd0, ACT_DROP = 3'd1, ACT_DUP = 3'd2, ACT_CORRUPT = 3'd3,
                 ACT_DELAY = 3'd4, ACT_REORDER = 3'd5, ACT_MARK = 3'd6;
localparam [3:0] FORCE_NONE = 4'd7;     // a forced-fault entry that forces no action
localparam [15:0] ETHERTYPE_VLAN = 16'h8100, ETHERTYPE_IPV4 = 16'h0800,
                  ETHERTYPE_IPV6 = 16'h86DD;
localparam ETH_MIN_FRAME = 64;  // bytes with the FCS: shorter frames are left alone

// ---------------------------------------------------------------------------------------------
// Run-time configuration, written by the testbench (tb/link_faults.py); rst leaves it alone.
//
// link_eth says what the packets are: 0 InfiniBand, the BTH at byte 8, or 48 when LRH LNH = 3;
// 1 Ethernet (RoCE v2), the BTH after the Ethernet header (14 bytes, 18 with an 802.1Q tag,
// TPID 0x8100), the IP header (20 bytes under EtherType 0x0800, 40 under any other: 0x86DD)
// and UDP (8): at byte 42, 46, 62 or 66. The link CRC is the VCRC on InfiniBand, the FCS on
// Ethernet.
//
// One 16-bit draw u per packet picks at most one action: drop if u < drop_rate, else dup if
// u < drop_rate + dup_rate, then corrupt, delay, reorder, mark, so each rate (1/65536 units,
// 65536 = always, sum at most 65536) is the exact probability of its action for an eligible
// packet: a marked packet is not also delayed or dropped (one action per packet keeps the
// seeded plan a function of the packets alone). Eligible: its kind enabled in kind_mask (bit 0
// requests: any opcode but RC 0x0D..0x12; bit 1 ACK/NAK and atomic ACK, RC 0x11/0x12; bit 2
// READ responses, RC 0x0D..0x10) and, with qpn_set_en, BTH DestQP one whose bit is set in
// qpn_set (a DestQP of QPN_SET or more never is). Forced table entry i (force_idx[32i +: 32],
// force_act[4i +: 4]) gives packet number force_idx (from 0 since reset) its action whatever
// the rates and filters say.
//
// Actions (last_act, force_act): 0 none (in force_act: entry unused; 7 forces none), 1 drop,
// 2 dup (sent twice, back to back), 3 corrupt, 4 delay (held delay_cycles more: later packets
// overtake it), 5 reorder (held until the next packet that leaves in order has been queued,
// then right behind it; alone once delay_cycles have passed since its own release time if no
// such packet comes), 6 mark.
// corrupt: corrupt_kind 0 (ICRC) flips one bit of the ICRC and recomputes the link CRC, so
// only the ICRC is wrong: on InfiniBand the 4 bytes before the VCRC, on Ethernet the 4 bytes
// that end the IP packet by its length field (a short frame's padding follows them); 1 (link
// CRC) flips one bit of the VCRC (16 bits) or FCS (32); 2 either, drawn per packet; the bit is
// drawn too. A packet under 6 bytes (InfiniBand), or a frame under 64 bytes or whose ICRC would
// reach into the FCS (Ethernet), passes unchanged, as action none.
// mark: a congested switch's ECN mark (RFC 3168), Ethernet only: an ECN-capable IPv4 or IPv6
// packet (ECN 01 or 10) leaves with ECN 11 (CE), the IPv4 header checksum updated (RFC 1624:
// a wrong one stays wrong) and the FCS recomputed; the ICRC stays right (ECN is masked out of
// it). Any other packet (ECN 00 or 11, not IP, a frame under 64 bytes, every InfiniBand
// packet: it has no ECN field) passes unchanged, as action none.

reg                 link_eth = 1'b0;       // the packets are Ethernet (RoCE v2) frames
reg [31:0]          latency = 32'd0;       // cycles added after the last beat entered
reg [63:0]          seed = 64'd0;          // fault generator seed
reg [16:0]          drop_rate = 17'd0;     // probabilities in 1/65536 (65536 = every packet)
reg [16:0]          dup_rate = 17'd0;
reg [16:0]          corrupt_rate = 17'd0;
reg [16:0]          delay_rate = 17'd0;
reg [16:0]          reorder_rate = 17'd0;
reg [16:0]          mark_rate = 17'd0;
reg [1:0]           corrupt_kind = 2'd0;   // 0 ICRC (link CRC recomputed), 1 link CRC, 2 either
reg [31:0]          delay_cycles = 32'd0;  // extra hold of a delayed packet; reorder time-out
reg [2:0]           kind_mask = 3'b111;    // packet kinds the rates apply to (see above)
reg                 qpn_set_en = 1'b0;     // rates apply only to the DestQPs set in qpn_set
reg [QPN_SET-1:0]   qpn_set = {QPN_SET{1'b0}};
reg [FORCES*32-1:0] force_idx = {FORCES*32{1'b0}};   // entry i: packet number ...
reg [FORCES*4-1:0]  force_act = {FORCES*4{1'b0}};    // ... and its action (0 = entry unused)

// ---------------------------------------------------------------------------------------------
// Counters and the last decision, for the testbench; cleared by rst.

reg [31:0] pkts_in = 32'd0;       // packets whose last beat entered
reg [31:0] pkts_out = 32'd0;      // packets whose last beat left (a duplicate counts twice)
reg [31:0] dropped = 32'd0;
reg [31:0] duplicated = 32'd0;
reg [31:0] corrupted = 32'd0;
reg [31:0] delayed = 32'd0;
reg [31:0] reordered = 32'd0;
reg [31:0] marked = 32'd0;        // packets marked CE (not those a mark left unchanged)
reg [31:0] truncated = 32'd0;     // packets longer than MAX_BEATS: cut there, sent aborted
reg [31:0] in_flight = 32'd0;     // packets stored (slots in use)
reg [31:0] last_idx = 32'hFFFF_FFFF;  // the packet last decided on: its number ...
reg [2:0]  last_act = ACT_NONE;       // ... its action,
reg [7:0]  last_opcode = 8'd0;        // ... its BTH OpCode, DestQP and PSN
reg [23:0] last_qpn = 24'd0;
reg [23:0] last_psn = 24'd0;

// ---------------------------------------------------------------------------------------------
// Storage: DEPTH slots of MAX_BEATS beats; per beat the data and {tuser, tkeep}

reg [DATA_WIDTH-1:0] mem_data [0:DEPTH*MAX_BEATS-1];
reg [KEEP:0]         mem_side [0:DEPTH*MAX_BEATS-1];
reg [15:0]           slot_beats [0:DEPTH-1];
reg [63:0]           slot_release [0:DEPTH-1];     // cycle from which it may leave
reg                  slot_dup [0:DEPTH-1];

// queues of slot numbers: free slots, the arrival-order ring, the delayed queue (sorted by
// release time) and the reorder hold list
reg [SLOT_BITS-1:0] free_q [0:DEPTH-1];
reg [SLOT_BITS-1:0] ring_q [0:DEPTH-1];
reg [SLOT_BITS-1:0] delay_q [0:DEPTH-1];
reg [SLOT_BITS-1:0] hold_q [0:DEPTH-1];
integer fresh = 0;                      // slots 0 .. fresh-1 have been used since reset
integer free_rd = 0, free_n = 0;
integer ring_rd = 0, ring_n = 0;
integer delay_rd = 0, delay_n = 0;
integer hold_rd = 0, hold_n = 0;

// the packet coming in and the one going out
reg                 in_busy = 1'b0;
reg [SLOT_BITS-1:0] in_slot = {SLOT_BITS{1'b0}};
integer             in_beat = 0;        // beats of it so far
reg [HDR_BEATS*DATA_WIDTH-1:0] hdr = {HDR_BEATS*DATA_WIDTH{1'b0}};  // its first HDR_BEATS beats
reg                 out_busy = 1'b0;
reg [SLOT_BITS-1:0] out_slot = {SLOT_BITS{1'b0}};
integer             out_beat = 0;
integer             out_copies = 0;     // copies left to send, this one included

reg [63:0] rng = 64'd0;
reg [63:0] rng_seed = 64'd0;            // the seed rng started from
reg        rng_loaded = 1'b0;
reg        s_ready = 1'b0;
reg        ready_dirty = 1'b1;          // s_ready must be recomputed
reg        idle = 1'b0;                 // nothing stored, nothing on m_axis: skip the cycle

assign s_axis_tready = s_ready;

function integer wrap(input integer at);
    wrap = at >= DEPTH ? at - DEPTH : at;
endfunction

// the VCRC's CRC-16 (reflected polynomial 0xD008, as tb/ib_crc.py), one byte further
function [15:0] crc16_byte(input [15:0] crc, input [7:0] data);
    integer k;
    reg [15:0] c;
    begin
        c = crc ^ {8'd0, data};
        for (k = 0; k < 8; k = k + 1)
            c = c[0] ? (c >> 1) ^ 16'hD008 : c >> 1;
        crc16_byte = c;
    end
endfunction

// the FCS's CRC-32 (reflected polynomial 0xEDB88320, as zlib) a byte at a time: a frame's FCS
// is recomputed over up to 4.6 KB
reg [31:0] crc32_table [0:255];
initial begin : crc32_init
    integer i, k;
    reg [31:0] c;
    for (i = 0; i < 256; i = i + 1) begin
        c = i;
        for (k = 0; k < 8; k = k + 1)
            c = c[0] ? (c >> 1) ^ 32'hEDB8_8320 : c >> 1;
        crc32_table[i] = c;
    end
end

// one's complement addition (RFC 1071)
function [15:0] ones_add(input [15:0] a, input [15:0] b);
    reg [16:0] s;
    begin
        s = {1'b0, a} + {1'b0, b};
        ones_add = s[15:0] + {15'd0, s[16]};
    end
endfunction

// byte `at` of the header captured (the packet's first HDR_BYTES bytes)
function [7:0] hdr_byte(input integer at);
    hdr_byte = hdr[at * 8 +: 8];
endfunction

// ---------------------------------------------------------------------------------------------
// Queue helpers (blocking: the whole model is one always block)

task free_slot(input [SLOT_BITS-1:0] slot);
    begin
        free_q[wrap(free_rd + free_n)] = slot;
        free_n = free_n + 1;
        ready_dirty = 1'b1;
    end
endtask

task ring_push(input [SLOT_BITS-1:0] slot);
    begin
        ring_q[wrap(ring_rd + ring_n)] = slot;
        ring_n = ring_n + 1;
    end
endtask

// the held packets go into the ring, in their order, no earlier than `after`
task release_holds(input [63:0] after);
    reg [SLOT_BITS-1:0] held;
    begin
        while (hold_n != 0) begin
            held = hold_q[hold_rd];
            if (slot_release[held] < after)
                slot_release[held] = after;
            ring_push(held);
            hold_rd = wrap(hold_rd + 1);
            hold_n = hold_n - 1;
        end
    end
endtask

task delay_insert(input [SLOT_BITS-1:0] slot);
    integer i;
    reg done;
    begin
        i = delay_n;
        done = 1'b0;
        while (i > 0 && !done) begin
            if (slot_release[delay_q[wrap(delay_rd + i - 1)]] > slot_release[slot]) begin
                delay_q[wrap(delay_rd + i)] = delay_q[wrap(delay_rd + i - 1)];
                i = i - 1;
            end else
                done = 1'b1;
        end
        delay_q[wrap(delay_rd + i)] = slot;
        delay_n = delay_n + 1;
    end
endtask

// flip bit `bit_at` of byte `byte_at` of the packet stored from beat `base`
task flip_bit(input integer base, input integer byte_at, input integer bit_at);
    reg [DATA_WIDTH-1:0] w;
    begin
        w = mem_data[base + (byte_at >> LANE_BITS)];
        w[(byte_at & (KEEP - 1)) * 8 + bit_at] = ~w[(byte_at & (KEEP - 1)) * 8 + bit_at];
        mem_data[base + (byte_at >> LANE_BITS)] = w;
    end
endtask

task set_byte(input integer base, input integer byte_at, input [7:0] value);
    reg [DATA_WIDTH-1:0] w;
    begin
        w = mem_data[base + (byte_at >> LANE_BITS)];
        w[(byte_at & (KEEP - 1)) * 8 +: 8] = value;
        mem_data[base + (byte_at >> LANE_BITS)] = w;
    end
endtask

// the length in bytes of the packet of `beats` beats stored from beat `base` (every beat full
// but the last, tkeep contiguous)
function integer packet_bytes(input integer base, input integer beats);
    reg [KEEP-1:0] keep;
    integer k, kept;
    begin
        keep = mem_side[base + beats - 1][KEEP-1:0];
        kept = 0;
        for (k = 0; k < KEEP; k = k + 1)
            if (keep[k])
                kept = k + 1;
        packet_bytes = (beats - 1) * KEEP + kept;
    end
endfunction

// the link CRC of that packet, `length` bytes, recomputed over the bytes before it and stored
// least-significant byte first: the VCRC, or on Ethernet the FCS
task reseal(input integer base, input integer length);
    reg [DATA_WIDTH-1:0] w;
    reg [31:0] crc;
    reg [7:0] data;
    integer b, crc_at;
    begin
        crc_at = length - (link_eth ? 4 : 2);
        crc = 32'hFFFF_FFFF;
        w = {DATA_WIDTH{1'b0}};
        for (b = 0; b < crc_at; b = b + 1) begin
            if ((b & (KEEP - 1)) == 0)
                w = mem_data[base + (b >> LANE_BITS)];
            data = w[(b & (KEEP - 1)) * 8 +: 8];
            if (link_eth)
                crc = (crc >> 8) ^ crc32_table[crc[7:0] ^ data];
            else
                crc[15:0] = crc16_byte(crc[15:0], data);
        end
        crc = ~crc;
        for (b = crc_at; b < length; b = b + 1)
            set_byte(base, b, crc[(b - crc_at) * 8 +: 8]);
    end
endtask

// that packet, `length` bytes: bit `bit_at` of its ICRC (from byte icrc_at) flipped and the link
// CRC recomputed (icrc), or bit `bit_at` of its link CRC flipped
task corrupt(input integer base, input integer length, input integer icrc_at, input icrc,
             input integer bit_at);
    begin
        if (icrc) begin
            flip_bit(base, icrc_at + bit_at / 8, bit_at % 8);
            reseal(base, length);
        end else
            flip_bit(base, length - (link_eth ? 4 : 2) + bit_at / 8, bit_at % 8);
    end
endtask

// that Ethernet frame, `length` bytes, its IP header from byte ip_at (IPv4 when v4) and
// ECN-capable, marked CE: the IPv4 header checksum updated for its first word's change
// (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m')), the FCS recomputed
task mark(input integer base, input integer length, input integer ip_at, input v4);
    reg [15:0] m, sum;
    begin
        if (v4) begin
            m = {hdr_byte(ip_at), hdr_byte(ip_at + 1)};
            sum = ones_add(ones_add(~{hdr_byte(ip_at + 10), hdr_byte(ip_at + 11)}, ~m),
                           m | 16'h0003);
            set_byte(base, ip_at + 1, hdr_byte(ip_at + 1) | 8'h03);
            set_byte(base, ip_at + 10, ~sum[15:8]);
            set_byte(base, ip_at + 11, ~sum[7:0]);
        end else
            set_byte(base, ip_at + 1, hdr_byte(ip_at + 1) | 8'h30);     // traffic class[1:0]
        reseal(base, length);
    end
endtask

// ---------------------------------------------------------------------------------------------
// The packet just complete in slot in_slot, `beats` beats stored (`cut`: more arrived): decide
// its fault, apply a corruption, and queue it

task commit(input integer beats, input cut);
    integer base, f, length, ip_at, ip_end;
    reg [15:0] ethertype;
    reg [95:0] bth;
    reg [7:0] opcode;
    reg [1:0] ecn;
    reg [23:0] qpn, psn;
    reg match, forced, icrc;
    reg [19:0] bound;
    reg [19:0] u;
    reg [2:0] act;
    reg [63:0] rel;
    begin
        base = in_slot * MAX_BEATS;
        slot_beats[in_slot] = beats[15:0];
        if (cut)
            mem_side[base + beats - 1] = mem_side[base + beats - 1] | {1'b1, {KEEP{1'b0}}};

        // the BTH (bytes 0..11 at [8k +: 8]): after the LRH, or after the GRH when LNH = 3; on
        // Ethernet after the Ethernet, IP and UDP headers
        ethertype = 16'd0;
        ip_at = 0;
        if (link_eth) begin
            ip_at = 14;
            ethertype = {hdr_byte(12), hdr_byte(13)};
            if (ethertype == ETHERTYPE_VLAN) begin
                ip_at = 18;
                ethertype = {hdr_byte(16), hdr_byte(17)};
            end
            bth = hdr[(ip_at + (ethertype == ETHERTYPE_IPV4 ? 20 : 40) + 8) * 8 +: 96];
        end else if (hdr[9:8] == 2'd3)
            bth = hdr[48 * 8 +: 96];
        else
            bth = hdr[8 * 8 +: 96];
        opcode = bth[7:0];
        qpn = {bth[47:40], bth[55:48], bth[63:56]};
        psn = {bth[79:72], bth[87:80], bth[95:88]};
        if (opcode >= 8'h0D && opcode <= 8'h10)
            match = kind_mask[2];
        else if (opcode == 8'h11 || opcode == 8'h12)
            match = kind_mask[1];
        else
            match = kind_mask[0];
        if (qpn_set_en && (qpn >= QPN_SET || !qpn_set[qpn]))
            match = 1'b0;

        // one generator step per packet
        if (!rng_loaded || rng_seed != seed) begin
            rng = seed ^ SEED_MIX;
            if (rng == 64'd0)
                rng = SEED_MIX;
            rng_seed = seed;
            rng_loaded = 1'b1;
        end
        rng = rng ^ (rng << 13);
        rng = rng ^ (rng >> 7);
        rng = rng ^ (rng << 17);
        u = {4'd0, rng[63:48]};
        act = ACT_NONE;
        if (match) begin
            bound = {3'd0, drop_rate};
            if (u < bound)
                act = ACT_DROP;
            bound = bound + {3'd0, dup_rate};
            if (act == ACT_NONE && u < bound)
                act = ACT_DUP;
            bound = bound + {3'd0, corrupt_rate};
            if (act == ACT_NONE && u < bound)
                act = ACT_CORRUPT;
            bound = bound + {3'd0, delay_rate};
            if (act == ACT_NONE && u < bound)
                act = ACT_DELAY;
            bound = bound + {3'd0, reorder_rate};
            if (act == ACT_NONE && u < bound)
                act = ACT_REORDER;
            bound = bound + {3'd0, mark_rate};
            if (act == ACT_NONE && u < bound)
                act = ACT_MARK;
        end
        forced = 1'b0;
        if (force_act != {FORCES*4{1'b0}})
            for (f = 0; f < FORCES; f = f + 1)
                if (!forced && force_act[f * 4 +: 4] != 4'd0
                        && force_act[f * 4 +: 4] <= FORCE_NONE
                        && force_idx[f * 32 +: 32] == pkts_in) begin
                    forced = 1'b1;
                    act = force_act[f * 4 +: 4] == FORCE_NONE ? ACT_NONE : force_act[f * 4 +: 3];
                end

        // the changes of a corrupt or mark, or none where the packet does not allow it
        length = 0;
        if (act == ACT_CORRUPT || act == ACT_MARK)
            length = packet_bytes(base, beats);
        if (act == ACT_CORRUPT) begin
            icrc = corrupt_kind == 2'd0 || (corrupt_kind == 2'd2 && !rng[40]);
            if (!link_eth) begin
                if (length < 6)
                    act = ACT_NONE;
                else
                    corrupt(base, length, length - 6, icrc,
                            icrc ? {27'd0, rng[36:32]} : {28'd0, rng[35:32]});
            end else begin
                // the ICRC ends the IP packet, which the IP header's length field gives
                if (ethertype == ETHERTYPE_IPV4)
                    ip_end = ip_at + {16'd0, hdr_byte(ip_at + 2), hdr_byte(ip_at + 3)};
                else
                    ip_end = ip_at + 40 + {16'd0, hdr_byte(ip_at + 4), hdr_byte(ip_at + 5)};
                if (length < ETH_MIN_FRAME || (icrc && ip_end > length - 4))
                    act = ACT_NONE;
                else
                    corrupt(base, length, ip_end - 4, icrc, {27'd0, rng[36:32]});
            end
        end
        if (act == ACT_MARK) begin
            if (ethertype == ETHERTYPE_IPV4)
                ecn = hdr[(ip_at + 1) * 8 +: 2];
            else
                ecn = hdr[(ip_at + 1) * 8 + 4 +: 2];
            if (link_eth && length >= ETH_MIN_FRAME && ecn[1] != ecn[0]
                    && (ethertype == ETHERTYPE_IPV4 || ethertype == ETHERTYPE_IPV6))
                mark(base, length, ip_at, ethertype == ETHERTYPE_IPV4);
            else
                act = ACT_NONE;
        end

        last_idx = pkts_in;
        last_act = act;
        last_opcode = opcode;
        last_qpn = qpn;
        last_psn = psn;
        pkts_in = pkts_in + 32'd1;

        rel = cycle + {32'd0, latency};
        slot_release[in_slot] = rel;
        slot_dup[in_slot] = act == ACT_DUP;
        case (act)
            ACT_DROP: begin
                dropped = dropped + 32'd1;
                free_slot(in_slot);
            end
            ACT_DELAY: begin
                delayed = delayed + 32'd1;
                slot_release[in_slot] = rel + {32'd0, delay_cycles};
                delay_insert(in_slot);
            end
            ACT_REORDER: begin
                reordered = reordered + 32'd1;
                hold_q[wrap(hold_rd + hold_n)] = in_slot;
                hold_n = hold_n + 1;
            end
            default: begin
                if (act == ACT_DUP)
                    duplicated = duplicated + 32'd1;
                if (act == ACT_CORRUPT)
                    corrupted = corrupted + 32'd1;
                if (act == ACT_MARK)
                    marked = marked + 32'd1;
                ring_push(in_slot);
                release_holds(rel);
            end
        endcase
    end
endtask

// ---------------------------------------------------------------------------------------------

always @(posedge clk) begin : model
    integer at;
    reg [KEEP:0] side;
    reg last, valid;
    if (rst) begin
        fresh = 0;
        free_rd = 0; free_n = 0;
        ring_rd = 0; ring_n = 0;
        delay_rd = 0; delay_n = 0;
        hold_rd = 0; hold_n = 0;
        in_busy = 1'b0;
        out_busy = 1'b0;
        rng_loaded = 1'b0;
        pkts_in = 32'd0; pkts_out = 32'd0;
        dropped = 32'd0; duplicated = 32'd0; corrupted = 32'd0; delayed = 32'd0;
        reordered = 32'd0; marked = 32'd0; truncated = 32'd0; in_flight = 32'd0;
        last_idx = 32'hFFFF_FFFF; last_act = ACT_NONE;
        last_opcode = 8'd0; last_qpn = 24'd0; last_psn = 24'd0;
        m_axis_tvalid <= 1'b0;
        s_ready <= 1'b0;
        ready_dirty = 1'b1;
        idle = 1'b0;
    end else if (!idle || s_axis_tvalid) begin
        // a beat in
        if (s_axis_tvalid && s_ready) begin
            if (!in_busy) begin
                if (fresh < DEPTH) begin
                    in_slot = fresh[SLOT_BITS-1:0];
                    fresh = fresh + 1;
                end else begin
                    in_slot = free_q[free_rd];
                    free_rd = wrap(free_rd + 1);
                    free_n = free_n - 1;
                end
                in_busy = 1'b1;
                in_beat = 0;
                in_flight = in_flight + 32'd1;
            end
            if (in_beat < MAX_BEATS) begin
                at = in_slot * MAX_BEATS + in_beat;
                mem_data[at] = s_axis_tdata;
                mem_side[at] = {s_axis_tuser, s_axis_tkeep};
                if (in_beat < HDR_BEATS)
                    hdr[in_beat * DATA_WIDTH +: DATA_WIDTH] = s_axis_tdata;
            end
            if (s_axis_tlast) begin
                if (in_beat >= MAX_BEATS)
                    truncated = truncated + 32'd1;
                commit(in_beat < MAX_BEATS ? in_beat + 1 : MAX_BEATS, in_beat >= MAX_BEATS);
                if (last_act == ACT_DROP)
                    in_flight = in_flight - 32'd1;
                in_busy = 1'b0;
                ready_dirty = 1'b1;
            end else
                in_beat = in_beat + 1;
        end

        // reordered packets that waited long enough for a packet to pass them
        if (hold_n != 0)
            if (slot_release[hold_q[hold_rd]] + {32'd0, delay_cycles} <= cycle)
                release_holds(64'd0);

        // a beat out: into the output register whenever it is empty or its beat leaves
        if (m_axis_tvalid && m_axis_tready && m_axis_tlast)
            pkts_out = pkts_out + 32'd1;
        valid = m_axis_tvalid;
        if (!m_axis_tvalid || m_axis_tready) begin
            if (!out_busy) begin
                // the oldest delayed packet first, when its time has come; else the ring's head
                if (delay_n != 0)
                    if (slot_release[delay_q[delay_rd]] <= cycle) begin
                        out_slot = delay_q[delay_rd];
                        delay_rd = wrap(delay_rd + 1);
                        delay_n = delay_n - 1;
                        out_busy = 1'b1;
                    end
                if (!out_busy && ring_n != 0)
                    if (slot_release[ring_q[ring_rd]] <= cycle) begin
                        out_slot = ring_q[ring_rd];
                        ring_rd = wrap(ring_rd + 1);
                        ring_n = ring_n - 1;
                        out_busy = 1'b1;
                    end
                if (out_busy) begin
                    out_beat = 0;
                    out_copies = slot_dup[out_slot] ? 2 : 1;
                end
            end
            if (out_busy) begin
                at = out_slot * MAX_BEATS + out_beat;
                side = mem_side[at];
                last = out_beat + 1 == {16'd0, slot_beats[out_slot]};
                m_axis_tdata <= mem_data[at];
                m_axis_tkeep <= side[KEEP-1:0];
                m_axis_tuser <= side[KEEP];
                m_axis_tlast <= last;
                m_axis_tvalid <= 1'b1;
                valid = 1'b1;
                if (!last)
                    out_beat = out_beat + 1;
                else if (out_copies > 1) begin
                    out_copies = out_copies - 1;
                    out_beat = 0;
                end else begin
                    out_busy = 1'b0;
                    in_flight = in_flight - 32'd1;
                    free_slot(out_slot);
                end
            end else if (m_axis_tvalid) begin
                m_axis_tvalid <= 1'b0;
                valid = 1'b0;
            end
        end
        idle = in_flight == 32'd0 && !valid;

        if (ready_dirty) begin
            s_ready <= in_busy || fresh < DEPTH || free_n != 0;
            ready_dirty = 1'b0;
        end
    end
end

endmodule

`resetall
