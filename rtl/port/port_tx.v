// One port's transmit side: takes messages from the requester and responses (ACKs, READ
// responses) from the receive engine, answers first, into the packetizer, which holds two of
// them (one leaving while the next one's payload arrives), fetches each packet's payload from
// host memory through its two DMA movers in turn (READ_STREAM), and sends the packets on the
// physical link, or on the internal port loopback for a loopback message whose bypass is
// switched off. Only physical-link packets are counted. A packet whose payload host memory
// refused leaves aborted (tuser), on either link, and its message is done with an error.
// While a go-back is due for a QP, its message being read out ends at the next packet
// boundary: the responder would drop the rest, which is sent again anyway, and the resend
// would wait behind it.
`ifndef RDMA_PORT_TX_V
`define RDMA_PORT_TX_V
`default_nettype none

module port_tx #(
    parameter DATA_WIDTH = 256,    // link and payload beat width in bits
    parameter ADDR_WIDTH = 32,     // host address width
    parameter RSP_DEPTH = 16,      // queued responses (the receive engine discards one that finds it full)
    parameter NUM_QP = 64          // queue pairs (going_back's width)
) (
    input  wire                     clk,
    input  wire                     rst,

    // the port's link layer (0 InfiniBand, 1 Ethernet) and its MAC (Ethernet)
    input  wire                     eth,
    input  wire [47:0]              port_mac,

    // the requester's message: accepted when the packetizer has room, done when its last
    // packet has left (messages leave in the order they are accepted)
    input  wire                     s_req_valid,
    output wire                     s_req_ready,
    input  wire [TXD_WIDTH-1:0]     s_req_desc,
    output wire                     req_done,
    output wire                     req_done_error,  // with req_done: a packet of it was aborted
    // the QPs with a go-back due (the completer's): their message being read out is cut
    input  wire [NUM_QP-1:0]        going_back,

    // responses from the receive engine, queued
    input  wire                     s_rsp_valid,
    output wire                     s_rsp_ready,
    input  wire [TXD_WIDTH-1:0]     s_rsp_desc,

    // two DMA mover clients: {data[511:0], len[31:0], dst, src, mode[2:0]}; done ends a chunk
    output reg  [1:0]                 m_dma_valid,
    input  wire [1:0]                 m_dma_ready,
    output wire [2*DMA_REQ_WIDTH-1:0] m_dma_data,
    input  wire [1:0]                 s_dma_done,

    // the read streams of the two movers: the chunks' payload
    input  wire [2*DATA_WIDTH-1:0]    s_axis_pl_tdata,
    input  wire [2*DATA_WIDTH/8-1:0]  s_axis_pl_tkeep,
    input  wire [1:0]                 s_axis_pl_tvalid,
    output wire [1:0]                 s_axis_pl_tready,
    input  wire [1:0]                 s_axis_pl_tlast,
    input  wire [1:0]                 s_axis_pl_tuser, // with tlast: the chunk is not the host's bytes

    // physical link
    output wire [DATA_WIDTH-1:0]    m_axis_tx_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_tx_tkeep,
    output wire                     m_axis_tx_tvalid,
    input  wire                     m_axis_tx_tready,
    output wire                     m_axis_tx_tlast,
    output wire                     m_axis_tx_tuser,

    // internal port loopback (to this port's receive side)
    output wire [DATA_WIDTH-1:0]    m_axis_loop_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_loop_tkeep,
    output wire                     m_axis_loop_tvalid,
    input  wire                     m_axis_loop_tready,
    output wire                     m_axis_loop_tlast,
    output wire                     m_axis_loop_tuser,

    // counter events (physical link only)
    output wire                     xmit_pkt,
    output wire [10:0]              xmit_pktlen
);

`include "rdma_defs.vh"
`include "pkt_fields.vh"

localparam DMA_REQ_WIDTH = 3 + 2*ADDR_WIDTH + 32 + 512;
localparam QPN_BITS = $clog2(NUM_QP);
localparam RSP_BITS = RSP_DEPTH > 1 ? $clog2(RSP_DEPTH) : 1;
localparam [RSP_BITS-1:0] RSP_LAST = RSP_DEPTH[RSP_BITS-1:0] - 1'b1;

// ---- response queue ----
reg  [TXD_WIDTH-1:0] rq_mem [0:RSP_DEPTH-1];
reg  [RSP_BITS-1:0]  rq_wr, rq_rd;
reg  [RSP_BITS:0]    rq_count;
assign s_rsp_ready = rq_count != RSP_DEPTH;
wire rq_push = s_rsp_valid && s_rsp_ready;

// ---- the next message into the packetizer: responses first, the peer's requester is
//      waiting for them ----
wire                 pk_ready, pk_done, pk_done_error;
wire [23:0]          pk_done_psn;
wire                 from_req = rq_count == 0;
wire [TXD_WIDTH-1:0] d = from_req ? s_req_desc : rq_mem[rq_rd];
wire take_rsp = pk_ready && !from_req;
wire take_req = pk_ready && from_req && s_req_valid;
assign s_req_ready = take_req;
// what each message carries through the packetizer: its QP (the source QPN), its payload's
// scatter/gather list, its link (the internal loopback), whether it is the requester's
localparam USER_WIDTH = QPN_BITS + 256 + 2;
wire [USER_WIDTH-1:0] pl_user, tx_user, done_user;
assign req_done = pk_done && done_user[0];
assign req_done_error = pk_done_error;

always @(posedge clk) begin
    if (rq_push) begin
        rq_mem[rq_wr] <= s_rsp_desc;
        rq_wr <= rq_wr == RSP_LAST ? {RSP_BITS{1'b0}} : rq_wr + 1'b1;
    end
    if (take_rsp)
        rq_rd <= rq_rd == RSP_LAST ? {RSP_BITS{1'b0}} : rq_rd + 1'b1;
    rq_count <= rq_count + {{RSP_BITS{1'b0}}, rq_push} - {{RSP_BITS{1'b0}}, take_rsp};
    if (rst) begin
        rq_wr <= {RSP_BITS{1'b0}};
        rq_rd <= {RSP_BITS{1'b0}};
        rq_count <= {(RSP_BITS+1){1'b0}};
    end
end

// ---- payload chunks: one READ_STREAM each, bytes [offset, offset+len) of the descriptor's
//      scatter/gather list (the DMA engine gathers the list's pieces into one stream). A mover
//      runs one command at a time, from its first read to its last beat taken; the chunks go
//      to the port's two movers in turn, so the next chunk's reads are out while the current
//      one streams and the packetizer's buffers fill as fast as the link empties them. The
//      packetizer takes the two streams in the same turn, a whole chunk at a time. ----
wire        pl_req_valid;
wire [31:0] pl_req_offset;
wire [12:0] pl_req_len;
reg  [1:0]  chunk_busy;      // a chunk's command is in mover k
reg  [31:0] chunk_off [0:1];
reg  [31:0] chunk_len [0:1];
reg  [255:0] chunk_sgl [0:1];
reg         issue_to;        // the mover that takes the next chunk
reg         stream_from;     // the mover whose stream the packetizer takes
wire        pl_req_ready = !chunk_busy[issue_to] && !m_dma_valid[issue_to];
genvar cm;
generate
    for (cm = 0; cm < 2; cm = cm + 1) begin : chunk_cmd
        assign m_dma_data[cm*DMA_REQ_WIDTH +: DMA_REQ_WIDTH] =
            {256'd0, chunk_sgl[cm], chunk_len[cm], {ADDR_WIDTH{1'b0}},
             chunk_off[cm][ADDR_WIDTH-1:0], DMA_READ_STREAM};
    end
endgenerate
wire [DATA_WIDTH-1:0]   pl_tdata  = s_axis_pl_tdata[stream_from*DATA_WIDTH +: DATA_WIDTH];
wire [DATA_WIDTH/8-1:0] pl_tkeep  = s_axis_pl_tkeep[stream_from*DATA_WIDTH/8 +: DATA_WIDTH/8];
wire                    pl_tvalid = s_axis_pl_tvalid[stream_from];
wire                    pl_tlast  = s_axis_pl_tlast[stream_from];
wire                    pl_tuser  = s_axis_pl_tuser[stream_from];
wire                    pk_pl_tready;

always @(posedge clk) begin
    m_dma_valid <= m_dma_valid & ~m_dma_ready;
    if (pl_req_valid && pl_req_ready) begin
        m_dma_valid[issue_to] <= 1'b1;
        chunk_off[issue_to]   <= pl_req_offset;
        chunk_len[issue_to]   <= {19'd0, pl_req_len};
        chunk_sgl[issue_to]   <= pl_user[2 +: 256];
        issue_to <= !issue_to;
    end
    chunk_busy <= (chunk_busy | ((pl_req_valid && pl_req_ready) ? 2'b01 << issue_to : 2'b00))
                  & ~s_dma_done;
    if (pl_tvalid && pk_pl_tready && pl_tlast)
        stream_from <= !stream_from;
    if (rst) begin
        m_dma_valid <= 2'b00;
        chunk_busy  <= 2'b00;
        issue_to    <= 1'b0;
        stream_from <= 1'b0;
    end
end

// ---- the packetizer ----
wire [DATA_WIDTH-1:0]   tx_tdata;
wire [DATA_WIDTH/8-1:0] tx_tkeep;
wire                    tx_tvalid, tx_tready, tx_tlast, tx_tuser;
wire                    pkt_sent;
assign s_axis_pl_tready = {2{pk_pl_tready}} & (2'b01 << stream_from);
wire [10:0]             pkt_sent_len;

packetizer #(.DATA_WIDTH(DATA_WIDTH), .MESSAGES(2), .USER_WIDTH(USER_WIDTH)) pk (
    .clk(clk), .rst(rst), .eth(eth), .port_mac(port_mac),
    .desc_valid(!from_req || s_req_valid), .desc_ready(pk_ready),
    .desc_kind(d[TXD_KIND +: 3]), .desc_transport(d[TXD_TRANSPORT +: 3]),
    .desc_imm_valid(d[TXD_IMM_VALID]), .desc_inv(d[TXD_INV]), .desc_awrite(d[TXD_AWRITE]),
    .desc_cnp(d[TXD_CNP]),
    .desc_imm(d[TXD_IMM +: 32]),
    .desc_solicited(d[TXD_SOLICITED]), .desc_len(d[TXD_LEN +: 32]), .desc_mtu(d[TXD_MTU +: 3]),
    .desc_dlid(d[TXD_DLID +: 16]), .desc_slid(d[TXD_SLID +: 16]), .desc_sl(d[TXD_SL +: 4]),
    .desc_is_global(d[TXD_GLOBAL]), .desc_tclass(d[TXD_TCLASS +: 8]),
    .desc_flow_label(d[TXD_FLOW +: 20]), .desc_hop_limit(d[TXD_HOP +: 8]),
    .desc_sgid(d[TXD_SGID +: 128]), .desc_dgid(d[TXD_DGID +: 128]),
    .desc_dmac(d[TXD_DMAC +: 48]), .desc_vlan(d[TXD_VLAN +: 13]),
    .desc_pkey(d[TXD_PKEY +: 16]), .desc_dest_qpn(d[TXD_DEST_QPN +: 24]),
    .desc_psn(d[TXD_PSN +: 24]), .desc_start(d[TXD_START +: 32]), .desc_qkey(d[TXD_QKEY +: 32]),
    .desc_src_qpn(d[TXD_SRC_QPN +: 24]), .desc_raddr(d[TXD_RADDR +: 64]),
    .desc_rkey(d[TXD_RKEY +: 32]), .desc_dma_len(d[TXD_DMA_LEN +: 32]),
    .desc_syndrome(d[TXD_SYNDROME +: 8]), .desc_msn(d[TXD_MSN +: 24]),
    .desc_atomic_a(d[TXD_ATOMIC_A +: 64]), .desc_atomic_b(d[TXD_ATOMIC_B +: 64]),
    .desc_rate(d[TXD_INTERNAL] ? 4'd0 : d[TXD_RATE +: 4]),
    .desc_user({d[TXD_SRC_QPN +: QPN_BITS], d[TXD_SGL +: 256], d[TXD_INTERNAL], from_req}),
    .cut(pl_user[0] && going_back[pl_user[USER_WIDTH-1 -: QPN_BITS]]),
    .pl_req_valid(pl_req_valid), .pl_req_ready(pl_req_ready),
    .pl_req_offset(pl_req_offset), .pl_req_len(pl_req_len), .pl_req_user(pl_user),
    .s_axis_pl_tdata(pl_tdata), .s_axis_pl_tkeep(pl_tkeep),
    .s_axis_pl_tvalid(pl_tvalid), .s_axis_pl_tready(pk_pl_tready),
    .s_axis_pl_tlast(pl_tlast), .s_axis_pl_tuser(pl_tuser),
    .m_axis_tx_tdata(tx_tdata), .m_axis_tx_tkeep(tx_tkeep), .m_axis_tx_tvalid(tx_tvalid),
    .m_axis_tx_tready(tx_tready), .m_axis_tx_tlast(tx_tlast), .m_axis_tx_tuser(tx_tuser),
    .m_axis_tx_user(tx_user),
    .pkt_sent(pkt_sent), .pkt_sent_len(pkt_sent_len),
    .done(pk_done), .done_psn(pk_done_psn), .done_error(pk_done_error), .done_user(done_user)
);

// each beat's link is its own message's
wire internal = tx_user[1];
assign m_axis_tx_tdata    = tx_tdata;
assign m_axis_tx_tkeep    = tx_tkeep;
assign m_axis_tx_tvalid   = tx_tvalid && !internal;
assign m_axis_tx_tlast    = tx_tlast;
assign m_axis_tx_tuser    = tx_tuser;
assign m_axis_loop_tdata  = tx_tdata;
assign m_axis_loop_tkeep  = tx_tkeep;
assign m_axis_loop_tvalid = tx_tvalid && internal;
assign m_axis_loop_tlast  = tx_tlast;
assign m_axis_loop_tuser  = tx_tuser;
assign tx_tready = internal ? m_axis_loop_tready : m_axis_tx_tready;

// pkt_sent comes the cycle after the packet's last beat: the link it took is remembered
reg sent_internal;
always @(posedge clk)
    if (tx_tvalid && tx_tready && tx_tlast)
        sent_internal <= internal;
assign xmit_pkt    = pkt_sent && !sent_internal;
assign xmit_pktlen = pkt_sent_len;

wire unused = ^{pk_done_psn, pl_user[1], tx_user[USER_WIDTH-1:2], tx_user[0],
                done_user[USER_WIDTH-1:1]};

endmodule

`resetall
`endif
