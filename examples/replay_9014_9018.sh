#!/bin/sh
# Issue 9: a real 6.12 guest gave truesize 10496 (1 frag) for a 9014-byte frame and 11008
# (2 frags) for the 9018-byte one right after it. Replaying the ring explains why: after 11
# one-buffer frames the 9018 starts at posted buffer 17, spans the page's 2048-byte 21st buffer
# and continues on the next page.
set -e
vnetrx replay --len 60x11,9014,9018 --mergeable --mtu 9000 --kernel 6.12 --jsonl |
    python3 -c '
import sys, json
for line in sys.stdin:
    f = json.loads(line)
    if f["frame_len"] < 9000:
        continue
    bufs = " ".join("%s+%d/%d" % (page, offset, size) for page, offset, size in f["buffers"])
    print(f["frame_len"], "truesize", f["truesize"], "nr_frags", f["nr_frags"], "ewma", f["ewma"])
    print("  ", bufs)
'
