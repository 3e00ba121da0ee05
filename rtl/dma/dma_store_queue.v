// The DMA engine's mover for a client that only STOREs (the CQE writer): STOREs with their
// writes in flight. A mover (dma_mover) runs one command at a time, so a client of small
// stores waits a whole write round trip (AW, W, B) per store; here the next STORE is taken as
// soon as there is room for it, its AW and W go out behind the previous one's, and the Bs
// come back in order on the client's one AXI ID. One ID gives the order software relies on:
// AXI4 keeps writes of one ID in order, so a CQE never lands before the one written before
// it, and each command's done (in command order) says its bytes are in host memory.
//
// The command is dma_mover's STORE: len (1..64) bytes of data to host dst, any alignment; a
// write that crosses a 4 KiB boundary is two bursts. A command of no bytes writes nothing and
// is done in its turn; another mode, or more than 64 bytes, writes nothing and is done in its
// turn with m_done_error set. A B other than OKAY sets m_done_error of its command.
`ifndef RDMA_DMA_STORE_QUEUE_V
`define RDMA_DMA_STORE_QUEUE_V
`default_nettype none

module dma_store_queue #(
    parameter DATA_WIDTH = 256,    // AXI data width in bits: 64, 128, 256 or 512
    parameter ADDR_WIDTH = 32,     // AXI address width
    parameter DEPTH_LOG = 2        // 2^DEPTH_LOG STOREs taken and not done, at most
) (
    input  wire                     clk,
    input  wire                     rst,

    input  wire                     s_cmd_valid,
    output wire                     s_cmd_ready,
    input  wire [2:0]               s_cmd_mode,
    input  wire [ADDR_WIDTH-1:0]    s_cmd_dst_addr,
    input  wire [31:0]              s_cmd_len,
    input  wire [511:0]             s_cmd_data,
    output reg                      m_done_valid,
    output reg                      m_done_error,
    output wire                     w_busy,         // writes taken whose W is not all out

    // AXI4 write channels (the engine's mux sets the ID and the fixed burst attributes)
    output wire [ADDR_WIDTH-1:0]    m_axi_awaddr,
    output wire [7:0]               m_axi_awlen,
    output wire [2:0]               m_axi_awsize,
    output wire                     m_axi_awvalid,
    input  wire                     m_axi_awready,
    output wire [DATA_WIDTH-1:0]    m_axi_wdata,
    output wire [DATA_WIDTH/8-1:0]  m_axi_wstrb,
    output wire                     m_axi_wlast,
    output wire                     m_axi_wvalid,
    input  wire                     m_axi_wready,
    input  wire [1:0]               m_axi_bresp,
    input  wire                     m_axi_bvalid,
    output wire                     m_axi_bready
);

`include "rdma_defs.vh"

localparam K = DATA_WIDTH / 8;           // bytes per beat
localparam KB = $clog2(K);
localparam D = 1 << DEPTH_LOG;
localparam KM = K - 1;
localparam [11:0] K_LESS1 = KM[11:0];
localparam [2:0] SIZE = KB[2:0];
localparam [DEPTH_LOG:0] FULL = D;

// the commands taken, in order; three pointers walk them: the next AW, the next W beat, the
// next B (the oldest not done)
reg [ADDR_WIDTH-1:0] e_dst  [0:D-1];
reg [6:0]            e_len  [0:D-1];
reg [511:0]          e_data [0:D-1];
reg [D-1:0]          e_bus;          // it writes host memory
reg [D-1:0]          e_bad;          // not a STORE of at most 64 bytes
reg [DEPTH_LOG:0]    wr_ptr, aw_ptr, w_ptr, b_ptr;
reg                  aw_second;      // the AW of the entry's second burst is next
reg [4:0]            w_beat;         // the beat of the W entry
reg                  b_second;       // the entry's first B of two is in
reg                  b_err;

// beats of a store at dst (its low 12 bits) of len bytes, and those before the 4 KiB boundary
// it may cross
/* verilator lint_off UNUSEDSIGNAL */
function [4:0] beats_of(input [11:0] dst, input [6:0] len);
    reg [11:0] span;
    begin
        span = {{(12-KB){1'b0}}, dst[KB-1:0]} + {5'd0, len} + K_LESS1;
        span = span >> KB;
        beats_of = span[4:0];
    end
endfunction
/* verilator lint_on UNUSEDSIGNAL */
function [4:0] first_of(input [11:0] dst, input [6:0] len);
    reg [12:0] room;
    begin
        room = (13'd4096 - {1'b0, dst[11:KB], {KB{1'b0}}}) >> KB;
        first_of = room < {8'd0, beats_of(dst, len)} ? room[4:0] : beats_of(dst, len);
    end
endfunction

wire [DEPTH_LOG-1:0] wi = wr_ptr[DEPTH_LOG-1:0];
wire [DEPTH_LOG-1:0] ai = aw_ptr[DEPTH_LOG-1:0];
wire [DEPTH_LOG-1:0] ti = w_ptr[DEPTH_LOG-1:0];
wire [DEPTH_LOG-1:0] bi = b_ptr[DEPTH_LOG-1:0];
assign s_cmd_ready = wr_ptr - b_ptr != FULL;

// ---- AW: one burst per entry, or two across a 4 KiB boundary ----
wire aw_have = aw_ptr != wr_ptr;
wire [ADDR_WIDTH-1:0] aw_dst = e_dst[ai];
wire [4:0] aw_beats = beats_of(aw_dst[11:0], e_len[ai]);
wire [4:0] aw_first = first_of(aw_dst[11:0], e_len[ai]);
assign m_axi_awvalid = aw_have && e_bus[ai];
assign m_axi_awaddr  = aw_second ? {aw_dst[ADDR_WIDTH-1:12] + 1'b1, 12'd0}
                                 : {aw_dst[ADDR_WIDTH-1:KB], {KB{1'b0}}};
assign m_axi_awlen   = {3'd0, aw_second ? aw_beats - aw_first - 5'd1 : aw_first - 5'd1};
assign m_axi_awsize  = SIZE;

// ---- W: the entry's bytes moved to their lanes, strobes on exactly [dst, dst + len); an
// entry's beats once its (first) AW is out, so the pointers keep their order ----
wire w_have = w_ptr != aw_ptr || (aw_have && aw_second);
wire [11:0]  w_dst   = e_dst[ti][11:0];
wire [6:0]   w_len   = e_len[ti];
wire [4:0]   w_beats = beats_of(w_dst, w_len);
wire [4:0]   w_first = first_of(w_dst, w_len);
wire [1023:0] w_wide = {512'd0, e_data[ti]} << {w_dst[KB-1:0], 3'd0};
wire [127:0] w_mask = (128'd1 << w_len) - 128'd1;
wire [127:0] w_strb = w_mask << w_dst[KB-1:0];
assign m_axi_wvalid = w_have && e_bus[ti];
assign m_axi_wdata  = w_wide[w_beat*DATA_WIDTH +: DATA_WIDTH];
assign m_axi_wstrb  = w_strb[w_beat*K +: K];
assign m_axi_wlast  = w_beat == w_first - 5'd1 || w_beat == w_beats - 5'd1;
assign w_busy       = w_ptr != wr_ptr;

// ---- B: in order, all of them the oldest entry's; an entry that writes nothing is done when
// it is the oldest and the others have passed it ----
wire b_have = b_ptr != wr_ptr;
wire [11:0] b_dst = e_dst[bi][11:0];
wire b_two  = first_of(b_dst, e_len[bi]) != beats_of(b_dst, e_len[bi]);
assign m_axi_bready = b_have && e_bus[bi];

always @(posedge clk) begin
    m_done_valid <= 1'b0;
    if (s_cmd_valid && s_cmd_ready) begin
        e_dst[wi]  <= s_cmd_dst_addr;
        e_len[wi]  <= s_cmd_len[6:0];
        e_data[wi] <= s_cmd_data;
        e_bad[wi]  <= s_cmd_mode != DMA_STORE || s_cmd_len > 32'd64;
        e_bus[wi]  <= s_cmd_mode == DMA_STORE && s_cmd_len <= 32'd64 && s_cmd_len != 32'd0;
        wr_ptr <= wr_ptr + 1'b1;
    end
    if (aw_have && !e_bus[ai]) begin
        aw_ptr <= aw_ptr + 1'b1;
    end else if (m_axi_awvalid && m_axi_awready) begin
        if (!aw_second && aw_first != aw_beats) begin
            aw_second <= 1'b1;
        end else begin
            aw_second <= 1'b0;
            aw_ptr    <= aw_ptr + 1'b1;
        end
    end
    if (w_have && !e_bus[ti]) begin
        w_ptr <= w_ptr + 1'b1;
    end else if (m_axi_wvalid && m_axi_wready) begin
        if (w_beat == w_beats - 5'd1) begin
            w_beat <= 5'd0;
            w_ptr  <= w_ptr + 1'b1;
        end else begin
            w_beat <= w_beat + 5'd1;
        end
    end
    if (b_ptr != w_ptr && !e_bus[bi]) begin
        m_done_valid <= 1'b1;
        m_done_error <= e_bad[bi];
        b_ptr <= b_ptr + 1'b1;
    end else if (m_axi_bvalid && m_axi_bready) begin
        if (b_two && !b_second) begin
            b_second <= 1'b1;
            b_err    <= m_axi_bresp != 2'b00;
        end else begin
            m_done_valid <= 1'b1;
            m_done_error <= b_err || m_axi_bresp != 2'b00;
            b_second <= 1'b0;
            b_err    <= 1'b0;
            b_ptr    <= b_ptr + 1'b1;
        end
    end
    if (rst) begin
        wr_ptr       <= {(DEPTH_LOG+1){1'b0}};
        aw_ptr       <= {(DEPTH_LOG+1){1'b0}};
        w_ptr        <= {(DEPTH_LOG+1){1'b0}};
        b_ptr        <= {(DEPTH_LOG+1){1'b0}};
        aw_second    <= 1'b0;
        w_beat       <= 5'd0;
        b_second     <= 1'b0;
        b_err        <= 1'b0;
        m_done_valid <= 1'b0;
        m_done_error <= 1'b0;
    end
end

endmodule

`resetall
`endif
