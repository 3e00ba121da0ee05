// Register slave of rdma_dev: device identity, per-port address settings, the command block,
// doorbells and the device counters, behind one AXI-Lite port. Commands and doorbells leave as
// one-cycle strobes to the blocks that own the contexts; see docs/host-interface.md.
`ifndef RDMA_RDMA_REGS_V
`define RDMA_RDMA_REGS_V
`default_nettype none

module rdma_regs #(
    parameter AXIL_ADDR_WIDTH = 16,  // register space address width
    parameter DATA_WIDTH = 256,      // DMA data width, reported in DEV_PARAMS
    parameter ADDR_WIDTH = 32,       // host address width, reported in DEV_PARAMS2
    parameter NUM_PORTS = 2,         // ports
    parameter NUM_QP = 64,           // queue pairs
    parameter NUM_CQ = 16,           // completion queues (at most 32: one EVENT bit each)
    parameter NUM_MR = 64,           // memory regions
    parameter NUM_AH = 16,           // address handles
    parameter NUM_SRQ = 16,          // shared receive queues (at most 32: one SRQ_EVENT bit each)
    parameter NUM_GIDS = 4           // GID table entries per port (1 to 4)
) (
    input  wire                        clk,
    input  wire                        rst,

    input  wire [AXIL_ADDR_WIDTH-1:0]  s_axil_awaddr,
    input  wire [2:0]                  s_axil_awprot,
    input  wire                        s_axil_awvalid,
    output wire                        s_axil_awready,
    input  wire [31:0]                 s_axil_wdata,
    input  wire [3:0]                  s_axil_wstrb,
    input  wire                        s_axil_wvalid,
    output wire                        s_axil_wready,
    output wire [1:0]                  s_axil_bresp,
    output reg                         s_axil_bvalid,
    input  wire                        s_axil_bready,
    input  wire [AXIL_ADDR_WIDTH-1:0]  s_axil_araddr,
    input  wire [2:0]                  s_axil_arprot,
    input  wire                        s_axil_arvalid,
    output wire                        s_axil_arready,
    output reg  [31:0]                 s_axil_rdata,
    output wire [1:0]                  s_axil_rresp,
    output reg                         s_axil_rvalid,
    input  wire                        s_axil_rready,

    // per-port address settings, port p in slice p
    output reg  [NUM_PORTS*16-1:0]     port_lid,
    output reg  [NUM_PORTS*3-1:0]      port_lmc,
    output reg  [NUM_PORTS*3-1:0]      port_mtu,
    output reg  [NUM_PORTS*NUM_GIDS*128-1:0] port_gids,     // port p's entry i in slice p * NUM_GIDS + i
    output reg  [NUM_PORTS*NUM_GIDS*13-1:0]  port_gid_vlans, // each entry's VLAN: [12] tagged, [11:0] ID
    output reg  [NUM_PORTS-1:0]        port_eth,       // link layer: 1 Ethernet (RoCE v2)
    output reg  [NUM_PORTS*48-1:0]     port_mac,
    output reg  [NUM_PORTS*16-1:0]     port_pkey,
    output reg                         bypass_en,      // CTRL[0]: loopback messages take the bypass
    output reg  [31:0]                 cnp_interval,   // cycles between two CNPs of one QP (0: no limit)

    // command strobe to the context owners, and their answer
    output reg                         cmd_valid,
    output reg  [7:0]                  cmd_op,
    output reg  [15:0]                 cmd_index,
    output reg  [511:0]                cmd_data,
    input  wire                        cmd_done,
    input  wire [7:0]                  cmd_result,
    input  wire                        cmd_rdata_valid,
    input  wire [511:0]                cmd_rdata,

    // doorbell strobe: DB_SQ, DB_RQ, DB_CQ_CI, DB_CQ_ARM, DB_SRQ (rdma_defs.vh)
    output reg                         db_valid,
    output reg  [2:0]                  db_type,
    output reg  [15:0]                 db_index,
    output reg  [15:0]                 db_value,
    input  wire                        db_refused,       // the last SQ/RQ/SRQ doorbell was ignored

    input  wire [NUM_CQ-1:0]           cq_event,
    output reg  [NUM_CQ-1:0]           cq_event_clear,
    input  wire [NUM_SRQ-1:0]          srq_event,
    output reg  [NUM_SRQ-1:0]          srq_event_clear,
    // port counter blocks (port_counters.v): one word read by index, loads and clears by port
    output wire [4:0]                  pc_rd_index,
    input  wire [NUM_PORTS*32-1:0]     pc_rd_data,
    output reg  [NUM_PORTS-1:0]        pc_wr_en,
    output reg  [NUM_PORTS-1:0]        pc_clear,
    output reg  [4:0]                  pc_wr_index,
    output reg  [31:0]                 pc_wr_data,

    input  wire [63:0]                 lb_msgs,
    input  wire [63:0]                 lb_bytes,
    input  wire [31:0]                 cq_overflows
);

`include "rdma_defs.vh"

localparam PORT_BITS = NUM_PORTS > 1 ? $clog2(NUM_PORTS) : 1;

localparam integer P_PORTS  = NUM_PORTS;
localparam integer P_DW8    = DATA_WIDTH / 64;
localparam integer P_LOG_QP = $clog2(NUM_QP);
localparam integer P_LOG_CQ = $clog2(NUM_CQ);
localparam integer P_LOG_MR = $clog2(NUM_MR);
localparam integer P_LOG_AH = $clog2(NUM_AH);
localparam integer P_LOG_SRQ = $clog2(NUM_SRQ);
localparam integer P_AW     = ADDR_WIDTH;
localparam integer P_GIDS   = NUM_GIDS;
// ConnectX's default least time between two CNPs of a QP, 4 us, at 250 MHz
localparam [31:0] CNP_INTERVAL_RESET = 32'd1000;

// ---- write channel: take address and data together, answer OKAY ----
wire wr_go = s_axil_awvalid && s_axil_wvalid && !s_axil_bvalid;
assign s_axil_awready = wr_go;
assign s_axil_wready  = wr_go;
assign s_axil_bresp   = 2'b00;

wire [AXIL_ADDR_WIDTH-1:0] wa = s_axil_awaddr;
wire [15:0] wa16 = {{(16 > AXIL_ADDR_WIDTH ? 16 - AXIL_ADDR_WIDTH : 0){1'b0}}, wa[AXIL_ADDR_WIDTH-1:0]};
wire [15:0] db_qpn = {3'd0, wa16[15:3]} & 16'h01FF;    // 0x1000 + 8*qpn
wire [15:0] db_cqn = {3'd0, wa16[15:3]} & 16'h01FF;    // 0x2000 + 8*cq
wire [15:0] db_srqn = {3'd0, wa16[15:3]} & 16'h01FF;   // 0x3000 + 8*srq
wire [15:0] wr_port = {10'd0, wa16[11:6]} - 16'd4;     // 0x100 + 0x40*port
wire [15:0] wr_pc_port = {12'd0, wa16[10:7]};          // 0x800 + 0x80*port: counters
wire [4:0]  wr_pc_index = wa16[6:2];
// 0xC00 + 0x80*port + 0x20*entry: GID table
wire [15:0] wr_gid = {13'd0, wa16[9:7]} * NUM_GIDS[15:0] + {14'd0, wa16[6:5]};
wire        wr_gid_ok = wa16[15:10] == 6'b000011 && {13'd0, wa16[9:7]} < NUM_PORTS
                        && {14'd0, wa16[6:5]} < NUM_GIDS && wa16[4:2] <= 3'd4;
wire [15:0] wr_port_gid = wr_port * NUM_GIDS[15:0];     // a port's entry 0 (PORT_GID0..3)
// counter words software may load (port_counters.v map); index 31 clears the port's counters
wire wr_pc_loadable = wr_pc_index <= 5'd5 || (wr_pc_index >= 5'd8 && wr_pc_index <= 5'd22);

reg         cmd_busy;
reg  [7:0]  cmd_last_result;
reg  [31:0] reg_errors;

reg         wr_error;      // the last write landed on no writable register
// REG_ERRORS counts those, and the doorbells qp_table ignored, saturating
wire [1:0]  new_errors = {1'b0, wr_error} + {1'b0, db_refused};
wire [32:0] errors_sum = {1'b0, reg_errors} + {31'd0, new_errors};

integer b;
always @(posedge clk) begin
    wr_error       <= 1'b0;
    if (wr_error || db_refused)
        reg_errors <= errors_sum[32] ? 32'hFFFFFFFF : errors_sum[31:0];
    cmd_valid      <= 1'b0;
    db_valid       <= 1'b0;
    pc_wr_en       <= {NUM_PORTS{1'b0}};
    pc_clear       <= {NUM_PORTS{1'b0}};
    cq_event_clear <= {NUM_CQ{1'b0}};
    srq_event_clear <= {NUM_SRQ{1'b0}};
    if (s_axil_bvalid && s_axil_bready)
        s_axil_bvalid <= 1'b0;

    if (wr_go) begin
        s_axil_bvalid <= 1'b1;
        if (wa16[15:12] == 4'h1 || wa16[15:12] == 4'h2 || wa16[15:12] == 4'h3) begin
            // doorbells: QPs' SQ and RQ, CQs' consumer index and arm, SRQs' producer index
            if ((wa16[15:12] == 4'h1 && db_qpn < NUM_QP) || (wa16[15:12] == 4'h2 && db_cqn < NUM_CQ) ||
                (wa16[15:12] == 4'h3 && db_srqn < NUM_SRQ && !wa16[2])) begin
                db_valid <= 1'b1;
                db_type  <= wa16[15:12] == 4'h3 ? DB_SRQ : {1'b0, wa16[13], wa16[2]};
                db_index <= wa16[15:12] == 4'h1 ? db_qpn : wa16[15:12] == 4'h2 ? db_cqn : db_srqn;
                db_value <= s_axil_wdata[15:0];
            end else begin
                wr_error <= 1'b1;
            end
        end else if (wa16[15:8] == 8'h01 || wa16[15:8] == 8'h02 || wa16[15:8] == 8'h03) begin
            // port blocks at 0x100 + 0x40 * (port - 1)
            if (wr_port < NUM_PORTS) begin
                case (wa16[5:2])
                    4'h0: port_lid[wr_port*16 +: 16] <= s_axil_wdata[15:0];
                    4'h1: port_lmc[wr_port*3 +: 3] <= s_axil_wdata[2:0];
                    4'h2: port_mtu[wr_port*3 +: 3] <= s_axil_wdata[2:0];
                    4'h3: port_pkey[wr_port*16 +: 16] <= s_axil_wdata[15:0];
                    4'h4, 4'h5, 4'h6, 4'h7:
                        port_gids[wr_port_gid*128 + (3 - {14'd0, wa16[3:2]})*32 +: 32] <= s_axil_wdata;
                    4'h8: port_eth[wr_port[PORT_BITS-1:0]] <= s_axil_wdata[0];
                    4'h9: port_mac[wr_port*48 + 32 +: 16] <= s_axil_wdata[15:0];
                    4'hA: port_mac[wr_port*48 +: 32] <= s_axil_wdata;
                    default: wr_error <= 1'b1;
                endcase
            end else begin
                wr_error <= 1'b1;
            end
        end else if (wr_gid_ok) begin
            if (wa16[4:2] == 3'd4)
                port_gid_vlans[wr_gid*13 +: 13] <= s_axil_wdata[12:0];
            else
                port_gids[wr_gid*128 + (3 - {14'd0, wa16[3:2]})*32 +: 32] <= s_axil_wdata;
        end else if (wa16[15:11] == 5'b00001) begin
            // 0x800: port counters
            if (wr_pc_port < NUM_PORTS && wr_pc_index == 5'd31) begin
                pc_clear[wr_pc_port[PORT_BITS-1:0]] <= 1'b1;
            end else if (wr_pc_port < NUM_PORTS && wr_pc_loadable) begin
                pc_wr_en[wr_pc_port[PORT_BITS-1:0]] <= 1'b1;
                pc_wr_index <= wr_pc_index;
                pc_wr_data  <= s_axil_wdata;
            end else begin
                wr_error <= 1'b1;
            end
        end else if (wa16[15:6] == 10'h010) begin
            // 0x400: command block, byte-writable
            for (b = 0; b < 4; b = b + 1)
                if (s_axil_wstrb[b])
                    cmd_data[wa16[5:2]*32 + b*8 +: 8] <= s_axil_wdata[b*8 +: 8];
        end else if (wa16 == 16'h0440) begin
            if (cmd_busy) begin
                wr_error <= 1'b1;
            end else begin
                cmd_busy  <= 1'b1;
                cmd_valid <= 1'b1;
                cmd_op    <= s_axil_wdata[7:0];
                cmd_index <= s_axil_wdata[31:16];
            end
        end else if (wa16 == 16'h0010) begin
            cq_event_clear <= s_axil_wdata[NUM_CQ-1:0];
        end else if (wa16 == 16'h0030) begin
            srq_event_clear <= s_axil_wdata[NUM_SRQ-1:0];
        end else if (wa16 == 16'h000C) begin
            bypass_en <= s_axil_wdata[0];
        end else if (wa16 == 16'h0034) begin
            cnp_interval <= s_axil_wdata;
        end else begin
            wr_error <= 1'b1;
        end
    end

    // an opcode nobody owns is answered here: bad parameter
    if (cmd_valid && (cmd_op == 8'd0 || cmd_op > CMD_LAST)) begin
        cmd_busy        <= 1'b0;
        cmd_last_result <= CR_BAD_PARAM;
    end
    if (cmd_done) begin
        cmd_busy        <= 1'b0;
        cmd_last_result <= cmd_result;
    end
    if (cmd_rdata_valid)
        cmd_data <= cmd_rdata;

    if (rst) begin
        s_axil_bvalid   <= 1'b0;
        cmd_busy        <= 1'b0;
        cmd_valid       <= 1'b0;
        cmd_op          <= 8'd0;
        cmd_index       <= 16'd0;
        cmd_data        <= 512'd0;
        cmd_last_result <= 8'd0;
        db_valid        <= 1'b0;
        db_type         <= DB_SQ;
        db_index        <= 16'd0;
        db_value        <= 16'd0;
        pc_wr_en        <= {NUM_PORTS{1'b0}};
        pc_clear        <= {NUM_PORTS{1'b0}};
        pc_wr_index     <= 5'd0;
        pc_wr_data      <= 32'd0;
        reg_errors      <= 32'd0;
        wr_error        <= 1'b0;
        port_lid        <= {NUM_PORTS*16{1'b0}};
        port_lmc        <= {NUM_PORTS*3{1'b0}};
        port_mtu        <= {NUM_PORTS{3'd5}};
        port_gids       <= {NUM_PORTS*NUM_GIDS*128{1'b0}};
        port_gid_vlans  <= {NUM_PORTS*NUM_GIDS*13{1'b0}};
        port_eth        <= {NUM_PORTS{1'b0}};
        port_mac        <= {NUM_PORTS*48{1'b0}};
        port_pkey       <= {NUM_PORTS{16'hFFFF}};
        bypass_en       <= 1'b1;
        cnp_interval    <= CNP_INTERVAL_RESET;
    end
end

// ---- read channel: one register per read, answered the next cycle ----
assign s_axil_arready = !s_axil_rvalid;
assign s_axil_rresp   = 2'b00;

wire [15:0] ra16 = {{(16 > AXIL_ADDR_WIDTH ? 16 - AXIL_ADDR_WIDTH : 0){1'b0}}, s_axil_araddr[AXIL_ADDR_WIDTH-1:0]};
wire [15:0] rd_port = {10'd0, ra16[11:6]} - 16'd4;
wire [15:0] rd_pc_port = {12'd0, ra16[10:7]};
wire [15:0] rd_gid = {13'd0, ra16[9:7]} * NUM_GIDS[15:0] + {14'd0, ra16[6:5]};
wire        rd_gid_ok = ra16[15:10] == 6'b000011 && {13'd0, ra16[9:7]} < NUM_PORTS
                        && {14'd0, ra16[6:5]} < NUM_GIDS;
wire [15:0] rd_port_gid = rd_port * NUM_GIDS[15:0];
assign pc_rd_index = ra16[6:2];

reg [31:0] rd_word;
always @* begin
    rd_word = 32'd0;
    case (ra16)
        16'h0000: rd_word = 32'h52444D41;
        16'h0004: rd_word = {P_LOG_CQ[7:0], P_LOG_QP[7:0], P_DW8[7:0], P_PORTS[7:0]};
        16'h0008: rd_word = {P_LOG_SRQ[7:0], P_AW[7:0], P_LOG_AH[7:0], P_LOG_MR[7:0]};
        16'h000C: rd_word = {31'd0, bypass_en};
        16'h0010: rd_word = {{(32-NUM_CQ){1'b0}}, cq_event};
        16'h0014: rd_word = reg_errors;
        16'h0018: rd_word = cq_overflows;
        16'h0020: rd_word = lb_msgs[31:0];
        16'h0024: rd_word = lb_msgs[63:32];
        16'h0028: rd_word = lb_bytes[31:0];
        16'h002C: rd_word = lb_bytes[63:32];
        16'h0030: rd_word = {{(32-NUM_SRQ){1'b0}}, srq_event};
        16'h0034: rd_word = cnp_interval;
        16'h0440: rd_word = 32'd0;
        16'h0444: rd_word = {16'd0, cmd_last_result, 7'd0, cmd_busy};
        default: begin
            if (ra16[15:6] == 10'h010)
                rd_word = cmd_data[ra16[5:2]*32 +: 32];
            else if (ra16[15:11] == 5'b00001 && rd_pc_port < NUM_PORTS)
                rd_word = pc_rd_data[rd_pc_port*32 +: 32];
            else if ((ra16[15:8] == 8'h01 || ra16[15:8] == 8'h02 || ra16[15:8] == 8'h03) && rd_port < NUM_PORTS)
                case (ra16[5:2])
                    4'h0: rd_word = {16'd0, port_lid[rd_port*16 +: 16]};
                    4'h1: rd_word = {29'd0, port_lmc[rd_port*3 +: 3]};
                    4'h2: rd_word = {29'd0, port_mtu[rd_port*3 +: 3]};
                    4'h3: rd_word = {16'd0, port_pkey[rd_port*16 +: 16]};
                    4'h4, 4'h5, 4'h6, 4'h7:
                        rd_word = port_gids[rd_port_gid*128 + (3 - {14'd0, ra16[3:2]})*32 +: 32];
                    4'h8: rd_word = {16'd0, P_GIDS[7:0], 7'd0, port_eth[rd_port[PORT_BITS-1:0]]};
                    4'h9: rd_word = {16'd0, port_mac[rd_port*48 + 32 +: 16]};
                    4'hA: rd_word = port_mac[rd_port*48 +: 32];
                    default: rd_word = 32'd0;
                endcase
            else if (rd_gid_ok)
                rd_word = ra16[4:2] == 3'd4 ? {19'd0, port_gid_vlans[rd_gid*13 +: 13]}
                        : ra16[4:2] < 3'd4 ? port_gids[rd_gid*128 + (3 - {14'd0, ra16[3:2]})*32 +: 32] : 32'd0;
        end
    endcase
end

always @(posedge clk) begin
    if (s_axil_rvalid && s_axil_rready)
        s_axil_rvalid <= 1'b0;
    if (s_axil_arvalid && s_axil_arready) begin
        s_axil_rvalid <= 1'b1;
        s_axil_rdata  <= rd_word;
    end
    if (rst) begin
        s_axil_rvalid <= 1'b0;
        s_axil_rdata  <= 32'd0;
    end
end

// AXI protection attributes carry nothing this device uses.
wire unused_prot = ^{s_axil_awprot, s_axil_arprot, wa[1:0]};

endmodule

`resetall
`endif
