"""``vnetrx decode``: a virtio_net_hdr (and frame) from hex or a file, explained and validated."""

from __future__ import annotations

import sys

import click

from vnetrx.cli import cli
from vnetrx.cli.options import Count, check_option, kernel_option
from vnetrx.decode import MAX_INPUT, decode, parse_hex
from vnetrx.errors import InputError
from vnetrx.kernel.choice import load_profile
from vnetrx.model import EXIT_CHECK
from vnetrx.paths.tun import MAX_FRAME_LEN


def _read(hex_arg: str | None, file: str | None) -> bytes:
    if hex_arg is not None and file is not None:
        raise InputError("give the bytes once: as HEX, as - (hex on stdin) or with --file")
    if file is not None:
        from vnetrx.files import open_input

        handle = open_input(file, "--file")
        try:
            data = handle.read(MAX_INPUT + 1)
        except OSError as exc:
            raise InputError(f"cannot read {file}: {exc.strerror or exc}") from None
        finally:
            handle.close()
        return data
    if hex_arg is None:
        raise InputError("no bytes given (pass hex digits, --file F or - for stdin)")
    if hex_arg == "-":
        if sys.stdin is None:
            raise InputError("standard input is closed: nothing to read for -")
        text = sys.stdin.read(4 * MAX_INPUT)
        return parse_hex(text)
    return parse_hex(hex_arg)


@cli.command("decode")
@click.argument("hex_args", metavar="[HEX… | -]", nargs=-1)
@click.option(
    "--file",
    "file",
    metavar="F",
    default=None,
    help="Read raw (binary) bytes from F: a captured write, header first.",
)
@click.option(
    "--hdr-len",
    type=click.Choice(["10", "12", "20", "24"]),
    default="10",
    show_default=True,
    help="Header size: 10 virtio_net_hdr, 12 _mrg_rxbuf/v1, 20 v1_hash, 24 v1_hash_tunnel.",
)
@click.option(
    "--len",
    "frame_len",
    type=Count(0, MAX_FRAME_LEN),
    default=None,
    help="Frame length written after the header, when the bytes given are only the "
    "header or a prefix of the frame.",
)
@kernel_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schema vnetrx.decode/1).")
@check_option("the kernel refuses the write (tun_get_user or virtio_net_hdr_to_skb: EINVAL)")
def decode_command(
    hex_args: tuple[str, ...],
    file: str | None,
    hdr_len: str,
    frame_len: int | None,
    kernel: str | None,
    config: str | None,
    as_json: bool,
    check: bool,
) -> None:
    """Decode a virtio_net_hdr, optionally followed by a frame, and say what a tap write of it
    gets from the kernel: every field explained, the Ethernet/VLAN/IP/TCP/UDP headers
    summarised, csum_start/csum_offset placed in the frame, and tun_get_user's and
    virtio_net_hdr_to_skb's checks for --kernel (accepted, or EINVAL and why).

    Bytes come as HEX, in one or more arguments (spaces, ':', 0x and \\x allowed), as - (hex
    on stdin) or with --file F (raw bytes).

    \b
    Examples:
      vnetrx decode 0100 0000 0000 2200 0600        # NEEDS_CSUM at 34 + 6, header only
      vnetrx decode 0100 0000 0000 2200 0600 --len 1000 --kernel 6.1
      vnetrx decode 0105 0000 e803 2200 0600 --len 3000 --kernel 6.1  # GSO_UDP_L4: EINVAL
      vnetrx decode --file write.bin --json | jq .validation.errno
      xxd -p write.bin | vnetrx decode -
    """
    data = _read(" ".join(hex_args) if hex_args else None, file)
    profile = load_profile(kernel, config)
    result = decode(profile, data, int(hdr_len), frame_len)
    if as_json:
        from vnetrx.decode import decoded_to_dict
        from vnetrx.render.json_out import dumps

        sys.stdout.write(dumps(decoded_to_dict(result)))
    else:
        from vnetrx.render.decode_text import decode_renderable
        from vnetrx.render.text import stdout_console

        stdout_console().print(decode_renderable(result))
    if check and result.verdict is not None and result.verdict.accepted is False:
        sys.stdout.flush()
        sys.exit(EXIT_CHECK)
