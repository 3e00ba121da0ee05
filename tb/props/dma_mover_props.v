// One DMA mover as an AXI4 master, for every command and every answer the host bus may give
// (make formal, docs/formal.md). The host bus is only assumed to keep AXI's rules (R and B
// only for requests it took, RLAST on each burst's last beat, a payload held until taken); the
// command and the write stream keep theirs (held until taken). Asserted:
// - AR, AW and W hold valid and payload until ready;
// - every burst is INCR of full-width beats, at most 256 of them, inside one 4 KiB page, a
//   write burst inside one 512-byte block (the mover's longest write);
// - AW bursts are exactly the command's destination bytes [dst, dst+len) split at those
//   512-byte boundaries, in order, and only for a command that writes host memory; AR bursts
//   read in order inside the source's beats [src, src+len) (an ATOMIC reads and writes its dst);
// - W carries the destination's beats in order: strobes exactly on the bytes of
//   [dst, dst+len) (none outside, none missing), WLAST exactly on each AW burst's last beat;
// - one done pulse per command taken, after every W beat and every B (an ATOMIC's
//   CompareSwap that does not match writes nothing), with m_lock on the ATOMIC's 8 bytes from
//   acceptance to done.
`default_nettype none

module dma_mover_props #(
    parameter DATA_WIDTH = 64,     // AXI data width in bits
    parameter ADDR_WIDTH = 16,     // AXI address width: 16 pages of 4 KiB, enough to cross them
    parameter LEN_WIDTH = 8,       // command length width in bytes
    parameter RD_BUF_LOG = 4,      // the mover's read buffer, as the device has it
    parameter MAX_AR = 4           // read bursts the host bus takes before answering one
) (
    input wire                    clk,
    input wire                    rst,
    input wire                    s_cmd_valid,
    input wire [2:0]              s_cmd_mode,
    input wire [ADDR_WIDTH-1:0]   s_cmd_src_addr,
    input wire [ADDR_WIDTH-1:0]   s_cmd_dst_addr,
    input wire [LEN_WIDTH-1:0]    s_cmd_len,
    input wire [511:0]            s_cmd_data,
    input wire                    w_shared,
    input wire                    m_axis_rd_tready,
    input wire [DATA_WIDTH-1:0]   s_axis_wr_tdata,
    input wire [DATA_WIDTH/8-1:0] s_axis_wr_tkeep,
    input wire                    s_axis_wr_tvalid,
    input wire                    s_axis_wr_tlast,
    input wire                    m_axi_awready,
    input wire                    m_axi_wready,
    input wire [3:0]              m_axi_bid,
    input wire [1:0]              m_axi_bresp,
    input wire                    m_axi_bvalid,
    input wire                    m_axi_arready,
    input wire [3:0]              m_axi_rid,
    input wire [DATA_WIDTH-1:0]   m_axi_rdata,
    input wire [1:0]              m_axi_rresp,
    input wire                    m_axi_rlast,
    input wire                    m_axi_rvalid
);

localparam B = DATA_WIDTH / 8;
localparam BL = $clog2(B);
localparam AW = ADDR_WIDTH;
localparam BLK_LOG = (BL + 8 < 12) ? 8 : 12 - BL;     // beats between read burst boundaries (log2)
localparam WR_BLK_LOG = (BL + 8 < 9) ? 8 : 9 - BL;    // ... write burst boundaries: 512 bytes

wire                  s_cmd_ready;
wire                  m_done_valid, m_done_error, m_lock;
wire [511:0]          m_done_data;
wire [AW-1:0]         m_lock_addr;
wire                  w_busy;
wire [DATA_WIDTH-1:0] m_axis_rd_tdata;
wire [B-1:0]          m_axis_rd_tkeep;
wire                  m_axis_rd_tvalid, m_axis_rd_tlast, s_axis_wr_tready;
wire [3:0]            m_axi_awid, m_axi_arid;
wire [AW-1:0]         m_axi_awaddr, m_axi_araddr;
wire [7:0]            m_axi_awlen, m_axi_arlen;
wire [2:0]            m_axi_awsize, m_axi_arsize, m_axi_awprot, m_axi_arprot;
wire [1:0]            m_axi_awburst, m_axi_arburst;
wire                  m_axi_awlock, m_axi_arlock;
wire [3:0]            m_axi_awcache, m_axi_arcache;
wire                  m_axi_awvalid, m_axi_wvalid, m_axi_wlast, m_axi_bready;
wire                  m_axi_arvalid, m_axi_rready;
wire [DATA_WIDTH-1:0] m_axi_wdata;
wire [B-1:0]          m_axi_wstrb;

dma_mover #(.DATA_WIDTH(DATA_WIDTH), .ADDR_WIDTH(ADDR_WIDTH), .LEN_WIDTH(LEN_WIDTH),
            .RD_BUF_LOG(RD_BUF_LOG)) dut (
    .clk(clk), .rst(rst),
    .s_cmd_valid(s_cmd_valid), .s_cmd_ready(s_cmd_ready), .s_cmd_mode(s_cmd_mode),
    .s_cmd_src_addr(s_cmd_src_addr), .s_cmd_dst_addr(s_cmd_dst_addr), .s_cmd_len(s_cmd_len),
    .s_cmd_data(s_cmd_data),
    .m_done_valid(m_done_valid), .m_done_error(m_done_error), .m_done_data(m_done_data),
    .m_lock(m_lock), .m_lock_addr(m_lock_addr), .w_shared(w_shared), .w_busy(w_busy),
    .m_axis_rd_tdata(m_axis_rd_tdata), .m_axis_rd_tkeep(m_axis_rd_tkeep),
    .m_axis_rd_tvalid(m_axis_rd_tvalid), .m_axis_rd_tready(m_axis_rd_tready),
    .m_axis_rd_tlast(m_axis_rd_tlast),
    .s_axis_wr_tdata(s_axis_wr_tdata), .s_axis_wr_tkeep(s_axis_wr_tkeep),
    .s_axis_wr_tvalid(s_axis_wr_tvalid), .s_axis_wr_tready(s_axis_wr_tready),
    .s_axis_wr_tlast(s_axis_wr_tlast),
    .m_axi_awid(m_axi_awid), .m_axi_awaddr(m_axi_awaddr), .m_axi_awlen(m_axi_awlen),
    .m_axi_awsize(m_axi_awsize), .m_axi_awburst(m_axi_awburst), .m_axi_awlock(m_axi_awlock),
    .m_axi_awcache(m_axi_awcache), .m_axi_awprot(m_axi_awprot), .m_axi_awvalid(m_axi_awvalid),
    .m_axi_awready(m_axi_awready),
    .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb), .m_axi_wlast(m_axi_wlast),
    .m_axi_wvalid(m_axi_wvalid), .m_axi_wready(m_axi_wready),
    .m_axi_bid(m_axi_bid), .m_axi_bresp(m_axi_bresp), .m_axi_bvalid(m_axi_bvalid),
    .m_axi_bready(m_axi_bready),
    .m_axi_arid(m_axi_arid), .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen),
    .m_axi_arsize(m_axi_arsize), .m_axi_arburst(m_axi_arburst), .m_axi_arlock(m_axi_arlock),
    .m_axi_arcache(m_axi_arcache), .m_axi_arprot(m_axi_arprot), .m_axi_arvalid(m_axi_arvalid),
    .m_axi_arready(m_axi_arready),
    .m_axi_rid(m_axi_rid), .m_axi_rdata(m_axi_rdata), .m_axi_rresp(m_axi_rresp),
    .m_axi_rlast(m_axi_rlast), .m_axi_rvalid(m_axi_rvalid), .m_axi_rready(m_axi_rready)
);

reg past_valid = 1'b0;
always @(posedge clk) past_valid <= 1'b1;
always @* if (!past_valid) assume (rst);

wire cmd_fire = s_cmd_valid && s_cmd_ready;
wire ar_fire = m_axi_arvalid && m_axi_arready;
wire r_fire = m_axi_rvalid && m_axi_rready;
wire aw_fire = m_axi_awvalid && m_axi_awready;
wire w_fire = m_axi_wvalid && m_axi_wready;
wire b_fire = m_axi_bvalid && m_axi_bready;

// ---- the environment's side of the handshakes, one cycle back ----
reg p_cmd_wait, p_wr_wait, p_r_wait, p_b_wait, p_aw_wait, p_w_wait, p_ar_wait;
reg [2:0]            p_cmd_mode;
reg [AW-1:0]         p_cmd_src, p_cmd_dst, p_awaddr, p_araddr;
reg [LEN_WIDTH-1:0]  p_cmd_len;
reg [511:0]          p_cmd_data;
reg [DATA_WIDTH-1:0] p_wr_tdata, p_rdata, p_wdata;
reg [B-1:0]          p_wr_tkeep, p_wstrb;
reg                  p_wr_tlast, p_rlast, p_wlast;
reg [3:0]            p_rid, p_bid;
reg [1:0]            p_rresp, p_bresp;
reg [7:0]            p_awlen, p_arlen;
always @(posedge clk) begin
    p_cmd_wait <= s_cmd_valid && !s_cmd_ready;
    p_cmd_mode <= s_cmd_mode;
    p_cmd_src  <= s_cmd_src_addr;
    p_cmd_dst  <= s_cmd_dst_addr;
    p_cmd_len  <= s_cmd_len;
    p_cmd_data <= s_cmd_data;
    p_wr_wait  <= s_axis_wr_tvalid && !s_axis_wr_tready;
    p_wr_tdata <= s_axis_wr_tdata;
    p_wr_tkeep <= s_axis_wr_tkeep;
    p_wr_tlast <= s_axis_wr_tlast;
    p_r_wait   <= m_axi_rvalid && !m_axi_rready;
    p_rdata    <= m_axi_rdata;
    p_rlast    <= m_axi_rlast;
    p_rid      <= m_axi_rid;
    p_rresp    <= m_axi_rresp;
    p_b_wait   <= m_axi_bvalid && !m_axi_bready;
    p_bid      <= m_axi_bid;
    p_bresp    <= m_axi_bresp;
    p_aw_wait  <= m_axi_awvalid && !m_axi_awready;
    p_awaddr   <= m_axi_awaddr;
    p_awlen    <= m_axi_awlen;
    p_w_wait   <= m_axi_wvalid && !m_axi_wready;
    p_wdata    <= m_axi_wdata;
    p_wstrb    <= m_axi_wstrb;
    p_wlast    <= m_axi_wlast;
    p_ar_wait  <= m_axi_arvalid && !m_axi_arready;
    p_araddr   <= m_axi_araddr;
    p_arlen    <= m_axi_arlen;
end

// the command's contract: STORE and LOAD move at most 64 bytes, an ATOMIC 8
always @* if (s_cmd_valid && (s_cmd_mode == 3'd1 || s_cmd_mode == 3'd2))
    assume (s_cmd_len <= 64);
always @* if (s_cmd_valid && s_cmd_mode == 3'd5)
    assume (s_cmd_len == 8);

// the read bursts the bus took and has not finished answering, oldest first
reg [7:0] ar_q [0:MAX_AR-1];
reg [2:0] ar_n;                 // how many
reg [7:0] r_beat;               // beats of the oldest answered so far
integer k;
always @(posedge clk) begin
    if (r_fire) begin
        r_beat <= m_axi_rlast ? 8'd0 : r_beat + 8'd1;
        if (m_axi_rlast)
            for (k = 0; k < MAX_AR - 1; k = k + 1)
                ar_q[k] <= ar_q[k + 1];
    end
    if (ar_fire)
        ar_q[ar_n - (r_fire && m_axi_rlast)] <= m_axi_arlen;
    ar_n <= ar_n + ar_fire - (r_fire && m_axi_rlast);
    if (rst) begin
        ar_n   <= 3'd0;
        r_beat <= 8'd0;
    end
end

// writes the bus took: AWs, whole W bursts, and the Bs it answered
reg [7:0] aw_n, wb_n, b_n;
always @(posedge clk) begin
    aw_n <= aw_n + aw_fire;
    wb_n <= wb_n + (w_fire && m_axi_wlast);
    b_n  <= b_n + b_fire;
    if (rst) begin
        aw_n <= 8'd0;
        wb_n <= 8'd0;
        b_n  <= 8'd0;
    end
end

// the host bus keeps AXI's rules; the command and the write stream are held until taken
always @* begin
    if (past_valid && !rst) begin
        if (p_cmd_wait)
            assume (s_cmd_valid && s_cmd_mode == p_cmd_mode && s_cmd_src_addr == p_cmd_src &&
                    s_cmd_dst_addr == p_cmd_dst && s_cmd_len == p_cmd_len &&
                    s_cmd_data == p_cmd_data);
        if (p_wr_wait)
            assume (s_axis_wr_tvalid && s_axis_wr_tdata == p_wr_tdata &&
                    s_axis_wr_tkeep == p_wr_tkeep && s_axis_wr_tlast == p_wr_tlast);
        if (p_r_wait)
            assume (m_axi_rvalid && m_axi_rdata == p_rdata && m_axi_rlast == p_rlast &&
                    m_axi_rid == p_rid && m_axi_rresp == p_rresp);
        if (p_b_wait)
            assume (m_axi_bvalid && m_axi_bid == p_bid && m_axi_bresp == p_bresp);
    end
    if (m_axi_rvalid)
        assume (ar_n != 3'd0 && m_axi_rlast == (r_beat == ar_q[0]));
    if (ar_n == MAX_AR)
        assume (!m_axi_arready);
    if (m_axi_bvalid)
        assume (b_n != aw_n && b_n != wb_n);
end

// ---- the command being served, as the wrapper sees it ----
localparam [2:0] COPY = 3'd0, STORE = 3'd1, LOAD = 3'd2, RD_STREAM = 3'd3, WR_STREAM = 3'd4,
                 ATOMIC = 3'd5;
reg                 busy;
reg [2:0]           mode;
reg [AW-1:0]        dst;
reg [LEN_WIDTH-1:0] len;
reg [AW-BL-1:0]     ar_next;     // the next read burst's beat address
reg [AW-BL:0]       rd_end;      // one past the source's last beat
reg [AW-BL-1:0]     aw_next;     // the next write burst's beat address
reg [LEN_WIDTH:0]   aw_left;     // destination beats not yet in a write burst
reg [AW-BL-1:0]     w_beat;      // the next W beat's beat address
reg [LEN_WIDTH:0]   w_left;      // destination beats not yet written
reg [LEN_WIDTH:0]   len_beats;   // all of them
reg                 owed;        // a command was taken and its done pulse has not come

wire writes = mode == COPY || mode == STORE || mode == WR_STREAM || mode == ATOMIC;
wire reads = mode == COPY || mode == LOAD || mode == RD_STREAM || mode == ATOMIC;
wire [AW-1:0] c_src = s_cmd_mode == ATOMIC ? s_cmd_dst_addr : s_cmd_src_addr;
wire [AW:0]   c_src_end = {1'b0, c_src} + {{(AW+1-LEN_WIDTH){1'b0}}, s_cmd_len};
wire [AW:0]   c_dst_end = {1'b0, s_cmd_dst_addr} + {{(AW+1-LEN_WIDTH){1'b0}}, s_cmd_len};
wire [AW:0]   dst_end = {1'b0, dst} + {{(AW+1-LEN_WIDTH){1'b0}}, len};
// no range wraps around the top of the address space
always @* if (s_cmd_valid)
    assume (!c_src_end[AW] && !c_dst_end[AW]);
// beats of [dst, dst+len)
wire [LEN_WIDTH:0] c_dst_beats = (c_dst_end[AW:BL] + (c_dst_end[BL-1:0] != 0)) -
                                 {1'b0, s_cmd_dst_addr[AW-1:BL]};

// beats from beat address a to the end of its block of 2^lg beats
function [8:0] to_block(input [AW-BL-1:0] a, input integer lg);
    to_block = (9'd1 << lg) - ({1'b0, a[7:0]} & ((9'd1 << lg) - 9'd1));
endfunction

// a burst of n beats from beat address a stays inside its block of 2^lg beats
function in_block(input [AW-BL-1:0] a, input [8:0] n, input integer lg);
    in_block = n <= to_block(a, lg);
endfunction

wire [8:0] aw_beats = {1'b0, m_axi_awlen} + 9'd1;
wire [8:0] ar_beats = {1'b0, m_axi_arlen} + 9'd1;
wire [8:0] aw_want = aw_left < to_block(aw_next, WR_BLK_LOG) ? aw_left[8:0]
                                                             : to_block(aw_next, WR_BLK_LOG);
wire [AW-1:0] w_addr = {w_beat, {BL{1'b0}}};

// strobes the bytes of beat address w_beat in [dst, dst+len) must have
reg [B-1:0] w_want;
integer j;
always @* for (j = 0; j < B; j = j + 1)
    w_want[j] = {1'b0, w_addr + j} >= {1'b0, dst} && {1'b0, w_addr + j} < dst_end;

always @(posedge clk) begin
    if (m_done_valid)
        busy <= 1'b0;
    if (cmd_fire) begin     // (a command may be taken in the cycle the one before is done)
        busy    <= s_cmd_len != 0 && s_cmd_mode <= ATOMIC;
        mode    <= s_cmd_mode;
        dst     <= s_cmd_dst_addr;
        len     <= s_cmd_len;
        ar_next <= c_src[AW-1:BL];
        rd_end  <= c_src_end[AW:BL] + (c_src_end[BL-1:0] != 0);
        aw_next <= s_cmd_dst_addr[AW-1:BL];
        aw_left <= c_dst_beats;
        w_beat  <= s_cmd_dst_addr[AW-1:BL];
        w_left  <= c_dst_beats;
        len_beats <= c_dst_beats;
    end
    if (m_done_valid || cmd_fire)
        owed <= cmd_fire;
    if (ar_fire)
        ar_next <= ar_next + ar_beats;
    if (aw_fire) begin
        aw_next <= aw_next + aw_beats;
        aw_left <= aw_left - aw_beats;
    end
    if (w_fire) begin
        w_beat <= w_beat + 1'b1;
        w_left <= w_left - 1'b1;
    end
    if (rst) begin
        busy <= 1'b0;
        owed <= 1'b0;
    end
end

// ---- what the mover promises ----
always @(posedge clk) if (past_valid && !$past(rst)) begin
    if ($past(m_axi_awvalid && !m_axi_awready))
        assert (m_axi_awvalid && m_axi_awaddr == p_awaddr && m_axi_awlen == p_awlen);
    if ($past(m_axi_wvalid && !m_axi_wready))
        assert (m_axi_wvalid && m_axi_wdata == p_wdata && m_axi_wstrb == p_wstrb &&
                m_axi_wlast == p_wlast);
    if ($past(m_axi_arvalid && !m_axi_arready))
        assert (m_axi_arvalid && m_axi_araddr == p_araddr && m_axi_arlen == p_arlen);
end

always @* if (past_valid && !rst) begin
    assert (m_axi_awsize == BL && m_axi_arsize == BL);
    assert (m_axi_awburst == 2'b01 && m_axi_arburst == 2'b01);
    assert (m_axi_bready);
    if (m_axi_arvalid) begin
        assert (busy && reads);
        assert (m_axi_araddr[BL-1:0] == 0 && in_block(m_axi_araddr[AW-1:BL], ar_beats, BLK_LOG));
        assert (m_axi_araddr[AW-1:BL] == ar_next);
        assert ({1'b0, ar_next} + ar_beats <= rd_end);
    end
    if (m_axi_awvalid) begin
        assert (busy && writes);
        assert (m_axi_awaddr[BL-1:0] == 0 && in_block(m_axi_awaddr[AW-1:BL], aw_beats, WR_BLK_LOG));
        assert (m_axi_awaddr[AW-1:BL] == aw_next && aw_beats == aw_want);
    end
    if (m_axi_wvalid) begin
        assert (busy && writes && w_left != 0);
        assert (m_axi_wstrb == w_want);
        assert (m_axi_wlast == (w_left == 1 || to_block(w_beat, WR_BLK_LOG) == 9'd1));
    end
    if (m_done_valid)
        assert (owed);
    if (m_done_valid && busy) begin     // every burst written and answered
        assert (b_n == aw_n && wb_n == aw_n);
        if (mode == ATOMIC)             // all 8 bytes, or none (a CompareSwap that missed)
            assert ((aw_left == 0 && w_left == 0) || (aw_left == len_beats && w_left == len_beats));
        else if (writes)
            assert (aw_left == 0 && w_left == 0);
    end
    if (busy && mode == ATOMIC && !m_done_valid)   // (the lock drops with the done pulse)
        assert (m_lock && m_lock_addr == dst);
    if (!busy)
        assert (!m_lock);
end

endmodule

`resetall
