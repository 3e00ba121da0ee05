// The loopback decision, for every address the port and the message can have. On InfiniBand a
// message is loopback exactly when its DLID names the port (the two are equal once the LMC's
// low bits are dropped: the port answers LID..LID+2^LMC-1 from a LID aligned to it) and, with a
// GRH, its DGID is one of the port's GIDs; on Ethernet when its DGID is one of the port's GIDs,
// whatever the LIDs. A port's GIDs are its non-zero GID table entries. Written from the rule,
// not from the RTL's mask. The table has two entries here: the RTL matches every entry alike
// (one loop), and with four the solver did not finish in 15 minutes where two take 3 s.
`default_nettype none

module loopback_match_props (
    input wire         eth,
    input wire [15:0]  port_lid,
    input wire [2:0]   port_lmc,
    input wire [127:0] gid0,
    input wire [127:0] gid1,
    input wire [15:0]  dlid,
    input wire         is_global,
    input wire [127:0] dgid
);

wire loopback;
loopback_match #(.NUM_GIDS(2)) dut (
    .eth(eth), .port_lid(port_lid), .port_lmc(port_lmc), .port_gids({gid1, gid0}),
    .dlid(dlid), .is_global(is_global), .dgid(dgid), .loopback(loopback)
);

wire names_port = (dlid >> port_lmc) == (port_lid >> port_lmc);
wire own = (gid0 != 128'd0 && dgid == gid0) || (gid1 != 128'd0 && dgid == gid1);

always @* assert (loopback == (eth ? own : names_port && (!is_global || own)));

endmodule

`resetall
