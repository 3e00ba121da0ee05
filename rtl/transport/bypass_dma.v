// The bypass's DMA queue: the requester hands it a loopback message's data movement and goes
// on to its next WQE while the payload moves, so that the next message's WQE, lkey and
// responder checks overlap this one's copy. A job is a COPY (an RDMA WRITE's or READ's
// payload, a SEND's piece), or an atomic: its ATOMIC at the responder's memory, then a STORE
// of the original value in the local SGE. Jobs run one at a time on the requester's one DMA
// client, in the order handed over, so a message's data is in place before any later one of
// the requester's touches memory (a READ after a WRITE of the same bytes reads what it wrote,
// a receive completion follows the data of the messages before it). Each job's end is one
// done pulse with its tag, whether the DMA engine answered an error, and whose it is
// (done_notify: the completer finishes the WQE; else the requester waits for it).
`ifndef RDMA_BYPASS_DMA_V
`define RDMA_BYPASS_DMA_V
`default_nettype none

module bypass_dma #(
    parameter ADDR_WIDTH = 32,     // host address width
    parameter TAG_WIDTH = 6        // bits of the tag that comes back with the done pulse
) (
    input  wire                     clk,
    input  wire                     rst,

    // a job: the DMA command (a COPY, or an atomic's ATOMIC), and for an atomic where its
    // original value goes
    input  wire                     s_job_valid,
    output wire                     s_job_ready,      // no job running
    input  wire [DMA_REQ_WIDTH-1:0] s_job_cmd,
    input  wire                     s_job_atomic,
    input  wire [ADDR_WIDTH-1:0]    s_job_local,
    input  wire                     s_job_notify,
    input  wire [TAG_WIDTH-1:0]     s_job_tag,

    // the job's end
    output reg                      done_valid,
    output reg                      done_error,
    output reg                      done_notify,
    output reg  [TAG_WIDTH-1:0]     done_tag,

    // DMA mover client: {data[511:0], len[31:0], dst, src, mode[2:0]}
    output reg                      m_dma_valid,
    input  wire                     m_dma_ready,
    output reg  [DMA_REQ_WIDTH-1:0] m_dma_data,
    input  wire                     s_dma_done,
    input  wire                     s_dma_error,
    input  wire [63:0]              s_dma_rdata       // an ATOMIC's original value
);

`include "rdma_defs.vh"

localparam DMA_REQ_WIDTH = 3 + 2*ADDR_WIDTH + 32 + 512;

reg                  running;
reg                  atomic;     // the running job's ATOMIC is still to finish
reg                  notify;
reg [TAG_WIDTH-1:0]  tag;
reg [ADDR_WIDTH-1:0] local_addr;

assign s_job_ready = !running;

always @(posedge clk) begin
    done_valid <= 1'b0;
    if (m_dma_valid && m_dma_ready) m_dma_valid <= 1'b0;
    if (!running) begin
        if (s_job_valid) begin
            m_dma_data  <= s_job_cmd;
            m_dma_valid <= 1'b1;
            atomic      <= s_job_atomic;
            notify      <= s_job_notify;
            tag         <= s_job_tag;
            local_addr  <= s_job_local;
            running     <= 1'b1;
        end
    end else if (s_dma_done) begin
        if (atomic && !s_dma_error) begin
            // the original value to the local SGE
            m_dma_data  <= {448'd0, s_dma_rdata, 32'd8, local_addr, {ADDR_WIDTH{1'b0}}, DMA_STORE};
            m_dma_valid <= 1'b1;
            atomic      <= 1'b0;
        end else begin
            done_valid  <= 1'b1;
            done_error  <= s_dma_error;
            done_notify <= notify;
            done_tag    <= tag;
            running     <= 1'b0;
        end
    end

    if (rst) begin
        running     <= 1'b0;
        m_dma_valid <= 1'b0;
        done_valid  <= 1'b0;
    end
end

endmodule

`resetall
`endif
