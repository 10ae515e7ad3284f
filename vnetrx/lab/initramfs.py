"""The guest's initramfs: busybox, the virtio-net modules of the guest kernel (with their
dependencies, read from each module's ``.modinfo``), and an ``/init`` script that sets up the
trace, announces itself on the serial console, waits for the frames, dumps the trace and powers
off.

Lines the guest prints for the host all start with ``VNETRX `` (see ``vnetrx.observed.guest_log``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vnetrx.errors import VnetrxError
from vnetrx.lab import cpio

# The modules /init loads, as the user would name them; dependencies are added.
ROOT_MODULES = ("virtio_pci", "virtio_net")
SENTINEL_ETHERTYPE = 0x88B6  # the frame the host sends after the last test frame
TEST_ETHERTYPE = 0x88B5  # IEEE 802 "local experimental EtherType 1"
_MODULE_SUFFIXES = (".ko", ".ko.xz", ".ko.gz", ".ko.zst")


class LabSetupError(VnetrxError):
    """The lab's inputs (kernel image, modules, busybox, qemu) are missing or unusable."""


def module_name(path: str | Path) -> str:
    """``.../virtio_net.ko.xz`` → ``virtio_net`` (dashes folded to underscores, as modprobe does)."""
    name = Path(path).name
    for suffix in _MODULE_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name.replace("-", "_")


def modinfo_depends(data: bytes) -> tuple[str, ...]:
    """The ``depends=`` entry of a module's .modinfo section (uncompressed module bytes)."""
    match = re.search(rb"(?:^|\0)depends=([^\0]*)\0", data)
    if match is None:
        return ()
    return tuple(
        part.decode().replace("-", "_") for part in match.group(1).split(b",") if part.strip()
    )


def modinfo_vermagic(data: bytes) -> str | None:
    match = re.search(rb"\0vermagic=([^\0]*)\0", data)
    return None if match is None else match.group(1).decode(errors="replace").split(" ")[0]


def decompress_module(path: Path) -> bytes:
    """The ELF bytes of a module file (.ko, .ko.xz, .ko.gz, .ko.zst)."""
    from vnetrx.layouts.kernel_image import decompress

    data = path.read_bytes()
    try:
        plain = decompress(data, str(path))
    except VnetrxError as exc:
        raise LabSetupError(exc.message, hint=exc.hint) from None
    return data if plain is None else plain


@dataclass(frozen=True)
class ModuleTree:
    """A /lib/modules/<release> directory: where each module file is, which are built in."""

    root: Path
    files: dict[str, Path]
    builtin: frozenset[str]

    @classmethod
    def scan(cls, root: Path) -> ModuleTree:
        if not root.is_dir():
            raise LabSetupError(f"module directory {root} does not exist")
        files: dict[str, Path] = {}
        for path in sorted((root / "kernel").rglob("*.ko*")) if (root / "kernel").is_dir() else []:
            if path.name.endswith(_MODULE_SUFFIXES):
                files.setdefault(module_name(path), path)
        builtin_list = root / "modules.builtin"
        builtin = (
            frozenset(
                module_name(line.strip())
                for line in builtin_list.read_text().splitlines()
                if line.strip()
            )
            if builtin_list.is_file()
            else frozenset()
        )
        return cls(root, files, builtin)


def resolve_modules(
    wanted: tuple[str, ...],
    lookup: Callable[[str], bytes | None],
    builtin: frozenset[str] = frozenset(),
) -> list[str]:
    """Load order (dependencies first) for ``wanted``. ``lookup(name)`` returns the module's
    uncompressed bytes or None when there is no such file; built-in modules are skipped."""
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "active":
            raise LabSetupError(f"module dependency cycle: {' -> '.join((*chain, name))}")
        data = lookup(name)
        if data is None:
            if name in builtin:
                state[name] = "done"
                return
            raise LabSetupError(
                f"module {name} not found"
                + (f" (needed by {chain[-1]})" if chain else "")
                + " and not built in",
                hint="pass --modules /lib/modules/<release> of the guest kernel",
            )
        state[name] = "active"
        for dep in modinfo_depends(data):
            visit(dep, (*chain, name))
        state[name] = "done"
        order.append(name)

    for name in wanted:
        visit(name.replace("-", "_"), ())
    return order


@dataclass(frozen=True)
class Kprobe:
    """Byte offsets in struct sk_buff of the guest kernel, for the napi_gro_receive kprobe."""

    head: int
    data: int
    tail: int
    end: int
    mac_header: int
    len: int

    def definition(self) -> str:
        # napi_gro_receive(struct napi_struct *napi, struct sk_buff *skb): skb is in %si.
        return (
            "p:vnetrx/gro napi_gro_receive "
            f"head=+{self.head}(%si):x64 data=+{self.data}(%si):x64 "
            f"tail=+{self.tail}(%si):u32 end=+{self.end}(%si):u32 "
            f"mac_header=+{self.mac_header}(%si):u16 len=+{self.len}(%si):u32"
        )


def guest_prelude(modules: Sequence[str], mac: str) -> str:
    """What every lab guest's /init does first (busybox sh): mount proc, sys and dev, define
    ``say`` (a VNETRX line on the console) and ``finish`` (power off), report the kernel,
    insmod ``modules`` (in order, from /lib/modules) and find the network device with ``mac``
    as ``$dev`` (finishing when there is none)."""
    return f"""/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
echo 1 > /proc/sys/kernel/printk
say() {{ echo "VNETRX $*"; }}
finish() {{ say end; poweroff -f; sleep 5; echo o > /proc/sysrq-trigger; }}
say release $(uname -r)
say version $(uname -v)
for m in {" ".join(modules)}; do
  insmod /lib/modules/$m.ko || say error insmod $m
done
dev=
i=0
while [ -z "$dev" ] && [ $i -lt 100 ]; do
  for d in /sys/class/net/*; do
    [ "$(cat $d/address 2>/dev/null)" = "{mac}" ] && dev=${{d##*/}}
  done
  [ -n "$dev" ] || sleep 0.1
  i=$((i+1))
done
[ -n "$dev" ] || {{ say error no network device with MAC {mac}; finish; }}
say dev $dev
"""


def init_script(modules: list[str], mac: str, kprobe: Kprobe | None, timeout_s: int = 60,
                xdp_probe: bool = False, xdp_keep: str | None = None,
                xdp_late: bool = False) -> str:
    """The guest's /init (busybox sh). ``xdp_probe``: try an XDP attach first (bin/xdpprobe);
    ``xdp_keep``: the probe's ``keep ACTION FRAGS`` arguments, to attach a program that stays
    for the frames (the sentinel passes), and print the driver's ethtool counters after them.
    The attach comes before the link is up, so every buffer is posted with the XDP geometry;
    ``xdp_late``: after it, so the ring posted at virtnet_open (no XDP headroom) stays."""
    attach = "" if xdp_keep is None else f" {xdp_keep} 0x{SENTINEL_ETHERTYPE:04x}"
    probe = ("say xdp-cpus $(cat /sys/devices/system/cpu/online)\n"
             f"say xdp-attach $(/bin/xdpprobe $dev{attach})\n"
             "say xdp-dmesg $(dmesg | grep -i xdp | tr '\\n' '|')\n"
             if xdp_probe or xdp_keep is not None else "")
    stats = ("say xdp-stats $(/bin/xdpprobe $dev stats | tr '\\n' ' ')\n"
             if xdp_keep is not None else "")
    early, late = ("", probe) if xdp_late else (probe, "")
    kprobe_def = shlex.quote(kprobe.definition()) if kprobe else "''"
    sentinel = f"protocol=0x{SENTINEL_ETHERTYPE:04x}"
    return f"""#!/bin/sh
# vnetrx lab guest: load virtio-net, trace napi_gro_receive, wait for the host's frames.
{guest_prelude(modules, mac)}say driver $(basename $(readlink /sys/class/net/$dev/device/driver))
say features $(cat /sys/class/net/$dev/device/features)
say mtu $(cat /sys/class/net/$dev/mtu)
echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6 2>/dev/null
echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null
T=/sys/kernel/tracing
mount -t tracefs tracefs $T 2>/dev/null
[ -e $T/trace ] || {{ say error no tracefs; finish; }}
echo 0 > $T/tracing_on
echo "name == \\"$dev\\"" > $T/events/net/napi_gro_receive_entry/filter || say error filter
echo 1 > $T/events/net/napi_gro_receive_entry/enable || say error tracepoint
KP={kprobe_def}
if [ -n "$KP" ]; then
  if echo "$KP" >> $T/kprobe_events && echo 1 > $T/events/vnetrx/gro/enable; then
    say kprobe on
  else
    say kprobe off $(tail -n 2 $T/error_log 2>/dev/null | tr '\\n' ' ')
  fi
fi
{early}ip link set $dev up || say error link up
{late}say mergeable_rx_buffer_size $(cat /sys/class/net/$dev/queues/rx-0/virtio_net/mergeable_rx_buffer_size 2>/dev/null)
echo 1 > $T/tracing_on
say ready
i=0
while ! grep -q "{sentinel}" $T/trace; do
  i=$((i+1))
  [ $i -gt {timeout_s * 10} ] && {{ say error timeout waiting for the frames; break; }}
  sleep 0.1
done
echo 0 > $T/tracing_on
say rx_packets $(cat /sys/class/net/$dev/statistics/rx_packets)
say rx_dropped $(cat /sys/class/net/$dev/statistics/rx_dropped)
say rx_length_errors $(cat /sys/class/net/$dev/statistics/rx_length_errors)
say rx_frame_errors $(cat /sys/class/net/$dev/statistics/rx_frame_errors)
{stats}say trace-begin
grep -v '^#' $T/trace
say trace-end
finish
"""


def build(
    busybox: Path,
    tree: ModuleTree,
    mac: str,
    kprobe: Kprobe | None,
    timeout_s: int = 60,
    xdp_probe: bytes | None = None,
    xdp_keep: str | None = None,
    xdp_late: bool = False,
    extra: Sequence[cpio.Entry] = (),
    script: Callable[[list[str]], str] | None = None,
) -> tuple[bytes, list[str]]:
    """The uncompressed newc archive and the module load order; ``xdp_probe``: the static
    program /init runs to try an XDP attach (vnetrx.lab.xdp_probe); ``xdp_keep``: its
    ``keep ACTION FRAGS`` arguments (see ``init_script``). ``extra``: more cpio entries;
    ``script``: /init from the module load order instead of ``init_script``'s."""
    entries, order = _base(busybox, tree, ROOT_MODULES)
    if xdp_probe is not None:
        entries.append(cpio.regular("bin/xdpprobe", xdp_probe, 0o755))
    entries += extra
    text = (script(order) if script is not None else
            init_script(order, mac, kprobe, timeout_s, xdp_probe is not None, xdp_keep,
                        xdp_late))
    entries.append(cpio.regular("init", text.encode(), 0o755))
    return cpio.archive(entries), order


def _base(busybox: Path, tree: ModuleTree,
          wanted: tuple[str, ...]) -> tuple[list[cpio.Entry], list[str]]:
    """The entries every lab initramfs has (directories, console, busybox) and the modules of
    ``wanted`` with their dependencies, in load order."""
    if not busybox.is_file():
        raise LabSetupError(
            f"busybox not found at {busybox}", hint="apt-get install busybox-static"
        )
    cache: dict[str, bytes] = {}

    def lookup(name: str) -> bytes | None:
        path = tree.files.get(name)
        if path is None:
            return None
        if name not in cache:
            cache[name] = decompress_module(path)
        return cache[name]

    order = resolve_modules(wanted, lookup, tree.builtin)
    entries = [
        cpio.directory(name) for name in ("bin", "dev", "proc", "sys", "tmp", "lib", "lib/modules")
    ]
    entries += [
        cpio.char_device("dev/console", 5, 1),
        cpio.char_device("dev/null", 1, 3, 0o666),
        cpio.regular("bin/busybox", busybox.read_bytes(), 0o755),
        cpio.symlink("bin/sh", "busybox"),
    ]
    entries += [cpio.regular(f"lib/modules/{name}.ko", cache[name]) for name in order]
    return entries, order


# lab vhost: the modules its probe needs (vhost_net's dependencies, vhost and vhost_iotlb, are
# read from its .modinfo; af_packet is built in on Debian but a module on some configs)
VHOST_MODULES = ("tun", "vhost_net")
# kprobes of lab vhost: which road a guest's frame takes into the tap. tun_xdp_one is inlined
# into tun_sendmsg in Debian's 6.1 and 6.12 tun.ko (no symbol), so the batch is "tun_sendmsg
# without tun_get_user"; build_skb's size is vhost_net_build_xdp's buflen on that road, its
# data the buffer vhost carved from its page frag.
VHOST_KPROBES = (
    "p:vnetrx/tun_sendmsg tun_sendmsg",
    "r:vnetrx/tun_sendmsg_ret tun_sendmsg ret=$retval:s32",
    "p:vnetrx/tun_get_user tun_get_user",
    "r:vnetrx/tun_get_user_ret tun_get_user ret=$retval:s32",
    "p:vnetrx/build_skb build_skb data=%di:x64 size=%si:u32",
)

# a boot with vhost_net's experimental_zcopytx=1 also records which sendmsg pinned the guest's
# pages (zerocopy_sg_from_iter, net/core/datagram.c, exported) and the ubuf completion vhost
# gets when the skb is freed: vhost_zerocopy_callback(skb, ubuf, success) up to 6.9, renamed
# vhost_zerocopy_complete with struct ubuf_info_ops (6.10); one of the two arms
VHOST_ZCOPY_KPROBES = (
    *VHOST_KPROBES,
    "p:vnetrx/zerocopy_sg zerocopy_sg_from_iter",
    "p:vnetrx/zc_callback vhost_zerocopy_callback success=%dx:u8",
    "p:vnetrx/zc_complete vhost_zerocopy_complete success=%dx:u8",
)
VHOST_ZCOPY_ARGS = {"vhost_net": "experimental_zcopytx=1"}


def vhost_init_script(modules: list[str], kprobes: tuple[str, ...] = VHOST_KPROBES,
                      module_args: dict[str, str] | None = None) -> str:
    """The /init of ``lab vhost``: load tun and vhost_net, trace netif_receive_skb_entry on the
    probe's tap and the kprobes, run bin/vhostprobe on /vhost-cases, dump the trace and the
    kernel's vhost/tun messages (vhost's pr_debug lines switched on with dynamic debug)."""
    probes = "\n".join(
        f"arm {shlex.quote(definition)} {definition.split()[0].split('/')[1]}"
        for definition in kprobes)
    load = f"""for m in {" ".join(modules)}; do
  insmod /lib/modules/$m.ko || say error insmod $m
done"""
    if module_args:
        load = "\n".join(
            f"insmod /lib/modules/{m}.ko {module_args.get(m, '')}".rstrip()
            + f" || say error insmod {m}" for m in modules)
        load += "".join(
            f"\nsay param {m} {arg.split('=')[0]} "
            f"$(cat /sys/module/{m}/parameters/{arg.split('=')[0]} 2>/dev/null)"
            for m, arg in sorted(module_args.items()))
        load += "\nsay thp $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
    return f"""#!/bin/sh
# vnetrx lab vhost: drive /dev/vhost-net with a tap of the guest's own.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
echo 1 > /proc/sys/kernel/printk
say() {{ echo "VNETRX $*"; }}
finish() {{ say end; poweroff -f; sleep 5; echo o > /proc/sysrq-trigger; }}
say release $(uname -r)
say version $(uname -v)
echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6 2>/dev/null
echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null
say kvm $([ -e /dev/kvm ] && echo yes || echo no)
{load}
say modules $(cut -d' ' -f1 /proc/modules | tr '\n' ' ')
say vhost-net-dev $(cat /sys/class/misc/vhost-net/dev 2>/dev/null) $([ -c /dev/vhost-net ] && echo node || echo no-node)
echo 'module vhost_net +p' > /sys/kernel/debug/dynamic_debug/control 2>/dev/null
echo 'module vhost +p' > /sys/kernel/debug/dynamic_debug/control 2>/dev/null
T=/sys/kernel/tracing
mount -t tracefs tracefs $T 2>/dev/null
[ -e $T/trace ] || {{ say error no tracefs; finish; }}
echo 0 > $T/tracing_on
echo 8192 > $T/buffer_size_kb
echo 'name == "vnrx0"' > $T/events/net/netif_receive_skb_entry/filter || say error filter
echo 1 > $T/events/net/netif_receive_skb_entry/enable || say error tracepoint
echo 1 > $T/events/skb/kfree_skb/enable || say error kfree_skb tracepoint
arm() {{
  if echo "$1" >> $T/kprobe_events && echo 1 > $T/events/vnetrx/$2/enable; then
    say kprobe $2 on
  else
    say kprobe $2 off $(tail -n 2 $T/error_log 2>/dev/null | tr '\n' ' ')
  fi
}}
{probes}
echo 1 > $T/tracing_on
say ready
/bin/vhostprobe /vhost-cases || say error vhostprobe exit $?
echo 0 > $T/tracing_on
say trace-begin
grep -v '^#' $T/trace
say trace-end
say dmesg-begin
dmesg | grep -i -E 'vhost|tun|discard' | sed 's/^/VNETRX dmesg /'
say dmesg-end
finish
"""


def build_vhost(busybox: Path, tree: ModuleTree, probe: bytes, cases: str,
                xdp_probe: bytes | None = None, zcopy: bool = False) -> tuple[bytes, list[str]]:
    """The initramfs of ``lab vhost``: busybox, tun + vhost_net and their dependencies, the
    static probe (bin/vhostprobe) and its case file (/vhost-cases); ``xdp_probe``: the XDP
    probe (bin/xdpprobe) the cases with a program on the tap run."""
    entries, order = _base(busybox, tree, VHOST_MODULES)
    if xdp_probe is not None:
        entries.append(cpio.regular("bin/xdpprobe", xdp_probe, 0o755))
    entries += [
        cpio.regular("bin/vhostprobe", probe, 0o755),
        cpio.regular("vhost-cases", cases.encode()),
        cpio.regular("init", (vhost_init_script(order, VHOST_ZCOPY_KPROBES, VHOST_ZCOPY_ARGS)
                              if zcopy else vhost_init_script(order)).encode(), 0o755),
    ]
    return cpio.archive(entries), order
