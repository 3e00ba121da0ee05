"""Capture files of InfiniBand packets and RoCE v2 frames that Wireshark decodes natively.

InfiniBand: a pcap file (nanosecond timestamps) with link type ERF (197); every record is an
ERF type 21 (InfiniBand) record: a 16-byte ERF header, then the packet from LRH through VCRC.
Wireshark 4.0 has no dissector for the InfiniBand link type of its own (247), hence ERF.

Ethernet: a pcap file (nanosecond timestamps) with link type ETHERNET (1); every record is a
frame from destination MAC through the Ethernet padding, without its FCS, as a NIC captures
it. Wireshark decodes UDP port 4791 as RoCE v2 (InfiniBand over UDP) by itself.
"""

import struct

PCAP_MAGIC_NS = 0xA1B23C4D      # pcap with nanosecond timestamps
PCAP_VERSION = (2, 4)
PCAP_SNAPLEN = 65535            # larger than any record: IB packets are at most 8 KiB
LINKTYPE_ERF = 197
LINKTYPE_ETHERNET = 1
FCS_BYTES = 4

ERF_HEADER_BYTES = 16
ERF_TYPE_INFINIBAND = 21
ERF_FLAG_VLEN = 0x04            # records are exactly as long as rlen says, not padded
ERF_FLAG_RX_ERROR = 0x10        # the packet arrived with a link error (e.g. aborted)


def erf_timestamp(time_ns):
    """ERF's 64-bit 32.32 fixed-point seconds for a time in nanoseconds. The fraction is
    rounded up, so that reading it back to nanoseconds, by truncation or by Wireshark's
    rounding, gives `time_ns` again."""
    seconds, ns = divmod(time_ns, 10**9)
    return seconds << 32 | -(-(ns << 32) // 10**9)


def erf_record(packet, time_ns, interface=0, rx_error=False):
    """One ERF InfiniBand record: the ERF header and `packet` (LRH through VCRC).
    `interface` is ERF's capture interface (0-3), e.g. the port a link belongs to."""
    if not 0 <= interface <= 3:
        raise ValueError(f"ERF capture interface {interface} is not 0-3")
    flags = interface | ERF_FLAG_VLEN | (ERF_FLAG_RX_ERROR if rx_error else 0)
    rlen = ERF_HEADER_BYTES + len(packet)
    # timestamp little-endian; type, flags; record length, loss counter, wire length big-endian
    return (struct.pack("<Q", erf_timestamp(time_ns))
            + struct.pack(">BBHHH", ERF_TYPE_INFINIBAND, flags, rlen, 0, len(packet))
            + bytes(packet))


class PcapWriter:
    """Writes packets to a pcap file: `write()` per packet, then `close()` (or use it as a
    context manager). `link` "ib" writes ERF InfiniBand records, "eth" Ethernet frames."""

    def __init__(self, path, link="ib"):
        if link not in ("ib", "eth"):
            raise ValueError(f"link {link!r} is not 'ib' or 'eth'")
        self.link = link
        self.file = open(path, "wb")
        self.file.write(struct.pack("<IHHiIII", PCAP_MAGIC_NS, *PCAP_VERSION, 0, 0, PCAP_SNAPLEN,
                                    LINKTYPE_ERF if link == "ib" else LINKTYPE_ETHERNET))

    def write(self, packet, time_ns, interface=0, rx_error=False):
        """One packet: LRH through VCRC on "ib", where `interface` and `rx_error` go into the
        ERF header; a frame through its FCS on "eth", written without the FCS, where a pcap
        record has no place for them and they are not kept."""
        if self.link == "ib":
            record = erf_record(packet, time_ns, interface, rx_error)
        else:
            record = bytes(packet[:-FCS_BYTES])
        seconds, ns = divmod(time_ns, 10**9)
        self.file.write(struct.pack("<IIII", seconds, ns, len(record), len(record)) + record)

    def close(self):
        self.file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
