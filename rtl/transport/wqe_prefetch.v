// The send queue's read-ahead: the requester asks for the WQEs of one QP from an index on (as
// many as its send window lets it issue, never past the ring's end), and they arrive as one
// READ_STREAM (one or two AXI bursts: the DMA engine splits at 4 KiB boundaries) into a local
// buffer, from which the requester takes them one by one with no host read each. The buffer
// holds one fetch, tagged with its QPN, first index and count. A fetch is usable once it has
// arrived whole: a bad response anywhere in it is only known at its end, and then marks it
// failed as a whole (the requester fetches the WQE again alone, so that only a WQE whose own
// read fails completes in error).
`ifndef RDMA_WQE_PREFETCH_V
`define RDMA_WQE_PREFETCH_V
`default_nettype none

module wqe_prefetch #(
    parameter DATA_WIDTH = 256,    // DMA stream width in bits: 64, 128, 256 or 512
    parameter ADDR_WIDTH = 32,     // host address width
    parameter QPN_BITS = 6,        // QPN width
    parameter DEPTH_LOG = 4        // a fetch brings up to 2^DEPTH_LOG WQEs
) (
    input  wire                     clk,
    input  wire                     rst,

    // a fetch: fetch_count WQEs of QP fetch_qpn from index fetch_idx, the first at fetch_addr
    input  wire                     fetch_valid,   // a pulse, while !busy
    input  wire [QPN_BITS-1:0]      fetch_qpn,
    input  wire [15:0]              fetch_idx,
    input  wire [DEPTH_LOG:0]       fetch_count,   // 1 to 2^DEPTH_LOG
    input  wire                     fetch_big,     // 128-byte WQEs (else 64-byte)
    input  wire [ADDR_WIDTH-1:0]    fetch_addr,
    input  wire                     drop,          // forget what the buffer holds
    output wire                     busy,          // a fetch is arriving

    // the WQE the requester looks for
    input  wire [QPN_BITS-1:0]      look_qpn,
    input  wire [15:0]              look_idx,
    output wire                     look_hit,      // it is in the buffer, read without error
    output wire                     look_failed,   // it is in a fetch that failed
    output wire                     look_alone,    // ... of that WQE alone
    output wire [1023:0]            look_wqe,      // its 128 bytes, byte 0 in bits [7:0] (64-byte
                                                   // WQEs: the upper half is not its)

    // DMA client: the fetch's READ_STREAM {data[511:0], len[31:0], dst, src, mode[2:0]}
    output reg                      m_dma_valid,
    input  wire                     m_dma_ready,
    output wire [DMA_REQ_WIDTH-1:0] m_dma_data,
    input  wire                     s_dma_done,
    input  wire                     s_dma_error,
    input  wire [DATA_WIDTH-1:0]    s_axis_tdata,  // always taken: the buffer has room for a fetch
    input  wire                     s_axis_tvalid
);

`include "rdma_defs.vh"

localparam DMA_REQ_WIDTH = 3 + 2*ADDR_WIDTH + 32 + 512;
localparam K = DATA_WIDTH / 8;                     // bytes per beat
localparam KLOG = $clog2(K);
localparam BEATS = (128 << DEPTH_LOG) / K;         // the buffer: 2^DEPTH_LOG 128-byte WQEs
localparam BEAT_BITS = $clog2(BEATS);
localparam WQE_BEATS = 128 / K;

reg [DATA_WIDTH-1:0] buffer [0:BEATS-1];
reg                  held;       // the tag names what the buffer holds (or is receiving)
reg                  filling;    // a fetch is arriving
reg                  failed;     // it ended with a bad response
reg [QPN_BITS-1:0]   tag_qpn;
reg [15:0]           tag_idx;
reg [DEPTH_LOG:0]    tag_count;
reg                  tag_big;
reg [BEAT_BITS-1:0]  wr_beat;
reg [31:0]           fetch_len;
reg [ADDR_WIDTH-1:0] fetch_src;

assign busy = filling;
assign m_dma_data = {512'd0, fetch_len, {ADDR_WIDTH{1'b0}}, fetch_src, DMA_READ_STREAM};

wire [15:0] ahead  = look_idx - tag_idx;
wire        in_fetch = held && !filling && look_qpn == tag_qpn && ahead < {{(15-DEPTH_LOG){1'b0}}, tag_count};
assign look_hit    = in_fetch && !failed;
assign look_failed = in_fetch && failed;
assign look_alone  = tag_count == {{DEPTH_LOG{1'b0}}, 1'b1};

// the looked-for WQE's first beat: its offset in the fetch, in beats
wire [DEPTH_LOG+6:0] look_byte = {ahead[DEPTH_LOG-1:0], 7'd0} >> (tag_big ? 0 : 1);
wire [BEAT_BITS-1:0] look_beat = look_byte[DEPTH_LOG+6:KLOG];
wire unused = ^look_byte[KLOG-1:0];   // WQEs start on beat boundaries
genvar j;
generate
    for (j = 0; j < WQE_BEATS; j = j + 1) begin : wqe_beat
        wire [BEAT_BITS-1:0] at = look_beat + j;   // wraps: past the last WQE is not looked at
        assign look_wqe[j*DATA_WIDTH +: DATA_WIDTH] = buffer[at];
    end
endgenerate

always @(posedge clk) begin
    if (m_dma_valid && m_dma_ready)
        m_dma_valid <= 1'b0;
    if (filling && s_axis_tvalid) begin
        buffer[wr_beat] <= s_axis_tdata;
        wr_beat <= wr_beat + 1'b1;
    end
    if (filling && s_dma_done) begin
        filling <= 1'b0;
        failed  <= s_dma_error;
    end
    if (fetch_valid && !filling) begin
        held      <= 1'b1;
        filling   <= 1'b1;
        failed    <= 1'b0;
        tag_qpn   <= fetch_qpn;
        tag_idx   <= fetch_idx;
        tag_count <= fetch_count;
        tag_big   <= fetch_big;
        wr_beat   <= {BEAT_BITS{1'b0}};
        fetch_src <= fetch_addr;
        fetch_len <= {{(25-DEPTH_LOG){1'b0}}, fetch_count, 6'd0} << fetch_big;
        m_dma_valid <= 1'b1;
    end
    if (drop)
        held <= 1'b0;
    if (rst) begin
        held        <= 1'b0;
        filling     <= 1'b0;
        failed      <= 1'b0;
        m_dma_valid <= 1'b0;
    end
end

endmodule

`resetall
`endif
