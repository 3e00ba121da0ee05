// The loopback rule: a message is addressed to the sending port itself when its destination is
// one of the port's own addresses. On InfiniBand: its DLID is one of the port's LIDs (the port
// answers 2^LMC of them: equal to its LID in every bit above the LMC) and, when it carries a
// GRH, its DGID is one of the port's GIDs. On Ethernet (RoCE v2), where there are no LIDs and
// every packet carries its GIDs as IP addresses: its DGID is one of the port's GIDs. An all-zero
// GID table entry is empty and matches nothing. Such a message takes the loopback (the bypass,
// or with the bypass off the port's internal loopback); any other, the other port of the same
// device included, goes on the wire. make formal proves this equals the rule.
`ifndef RDMA_LOOPBACK_MATCH_V
`define RDMA_LOOPBACK_MATCH_V
`default_nettype none

module loopback_match #(
    parameter NUM_GIDS = 4                  // GID table entries of a port
) (
    input  wire                     eth,        // the sending port's link layer is Ethernet
    input  wire [15:0]              port_lid,   // the sending port's LID ...
    input  wire [2:0]               port_lmc,   // ... its LMC ...
    input  wire [NUM_GIDS*128-1:0]  port_gids,  // ... and its GID table
    input  wire [15:0]              dlid,       // the message's address vector
    input  wire                     is_global,  // it carries a GRH
    input  wire [127:0]             dgid,
    output wire                     loopback
);

reg own_gid;
integer g;
always @* begin
    own_gid = 1'b0;
    for (g = 0; g < NUM_GIDS; g = g + 1)
        if (port_gids[g*128 +: 128] != 128'd0 && port_gids[g*128 +: 128] == dgid)
            own_gid = 1'b1;
end

wire [15:0] lmc_mask = (16'd1 << port_lmc) - 16'd1;
assign loopback = eth ? own_gid
                      : ((dlid ^ port_lid) & ~lmc_mask) == 16'd0 && (!is_global || own_gid);

endmodule

`resetall
`endif
