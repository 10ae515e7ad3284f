#!/bin/sh
# Pipelines over --json: the same 1514-byte frame in every virtio-net mode and kernel, one line
# each (with jq: `vnetrx trace … --json | jq -r '[.kernel.name, .path, .outcome, .skb.truesize] | @tsv'`).
set -e
for kernel in 5.12 5.13 6.1 6.12; do
    for mode in "" --mergeable --big; do
        vnetrx trace --len 1514 $mode --kernel "$kernel" --json |
            python3 -c 'import json,sys; t=json.load(sys.stdin); s=t["skb"] or {}
print(t["kernel"]["name"], t["path"], t["outcome"], s.get("truesize"), sep="\t")'
    done
done
