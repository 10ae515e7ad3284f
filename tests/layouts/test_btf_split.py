"""Split BTF: a module's types on top of vmlinux's. Synthetic blobs always; Debian's real
virtio_net.ko and tun.ko (6.1.192, 6.12.117, unpacked by `vnetrx lab fetch-kernel`, which
.ci/run does) against pahole --btf_base."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.pahole_oracle import pahole, pahole_text, skeleton
from vnetrx.cli import cli
from vnetrx.errors import InputError, LayoutError
from vnetrx.lab.run import cache_dir
from vnetrx.layouts.btf import Btf
from vnetrx.layouts.kernel_image import read_btf_bytes
from vnetrx.layouts.rows import default_base


def _btf(types: bytes, strings: bytes) -> bytes:
    header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings))
    return header + types + strings


# base: [1] int "int" (4 bytes); strings "\0int\0"
BASE = _btf(struct.pack("<IIII", 1, 1 << 24, 4, 32), b"\0int\0")
BASE_STR_LEN = 5


def _split() -> bytes:
    """[2] struct pair {int a; struct pair *next;} named by the split's own strings, and
    [3] a pointer to [2]; member a's type is the base's int (id 1), its name the base's "int"."""
    strings = b"pair\0next\0"
    pair_off, next_off = BASE_STR_LEN + 0, BASE_STR_LEN + 5
    pair = struct.pack("<III", pair_off, (4 << 24) | 2, 16)
    pair += struct.pack("<III", 1, 1, 0)  # name "int" from the base, type int (base id 1)
    pair += struct.pack("<III", next_off, 3, 64)
    ptr = struct.pack("<III", 0, 2 << 24, 2)
    return _btf(pair + ptr, strings)


def test_split_ids_and_strings_continue_after_the_base() -> None:
    base = Btf(BASE, "base")
    split = Btf(_split(), "split", base)
    assert (split.first_id, split.str_base, split.count) == (2, 5, 4)
    pair = split.struct("pair")
    assert pair.size == 16
    assert [(m.name, m.type_name, m.offset, m.size) for m in pair.members] == [
        ("int", "int", 0, 4), ("next", "struct pair *", 8, 8)]


def test_split_without_base_is_a_usage_error() -> None:
    with pytest.raises(InputError, match="split BTF: give --btf-base"):
        Btf(_split(), "split")
    with pytest.raises(InputError, match=r"not split BTF .* drop --btf-base"):
        Btf(BASE, "base2", Btf(BASE, "base"))


def test_split_type_id_out_of_range_names_the_file() -> None:
    blob = bytearray(_split())
    struct.pack_into("<I", blob, 24 + 12 + 4, 9)  # member "int": type 9
    with pytest.raises(LayoutError, match=r"split: type id 9 out of range \(1..3\)"):
        Btf(bytes(blob), "split", Btf(BASE, "base")).struct("pair")


def test_default_base_is_vmlinux_for_sysfs_modules() -> None:
    assert default_base("/sys/kernel/btf/virtio_net") == "/sys/kernel/btf/vmlinux"
    assert default_base("/sys/kernel/btf/vmlinux") is None
    assert default_base("virtio_net.btf") is None


# --- Debian's modules ------------------------------------------------------------------------

KERNELS = sorted(cache_dir().glob("linux-image-6.*-amd64"))


def _module(kernel: Path, name: str) -> Path:
    [path] = kernel.glob(f"lib/modules/*/kernel/drivers/net/{name}.ko*")
    return path


@pytest.fixture(scope="module", params=KERNELS or [None],
                ids=[k.name.removeprefix("linux-image-") for k in KERNELS] or ["no-kernel"])
def kernel(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Raw BTF files of a Debian kernel: vmlinux (from the bzImage), virtio_net.ko, tun.ko."""
    if request.param is None:
        pytest.skip(f"no Debian kernel in {cache_dir()} (run `vnetrx lab fetch-kernel`)")
    if shutil.which("pahole") is None:
        pytest.fail("pahole is missing: install Debian's dwarves (.ci/run does)")
    root: Path = request.param
    out = tmp_path_factory.mktemp(root.name)
    [image] = root.glob("boot/vmlinuz-*")
    files = {"image": image, "virtio_net.ko": _module(root, "virtio_net"),
             "tun.ko": _module(root, "tun")}
    for label, source in [("vmlinux", image), ("virtio_net", files["virtio_net.ko"]),
                          ("tun", files["tun.ko"])]:
        data, _ = read_btf_bytes(str(source))
        files[label] = out / f"{label}.btf"
        files[label].write_bytes(data)
    return files


@pytest.mark.parametrize(("module", "name"), [
    ("virtio_net", "receive_queue"), ("virtio_net", "send_queue"), ("virtio_net", "virtnet_info"),
    ("tun", "tun_struct"), ("tun", "tun_file"),
])
def test_module_struct_agrees_with_pahole(kernel: dict[str, Path], module: str, name: str) -> None:
    size, expected = pahole(name, str(kernel[module]), str(kernel["vmlinux"]))
    result = CliRunner().invoke(cli, ["layout", name, "--btf", str(kernel[module]),
                                      "--btf-base", str(kernel["vmlinux"]), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["size"] == size
    ours = {m["name"]: (m["offset"], m["size"]) for m in doc["members"] if m["name"]}
    assert len(expected) >= 3
    for member, where in expected.items():
        assert ours.get(member) == where, member


def test_ko_and_bzimage_read_directly(kernel: dict[str, Path], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The .ko's .BTF section on the bzImage's vmlinux gives what the raw files give."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    raw = CliRunner().invoke(cli, ["layout", "tun_file", "--btf", str(kernel["tun"]),
                                   "--btf-base", str(kernel["vmlinux"])])
    direct = CliRunner().invoke(cli, ["layout", "tun_file", "--btf", str(kernel["tun.ko"]),
                                      "--btf-base", str(kernel["image"])])
    assert direct.exit_code == 0, direct.output
    assert direct.stdout == raw.stdout and "struct tun_file {" in raw.stdout


@pytest.mark.parametrize("profile", ["6.1", "6.12"])
def test_check_against_the_module_btf(kernel: dict[str, Path], profile: str) -> None:
    """vnetrx's layouts for a profile match that Debian kernel's vmlinux + virtio_net.ko BTF,
    and do not match the other one's (virtnet_rq_dma is new in 6.6)."""
    own = profile in kernel["image"].name.removeprefix("vmlinuz-")[: len(profile) + 1]
    result = CliRunner().invoke(cli, ["layout", "--check", "--btf", str(kernel["virtio_net"]),
                                      "--btf-base", str(kernel["vmlinux"]), "--kernel", profile])
    if own:
        assert result.exit_code == 0, result.output
        assert ("virtnet_rq_dma" in result.stdout) == (profile == "6.12")
    else:
        assert result.exit_code == 1, result.output


def test_vmlinux_alone_lacks_the_module_structs(kernel: dict[str, Path]) -> None:
    result = CliRunner().invoke(cli, ["layout", "--check", "--btf", str(kernel["vmlinux"]),
                                      "--kernel", "6.1"])
    assert result.exit_code == 1
    assert "virtio_net_hdr_v1                ABSENT from this BTF" in result.stdout
    assert "--btf-base" in result.stdout


def test_module_without_base_is_one_line(kernel: dict[str, Path]) -> None:
    result = CliRunner().invoke(cli, ["layout", "tun_file", "--btf", str(kernel["tun.ko"])])
    assert result.exit_code == 2
    assert "split BTF: give --btf-base" in result.stderr and result.stderr.count("\n") == 1


def test_list_shows_the_module_not_its_base(kernel: dict[str, Path]) -> None:
    result = CliRunner().invoke(cli, ["layout", "--list", "--btf", str(kernel["tun"]),
                                      "--btf-base", str(kernel["vmlinux"]), "--json"])
    assert result.exit_code == 0, result.output
    names = {s["name"]: s["size"] for s in json.loads(result.stdout)["structs"]}
    size, _ = pahole("tun_struct", str(kernel["tun"]), str(kernel["vmlinux"]))
    assert names["tun_struct"] == size
    assert "list_head" not in names and "sk_buff" not in names  # those are vmlinux's


@pytest.mark.parametrize(("module", "name"), [("virtio_net", "virtnet_info"), ("tun", "tun_struct")])
def test_module_struct_nests_like_pahole(kernel: dict[str, Path], module: str, name: str) -> None:
    theirs = pahole_text(name, str(kernel[module]), str(kernel["vmlinux"]))
    ours = CliRunner().invoke(cli, ["layout", name, "--btf", str(kernel[module]),
                                    "--btf-base", str(kernel["vmlinux"])]).stdout
    assert skeleton(ours) == skeleton(theirs)
