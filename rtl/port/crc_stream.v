// Reflected CRC over a byte stream, DATA_WIDTH/8 bytes a beat (InfiniBand ICRC and VCRC).
//
// Byte 0 of the stream is s_data[7:0] of the first beat, and each byte enters least-significant
// bit first (a reflected CRC, like zlib's crc32). s_keep enables bytes contiguously from byte 0
// of the beat; disabled bytes may hold anything. A beat with s_first set starts again from INIT.
// m_crc is the finished CRC (final XOR applied) of the stream including the current beat, so a
// packetizer can append it in the same cycle as the last data beat.
//
// How one beat is folded in, for any number n of enabled bytes, with one shifter and one XOR
// matrix rather than a chain of per-byte steps (which would grow with the beat width):
//   - a CRC is linear, and a register value r entering the next bits is the same as a zero
//     register with r XORed into the first CRC_WIDTH message bits; bits of r beyond the 8n
//     message bits are still in the register afterwards, shifted down by 8n;
//   - from a zero register, leading zero bits change nothing;
// so the beat's n bytes XOR the register are shifted to the top of the beat (zeros in front,
// the disabled bytes shifted out), run through the constant full-beat matrix, and XORed with
// the register shifted down by 8n bits.
`ifndef RDMA_CRC_STREAM_V
`define RDMA_CRC_STREAM_V
`default_nettype none

module crc_stream #(
    parameter DATA_WIDTH = 64,                        // beat width in bits, a multiple of 8
    parameter CRC_WIDTH = 32,                         // CRC width in bits, 2 .. DATA_WIDTH
    parameter [CRC_WIDTH-1:0] POLY = 32'hEDB88320,    // polynomial, bit-reversed (reflected)
    parameter [CRC_WIDTH-1:0] INIT = 32'hFFFFFFFF,    // register value before the first byte
    parameter [CRC_WIDTH-1:0] XOR_OUT = 32'hFFFFFFFF  // XORed into the register to give the CRC
) (
    input  wire                     clk,
    input  wire                     rst,

    input  wire                     s_valid,    // a beat is present (already handshaken)
    input  wire                     s_first,    // this beat starts a new stream
    input  wire [DATA_WIDTH-1:0]    s_data,
    input  wire [DATA_WIDTH/8-1:0]  s_keep,     // enabled bytes, contiguous from byte 0

    output wire [CRC_WIDTH-1:0]     m_crc       // CRC of the stream through the current beat
);

localparam KEEP_WIDTH = DATA_WIDTH / 8;
localparam CNT_WIDTH = $clog2(KEEP_WIDTH + 1);

// Row j of the full-beat matrix: the data bits whose parity is CRC bit j after a whole beat from
// a zero register (sel is 1 << j). A lone 1 in the last bit leaves POLY; each earlier bit sees one
// more zero bit after it.
function [DATA_WIDTH-1:0] matrix_row(input [CRC_WIDTH-1:0] sel);
    integer n;
    reg [CRC_WIDTH-1:0] v;
    begin
        matrix_row = {DATA_WIDTH{1'b0}};
        v = POLY;
        for (n = DATA_WIDTH - 1; n >= 0; n = n - 1) begin
            matrix_row[n] = |(v & sel);
            v = v[0] ? ((v >> 1) ^ POLY) : (v >> 1);
        end
    end
endfunction

// Enabled bytes in this beat. The enables are a thermometer code, so bit b of the count is set
// when the count mod 2^(b+1) is at least 2^b: some byte j*2^(b+1) + 2^b - 1 is enabled and
// byte (j+1)*2^(b+1) - 1 is not. An OR of such pairs has log depth, where a priority encoder
// would chain through every byte of the beat. keep_ext reads 0 beyond the beat.
function [2*KEEP_WIDTH-1:0] pair_low(input integer b);   // the bytes j*2^(b+1) + 2^b - 1
    integer lo;
    begin
        pair_low = {2*KEEP_WIDTH{1'b0}};
        for (lo = (1 << b) - 1; lo < KEEP_WIDTH; lo = lo + (2 << b))
            pair_low[lo] = 1'b1;
    end
endfunction

reg  [CRC_WIDTH-1:0]  state;    // CRC register after the last beat (no final XOR)

wire [CRC_WIDTH-1:0]  start = s_first ? INIT : state;

// Procedural blocks over whole vectors: simulators evaluate them word by word, where the same
// logic as continuous assignments is evaluated gate by gate, bit by bit (Icarus). The matrix
// rows see a beat only while one is valid: between beats `aligned` rests at zero.
reg  [2*KEEP_WIDTH-1:0] keep_ext;
reg  [CNT_WIDTH-1:0]  count;
reg  [DATA_WIDTH-1:0] aligned;
reg  [CRC_WIDTH-1:0]  residue;
integer b;
always @* begin
    keep_ext = {{KEEP_WIDTH{1'b0}}, s_keep & {KEEP_WIDTH{s_valid}}};
    for (b = 0; b < CNT_WIDTH; b = b + 1)
        count[b] = |(keep_ext & ~(keep_ext >> (1 << b)) & pair_low(b));
    residue = start;
    aligned = {DATA_WIDTH{1'b0}};
    if (count != {CNT_WIDTH{1'b0}}) begin
        // the register XORs the first bytes; the beat's bytes go to its top, zeros in front
        aligned[CRC_WIDTH-1:0] = start;
        aligned = (s_data ^ aligned) << {KEEP_WIDTH[CNT_WIDTH-1:0] - count, 3'b000};
        residue = start >> {count, 3'b000};
    end
end

wire [CRC_WIDTH-1:0]  beat_crc;
genvar j;
generate
    for (j = 0; j < CRC_WIDTH; j = j + 1) begin : row
        localparam [CRC_WIDTH-1:0] SEL = {{(CRC_WIDTH-1){1'b0}}, 1'b1} << j;  // CRC bit j
        localparam [DATA_WIDTH-1:0] ROW = matrix_row(SEL);  // its constant taps
        reg parity;
        always @* parity = ^(aligned & ROW);
        assign beat_crc[j] = parity;
    end
endgenerate

wire [CRC_WIDTH-1:0]  next_state = beat_crc ^ residue;

assign m_crc = next_state ^ XOR_OUT;

always @(posedge clk) begin
    if (s_valid)
        state <= next_state;
    if (rst)
        state <= INIT;
end

endmodule

`resetall
`endif
