"""Zerocopy TX (vhost_net experimental_zcopytx=1: handle_tx_zerocopy → tun_get_user's
msg_control branch → zerocopy_sg_from_iter), the model's arithmetic at its boundaries. The
numbers the real guests showed are in tests/lab/test_lab_vhost_zcopy.py; here: the boundaries
around VHOST_GOODCOPY_LEN (256, the chain with its vnet header), hdr_len above good_linear
(copylen = good_linear, tun.c:tun_get_user), MAX_SKB_FRAGS (iov_iter_npages of the rest above it:
no zerocopy, the write copied) and the page offset of the pinned part."""

from __future__ import annotations

import struct

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.engine import trace_vhost_tx
from vnetrx.kernel.build import BuildConfig
from vnetrx.kernel.registry import lookup
from vnetrx.model import Trace
from vnetrx.paths.tun import TapFrame
from vnetrx.paths.tun.zerocopy import GOODCOPY_LEN, tun_get_user_zerocopy
from vnetrx.paths.vhost import VhostTxSetup


def vt(length: int, kernel: str = "6.12.117", build: BuildConfig | None = None,
       **options: object) -> Trace:
    k = lookup(kernel, build) if build is not None else lookup(kernel)
    header = options.pop("hdr", None)
    return trace_vhost_tx(k, VhostTxSetup(zcopy=True, **options),  # type: ignore[arg-type]
                          TapFrame(length, header))  # type: ignore[arg-type]


def used(t: Trace) -> bool:
    assert t.vhost is not None
    return t.vhost.zcopy_used


def hdr(flags: int = 0, gso_type: int = 0, hdr_len: int = 0, gso_size: int = 0,
        csum_start: int = 0, csum_offset: int = 0) -> bytes:
    return struct.pack("<BBHHHHH", flags, gso_type, hdr_len, gso_size, csum_start, csum_offset,
                       0)


@pytest.mark.parametrize(("sock_hlen", "first"), [(12, 244), (10, 246)])
def test_the_chain_length_with_its_header_decides(sock_hlen: int, first: int) -> None:
    """len = iov_length(vq->iov): the vnet header counts towards VHOST_GOODCOPY_LEN."""
    assert [used(vt(n, vnet_hdr_sz=sock_hlen)) for n in (first - 1, first, first + 1)] == [
        False, True, True]


def test_a_copied_chain_is_an_ordinary_tun_get_user_write() -> None:
    t = vt(243)
    assert t.vhost is not None and (t.vhost.path, t.vhost.reason) == ("tun_get_user",
                                                                       "zerocopy")
    assert t.outcome == "build_skb" and t.skb is not None and t.skb.nr_frags == 0


def test_the_pinned_frags_start_after_header_and_copylen() -> None:
    """A 1000-byte frame at page offset 0: 12 + 128 bytes before the pinned part, which starts
    at 140 and is one 872-byte frag; at offset 3956 it starts at 4096: a new page, offset 0."""
    t = vt(1000)
    assert t.skb is not None
    assert [(f.offset, f.size, f.truesize) for f in t.skb.frags] == [(140, 872, 4096)]
    assert t.skb.headlen == GOODCOPY_LEN - 14  # after eth_type_trans
    t = vt(1000, zcopy_offset=3956)
    assert t.skb is not None and [(f.offset, f.size) for f in t.skb.frags] == [(0, 872)]
    t = vt(1000, zcopy_offset=3957)
    assert t.skb is not None and [(f.offset, f.size) for f in t.skb.frags] == [(1, 872)]
    t = vt(1000, zcopy_offset=3955)  # one byte earlier: the pinned part spans two pages
    assert t.skb is not None and [(f.offset, f.size) for f in t.skb.frags] == [(4095, 1),
                                                                               (0, 871)]
    assert t.skb.truesize == vt(1000).skb.truesize + 4096  # type: ignore[union-attr]


def test_hdr_len_above_good_linear_copies_good_linear() -> None:
    """copylen = hdr_len, at most good_linear (SKB_MAX_HEAD(64) = 3712 with a 4 KiB page and
    a 320-byte shared info)."""
    k = lookup("6.12.117")
    z = tun_get_user_zerocopy(k, 3712, 12, 9000, 3713, 0)
    assert z.copylen == 3712 and z.pinned == 9000 - 3712
    z = tun_get_user_zerocopy(k, 3712, 12, 9000, 3711, 0)
    assert z.copylen == 3711
    t = vt(9000, hdr=hdr(hdr_len=4000))
    assert t.skb is not None and t.skb.headlen == 3712 - 14 and used(t)


def test_more_pages_than_max_skb_frags_are_copied() -> None:
    """iov_iter_npages(rest) > MAX_SKB_FRAGS: zerocopy stays false, the write is copied as
    tun_get_user copies any other (here with MAX_SKB_FRAGS 8: 8 pages hold a rest of at most
    8 * 4096 - 140 bytes)."""
    build = BuildConfig(max_skb_frags=8)
    edge = 8 * 4096 - 140 + GOODCOPY_LEN  # the longest frame whose rest spans 8 pages
    t = vt(edge, build=build)
    assert used(t) and t.skb is not None and t.skb.nr_frags == 8
    t = vt(edge + 1, build=build)
    assert not used(t) and t.skb is not None and t.skb.nr_frags != 9


def test_a_zerocopy_frame_with_an_xdp_program_is_refused() -> None:
    from vnetrx.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match="not modelled"):
        vt(1000, xdp="pass")
    assert not used(vt(243, xdp="pass"))  # a copied chain: the tap write path as before


def test_trace_and_replay_cli() -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["trace", "--path", "vhost-tx", "--len", "9000", "--zcopy",
                                 "--zcopy-offset", "3900", "--kernel", "6.1.192"])
    assert result.exit_code == 0, result.output
    assert "zerocopy_sg_from_iter" in result.output and "vhost_zerocopy_signal_used" in result.output
    result = runner.invoke(cli, ["replay", "--path", "vhost-tx", "--len", "243,244,1000",
                                 "--zcopy", "--kernel", "6.1.192", "--jsonl"])
    assert result.exit_code == 0, result.output
    import json

    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["zcopy_used"], r["update"], r["batch"]) for r in rows] == [
        (False, 0, None), (True, 1, None), (True, 2, None)]
    result = runner.invoke(cli, ["replay", "--path", "vhost-rx", "--len", "1000", "--zcopy"])
    assert result.exit_code == 2 and "--zcopy does not apply to --path vhost-rx" in result.stderr
