// The loopback rule: a message is addressed to the sending port itself when its DLID is one of
// the port's LIDs (the port answers 2^LMC of them: equal to its LID in every bit above the LMC)
// and, when it carries a GRH, its DGID is the port's GID. Such a message takes the loopback
// (the bypass, or with the bypass off the port's internal loopback); any other, the other port
// of the same device included, goes on the wire. make formal proves this equals the rule.
`ifndef RDMA_LOOPBACK_MATCH_V
`define RDMA_LOOPBACK_MATCH_V
`default_nettype none

module loopback_match (
    input  wire [15:0]  port_lid,   // the sending port's LID ...
    input  wire [2:0]   port_lmc,   // ... its LMC ...
    input  wire [127:0] port_gid,   // ... and its GID
    input  wire [15:0]  dlid,       // the message's address vector
    input  wire         is_global,  // it carries a GRH
    input  wire [127:0] dgid,
    output wire         loopback
);

wire [15:0] lmc_mask = (16'd1 << port_lmc) - 16'd1;
assign loopback = ((dlid ^ port_lid) & ~lmc_mask) == 16'd0 && (!is_global || dgid == port_gid);

endmodule

`resetall
`endif
