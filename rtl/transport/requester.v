// The requester: issues the send queue of the QP the scheduler picks, one WQE at a time, in
// order, and moves on as soon as a message is handed over. Its WQEs are read ahead
// (wqe_prefetch): a QP's turn fetches as many as its send window lets it issue in one burst,
// and the turn lasts while the next one is at hand, so the scheduler's round robin is over
// turns of at most 2^SQ_WIN_LOG WQEs. It checks each WQE,
// resolves the address vector (the QP's for RC/UC, the AH's for UD) and decides loopback
// against the port's own LID/LMC/GID. A loopback message (with the bypass switched on) goes to
// the responder and its payload through the DMA mover: no packets, no segmentation, no headers.
// Once the responder has let it through, a message that writes no receive completion (RDMA
// WRITE, READ, an atomic) is handed with its data movement to the bypass's DMA queue
// (bypass_dma) and recorded, and the requester goes on to its next WQE while the payload
// moves: the completer finishes the WQE when the queue reports its data in place. Such a
// message waits for the responder's answer in a stage of its own (the back), so the next WQE
// of the turn is taken, decoded and its lkeys checked meanwhile; it goes to the responder in
// the cycle the back hands the previous one over. The front only runs ahead of the back
// through what has no effect (the read-ahead, the decode, lkey checks): anything else (a
// record, a message of another kind, a memory window) waits for the back, and a back that
// ends in error sends the front back to pick its WQE again. A message
// that consumes a receive WQE (SEND, with immediate) waits for the queue to drain and moves
// its payload itself, so its receive completion follows the data of every message before it.
// Any other message goes to its port's packetizer. Every issued WQE is recorded in the
// completer, which finishes it (ACKs, retransmission, the send CQE). A WQE issued again after
// a go-back (the completer moved the issue index back) is sent from the QP's oldest
// unacknowledged PSN: inside a message at a packet boundary, a READ for the responses still
// missing. An atomic (RC) is a one-PSN READ on the wire whose response carries the original
// value; on the bypass the DMA mover's ATOMIC does the read-modify-write and a STORE puts the
// original in the local SGE. RDMA READs and atomics wait while max_rd_atomic of them are
// outstanding, a FENCE while any is,
// and a bypass message while the QP has packets outstanding (not while its earlier bypass
// messages are moving: the DMA queue keeps them in order). A QP in ERR has every send WQE
// flushed (WR_FLUSH_ERR) and the responder flushes its receive queue. BIND_MW and LOCAL_INV
// send nothing: the protection checker binds or invalidates the window when the WQE's turn
// comes (later WQEs see it), and the WQE completes here (MW_BIND_ERR when refused).
`ifndef RDMA_REQUESTER_V
`define RDMA_REQUESTER_V
`default_nettype none

module requester #(
    parameter NUM_QP = 64,         // queue pairs
    parameter NUM_CQ = 16,         // completion queues
    parameter NUM_PORTS = 2,       // ports
    parameter ADDR_WIDTH = 32,     // host address width
    parameter DATA_WIDTH = 256,    // DMA stream width in bits (the WQE read-ahead's)
    parameter SQ_WIN_LOG = 4,      // send window: WQEs issued and not yet completed, per QP
    parameter BYPASS_MOVERS = 4,   // bypass payload moves running at once (DMA clients)
    parameter CLOCK_MHZ = 250,     // device clock: the RNR timer counts its cycles
    parameter TIMER_SHIFT = 0,     // timers run 2^TIMER_SHIFT times fast (short simulations)
    parameter NUM_GIDS = 4         // GID table entries per port
) (
    input  wire                     clk,
    input  wire                     rst,

    // scheduler
    input  wire                     sched_valid,
    input  wire [QPN_BITS-1:0]      sched_qpn,
    output wire                     sched_take,

    // port settings
    input  wire [NUM_PORTS*16-1:0]  port_lid,
    input  wire [NUM_PORTS*3-1:0]   port_lmc,
    input  wire [NUM_PORTS*3-1:0]   port_mtu,
    input  wire [NUM_PORTS*NUM_GIDS*128-1:0] port_gids,      // the ports' GID tables
    input  wire [NUM_PORTS*NUM_GIDS*13-1:0]  port_gid_vlans, // each entry's VLAN
    input  wire [NUM_PORTS-1:0]     port_eth,         // link layer: 1 Ethernet (RoCE v2)
    input  wire [NUM_PORTS*16-1:0]  port_pkey,
    input  wire                     bypass_en,

    // the QP being served (qp_table port A)
    output reg  [QPN_BITS-1:0]      qp_qpn,
    input  wire [2:0]               qp_type,
    input  wire [2:0]               qp_state,
    input  wire [15:0]              qp_pd,
    input  wire [CQN_BITS-1:0]      qp_scq,
    input  wire [PORT_BITS-1:0]     qp_port,
    input  wire [31:0]              qp_qkey,
    input  wire [31:0]              qp_dest_qpn,
    input  wire [15:0]              qp_dlid,
    input  wire [3:0]               qp_sl,
    input  wire [6:0]               qp_src_path_bits,
    input  wire                     qp_is_global,
    input  wire [7:0]               qp_hop_limit,
    input  wire [7:0]               qp_tclass,
    input  wire [19:0]              qp_flow_label,
    input  wire [127:0]             qp_dgid,
    input  wire [GID_BITS-1:0]      qp_sgid_index,
    input  wire [47:0]              qp_dmac,
    input  wire [ADDR_WIDTH-1:0]    qp_sq_base,
    input  wire [3:0]               qp_sq_log,
    input  wire [2:0]               qp_sq_sge,        // SGEs its WQEs may have (0 counts as 1)
    input  wire [15:0]              qp_sq_pi,
    input  wire [15:0]              qp_sq_ci,
    input  wire [15:0]              qp_sq_ni,
    input  wire [7:0]               qp_max_rd,
    input  wire [2:0]               qp_rnr_left,
    input  wire [2:0]               qp_rnr_retry,
    input  wire                     qp_rnr_waiting,
    output reg                      qp_sq_issue,
    output reg                      qp_rnr_wait,
    output reg  [47:0]              qp_rnr_cycles,
    input  wire [2:0]               qp_mtu,
    input  wire [3:0]               qp_rate,
    input  wire [23:0]              qp_sq_psn,
    output reg                      qp_set_psn,
    output reg  [23:0]              qp_psn_value,

    // address handle lookup
    output wire [31:0]              ah_num,
    input  wire                     ah_valid,
    input  wire [15:0]              ah_pd,
    input  wire [PORT_BITS-1:0]     ah_port,
    input  wire [15:0]              ah_dlid,
    input  wire [3:0]               ah_sl,
    input  wire [6:0]               ah_src_path_bits,
    input  wire                     ah_is_global,
    input  wire [7:0]               ah_hop_limit,
    input  wire [7:0]               ah_tclass,
    input  wire [19:0]              ah_flow_label,
    input  wire [127:0]             ah_dgid,
    input  wire [GID_BITS-1:0]      ah_sgid_index,
    input  wire [47:0]              ah_dmac,
    input  wire [3:0]               ah_rate,

    // message to the responder
    output reg                      m_msg_valid,
    input  wire                     m_msg_ready,
    output reg  [1:0]               m_msg_kind,
    output wire [7:0]               m_msg_op,
    output wire [2:0]               m_msg_type,
    output wire [31:0]              m_msg_dest_qpn,
    output wire [23:0]              m_msg_src_qpn,
    output wire [PORT_BITS-1:0]     m_msg_port,
    output wire [31:0]              m_msg_len,
    output wire [63:0]              m_msg_raddr,
    output wire [31:0]              m_msg_rkey,
    output wire [31:0]              m_msg_imm,
    output wire [31:0]              m_msg_qkey,
    output wire                     m_msg_solicited,
    output wire [15:0]              m_msg_slid,
    output wire [15:0]              m_msg_dlid,
    output wire [3:0]               m_msg_sl,
    output wire                     m_msg_is_global,
    output wire [7:0]               m_msg_tclass,
    output wire [19:0]              m_msg_flow_label,
    output wire [7:0]               m_msg_hop_limit,
    output wire [127:0]             m_msg_sgid,
    output wire [127:0]             m_msg_dgid,
    output wire [31:0]              m_msg_offset,
    output wire                     m_msg_hold,       // keep the responder until this message's END
    input  wire                     s_rsp_valid,
    input  wire [7:0]               s_rsp_status,
    input  wire                     s_rsp_place,
    input  wire                     s_rsp_rnr,
    input  wire [4:0]               s_rsp_rnr_timer,
    input  wire [ADDR_WIDTH-1:0]    s_rsp_addr,
    input  wire [255:0]             s_rsp_sgl,        // a SEND's receive buffer (s_rsp_addr: offset in it)

    // message to the port's packetizer (m_tx_port)
    output reg                      m_tx_valid,
    input  wire                     m_tx_ready,
    output wire [TXD_WIDTH-1:0]     m_tx_desc,
    output wire [PORT_BITS-1:0]     m_tx_port,

    // the completer: each issued WQE (completer.v has the fields), and the QP's send window
    output reg                      rec_valid,
    output reg  [15:0]              rec_idx,
    output reg  [1:0]               rec_kind,
    output reg                      rec_tx,           // its packets went to the port (m_tx_port)
    output reg  [7:0]               rec_status,
    output reg                      rec_read,
    output reg                      rec_atomic,
    output reg  [23:0]              rec_first,
    output reg  [23:0]              rec_end,
    output reg  [ADDR_WIDTH-1:0]    rec_addr,         // where a READ's or an atomic's answer lands
    output reg  [2:0]               rec_mtu,
    output reg  [63:0]              rec_wr_id,
    output reg  [7:0]               rec_wc_op,
    output reg  [31:0]              rec_len,
    output reg                      rec_signaled,
    output wire                     iss_busy,         // serving qp_qpn (or recording it)
    output reg                      iss_hold,         // its next WQE waits for one to finish
    output reg                      iss_kick,         // it is in ERR with WQEs outstanding
    input  wire                     win_held,         // the completer holds the QP
    input  wire                     win_busy,         // the QP has WQEs outstanding
    input  wire                     win_wired,        // ... some whose packets went to a port
    input  wire                     win_una_valid,
    input  wire [23:0]              win_una,          // its oldest unacknowledged PSN
    input  wire [7:0]               win_reads,        // its READs outstanding

    // protection checker client
    output reg                      m_prot_valid,
    input  wire                     m_prot_ready,
    output wire [237:0]             m_prot_data,      // PROT_REQ_WIDTH (prot_request)
    input  wire                     s_prot_valid,
    input  wire [ADDR_WIDTH:0]      s_prot_data,

    // DMA mover clients of the bypass's DMA queue: {data[511:0], len[31:0], dst, src, mode[2:0]}
    output wire [BYPASS_MOVERS-1:0]               m_dma_valid,
    input  wire [BYPASS_MOVERS-1:0]               m_dma_ready,
    output wire [BYPASS_MOVERS*DMA_REQ_WIDTH-1:0] m_dma_data,
    input  wire [BYPASS_MOVERS-1:0]               s_dma_done,
    input  wire [BYPASS_MOVERS-1:0]               s_dma_error,
    input  wire [BYPASS_MOVERS*64-1:0]            s_dma_rdata,   // an atomic's original value

    // a bypass WQE recorded at its hand-over (QP bp_qpn, index bp_idx) has its data in place
    // (or a bad DMA response: it completes with GENERAL_ERR)
    output wire                     bp_done,
    output wire                     bp_error,
    output wire [QPN_BITS-1:0]      bp_qpn,
    output wire [15:0]              bp_idx,

    // DMA client of the WQE read-ahead (READ_STREAM)
    output wire                     m_wqe_dma_valid,
    input  wire                     m_wqe_dma_ready,
    output wire [DMA_REQ_WIDTH-1:0] m_wqe_dma_data,
    input  wire                     s_wqe_dma_done,
    input  wire                     s_wqe_dma_error,
    input  wire [DATA_WIDTH-1:0]    s_wqe_axis_tdata,
    input  wire                     s_wqe_axis_tvalid,
    input  wire                     s_wqe_axis_tuser,

    // device counters of the bypass
    output reg  [63:0]              lb_msgs,
    output reg  [63:0]              lb_bytes
);

`include "rdma_defs.vh"
`include "pkt_fields.vh"
`include "ib_timers.vh"

localparam QPN_BITS  = $clog2(NUM_QP);
localparam CQN_BITS  = $clog2(NUM_CQ);
localparam PORT_BITS = NUM_PORTS > 1 ? $clog2(NUM_PORTS) : 1;
localparam GID_BITS  = NUM_GIDS > 1 ? $clog2(NUM_GIDS) : 1;
localparam DMA_REQ_WIDTH = 3 + 2*ADDR_WIDTH + 32 + 512;

localparam [3:0] S_IDLE = 4'd0, S_PICK = 4'd1, S_LOAD_WAIT = 4'd2, S_DECODE = 4'd3,
                 S_LKEY_WAIT = 4'd4, S_MW_WAIT = 4'd5, S_START_WAIT = 4'd6, S_COPY_WAIT = 4'd7,
                 S_END_WAIT = 4'd8, S_RECORD = 4'd9, S_FLUSH_WAIT = 4'd10, S_WIRE_WAIT = 4'd11,
                 S_ROUTE = 4'd12, S_LKEY = 4'd13, S_SERIAL = 4'd14;
// the back: a bypass message that takes no receive WQE, from its START to its hand-over
localparam [1:0] B_IDLE = 2'd0, B_START = 2'd1, B_HANDOFF = 2'd2;
reg [3:0] state;
reg       turn;   // the QP's turn goes on: its next WQE is read ahead
reg       cont;   // serving the QP on in its turn (not the scheduler's choice)
reg [1:0] bstate;
reg       squash;      // the back ended without handing its message over: pick again
reg       squash_turn; // ... in the QP's turn (an error recorded) or at the scheduler's
wire      alone = bstate == B_IDLE;

// the back's message: its data movement and its record
reg [15:0]            b_idx;
reg [31:0]            b_len;
reg                   b_write, b_read, b_atomic, b_cas, b_signaled;
reg [63:0]            b_swap, b_cmp_add, b_wr_id;
reg [255:0]           b_sgl;
reg [ADDR_WIDTH-1:0]  b_local;
reg [7:0]             b_wc_op;
reg [23:0]            b_first, b_end;
reg [2:0]             b_mtu;

// the WQE being served
reg [7:0]   w_op;
reg [7:0]   w_flags;
reg [31:0]  w_imm;
reg [63:0]  w_wr_id;
reg [7:0]   w_nsge;         // 0x02: SGEs in the WQE (0 and 1: SGE 0 alone)
reg [63:0]  sge_addr [0:3];  // SGE 0 at 0x10, SGEs 1-3 at 0x40, 0x50, 0x60 of a 128-byte WQE
reg [31:0]  sge_len  [0:3];
reg [31:0]  sge_lkey [0:3];
reg [63:0]  w_raddr;
reg [31:0]  w_rkey;
reg [31:0]  w_ah;
reg [31:0]  w_rqpn;
reg [31:0]  w_rqkey;
reg [63:0]  w_swap;         // atomics: 0x30 compare_add (over rqpn, rqkey: UD only) and 0x38 swap
wire [63:0] w_cmp_add = {w_rqkey, w_rqpn};

reg [7:0]             status;
reg [ADDR_WIDTH-1:0]  sge_host [0:3]; // host address of each SGE, from the protection checker
reg [1:0]             si;             // the SGE being checked
reg [ADDR_WIDTH-1:0]  remote_addr;    // host address of the remote end, from the responder
reg [255:0]           remote_sgl;     // ... or a SEND's receive buffer, remote_addr the offset

// ---- scatter/gather: the message is the SGEs' bytes in order ----
wire [2:0]  sge_cap  = qp_sq_sge == 3'd0 ? 3'd1 : qp_sq_sge;
wire [7:0]  nsge     = w_nsge == 8'd0 ? 8'd1 : w_nsge;
wire [31:0] len0 = sge_len[0];
wire [31:0] len1 = nsge > 8'd1 ? sge_len[1] : 32'd0;
wire [31:0] len2 = nsge > 8'd2 ? sge_len[2] : 32'd0;
wire [31:0] len3 = nsge > 8'd3 ? sge_len[3] : 32'd0;
wire [33:0] len_sum = {2'd0, len0} + {2'd0, len1} + {2'd0, len2} + {2'd0, len3};
wire [31:0] w_len = len_sum[31:0];
// the local SGEs as the DMA engine's list (host addresses, in WQE order)
// (an SGE's host address counts from the cycle its lkey check answers: the message may be
// routed, taken by the back and recorded in that cycle)
wire        host_in = state == S_LKEY_WAIT && s_prot_valid;
wire [ADDR_WIDTH-1:0] host0 = host_in && si == 2'd0 ? s_prot_data[ADDR_WIDTH:1] : sge_host[0];
wire [ADDR_WIDTH-1:0] host1 = host_in && si == 2'd1 ? s_prot_data[ADDR_WIDTH:1] : sge_host[1];
wire [ADDR_WIDTH-1:0] host2 = host_in && si == 2'd2 ? s_prot_data[ADDR_WIDTH:1] : sge_host[2];
wire [ADDR_WIDTH-1:0] host3 = host_in && si == 2'd3 ? s_prot_data[ADDR_WIDTH:1] : sge_host[3];
wire [255:0] local_sgl = {len3, host3[31:0], len2, host2[31:0], len1, host1[31:0],
                          len0, host0[31:0]};
// READs and atomics have one SGE (max_sge_rd 1): their answer lands there
wire [ADDR_WIDTH-1:0] local_addr = host0;

assign sched_take = state == S_IDLE && alone && !turn && sched_valid;

// ---- address vector: the QP's (RC, UC) or the AH's (UD) ----
wire is_ud = qp_type == QPT_UD;
assign ah_num = w_ah;
wire [15:0]  av_dlid   = is_ud ? ah_dlid : qp_dlid;
wire [3:0]   av_sl     = is_ud ? ah_sl : qp_sl;
wire [6:0]   av_spb    = is_ud ? ah_src_path_bits : qp_src_path_bits;
wire         av_global = is_ud ? ah_is_global : qp_is_global;
wire [7:0]   av_hop    = is_ud ? ah_hop_limit : qp_hop_limit;
wire [7:0]   av_tclass = is_ud ? ah_tclass : qp_tclass;
wire [19:0]  av_flow   = is_ud ? ah_flow_label : qp_flow_label;
wire [127:0] av_dgid   = is_ud ? ah_dgid : qp_dgid;
wire [3:0]   av_rate   = is_ud ? ah_rate : qp_rate;
wire [GID_BITS-1:0] av_sgid = is_ud ? ah_sgid_index : qp_sgid_index;
wire [47:0]  av_dmac   = is_ud ? ah_dmac : qp_dmac;

// ---- the port's own address, and the loopback decision ----
wire [15:0]  my_lid   = port_lid[qp_port*16 +: 16];
wire [2:0]   my_lmc   = port_lmc[qp_port*3 +: 3];
wire         my_eth   = port_eth[qp_port];
wire [NUM_GIDS*128-1:0] my_gids = port_gids[qp_port*NUM_GIDS*128 +: NUM_GIDS*128];
// the source GID: the AV's entry of the port's table, and on Ethernet its VLAN
wire [127:0] my_gid   = my_gids[av_sgid*128 +: 128];
wire [NUM_GIDS*13-1:0] my_vlans = port_gid_vlans[qp_port*NUM_GIDS*13 +: NUM_GIDS*13];
wire [12:0]  my_vlan  = my_vlans[av_sgid*13 +: 13];
// RoCE v2 has no local route: every message carries its GIDs
wire         av_grh   = av_global || my_eth;
wire [2:0]   my_mtu   = port_mtu[qp_port*3 +: 3];
wire [15:0]  my_pkey  = port_pkey[qp_port*16 +: 16];
wire [15:0]  lmc_mask = (16'd1 << my_lmc) - 16'd1;     // the source path bits' place in the SLID
wire loopback;
loopback_match #(.NUM_GIDS(NUM_GIDS)) lb_match (
    .eth(my_eth), .port_lid(my_lid), .port_lmc(my_lmc), .port_gids(my_gids),
    .dlid(av_dlid), .is_global(av_global), .dgid(av_dgid),
    .loopback(loopback)
);

// ---- WQE checks ----
// memory windows bind and invalidate on connected QPs; SEND with invalidate is RC's
wire is_mw_op = w_op == WR_BIND_MW || w_op == WR_LOCAL_INV;
wire is_inv   = w_op == WR_SEND_INV;
// ATOMIC WRITE (RC): the 8 bytes at the WQE's 0x38 go to the remote address as one write; the
// WQE stays in its ring slot until it completes, so the payload is read from there (no SGE)
wire is_awrite = w_op == WR_ATOMIC_WRITE;
wire op_ok = qp_type == QPT_RC ? w_op <= WR_SEND_INV || is_awrite :
             qp_type == QPT_UC ? w_op <= WR_SEND_IMM || is_mw_op :
                                 (w_op == WR_SEND || w_op == WR_SEND_IMM);
wire ah_ok = ah_valid && ah_pd == qp_pd && ah_port == qp_port;
wire [13:0] mtu_bytes = my_mtu >= 3'd1 && my_mtu <= 3'd5 ? 14'd128 << my_mtu : 14'd4096;
wire is_read = w_op == WR_RDMA_READ;
wire is_cas  = w_op == WR_ATOMIC_CMP_AND_SWP;
wire is_atomic = is_cas || w_op == WR_ATOMIC_FETCH_AND_ADD;
wire rd_like = is_read || is_atomic;       // answered by responses that land in the local SGE
wire last_sge = {6'd0, si} + 8'd1 >= nsge;
wire sge_bad = nsge > {5'd0, sge_cap} || (rd_like && nsge > 8'd1);
wire rnr_retry_ok = qp_rnr_retry == 3'd7 || qp_rnr_left != 3'd0;
wire retrying = s_rsp_rnr && rnr_retry_ok;

// an SGE's lkey; or BIND_MW: the window's rkey (0x28), the key it takes (0x2C), the rights it
// gives (0x30) over SGE 0's range of the region SGE 0's lkey names; or LOCAL_INV's rkey (0x28)
wire [23:0] my_qpn = {{(24-QPN_BITS){1'b0}}, qp_qpn};
assign m_prot_data =
    w_op == WR_BIND_MW   ? prot_request(PROT_BIND, my_qpn, sge_lkey[0], w_ah, w_rqpn[3:0], qp_pd,
                                        sge_len[0], sge_addr[0], w_rkey) :
    w_op == WR_LOCAL_INV ? prot_request(PROT_INV_LOCAL, my_qpn, 32'd0, 32'd0, 4'd0, qp_pd, 32'd0,
                                        64'd0, w_rkey) :
    prot_request(PROT_CHECK, my_qpn, 32'd0, 32'd0, rd_like ? 4'd1 << ACC_LOCAL_WRITE : 4'd0,
                 qp_pd, sge_len[si], sge_addr[si], sge_lkey[si]);

// ---- the WQEs: read ahead from the next one to issue ----
// the next to issue: the QP's index, with the issue pulse not yet counted in it and the
// back's message (not recorded yet)
wire [15:0] sq_next = qp_sq_ni + {15'd0, qp_sq_issue} + {15'd0, !alone};
wire [15:0] sq_mask = (16'd1 << qp_sq_log) - 16'd1;
// 64-byte WQEs, or 128-byte ones when the QP's WQEs may have more than one SGE
wire        big_wqe = sge_cap > 3'd1;
wire [ADDR_WIDTH-1:0] sq_slot = qp_sq_base + ({{(ADDR_WIDTH-16){1'b0}}, sq_next & sq_mask}
                                              << (big_wqe ? 7 : 6));
wire [15:0] win_size = 16'd1 << SQ_WIN_LOG;
wire        sq_room  = sq_next - qp_sq_ci < win_size;
// a fetch: the WQEs posted, as many as the window has room for, up to the ring's end (the
// rest is the next fetch)
wire [15:0] posted    = qp_sq_pi - sq_next;
wire [15:0] win_left  = win_size - (sq_next - qp_sq_ci);
wire [15:0] ring_left = (16'd1 << qp_sq_log) - (sq_next & sq_mask);
wire [15:0] fetch_most = posted < win_left ? posted : win_left;
wire [15:0] fetch_n    = fetch_most < ring_left ? fetch_most : ring_left;
// a fetch leaves in the pick of a new turn (the pick's decision: the read-ahead takes it at
// that edge), or again for a WQE that failed (ra_refetch: alone or with those after it)
reg         ra_refetch, ra_drop, ra_alone_next;
wire        pick_fetch;
wire        ra_fetch = pick_fetch || ra_refetch;
wire        ra_busy, ra_hit, ra_pending, ra_failed, ra_alone;
wire [1023:0] ra_wqe;
wqe_prefetch #(
    .DATA_WIDTH(DATA_WIDTH), .ADDR_WIDTH(ADDR_WIDTH), .QPN_BITS(QPN_BITS), .DEPTH_LOG(SQ_WIN_LOG)
) prefetch (
    .clk(clk), .rst(rst),
    .fetch_valid(ra_fetch), .fetch_qpn(qp_qpn), .fetch_idx(sq_next),
    .fetch_count(ra_refetch && ra_alone_next ? {{SQ_WIN_LOG{1'b0}}, 1'b1} : fetch_n[SQ_WIN_LOG:0]),
    .fetch_big(big_wqe), .fetch_addr(sq_slot), .drop(ra_drop), .busy(ra_busy),
    .look_qpn(qp_qpn), .look_idx(sq_next), .look_hit(ra_hit), .look_pending(ra_pending),
    .look_failed(ra_failed),
    .look_alone(ra_alone), .look_wqe(ra_wqe),
    .m_dma_valid(m_wqe_dma_valid), .m_dma_ready(m_wqe_dma_ready), .m_dma_data(m_wqe_dma_data),
    .s_dma_done(s_wqe_dma_done), .s_dma_error(s_wqe_dma_error),
    .s_axis_tdata(s_wqe_axis_tdata), .s_axis_tvalid(s_wqe_axis_tvalid),
    .s_axis_tuser(s_wqe_axis_tuser)
);

// ---- DMA: the payload moves through the bypass's DMA queue ----
// the payload (taken at the START: b_*): local SGEs -> the remote end (SEND, WRITE), or the
// remote end -> the local SGE; an atomic works on the remote end's 8 bytes
// The back hands its message over in the cycle the answer comes (its place straight from the
// answer) or, when the queue has no room then, from the registers it kept.
wire back_answered = bstate == B_START && s_rsp_valid && s_rsp_status == WC_SUCCESS &&
                     s_rsp_place && b_len != 32'd0;
wire [ADDR_WIDTH-1:0] job_remote = bstate == B_START ? s_rsp_addr : remote_addr;
wire [255:0]          job_sgl    = bstate == B_START ? s_rsp_sgl : remote_sgl;
wire [DMA_REQ_WIDTH-1:0] job_cmd =
    b_atomic ? {atomic_block(b_cas, b_swap, b_cmp_add), 32'd8, job_remote,
                {ADDR_WIDTH{1'b0}}, DMA_ATOMIC} :
    b_read   ? {b_sgl, 256'd0, b_len, {ADDR_WIDTH{1'b0}}, job_remote, DMA_COPY} :
               {job_sgl, b_sgl, b_len, job_remote, {ADDR_WIDTH{1'b0}}, DMA_COPY};
// A handed-over job of the QP failed (now, or earlier in the turn): its later WQEs already
// past their checks are not moved (the completer holds the QP and then fails it)
reg                 fail_seen;
reg [QPN_BITS-1:0]  fail_qpn;
wire job_failed;
// handed over (the completer is told when it is done), or a receiving message's copy once
// every earlier job is done
wire back_job  = bstate == B_HANDOFF || back_answered;
wire job_valid = (back_job || (state == S_SERIAL && b_len != 32'd0 && job_idle)) && !job_failed;
wire job_ready, job_idle, job_done, job_error, job_notify;
wire [ADDR_WIDTH:0] remote_end = {1'b0, job_remote} + {1'b0, b_len[ADDR_WIDTH-1:0]};
bypass_dma #(
    .ADDR_WIDTH(ADDR_WIDTH), .QPN_BITS(QPN_BITS), .TAG_WIDTH(16), .MOVERS(BYPASS_MOVERS)
) copies (
    .clk(clk), .rst(rst),
    .s_job_valid(job_valid), .s_job_ready(job_ready), .s_job_cmd(job_cmd),
    .s_job_atomic(b_atomic), .s_job_local(b_local), .s_job_notify(back_job),
    .s_job_qpn(qp_qpn), .s_job_tag(b_idx), .s_job_write(b_write),
    .s_job_lo({1'b0, job_remote}), .s_job_hi(remote_end), .idle(job_idle),
    .done_valid(job_done), .done_error(job_error), .done_notify(job_notify),
    .done_qpn(bp_qpn), .done_tag(bp_idx),
    .m_dma_valid(m_dma_valid), .m_dma_ready(m_dma_ready), .m_dma_data(m_dma_data),
    .s_dma_done(s_dma_done), .s_dma_error(s_dma_error), .s_dma_rdata(s_dma_rdata)
);
assign bp_done  = job_done && job_notify;
assign bp_error = job_error;
assign job_failed = (fail_seen && fail_qpn == qp_qpn) ||
                    (bp_done && bp_error && bp_qpn == qp_qpn);

// ---- message to the responder ----
assign m_msg_op         = w_op;
assign m_msg_type       = qp_type;
wire [31:0] dest_qpn    = is_ud ? w_rqpn : qp_dest_qpn;
assign m_msg_dest_qpn   = m_msg_kind == 2'd2 ? {{(32-QPN_BITS){1'b0}}, qp_qpn} : dest_qpn;
assign m_msg_src_qpn    = {{(24-QPN_BITS){1'b0}}, qp_qpn};
assign m_msg_port       = qp_port;
assign m_msg_len        = w_len;
assign m_msg_raddr      = w_raddr;
assign m_msg_rkey       = w_rkey;
assign m_msg_imm        = w_imm;
assign m_msg_qkey       = w_rqkey[31] ? qp_qkey : w_rqkey;
assign m_msg_solicited  = w_flags[SF_SOLICITED];
assign m_msg_slid       = (my_lid & ~lmc_mask) | ({9'd0, av_spb} & lmc_mask);
assign m_msg_dlid       = av_dlid;
assign m_msg_sl         = av_sl;
assign m_msg_is_global  = av_grh;
assign m_msg_tclass     = av_tclass;
assign m_msg_flow_label = av_flow;
assign m_msg_hop_limit  = av_hop;
assign m_msg_sgid       = my_gid;
assign m_msg_dgid       = av_dgid;

// ---- the packet path ----
// path MTU: the QP's (RC, UC) when set and below the port's active MTU; UD uses the port's
wire [2:0]  pmtu = (is_ud || qp_mtu == 3'd0 || qp_mtu > my_mtu) ? my_mtu : qp_mtu;
wire [31:0] pmtu_mask = (32'd128 << pmtu) - 32'd1;
// packets of the message; an RDMA READ takes one PSN per response packet
wire [31:0] pkts = w_len == 32'd0 ? 32'd1 : (w_len + pmtu_mask) >> ({1'b0, pmtu} + 4'd7);
wire [23:0] msg_pkts = pkts[23:0];
wire [2:0]  tx_kind = is_read ? 3'd2 : is_cas ? 3'd5 : is_atomic ? 3'd6 :
                      (w_op == WR_RDMA_WRITE || w_op == WR_RDMA_WRITE_IMM || is_awrite) ? 3'd1 : 3'd0;
wire        imm_op = w_op == WR_SEND_IMM || w_op == WR_RDMA_WRITE_IMM;
// the message consumes a receive WQE: its END writes the receive CQE, before the send CQE
wire        receives = w_op == WR_SEND || imm_op || is_inv;
// an IETH carries the rkey to invalidate in the ImmDt's place, most significant byte first
wire [31:0] ieth = {w_rkey[7:0], w_rkey[15:8], w_rkey[23:16], w_rkey[31:24]};
wire        is_rc = qp_type == QPT_RC;
reg         wire_internal;    // loopback with the bypass off
reg  [23:0] first_psn;        // the message's first PSN
reg  [23:0] end_psn;          // one past its last
reg  [23:0] tx_psn;           // the first PSN it sends
// Issued again after a go-back: what the responder has answered is not sent again. The
// oldest unacknowledged PSN inside the message: start there; past it: nothing to send.
wire [23:0] una_ahead = win_una - qp_sq_psn;
wire        una_inside = is_rc && win_una_valid && una_ahead != 24'd0 && una_ahead < msg_pkts;
wire        una_past   = is_rc && win_una_valid && una_ahead >= msg_pkts && !una_ahead[23];
// a resend starts inside the message: a WRITE / SEND at a packet boundary, a READ request
// for the responses still missing
wire [23:0] tx_skip  = tx_psn - first_psn;
wire [31:0] tx_bytes = {8'd0, tx_skip} << ({1'b0, pmtu} + 4'd7);
assign m_tx_port = qp_port;
// AtomicETH: swap/add data, compare data
assign m_tx_desc = {1'b0, my_vlan, av_dmac, is_awrite, is_inv, is_cas ? w_cmp_add : 64'd0, is_cas ? w_swap : w_cmp_add,
                    rd_like ? 32'd0 : tx_bytes, wire_internal, local_sgl,
                    av_rate, 24'd0, 8'd0,
                    is_read ? w_len - tx_bytes : w_len, w_rkey,
                    is_read ? w_raddr + {32'd0, tx_bytes} : w_raddr,
                    m_msg_src_qpn, m_msg_qkey, tx_psn,
                    dest_qpn[23:0], my_pkey, av_dgid, my_gid, av_hop, av_flow, av_tclass,
                    av_grh, av_sl, m_msg_slid, av_dlid, pmtu, rd_like ? 32'd0 : w_len,
                    w_flags[SF_SOLICITED], is_inv ? ieth : w_imm, imm_op, qp_type, tx_kind};
assign m_msg_offset   = 32'd0;
// a message that consumes a receive WQE keeps the responder until its END (no other message
// may take the same receive WQE)
assign m_msg_hold     = receives && (state == S_START_WAIT || state == S_SERIAL ||
                                     state == S_COPY_WAIT || state == S_END_WAIT);


// ---- the record of the issued WQE, for the completer ----
wire [7:0] wc_op  = w_op == WR_RDMA_READ ? WCO_RDMA_READ : is_cas ? WCO_COMP_SWAP :
                   is_atomic ? WCO_FETCH_ADD : w_op == WR_BIND_MW ? WCO_BIND_MW :
                   w_op == WR_LOCAL_INV ? WCO_LOCAL_INV : is_awrite ? WCO_ATOMIC_WRITE :
                   (w_op == WR_RDMA_WRITE || w_op == WR_RDMA_WRITE_IMM) ? WCO_RDMA_WRITE : WCO_SEND;
assign iss_busy     = state != S_IDLE || !alone || rec_valid;
// RDMA READs and atomics in flight: max_rd_atomic of them (0 counts as 1); a FENCE waits for all
wire [7:0] max_reads = qp_max_rd == 8'd0 ? 8'd1 : qp_max_rd;
wire       read_wait = is_rc && ((rd_like && win_reads >= max_reads) ||
                                 (w_flags[SF_FENCE] && win_reads != 8'd0));
wire       len_bad   = len_sum > 34'h80000000 || (is_ud && w_len > {18'd0, mtu_bytes}) ||
                       (is_atomic && w_len != 32'd8);
// the decode finds nothing to finish the WQE with here and goes on to its lkey checks
wire       decode_passes = qp_state != QPS_ERR && status == WC_SUCCESS && op_ok && !is_mw_op &&
                           !(is_ud && !ah_ok) && !sge_bad && !len_bad && !read_wait;

// WQE byte 0x03 is reserved, and 0x38-0x3F but for atomics
wire unused = ^{pkts[31:24], ra_wqe[31:24], s_prot_data[0], lmc_mask[15:7],
                w_flags[7:3], qp_scq, len_sum[33:32], fetch_n[15:SQ_WIN_LOG+1]};

// a message took the bypass: LB_MSGS and LB_BYTES
integer n;
task count_loopback(input [31:0] len);
    begin
        lb_msgs  <= lb_msgs + 64'd1;
        lb_bytes <= lb_bytes + {32'd0, len};
    end
endtask

// a WQE is issued: the completer records it and the QP's issue index moves on
task issue(input [1:0] kind, input tx, input [15:0] idx, input [7:0] st, input read,
           input atomic, input [23:0] first, input [23:0] last, input [ADDR_WIDTH-1:0] addr,
           input [2:0] mtu, input [63:0] wr_id, input [7:0] op, input [31:0] len, input sig);
    begin
        qp_sq_issue  <= 1'b1;
        rec_valid    <= 1'b1;
        rec_kind     <= kind;
        rec_tx       <= tx;
        rec_idx      <= idx;
        rec_status   <= st;
        rec_read     <= read;
        rec_atomic   <= atomic;
        rec_first    <= first;
        rec_end      <= last;
        rec_addr     <= addr;
        rec_mtu      <= mtu;
        rec_wr_id    <= wr_id;
        rec_wc_op    <= op;
        rec_len      <= len;
        rec_signaled <= sig;
    end
endtask

// ... the WQE at hand (its turn goes on), or the back's message
task record(input [1:0] kind, input tx, input [23:0] first, input [23:0] last);
    begin
        issue(kind, tx, sq_next, status, rd_like, is_atomic, first, last, local_addr, pmtu,
              w_wr_id, wc_op, is_mw_op ? 32'd0 : w_len, w_flags[SF_SIGNALED]);
        turn <= 1'b1;
    end
endtask
task record_back(input [1:0] kind, input [7:0] st);
    issue(kind, 1'b0, b_idx, st, b_read || b_atomic, b_atomic, b_first, b_end, b_local, b_mtu,
          b_wr_id, b_wc_op, b_len, b_signaled);
endtask

// recorded and handed to the DMA queue, or it waits for room there
task hand_over;
    begin
        if (job_failed) begin
            // an earlier WQE of the QP failed in the queue: this one is taken again (and
            // flushed) once the completer has failed the QP
            squash      <= 1'b1;
            squash_turn <= 1'b0;
            bstate <= B_IDLE;
        end else if (job_ready) begin
            count_loopback(b_len);
            record_back(REC_SENT, WC_SUCCESS);
            bstate <= B_IDLE;
        end else begin
            bstate <= B_HANDOFF;
        end
    end
endtask

// a message goes to the responder: what its payload's movement and its record need, kept while
// the WQE registers take the next WQE
task take_job;
    begin
        b_idx      <= sq_next;
        b_len      <= w_len;
        b_write    <= w_op == WR_RDMA_WRITE;
        b_read     <= is_read;
        b_atomic   <= is_atomic;
        b_cas      <= is_cas;
        b_swap     <= w_swap;
        b_cmp_add  <= w_cmp_add;
        b_sgl      <= local_sgl;
        b_local    <= local_addr;
        b_wr_id    <= w_wr_id;
        b_wc_op    <= wc_op;
        b_signaled <= w_flags[SF_SIGNALED];
        b_first    <= qp_sq_psn;
        b_end      <= qp_sq_psn + msg_pkts;
        b_mtu      <= pmtu;
    end
endtask

// the WQE's fields (docs/host-interface.md), SGEs 1-3 from its second 64 bytes
task take_wqe(input [1023:0] wqe);
    begin
        w_op    <= wqe[0*8 +: 8];
        w_flags <= wqe[1*8 +: 8];
        w_nsge  <= wqe[2*8 +: 8];
        w_imm   <= wqe[4*8 +: 32];
        w_wr_id <= wqe[8*8 +: 64];
        sge_addr[0] <= wqe[16*8 +: 64];
        sge_len[0]  <= wqe[24*8 +: 32];
        sge_lkey[0] <= wqe[28*8 +: 32];
        w_raddr <= wqe[32*8 +: 64];
        w_rkey  <= wqe[40*8 +: 32];
        w_ah    <= wqe[44*8 +: 32];
        w_rqpn  <= wqe[48*8 +: 32];
        w_rqkey <= wqe[52*8 +: 32];
        w_swap  <= wqe[56*8 +: 64];
        for (n = 1; n < 4; n = n + 1) begin
            sge_addr[n] <= wqe[512 + (n-1)*128 +: 64];
            sge_len[n]  <= wqe[512 + (n-1)*128 + 64 +: 32];
            sge_lkey[n] <= wqe[512 + (n-1)*128 + 96 +: 32];
        end
        if (wqe[0*8 +: 8] == WR_ATOMIC_WRITE) begin
            // its one source: the 8 bytes at 0x38 of the WQE in its ring slot
            w_nsge      <= 8'd1;
            sge_len[0]  <= 32'd8;
            sge_host[0] <= sq_slot + {{(ADDR_WIDTH-6){1'b0}}, 6'd56};
        end
    end
endtask

// the payload is in place: the END lets the responder write the receive completion
task send_end;
    begin
        m_msg_kind  <= 2'd1;
        m_msg_valid <= 1'b1;
        state <= S_END_WAIT;
    end
endtask

// every SGE checked: the path (packets, or the bypass when the destination is the port
// itself), decided the cycle the last check comes back
task route;
    begin
        first_psn <= qp_sq_psn;
        end_psn   <= qp_sq_psn + msg_pkts;
        if (!loopback || !bypass_en) begin
            if (dest_qpn[31:24] != 8'd0) begin
                // no packet can name that QP: it is unreachable, as on the bypass
                status <= is_rc ? WC_RETRY_EXC_ERR : WC_SUCCESS;
                state  <= S_RECORD;
            end else if (una_past) begin
                // issued again, and every PSN of it is acknowledged already
                qp_set_psn   <= 1'b1;
                qp_psn_value <= qp_sq_psn + msg_pkts;
                record(REC_RC, 1'b0, qp_sq_psn, qp_sq_psn + msg_pkts);
                state <= S_IDLE;
            end else begin
                wire_internal <= loopback;
                tx_psn     <= una_inside ? win_una : qp_sq_psn;
                m_tx_valid <= 1'b1;
                state <= S_WIRE_WAIT;
            end
        end else if (win_wired) begin
            // the bypass is immediate: it waits for the QP's packets to be answered
            iss_hold <= 1'b1;
            state    <= S_IDLE;
        end else if (!my_pkey[15]) begin
            // The port is a limited member of its partition: a packet it sends to itself
            // is limited to limited, which the port drops on arrival (IBTA 10.9.3), so the
            // bypass drops the message too: as for an unreachable destination
            count_loopback(w_len);
            status <= is_rc ? WC_RETRY_EXC_ERR : WC_SUCCESS;
            state  <= S_RECORD;
        end else begin
            m_msg_kind  <= 2'd0;
            m_msg_valid <= 1'b1;
            take_job;
            if (receives) begin
                state <= S_START_WAIT;
            end else begin
                // the back waits for the answer; the turn goes on with the next WQE
                bstate <= B_START;
                cont   <= 1'b1;
                state  <= S_PICK;
            end
        end
    end
endtask

// the message goes to the responder: its START is what the back holds now (the back hands its
// message over this cycle) or nothing; otherwise it waits for the back
wire to_back  = loopback && bypass_en && !win_wired && my_pkey[15] && !receives;
wire route_now = alone || (back_job && job_ready && !job_failed && to_back);
task route_or_wait;
    begin
        if (route_now)
            route;
        else
            state <= S_ROUTE;
    end
endtask

// the pick finds a WQE to issue on the QP (while the back holds a message: only one at hand)
wire pick_ok = qp_sq_pi != sq_next && sq_room && !win_held && !qp_rnr_waiting &&
               (qp_state == QPS_RTS || qp_state == QPS_ERR) &&
               (alone || (cont && ra_hit && (!m_msg_valid || m_msg_ready)));
assign pick_fetch = state == S_PICK && !squash && pick_ok && !cont && !ra_busy;

// the back ended without handing its message over: the WQE at hand is picked again
task pick_again;
    begin
        squash <= 1'b0;
        turn   <= squash_turn;
        state  <= S_IDLE;
    end
endtask

always @(posedge clk) begin
    qp_sq_issue <= 1'b0;
    qp_rnr_wait <= 1'b0;
    qp_set_psn  <= 1'b0;
    rec_valid   <= 1'b0;
    iss_hold    <= 1'b0;
    iss_kick    <= 1'b0;
    ra_refetch  <= 1'b0;
    ra_drop     <= 1'b0;
    if (bp_done && bp_error) begin
        fail_seen <= 1'b1;
        fail_qpn  <= bp_qpn;
    end
    if (m_prot_valid && m_prot_ready) m_prot_valid <= 1'b0;
    if (m_msg_valid && m_msg_ready)   m_msg_valid  <= 1'b0;
    if (m_tx_valid && m_tx_ready)     m_tx_valid   <= 1'b0;

    // the back: a message without a receive WQE at the responder, then handed to the DMA queue
    // (before the front: a front that routes in the cycle the back hands over keeps it busy)
    case (bstate)
        B_START: if (s_rsp_valid) begin
            remote_addr <= s_rsp_addr;
            remote_sgl  <= s_rsp_sgl;
            if (!back_answered) begin
                // refused, dropped, or nothing to move: it completes here
                count_loopback(b_len);
                record_back(REC_DONE, s_rsp_status);
                squash      <= s_rsp_status != WC_SUCCESS;
                squash_turn <= 1'b1;
                bstate <= B_IDLE;
            end else begin
                hand_over;
            end
        end

        B_HANDOFF: hand_over;
        default: ;
    endcase

    case (state)
        S_IDLE: begin
            cont <= turn;
            turn <= 1'b0;
            if (turn) begin
                state <= S_PICK;
            end else if (sched_valid) begin
                // a new turn: what the read-ahead holds may be another QP's or stale
                qp_qpn    <= sched_qpn;
                ra_drop   <= 1'b1;
                fail_seen <= 1'b0;
                state     <= S_PICK;
            end
        end

        // The scheduler's choice may be a cycle stale (an index that just moved), so the
        // work is checked again on the live context.
        // While the back holds a message, only a WQE at hand is taken (once the back's START
        // has left: its fields are the WQE registers until then); anything else waits.
        S_PICK: begin
            status <= WC_SUCCESS;
            if (squash) begin
                pick_again;
            end else if (pick_ok) begin
                // the turn ends where its read-ahead does: back to the scheduler's round robin
                // (in a turn: at a new one, the read-ahead is being dropped this cycle; a new
                // turn's fetch goes out now: pick_fetch)
                if (cont && ra_hit) begin
                    take_wqe(ra_wqe);
                    state <= S_DECODE;
                end else begin
                    state <= cont && !ra_pending ? S_IDLE : S_LOAD_WAIT;
                end
            end else if (!alone) begin
                // waits for the back
            end else if (qp_state == QPS_ERR && win_busy) begin
                // WQEs outstanding on a QP in ERR: the completer flushes them
                iss_kick <= 1'b1;
                state <= S_IDLE;
            end else if (qp_state == QPS_ERR && qp_sq_pi == sq_next) begin
                // only receive WQEs left on a QP in ERR: the responder flushes one
                m_msg_kind  <= 2'd2;
                m_msg_valid <= 1'b1;
                state <= S_FLUSH_WAIT;
            end else begin
                state <= S_IDLE;
            end
        end

        S_FLUSH_WAIT: if (s_rsp_valid) state <= S_IDLE;

        // the WQE from the read-ahead (as soon as its beats are in), fetched first if it is not
        // there; a fetch that failed is done again for this WQE alone, and when that fails too,
        // the WQE completes in error as an all-zero WQE (wr_id 0): whatever the bus returned
        // with the error is not a WQE
        S_LOAD_WAIT: if (ra_hit) begin
            take_wqe(ra_wqe);
            state <= S_DECODE;
        end else if (!ra_busy && !ra_refetch) begin
            if (ra_failed && ra_alone) begin
                take_wqe(1024'd0);
                status <= WC_GENERAL_ERR;
                state  <= S_DECODE;
            end else begin
                ra_alone_next <= ra_failed;
                ra_refetch    <= 1'b1;
            end
        end

        // while the back holds a message, only a WQE that passes goes on to its lkey checks
        S_DECODE: begin
            if (squash) begin
                pick_again;
            end else if (!alone && !decode_passes) begin
                // waits for the back
            end else if (qp_state == QPS_ERR) begin
                status <= WC_WR_FLUSH_ERR;
                state  <= S_RECORD;
            end else if (status != WC_SUCCESS) begin
                state  <= S_RECORD;
            end else if (!op_ok) begin
                status <= WC_LOC_QP_OP_ERR;
                state  <= S_RECORD;
            end else if (is_mw_op) begin
                m_prot_valid <= 1'b1;
                state <= S_MW_WAIT;
            end else if ((is_ud && !ah_ok) || sge_bad) begin
                status <= WC_LOC_QP_OP_ERR;
                state  <= S_RECORD;
            end else if (len_bad) begin
                status <= WC_LOC_LEN_ERR;
                state  <= S_RECORD;
            end else if (read_wait) begin
                // taken again when an outstanding WQE finishes
                iss_hold <= 1'b1;
                state    <= S_IDLE;
            end else begin
                si <= 2'd0;
                if (is_awrite) begin
                    route_or_wait;  // its payload is in the WQE: no lkey to check
                end else if (sge_len[0] != 32'd0) begin
                    m_prot_valid <= 1'b1;
                    state <= S_LKEY_WAIT;
                end else begin
                    state <= S_LKEY;
                end
            end
        end

        // each SGE with bytes: its lkey, PD, bounds and rights; an SGE of no bytes is not checked
        S_LKEY: begin
            if (squash) begin
                pick_again;
            end else if (sge_len[si] != 32'd0) begin
                m_prot_valid <= 1'b1;
                state <= S_LKEY_WAIT;
            end else if (last_sge) begin
                route_or_wait;
            end else begin
                si <= si + 2'd1;
            end
        end

        S_LKEY_WAIT: if (s_prot_valid) begin
            sge_host[si] <= s_prot_data[ADDR_WIDTH:1];
            if (squash) begin
                pick_again;
            end else if (!s_prot_data[0]) begin
                status <= WC_LOC_PROT_ERR;
                state  <= S_RECORD;
            end else if (last_sge) begin
                route_or_wait;
            end else begin
                si    <= si + 2'd1;
                state <= S_LKEY;
            end
        end

        S_ROUTE: begin
            if (squash)
                pick_again;
            else if (route_now)
                route;
        end

        S_MW_WAIT: if (s_prot_valid) begin
            if (!s_prot_data[0])
                status <= WC_MW_BIND_ERR;
            state <= S_RECORD;
        end

        S_START_WAIT: if (s_rsp_valid) begin
            remote_addr <= s_rsp_addr;
            remote_sgl  <= s_rsp_sgl;
            // a message counts once, on its last try (RNR retries are not new messages)
            if (!retrying)
                count_loopback(w_len);
            if (s_rsp_rnr) begin
                if (!retrying) begin
                    status <= WC_RNR_RETRY_EXC_ERR;
                    state  <= S_RECORD;
                end else begin
                    // leave the WQE at the head of the queue and back off
                    qp_rnr_wait  <= 1'b1;
                    qp_rnr_cycles <= rnr_cycles(s_rsp_rnr_timer);
                    state <= S_IDLE;
                end
            end else if (s_rsp_status != WC_SUCCESS || !s_rsp_place) begin
                status <= s_rsp_status;
                state  <= S_RECORD;
            end else begin
                state <= S_SERIAL;
            end
        end

        // a message that consumes a receive WQE: its payload moves once the messages handed
        // over before it have theirs in place, then its END writes the receive completion
        S_SERIAL: begin
            if (job_failed) begin
                state <= S_IDLE;
            end else if (job_idle) begin
                if (w_len != 32'd0)
                    state <= S_COPY_WAIT;
                else
                    send_end;
            end
        end

        S_COPY_WAIT: if (job_done && !job_notify) begin
            if (job_error) begin
                status <= WC_GENERAL_ERR;
                state  <= S_RECORD;
            end else begin
                send_end;
            end
        end

        S_END_WAIT: if (s_rsp_valid) state <= S_RECORD;

        // handed to the port: the completer waits for its last packet (UC, UD) or its answers
        S_WIRE_WAIT: if (m_tx_ready) begin
            qp_set_psn   <= 1'b1;
            qp_psn_value <= end_psn;
            record(is_rc ? REC_RC : REC_SENT, 1'b1, first_psn, end_psn);
            state <= S_IDLE;
        end

        // finished here (the bypass, an error found here, a flush); a failure holds the QP
        // until the completer reaches it (no later WQE goes out after a failed one). An lkey
        // refused while the back holds a message waits for it.
        S_RECORD: begin
            if (squash) begin
                pick_again;
            end else if (alone) begin
                record(REC_DONE, 1'b0, first_psn, end_psn);
                state <= S_IDLE;
            end
        end

        default: state <= S_IDLE;
    endcase

    if (rst) begin
        state        <= S_IDLE;
        bstate       <= B_IDLE;
        squash       <= 1'b0;
        turn         <= 1'b0;
        cont         <= 1'b0;
        fail_seen    <= 1'b0;
        ra_refetch   <= 1'b0;
        ra_drop      <= 1'b0;
        qp_qpn       <= {QPN_BITS{1'b0}};
        m_msg_valid  <= 1'b0;
        m_msg_kind   <= 2'd0;
        m_prot_valid <= 1'b0;
        m_tx_valid   <= 1'b0;
        qp_set_psn   <= 1'b0;
        rec_valid    <= 1'b0;
        lb_msgs      <= 64'd0;
        lb_bytes     <= 64'd0;
    end
end

endmodule

`resetall
`endif
