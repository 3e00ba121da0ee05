// Functional coverage of a device's DMA engine, without Python on every cycle: how many of its
// movers have had a command at the same time (bit k of `together`: k of them), and which
// movers have had one while another also did (`alongside`). It runs when `busy` changes, not
// on every cycle; the testbench reads both once per check (tb/coverage.py). The movers are not
// ready in the cycle after reset: sampling starts once they have all been idle.
`timescale 1ns / 1ps
`default_nettype none

module sim_dma_watch #(
    parameter N = 6                // movers
) (
    input  wire          rst,
    input  wire [N-1:0]  busy,     // mover c holds a command (not ready for another)
    output reg  [N:0]    together = {(N+1){1'b0}},
    output reg  [N-1:0]  alongside = {N{1'b0}}
);

reg     armed = 1'b0;
integer k, n;
always @(busy or rst) begin
    if (rst) begin
        armed = 1'b0;
    end else if (busy == {N{1'b0}}) begin
        armed = 1'b1;
    end else if (armed) begin
        n = 0;
        for (k = 0; k < N; k = k + 1)
            n = n + busy[k];
        together[n] = 1'b1;
        if (n > 1)
            alongside = alongside | busy;
    end
end

endmodule

`resetall
