// Splits one beat-aligned transfer into AXI INCR bursts on an AR or AW channel. A burst ends
// at every BOUND_LOG-aligned address: that boundary is 4 KiB or 256 beats, whichever is
// smaller, so no burst crosses a 4 KiB page or exceeds 256 beats. The W side of the engine
// uses the same rule to place WLAST, which is why it never needs to see the AW stream.
`ifndef RDMA_DMA_AXI_BURST_V
`define RDMA_DMA_AXI_BURST_V
`default_nettype none

module dma_axi_burst #(
    parameter ADDR_WIDTH = 32,     // byte address width (at least BEAT_LOG + 9)
    parameter LEN_WIDTH = 32,      // beat count width (at least 10)
    parameter BEAT_LOG = 5,        // log2 of bytes per beat
    parameter BOUND_LOG = 12       // log2 of the burst boundary in bytes (BEAT_LOG < BOUND_LOG <= BEAT_LOG + 8)
) (
    input  wire                   clk,
    input  wire                   rst,

    input  wire                   start,        // load a new transfer; only while !busy
    input  wire [ADDR_WIDTH-1:BEAT_LOG] start_addr, // beat address (byte address without its offset bits)
    input  wire [LEN_WIDTH-1:0]   start_beats,  // number of beats, 0 issues nothing
    input  wire                   allow,        // another burst may be presented now

    output reg  [ADDR_WIDTH-1:0]  ax_addr,
    output reg  [7:0]             ax_len,
    output reg                    ax_valid,
    input  wire                   ax_ready,

    output wire                   busy,         // bursts left to issue or one still presented
    output wire [8:0]             next_beats,   // beats of the burst presented next (valid while bursts are left)
    output wire                   load          // a burst is being presented this cycle (next_beats of them)
);

localparam ABW = ADDR_WIDTH - BEAT_LOG;           // beat address width
localparam [8:0] BLK_BEATS = 9'd1 << (BOUND_LOG - BEAT_LOG);

reg [ABW-1:0]       addr;   // next burst's beat address
reg [LEN_WIDTH-1:0] left;   // beats not yet put into a burst

// The transfer as it stands: a new one presents its first burst in the cycle after start.
wire [ABW-1:0]       at   = start ? start_addr : addr;
wire [LEN_WIDTH-1:0] rest = start ? start_beats : left;
// Beats from there up to the next boundary, 1 .. BLK_BEATS.
wire [8:0] to_bound = BLK_BEATS - (at[8:0] & (BLK_BEATS - 9'd1));
wire       rest_small = rest < {{(LEN_WIDTH-9){1'b0}}, to_bound};
wire [8:0] burst = rest_small ? rest[8:0] : to_bound;
wire [7:0] burst_m1 = burst[7:0] - 8'd1;   // 256 beats wrap to AxLEN 255

assign busy = ax_valid || (left != {LEN_WIDTH{1'b0}});
assign next_beats = burst;
assign load = (!ax_valid || ax_ready) && allow && rest != {LEN_WIDTH{1'b0}};

always @(posedge clk) begin
    if (busy || start) begin    // (at rest a simulator skips the rest)
        if (ax_valid && ax_ready)
            ax_valid <= 1'b0;

        if (load) begin
            ax_valid <= 1'b1;
            ax_addr  <= {at, {BEAT_LOG{1'b0}}};
            ax_len   <= burst_m1;
            addr     <= at + {{(ABW-9){1'b0}}, burst};
            left     <= rest - {{(LEN_WIDTH-9){1'b0}}, burst};
        end else if (start) begin
            addr <= start_addr;
            left <= start_beats;
        end
    end

    if (rst) begin
        ax_valid <= 1'b0;
        left     <= {LEN_WIDTH{1'b0}};
    end
end

endmodule

`resetall
`endif
