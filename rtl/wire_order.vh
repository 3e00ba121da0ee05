// Byte order between the wire and numbers (included inside modules). A header's bytes are held
// with the first wire byte in bits [7:0]; InfiniBand fields go most-significant byte first, so
// a field read from (or written to) such a byte string swaps its bytes. The swap is its own
// inverse: the same functions serve both directions.
function [15:0] be16(input [15:0] v);
    be16 = {v[7:0], v[15:8]};
endfunction
function [23:0] be24(input [23:0] v);
    be24 = {v[7:0], v[15:8], v[23:16]};
endfunction
function [31:0] be32(input [31:0] v);
    be32 = {v[7:0], v[15:8], v[23:16], v[31:24]};
endfunction
function [47:0] be48(input [47:0] v);
    be48 = {be16(v[15:0]), be32(v[47:16])};
endfunction
function [63:0] be64(input [63:0] v);
    be64 = {be32(v[31:0]), be32(v[63:32])};
endfunction
function [127:0] be128(input [127:0] v);
    be128 = {be64(v[63:0]), be64(v[127:64])};
endfunction
