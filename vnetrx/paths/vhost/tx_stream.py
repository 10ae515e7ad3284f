"""A guest's transmit stream through vhost-net (``replay --path vhost-tx``): handle_tx_copy's
loop over the descriptor chains the guest queued, with what one frame at a time does not show
(drivers/vhost/net.c:handle_tx_copy, vhost_tx_batch, vhost_net_signal_used @6.1.192, 6.12.117;
checked against both in real guests, tests/data/vhost):

* the batches: up to VHOST_NET_BATCH (64) buffers per sendmsg(TUN_MSG_PTR). ``done_idx`` (every
  chain handled since the used ring was last updated, batched or not) reaching 64 flushes the
  batch at the top of the loop; a frame that cannot be batched (-ENOSPC) flushes it first and
  goes alone through sendmsg → tun_get_user; the end of a run flushes what is left;
* the runs: a run ends after VHOST_NET_PKT_WEIGHT (256) chains or VHOST_NET_WEIGHT bytes
  (vhost_exceeds_weight on ``total_len``, the chains' lengths with their vnet headers) and
  requeues itself; each flush updates the used ring and signals the guest once;
* where each buffer lies in vhost's page frag: vhost's own 32 KiB page filled from offset 0 up
  (vhost_net_page_frag_refill, up to 6.8), page_frag_alloc_align's from the top down (6.9 ...
  6.12), then from 0 up again (page_frag_zero_offset, 6.13);
* a header vhost_net_build_xdp refuses (-EINVAL) stalls the queue: the chain is put back and
  nothing after it is sent;
* with vhost_net's experimental_zcopytx=1 (handle_tx_zerocopy): no batch at all, one sendmsg
  per chain; a copied chain (shorter than VHOST_GOODCOPY_LEN) is added to the used ring and
  signalled at once (vhost_add_used_and_signal), a pinned one when its skb is freed and the
  ubuf's callback has run (vhost_zerocopy_signal_used: in upend order, from done_idx up to the
  first still in flight). The tap's skbs are freed inside the sendmsg here (netif_receive_skb
  consumes or drops them at once; assumed, and what the lab guests did): every chain is then
  its own used-ring update and signal, in the order queued (checked on 6.1.192 and 6.12.117,
  tests/data/vhost/*.zcopy.*).
* with VIRTIO_F_IN_ORDER (6.17+, 45347e79b544; from source only: drivers/vhost/net.c:
  handle_tx_copy, vhost_tx_batch and vhost.c:vhost_add_used_n_in_order @6.17.0, @6.18.9) a
  flush writes one used element, the last chain's head with len 0 (heads[0], nheads[0] =
  done_idx), and moves used->idx by every chain; without it one element per chain.

Pure: each frame's decisions are ``tx.vhost_tx_plan``'s; this module orders and places them.
Not modelled (the replay's notes say so): a page frag page reused in place once every buffer
carved from it is freed (the offsets are the same, the page may be the same one), the order-0
fallback under memory pressure, busy polling, zerocopy skbs held after the sendmsg (their
chains then wait, and copied chains behind them overtake them in the used ring;
vhost_exceeds_maxpend stops zerocopy at min(VHOST_MAX_PEND 128, ring size / 4) in flight).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

from vnetrx.errors import UnsupportedError
from vnetrx.kernel.changes import PAGE_FRAG_ZERO_OFFSET, VHOST_IN_ORDER
from vnetrx.kernel.constants import SKB_FRAG_PAGE_BYTES
from vnetrx.kernel.profile import KernelProfile
from vnetrx.paths.tun.setup import TapFrame
from vnetrx.paths.vhost.tx import (
    Road,
    VhostTxConfig,
    VhostTxPlan,
    VhostTxSetup,
    Why,
    check_frame_len,
    for_tx_frame,
    vhost_tx_config,
    vhost_tx_plan,
)
from vnetrx.values import Value

NOTES: Final = (
    "the guest queued the whole stream before vhost's worker ran (one kick): handle_tx takes "
    "chain after chain; a real guest's kicks and vhost's wake-ups may cut it into more runs",
    "vhost's page frag starts empty; a page whose every buffer has been freed may be reused in "
    "place (the same offsets), and a failed order-3 allocation falls back to one page: neither "
    "is modelled",
)
IN_ORDER_NOTE: Final = (
    "VIRTIO_F_IN_ORDER: from the kernel source (drivers/vhost/net.c, vhost.c @6.17.0, @6.18.9), "
    "not measured: no 6.17+ vhost_net ran here (this host has none; Debian's guests are 6.1 "
    "and 6.12)")


class TxRow(Value):
    """One frame of the stream: its plan, and where handle_tx put it."""

    __slots__ = ("batch", "call", "frame", "frame_len", "offset", "page", "plan", "run",
                 "stalled", "update", "used_elem")
    _names = ("frame", "frame_len", "plan", "run", "call", "batch", "page", "offset", "update",
              "stalled", "used_elem")

    def __init__(self, frame: int, frame_len: int, plan: VhostTxPlan, run: int,
                 call: int | None, batch: int | None, page: int | None, offset: int | None,
                 update: int | None, stalled: bool = False, used_elem: bool = False) -> None:
        self.frame: Final = frame
        self.frame_len: Final = frame_len
        self.plan: Final = plan  # tx.vhost_tx_plan's decisions for it
        self.run: Final = run  # the handle_tx run that took it (from 0)
        self.call: Final = call  # the sendmsg() that carried it (from 0; None: none did)
        self.batch: Final = batch  # buffers in that sendmsg(TUN_MSG_PTR) (None: tun_get_user)
        self.page: Final = page  # vhost's page frag page its buffer lies in (from 0)
        self.offset: Final = offset  # the buffer's offset in that page
        self.update: Final = update  # the used-ring update (and signal) that returned it
        self.stalled: Final = stalled  # -EINVAL: put back, the queue stops at it
        # the update wrote a used element with this chain's head (every chain; with IN_ORDER
        # only the update's last)
        self.used_elem: Final = used_elem

    def _values(self) -> tuple[object, ...]:
        return (self.frame, self.frame_len, self.plan, self.run, self.call, self.batch,
                self.page, self.offset, self.update, self.stalled, self.used_elem)


class PageFrag:
    """vhost's page frag: vhost_net_page_frag_refill's page (up from 0), or the pf_cache
    page_frag_cache (__page_frag_alloc_align: down from the top before 6.13, up after)."""

    __slots__ = ("align", "offset", "page", "size", "upward")

    def __init__(self, k: KernelProfile, pf_cache: bool) -> None:
        self.size = max(k.value(SKB_FRAG_PAGE_BYTES), k.build.page_size)
        self.upward = not pf_cache or k.has(PAGE_FRAG_ZERO_OFFSET)
        self.align = k.build.l1_cache_bytes  # SMP_CACHE_BYTES (page_frag_alloc_align)
        self.page = -1  # no page yet
        self.offset = 0

    def carve(self, buflen: int) -> tuple[int, int]:
        """The (page, offset) of a buffer of ``buflen`` bytes."""
        if self.upward:
            offset = -(-self.offset // self.align) * self.align  # aligned up
            if self.page < 0 or offset + buflen > self.size:
                self.page, offset = self.page + 1, 0
            self.offset = offset + buflen
            return self.page, offset
        offset = self.offset - buflen
        if self.page < 0 or offset < 0:
            self.page, offset = self.page + 1, self.size - buflen
        offset -= offset % self.align  # aligned down
        self.offset = offset
        return self.page, offset


class _Done(Value):
    """A chain handled since the last used-ring update: its row's parts so far."""

    __slots__ = ("batched", "call", "frame", "frame_len", "offset", "page", "plan", "run")
    _names = ("frame", "frame_len", "plan", "run", "call", "page", "offset", "batched")

    def __init__(self, frame: int, frame_len: int, plan: VhostTxPlan, run: int,
                 call: int | None, page: int | None, offset: int | None, batched: bool) -> None:
        self.frame: Final = frame
        self.frame_len: Final = frame_len
        self.plan: Final = plan
        self.run: Final = run
        self.call: Final = call
        self.page: Final = page
        self.offset: Final = offset
        self.batched: Final = batched

    def _values(self) -> tuple[object, ...]:
        return (self.frame, self.frame_len, self.plan, self.run, self.call, self.page,
                self.offset, self.batched)


class HandleTx:
    """handle_tx_copy's state across the stream: the batch, done_idx, the runs, the page frag,
    the sendmsg calls and used-ring updates so far."""

    def __init__(self, k: KernelProfile, setup: VhostTxSetup, in_order: bool = False) -> None:
        if in_order and not k.has(VHOST_IN_ORDER):
            raise UnsupportedError(f"VIRTIO_F_IN_ORDER: vhost-net offers it from 6.17 "
                                   f"({VHOST_IN_ORDER.commit}), not on {k.name} (valid: --kernel "
                                   "6.17 or later)")
        self.k = k
        self.setup = setup
        self.in_order = in_order
        self.base = vhost_tx_config(k, setup)  # the queue resolved once
        self.configs: dict[bytes | None, VhostTxConfig] = {}
        base = self.base
        self.frag = PageFrag(k, base.pf_cache)
        self.batch_max, self.weight, self.pkt_weight = base.batch, base.weight, base.pkt_weight
        self.done: list[_Done] = []  # done_idx's chains, in order
        self.batched = 0  # nvq->batched_xdp
        self.calls = 0
        self.updates = 0
        self.run = 0
        self.sent = 0  # sent_pkts of this run
        self.total = 0  # total_len of this run
        self.stalled = False

    def config(self, hdr: bytes | None) -> VhostTxConfig:
        """The TX queue with this frame's vnet header (one per header: a replay's frames may
        each bring their own)."""
        c = self.configs.get(hdr)
        if c is None:
            c = self.configs[hdr] = for_tx_frame(self.base, TapFrame(0, hdr))
        return c

    def frame(self, index: int, frame_len: int, hdr: bytes | None) -> list[TxRow]:
        """One chain; the rows whose used-ring update this completes (or the stalled one)."""
        check_frame_len(frame_len)
        c = self.config(hdr)
        plan = vhost_tx_plan(c, frame_len, words=False)
        out: list[TxRow] = []
        if self.setup.zcopy:  # handle_tx_zerocopy: each chain sent, then used, alone
            self.total += c.sock_hlen + frame_len
            out.append(TxRow(index, frame_len, plan, self.run, self.calls, None, None, None,
                             self.updates))
            self.calls += 1
            self.updates += 1
            self.sent += 1
            if self.sent >= self.pkt_weight or self.total >= self.weight:
                self.run += 1
                self.sent = self.total = 0
            return out
        if len(self.done) == self.batch_max:  # "if (nvq->done_idx == VHOST_NET_BATCH)"
            out += self.flush()
        self.total += c.sock_hlen + frame_len
        if plan.why is Why.EINVAL:
            # vhost_tx_batch, vhost_discard_vq_desc(vq, 1), break: the chain comes back at the
            # next kick and fails again
            out += self.flush()
            out.append(TxRow(index, frame_len, plan, self.run, None, None, None, None, None,
                             stalled=True))
            self.stalled = True
            return out
        if plan.road is Road.BATCH:
            assert plan.build is not None
            page, offset = self.frag.carve(plan.build.buflen)
            self.batched += 1
            self.done.append(_Done(index, frame_len, plan, self.run, None, page, offset, True))
        else:
            if plan.why is Why.ENOSPC:  # "let's flush batched packets" first
                out += self.flush()
            self.done.append(_Done(index, frame_len, plan, self.run, self.calls, None, None,
                                   False))
            self.calls += 1
        self.sent += 1
        if self.sent >= self.pkt_weight or self.total >= self.weight:  # vhost_exceeds_weight
            out += self.flush()
            self.run += 1
            self.sent = self.total = 0
        return out

    def flush(self) -> list[TxRow]:
        """vhost_tx_batch: sendmsg(TUN_MSG_PTR) of the batched buffers, then
        vhost_net_signal_used: one used-ring update for every chain done, one signal."""
        if not self.done:
            return []
        call = None
        if self.batched:
            call = self.calls
            self.calls += 1
        batch = self.batched
        last = len(self.done) - 1
        rows = [TxRow(d.frame, d.frame_len, d.plan, d.run,
                      call if d.batched else d.call, batch if d.batched else None, d.page,
                      d.offset, self.updates, used_elem=not self.in_order or n == last)
                for n, d in enumerate(self.done)]
        self.updates += 1
        self.done = []
        self.batched = 0
        return rows


def handle_tx_stream(k: KernelProfile, setup: VhostTxSetup,
                     frames: Iterable[tuple[int, bytes | None]],
                     in_order: bool = False) -> Iterator[TxRow]:
    """Every frame (its length and vnet header; None: ``setup``'s) in order through
    handle_tx_copy, rows as the used ring returns them; after a stall, the frames behind it are
    not read. ``in_order``: VIRTIO_F_IN_ORDER negotiated (6.17+). The setup is checked before
    the first row is asked for."""
    return _stream(HandleTx(k, setup, in_order), frames)


def _stream(tx: HandleTx, frames: Iterable[tuple[int, bytes | None]]) -> Iterator[TxRow]:
    for index, (frame_len, hdr) in enumerate(frames):
        yield from tx.frame(index, frame_len, hdr)
        if tx.stalled:
            return
    yield from tx.flush()  # the end of the run
