#!/bin/sh
# For which frame lengths does 6.1 build the skb around a 1536-byte mergeable buffer?
# page_to_skb needs len > GOOD_COPY_LEN (128) and tailroom 1536 - 12 - len >= 320.
set -e
for len in 128 129 1204 1205 1514; do
    vnetrx trace --len "$len" --mergeable --kernel 6.1 --json |
        python3 -c 'import json,sys; t=json.load(sys.stdin); s=t["skb"]; print(t["input"]["frame_len"], t["outcome"], "truesize", s["truesize"], "nr_frags", s["nr_frags"])'
done
