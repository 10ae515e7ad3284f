"""``vnetrx verify gro``: what the GRO model predicts for a burst of the oracle's case matrix
(vnetrx.live.gro_cases), compared with what the running kernel did (vnetrx.live.gro.run_case's
observation): every skb that left GRO (len, data_len, headlen, truesize, nr_frags, gso_size,
gso_segs, gso_type, ip_summed, csum_start, csum_offset and the frames it carries, in delivery
order) and every input's gro_result. Pure: the observation comes in as data."""

from __future__ import annotations

from typing import Any

from vnetrx.flow import GroClock, TapWrite, replay_tap_gro, tap_flow
from vnetrx.kernel.profile import KernelProfile
from vnetrx.live import gro_frames
from vnetrx.live.gro_cases import napi_mode
from vnetrx.paths.gro import GroStep, UdpGro, gro_limits, read_frame
from vnetrx.paths.tun import TapSetup
from vnetrx.records import NamedTuple

VERIFY_GRO_SCHEMA = "vnetrx.verify-gro/1"
FIELDS = ("len", "data_len", "headlen", "truesize", "nr_frags", "gso_size", "gso_segs",
          "gso_type", "ip_summed", "csum_start", "csum_offset")
# napi_gro_receive_exit's enum gro_result, as the model names it
_VERDICTS = {"merged": "MERGED", "merged_free": "MERGED_FREE", "held": "HELD",
             "normal": "NORMAL"}


class GroCheck(NamedTuple):
    """One case: the kernel's skbs and verdicts, the model's, and the first difference."""

    name: str
    kernel_skbs: tuple[dict[str, Any], ...]
    model_skbs: tuple[dict[str, Any], ...]
    kernel_verdicts: tuple[str, ...]
    model_verdicts: tuple[str, ...]
    difference: str | None  # None: they agree
    retries: int  # bursts written again because a jiffy tick or a poll split them
    deterministic: bool  # the repeats gave the same observation

    @property
    def match(self) -> bool:
        return self.difference is None


def udp_gro_of(tap: dict[str, Any]) -> UdpGro:
    """A case's UDP GRO setting: the port of its UDP_GRO socket, if any, and the tap's
    rx-udp-gro-forwarding and rx-gro-list."""
    port = tap.get("udp_gro_socket")
    return UdpGro(sockets=(int(port),) if port is not None else (),
                  fwd=bool(tap.get("udp_gro_forwarding")), fraglist=bool(tap.get("gro_list")))


def predict(k: KernelProfile, case: dict[str, Any], observed: dict[str, Any] | None = None
            ) -> tuple[list[dict[str, Any]], list[str]]:
    """The skbs the model delivers for ``case`` (its FIELDS and frames) and each input's
    gro_result. A timed case (its burst spans jiffies or the flush timer) needs the
    ``observed`` inputs' times: the writes are polled when and in the jiffy they entered GRO
    (replay_tap_gro with a GroClock)."""
    tap = case["tap"]
    writes = gro_frames.build(case["burst"])
    setup = TapSetup(blocking=bool(tap.get("blocking")), vnet_hdr=bool(tap.get("vnet_hdr")))
    limits = gro_limits(k, tap.get("gro_max_size"), tap.get("gro_ipv4_max_size"))
    udp_gro = udp_gro_of(tap)
    if tap.get("timed"):
        if observed is None:
            raise ValueError(f"case {case['name']} is timed: its observed times are needed")
        when = {i["write"]: (i["ktime"], i["jiffies"]) for i in observed["inputs"]}
        timed = [TapWrite(i, len(w.frame), w.hdr or None, read_frame(w.frame, len(w.frame), True),
                          w.split, *when.get(i, (None, None)))
                 for i, w in enumerate(writes) if i in when]
        steps: list[GroStep] = []
        delivered = list(replay_tap_gro(
            k, setup, timed, napi_mode(tap), gro=tap.get("gro", True), limits=limits,
            clock=GroClock(int(tap["gro_flush_timeout"])), steps=steps, udp_gro=udp_gro))
        return ([{**{f: getattr(d.skb, f) or 0 for f in FIELDS}, "frames": list(d.frames)}
                 for _, d in delivered],
                [_VERDICTS[str(step.result)] for step in sorted(steps, key=lambda s: s.frame)])
    run = tap_flow(k, setup, [(w.hdr or None, w.frame) for w in writes], napi_mode(tap),
                   gro=tap.get("gro", True), limits=limits, splits=[w.split for w in writes],
                   udp_gro=udp_gro)
    skbs = [{**{f: getattr(d.skb, f) or 0 for f in FIELDS}, "frames": list(d.frames)}
            for d in run.gro.delivered]
    verdicts = [_VERDICTS[str(step.result)]
                for step in sorted(run.gro.steps, key=lambda s: s.frame)]
    return skbs, verdicts


def compare(k: KernelProfile, case: dict[str, Any], result: dict[str, Any]) -> GroCheck:
    """``result``: run_case's (``observed``, ``retries``, ``deterministic``)."""
    observed = result["observed"]
    kernel_skbs = [{**{f: o[f] or 0 for f in FIELDS}, "frames": o["frames"]}
                   for o in observed["skbs"]]
    kernel_verdicts = [str(i["verdict"]) for i in observed["inputs"]]
    model_skbs, model_verdicts = predict(k, case, observed)
    return GroCheck(case["name"], tuple(kernel_skbs), tuple(model_skbs), tuple(kernel_verdicts),
                    tuple(model_verdicts),
                    _difference(kernel_skbs, model_skbs, kernel_verdicts, model_verdicts),
                    len(result.get("retries", ())), bool(result.get("deterministic", True)))


def _difference(kernel: list[dict[str, Any]], model: list[dict[str, Any]],
                kernel_verdicts: list[str], model_verdicts: list[str]) -> str | None:
    if len(kernel) != len(model):
        return f"the kernel delivered {len(kernel)} skb(s), the model {len(model)}"
    for i, (theirs, mine) in enumerate(zip(kernel, model, strict=True)):
        for key in (*FIELDS, "frames"):
            if theirs[key] != mine[key]:
                return f"skb {i}: {key} {theirs[key]} (kernel) != {mine[key]} (model)"
    if kernel_verdicts != model_verdicts:
        pairs = zip(kernel_verdicts, model_verdicts, strict=False)  # the shorter one's length
        at = next((i for i, (a, b) in enumerate(pairs) if a != b),
                  min(len(kernel_verdicts), len(model_verdicts)))
        return (f"input {at}: gro_result "
                f"{kernel_verdicts[at] if at < len(kernel_verdicts) else '-'} (kernel) != "
                f"{model_verdicts[at] if at < len(model_verdicts) else '-'} (model)")
    return None


def report(k: KernelProfile, checks: list[GroCheck], planned: int | None = None
           ) -> dict[str, Any]:
    """The JSON document (vnetrx.verify-gro/1); ``planned``: the cases asked for, when the run
    was interrupted before all were checked."""
    doc: dict[str, Any] = {
        "schema": VERIFY_GRO_SCHEMA,
        "kernel": k.name,
        "source": k.source,
        "cases": [{"name": c.name, "match": c.match, "difference": c.difference,
                   "retries": c.retries, "deterministic": c.deterministic,
                   "kernel": {"skbs": list(c.kernel_skbs), "verdicts": list(c.kernel_verdicts)},
                   "model": {"skbs": list(c.model_skbs), "verdicts": list(c.model_verdicts)}}
                  for c in checks],
        "summary": {"cases": len(checks), "matched": sum(c.match for c in checks)},
    }
    if planned is not None:
        doc["interrupted"] = True
        doc["summary"]["planned"] = planned
    return doc
