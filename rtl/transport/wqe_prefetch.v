// The send queue's read-ahead: the requester asks for the WQEs of one QP from an index on (as
// many as its send window lets it issue, never past the ring's end), and they arrive as one
// READ_STREAM (one or two AXI bursts: the DMA engine splits at 4 KiB boundaries) into a local
// buffer, from which the requester takes them one by one with no host read each. The buffer
// holds one fetch, tagged with its QPN, first index and count. A WQE is usable as soon as its
// beats are in, while the rest of the fetch still arrives (the requester works on the first
// WQEs of a turn meanwhile), if no beat up to its last came with an error: the stream's
// tuser says so on every beat (sticky, the source beats arrive in address order). The WQEs
// after an error are marked failed when the fetch ends (and every WQE not yet usable when the
// fetch ends in an error no beat showed): the requester fetches such a WQE again alone, so
// that only a WQE whose own read fails completes in error. The buffer is banked so that it
// maps to distributed RAM with one read port per bank: a WQE is two 64-byte units, at the even
// and the odd bank of units (in either order), and each unit's beats are in banks of their own.
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
    output wire                     look_pending,  // it is in the fetch still arriving
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
    input  wire                     s_axis_tvalid,
    input  wire                     s_axis_tuser   // a source beat so far came with an error
);

`include "rdma_defs.vh"

localparam DMA_REQ_WIDTH = 3 + 2*ADDR_WIDTH + 32 + 512;
localparam K = DATA_WIDTH / 8;                     // bytes per beat
localparam BEATS = (128 << DEPTH_LOG) / K;         // the buffer: 2^DEPTH_LOG 128-byte WQEs
localparam BEAT_BITS = $clog2(BEATS);
localparam UNIT_BEATS = 64 / K;                    // beats of a 64-byte unit
localparam UB_BITS = UNIT_BEATS > 1 ? $clog2(UNIT_BEATS) : 1;
localparam UB_LOG = $clog2(UNIT_BEATS);            // log2 of the beats of a unit
localparam UNIT_BITS = DEPTH_LOG + 1;              // 2^(DEPTH_LOG+1) units in the buffer

reg                  held;       // the tag names what the buffer holds (or is receiving)
reg                  filling;    // a fetch is arriving
reg                  failed;     // it ended with a bad response
reg [QPN_BITS-1:0]   tag_qpn;
reg [15:0]           tag_idx;
reg [DEPTH_LOG:0]    tag_count;
reg                  tag_big;
reg [BEAT_BITS-1:0]  wr_beat;
reg [BEAT_BITS:0]    ok_beats;   // beats in, none of them after an error
reg                  bad;        // a beat came with an error
reg [31:0]           fetch_len;
reg [ADDR_WIDTH-1:0] fetch_src;

assign busy = filling;
assign m_dma_data = {512'd0, fetch_len, {ADDR_WIDTH{1'b0}}, fetch_src, DMA_READ_STREAM};

wire [15:0] ahead  = look_idx - tag_idx;
wire        in_fetch = held && look_qpn == tag_qpn && ahead < {{(15-DEPTH_LOG){1'b0}}, tag_count};
// the beats up to the looked-for WQE's last
wire [BEAT_BITS+1:0] look_wqes = {{(BEAT_BITS-DEPTH_LOG+1){1'b0}}, ahead[DEPTH_LOG:0]} + 1'b1;
wire [BEAT_BITS+1:0] look_end  = (look_wqes << UB_LOG) << tag_big;
assign look_hit    = in_fetch && {1'b0, ok_beats} >= look_end;
assign look_failed = in_fetch && !filling && failed && !look_hit;
assign look_pending = in_fetch && filling && !look_hit;
assign look_alone  = tag_count == {{DEPTH_LOG{1'b0}}, 1'b1};

// the looked-for WQE's first unit, and the one after it (wraps: past the last WQE is not
// looked at); an arriving beat's unit and its beat in the unit
wire [UNIT_BITS-1:0] look_unit = tag_big ? {ahead[DEPTH_LOG-1:0], 1'b0} : {1'b0, ahead[DEPTH_LOG-1:0]};
wire [UNIT_BITS-2:0] next_row  = look_unit[UNIT_BITS-1:1] + {{(UNIT_BITS-2){1'b0}}, look_unit[0]};   // (unit + 1) / 2
wire [UNIT_BITS-1:0] wr_unit   = wr_beat[BEAT_BITS-1 -: UNIT_BITS];
wire [UB_BITS-1:0]   wr_in     = UNIT_BEATS > 1 ? wr_beat[UB_BITS-1:0] : {UB_BITS{1'b0}};
wire [1023:0] unit_data;               // the even bank's unit, the odd bank's above it
genvar par, ub;
generate
    for (par = 0; par < 2; par = par + 1) begin : parity
        // of the WQE's two units, the one in this bank
        wire [UNIT_BITS-2:0] row = look_unit[0] == par ? look_unit[UNIT_BITS-1:1] : next_row;
        for (ub = 0; ub < UNIT_BEATS; ub = ub + 1) begin : beat
            reg [DATA_WIDTH-1:0] mem [0:(1 << (UNIT_BITS - 1)) - 1];
            always @(posedge clk)
                if (filling && s_axis_tvalid && wr_unit[0] == par && wr_in == ub)
                    mem[wr_unit[UNIT_BITS-1:1]] <= s_axis_tdata;
            assign unit_data[par*512 + ub*DATA_WIDTH +: DATA_WIDTH] = mem[row];
        end
    end
endgenerate
assign look_wqe = look_unit[0] ? {unit_data[511:0], unit_data[1023:512]} : unit_data;

always @(posedge clk) begin
    if (m_dma_valid && m_dma_ready)
        m_dma_valid <= 1'b0;
    if (filling && s_axis_tvalid) begin
        wr_beat <= wr_beat + 1'b1;
        if (s_axis_tuser)
            bad <= 1'b1;
        else if (!bad)
            ok_beats <= ok_beats + 1'b1;
    end
    if (filling && s_dma_done) begin
        filling <= 1'b0;
        failed  <= s_dma_error;
        // an error no beat showed: none of the WQEs not taken yet is trusted
        if (s_dma_error && !bad && !(s_axis_tvalid && s_axis_tuser))
            ok_beats <= {(BEAT_BITS+1){1'b0}};
    end
    if (drop)
        held <= 1'b0;
    // a fetch in the cycle of a drop: the buffer holds the new one
    if (fetch_valid && !filling) begin
        held      <= 1'b1;
        filling   <= 1'b1;
        failed    <= 1'b0;
        tag_qpn   <= fetch_qpn;
        tag_idx   <= fetch_idx;
        tag_count <= fetch_count;
        tag_big   <= fetch_big;
        wr_beat   <= {BEAT_BITS{1'b0}};
        ok_beats  <= {(BEAT_BITS+1){1'b0}};
        bad       <= 1'b0;
        fetch_src <= fetch_addr;
        fetch_len <= {{(25-DEPTH_LOG){1'b0}}, fetch_count, 6'd0} << fetch_big;
        m_dma_valid <= 1'b1;
    end
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
