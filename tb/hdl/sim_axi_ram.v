// Host memory for the simulation harnesses: an AXI4 slave RAM in HDL, so the device's DMA runs
// without Python on every beat. The testbench reads and writes it in bulk through the back door
// (tb/host_mem.py: `mem` is an array of WORD_BYTES-byte words whatever the bus width, so one
// simulator access moves that many bytes).
//
// Up to FIFO_DEPTH bursts per direction are accepted ahead; each is answered in order, back to
// back, no earlier than `read_latency` cycles after its AR (or `write_latency` cycles after its
// last W beat for the B response). With `stall_rate` = r, each of AR/AW/W ready and R/B valid is
// held off in a cycle with probability r/256, from a seeded xorshift generator that steps in
// the cycles r is not 0. The four are registers set from parameters at time 0, which a test may
// deposit before reset.
//
// Only INCR bursts within one 4 KiB page with WLAST on the last beat are legal for this device;
// anything else counts in `protocol_errors` (the testbench checks it stays 0). A beat outside
// [0, MEM_BYTES) is answered DECERR and writes nothing; a beat whose bus word touches
// [fault_base, fault_limit) (registers, empty at time 0) is answered SLVERR and writes nothing,
// as host memory behind an IOMMU that refuses it or a bridge that fails would. A burst answers the worst of its beats
// on B; each R beat carries its own.
//
// Write guard (a fuzzer's "no stray write" invariant, checked as it happens): while
// `guard_on`, every written beat's strobed bytes must lie inside one of GUARD_RANGES ranges
// [guard_base[i], guard_limit[i]) (packed vectors, range i at bits i*ADDR_WIDTH; empty ranges
// have base = limit). A beat outside counts in `strays`; the first is kept in stray_addr (its
// first strobed byte), stray_cycle and stray_id (the AWID: the device's DMA client). The beat
// is still written: the guard watches, the fault window refuses.
`timescale 1ns / 1ps
`default_nettype none

module sim_axi_ram #(
    parameter DATA_WIDTH = 256,       // AXI data width in bits, 64..512
    parameter ADDR_WIDTH = 32,        // AXI address width
    parameter ID_WIDTH = 4,           // AXI ID width
    parameter MEM_BYTES = 1 << 24,    // memory size in bytes, a multiple of WORD_BYTES
    parameter WORD_BYTES = 512,       // storage word (the back door's unit), a power of 2 >= 64
    parameter FIFO_DEPTH = 16,        // bursts accepted ahead per direction, a power of 2
    parameter READ_LATENCY = 2,       // initial read_latency
    parameter WRITE_LATENCY = 1,      // initial write_latency
    parameter STALL_RATE = 0,         // initial stall_rate, 0..255
    parameter SEED = 32'h1234_5678,   // initial state of the stall generator, not 0
    parameter GUARD_RANGES = 32       // ranges of the write guard
) (
    input  wire                    clk,
    input  wire                    rst,

    input  wire [ID_WIDTH-1:0]     s_axi_awid,
    input  wire [ADDR_WIDTH-1:0]   s_axi_awaddr,
    input  wire [7:0]              s_axi_awlen,
    input  wire [2:0]              s_axi_awsize,
    input  wire [1:0]              s_axi_awburst,
    input  wire                    s_axi_awvalid,
    output wire                    s_axi_awready,
    input  wire [DATA_WIDTH-1:0]   s_axi_wdata,
    input  wire [DATA_WIDTH/8-1:0] s_axi_wstrb,
    input  wire                    s_axi_wlast,
    input  wire                    s_axi_wvalid,
    output wire                    s_axi_wready,
    output reg  [ID_WIDTH-1:0]     s_axi_bid = {ID_WIDTH{1'b0}},
    output reg  [1:0]              s_axi_bresp = 2'b00,
    output reg                     s_axi_bvalid = 1'b0,
    input  wire                    s_axi_bready,
    input  wire [ID_WIDTH-1:0]     s_axi_arid,
    input  wire [ADDR_WIDTH-1:0]   s_axi_araddr,
    input  wire [7:0]              s_axi_arlen,
    input  wire [2:0]              s_axi_arsize,
    input  wire [1:0]              s_axi_arburst,
    input  wire                    s_axi_arvalid,
    output wire                    s_axi_arready,
    output reg  [ID_WIDTH-1:0]     s_axi_rid = {ID_WIDTH{1'b0}},
    output reg  [DATA_WIDTH-1:0]   s_axi_rdata = {DATA_WIDTH{1'b0}},
    output reg  [1:0]              s_axi_rresp = 2'b00,
    output reg                     s_axi_rlast = 1'b0,
    output reg                     s_axi_rvalid = 1'b0,
    input  wire                    s_axi_rready
);

localparam BUS_BYTES = DATA_WIDTH / 8;
localparam BUS_SHIFT = $clog2(BUS_BYTES);
localparam WORD_BITS = 8 * WORD_BYTES;
localparam WORD_SHIFT = $clog2(WORD_BYTES);
localparam LANES = WORD_BITS / DATA_WIDTH;      // bus words per storage word
localparam LANE_BITS = LANES > 1 ? $clog2(LANES) : 1;
localparam WORDS = MEM_BYTES / WORD_BYTES;
localparam PTR = $clog2(FIFO_DEPTH);
localparam [1:0] OKAY = 2'b00, SLVERR = 2'b10, DECERR = 2'b11;

reg [WORD_BITS-1:0] mem [0:WORDS-1];
integer init_i;
initial for (init_i = 0; init_i < WORDS; init_i = init_i + 1) mem[init_i] = {WORD_BITS{1'b0}};

// run-time settings (see the header) and what the testbench reads back
reg [15:0] read_latency = READ_LATENCY;
reg [15:0] write_latency = WRITE_LATENCY;
reg [7:0]  stall_rate = STALL_RATE;
reg [31:0] rng = SEED;
reg [ADDR_WIDTH-1:0] fault_base = {ADDR_WIDTH{1'b0}};
reg [ADDR_WIDTH-1:0] fault_limit = {ADDR_WIDTH{1'b0}};
reg [31:0] faults = 32'd0;          // beats answered SLVERR
reg        guard_on = 1'b0;
reg [GUARD_RANGES*ADDR_WIDTH-1:0] guard_base = {GUARD_RANGES*ADDR_WIDTH{1'b0}};
reg [GUARD_RANGES*ADDR_WIDTH-1:0] guard_limit = {GUARD_RANGES*ADDR_WIDTH{1'b0}};
reg [31:0] strays = 32'd0;          // written beats outside the guard's ranges
/* verilator lint_off UNUSEDSIGNAL */  // the testbench reads these
reg [ADDR_WIDTH-1:0] stray_addr = {ADDR_WIDTH{1'b0}};
reg [63:0] stray_cycle = 64'd0;
reg [ID_WIDTH-1:0] stray_id = {ID_WIDTH{1'b0}};
reg [31:0] read_errors = 32'd0;       // protocol errors seen on AR
reg [31:0] write_errors = 32'd0;      // protocol errors seen on AW and W
wire [31:0] protocol_errors = read_errors + write_errors;
/* verilator lint_on UNUSEDSIGNAL */
reg [63:0] read_beats = 64'd0;
reg [63:0] write_beats = 64'd0;
reg [63:0] now = 64'd0;

// xorshift32; one byte of the state per channel decides its stall this cycle
wire [31:0] rng_a = rng ^ (rng << 13);
wire [31:0] rng_b = rng_a ^ (rng_a >> 17);
wire [31:0] rng_next = rng_b ^ (rng_b << 5);
wire stall_ar = rng[7:0] < stall_rate;
wire stall_aw = rng[15:8] < stall_rate;
wire stall_w = rng[23:16] < stall_rate;
wire stall_r = rng[31:24] < stall_rate;
wire stall_b = rng[11:4] < stall_rate;

always @(posedge clk) begin
    now <= now + 64'd1;
    if (stall_rate != 8'd0)     // (a generator at rest spares simulators its XORs every cycle)
        rng <= rng_next;
end

// the bus word a beat of a burst addresses: the first beat at the burst's address, later
// beats at the next size-aligned addresses (INCR)
function [ADDR_WIDTH-1:0] beat_addr(input [ADDR_WIDTH-1:0] addr, input [2:0] size,
                                    input [7:0] beat);
    begin
        if (beat == 8'd0)
            beat_addr = addr;
        else
            beat_addr = ((addr >> size) << size) + ({{(ADDR_WIDTH-8){1'b0}}, beat} << size);
    end
endfunction

function in_range(input [ADDR_WIDTH-1:0] addr);
    in_range = {1'b0, addr} < MEM_BYTES;
endfunction

// the answer to a beat at `addr`: OKAY, SLVERR when its bus word touches the fault window
// [base, limit), DECERR beyond memory (the window comes in as arguments, so that a continuous
// assignment of it follows the registers)
function [1:0] beat_resp(input [ADDR_WIDTH-1:0] addr, input [ADDR_WIDTH-1:0] base,
                         input [ADDR_WIDTH-1:0] limit);
    reg [ADDR_WIDTH:0] word;
    begin
        word = {1'b0, addr >> BUS_SHIFT} << BUS_SHIFT;
        beat_resp = !in_range(addr) ? DECERR :
                    (word + BUS_BYTES > {1'b0, base} && word < {1'b0, limit}) ? SLVERR : OKAY;
    end
endfunction

// AXI4 rules this device must keep: INCR, full or narrower size, no 4 KiB page crossed
function legal_burst(input [ADDR_WIDTH-1:0] addr, input [7:0] len, input [2:0] size,
                     input [1:0] burst);
    /* verilator lint_off UNUSEDSIGNAL */  // only its page bits are compared
    reg [ADDR_WIDTH:0] last;    // the burst's last beat
    /* verilator lint_on UNUSEDSIGNAL */
    begin
        last = {1'b0, (addr >> size) << size} + ({{(ADDR_WIDTH-7){1'b0}}, len} << size);
        legal_burst = burst == 2'b01 && {29'd0, size} <= BUS_SHIFT &&
                      last[ADDR_WIDTH:12] == {1'b0, addr[ADDR_WIDTH-1:12]};
    end
endfunction

// ---------------------------------------------------------------------------------------------
// Reads: AR queue, then beats out of the head burst through the R register

reg [ID_WIDTH-1:0]   ar_id [0:FIFO_DEPTH-1];
reg [ADDR_WIDTH-1:0] ar_addr [0:FIFO_DEPTH-1];
reg [7:0]            ar_len [0:FIFO_DEPTH-1];
reg [2:0]            ar_size [0:FIFO_DEPTH-1];
reg [63:0]           ar_due [0:FIFO_DEPTH-1];
reg [PTR:0]          ar_wr = 0, ar_rd = 0;
reg [7:0]            r_beat = 8'd0;     // beats of the head burst already sent

wire ar_full = (ar_wr ^ ar_rd) == (1 << PTR);
wire ar_empty = ar_wr == ar_rd;
assign s_axi_arready = !rst && !ar_full && !stall_ar;
wire [PTR-1:0] ar_head = ar_rd[PTR-1:0];
wire r_ready_for_beat = !ar_empty && now >= ar_due[ar_head] && !stall_r &&
                        (!s_axi_rvalid || s_axi_rready);
wire [ADDR_WIDTH-1:0] r_addr = beat_addr(ar_addr[ar_head], ar_size[ar_head], r_beat);
/* verilator lint_off UNUSEDSIGNAL */  // the word's bits above its lane
wire [ADDR_WIDTH-1:0] r_word = r_addr >> BUS_SHIFT;
/* verilator lint_on UNUSEDSIGNAL */
wire [LANE_BITS-1:0]  r_lane = LANES > 1 ? r_word[LANE_BITS-1:0] : {LANE_BITS{1'b0}};
wire r_last = r_beat == ar_len[ar_head];
wire [1:0] r_resp = beat_resp(r_addr, fault_base, fault_limit);

always @(posedge clk) begin
    if (rst) begin
        ar_wr <= 0;
        ar_rd <= 0;
        r_beat <= 8'd0;
        s_axi_rvalid <= 1'b0;
    end else begin
        if (s_axi_arvalid && s_axi_arready) begin
            ar_id[ar_wr[PTR-1:0]] <= s_axi_arid;
            ar_addr[ar_wr[PTR-1:0]] <= s_axi_araddr;
            ar_len[ar_wr[PTR-1:0]] <= s_axi_arlen;
            ar_size[ar_wr[PTR-1:0]] <= s_axi_arsize;
            ar_due[ar_wr[PTR-1:0]] <= now + {48'd0, read_latency};
            ar_wr <= ar_wr + 1'b1;
            if (!legal_burst(s_axi_araddr, s_axi_arlen, s_axi_arsize, s_axi_arburst))
                read_errors <= read_errors + 32'd1;
        end
        if (s_axi_rvalid && s_axi_rready)
            s_axi_rvalid <= 1'b0;
        if (r_ready_for_beat) begin
            s_axi_rvalid <= 1'b1;
            s_axi_rid <= ar_id[ar_head];
            s_axi_rlast <= r_last;
            s_axi_rresp <= r_resp;
            if (r_resp == OKAY)
                s_axi_rdata <= mem[r_addr >> WORD_SHIFT][r_lane * DATA_WIDTH +: DATA_WIDTH];
            else
                s_axi_rdata <= {DATA_WIDTH{1'b0}};
            if (r_resp == SLVERR)
                faults <= faults + 32'd1;
            read_beats <= read_beats + 64'd1;
            r_beat <= r_last ? 8'd0 : r_beat + 8'd1;
            if (r_last)
                ar_rd <= ar_rd + 1'b1;
        end
    end
end

// ---------------------------------------------------------------------------------------------
// Writes: AW queue, W beats into the head burst, then B responses through their own queue

reg [ID_WIDTH-1:0]   aw_id [0:FIFO_DEPTH-1];
reg [ADDR_WIDTH-1:0] aw_addr [0:FIFO_DEPTH-1];
reg [7:0]            aw_len [0:FIFO_DEPTH-1];
reg [2:0]            aw_size [0:FIFO_DEPTH-1];
reg [PTR:0]          aw_wr = 0, aw_rd = 0;
reg [7:0]            w_beat = 8'd0;
reg [1:0]            w_resp = OKAY;     // the worst answer to a beat of the head burst

reg [ID_WIDTH-1:0]   b_id [0:FIFO_DEPTH-1];
reg [1:0]            b_resp [0:FIFO_DEPTH-1];
reg [63:0]           b_due [0:FIFO_DEPTH-1];
reg [PTR:0]          b_wr = 0, b_rd = 0;

wire aw_full = (aw_wr ^ aw_rd) == (1 << PTR);
wire aw_empty = aw_wr == aw_rd;
wire b_full = (b_wr ^ b_rd) == (1 << PTR);
wire b_empty = b_wr == b_rd;
wire [PTR-1:0] aw_head = aw_rd[PTR-1:0];
wire [PTR-1:0] b_head = b_rd[PTR-1:0];
assign s_axi_awready = !rst && !aw_full && !stall_aw;
assign s_axi_wready = !rst && !aw_empty && !b_full && !stall_w;
wire [ADDR_WIDTH-1:0] w_addr = beat_addr(aw_addr[aw_head], aw_size[aw_head], w_beat);
/* verilator lint_off UNUSEDSIGNAL */  // the word's bits above its lane
wire [ADDR_WIDTH-1:0] w_word = w_addr >> BUS_SHIFT;
/* verilator lint_on UNUSEDSIGNAL */
wire [LANE_BITS-1:0]  w_lane = LANES > 1 ? w_word[LANE_BITS-1:0] : {LANE_BITS{1'b0}};
wire w_last = w_beat == aw_len[aw_head];
wire [1:0] w_beat_resp = beat_resp(w_addr, fault_base, fault_limit);
wire [31:0] aw_error = {31'd0, s_axi_awvalid && s_axi_awready &&
                       !legal_burst(s_axi_awaddr, s_axi_awlen, s_axi_awsize, s_axi_awburst)};
wire [31:0] w_error = {31'd0, s_axi_wvalid && s_axi_wready && s_axi_wlast != w_last};
integer byte_i;

// whether bytes [lo, hi] lie inside one range of the write guard
function guarded(input [ADDR_WIDTH-1:0] lo, input [ADDR_WIDTH-1:0] hi);
    integer i;
    begin
        guarded = 1'b0;
        for (i = 0; i < GUARD_RANGES; i = i + 1)
            if (lo >= guard_base[i*ADDR_WIDTH +: ADDR_WIDTH]
                    && hi < guard_limit[i*ADDR_WIDTH +: ADDR_WIDTH])
                guarded = 1'b1;
    end
endfunction

// the first and the last strobed byte of a beat, as offsets in its bus word
reg [ADDR_WIDTH-1:0] strobe_lo, strobe_hi;
integer strobe_i;
always @* begin
    strobe_lo = {ADDR_WIDTH{1'b0}};
    strobe_hi = {ADDR_WIDTH{1'b0}};
    for (strobe_i = BUS_BYTES - 1; strobe_i >= 0; strobe_i = strobe_i - 1)
        if (s_axi_wstrb[strobe_i])
            strobe_lo = strobe_i;
    for (strobe_i = 0; strobe_i < BUS_BYTES; strobe_i = strobe_i + 1)
        if (s_axi_wstrb[strobe_i])
            strobe_hi = strobe_i;
end
wire [ADDR_WIDTH-1:0] w_bus_word = (w_addr >> BUS_SHIFT) << BUS_SHIFT;

// DECERR over SLVERR over OKAY (the codes' order)
function [1:0] worst(input [1:0] a, input [1:0] b);
    worst = a > b ? a : b;
endfunction

always @(posedge clk) begin
    if (rst) begin
        aw_wr <= 0;
        aw_rd <= 0;
        w_beat <= 8'd0;
        w_resp <= OKAY;
        b_wr <= 0;
        b_rd <= 0;
        s_axi_bvalid <= 1'b0;
    end else begin
        write_errors <= write_errors + aw_error + w_error;
        if (s_axi_awvalid && s_axi_awready) begin
            aw_id[aw_wr[PTR-1:0]] <= s_axi_awid;
            aw_addr[aw_wr[PTR-1:0]] <= s_axi_awaddr;
            aw_len[aw_wr[PTR-1:0]] <= s_axi_awlen;
            aw_size[aw_wr[PTR-1:0]] <= s_axi_awsize;
            aw_wr <= aw_wr + 1'b1;
        end
        if (s_axi_wvalid && s_axi_wready) begin
            // only the strobed bytes, so a back-door write to other bytes of the word in the
            // same time step survives: a full beat in one write (a byte loop costs Icarus some
            // 15 times as much), a partial one byte by byte
            if (w_beat_resp == SLVERR)
                faults <= faults + 32'd1;
            if (w_beat_resp == OKAY) begin
                if (&s_axi_wstrb)
                    mem[w_addr >> WORD_SHIFT][w_lane * DATA_WIDTH +: DATA_WIDTH] <= s_axi_wdata;
                else
                    for (byte_i = 0; byte_i < BUS_BYTES; byte_i = byte_i + 1)
                        if (s_axi_wstrb[byte_i])
                            mem[w_addr >> WORD_SHIFT][(w_lane * BUS_BYTES + byte_i) * 8 +: 8]
                                <= s_axi_wdata[byte_i * 8 +: 8];
            end
            write_beats <= write_beats + 64'd1;
            if (guard_on && |s_axi_wstrb
                    && !guarded(w_bus_word + strobe_lo, w_bus_word + strobe_hi)) begin
                strays <= strays + 32'd1;
                if (strays == 32'd0) begin
                    stray_addr <= w_bus_word + strobe_lo;
                    stray_cycle <= now;
                    stray_id <= aw_id[aw_head];
                end
            end
            if (w_last) begin
                b_id[b_wr[PTR-1:0]] <= aw_id[aw_head];
                b_resp[b_wr[PTR-1:0]] <= worst(w_resp, w_beat_resp);
                b_due[b_wr[PTR-1:0]] <= now + {48'd0, write_latency};
                b_wr <= b_wr + 1'b1;
                aw_rd <= aw_rd + 1'b1;
                w_beat <= 8'd0;
                w_resp <= OKAY;
            end else begin
                w_beat <= w_beat + 8'd1;
                w_resp <= worst(w_resp, w_beat_resp);
            end
        end
        if (s_axi_bvalid && s_axi_bready)
            s_axi_bvalid <= 1'b0;
        if (!b_empty && now >= b_due[b_head] && !stall_b && (!s_axi_bvalid || s_axi_bready)) begin
            s_axi_bvalid <= 1'b1;
            s_axi_bid <= b_id[b_head];
            s_axi_bresp <= b_resp[b_head];
            b_rd <= b_rd + 1'b1;
        end
    end
end

endmodule

`resetall
