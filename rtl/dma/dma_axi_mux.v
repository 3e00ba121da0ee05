// Shares one AXI4 master among the DMA engine's movers (one per client, dma_engine), so that a
// WQE fetch, a payload read, a packet's store and a CQE write are on the bus at the same time.
//
// - AR and AW: round robin, each channel on its own: the mover after the last one granted goes
//   first, so a mover with a burst waiting is granted before any other mover's second burst
//   (no mover can starve another, however busy). A presented burst stays presented until the
//   host takes it. The AXI ID of a burst is its mover's index; the movers themselves use ID 0.
// - R and B go back to the mover their ID names; the beat's payload is shared and only the
//   named mover's valid rises. A mover takes R beats whenever it has reads in flight (it only
//   asks for what its read buffer can hold: dma_rd_engine), so one mover's slow consumer never
//   holds up another's reads, and W data that waits on a read is sure to come.
// - W: bursts in the order their AWs were taken (AXI4 has no WID), from a FIFO of mover
//   indices; w_from names the mover whose WDATA and WSTRB the shared master carries (the data
//   need not pass through here). A mover presents an AW only when that burst's data is at hand or sure to follow
//   (dma_wr_engine), so the W channel never waits on something that waits on it.
// - Atomics: a mover raises s_lock for the whole read-modify-write of the 8 bytes at
//   s_lock_addr. One mover owns the lock at a time (round robin among those asking; another
//   atomic waits for it whole). Before the owner's read goes out, no new AW of another mover
//   is taken and every write already taken must have its B (so no earlier write lands in the
//   middle); from then until the owner drops s_lock, no other mover's write touching those 8
//   bytes is granted. Reads are never held back: another mover's read of the 8 bytes sees the value
//   before or after the operation, and a write burst already granted may need a read to
//   complete (its data), so holding reads could stop the owner's own write behind it.
// An R or B beat whose ID names no mover (or one that never reads, or writes) is taken and
// dropped.
// READERS, WRITERS and LOCKERS say which movers ever read, write or run an atomic (dma_engine
// knows from their modes): the others' inputs of that kind are not looked at.
`ifndef RDMA_DMA_AXI_MUX_V
`define RDMA_DMA_AXI_MUX_V
`default_nettype none

module dma_axi_mux #(
    parameter N = 6,               // movers
    parameter DATA_WIDTH = 256,    // AXI data width in bits
    parameter ADDR_WIDTH = 32,     // AXI address width
    parameter ID_WIDTH = 4,        // AXI ID width of the shared master (2^ID_WIDTH >= N)
    parameter W_ORDER_LOG = 4,     // at most 2^W_ORDER_LOG AWs taken whose W burst is not done
    parameter [31:0] READERS = 32'hFFFFFFFF,  // movers that may present ARs, a bit each
    parameter [31:0] WRITERS = 32'hFFFFFFFF,  // movers that may present AWs
    parameter [31:0] LOCKERS = 32'hFFFFFFFF   // movers that may raise s_lock
) (
    input  wire                       clk,
    input  wire                       rst,

    // the movers' masters, mover i in slice i (their IDs are 0 and not taken)
    input  wire [N*ADDR_WIDTH-1:0]    s_axi_araddr,
    input  wire [N*8-1:0]             s_axi_arlen,
    input  wire [N*3-1:0]             s_axi_arsize,
    input  wire [N-1:0]               s_axi_arvalid,
    output wire [N-1:0]               s_axi_arready,
    output wire [DATA_WIDTH-1:0]      s_axi_rdata,
    output wire [1:0]                 s_axi_rresp,
    output wire                       s_axi_rlast,
    output wire [N-1:0]               s_axi_rvalid,
    input  wire [N-1:0]               s_axi_rready,
    input  wire [N*ADDR_WIDTH-1:0]    s_axi_awaddr,
    input  wire [N*8-1:0]             s_axi_awlen,
    input  wire [N*3-1:0]             s_axi_awsize,
    input  wire [N-1:0]               s_axi_awvalid,
    output wire [N-1:0]               s_axi_awready,
    input  wire [N-1:0]               s_axi_wlast,
    input  wire [N-1:0]               s_axi_wvalid,
    output wire [N-1:0]               s_axi_wready,
    output wire [(N>1?$clog2(N):1)-1:0] w_from,     // the mover whose WDATA and WSTRB go out
    output wire [1:0]                 s_axi_bresp,
    output wire [N-1:0]               s_axi_bvalid,
    input  wire [N-1:0]               s_axi_bready,
    input  wire [N-1:0]               s_lock,
    input  wire [N*ADDR_WIDTH-1:0]    s_lock_addr,

    // the shared master
    output wire [ID_WIDTH-1:0]        m_axi_arid,
    output wire [ADDR_WIDTH-1:0]      m_axi_araddr,
    output wire [7:0]                 m_axi_arlen,
    output wire [2:0]                 m_axi_arsize,
    output wire                       m_axi_arvalid,
    input  wire                       m_axi_arready,
    input  wire [ID_WIDTH-1:0]        m_axi_rid,
    input  wire [DATA_WIDTH-1:0]      m_axi_rdata,
    input  wire [1:0]                 m_axi_rresp,
    input  wire                       m_axi_rlast,
    input  wire                       m_axi_rvalid,
    output wire                       m_axi_rready,
    output wire [ID_WIDTH-1:0]        m_axi_awid,
    output wire [ADDR_WIDTH-1:0]      m_axi_awaddr,
    output wire [7:0]                 m_axi_awlen,
    output wire [2:0]                 m_axi_awsize,
    output wire                       m_axi_awvalid,
    input  wire                       m_axi_awready,
    output wire                       m_axi_wlast,
    output wire                       m_axi_wvalid,
    input  wire                       m_axi_wready,
    input  wire [ID_WIDTH-1:0]        m_axi_bid,
    input  wire [1:0]                 m_axi_bresp,
    input  wire                       m_axi_bvalid,
    output wire                       m_axi_bready
);

localparam SW = N > 1 ? $clog2(N) : 1;          // mover index width
localparam OUTW = 12;                           // writes in flight counter
localparam [SW:0] NN = N[SW:0];
localparam [N-1:0] RD_ON = READERS[N-1:0];
localparam [N-1:0] WR_ON = WRITERS[N-1:0];
localparam [N-1:0] LK_ON = LOCKERS[N-1:0];

// the inputs of movers that never use them are constants here (a block per channel: a
// block runs whole whenever any of its inputs changes)
reg [N*ADDR_WIDTH-1:0] araddr, awaddr, lockaddr;
reg [N*8-1:0]          arlen, awlen;
reg [N*3-1:0]          arsize, awsize;
integer m;
always @* begin
    for (m = 0; m < N; m = m + 1) begin
        araddr[m*ADDR_WIDTH +: ADDR_WIDTH] = RD_ON[m] ? s_axi_araddr[m*ADDR_WIDTH +: ADDR_WIDTH] : {ADDR_WIDTH{1'b0}};
        arlen[m*8 +: 8]                    = RD_ON[m] ? s_axi_arlen[m*8 +: 8] : 8'd0;
        arsize[m*3 +: 3]                   = RD_ON[m] ? s_axi_arsize[m*3 +: 3] : 3'd0;
    end
end
integer n;
always @* begin
    for (n = 0; n < N; n = n + 1) begin
        awaddr[n*ADDR_WIDTH +: ADDR_WIDTH] = WR_ON[n] ? s_axi_awaddr[n*ADDR_WIDTH +: ADDR_WIDTH] : {ADDR_WIDTH{1'b0}};
        awlen[n*8 +: 8]                    = WR_ON[n] ? s_axi_awlen[n*8 +: 8] : 8'd0;
        awsize[n*3 +: 3]                   = WR_ON[n] ? s_axi_awsize[n*3 +: 3] : 3'd0;
    end
end
integer q;
always @*
    for (q = 0; q < N; q = q + 1)
        lockaddr[q*ADDR_WIDTH +: ADDR_WIDTH] = LK_ON[q] ? s_lock_addr[q*ADDR_WIDTH +: ADDR_WIDTH] : {ADDR_WIDTH{1'b0}};
wire [N-1:0] lock_req = s_lock & LK_ON;

// ---- round robin: the first of `req` after `last`, cyclically ------------------------------
function [SW-1:0] rr_pick(input [N-1:0] req, input [SW-1:0] last);
    integer k;
    reg found;
    reg [SW:0] idx;
    begin
        rr_pick = last;
        found = 1'b0;
        for (k = 1; k <= N; k = k + 1) begin
            idx = {1'b0, last} + k[SW:0];
            if (idx >= NN)
                idx = idx - NN;
            if (!found && req[idx[SW-1:0]]) begin
                rr_pick = idx[SW-1:0];
                found = 1'b1;
            end
        end
    end
endfunction

// does a burst [addr, addr + (len+1) << size) touch the 8 bytes at lock?
function touches(input [ADDR_WIDTH-1:0] addr, input [7:0] len, input [2:0] size,
                 input [ADDR_WIDTH-1:0] lock);
    reg [ADDR_WIDTH:0] lo, hi, lk;
    begin
        lo = {1'b0, addr};
        hi = lo + ({{(ADDR_WIDTH-8){1'b0}}, len} + 1'b1 << size);
        lk = {1'b0, lock};
        touches = lo < lk + 8 && lk < hi;
    end
endfunction

// ---- the lock ------------------------------------------------------------------------------
reg            lk_busy;     // a mover owns the lock
reg [SW-1:0]   lk_owner;
reg            lk_read;     // the owner's read has gone out: only its 8 bytes stay closed
reg [OUTW-1:0] wr_out;      // AWs taken whose B has not come back
wire [ADDR_WIDTH-1:0] lk_addr = lockaddr[lk_owner*ADDR_WIDTH +: ADDR_WIDTH];
wire drained = wr_out == {OUTW{1'b0}} && !m_axi_awvalid;

// which movers' presented bursts may be granted
reg [N-1:0] ar_ok, aw_ok;
integer i;
always @* begin
    for (i = 0; i < N; i = i + 1) begin
        if (lk_busy && lk_owner == i[SW-1:0]) begin
            ar_ok[i] = lk_read || drained;
            aw_ok[i] = 1'b1;
        end else if (lock_req[i]) begin
            ar_ok[i] = 1'b0;        // an atomic waiting for the lock
            aw_ok[i] = 1'b0;
        end else if (lk_busy) begin
            ar_ok[i] = 1'b1;
            aw_ok[i] = WR_ON[i] && lk_read && !touches(awaddr[i*ADDR_WIDTH +: ADDR_WIDTH],
                                                       awlen[i*8 +: 8], awsize[i*3 +: 3], lk_addr);
        end else begin
            ar_ok[i] = 1'b1;
            aw_ok[i] = 1'b1;
        end
    end
end

// ---- AR ------------------------------------------------------------------------------------
reg          ar_hold;       // a burst is presented and not yet taken: keep it
reg [SW-1:0] ar_sel, ar_last;
wire [N-1:0]  ar_req = s_axi_arvalid & ar_ok & RD_ON;
wire [SW-1:0] ar_now = ar_hold ? ar_sel : rr_pick(ar_req, ar_last);
assign m_axi_arvalid = ar_hold || |ar_req;
assign m_axi_arid    = {{(ID_WIDTH-SW){1'b0}}, ar_now};
assign m_axi_araddr  = araddr[ar_now*ADDR_WIDTH +: ADDR_WIDTH];
assign m_axi_arlen   = arlen[ar_now*8 +: 8];
assign m_axi_arsize  = arsize[ar_now*3 +: 3];
assign s_axi_arready = (m_axi_arvalid && m_axi_arready) ? {{(N-1){1'b0}}, 1'b1} << ar_now
                                                       : {N{1'b0}};
wire ar_fire = m_axi_arvalid && m_axi_arready;

// ---- R -------------------------------------------------------------------------------------
wire [SW-1:0] r_to = m_axi_rid[SW-1:0];
wire r_known = {{(32-ID_WIDTH){1'b0}}, m_axi_rid} < N && RD_ON[r_to];
assign s_axi_rdata  = m_axi_rdata;
assign s_axi_rresp  = m_axi_rresp;
assign s_axi_rlast  = m_axi_rlast;
assign s_axi_rvalid = (m_axi_rvalid && r_known) ? {{(N-1){1'b0}}, 1'b1} << r_to : {N{1'b0}};
assign m_axi_rready = !r_known || s_axi_rready[r_to];

// ---- AW ------------------------------------------------------------------------------------
reg          aw_hold;
reg [SW-1:0] aw_sel, aw_last;
reg [SW-1:0]        w_order [0:(1<<W_ORDER_LOG)-1];
reg [W_ORDER_LOG:0] wo_wr, wo_rd;
wire [W_ORDER_LOG:0] wo_count = wo_wr - wo_rd;
wire wo_full  = wo_count[W_ORDER_LOG];
wire wo_empty = wo_wr == wo_rd;
wire [N-1:0]  aw_req = s_axi_awvalid & aw_ok & WR_ON;
wire [SW-1:0] aw_now = aw_hold ? aw_sel : rr_pick(aw_req, aw_last);
// a full order FIFO takes no AW
assign m_axi_awvalid = aw_hold || (|aw_req && !wo_full);
assign m_axi_awid    = {{(ID_WIDTH-SW){1'b0}}, aw_now};
assign m_axi_awaddr  = awaddr[aw_now*ADDR_WIDTH +: ADDR_WIDTH];
assign m_axi_awlen   = awlen[aw_now*8 +: 8];
assign m_axi_awsize  = awsize[aw_now*3 +: 3];
assign s_axi_awready = (m_axi_awvalid && m_axi_awready) ? {{(N-1){1'b0}}, 1'b1} << aw_now
                                                       : {N{1'b0}};
wire aw_fire = m_axi_awvalid && m_axi_awready;

// ---- W: the mover at the head of the order FIFO --------------------------------------------
assign w_from = w_order[wo_rd[W_ORDER_LOG-1:0]];
assign m_axi_wlast  = s_axi_wlast[w_from];
assign m_axi_wvalid = !wo_empty && s_axi_wvalid[w_from];
assign s_axi_wready = (!wo_empty && m_axi_wready) ? {{(N-1){1'b0}}, 1'b1} << w_from : {N{1'b0}};
wire w_end = m_axi_wvalid && m_axi_wready && m_axi_wlast;

// ---- B -------------------------------------------------------------------------------------
wire [SW-1:0] b_to = m_axi_bid[SW-1:0];
wire b_known = {{(32-ID_WIDTH){1'b0}}, m_axi_bid} < N && WR_ON[b_to];
assign s_axi_bresp  = m_axi_bresp;
assign s_axi_bvalid = (m_axi_bvalid && b_known) ? {{(N-1){1'b0}}, 1'b1} << b_to : {N{1'b0}};
assign m_axi_bready = !b_known || s_axi_bready[b_to];
wire b_fire = m_axi_bvalid && m_axi_bready;

// (each part runs only when its channel has something on it: idle, a simulator skips them)
always @(posedge clk) begin
    if (m_axi_arvalid) begin    // (a held burst is presented, so ar_hold is low otherwise)
        ar_hold <= !m_axi_arready;
        ar_sel  <= ar_now;
        if (m_axi_arready)
            ar_last <= ar_now;
    end
    if (m_axi_awvalid) begin
        aw_hold <= !m_axi_awready;
        aw_sel  <= aw_now;
        if (m_axi_awready) begin
            aw_last <= aw_now;
            w_order[wo_wr[W_ORDER_LOG-1:0]] <= aw_now;
            wo_wr <= wo_wr + 1'b1;
        end
    end
    if (w_end)
        wo_rd <= wo_rd + 1'b1;
    if (aw_fire != (b_fire && b_known))
        wr_out <= aw_fire ? wr_out + 1'b1 : wr_out - 1'b1;

    // the lock: taken by the next mover asking, released when its owner lets go
    if (!lk_busy) begin
        if (|lock_req) begin
            lk_busy  <= 1'b1;
            lk_owner <= rr_pick(lock_req, lk_owner);
            lk_read  <= 1'b0;
        end
    end else if (!lock_req[lk_owner]) begin
        lk_busy <= 1'b0;
    end else if (ar_fire && ar_now == lk_owner) begin
        lk_read <= 1'b1;
    end

    if (rst) begin
        ar_hold  <= 1'b0;
        ar_sel   <= {SW{1'b0}};
        ar_last  <= {SW{1'b0}};
        aw_hold  <= 1'b0;
        aw_sel   <= {SW{1'b0}};
        aw_last  <= {SW{1'b0}};
        wo_wr    <= {(W_ORDER_LOG+1){1'b0}};
        wo_rd    <= {(W_ORDER_LOG+1){1'b0}};
        wr_out   <= {OUTW{1'b0}};
        lk_busy  <= 1'b0;
        lk_owner <= {SW{1'b0}};
        lk_read  <= 1'b0;
    end
end

endmodule

`resetall
`endif
