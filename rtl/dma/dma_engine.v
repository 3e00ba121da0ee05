// The device's DMA engine: a mover with scatter/gather lists (dma_sgl) per client, all on one
// AXI4 master through dma_axi_mux. Each client has its own command queue (one command in its
// mover, the next waiting in the client) and its own read buffer, so the clients' commands run
// at the same time: the requester's WQE fetch or payload copy, a port's packet payload, a
// received packet's store and a CQE write all have bursts on the bus together, and a client
// that stalls (a port whose link is busy) holds up no other. The mux grants AR and AW round
// robin, so no client can starve another; its lock keeps an ATOMIC's read-modify-write alone
// on its 8 bytes.
//
// A client's mover is built for the modes the client uses (MODES): a client that only reads
// has no write side, and so on; another mode ends in error. A client that only stores (the
// CQE writer) gets a store queue instead (dma_store_queue): its small writes go out one behind
// the other on its AXI ID, each done in order when its B is in, rather than one write round
// trip at a time. A client's command and answers are dma_mover's (the mode, addresses, length
// and data of its s_cmd_data bundle); its read stream (READ_STREAM) and write stream
// (WRITE_STREAM) are its own.
`ifndef RDMA_DMA_ENGINE_V
`define RDMA_DMA_ENGINE_V
`default_nettype none

module dma_engine #(
    parameter CLIENTS = 6,           // clients, one mover each (at most 2^AXI_ID_WIDTH)
    parameter DATA_WIDTH = 256,      // AXI and stream data width in bits: 64, 128, 256 or 512
    parameter ADDR_WIDTH = 32,       // AXI address width
    parameter AXI_ID_WIDTH = 4,      // AXI ID width: a burst's ID is its client's index
    parameter [31:0] DEEP = 32'h0,   // clients (a bit each) whose movers get the deep read buffer
    parameter DEEP_LOG = 9,          // the deep read buffer: 2^DEEP_LOG beats (hides read latency)
    parameter STORES_LOG = 2,        // a store queue holds 2^STORES_LOG STOREs not done
    parameter SHALLOW_LOG = 4,       // every other client's: 2^SHALLOW_LOG beats (>= 64 bytes)
    parameter [31:0] LISTS = 32'hFFFFFFFF, // clients (a bit each) whose commands may carry lists: the others get no splitter
    parameter [32*8-1:0] MODES = {32{8'h3F}} // client c's modes in bits [c*8 +: 8] (dma_mover's MODES): a mover has only what they need
) (
    input  wire                              clk,
    input  wire                              rst,

    // commands, client c in slice c: {data[511:0], len[31:0], dst, src, mode[2:0]}
    input  wire [CLIENTS-1:0]                s_cmd_valid,
    output wire [CLIENTS-1:0]                s_cmd_ready,
    input  wire [CLIENTS*(3+2*ADDR_WIDTH+32+512)-1:0] s_cmd_data,
    output wire [CLIENTS-1:0]                m_done_valid,
    output reg  [CLIENTS-1:0]                m_done_error,
    output reg  [CLIENTS*512-1:0]            m_done_data,

    // each client's read stream (READ_STREAM) and write stream (WRITE_STREAM)
    output reg  [CLIENTS*DATA_WIDTH-1:0]     m_axis_rd_tdata,
    output reg  [CLIENTS*DATA_WIDTH/8-1:0]   m_axis_rd_tkeep,
    output wire [CLIENTS-1:0]                m_axis_rd_tvalid,
    input  wire [CLIENTS-1:0]                m_axis_rd_tready,
    output wire [CLIENTS-1:0]                m_axis_rd_tlast,
    output wire [CLIENTS-1:0]                m_axis_rd_tuser,   // with tlast: the stream is not the host's bytes (an error response)
    input  wire [CLIENTS*DATA_WIDTH-1:0]     s_axis_wr_tdata,
    input  wire [CLIENTS*DATA_WIDTH/8-1:0]   s_axis_wr_tkeep,
    input  wire [CLIENTS-1:0]                s_axis_wr_tvalid,
    output wire [CLIENTS-1:0]                s_axis_wr_tready,
    input  wire [CLIENTS-1:0]                s_axis_wr_tlast,

    // AXI4 master
    output wire [AXI_ID_WIDTH-1:0]           m_axi_awid,
    output wire [ADDR_WIDTH-1:0]             m_axi_awaddr,
    output wire [7:0]                        m_axi_awlen,
    output wire [2:0]                        m_axi_awsize,
    output wire [1:0]                        m_axi_awburst,
    output wire                              m_axi_awlock,
    output wire [3:0]                        m_axi_awcache,
    output wire [2:0]                        m_axi_awprot,
    output wire                              m_axi_awvalid,
    input  wire                              m_axi_awready,
    output wire [DATA_WIDTH-1:0]             m_axi_wdata,
    output wire [DATA_WIDTH/8-1:0]           m_axi_wstrb,
    output wire                              m_axi_wlast,
    output wire                              m_axi_wvalid,
    input  wire                              m_axi_wready,
    input  wire [AXI_ID_WIDTH-1:0]           m_axi_bid,
    input  wire [1:0]                        m_axi_bresp,
    input  wire                              m_axi_bvalid,
    output wire                              m_axi_bready,
    output wire [AXI_ID_WIDTH-1:0]           m_axi_arid,
    output wire [ADDR_WIDTH-1:0]             m_axi_araddr,
    output wire [7:0]                        m_axi_arlen,
    output wire [2:0]                        m_axi_arsize,
    output wire [1:0]                        m_axi_arburst,
    output wire                              m_axi_arlock,
    output wire [3:0]                        m_axi_arcache,
    output wire [2:0]                        m_axi_arprot,
    output wire                              m_axi_arvalid,
    input  wire                              m_axi_arready,
    input  wire [AXI_ID_WIDTH-1:0]           m_axi_rid,
    input  wire [DATA_WIDTH-1:0]             m_axi_rdata,
    input  wire [1:0]                        m_axi_rresp,
    input  wire                              m_axi_rlast,
    input  wire                              m_axi_rvalid,
    output wire                              m_axi_rready
);

localparam REQ_WIDTH = 3 + 2*ADDR_WIDTH + 32 + 512;

// which clients ever read, write or lock host memory, by their modes (dma_mover's rule)
function [31:0] uses(input [5:0] any);
    integer k;
    begin
        uses = 32'd0;
        for (k = 0; k < CLIENTS; k = k + 1)
            uses[k] = |(MODES[k*8 +: 6] & any);
    end
endfunction
// COPY, LOAD, READ_STREAM, ATOMIC read; COPY, STORE, WRITE_STREAM, ATOMIC write
localparam [31:0] READERS = uses(6'b101101);
localparam [31:0] WRITERS = uses(6'b110011);
localparam [31:0] LOCKERS = uses(6'b100000);
localparam K = DATA_WIDTH / 8;

// Every burst is INCR, full width, normal non-cacheable bufferable, unprivileged, not exclusive.
assign m_axi_arburst = 2'b01;
assign m_axi_arlock  = 1'b0;
assign m_axi_arcache = 4'b0011;
assign m_axi_arprot  = 3'b000;
assign m_axi_awburst = 2'b01;
assign m_axi_awlock  = 1'b0;
assign m_axi_awcache = 4'b0011;
assign m_axi_awprot  = 3'b000;

// Each mover drives nets of its own, gathered into the mux's flat vectors in one place (Icarus
// rebuilds a vector driven in slices by several instances bit by bit on every change).
wire [ADDR_WIDTH-1:0] araddr_c [0:CLIENTS-1];
wire [7:0]            arlen_c [0:CLIENTS-1];
wire [2:0]            arsize_c [0:CLIENTS-1];
wire [ADDR_WIDTH-1:0] awaddr_c [0:CLIENTS-1];
wire [7:0]            awlen_c [0:CLIENTS-1];
wire [2:0]            awsize_c [0:CLIENTS-1];
wire [DATA_WIDTH-1:0] wdata_c [0:CLIENTS-1];
wire [K-1:0]          wstrb_c [0:CLIENTS-1];
wire [ADDR_WIDTH-1:0] lock_addr_c [0:CLIENTS-1];
wire [511:0]          done_data_c [0:CLIENTS-1];
wire [DATA_WIDTH-1:0] rd_tdata_c [0:CLIENTS-1];
wire [K-1:0]          rd_tkeep_c [0:CLIENTS-1];
wire [CLIENTS-1:0]    done_error_c;
wire [CLIENTS-1:0]    arvalid, arready, rvalid, rready, awvalid, awready, wlast, wvalid, wready;
wire [CLIENTS-1:0]    bvalid, bready, lock;
wire [CLIENTS-1:0]    w_busy;        // movers writing host memory: each sees whether another is
reg  [CLIENTS*ADDR_WIDTH-1:0] araddr, awaddr, lock_addr;
reg  [CLIENTS*8-1:0]          arlen, awlen;
reg  [CLIENTS*3-1:0]          arsize, awsize;
wire [DATA_WIDTH-1:0] rdata;
wire [1:0]            rresp, bresp;
wire                  rlast;

// (one block per group: a block runs whole whenever any of its inputs changes, and some
// change every beat)
integer g;
always @* begin
    for (g = 0; g < CLIENTS; g = g + 1) begin
        araddr[g*ADDR_WIDTH +: ADDR_WIDTH]    = araddr_c[g];
        arlen[g*8 +: 8]                       = arlen_c[g];
        arsize[g*3 +: 3]                      = arsize_c[g];
    end
end
integer h;
always @* begin
    for (h = 0; h < CLIENTS; h = h + 1) begin
        awaddr[h*ADDR_WIDTH +: ADDR_WIDTH]    = awaddr_c[h];
        awlen[h*8 +: 8]                       = awlen_c[h];
        awsize[h*3 +: 3]                      = awsize_c[h];
        lock_addr[h*ADDR_WIDTH +: ADDR_WIDTH] = lock_addr_c[h];
    end
end
integer o;
always @*
    for (o = 0; o < CLIENTS; o = o + 1)
        m_done_data[o*512 +: 512] = done_data_c[o];
integer t;
always @* begin
    for (t = 0; t < CLIENTS; t = t + 1) begin
        m_axis_rd_tdata[t*DATA_WIDTH +: DATA_WIDTH] = rd_tdata_c[t];
        m_axis_rd_tkeep[t*K +: K]                   = rd_tkeep_c[t];
    end
end
always @* m_done_error = done_error_c;

// W data straight from the mover the mux names (no gathered copy of every mover's beat)
wire [$clog2(CLIENTS)-1:0] w_from;
assign m_axi_wdata = wdata_c[w_from];
assign m_axi_wstrb = wstrb_c[w_from];

genvar c;
generate
    for (c = 0; c < CLIENTS; c = c + 1) begin : client
        wire [REQ_WIDTH-1:0] cmd = s_cmd_data[c*REQ_WIDTH +: REQ_WIDTH];
        // the R data as this mover sees it: still unless the beat is its own, so the other
        // movers' logic does not run on every beat of the shared channel
        wire [DATA_WIDTH-1:0] rdata_own = rvalid[c] ? rdata : {DATA_WIDTH{1'b0}};
        if (MODES[c*8 +: 8] == 8'h02) begin : stores      // STORE alone
            dma_store_queue #(
                .DATA_WIDTH(DATA_WIDTH), .ADDR_WIDTH(ADDR_WIDTH), .DEPTH_LOG(STORES_LOG)
            ) mover (
                .clk(clk), .rst(rst),
                .s_cmd_valid(s_cmd_valid[c]), .s_cmd_ready(s_cmd_ready[c]),
                .s_cmd_mode(cmd[2:0]),
                .s_cmd_dst_addr(cmd[3+ADDR_WIDTH +: ADDR_WIDTH]),
                .s_cmd_len(cmd[3+2*ADDR_WIDTH +: 32]),
                .s_cmd_data(cmd[3+2*ADDR_WIDTH+32 +: 512]),
                .m_done_valid(m_done_valid[c]), .m_done_error(done_error_c[c]),
                .w_busy(w_busy[c]),
                .m_axi_awaddr(awaddr_c[c]), .m_axi_awlen(awlen_c[c]), .m_axi_awsize(awsize_c[c]),
                .m_axi_awvalid(awvalid[c]), .m_axi_awready(awready[c]),
                .m_axi_wdata(wdata_c[c]), .m_axi_wstrb(wstrb_c[c]), .m_axi_wlast(wlast[c]),
                .m_axi_wvalid(wvalid[c]), .m_axi_wready(wready[c]),
                .m_axi_bresp(bresp), .m_axi_bvalid(bvalid[c]), .m_axi_bready(bready[c])
            );
            // it reads nothing, streams nothing, locks nothing and loads nothing
            assign done_data_c[c]        = 512'd0;
            assign lock[c]               = 1'b0;
            assign lock_addr_c[c]        = {ADDR_WIDTH{1'b0}};
            assign araddr_c[c]           = {ADDR_WIDTH{1'b0}};
            assign arlen_c[c]            = 8'd0;
            assign arsize_c[c]           = 3'd0;
            assign arvalid[c]            = 1'b0;
            assign rready[c]             = 1'b1;
            assign rd_tdata_c[c]         = {DATA_WIDTH{1'b0}};
            assign rd_tkeep_c[c]         = {K{1'b0}};
            assign m_axis_rd_tvalid[c]   = 1'b0;
            assign m_axis_rd_tlast[c]    = 1'b0;
            assign m_axis_rd_tuser[c]    = 1'b0;
            assign s_axis_wr_tready[c]   = 1'b0;
            // (a store client's read stream, write stream and source address are always still)
            wire unused = ^{m_axis_rd_tready[c], s_axis_wr_tdata[c*DATA_WIDTH +: DATA_WIDTH],
                            s_axis_wr_tkeep[c*K +: K], s_axis_wr_tvalid[c], s_axis_wr_tlast[c],
                            arready[c], cmd[3 +: ADDR_WIDTH], rdata_own};
        end else begin : movers
            // the movers' own IDs and fixed burst attributes: the mux sets the ID, this module the rest
            wire [AXI_ID_WIDTH-1:0] awid_unused, arid_unused;
            wire [1:0] awburst_unused, arburst_unused;
            wire awlock_unused, arlock_unused;
            wire [3:0] awcache_unused, arcache_unused;
            wire [2:0] awprot_unused, arprot_unused;
            dma_sgl #(
                .DATA_WIDTH(DATA_WIDTH), .ADDR_WIDTH(ADDR_WIDTH), .AXI_ID_WIDTH(AXI_ID_WIDTH),
                .LEN_WIDTH(32), .RD_BUF_LOG(DEEP[c] ? DEEP_LOG : SHALLOW_LOG), .LISTS(LISTS[c]),
                .MODES(MODES[c*8 +: 8])
            ) mover (
                .clk(clk), .rst(rst),
                .s_cmd_valid(s_cmd_valid[c]), .s_cmd_ready(s_cmd_ready[c]),
                .s_cmd_mode(cmd[2:0]),
                .s_cmd_src_addr(cmd[3 +: ADDR_WIDTH]),
                .s_cmd_dst_addr(cmd[3+ADDR_WIDTH +: ADDR_WIDTH]),
                .s_cmd_len(cmd[3+2*ADDR_WIDTH +: 32]),
                .s_cmd_data(cmd[3+2*ADDR_WIDTH+32 +: 512]),
                .m_done_valid(m_done_valid[c]), .m_done_error(done_error_c[c]),
                .m_done_data(done_data_c[c]),
                .m_lock(lock[c]), .m_lock_addr(lock_addr_c[c]),
                .w_shared(|(w_busy & ~({{(CLIENTS-1){1'b0}}, 1'b1} << c))), .w_busy(w_busy[c]),
                .m_axis_rd_tdata(rd_tdata_c[c]), .m_axis_rd_tkeep(rd_tkeep_c[c]),
                .m_axis_rd_tvalid(m_axis_rd_tvalid[c]), .m_axis_rd_tready(m_axis_rd_tready[c]),
                .m_axis_rd_tlast(m_axis_rd_tlast[c]), .m_axis_rd_tuser(m_axis_rd_tuser[c]),
                .s_axis_wr_tdata(s_axis_wr_tdata[c*DATA_WIDTH +: DATA_WIDTH]),
                .s_axis_wr_tkeep(s_axis_wr_tkeep[c*K +: K]),
                .s_axis_wr_tvalid(s_axis_wr_tvalid[c]), .s_axis_wr_tready(s_axis_wr_tready[c]),
                .s_axis_wr_tlast(s_axis_wr_tlast[c]),
                .m_axi_awid(awid_unused), .m_axi_awaddr(awaddr_c[c]), .m_axi_awlen(awlen_c[c]),
                .m_axi_awsize(awsize_c[c]), .m_axi_awburst(awburst_unused),
                .m_axi_awlock(awlock_unused), .m_axi_awcache(awcache_unused),
                .m_axi_awprot(awprot_unused), .m_axi_awvalid(awvalid[c]), .m_axi_awready(awready[c]),
                .m_axi_wdata(wdata_c[c]), .m_axi_wstrb(wstrb_c[c]), .m_axi_wlast(wlast[c]),
                .m_axi_wvalid(wvalid[c]), .m_axi_wready(wready[c]),
                .m_axi_bid({AXI_ID_WIDTH{1'b0}}), .m_axi_bresp(bresp),
                .m_axi_bvalid(bvalid[c]), .m_axi_bready(bready[c]),
                .m_axi_arid(arid_unused), .m_axi_araddr(araddr_c[c]), .m_axi_arlen(arlen_c[c]),
                .m_axi_arsize(arsize_c[c]), .m_axi_arburst(arburst_unused),
                .m_axi_arlock(arlock_unused), .m_axi_arcache(arcache_unused),
                .m_axi_arprot(arprot_unused), .m_axi_arvalid(arvalid[c]), .m_axi_arready(arready[c]),
                .m_axi_rid({AXI_ID_WIDTH{1'b0}}), .m_axi_rdata(rdata_own), .m_axi_rresp(rresp),
                .m_axi_rlast(rlast), .m_axi_rvalid(rvalid[c]), .m_axi_rready(rready[c])
            );
        end
    end
endgenerate

dma_axi_mux #(
    .N(CLIENTS), .DATA_WIDTH(DATA_WIDTH), .ADDR_WIDTH(ADDR_WIDTH), .ID_WIDTH(AXI_ID_WIDTH),
    .READERS(READERS), .WRITERS(WRITERS), .LOCKERS(LOCKERS)
) mux (
    .clk(clk), .rst(rst),
    .s_axi_araddr(araddr), .s_axi_arlen(arlen), .s_axi_arsize(arsize),
    .s_axi_arvalid(arvalid), .s_axi_arready(arready),
    .s_axi_rdata(rdata), .s_axi_rresp(rresp), .s_axi_rlast(rlast),
    .s_axi_rvalid(rvalid), .s_axi_rready(rready),
    .s_axi_awaddr(awaddr), .s_axi_awlen(awlen), .s_axi_awsize(awsize),
    .s_axi_awvalid(awvalid), .s_axi_awready(awready),
    .s_axi_wlast(wlast), .s_axi_wvalid(wvalid), .s_axi_wready(wready), .w_from(w_from),
    .s_axi_bresp(bresp), .s_axi_bvalid(bvalid), .s_axi_bready(bready),
    .s_lock(lock), .s_lock_addr(lock_addr),
    .m_axi_arid(m_axi_arid), .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen),
    .m_axi_arsize(m_axi_arsize), .m_axi_arvalid(m_axi_arvalid), .m_axi_arready(m_axi_arready),
    .m_axi_rid(m_axi_rid), .m_axi_rdata(m_axi_rdata), .m_axi_rresp(m_axi_rresp),
    .m_axi_rlast(m_axi_rlast), .m_axi_rvalid(m_axi_rvalid), .m_axi_rready(m_axi_rready),
    .m_axi_awid(m_axi_awid), .m_axi_awaddr(m_axi_awaddr), .m_axi_awlen(m_axi_awlen),
    .m_axi_awsize(m_axi_awsize), .m_axi_awvalid(m_axi_awvalid), .m_axi_awready(m_axi_awready),
    .m_axi_wlast(m_axi_wlast), .m_axi_wvalid(m_axi_wvalid), .m_axi_wready(m_axi_wready),
    .m_axi_bid(m_axi_bid), .m_axi_bresp(m_axi_bresp), .m_axi_bvalid(m_axi_bvalid),
    .m_axi_bready(m_axi_bready)
);

endmodule

`resetall
`endif
