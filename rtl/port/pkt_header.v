// The headers of one packet of a message (combinational), as a byte string with the first
// wire byte in hdr[7:0], and their length: on InfiniBand LRH, GRH (a global path) and BTH;
// on Ethernet (RoCE v2, IBTA Annex A17) the Ethernet header (an 802.1Q tag with the SL as
// its PCP when the path has a VLAN), IPv4 (both GIDs IPv4-mapped) or IPv6, UDP to port 4791,
// then the BTH; then the extension headers the opcode carries. Multi-byte fields go on the wire
// most-significant byte first; GIDs and MACs too (sgid[127:120] is the first SGID byte).
//
// RoCE v2 has no LRH, so the path is always global there (the GIDs are the IP addresses) and
// the LIDs are not sent. The UDP source port is the flow's entropy for ECMP: from the flow
// label when the path has one, else from the two QP numbers (XOR, so both directions of a
// connection take the same), in 0xC000 .. 0xFFFF.
//
// The opcode follows from the message kind, the transport and the packet's place in the
// message; it decides the extension headers, and with the payload length they decide PktLen,
// PayLen and PadCnt. The atomic kinds (5..7) are single RC packets without payload. An RC SEND
// with `inv` ends with SEND_LAST/ONLY_WITH_INVALIDATE, its IETH (`imm`: the R_Key's bytes in
// wire order) where ImmDt would be. An RC WRITE with `awrite` is an ATOMIC WRITE (IBTA 1.5):
// one packet, opcode 0x1D, a RETH and its 8 bytes. A `cnp` (Ethernet) is a RoCE v2
// congestion notification (IBTA Annex A17.9.3) whatever the kind says: opcode 0x81, BECN set in
// the BTH, no AckReq, then 16 reserved zero bytes.
`ifndef RDMA_PKT_HEADER_V
`define RDMA_PKT_HEADER_V
`default_nettype none

module pkt_header (
    // 0 SEND, 1 RDMA WRITE, 2 READ request, 3 READ response, 4 ACK,
    // 5 COMPARE_SWAP request, 6 FETCH_ADD request, 7 ATOMIC_ACKNOWLEDGE
    input  wire [2:0]   kind,
    input  wire [2:0]   transport,  // 2 RC, 3 UC, 4 UD (ignored for the atomic kinds: always RC)
    input  wire         eth,        // the port's link layer is Ethernet: a RoCE v2 frame
    input  wire [47:0]  dmac,       // Ethernet: destination and source MAC
    input  wire [47:0]  smac,
    input  wire [12:0]  vlan,       // Ethernet: [12] 802.1Q tagged, [11:0] VLAN ID
    input  wire         imm_valid,
    input  wire         inv,        // imm is an IETH (RC SEND with invalidate)
    input  wire         awrite,     // an RC WRITE that is an ATOMIC WRITE: one packet, 0x1D
    input  wire         cnp,        // Ethernet: a CNP to dest_qpn (no payload)
    input  wire [31:0]  imm,
    input  wire         solicited,
    input  wire [15:0]  dlid,
    input  wire [15:0]  slid,
    input  wire [3:0]   sl,
    input  wire         is_global,
    input  wire [7:0]   tclass,
    input  wire [19:0]  flow_label,
    input  wire [7:0]   hop_limit,
    input  wire [127:0] sgid,
    input  wire [127:0] dgid,
    input  wire [15:0]  pkey,
    input  wire [23:0]  dest_qpn,
    input  wire [31:0]  qkey,
    input  wire [23:0]  src_qpn,
    input  wire [63:0]  raddr,
    input  wire [31:0]  rkey,
    input  wire [31:0]  dma_len,
    input  wire [7:0]   syndrome,
    input  wire [23:0]  msn,
    input  wire [63:0]  atomic_a,   // AtomicETH Swap/Add Data; AtomicAckETH Original Remote Data
    input  wire [63:0]  atomic_b,   // AtomicETH Compare Data

    input  wire         first,      // the message's first packet
    input  wire         last,       // the message's last packet (both for an only packet)
    input  wire [23:0]  psn,
    input  wire         ackreq_mid, // an RC request asks for an ACK here even if not its last packet
    input  wire [12:0]  plen,       // payload bytes of this packet

    output reg  [847:0] hdr,        // up to 106 bytes: Ethernet + 802.1Q + IPv6 + UDP + BTH + AtomicETH
    output reg  [6:0]   hdr_len,    // header bytes
    output reg  [10:0]  pktlen,     // IB: LRH PktLen (4-byte words LRH .. ICRC); Ethernet: the
                                    // frame's 4-byte words, destination MAC .. FCS, rounded up
    output reg  [1:0]   eth_pad     // Ethernet: zero bytes after the ICRC that make 64-byte frames
);

localparam [2:0] K_SEND = 3'd0;
localparam [2:0] K_WRITE = 3'd1;
localparam [2:0] K_READ_REQ = 3'd2;
localparam [2:0] K_READ_RESP = 3'd3;
localparam [2:0] K_ACK = 3'd4;
localparam [2:0] K_CMP_SWAP = 3'd5;
localparam [2:0] K_FETCH_ADD = 3'd6;
localparam [2:0] K_ATOMIC_ACK = 3'd7;
localparam [2:0] T_RC = 3'd2;
localparam [2:0] T_UC = 3'd3;
localparam [2:0] T_UD = 3'd4;

`include "wire_order.vh"
`include "ip_headers.vh"

wire ends = last;                           // last or only
wire middle = ~first & ~last;
wire only = first & last;
wire with_ieth = inv & ends & kind == K_SEND;
wire with_imm = (imm_valid | with_ieth) & ends & (kind == K_SEND || kind == K_WRITE) & ~cnp;
wire atomic_req = (kind == K_CMP_SWAP || kind == K_FETCH_ADD) && !cnp;
// atomics exist on RC only, so their opcode and headers never follow another transport
wire rc = transport == T_RC || atomic_req || kind == K_ATOMIC_ACK;
wire has_deth = transport == T_UD && !rc && !cnp;
wire has_reth = ((kind == K_WRITE && first) || kind == K_READ_REQ) && !cnp;
wire has_aeth = ((kind == K_READ_RESP && !middle) || kind == K_ACK || kind == K_ATOMIC_ACK) && !cnp;
wire has_atomic_ack = kind == K_ATOMIC_ACK && !cnp;
// an atomic request always asks for its (atomic) ACK
wire ackreq = (transport == T_RC && (ends || ackreq_mid) && (kind == K_SEND || kind == K_WRITE)
               && !cnp) || atomic_req;
wire [1:0] padcnt = 2'd0 - plen[1:0];

// Low five bits of the opcode for the packet's role.
reg [4:0] low;
always @* begin
    case (kind)
    K_SEND:      low = only ? (with_ieth ? 5'h17 : with_imm ? 5'h05 : 5'h04) : first ? 5'h00 :
                       last ? (with_ieth ? 5'h16 : with_imm ? 5'h03 : 5'h02) : 5'h01;
    K_WRITE:     low = awrite ? 5'h1D : only ? (with_imm ? 5'h0B : 5'h0A) : first ? 5'h06 :
                       last ? (with_imm ? 5'h09 : 5'h08) : 5'h07;
    K_READ_REQ:  low = 5'h0C;
    K_READ_RESP: low = only ? 5'h10 : first ? 5'h0D : last ? 5'h0F : 5'h0E;
    K_ACK:       low = 5'h11;
    K_CMP_SWAP:  low = 5'h13;
    K_FETCH_ADD: low = 5'h14;
    default:     low = 5'h12;     // K_ATOMIC_ACK
    endcase
end
wire [2:0] high = rc ? 3'b000 : transport == T_UD ? 3'b011 : transport == T_UC ? 3'b001 : 3'b000;
wire [7:0] opcode = cnp ? 8'h81 : {high, low};

// Bytes after the GRH through the ICRC (GRH PayLen), and the header length.
reg [6:0] tr_len;     // BTH and extension headers
always @* begin
    tr_len = 7'd12;
    if (has_deth) tr_len = tr_len + 7'd8;
    if (cnp) tr_len = tr_len + 7'd16;
    if (has_reth) tr_len = tr_len + 7'd16;
    if (atomic_req) tr_len = tr_len + 7'd28;
    if (has_aeth) tr_len = tr_len + 7'd4;
    if (has_atomic_ack) tr_len = tr_len + 7'd8;
    if (with_imm) tr_len = tr_len + 7'd4;
end
wire [13:0] paylen = {7'd0, tr_len} + {1'b0, plen} + {12'd0, padcnt} + 14'd4;

// The BTH and the extension headers, byte 0 the BTH's first: at most 40 bytes (BTH and
// AtomicETH). Every field has one place per packet kind, so this is plain wiring and one
// multiplexer per byte, not a shifter: DETH, RETH, AtomicETH or AETH follow the BTH (at most
// one of them), the AtomicAckETH follows the AETH, and ImmDt follows whichever came before it.
reg  [319:0] tr;
wire [5:0]   imm_at = has_deth ? 6'd20 : has_reth ? 6'd28 : 6'd12;
always @* begin
    tr = 320'd0;
    tr[7:0]   = opcode;
    tr[15:8]  = {solicited & ends & (kind == K_SEND || kind == K_WRITE) & ~cnp, 1'b0, padcnt, 4'd0};
    tr[31:16] = be16(pkey);
    tr[39:32] = {1'b0, cnp, 6'd0};      // FECN, BECN: a CNP's BECN is set
    tr[63:40] = be24(dest_qpn);
    tr[71:64] = {ackreq, 7'd0};
    tr[95:72] = be24(psn);
    if (has_deth)
        tr[96 +: 64] = {be24(src_qpn), 8'd0, be32(qkey)};
    if (has_reth)
        tr[96 +: 128] = {be32(dma_len), be32(rkey), be64(raddr)};
    if (atomic_req)             // AtomicETH
        tr[96 +: 224] = {be64(atomic_b), be64(atomic_a), be32(rkey), be64(raddr)};
    if (has_aeth)
        tr[96 +: 32] = {be24(msn), syndrome};
    if (has_atomic_ack)         // AtomicAckETH
        tr[128 +: 64] = be64(atomic_a);
    // ImmDt is 4 opaque bytes: the WQE's, in their memory order (imm[7:0] first); an IETH
    // takes its place
    if (with_imm)
        case (imm_at)
            6'd12:   tr[96 +: 32]  = imm;
            6'd20:   tr[160 +: 32] = imm;
            default: tr[224 +: 32] = imm;
        endcase
end

// InfiniBand: LRH (VL 0, LVer 0; SL, LNH; DLID; PktLen; SLID), then the GRH when there is one
wire [10:0]  ib_words = {6'd0, tr_len[6:2]} + (is_global ? 11'd10 : 11'd0) + 11'd2
                      + plen[12:2] + {10'd0, plen[1:0] != 2'd0} + 11'd1;
wire [63:0]  lrh = {be16(slid), be16({5'd0, ib_words}), be16(dlid), sl, 2'b00, is_global ? 2'd3 : 2'd2, 8'd0};
wire [319:0] grh = ipv6_header(tclass, flow_label, {2'd0, paylen}, 8'h1B, hop_limit, sgid, dgid);

// RoCE v2: Ethernet (+ 802.1Q), IPv4 or IPv6, UDP
wire         v4 = ipv4_mapped(sgid);
wire [15:0]  udp_len = {2'd0, paylen} + 16'd8;
wire [19:0]  qpns = src_qpn[19:0] ^ dest_qpn[19:0];
wire [19:0]  flow = flow_label != 20'd0 ? flow_label : qpns;
wire [15:0]  sport = {2'b11, flow[13:0] ^ {8'd0, flow[19:14]}};
wire [63:0]  udp = {16'd0, be16(udp_len), be16(16'd4791), be16(sport)};
wire [159:0] ip4 = ipv4_header(tclass, udp_len + 16'd20, hop_limit, sgid[31:0], dgid[31:0]);
wire [319:0] ip6 = ipv6_header(tclass, flow_label, udp_len, 8'h11, hop_limit, sgid, dgid);
wire [15:0]  ethertype = v4 ? 16'h0800 : 16'h86DD;
wire [111:0] ether = {be16(ethertype), be48(smac), be48(dmac)};
wire [143:0] ether_tagged = {be16(ethertype), be16({sl[2:0], 1'b0, vlan[11:0]}), be16(16'h8100),
                             be48(smac), be48(dmac)};
wire [6:0]   eth_hdr_len = (vlan[12] ? 7'd18 : 7'd14) + (v4 ? 7'd20 : 7'd40) + 7'd8 + tr_len;
// the frame through ICRC and FCS is at least 62 bytes (untagged IPv4, a bare BTH); a MAC pads it to 64
wire [12:0]  frame = {6'd0, eth_hdr_len} + plen + {11'd0, padcnt} + 13'd8;   // below 4,300
wire [1:0]   short = frame < 13'd64 ? 2'd0 - frame[1:0] : 2'd0;   // 64 - frame
wire [12:0]  framed = frame + {11'd0, short};

always @* begin
    if (eth) begin
        hdr_len = eth_hdr_len;
        case ({vlan[12], v4})
            2'b00:   hdr = {{(848-320-64-320-112){1'b0}}, tr, udp, ip6, ether};
            2'b01:   hdr = {{(848-320-64-160-112){1'b0}}, tr, udp, ip4, ether};
            2'b10:   hdr = {tr, udp, ip6, ether_tagged};   // the longest: 106 bytes
            default: hdr = {{(848-320-64-160-144){1'b0}}, tr, udp, ip4, ether_tagged};
        endcase
        pktlen  = framed[12:2] + {10'd0, framed[1:0] != 2'd0};
        eth_pad = short;
    end else begin
        hdr_len = tr_len + (is_global ? 7'd48 : 7'd8);
        pktlen  = ib_words;
        hdr     = is_global ? {144'd0, tr, grh, lrh} : {464'd0, tr, lrh};
        eth_pad = 2'd0;
    end
end

endmodule

`resetall
`endif
