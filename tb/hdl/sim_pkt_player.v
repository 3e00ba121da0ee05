// Plays packets the testbench queued onto a link stream, so a fuzzer can put thousands of
// packets on a port's receive side without Python on every beat (cocotbext-axi's source wakes
// every cycle). The testbench writes beats through the back door into the ring `ring` (one
// word per beat: {tuser, tlast, tkeep, tdata}), then advances `queued` past them; the player
// sends them one per cycle while the link takes them and counts every last beat in `frames`.
// `idle` is high when everything queued has left.
`timescale 1ns / 1ps
`default_nettype none

module sim_pkt_player #(
    parameter DATA_WIDTH = 256,     // link data width in bits
    parameter DEPTH_LOG = 12        // the ring holds 2^DEPTH_LOG beats
) (
    input  wire                    clk,
    input  wire                    rst,
    output wire [DATA_WIDTH-1:0]   m_axis_tdata,
    output wire [DATA_WIDTH/8-1:0] m_axis_tkeep,
    output wire                    m_axis_tvalid,
    input  wire                    m_axis_tready,
    output wire                    m_axis_tlast,
    output wire                    m_axis_tuser
);

localparam KEEP_WIDTH = DATA_WIDTH / 8;
localparam WORD = DATA_WIDTH + KEEP_WIDTH + 2;

/* verilator lint_off UNDRIVEN */   // written through the back door only
reg [WORD-1:0] ring [0:(1 << DEPTH_LOG)-1];
/* verilator lint_on UNDRIVEN */
reg [31:0] queued = 32'd0;       // beats written so far (the testbench advances it)
reg [31:0] sent = 32'd0;         // beats taken by the link so far
reg [31:0] frames = 32'd0;       // packets taken by the link so far

wire [WORD-1:0] head = ring[sent[DEPTH_LOG-1:0]];
wire idle = queued == sent;
assign m_axis_tvalid = !rst && !idle;
assign {m_axis_tuser, m_axis_tlast, m_axis_tkeep, m_axis_tdata} = head;

always @(posedge clk) begin
    if (rst)
        sent <= queued;         // what a test left queued is not played into the next
    else if (m_axis_tvalid && m_axis_tready) begin
        sent <= sent + 32'd1;
        if (m_axis_tlast)
            frames <= frames + 32'd1;
    end
end

endmodule

`resetall
