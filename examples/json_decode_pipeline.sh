#!/bin/sh
# Pipelines over --json (python3 here; with jq: `vnetrx decode … --json | jq -r .validation.reason`).
# One header, several kernels: GSO_UDP_L4 (5) is refused before 6.2, and csum_start below 20
# is refused from 6.12 and 6.6.55 ("net: test for not too small csum_start in
# virtio_net_hdr_to_skb()").
set -e
verdict() {
    python3 -c 'import json,sys; d=json.load(sys.stdin); v=d["validation"]
print(d["kernel"]["name"], "accepted" if v["accepted"] else v["errno"] + ": " + v["reason"])'
}
# flags NEEDS_CSUM, gso_type UDP_L4, gso_size 1000, csum_start 34, csum_offset 6; 3000-byte frame
for kernel in 6.1 6.12; do
    vnetrx decode 0105 0000 e803 2200 0600 --len 3000 --kernel "$kernel" --json | verdict
done
# NEEDS_CSUM with csum_start 10 on a 100-byte frame
for kernel in 6.1 6.12; do
    vnetrx decode 01000000 00000a000600 --len 100 --kernel "$kernel" --json | verdict
done
