// A passive tap on one link stream of a simulation harness: it collects each packet's beats in
// HDL and, on the packet's last beat, bumps `packets`, so the sniffer (tb/sniffer.py) wakes once
// per packet and reads the packet's beats instead of stepping every beat.
//
// After `packets` changes, until the next packet's first beat, `data[n]` holds the packet's beat
// n (bytes little-endian) and `keep[n]` its tkeep, `pkt_beats` their number, `pkt_cycle` the
// cycle of the first beat, `pkt_user` tuser of the last beat (the sender aborted it), `pkt_x`
// whether tkeep/tlast/tuser were ever not 0 or 1, `pkt_long` whether it had more than MAX_BEATS
// beats (the rest are not kept), `pkt_keep_ok` whether tkeep was all ones before the last beat
// and contiguous from byte 0 on it, and `pkt_last_keep` the last beat's tkeep. `beats` and
// `last_beat_cycle` count every beat the link carried. The beats are kept as an array of words,
// not one packet-wide vector, because simulators copy a whole vector on every part write.
`timescale 1ns / 1ps
`default_nettype none

module sim_link_tap #(
    parameter DATA_WIDTH = 256,                     // link data width in bits
    parameter MAX_BEATS = (4608 * 8) / DATA_WIDTH   // beats kept per packet: path MTU + headers
) (
    input  wire                    clk,
    input  wire [63:0]             cycle,     // the harness's free-running cycle counter
    input  wire [DATA_WIDTH-1:0]   tdata,
    input  wire [DATA_WIDTH/8-1:0] tkeep,
    input  wire                    tvalid,
    input  wire                    tready,
    input  wire                    tlast,
    input  wire                    tuser
);

localparam KEEP_WIDTH = DATA_WIDTH / 8;

reg [DATA_WIDTH-1:0] data [0:MAX_BEATS-1];
reg [KEEP_WIDTH-1:0] keep [0:MAX_BEATS-1];
reg [31:0] packets = 32'd0;
reg [15:0] pkt_beats = 16'd0;
reg [63:0] pkt_cycle = 64'd0;
reg        pkt_user = 1'b0;
reg        pkt_x = 1'b0;
reg        pkt_long = 1'b0;
reg        pkt_keep_ok = 1'b0;
reg [KEEP_WIDTH-1:0] pkt_last_keep = {KEEP_WIDTH{1'b0}};
reg [63:0] beats = 64'd0;
reg [63:0] last_beat_cycle = 64'd0;

reg [15:0] beat = 16'd0;       // beats of the packet in flight so far
reg        x_seen = 1'b0;
reg        keep_gap = 1'b0;  // a beat before the last was not whole
reg [63:0] first_cycle = 64'd0;

wire framing_x = ^{tkeep, tlast, tuser} === 1'bx;
wire keep_whole = &tkeep === 1'b1;
wire keep_contiguous = (tkeep & (tkeep + 1'b1)) === {KEEP_WIDTH{1'b0}};

always @(posedge clk) begin
    if (tvalid && tready) begin
        beats <= beats + 64'd1;
        last_beat_cycle <= cycle;
        if (beat < MAX_BEATS) begin
            data[beat] <= tdata;
            keep[beat] <= tkeep;
        end
        if (tlast === 1'b1) begin
            packets <= packets + 32'd1;
            pkt_beats <= beat + 16'd1;
            pkt_cycle <= beat == 16'd0 ? cycle : first_cycle;
            pkt_user <= tuser === 1'b1;
            pkt_x <= x_seen || framing_x;
            pkt_long <= beat >= MAX_BEATS;
            pkt_keep_ok <= !keep_gap && keep_contiguous;
            pkt_last_keep <= tkeep;
            beat <= 16'd0;
            x_seen <= 1'b0;
            keep_gap <= 1'b0;
        end else begin
            if (beat == 16'd0)
                first_cycle <= cycle;
            beat <= beat + 16'd1;
            x_seen <= x_seen || framing_x;
            keep_gap <= keep_gap || !keep_whole;
        end
    end
end

endmodule

`resetall
