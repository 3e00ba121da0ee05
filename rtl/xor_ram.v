// A RAM that several writers update in the same cycle, built from RAMs with one write port
// each, so that FPGA tools map it to distributed RAM rather than flip-flops: writer w owns bank
// w and stores its data XOR the other banks' words at its address; a read XORs every bank's
// word at the read address, which gives the last data written there, by whichever writer
// (LaForest and Steffan, "Efficient multi-ported memories for FPGAs", FPGA 2010). Each bank is
// read at every read address and at the other writers' addresses, so a bank is one write port
// and READS + WRITES - 1 asynchronous read ports (the tools replicate it per read port).
// Two writers never write one address in the same cycle: the caller's logic guarantees it.
// Like any FPGA RAM the contents are not reset; they start at zero (configuration).
`ifndef RDMA_XOR_RAM_V
`define RDMA_XOR_RAM_V
`default_nettype none

module xor_ram #(
    parameter ADDR_BITS = 10,   // words: 2^ADDR_BITS
    parameter WIDTH = 1,        // bits per word
    parameter WRITES = 2,       // write ports (one bank each)
    parameter READS = 1         // asynchronous read ports
) (
    input  wire                        clk,
    input  wire [WRITES-1:0]           wr_en,
    input  wire [WRITES*ADDR_BITS-1:0] wr_addr,
    input  wire [WRITES*WIDTH-1:0]     wr_data,
    input  wire [READS*ADDR_BITS-1:0]  rd_addr,
    output reg  [READS*WIDTH-1:0]      rd_data
);

// every bank's word at every read address (rd_*) and at every write address (at_*)
wire [WRITES*READS*WIDTH-1:0]  rd_word;
wire [WRITES*WRITES*WIDTH-1:0] at_word;

genvar b, p;
generate
    for (b = 0; b < WRITES; b = b + 1) begin : bank
        reg [WIDTH-1:0] mem [0:(1 << ADDR_BITS)-1];
        integer k;
        initial
            for (k = 0; k < (1 << ADDR_BITS); k = k + 1)
                mem[k] = {WIDTH{1'b0}};
        for (p = 0; p < READS; p = p + 1) begin : rd
            assign rd_word[(b*READS+p)*WIDTH +: WIDTH] = mem[rd_addr[p*ADDR_BITS +: ADDR_BITS]];
        end
        for (p = 0; p < WRITES; p = p + 1) begin : at
            // a bank is not read at its own writer's address: that word is overwritten
            if (p == b) begin : own
                assign at_word[(b*WRITES+p)*WIDTH +: WIDTH] = {WIDTH{1'b0}};
            end else begin : other
                assign at_word[(b*WRITES+p)*WIDTH +: WIDTH] = mem[wr_addr[p*ADDR_BITS +: ADDR_BITS]];
            end
        end
        // the other banks' words at this writer's address
        reg [WIDTH-1:0] others;
        integer o;
        always @* begin
            others = {WIDTH{1'b0}};
            for (o = 0; o < WRITES; o = o + 1)
                others = others ^ at_word[(o*WRITES+b)*WIDTH +: WIDTH];
        end
        always @(posedge clk)
            if (wr_en[b])
                mem[wr_addr[b*ADDR_BITS +: ADDR_BITS]] <= wr_data[b*WIDTH +: WIDTH] ^ others;
    end
endgenerate

integer r, w;
always @* begin
    rd_data = {READS*WIDTH{1'b0}};
    for (r = 0; r < READS; r = r + 1)
        for (w = 0; w < WRITES; w = w + 1)
            rd_data[r*WIDTH +: WIDTH] = rd_data[r*WIDTH +: WIDTH] ^ rd_word[(w*READS+r)*WIDTH +: WIDTH];
end

endmodule

`resetall
`endif
