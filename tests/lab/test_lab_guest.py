"""`vnetrx lab virtio` against a real Debian 6.1 guest under QEMU (TCG): every field vnetrx
predicts and the guest reports must match, in small, big (MTU 9000) and mergeable mode on
`-netdev dgram`, and in big-gso and mergeable-gso mode (guest GSO negotiated) on vnetrx's own
vhost-user backend.

Needs qemu-system-x86_64, busybox (Debian busybox-static) and a Debian kernel unpacked by
`vnetrx lab fetch-kernel` (or $VNETRX_LAB_IMAGE pointing at a vmlinuz with its modules next to
it); skipped with the reason otherwise. About 10 s per boot.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.lab import qemu
from vnetrx.lab.initramfs import LabSetupError
from vnetrx.lab.run import DEFAULT_LENGTHS, cache_dir, find_busybox, run_virtio

pytestmark = pytest.mark.lab


def _images() -> list[Path]:
    """$VNETRX_LAB_IMAGE, else every Debian 6.x kernel `vnetrx lab fetch-kernel` unpacked."""
    env = os.environ.get("VNETRX_LAB_IMAGE")
    if env:
        return [Path(env)]
    return sorted(cache_dir().glob("linux-image-6.*-amd64/boot/vmlinuz-*"))


def _skip_reason() -> str | None:
    if qemu.qemu_available() is None:
        return "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
    try:
        find_busybox()
    except LabSetupError:
        return "busybox not installed (apt-get install busybox-static)"
    return None


IMAGES = _images()


@pytest.fixture(
    scope="module",
    params=IMAGES or [None],
    ids=[p.name.removeprefix("vmlinuz-") for p in IMAGES] or ["no-kernel"],
)
def image(request: pytest.FixtureRequest) -> Path:
    reason = _skip_reason()
    if reason is None and request.param is None:
        reason = (
            f"no Debian kernel in {cache_dir()} and $VNETRX_LAB_IMAGE unset "
            "(run `vnetrx lab fetch-kernel`)"
        )
    if reason is None and not Path(request.param).is_file():
        reason = f"kernel image {request.param} not found"
    if reason is not None:
        print(f"lab tests skipped: {reason}")
        pytest.skip(reason)
    path: Path = request.param
    return path


@pytest.mark.parametrize("mode", ["small", "big", "mergeable", "big-gso", "mergeable-gso"])
def test_guest_agrees_with_the_model(image: Path, mode: str, made_dirs: list[Path]) -> None:
    lengths = DEFAULT_LENGTHS[mode]
    result = run_virtio(image, mode, lengths)
    report = result.report
    assert report.kernel.startswith("6.")
    assert report.mode == mode
    assert report.kprobe, "the napi_gro_receive kprobe did not arm"
    assert len(report.frames) == len(lengths) >= 20
    mismatches = [
        (
            f.frame_len,
            f.buffer_index,
            [(c.name, c.predicted, c.observed) for c in f.checks if not c.ok],
        )
        for f in report.frames
        if not f.match
    ]
    assert mismatches == []
    assert report.counters_match, report.rx_length_errors
    assert result.boot_s < 60
    outcomes = [f.observed["outcome"] for f in report.frames]
    assert "skb" in outcomes and "drop" in outcomes
    gso = {"GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN", "GUEST_UFO"}
    if mode.endswith("-gso"):
        assert gso <= set(report.features) and "MTU" not in report.features
        assert max(f.frame_len for f in report.frames if f.observed["outcome"] == "skb") == 65535
    else:
        assert not gso & set(report.features)
    if mode == "big-gso":  # chains of MAX_SKB_FRAGS + 1 pages: 65535 fills the 18th
        assert next(f for f in report.frames if f.frame_len == 65535).observed["nr_frags"] == 17
    assert len(made_dirs) == 1
    assert not made_dirs[0].exists()


@pytest.mark.parametrize("mode", ["big-gso", "mergeable-gso"])
def test_offload_frames_agree_with_the_model(image: Path, mode: str) -> None:
    """Real TCP/UDP frames behind offload headers: every field of every frame, and the refused
    headers as drops counted in rx_frame_errors."""
    result = run_virtio(image, mode, (), offloads=True)
    report = result.report
    mismatches = [
        (f.frame_len, [(c.name, c.predicted, c.observed) for c in f.checks if not c.ok])
        for f in report.frames
        if not f.match
    ]
    assert mismatches == []
    assert report.rx_frame_errors[1] is not None
    assert report.rx_frame_errors[0] == report.rx_frame_errors[1] >= 6
    frames = {f.frame_len: f for f in report.frames}
    tso = frames[9014].observed  # NEEDS_CSUM TSO: headers pulled, GSO fields as sent
    assert (tso["data_len"], tso["gso_size"], tso["gso_type"], tso["ip_summed"]) == (
        8960, 1448, 0x3, 3)
    assert frames[1001].observed["ip_summed"] == 1  # DATA_VALID → CHECKSUM_UNNECESSARY
    # TCP_MIN_GSO_SIZE clamp (c27c449d455a), backported to 6.1.188 and 6.12.110: seen in the
    # Debian 6.1.192 and 6.12.117 guests; 6.1.170 and 6.12.100 store gso_size 1 as sent
    seen = {"6.1.192": 8, "6.12.117": 8, "6.1.170": 1, "6.12.100": 1}
    if report.kernel in seen:
        assert frames[100].observed["gso_size"] == seen[report.kernel], report.kernel


def test_cli_json(image: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(
        cli,
        [
            "lab",
            "virtio",
            "--image",
            str(image),
            "--mode",
            "small",
            "--len",
            "13,128,129,1518,1519",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["mode"] == "small" and data["match"] is True
    assert "VERSION_1" in data["features"] and "MRG_RXBUF" not in data["features"]
    frames = {f["frame_len"]: f for f in data["frames"]}
    assert frames[1518]["observed"]["truesize"] == frames[1518]["predicted"]["truesize"] == 2176
    assert frames[1519]["observed"] == {"outcome": "drop"}
    assert data["rx_length_errors"] == {"predicted": 1, "observed": 1}


def _xdp_case(image: Path) -> tuple[int, int, str]:
    """The MTU boundary of virtnet_xdp_set in this guest: (last accepted, first refused, the
    refusal's extack text)."""
    release = image.name.removeprefix("vmlinuz-")
    if release.startswith("6.1."):
        return 4064, 4065, "virtio_net: MTU too large to enable XDP"  # PAGE_SIZE - 32
    return 3506, 3507, "virtio_net: MTU too large to enable XDP without frags"  # 6.3+


def test_xdp_attach_at_the_mtu_boundary(image: Path) -> None:
    """A real attach in the guest (vnetrx's static probe): accepted at the limit, refused one
    byte above with the kernel's own message, and the locked-TX warning of a 1-queue device."""
    import shutil

    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed (the XDP probe is built with it)")
    ok, refused, message = _xdp_case(image)
    accepted = run_virtio(image, "mergeable", (60, 1000), mtu=ok, xdp_check=True).report
    assert accepted.xdp is not None and accepted.xdp.match, accepted.xdp
    assert accepted.xdp.observed_errno is None
    assert "slower locked tx mode" in accepted.xdp.warnings
    assert accepted.match  # the probe detached: the frames took the usual path
    no = run_virtio(image, "mergeable", (60, 1000), mtu=refused, xdp_check=True).report
    assert no.xdp is not None and no.xdp.match, no.xdp
    assert (no.xdp.observed_errno, no.xdp.observed_message) == ("EINVAL", message)


def _is_6_12(image: Path) -> bool:
    return "6.12" in image.name


def test_xdp_programs_in_the_guest(image: Path) -> None:
    """A program that stays attached (vnetrx's probe, `lab virtio --xdp`): XDP_DROP in
    mergeable mode (the program's drops, xdp_linearize_page's, and 6.1's check_mergeable_len
    rx_length_errors), XDP_TX on the vhost-user backend (the bytes the guest transmits: a
    zeroed 12-byte header + the frame), and on 6.12 multi-buffer XDP_PASS with frags."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed (the XDP probe is built with it)")
    dropped = run_virtio(image, "mergeable", (60, 1000, 3508, 3509, 9014), xdp="drop").report
    assert dropped.match, [(f.frame_len, f.predicted, f.observed) for f in dropped.frames]
    got = {name: (p, o) for name, p, o in dropped.xdp_counters}
    assert got["rx_xdp_drops"] == (5, 5)
    small = run_virtio(image, "small", (60, 1000, 1514), xdp="drop").report
    assert small.match and {n: p for n, p, _ in small.xdp_counters}["rx_xdp_drops"] == 3
    # attached after the device is up: the ring virtnet_open posted (no XDP headroom) is
    # copied page by page; 3000 spans two 1536-byte buffers and still fits one page
    late = run_virtio(image, "mergeable", (60, 3000, 3509), xdp="pass", xdp_late=True).report
    assert late.match, [(f.frame_len, f.predicted, f.observed) for f in late.frames]
    sent = run_virtio(image, "mergeable-gso", (60, 1000, 3000), xdp="tx").report
    assert sent.match and sent.transmitted == ((72, 1012, 3012), (72, 1012, 3012))
    if _is_6_12(image):
        frags = run_virtio(image, "mergeable", (1000, 9014, 63348, 63349), xdp="pass",
                           xdp_frags=True).report
        assert frags.match, [(f.frame_len, f.predicted, f.observed) for f in frags.frames]
        assert [f.observed.get("nr_frags") for f in frags.frames][:3] == [0, 2, 17]
