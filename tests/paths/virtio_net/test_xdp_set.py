"""virtnet_xdp_set's answer per version (drivers/net/virtio_net.c read @5.12.9, @5.15.215,
@6.1.192, @6.2.12, @6.6.150, @6.12.117, @6.18.9): the kernel's messages, errnos and limits."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.errors import InputError
from vnetrx.kernel.registry import lookup
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.paths.virtio_net.xdp_set import XdpAttachSetup, mtu_limit, virtnet_xdp_set


@pytest.mark.parametrize(("release", "limit"), [
    ("5.15", 4080),  # PAGE_SIZE - sizeof(struct padded_vnet_hdr) 16
    ("6.1", 4064),  # padded_vnet_hdr 32 since c1ddc42da2b2 (5.18)
    ("6.2", 4064),
    ("6.6", 3506),  # 4096 - SKB_DATA_ALIGN(256 + 320) - 14 (e814b958ad88, 6.3)
    ("6.12", 3506),
    ("6.18", 3506),
])
def test_mtu_limit(release: str, limit: int) -> None:
    assert mtu_limit(lookup(release), frags=False) == limit


@pytest.mark.parametrize(("mtu", "attach"), [(3506, True), (3507, False)])
def test_mtu_check_is_greater_than(mtu: int, attach: bool) -> None:
    setup = XdpAttachSetup(VirtioRxSetup(mergeable=True, mtu=mtu), queues=4)
    r = virtnet_xdp_set(lookup("6.12"), setup)
    assert r.attach is attach
    if not attach:
        assert (r.errno, r.message) == ("EINVAL",
                                        "virtio_net: MTU too large to enable XDP without frags")
        assert r.warnings == ("single-buffer XDP requires MTU less than 3506",)


def test_frags_lift_the_mtu_limit_from_6_3_only() -> None:
    frags = XdpAttachSetup(VirtioRxSetup(mergeable=True, mtu=9000, xdp_frags=True), queues=4)
    assert virtnet_xdp_set(lookup("6.6"), frags).attach
    old = virtnet_xdp_set(lookup("6.1"), frags)
    assert (old.attach, old.message) == (False, "virtio_net: MTU too large to enable XDP")
    assert any("no multi-buffer XDP" in n for n in old.notes)


@pytest.mark.parametrize("release", ["5.15", "6.1", "6.12", "6.18"])
def test_offloads_without_ctrl_guest_offloads(release: str) -> None:
    r = virtnet_xdp_set(lookup(release), XdpAttachSetup(ctrl_guest_offloads=False))
    assert r.errno == "EOPNOTSUPP"
    assert r.message == ("virtio_net: Can't set XDP while host is implementing GRO_HW/CSUM, "
                         "disable GRO_HW/CSUM first")


def test_no_offloads_no_ctrl_is_fine() -> None:
    s = XdpAttachSetup(ctrl_guest_offloads=False, guest_csum=False, queues=4)
    assert virtnet_xdp_set(lookup("6.12"), s).attach


def test_legacy_mergeable_needs_any_header_sg() -> None:
    r = virtnet_xdp_set(lookup("6.1"), XdpAttachSetup(VirtioRxSetup(mergeable=True), any_header_sg=False))
    assert (r.errno, r.message) == (
        "EINVAL", "virtio_net: XDP expects header/data in single page, any_header_sg required")


@pytest.mark.parametrize(("release", "attach", "qp"), [("5.12", False, 0), ("5.13", True, 0)])
def test_too_few_queue_pairs(release: str, attach: bool, qp: int) -> None:
    r = virtnet_xdp_set(lookup(release), XdpAttachSetup(queues=2, cpus=2))
    assert (r.attach, r.xdp_queue_pairs) == (attach, qp)
    if not attach:
        assert (r.errno, r.message) == ("ENOMEM", "virtio_net: Too few free TX rings available")
    else:
        assert "slower locked tx mode" in r.warnings[0]


def test_enough_queue_pairs_give_one_xdp_queue_per_cpu() -> None:
    # curr_queue_pairs = min(4, 2) = 2; 2 + 2 <= 4
    r = virtnet_xdp_set(lookup("6.12"), XdpAttachSetup(queues=4, cpus=2))
    assert (r.attach, r.xdp_queue_pairs, r.warnings) == (True, 2, ())


def test_big_mode_accepts_but_never_runs() -> None:
    r = virtnet_xdp_set(lookup("6.6"), XdpAttachSetup(VirtioRxSetup(guest_gso=True), queues=4))
    assert (r.attach, r.mode, r.runs) == (True, "big", False)


def test_mergeable_buffers_with_xdp() -> None:
    r = virtnet_xdp_set(lookup("6.12"), XdpAttachSetup(VirtioRxSetup(mergeable=True), queues=4))
    how = dict(r.effects)["rx buffers"]
    assert "PAGE_SIZE - room = 3520" in how and "= 576" in how


def test_small_buffers_with_xdp() -> None:
    # SKB_DATA_ALIGN(12 + 64 + 1518 + 256) = 1856, + 320 = 2176; without XDP 1600 + 320 = 1920
    how = dict(virtnet_xdp_set(lookup("6.12"), XdpAttachSetup(queues=4)).effects)["rx buffers"]
    assert "2176-byte slots (was 1920)" in how and "1530 bytes at +320" in how


def test_bad_values() -> None:
    with pytest.raises(InputError, match=r"valid: 1\.\.32768"):
        virtnet_xdp_set(lookup("6.12"), XdpAttachSetup(queues=0))


def test_cli_text_and_usage() -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["xdp", "check", "--mergeable", "--mtu", "9000", "--kernel",
                                 "6.12"])
    assert result.exit_code == 0
    assert 'attach fails: EINVAL: "virtio_net: MTU too large to enable XDP without frags"' in \
        result.stdout
    result = runner.invoke(cli, ["xdp", "check", "--ring-size", "64"])
    assert result.exit_code == 2 and "--ring-size does not apply to xdp check" in result.output
    result = runner.invoke(cli, ["xdp", "check", "--queues", "0", "--json"])
    assert result.exit_code == 2
