#!/bin/sh
# The 2014 seed "virtio-net: ... needed_headroom" (6ebbc1a6383f, v3.16): with
# dev->needed_headroom = hdr_len, LL_RESERVED_SPACE leaves 18 bytes in front of a UDP packet at
# ndo_start_xmit, so virtio-net pushes its 12-byte header inline (one sg entry). 3.15 leaves 2
# bytes: the header needs its own sg entry. The table for the default payloads, side by side.
set -e
export COLUMNS=100
vnetrx headroom --kernel 3.16 --compare 3.15 | sed -n '1,/^$/p;/^payload/,/^$/p'
