// Packetizer (one per port): turns one message descriptor into its path-MTU packets on the
// port's TX link (docs/packet-path.md).
//
// Structure, in the order a packet flows:
//   fill    for each packet, asks for its payload chunk (requests run one chunk ahead) and
//           writes it into one of two packet buffers (ping-pong), already shifted by the
//           packet's header length, so the send side reads whole beats with no realignment.
//           A packet is sent only once its payload is all buffered, so the link never waits on
//           the payload stream within a packet; a buffer is refilled behind the send side's
//           read position, so at full size the fill keeps pace with the link.
//           The buffer is read combinationally (the send stage registers the beat); a
//           block-RAM target would move that read one stage earlier.
//   send    reads a full buffer out beat by beat, puts the headers (pkt_header) over the first
//           bytes and zeros over the pad: LRH .. pad.
//   icrc    ib_icrc over that stream; pkt_append places the ICRC after the pad.
//   vcrc    crc_stream (CRC-16) over LRH .. ICRC; a second pkt_append places the VCRC.
//   rate    after a packet of N beats the link stays idle (rate - 1) * N cycles.
// The descriptor stays valid for the whole message (its fields are read directly); it is
// accepted (desc_ready) in the cycle after the last packet's last beat leaves, with done.
`default_nettype none

module packetizer #(
    parameter DATA_WIDTH = 64,     // link and payload beat width in bits: 64, 256 or 512
    parameter MAX_PAYLOAD = 4096   // largest path MTU in bytes (packet buffer size)
) (
    input  wire                     clk,
    input  wire                     rst,

    // message descriptor, held while desc_valid
    input  wire                     desc_valid,
    output wire                     desc_ready,
    input  wire [2:0]               desc_kind,       // 0 SEND, 1 WRITE, 2 READ req, 3 READ resp, 4 ACK
    input  wire [2:0]               desc_transport,  // 2 RC, 3 UC, 4 UD
    input  wire                     desc_imm_valid,
    input  wire [31:0]              desc_imm,
    input  wire                     desc_solicited,
    input  wire [31:0]              desc_len,        // payload bytes of the message
    input  wire [2:0]               desc_mtu,        // 1..5 = 256..4096
    input  wire [15:0]              desc_dlid,
    input  wire [15:0]              desc_slid,
    input  wire [3:0]               desc_sl,
    input  wire                     desc_is_global,
    input  wire [7:0]               desc_tclass,
    input  wire [19:0]              desc_flow_label,
    input  wire [7:0]               desc_hop_limit,
    input  wire [127:0]             desc_sgid,
    input  wire [127:0]             desc_dgid,
    input  wire [15:0]              desc_pkey,
    input  wire [23:0]              desc_dest_qpn,
    input  wire [23:0]              desc_psn,        // PSN of the first packet
    input  wire [31:0]              desc_qkey,
    input  wire [23:0]              desc_src_qpn,
    input  wire [63:0]              desc_raddr,
    input  wire [31:0]              desc_rkey,
    input  wire [31:0]              desc_dma_len,
    input  wire [7:0]               desc_syndrome,
    input  wire [23:0]              desc_msn,
    input  wire [3:0]               desc_rate,       // static-rate divisor, 0 or 1 = full rate

    // payload chunk requests (the DMA mover's READ_STREAM)
    output reg                      pl_req_valid,
    input  wire                     pl_req_ready,
    output reg  [31:0]              pl_req_offset,   // byte offset in the message
    output reg  [12:0]              pl_req_len,      // bytes, 1 .. path MTU

    // the requested chunk: byte 0 in tdata[7:0], full beats but the last
    input  wire [DATA_WIDTH-1:0]    s_axis_pl_tdata,
    // The chunk's length is known from the request and every beat but the last is full, so
    // tkeep carries nothing the packetizer needs.
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [DATA_WIDTH/8-1:0]  s_axis_pl_tkeep,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                     s_axis_pl_tvalid,
    output wire                     s_axis_pl_tready,
    input  wire                     s_axis_pl_tlast,

    // TX link: one packet per frame, LRH .. VCRC
    output wire [DATA_WIDTH-1:0]    m_axis_tx_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_tx_tkeep,
    output wire                     m_axis_tx_tvalid,
    input  wire                     m_axis_tx_tready,
    output wire                     m_axis_tx_tlast,
    output wire                     m_axis_tx_tuser,

    output reg                      pkt_sent,        // one cycle per packet that left
    output reg  [10:0]              pkt_sent_len,    // its PktLen (4-byte words)
    output wire                     done,            // the message's last packet left
    output wire [23:0]              done_psn         // the PSN after the last packet, with done
);

localparam KEEP_WIDTH = DATA_WIDTH / 8;
localparam KEEP_BITS = $clog2(KEEP_WIDTH);
localparam HDR_MAX = 80;                                  // LRH + GRH + BTH + RETH + ImmDt
localparam BANK_WORDS_MIN = (HDR_MAX + MAX_PAYLOAD + 3) / KEEP_WIDTH + 2;
localparam BANK_BITS = $clog2(BANK_WORDS_MIN);            // words per buffer: a power of 2
localparam BANK_WORDS = 1 << BANK_BITS;
localparam SB_WIDTH = 12;                                 // {message's last packet, PktLen}

localparam [2:0] K_READ_REQ = 3'd2;
localparam [2:0] K_ACK = 3'd4;

// ------------------------------------------------------------------------------------------
// Message bookkeeping

reg active;         // a descriptor is being worked on
reg retire;         // its last packet's last beat left in the previous cycle
assign desc_ready = retire;     // a register: the descriptor source sees no combinational path
assign done = retire;

wire start = desc_valid & ~active;

wire no_payload = desc_kind == K_READ_REQ || desc_kind == K_ACK;
wire [31:0] mtu_bytes = 32'd128 << desc_mtu;

// ------------------------------------------------------------------------------------------
// Fill side

localparam [2:0] F_IDLE = 3'd0;     // no message, or all its packets are buffered
localparam [2:0] F_NEXT = 3'd1;     // first packet, or a packet without payload
localparam [2:0] F_DATA = 3'd3;     // chunk arriving
localparam [2:0] F_FLUSH = 3'd4;    // last realigned word
localparam [2:0] F_CLOSE = 3'd5;    // all written: wait until the buffer's last packet is sent

reg  [2:0]  f_state;
reg         f_bank;           // buffer being filled
reg  [31:0] f_off;            // message offset of the packet being filled
reg  [23:0] f_psn;
assign done_psn = f_psn;      // the filler stopped after the last packet, one PSN past it
reg         f_first;
reg  [BANK_BITS-1:0] f_count; // payload words written so far
reg  [DATA_WIDTH-1:0] f_prev; // previous payload beat (its top bytes start the next word)

wire [31:0] f_rem = desc_len - f_off;
wire        f_last = no_payload || f_rem <= mtu_bytes;
wire [12:0] f_plen = no_payload ? 13'd0 : f_last ? f_rem[12:0] : mtu_bytes[12:0];

reg  s_bank;                  // buffer being sent
reg  [BANK_BITS-1:0] s_beat;  // its beat (buffer word) being read

// Per-buffer packet description, written when the buffer is full.
reg  [1:0]  full;
reg  [12:0] m_plen [0:1];
reg  [23:0] m_psn [0:1];
reg  [1:0]  m_first;
reg  [1:0]  m_last;

wire [639:0] f_hdr_unused;
wire [6:0]  f_hdr_len;
wire [10:0] f_pktlen_unused;
pkt_header f_hdr (
    .kind(desc_kind), .transport(desc_transport), .imm_valid(desc_imm_valid), .imm(desc_imm),
    .solicited(desc_solicited), .dlid(desc_dlid), .slid(desc_slid), .sl(desc_sl),
    .is_global(desc_is_global), .tclass(desc_tclass), .flow_label(desc_flow_label),
    .hop_limit(desc_hop_limit), .sgid(desc_sgid), .dgid(desc_dgid), .pkey(desc_pkey),
    .dest_qpn(desc_dest_qpn), .qkey(desc_qkey), .src_qpn(desc_src_qpn), .raddr(desc_raddr),
    .rkey(desc_rkey), .dma_len(desc_dma_len), .syndrome(desc_syndrome), .msn(desc_msn),
    .first(f_first), .last(f_last), .psn(f_psn), .plen(f_plen),
    .hdr(f_hdr_unused), .hdr_len(f_hdr_len), .pktlen(f_pktlen_unused)
);

// The payload starts right after the headers: byte s of buffer word hdr_len / KEEP_WIDTH.
wire [KEEP_BITS-1:0] f_shift = f_hdr_len[KEEP_BITS-1:0];
wire [BANK_BITS-1:0] f_base = {{(BANK_BITS-7+KEEP_BITS){1'b0}}, f_hdr_len[6:KEEP_BITS]};
wire [BANK_BITS-1:0] f_word = f_base + f_count;   // next buffer word to write

// A realigned word: the top f_shift bytes of the previous beat, then this beat's bytes (in the
// flush cycle, the previous beat's top bytes alone).
wire [DATA_WIDTH-1:0] f_stream_data = (f_state == F_FLUSH) ? {DATA_WIDTH{1'b0}} : s_axis_pl_tdata;
wire [2*DATA_WIDTH-1:0] f_pair = {f_stream_data, f_prev};
localparam PAIR_BITS = KEEP_BITS + 4;                    // bit index into two beats
wire [PAIR_BITS-1:0] f_rshift = DATA_WIDTH[PAIR_BITS-1:0] - {1'b0, f_shift, 3'b000};
wire [DATA_WIDTH-1:0] f_wdata = f_pair[f_rshift +: DATA_WIDTH];

// A buffer may be refilled while it is still being sent, behind the send side's read position
// (words are written and read in ascending order), so the next chunk streams in while the
// previous packet is on the link and the fill never lags by a request's latency. The packet
// description is replaced only once the buffer is free (f_free).
wire s_done;
wire f_free = ~full[f_bank] | (s_done & (s_bank == f_bank));
wire f_word_ok = ~full[f_bank] | ((s_bank == f_bank) & (s_beat > f_word));

assign s_axis_pl_tready = (f_state == F_DATA) & f_word_ok;
wire f_beat = s_axis_pl_tvalid & s_axis_pl_tready;
wire f_flush = (f_state == F_FLUSH) & f_word_ok;

reg [DATA_WIDTH-1:0] mem [0:2*BANK_WORDS-1];
wire f_we = f_beat | f_flush;
always @(posedge clk) begin
    if (f_we)
        mem[{f_bank, f_word}] <= f_wdata;
end

// The packet in f_bank is complete: describe it and move on.
wire f_done = f_free & ((f_state == F_NEXT && f_plen == 13'd0)
                     || (f_beat && s_axis_pl_tlast && f_shift == {KEEP_BITS{1'b0}})
                     || f_flush
                     || f_state == F_CLOSE);

always @(posedge clk) begin
    case (f_state)
    F_IDLE:
        if (start) begin
            f_state <= F_NEXT;
            f_off <= 32'd0;
            f_psn <= desc_psn;
            f_first <= 1'b1;
        end
    F_NEXT:
        if (f_plen != 13'd0) begin
            f_state <= F_DATA;
            f_count <= {BANK_BITS{1'b0}};
        end
    F_DATA:
        if (f_beat) begin
            f_count <= f_count + 1'b1;
            f_prev <= s_axis_pl_tdata;
            if (s_axis_pl_tlast)
                f_state <= (f_shift != {KEEP_BITS{1'b0}}) ? F_FLUSH : F_CLOSE;
        end
    F_FLUSH:
        if (f_flush) begin
            f_count <= f_count + 1'b1;
            f_state <= F_CLOSE;
        end
    default: ;
    endcase
    if (s_done)
        full[s_bank] <= 1'b0;
    if (f_done) begin             // after the clear: a buffer freed and refilled at once is full
        full[f_bank] <= 1'b1;
        m_plen[f_bank] <= f_plen;
        m_psn[f_bank] <= f_psn;
        m_first[f_bank] <= f_first;
        m_last[f_bank] <= f_last;
        f_bank <= ~f_bank;
        f_first <= 1'b0;
        f_psn <= f_psn + 1'b1;
        f_off <= f_off + mtu_bytes;
        // the packet after a first or middle one always carries payload, so no F_NEXT cycle
        f_state <= f_last ? F_IDLE : F_DATA;
        f_count <= {BANK_BITS{1'b0}};
    end
    if (rst) begin
        f_state <= F_IDLE;
        f_bank <= 1'b0;
        full <= 2'b00;
    end
end

// Chunk requests run up to one chunk ahead of the one being received, so the next chunk's
// request latency hides behind the current chunk and the payload arrives back to back.
reg  [31:0] r_off;            // message offset of the next chunk to request
reg         r_all;            // every chunk of the message has been requested
reg  [1:0]  r_out;            // chunks requested and not yet completely buffered

wire [31:0] r_rem = desc_len - r_off;
wire        r_last = r_rem <= mtu_bytes;
wire        r_xfer = pl_req_valid & pl_req_ready;
wire        f_chunk_done = f_done & (f_plen != 13'd0);

always @(posedge clk) begin
    if (r_xfer) begin
        pl_req_valid <= 1'b0;
        r_off <= r_off + mtu_bytes;
        r_all <= r_last;
    end else if (active && !pl_req_valid && !r_all && r_out != 2'd2) begin
        pl_req_valid <= 1'b1;
        pl_req_offset <= r_off;
        pl_req_len <= r_last ? r_rem[12:0] : mtu_bytes[12:0];
    end
    r_out <= r_out + {1'b0, r_xfer} - {1'b0, f_chunk_done};
    if (start) begin
        r_off <= 32'd0;
        r_all <= no_payload || desc_len == 32'd0;
    end
    if (rst) begin
        pl_req_valid <= 1'b0;
        r_out <= 2'd0;
        r_all <= 1'b1;
    end
end

// ------------------------------------------------------------------------------------------
// Send side: LRH .. pad, one beat a cycle from a full buffer

reg  s_msg_sent;              // the message's last packet has been read out

wire [12:0] s_plen = m_plen[s_bank];
wire [639:0] s_hdr;
wire [6:0]  s_hdr_len;
wire [10:0] s_pktlen;
pkt_header s_hdr_gen (
    .kind(desc_kind), .transport(desc_transport), .imm_valid(desc_imm_valid), .imm(desc_imm),
    .solicited(desc_solicited), .dlid(desc_dlid), .slid(desc_slid), .sl(desc_sl),
    .is_global(desc_is_global), .tclass(desc_tclass), .flow_label(desc_flow_label),
    .hop_limit(desc_hop_limit), .sgid(desc_sgid), .dgid(desc_dgid), .pkey(desc_pkey),
    .dest_qpn(desc_dest_qpn), .qkey(desc_qkey), .src_qpn(desc_src_qpn), .raddr(desc_raddr),
    .rkey(desc_rkey), .dma_len(desc_dma_len), .syndrome(desc_syndrome), .msn(desc_msn),
    .first(m_first[s_bank]), .last(m_last[s_bank]), .psn(m_psn[s_bank]), .plen(s_plen),
    .hdr(s_hdr), .hdr_len(s_hdr_len), .pktlen(s_pktlen)
);

// Byte counts of the frame so far: headers end at s_hdr_len, payload at s_pay_end, pad at
// s_end (a multiple of 4).
wire [13:0] s_pay_end = {7'd0, s_hdr_len} + {1'b0, s_plen};
wire [13:0] s_end = (s_pay_end + 14'd3) & ~14'd3;
wire [13:0] s_beat_start = {{(14-BANK_BITS){1'b0}}, s_beat} << KEEP_BITS;
wire        s_final = s_end <= s_beat_start + KEEP_WIDTH[13:0];   // this beat holds the frame's end

localparam HDR_PAD = ((HDR_MAX * 8 + DATA_WIDTH - 1) / DATA_WIDTH) * DATA_WIDTH;
wire [HDR_PAD-1:0] s_hdr_wide = {{(HDR_PAD-640){1'b0}}, s_hdr};
wire [HDR_PAD-1:0] s_hdr_beat = s_hdr_wide >> (s_beat_start * 8);
wire [DATA_WIDTH-1:0] s_mem = mem[{s_bank, s_beat}];

reg [DATA_WIDTH-1:0] s_data;
reg [KEEP_WIDTH-1:0] s_keep;
reg [13:0] s_pos;       // frame byte index of byte b of the beat
integer b;
always @* begin
    for (b = 0; b < KEEP_WIDTH; b = b + 1) begin
        s_pos = s_beat_start + b[13:0];
        if (s_pos < {7'd0, s_hdr_len})
            s_data[8*b +: 8] = s_hdr_beat[8*b +: 8];
        else if (s_pos < s_pay_end)
            s_data[8*b +: 8] = s_mem[8*b +: 8];
        else
            s_data[8*b +: 8] = 8'h00;
        s_keep[b] = s_pos < s_end;
    end
end

// Stage register after the buffer read.
reg                   a_valid;
reg [DATA_WIDTH-1:0]  a_data;
reg [KEEP_WIDTH-1:0]  a_keep;
reg                   a_last;
reg [SB_WIDTH-1:0]    a_sb;
wire                  a_ready;

wire s_go = full[s_bank] & ~s_msg_sent & (~a_valid | a_ready);
assign s_done = s_go & s_final;

always @(posedge clk) begin
    if (~a_valid | a_ready)
        a_valid <= 1'b0;
    if (s_go) begin
        a_valid <= 1'b1;
        a_data <= s_data;
        a_keep <= s_keep;
        a_last <= s_final;
        a_sb <= {m_last[s_bank], s_pktlen};
        s_beat <= s_beat + 1'b1;
        if (s_final) begin
            s_beat <= {BANK_BITS{1'b0}};
            s_bank <= ~s_bank;
            if (m_last[s_bank])
                s_msg_sent <= 1'b1;
        end
    end
    if (retire)
        s_msg_sent <= 1'b0;
    if (rst) begin
        a_valid <= 1'b0;
        s_bank <= 1'b0;
        s_beat <= {BANK_BITS{1'b0}};
        s_msg_sent <= 1'b0;
    end
end

// ------------------------------------------------------------------------------------------
// ICRC, VCRC

wire a_xfer = a_valid & a_ready;
wire [31:0] icrc;
wire icrc_valid_unused;
ib_icrc #(.DATA_WIDTH(DATA_WIDTH)) icrc_gen (
    .clk(clk), .rst(rst),
    .s_valid(a_xfer), .s_data(a_data), .s_keep(a_keep), .s_last(a_last),
    .m_icrc(icrc), .m_icrc_valid(icrc_valid_unused)
);

wire                  b_valid;
wire                  b_ready;
wire [DATA_WIDTH-1:0] b_data;
wire [KEEP_WIDTH-1:0] b_keep;
wire                  b_last;
wire [SB_WIDTH-1:0]   b_sb;
pkt_append #(.DATA_WIDTH(DATA_WIDTH), .TAIL_BYTES(4), .SB_WIDTH(SB_WIDTH)) icrc_append (
    .clk(clk), .rst(rst),
    .s_valid(a_valid), .s_ready(a_ready), .s_data(a_data), .s_keep(a_keep), .s_last(a_last),
    .s_sb(a_sb), .s_tail(icrc),
    .m_valid(b_valid), .m_ready(b_ready), .m_data(b_data), .m_keep(b_keep), .m_last(b_last),
    .m_sb(b_sb)
);

wire b_xfer = b_valid & b_ready;
reg  b_first;   // the next B beat starts a packet
always @(posedge clk) begin
    if (b_xfer)
        b_first <= b_last;
    if (rst)
        b_first <= 1'b1;
end

wire [15:0] vcrc;
crc_stream #(
    .DATA_WIDTH(DATA_WIDTH), .CRC_WIDTH(16),
    .POLY(16'hD008), .INIT(16'hFFFF), .XOR_OUT(16'hFFFF)
) vcrc_gen (
    .clk(clk), .rst(rst),
    .s_valid(b_xfer), .s_first(b_first), .s_data(b_data), .s_keep(b_keep),
    .m_crc(vcrc)
);

wire                  c_valid;
wire                  c_ready;
wire [SB_WIDTH-1:0]   c_sb;
pkt_append #(.DATA_WIDTH(DATA_WIDTH), .TAIL_BYTES(2), .SB_WIDTH(SB_WIDTH)) vcrc_append (
    .clk(clk), .rst(rst),
    .s_valid(b_valid), .s_ready(b_ready), .s_data(b_data), .s_keep(b_keep), .s_last(b_last),
    .s_sb(b_sb), .s_tail(vcrc),
    .m_valid(c_valid), .m_ready(c_ready), .m_data(m_axis_tx_tdata), .m_keep(m_axis_tx_tkeep),
    .m_last(m_axis_tx_tlast), .m_sb(c_sb)
);

// ------------------------------------------------------------------------------------------
// Static rate and events

reg  [19:0] gap;        // idle cycles still owed before the next beat
reg  [19:0] gap_acc;    // owed for the packet in flight: (rate - 1) per beat
wire [3:0]  rate_m1 = desc_rate > 4'd1 ? desc_rate - 4'd1 : 4'd0;
wire        open = gap == 20'd0;

assign m_axis_tx_tvalid = c_valid & open;
assign c_ready = m_axis_tx_tready & open;
assign m_axis_tx_tuser = 1'b0;
wire tx_xfer = m_axis_tx_tvalid & m_axis_tx_tready;
wire tx_end = tx_xfer & m_axis_tx_tlast;

always @(posedge clk) begin
    pkt_sent <= tx_end;
    pkt_sent_len <= c_sb[10:0];
    retire <= tx_end & c_sb[SB_WIDTH-1];
    if (!open)
        gap <= gap - 1'b1;
    if (tx_xfer) begin
        if (m_axis_tx_tlast) begin
            gap <= gap_acc + {16'd0, rate_m1};
            gap_acc <= 20'd0;
        end else begin
            gap_acc <= gap_acc + {16'd0, rate_m1};
        end
    end
    if (start)
        active <= 1'b1;
    if (retire)
        active <= 1'b0;
    if (rst) begin
        pkt_sent <= 1'b0;
        retire <= 1'b0;
        gap <= 20'd0;
        gap_acc <= 20'd0;
        active <= 1'b0;
    end
end

endmodule

`resetall
