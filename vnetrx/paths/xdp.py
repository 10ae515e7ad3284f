"""What every XDP hook shares: the verdicts (include/uapi/linux/bpf.h: enum xdp_action), the
helpers a program calls on the xdp_buff (net/core/filter.c: bpf_xdp_adjust_head,
bpf_xdp_adjust_tail) and the forwarding limit of a redirect (include/linux/filter.h:
xdp_ok_fwd_dev). The drivers' hooks live with their drivers: paths/tun/xdp.py and
paths/virtio_net/xdp.py.

bpf_xdp_adjust_head's and bpf_xdp_adjust_tail's bodies for a linear buffer are the same 5.15-7.1
(md5 of the function bodies, docs/kernel/xdp-source-notes.md §C); the multi-buffer branch of
bpf_xdp_adjust_tail (6.1+) is modelled only where virtio-net reaches it.
"""

from __future__ import annotations

from vnetrx.kernel.constants import ETH_HLEN, VLAN_HLEN
from vnetrx.paths.steps import StepLog
from vnetrx.records import NamedTuple

FILTER_SRC = "net/core/filter.c"
# include/uapi/linux/bpf.h: enum xdp_action
ACTIONS = {"aborted": 0, "drop": 1, "pass": 2, "tx": 3, "redirect": 4}
VERDICT = {name: f"XDP_{name.upper()}" for name in ACTIONS}


class Adjusted(NamedTuple):
    """The xdp_buff after the program's helper calls (offsets from one origin)."""

    data: int
    data_end: int
    tail_errno: str | None = None  # bpf_xdp_adjust_tail's error, when it refused
    meta_len: int = 0  # data - data_meta: the metadata in front of data


class Meta(NamedTuple):
    """What bpf_xdp_adjust_meta(ctx, -len) may do here."""

    len: int  # the metadata the program asks for (0: it does not call the helper)
    max: int  # xdp_metalen_invalid's limit (32; 252 from 6.8)
    supported: bool  # xdp_prepare_buff(..., meta_valid = true)


NO_META = Meta(0, 32, True)


def run_helpers(frame_struct: int, head: int, tail: int, data: int, data_end: int,
                hard_end: int, log: StepLog, *, frags: bool = False,
                meta: Meta = NO_META) -> Adjusted:
    """The program's bpf_xdp_adjust_head(ctx, head), bpf_xdp_adjust_meta(ctx, -meta.len), then
    bpf_xdp_adjust_tail(ctx, tail). A refused call changes nothing and the program goes on.
    Offsets are from data_hard_start (``frame_struct``: sizeof(struct xdp_frame), which the
    helpers keep free at the top of the headroom); ``frags``: the buffer has
    XDP_FLAGS_HAS_FRAGS (multi-buffer)."""
    if head:
        new = data + head
        low, high = frame_struct, data_end - ETH_HLEN
        ok = low <= new <= high
        log.add(FILTER_SRC, "bpf_xdp_adjust_head",
                (f"data {data} -> {new}" if ok else
                 f"-EINVAL: data would be {new}, outside [data_hard_start + sizeof(struct "
                 f"xdp_frame) = {low}, data_end - ETH_HLEN = {high}]; nothing changes"),
                offset=head, data=new if ok else data, low=low, high=high)
        if ok:
            data = new
    meta_len = 0
    if meta.len:
        meta_len = _adjust_meta(frame_struct, meta, data, log)
    errno = None
    if tail and frags and tail > 0:
        # bpf_xdp_frags_increase_tail: rxq->frag_size is 0 for virtio-net and tun
        # (xdp_rxq_info_reg without a frag size), so growing a multi-buffer frame fails
        log.add(FILTER_SRC, "bpf_xdp_frags_increase_tail",
                "-EOPNOTSUPP: the frame has frags and the driver registered its rxq with "
                "frag_size 0 (xdp_rxq_info_reg), so the tail cannot grow; nothing changes",
                offset=tail)
        errno = "EOPNOTSUPP"
    elif tail:
        new_end = data_end + tail
        ok = data + ETH_HLEN <= new_end <= hard_end
        log.add(FILTER_SRC, "bpf_xdp_adjust_tail",
                (f"data_end {data_end} -> {new_end}" + (" (the new bytes are zeroed)"
                                                       if new_end > data_end else "") if ok else
                 f"-EINVAL: data_end would be {new_end}, outside [data + ETH_HLEN = "
                 f"{data + ETH_HLEN}, xdp_data_hard_end = {hard_end}]; nothing changes"),
                offset=tail, data_end=new_end if ok else data_end, data_hard_end=hard_end)
        if ok:
            data_end = new_end
        else:
            errno = "EINVAL"
    return Adjusted(data, data_end, errno, meta_len)


def _adjust_meta(frame_struct: int, meta: Meta, data: int, log: StepLog) -> int:
    """bpf_xdp_adjust_meta(ctx, -len): the metadata length it leaves (0 when refused)."""
    start = data - meta.len
    if not meta.supported:
        log.add(FILTER_SRC, "bpf_xdp_adjust_meta",
                "-ENOTSUPP (524): this xdp_buff was prepared without metadata support "
                "(xdp_data_meta_unsupported); nothing changes", offset=-meta.len)
        return 0
    if start < frame_struct:
        why = (f"-EINVAL: data_meta would be {start}, below data_hard_start + sizeof(struct "
               f"xdp_frame) = {frame_struct}")
    elif meta.len % 4 or meta.len > meta.max:
        why = (f"-EACCES: xdp_metalen_invalid({meta.len}): not a multiple of 4 or more than "
               f"{meta.max}")
    else:
        log.add(FILTER_SRC, "bpf_xdp_adjust_meta",
                f"data_meta {data} -> {start}: {meta.len} bytes of metadata in front of data",
                offset=-meta.len, data_meta=start, max=meta.max)
        return meta.len
    log.add(FILTER_SRC, "bpf_xdp_adjust_meta", why + "; nothing changes", offset=-meta.len,
            max=meta.max)
    return 0


def fwd_limit(mtu: int) -> int:
    """xdp_ok_fwd_dev (include/linux/filter.h): fwd->mtu + fwd->hard_header_len + VLAN_HLEN,
    the longest frame a redirect may hand to an Ethernet device."""
    return mtu + ETH_HLEN + VLAN_HLEN
