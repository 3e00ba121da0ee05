// Appends a short tail (a CRC, and on Ethernet the padding before the FCS) after the last
// byte of each frame of a byte stream.
//
// The packetizer computes the ICRC and the VCRC over the beats that pass into this stage, and
// the CRC engines give their result in the same cycle as the frame's last beat (s_tail, read
// with s_valid & s_ready & s_last). The tail lands right after that beat's last enabled byte;
// when it does not fit the beat, the rest goes in one extra beat, for which the input waits one
// cycle. Every beat but a frame's last must be full; s_sb (sideband) rides with the frame.
`ifndef RDMA_PKT_APPEND_V
`define RDMA_PKT_APPEND_V
`default_nettype none

module pkt_append #(
    parameter DATA_WIDTH = 64,     // beat width in bits, at least 8 * TAIL_BYTES
    parameter TAIL_BYTES = 4,      // most bytes appended to a frame
    parameter SB_WIDTH = 12        // sideband bits carried with every beat
) (
    input  wire                     clk,
    input  wire                     rst,

    input  wire                     s_valid,
    output wire                     s_ready,
    input  wire [DATA_WIDTH-1:0]    s_data,
    input  wire [DATA_WIDTH/8-1:0]  s_keep,     // contiguous from byte 0
    input  wire                     s_last,
    input  wire [SB_WIDTH-1:0]      s_sb,
    input  wire [8*TAIL_BYTES-1:0]  s_tail,     // least-significant byte goes first
    input  wire [2:0]               s_tail_len, // bytes of s_tail appended, 1 .. TAIL_BYTES

    output reg                      m_valid,
    input  wire                     m_ready,
    output reg  [DATA_WIDTH-1:0]    m_data,
    output reg  [DATA_WIDTH/8-1:0]  m_keep,
    output reg                      m_last,
    output reg  [SB_WIDTH-1:0]      m_sb
);

localparam KEEP_WIDTH = DATA_WIDTH / 8;
localparam CNT_WIDTH = $clog2(KEEP_WIDTH + TAIL_BYTES + 1);
localparam WIDE = DATA_WIDTH + 8 * TAIL_BYTES;

reg                     sp_valid;   // tail bytes that did not fit the frame's last beat
reg [8*TAIL_BYTES-1:0]  sp_data;
reg [CNT_WIDTH-1:0]     sp_count;

wire load = ~m_valid | m_ready;
assign s_ready = load & ~sp_valid;

// Enabled bytes of the input beat. The keep is contiguous, so its top enabled byte is the
// one-hot keep & ~(keep >> 1), and bit j of the count is set where that index + 1 has bit j:
// a few vector operations instead of a loop over bytes, which simulators pay for every beat.
function [KEEP_WIDTH-1:0] count_bit(input integer j);   // top-byte positions giving count bit j
    integer b;
    begin
        for (b = 0; b < KEEP_WIDTH; b = b + 1)
            count_bit[b] = ((b + 1) >> j) % 2 == 1;
    end
endfunction

wire [KEEP_WIDTH-1:0] top_byte = s_keep & ~(s_keep >> 1);
wire [CNT_WIDTH-1:0] count;
genvar j;
generate
    for (j = 0; j < CNT_WIDTH; j = j + 1) begin : g_count
        assign count[j] = |(top_byte & count_bit(j));
    end
endgenerate

// The beat's bytes with the tail placed right after them; disabled input bytes are zeroed so
// the OR does not mix junk into the tail.
wire [DATA_WIDTH-1:0] clean = s_data & ~({DATA_WIDTH{1'b1}} << {count, 3'b000});
wire [WIDE-1:0] tail_wide = {{DATA_WIDTH{1'b0}}, s_tail};
wire [WIDE-1:0] merged = {{(8*TAIL_BYTES){1'b0}}, clean} | (tail_wide << {count, 3'b000});
wire [CNT_WIDTH-1:0] total = count + {{(CNT_WIDTH-3){1'b0}}, s_tail_len};
wire fits = total <= KEEP_WIDTH[CNT_WIDTH-1:0];

// A contiguous keep of n bytes.
function [KEEP_WIDTH-1:0] thermo(input [CNT_WIDTH-1:0] n);
    integer b;
    begin
        for (b = 0; b < KEEP_WIDTH; b = b + 1)
            thermo[b] = b < n;
    end
endfunction

always @(posedge clk) begin
    if (load) begin
        if (sp_valid) begin
            m_valid <= 1'b1;
            m_data <= {{(DATA_WIDTH-8*TAIL_BYTES){1'b0}}, sp_data};
            m_keep <= thermo(sp_count);
            m_last <= 1'b1;
            sp_valid <= 1'b0;
        end else if (s_valid) begin
            m_valid <= 1'b1;
            m_sb <= s_sb;
            if (!s_last) begin
                m_data <= s_data;
                m_keep <= s_keep;
                m_last <= 1'b0;
            end else if (fits) begin
                m_data <= merged[DATA_WIDTH-1:0];
                m_keep <= thermo(total);
                m_last <= 1'b1;
            end else begin
                m_data <= merged[DATA_WIDTH-1:0];
                m_keep <= {KEEP_WIDTH{1'b1}};
                m_last <= 1'b0;
                sp_valid <= 1'b1;
                sp_data <= merged[WIDE-1:DATA_WIDTH];
                sp_count <= total - KEEP_WIDTH[CNT_WIDTH-1:0];
            end
        end else begin
            m_valid <= 1'b0;
        end
    end
    if (rst) begin
        m_valid <= 1'b0;
        sp_valid <= 1'b0;
    end
end

endmodule

`resetall
`endif
