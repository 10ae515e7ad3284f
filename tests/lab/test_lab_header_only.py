"""A header-only frame (the device wrote the virtio-net header and nothing after it) against
real guests: logs recorded with vnetrx's vhost-user backend (the device writes each frame into
the guest's ring itself, so it can write 12 bytes and no frame; the dgram backend cannot carry a
0-byte datagram: QEMU stops reading, and the run stalls), on the Debian 6.1.0-57 (6.1.192) and
6.12.117 guests, QEMU 7.2, TCG:

    vnetrx lab virtio --image IMG --mode mergeable-gso --len 0,1,13,14,60 --serial-log LOG

(the lab takes --len 0 with a local change of its length range, reported to the lab's owner).
"""

from __future__ import annotations

import pytest

from tests import DATA as TESTS_DATA
from vnetrx.kernel.registry import lookup
from vnetrx.lab.compare import compare
from vnetrx.observed.guest_log import parse_log
from vnetrx.paths.virtio_net import VirtioRxSetup
from vnetrx.replay import RingConfig, replay

DATA = TESTS_DATA / "lab_vhost_user"
LENGTHS = (0, 1, 13, 14, 60)


@pytest.mark.parametrize(("release", "version"), [("6.1.0-57-amd64", "6.1.192"),
                                                  ("6.12.117+deb12-amd64", "6.12.117")])
def test_a_header_only_frame_is_counted_as_the_guest_counted_it(release: str,
                                                                version: str) -> None:
    text = (DATA / f"header-only-mergeable-gso-{release}.log").read_text()
    assert text.splitlines()[0].endswith("--mode mergeable-gso --len 0,1,13,14,60")
    log = parse_log(text)
    assert log.complete and not log.errors and log.release == release
    k = lookup(version)
    report = compare(k, "mergeable-gso", LENGTHS, log)
    assert all(f.match for f in report.frames) and report.counters_match
    # the guest's /sys/class/net/eth0/statistics/rx_length_errors: the frames of 0, 1 and 13
    # bytes (len < hdr_len 12 + ETH_HLEN 14), not 14 and 60
    assert report.rx_length_errors == (3, 3)
    # the same sequence through the ring replay: each frame takes the next buffer, and the
    # replay counts what the guest counted
    run = replay(k, RingConfig(VirtioRxSetup(mergeable=True, guest_gso=True)), LENGTHS)
    assert [f.trace.counter for f in run.frames] == ["rx_length_errors"] * 3 + [None] * 2
    assert sum(f.trace.counter == "rx_length_errors" for f in run.frames) == 3
