// The PMA counters, one readable word at a time (the solver picks which, and every input):
// reset and clear zero it; a write to it loads it; otherwise it moves only with its own event,
// by exactly that event's amount, and saturates at all-ones (0xFFFF for the 16-bit
// PortRcvErrors and PortXmitDiscards) instead of wrapping. A 64-bit extended counter is seen a
// half at a time: its low word wraps only with a carry into the high word or saturates with
// it, its high word moves by that carry and never wraps; a write to one half drops the event
// for both. The three RoCE congestion counters (words 20-22) are 32-bit counters of one event
// each, without an extended copy. Reserved words read 0. So no counter moves in a cycle
// without its event: the port's loopback never reaches these inputs (docs/formal.md).
`default_nettype none

module port_counters_props (
    input wire        clk,
    input wire        rst,
    input wire        xmit_pkt,
    input wire [10:0] xmit_pktlen,
    input wire        rcv_pkt,
    input wire [10:0] rcv_pktlen,
    input wire        rcv_error,
    input wire        xmit_discard,
    input wire        rcv_ce,
    input wire        cnp_sent,
    input wire        cnp_handled,
    input wire        clear,
    input wire        wr_en,
    input wire [4:0]  wr_index,
    input wire [31:0] wr_data
);

(* anyconst *) reg [4:0] idx;     // the word watched
wire [31:0] word;

port_counters dut (
    .clk(clk), .rst(rst),
    .xmit_pkt(xmit_pkt), .xmit_pktlen(xmit_pktlen), .rcv_pkt(rcv_pkt), .rcv_pktlen(rcv_pktlen),
    .rcv_error(rcv_error), .xmit_discard(xmit_discard), .rcv_ce(rcv_ce), .cnp_sent(cnp_sent),
    .cnp_handled(cnp_handled), .clear(clear),
    .rd_index(idx), .rd_data(word),
    .wr_en(wr_en), .wr_index(wr_index), .wr_data(wr_data)
);

reg past_valid = 1'b0;
always @(posedge clk) past_valid <= 1'b1;
always @* if (!past_valid) assume (rst);

// the word's place in the map: counter c, as its PortCounters word or an extended half, or a
// RoCE counter
wire        is_base = idx < 5'd6;
wire        is_ext  = idx >= 5'd8 && idx < 5'd20;
wire        is_roce = idx >= 5'd20 && idx < 5'd23;
wire [4:0]  ext_c   = (idx - 5'd8) >> 1;
wire [2:0]  c       = is_base ? idx[2:0] : ext_c[2:0];
wire        is_hi   = is_ext && idx[0];
wire [31:0] max     = c >= 3'd4 && !is_roce ? 32'h0000FFFF : 32'hFFFFFFFF;

// the watched counter's event this cycle, and by how much it moves the counter
reg        ev;
reg [10:0] amt;
always @* begin
    amt = 11'd1;
    if (is_roce)
        ev = idx == 5'd20 ? rcv_ce : idx == 5'd21 ? cnp_sent : cnp_handled;
    else
        case (c)
            3'd0: begin ev = xmit_pkt;     amt = xmit_pktlen; end
            3'd1: begin ev = rcv_pkt;      amt = rcv_pktlen;  end
            3'd2: ev = xmit_pkt;
            3'd3: ev = rcv_pkt;
            3'd4: ev = rcv_error;
            default: ev = xmit_discard;
        endcase
end

wire wr_this  = wr_en && wr_index == idx;
wire wr_other = wr_en && is_ext && wr_index == (idx ^ 5'd1);   // the other half of the counter

reg        p_zero, p_wr_this, p_wr_other, p_ev;
reg [10:0] p_amt;
reg [31:0] p_wr_data, p_word;
always @(posedge clk) begin
    p_zero     <= rst || clear;
    p_wr_this  <= wr_this;
    p_wr_other <= wr_other;
    p_ev       <= ev;
    p_amt      <= amt;
    p_wr_data  <= wr_data;
    p_word     <= word;
end

wire [32:0] sum = {1'b0, p_word} + {22'd0, p_amt};

always @(posedge clk) if (past_valid) begin
    if (!is_base && !is_ext && !is_roce)
        assert (word == 32'd0);
    else if (p_zero)
        assert (word == 32'd0);
    else if (p_wr_this)
        assert (word == (is_base ? p_wr_data & max : p_wr_data));
    else if (!p_ev || p_wr_other)
        assert (word == p_word);
    else if (is_base || is_roce)
        assert (word == (sum > {1'b0, max} ? max : sum[31:0]));
    else if (is_hi)     // a carry of at most one, none from all-ones
        assert (word == p_word || (p_word != 32'hFFFFFFFF && word == p_word + 32'd1));
    else                // the low half: the sum, or all-ones when the whole counter saturates
        assert (word == sum[31:0] || (sum[32] && word == 32'hFFFFFFFF));
    if (is_base)
        assert (word <= max);
end

endmodule

`resetall
