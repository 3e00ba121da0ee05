// Source side of the engine: issues the AR bursts of a COPY, LOAD or READ_STREAM and turns the
// R beats into a beat stream, or serves the command's data block (STORE) or the beats of the
// s_axis write stream (WRITE_STREAM) as the same kind of beat stream, so that everything after
// this point is common to all modes.
//
// WRITE_STREAM takes exactly cfg_beats beats. The stream must end (tlast) on the last of them,
// the first beat's tkeep must be the lanes from cfg_first_off up, the last beat's the lanes up
// to cfg_last_off (both on a single beat), and the beats between full; anything else
// sets rd_error but still finishes: after an early tlast the missing beats are made up as zeros
// (the write side strobes only [dst, dst+len) anyway), and when tlast is late the rest of the
// stream up to its tlast is taken and dropped, so the producer is never left hanging either.
// tkeep only decides the error: the data lanes of every beat are passed on as they are.
//
// Every beat goes through a read buffer of 2^RD_BUF_LOG beats, and an AR goes out only when the
// buffer has room for all the beats already asked for plus its own: R is never held up by this
// engine, whatever its consumer does (a port's stalled link, a write waiting for the W channel).
// Several engines share one R channel (dma_axi_mux), so that is what keeps one engine's consumer
// from stopping another's reads. The buffer is also what hides the host's read latency: up to
// 2^RD_BUF_LOG beats are in flight, in bursts no longer than the buffer.
//
// A source the mover's modes never use is not built (AXI_SRC, STORE_SRC, STREAM_SRC): its
// ready is low and its outputs are zero.
`ifndef RDMA_DMA_RD_ENGINE_V
`define RDMA_DMA_RD_ENGINE_V
`default_nettype none

module dma_rd_engine #(
    parameter DATA_WIDTH = 256,    // AXI data width in bits: 64, 128, 256 or 512
    parameter ADDR_WIDTH = 32,     // AXI address width
    parameter AXI_ID_WIDTH = 4,    // AXI ID width (the engine uses ID 0)
    parameter LEN_WIDTH = 32,      // beat count width
    parameter MAX_RD_BURSTS = 8,   // read bursts in flight at most (ARs accepted, RLAST not yet seen)
    parameter RD_BUF_LOG = 4,      // read buffer of 2^RD_BUF_LOG beats (at least 64 bytes of them)
    parameter AXI_SRC = 1,         // 1: commands may read host memory (AR, R)
    parameter STORE_SRC = 1,       // 1: commands may take store_data
    parameter STREAM_SRC = 1       // 1: commands may take the s_axis write stream
) (
    input  wire                     clk,
    input  wire                     rst,

    input  wire                     start,       // one pulse per command with bytes to move
    input  wire                     cfg_store,   // source is store_data, not host memory
    input  wire                     cfg_stream,  // source is the s_axis write stream, not host memory
    input  wire [$clog2(DATA_WIDTH/8)-1:0] cfg_first_off, // stream: lane of the first byte in its beat
    input  wire [$clog2(DATA_WIDTH/8)-1:0] cfg_last_off, // stream: lane of the last byte in its beat
    input  wire [ADDR_WIDTH-1:$clog2(DATA_WIDTH/8)] cfg_addr, // source beat address (COPY/LOAD)
    input  wire [LEN_WIDTH-1:0]     cfg_beats,   // source beats, at least 1
    input  wire [511:0]             store_data,  // STORE source, held by the top for the command

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
    output wire                     m_axi_rready,

    // WRITE_STREAM source: the first byte in lane cfg_first_off of the first beat
    input  wire [DATA_WIDTH-1:0]    s_axis_tdata,
    input  wire [DATA_WIDTH/8-1:0]  s_axis_tkeep,
    input  wire                     s_axis_tvalid,
    output wire                     s_axis_tready,
    input  wire                     s_axis_tlast,

    output wire [DATA_WIDTH-1:0]    m_data,
    output wire                     m_last,      // last source beat of the command
    output wire                     m_valid,
    input  wire                     m_ready,

    output wire [RD_BUF_LOG:0]      held,        // beats in the read buffer
    output wire                     all_in,      // every source beat of the command has entered the buffer
    output reg                      rd_error,    // an R beat was not OKAY, or the write stream did not match the length
    output wire                     idle         // no AR left to issue, no read burst in flight, no stream beat to drop
);

localparam BEAT_LOG = $clog2(DATA_WIDTH / 8);
localparam CAP_LOG = (RD_BUF_LOG < 8) ? RD_BUF_LOG : 8;   // log2 of the longest burst in beats
localparam BOUND_LOG = (BEAT_LOG + CAP_LOG < 12) ? BEAT_LOG + CAP_LOG : 12;
localparam CW = (RD_BUF_LOG + 2 > 10) ? RD_BUF_LOG + 2 : 10;   // width of the beat credits
localparam [CW-1:0] BUF_BEATS = 1 << RD_BUF_LOG;
localparam NSB = 512 / DATA_WIDTH;            // beats in the STORE data block
localparam OW = $clog2(MAX_RD_BURSTS) + 1;    // outstanding-burst counter width
localparam [OW-1:0] OUT_LIMIT = MAX_RD_BURSTS - 1;
localparam [2:0] SIZE = BEAT_LOG[2:0];            // AxSIZE: full-width beats

reg                  store_q;
reg                  stream_q;
reg                  ended;      // stream: tlast came early, the remaining beats are zeros
reg                  drain;      // stream: all beats taken but no tlast yet, dropping until it
reg                  first;      // stream: the next beat is the first
reg [DATA_WIDTH/8-1:0] first_keep; // stream: the first beat's tkeep: lanes from the first byte up
reg [DATA_WIDTH/8-1:0] last_keep; // stream: the last beat's tkeep: lanes up to the last byte
reg [LEN_WIDTH-1:0]  left;       // source beats still to enter the buffer
reg [OW-1:0]         out_bursts; // accepted ARs whose RLAST has not arrived
reg [CW-1:0]         coming;     // beats of the ARs presented whose R beats have not arrived

// the source of the running command: a constant when the modes leave only one
wire store = STORE_SRC && (store_q || !(AXI_SRC || STREAM_SRC));
wire stream = STREAM_SRC && (stream_q || !(AXI_SRC || STORE_SRC));
wire r_valid = AXI_SRC && m_axi_rvalid;
wire run = left != {LEN_WIDTH{1'b0}};
wire last = left == {{(LEN_WIDTH-1){1'b0}}, 1'b1};

wire buf_ready;
wire ar_busy;
wire ar_load;
wire [8:0] ar_next;
wire [RD_BUF_LOG:0] buf_count;
// room in the buffer for every beat asked for and the next burst's
wire [CW-1:0] asked = coming + {{(CW-RD_BUF_LOG-1){1'b0}}, buf_count} + {{(CW-9){1'b0}}, ar_next};
wire room = asked <= BUF_BEATS;
wire [DATA_WIDTH-1:0] store_beat;
wire from_axis = stream && !ended;   // the next beat comes from the write stream
wire src_valid = run && (store || (stream ? (ended || s_axis_tvalid) : r_valid));
wire src_fire = src_valid && buf_ready;
wire ar_fire = m_axi_arvalid && m_axi_arready;
wire r_fire = r_valid && m_axi_rready;
wire axis_fire = src_fire && from_axis;
wire [DATA_WIDTH/8-1:0] want_keep = (first ? first_keep : {(DATA_WIDTH/8){1'b1}})
                                  & (last ? last_keep : {(DATA_WIDTH/8){1'b1}});

assign m_axi_rready = AXI_SRC && run && !store && !stream && buf_ready;
assign s_axis_tready = STREAM_SRC && (drain || (run && from_axis && buf_ready));
assign idle = !run && !ar_busy && out_bursts == {OW{1'b0}} && !drain;
assign held = buf_count;
assign all_in = !run;

// the beat entering the buffer: store block, stream beat (zeros once ended) or R data
reg [DATA_WIDTH-1:0] src_data;
always @* begin
    if (store)
        src_data = store_beat;
    else if (stream)
        src_data = ended ? {DATA_WIDTH{1'b0}} : s_axis_tdata;
    else
        src_data = AXI_SRC ? m_axi_rdata : {DATA_WIDTH{1'b0}};
end

assign m_axi_arid = {AXI_ID_WIDTH{1'b0}};
assign m_axi_arsize = SIZE;
assign m_axi_arburst = 2'b01;      // INCR
assign m_axi_arlock = 1'b0;
assign m_axi_arcache = 4'b0011;    // normal, non-cacheable, bufferable
assign m_axi_arprot = 3'b000;

generate
    if (AXI_SRC) begin : g_ar
        dma_axi_burst #(
            .ADDR_WIDTH(ADDR_WIDTH),
            .LEN_WIDTH(LEN_WIDTH),
            .BEAT_LOG(BEAT_LOG),
            .BOUND_LOG(BOUND_LOG)
        ) u_ar (
            .clk(clk),
            .rst(rst),
            .start(start && !cfg_store && !cfg_stream),
            .start_addr(cfg_addr),
            .start_beats(cfg_beats),
            .allow(out_bursts < OUT_LIMIT && room),
            .ax_addr(m_axi_araddr),
            .ax_len(m_axi_arlen),
            .ax_valid(m_axi_arvalid),
            .ax_ready(m_axi_arready),
            .busy(ar_busy),
            .next_beats(ar_next),
            .load(ar_load)
        );
    end else begin : g_no_ar
        assign m_axi_araddr = {ADDR_WIDTH{1'b0}};
        assign m_axi_arlen = 8'd0;
        assign m_axi_arvalid = 1'b0;
        assign ar_busy = 1'b0;
        assign ar_next = 9'd0;
        assign ar_load = 1'b0;
        wire unused_ar = &{1'b0, cfg_addr, room};
    end

    if (NSB == 1) begin : g_store_one
        assign store_beat = store_data;
    end else begin : g_store_many
        reg [$clog2(NSB)-1:0] st_idx;
        always @(posedge clk) begin
            if (start)
                st_idx <= {$clog2(NSB){1'b0}};
            else if (src_fire)
                st_idx <= st_idx + 1'b1;
        end
        assign store_beat = store_data[st_idx*DATA_WIDTH +: DATA_WIDTH];
    end
endgenerate

// The buffer's ready comes from flops, so the slave never sees WREADY reflected in RREADY.
dma_fifo #(
    .WIDTH(DATA_WIDTH + 1),
    .DEPTH_LOG(RD_BUF_LOG)
) u_buf (
    .clk(clk),
    .rst(rst),
    .s_data({last, src_data}),
    .s_valid(src_valid),
    .s_ready(buf_ready),
    .m_data({m_last, m_data}),
    .m_valid(m_valid),
    .m_ready(m_ready),
    .count(buf_count)
);

// Nothing below can change while no command runs here: a simulator then skips the block.
wire awake = start || run || drain || ar_busy;

always @(posedge clk) begin
    if (awake) begin
        if (start) begin
            store_q    <= cfg_store;
            stream_q   <= cfg_stream;
            ended      <= 1'b0;
            first      <= 1'b1;
            first_keep <= {(DATA_WIDTH/8){1'b1}} << cfg_first_off;
            last_keep  <= {(DATA_WIDTH/8){1'b1}} >> ~cfg_last_off;
            left       <= cfg_beats;
            rd_error   <= 1'b0;
        end else if (src_fire) begin
            left  <= left - 1'b1;
            first <= 1'b0;
        end

        if (STREAM_SRC && axis_fire) begin
            if (s_axis_tkeep != want_keep || s_axis_tlast != last)
                rd_error <= 1'b1;
            if (s_axis_tlast && !last)
                ended <= 1'b1;
            if (last && !s_axis_tlast)
                drain <= 1'b1;
        end else if (STREAM_SRC && drain && s_axis_tvalid && s_axis_tlast) begin
            drain <= 1'b0;
        end

        // a beat with a foreign ID is as wrong as an error response
        if (r_fire && (m_axi_rresp != 2'b00 || m_axi_rid != {AXI_ID_WIDTH{1'b0}}))
            rd_error <= 1'b1;

        coming <= coming + (ar_load ? {{(CW-9){1'b0}}, ar_next} : {CW{1'b0}})
                         - {{(CW-1){1'b0}}, r_fire};

        case ({ar_fire, r_fire && m_axi_rlast})
            2'b10: out_bursts <= out_bursts + 1'b1;
            2'b01: out_bursts <= out_bursts - 1'b1;
            default: ;
        endcase
    end

    if (rst) begin
        left       <= {LEN_WIDTH{1'b0}};
        drain      <= 1'b0;
        stream_q   <= 1'b0;
        ended      <= 1'b0;
        out_bursts <= {OW{1'b0}};
        coming     <= {CW{1'b0}};
        rd_error   <= 1'b0;
    end
end

endmodule

`resetall
`endif
