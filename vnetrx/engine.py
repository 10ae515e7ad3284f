"""Configuration in, immutable trace out. No I/O, no click, no rich."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vnetrx.errors import SimulationError
from vnetrx.invariants import trace_problems
from vnetrx.kernel.profile import KernelProfile
from vnetrx.kernel.registry import require_path
from vnetrx.model import TRACE_SCHEMA, Received, Trace, Value
from vnetrx.paths import virtio_net
from vnetrx.paths.steps import StepLog

if TYPE_CHECKING:
    from vnetrx.paths.tun import TapFrame, TapSetup
    from vnetrx.paths.vhost import VhostTxSetup


def trace_virtio(k: KernelProfile, setup: virtio_net.VirtioRxSetup,
                 frame: virtio_net.RxFrame) -> Trace:
    """Walk one received frame through virtio-net's receive path on kernel ``k``, the device
    set up as ``setup``."""
    require_path(k, "virtio")
    virtio_net.check_frame_len(frame.len)
    s = virtio_net.check_virtio_setup(k, setup, frame)
    log = StepLog(k)
    result = virtio_net.receive(virtio_net.config(k, s), frame, log)
    inputs: tuple[tuple[str, Value], ...] = (
        ("frame_len", frame.len),
        ("mergeable", s.mergeable),
        ("guest_gso", s.guest_gso),
        ("mtu", s.mtu),
        ("hdr_len", s.hdr_len),
        ("buf_len", s.buf_len),
        ("ewma", s.ewma),
        ("ring_size", s.ring_size),
        ("buffer_index", frame.buffer_index),
        ("hdr", None if frame.hdr is None else frame.hdr.to_bytes(s.hdr_len or 12).hex()),
        ("xdp", s.xdp),
        *((("xdp_frags", s.xdp_frags), ("xdp_adjust_head", s.xdp_adjust_head),
           ("xdp_adjust_tail", s.xdp_adjust_tail), ("xdp_meta", s.xdp_meta),
           ("xdp_posted_before", s.xdp_posted_before))
          if s.xdp is not None else ()),
    )
    return _finish(k, inputs, log, result)


def trace_tap(k: KernelProfile, setup: TapSetup, frame: TapFrame) -> Trace:
    """Walk one write(2) (``frame``: its length after the vnet header, and that header) to a
    tun/tap fd set up as ``setup`` through tun_get_user on kernel ``k``."""
    # imported here: a virtio trace does not load the tap path (start-up time, issue 15)
    from vnetrx.paths import tun

    require_path(k, "tap")
    tun.check_frame_len(frame.len)
    c = tun.for_write(tun.tap_config(k, setup, frame), frame)
    s = c.setup
    log = StepLog(k)
    result = tun.receive(c, frame, log)
    inputs: tuple[tuple[str, Value], ...] = (
        ("frame_len", frame.len),
        ("tun", s.tun),
        ("blocking", s.blocking),
        ("sndbuf", s.sndbuf),
        ("vnet_hdr", s.vnet_hdr),
        ("vnet_hdr_sz", s.vnet_hdr_sz),
        ("hdr", None if c.written is None else c.written.hex()),
        ("xdp", s.xdp),
        ("frag_source", s.frag_source),
    )
    return _finish(k, inputs, log, result)


def trace_vhost_tx(k: KernelProfile, setup: VhostTxSetup, frame: TapFrame) -> Trace:
    """Walk a frame the guest transmits (``frame``: its length and the vnet header in front of
    it) through vhost-net's handle_tx into the tap on kernel ``k``."""
    from vnetrx.paths import vhost

    require_path(k, "tap")
    vhost.check_frame_len(frame.len)
    c = vhost.for_tx_frame(vhost.vhost_tx_config(k, setup), frame)
    s = c.setup
    log = StepLog(k)
    result = vhost.receive(c, frame.len, log)
    inputs: tuple[tuple[str, Value], ...] = (
        ("frame_len", frame.len),
        ("sndbuf", s.sndbuf),
        ("vnet_hdr_sz", s.vnet_hdr_sz),
        ("hdr", None if c.tap.written is None else c.tap.written.hex()),
        ("xdp", s.xdp),
        ("zcopy", s.zcopy),
        ("zcopy_offset", s.zcopy_offset),
        ("iff_napi", s.napi),
    )
    return _finish(k, inputs, log, result)


def _finish(k: KernelProfile, inputs: tuple[tuple[str, Value], ...], log: StepLog,
            r: Received) -> Trace:
    """Assemble the trace and check the invariants every trace must pass (regions tile buffers,
    truesize covers every byte, …)."""
    trace = Trace(schema=TRACE_SCHEMA, kernel=k, input=inputs, steps=tuple(log.steps),
                  notes=tuple(log.notes), **r._asdict())
    problems = trace_problems(trace, k.sk_buff_aligned)
    if problems:
        raise SimulationError(
            "internal inconsistency (a vnetrx bug, please report): " + "; ".join(problems)
        )
    return trace
