// Byte realigner: turns source-aligned beats into destination-aligned beats, one in and one out
// per cycle. The one shifter of the engine, shared by COPY, STORE and LOAD.
//
// Output beat k is bytes [r, r+B) of {this input beat, previous input beat}, with
// r = ((src_off - dst_off - 1) mod B) + 1 in 1..B. When src_off > dst_off the first input
// beat only primes the previous-beat register (cfg_skip); when the destination spans one beat
// more than that leaves, a final beat is made from the previous beat alone (cfg_flush).
// Bytes outside the transfer are don't-care here (the write side masks them); they come out as
// zero or as neighbouring source bytes, never X.
`ifndef RDMA_DMA_REALIGN_V
`define RDMA_DMA_REALIGN_V
`default_nettype none

module dma_realign #(
    parameter DATA_WIDTH = 256     // beat width in bits, 64 .. 512
) (
    input  wire                   clk,
    input  wire                   rst,

    // per-command set-up, sampled on start (before the first input beat)
    input  wire                   start,
    input  wire [$clog2(DATA_WIDTH/8)-1:0] cfg_shift,   // r - 1 = (src_off - dst_off - 1) mod B
    input  wire                   cfg_skip,    // first input beat makes no output
    input  wire                   cfg_flush,   // one output beat after the last input beat

    input  wire [DATA_WIDTH-1:0]  s_data,
    input  wire                   s_last,      // last input beat of the command
    input  wire                   s_valid,
    output wire                   s_ready,

    output reg  [DATA_WIDTH-1:0]  m_data,
    output reg                    m_last,      // last output beat of the command
    output reg                    m_valid,
    input  wire                   m_ready
);

localparam B = DATA_WIDTH / 8;     // bytes per beat
localparam BL = $clog2(B);         // byte offset width
localparam CW = 2 * DATA_WIDTH - 8;  // {input beat, previous beat less its byte 0}

reg [BL-1:0]          shift;
reg                   skip;
reg                   flush;
reg                   first;     // next input beat is the command's first
reg                   flushing;  // the extra output beat is owed
reg [DATA_WIDTH-9:0]  prev_hi;   // previous input beat, bytes 1 .. B-1 (byte 0 is never used)

wire out_free = !m_valid || m_ready;
wire take_skip = first && skip;   // a priming beat needs no room at the output
assign s_ready = !flushing && (out_free || take_skip);

wire in_fire = s_valid && s_ready;

// The shifter, shift amount r = shift + 1 bytes: byte 0 of the previous beat is left out of
// the concatenation, which accounts for the "+ 1". Zeros instead of a stale or never-written
// register keep the output free of X.
wire [CW-1:0] cat = {flushing ? {DATA_WIDTH{1'b0}} : s_data,
                     first ? {(DATA_WIDTH-8){1'b0}} : prev_hi};
/* verilator lint_off UNUSEDSIGNAL */
wire [CW-1:0] cat_shifted = cat >> {shift, 3'b000};     // the output is its low word
/* verilator lint_on UNUSEDSIGNAL */
wire [DATA_WIDTH-1:0] shifted = cat_shifted[DATA_WIDTH-1:0];

// Nothing below can change without a beat in or out or a new command: a simulator then
// skips the block.
wire awake = start || s_valid || m_valid || flushing;

always @(posedge clk) begin
    if (awake) begin
        if (m_valid && m_ready)
            m_valid <= 1'b0;

        if (start) begin
            shift <= cfg_shift;
            skip  <= cfg_skip;
            flush <= cfg_flush;
            first <= 1'b1;
        end

        if (in_fire) begin
            prev_hi <= s_data[DATA_WIDTH-1:8];
            first   <= s_last && !flush;
            if (s_last && flush)
                flushing <= 1'b1;
            if (!take_skip) begin
                m_data  <= shifted;
                m_last  <= s_last && !flush;
                m_valid <= 1'b1;
            end
        end else if (flushing && out_free) begin
            m_data   <= shifted;
            m_last   <= 1'b1;
            m_valid  <= 1'b1;
            flushing <= 1'b0;
            first    <= 1'b1;
        end
    end

    if (rst) begin
        m_valid  <= 1'b0;
        flushing <= 1'b0;
        first    <= 1'b1;
    end
end

endmodule

`resetall
`endif
