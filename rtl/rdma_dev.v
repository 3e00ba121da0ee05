// rdma_dev: an RDMA device with a loopback bypass. Host software drives it through the AXI-Lite
// registers (docs/host-interface.md); queues, data and completions live in host memory behind
// the AXI4 DMA master. Messages addressed to the sending port itself take the loopback bypass
// through the DMA mover; everything else is packetized onto the port's link, and packets
// arriving on a link are checked and delivered to the same responder (docs/packet-path.md).

// Every block, so that this file alone (with -I rtl) elaborates the device in any tool; each
// block file has an include guard, so reading it on its own as well is harmless.
`include "host/ah_table.v"
`include "host/cq_engine.v"
`include "host/ctx_cmd.v"
`include "host/prot_check.v"
`include "host/qp_table.v"
`include "host/rdma_regs.v"
`include "host/srq_table.v"
`include "host/sq_sched.v"
`include "transport/bypass_dma.v"
`include "transport/completer.v"
`include "transport/loopback_match.v"
`include "transport/msg_arb.v"
`include "transport/wqe_prefetch.v"
`include "transport/requester.v"
`include "transport/responder.v"
`include "transport/rx_engine.v"
`include "dma/dma_axi_burst.v"
`include "dma/dma_axi_mux.v"
`include "dma/dma_engine.v"
`include "dma/dma_fifo.v"
`include "dma/dma_mover.v"
`include "dma/dma_rd_engine.v"
`include "dma/dma_realign.v"
`include "dma/dma_sgl.v"
`include "dma/dma_wr_engine.v"
`include "port/axis_frame_mux.v"
`include "port/crc_stream.v"
`include "port/depacketizer.v"
`include "port/ib_icrc.v"
`include "port/packetizer.v"
`include "port/pkt_append.v"
`include "port/pkt_header.v"
`include "port/port_counters.v"
`include "port/port_tx.v"
`include "req_arb.v"
`include "xor_ram.v"

`default_nettype none

module rdma_dev #(
    parameter DATA_WIDTH = 256,      // DMA and link data width in bits: 64, 128, 256 or 512
    parameter ADDR_WIDTH = 32,       // host address width
    parameter AXI_ID_WIDTH = 4,      // AXI ID width of the DMA master
    parameter AXIL_ADDR_WIDTH = 16,  // register space address width
    parameter NUM_PORTS = 2,         // ports
    parameter NUM_QP = 64,           // queue pairs, a power of two (QPN 0 and 1 reserved)
    parameter NUM_CQ = 16,           // completion queues, a power of two, at most 32
    parameter NUM_MR = 64,           // memory regions, a power of two
    parameter NUM_AH = 16,           // address handles, a power of two
    parameter NUM_SRQ = 16,          // shared receive queues, a power of two, at most 32
    parameter CLOCK_MHZ = 250,       // device clock: the RC transport timers count its cycles
    parameter TIMER_SHIFT = 0,       // RC timers run 2^TIMER_SHIFT times fast (a time scale for short simulations)
    parameter SQ_WIN_LOG = 4,        // send window: 2^SQ_WIN_LOG WQEs per QP issued and not yet completed
    parameter BYPASS_MOVERS = 4,     // bypass payload moves running at once, a DMA mover each
    parameter NUM_GIDS = 4           // GID table entries per port (1 to 4)
) (
    input  wire                             clk,
    input  wire                             rst,

    input  wire [AXIL_ADDR_WIDTH-1:0]       s_axil_awaddr,
    input  wire [2:0]                       s_axil_awprot,
    input  wire                             s_axil_awvalid,
    output wire                             s_axil_awready,
    input  wire [31:0]                      s_axil_wdata,
    input  wire [3:0]                       s_axil_wstrb,
    input  wire                             s_axil_wvalid,
    output wire                             s_axil_wready,
    output wire [1:0]                       s_axil_bresp,
    output wire                             s_axil_bvalid,
    input  wire                             s_axil_bready,
    input  wire [AXIL_ADDR_WIDTH-1:0]       s_axil_araddr,
    input  wire [2:0]                       s_axil_arprot,
    input  wire                             s_axil_arvalid,
    output wire                             s_axil_arready,
    output wire [31:0]                      s_axil_rdata,
    output wire [1:0]                       s_axil_rresp,
    output wire                             s_axil_rvalid,
    input  wire                             s_axil_rready,

    output wire [AXI_ID_WIDTH-1:0]          m_axi_awid,
    output wire [ADDR_WIDTH-1:0]            m_axi_awaddr,
    output wire [7:0]                       m_axi_awlen,
    output wire [2:0]                       m_axi_awsize,
    output wire [1:0]                       m_axi_awburst,
    output wire                             m_axi_awlock,
    output wire [3:0]                       m_axi_awcache,
    output wire [2:0]                       m_axi_awprot,
    output wire                             m_axi_awvalid,
    input  wire                             m_axi_awready,
    output wire [DATA_WIDTH-1:0]            m_axi_wdata,
    output wire [DATA_WIDTH/8-1:0]          m_axi_wstrb,
    output wire                             m_axi_wlast,
    output wire                             m_axi_wvalid,
    input  wire                             m_axi_wready,
    input  wire [AXI_ID_WIDTH-1:0]          m_axi_bid,
    input  wire [1:0]                       m_axi_bresp,
    input  wire                             m_axi_bvalid,
    output wire                             m_axi_bready,
    output wire [AXI_ID_WIDTH-1:0]          m_axi_arid,
    output wire [ADDR_WIDTH-1:0]            m_axi_araddr,
    output wire [7:0]                       m_axi_arlen,
    output wire [2:0]                       m_axi_arsize,
    output wire [1:0]                       m_axi_arburst,
    output wire                             m_axi_arlock,
    output wire [3:0]                       m_axi_arcache,
    output wire [2:0]                       m_axi_arprot,
    output wire                             m_axi_arvalid,
    input  wire                             m_axi_arready,
    input  wire [AXI_ID_WIDTH-1:0]          m_axi_rid,
    input  wire [DATA_WIDTH-1:0]            m_axi_rdata,
    input  wire [1:0]                       m_axi_rresp,
    input  wire                             m_axi_rlast,
    input  wire                             m_axi_rvalid,
    output wire                             m_axi_rready,

    // per-port link streams, port p in slice p
    output reg  [NUM_PORTS*DATA_WIDTH-1:0]  m_axis_tx_tdata,
    output reg  [NUM_PORTS*DATA_WIDTH/8-1:0] m_axis_tx_tkeep,
    output wire [NUM_PORTS-1:0]             m_axis_tx_tvalid,
    input  wire [NUM_PORTS-1:0]             m_axis_tx_tready,
    output wire [NUM_PORTS-1:0]             m_axis_tx_tlast,
    output wire [NUM_PORTS-1:0]             m_axis_tx_tuser,
    input  wire [NUM_PORTS*DATA_WIDTH-1:0]  s_axis_rx_tdata,
    input  wire [NUM_PORTS*DATA_WIDTH/8-1:0] s_axis_rx_tkeep,
    input  wire [NUM_PORTS-1:0]             s_axis_rx_tvalid,
    output wire [NUM_PORTS-1:0]             s_axis_rx_tready,
    input  wire [NUM_PORTS-1:0]             s_axis_rx_tlast,
    input  wire [NUM_PORTS-1:0]             s_axis_rx_tuser,

    output wire                             irq            // a completion event is pending (EVENT != 0)
);

localparam QPN_BITS  = $clog2(NUM_QP);
localparam CQN_BITS  = $clog2(NUM_CQ);
localparam SRQN_BITS = NUM_SRQ > 1 ? $clog2(NUM_SRQ) : 1;
localparam PORT_BITS = NUM_PORTS > 1 ? $clog2(NUM_PORTS) : 1;
localparam GID_BITS = NUM_GIDS > 1 ? $clog2(NUM_GIDS) : 1;
localparam DMA_REQ_WIDTH = 3 + 2*ADDR_WIDTH + 32 + 512;   // {data, len, dst, src, mode}
// CQE, responder, rx engine, the ports' two each, the bypass's movers, WQE fetch
localparam DMA_CLIENTS = 4 + 2*NUM_PORTS + BYPASS_MOVERS;
localparam DMA_BYPASS = 3 + 2*NUM_PORTS;
localparam DMA_WQE = 3 + 2*NUM_PORTS + BYPASS_MOVERS;
// dma_mover's MODES: a bit per mode (rdma_defs.vh's DMA_*)
localparam [7:0] M_COPY = 8'h01, M_STORE = 8'h02, M_LOAD = 8'h04, M_READ_STREAM = 8'h08,
                 M_WRITE_STREAM = 8'h10, M_ATOMIC = 8'h20;
// dma_engine's MODES, client by client (the clients' order is the DMA engine's, below)
function [32*8-1:0] dma_modes(input unused);
    integer k;
    begin
        dma_modes = {32{8'h00}};
        dma_modes[0 +: 8] = M_STORE;
        dma_modes[8 +: 8] = M_STORE | M_LOAD;
        dma_modes[16 +: 8] = M_WRITE_STREAM | M_ATOMIC | M_STORE;
        for (k = 0; k < 2*NUM_PORTS; k = k + 1)
            dma_modes[(3+k)*8 +: 8] = M_READ_STREAM;
        for (k = 0; k < BYPASS_MOVERS; k = k + 1)
            dma_modes[(DMA_BYPASS+k)*8 +: 8] = M_COPY | M_ATOMIC | M_STORE;
        dma_modes[DMA_WQE*8 +: 8] = M_READ_STREAM;
    end
endfunction
localparam MSG_WIDTH = 32 + 128 + 128 + 8 + 20 + 8 + 1 + 4 + 16 + 16 + 1 + 32 + 32 + 32 + 64 +
                       32 + PORT_BITS + 24 + 32 + 3 + 8 + 2;   // rx_engine.v's responder message
localparam PROT_RSP_WIDTH = ADDR_WIDTH + 1;                // {host address, allowed}
localparam CQE_REQ_WIDTH = 273;                            // {raise_solicited, cqn, cqe}
localparam CQE_STORES_LOG = 2;                             // CQE stores in flight: 2^this

`include "pkt_fields.vh"
`include "rdma_defs.vh"

// ---------------------------------------------------------------- registers
wire [NUM_PORTS*16-1:0]  port_lid;
wire [NUM_PORTS*3-1:0]   port_lmc;
wire [NUM_PORTS*3-1:0]   port_mtu;
wire [NUM_PORTS*NUM_GIDS*128-1:0] port_gids;
wire [NUM_PORTS*NUM_GIDS*13-1:0]  port_gid_vlans;
wire [NUM_PORTS-1:0]     port_eth;
wire [NUM_PORTS*48-1:0]  port_mac;
wire [NUM_PORTS*16-1:0]  port_pkey;
wire         bypass_en;
wire [31:0]  cnp_interval;
wire         cmd_valid;
wire [7:0]   cmd_op;
wire [15:0]  cmd_index;
wire [511:0] cmd_data;
wire         db_valid;
wire [2:0]   db_type;
wire [15:0]  db_index;
wire [15:0]  db_value;
wire         db_refused, qp_db_refused, srq_db_refused;
wire [NUM_CQ-1:0] cq_event;
wire [NUM_CQ-1:0] cq_event_clear;
wire [NUM_SRQ-1:0] srq_event, srq_event_clear;
wire [4:0]   pc_rd_index;
wire [NUM_PORTS*32-1:0] pc_rd_data;
wire [NUM_PORTS-1:0] pc_wr_en, pc_clear;
wire [4:0]   pc_wr_index;
wire [31:0]  pc_wr_data;
wire [63:0]  lb_msgs;
wire [63:0]  lb_bytes;
wire [31:0]  cq_overflows;

// each context owner answers only its own commands, so their answers can be merged
wire         qp_cmd_done, ah_cmd_done, mr_cmd_done, cq_cmd_done, srq_cmd_done;
wire [7:0]   qp_cmd_result, ah_cmd_result, mr_cmd_result, cq_cmd_result, srq_cmd_result;
wire         qp_cmd_rdata_valid, cq_cmd_rdata_valid, srq_cmd_rdata_valid;
wire [511:0] qp_cmd_rdata, cq_cmd_rdata, srq_cmd_rdata;
wire         cmd_done = qp_cmd_done | ah_cmd_done | mr_cmd_done | cq_cmd_done | srq_cmd_done;
wire [7:0]   cmd_result = qp_cmd_done ? qp_cmd_result : ah_cmd_done ? ah_cmd_result :
                          mr_cmd_done ? mr_cmd_result : srq_cmd_done ? srq_cmd_result : cq_cmd_result;
assign db_refused = qp_db_refused | srq_db_refused;   // a doorbell has one owner

rdma_regs #(
    .AXIL_ADDR_WIDTH(AXIL_ADDR_WIDTH), .DATA_WIDTH(DATA_WIDTH), .ADDR_WIDTH(ADDR_WIDTH),
    .NUM_PORTS(NUM_PORTS), .NUM_QP(NUM_QP), .NUM_CQ(NUM_CQ), .NUM_MR(NUM_MR), .NUM_AH(NUM_AH),
    .NUM_SRQ(NUM_SRQ), .NUM_GIDS(NUM_GIDS)
) regs (
    .clk(clk), .rst(rst),
    .s_axil_awaddr(s_axil_awaddr), .s_axil_awprot(s_axil_awprot),
    .s_axil_awvalid(s_axil_awvalid), .s_axil_awready(s_axil_awready),
    .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb),
    .s_axil_wvalid(s_axil_wvalid), .s_axil_wready(s_axil_wready),
    .s_axil_bresp(s_axil_bresp), .s_axil_bvalid(s_axil_bvalid), .s_axil_bready(s_axil_bready),
    .s_axil_araddr(s_axil_araddr), .s_axil_arprot(s_axil_arprot),
    .s_axil_arvalid(s_axil_arvalid), .s_axil_arready(s_axil_arready),
    .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
    .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready),
    .port_lid(port_lid), .port_lmc(port_lmc), .port_mtu(port_mtu), .port_gids(port_gids),
    .port_gid_vlans(port_gid_vlans), .port_eth(port_eth), .port_mac(port_mac),
    .port_pkey(port_pkey), .bypass_en(bypass_en), .cnp_interval(cnp_interval),
    .cmd_valid(cmd_valid), .cmd_op(cmd_op), .cmd_index(cmd_index), .cmd_data(cmd_data),
    .cmd_done(cmd_done), .cmd_result(cmd_result),
    .cmd_rdata_valid(qp_cmd_rdata_valid | cq_cmd_rdata_valid | srq_cmd_rdata_valid),
    .cmd_rdata(qp_cmd_rdata_valid ? qp_cmd_rdata : srq_cmd_rdata_valid ? srq_cmd_rdata : cq_cmd_rdata),
    .db_valid(db_valid), .db_type(db_type), .db_index(db_index), .db_value(db_value),
    .db_refused(db_refused), .cq_event(cq_event), .cq_event_clear(cq_event_clear),
    .srq_event(srq_event), .srq_event_clear(srq_event_clear),
    .pc_rd_index(pc_rd_index), .pc_rd_data(pc_rd_data), .pc_wr_en(pc_wr_en), .pc_clear(pc_clear),
    .pc_wr_index(pc_wr_index), .pc_wr_data(pc_wr_data),
    .lb_msgs(lb_msgs), .lb_bytes(lb_bytes), .cq_overflows(cq_overflows)
);

assign irq = |cq_event || |srq_event;

// ---------------------------------------------------------------- contexts
wire [NUM_QP-1:0]     qp_work;
wire [QPN_BITS-1:0]   a_qpn;
wire [2:0]            a_type, a_state;
wire [15:0]           a_pd;
wire [CQN_BITS-1:0]   a_scq;
wire [PORT_BITS-1:0]  a_port;
wire [31:0]           a_qkey;
wire [31:0]           a_dest_qpn;
wire [15:0]           a_dlid;
wire [3:0]            a_sl;
wire [6:0]            a_spb;
wire                  a_global;
wire [7:0]            a_hop, a_tclass;
wire [19:0]           a_flow;
wire [127:0]          a_dgid;
wire [GID_BITS-1:0]   a_sgid;
wire [47:0]           a_dmac;
wire [ADDR_WIDTH-1:0] a_sq_base;
wire [3:0]            a_sq_log;
wire [2:0]            a_sq_sge;
wire [15:0]           a_sq_pi, a_sq_ci, a_sq_ni;
wire [7:0]            a_max_rd;
wire [2:0]            a_rnr_left, a_rnr_retry, a_retry_cnt;
wire                  a_rnr_waiting;
wire [4:0]            a_timeout;
wire [47:0]           a_rnr_cycles;
wire                  a_sq_issue, a_rnr_wait;
wire [2:0]            a_mtu;
wire [3:0]            a_rate;
wire [23:0]           a_sq_psn, a_psn_value;
wire                  a_set_psn;
wire [QPN_BITS-1:0]   b_qpn;
wire                  b_valid;
wire [2:0]            b_type, b_state;
wire [15:0]           b_pd;
wire [CQN_BITS-1:0]   b_rcq;
wire [PORT_BITS-1:0]  b_port;
wire [3:0]            b_access;
wire [31:0]           b_qkey;
wire [4:0]            b_min_rnr;
wire [ADDR_WIDTH-1:0] b_rq_base;
wire [3:0]            b_rq_log;
wire [2:0]            b_rq_sge;
wire [15:0]           b_rq_pi, b_rq_ci;
wire                  b_rq_advance, b_set_err, b_srq, b_rq_take;
wire [SRQN_BITS-1:0]  b_srqn;
wire [NUM_SRQ-1:0]    srq_exists;
wire                  srq_valid;
wire [15:0]           srq_pd, srq_pi, srq_ci;
wire [ADDR_WIDTH-1:0] srq_base;
wire [3:0]            srq_log;
wire [2:0]            srq_sge;
wire [QPN_BITS-1:0]   c_qpn;
wire                  c_valid;
wire [2:0]            c_type, c_state, c_mtu;
wire [PORT_BITS-1:0]  c_port;
wire [31:0]           c_dest_qpn, c_qkey;
wire [23:0]           c_epsn, c_msn, c_epsn_value;
wire                  c_set_epsn, c_msn_inc;
wire [QPN_BITS-1:0]   d_qpn, e_qpn;
wire [2:0]            d_state, d_rnr_left, d_rnr_retry;
wire [15:0]           d_sq_ni, d_ni_value, e_sq_ci;
wire [23:0]           d_psn_value;
wire                  d_rewind, d_set_err, d_rnr_wait;
wire [47:0]           d_rnr_cycles;
wire [CQN_BITS-1:0]   e_scq;
wire                  e_sq_advance, e_rnr_clear;
wire [NUM_QP-1:0]     sq_hold, sq_busy;
wire [NUM_QP-1:0]     going_back;         // QPs with a go-back due: the ports cut their messages
wire                  qp_restart;
wire [QPN_BITS-1:0]   qp_restart_qpn;

// the device's time, for the RC transport timers
reg [47:0] now;
always @(posedge clk) now <= rst ? 48'd0 : now + 48'd1;

qp_table #(
    .NUM_QP(NUM_QP), .NUM_CQ(NUM_CQ), .NUM_SRQ(NUM_SRQ), .NUM_PORTS(NUM_PORTS),
    .ADDR_WIDTH(ADDR_WIDTH), .SQ_WIN_LOG(SQ_WIN_LOG), .NUM_GIDS(NUM_GIDS)
) qps (
    .clk(clk), .rst(rst), .now(now),
    .cmd_valid(cmd_valid), .cmd_op(cmd_op), .cmd_index(cmd_index), .cmd_data(cmd_data),
    .cmd_done(qp_cmd_done), .cmd_result(qp_cmd_result),
    .cmd_rdata_valid(qp_cmd_rdata_valid), .cmd_rdata(qp_cmd_rdata),
    .db_valid(db_valid), .db_type(db_type), .db_index(db_index), .db_value(db_value),
    .db_refused(qp_db_refused), .srq_exists(srq_exists), .work(qp_work), .sq_hold(sq_hold), .sq_busy(sq_busy),
    .restart(qp_restart), .restart_qpn(qp_restart_qpn),
    .a_qpn(a_qpn), .a_type(a_type), .a_state(a_state), .a_pd(a_pd),
    .a_scq(a_scq), .a_port(a_port), .a_qkey(a_qkey), .a_dest_qpn(a_dest_qpn),
    .a_dlid(a_dlid), .a_sl(a_sl), .a_src_path_bits(a_spb), .a_is_global(a_global),
    .a_hop_limit(a_hop), .a_tclass(a_tclass), .a_flow_label(a_flow), .a_dgid(a_dgid),
    .a_sgid_index(a_sgid), .a_dmac(a_dmac),
    .a_sq_base(a_sq_base), .a_sq_log(a_sq_log), .a_sq_sge(a_sq_sge), .a_sq_pi(a_sq_pi), .a_sq_ci(a_sq_ci),
    .a_sq_ni(a_sq_ni), .a_max_rd(a_max_rd),
    .a_rnr_left(a_rnr_left), .a_rnr_retry(a_rnr_retry), .a_retry_cnt(a_retry_cnt),
    .a_rnr_waiting(a_rnr_waiting),
    .a_timeout(a_timeout), .a_sq_issue(a_sq_issue),
    .a_rnr_wait(a_rnr_wait), .a_rnr_cycles(a_rnr_cycles),
    .a_mtu(a_mtu), .a_rate(a_rate), .a_sq_psn(a_sq_psn), .a_set_psn(a_set_psn),
    .a_psn_value(a_psn_value),
    .b_qpn(b_qpn), .b_valid(b_valid), .b_type(b_type), .b_state(b_state), .b_pd(b_pd),
    .b_rcq(b_rcq), .b_port(b_port), .b_access(b_access), .b_qkey(b_qkey),
    .b_min_rnr_timer(b_min_rnr),
    .b_rq_base(b_rq_base), .b_rq_log(b_rq_log), .b_rq_sge(b_rq_sge), .b_rq_pi(b_rq_pi), .b_rq_ci(b_rq_ci),
    .b_srq(b_srq), .b_srqn(b_srqn), .b_rq_take(b_rq_take),
    .b_rq_advance(b_rq_advance), .b_set_err(b_set_err),
    .c_qpn(c_qpn), .c_valid(c_valid), .c_type(c_type), .c_state(c_state), .c_port(c_port),
    .c_dest_qpn(c_dest_qpn), .c_qkey(c_qkey), .c_mtu(c_mtu), .c_epsn(c_epsn), .c_msn(c_msn),
    .c_set_epsn(c_set_epsn), .c_epsn_value(c_epsn_value), .c_msn_inc(c_msn_inc),
    .d_qpn(d_qpn), .d_state(d_state), .d_sq_ni(d_sq_ni), .d_rnr_left(d_rnr_left),
    .d_rnr_retry(d_rnr_retry), .d_rewind(d_rewind), .d_ni_value(d_ni_value),
    .d_psn_value(d_psn_value), .d_set_err(d_set_err), .d_rnr_wait(d_rnr_wait),
    .d_rnr_cycles(d_rnr_cycles),
    .e_qpn(e_qpn), .e_sq_ci(e_sq_ci), .e_scq(e_scq), .e_sq_advance(e_sq_advance),
    .e_rnr_clear(e_rnr_clear)
);

wire [31:0]           ah_num;
wire                  ah_valid;
wire [15:0]           ah_pd;
wire [PORT_BITS-1:0]  ah_port;
wire [15:0]           ah_dlid;
wire [3:0]            ah_sl;
wire [6:0]            ah_spb;
wire                  ah_global;
wire [7:0]            ah_hop, ah_tclass;
wire [19:0]           ah_flow;
wire [127:0]          ah_dgid;
wire [3:0]            ah_rate;
wire [GID_BITS-1:0]   ah_sgid;
wire [47:0]           ah_dmac;

ah_table #(.NUM_AH(NUM_AH), .NUM_PORTS(NUM_PORTS), .NUM_GIDS(NUM_GIDS)) ahs (
    .clk(clk), .rst(rst),
    .cmd_valid(cmd_valid), .cmd_op(cmd_op), .cmd_index(cmd_index), .cmd_data(cmd_data),
    .cmd_done(ah_cmd_done), .cmd_result(ah_cmd_result),
    .ah(ah_num), .ah_valid(ah_valid), .ah_pd(ah_pd), .ah_port(ah_port), .ah_dlid(ah_dlid),
    .ah_sl(ah_sl), .ah_src_path_bits(ah_spb), .ah_is_global(ah_global), .ah_hop_limit(ah_hop),
    .ah_tclass(ah_tclass), .ah_flow_label(ah_flow), .ah_dgid(ah_dgid), .ah_rate(ah_rate),
    .ah_sgid_index(ah_sgid), .ah_dmac(ah_dmac)
);

// ---------------------------------------------------------------- shared services
// The arbiters take their clients' requests as one flat vector. Each client drives a net of its
// own and the vector is assembled in one place: a vector driven in slices by several instances
// is rebuilt bit by bit in Icarus whenever any slice changes.

// protection checker: responder (0) and requester (1); the responder first, as it finishes
// what is under way (a START the requester waits for) where the requester starts the next WQE
wire [1:0]                  prot_c_valid, prot_c_ready, prot_c_rsp;
wire [PROT_REQ_WIDTH-1:0]   req_prot_data, resp_prot_data;
wire [2*PROT_REQ_WIDTH-1:0] prot_c_data = {req_prot_data, resp_prot_data};
wire [PROT_RSP_WIDTH-1:0]   prot_rsp_data;
wire                        prot_valid, prot_ready, prot_rsp_valid;
wire [PROT_REQ_WIDTH-1:0]   prot_data;
wire [PROT_RSP_WIDTH-1:0]   prot_rsp;

req_arb #(.CLIENTS(2), .REQ_WIDTH(PROT_REQ_WIDTH), .RSP_WIDTH(PROT_RSP_WIDTH)) prot_arb (
    .clk(clk), .rst(rst),
    .s_req_valid(prot_c_valid), .s_req_ready(prot_c_ready), .s_req_data(prot_c_data),
    .s_rsp_valid(prot_c_rsp), .s_rsp_data(prot_rsp_data),
    .m_req_valid(prot_valid), .m_req_ready(prot_ready), .m_req_data(prot_data),
    .m_rsp_valid(prot_rsp_valid), .m_rsp_data(prot_rsp)
);

prot_check #(.NUM_MR(NUM_MR), .ADDR_WIDTH(ADDR_WIDTH)) prot (
    .clk(clk), .rst(rst),
    .cmd_valid(cmd_valid), .cmd_op(cmd_op), .cmd_index(cmd_index), .cmd_data(cmd_data),
    .cmd_done(mr_cmd_done), .cmd_result(mr_cmd_result),
    .s_req_valid(prot_valid), .s_req_ready(prot_ready), .s_req_data(prot_data),
    .m_rsp_valid(prot_rsp_valid), .m_rsp_data(prot_rsp)
);

// CQE writer: completer (0) and responder (1)
wire [1:0]                  cqe_c_valid, cqe_c_ready, cqe_c_rsp;
wire [CQE_REQ_WIDTH-1:0]    cmp_cqe_data, resp_cqe_data;
wire [2*CQE_REQ_WIDTH-1:0]  cqe_c_data = {resp_cqe_data, cmp_cqe_data};
wire                        cqe_valid, cqe_ready, cqe_rsp_valid;
wire [CQE_REQ_WIDTH-1:0]    cqe_data;
wire                        cqe_rsp_unused;

req_arb #(.CLIENTS(2), .REQ_WIDTH(CQE_REQ_WIDTH), .RSP_WIDTH(1)) cqe_arb (
    .clk(clk), .rst(rst),
    .s_req_valid(cqe_c_valid), .s_req_ready(cqe_c_ready), .s_req_data(cqe_c_data),
    .s_rsp_valid(cqe_c_rsp), .s_rsp_data(cqe_rsp_unused),
    .m_req_valid(cqe_valid), .m_req_ready(cqe_ready), .m_req_data(cqe_data),
    .m_rsp_valid(cqe_rsp_valid), .m_rsp_data(1'b0)
);

// DMA engine: a mover per client, CQE writer (0), responder (1), receive engine (2), port p's
// transmit side (3 + 2p and 4 + 2p, its chunks in turn), the bypass's movers
// (3 + 2 NUM_PORTS + k), the requester's WQE read-ahead (3 + 2 NUM_PORTS + BYPASS_MOVERS); the
// ports', the bypass's and the read-ahead's movers have the deep read buffers (their moves
// are long and must hide the host's read latency); the receive engine's, the ports' and the
// bypass's commands follow SGE lists, the others' never do (no list splitter for them). Each
// mover is built for its client's modes: the CQE writer STOREs; the responder STOREs (a GRH)
// and LOADs (receive WQEs); the receive engine streams payload to memory, runs ATOMICs and
// STOREs their original values; the ports and the read-ahead READ_STREAM; the bypass COPYs,
// runs ATOMICs and STOREs their original values.
wire [DMA_CLIENTS-1:0]      dma_c_valid, dma_c_ready, dma_c_done;
wire [DMA_REQ_WIDTH-1:0]    dma_c_req [0:DMA_CLIENTS-1];
reg  [DMA_CLIENTS*DMA_REQ_WIDTH-1:0] dma_c_data;
integer c;
always @*
    for (c = 0; c < DMA_CLIENTS; c = c + 1)
        dma_c_data[c*DMA_REQ_WIDTH +: DMA_REQ_WIDTH] = dma_c_req[c];
// Not every client uses every answer and stream: the CQE writer, the responder and the ports
// take no error bit, only the requester, responder and receive engine load data, only the
// ports and the read-ahead read a stream (READ_STREAM: packet payload, WQEs) and only the
// receive engine writes one
// (WRITE_STREAM: packet payload to host memory). The bits left over are not gathered into
// an `unused` reduction: they change every beat, and a simulator would recompute it each time.
/* verilator lint_off UNUSEDSIGNAL */
wire [DMA_CLIENTS-1:0]              dma_c_error;
wire [DMA_CLIENTS*512-1:0]          dma_c_rdata;
wire [DMA_CLIENTS*DATA_WIDTH-1:0]   dma_rd_tdata;
wire [DMA_CLIENTS*DATA_WIDTH/8-1:0] dma_rd_tkeep;
wire [DMA_CLIENTS-1:0]              dma_rd_tvalid, dma_rd_tlast, dma_rd_tuser, dma_wr_tready;
/* verilator lint_on UNUSEDSIGNAL */
wire [2*NUM_PORTS-1:0]              dma_rd_port_ready;
wire [DMA_CLIENTS-1:0]              dma_rd_tready = {{(BYPASS_MOVERS+1){1'b1}}, dma_rd_port_ready, 3'b111};
wire [DATA_WIDTH-1:0]   dma_wr_tdata;
wire [DATA_WIDTH/8-1:0] dma_wr_tkeep;
wire                    dma_wr_tvalid, dma_wr_tlast;

dma_engine #(
    .CLIENTS(DMA_CLIENTS), .DATA_WIDTH(DATA_WIDTH), .ADDR_WIDTH(ADDR_WIDTH),
    .AXI_ID_WIDTH(AXI_ID_WIDTH),
    .DEEP(((32'd1 << (2*NUM_PORTS + BYPASS_MOVERS + 1)) - 32'd1) << 3),
    .LISTS((((32'd1 << (2*NUM_PORTS + BYPASS_MOVERS)) - 32'd1) << 3) | 32'd4),
    .STORES_LOG(CQE_STORES_LOG), .MODES(dma_modes(1'b0))
) dma (
    .clk(clk), .rst(rst),
    .s_cmd_valid(dma_c_valid), .s_cmd_ready(dma_c_ready), .s_cmd_data(dma_c_data),
    .m_done_valid(dma_c_done), .m_done_error(dma_c_error), .m_done_data(dma_c_rdata),
    .m_axis_rd_tdata(dma_rd_tdata), .m_axis_rd_tkeep(dma_rd_tkeep),
    .m_axis_rd_tvalid(dma_rd_tvalid), .m_axis_rd_tready(dma_rd_tready),
    .m_axis_rd_tlast(dma_rd_tlast), .m_axis_rd_tuser(dma_rd_tuser),
    .s_axis_wr_tdata({{(DMA_CLIENTS-3)*DATA_WIDTH{1'b0}}, dma_wr_tdata, {2*DATA_WIDTH{1'b0}}}),
    .s_axis_wr_tkeep({{(DMA_CLIENTS-3)*DATA_WIDTH/8{1'b0}}, dma_wr_tkeep, {2*DATA_WIDTH/8{1'b0}}}),
    .s_axis_wr_tvalid({{(DMA_CLIENTS-3){1'b0}}, dma_wr_tvalid, 2'b00}),
    .s_axis_wr_tready(dma_wr_tready),
    .s_axis_wr_tlast({{(DMA_CLIENTS-3){1'b0}}, dma_wr_tlast, 2'b00}),
    .m_axi_awid(m_axi_awid), .m_axi_awaddr(m_axi_awaddr), .m_axi_awlen(m_axi_awlen),
    .m_axi_awsize(m_axi_awsize), .m_axi_awburst(m_axi_awburst), .m_axi_awlock(m_axi_awlock),
    .m_axi_awcache(m_axi_awcache), .m_axi_awprot(m_axi_awprot),
    .m_axi_awvalid(m_axi_awvalid), .m_axi_awready(m_axi_awready),
    .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb), .m_axi_wlast(m_axi_wlast),
    .m_axi_wvalid(m_axi_wvalid), .m_axi_wready(m_axi_wready),
    .m_axi_bid(m_axi_bid), .m_axi_bresp(m_axi_bresp),
    .m_axi_bvalid(m_axi_bvalid), .m_axi_bready(m_axi_bready),
    .m_axi_arid(m_axi_arid), .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen),
    .m_axi_arsize(m_axi_arsize), .m_axi_arburst(m_axi_arburst), .m_axi_arlock(m_axi_arlock),
    .m_axi_arcache(m_axi_arcache), .m_axi_arprot(m_axi_arprot),
    .m_axi_arvalid(m_axi_arvalid), .m_axi_arready(m_axi_arready),
    .m_axi_rid(m_axi_rid), .m_axi_rdata(m_axi_rdata), .m_axi_rresp(m_axi_rresp),
    .m_axi_rlast(m_axi_rlast), .m_axi_rvalid(m_axi_rvalid), .m_axi_rready(m_axi_rready)
);

srq_table #(.NUM_SRQ(NUM_SRQ), .ADDR_WIDTH(ADDR_WIDTH)) srqs (
    .clk(clk), .rst(rst),
    .cmd_valid(cmd_valid), .cmd_op(cmd_op), .cmd_index(cmd_index), .cmd_data(cmd_data),
    .cmd_done(srq_cmd_done), .cmd_result(srq_cmd_result),
    .cmd_rdata_valid(srq_cmd_rdata_valid), .cmd_rdata(srq_cmd_rdata),
    .db_valid(db_valid), .db_type(db_type), .db_index(db_index), .db_value(db_value),
    .db_refused(srq_db_refused), .exists(srq_exists),
    .r_srqn(b_srqn), .r_valid(srq_valid), .r_pd(srq_pd), .r_base(srq_base), .r_log(srq_log),
    .r_sge(srq_sge), .r_pi(srq_pi), .r_ci(srq_ci), .r_take(b_rq_take),
    .limit_event(srq_event), .limit_event_clear(srq_event_clear)
);

cq_engine #(.NUM_CQ(NUM_CQ), .ADDR_WIDTH(ADDR_WIDTH), .STORES_LOG(CQE_STORES_LOG)) cqs (
    .clk(clk), .rst(rst),
    .cmd_valid(cmd_valid), .cmd_op(cmd_op), .cmd_index(cmd_index), .cmd_data(cmd_data),
    .cmd_done(cq_cmd_done), .cmd_result(cq_cmd_result),
    .cmd_rdata_valid(cq_cmd_rdata_valid), .cmd_rdata(cq_cmd_rdata),
    .db_valid(db_valid), .db_type(db_type), .db_index(db_index), .db_value(db_value),
    .s_req_valid(cqe_valid), .s_req_ready(cqe_ready), .s_req_data(cqe_data),
    .m_rsp_valid(cqe_rsp_valid),
    .m_dma_valid(dma_c_valid[0]), .m_dma_ready(dma_c_ready[0]),
    .m_dma_data(dma_c_req[0]), .s_dma_done(dma_c_done[0]),
    .cq_event(cq_event), .cq_event_clear(cq_event_clear), .overflows(cq_overflows)
);

// ---------------------------------------------------------------- the engine
wire                  sched_valid, sched_take;
wire [QPN_BITS-1:0]   sched_qpn;

sq_sched #(.NUM_QP(NUM_QP)) sched (
    .clk(clk), .rst(rst), .work(qp_work), .valid(sched_valid), .qpn(sched_qpn), .take(sched_take)
);

// the responder's two message sources: the requester's bypass (0) and the receive engine (1)
wire [1:0]              msg_c_valid, msg_c_ready, msg_c_hold, msg_c_answer;
wire [MSG_WIDTH-1:0]    rx_msg_data;
wire                    msg_valid, msg_ready;
wire [MSG_WIDTH-1:0]    msg;
wire                    rsp_valid, rsp_place, rsp_rnr;
wire [4:0]              rsp_rnr_timer;
wire [7:0]              rsp_status;
wire [ADDR_WIDTH-1:0]   rsp_addr;
wire [255:0]            rsp_sgl;

wire [1:0]            req_msg_kind;
wire [7:0]            req_msg_op;
wire [2:0]            req_msg_type;
wire [31:0]           req_msg_dest_qpn;
wire [23:0]           req_msg_src_qpn;
wire [PORT_BITS-1:0]  req_msg_port;
wire [31:0]           req_msg_len, req_msg_rkey, req_msg_imm, req_msg_qkey, req_msg_offset;
wire [63:0]           req_msg_raddr;
wire                  req_msg_solicited, req_msg_global;
wire [15:0]           req_msg_slid, req_msg_dlid;
wire [3:0]            req_msg_sl;
wire [7:0]            req_msg_tclass, req_msg_hop;
wire [19:0]           req_msg_flow;
wire [127:0]          req_msg_sgid, req_msg_dgid;
wire [2*MSG_WIDTH-1:0] msg_c_data = {rx_msg_data, req_msg_offset, req_msg_dgid, req_msg_sgid,
    req_msg_hop, req_msg_flow, req_msg_tclass, req_msg_global, req_msg_sl, req_msg_dlid,
    req_msg_slid, req_msg_solicited, req_msg_qkey, req_msg_imm, req_msg_rkey, req_msg_raddr,
    req_msg_len, req_msg_port, req_msg_src_qpn, req_msg_dest_qpn, req_msg_type, req_msg_op,
    req_msg_kind};

msg_arb #(.REQ_WIDTH(MSG_WIDTH)) msgs (
    .clk(clk), .rst(rst),
    .s_valid(msg_c_valid), .s_ready(msg_c_ready), .s_data(msg_c_data), .s_hold(msg_c_hold),
    .s_answer(msg_c_answer),
    .m_valid(msg_valid), .m_ready(msg_ready), .m_data(msg), .m_answer(rsp_valid)
);

// the requester's messages to the ports' packetizers; its records of issued WQEs to the
// completer; the completer's view of a QP for the receive engine, and what arrived
wire                   tx_req_valid;
wire [NUM_PORTS-1:0]   tx_req_ready, tx_req_done, tx_req_error;
wire [TXD_WIDTH-1:0]   tx_req_desc;
wire [PORT_BITS-1:0]   tx_req_port;
wire                   rec_valid, rec_tx, rec_read, rec_atomic, rec_signaled;
wire [15:0]            rec_idx;
wire [1:0]             rec_kind;
wire [7:0]             rec_status, rec_wc_op;
wire [23:0]            rec_first, rec_end;
wire [ADDR_WIDTH-1:0]  rec_addr;
wire [2:0]             rec_mtu;
wire [63:0]            rec_wr_id;
wire [31:0]            rec_len;
wire                   iss_busy, iss_hold, iss_kick;
wire                   win_una_valid, win_busy, win_wired, bp_done, bp_error;
wire [QPN_BITS-1:0]    bp_qpn;
wire [15:0]            bp_idx;
// the bypass's movers: their commands and the atomics' original values
wire [BYPASS_MOVERS*DMA_REQ_WIDTH-1:0] bp_dma_data;
wire [BYPASS_MOVERS*64-1:0]            bp_dma_rdata;
genvar bm;
generate
    for (bm = 0; bm < BYPASS_MOVERS; bm = bm + 1) begin : bypass_mover
        assign dma_c_req[DMA_BYPASS + bm] = bp_dma_data[bm*DMA_REQ_WIDTH +: DMA_REQ_WIDTH];
        assign bp_dma_rdata[bm*64 +: 64] = dma_c_rdata[(DMA_BYPASS + bm)*512 +: 64];
    end
endgenerate
wire [23:0]            win_una;
wire [7:0]             win_reads;
wire                   rsp_active, rsp_wait, rsp_read, rsp_atomic;
wire [23:0]            rsp_una;
wire [ADDR_WIDTH-1:0]  rsp_addr_read;
wire                   ack_valid;
wire [QPN_BITS-1:0]    ack_qpn;
wire [1:0]             ack_kind;
wire                   ack_error;
wire [7:0]             ack_syndrome;
wire [23:0]            ack_psn;

requester #(
    .NUM_QP(NUM_QP), .NUM_CQ(NUM_CQ), .NUM_PORTS(NUM_PORTS), .ADDR_WIDTH(ADDR_WIDTH),
    .DATA_WIDTH(DATA_WIDTH), .SQ_WIN_LOG(SQ_WIN_LOG), .BYPASS_MOVERS(BYPASS_MOVERS),
    .CLOCK_MHZ(CLOCK_MHZ), .TIMER_SHIFT(TIMER_SHIFT), .NUM_GIDS(NUM_GIDS)
) req (
    .clk(clk), .rst(rst),
    .sched_valid(sched_valid), .sched_qpn(sched_qpn), .sched_take(sched_take),
    .port_lid(port_lid), .port_lmc(port_lmc), .port_mtu(port_mtu), .port_gids(port_gids),
    .port_gid_vlans(port_gid_vlans), .port_eth(port_eth),
    .port_pkey(port_pkey), .bypass_en(bypass_en),
    .qp_qpn(a_qpn), .qp_type(a_type), .qp_state(a_state), .qp_pd(a_pd),
    .qp_scq(a_scq), .qp_port(a_port), .qp_qkey(a_qkey), .qp_dest_qpn(a_dest_qpn),
    .qp_dlid(a_dlid), .qp_sl(a_sl), .qp_src_path_bits(a_spb), .qp_is_global(a_global),
    .qp_hop_limit(a_hop), .qp_tclass(a_tclass), .qp_flow_label(a_flow), .qp_dgid(a_dgid),
    .qp_sgid_index(a_sgid), .qp_dmac(a_dmac),
    .qp_sq_base(a_sq_base), .qp_sq_log(a_sq_log), .qp_sq_sge(a_sq_sge), .qp_sq_pi(a_sq_pi), .qp_sq_ci(a_sq_ci),
    .qp_sq_ni(a_sq_ni), .qp_max_rd(a_max_rd),
    .qp_rnr_left(a_rnr_left), .qp_rnr_retry(a_rnr_retry), .qp_rnr_waiting(a_rnr_waiting),
    .qp_sq_issue(a_sq_issue),
    .qp_rnr_wait(a_rnr_wait), .qp_rnr_cycles(a_rnr_cycles),
    .qp_mtu(a_mtu), .qp_rate(a_rate), .qp_sq_psn(a_sq_psn), .qp_set_psn(a_set_psn),
    .qp_psn_value(a_psn_value),
    .ah_num(ah_num), .ah_valid(ah_valid), .ah_pd(ah_pd), .ah_port(ah_port), .ah_dlid(ah_dlid),
    .ah_sl(ah_sl), .ah_src_path_bits(ah_spb), .ah_is_global(ah_global), .ah_hop_limit(ah_hop),
    .ah_tclass(ah_tclass), .ah_flow_label(ah_flow), .ah_dgid(ah_dgid), .ah_rate(ah_rate),
    .ah_sgid_index(ah_sgid), .ah_dmac(ah_dmac),
    .m_msg_valid(msg_c_valid[0]), .m_msg_ready(msg_c_ready[0]), .m_msg_kind(req_msg_kind),
    .m_msg_op(req_msg_op), .m_msg_type(req_msg_type), .m_msg_dest_qpn(req_msg_dest_qpn),
    .m_msg_src_qpn(req_msg_src_qpn), .m_msg_port(req_msg_port), .m_msg_len(req_msg_len),
    .m_msg_raddr(req_msg_raddr), .m_msg_rkey(req_msg_rkey), .m_msg_imm(req_msg_imm),
    .m_msg_qkey(req_msg_qkey), .m_msg_solicited(req_msg_solicited),
    .m_msg_slid(req_msg_slid), .m_msg_dlid(req_msg_dlid), .m_msg_sl(req_msg_sl),
    .m_msg_is_global(req_msg_global), .m_msg_tclass(req_msg_tclass),
    .m_msg_flow_label(req_msg_flow), .m_msg_hop_limit(req_msg_hop),
    .m_msg_sgid(req_msg_sgid), .m_msg_dgid(req_msg_dgid), .m_msg_offset(req_msg_offset),
    .m_msg_hold(msg_c_hold[0]),
    .s_rsp_valid(msg_c_answer[0]), .s_rsp_status(rsp_status), .s_rsp_place(rsp_place),
    .s_rsp_rnr(rsp_rnr), .s_rsp_rnr_timer(rsp_rnr_timer), .s_rsp_addr(rsp_addr), .s_rsp_sgl(rsp_sgl),
    .m_tx_valid(tx_req_valid), .m_tx_ready(tx_req_ready[tx_req_port]), .m_tx_desc(tx_req_desc),
    .m_tx_port(tx_req_port),
    .rec_valid(rec_valid), .rec_idx(rec_idx), .rec_kind(rec_kind), .rec_tx(rec_tx),
    .rec_status(rec_status), .rec_read(rec_read), .rec_atomic(rec_atomic),
    .rec_first(rec_first), .rec_end(rec_end), .rec_addr(rec_addr),
    .rec_mtu(rec_mtu), .rec_wr_id(rec_wr_id), .rec_wc_op(rec_wc_op), .rec_len(rec_len),
    .rec_signaled(rec_signaled), .iss_busy(iss_busy), .iss_hold(iss_hold), .iss_kick(iss_kick),
    .win_held(sq_hold[a_qpn]), .win_busy(win_busy), .win_wired(win_wired),
    .win_una_valid(win_una_valid),
    .win_una(win_una), .win_reads(win_reads),
    .m_prot_valid(prot_c_valid[1]), .m_prot_ready(prot_c_ready[1]),
    .m_prot_data(req_prot_data),
    .s_prot_valid(prot_c_rsp[1]), .s_prot_data(prot_rsp_data),
    .m_dma_valid(dma_c_valid[DMA_BYPASS +: BYPASS_MOVERS]),
    .m_dma_ready(dma_c_ready[DMA_BYPASS +: BYPASS_MOVERS]), .m_dma_data(bp_dma_data),
    .s_dma_done(dma_c_done[DMA_BYPASS +: BYPASS_MOVERS]),
    .s_dma_error(dma_c_error[DMA_BYPASS +: BYPASS_MOVERS]), .s_dma_rdata(bp_dma_rdata),
    .bp_done(bp_done), .bp_error(bp_error), .bp_qpn(bp_qpn), .bp_idx(bp_idx),
    .m_wqe_dma_valid(dma_c_valid[DMA_WQE]), .m_wqe_dma_ready(dma_c_ready[DMA_WQE]),
    .m_wqe_dma_data(dma_c_req[DMA_WQE]),
    .s_wqe_dma_done(dma_c_done[DMA_WQE]), .s_wqe_dma_error(dma_c_error[DMA_WQE]),
    .s_wqe_axis_tdata(dma_rd_tdata[DMA_WQE*DATA_WIDTH +: DATA_WIDTH]),
    .s_wqe_axis_tvalid(dma_rd_tvalid[DMA_WQE]),
    .s_wqe_axis_tuser(dma_rd_tuser[DMA_WQE]),
    .lb_msgs(lb_msgs), .lb_bytes(lb_bytes)
);

completer #(
    .NUM_QP(NUM_QP), .NUM_CQ(NUM_CQ), .NUM_PORTS(NUM_PORTS), .ADDR_WIDTH(ADDR_WIDTH),
    .SQ_WIN_LOG(SQ_WIN_LOG), .CLOCK_MHZ(CLOCK_MHZ), .TIMER_SHIFT(TIMER_SHIFT)
) cmp (
    .clk(clk), .rst(rst), .now(now),
    .restart(qp_restart), .restart_qpn(qp_restart_qpn),
    .rec_valid(rec_valid), .rec_qpn(a_qpn), .rec_idx(rec_idx), .rec_kind(rec_kind),
    .rec_status(rec_status), .rec_port(a_port), .rec_tx(rec_tx), .rec_read(rec_read),
    .rec_atomic(rec_atomic), .rec_first(rec_first), .rec_end(rec_end), .rec_addr(rec_addr),
    .rec_mtu(rec_mtu), .rec_timeout(a_timeout),
    .rec_retry_cnt(a_retry_cnt), .rec_wr_id(rec_wr_id), .rec_wc_op(rec_wc_op),
    .rec_len(rec_len), .rec_signaled(rec_signaled),
    .iss_busy(iss_busy), .iss_qpn(a_qpn), .iss_hold(iss_hold), .iss_kick(iss_kick),
    .iss_una_valid(win_una_valid), .iss_una(win_una), .iss_reads(win_reads),
    .iss_busy_qp(win_busy), .iss_wired_qp(win_wired), .hold(sq_hold), .busy(sq_busy),
    .going_back(going_back),
    .tx_done(tx_req_done), .tx_error(tx_req_error), .bp_done(bp_done), .bp_error(bp_error), .bp_qpn(bp_qpn),
    .bp_idx(bp_idx),
    .rsp_qpn(c_qpn), .rsp_active(rsp_active), .rsp_wait(rsp_wait), .rsp_una(rsp_una),
    .rsp_read(rsp_read), .rsp_atomic(rsp_atomic), .rsp_addr(rsp_addr_read),
    .s_ack_valid(ack_valid), .s_ack_qpn(ack_qpn), .s_ack_kind(ack_kind),
    .s_ack_error(ack_error), .s_ack_syndrome(ack_syndrome), .s_ack_psn(ack_psn),
    .d_qpn(d_qpn), .d_state(d_state), .d_sq_ni(d_sq_ni), .d_rnr_left(d_rnr_left),
    .d_rnr_retry(d_rnr_retry), .d_rewind(d_rewind), .d_ni_value(d_ni_value),
    .d_psn_value(d_psn_value), .d_set_err(d_set_err), .d_rnr_wait(d_rnr_wait),
    .d_rnr_cycles(d_rnr_cycles),
    .e_qpn(e_qpn), .e_sq_ci(e_sq_ci), .e_scq(e_scq), .e_sq_advance(e_sq_advance),
    .e_rnr_clear(e_rnr_clear),
    .m_cqe_valid(cqe_c_valid[0]), .m_cqe_ready(cqe_c_ready[0]),
    .m_cqe_data(cmp_cqe_data), .s_cqe_done(cqe_c_rsp[0])
);

responder #(
    .NUM_QP(NUM_QP), .NUM_CQ(NUM_CQ), .NUM_PORTS(NUM_PORTS), .ADDR_WIDTH(ADDR_WIDTH)
) resp (
    .clk(clk), .rst(rst),
    .s_msg_valid(msg_valid), .s_msg_ready(msg_ready),
    .s_msg_kind(msg[0 +: 2]), .s_msg_op(msg[2 +: 8]), .s_msg_type(msg[10 +: 3]),
    .s_msg_dest_qpn(msg[13 +: 32]), .s_msg_src_qpn(msg[45 +: 24]),
    .s_msg_port(msg[69 +: PORT_BITS]), .s_msg_len(msg[69+PORT_BITS +: 32]),
    .s_msg_raddr(msg[101+PORT_BITS +: 64]), .s_msg_rkey(msg[165+PORT_BITS +: 32]),
    .s_msg_imm(msg[197+PORT_BITS +: 32]), .s_msg_qkey(msg[229+PORT_BITS +: 32]),
    .s_msg_solicited(msg[261+PORT_BITS]), .s_msg_slid(msg[262+PORT_BITS +: 16]),
    .s_msg_dlid(msg[278+PORT_BITS +: 16]), .s_msg_sl(msg[294+PORT_BITS +: 4]),
    .s_msg_is_global(msg[298+PORT_BITS]), .s_msg_tclass(msg[299+PORT_BITS +: 8]),
    .s_msg_flow_label(msg[307+PORT_BITS +: 20]), .s_msg_hop_limit(msg[327+PORT_BITS +: 8]),
    .s_msg_sgid(msg[335+PORT_BITS +: 128]), .s_msg_dgid(msg[463+PORT_BITS +: 128]),
    .s_msg_offset(msg[591+PORT_BITS +: 32]),
    .m_rsp_valid(rsp_valid), .m_rsp_status(rsp_status), .m_rsp_place(rsp_place),
    .m_rsp_rnr(rsp_rnr), .m_rsp_rnr_timer(rsp_rnr_timer), .m_rsp_addr(rsp_addr), .m_rsp_sgl(rsp_sgl),
    .port_lmc(port_lmc), .port_eth(port_eth),
    .qp_qpn(b_qpn), .qp_valid(b_valid), .qp_type(b_type), .qp_state(b_state), .qp_pd(b_pd),
    .qp_rcq(b_rcq), .qp_port(b_port), .qp_access(b_access), .qp_qkey(b_qkey),
    .qp_min_rnr_timer(b_min_rnr),
    .qp_rq_base(b_rq_base), .qp_rq_log(b_rq_log), .qp_rq_sge(b_rq_sge), .qp_rq_pi(b_rq_pi), .qp_rq_ci(b_rq_ci),
    .qp_rq_advance(b_rq_advance), .qp_set_err(b_set_err),
    .qp_srq(b_srq), .qp_rq_take(b_rq_take),
    .srq_valid(srq_valid), .srq_pd(srq_pd), .srq_base(srq_base), .srq_log(srq_log),
    .srq_sge(srq_sge), .srq_pi(srq_pi), .srq_ci(srq_ci),
    .m_prot_valid(prot_c_valid[0]), .m_prot_ready(prot_c_ready[0]),
    .m_prot_data(resp_prot_data),
    .s_prot_valid(prot_c_rsp[0]), .s_prot_data(prot_rsp_data),
    .m_dma_valid(dma_c_valid[1]), .m_dma_ready(dma_c_ready[1]),
    .m_dma_data(dma_c_req[1]),
    .s_dma_done(dma_c_done[1]), .s_dma_rdata(dma_c_rdata[512 +: 512]),
    .m_cqe_valid(cqe_c_valid[1]), .m_cqe_ready(cqe_c_ready[1]),
    .m_cqe_data(resp_cqe_data), .s_cqe_done(cqe_c_rsp[1])
);

// ---------------------------------------------------------------- ports
wire [NUM_PORTS-1:0]              hdr_valid, hdr_ready, pl_tvalid, pl_tready, pl_tlast, pl_drop;
wire [NUM_PORTS*RXH_WIDTH-1:0]    hdr_data;
// the ports' payload streams to the receive engine and their TX links: one net per port,
// gathered into the flat vectors (as the arbiters' requests above)
wire [DATA_WIDTH-1:0]             pl_tdata_p [0:NUM_PORTS-1];
wire [DATA_WIDTH/8-1:0]           pl_tkeep_p [0:NUM_PORTS-1];
reg  [NUM_PORTS*DATA_WIDTH-1:0]   pl_tdata;
reg  [NUM_PORTS*DATA_WIDTH/8-1:0] pl_tkeep;
wire [DATA_WIDTH-1:0]             tx_tdata_p [0:NUM_PORTS-1];
wire [DATA_WIDTH/8-1:0]           tx_tkeep_p [0:NUM_PORTS-1];
integer pl, tx;
always @*
    for (pl = 0; pl < NUM_PORTS; pl = pl + 1) begin
        pl_tdata[pl*DATA_WIDTH +: DATA_WIDTH] = pl_tdata_p[pl];
        pl_tkeep[pl*DATA_WIDTH/8 +: DATA_WIDTH/8] = pl_tkeep_p[pl];
    end
always @*
    for (tx = 0; tx < NUM_PORTS; tx = tx + 1) begin
        m_axis_tx_tdata[tx*DATA_WIDTH +: DATA_WIDTH] = tx_tdata_p[tx];
        m_axis_tx_tkeep[tx*DATA_WIDTH/8 +: DATA_WIDTH/8] = tx_tkeep_p[tx];
    end
wire [NUM_PORTS-1:0]              tx_rsp_valid, tx_rsp_ready, rcv_drop, rsp_discard;
wire [NUM_PORTS-1:0]              cnp_sent, cnp_handled;
wire [TXD_WIDTH-1:0]              tx_rsp_desc;

rx_engine #(
    .NUM_PORTS(NUM_PORTS), .NUM_QP(NUM_QP), .ADDR_WIDTH(ADDR_WIDTH), .DATA_WIDTH(DATA_WIDTH)
) rx (
    .clk(clk), .rst(rst),
    .s_hdr_valid(hdr_valid), .s_hdr_ready(hdr_ready), .s_hdr_data(hdr_data),
    .s_axis_pl_tdata(pl_tdata), .s_axis_pl_tkeep(pl_tkeep), .s_axis_pl_tvalid(pl_tvalid),
    .s_axis_pl_tready(pl_tready), .s_axis_pl_tlast(pl_tlast), .pl_drop(pl_drop),
    .port_mtu(port_mtu), .port_pkey(port_pkey), .port_eth(port_eth), .cnp_interval(cnp_interval),
    .qp_qpn(c_qpn), .qp_valid(c_valid), .qp_type(c_type), .qp_state(c_state), .qp_port(c_port),
    .qp_dest_qpn(c_dest_qpn), .qp_qkey(c_qkey), .qp_mtu(c_mtu), .qp_epsn(c_epsn),
    .qp_msn(c_msn), .qp_set_epsn(c_set_epsn), .qp_epsn_value(c_epsn_value),
    .qp_msn_inc(c_msn_inc), .qp_restart(qp_restart), .qp_restart_qpn(qp_restart_qpn),
    .m_msg_valid(msg_c_valid[1]), .m_msg_ready(msg_c_ready[1]),
    .m_msg_data(rx_msg_data), .m_msg_hold(msg_c_hold[1]),
    .s_rsp_valid(msg_c_answer[1]), .s_rsp_status(rsp_status), .s_rsp_place(rsp_place),
    .s_rsp_rnr(rsp_rnr), .s_rsp_rnr_timer(rsp_rnr_timer), .s_rsp_addr(rsp_addr), .s_rsp_sgl(rsp_sgl),
    .m_dma_valid(dma_c_valid[2]), .m_dma_ready(dma_c_ready[2]),
    .m_dma_data(dma_c_req[2]), .s_dma_done(dma_c_done[2]),
    .s_dma_error(dma_c_error[2]), .s_dma_rdata(dma_c_rdata[2*512 +: 512]),
    .m_axis_wr_tdata(dma_wr_tdata), .m_axis_wr_tkeep(dma_wr_tkeep),
    .m_axis_wr_tvalid(dma_wr_tvalid), .m_axis_wr_tready(dma_wr_tready[2]),
    .m_axis_wr_tlast(dma_wr_tlast),
    .m_tx_valid(tx_rsp_valid), .m_tx_ready(tx_rsp_ready), .m_tx_desc(tx_rsp_desc),
    .req_active(rsp_active), .req_wait(rsp_wait), .req_una(rsp_una), .req_read(rsp_read),
    .req_atomic(rsp_atomic),
    .req_addr(rsp_addr_read), .m_ack_valid(ack_valid), .m_ack_qpn(ack_qpn), .m_ack_kind(ack_kind),
    .m_ack_error(ack_error), .m_ack_syndrome(ack_syndrome), .m_ack_psn(ack_psn),
    .rcv_drop(rcv_drop), .xmit_discard(rsp_discard),
    .cnp_sent(cnp_sent), .cnp_handled(cnp_handled)
);

// Each port: transmit side, the receive mux of the physical link and the internal loopback,
// the depacketizer, and the PMA counters. Only physical-link packets are counted, so loopback
// messages move no counter whether they take the bypass or the internal port loopback.
genvar p;
generate
    for (p = 0; p < NUM_PORTS; p = p + 1) begin : port
        wire [DATA_WIDTH-1:0]   loop_tdata;
        wire [DATA_WIDTH/8-1:0] loop_tkeep;
        wire                    loop_tvalid, loop_tready, loop_tlast, loop_tuser;
        wire                    xmit_pkt;
        wire [10:0]             xmit_pktlen;
        wire [2*DMA_REQ_WIDTH-1:0] port_dma_data;
        assign dma_c_req[3+2*p]   = port_dma_data[0 +: DMA_REQ_WIDTH];
        assign dma_c_req[3+2*p+1] = port_dma_data[DMA_REQ_WIDTH +: DMA_REQ_WIDTH];

        port_tx #(.DATA_WIDTH(DATA_WIDTH), .ADDR_WIDTH(ADDR_WIDTH), .NUM_QP(NUM_QP)) tx (
            .clk(clk), .rst(rst),
            .eth(port_eth[p]), .port_mac(port_mac[p*48 +: 48]),
            .s_req_valid(tx_req_valid && tx_req_port == p), .s_req_ready(tx_req_ready[p]),
            .s_req_desc(tx_req_desc), .req_done(tx_req_done[p]), .req_done_error(tx_req_error[p]),
            .going_back(going_back),
            .s_rsp_valid(tx_rsp_valid[p]), .s_rsp_ready(tx_rsp_ready[p]), .s_rsp_desc(tx_rsp_desc),
            .m_dma_valid(dma_c_valid[3+2*p +: 2]), .m_dma_ready(dma_c_ready[3+2*p +: 2]),
            .m_dma_data(port_dma_data), .s_dma_done(dma_c_done[3+2*p +: 2]),
            .s_axis_pl_tdata(dma_rd_tdata[(3+2*p)*DATA_WIDTH +: 2*DATA_WIDTH]),
            .s_axis_pl_tkeep(dma_rd_tkeep[(3+2*p)*DATA_WIDTH/8 +: 2*DATA_WIDTH/8]),
            .s_axis_pl_tvalid(dma_rd_tvalid[3+2*p +: 2]),
            .s_axis_pl_tready(dma_rd_port_ready[2*p +: 2]),
            .s_axis_pl_tlast(dma_rd_tlast[3+2*p +: 2]), .s_axis_pl_tuser(dma_rd_tuser[3+2*p +: 2]),
            .m_axis_tx_tdata(tx_tdata_p[p]), .m_axis_tx_tkeep(tx_tkeep_p[p]),
            .m_axis_tx_tvalid(m_axis_tx_tvalid[p]), .m_axis_tx_tready(m_axis_tx_tready[p]),
            .m_axis_tx_tlast(m_axis_tx_tlast[p]), .m_axis_tx_tuser(m_axis_tx_tuser[p]),
            .m_axis_loop_tdata(loop_tdata), .m_axis_loop_tkeep(loop_tkeep),
            .m_axis_loop_tvalid(loop_tvalid), .m_axis_loop_tready(loop_tready),
            .m_axis_loop_tlast(loop_tlast), .m_axis_loop_tuser(loop_tuser),
            .xmit_pkt(xmit_pkt), .xmit_pktlen(xmit_pktlen)
        );

        wire [DATA_WIDTH-1:0]   rx_tdata;
        wire [DATA_WIDTH/8-1:0] rx_tkeep;
        wire                    rx_tvalid, rx_tready, rx_tlast, rx_tuser, rx_tid;
        wire [1:0]              rx_mux_ready;
        assign s_axis_rx_tready[p] = rx_mux_ready[0];
        assign loop_tready = rx_mux_ready[1];

        axis_frame_mux #(.DATA_WIDTH(DATA_WIDTH)) rx_mux (
            .clk(clk), .rst(rst),
            .s_axis_tdata({loop_tdata, s_axis_rx_tdata[p*DATA_WIDTH +: DATA_WIDTH]}),
            .s_axis_tkeep({loop_tkeep, s_axis_rx_tkeep[p*DATA_WIDTH/8 +: DATA_WIDTH/8]}),
            .s_axis_tvalid({loop_tvalid, s_axis_rx_tvalid[p]}), .s_axis_tready(rx_mux_ready),
            .s_axis_tlast({loop_tlast, s_axis_rx_tlast[p]}),
            .s_axis_tuser({loop_tuser, s_axis_rx_tuser[p]}),
            .m_axis_tdata(rx_tdata), .m_axis_tkeep(rx_tkeep), .m_axis_tvalid(rx_tvalid),
            .m_axis_tready(rx_tready), .m_axis_tlast(rx_tlast), .m_axis_tuser(rx_tuser),
            .m_axis_tid(rx_tid)
        );

        wire        rcv_pkt, rcv_error, rcv_ce, rcv_internal;
        wire [10:0] rcv_pktlen;
        depacketizer #(.DATA_WIDTH(DATA_WIDTH), .NUM_GIDS(NUM_GIDS)) rx_dp (
            .clk(clk), .rst(rst),
            .s_axis_rx_tdata(rx_tdata), .s_axis_rx_tkeep(rx_tkeep), .s_axis_rx_tvalid(rx_tvalid),
            .s_axis_rx_tready(rx_tready), .s_axis_rx_tlast(rx_tlast), .s_axis_rx_tuser(rx_tuser),
            .s_axis_rx_tid(rx_tid),
            .eth(port_eth[p]), .port_lid(port_lid[p*16 +: 16]), .port_lmc(port_lmc[p*3 +: 3]),
            .port_gids(port_gids[p*NUM_GIDS*128 +: NUM_GIDS*128]),
            .port_gid_vlans(port_gid_vlans[p*NUM_GIDS*13 +: NUM_GIDS*13]),
            .port_mac(port_mac[p*48 +: 48]), .port_pkey(port_pkey[p*16 +: 16]),
            .m_hdr_valid(hdr_valid[p]), .m_hdr_ready(hdr_ready[p]),
            .m_hdr_opcode(hdr_data[p*RXH_WIDTH + RXH_OPCODE +: 8]),
            .m_hdr_se(hdr_data[p*RXH_WIDTH + RXH_SE]),
            .m_hdr_dest_qpn(hdr_data[p*RXH_WIDTH + RXH_DEST_QPN +: 24]),
            .m_hdr_ackreq(hdr_data[p*RXH_WIDTH + RXH_ACKREQ]),
            .m_hdr_psn(hdr_data[p*RXH_WIDTH + RXH_PSN +: 24]),
            .m_hdr_slid(hdr_data[p*RXH_WIDTH + RXH_SLID +: 16]),
            .m_hdr_dlid(hdr_data[p*RXH_WIDTH + RXH_DLID +: 16]),
            .m_hdr_sl(hdr_data[p*RXH_WIDTH + RXH_SL +: 4]),
            .m_hdr_is_global(hdr_data[p*RXH_WIDTH + RXH_GLOBAL]),
            .m_hdr_tclass(hdr_data[p*RXH_WIDTH + RXH_TCLASS +: 8]),
            .m_hdr_flow_label(hdr_data[p*RXH_WIDTH + RXH_FLOW +: 20]),
            .m_hdr_hop_limit(hdr_data[p*RXH_WIDTH + RXH_HOP +: 8]),
            .m_hdr_sgid(hdr_data[p*RXH_WIDTH + RXH_SGID +: 128]),
            .m_hdr_dgid(hdr_data[p*RXH_WIDTH + RXH_DGID +: 128]),
            .m_hdr_smac(hdr_data[p*RXH_WIDTH + RXH_SMAC +: 48]),
            .m_hdr_vlan(hdr_data[p*RXH_WIDTH + RXH_VLAN +: 13]),
            .m_hdr_raddr(hdr_data[p*RXH_WIDTH + RXH_RADDR +: 64]),
            .m_hdr_rkey(hdr_data[p*RXH_WIDTH + RXH_RKEY +: 32]),
            .m_hdr_dma_len(hdr_data[p*RXH_WIDTH + RXH_DMA_LEN +: 32]),
            .m_hdr_qkey(hdr_data[p*RXH_WIDTH + RXH_QKEY +: 32]),
            .m_hdr_src_qpn(hdr_data[p*RXH_WIDTH + RXH_SRC_QPN +: 24]),
            .m_hdr_imm(hdr_data[p*RXH_WIDTH + RXH_IMM +: 32]),
            .m_hdr_syndrome(hdr_data[p*RXH_WIDTH + RXH_SYNDROME +: 8]),
            .m_hdr_msn(hdr_data[p*RXH_WIDTH + RXH_MSN +: 24]),
            .m_hdr_plen(hdr_data[p*RXH_WIDTH + RXH_PLEN +: 13]),
            .m_hdr_internal(hdr_data[p*RXH_WIDTH + RXH_INTERNAL]),
            .m_hdr_atomic_a(hdr_data[p*RXH_WIDTH + RXH_ATOMIC_A +: 64]),
            .m_hdr_atomic_b(hdr_data[p*RXH_WIDTH + RXH_ATOMIC_B +: 64]),
            .m_axis_pl_tdata(pl_tdata_p[p]), .m_axis_pl_tkeep(pl_tkeep_p[p]),
            .m_axis_pl_tvalid(pl_tvalid[p]), .m_axis_pl_tready(pl_tready[p]),
            .m_axis_pl_tlast(pl_tlast[p]), .pl_drop(pl_drop[p]),
            .rcv_pkt(rcv_pkt), .rcv_pktlen(rcv_pktlen), .rcv_error(rcv_error),
            .rcv_ce(rcv_ce), .rcv_internal(rcv_internal)
        );

        port_counters counters (
            .clk(clk), .rst(rst),
            .xmit_pkt(xmit_pkt), .xmit_pktlen(xmit_pktlen),
            .rcv_pkt(rcv_pkt && !rcv_internal), .rcv_pktlen(rcv_pktlen),
            .rcv_error((rcv_error && !rcv_internal) || rcv_drop[p]), .xmit_discard(rsp_discard[p]),
            .rcv_ce(rcv_ce && !rcv_internal), .cnp_sent(cnp_sent[p]), .cnp_handled(cnp_handled[p]),
            .clear(pc_clear[p]),
            .rd_index(pc_rd_index), .rd_data(pc_rd_data[p*32 +: 32]),
            .wr_en(pc_wr_en[p]), .wr_index(pc_wr_index), .wr_data(pc_wr_data)
        );
    end
endgenerate

endmodule

`resetall
