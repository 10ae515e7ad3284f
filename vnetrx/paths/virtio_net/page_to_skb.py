"""drivers/net/virtio_net.c:page_to_skb: the skb head made of a big-mode page 0 or a mergeable
first buffer — build_skb() around the buffer, or napi_alloc_skb(GOOD_COPY_LEN) and a copy — with
the decision recorded (``Build``) and narrated from that record; and receive_small's build_skb.

Facts: docs/kernel/virtio-net-rx.md §6 (page_to_skb per version) and §7 (receive_small).
"""

from __future__ import annotations

from typing import Final

from vnetrx.kernel.changes import PAGE_TO_SKB_BUILD_SKB
from vnetrx.kernel.constants import ETH_HLEN
from vnetrx.model import Cost, Region
from vnetrx.paths.maps import regions
from vnetrx.paths.reason import Reason
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net.buffers import PostedBuffer
from vnetrx.paths.virtio_net.plan import Outcome, Plan
from vnetrx.paths.virtio_net.setup import Config
from vnetrx.values import Value


class Build(Reason):
    """page_to_skb's choice between build_skb around the buffer and a napi_alloc_skb copy."""

    NO_BUILD_PATH = "no_build_path"  # before fb32856b16ad (5.13): always copy
    NET_IP_ALIGN = "net_ip_align"  # NET_IP_ALIGN != 0: never build
    SHORT = "short"  # len <= GOOD_COPY_LEN: copy
    NO_TAILROOM = "no_tailroom"  # tailroom < SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
    BUILD = "build"  # len > GOOD_COPY_LEN and the tailroom holds skb_shared_info
    SMALL = "small"  # receive_small: build_skb around the buffer in every version
    XDP_BUFF = "xdp_buff"  # 6.3+ XDP_PASS in mergeable mode: build_skb_from_xdp_buff, no test


SRC: Final = "drivers/net/virtio_net.c"
SKBUFF_SRC: Final = "net/core/skbuff.c"
BUILT_HEAD: Final = "the rx buffer (build_skb)"

class SkbHead(Value):
    """The skb head page_to_skb makes of a buffer: build_skb around it, or napi_alloc_skb and
    a copy, with the test's values; ``truesize`` is the head's alone (frag 0, when the copy
    leaves one, is the caller's). Immutable; a plain class (vnetrx/values.py): one per frame."""

    __slots__ = (
        "copy",
        "data",
        "end",
        "head_size",
        "outcome",
        "tail",
        "tailroom",
        "truesize",
        "why",
    )

    def __init__(self, outcome: Outcome, why: Build, tailroom: int | None, copy: int,
                 head_size: int, end: int, data: int, tail: int, truesize: int) -> None:
        self.outcome: Final = outcome
        self.why: Final = why
        self.tailroom: Final = tailroom  # the test's value (None: no test before 5.13)
        self.copy: Final = copy  # frame bytes copied into a new head
        self.head_size: Final = head_size
        self.end: Final = end
        self.data: Final = data
        self.tail: Final = tail
        self.truesize: Final = truesize

    _names = ("outcome", "why", "tailroom", "copy", "head_size", "end", "data", "tail",
              "truesize")

    def _values(self) -> tuple[object, ...]:
        return (self.outcome, self.why, self.tailroom, self.copy, self.head_size, self.end,
                self.data, self.tail, self.truesize)


def build_or_copy(c: Config, frame: int, truesize: int, hdr_padded_len: int,
                  headroom: int = 0) -> tuple[Build, int | None]:
    """page_to_skb's test (5.13+, fb32856b16ad with 'restrict build_skb() use to some arches' and
    1a8024239dac): build_skb when NET_IP_ALIGN == 0, len > GOOD_COPY_LEN and the buffer's
    tailroom (truesize - headroom - hdr_padded_len - len; headroom: what an XDP program left
    before the header, up to 6.2, else 0) holds skb_shared_info. Before 5.13 there is no test:
    always copy."""
    if not c.build_skb_path:
        return Build.NO_BUILD_PATH, None
    tailroom = truesize - headroom - hdr_padded_len - frame
    if c.net_ip_align:
        return Build.NET_IP_ALIGN, tailroom
    if frame <= c.good_copy_len:
        return Build.SHORT, tailroom
    if tailroom < c.shinfo_size:
        return Build.NO_TAILROOM, tailroom
    return Build.BUILD, tailroom


def napi_copy(c: Config, frame: int) -> tuple[int, int, int, int]:
    """napi_alloc_skb(GOOD_COPY_LEN) + the copy: (copy, end, data, truesize of the head).
    "Do not pull payload in skb->head" (0f6925b3e8da): the whole frame if it fits the head's
    tailroom, else ETH_HLEN only."""
    head = c.napi_head
    end = head.size - c.shinfo_size
    tailroom = end - c.napi_reserve
    copy = frame if frame <= tailroom else ETH_HLEN
    return copy, end, c.napi_reserve, head.truesize


def page_to_skb(c: Config, truesize: int, hdr_padded_len: int, frame: int,
                headroom: int = 0) -> SkbHead:
    """page_to_skb on a buffer of ``truesize`` bytes holding ``frame`` frame bytes after
    ``headroom`` (XDP, up to 6.2: the caller passes PAGE_SIZE as truesize then) and
    ``hdr_padded_len`` bytes of header: build_skb around it, or napi_alloc_skb and a copy."""
    why, tailroom = build_or_copy(c, frame, truesize, hdr_padded_len, headroom)
    if why is Build.BUILD:
        end = truesize - c.shinfo_size
        data = headroom + hdr_padded_len
        return SkbHead("build_skb", why, tailroom, 0, truesize, end, data, data + frame,
                       truesize + c.sk_buff_aligned)
    copy, end, data, head_truesize = napi_copy(c, frame)
    return SkbHead("copy", why, tailroom, copy, c.napi_head.size, end, data, data + copy,
                   head_truesize)


def built(
    c: Config,
    *,
    frag_size: int,
    reserve: int,
    frame: int,
    buffers: tuple[PostedBuffer, ...],
    used: tuple[int, ...],
) -> Plan:
    """receive_small's build_skb(buf, frag_size) + skb_reserve(reserve) + skb_put(frame)
    (virtnet_build_skb from 6.5): the buffer is the head, skb_shared_info its last bytes,
    truesize frag_size + SKB_DATA_ALIGN(sizeof(struct sk_buff))."""
    return Plan(
        outcome="build_skb",
        reason=None,
        why=Build.SMALL,
        buf_len=buffers[0].len,
        buffers=buffers,
        used=used,
        tailroom=None,
        copy=0,
        frag0=False,
        head_size=frag_size,
        end=frag_size - c.shinfo_size,
        data=reserve,
        tail=reserve + frame,
        len=frame,
        data_len=0,
        truesize=frag_size + c.sk_buff_aligned,
        frags=(),
        appends=(),
        pages_used=0,
        nr_frags=0,
    )


def cost(p: Plan) -> Cost:
    """build_skb allocates the sk_buff only; the copy path also allocates a head."""
    return Cost(allocations=p.allocations, bytes_copied=p.copy, frags=p.nr_frags)


# --- narration ---------------------------------------------------------------------------

_WHY: Final[dict[Build, str]] = {
    Build.NET_IP_ALIGN: "NET_IP_ALIGN != 0",
    Build.SHORT: "len {frame} <= GOOD_COPY_LEN",
    Build.NO_TAILROOM: "tailroom {tailroom} < shinfo_size {shinfo}",
    Build.BUILD: "len {frame} > GOOD_COPY_LEN and tailroom {tailroom} >= shinfo_size {shinfo}",
}


def narrate(
    c: Config, p: Plan, log: StepLog, frame: int, truesize: int, hdr_padded_len: int,
    headroom: int = 0,
) -> None:
    """page_to_skb's steps for the frame's first buffer (big: page 0 of the chain; ``headroom``:
    an XDP_PASS up to 6.2), from the plan's decision."""
    sh = c.shinfo_size
    if p.why is Build.NO_BUILD_PATH:
        log.add(
            SRC,
            "page_to_skb",
            f"{c.kernel} has no build_skb path here: always copy into a "
            "napi_alloc_skb(GOOD_COPY_LEN) head (fb32856b16ad adds one in 5.13)",
            len=frame,
        )
    else:
        # tailroom = truesize - headroom - hdr_padded_len - len (the 5.13 form, truesize - len -
        # headroom - (hdr_padded_len - hdr_len), has the same value)
        assert isinstance(p.why, Build)
        why = _WHY[p.why].format(frame=frame, tailroom=p.tailroom, shinfo=sh)
        log.add(
            SRC,
            "page_to_skb",
            ("build_skb: " if p.outcome == "build_skb" else "copy: ") + why,
            c.cite(PAGE_TO_SKB_BUILD_SKB),
            len=frame,
            GOOD_COPY_LEN=c.good_copy_len,
            truesize=truesize,
            hdr_padded_len=hdr_padded_len,
            **({"headroom": headroom} if headroom else {}),
            tailroom=p.tailroom,
            shinfo_size=sh,
            NET_IP_ALIGN=c.net_ip_align,
        )
        if p.outcome == "build_skb":
            log.add(
                SRC,
                "page_to_skb",
                f"build_skb(buf, {truesize}): skb_shared_info takes the buffer's last {sh} "
                f"bytes; skb_reserve({headroom + hdr_padded_len}), skb_put({frame}); "
                + ("hdr_valid is false (XDP): skb->cb stays zeroed" if headroom else
                   "the header is copied into skb->cb from hdr_p"),
                end=p.end,
                truesize=truesize + c.sk_buff_aligned,
            )
            return
    head = c.napi_head
    skb_tailroom = p.end - p.data
    log.add(
        SKBUFF_SRC,
        "napi_alloc_skb",
        f"head from {head.label}: truesize {head.truesize}, skb_tailroom {skb_tailroom}; copy "
        + (f"the whole frame ({p.copy} B)" if p.copy == frame else f"ETH_HLEN ({p.copy} B) only"),
        GOOD_COPY_LEN=c.good_copy_len,
        head_size=head.size,
        truesize=head.truesize,
        skb_tailroom=skb_tailroom,
        copy=p.copy,
    )


def used_regions(
    c: Config,
    size: int,
    lead: tuple[tuple[str, int, str], ...],
    frame_bytes: int,
    outcome: str | None,
    copied: int,
) -> tuple[Region, ...]:
    """The buffer after page_to_skb: what became the skb head, what was copied, what is frag 0
    (``outcome`` None: nothing was built, e.g. a short packet)."""
    used = sum(part[1] for part in lead) + frame_bytes
    if outcome == "build_skb":
        sh = c.shinfo_size
        return regions(
            *lead,
            ("frame", frame_bytes, "the skb's linear data"),
            ("tailroom", size - used - sh, "skb tailroom"),
            ("skb_shared_info", sh, "written by build_skb at skb->end"),
        )
    if outcome == "copy":
        released = copied == frame_bytes
        return regions(
            *lead,
            (
                "frame",
                copied,
                "copied into the new skb head"
                + ("; the buffer is then released" if released else ""),
            ),
            ("frame", frame_bytes - copied, "left in place: frag 0"),
            ("unused", size - used, ""),
        )
    return regions(*lead, ("frame", frame_bytes, ""), ("unused", size - used, ""))
