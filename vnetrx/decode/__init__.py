"""``vnetrx decode``: a virtio_net_hdr (and the frame after it) named field by field and checked
the way the kernel checks a tap write.

==========  ==================================================================================
document    decode(): the whole document (header, frame, checksum place, verdict, notes)
header      the header's fields and their meanings, by header size and kernel
frame       Ethernet / VLAN / IPv4 / IPv6 / TCP / UDP summaries of the frame bytes
csum        where csum_start / csum_offset point in the frame
json_doc    the JSON form (vnetrx.decode/1)
==========  ==================================================================================
"""

from __future__ import annotations

from vnetrx.decode.csum import CsumPlace, csum_place
from vnetrx.decode.document import MAX_INPUT, Decoded, decode, parse_hex
from vnetrx.decode.frame import Layer, parse_frame
from vnetrx.decode.json_doc import DECODE_SCHEMA, decoded_to_dict

__all__ = [
    "DECODE_SCHEMA",
    "MAX_INPUT",
    "CsumPlace",
    "Decoded",
    "Layer",
    "csum_place",
    "decode",
    "decoded_to_dict",
    "parse_frame",
    "parse_hex",
]
