"""The transmit side: how much headroom a locally built skb has when virtio-net's ndo_start_xmit
runs, and whether the virtio-net header can be pushed in front of it.

==========  ==================================================================================
headroom    virtnet_probe's needed_headroom, LL_RESERVED_SPACE, xmit_skb's can_push, the report
ip_output   __ip_append_data / __ip6_append_data / tcp_sendmsg: the skbs a send builds
virtqueue   virtqueue_add: sg entries, ring slots, indirect descriptors
==========  ==================================================================================
"""
