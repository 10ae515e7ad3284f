"""vnetrx.lab.xdp_probe's pure parts: the probe's answer, the CPU list, the comparison."""

from __future__ import annotations

import pytest

from vnetrx.kernel.registry import lookup
from vnetrx.lab.initramfs import LabSetupError
from vnetrx.lab.xdp_probe import check, cpus_of, parse_answer, source

FEATURES = ("GUEST_CSUM", "CTRL_GUEST_OFFLOADS", "MRG_RXBUF", "VERSION_1", "MTU")


def test_answers() -> None:
    assert parse_answer("rc 0") == (None, "")
    assert parse_answer("rc 22 virtio_net: MTU too large to enable XDP") == (
        "EINVAL", "virtio_net: MTU too large to enable XDP")
    with pytest.raises(LabSetupError):
        parse_answer("load 1")


@pytest.mark.parametrize(("online", "cpus"), [("0", 1), ("0-3", 4), ("0-1,4", 3), ("", 1)])
def test_cpus(online: str, cpus: int) -> None:
    assert cpus_of(online) == cpus


def test_check_compares_errno_message_and_warnings() -> None:
    dmesg = "virtio_net virtio0 eth0: single-buffer XDP requires MTU less than 3506|"
    refused = check(lookup("6.12"), FEATURES, 3507, 1,
                    "rc 22 virtio_net: MTU too large to enable XDP without frags", dmesg)
    assert refused.match
    assert not check(lookup("6.12"), FEATURES, 3507, 1, "rc 0", "").match
    assert not check(lookup("6.12"), FEATURES, 3507, 1,
                     "rc 22 virtio_net: MTU too large to enable XDP without frags", "").match


def test_probe_source_ships_with_the_package() -> None:
    assert b"BPF_PROG_LOAD" in source() and b"IFLA_XDP" in source()
