// A DMA mover with scatter/gather lists (one per client of the DMA engine, dma_engine):
// dma_mover behind a splitter, with dma_mover's parameters and ports, so clients hand over a
// whole list and a byte range of it and the list handling lives here once.
//
// COPY, READ_STREAM and WRITE_STREAM carry two lists in s_cmd_data: the source list in bits
// [255:0], the destination list in [511:256]. A list has 4 entries, entry e in bits
// [e*64 +: 64] of its half: {len[31:0], host address[31:0]} (32-bit addresses, zero-extended
// to ADDR_WIDTH). A list whose four lengths are all zero is absent: that side is the plain
// address, as in dma_mover. A present list turns its side's address field into a byte offset
// into the list, whose bytes are its entries concatenated in order (empty entries add none).
//   COPY         either side, both or neither a list: one mover COPY per piece, a piece being
//                what is left of the current source entry, of the current destination entry
//                and of len, whichever is least
//   READ_STREAM  with a source list: bytes [src, src+len) of the list as one stream laid out
//                as a plain READ_STREAM's (byte 0 in lane 0). One mover READ_STREAM per entry
//                piece, its lane offset the bytes streamed so far mod B; a piece's partial
//                last beat is held and ORed into the next piece's first beat, and only the
//                final piece's tlast goes out. A destination list is ignored.
//   WRITE_STREAM with a destination list: the input stream (byte 0 in lane 0) goes to bytes
//                [dst, dst+len) of the list, one mover WRITE_STREAM per piece with the source
//                lane offset the bytes consumed so far mod B. Each piece sees the input with
//                tkeep masked to its lanes and tlast forced on its last beat; a beat split by
//                a piece boundary is shown to both pieces and popped by the second. The input's
//                own tlast always reaches the mover, so an early end is the mover's error; once
//                it has been taken no further piece starts. A source list is ignored.
// A list that does not cover the range: the covered pieces are moved, then the command ends
// with m_done_error. READ_STREAM still delivers len bytes (the rest as zeros), WRITE_STREAM
// still takes its input up to tlast, and nothing is written outside the list's entries.
// Everything else (STORE, LOAD, ATOMIC, modes 6-7, no list, len 0, and a list whose only
// range is its first entry and covers the bytes asked for, which is that entry's address plus
// the offset) goes to the mover as it is, cycle for cycle: the command port, the done outputs and the streams pass straight
// through while the splitter is idle.
// One piece at a time, each a whole mover command (a few cycles of seek, plan and the mover's
// set-up between pieces): lists are short, and the mover stays the only place that knows AXI.
// One m_done pulse per client command, its error the OR of the pieces' and the coverage's.
// A client that never hands over a list (LISTS 0) gets the mover alone: every command goes to
// it as it is, each of the splitter's decodes below is a constant, and synthesis builds none of
// the splitter. MODES goes to the mover (the modes the client uses) and also trims the
// splitter: a source list only with COPY or READ_STREAM, a destination list only with COPY or
// WRITE_STREAM, the stream merging and tracking only with their stream's mode.
`ifndef RDMA_DMA_SGL_V
`define RDMA_DMA_SGL_V
`default_nettype none

module dma_sgl #(
    parameter DATA_WIDTH = 256,    // AXI data width in bits: 64, 128, 256 or 512
    parameter ADDR_WIDTH = 32,     // AXI address width
    parameter AXI_ID_WIDTH = 4,    // AXI ID width (the engine uses ID 0)
    parameter LEN_WIDTH = 32,      // command length width in bytes
    parameter RD_BUF_LOG = 4,      // the mover's read buffer: 2^RD_BUF_LOG beats
    parameter [0:0] LISTS = 1'b1,  // 1: commands may carry lists; 0: no list is ever looked for
    parameter [7:0] MODES = 8'h3F  // the modes taken, a bit each (dma_mover)
) (
    input  wire                     clk,
    input  wire                     rst,

    // command: one at a time; s_cmd_ready is low from acceptance until the done pulse
    input  wire                     s_cmd_valid,
    output wire                     s_cmd_ready,
    input  wire [2:0]               s_cmd_mode,      // 0 COPY, 1 STORE, 2 LOAD, 3 READ_STREAM, 4 WRITE_STREAM, 5 ATOMIC
    input  wire [ADDR_WIDTH-1:0]    s_cmd_src_addr,  // as dma_mover's, or the offset into a source list
    input  wire [ADDR_WIDTH-1:0]    s_cmd_dst_addr,  // as dma_mover's, or the offset into a destination list
    input  wire [LEN_WIDTH-1:0]     s_cmd_len,       // bytes; STORE/LOAD at most 64; 0 completes at once with no bus traffic
    input  wire [511:0]             s_cmd_data,      // STORE source, ATOMIC operands; COPY/streams: {dst list, src list}
    output wire                     m_done_valid,    // one-cycle pulse when the whole command is finished
    output wire                     m_done_error,    // with m_done_valid: a bus error, a stream mismatch or a list too short
    output wire [511:0]             m_done_data,     // LOAD result, byte 0 in bits [7:0], bytes past len are zero
    output wire                     m_lock,          // an ATOMIC runs (dma_mover)
    output wire [ADDR_WIDTH-1:0]    m_lock_addr,     // ... on these 8 bytes
    input  wire                     w_shared,        // another mover writes host memory (dma_mover)
    output wire                     w_busy,          // this one does

    // READ_STREAM output; lanes outside tkeep are zero
    output wire [DATA_WIDTH-1:0]    m_axis_rd_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_rd_tkeep,
    output wire                     m_axis_rd_tvalid,
    input  wire                     m_axis_rd_tready,
    output wire                     m_axis_rd_tlast,
    output wire                     m_axis_rd_tuser, // with tlast: a read had an error response, or the list was short

    // WRITE_STREAM input; tready is low outside a WRITE_STREAM command
    input  wire [DATA_WIDTH-1:0]    s_axis_wr_tdata,
    input  wire [DATA_WIDTH/8-1:0]  s_axis_wr_tkeep,
    input  wire                     s_axis_wr_tvalid,
    output wire                     s_axis_wr_tready,
    input  wire                     s_axis_wr_tlast,

    // AXI4 master
    output wire [AXI_ID_WIDTH-1:0]  m_axi_awid,
    output wire [ADDR_WIDTH-1:0]    m_axi_awaddr,
    output wire [7:0]               m_axi_awlen,
    output wire [2:0]               m_axi_awsize,
    output wire [1:0]               m_axi_awburst,
    output wire                     m_axi_awlock,
    output wire [3:0]               m_axi_awcache,
    output wire [2:0]               m_axi_awprot,
    output wire                     m_axi_awvalid,
    input  wire                     m_axi_awready,
    output wire [DATA_WIDTH-1:0]    m_axi_wdata,
    output wire [DATA_WIDTH/8-1:0]  m_axi_wstrb,
    output wire                     m_axi_wlast,
    output wire                     m_axi_wvalid,
    input  wire                     m_axi_wready,
    input  wire [AXI_ID_WIDTH-1:0]  m_axi_bid,
    input  wire [1:0]               m_axi_bresp,
    input  wire                     m_axi_bvalid,
    output wire                     m_axi_bready,
    output wire [AXI_ID_WIDTH-1:0]  m_axi_arid,
    output wire [ADDR_WIDTH-1:0]    m_axi_araddr,
    output wire [7:0]               m_axi_arlen,
    output wire [2:0]               m_axi_arsize,
    output wire [1:0]               m_axi_arburst,
    output wire                     m_axi_arlock,
    output wire [3:0]               m_axi_arcache,
    output wire [2:0]               m_axi_arprot,
    output wire                     m_axi_arvalid,
    input  wire                     m_axi_arready,
    input  wire [AXI_ID_WIDTH-1:0]  m_axi_rid,
    input  wire [DATA_WIDTH-1:0]    m_axi_rdata,
    input  wire [1:0]               m_axi_rresp,
    input  wire                     m_axi_rlast,
    input  wire                     m_axi_rvalid,
    output wire                     m_axi_rready
);

localparam B = DATA_WIDTH / 8;                // bytes per beat
localparam BL = $clog2(B);                    // byte lane width
// list offsets, lengths and plain addresses are worked out in one width that holds them all
localparam W = (ADDR_WIDTH > LEN_WIDTH) ? ((ADDR_WIDTH > 32) ? ADDR_WIDTH : 32)
                                        : ((LEN_WIDTH > 32) ? LEN_WIDTH : 32);
localparam [W-1:0] B_W = {{(W-BL-1){1'b0}}, 1'b1, {BL{1'b0}}};   // B
localparam [B-1:0] ALL = {B{1'b1}};

localparam [2:0] MODE_COPY = 3'd0;
localparam [2:0] MODE_RD_STREAM = 3'd3;
localparam [2:0] MODE_WR_STREAM = 3'd4;
// which lists and which stream handling the modes taken can ever need
localparam SRC_LISTS = LISTS && (MODES[MODE_COPY] || MODES[MODE_RD_STREAM]);
localparam DST_LISTS = LISTS && (MODES[MODE_COPY] || MODES[MODE_WR_STREAM]);
localparam RD_LISTS = LISTS && MODES[MODE_RD_STREAM];
localparam WR_LISTS = LISTS && MODES[MODE_WR_STREAM];

localparam [2:0] ST_IDLE = 3'd0;    // no list command: the mover is the client's
localparam [2:0] ST_SEEK = 3'd1;    // step each list cursor past the entries it has used up
localparam [2:0] ST_PLAN = 3'd2;    // size the next piece, or finish
localparam [2:0] ST_ISSUE = 3'd3;   // hand the piece to the mover
localparam [2:0] ST_WAIT = 3'd4;    // the mover moves the piece
localparam [2:0] ST_ZFILL = 3'd5;   // READ_STREAM past the list's end: zero bytes up to len
localparam [2:0] ST_WDRAIN = 3'd6;  // WRITE_STREAM past the list's end: take the input to tlast

reg [2:0]   state;
reg         done_q;      // the list command's done pulse
reg         err;         // an error of any piece, or the list too short
reg [2:0]   c_mode;      // COPY, READ_STREAM or WRITE_STREAM
reg         rd_list_q;   // a READ_STREAM from a source list is running
reg         wr_list_q;   // a WRITE_STREAM to a destination list is running
reg         sl_q, dl_q;  // the source / destination side is a list
reg [255:0] s_list_q, d_list_q;
reg [2:0]   s_idx, d_idx;    // current entry; 4 is past the end
reg [W-1:0] s_off, d_off;    // offset into the current entry, or the plain address
reg [W-1:0] len_left;        // bytes not yet given to a piece
reg [BL-1:0] lane;           // bytes streamed so far mod B: the next piece's lane offset
reg [W-1:0] p_len, p_src, p_dst;   // the piece for the mover
reg         p_final;     // the piece running is the command's last (no list command: 1)
reg         in_done;     // WRITE_STREAM: the input's tlast has been taken
reg [DATA_WIDTH-1:0] hold_data;    // READ_STREAM: a piece's partial last beat, zero elsewhere
reg [B-1:0] hold_keep;
// where the current piece (or the zero fill) is in its stream beats
reg [BL-1:0] trk_lo;         // lane of its next byte: its first lane on its first beat, else 0
reg [W-1:0] trk_rem;         // its bytes from that lane on

wire idle = !LISTS || state == ST_IDLE;
// what a list command holds, read only where the modes can use it (synthesis drops the rest)
wire         rd_list = RD_LISTS && rd_list_q;
wire         wr_list = WR_LISTS && wr_list_q;
wire         sl = SRC_LISTS && sl_q;
wire         dl = DST_LISTS && dl_q;
wire [255:0] s_list = SRC_LISTS ? s_list_q : 256'd0;
wire [255:0] d_list = DST_LISTS ? d_list_q : 256'd0;
wire list_done = LISTS && done_q;

// ---- the command port: the mover's own while idle, the pieces' otherwise --------------------
wire        mv_cmd_ready;
wire        mv_done_valid, mv_done_error;
wire [W-1:0] src_w, dst_w, len_w;            // client fields in width W
wire [ADDR_WIDTH-1:0] p_src_a, p_dst_a;      // the piece's fields in the mover's widths
wire [ADDR_WIDTH-1:0] plain_src_a, plain_dst_a;  // a command the mover takes as it is
wire [LEN_WIDTH-1:0] p_len_l;

// a list is present when one of its lengths is not zero
wire s_any = SRC_LISTS && |{s_cmd_data[255:224], s_cmd_data[191:160], s_cmd_data[127:96], s_cmd_data[63:32]};
wire d_any = DST_LISTS && |{s_cmd_data[511:480], s_cmd_data[447:416], s_cmd_data[383:352], s_cmd_data[319:288]};
// (a mode the mover does not take goes to it as it is, and ends in error there)
wire is_copy = MODES[MODE_COPY] && s_cmd_mode == MODE_COPY;
wire use_sl = (is_copy || (MODES[MODE_RD_STREAM] && s_cmd_mode == MODE_RD_STREAM)) && s_any;
wire use_dl = (is_copy || (MODES[MODE_WR_STREAM] && s_cmd_mode == MODE_WR_STREAM)) && d_any;
// A list whose one range is its first entry and covers the bytes asked for is that range's
// address plus the offset: the command goes to the mover as it is (a single-SGE message pays
// nothing for the lists).
wire [W-1:0] s_first_len, s_first_addr, d_first_len, d_first_addr;
wire s_one = ~|{s_cmd_data[255:224], s_cmd_data[191:160], s_cmd_data[127:96]};
wire d_one = ~|{s_cmd_data[511:480], s_cmd_data[447:416], s_cmd_data[383:352]};
wire s_plain = !use_sl || (s_one && {1'b0, src_w} + {1'b0, len_w} <= {1'b0, s_first_len});
wire d_plain = !use_dl || (d_one && {1'b0, dst_w} + {1'b0, len_w} <= {1'b0, d_first_len});
wire list_cmd = !(s_plain && d_plain) && s_cmd_len != {LEN_WIDTH{1'b0}};
// (a stream's other side is its lane offset: 0, as a list's stream starts in lane 0)
wire [W-1:0] plain_src = use_sl ? s_first_addr + src_w : use_dl && !is_copy ? {W{1'b0}} : src_w;
wire [W-1:0] plain_dst = use_dl ? d_first_addr + dst_w : use_sl && !is_copy ? {W{1'b0}} : dst_w;

assign s_cmd_ready = idle && mv_cmd_ready;
wire cmd_fire = s_cmd_valid && s_cmd_ready;
wire mv_cmd_valid = idle ? s_cmd_valid && !list_cmd : state == ST_ISSUE;
wire mv_cmd_fire = mv_cmd_valid && mv_cmd_ready;

assign m_done_valid = list_done || (idle && mv_done_valid);
assign m_done_error = list_done ? err : mv_done_error;

// ---- list cursors and the next piece ---------------------------------------------------------
wire [63:0] s_ent = s_list[s_idx[1:0]*64 +: 64];
wire [63:0] d_ent = d_list[d_idx[1:0]*64 +: 64];
wire [W-1:0] s_len_w, s_addr_w, d_len_w, d_addr_w;
wire s_skip = sl && !s_idx[2] && s_off >= s_len_w;    // the entry is used up (or empty)
wire d_skip = dl && !d_idx[2] && d_off >= d_len_w;
// bytes left in the current entry: unbounded on a plain side, none past the list's end
wire [W-1:0] s_rest = !sl ? {W{1'b1}} : s_idx[2] ? {W{1'b0}} : s_len_w - s_off;
wire [W-1:0] d_rest = !dl ? {W{1'b1}} : d_idx[2] ? {W{1'b0}} : d_len_w - d_off;
// (a constant comparison in a mover whose modes have one kind of list only)
/* verilator lint_off CMPCONST */
wire [W-1:0] sd_rest = (s_rest < d_rest) ? s_rest : d_rest;
/* verilator lint_on CMPCONST */
wire [W-1:0] n = (len_left < sd_rest) ? len_left : sd_rest;
wire [W-1:0] lane_w = {{(W-BL){1'b0}}, lane};

// ---- piece tracker: which lanes of the current beat belong to the piece ----------------------
wire [W-1:0] trk_lo_w = {{(W-BL){1'b0}}, trk_lo};
wire trk_last = trk_rem <= B_W - trk_lo_w;               // this beat has the piece's last byte
wire [BL-1:0] trk_end = trk_lo + trk_rem[BL-1:0] - 1'b1;  // ... in this lane
wire [B-1:0] lo_mask = ALL << trk_lo;
wire [B-1:0] end_mask = ALL >> ~trk_end;
wire [B-1:0] trk_keep = lo_mask & (trk_last ? end_mask : ALL);

// ---- READ_STREAM: pieces (or zero fill) merged into one stream -------------------------------
wire [DATA_WIDTH-1:0] mv_rd_tdata;
wire [B-1:0] mv_rd_tkeep;
wire mv_rd_tvalid, mv_rd_tlast, mv_rd_tready, mv_rd_tuser;
wire zfill = RD_LISTS && state == ST_ZFILL;
wire [DATA_WIDTH-1:0] rs_data = zfill ? {DATA_WIDTH{1'b0}} : mv_rd_tdata;
wire [B-1:0] rs_keep = zfill ? trk_keep : mv_rd_tkeep;
wire rs_valid = zfill || mv_rd_tvalid;
wire rs_last = zfill ? trk_last : mv_rd_tlast;
// a piece's last beat that stops short of the top lane waits for the next piece's bytes
wire absorb = rd_list && rs_last && !p_final && !rs_keep[B-1];
wire rs_ready = absorb || m_axis_rd_tready;
wire rs_fire = rs_valid && rs_ready;
assign m_axis_rd_tdata = RD_LISTS ? rs_data | hold_data : rs_data;
assign m_axis_rd_tkeep = RD_LISTS ? rs_keep | hold_keep : rs_keep;
assign m_axis_rd_tvalid = rs_valid && !absorb;
assign m_axis_rd_tlast = rs_last && (!LISTS || p_final);
// an earlier piece's error is in err before the next piece streams (a piece at a time)
assign m_axis_rd_tuser = mv_rd_tuser || (rd_list && err);
assign mv_rd_tready = rs_ready && !zfill;

// ---- WRITE_STREAM: the input shown to each piece ---------------------------------------------
wire mv_wr_tready;
wire split = wr_list && trk_last && !p_final;  // the piece's last beat, more follow
wire shared = split && !end_mask[B-1];                  // ... and the next piece starts in it
wire [B-1:0] wr_mask = !wr_list ? ALL : lo_mask & (split ? end_mask : ALL);
wire mv_wr_fire = s_axis_wr_tvalid && mv_wr_tready;
assign s_axis_wr_tready = (WR_LISTS && state == ST_WDRAIN) || (mv_wr_tready && !shared);
wire in_fire = s_axis_wr_tvalid && s_axis_wr_tready;

wire trk_step = (wr_list && mv_wr_fire) || (zfill && rs_fire);

// ---- widths: zero-extend into W, take the low bits out of it (a piece never exceeds len) -----
generate
    if (W > 32) begin : g_list_ext
        assign s_len_w = {{(W-32){1'b0}}, s_ent[63:32]};
        assign s_addr_w = {{(W-32){1'b0}}, s_ent[31:0]};
        assign d_len_w = {{(W-32){1'b0}}, d_ent[63:32]};
        assign d_addr_w = {{(W-32){1'b0}}, d_ent[31:0]};
        assign s_first_len = {{(W-32){1'b0}}, s_cmd_data[63:32]};
        assign s_first_addr = {{(W-32){1'b0}}, s_cmd_data[31:0]};
        assign d_first_len = {{(W-32){1'b0}}, s_cmd_data[319:288]};
        assign d_first_addr = {{(W-32){1'b0}}, s_cmd_data[287:256]};
    end else begin : g_list
        assign s_len_w = s_ent[63:32];
        assign s_addr_w = s_ent[31:0];
        assign d_len_w = d_ent[63:32];
        assign d_addr_w = d_ent[31:0];
        assign s_first_len = s_cmd_data[63:32];
        assign s_first_addr = s_cmd_data[31:0];
        assign d_first_len = s_cmd_data[319:288];
        assign d_first_addr = s_cmd_data[287:256];
    end
    if (W > ADDR_WIDTH) begin : g_addr_ext
        assign src_w = {{(W-ADDR_WIDTH){1'b0}}, s_cmd_src_addr};
        assign dst_w = {{(W-ADDR_WIDTH){1'b0}}, s_cmd_dst_addr};
        assign p_src_a = p_src[ADDR_WIDTH-1:0];
        assign p_dst_a = p_dst[ADDR_WIDTH-1:0];
        assign plain_src_a = plain_src[ADDR_WIDTH-1:0];
        assign plain_dst_a = plain_dst[ADDR_WIDTH-1:0];
        wire unused_addr_hi = |{p_src[W-1:ADDR_WIDTH], p_dst[W-1:ADDR_WIDTH],
                                plain_src[W-1:ADDR_WIDTH], plain_dst[W-1:ADDR_WIDTH]};
    end else begin : g_addr
        assign src_w = s_cmd_src_addr;
        assign dst_w = s_cmd_dst_addr;
        assign p_src_a = p_src;
        assign p_dst_a = p_dst;
        assign plain_src_a = plain_src;
        assign plain_dst_a = plain_dst;
    end
    if (W > LEN_WIDTH) begin : g_len_ext
        assign len_w = {{(W-LEN_WIDTH){1'b0}}, s_cmd_len};
        assign p_len_l = p_len[LEN_WIDTH-1:0];
        wire unused_len_hi = |p_len[W-1:LEN_WIDTH];
    end else begin : g_len
        assign len_w = s_cmd_len;
        assign p_len_l = p_len;
    end
endgenerate

// Pieces are COPY or stream commands, which leave s_cmd_data unused: the mover gets the
// client's data as it is (STORE and ATOMIC only ever come straight from the client).
dma_mover #(
    .DATA_WIDTH(DATA_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH),
    .AXI_ID_WIDTH(AXI_ID_WIDTH),
    .LEN_WIDTH(LEN_WIDTH),
    .RD_BUF_LOG(RD_BUF_LOG),
    .MODES(MODES)
) u_mover (
    .clk(clk),
    .rst(rst),
    .s_cmd_valid(mv_cmd_valid),
    .s_cmd_ready(mv_cmd_ready),
    .s_cmd_mode(idle ? s_cmd_mode : c_mode),
    .s_cmd_src_addr(idle ? plain_src_a : p_src_a),
    .s_cmd_dst_addr(idle ? plain_dst_a : p_dst_a),
    .s_cmd_len(idle ? s_cmd_len : p_len_l),
    .s_cmd_data(s_cmd_data),
    .m_done_valid(mv_done_valid),
    .m_done_error(mv_done_error),
    .m_done_data(m_done_data),
    .m_lock(m_lock),
    .m_lock_addr(m_lock_addr),
    .w_shared(w_shared),
    .w_busy(w_busy),
    .m_axis_rd_tdata(mv_rd_tdata),
    .m_axis_rd_tkeep(mv_rd_tkeep),
    .m_axis_rd_tvalid(mv_rd_tvalid),
    .m_axis_rd_tready(mv_rd_tready),
    .m_axis_rd_tlast(mv_rd_tlast),
    .m_axis_rd_tuser(mv_rd_tuser),
    .s_axis_wr_tdata(s_axis_wr_tdata),
    .s_axis_wr_tkeep(s_axis_wr_tkeep & wr_mask),
    .s_axis_wr_tvalid(s_axis_wr_tvalid),
    .s_axis_wr_tready(mv_wr_tready),
    .s_axis_wr_tlast(s_axis_wr_tlast || split),
    .m_axi_awid(m_axi_awid),
    .m_axi_awaddr(m_axi_awaddr),
    .m_axi_awlen(m_axi_awlen),
    .m_axi_awsize(m_axi_awsize),
    .m_axi_awburst(m_axi_awburst),
    .m_axi_awlock(m_axi_awlock),
    .m_axi_awcache(m_axi_awcache),
    .m_axi_awprot(m_axi_awprot),
    .m_axi_awvalid(m_axi_awvalid),
    .m_axi_awready(m_axi_awready),
    .m_axi_wdata(m_axi_wdata),
    .m_axi_wstrb(m_axi_wstrb),
    .m_axi_wlast(m_axi_wlast),
    .m_axi_wvalid(m_axi_wvalid),
    .m_axi_wready(m_axi_wready),
    .m_axi_bid(m_axi_bid),
    .m_axi_bresp(m_axi_bresp),
    .m_axi_bvalid(m_axi_bvalid),
    .m_axi_bready(m_axi_bready),
    .m_axi_arid(m_axi_arid),
    .m_axi_araddr(m_axi_araddr),
    .m_axi_arlen(m_axi_arlen),
    .m_axi_arsize(m_axi_arsize),
    .m_axi_arburst(m_axi_arburst),
    .m_axi_arlock(m_axi_arlock),
    .m_axi_arcache(m_axi_arcache),
    .m_axi_arprot(m_axi_arprot),
    .m_axi_arvalid(m_axi_arvalid),
    .m_axi_arready(m_axi_arready),
    .m_axi_rid(m_axi_rid),
    .m_axi_rdata(m_axi_rdata),
    .m_axi_rresp(m_axi_rresp),
    .m_axi_rlast(m_axi_rlast),
    .m_axi_rvalid(m_axi_rvalid),
    .m_axi_rready(m_axi_rready)
);

// Nothing below can change while no list command runs or starts: a simulator then skips
// the block.
wire awake = !idle || rd_list || wr_list || done_q || cmd_fire;

always @(posedge clk) begin
    if (awake) begin
        done_q <= 1'b0;

        if (rd_list && rs_fire) begin
            hold_data <= absorb ? m_axis_rd_tdata : {DATA_WIDTH{1'b0}};
            hold_keep <= absorb ? m_axis_rd_tkeep : {B{1'b0}};
        end

        if (trk_step && !trk_last) begin
            trk_rem <= trk_rem + trk_lo_w - B_W;
            trk_lo  <= {BL{1'b0}};
        end

        if (wr_list && in_fire && s_axis_wr_tlast)
            in_done <= 1'b1;

        // A list command has finished: the streams pass straight through again. A command taken
        // in this cycle has no stream beat before its set-up, and a list one sets these below.
        if (done_q) begin
            rd_list_q <= 1'b0;
            wr_list_q <= 1'b0;
            p_final   <= 1'b1;
        end

        case (state)
            ST_IDLE: begin
                if (cmd_fire && list_cmd) begin
                    c_mode    <= s_cmd_mode;
                    rd_list_q <= s_cmd_mode == MODE_RD_STREAM;
                    wr_list_q <= s_cmd_mode == MODE_WR_STREAM;
                    sl_q      <= use_sl;
                    dl_q      <= use_dl;
                    s_list_q  <= s_cmd_data[255:0];
                    d_list_q  <= s_cmd_data[511:256];
                    s_idx     <= 3'd0;
                    d_idx     <= 3'd0;
                    s_off     <= src_w;
                    d_off     <= dst_w;
                    len_left  <= len_w;
                    lane      <= {BL{1'b0}};
                    err       <= 1'b0;
                    in_done   <= 1'b0;
                    state     <= ST_SEEK;
                end
            end
            ST_SEEK: begin
                // one entry per cycle and side: at most four steps per list
                if (s_skip) begin
                    s_off <= s_off - s_len_w;
                    s_idx <= s_idx + 1'b1;
                end
                if (d_skip) begin
                    d_off <= d_off - d_len_w;
                    d_idx <= d_idx + 1'b1;
                end
                if (!s_skip && !d_skip)
                    state <= ST_PLAN;
            end
            ST_PLAN: begin
                p_len   <= n;
                p_src   <= wr_list ? lane_w : sl ? s_addr_w + s_off : s_off;
                p_dst   <= rd_list ? lane_w : dl ? d_addr_w + d_off : d_off;
                p_final <= n == len_left;
                trk_lo  <= lane;
                trk_rem <= n;
                if (len_left == {W{1'b0}}) begin
                    done_q <= 1'b1;
                    state  <= ST_IDLE;
                end else if (wr_list && in_done) begin
                    // the input ended before len: no piece may wait for bytes that never come
                    err    <= 1'b1;
                    done_q <= 1'b1;
                    state  <= ST_IDLE;
                end else if (n == {W{1'b0}}) begin
                    // the list ends before len
                    err <= 1'b1;
                    if (rd_list) begin
                        p_final <= 1'b1;
                        trk_rem <= len_left;
                        state   <= ST_ZFILL;
                    end else if (wr_list) begin
                        state <= ST_WDRAIN;
                    end else begin
                        done_q <= 1'b1;
                        state  <= ST_IDLE;
                    end
                end else begin
                    state <= ST_ISSUE;
                end
            end
            ST_ISSUE: begin
                if (mv_cmd_fire) begin
                    s_off    <= s_off + p_len;
                    d_off    <= d_off + p_len;
                    len_left <= len_left - p_len;
                    lane     <= lane + p_len[BL-1:0];
                    state    <= ST_WAIT;
                end
            end
            ST_WAIT: begin
                if (mv_done_valid) begin
                    err   <= err || mv_done_error;
                    state <= ST_SEEK;
                end
            end
            ST_ZFILL: begin
                if (rs_fire && trk_last) begin
                    done_q <= 1'b1;
                    state  <= ST_IDLE;
                end
            end
            default: begin   // ST_WDRAIN
                if (in_fire && s_axis_wr_tlast) begin
                    done_q <= 1'b1;
                    state  <= ST_IDLE;
                end
            end
        endcase
    end

    if (rst) begin
        state     <= ST_IDLE;
        done_q    <= 1'b0;
        err       <= 1'b0;
        rd_list_q <= 1'b0;
        wr_list_q <= 1'b0;
        p_final   <= 1'b1;
        hold_data <= {DATA_WIDTH{1'b0}};
        hold_keep <= {B{1'b0}};
        trk_lo    <= {BL{1'b0}};
        trk_rem   <= {W{1'b0}};
    end
end

endmodule

`resetall
`endif
