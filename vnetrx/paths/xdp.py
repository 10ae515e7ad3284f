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

from typing import Final

from vnetrx.kernel.constants import ETH_HLEN, VLAN_HLEN
from vnetrx.model import XDP_ACTIONS
from vnetrx.paths.steps import StepLog
from vnetrx.records import NamedTuple
from vnetrx.values import Value

FILTER_SRC: Final = "net/core/filter.c"
# include/uapi/linux/bpf.h: enum xdp_action (model.XDP_ACTIONS, in its order): the name an
# option gives ("pass") → its value, and → the verdict's name ("XDP_PASS")
ACTIONS: Final = {verdict.removeprefix("XDP_").lower(): value for value, verdict in enumerate(XDP_ACTIONS)}
VERDICT: Final = {name: XDP_ACTIONS[value] for name, value in ACTIONS.items()}


class Meta(NamedTuple):
    """What bpf_xdp_adjust_meta(ctx, -len) may do here."""

    len: int  # the metadata the program asks for (0: it does not call the helper)
    max: int  # xdp_metalen_invalid's limit (32; 252 from 6.8)
    supported: bool  # xdp_prepare_buff(..., meta_valid = true)


NO_META: Final = Meta(0, 32, True)


class Adjusted(Value):
    """The program's helper calls on an xdp_buff, each with its answer, and the buffer they
    leave (offsets from data_hard_start). A refused call changes nothing."""

    __slots__ = ("data", "data_end", "frags", "frame_struct", "hard_end", "head", "head_data",
                 "head_high", "head_ok", "meta", "meta_errno", "meta_len", "tail", "tail_data_end",
                 "tail_errno")
    _names = ("data", "data_end", "tail_errno", "meta_len", "frame_struct", "head", "head_data",
              "head_high", "head_ok", "meta", "meta_errno", "tail", "tail_data_end", "hard_end",
              "frags")

    def __init__(self, data: int, data_end: int, tail_errno: str | None = None, meta_len: int = 0,
                 frame_struct: int = 0, head: int = 0, head_data: int = 0, head_high: int = 0,
                 head_ok: bool = True, meta: Meta = NO_META, meta_errno: str | None = None,
                 tail: int = 0, tail_data_end: int = 0, hard_end: int = 0,
                 frags: bool = False) -> None:
        self.data: Final = data  # after the calls
        self.data_end: Final = data_end
        self.tail_errno: Final = tail_errno  # bpf_xdp_adjust_tail's error, when it refused
        self.meta_len: Final = meta_len  # data - data_meta: the metadata in front of data
        # what decided each call, for the narration
        # sizeof(struct xdp_frame): kept free at the top of the headroom
        self.frame_struct: Final = frame_struct
        self.head: Final = head  # bpf_xdp_adjust_head's offset (0: not called)
        self.head_data: Final = head_data  # data before the call
        self.head_high: Final = head_high  # data_end - ETH_HLEN: the highest data it accepts
        self.head_ok: Final = head_ok
        self.meta: Final = meta
        self.meta_errno: Final = meta_errno  # "ENOTSUPP" | "EINVAL" | "EACCES" when refused
        self.tail: Final = tail  # bpf_xdp_adjust_tail's offset (0: not called)
        self.tail_data_end: Final = tail_data_end  # data_end before the call
        self.hard_end: Final = hard_end  # xdp_data_hard_end
        self.frags: Final = frags  # the buffer has XDP_FLAGS_HAS_FRAGS

    def _values(self) -> tuple[object, ...]:
        return (self.data, self.data_end, self.tail_errno, self.meta_len, self.frame_struct,
                self.head, self.head_data, self.head_high, self.head_ok, self.meta, self.meta_errno,
                self.tail, self.tail_data_end, self.hard_end, self.frags)


def adjust(frame_struct: int, head: int, tail: int, data: int, data_end: int, hard_end: int,
           *, frags: bool = False, meta: Meta = NO_META) -> Adjusted:
    """The program's bpf_xdp_adjust_head(ctx, head), bpf_xdp_adjust_meta(ctx, -meta.len), then
    bpf_xdp_adjust_tail(ctx, tail). A refused call changes nothing and the program goes on.
    Offsets are from data_hard_start (``frame_struct``: sizeof(struct xdp_frame), which the
    helpers keep free at the top of the headroom); ``frags``: the buffer has
    XDP_FLAGS_HAS_FRAGS (multi-buffer)."""
    head_data, head_high, head_ok = data, data_end - ETH_HLEN, True
    if head:
        new = data + head
        head_ok = frame_struct <= new <= head_high
        if head_ok:
            data = new
    meta_len, meta_errno = 0, None
    if meta.len:
        meta_errno = _meta_refusal(frame_struct, meta, data)
        meta_len = meta.len if meta_errno is None else 0
    errno, tail_data_end = None, data_end
    if tail and frags and tail > 0:
        # bpf_xdp_frags_increase_tail: rxq->frag_size is 0 for virtio-net and tun
        # (xdp_rxq_info_reg without a frag size), so growing a multi-buffer frame fails
        errno = "EOPNOTSUPP"
    elif tail:
        new_end = data_end + tail
        if data + ETH_HLEN <= new_end <= hard_end:
            data_end = new_end
        else:
            errno = "EINVAL"
    return Adjusted(data, data_end, errno, meta_len, frame_struct, head, head_data, head_high,
                    head_ok, meta, meta_errno, tail, tail_data_end, hard_end, frags)


def _meta_refusal(frame_struct: int, meta: Meta, data: int) -> str | None:
    """bpf_xdp_adjust_meta(ctx, -len): its error, or None when it leaves the metadata."""
    if not meta.supported:
        return "ENOTSUPP"
    if data - meta.len < frame_struct:
        return "EINVAL"
    if meta.len % 4 or meta.len > meta.max:
        return "EACCES"
    return None


def narrate_helpers(a: Adjusted, log: StepLog) -> None:
    """One step per helper call the program made, with its answer."""
    if a.head:
        new, low, high = a.head_data + a.head, a.frame_struct, a.head_high
        log.add(FILTER_SRC, "bpf_xdp_adjust_head",
                (f"data {a.head_data} -> {new}" if a.head_ok else
                 f"-EINVAL: data would be {new}, outside [data_hard_start + sizeof(struct "
                 f"xdp_frame) = {low}, data_end - ETH_HLEN = {high}]; nothing changes"),
                offset=a.head, data=new if a.head_ok else a.head_data, low=low, high=high)
    if a.meta.len:
        _narrate_meta(a, log)
    if a.tail and a.tail_errno == "EOPNOTSUPP":
        log.add(FILTER_SRC, "bpf_xdp_frags_increase_tail",
                "-EOPNOTSUPP: the frame has frags and the driver registered its rxq with "
                "frag_size 0 (xdp_rxq_info_reg), so the tail cannot grow; nothing changes",
                offset=a.tail)
    elif a.tail:
        ok = a.tail_errno is None
        new_end = a.tail_data_end + a.tail
        log.add(FILTER_SRC, "bpf_xdp_adjust_tail",
                (f"data_end {a.tail_data_end} -> {new_end}"
                 + (" (the new bytes are zeroed)" if new_end > a.tail_data_end else "") if ok else
                 f"-EINVAL: data_end would be {new_end}, outside [data + ETH_HLEN = "
                 f"{a.data + ETH_HLEN}, xdp_data_hard_end = {a.hard_end}]; nothing changes"),
                offset=a.tail, data_end=new_end if ok else a.tail_data_end,
                data_hard_end=a.hard_end)


def _narrate_meta(a: Adjusted, log: StepLog) -> None:
    meta, data = a.meta, a.data
    start = data - meta.len
    if a.meta_errno == "ENOTSUPP":
        log.add(FILTER_SRC, "bpf_xdp_adjust_meta",
                "-ENOTSUPP (524): this xdp_buff was prepared without metadata support "
                "(xdp_data_meta_unsupported); nothing changes", offset=-meta.len)
        return
    if a.meta_errno is None:
        log.add(FILTER_SRC, "bpf_xdp_adjust_meta",
                f"data_meta {data} -> {start}: {meta.len} bytes of metadata in front of data",
                offset=-meta.len, data_meta=start, max=meta.max)
        return
    if a.meta_errno == "EINVAL":
        why = (f"-EINVAL: data_meta would be {start}, below data_hard_start + sizeof(struct "
               f"xdp_frame) = {a.frame_struct}")
    else:
        why = (f"-EACCES: xdp_metalen_invalid({meta.len}): not a multiple of 4 or more than "
               f"{meta.max}")
    log.add(FILTER_SRC, "bpf_xdp_adjust_meta", why + "; nothing changes", offset=-meta.len,
            max=meta.max)


def fwd_limit(mtu: int) -> int:
    """xdp_ok_fwd_dev (include/linux/filter.h): fwd->mtu + fwd->hard_header_len + VLAN_HLEN,
    the longest frame a redirect may hand to an Ethernet device."""
    return mtu + ETH_HLEN + VLAN_HLEN
