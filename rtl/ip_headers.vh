// IP headers as RoCE v2 sends them and the GRH that shares IPv6's layout (included inside
// modules, after wire_order.vh). Each is a byte string with the first wire byte in bits [7:0].
/* verilator lint_off UNUSEDSIGNAL */

// A GID that is an IPv4 address: ::ffff:a.b.c.d (RoCE v2 sends such a packet over IPv4).
function ipv4_mapped(input [127:0] gid);
    ipv4_mapped = gid[127:32] == 96'h0000_0000_0000_0000_0000_FFFF;
endfunction

// IPv4 without options: DSCP/ECN = tos, identification 0, DF, protocol 17 (UDP), the header
// checksum (RFC 791: the one's complement of the one's complement sum of its 16-bit words).
function [159:0] ipv4_header(input [7:0] tos, input [15:0] total_len, input [7:0] ttl,
                             input [31:0] src, input [31:0] dst);
    reg [19:0] sum;
    reg [15:0] folded;
    begin
        sum = 20'h04500 + {12'd0, tos} + {4'd0, total_len} + 20'h04000 + {4'd0, ttl, 8'h11}
            + {4'd0, src[31:16]} + {4'd0, src[15:0]} + {4'd0, dst[31:16]} + {4'd0, dst[15:0]};
        sum = {4'd0, sum[15:0]} + {16'd0, sum[19:16]};
        folded = sum[15:0] + {12'd0, sum[19:16]};
        ipv4_header = {be32(dst), be32(src), be16(~folded), 8'h11, ttl, be16(16'h4000), 16'd0,
                       be16(total_len), tos, 8'h45};
    end
endfunction

// IPv6, or an InfiniBand GRH (next_hdr 0x1B): version 6, traffic class, flow label, payload
// length, next header, hop limit, source and destination addresses (GIDs).
function [319:0] ipv6_header(input [7:0] tc, input [19:0] flow, input [15:0] paylen,
                             input [7:0] next_hdr, input [7:0] hops,
                             input [127:0] src, input [127:0] dst);
    ipv6_header = {be128(dst), be128(src), hops, next_hdr, be16(paylen), be32({4'd6, tc, flow})};
endfunction
/* verilator lint_on UNUSEDSIGNAL */
