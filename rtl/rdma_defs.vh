// Encodings shared by the rdma_dev blocks: verbs values (rdma-core) and command opcodes.
/* verilator lint_off UNUSEDPARAM */
// Included inside modules; every name is a localparam so nothing leaks between files.

// QP states (enum ibv_qp_state)
localparam [2:0] QPS_RESET = 3'd0, QPS_INIT = 3'd1, QPS_RTR = 3'd2, QPS_RTS = 3'd3, QPS_ERR = 3'd6;

// QP types (enum ibv_qp_type)
localparam [2:0] QPT_RC = 3'd2, QPT_UC = 3'd3, QPT_UD = 3'd4;

// send WQE opcodes (enum ibv_wr_opcode)
localparam [7:0] WR_RDMA_WRITE = 8'd0, WR_RDMA_WRITE_IMM = 8'd1, WR_SEND = 8'd2,
                 WR_SEND_IMM = 8'd3, WR_RDMA_READ = 8'd4, WR_ATOMIC_CMP_AND_SWP = 8'd5,
                 WR_ATOMIC_FETCH_AND_ADD = 8'd6, WR_LOCAL_INV = 8'd7, WR_BIND_MW = 8'd8,
                 WR_SEND_INV = 8'd9, WR_ATOMIC_WRITE = 8'd15;

// send flags (enum ibv_send_flags)
localparam integer SF_FENCE = 0, SF_SIGNALED = 1, SF_SOLICITED = 2;   // bit positions

// completion status (enum ibv_wc_status)
localparam [7:0] WC_SUCCESS = 8'd0, WC_LOC_LEN_ERR = 8'd1, WC_LOC_QP_OP_ERR = 8'd2,
                 WC_LOC_PROT_ERR = 8'd4, WC_MW_BIND_ERR = 8'd6, WC_WR_FLUSH_ERR = 8'd5, WC_REM_INV_REQ_ERR = 8'd9,
                 WC_REM_ACCESS_ERR = 8'd10, WC_REM_OP_ERR = 8'd11, WC_RETRY_EXC_ERR = 8'd12,
                 WC_RNR_RETRY_EXC_ERR = 8'd13, WC_GENERAL_ERR = 8'd21;

// completion opcodes (enum ibv_wc_opcode)
localparam [7:0] WCO_SEND = 8'd0, WCO_RDMA_WRITE = 8'd1, WCO_RDMA_READ = 8'd2,
                 WCO_COMP_SWAP = 8'd3, WCO_FETCH_ADD = 8'd4, WCO_BIND_MW = 8'd5,
                 WCO_LOCAL_INV = 8'd6, WCO_ATOMIC_WRITE = 8'd9, WCO_RECV = 8'd128,
                 WCO_RECV_RDMA_IMM = 8'd129;

// access flags (enum ibv_access_flags), bit positions
localparam integer ACC_LOCAL_WRITE = 0, ACC_REMOTE_WRITE = 1, ACC_REMOTE_READ = 2,
                   ACC_REMOTE_ATOMIC = 3, ACC_MW_BIND = 4;

// command opcodes and results (docs/host-interface.md)
localparam [7:0] CMD_CREATE_CQ = 8'h01, CMD_DESTROY_CQ = 8'h02, CMD_REG_MR = 8'h03,
                 CMD_DEREG_MR = 8'h04, CMD_CREATE_AH = 8'h05, CMD_DESTROY_AH = 8'h06,
                 CMD_CREATE_QP = 8'h07, CMD_MODIFY_QP = 8'h08, CMD_QUERY_QP = 8'h09,
                 CMD_DESTROY_QP = 8'h0A, CMD_RESIZE_CQ = 8'h0B, CMD_ALLOC_MW = 8'h0C,
                 CMD_DEALLOC_MW = 8'h0D, CMD_CREATE_SRQ = 8'h0E, CMD_MODIFY_SRQ = 8'h0F,
                 CMD_QUERY_SRQ = 8'h10, CMD_DESTROY_SRQ = 8'h11;
localparam [7:0] CMD_LAST = CMD_DESTROY_SRQ;   // highest command opcode
// doorbell strobes of rdma_regs: which index a write moves
localparam [2:0] DB_SQ = 3'd0, DB_RQ = 3'd1, DB_CQ_CI = 3'd2, DB_CQ_ARM = 3'd3, DB_SRQ = 3'd4;
localparam [7:0] CR_OK = 8'd0, CR_BAD_INDEX = 8'd1, CR_BAD_STATE = 8'd2, CR_BAD_PARAM = 8'd3,
                 CR_BUSY = 8'd4;

// protection checker requests (prot_check.v): what is asked of a key
localparam [1:0] PROT_CHECK = 2'd0, PROT_BIND = 2'd1, PROT_INV_LOCAL = 2'd2, PROT_INV_REMOTE = 2'd3;
localparam integer PROT_REQ_WIDTH = 238;
function [PROT_REQ_WIDTH-1:0] prot_request(input [1:0] op, input [23:0] qpn,
                                           input [31:0] mr_key, input [31:0] new_key,
                                           input [3:0] need, input [15:0] pd, input [31:0] len,
                                           input [63:0] va, input [31:0] key);
    prot_request = {op, qpn, mr_key, new_key, need, pd, len, va, key};
endfunction

// A work-queue doorbell moves the producer index `pi` to `value` only forward and by at most the
// ring's free entries (2^log - (pi - ci), everything modulo 2^16): nothing posted earlier is
// skipped or run twice (docs/host-interface.md)
function ring_room(input [15:0] pi, input [15:0] ci, input [3:0] log, input [15:0] value);
    ring_room = {1'b0, value - pi} <= (17'd1 << log) - {1'b0, pi - ci};
endfunction

// DMA mover modes
localparam [2:0] DMA_COPY = 3'd0, DMA_STORE = 3'd1, DMA_LOAD = 3'd2,
                 DMA_READ_STREAM = 3'd3, DMA_WRITE_STREAM = 3'd4, DMA_ATOMIC = 3'd5;
// DMA_ATOMIC's data block: {compare_swap, swap[63:0], compare_add[63:0]} in bits [128:0]
localparam integer ATOM_CMP_ADD = 0, ATOM_SWAP = 64, ATOM_IS_CAS = 128;
// ... built once for both paths: CompareSwap's compare and swap, or FetchAdd's addend
function [511:0] atomic_block(input cas, input [63:0] swap, input [63:0] compare_add);
    atomic_block = {383'd0, cas, swap, compare_add};
endfunction
// Scatter/gather: a WQE has up to SGE_MAX elements (docs/host-interface.md). The DMA engine
// (dma_sgl) takes a COPY's, READ_STREAM's or WRITE_STREAM's source list in its data bits
// [255:0] and destination list in [511:256]: SGE_MAX entries of {len[31:0], host address[31:0]}
// each, entry 0 lowest; a side whose list has no bytes is the plain address instead, and a side
// with a list has its address field as the byte offset into the list.
localparam [7:0] SGE_MAX = 8'd4;
// ... a list of one piece
function [255:0] sgl_one(input [31:0] len, input [31:0] addr);
    sgl_one = {192'd0, len, addr};
endfunction
// A GID arrives in a command block as 16 bytes in network order (byte 0 first in memory, so in
// bits [7:0]); the device keeps it as a number whose most significant byte is byte 0.
function [127:0] gid_from_block(input [127:0] block);
    integer k;
    for (k = 0; k < 16; k = k + 1)
        gid_from_block[(15 - k)*8 +: 8] = block[k*8 +: 8];
endfunction
// a MAC address in a command block (network order): its first byte in bits [47:40]
function [47:0] mac_from_block(input [47:0] block);
    integer k;
    for (k = 0; k < 6; k = k + 1)
        mac_from_block[(5 - k)*8 +: 8] = block[k*8 +: 8];
endfunction

// how the completer finishes an issued WQE: done by the requester, done when its last packet
// has left (UC, UD), done when acknowledged (RC)
localparam [1:0] REC_DONE = 2'd0, REC_SENT = 2'd1, REC_RC = 2'd2;

/* verilator lint_on UNUSEDPARAM */
