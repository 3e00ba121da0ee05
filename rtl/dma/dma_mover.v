// A DMA mover: one command at a time, over one AXI4 master (the device has one per client,
// sharing the host bus through dma_axi_mux).
//
//   COPY         (mode 0): len bytes host src -> host dst, any alignment of either, any length
//   STORE        (mode 1): len (1..64) bytes of s_cmd_data -> host dst
//   LOAD         (mode 2): len (1..64) bytes host src -> m_done_data
//   READ_STREAM  (mode 3): len bytes host src (any alignment) -> m_axis_rd. The stream's first
//                          byte is in lane dst[log2(B)-1:0] of the first beat (B = DATA_WIDTH/8;
//                          the upper dst bits are ignored; 0: byte 0 in tdata[7:0]), tkeep has
//                          exactly the lanes of the bytes (from that lane up on the first beat,
//                          full in between, up to the last byte on the last beat), tlast is on
//                          the last beat, and lanes outside tkeep carry zero on every beat;
//                          tuser on the last beat: some of its source beats came with an
//                          error response, so the stream is not the host's bytes
//   WRITE_STREAM (mode 4): len bytes from s_axis_wr -> host dst (any alignment). The stream's
//                          first byte is in lane src[log2(B)-1:0] of its first beat (the upper
//                          src bits are ignored; 0: byte 0 in tdata[7:0]), same beat layout as
//                          READ_STREAM's (the lane offset is how dma_sgl joins list pieces)
//   ATOMIC       (mode 5): the 8 bytes at host dst (len 8), read, modified and written back as
//                          one command: FetchAdd (s_cmd_data[128] = 0) adds s_cmd_data[63:0];
//                          CompareSwap (s_cmd_data[128] = 1) writes s_cmd_data[127:64] when
//                          they equal s_cmd_data[63:0] (else writes nothing). m_done_data has
//                          the original value. m_lock is high from the ATOMIC's acceptance to
//                          its done with the 8 bytes' address on m_lock_addr: the engines'
//                          AXI mux (dma_axi_mux) lets no other access to them come between the
//                          read and the write
//   modes 6-7 are not commands: they complete at once with m_done_error set, and so does a
//   mode outside MODES. A mover is built for the modes its client uses (MODES): the AR side
//   only with a mode that reads host memory, the AW/W/B side only with one that writes it,
//   the STORE block and the LOAD result only as wide as its modes need (an ATOMIC's 8 bytes),
//   the streams only with their modes.
// A STORE or LOAD longer than 64 bytes is outside the contract; it still completes (STORE
// repeats the data block, LOAD wraps around m_done_data) rather than hanging. A WRITE_STREAM
// whose stream does not have that layout (tlast early or late, a tkeep other than the
// layout's on any beat) sets m_done_error and still finishes, writing nothing outside
// [dst, dst+len) (see dma_rd_engine). A command with len 0 moves nothing on any bus or stream.
//
// All modes go through the same pipeline, so the packet path shares one read path, one
// realigner and one write path with the host-to-host moves:
//   dma_rd_engine (AR bursts + R, the STORE block, or the write stream) -> dma_realign ->
//   dma_wr_engine (AW/W/B, the LOAD result, or the read stream)
// Reads are beat-aligned; the realigner shifts source bytes to their destination lanes and the
// write side strobes only the bytes of [dst, dst+len). Read and write bursts run concurrently,
// so a long COPY streams one beat per cycle once the pipeline is full. A stream's lane offset
// is just the low address bits of its side: the realigner and the strobes treat it like a
// host address, so all it adds is the write stream's first-beat tkeep check.
`ifndef RDMA_DMA_MOVER_V
`define RDMA_DMA_MOVER_V
`default_nettype none

module dma_mover #(
    parameter DATA_WIDTH = 256,    // AXI data width in bits: 64, 128, 256 or 512
    parameter ADDR_WIDTH = 32,     // AXI address width
    parameter AXI_ID_WIDTH = 4,    // AXI ID width (the engine uses ID 0)
    parameter LEN_WIDTH = 32,      // command length width in bytes
    parameter RD_BUF_LOG = 4,      // read buffer of 2^RD_BUF_LOG beats: the most read beats in flight
    parameter [7:0] MODES = 8'h3F  // the modes taken, a bit each (bit m: mode m); the others end in error
) (
    input  wire                     clk,
    input  wire                     rst,

    // command: one at a time; s_cmd_ready is low from acceptance until the done pulse
    input  wire                     s_cmd_valid,
    output wire                     s_cmd_ready,
    input  wire [2:0]               s_cmd_mode,      // 0 COPY, 1 STORE, 2 LOAD, 3 READ_STREAM, 4 WRITE_STREAM, 5 ATOMIC
    input  wire [ADDR_WIDTH-1:0]    s_cmd_src_addr,  // COPY/LOAD/READ_STREAM: any byte address; WRITE_STREAM: low bits = first lane
    input  wire [ADDR_WIDTH-1:0]    s_cmd_dst_addr,  // COPY/STORE/WRITE_STREAM: any byte address; READ_STREAM: low bits = first lane
    input  wire [LEN_WIDTH-1:0]     s_cmd_len,       // bytes; STORE/LOAD at most 64; 0 completes at once with no bus traffic
    input  wire [511:0]             s_cmd_data,      // STORE source, byte 0 in bits [7:0]; ATOMIC operands
    output reg                      m_done_valid,    // one-cycle pulse when the command is finished (all write responses received)
    output reg                      m_done_error,    // with m_done_valid: some RRESP/BRESP was not OKAY
    output wire [511:0]             m_done_data,     // LOAD result, byte 0 in bits [7:0], bytes past len are zero
    output reg                      m_lock,          // an ATOMIC runs: no other access to its 8 bytes
    output wire [ADDR_WIDTH-1:0]    m_lock_addr,     // ... at this address
    input  wire                     w_shared,        // another mover writes host memory (dma_wr_engine)
    output wire                     w_busy,          // this one does

    // READ_STREAM output; lanes outside tkeep are zero
    output wire [DATA_WIDTH-1:0]    m_axis_rd_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_rd_tkeep,
    output wire                     m_axis_rd_tvalid,
    input  wire                     m_axis_rd_tready,
    output wire                     m_axis_rd_tlast,
    output wire                     m_axis_rd_tuser, // with tlast: a read of the command had an error response

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

`include "rdma_defs.vh"

localparam B = DATA_WIDTH / 8;                // bytes per beat
localparam BL = $clog2(B);                    // byte offset width
localparam NPOS = 512 / DATA_WIDTH;           // beats in a LOAD result
localparam LIW = (NPOS > 1) ? $clog2(NPOS) : 1;
localparam [LEN_WIDTH:0] B_M1 = {{(LEN_WIDTH+1-BL){1'b0}}, {BL{1'b1}}};  // B - 1: rounds a byte end up to whole beats
// The longest read bursts (dma_rd_engine: 4 KiB, 256 beats, and the read buffer) and write
// bursts (dma_wr_engine: 512 bytes): a buffer that still holds a whole write burst while a read
// burst is on its way lets a COPY's write burst wait for all its data (dma_wr_engine's
// WAIT_WHOLE). Writes are short so that such a wait is short: with several COPYs at once, W
// starts a burst after the read of it, not of 4 KiB (a 512-byte write is also a common PCIe
// maximum payload).
localparam WR_BOUND_LOG = 9;
localparam RD_BURST_LOG = ((RD_BUF_LOG < 8 ? RD_BUF_LOG : 8) + BL < 12) ?
                          (RD_BUF_LOG < 8 ? RD_BUF_LOG : 8) : 12 - BL;
localparam WR_BURST_LOG = (BL + 8 < WR_BOUND_LOG) ? 8 : WR_BOUND_LOG - BL;
localparam WAIT_WHOLE = (1 << RD_BUF_LOG) - (1 << RD_BURST_LOG) >= (1 << WR_BURST_LOG) ? 1 : 0;

localparam [2:0] MODE_STORE = 3'd1;     // s_cmd_data -> host
localparam [2:0] MODE_LOAD = 3'd2;      // host -> m_done_data
localparam [2:0] MODE_RD_STREAM = 3'd3; // host -> m_axis_rd
localparam [2:0] MODE_WR_STREAM = 3'd4; // s_axis_wr -> host (COPY is mode 0)
localparam [2:0] MODE_ATOMIC = 3'd5;    // a LOAD, then a STORE of the new value (above 5 is no command)

// What the modes taken need: an ATOMIC runs as a LOAD and then a STORE of its 8 bytes
localparam [5:0] TAKEN = MODES[5:0];
localparam HAS_COPY = TAKEN[DMA_COPY];
localparam HAS_STORE = TAKEN[MODE_STORE] || TAKEN[MODE_ATOMIC];
localparam HAS_LOAD = TAKEN[MODE_LOAD] || TAKEN[MODE_ATOMIC];
localparam HAS_RD_STREAM = TAKEN[MODE_RD_STREAM];
localparam HAS_WR_STREAM = TAKEN[MODE_WR_STREAM];
localparam HAS_ATOMIC = TAKEN[MODE_ATOMIC];
localparam AXI_READS = HAS_COPY || HAS_LOAD || HAS_RD_STREAM;
localparam AXI_WRITES = HAS_COPY || HAS_STORE || HAS_WR_STREAM;
// the bits of the STORE block and of the LOAD result that are ever used (an ATOMIC's: 64)
localparam [511:0] STORE_BITS = TAKEN[MODE_STORE] ? {512{1'b1}} : HAS_ATOMIC ? {{448{1'b0}}, {64{1'b1}}} : 512'd0;
localparam [511:0] LOAD_BITS = TAKEN[MODE_LOAD] ? {512{1'b1}} : HAS_ATOMIC ? {{448{1'b0}}, {64{1'b1}}} : 512'd0;

localparam [1:0] ST_IDLE = 2'd0;   // waiting for a command
localparam [1:0] ST_SETUP = 2'd1;  // an ATOMIC's write latched: start the engines on it
localparam [1:0] ST_RUN = 2'd2;    // engines running until the last beat and B are done
localparam [1:0] ST_ATOMIC = 2'd3; // an ATOMIC's read is done: decide its write

reg [1:0]             state;
reg                   cmd_ready;
reg [2:0]             cmd_mode;
reg [ADDR_WIDTH-1:0]  cmd_src;
reg [ADDR_WIDTH-1:0]  cmd_dst;
reg [LEN_WIDTH-1:0]   cmd_len;
reg [511:0]           cmd_data;   // STORE source, held for the whole command
reg [511:0]           done_data;  // LOAD result (m_done_data)
reg                   atomic;     // the LOAD running is an ATOMIC's read
reg [128:0]           atom_op;    // ... and its operands
// Only the bits the modes use are read: synthesis drops the flip-flops of the others.
wire [511:0] store_block = cmd_data & STORE_BITS;
wire [128:0] atom_ops = HAS_ATOMIC ? atom_op : 129'd0;
assign m_done_data = done_data & LOAD_BITS;

assign s_cmd_ready = cmd_ready;
assign m_lock_addr = cmd_dst;

wire cmd_fire = s_cmd_valid && cmd_ready;
wire bad_mode = !TAKEN[s_cmd_mode] || s_cmd_mode > MODE_ATOMIC;
wire is_atomic_cmd = HAS_ATOMIC && s_cmd_mode == MODE_ATOMIC;
// a command with bytes to move starts the engines in the cycle it is taken (an ATOMIC's write
// one cycle after its read, from ST_SETUP)
wire take = cmd_fire && s_cmd_len != {LEN_WIDTH{1'b0}} && !bad_mode;
wire start = take || state == ST_SETUP;

// The command the engines start on: the one being taken (an ATOMIC starts as a LOAD of its 8
// bytes), else the latched one.
wire [2:0]            c_mode = take ? (is_atomic_cmd ? MODE_LOAD : s_cmd_mode) : cmd_mode;
wire [ADDR_WIDTH-1:0] c_src  = take ? (is_atomic_cmd ? s_cmd_dst_addr : s_cmd_src_addr) : cmd_src;
wire [ADDR_WIDTH-1:0] c_dst  = take ? s_cmd_dst_addr : cmd_dst;
wire [LEN_WIDTH-1:0]  c_len  = take ? s_cmd_len : cmd_len;

// Per-command set-up (STORE reads its block from offset 0, LOAD delivers its result from
// offset 0). The stream modes take their lane offset from the low bits of the stream's side:
// to the realigner and the strobes it is just an address offset (the upper bits are dropped;
// no AR for WRITE_STREAM, no AW for READ_STREAM).
wire is_store = HAS_STORE && c_mode == MODE_STORE;
wire is_load = HAS_LOAD && c_mode == MODE_LOAD;
wire is_rd_stream = HAS_RD_STREAM && c_mode == MODE_RD_STREAM;
wire is_wr_stream = HAS_WR_STREAM && c_mode == MODE_WR_STREAM;
wire is_copy = HAS_COPY && c_mode == DMA_COPY;
wire dst_local = is_load || is_rd_stream;   // destination is m_done_data or the read stream
wire [BL-1:0] src_off = is_store ? {BL{1'b0}} : c_src[BL-1:0];
wire [BL-1:0] dst_off = is_load ? {BL{1'b0}} : c_dst[BL-1:0];
wire [ADDR_WIDTH-1:0] dst_addr = dst_local ? {{(ADDR_WIDTH-BL){1'b0}}, dst_off} : c_dst;
// the ATOMIC's new value from the original the read returned
wire [63:0] atom_orig = m_done_data[63:0];
wire        atom_cas = atom_ops[ATOM_IS_CAS];
wire [63:0] atom_new = atom_cas ? atom_ops[ATOM_SWAP +: 64] : atom_orig + atom_ops[ATOM_CMP_ADD +: 64];
wire        atom_write = !atom_cas || atom_orig == atom_ops[ATOM_CMP_ADD +: 64];

wire [LEN_WIDTH:0] in_beats = ({1'b0, c_len} + {{(LEN_WIDTH+1-BL){1'b0}}, src_off} + B_M1) >> BL;
wire [LEN_WIDTH:0] out_beats = ({1'b0, c_len} + {{(LEN_WIDTH+1-BL){1'b0}}, dst_off} + B_M1) >> BL;
wire [BL-1:0] rl_shift = src_off + ~dst_off;
wire rl_skip = src_off > dst_off;
// the realigner makes in_beats - skip beats by itself; one more when the destination needs it
wire rl_flush = (out_beats + {{LEN_WIDTH{1'b0}}, rl_skip}) > in_beats;
wire [BL-1:0] last_off = dst_off + c_len[BL-1:0] - 1'b1;
wire [BL-1:0] src_last_off = src_off + c_len[BL-1:0] - 1'b1;   // WRITE_STREAM: last byte's lane

// pipeline links
wire [DATA_WIDTH-1:0] src_data;
wire src_last, src_valid, src_ready;
wire [DATA_WIDTH-1:0] dst_data;
wire dst_last, dst_valid, dst_ready;
wire rd_error, rd_idle, wr_error, wr_done;
wire [RD_BUF_LOG:0] src_held;
wire src_all_in;
wire ld_valid;
wire [LIW-1:0] ld_idx;
wire [DATA_WIDTH-1:0] ld_data;

dma_rd_engine #(
    .DATA_WIDTH(DATA_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH),
    .AXI_ID_WIDTH(AXI_ID_WIDTH),
    .LEN_WIDTH(LEN_WIDTH),
    .RD_BUF_LOG(RD_BUF_LOG),
    .AXI_SRC(AXI_READS),
    .STORE_SRC(HAS_STORE),
    .STREAM_SRC(HAS_WR_STREAM)
) u_rd (
    .clk(clk),
    .rst(rst),
    .start(start),
    .cfg_store(is_store),
    .cfg_stream(is_wr_stream),
    .cfg_first_off(src_off),
    .cfg_last_off(src_last_off),
    .cfg_addr(c_src[ADDR_WIDTH-1:BL]),
    .cfg_beats(in_beats[LEN_WIDTH-1:0]),
    .store_data(store_block),
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
    .m_axi_rready(m_axi_rready),
    .s_axis_tdata(s_axis_wr_tdata),
    .s_axis_tkeep(s_axis_wr_tkeep),
    .s_axis_tvalid(s_axis_wr_tvalid),
    .s_axis_tready(s_axis_wr_tready),
    .s_axis_tlast(s_axis_wr_tlast),
    .m_data(src_data),
    .m_last(src_last),
    .m_valid(src_valid),
    .m_ready(src_ready),
    .held(src_held),
    .all_in(src_all_in),
    .rd_error(rd_error),
    .idle(rd_idle)
);

dma_realign #(
    .DATA_WIDTH(DATA_WIDTH)
) u_realign (
    .clk(clk),
    .rst(rst),
    .start(start),
    .cfg_shift(rl_shift),
    .cfg_skip(rl_skip),
    .cfg_flush(rl_flush),
    .s_data(src_data),
    .s_last(src_last),
    .s_valid(src_valid),
    .s_ready(src_ready),
    .m_data(dst_data),
    .m_last(dst_last),
    .m_valid(dst_valid),
    .m_ready(dst_ready)
);

dma_wr_engine #(
    .DATA_WIDTH(DATA_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH),
    .AXI_ID_WIDTH(AXI_ID_WIDTH),
    .LEN_WIDTH(LEN_WIDTH),
    .HELD_WIDTH(RD_BUF_LOG + 1),
    .WR_BOUND_LOG(WR_BOUND_LOG),
    .WAIT_WHOLE(WAIT_WHOLE),
    .AXI_DST(AXI_WRITES),
    .LOAD_DST(HAS_LOAD),
    .STREAM_DST(HAS_RD_STREAM)
) u_wr (
    .clk(clk),
    .rst(rst),
    .start(start),
    .cfg_load(dst_local),
    .cfg_stream(is_rd_stream),
    .cfg_wait(is_copy),
    .cfg_addr(dst_addr),
    .cfg_beats(out_beats[LEN_WIDTH-1:0]),
    .cfg_last_off(last_off),
    .src_beat(src_valid),
    .src_held(src_held),
    .src_all_in(src_all_in),
    .w_shared(w_shared),
    .w_busy(w_busy),
    .s_data(dst_data),
    .s_last(dst_last),
    .s_valid(dst_valid),
    .s_ready(dst_ready),
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
    .ld_valid(ld_valid),
    .ld_idx(ld_idx),
    .ld_data(ld_data),
    .m_axis_tdata(m_axis_rd_tdata),
    .m_axis_tkeep(m_axis_rd_tkeep),
    .m_axis_tvalid(m_axis_rd_tvalid),
    .m_axis_tready(m_axis_rd_tready),
    .m_axis_tlast(m_axis_rd_tlast),
    .wr_error(wr_error),
    .done(wr_done)
);

// An R beat enters the read buffer the cycle rd_error takes it in, and leaves it at the
// earliest the cycle after: every stream beat built from it sees the error.
assign m_axis_rd_tuser = rd_error;

// Nothing below changes while idle with no command offered: a simulator then skips it.
wire awake = state != ST_IDLE || s_cmd_valid || m_done_valid || !cmd_ready;

integer p;
always @(posedge clk) begin
    if (awake) begin
        m_done_valid <= 1'b0;

        case (state)
            ST_IDLE: begin
                if (cmd_fire) begin
                    // an ATOMIC starts as a LOAD of its 8 bytes
                    cmd_mode    <= is_atomic_cmd ? MODE_LOAD : s_cmd_mode;
                    cmd_src     <= is_atomic_cmd ? s_cmd_dst_addr : s_cmd_src_addr;
                    atomic      <= is_atomic_cmd;
                    atom_op     <= s_cmd_data[128:0];
                    cmd_dst     <= s_cmd_dst_addr;
                    cmd_len     <= s_cmd_len;
                    cmd_data    <= s_cmd_data;
                    done_data   <= 512'd0;
                    if (s_cmd_len == {LEN_WIDTH{1'b0}} || bad_mode) begin
                        // nothing to move (or no such mode): finish now, ready stays up
                        m_done_valid <= 1'b1;
                        m_done_error <= bad_mode;
                    end else begin
                        cmd_ready <= 1'b0;
                        m_lock    <= is_atomic_cmd;
                        state     <= ST_RUN;
                    end
                end
            end
            ST_SETUP: begin
                state <= ST_RUN;
            end
            ST_ATOMIC: begin
                atomic <= 1'b0;
                if (atom_write) begin
                    cmd_mode <= MODE_STORE;
                    cmd_data <= {448'd0, atom_new};
                    state    <= ST_SETUP;
                end else begin
                    m_done_valid <= 1'b1;
                    m_done_error <= 1'b0;
                    cmd_ready    <= 1'b1;
                    m_lock       <= 1'b0;
                    state        <= ST_IDLE;
                end
            end
            default: begin
                // wr_done covers the last beat and every B; rd_idle that every read burst drained
                if (wr_done && rd_idle && atomic && !(rd_error || wr_error)) begin
                    state <= ST_ATOMIC;     // m_done_data has the original value next cycle
                end else if (wr_done && rd_idle) begin
                    m_done_valid <= 1'b1;
                    m_done_error <= rd_error || wr_error;
                    cmd_ready    <= 1'b1;
                    m_lock       <= 1'b0;
                    state        <= ST_IDLE;
                end
            end
        endcase

        if (ld_valid) begin
            for (p = 0; p < NPOS; p = p + 1)
                if (ld_idx == p[LIW-1:0])
                    done_data[p*DATA_WIDTH +: DATA_WIDTH] <= ld_data;
        end
    end

    if (rst) begin
        state        <= ST_IDLE;
        cmd_ready    <= 1'b0;
        atomic       <= 1'b0;
        m_lock       <= 1'b0;
        m_done_valid <= 1'b0;
        m_done_error <= 1'b0;
        done_data    <= 512'd0;
    end else if (state == ST_IDLE && !cmd_ready) begin
        cmd_ready <= 1'b1;   // first cycle out of reset
    end
end

endmodule

`resetall
`endif
