"""decode's input: a quoted strace string (octal escapes, printable characters, \\x), and the
IPv4/TCP header-length words spelled with their byte counts."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from vnetrx.cli import cli
from vnetrx.decode.document import parse_hex
from vnetrx.errors import InputError


@pytest.mark.parametrize(("text", "hexed"), [
    (r'"\1\0\66\0\250\5\"\0\20\0"', "01003600a80522001000"),  # strace without -x
    (r'"\x01\x00\x36\x00"', "01003600"),  # strace -x
    (r'"AB\n\t"', "41420a09"),  # printable bytes as themselves
    (r'"\0010"', "0130"),  # a 3-digit octal escape, then the digit 0 itself
    ("01 00 36 00", "01003600"),  # plain hex still works
])
def test_strace_strings(text: str, hexed: str) -> None:
    assert parse_hex(text).hex() == hexed


@pytest.mark.parametrize(("text", "message"), [
    (r'"\1\0"...', "strace cut it"),
    (r'"\1\0', "unbalanced quotes"),
    (r'"\q"', r"unknown escape \q"),
    (r'"\777"', "more than a byte"),
])
def test_bad_strace_strings(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("\\", "\\\\")):
        parse_hex(text)


def test_header_lengths_are_words_with_their_bytes() -> None:
    frame = ("020000000001020000000002" "0800" "4500002800004000400600000a0000010a000002"
             "1f90c350000000010000000050100fff00000000")
    result = CliRunner().invoke(cli, ["decode", "00" * 10 + frame])
    assert result.exit_code == 0, result.output
    assert "ihl 5 (20 bytes)" in result.stdout and "doff 5 (20 bytes)" in result.stdout
