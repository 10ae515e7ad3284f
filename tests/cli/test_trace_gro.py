"""vnetrx trace --gro: a TCP flow through virtio-net's receive path and GRO, from the CLI."""

from __future__ import annotations

import json

from click.testing import CliRunner

from vnetrx.cli import cli

RUNNER = CliRunner(env={"COLUMNS": "160"})


def _run(args: list[str]) -> tuple[int, str, str]:
    result = RUNNER.invoke(cli, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_a_6_12_mergeable_flow_of_47_segments() -> None:
    code, out, err = _run(["trace", "--len", "1514", "--l4", "tcp4", "--tcp-options", "12",
                           "--mergeable", "--gro", "--segments", "47", "--kernel", "6.12",
                           "--json"])
    assert code == 0, err
    doc = json.loads(out)
    first, second = doc["delivered"]
    # 52 + 45 * 1448 = 65212; the 46th would reach 66660 >= 65536
    assert first["frames"] == list(range(45)) and first["flush"] == "e2big"
    assert first["skb"]["len"] == 65212 and first["skb"]["gso_segs"] == 45
    assert first["skb"]["nr_frags"] == 17 and len(first["skb"]["frag_list"]) == 2
    assert second["frames"] == [45, 46] and second["flush"] == "poll_end"
    # the 21st and 42nd buffers of a 32 KiB page_frag page absorb the page's leftover 512 B
    # (vnetrx trace --buffer-index 20): buffer 41 is long enough for build_skb
    assert doc["segments"][41]["outcome"] == "build_skb"
    assert doc["steps"][41]["how"] == "head_frag"
    assert doc["totals"]["skbs"] == 2 and doc["totals"]["payload"] == 47 * 1448


def test_text_names_every_step_and_skb() -> None:
    code, out, _ = _run(["trace", "--len", "300", "--l4", "tcp6", "--gro", "--segments", "3"])
    assert code == 0
    assert "head_frag: its page-fragment head became a frag" in out
    assert "skb 1: frames 0-2 (3 segments)" in out and "SKB_GSO_TCPV6" in out
    assert "totals: 3 segments → 1 skb(s)" in out


def test_gro_needs_a_tcp_frame() -> None:
    code, _, err = _run(["trace", "--len", "300", "--gro"])
    assert code == 2 and "--gro needs a TCP frame" in err
    code, _, err = _run(["trace", "--len", "300", "--l4", "udp4", "--gro"])
    assert code == 2 and "GRO merges TCP segments" in err
    for option, value in (("--segments", "3"), ("--napi", "timeout"),
                          ("--gro-max-size", "32768")):
        code, _, err = _run(["trace", "--len", "300", option, value])
        assert code == 2 and f"{option} goes with --gro" in err
    code, _, err = _run(["trace", "--len", "300", "--l4", "tcp4", "--gro", "--napi", "timeout"])
    assert code == 2 and "--napi applies to --path tap" in err


# Measured on 6.18.44 (tests/data/gro/linux-6.18.44.json, cases timeout0, seg20,
# seg20-threaded-pinned): 1514-byte writes into an IFF_NAPI tap merge only with
# gro_flush_timeout or threaded NAPI
def test_a_tap_merges_only_with_a_flush_timeout_or_threaded_napi() -> None:
    args = ["trace", "--path", "tap", "--len", "1514", "--l4", "tcp4", "--tcp-options", "12",
            "--gro", "--segments", "20", "--kernel", "6.18", "--json"]
    code, out, _ = _run([*args, "--napi", "write"])
    assert code == 0 and [d["frames"] for d in json.loads(out)["delivered"]] == [
        [i] for i in range(20)]
    for napi in ("timeout", "threaded"):
        code, out, _ = _run([*args, "--napi", napi])
        (skb,) = [d["skb"] for d in json.loads(out)["delivered"]]
        # tun_build_skb heads: 17 stolen as frags (+1920 each), the 19th chained (+2176),
        # the 20th stolen into the chained one
        assert (skb["len"], skb["nr_frags"], len(skb["frag_list"])) == (29012, 17, 1)
        assert skb["truesize"] == 2176 + 17 * 1920 + 2176 + 1920


def test_gro_max_size_needs_a_kernel_with_the_knob() -> None:
    code, _, err = _run(["trace", "--len", "1514", "--l4", "tcp6", "--gro", "--gro-max-size",
                         "185000", "--kernel", "5.15"])
    assert code == 2 and "gro_max_size does not exist on 5.15.0" in err
    code, _, err = _run(["trace", "--len", "1514", "--l4", "tcp4", "--gro",
                         "--gro-ipv4-max-size", "185000", "--kernel", "6.1"])
    assert code == 2 and "gro_ipv4_max_size does not exist on 6.1." in err
    code, _, err = _run(["trace", "--len", "300", "--l4", "tcp4", "--gro", "--segments", "0"])
    assert code == 2 and "(valid: 1..4096 segments)" in err


def test_a_segment_the_driver_drops_is_named() -> None:
    code, _, err = _run(["trace", "--len", "2000", "--l4", "tcp4", "--gro", "--kernel", "6.1"])
    assert code == 2 and "segment 0 does not reach GRO: drop" in err


def test_diff_of_two_flows_shows_the_seeds_frag_slot() -> None:
    # 45 segments of a 1000-byte frame, mergeable, 1536-byte buffers (the 21st and 42nd of a
    # 32 KiB page_frag page absorb 512 more). 5.12 copies (truesize 768 + 1536, payload in a
    # frag): held with 1 frag, 16 merge by frags (+1536), the 18th (#17) is chained (+2304).
    # 5.13 builds around the buffer (1536 + 256, payload linear): held with 0 frags, 17 heads
    # stolen (+1536), the 19th (#18) chained (+1792).
    code, out, err = _run(["diff", "--json", "--kernel", "5.12", "--kernel", "5.13", "--",
                           "--len", "1000", "--l4", "tcp4", "--mergeable", "--gro",
                           "--segments", "45"])
    assert code == 0, err
    fields = {f["field"]: (f["a"], f["b"]) for f in json.loads(out)["fields"]}
    assert fields["chained_on_frag_list"] == ([17, 34], [18, 36])
    assert fields["skb1.truesize"] == (3 * 2304 + 42 * 1536 + 2 * 512,
                                       3 * 1792 + 42 * 1536 + 2 * 512)
    assert json.loads(out)["first_difference"]["a"]["outcome"] == "copy"


def test_diff_needs_gro_on_both_sides() -> None:
    code, _, err = _run(["diff", "--", "--len", "1000", "--l4", "tcp4", "--gro", "--",
                         "--len", "1000", "--l4", "tcp4"])
    assert code == 2 and "give --gro on both sides" in err
    code, out, _ = _run(["diff", "--kernel", "6.12", "--kernel", "6.12", "--", "--len", "1000",
                         "--l4", "tcp4", "--gro", "--segments", "3"])
    assert code == 0 and "The two flows are the same." in out


def test_napi_frags_writes_are_polled_alone() -> None:
    # IFF_NAPI_FRAGS: napi_gro_frags then napi_complete inside each write (6.18.44:
    # tests/data/gro, case napi-frags: every input HELD, each flushed alone)
    code, out, err = _run(["trace", "--path", "tap", "--len", "1514", "--l4", "tcp4",
                           "--gro", "--segments", "3", "--napi", "frags", "--json"])
    assert code == 0, err
    doc = json.loads(out)
    assert [s["result"] for s in doc["steps"]] == ["held"] * 3
    assert [d["frames"] for d in doc["delivered"]] == [[0], [1], [2]]


# A TSO write into a tap (virtio_net_hdr_to_skb: SKB_GSO_TCPV4 | SKB_GSO_DODGY, gso_segs 0).
# 6.1.6 lets it into tcp_gro_receive, whose out_check_final flushes it (len 2896 != 0 x 1448);
# 6.1.7 flushes it in dev_gro_receive (7871f54e3dee). Either way each goes on alone.
TSO = ["trace", "--path", "tap", "--len", "2962", "--l4", "tcp4", "--tcp-options", "12",
       "--gso", "tcpv4:1448", "--csum", "partial", "--gro", "--segments", "3", "--napi",
       "threaded"]


def test_tso_writes_through_gro_on_6_1_6_and_6_1_7() -> None:
    for kernel, how in (("6.1.6", "gso_segs"), ("6.1.7", "gso"), ("6.0.19", "gso")):
        code, out, err = _run([*TSO, "--kernel", kernel, "--json"])
        assert code == 0, err
        doc = json.loads(out)
        assert [s["how"] for s in doc["steps"]] == [how] * 3, kernel
        assert [d["frames"] for d in doc["delivered"]] == [[0], [1], [2]]
        assert {d["skb"]["gso_size"] for d in doc["delivered"]} == {1448}
        window = [n for n in doc["notes"] if "not checked on a running kernel" in n]
        assert len(window) == (kernel == "6.1.6")
    code, out, _ = _run([*TSO, "--kernel", "6.1.6"])
    assert code == 0
    assert "gso_segs: to the stack alone: a GSO skb GRO let in" in out
    assert "note: 6.1.0-6.1.6 let SKB_GSO_DODGY TCP skbs into GRO" in out
    code, out, _ = _run([*TSO, "--kernel", "6.1.7"])
    assert "gso: to the stack alone: dev_gro_receive flushes a GSO skb" in out
    assert "not checked on a running kernel" not in out
    # without NEEDS_CSUM (CHECKSUM_NONE): 6.1.6's tcp4_gro_receive sums it (right:
    # UNNECESSARY), 6.1.7's skips it (NAPI_GRO_CB(skb)->flush already set)
    none = [*TSO[:TSO.index("--csum")], "--csum", "none", *TSO[TSO.index("--csum") + 2:]]
    for kernel, ip_summed in (("6.1.6", 1), ("6.1.7", 0)):
        code, out, err = _run([*none, "--kernel", kernel, "--json"])
        assert code == 0, err
        assert {d["skb"]["ip_summed"] for d in json.loads(out)["delivered"]} == {ip_summed}
