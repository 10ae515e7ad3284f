#!/bin/sh
# The seed patch "virtio-net: page_to_skb() use build_skb when there's sufficient tailroom"
# (fb32856b16ad, v5.13): a 1000-byte UDP frame with mergeable rx buffers, before and after.
# 5.12 copies the 14-byte Ethernet header into a fresh napi head and hangs the rest of the
# buffer off it as frag 0; 5.13 wraps the rx buffer itself with build_skb.
set -e
for kernel in 5.12 5.13; do
    printf '%s: ' "$kernel"
    vnetrx trace --len 1000 --mergeable --kernel "$kernel" | grep '^Summary'
done
