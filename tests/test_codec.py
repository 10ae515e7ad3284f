"""vnetrx/codec.py: ``from_dict`` reads back what ``trace_to_dict`` writes. Both directions meet:
a document read and printed again is the same document, and the Trace read is the Trace that was
printed (less the regions of ``buffers``, which the document does not carry). A document that
is not one vnetrx wrote is refused with the place that is wrong."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, reject
from hypothesis import strategies as st

from tests.goldens import NO_KERNEL_CHANGES, cli_json, scrubbed
from tests.profiles import TAP, VIRTIO_AND_LTS_AS_TAGGED
from tests.test_golden import EXAMPLES as README_EXAMPLES
from tests.test_golden_offloads import GOLDEN as OFFLOAD_EXAMPLES
from vnetrx.cli.trace import run_trace_args
from vnetrx.codec import from_dict, trace_to_dict
from vnetrx.errors import InputError, UnsupportedError, VnetrxError
from vnetrx.model import Trace
from vnetrx.paths.xdp import ACTIONS

GOLDEN_TRACES = Path(__file__).parent / "golden" / "trace"
# every golden trace (tests/golden/trace/*.json) and the options that make it
GOLDEN_ARGS = {
    **{f"{name}.json": args for name, args in README_EXAMPLES.items()},
    **{f"offload-{name}.json": args for name, args in OFFLOAD_EXAMPLES.items()},
}


def printed(t: Trace) -> dict[str, Any]:
    """The trace's document as `vnetrx trace --json` prints it and json.loads reads it."""
    return json.loads(json.dumps(trace_to_dict(t)))  # type: ignore[no-any-return]


def without_buffer_regions(t: Trace) -> Trace:
    return t._replace(buffers=tuple(b._replace(regions=()) for b in t.buffers))


def assert_round_trip(t: Trace) -> None:
    doc = printed(t)
    loaded = from_dict(doc)
    assert trace_to_dict(loaded) == doc
    assert loaded == without_buffer_regions(t)
    assert loaded.kernel == t.kernel and loaded.kernel.notes == t.kernel.notes


def test_every_golden_trace_has_its_options() -> None:
    assert sorted(GOLDEN_ARGS) == sorted(p.name for p in GOLDEN_TRACES.glob("*.json"))


@pytest.mark.parametrize("name", sorted(GOLDEN_ARGS))
def test_golden_traces_round_trip(name: str) -> None:
    """The golden file pins the document (less kernel.changes); it reads back to itself."""
    doc = printed(run_trace_args(GOLDEN_ARGS[name]))
    assert scrubbed(cli_json(doc), NO_KERNEL_CHANGES) == (GOLDEN_TRACES / name).read_text()
    assert trace_to_dict(from_dict(doc)) == doc


# One trace of each path and of what it may carry, and what it ends as on that kernel.
CASES = [
    (["--len", "1000", "--kernel", "6.1"], "virtio-small", "build_skb"),
    (["--len", "2000", "--kernel", "6.1"], "virtio-small", "drop"),
    (["--len", "1000", "--mtu", "9000", "--kernel", "6.1"], "virtio-big", "build_skb"),
    (["--len", "9014", "--big", "--l4", "tcp4", "--gso", "tcpv4:1448", "--kernel", "6.1"],
     "virtio-big", "copy"),  # offload header: CHECKSUM_PARTIAL, GSO
    (["--len", "1000", "--mergeable", "--kernel", "5.12"], "virtio-mergeable", "copy"),
    (["--len", "8000", "--mergeable", "--ewma", "1000", "--kernel", "6.1"], "virtio-mergeable",
     "copy"),  # frags
    (["--len", "65535", "--mergeable", "--buffer-index", "1", "--ewma", "1000", "--kernel",
      "7.3"], "virtio-mergeable", "copy"),  # a frag_list skb past MAX_SKB_FRAGS
    (["--len", "3000", "--mergeable", "--l4", "tcp4", "--csum", "valid", "--gso", "tcpv4:1448",
      "--kernel", "6.6.46"], "virtio-mergeable", "drop"),  # refused_by, a counter
    (["--len", "1000", "--hdr-len", "20", "--hdr", "0000000000000000000000003412785601000000",
      "--kernel", "6.12"], "virtio-small", "build_skb"),  # a hash report
    (["--path", "tap", "--len", "1000"], "tap", "build_skb"),
    (["--path", "tap", "--len", "9000", "--blocking", "--kernel", "6.1"], "tap", "alloc_skb"),
    (["--path", "tap", "--len", "5"], "tap", "error"),
    (["--path", "tap", "--len", "2950", "--l4", "tcp4", "--gso", "tcpv4:1448", "--kernel",
      "6.6.44"], "tap", "error"),  # refused_by
    (["--path", "tap", "--len", "1514", "--frag-source", "full-page"], "tap", "build_skb"),
    # XDP: virtio-net's native hook, counters and read-back, multi-buffer, refusals
    (["--len", "1000", "--xdp", "tx", "--kernel", "6.18"], "virtio-small", "xdp_tx"),
    (["--len", "1000", "--xdp", "tx", "--xdp-adjust-head", "-205", "--kernel", "6.12"],
     "virtio-small", "xdp_drop"),  # tx_failed: EOVERFLOW
    (["--len", "9014", "--mergeable", "--mtu", "9000", "--xdp", "pass", "--xdp-frags",
      "--kernel", "6.12"], "virtio-mergeable", "build_skb"),
    (["--len", "3600", "--mergeable", "--mtu", "4000", "--xdp", "pass", "--kernel", "6.1"],
     "virtio-mergeable", "xdp_drop"),  # xdp_linearize_page refuses
    (["--len", "1000", "--mergeable", "--mtu", "9000", "--xdp", "pass", "--kernel", "6.12"],
     "virtio-mergeable", "error"),  # the attach is refused
    (["--len", "96", "--mergeable", "--xdp", "--xdp-meta", "32", "--kernel", "6.1"],
     "virtio-mergeable", "copy"),  # metadata
    (["--len", "1000", "--xdp", "pass", "--xdp-posted-before", "--kernel", "6.12"],
     "virtio-small", "build_skb"),  # copied into a fresh page
    # XDP: tun's native hook and generic XDP
    (["--path", "tap", "--len", "1000", "--xdp", "tx"], "tap", "xdp_tx"),
    (["--path", "tap", "--len", "2000", "--xdp", "redirect"], "tap", "xdp_drop"),
    (["--path", "tap", "--len", "9000", "--xdp", "pass"], "tap", "alloc_skb"),
    (["--path", "tap", "--len", "9000", "--xdp", "tx", "--kernel", "6.1"], "tap", "xdp_tx"),
]


@pytest.mark.parametrize(("args", "path", "outcome"), CASES, ids=lambda x: " ".join(x)[:60]
                         if isinstance(x, list) else str(x))
def test_every_path_round_trips(args: list[str], path: str, outcome: str) -> None:
    t = run_trace_args(args)
    assert (t.path, t.outcome) == (path, outcome)
    assert_round_trip(t)


OFFLOADS = [[], ["--l4", "tcp4", "--gso", "tcpv4:1448"], ["--l4", "udp4", "--csum", "partial"],
            ["--l4", "tcp6", "--csum", "valid"], ["--hdr", "01000000000022001000"]]
XDP = [[], *(["--xdp", action] for action in ACTIONS)]
LENGTHS = st.one_of(st.integers(1, 65535),
                    st.sampled_from([14, 60, 128, 129, 1000, 1514, 1518, 3744, 3745, 9014]))


@st.composite
def trace_options(draw: st.DrawFn) -> list[str]:
    """`vnetrx trace` options: a path, a mode, a length, a kernel, an offload header, a
    program."""
    if draw(st.booleans()):
        args = ["--len", str(draw(LENGTHS)), "--kernel", draw(st.sampled_from(
            VIRTIO_AND_LTS_AS_TAGGED))]
        args += draw(st.sampled_from([[], ["--mergeable"], ["--big"], ["--mtu", "9000"],
                                      ["--mergeable", "--mtu", "9000"]]))
    else:
        args = ["--path", "tap", "--len", str(draw(LENGTHS)), "--kernel",
                draw(st.sampled_from(TAP))]
        args += draw(st.sampled_from([[], ["--blocking"], ["--no-vnet-hdr"], ["--tun"]]))
    return args + draw(st.sampled_from(OFFLOADS)) + draw(st.sampled_from(XDP))


@given(trace_options())
def test_round_trip_property(args: list[str]) -> None:
    try:
        t = run_trace_args(args)
    except VnetrxError:  # a combination vnetrx refuses (XDP before 5.13, a frame too short)
        reject()
    assert_round_trip(t)


# --- documents from_dict refuses ---------------------------------------------------------------

BASE = ["--len", "1000", "--mergeable", "--xdp", "tx", "--kernel", "6.1"]  # no skb: xdp_tx
SKB_BASE = ["--len", "1000", "--mergeable", "--kernel", "6.1"]


def edited(path: str, value: object) -> dict[str, Any]:
    """BASE's document (SKB_BASE's for the skb) with the value at dotted ``path`` replaced
    (``...`` deletes it)."""
    doc = printed(run_trace_args(SKB_BASE if path.startswith("skb.") else BASE))
    node: Any = doc
    *parents, last = path.split(".")
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return doc


def test_base_document_is_read() -> None:
    assert from_dict(edited("notes", [])).notes == ()


REFUSED = [
    ("schema", "vnetrx.trace/2", "schema vnetrx.trace/2 is another version of the trace "
     "document: this vnetrx reads vnetrx.trace/1"),
    ("schema", "vnetrx.diff/1", "a vnetrx.diff/1 document, not a trace (vnetrx.trace/1)"),
    ("schema", ..., "not a vnetrx trace: no \"schema\" key"),
    ("schema", 1, "schema is 1, not a string"),
    ("skb.len", ..., "skb.len is missing"),
    ("skb.truesize", "1792", "skb.truesize is \"1792\", not a whole number (0 or more)"),
    ("skb.truesize", -1, "skb.truesize is -1, not a whole number (0 or more)"),
    ("skb.truesize", 1792.0, "skb.truesize is 1792.0, not a whole number (0 or more)"),
    ("skb.l4_hash", 0, "skb.l4_hash is 0, not true or false"),
    ("skb.headlen", 5, "skb.headlen is 5, but the rest of the document makes it 986"),
    ("skb.ip_summed", 9, "skb.ip_summed is 9, not one of 0 .. 3"),
    ("skb.frags", [1], "skb.frags[0] is 1, not an object"),
    ("outcome", "teleported", "outcome is \"teleported\", not one of build_skb, copy, drop, "
     "alloc_skb, error, xdp_drop, xdp_tx, xdp_redirect"),
    ("path", "virtio", "path is \"virtio\", not one of virtio-small, virtio-big, "
     "virtio-mergeable, tap"),
    ("xdp.mode", "hybrid", "xdp.mode is \"hybrid\", not one of native, generic"),
    ("xdp.xdp_buff", ..., "xdp.xdp_buff is missing"),
    ("xdp.xdp_buff.tailroom", "x", "xdp.xdp_buff.tailroom is \"x\", not a whole number (0 or "
     "more) or null"),
    ("xdp.driver_counters", {"rx_drops": 1}, "xdp.driver_counters has the counters rx_drops, "
     "not rx_drops, rx_xdp_packets"),
    ("xdp.result", "pass", "the trace breaks what every vnetrx trace keeps: XDP_PASS with "
     "outcome xdp_tx and no skb"),
    ("xdp_tx.len", None, "xdp_tx.len is null, not a whole number (0 or more)"),
    ("steps.0.values", {"x": 1.5}, "steps[0].values.x is 1.5, not a whole number, a string, "
     "true, false or null"),
    ("buffers.0.regions", [], "buffers[0].regions is not a key of a vnetrx.trace/1 document "
     "there"),
    ("extra", 1, "extra is not a key of a vnetrx.trace/1 document there"),
    ("input.frame_len", ..., "input.frame_len is missing or not a whole number"),
    ("input.hdr", "zz", "input.hdr is \"zz\", not the header's bytes in hex or null"),
    ("kernel.name", "6.1.5", "kernel.name is \"6.1.5\", but kernel.source \"6.1\" is 6.1.192 to "
     "this vnetrx"),
    ("kernel.source", "nope", "kernel.source \"nope\" names no kernel profile: cannot read "
     "kernel version 'nope'"),
    ("kernel.arch", "mips", "kernel.arch is \"mips\", not one of x86_64, arm64"),
    ("kernel.page_size", 8192, "kernel.page_size is 8192, not one of 4096, 16384, 65536"),
    ("kernel.l1_cache_bytes", 0, "kernel.l1_cache_bytes is 0, but the rest of the document "
     "makes it 64"),
    ("kernel.config", "gentoo", "kernel.config is \"gentoo\", not one of debian, debian-cloud, "
     "ubuntu, ubuntu-azure, rhel, rhel8-aarch64, fedora, amzn2, azurelinux, cbl-mariner, cos, "
     "minimal"),
    ("kernel.changes", ["page_to_skb_build_skb"], "kernel.changes are not this vnetrx's for "
     "6.1.192: the document lacks "),
]


@pytest.mark.parametrize(("path", "value", "message"), REFUSED, ids=lambda x: str(x)[:30])
def test_documents_that_are_not_vnetrx_traces_are_refused(path: str, value: object,
                                                          message: str) -> None:
    with pytest.raises(InputError) as caught:
        from_dict(edited(path, value))
    assert message in caught.value.message
    assert "\n" not in caught.value.message


def test_kernel_l1_cache_bytes_is_the_documents() -> None:
    """A 128-byte cache line is a build x86 has (--cache-line 128): it reads back as such."""
    t = run_trace_args([*BASE, "--cache-line", "128"])
    assert t.kernel.build.l1_cache_bytes == 128
    assert_round_trip(t)


@pytest.mark.parametrize(("args", "notes"), [
    (["--len", "1000", "--kernel", "6.1.0-57-amd64"], True),  # a Debian ABI name
    (["--len", "1000", "--kernel", "6.8", "--arch", "arm64", "--page-size", "64k"], True),
    (["--len", "1000", "--mergeable"], False),  # the newest profile, by default
])
def test_the_kernel_profile_comes_back_with_its_notes(args: list[str], notes: bool) -> None:
    """The version, the notes and the build are those the document's kernel source chose."""
    t = run_trace_args(args)
    loaded = from_dict(printed(t))
    assert loaded.kernel == t.kernel
    assert loaded.kernel.notes == t.kernel.notes
    assert bool(t.kernel.notes) == notes


def test_a_running_kernel_profile_cannot_be_rebuilt() -> None:
    doc = edited("kernel.config", "running")
    doc["kernel"]["source"] = "running: release 6.18.44-fc (uname -r)"
    with pytest.raises(UnsupportedError, match="profiled on the machine that wrote the trace"):
        from_dict(doc)


@pytest.mark.parametrize("doc", [[], "trace", None, 3])
def test_a_document_that_is_not_an_object(doc: object) -> None:
    with pytest.raises(InputError, match="not a JSON object"):
        from_dict(doc)


def test_the_document_read_is_not_changed() -> None:
    doc = printed(run_trace_args(BASE))
    kept = copy.deepcopy(doc)
    from_dict(doc)
    assert doc == kept
