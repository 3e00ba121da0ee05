// A stream's tkeep (or a write's strobes) widened to a bit mask, each bit to its byte (included
// inside modules that have a DATA_WIDTH parameter). Call it from an always block: a generate
// loop of byte assigns makes a vector driven in parts, which Icarus rebuilds bit by bit whenever
// a part changes, and a function in a continuous assignment costs Icarus about twice as much.
function [DATA_WIDTH-1:0] keep_bits(input [DATA_WIDTH/8-1:0] keep);
    integer i;
    begin
        for (i = 0; i < DATA_WIDTH / 8; i = i + 1)
            keep_bits[8*i +: 8] = {8{keep[i]}};
    end
endfunction
