"""Arbitrary bytes never make `vnetrx decode` raise anything but a one-line InputError: 100,000
inputs through the core function, a smaller batch through the CLI."""

from __future__ import annotations

import json

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.profiles import TAP
from vnetrx.cli import cli
from vnetrx.decode import decode, decoded_to_dict, parse_hex
from vnetrx.errors import InputError
from vnetrx.kernel.registry import lookup

# every series whose tap path (virtio_net_hdr_to_skb on a write) is modelled
KERNELS = [lookup(name) for name in TAP]

# Mostly short inputs around the header sizes, with the header bytes biased towards the values
# the checks care about (NEEDS_CSUM, GSO types, ECN, 16-bit edges).
_interesting = st.sampled_from([0, 1, 2, 3, 4, 5, 0x80, 0x81, 0x85, 0x21, 0xFF])
_raw = st.one_of(
    st.binary(max_size=120),
    st.builds(
        lambda a, b, rest: bytes([a, b]) + rest,
        _interesting,
        _interesting,
        st.binary(min_size=0, max_size=200),
    ),
)


BATCH = 50  # inputs per hypothesis example: 2,000 examples x 50 = 100,000 decoded inputs
HDR_LENS = (10, 12, 20, 24)


def _cases(blob: bytes) -> list[tuple[bytes, int, int | None]]:
    """Cut one hypothesis-drawn blob into BATCH inputs: per input, 3 control bytes choose the
    header size, how many bytes follow and whether --len is given, then those bytes (read
    cyclically, so a short blob still yields BATCH inputs). Shrinking the blob shrinks them all."""
    out: list[tuple[bytes, int, int | None]] = []
    at, n = 0, len(blob)

    def take(count: int) -> bytes:
        nonlocal at
        if n == 0:
            return bytes(count)
        start = at % n
        at += count
        if start + count <= n:
            return blob[start : start + count]
        return (blob * (count // n + 2))[start : start + count]

    for _ in range(BATCH):
        c0, c1, c2 = take(3)
        size = (c1 * 7 + c0) % 140  # 0..139: around and past every header size
        frame_len = None if c2 < 128 else (c2 - 128) * 600 - 10  # -10 .. 76,190
        out.append((take(size), HDR_LENS[c0 % 4], frame_len))
    return out


@settings(
    max_examples=100_000 // BATCH,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
@given(kernel=st.sampled_from(KERNELS), blob=st.binary(max_size=4000), biased=_raw)
def test_decode_core_never_raises_anything_else(kernel: object, blob: bytes, biased: bytes) -> None:
    cases = _cases(blob)
    cases[0] = (biased, 10, None)  # hand-biased header bytes (flags / gso_type edges)
    for data, hdr_len, frame_len in cases:
        _check_one(kernel, data, hdr_len, frame_len)


def _check_one(kernel: object, data: bytes, hdr_len: int, frame_len: int | None) -> None:
    try:
        d = decode(kernel, data, hdr_len, frame_len)  # type: ignore[arg-type]
    except InputError as exc:
        error: InputError | None = exc
    else:
        error = None
    if error is not None:
        assert "\n" not in error.message
        assert error.exit_code == 2
        return
    doc = decoded_to_dict(d)
    json.dumps(doc)
    assert len(d.raw_header) == hdr_len
    if d.verdict is not None and d.verdict.modelled:
        assert d.verdict.accepted == (d.verdict.errno is None)
        assert all(c.ok for c in d.verdict.checks[:-1])
        assert d.verdict.checks[-1].ok == bool(d.verdict.accepted)


@settings(max_examples=2_000, deadline=None, database=None, derandomize=True)
@given(text=st.text(max_size=60))
def test_parse_hex_never_raises_anything_else(text: str) -> None:
    try:
        out = parse_hex(text)
    except InputError:
        return
    assert len(out) >= 1


@settings(max_examples=300, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(
    data=st.binary(max_size=80),
    hdr_len=st.sampled_from(["10", "12", "20", "24"]),
    as_json=st.booleans(),
    kernel=st.sampled_from(TAP),
)
def test_decode_cli_fuzz(data: bytes, hdr_len: str, as_json: bool, kernel: str) -> None:
    runner = CliRunner(env={"COLUMNS": "100", "NO_COLOR": "1"})
    args = ["decode", data.hex() or "-", "--hdr-len", hdr_len, "--kernel", kernel]
    result = runner.invoke(cli, args + (["--json"] if as_json else []), input="")
    assert isinstance(result.exception, SystemExit) or result.exception is None, result.output
    assert result.exit_code in (0, 2)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        assert result.stderr.startswith("vnetrx: error: ")
        assert result.stderr.count("\n") == 1
        if as_json:
            assert json.loads(result.stdout)["schema"] == "vnetrx.error/1"
    elif as_json:
        assert json.loads(result.stdout)["schema"] == "vnetrx.decode/1"
