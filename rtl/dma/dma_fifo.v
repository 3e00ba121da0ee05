// First-word-fall-through FIFO: the head entry is on m_data whenever m_valid is high; an entry
// that arrives while it is empty is on m_data in its own cycle, and is not stored if taken
// then (a host read's beat reaches the realigner in the cycle it arrives). The DMA engine's read
// buffer: a read engine asks the host for no more beats than its buffer can take, so R is never
// held up by one engine's consumer (dma_rd_engine); `count` is what it checks. s_ready comes
// from flops alone.
`ifndef RDMA_DMA_FIFO_V
`define RDMA_DMA_FIFO_V
`default_nettype none

module dma_fifo #(
    parameter WIDTH = 8,           // entry width in bits
    parameter DEPTH_LOG = 4        // 2^DEPTH_LOG entries
) (
    input  wire                 clk,
    input  wire                 rst,

    input  wire [WIDTH-1:0]     s_data,
    input  wire                 s_valid,
    output wire                 s_ready,

    output wire [WIDTH-1:0]     m_data,
    output wire                 m_valid,
    input  wire                 m_ready,

    output wire [DEPTH_LOG:0]   count          // entries held
);

reg [WIDTH-1:0]   mem [0:(1<<DEPTH_LOG)-1];
reg [DEPTH_LOG:0] wr_ptr, rd_ptr;

wire   empty   = wr_ptr == rd_ptr;
assign count   = wr_ptr - rd_ptr;
assign s_ready = !count[DEPTH_LOG];
assign m_valid = !empty || s_valid;
assign m_data  = empty ? s_data : mem[rd_ptr[DEPTH_LOG-1:0]];

always @(posedge clk) begin
    if (s_valid || !empty) begin    // (empty and idle, a simulator skips the rest)
        if (s_valid && s_ready && !(empty && m_ready)) begin
            mem[wr_ptr[DEPTH_LOG-1:0]] <= s_data;
            wr_ptr <= wr_ptr + 1'b1;
        end
        if (!empty && m_ready)
            rd_ptr <= rd_ptr + 1'b1;
    end
    if (rst) begin
        wr_ptr <= {(DEPTH_LOG+1){1'b0}};
        rd_ptr <= {(DEPTH_LOG+1){1'b0}};
    end
end

endmodule

`resetall
`endif
