#!/bin/sh
# tap: a non-blocking writer gets tun_build_skb (one copy into current->task_frag, build_skb
# around it); a blocking writer (no O_NONBLOCK) falls back to tun_alloc_skb with a kmalloc'ed
# head. 4.13 has no tun_build_skb at all (it arrived in 4.14, "tun: build skb for small packet").
set -e
for kernel in 4.13 4.14 6.1 6.18; do
    for how in nonblocking blocking; do
        flag=""
        [ "$how" = blocking ] && flag=--blocking
        printf '%-5s %-12s ' "$kernel" "$how"
        vnetrx trace --path tap --len 1000 --kernel "$kernel" $flag | grep '^Summary'
    done
done
