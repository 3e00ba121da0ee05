// One port's PMA counters (PortCounters and PortCountersExtended): six counters, each kept
// twice, at its PortCounters width and as a 64-bit extended copy; and the three RoCE congestion
// counters an Ethernet port has (named as mlx5 names them). All of them saturate at all-ones
// instead of wrapping.
//
// Counter index map (32-bit words; byte offset = 4 * index):
//
//   index  counter                      width  adds
//   0      PortXmitData                 32     xmit_pktlen per xmit_pkt (4-byte words)
//   1      PortRcvData                  32     rcv_pktlen per rcv_pkt (4-byte words)
//   2      PortXmitPkts                 32     1 per xmit_pkt
//   3      PortRcvPkts                  32     1 per rcv_pkt
//   4      PortRcvErrors                16     1 per rcv_error (bits 31:16 read 0)
//   5      PortXmitDiscards             16     1 per xmit_discard (bits 31:16 read 0)
//   6, 7   reserved
//   8, 9   PortXmitData extended        64     lo, hi
//   10, 11 PortRcvData extended         64     lo, hi
//   12, 13 PortXmitPkts extended        64     lo, hi
//   14, 15 PortRcvPkts extended         64     lo, hi
//   16, 17 PortRcvErrors extended       64     lo, hi
//   18, 19 PortXmitDiscards extended    64     lo, hi
//   20     np_ecn_marked_roce_packets   32     1 per rcv_ce: a good packet with IP ECN CE
//   21     np_cnp_sent                  32     1 per cnp_sent
//   22     rp_cnp_handled               32     1 per cnp_handled: a CNP for one of its QPs
//   23-31  reserved
//
// Reserved words read 0 and ignore writes. rd_data follows rd_index combinationally. A write
// loads one word (a 16-bit counter keeps wr_data[15:0]; a 64-bit counter's other half is kept),
// so tests and software can preset a counter, e.g. near all-ones. Any number of events may come
// in one cycle; each counter moves by at most one of them. Priority per counter: clear (all
// counters) over a write to the counter (that cycle's event is dropped for it) over its event.
// A 64-bit counter read as lo then hi is not a snapshot: it may move between the two reads.
`ifndef RDMA_PORT_COUNTERS_V
`define RDMA_PORT_COUNTERS_V
`default_nettype none

module port_counters #(
    parameter PKTLEN_WIDTH = 11    // LRH PktLen width: packet length in 4-byte words
) (
    input  wire                     clk,
    input  wire                     rst,

    input  wire                     xmit_pkt,       // a packet went out on the link
    input  wire [PKTLEN_WIDTH-1:0]  xmit_pktlen,    // its PktLen
    input  wire                     rcv_pkt,        // a packet came in
    input  wire [PKTLEN_WIDTH-1:0]  rcv_pktlen,     // its PktLen
    input  wire                     rcv_error,      // a received packet was dropped as bad
    input  wire                     xmit_discard,   // an outbound packet was discarded
    input  wire                     rcv_ce,         // a received packet was marked CE
    input  wire                     cnp_sent,       // a CNP was queued to go out
    input  wire                     cnp_handled,    // a CNP came in for one of the port's QPs

    input  wire                     clear,          // zero every counter

    input  wire [4:0]               rd_index,
    output wire [31:0]              rd_data,

    input  wire                     wr_en,
    input  wire [4:0]               wr_index,
    input  wire [31:0]              wr_data
);

localparam NUM_COUNTERS = 6;
localparam EXT_BASE = 8;           // index of the first extended word
localparam NARROW_FROM = 4;        // counters from this one on are 16 bits wide
localparam NUM_ROCE = 3;           // RoCE congestion counters, 32 bits, no extended copy
localparam ROCE_BASE = 20;         // index of the first

localparam [PKTLEN_WIDTH-1:0] ONE = {{(PKTLEN_WIDTH-1){1'b0}}, 1'b1};

// Counter i moves when event_hit[i], by event_amt[i]. Order as in the index map.
wire [NUM_COUNTERS-1:0] event_hit = {xmit_discard, rcv_error, rcv_pkt, xmit_pkt, rcv_pkt, xmit_pkt};
wire [NUM_COUNTERS*PKTLEN_WIDTH-1:0] event_amt = {ONE, ONE, ONE, ONE, rcv_pktlen, xmit_pktlen};

// v + amt, or max when that passes max (v never exceeds max).
function [31:0] sat_add32(input [31:0] v, input [PKTLEN_WIDTH-1:0] amt, input [31:0] max);
    reg [32:0] sum;
    begin
        sum = {1'b0, v} + {{(33-PKTLEN_WIDTH){1'b0}}, amt};
        sat_add32 = (sum > {1'b0, max}) ? max : sum[31:0];
    end
endfunction

function [63:0] sat_add64(input [63:0] v, input [PKTLEN_WIDTH-1:0] amt);
    reg [64:0] sum;
    begin
        sum = {1'b0, v} + {{(65-PKTLEN_WIDTH){1'b0}}, amt};
        sat_add64 = sum[64] ? {64{1'b1}} : sum[63:0];
    end
endfunction

// A counter changes only in a cycle with an event, a write, a clear or reset.
wire [NUM_ROCE-1:0] roce_hit = {cnp_handled, cnp_sent, rcv_ce};
wire touch = |event_hit || |roce_hit || wr_en || clear || rst;

// Every readable word; reserved words stay 0. An array, not one vector driven in parts, which
// Icarus rebuilds bit by bit whenever a part changes.
wire [31:0] words [0:31];

genvar i;
generate
    for (i = 0; i < NUM_COUNTERS; i = i + 1) begin : ctr
        localparam integer BASE_IDX = i;
        localparam integer LO_IDX = EXT_BASE + 2 * i;
        localparam integer HI_IDX = EXT_BASE + 2 * i + 1;
        localparam [31:0] MAX = (i >= NARROW_FROM) ? 32'h0000FFFF : 32'hFFFFFFFF;  // saturation

        reg [31:0] base;    // the PortCounters copy
        reg [63:0] ext;     // the PortCountersExtended copy

        wire [PKTLEN_WIDTH-1:0] amt = event_amt[i*PKTLEN_WIDTH +: PKTLEN_WIDTH];
        wire wr_base = wr_en && wr_index == BASE_IDX[4:0];
        wire wr_lo = wr_en && wr_index == LO_IDX[4:0];
        wire wr_hi = wr_en && wr_index == HI_IDX[4:0];

        // (the guard spares simulators the counter's logic in the cycles nothing happens)
        always @(posedge clk) if (touch) begin
            if (wr_base)
                base <= wr_data & MAX;
            else if (event_hit[i])
                base <= sat_add32(base, amt, MAX);

            if (wr_lo)
                ext[31:0] <= wr_data;
            if (wr_hi)
                ext[63:32] <= wr_data;
            if (event_hit[i] && !wr_lo && !wr_hi)
                ext <= sat_add64(ext, amt);

            if (rst || clear) begin
                base <= 32'd0;
                ext  <= 64'd0;
            end
        end

        assign words[BASE_IDX] = base;
        assign words[LO_IDX] = ext[31:0];
        assign words[HI_IDX] = ext[63:32];
    end

    for (i = 0; i < NUM_ROCE; i = i + 1) begin : roce
        localparam integer IDX = ROCE_BASE + i;
        reg [31:0] count;
        always @(posedge clk) if (touch) begin
            if (wr_en && wr_index == IDX[4:0])
                count <= wr_data;
            else if (roce_hit[i])
                count <= sat_add32(count, ONE, 32'hFFFFFFFF);
            if (rst || clear)
                count <= 32'd0;
        end
        assign words[IDX] = count;
    end

    for (i = NUM_COUNTERS; i < EXT_BASE; i = i + 1) begin : rsv_mid
        assign words[i] = 32'd0;
    end
    for (i = ROCE_BASE + NUM_ROCE; i < 32; i = i + 1) begin : rsv_top
        assign words[i] = 32'd0;
    end
endgenerate

assign rd_data = words[rd_index];

endmodule

`resetall
`endif
