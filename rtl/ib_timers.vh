// The transport timers of IBTA vol. 1 in device cycles, included inside a module that has
// the CLOCK_MHZ and TIMER_SHIFT parameters (TIMER_SHIFT runs them 2^TIMER_SHIFT times fast).

// local ACK timeout (9.7.6.1.3): 4.096 us x 2^exponent; exponent 0 means none
localparam [47:0] ACK_UNIT = (4096 * CLOCK_MHZ + 999) / 1000;
function [47:0] ack_cycles(input [4:0] exponent);
    ack_cycles = (ACK_UNIT << exponent) >> TIMER_SHIFT;
endfunction

// RNR NAK timer (9.7.5.2.8): the codes of the RNR NAK syndrome in units of 10 us (code 0 is
// the longest, 655.36 ms)
localparam [47:0] RNR_UNIT = 10 * CLOCK_MHZ;
function [16:0] rnr_units(input [4:0] code);
    case (code)
        5'd0:  rnr_units = 17'd65536; 5'd1:  rnr_units = 17'd1;     5'd2:  rnr_units = 17'd2;
        5'd3:  rnr_units = 17'd3;     5'd4:  rnr_units = 17'd4;     5'd5:  rnr_units = 17'd6;
        5'd6:  rnr_units = 17'd8;     5'd7:  rnr_units = 17'd12;    5'd8:  rnr_units = 17'd16;
        5'd9:  rnr_units = 17'd24;    5'd10: rnr_units = 17'd32;    5'd11: rnr_units = 17'd48;
        5'd12: rnr_units = 17'd64;    5'd13: rnr_units = 17'd96;    5'd14: rnr_units = 17'd128;
        5'd15: rnr_units = 17'd192;   5'd16: rnr_units = 17'd256;   5'd17: rnr_units = 17'd384;
        5'd18: rnr_units = 17'd512;   5'd19: rnr_units = 17'd768;   5'd20: rnr_units = 17'd1024;
        5'd21: rnr_units = 17'd1536;  5'd22: rnr_units = 17'd2048;  5'd23: rnr_units = 17'd3072;
        5'd24: rnr_units = 17'd4096;  5'd25: rnr_units = 17'd6144;  5'd26: rnr_units = 17'd8192;
        5'd27: rnr_units = 17'd12288; 5'd28: rnr_units = 17'd16384; 5'd29: rnr_units = 17'd24576;
        5'd30: rnr_units = 17'd32768; default: rnr_units = 17'd49152;
    endcase
endfunction
function [47:0] rnr_cycles(input [4:0] code);
    rnr_cycles = ({31'd0, rnr_units(code)} * RNR_UNIT) >> TIMER_SHIFT;
endfunction
