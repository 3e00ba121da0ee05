// The loopback decision, for every address the port and the message can have: a message is
// loopback exactly when its DLID names the port (the two are equal once the LMC's low bits
// are dropped: the port answers LID..LID+2^LMC-1 from a LID aligned to it) and, with a GRH,
// its DGID is the port's GID. Written from the rule, not from the RTL's mask.
`default_nettype none

module loopback_match_props (
    input wire [15:0]  port_lid,
    input wire [2:0]   port_lmc,
    input wire [127:0] port_gid,
    input wire [15:0]  dlid,
    input wire         is_global,
    input wire [127:0] dgid
);

wire loopback;
loopback_match dut (
    .port_lid(port_lid), .port_lmc(port_lmc), .port_gid(port_gid),
    .dlid(dlid), .is_global(is_global), .dgid(dgid), .loopback(loopback)
);

wire names_port = (dlid >> port_lmc) == (port_lid >> port_lmc);
wire gid_ok = !is_global || dgid == port_gid;

always @* assert (loopback == (names_port && gid_ok));

endmodule

`resetall
