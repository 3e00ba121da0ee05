// Two-entry register slice: full throughput, and both s_ready and m_valid come from flops so
// no combinational path crosses it (used to keep RREADY independent of WREADY).
`ifndef RDMA_DMA_SKID_V
`define RDMA_DMA_SKID_V
`default_nettype none

module dma_skid #(
    parameter WIDTH = 8            // payload width in bits
) (
    input  wire              clk,
    input  wire              rst,

    input  wire [WIDTH-1:0]  s_data,
    input  wire              s_valid,
    output reg               s_ready,

    output reg  [WIDTH-1:0]  m_data,
    output reg               m_valid,
    input  wire              m_ready
);

reg [WIDTH-1:0] skid_data;  // parks the beat that arrived while the output was stalled

always @(posedge clk) begin
    if (s_ready) begin
        if (!m_valid || m_ready) begin
            m_data  <= s_data;
            m_valid <= s_valid;
        end else if (s_valid) begin
            skid_data <= s_data;
            s_ready   <= 1'b0;
        end
    end else if (m_ready) begin
        // skid full implies m_valid: the parked beat moves up and the input reopens
        m_data  <= skid_data;
        s_ready <= 1'b1;
    end

    if (rst) begin
        s_ready <= 1'b1;
        m_valid <= 1'b0;
    end
end

endmodule

`resetall
`endif
