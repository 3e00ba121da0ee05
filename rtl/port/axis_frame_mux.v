// Merges two frame streams into one, a whole frame at a time (input 0 first when both wait);
// tid says which input the frame came from. Here: a port's receive side takes the physical
// link (0) and the port's internal loopback (1).
`ifndef RDMA_AXIS_FRAME_MUX_V
`define RDMA_AXIS_FRAME_MUX_V
`default_nettype none

module axis_frame_mux #(
    parameter DATA_WIDTH = 256     // beat width in bits
) (
    input  wire                     clk,
    input  wire                     rst,

    input  wire [2*DATA_WIDTH-1:0]  s_axis_tdata,
    input  wire [2*DATA_WIDTH/8-1:0] s_axis_tkeep,
    input  wire [1:0]               s_axis_tvalid,
    output wire [1:0]               s_axis_tready,
    input  wire [1:0]               s_axis_tlast,
    input  wire [1:0]               s_axis_tuser,

    output wire [DATA_WIDTH-1:0]    m_axis_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_tkeep,
    output wire                     m_axis_tvalid,
    input  wire                     m_axis_tready,
    output wire                     m_axis_tlast,
    output wire                     m_axis_tuser,
    output wire                     m_axis_tid
);

localparam KEEP_WIDTH = DATA_WIDTH / 8;

reg  in_frame;     // a frame has started and not ended
reg  sel_r;
wire sel = in_frame ? sel_r : !s_axis_tvalid[0];

assign m_axis_tdata  = s_axis_tdata[sel*DATA_WIDTH +: DATA_WIDTH];
assign m_axis_tkeep  = s_axis_tkeep[sel*KEEP_WIDTH +: KEEP_WIDTH];
assign m_axis_tvalid = s_axis_tvalid[sel];
assign m_axis_tlast  = s_axis_tlast[sel];
assign m_axis_tuser  = s_axis_tuser[sel];
assign m_axis_tid    = sel;
assign s_axis_tready = m_axis_tready ? (2'b01 << sel) : 2'b00;

always @(posedge clk) begin
    if (m_axis_tvalid && m_axis_tready) begin
        in_frame <= !m_axis_tlast;
        sel_r    <= sel;
    end
    if (rst)
        in_frame <= 1'b0;
end

endmodule

`resetall
`endif
