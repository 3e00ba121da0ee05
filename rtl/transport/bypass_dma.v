// The bypass's DMA queue: the requester hands it a loopback message's data movement and goes
// on to its next WQE while the payload moves, so that the next message's WQE, lkey and
// responder checks overlap this one's copy. A job is a COPY (an RDMA WRITE's or READ's
// payload, a SEND's piece), or an atomic: its ATOMIC at the responder's memory, then a STORE
// of the original value in the local SGE.
//
// Up to MOVERS jobs run at once, each on a DMA mover of its own, so the host's read latency is
// paid once for several messages. What may run side by side: jobs of different QPs (verbs
// order nothing between QPs), and RDMA WRITEs of one QP whose remote ranges do not overlap.
// Any other job of a QP waits until every earlier job of that QP has finished, so a READ or an
// atomic after a WRITE of the same QP sees the written bytes, a WRITE over bytes an earlier
// WRITE wrote lands last, and what a READ or an atomic stored is in place before the QP's next
// job starts. Each job's end is one done pulse with its tag, whether the DMA engine answered
// an error, and whose it is (done_notify: the completer finishes the WQE; else the requester
// waits for it); jobs that end in the same cycle are reported one per cycle.
`ifndef RDMA_BYPASS_DMA_V
`define RDMA_BYPASS_DMA_V
`default_nettype none

module bypass_dma #(
    parameter ADDR_WIDTH = 32,     // host address width
    parameter QPN_BITS = 6,        // QPN width: jobs of one QP keep their order
    parameter TAG_WIDTH = 16,      // bits of the tag that comes back with the done pulse
    parameter MOVERS = 4           // jobs running at once, one DMA mover each
) (
    input  wire                     clk,
    input  wire                     rst,

    // a job: the DMA command (a COPY, or an atomic's ATOMIC), and for an atomic where its
    // original value goes; s_job_write: an RDMA WRITE, whose remote end is [s_job_lo, s_job_hi)
    input  wire                     s_job_valid,
    output wire                     s_job_ready,      // a mover is free and the QP's order allows
    input  wire [DMA_REQ_WIDTH-1:0] s_job_cmd,
    input  wire                     s_job_atomic,
    input  wire [ADDR_WIDTH-1:0]    s_job_local,
    input  wire                     s_job_notify,
    input  wire [QPN_BITS-1:0]      s_job_qpn,
    input  wire [TAG_WIDTH-1:0]     s_job_tag,
    input  wire                     s_job_write,
    input  wire [ADDR_WIDTH:0]      s_job_lo,
    input  wire [ADDR_WIDTH:0]      s_job_hi,
    output wire                     idle,             // no job running or to report

    // a job's end
    output reg                      done_valid,
    output reg                      done_error,
    output reg                      done_notify,
    output reg  [QPN_BITS-1:0]      done_qpn,
    output reg  [TAG_WIDTH-1:0]     done_tag,

    // DMA mover clients, one per job: {data[511:0], len[31:0], dst, src, mode[2:0]}
    output reg  [MOVERS-1:0]               m_dma_valid,
    input  wire [MOVERS-1:0]               m_dma_ready,
    output wire [MOVERS*DMA_REQ_WIDTH-1:0] m_dma_data,
    input  wire [MOVERS-1:0]               s_dma_done,
    input  wire [MOVERS-1:0]               s_dma_error,
    input  wire [MOVERS*64-1:0]            s_dma_rdata   // an ATOMIC's original value
);

`include "rdma_defs.vh"

localparam DMA_REQ_WIDTH = 3 + 2*ADDR_WIDTH + 32 + 512;

// per mover: its job, from acceptance until its end is reported
reg [MOVERS-1:0]        busy;
reg [MOVERS-1:0]        ended;      // the DMA is done: the end waits to be reported
reg [MOVERS-1:0]        atomic;     // the ATOMIC is still to finish (the STORE follows)
reg [MOVERS-1:0]        failed;
reg [MOVERS-1:0]        notify;
reg [MOVERS-1:0]        write;
reg [QPN_BITS-1:0]      qpn   [0:MOVERS-1];
reg [TAG_WIDTH-1:0]     tag   [0:MOVERS-1];
reg [ADDR_WIDTH:0]      lo    [0:MOVERS-1];
reg [ADDR_WIDTH:0]      hi    [0:MOVERS-1];
reg [ADDR_WIDTH-1:0]    local_addr [0:MOVERS-1];
reg [DMA_REQ_WIDTH-1:0] cmd   [0:MOVERS-1];

genvar g;
generate
    for (g = 0; g < MOVERS; g = g + 1) begin : mover_cmd
        assign m_dma_data[g*DMA_REQ_WIDTH +: DMA_REQ_WIDTH] = cmd[g];
    end
endgenerate

// the new job against each running one: a job of its QP it must wait for
reg [MOVERS-1:0] waits_for;
integer j;
always @* begin
    for (j = 0; j < MOVERS; j = j + 1)
        waits_for[j] = busy[j] && qpn[j] == s_job_qpn &&
                    !(s_job_write && write[j] && (s_job_hi <= lo[j] || hi[j] <= s_job_lo));
end
// a job whose DMA ends this cycle (an atomic's ATOMIC that succeeded goes on to its STORE)
wire [MOVERS-1:0] ending = busy & s_dma_done & ~(atomic & ~s_dma_error);
// the lowest free mover takes it; the lowest ended one is reported, else the lowest one
// ending now (in its done's cycle: the completer hears of it a cycle sooner)
reg [MOVERS-1:0] take, report;
always @* begin
    take   = {MOVERS{1'b0}};
    report = {MOVERS{1'b0}};
    for (j = MOVERS - 1; j >= 0; j = j - 1) begin
        if (!busy[j])
            take = {{(MOVERS-1){1'b0}}, 1'b1} << j;
        if (ending[j])
            report = {{(MOVERS-1){1'b0}}, 1'b1} << j;
    end
    if (|ended) begin
        report = {MOVERS{1'b0}};
        for (j = MOVERS - 1; j >= 0; j = j - 1)
            if (ended[j])
                report = {{(MOVERS-1){1'b0}}, 1'b1} << j;
    end
end
assign s_job_ready = |take && !(|waits_for);
assign idle = !(|busy);

integer m;
always @(posedge clk) begin
    done_valid  <= 1'b0;
    m_dma_valid <= m_dma_valid & ~m_dma_ready;
    for (m = 0; m < MOVERS; m = m + 1) begin
        if (s_job_valid && s_job_ready && take[m]) begin
            cmd[m]        <= s_job_cmd;
            m_dma_valid[m] <= 1'b1;
            atomic[m]     <= s_job_atomic;
            notify[m]     <= s_job_notify;
            write[m]      <= s_job_write;
            qpn[m]        <= s_job_qpn;
            tag[m]        <= s_job_tag;
            lo[m]         <= s_job_lo;
            hi[m]         <= s_job_hi;
            local_addr[m] <= s_job_local;
            busy[m]       <= 1'b1;
        end
        if (busy[m] && s_dma_done[m]) begin
            if (atomic[m] && !s_dma_error[m]) begin
                // the original value to the local SGE
                cmd[m] <= {448'd0, s_dma_rdata[m*64 +: 64], 32'd8, local_addr[m],
                           {ADDR_WIDTH{1'b0}}, DMA_STORE};
                m_dma_valid[m] <= 1'b1;
                atomic[m]      <= 1'b0;
            end else if (!report[m]) begin
                ended[m]  <= 1'b1;
                failed[m] <= s_dma_error[m];
            end
        end
        if (report[m]) begin
            done_valid  <= 1'b1;
            done_error  <= ended[m] ? failed[m] : s_dma_error[m];
            done_notify <= notify[m];
            done_qpn    <= qpn[m];
            done_tag    <= tag[m];
            ended[m]    <= 1'b0;
            busy[m]     <= 1'b0;
        end
    end

    if (rst) begin
        busy        <= {MOVERS{1'b0}};
        ended       <= {MOVERS{1'b0}};
        m_dma_valid <= {MOVERS{1'b0}};
        done_valid  <= 1'b0;
    end
end

endmodule

`resetall
`endif
