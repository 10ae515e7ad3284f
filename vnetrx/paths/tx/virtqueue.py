"""Mirrors drivers/virtio/virtio_ring.c's descriptor accounting for one outgoing request:
virtqueue_add() (@3.16.0) / virtqueue_use_indirect() (@6.18.3, @7.3.4), split ring.

Facts: docs/kernel/tx-headroom.md §6.3 and virtqueue_add read in the 3.16.0 tree.
"""

from __future__ import annotations

from vnetrx.paths.steps import StepLog

RING_SRC = "drivers/virtio/virtio_ring.c"
VRING_DESC_BYTES = 16  # sizeof(struct vring_desc): one entry of an indirect table


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def virtqueue_add(indirect_desc: bool, total_sg: int) -> tuple[int, int]:
    """Ring slots and indirect-table bytes: "vq->indirect && total_sg > 1 && vq->vq.num_free"
    (virtqueue_add @3.16.0; virtqueue_use_indirect @6.18.3) puts the request in one slot."""
    indirect = indirect_desc and total_sg > 1
    return (1 if indirect else total_sg), (VRING_DESC_BYTES * total_sg if indirect else 0)


def narrate_virtqueue_add(indirect_desc: bool, total_sg: int, slots: int, table: int,
                          log: StepLog) -> None:
    indirect = table > 0
    log.add(
        RING_SRC,
        "virtqueue_add",
        f"{total_sg} sg entries → 1 ring slot + a {table}-byte indirect table"
        if indirect
        else f"{_plural(total_sg, 'sg entry', 'sg entries')} → {_plural(slots, 'ring slot', 'ring slots')}"
        + ("" if indirect_desc else " (no VIRTIO_RING_F_INDIRECT_DESC)"),
        total_sg=total_sg,
        indirect=indirect,
        ring_slots=slots,
    )
