"""tun_get_user's zerocopy branch: a sendmsg whose msg_control carries a ubuf_info (vhost-net's
handle_tx_zerocopy, with vhost_net's ``experimental_zcopytx=1``) has only its first bytes
copied into a small linear head; the rest of the sender's pages are pinned and become the skb's
frags (net/core/datagram.c:zerocopy_sg_from_iter).

Mirrors, each the same in 6.1.192 and 6.12.117 (checked on both by `vnetrx lab vhost --zcopy`,
tests/data/vhost/*.zcopy.*):

* drivers/net/tun.c:tun_get_user: ``if (msg_control)``: copylen = hdr_len ? hdr_len :
  GOODCOPY_LEN (128), at most good_linear; linear = copylen; ``iov_iter_advance(&i, copylen)``
  on a copy of the iterator and ``zerocopy = iov_iter_npages(&i, INT_MAX) <= MAX_SKB_FRAGS``;
  zerocopy makes tun_can_build_skb false, so tun_alloc_skb(tfile, align, copylen, linear)
  allocates a head of align + copylen and no paged part (prepad + len < PAGE_SIZE); then
  ``zerocopy_sg_from_iter(skb, from)`` and ``skb_zcopy_init(skb, msg_control)``. Without
  zerocopy (too many pages) the write is copied as any other, and the ubuf's callback runs at
  once with success false.
* net/core/datagram.c:zerocopy_sg_from_iter: skb_copy_datagram_from_iter of min(headlen,
  count), then __zerocopy_sg_from_iter (6.12: zerocopy_fill_skb_from_iter): per
  iov_iter_get_pages call (one iovec segment: the whole rest of a one-descriptor chain)
  ``truesize = PAGE_ALIGN(copied + start)`` is added to skb->truesize and skb->len/data_len grow
  by ``copied``; a page becomes a frag at its offset, merged with the previous frag only when
  both are parts of one compound page (compound_head) and contiguous — order-0 pages never are.
  Read @torvalds as stored (the pre-6.0 form: iov_iter_get_pages + iov_iter_advance, the same
  loop).

Assumed (said in the narration): the chain is one descriptor whose guest memory is one
contiguous user mapping (one iovec, QEMU's case for a buffer inside one RAM region), backed by
order-0 pages (no transparent huge page: the lab guests run THP ``never``).
"""

from __future__ import annotations

from typing import Final

from vnetrx.kernel.profile import KernelProfile
from vnetrx.model import Frag, Skb
from vnetrx.paths.skbuff import skb_add_rx_frag
from vnetrx.values import Value

GOODCOPY_LEN: Final = 128  # drivers/net/tun.c: what tun_get_user copies of a zerocopy write


class ZeroCopy(Value):
    """tun_get_user's zerocopy decision and, when taken, the pinned pages as frags."""

    __slots__ = ("copylen", "frags", "npages", "offset", "pinned", "start", "truesize", "used")
    _names = ("offset", "copylen", "start", "npages", "used", "pinned", "frags", "truesize")

    def __init__(self, offset: int, copylen: int, start: int, npages: int, used: bool,
                 pinned: int, frags: tuple[Frag, ...], truesize: int) -> None:
        self.offset: Final = offset  # the chain's first byte (the vnet header) in its page
        self.copylen: Final = copylen  # hdr_len or GOODCOPY_LEN, at most good_linear
        self.start: Final = start  # where the first pinned byte sits in its page
        self.npages: Final = npages  # iov_iter_npages of the rest
        self.used: Final = used  # npages <= MAX_SKB_FRAGS: the pages are pinned
        self.pinned: Final = pinned  # bytes left in the guest's pages (frags)
        self.frags: Final = frags
        self.truesize: Final = truesize  # PAGE_ALIGN(copied + start): what the pages add

    def _values(self) -> tuple[object, ...]:
        return (self.offset, self.copylen, self.start, self.npages, self.used, self.pinned,
                self.frags, self.truesize)


def tun_get_user_zerocopy(k: KernelProfile, good_linear: int, vnet_hdr_sz: int,
                          frame_len: int, hdr_len: int, offset: int) -> ZeroCopy:
    """The ``if (msg_control)`` block of tun_get_user for a chain starting ``offset`` bytes into
    its page (``hdr_len``: after the NEEDS_CSUM fix-up), and the frags
    __zerocopy_sg_from_iter would make of the rest."""
    page = k.build.page_size
    copylen = min(hdr_len or GOODCOPY_LEN, good_linear)
    at = offset + vnet_hdr_sz + copylen  # the iterator after the header and the copied part
    pinned = max(frame_len - copylen, 0)
    start = at % page
    npages = (start + pinned + page - 1) // page if pinned else 0
    used = npages <= k.build.max_skb_frags
    frags: list[Frag] = []
    if used:
        first_page, left, where = at // page, pinned, start
        while left:
            size = min(left, page - where)
            frags.append(Frag(f"guest page {first_page + len(frags)}", where, size, page))
            left -= size
            where = 0
    return ZeroCopy(offset, copylen, start, npages, used, pinned, tuple(frags),
                    npages * page if used else 0)


def zerocopy_sg_from_iter(head: Skb, z: ZeroCopy) -> Skb:
    """The head tun_alloc_skb made (copylen linear bytes, no frag) with the pinned pages
    added: len and data_len grow by what was pinned, truesize by a page per page spanned."""
    skb = head
    for frag in z.frags:
        skb = skb_add_rx_frag(skb, frag)
    return skb
