// Packetizer (one per port): turns message descriptors into their path-MTU packets on the
// port's TX link (docs/packet-path.md).
//
// It holds MESSAGES messages: a descriptor is taken (desc_valid/desc_ready, its fields read in
// that cycle) as soon as the previous message's payload is all requested and buffered and a
// message place is free, so the next message's payload arrives while the current one's
// packets leave, and the link does not wait for a message's first payload chunk. Each message
// carries USER_WIDTH bits of its own (desc_user): they come back with its payload requests
// (pl_req_user), its beats on the link (m_axis_tx_user) and its done (done_user).
//
// Structure, in the order a packet flows:
//   request asks the DMA mover for a packet's payload chunk only when a packet buffer is free
//           and not already promised to an earlier request (the requests run up to BUFFERS
//           chunks ahead of the link). So once a request is accepted, its whole chunk is taken
//           at one beat per cycle (s_axis_pl_tready stays high) whatever the link does: the
//           shared mover never waits on this port's link.
//   fill    writes each chunk as it arrives, word for word, into the next of BUFFERS whole-
//           packet buffers (a ring). A packet is sent only once its payload is all buffered,
//           so the link never waits on the payload stream within a packet.
//           The buffer is read combinationally (the send stage registers the beat); a
//           block-RAM target would move that read one stage earlier.
//   send    reads a full buffer out in order and builds the headers .. pad one beat a cycle:
//           the headers (pkt_header: LRH .. on InfiniBand, Ethernet .. UDP .. on Ethernet)
//           over the first hdr_len bytes, the payload after them (each beat from the word read
//           now and the one read the beat before, shifted by hdr_len mod the beat width),
//           zeros over the pad.
//   icrc    ib_icrc over that stream; pkt_append places the ICRC after the pad (on Ethernet
//           with the zero bytes that make a frame of fewer than 64 bytes 64).
//   vcrc    crc_stream over the frame so far: the VCRC (CRC-16) on InfiniBand, the FCS (CRC-32)
//           on Ethernet; a second pkt_append places it.
//   rate    after a packet of N beats the link stays idle (rate - 1) * N cycles.
// A message is done (done, done_psn, done_user) in the cycle after its last packet's last beat
// leaves; its place then takes the next descriptor.
// A chunk whose stream ends with tuser (host memory answered an error: the bytes are not the
// message's) still fills its packet, which leaves with tuser on every beat: the link aborts it
// and the receiver drops it as a bad frame. Its message is done with done_error.
// A cut (the QP went back: its responder drops the rest of the message, which is sent again)
// ends the message being filled early: no chunk is requested after it, and the packet of the
// last chunk requested (of the next one, when none is out) ends the message. Its packets keep
// their opcodes, as if the rest had been lost on the link.
`ifndef RDMA_PACKETIZER_V
`define RDMA_PACKETIZER_V
`default_nettype none

module packetizer #(
    parameter DATA_WIDTH = 64,     // link and payload beat width in bits: 64, 256 or 512
    parameter MAX_PAYLOAD = 4096,  // largest path MTU in bytes (packet buffer size)
    parameter BUFFERS = 3,         // whole-packet buffers, >= 2: 3 = on the link, waiting, filling
    parameter ACKREQ_LOG2 = 4,     // RC requests ask for an ACK on every PSN whose low bits are all ones
    parameter MESSAGES = 2,        // messages held: one leaving, the next one's payload arriving (2)
    parameter USER_WIDTH = 1       // bits a message carries through (desc_user)
) (
    input  wire                     clk,
    input  wire                     rst,

    // the port
    input  wire                     eth,             // link layer: 0 InfiniBand, 1 Ethernet (RoCE v2)
    input  wire [47:0]              port_mac,        // Ethernet: the source MAC of every frame

    // message descriptor, taken when desc_valid && desc_ready
    input  wire                     desc_valid,
    output wire                     desc_ready,
    // 0 SEND, 1 WRITE, 2 READ req, 3 READ resp, 4 ACK, 5 COMPARE_SWAP req, 6 FETCH_ADD req,
    // 7 ATOMIC_ACKNOWLEDGE (5..7: one RC packet without payload)
    input  wire [2:0]               desc_kind,
    input  wire [2:0]               desc_transport,  // 2 RC, 3 UC, 4 UD
    input  wire                     desc_imm_valid,
    input  wire                     desc_inv,        // RC SEND with invalidate: desc_imm is the IETH
    input  wire                     desc_awrite,     // RC WRITE that is an ATOMIC WRITE (8 bytes)
    input  wire                     desc_cnp,        // Ethernet: a CNP (kind ACK, no payload)
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
    input  wire [47:0]              desc_dmac,       // Ethernet: destination MAC
    input  wire [12:0]              desc_vlan,       // Ethernet: [12] 802.1Q tagged, [11:0] VLAN ID
    input  wire [15:0]              desc_pkey,
    input  wire [23:0]              desc_dest_qpn,
    input  wire [23:0]              desc_psn,        // PSN of the first packet sent
    input  wire [31:0]              desc_start,      // its byte offset: 0, or a multiple of the path MTU (a resend)
    input  wire [31:0]              desc_qkey,
    input  wire [23:0]              desc_src_qpn,
    input  wire [63:0]              desc_raddr,
    input  wire [31:0]              desc_rkey,
    input  wire [31:0]              desc_dma_len,
    input  wire [7:0]               desc_syndrome,
    input  wire [23:0]              desc_msn,
    input  wire [63:0]              desc_atomic_a,   // Swap/Add Data (5, 6), Orig. Remote Data (7)
    input  wire [63:0]              desc_atomic_b,   // Compare Data (5, 6)
    input  wire [3:0]               desc_rate,       // static-rate divisor, 0 or 1 = full rate
    input  wire [USER_WIDTH-1:0]    desc_user,
    input  wire                     cut,             // end the message being filled at a packet boundary

    // payload chunk requests (the DMA mover's READ_STREAM)
    output reg                      pl_req_valid,
    input  wire                     pl_req_ready,
    output reg  [31:0]              pl_req_offset,   // byte offset in the message
    output reg  [12:0]              pl_req_len,      // bytes, 1 .. path MTU
    output wire [USER_WIDTH-1:0]    pl_req_user,     // the message's desc_user

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
    input  wire                     s_axis_pl_tuser, // with tlast: the chunk is not the host's bytes

    // TX link: one packet per frame, LRH .. VCRC
    output wire [DATA_WIDTH-1:0]    m_axis_tx_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_tx_tkeep,
    output wire                     m_axis_tx_tvalid,
    input  wire                     m_axis_tx_tready,
    output wire                     m_axis_tx_tlast,
    output wire                     m_axis_tx_tuser,
    output wire [USER_WIDTH-1:0]    m_axis_tx_user,  // the beat's message's desc_user

    output reg                      pkt_sent,        // one cycle per packet that left
    output reg  [10:0]              pkt_sent_len,    // its PktLen (4-byte words; Ethernet: the frame's)
    output wire                     done,            // a message's last packet left
    output reg  [23:0]              done_psn,        // the PSN after its last packet, with done
    output reg                      done_error,      // with done: a packet of it was aborted (bad payload)
    output reg  [USER_WIDTH-1:0]    done_user        // its desc_user, with done
);

localparam KEEP_WIDTH = DATA_WIDTH / 8;
localparam KEEP_BITS = $clog2(KEEP_WIDTH);
localparam HDR_MAX = 106;                         // Ethernet + 802.1Q + IPv6 + UDP + BTH + AtomicETH
localparam BUF_WORDS = (MAX_PAYLOAD + KEEP_WIDTH - 1) / KEEP_WIDTH;   // payload words a buffer
localparam MEM_WORDS = BUFFERS * BUF_WORDS;
localparam ADDR_BITS = $clog2(MEM_WORDS);
localparam BEAT_BITS = $clog2((HDR_MAX + MAX_PAYLOAD + 3) / KEEP_WIDTH + 2);  // frame beats
localparam IDX_BITS = $clog2(BUFFERS);
localparam CNT_BITS = $clog2(BUFFERS + 1);
localparam MEM_LAST = MEM_WORDS - 1;
localparam [ADDR_BITS-1:0] BUF_STEP = BUF_WORDS[ADDR_BITS-1:0];
localparam [ADDR_BITS-1:0] LAST_WORD = MEM_LAST[ADDR_BITS-1:0];
localparam BUF_LAST = BUFFERS - 1;
localparam [IDX_BITS-1:0] LAST_BUF = BUF_LAST[IDX_BITS-1:0];
localparam [CNT_BITS-1:0] ALL_BUFS = BUFFERS[CNT_BITS-1:0];
localparam MSG_BITS = MESSAGES > 1 ? $clog2(MESSAGES) : 1;
localparam SB_WIDTH = 13 + MSG_BITS;                      // {message, bad, it ends there, PktLen}

localparam [2:0] K_READ_REQ = 3'd2;
localparam [2:0] K_ACK = 3'd4;

// ------------------------------------------------------------------------------------------
// Messages: MESSAGES places, taken in turn. A message is filled (its payload requested and
// buffered) from its start until its last packet is buffered, then sent; the next one may be
// filled meanwhile. The header fields are read from the place of the packet being built.

// a place's descriptor: the fill side's fields in the low bits (kind, len, mtu at fixed offsets)
localparam DESC_BITS = USER_WIDTH + 48 + 13 + 1 + 1 + 1 + 4 + 64 + 64 + 24 + 8 + 32 + 32 + 64 + 24 + 32 + 32 + 24 + 24
                     + 16 + 128 + 128 + 8 + 20 + 8 + 1 + 4 + 16 + 16 + 1 + 32 + 1 + 3 + 3 + 32 + 3;
wire [DESC_BITS-1:0] desc_in = {desc_user, desc_rate, desc_dmac, desc_vlan, desc_cnp, desc_awrite, desc_inv, desc_atomic_b, desc_atomic_a, desc_msn,
    desc_syndrome, desc_dma_len, desc_rkey, desc_raddr, desc_src_qpn, desc_qkey, desc_start,
    desc_dest_qpn, desc_psn, desc_pkey, desc_dgid, desc_sgid, desc_hop_limit, desc_flow_label,
    desc_tclass, desc_is_global, desc_sl, desc_slid, desc_dlid, desc_solicited, desc_imm,
    desc_imm_valid, desc_transport, desc_mtu, desc_len, desc_kind};
reg  [DESC_BITS-1:0] place [0:MESSAGES-1];
reg  [23:0]          place_end_psn [0:MESSAGES-1];   // one past its last packet's PSN
reg  [MSG_BITS:0]    held;           // places holding a message
reg  [MSG_BITS-1:0]  next_place;     // the place the next descriptor takes
reg                  filling;        // a message's payload is being requested and buffered
reg  [MSG_BITS-1:0]  f_msg;          // ... its place
reg                  retire;         // a message's last packet's last beat left in the previous cycle
assign done = retire;
// only registers: the descriptor source sees no combinational path
assign desc_ready = !filling && held != MESSAGES[MSG_BITS:0];
wire start = desc_valid & desc_ready;

// the fill side's message
wire [2:0]  f_kind = place[f_msg][2:0];
wire [31:0] f_len  = place[f_msg][34:3];
wire [2:0]  f_mtu  = place[f_msg][37:35];
wire no_payload = f_kind == K_READ_REQ || f_kind >= K_ACK;   // ACK and the atomics too
wire [31:0] mtu_bytes = 32'd128 << f_mtu;
assign pl_req_user = place[f_msg][DESC_BITS-1 -: USER_WIDTH];

// ------------------------------------------------------------------------------------------
// Packet buffers: BUFFERS slots of BUF_WORDS words in one memory, used as a ring. Slot i
// starts at word i * BUF_WORDS and holds its packet's payload from word 0, unshifted. n_full
// slots (from s_buf on) hold a packet not yet completely read out; the fill side writes the
// slot after them.

reg [DATA_WIDTH-1:0] mem [0:MEM_WORDS-1];
reg [CNT_BITS-1:0] n_full;

// Per-slot packet description, written when the slot is full.
reg [12:0] m_plen [0:BUFFERS-1];
reg [23:0] m_psn [0:BUFFERS-1];
reg [BUFFERS-1:0] m_first;
reg [BUFFERS-1:0] m_last;
reg [BUFFERS-1:0] m_end;                  // it ends its message here (its last packet, or a cut)
reg [BUFFERS-1:0] m_bad;                  // its payload chunk ended with tuser: abort it
reg [MSG_BITS-1:0] m_msg [0:BUFFERS-1];   // its message's place

// ------------------------------------------------------------------------------------------
// Fill side

localparam [1:0] F_IDLE = 2'd0;     // no message, or all its packets are buffered
localparam [1:0] F_NEXT = 2'd1;     // first packet, or a packet without payload
localparam [1:0] F_DATA = 2'd2;     // a chunk may arrive

reg  [1:0]  f_state;
reg  [IDX_BITS-1:0]  f_buf;   // slot being filled
reg  [ADDR_BITS-1:0] f_base;  // its first word
reg  [ADDR_BITS-1:0] f_ptr;   // next word to write
reg  [31:0] f_off;            // message offset of the packet being filled
reg  [23:0] f_psn;
reg         f_first;

wire [31:0] f_rem = f_len - f_off;
wire        f_last = no_payload || f_rem <= mtu_bytes;
wire [12:0] f_plen = no_payload ? 13'd0 : f_last ? f_rem[12:0] : mtu_bytes[12:0];
wire        f_cut_end;                 // a cut message's last chunk requested is complete
wire        f_end = f_last || f_cut_end;

// A beat arrives only for a requested chunk, and a chunk is requested only with a slot free
// for it, so the fill side takes every beat the moment it comes.
assign s_axis_pl_tready = f_state == F_DATA;
wire f_beat = s_axis_pl_tvalid & s_axis_pl_tready;

always @(posedge clk) begin
    if (f_beat)
        mem[f_ptr] <= s_axis_pl_tdata;
end

// The packet in f_buf is complete: describe it and move on.
wire f_done = (f_state == F_NEXT && f_plen == 13'd0 && n_full != ALL_BUFS)
           || (f_beat && s_axis_pl_tlast);
wire [ADDR_BITS-1:0] f_base_next = (f_buf == LAST_BUF) ? {ADDR_BITS{1'b0}} : f_base + BUF_STEP;

always @(posedge clk) begin
    case (f_state)
    F_IDLE:
        if (start) begin
            f_state <= F_NEXT;
            f_off <= desc_start;
            f_psn <= desc_psn;
            f_first <= desc_start == 32'd0;
        end
    F_NEXT:
        if (f_plen != 13'd0)
            f_state <= F_DATA;
    default:
        if (f_beat)
            f_ptr <= f_ptr + 1'b1;
    endcase
    if (f_done) begin
        m_plen[f_buf] <= f_plen;
        m_psn[f_buf] <= f_psn;
        m_first[f_buf] <= f_first;
        m_last[f_buf] <= f_last;
        m_end[f_buf] <= f_end;
        m_bad[f_buf] <= f_beat && s_axis_pl_tuser;
        m_msg[f_buf] <= f_msg;
        f_buf <= (f_buf == LAST_BUF) ? {IDX_BITS{1'b0}} : f_buf + 1'b1;
        f_base <= f_base_next;
        f_ptr <= f_base_next;
        f_first <= 1'b0;
        f_psn <= f_psn + 1'b1;
        f_off <= f_off + mtu_bytes;
        // the packet after a first or middle one always carries payload, so no F_NEXT cycle
        f_state <= f_end ? F_IDLE : F_DATA;
        if (f_end)
            place_end_psn[f_msg] <= f_psn + 1'b1;
    end
    if (rst) begin
        f_state <= F_IDLE;
        f_buf <= {IDX_BITS{1'b0}};
        f_base <= {ADDR_BITS{1'b0}};
        f_ptr <= {ADDR_BITS{1'b0}};
    end
end

// A chunk is requested only when a slot is free that no earlier request has been promised:
// full slots plus chunks requested and not yet completely written stay within BUFFERS.
reg  [31:0] r_off;            // message offset of the next chunk to request
reg         r_all;            // every chunk of the message has been requested
reg  [CNT_BITS-1:0] r_out;    // chunks requested and not yet completely buffered
reg         r_cut;            // the message was cut: the chunks requested are its last

wire [31:0] r_rem = f_len - r_off;
wire        r_last = r_rem <= mtu_bytes;
wire        r_xfer = pl_req_valid & pl_req_ready;
wire        f_chunk_done = f_done & (f_plen != 13'd0);
wire [CNT_BITS:0] r_taken = {1'b0, n_full} + {1'b0, r_out};
wire        r_room = r_taken < {1'b0, ALL_BUFS};
// a message with chunks still to request is cut: with a request waiting, that one is its last;
// with chunks out and none waiting, the last of them; with none, the next one
wire        cut_hit = cut && filling && !r_all;
assign f_cut_end = (r_cut || cut_hit) && (r_all || cut_hit) && !pl_req_valid &&
                   r_out == {{(CNT_BITS-1){1'b0}}, 1'b1};

always @(posedge clk) begin
    if (r_xfer) begin
        pl_req_valid <= 1'b0;
        r_off <= r_off + mtu_bytes;
        r_all <= r_last || r_cut || cut_hit;
    end else if (filling && !pl_req_valid && !r_all && r_room && !cut_hit) begin
        pl_req_valid <= 1'b1;
        pl_req_offset <= r_off;
        pl_req_len <= r_last ? r_rem[12:0] : mtu_bytes[12:0];
    end
    if (r_xfer != f_chunk_done)
        r_out <= r_xfer ? r_out + 1'b1 : r_out - 1'b1;
    if (cut_hit) begin
        r_cut <= 1'b1;
        if (!pl_req_valid && r_out != {CNT_BITS{1'b0}})
            r_all <= 1'b1;
    end
    if (start) begin
        r_off <= desc_start;
        r_all <= desc_kind == K_READ_REQ || desc_kind >= K_ACK || desc_len == 32'd0;
        r_cut <= 1'b0;
    end
    if (rst) begin
        pl_req_valid <= 1'b0;
        r_out <= {CNT_BITS{1'b0}};
        r_all <= 1'b1;
        r_cut <= 1'b0;
    end
end

// ------------------------------------------------------------------------------------------
// Send side: LRH .. pad, one beat a cycle from a full slot

reg  [IDX_BITS-1:0]  s_buf;   // slot being sent
reg  [ADDR_BITS-1:0] s_base;  // its first word
reg  [ADDR_BITS-1:0] s_ptr;   // the payload word this beat reads
reg  [BEAT_BITS-1:0] s_beat;  // the frame beat being built
reg  [DATA_WIDTH-1:0] s_prev; // the payload word the previous beat read

wire [12:0] s_plen = m_plen[s_buf];
wire [MSG_BITS-1:0] s_msg = m_msg[s_buf];
wire [DESC_BITS-1:0] s_desc = place[s_msg];
// the header's fields, from the place of the packet's message (as desc_in packs them)
/* verilator lint_off UNUSEDSIGNAL */
wire [USER_WIDTH-1:0] s_user;
wire [3:0]   s_rate;
wire [31:0]  s_start, s_len;
wire [23:0]  s_psn_first;
wire [2:0]   s_mtu;
/* verilator lint_on UNUSEDSIGNAL */
wire [2:0]   s_kind, s_transport;
wire         s_imm_valid, s_inv, s_awrite, s_cnp, s_solicited, s_is_global;
wire [31:0]  s_imm, s_qkey, s_rkey, s_dma_len;
wire [15:0]  s_dlid, s_slid, s_pkey;
wire [3:0]   s_sl;
wire [7:0]   s_tclass, s_hop_limit, s_syndrome;
wire [19:0]  s_flow_label;
wire [127:0] s_sgid, s_dgid;
wire [47:0]  s_dmac;
wire [12:0]  s_vlan;
wire [23:0]  s_dest_qpn, s_src_qpn, s_msn;
wire [63:0]  s_raddr, s_atomic_a, s_atomic_b;
assign {s_user, s_rate, s_dmac, s_vlan, s_cnp, s_awrite, s_inv, s_atomic_b, s_atomic_a, s_msn, s_syndrome, s_dma_len, s_rkey, s_raddr,
        s_src_qpn, s_qkey, s_start, s_dest_qpn, s_psn_first, s_pkey, s_dgid, s_sgid, s_hop_limit,
        s_flow_label, s_tclass, s_is_global, s_sl, s_slid, s_dlid, s_solicited, s_imm,
        s_imm_valid, s_transport, s_mtu, s_len, s_kind} = s_desc;
wire [8*HDR_MAX-1:0] s_hdr;
wire [6:0]  s_hdr_len;
wire [10:0] s_pktlen;
wire [1:0]  s_eth_pad;
pkt_header s_hdr_gen (
    .kind(s_kind), .transport(s_transport), .eth(eth), .dmac(s_dmac), .smac(port_mac),
    .vlan(s_vlan), .imm_valid(s_imm_valid), .inv(s_inv),
    .awrite(s_awrite), .cnp(s_cnp), .imm(s_imm),
    .solicited(s_solicited), .dlid(s_dlid), .slid(s_slid), .sl(s_sl),
    .is_global(s_is_global), .tclass(s_tclass), .flow_label(s_flow_label),
    .hop_limit(s_hop_limit), .sgid(s_sgid), .dgid(s_dgid), .pkey(s_pkey),
    .dest_qpn(s_dest_qpn), .qkey(s_qkey), .src_qpn(s_src_qpn), .raddr(s_raddr),
    .rkey(s_rkey), .dma_len(s_dma_len), .syndrome(s_syndrome), .msn(s_msn),
    .atomic_a(s_atomic_a), .atomic_b(s_atomic_b),
    .first(m_first[s_buf]), .last(m_last[s_buf]), .psn(m_psn[s_buf]), .plen(s_plen),
    .ackreq_mid(&m_psn[s_buf][ACKREQ_LOG2-1:0]),
    .hdr(s_hdr), .hdr_len(s_hdr_len), .pktlen(s_pktlen), .eth_pad(s_eth_pad)
);

// Byte counts of the frame so far: headers end at s_hdr_len, payload at s_pay_end, pad at
// s_end (the payload and pad a multiple of 4).
wire [13:0] s_pay_end = {7'd0, s_hdr_len} + {1'b0, s_plen};
wire [13:0] s_end = s_pay_end + {12'd0, 2'd0 - s_plen[1:0]};
wire [13:0] s_beat_start = {{(14-BEAT_BITS){1'b0}}, s_beat} << KEEP_BITS;
wire        s_final = s_end <= s_beat_start + KEEP_WIDTH[13:0];   // this beat holds the frame's end
// Beat j (from the one the header ends in, hdr_len / KEEP_WIDTH) reads payload word
// j - hdr_len / KEEP_WIDTH: its bytes from hdr_len mod KEEP_WIDTH on are that word's first
// bytes, the bytes before are the previous word's last ones.
wire        s_reads = s_beat_start + KEEP_WIDTH[13:0] > {7'd0, s_hdr_len};

// one zero beat above the header, so the last header beat reads zeros past its end (and the
// replication is never zero-width, which Verilog-2005 forbids)
localparam HDR_PAD = HDR_MAX * 8 + DATA_WIDTH;
wire [HDR_PAD-1:0] s_hdr_wide = {{DATA_WIDTH{1'b0}}, s_hdr};
/* verilator lint_off UNUSEDSIGNAL */
wire [HDR_PAD-1:0] s_hdr_shifted = s_hdr_wide >> (s_beat_start * 8);   // the beat is its low word
/* verilator lint_on UNUSEDSIGNAL */
wire [DATA_WIDTH-1:0] s_hdr_beat = s_hdr_shifted[DATA_WIDTH-1:0];
wire [DATA_WIDTH-1:0] s_mem = mem[s_ptr];

wire [KEEP_BITS-1:0] s_shift = s_hdr_len[KEEP_BITS-1:0];
wire [2*DATA_WIDTH-1:0] s_pair = {s_mem, s_prev};
localparam PAIR_BITS = KEEP_BITS + 4;                    // bit index into two words
wire [PAIR_BITS-1:0] s_rshift = DATA_WIDTH[PAIR_BITS-1:0] - {1'b0, s_shift, 3'b000};
wire [DATA_WIDTH-1:0] s_pay = s_pair[s_rshift +: DATA_WIDTH];

// How many of this beat's bytes lie before the header's end, the payload's end and the frame's
// end; the beat's bytes are then masks of those many low bytes (vector operations, not a loop
// over bytes: simulators evaluate this once per beat either way, but a loop costs them dearly).
wire [13:0] s_hdr_left = {7'd0, s_hdr_len} > s_beat_start ? {7'd0, s_hdr_len} - s_beat_start
                                                         : 14'd0;
wire [13:0] s_pay_left = s_pay_end > s_beat_start ? s_pay_end - s_beat_start : 14'd0;
wire [13:0] s_end_left = s_end > s_beat_start ? s_end - s_beat_start : 14'd0;
wire [DATA_WIDTH-1:0] s_hdr_bits = s_hdr_left >= KEEP_WIDTH[13:0] ? {DATA_WIDTH{1'b1}}
                                 : ~({DATA_WIDTH{1'b1}} << {s_hdr_left, 3'b000});
wire [DATA_WIDTH-1:0] s_pay_bits = s_pay_left >= KEEP_WIDTH[13:0] ? {DATA_WIDTH{1'b1}}
                                 : ~({DATA_WIDTH{1'b1}} << {s_pay_left, 3'b000});
wire [DATA_WIDTH-1:0] s_data = (s_hdr_beat & s_hdr_bits)
                             | (s_pay & s_pay_bits & ~s_hdr_bits);
wire [KEEP_WIDTH-1:0] s_keep = s_end_left >= KEEP_WIDTH[13:0] ? {KEEP_WIDTH{1'b1}}
                             : ~({KEEP_WIDTH{1'b1}} << s_end_left);

// Stage register after the buffer read.
reg                   a_valid;
reg [DATA_WIDTH-1:0]  a_data;
reg [KEEP_WIDTH-1:0]  a_keep;
reg                   a_last;
reg [SB_WIDTH-1:0]    a_sb;
reg [1:0]             a_eth_pad;    // with the last beat: zero bytes after the ICRC
wire                  a_ready;

wire s_go = (n_full != {CNT_BITS{1'b0}}) & (~a_valid | a_ready);
wire s_done = s_go & s_final;
wire [ADDR_BITS-1:0] s_base_next = (s_buf == LAST_BUF) ? {ADDR_BITS{1'b0}} : s_base + BUF_STEP;

always @(posedge clk) begin
    if (~a_valid | a_ready)
        a_valid <= 1'b0;
    if (s_go) begin
        a_valid <= 1'b1;
        a_data <= s_data;
        a_keep <= s_keep;
        a_last <= s_final;
        a_sb <= {s_msg, m_bad[s_buf], m_end[s_buf], s_pktlen};
        a_eth_pad <= s_eth_pad;
        s_beat <= s_beat + 1'b1;
        s_prev <= s_mem;
        // the final beat of a packet may read one word past its payload (bytes it does not
        // use): past the last slot that wraps to word 0
        if (s_reads)
            s_ptr <= (s_ptr == LAST_WORD) ? {ADDR_BITS{1'b0}} : s_ptr + 1'b1;
        if (s_final) begin
            s_beat <= {BEAT_BITS{1'b0}};
            s_buf <= (s_buf == LAST_BUF) ? {IDX_BITS{1'b0}} : s_buf + 1'b1;
            s_base <= s_base_next;
            s_ptr <= s_base_next;
        end
    end
    if (f_done != s_done)
        n_full <= f_done ? n_full + 1'b1 : n_full - 1'b1;
    if (rst) begin
        a_valid <= 1'b0;
        s_buf <= {IDX_BITS{1'b0}};
        s_base <= {ADDR_BITS{1'b0}};
        s_ptr <= {ADDR_BITS{1'b0}};
        s_beat <= {BEAT_BITS{1'b0}};
        n_full <= {CNT_BITS{1'b0}};
    end
end

// ------------------------------------------------------------------------------------------
// ICRC, then the VCRC (InfiniBand) or the FCS (Ethernet)

wire a_xfer = a_valid & a_ready;
wire [31:0] icrc;
wire icrc_valid_unused;
ib_icrc #(.DATA_WIDTH(DATA_WIDTH)) icrc_gen (
    .clk(clk), .rst(rst), .eth(eth),
    .s_valid(a_xfer), .s_data(a_data), .s_keep(a_keep), .s_last(a_last),
    .m_icrc(icrc), .m_icrc_valid(icrc_valid_unused)
);

wire                  b_valid;
wire                  b_ready;
wire [DATA_WIDTH-1:0] b_data;
wire [KEEP_WIDTH-1:0] b_keep;
wire                  b_last;
wire [SB_WIDTH-1:0]   b_sb;
pkt_append #(.DATA_WIDTH(DATA_WIDTH), .TAIL_BYTES(6), .SB_WIDTH(SB_WIDTH)) icrc_append (
    .clk(clk), .rst(rst),
    .s_valid(a_valid), .s_ready(a_ready), .s_data(a_data), .s_keep(a_keep), .s_last(a_last),
    .s_sb(a_sb), .s_tail({16'd0, icrc}), .s_tail_len(3'd4 + {1'b0, a_eth_pad}),
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
wire [31:0] fcs;
crc_stream #(
    .DATA_WIDTH(DATA_WIDTH), .CRC_WIDTH(32),
    .POLY(32'hEDB88320), .INIT(32'hFFFFFFFF), .XOR_OUT(32'hFFFFFFFF)
) fcs_gen (
    .clk(clk), .rst(rst),
    .s_valid(b_xfer), .s_first(b_first), .s_data(b_data), .s_keep(b_keep),
    .m_crc(fcs)
);

wire                  c_valid;
wire                  c_ready;
wire [SB_WIDTH-1:0]   c_sb;
pkt_append #(.DATA_WIDTH(DATA_WIDTH), .TAIL_BYTES(4), .SB_WIDTH(SB_WIDTH)) vcrc_append (
    .clk(clk), .rst(rst),
    .s_valid(b_valid), .s_ready(b_ready), .s_data(b_data), .s_keep(b_keep), .s_last(b_last),
    .s_sb(b_sb), .s_tail(eth ? fcs : {16'd0, vcrc}), .s_tail_len(eth ? 3'd4 : 3'd2),
    .m_valid(c_valid), .m_ready(c_ready), .m_data(m_axis_tx_tdata), .m_keep(m_axis_tx_tkeep),
    .m_last(m_axis_tx_tlast), .m_sb(c_sb)
);

// ------------------------------------------------------------------------------------------
// Static rate and events

reg  [19:0] gap;        // idle cycles still owed before the next beat
reg  [19:0] gap_acc;    // owed for the packet in flight: (rate - 1) per beat
// the message of the beat on the link
wire [MSG_BITS-1:0]  o_msg = c_sb[SB_WIDTH-1 -: MSG_BITS];
wire [3:0]  o_rate = place[o_msg][DESC_BITS-USER_WIDTH-1 -: 4];
wire [3:0]  rate_m1 = o_rate > 4'd1 ? o_rate - 4'd1 : 4'd0;
assign m_axis_tx_user = place[o_msg][DESC_BITS-1 -: USER_WIDTH];
wire        open = gap == 20'd0;

assign m_axis_tx_tvalid = c_valid & open;
assign c_ready = m_axis_tx_tready & open;
assign m_axis_tx_tuser = c_sb[12];
reg  msg_bad;           // an earlier packet of the message on the link was aborted
wire tx_xfer = m_axis_tx_tvalid & m_axis_tx_tready;
wire tx_end = tx_xfer & m_axis_tx_tlast;

always @(posedge clk) begin
    pkt_sent <= tx_end;
    if (tx_end)
        pkt_sent_len <= c_sb[10:0];
    retire <= tx_end & c_sb[11];
    if (tx_end) begin
        done_psn   <= place_end_psn[o_msg];
        done_user  <= m_axis_tx_user;
        done_error <= msg_bad | c_sb[12];
        msg_bad    <= !c_sb[11] && (msg_bad | c_sb[12]);
    end
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
    if (start) begin
        place[next_place] <= desc_in;
        next_place <= next_place == MESSAGES[MSG_BITS-1:0] - 1'b1 ? {MSG_BITS{1'b0}}
                                                                : next_place + 1'b1;
        f_msg   <= next_place;
        filling <= 1'b1;
    end
    if (f_done && f_end)
        filling <= 1'b0;
    if (start != retire)
        held <= start ? held + 1'b1 : held - 1'b1;
    if (rst) begin
        pkt_sent <= 1'b0;
        retire <= 1'b0;
        msg_bad <= 1'b0;
        gap <= 20'd0;
        gap_acc <= 20'd0;
        held <= {(MSG_BITS+1){1'b0}};
        next_place <= {MSG_BITS{1'b0}};
        filling <= 1'b0;
    end
end

endmodule

`resetall
`endif
