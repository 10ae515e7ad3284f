#!/bin/sh
# A TSO write as a VMM's tap backend would make it: virtio_net_hdr (NEEDS_CSUM, GSO_TCPV4,
# hdr_len 66, gso_size 1448, csum_start 34, csum_offset 16) followed by the first 66 bytes of a
# 9000-byte frame (Ethernet, IPv4, TCP with timestamps). Then the same header with the UDP
# checksum offset (6): TCP GSO refuses it.
set -e
export COLUMNS=100
hdr_ok="0101 4200 a805 2200 1000"
hdr_bad="0101 4200 a805 2200 0600"
frame="020000000001 020000000002 0800
4500 2314 0000 4000 4006 0000 0a000001 0a000002
1f90 c350 00000001 00000000 8010 ffff 0000 0000 0101080a0000000100000000"
vnetrx decode $hdr_ok $frame --len 9000 --kernel 6.12 | grep -E '^(Checksum|Verdict)|^ +(14|34) +[0-9]+ +(ipv4|tcp) '
vnetrx decode $hdr_bad $frame --len 9000 --kernel 6.12 | grep -E '^(Checksum|Verdict)'
