"""drivers/virtio/virtio_ring.c as the receive path meets it: the device fills posted buffers in
order and reports each used length (virtqueue_get_buf_ctx), and it cannot write more than a
posted buffer holds (what a driver without a length check would trust)."""

from __future__ import annotations

from typing import Final

from vnetrx.kernel.changes import Change
from vnetrx.paths.steps import StepLog
from vnetrx.paths.virtio_net.plan import Drop, Plan
from vnetrx.paths.virtio_net.setup import Config

RING_SRC: Final = "drivers/virtio/virtio_ring.c"
SRC: Final = "drivers/net/virtio_net.c"


def narrate_get_buf(p: Plan, log: StepLog) -> None:
    """Mergeable: the device writes header and frame across num_buffers buffers."""
    log.add(
        RING_SRC,
        "virtqueue_get_buf_ctx",
        f"the device writes {sum(p.used)} bytes (header + frame) across "
        f"num_buffers = {len(p.buffers)} buffer(s)",
        len=p.used[0],
        num_buffers=len(p.buffers),
    )


def narrate_too_long(
    c: Config,
    p: Plan,
    log: StepLog,
    frame: int,
    capacity: int,
    function: str,
    check: Change,
    message: str,
) -> None:
    """A frame longer than the posted buffer holds: a conforming device cannot deliver it; a
    kernel with ``check`` drops one that is reported anyway, a kernel without stops vnetrx."""
    log.add(
        RING_SRC,
        "virtqueue_add_inbuf",
        f"a {frame}-byte frame does not fit the posted buffer ({capacity} frame bytes): a "
        "conforming device cannot deliver it",
        len=frame,
        capacity=capacity,
    )
    if p.reason is not Drop.EXCEEDS_BUFFER:
        log.add(
            SRC,
            function,
            f"a device that reports it anyway is dropped: {message}",
            (check,),
            len=frame,
            limit=capacity,
        )
        return
    log.add(
        SRC,
        function,
        f"{c.kernel} has no length check here: a device that reported this "
        "length would make the driver overrun the buffer; vnetrx stops",
        len=frame,
    )
