// Destination side of the engine: takes the realigned beats and either writes them to host
// memory (COPY/STORE: AW bursts, W beats with strobes for the bytes of the transfer only, B
// responses counted), or hands them to the top as LOAD result beats, or (READ_STREAM) puts them
// out on the m_axis read stream, where the consumer's tready is the only flow control.
//
// The W channel is shared (dma_axi_mux passes W bursts in the order of their AWs), so an AW
// must not go out long before its data: a burst whose beats come from a host read (COPY,
// cfg_wait) is presented once beats are at hand, at most one burst ahead of the one being
// written; the data is then sure to follow (R is never held up, see dma_rd_engine). A STORE's
// block and a WRITE_STREAM's beats are at hand from the start.
// Sure to follow is not soon: the host answers reads in order, so a burst presented on its
// first beat holds W while its next read waits behind other movers' read-ahead (hundreds of
// beats each), and W idles though their data is at hand. So while another mover writes
// (w_shared), a COPY burst is presented only once the read buffer holds all its beats (and
// those of the burst before it still owed): W then never waits on R. Alone, the first beat is
// enough, which keeps a single copy's latency one read round trip. WAIT_WHOLE says the read
// buffer can hold a whole burst besides the one being written (else the old rule alone).
//
// WLAST needs no AW bookkeeping: bursts end where the address crosses a BOUND_LOG boundary (a
// 2^WR_BOUND_LOG-byte one, or 256 beats) or at the command's last beat, the same rule
// dma_axi_burst applies to AW.
//
// A destination the mover's modes never use is not built (AXI_DST, LOAD_DST, STREAM_DST): its
// valid is low and its outputs are zero.
`ifndef RDMA_DMA_WR_ENGINE_V
`define RDMA_DMA_WR_ENGINE_V
`default_nettype none

module dma_wr_engine #(
    parameter DATA_WIDTH = 256,    // AXI data width in bits: 64, 128, 256 or 512
    parameter ADDR_WIDTH = 32,     // AXI address width
    parameter AXI_ID_WIDTH = 4,    // AXI ID width (the engine uses ID 0)
    parameter LEN_WIDTH = 32,      // beat count width
    parameter HELD_WIDTH = 10,     // width of src_held
    parameter WR_BOUND_LOG = 12,   // write bursts end at 2^WR_BOUND_LOG-byte boundaries (<= 12: AXI's 4 KiB)
    parameter WAIT_WHOLE = 0,      // 1: with w_shared, a COPY burst waits for all its beats in the read buffer
    parameter AXI_DST = 1,         // 1: commands may write host memory (AW, W, B)
    parameter LOAD_DST = 1,        // 1: commands may deliver the LOAD result
    parameter STREAM_DST = 1       // 1: commands may feed the read stream
) (
    input  wire                     clk,
    input  wire                     rst,

    input  wire                     start,        // one pulse per command with bytes to move
    input  wire                     cfg_load,     // beats go to the LOAD result or the read stream, not to memory
    input  wire                     cfg_stream,   // with cfg_load: beats go to the read stream
    input  wire                     cfg_wait,     // the beats come from a host read: each AW waits for data
    input  wire [ADDR_WIDTH-1:0]    cfg_addr,     // destination byte address (offset 0 for LOAD)
    input  wire [LEN_WIDTH-1:0]     cfg_beats,    // destination beats, at least 1
    input  wire [$clog2(DATA_WIDTH/8)-1:0] cfg_last_off, // byte offset of the last byte in its beat

    input  wire                     src_beat,     // a source beat is at the realigner's input
    input  wire [HELD_WIDTH-1:0]    src_held,     // source beats in the read buffer
    input  wire                     src_all_in,   // every source beat of the command is in it (or past it)
    input  wire                     w_shared,     // another mover writes host memory now
    output wire                     w_busy,       // this one does: a command's beats go to host memory

    input  wire [DATA_WIDTH-1:0]    s_data,
    input  wire                     s_last,       // last destination beat of the command
    input  wire                     s_valid,
    output wire                     s_ready,

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

    // LOAD result beats: the top stores ld_data at beat ld_idx of its 512-bit result
    output wire                     ld_valid,
    output reg  [((DATA_WIDTH < 512) ? $clog2(512/DATA_WIDTH) : 1)-1:0] ld_idx,
    output wire [DATA_WIDTH-1:0]    ld_data,      // bytes outside the transfer are zero

    // READ_STREAM beats: the first byte in the lane of cfg_addr's offset, lanes outside tkeep zero
    output wire [DATA_WIDTH-1:0]    m_axis_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_tkeep,
    output wire                     m_axis_tvalid,
    input  wire                     m_axis_tready,
    output wire                     m_axis_tlast,

    output wire                     wr_error,     // a B response of this command was not OKAY (so far, this cycle's included)
    output wire                     done          // every beat taken and every B received (this cycle's included)
);

localparam B = DATA_WIDTH / 8;                // bytes per beat
localparam BEAT_LOG = $clog2(B);
localparam BOUND_LOG = (BEAT_LOG + 8 < WR_BOUND_LOG) ? BEAT_LOG + 8 : WR_BOUND_LOG;
localparam BB = BOUND_LOG - BEAT_LOG;         // log2 beats between burst boundaries
localparam NPOS = 512 / DATA_WIDTH;           // beats in a LOAD result
localparam LIW = (NPOS > 1) ? $clog2(NPOS) : 1;
localparam [2:0] SIZE = BEAT_LOG[2:0];            // AxSIZE: full-width beats

`include "keep_bits.vh"

reg                   load_q;
reg                   stream_q;
reg                   active;      // destination beats still expected
reg                   first;       // next beat is the command's first
reg [BB-1:0]          pos;         // beat position between burst boundaries
reg [B-1:0]           first_mask;  // strobes of the first beat: from the start offset up
reg [B-1:0]           last_mask;   // strobes of the last beat: up to the last byte
reg [LEN_WIDTH-1:0]   b_pending;   // AWs accepted whose B has not returned
reg                   b_error;     // an earlier B of this command was not OKAY
reg                   wait_data;   // AWs wait for beats at hand (cfg_wait)
reg [LEN_WIDTH-1:0]   w_open;      // AWs presented whose WLAST has not gone out
reg [9:0]             w_owed;      // beats of those bursts not yet written

// the destination of the running command: a constant when the modes leave only one
wire load = (LOAD_DST || STREAM_DST) && (load_q || !AXI_DST);
wire stream = STREAM_DST && (stream_q || !LOAD_DST);
wire aw_busy;
wire aw_load;
wire [8:0] aw_next;
wire w_end = m_axi_wvalid && m_axi_wready && m_axi_wlast;
wire aw_fire = m_axi_awvalid && m_axi_awready;
wire b_fire = AXI_DST && m_axi_bvalid && m_axi_bready;
wire beat_fire = s_valid && s_ready;

wire [B-1:0] strb = (first ? first_mask : {B{1'b1}}) & (s_last ? last_mask : {B{1'b1}});

// A burst's beats wait for its AW when AWs wait for data: a slave that takes W ahead of AW
// would otherwise take the last beats before the AW that needs them at hand is presented.
wire w_ok = !wait_data || w_open != {LEN_WIDTH{1'b0}};
assign s_ready = load ? (!stream || m_axis_tready) : m_axi_wready && w_ok;

assign m_axi_wdata = AXI_DST ? s_data : {DATA_WIDTH{1'b0}};
assign m_axi_wstrb = AXI_DST ? strb : {B{1'b0}};
assign m_axi_wlast = AXI_DST && (s_last || (pos == {BB{1'b1}}));
assign m_axi_wvalid = AXI_DST && s_valid && !load && w_ok;
assign m_axi_bready = AXI_DST;

assign m_axi_awid = {AXI_ID_WIDTH{1'b0}};
assign m_axi_awsize = SIZE;
assign m_axi_awburst = 2'b01;      // INCR
assign m_axi_awlock = 1'b0;
assign m_axi_awcache = 4'b0011;    // normal, non-cacheable, bufferable
assign m_axi_awprot = 3'b000;

assign ld_valid = LOAD_DST && s_valid && load && !stream;
assign w_busy = active && !load;

// (zero outside READ_STREAM, so the stream's nets stay still while a copy's beats go by)
assign m_axis_tdata = stream ? ld_data : {DATA_WIDTH{1'b0}};
assign m_axis_tkeep = stream ? strb : {B{1'b0}};
assign m_axis_tvalid = s_valid && stream;
assign m_axis_tlast = STREAM_DST && s_last;

reg [DATA_WIDTH-1:0] strb_bits;
always @* strb_bits = keep_bits(strb);
assign ld_data = s_data & strb_bits;

// a response with a foreign ID is as wrong as an error response
wire b_bad = b_fire && (m_axi_bresp != 2'b00 || m_axi_bid != {AXI_ID_WIDTH{1'b0}});
assign wr_error = b_error || b_bad;
// The command is done in the cycle its last beat or its last B is taken, so that the mover
// answers on the next edge.
wire beats_done = !active || (beat_fire && s_last);
wire bs_done = b_pending == {LEN_WIDTH{1'b0}} ||
               (b_pending == {{(LEN_WIDTH-1){1'b0}}, 1'b1} && b_fire && !aw_fire);
assign done = beats_done && !aw_busy && bs_done;

generate
    if (AXI_DST) begin : g_aw
        dma_axi_burst #(
            .ADDR_WIDTH(ADDR_WIDTH),
            .LEN_WIDTH(LEN_WIDTH),
            .BEAT_LOG(BEAT_LOG),
            .BOUND_LOG(BOUND_LOG)
        ) u_aw (
            .clk(clk),
            .rst(rst),
            .start(start && !cfg_load),
            .start_addr(cfg_addr[ADDR_WIDTH-1:BEAT_LOG]),
            .start_beats(cfg_beats),
            .allow(!(start ? cfg_wait : wait_data) || (at_hand && w_open < {{(LEN_WIDTH-2){1'b0}}, 2'd2} &&
                                                         (WAIT_WHOLE == 0 || !w_shared || whole))),
            .ax_addr(m_axi_awaddr),
            .ax_len(m_axi_awlen),
            .ax_valid(m_axi_awvalid),
            .ax_ready(m_axi_awready),
            .busy(aw_busy),
            .next_beats(aw_next),
            .load(aw_load)
        );
    end else begin : g_no_aw
        assign m_axi_awaddr = {ADDR_WIDTH{1'b0}};
        assign m_axi_awlen = 8'd0;
        assign m_axi_awvalid = 1'b0;
        assign aw_busy = 1'b0;
        assign aw_next = 9'd0;
        assign aw_load = 1'b0;
        wire unused_aw = &{1'b0, cfg_addr, cfg_beats, w_shared, whole, at_hand};
    end
endgenerate

// a beat at hand: realigned, or a source beat on its way into the realigner (a host read's
// beat in its cycle): the burst's AW goes out as its data reaches the realigner
wire at_hand = s_valid || src_beat;
// the next burst's beats and those still owed are in the read buffer (one source beat more:
// the realigner may need it to make them), or every beat of the command is
wire [11:0] want = {2'b00, w_owed} + {3'b000, aw_next} + 12'd1;
wire whole = src_all_in || {{(12-HELD_WIDTH){1'b0}}, src_held} >= want;

// Nothing below can change while no command runs here: a simulator then skips the block.
wire awake = start || active || aw_busy || (AXI_DST && m_axi_bvalid);

always @(posedge clk) begin
    if (awake) begin
        if (start) begin
            load_q     <= cfg_load;
            stream_q   <= cfg_stream;
            active     <= 1'b1;
            first      <= 1'b1;
            pos        <= cfg_addr[BOUND_LOG-1:BEAT_LOG];
            first_mask <= {B{1'b1}} << cfg_addr[BEAT_LOG-1:0];
            last_mask  <= {B{1'b1}} >> ~cfg_last_off;
            ld_idx     <= {LIW{1'b0}};
            b_error    <= 1'b0;
            wait_data  <= cfg_wait;
        end else if (beat_fire) begin
            first  <= 1'b0;
            pos    <= pos + 1'b1;
            ld_idx <= ld_idx + 1'b1;
            if (s_last)
                active <= 1'b0;
        end

        if (b_bad)
            b_error <= 1'b1;

        case ({aw_load, w_end})
            2'b10: w_open <= w_open + 1'b1;
            2'b01: w_open <= w_open - 1'b1;
            default: ;
        endcase
        w_owed <= w_owed + (aw_load ? {1'b0, aw_next} : 10'd0)
                         - {9'd0, m_axi_wvalid && m_axi_wready};

        case ({aw_fire, b_fire})
            2'b10: b_pending <= b_pending + 1'b1;
            2'b01: b_pending <= b_pending - 1'b1;
            default: ;
        endcase
    end

    if (rst) begin
        active    <= 1'b0;
        stream_q  <= 1'b0;
        b_pending <= {LEN_WIDTH{1'b0}};
        b_error   <= 1'b0;
        wait_data <= 1'b0;
        w_open    <= {LEN_WIDTH{1'b0}};
        w_owed    <= 10'd0;
    end
end

endmodule

`resetall
`endif
