#!/bin/sh
# Pipelines over --json: headroom at ndo_start_xmit per payload, for kernels from 3.15 on
# (with jq: `vnetrx headroom --json | jq '.results[] | [.payload, .skbs[0].headroom]'`).
# "+inline": virtio-net pushes its header into that headroom (one sg entry for header + data).
set -e
for kernel in 3.15 3.16 4.14 6.1 7.3; do
    vnetrx headroom --kernel "$kernel" --payload 64,1460 --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
cells = []
for r in d["results"]:
    skb = r["skbs"][0]
    cells.append("%d:%d%s" % (r["payload"], skb["headroom"], "+inline" if skb["can_push"] else ""))
print(d["kernel"]["name"], "hdr_len", d["device"]["hdr_len"], *cells)'
done
