// Simulation harness for the multi-client DMA engine (dma_engine): four clients, each with a
// command port the testbench drives, all on one AXI4 master ending in the HDL host memory
// (sim_axi_ram, read latency, write latency and random stalls set at run time, back door in
// tb/host_mem.py). Nothing here needs Python on every beat:
//
// - the clock and a free-running cycle counter are made here;
// - client 2's read stream ends in a capture sink (rd2_*): every beat it takes is stored with its
//   tkeep and tlast in rd2_cap for the testbench to read afterwards; rd2_hold holds tready low,
//   rd2_stall_rate adds random tready gaps (r/256 of the cycles);
// - client 1's write stream comes from a playback source (wr1_*): the testbench loads wr1_mem
//   with the frame's beats ({tlast, tkeep, tdata}) and sets wr1_beats; the source sends beats
//   0 .. wr1_beats-1 (from 0 again each time wr1_restart is high at an edge), with random valid
//   gaps at wr1_stall_rate;
// - the other clients' streams are tied off (tready high, tvalid low);
// - monitors on the engine's internal AXI mux (dut.mux) count what the tests check, in
//   registers the testbench reads when it wants (see "monitors" below).
`timescale 1ns / 1ps
`default_nettype none

module tb_dma_engine #(
    parameter DATA_WIDTH = 256,       // AXI and stream data width in bits: 64, 128, 256 or 512
    parameter ADDR_WIDTH = 32,        // AXI address width
    parameter AXI_ID_WIDTH = 4,       // AXI ID width
    parameter CLIENTS = 4,            // the harness has the ports of four clients
    parameter [31:0] DEEP = 32'hC,    // clients 2 and 3 get the deep read buffer
    parameter DEEP_LOG = 9,           // deep read buffer: 2^9 beats
    parameter SHALLOW_LOG = 4,        // the others': 2^4 beats
    parameter [7:0] MODES0 = 8'h3F,   // client 0's modes (8'h02, STORE alone: a store queue)
    parameter MEM_BYTES = 1 << 21,    // host memory
    parameter REGION_LOG = 18,        // region check: client c works in [c << REGION_LOG, (c+1) << REGION_LOG)
    parameter CAP_LOG = 13            // capture and playback: 2^CAP_LOG beats (64 KiB at 64 bits)
) (
    input  wire                  rst,

    // client 0
    input  wire                  c0_cmd_valid,
    output wire                  c0_cmd_ready,
    input  wire [2:0]            c0_cmd_mode,
    input  wire [ADDR_WIDTH-1:0] c0_cmd_src,
    input  wire [ADDR_WIDTH-1:0] c0_cmd_dst,
    input  wire [31:0]           c0_cmd_len,
    input  wire [511:0]          c0_cmd_data,
    output wire                  c0_done_valid,
    output wire                  c0_done_error,
    output wire [511:0]          c0_done_data,
    // client 1
    input  wire                  c1_cmd_valid,
    output wire                  c1_cmd_ready,
    input  wire [2:0]            c1_cmd_mode,
    input  wire [ADDR_WIDTH-1:0] c1_cmd_src,
    input  wire [ADDR_WIDTH-1:0] c1_cmd_dst,
    input  wire [31:0]           c1_cmd_len,
    input  wire [511:0]          c1_cmd_data,
    output wire                  c1_done_valid,
    output wire                  c1_done_error,
    output wire [511:0]          c1_done_data,
    // client 2
    input  wire                  c2_cmd_valid,
    output wire                  c2_cmd_ready,
    input  wire [2:0]            c2_cmd_mode,
    input  wire [ADDR_WIDTH-1:0] c2_cmd_src,
    input  wire [ADDR_WIDTH-1:0] c2_cmd_dst,
    input  wire [31:0]           c2_cmd_len,
    input  wire [511:0]          c2_cmd_data,
    output wire                  c2_done_valid,
    output wire                  c2_done_error,
    output wire [511:0]          c2_done_data,
    // client 3
    input  wire                  c3_cmd_valid,
    output wire                  c3_cmd_ready,
    input  wire [2:0]            c3_cmd_mode,
    input  wire [ADDR_WIDTH-1:0] c3_cmd_src,
    input  wire [ADDR_WIDTH-1:0] c3_cmd_dst,
    input  wire [31:0]           c3_cmd_len,
    input  wire [511:0]          c3_cmd_data,
    output wire                  c3_done_valid,
    output wire                  c3_done_error,
    output wire [511:0]          c3_done_data,

    // client 2's read stream sink and client 1's write stream source (see the header)
    input  wire                  rd2_hold,
    input  wire [7:0]            rd2_stall_rate,
    input  wire                  rd2_clear,
    input  wire [7:0]            wr1_stall_rate,
    input  wire                  wr1_restart,
    input  wire [CAP_LOG:0]      wr1_beats,

    // extra back-pressure on the master's AR and AW alone: each is held off in a cycle with
    // probability r/256 (sim_axi_ram's stall_rate stalls every channel alike)
    input  wire [7:0]            ar_throttle,
    input  wire [7:0]            aw_throttle,

    // monitors: 1 checks that every burst of client c stays in its region
    input  wire                  region_check
);

localparam K = DATA_WIDTH / 8;
localparam BL = $clog2(K);
localparam REQ = 3 + 2 * ADDR_WIDTH + 32 + 512;
localparam N = 4;
localparam BEAT_BITS = DATA_WIDTH + K + 1;      // a stream beat as stored: {tlast, tkeep, tdata}

initial begin
    if (CLIENTS != N) begin
        $display("tb_dma_engine: CLIENTS must be %0d (the harness has four clients' ports)", N);
        $finish;
    end
end

// 250 MHz: a 4 ns period, so cycle counts read straight off the simulation time.
reg clk = 1'b0;
always #2 clk = ~clk;

reg [63:0] cycle = 64'd0;
always @(posedge clk) cycle <= cycle + 64'd1;

// ---- the engine ------------------------------------------------------------------------------
wire [N-1:0] cmd_valid = {c3_cmd_valid, c2_cmd_valid, c1_cmd_valid, c0_cmd_valid};
wire [N-1:0] cmd_ready;
wire [N*REQ-1:0] cmd_data = {
    c3_cmd_data, c3_cmd_len, c3_cmd_dst, c3_cmd_src, c3_cmd_mode,
    c2_cmd_data, c2_cmd_len, c2_cmd_dst, c2_cmd_src, c2_cmd_mode,
    c1_cmd_data, c1_cmd_len, c1_cmd_dst, c1_cmd_src, c1_cmd_mode,
    c0_cmd_data, c0_cmd_len, c0_cmd_dst, c0_cmd_src, c0_cmd_mode};
wire [N-1:0]     done_valid;
wire [N-1:0]     done_error;
wire [N*512-1:0] done_data;

assign {c3_cmd_ready, c2_cmd_ready, c1_cmd_ready, c0_cmd_ready} = cmd_ready;
assign {c3_done_valid, c2_done_valid, c1_done_valid, c0_done_valid} = done_valid;
assign {c3_done_error, c2_done_error, c1_done_error, c0_done_error} = done_error;
assign c0_done_data = done_data[0 +: 512];
assign c1_done_data = done_data[512 +: 512];
assign c2_done_data = done_data[1024 +: 512];
assign c3_done_data = done_data[1536 +: 512];

wire [N*DATA_WIDTH-1:0] rd_tdata;
wire [N*K-1:0]          rd_tkeep;
wire [N-1:0]            rd_tvalid, rd_tlast;
wire [N-1:0]            wr_tready;
wire                    rd2_tready;
wire [DATA_WIDTH-1:0]   wr1_tdata;
wire [K-1:0]            wr1_tkeep;
wire                    wr1_tvalid, wr1_tlast;

wire [AXI_ID_WIDTH-1:0] m_axi_awid, m_axi_arid, m_axi_bid, m_axi_rid;
wire [ADDR_WIDTH-1:0]   m_axi_awaddr, m_axi_araddr;
wire [7:0]              m_axi_awlen, m_axi_arlen;
wire [2:0]              m_axi_awsize, m_axi_arsize, m_axi_awprot, m_axi_arprot;
wire [1:0]              m_axi_awburst, m_axi_arburst, m_axi_bresp, m_axi_rresp;
wire                    m_axi_awlock, m_axi_arlock;
wire [3:0]              m_axi_awcache, m_axi_arcache;
wire                    m_axi_awvalid, m_axi_awready, m_axi_wlast, m_axi_wvalid, m_axi_wready;
wire                    m_axi_bvalid, m_axi_bready, m_axi_arvalid, m_axi_arready;
wire                    m_axi_rlast, m_axi_rvalid, m_axi_rready;
wire [DATA_WIDTH-1:0]   m_axi_wdata, m_axi_rdata;
wire [K-1:0]            m_axi_wstrb;

dma_engine #(
    .CLIENTS(N), .DATA_WIDTH(DATA_WIDTH), .ADDR_WIDTH(ADDR_WIDTH), .AXI_ID_WIDTH(AXI_ID_WIDTH),
    .DEEP(DEEP), .DEEP_LOG(DEEP_LOG), .SHALLOW_LOG(SHALLOW_LOG),
    .MODES({{(32-N){8'h3F}}, {(N-1){8'h3F}}, MODES0})
) dut (
    .clk(clk), .rst(rst),
    .s_cmd_valid(cmd_valid), .s_cmd_ready(cmd_ready), .s_cmd_data(cmd_data),
    .m_done_valid(done_valid), .m_done_error(done_error), .m_done_data(done_data),
    .m_axis_rd_tdata(rd_tdata), .m_axis_rd_tkeep(rd_tkeep), .m_axis_rd_tvalid(rd_tvalid),
    .m_axis_rd_tready({1'b1, rd2_tready, 2'b11}), .m_axis_rd_tlast(rd_tlast),
    .s_axis_wr_tdata({{2*DATA_WIDTH{1'b0}}, wr1_tdata, {DATA_WIDTH{1'b0}}}),
    .s_axis_wr_tkeep({{2*K{1'b0}}, wr1_tkeep, {K{1'b0}}}),
    .s_axis_wr_tvalid({2'b00, wr1_tvalid, 1'b0}), .s_axis_wr_tready(wr_tready),
    .s_axis_wr_tlast({2'b00, wr1_tlast, 1'b0}),
    .m_axi_awid(m_axi_awid), .m_axi_awaddr(m_axi_awaddr), .m_axi_awlen(m_axi_awlen),
    .m_axi_awsize(m_axi_awsize), .m_axi_awburst(m_axi_awburst), .m_axi_awlock(m_axi_awlock),
    .m_axi_awcache(m_axi_awcache), .m_axi_awprot(m_axi_awprot),
    .m_axi_awvalid(m_axi_awvalid), .m_axi_awready(m_axi_awready),
    .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb), .m_axi_wlast(m_axi_wlast),
    .m_axi_wvalid(m_axi_wvalid), .m_axi_wready(m_axi_wready),
    .m_axi_bid(m_axi_bid), .m_axi_bresp(m_axi_bresp), .m_axi_bvalid(m_axi_bvalid),
    .m_axi_bready(m_axi_bready),
    .m_axi_arid(m_axi_arid), .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen),
    .m_axi_arsize(m_axi_arsize), .m_axi_arburst(m_axi_arburst), .m_axi_arlock(m_axi_arlock),
    .m_axi_arcache(m_axi_arcache), .m_axi_arprot(m_axi_arprot),
    .m_axi_arvalid(m_axi_arvalid), .m_axi_arready(m_axi_arready),
    .m_axi_rid(m_axi_rid), .m_axi_rdata(m_axi_rdata), .m_axi_rresp(m_axi_rresp),
    .m_axi_rlast(m_axi_rlast), .m_axi_rvalid(m_axi_rvalid), .m_axi_rready(m_axi_rready)
);

// the AR and AW throttles between the engine and the memory
wire ram_arvalid, ram_arready, ram_awvalid, ram_awready;
wire ar_gate, aw_gate;
assign ram_arvalid = m_axi_arvalid && !ar_gate;
assign m_axi_arready = ram_arready && !ar_gate;
assign ram_awvalid = m_axi_awvalid && !aw_gate;
assign m_axi_awready = ram_awready && !aw_gate;

sim_axi_ram #(
    .DATA_WIDTH(DATA_WIDTH), .ADDR_WIDTH(ADDR_WIDTH), .ID_WIDTH(AXI_ID_WIDTH),
    .MEM_BYTES(MEM_BYTES)
) host_mem (
    .clk(clk), .rst(rst),
    .s_axi_awid(m_axi_awid), .s_axi_awaddr(m_axi_awaddr), .s_axi_awlen(m_axi_awlen),
    .s_axi_awsize(m_axi_awsize), .s_axi_awburst(m_axi_awburst), .s_axi_awvalid(ram_awvalid),
    .s_axi_awready(ram_awready), .s_axi_wdata(m_axi_wdata), .s_axi_wstrb(m_axi_wstrb),
    .s_axi_wlast(m_axi_wlast), .s_axi_wvalid(m_axi_wvalid), .s_axi_wready(m_axi_wready),
    .s_axi_bid(m_axi_bid), .s_axi_bresp(m_axi_bresp), .s_axi_bvalid(m_axi_bvalid),
    .s_axi_bready(m_axi_bready), .s_axi_arid(m_axi_arid), .s_axi_araddr(m_axi_araddr),
    .s_axi_arlen(m_axi_arlen), .s_axi_arsize(m_axi_arsize), .s_axi_arburst(m_axi_arburst),
    .s_axi_arvalid(ram_arvalid), .s_axi_arready(ram_arready), .s_axi_rid(m_axi_rid),
    .s_axi_rdata(m_axi_rdata), .s_axi_rresp(m_axi_rresp), .s_axi_rlast(m_axi_rlast),
    .s_axi_rvalid(m_axi_rvalid), .s_axi_rready(m_axi_rready)
);

// one xorshift32 for the stream models' random gaps and the throttles, a byte each (it steps
// only while a rate is set)
reg [31:0] srng = 32'h2468_ace1;
wire [31:0] srng_a = srng ^ (srng << 13);
wire [31:0] srng_b = srng_a ^ (srng_a >> 17);
always @(posedge clk)
    if (rd2_stall_rate != 8'd0 || wr1_stall_rate != 8'd0 || ar_throttle != 8'd0
        || aw_throttle != 8'd0)
        srng <= srng_b ^ (srng_b << 5);
assign ar_gate = srng[23:16] < ar_throttle;
assign aw_gate = srng[31:24] < aw_throttle;

// ---- client 2's read stream: a capture sink --------------------------------------------------
reg [BEAT_BITS-1:0] rd2_cap [0:(1<<CAP_LOG)-1];
reg [31:0]          rd2_count = 32'd0;     // beats taken since rd2_clear (only the first 2^CAP_LOG stored)
assign rd2_tready = !rd2_hold && !(srng[7:0] < rd2_stall_rate);
wire [DATA_WIDTH-1:0] rd2_tdata = rd_tdata[2*DATA_WIDTH +: DATA_WIDTH];
wire [K-1:0]          rd2_tkeep = rd_tkeep[2*K +: K];
always @(posedge clk) begin
    if (rd2_clear) begin
        rd2_count <= 32'd0;
    end else if (rd_tvalid[2] && rd2_tready) begin
        if (rd2_count < (32'd1 << CAP_LOG))
            rd2_cap[rd2_count[CAP_LOG-1:0]] <= {rd_tlast[2], rd2_tkeep, rd2_tdata};
        rd2_count <= rd2_count + 32'd1;
    end
end

// ---- client 1's write stream: a playback source ----------------------------------------------
reg [BEAT_BITS-1:0] wr1_mem [0:(1<<CAP_LOG)-1];
reg [CAP_LOG:0]     wr1_ptr = {(CAP_LOG+1){1'b0}};
reg                 wr1_on = 1'b0;         // valid may rise this cycle (a stalled beat keeps it)
wire [BEAT_BITS-1:0] wr1_beat = wr1_mem[wr1_ptr[CAP_LOG-1:0]];
assign wr1_tvalid = wr1_on && wr1_ptr != wr1_beats;
assign {wr1_tlast, wr1_tkeep, wr1_tdata} = wr1_beat;
always @(posedge clk) begin
    if (wr1_restart) begin
        wr1_ptr <= {(CAP_LOG+1){1'b0}};
        wr1_on  <= 1'b0;
    end else begin
        if (wr1_tvalid && wr_tready[1])
            wr1_ptr <= wr1_ptr + 1'b1;
        wr1_on <= (wr1_tvalid && !wr_tready[1]) || !(srng[15:8] < wr1_stall_rate);
    end
end

// ---- monitors --------------------------------------------------------------------------------
// On the mux's client side (dut.mux.s_axi_*, the movers' own channels) and on the shared master:
//
// Round robin: for each client with an AR (AW) presented and not yet granted, the grants each
// other client got on that channel since it was presented. ar_rr_worst / aw_rr_worst: the most
// any client got while another waited (the bound is 1); ar_rr_over / aw_rr_over: grants past
// that bound; ar_waited / aw_waited: grants that went to a client while another waited (so a
// test can show the bound was put to the test).
//
// IDs: each AR (AW) the master hands over must be the burst of exactly one client, granted in
// that same cycle, with that client's index as its ID and its address and length; each R (B)
// beat must reach exactly the client its ID names, which must have a burst open; W beats must
// come from the client whose AW is oldest without WLAST. Every miss counts in id_errors. With
// region_check, a burst of client c outside [c, c+1) << REGION_LOG counts in region_errors.
// r_stalls: cycles with an R beat offered and not taken (the engine takes R whenever it comes).
// ar_shared: ARs granted while another client had a read burst open; aw_shared: AWs granted
// while another client's W burst had not ended (so a test can show IDs and W order were put to
// the test).
// ar_grants / aw_grants / r_lasts / b_count: per client, 32 bits each, client c in bits [32c +: 32].
// rst clears them all.
wire [N-1:0] m_arv = dut.mux.s_axi_arvalid;
wire [N-1:0] m_arr = dut.mux.s_axi_arready;
wire [N-1:0] m_awv = dut.mux.s_axi_awvalid;
wire [N-1:0] m_awr = dut.mux.s_axi_awready;
wire [N-1:0] m_rv  = dut.mux.s_axi_rvalid;
wire [N-1:0] m_rr  = dut.mux.s_axi_rready;
wire [N-1:0] m_wv  = dut.mux.s_axi_wvalid;
wire [N-1:0] m_wr  = dut.mux.s_axi_wready;
wire [N-1:0] m_bv  = dut.mux.s_axi_bvalid;
wire [N-1:0] m_br  = dut.mux.s_axi_bready;
wire [N*ADDR_WIDTH-1:0] m_araddr = dut.mux.s_axi_araddr;
wire [N*8-1:0]          m_arlen  = dut.mux.s_axi_arlen;
wire [N*ADDR_WIDTH-1:0] m_awaddr = dut.mux.s_axi_awaddr;
wire [N*8-1:0]          m_awlen  = dut.mux.s_axi_awlen;
wire [N-1:0] ar_g = m_arv & m_arr;    // the client granted an AR this cycle (one at most)
wire [N-1:0] aw_g = m_awv & m_awr;
wire ar_fire = m_axi_arvalid && m_axi_arready;
wire aw_fire = m_axi_awvalid && m_axi_awready;
wire r_fire  = m_axi_rvalid && m_axi_rready;
wire w_fire  = m_axi_wvalid && m_axi_wready;
wire b_fire  = m_axi_bvalid && m_axi_bready;
// a cycle with something for the monitors to look at (the others cost nothing)
wire mon_event = ar_fire || aw_fire || r_fire || w_fire || b_fire || m_axi_rvalid
                 || ar_g != {N{1'b0}} || aw_g != {N{1'b0}} || m_wv != {N{1'b0}}
                 || m_rv != {N{1'b0}} || m_bv != {N{1'b0}};

// ar_seen[c]: 2 bits per other client j (saturating at 3), the grants j got since c's AR was
// presented; cleared when c is granted (a presented burst stays presented until then)
reg [2*N-1:0] ar_seen [0:N-1];
reg [2*N-1:0] aw_seen [0:N-1];
reg [1:0]  ar_rr_worst = 2'd0, aw_rr_worst = 2'd0;
reg [31:0] ar_rr_over = 32'd0, aw_rr_over = 32'd0;
reg [31:0] ar_waited = 32'd0, aw_waited = 32'd0;
reg [63:0] ar_rr_first = 64'd0, aw_rr_first = 64'd0;   // the first grant over the bound: {cycle, 0, waiting client, granted client}
reg [31:0] id_errors = 32'd0, region_errors = 32'd0, r_stalls = 32'd0;
reg [31:0] ar_shared = 32'd0, aw_shared = 32'd0;
reg [N*32-1:0] ar_grants = {N*32{1'b0}}, aw_grants = {N*32{1'b0}};
reg [N*32-1:0] r_lasts = {N*32{1'b0}}, b_count = {N*32{1'b0}};
reg [31:0] ar_open [0:N-1];      // per client: ARs granted minus RLASTs delivered
reg [31:0] aw_open [0:N-1];      // per client: AWs granted minus Bs delivered
reg [31:0] w_open [0:N-1];       // per client: AWs granted minus WLASTs sent
reg [1:0]  w_fifo [0:31];        // clients in AW order whose W burst has not ended
reg [5:0]  w_wr = 6'd0, w_rd = 6'd0;

integer ci;
initial for (ci = 0; ci < N; ci = ci + 1) begin
    ar_seen[ci] = {2*N{1'b0}};
    aw_seen[ci] = {2*N{1'b0}};
    ar_open[ci] = 32'd0;
    aw_open[ci] = 32'd0;
    w_open[ci] = 32'd0;
end

function [1:0] idx(input [N-1:0] onehot);   // the index of a one-hot vector
    idx = onehot[3] ? 2'd3 : onehot[2] ? 2'd2 : onehot[1] ? 2'd1 : 2'd0;
endfunction

function onehot(input [N-1:0] v);
    onehot = v != {N{1'b0}} && (v & (v - 1'b1)) == {N{1'b0}};
endfunction

function [1:0] sat_inc(input [1:0] v);
    sat_inc = (v == 2'd3) ? 2'd3 : v + 2'd1;
endfunction

// a burst [addr, addr + (len+1)*K) inside region c
function in_region(input [ADDR_WIDTH-1:0] addr, input [7:0] len, input [1:0] c);
    reg [ADDR_WIDTH:0] last;
    begin
        last = {1'b0, addr} + (({{(ADDR_WIDTH-8){1'b0}}, len} + 1'b1) << BL) - 1'b1;
        in_region = (addr >> REGION_LOG) == c && (last >> REGION_LOG) == c;
    end
endfunction

// this cycle's findings, added to the registers at the end of the block
reg [31:0] n_err, n_region, n_waited_ar, n_waited_aw, n_over_ar, n_over_aw;
reg [1:0]  worst_ar, worst_aw, gj, seen;
reg        shared;
always @(posedge clk) begin
    if (rst) begin
        for (ci = 0; ci < N; ci = ci + 1) begin
            ar_seen[ci] <= {2*N{1'b0}};
            aw_seen[ci] <= {2*N{1'b0}};
            ar_open[ci] <= 32'd0;
            aw_open[ci] <= 32'd0;
            w_open[ci] <= 32'd0;
        end
        w_wr <= 6'd0;
        w_rd <= 6'd0;
        ar_rr_worst <= 2'd0;
        aw_rr_worst <= 2'd0;
        ar_rr_over <= 32'd0;
        aw_rr_over <= 32'd0;
        ar_rr_first <= 64'd0;
        aw_rr_first <= 64'd0;
        ar_waited <= 32'd0;
        aw_waited <= 32'd0;
        id_errors <= 32'd0;
        region_errors <= 32'd0;
        r_stalls <= 32'd0;
        ar_shared <= 32'd0;
        aw_shared <= 32'd0;
        ar_grants <= {N*32{1'b0}};
        aw_grants <= {N*32{1'b0}};
        r_lasts <= {N*32{1'b0}};
        b_count <= {N*32{1'b0}};
    end else if (mon_event) begin
        n_err = 32'd0;
        n_region = 32'd0;
        n_waited_ar = 32'd0;
        n_waited_aw = 32'd0;
        n_over_ar = 32'd0;
        n_over_aw = 32'd0;
        worst_ar = ar_rr_worst;
        worst_aw = aw_rr_worst;

        // AR: one client granted exactly when the master's AR is taken, with its index as the
        // ID and its address and length; every other client still waiting counts the grant
        if (ar_fire || ar_g != {N{1'b0}}) begin
            gj = idx(ar_g);
            if (!(ar_fire && onehot(ar_g) && m_axi_arid == {{(AXI_ID_WIDTH-2){1'b0}}, gj}
                  && m_axi_araddr == m_araddr[gj*ADDR_WIDTH +: ADDR_WIDTH]
                  && m_axi_arlen == m_arlen[gj*8 +: 8]))
                n_err = n_err + 32'd1;
            if (region_check && !in_region(m_axi_araddr, m_axi_arlen, m_axi_arid[1:0]))
                n_region = n_region + 32'd1;
            ar_grants[m_axi_arid[1:0]*32 +: 32] <= ar_grants[m_axi_arid[1:0]*32 +: 32] + 32'd1;
            ar_open[m_axi_arid[1:0]] <= ar_open[m_axi_arid[1:0]] + 32'd1
                                        - (r_fire && m_axi_rlast && m_axi_rid == m_axi_arid);
            shared = 1'b0;
            for (ci = 0; ci < N; ci = ci + 1)
                if (ci[1:0] != m_axi_arid[1:0] && ar_open[ci] != 32'd0)
                    shared = 1'b1;
            if (shared)
                ar_shared <= ar_shared + 32'd1;
            for (ci = 0; ci < N; ci = ci + 1) begin
                if (ar_g[ci]) begin
                    ar_seen[ci] <= {2*N{1'b0}};
                end else if (m_arv[ci]) begin
                    seen = ar_seen[ci][2*gj +: 2];
                    ar_seen[ci][2*gj +: 2] <= sat_inc(seen);
                    n_waited_ar = n_waited_ar + 32'd1;
                    if (seen != 2'd0) begin
                        if (ar_rr_over == 32'd0 && n_over_ar == 32'd0)
                            ar_rr_first <= {cycle[47:0], 12'd0, ci[1:0], gj};
                        n_over_ar = n_over_ar + 32'd1;
                    end
                    if (sat_inc(seen) > worst_ar)
                        worst_ar = sat_inc(seen);
                end
            end
        end
        // R: to the client its ID names, which has a read open; a beat offered and not taken
        // is an R stall
        if (m_axi_rvalid && !m_axi_rready)
            r_stalls <= r_stalls + 32'd1;
        if (r_fire) begin
            if (!(m_axi_rid < N && (m_rv & m_rr) == (4'b0001 << m_axi_rid[1:0])
                  && ar_open[m_axi_rid[1:0]] != 32'd0))
                n_err = n_err + 32'd1;
            if (m_axi_rlast) begin
                r_lasts[m_axi_rid[1:0]*32 +: 32] <= r_lasts[m_axi_rid[1:0]*32 +: 32] + 32'd1;
                if (!(ar_fire && m_axi_rid == m_axi_arid))
                    ar_open[m_axi_rid[1:0]] <= ar_open[m_axi_rid[1:0]] - 32'd1;
            end
        end else if ((m_rv & m_rr) != {N{1'b0}}) begin
            n_err = n_err + 32'd1;      // a client took an R beat the master did not carry
        end

        // AW: as AR, and the client joins the W order
        if (aw_fire || aw_g != {N{1'b0}}) begin
            gj = idx(aw_g);
            if (!(aw_fire && onehot(aw_g) && m_axi_awid == {{(AXI_ID_WIDTH-2){1'b0}}, gj}
                  && m_axi_awaddr == m_awaddr[gj*ADDR_WIDTH +: ADDR_WIDTH]
                  && m_axi_awlen == m_awlen[gj*8 +: 8]))
                n_err = n_err + 32'd1;
            if (region_check && !in_region(m_axi_awaddr, m_axi_awlen, m_axi_awid[1:0]))
                n_region = n_region + 32'd1;
            aw_grants[m_axi_awid[1:0]*32 +: 32] <= aw_grants[m_axi_awid[1:0]*32 +: 32] + 32'd1;
            aw_open[m_axi_awid[1:0]] <= aw_open[m_axi_awid[1:0]] + 32'd1
                                        - (b_fire && m_axi_bid == m_axi_awid);
            w_fifo[w_wr[4:0]] <= m_axi_awid[1:0];
            w_wr <= w_wr + 6'd1;
            shared = 1'b0;
            for (ci = 0; ci < N; ci = ci + 1)
                if (ci[1:0] != m_axi_awid[1:0] && w_open[ci] != 32'd0)
                    shared = 1'b1;
            if (shared)
                aw_shared <= aw_shared + 32'd1;
            for (ci = 0; ci < N; ci = ci + 1) begin
                if (aw_g[ci]) begin
                    aw_seen[ci] <= {2*N{1'b0}};
                end else if (m_awv[ci]) begin
                    seen = aw_seen[ci][2*gj +: 2];
                    aw_seen[ci][2*gj +: 2] <= sat_inc(seen);
                    n_waited_aw = n_waited_aw + 32'd1;
                    if (seen != 2'd0) begin
                        if (aw_rr_over == 32'd0 && n_over_aw == 32'd0)
                            aw_rr_first <= {cycle[47:0], 12'd0, ci[1:0], gj};
                        n_over_aw = n_over_aw + 32'd1;
                    end
                    if (sat_inc(seen) > worst_aw)
                        worst_aw = sat_inc(seen);
                end
            end
        end
        // W: from the client of the oldest AW whose burst has not ended
        for (ci = 0; ci < N; ci = ci + 1)
            w_open[ci] <= w_open[ci] + (aw_fire && m_axi_awid[1:0] == ci[1:0])
                          - (w_fire && m_axi_wlast && w_wr != w_rd && w_fifo[w_rd[4:0]] == ci[1:0]);
        if (w_fire) begin
            if (w_wr == w_rd || (m_wv & m_wr) != (4'b0001 << w_fifo[w_rd[4:0]]))
                n_err = n_err + 32'd1;
            if (m_axi_wlast)
                w_rd <= w_rd + 6'd1;
        end else if ((m_wv & m_wr) != {N{1'b0}}) begin
            n_err = n_err + 32'd1;
        end
        // B: to the client its ID names, which has a write open
        if (b_fire) begin
            if (!(m_axi_bid < N && (m_bv & m_br) == (4'b0001 << m_axi_bid[1:0])
                  && aw_open[m_axi_bid[1:0]] != 32'd0))
                n_err = n_err + 32'd1;
            b_count[m_axi_bid[1:0]*32 +: 32] <= b_count[m_axi_bid[1:0]*32 +: 32] + 32'd1;
            if (!(aw_fire && m_axi_bid == m_axi_awid))
                aw_open[m_axi_bid[1:0]] <= aw_open[m_axi_bid[1:0]] - 32'd1;
        end else if ((m_bv & m_br) != {N{1'b0}}) begin
            n_err = n_err + 32'd1;
        end

        if (n_err != 32'd0)
            id_errors <= id_errors + n_err;
        if (n_region != 32'd0)
            region_errors <= region_errors + n_region;
        if (n_waited_ar != 32'd0 || n_waited_aw != 32'd0) begin
            ar_waited   <= ar_waited + n_waited_ar;
            aw_waited   <= aw_waited + n_waited_aw;
            ar_rr_over  <= ar_rr_over + n_over_ar;
            aw_rr_over  <= aw_rr_over + n_over_aw;
            ar_rr_worst <= worst_ar;
            aw_rr_worst <= worst_aw;
        end
    end
end

// w_waits: cycles in which the W channel has a burst granted (its AW taken) but no beat
// offered while two movers or more write host memory (dma_engine's w_busy): a COPY burst then
// waits for all its data, so the shared W channel never waits on a read. rst clears it.
reg [31:0] w_waits = 32'd0;
wire [N-1:0] w_busy = dut.w_busy;
always @(posedge clk) begin
    if (rst)
        w_waits <= 32'd0;
    else if (w_wr != w_rd && !m_axi_wvalid && (w_busy & (w_busy - 1'b1)) != {N{1'b0}})
        w_waits <= w_waits + 32'd1;
end

endmodule

`resetall
