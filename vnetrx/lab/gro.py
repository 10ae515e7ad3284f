"""``vnetrx lab virtio --gro``: GRO in a real guest kernel against vnetrx's model.

vnetrx's own vhost-user backend (vnetrx.lab.vhost_user) puts each burst of one TCP flow into the
guest's receive queue with ONE used-ring update and ONE interrupt (``receive_burst``), so that
the guest takes it in one NAPI poll when its budget (64) allows. In the guest, BPF raw
tracepoint programs of vnetrx's own (vnetrx.live.grobpf, assembled on the host with the guest
kernel's BTF offsets and loaded by the static data/groprobe.c) record every skb that enters GRO
(``napi_gro_receive_entry``) with its verdict (``napi_gro_receive_exit``), every skb that leaves
it (``netif_receive_skb``, fired in ``__netif_receive_skb_core``: GRO's output goes
``gro_normal_list`` → ``netif_receive_skb_list_internal``, which fires neither
``netif_receive_skb_entry`` nor ``netif_receive_skb_list_entry`` on 6.1 or 6.12), its frag_list
members, and every poll of the device (``napi_poll``: work and budget). The poll boundaries are
observed, never assumed: they become the prediction's ``--polls``.

The prediction replays the whole boot's frames (the bytes and the virtio-net header the backend
wrote, the sentinel included) through ``vnetrx replay --gro``'s code (vnetrx.replay.Stream and
vnetrx.replay.gro.replay_gro) with the observed polls; :func:`compare` takes any prediction callable.
Guests get no IP networking: the frames carry a foreign destination MAC, and what GRO delivers
is dropped by the guest's stack (PACKET_OTHERHOST).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vnetrx.errors import InputError
from vnetrx.kernel.profile import KernelProfile
from vnetrx.lab.initramfs import LabSetupError, guest_prelude
from vnetrx.live import gro_frames
from vnetrx.live.grobpf import SkbOffsets
from vnetrx.observed.console import TraceWindow, console_lines

if TYPE_CHECKING:
    from vnetrx.paths.virtio_net import VirtioRxSetup

SCHEMA = "vnetrx.lab-gro/1"
# mode → (mergeable, guest GSO); every one runs on the vhost-user backend (one used-ring update
# per burst). Big mode (no MRG_RXBUF, guest GSO) posts chains of MAX_SKB_FRAGS + 2 = 19
# descriptors, 13 in a 256-entry ring: its bursts are at most 12 frames (BIG_BURSTS); replay
# follows each frame in a chain of its own, not the chains' occupancy of the ring.
#
# Big mode without guest GSO ("big"): virtnet_set_big_packets (6.1, 6.12) chooses big packets
# when the device's MTU (VIRTIO_NET_F_MTU, QEMU's host_mtu) is above ETH_DATA_LEN, with
# big_packets_num_skbfrags = DIV_ROUND_UP(mtu, PAGE_SIZE): at BIG_MTU 9000, chains of 3 + 2 = 5
# descriptors (add_recvbuf_big), 51 in a 256-entry ring: bursts of at most BIG_MAX_BURST.
MODES = {"mergeable": (True, False), "mergeable-gso": (True, True), "small": (False, False),
         "big-gso": (False, True), "big": (False, False)}
BIG_MODES = ("big-gso", "big")
BIG_MTU = 9000  # big mode's default host_mtu
MTU_MODES = ("big",)  # the modes that offer host_mtu (required above ETH_DATA_LEN)
PROBE_DEVICE = "eth0"  # the programs compare skb->dev->name with it; /init checks the name
PLACEHOLDER = 0x7F000000  # map fd placeholders groprobe.c replaces (queue, scratch, flag, lost)
TRACEPOINTS = ("napi_gro_receive_entry", "napi_gro_receive_exit", "netif_receive_skb",
               "napi_poll")
# net tracepoints the guest counts on its device: which fire for GRO's output (gro_normal_list
# → netif_receive_skb_list_internal fires neither *_entry one: only netif_receive_skb, from
# __netif_receive_skb_core)
COUNTED = ("netif_receive_skb_entry", "netif_receive_skb_list_entry", "netif_receive_skb")
BURST_GAP_S = 0.5  # between bursts: the guest's poll of one ends before the next is written
PAYLOAD4, PAYLOAD6 = 1448, 1428  # MSS with timestamps at MTU 1500: 1514-byte frames
# Compared per delivered skb (frag_list: how many members; frames: the inputs it carries)
FIELDS = ("len", "data_len", "headlen", "truesize", "nr_frags", "frag_list", "gso_size",
          "gso_segs", "gso_type", "ip_summed", "frames")


@dataclass(frozen=True)
class Burst:
    name: str
    spec: dict[str, Any]  # a vnetrx.live.gro_frames description

    def writes(self) -> list[tuple[bytes, bytes]]:
        """(the 10-byte virtio_net_hdr, or b"" for all zero; the Ethernet frame) per frame."""
        return [(w.hdr, w.frame) for w in gro_frames.build(self.spec)]


def _b(name: str, **spec: Any) -> Burst:
    spec.setdefault("vnet", "data_valid")
    spec.setdefault("payload", PAYLOAD6 if spec.get("family") == 6 else PAYLOAD4)
    return Burst(name, spec)


# Counts around MAX_SKB_FRAGS (17 frags: segment 18 starts the frag_list) and the 64 KiB limit
# (45 segments of 1448 fit, the 46th is -E2BIG), a burst of exactly the budget and one larger
# (64 + 6), every flush trigger mid-burst, other frames in between, two and nine flows (the
# ninth evicts the oldest: bucket 0), small and odd payloads (the copy path's linear skbs), the
# three checksum states, IPv4 and IPv6.
_FULL = [PAYLOAD4] * 8
BURSTS = (
    _b("v4-seg8", segments=8),
    _b("v4-seg17", segments=17),
    _b("v4-seg18", segments=18),
    _b("v4-seg19", segments=19),
    _b("v4-seg35", segments=35),
    _b("v4-seg45", segments=45),
    _b("v4-seg46", segments=46),
    _b("v4-psh9", segments=20, psh=[9]),
    _b("v4-psh0", segments=8, psh=[0]),
    _b("v4-fin3", segments=8, fin=[3]),
    _b("v4-urg3", segments=8, urg=[3]),
    _b("v4-rst3", segments=8, rst=[3]),
    _b("v4-syn3", segments=8, syn=[3]),
    _b("v4-cwr3", segments=8, cwr=[3]),
    _b("v4-cwr0", segments=8, cwr=[0]),
    _b("v4-nonip10", segments=20, other=[10]),
    _b("v4-udp5", segments=10, udp=[5]),
    _b("v4-csum-none", segments=8, vnet=None),
    _b("v4-bad-csum3", segments=8, vnet=None, bad_tcp_csum=[3]),
    _b("v4-needs-csum", segments=8, vnet="needs_csum"),
    _b("v4-seq-gap4", segments=8, seq_gap={"at": 4, "bytes": PAYLOAD4}),
    _b("v4-tsval4", segments=8, tsval_change=[4]),
    _b("v4-window4", segments=8, window_change=[4]),
    _b("v4-ack4", segments=8, ack_change=[4]),
    _b("v4-ttl4", segments=8, ttl_change=[4]),
    _b("v4-tos4", segments=8, tos_change=[4]),
    _b("v4-df-change4", segments=8, df_change=[4]),
    _b("v4-ipid-fixed-df", segments=8, ipid="fixed", df=True),
    _b("v4-ipid-fixed-nodf", segments=8, ipid="fixed", df=False),
    _b("v4-ipid-inc-nodf", segments=8, df=False),
    _b("v4-bad-ip-csum3", segments=8, bad_ip_csum=[3]),
    _b("v4-ip-options4", segments=8, ip_options=[4]),
    _b("v4-more-fragments4", segments=8, more_fragments=[4]),
    _b("v4-short-middle", segments=8, payload=[*_FULL[:3], 1000, *_FULL[4:]]),
    _b("v4-short-last", segments=8, payload=[*_FULL[:7], 1000]),
    _b("v4-longer-second", segments=8, payload=[1000, *_FULL[1:]]),
    _b("v4-pure-ack3", segments=8, payload=[*_FULL[:3], 0, *_FULL[4:]]),
    _b("v4-no-timestamps", segments=8, timestamps=False, payload=1460),
    _b("v4-payload1", segments=8, payload=1),
    _b("v4-payload60", segments=8, payload=60),
    _b("v4-payload100", segments=8, payload=100),
    _b("v4-payload536", segments=8, payload=536),
    _b("v4-payload1000", segments=20, payload=1000),
    _b("v4-flows2", segments=12, flows=2),
    _b("v4-flows9", segments=27, flows=9),
    _b("v6-seg8", family=6, segments=8),
    _b("v6-seg18", family=6, segments=18),
    _b("v6-seg46", family=6, segments=46),
    _b("v6-psh9", family=6, segments=20, psh=[9]),
    _b("v6-csum-none", family=6, segments=8, vnet=None),
    _b("v6-bad-csum3", family=6, segments=8, vnet=None, bad_tcp_csum=[3]),
    _b("v6-needs-csum", family=6, segments=8, vnet="needs_csum"),
    _b("v6-flowlabel4", family=6, segments=8, flowlabel_change=[4]),
    _b("v6-tclass4", family=6, segments=8, tos_change=[4]),
    _b("v6-hoplimit4", family=6, segments=8, ttl_change=[4]),
    _b("v6-udp5", family=6, segments=10, udp=[5]),
    _b("v6-payload100", family=6, segments=8, payload=100),
    _b("v4-seg64", segments=64),
    _b("v4-seg70", segments=70),
    # 802.1Q tags (virtio-net strips none: the tag reaches GRO in the frame): vlan_gro_receive
    # (net/8021q/vlan_core.c, built in with CONFIG_VLAN_8021Q=m, Debian's); payloads 4 bytes
    # shorter so that every frame stays within the MTU
    _b("v4-vlan8", segments=8, vlan=100, payload=PAYLOAD4 - 4),
    _b("v4-vlan-tci4", segments=8, vlan=100, vlan_change=[4], payload=PAYLOAD4 - 4),
    _b("v4-vlan-untagged4", segments=8, vlan=100, untagged=[4], payload=PAYLOAD4 - 4),
    _b("v6-vlan8", family=6, segments=8, vlan=100, payload=PAYLOAD6 - 4),
)
# guest GSO: a GSO frame (SKB_GSO_DODGY from virtio_net_hdr_to_skb) is never merged and
# flushes the flow it meets (7871f54e3dee, 6.1.7+)
GSO_BURSTS = (
    _b("v4-gso2", segments=6, gso={"at": 2, "segments": 4}),
    _b("v4-gso0", segments=4, gso={"at": 0, "segments": 4}),
    _b("v6-gso2", family=6, segments=6, gso={"at": 2, "segments": 4}),
)


# big mode: one page chain per frame, 13 chains posted: bursts of at most 12
BIG_BURSTS = (
    _b("v4-seg2", segments=2),
    _b("v4-seg8", segments=8),
    _b("v4-seg12", segments=12),
    _b("v4-psh5", segments=12, psh=[5]),
    _b("v4-nonip5", segments=10, other=[5]),
    _b("v4-udp5", segments=10, udp=[5]),
    _b("v4-csum-none", segments=8, vnet=None),
    _b("v4-bad-csum3", segments=8, vnet=None, bad_tcp_csum=[3]),
    _b("v4-needs-csum", segments=8, vnet="needs_csum"),
    _b("v4-seq-gap4", segments=8, seq_gap={"at": 4, "bytes": PAYLOAD4}),
    _b("v4-ip-options4", segments=8, ip_options=[4]),
    _b("v4-short-middle", segments=8, payload=[*_FULL[:3], 1000, *_FULL[4:]]),
    _b("v4-payload1", segments=8, payload=1),
    _b("v4-payload100", segments=8, payload=100),
    _b("v4-payload3000", segments=8, payload=3000),
    _b("v4-flows2", segments=12, flows=2),
    _b("v6-seg12", family=6, segments=12),
    _b("v6-psh5", family=6, segments=12, psh=[5]),
    _b("v6-csum-none", family=6, segments=8, vnet=None),
    _b("v6-udp5", family=6, segments=10, udp=[5]),
    *GSO_BURSTS,
)


# big mode (BIG_MTU 9000: 5-descriptor chains, 51 posted; big_chains). Jumbo segments
# (MSS 8948 over IPv4, 8928 over IPv6 at MTU 9000 with timestamps: 9014-byte frames spanning
# three pages of the chain), counts around MAX_SKB_FRAGS and 64 KiB for 1448-byte segments
# (one page each), frames that cross a page of the chain.
JUMBO4, JUMBO6 = 8948, 8928
ETH_HLEN, ETH_DATA_LEN, PAGE_SIZE = 14, 1500, 4096
RX_QUEUE_SIZE = 256  # QEMU's default rx_queue_size (virtio-net-pci)
MTU_RANGE = (ETH_DATA_LEN + 1, 65535)  # big mode needs mtu > ETH_DATA_LEN; host_mtu is a u16
BIG_MTU_BURSTS = (
    *(b for b in BIG_BURSTS if b not in GSO_BURSTS),
    _b("v4-seg17", segments=17),
    _b("v4-seg18", segments=18),
    _b("v4-seg35", segments=35),
    _b("v4-seg45", segments=45),
    _b("v4-seg46", segments=46),
    _b("v4-fin3", segments=8, fin=[3]),
    _b("v4-ttl4", segments=8, ttl_change=[4]),
    _b("v4-payload4000", segments=12, payload=4000),
    _b("v4-payload4100", segments=12, payload=4100),
    _b("v4-payload6000", segments=12, payload=6000),
    _b("v4-jumbo2", segments=2, payload=JUMBO4),
    _b("v4-jumbo7", segments=7, payload=JUMBO4),
    _b("v4-jumbo8", segments=8, payload=JUMBO4),
    _b("v4-jumbo-psh3", segments=8, payload=JUMBO4, psh=[3]),
    _b("v4-jumbo-csum-none", segments=6, payload=JUMBO4, vnet=None),
    _b("v4-jumbo-short-last", segments=6, payload=[JUMBO4] * 5 + [1000]),
    _b("v6-seg46", family=6, segments=46),
    _b("v6-jumbo8", family=6, segments=8, payload=JUMBO6),
)


def big_chains(mtu: int) -> int:
    """Big mode without guest GSO: the page chains virtio-net posts in the 256-entry rx ring,
    each of big_packets_num_skbfrags + 2 descriptors (add_recvbuf_big), with
    big_packets_num_skbfrags = DIV_ROUND_UP(mtu, PAGE_SIZE) (virtnet_set_big_packets)."""
    return RX_QUEUE_SIZE // (-(-mtu // PAGE_SIZE) + 2)


def check_mtu(mode: str, mtu: int | None) -> int | None:
    """The host_mtu a mode's boot offers: big mode's (default BIG_MTU, above ETH_DATA_LEN),
    None for the others (InputError when given)."""
    if mode not in MTU_MODES:
        if mtu is not None:
            raise InputError(f"lab virtio --gro: --mtu applies to --mode big only, not {mode}")
        return None
    mtu = BIG_MTU if mtu is None else mtu
    if not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]:
        raise InputError(f"lab virtio --gro --mode big: --mtu {mtu} (valid: "
                         f"{MTU_RANGE[0]}..{MTU_RANGE[1]}: big mode needs an MTU above "
                         f"{ETH_DATA_LEN})")
    return mtu


def bursts_for(mode: str, mtu: int | None = None) -> tuple[Burst, ...]:
    """The bursts of a mode's boot. Big mode (``mtu``, default BIG_MTU): those of
    BIG_MTU_BURSTS whose frames the MTU allows (at most mtu + ETH_HLEN bytes) and that fit the
    posted page chains with one to spare (big_chains)."""
    if mode not in MODES:
        raise InputError(f"lab virtio --gro: unknown mode {mode!r} (valid: {', '.join(MODES)})")
    if mode == "big-gso":
        return BIG_BURSTS
    if mode == "big":
        limit = check_mtu(mode, mtu) or BIG_MTU
        return tuple(b for b in BIG_MTU_BURSTS
                     if len(b.writes()) < big_chains(limit)
                     and max(len(f) for _, f in b.writes()) <= limit + ETH_HLEN)
    return BURSTS + (GSO_BURSTS if MODES[mode][1] else ())


def sentinel() -> tuple[bytes, bytes]:
    from vnetrx.lab.qemu import sentinel_frame

    return b"", sentinel_frame()


# --- the guest side ---------------------------------------------------------------------------


def probe_source() -> bytes:
    """data/groprobe.c: the guest's loader of the GRO probe's programs."""
    from importlib import resources

    return resources.files("vnetrx.lab").joinpath("data/groprobe.c").read_bytes()


def guest_offsets(image: Path) -> SkbOffsets:
    """struct sk_buff / skb_shared_info offsets in the guest kernel's BTF (its bzImage)."""
    from vnetrx.layouts.btf_format import GrammarBtf
    from vnetrx.layouts.kernel_image import bzimage_payload, elf_section
    from vnetrx.live.grobpf import offsets_of

    elf = bzimage_payload(image.read_bytes())
    blob = elf_section(elf, ".BTF")
    if blob is None:
        raise LabSetupError(f"{image}: vmlinux has no .BTF section (CONFIG_DEBUG_INFO_BTF off)")
    try:
        return offsets_of(GrammarBtf(blob, f"{image}:.BTF"), str(image))
    except OSError as exc:
        raise LabSetupError(f"{image}: {exc.strerror or exc}") from None


def programs(o: SkbOffsets, device: str = PROBE_DEVICE) -> list[tuple[str, bytes]]:
    """The raw tracepoint programs, their map fds as placeholders groprobe.c fills in."""
    from vnetrx.live import grobpf

    queue, scratch, flag, lost = (PLACEHOLDER + i for i in range(4))
    return [
        ("napi_gro_receive_entry", grobpf.skb_program(o, grobpf.ENTRY, device, queue, scratch,
                                                      flag, lost_fd=lost)),
        ("napi_gro_receive_exit", grobpf.exit_program(queue, scratch, flag, lost)),
        ("netif_receive_skb", grobpf.skb_program(o, grobpf.DELIVERED, device, queue, scratch,
                                                 None, grobpf.MAX_MEMBERS, lost)),
        ("napi_poll", grobpf.poll_program(o, device, queue, scratch, lost)),
    ]


def init_script(modules: list[str], mac: str, record_size: int, progs: Sequence[str],
                frames: int, timeout_s: int = 90) -> str:
    """The guest's /init for --gro: load virtio-net, attach the probe (bin/groprobe), bring
    the link up, wait until ``frames`` frames (the sentinel included) were received, dump."""
    pairs = " ".join(f"{tp} /gro/{i}.bin" for i, tp in enumerate(progs))
    return f"""#!/bin/sh
# vnetrx lab guest (--gro): record the skbs around GRO with BPF, wait for the host's bursts.
{guest_prelude(modules, mac)}[ "$dev" = "{PROBE_DEVICE}" ] || {{ say error the probe watches {PROBE_DEVICE}, not $dev; finish; }}
say driver $(basename $(readlink /sys/class/net/$dev/device/driver))
say features $(cat /sys/class/net/$dev/device/features)
say mtu $(cat /sys/class/net/$dev/mtu)
say gro_normal_batch $(cat /proc/sys/net/core/gro_normal_batch 2>/dev/null)
say gro_flush_timeout $(cat /sys/class/net/$dev/gro_flush_timeout 2>/dev/null)
say napi_defer_hard_irqs $(cat /sys/class/net/$dev/napi_defer_hard_irqs 2>/dev/null)
echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6 2>/dev/null
echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null
# which net tracepoints fire for the skbs that leave GRO (counted, not recorded: BPF does that)
T=/sys/kernel/tracing
mount -t tracefs tracefs $T 2>/dev/null
for e in {" ".join(COUNTED)}; do
  echo "name == \\"$dev\\"" > $T/events/net/$e/filter && echo 1 > $T/events/net/$e/enable \\
    || say error tracepoint $e
done
echo 1 > $T/tracing_on
/bin/groprobe /tmp/gro-ready {record_size} {pairs} &
probe=$!
i=0
while [ ! -e /tmp/gro-ready ] && kill -0 $probe 2>/dev/null && [ $i -lt 300 ]; do
  sleep 0.1
  i=$((i+1))
done
[ -e /tmp/gro-ready ] || {{ say error groprobe did not attach; finish; }}
ip link set $dev up || say error link up
say mergeable_rx_buffer_size $(cat /sys/class/net/$dev/queues/rx-0/virtio_net/mergeable_rx_buffer_size 2>/dev/null)
say ready
i=0
while [ "$(cat /sys/class/net/$dev/statistics/rx_packets)" -lt {frames} ]; do
  i=$((i+1))
  [ $i -gt {timeout_s * 10} ] && {{ say error timeout waiting for the frames; break; }}
  sleep 0.1
done
sleep 0.5
echo 0 > $T/tracing_on
for e in {" ".join(COUNTED)}; do
  say count-$e $(grep -c " $e:" $T/trace)
done
say rx_packets $(cat /sys/class/net/$dev/statistics/rx_packets)
say rx_dropped $(cat /sys/class/net/$dev/statistics/rx_dropped)
say rx_length_errors $(cat /sys/class/net/$dev/statistics/rx_length_errors)
say trace-begin
kill -USR1 $probe
wait $probe
say trace-end
finish
"""


def build_initramfs(busybox: Path, tree: Any, mac: str, probe: bytes, o: SkbOffsets,
                    frames: int, timeout_s: int = 90) -> tuple[bytes, list[str]]:
    """The archive (busybox, the virtio-net modules, groprobe, the programs, /init)."""
    from vnetrx.lab import cpio, initramfs

    progs = programs(o)
    extra = [cpio.directory("gro"), cpio.regular("bin/groprobe", probe, 0o755)]
    extra += [cpio.regular(f"gro/{i}.bin", code) for i, (_, code) in enumerate(progs)]
    return initramfs.build(
        busybox, tree, mac, None, timeout_s, extra=extra,
        script=lambda order: init_script(order, mac, o.record_size, [tp for tp, _ in progs],
                                         frames, timeout_s))


# --- reading the guest's serial log -----------------------------------------------------------

_ZEROS = re.compile(r"z([0-9a-f]{4})")


def unpack_record(text: str, size: int) -> bytes:
    """A record line's bytes: hex, with ``zNNNN`` for NNNN (hex) zero bytes, cut trailing
    zeros restored."""
    try:
        raw = bytes.fromhex(_ZEROS.sub(lambda m: "00" * int(m.group(1), 16), text))
    except ValueError:
        raise InputError(f"a GRO record line that is not hex ({text[:40]!r}...)") from None
    if len(raw) > size:
        raise InputError(f"a GRO record of {len(raw)} bytes (the probe's are {size})")
    return raw.ljust(size, b"\0")


@dataclass
class GuestGro:
    """What one boot printed: its status lines, the decoded records, what was lost."""

    status: dict[str, str]
    records: list[dict[str, Any]]
    lost: int | None
    errors: list[str]
    complete: bool


def parse_serial(text: str, o: SkbOffsets) -> GuestGro:
    from vnetrx.live.grobpf import decode

    status: dict[str, str] = {}
    records: list[dict[str, Any]] = []
    lost = None
    window = TraceWindow()
    for key, value, _line in console_lines(text):
        if key is None or window.take(key, value):
            continue
        if key == "gro-record":
            records.append(decode(unpack_record(value, o.record_size), o))
        elif key == "gro-lost":
            lost = int(value) if value.isascii() and value.isdigit() else None
        else:
            status[key] = value
    return GuestGro(status, records, lost, window.errors, window.ended)


# --- observed: the skbs that left GRO, the polls ----------------------------------------------


@dataclass
class Observed:
    """The boot's GRO as recorded: per delivered skb a row of FIELDS (delivery order), the
    work of every poll that received something, the inputs' verdicts."""

    rows: list[dict[str, Any]]
    polls: list[int]
    budgets: list[int]
    verdicts: list[str | None]
    inputs: int


def _tcp_span(net: bytes, length: int) -> tuple[bytes, int, int] | None:
    """(flow key, first sequence number, payload bytes) of an IPv4/IPv6 TCP packet of
    ``length`` bytes from the IP header (``net``: at least its headers; an aggregate's IP
    length field is not read: tcp_gro_complete's callers rewrite it): None when it is not
    TCP."""
    if len(net) >= 40 and net[0] >> 4 == 4 and net[9] == 6:
        at = (net[0] & 0xF) * 4
        key = net[12:20] + net[at:at + 4]
    elif len(net) >= 60 and net[0] >> 4 == 6 and net[6] == 6:
        at = 40
        key = net[8:40] + net[40:44]
    else:
        return None
    if len(net) < at + 14:
        return None
    seq = int.from_bytes(net[at + 4:at + 8], "big")
    return key, seq, length - at - (net[at + 12] >> 4) * 4


def _tagged(frame: bytes) -> bool:
    """An Ethernet frame with an 802.1Q tag (TPID 0x8100)."""
    return frame[12:14] == b"\x81\x00"


def frames_of(packet: bytes, length: int, head: int | None, sent: Sequence[bytes],
              window: range) -> list[int]:
    """The frames an skb that left GRO carries: for TCP with payload, the frames of
    ``window`` (its burst) of the same flow with payload whose sequence numbers lie in the
    skb's payload (``packet``: its first bytes from the IP header, ``length`` its len);
    otherwise (not TCP, a pure ACK) the frame whose skb it is (``head``)."""
    # an 802.1Q-tagged skb (its head frame's, as vlan_gro_receive merges only frames with the
    # same tag) leaves GRO with skb->data at the tag: the TCI and the inner EtherType
    tag = 4 if head is not None and _tagged(sent[head]) else 0
    span = _tcp_span(packet[tag:], length - tag)
    if span is None or span[2] <= 0:
        return [] if head is None else [head]
    key, seq, payload = span
    key = packet[:tag] + key
    out = []
    for i in window:
        at = 18 if _tagged(sent[i]) else 14
        mine = _tcp_span(sent[i][at:], len(sent[i]) - at)
        if (mine is not None and sent[i][14:at] + mine[0] == key and mine[2] > 0
                and (mine[1] - seq) & 0xFFFFFFFF < payload):
            out.append(i)
    return out or ([] if head is None else [head])


def observe(records: Sequence[dict[str, Any]], sent: Sequence[bytes] = (),
            ranges: Sequence[tuple[str, int, int]] = ()) -> Observed:
    """``sent``: the frames in the order written (to say which each delivered skb carries, by
    sequence number, within the burst ``ranges`` of its first input)."""
    from vnetrx.live.observe_gro import split

    polls, inputs, outputs = split(records)
    rows = []
    for out in outputs:
        rec = out.rec
        row: dict[str, Any] = {name: int(rec[name]) for name in FIELDS
                               if name not in ("frag_list", "frames")}
        row["frag_list"] = len(out.members)
        row["frames"] = list(out.frames)
        head = out.head.index if out.head is not None else (out.frames[0] if out.frames
                                                             else None)
        if sent and head is not None:
            window = next((range(a, a + c) for _, a, c in ranges if a <= head < a + c),
                          range(len(sent)))
            row["frames"] = frames_of(bytes.fromhex(str(rec["packet"])), int(rec["len"]), head,
                                      sent, window)
        row["poll"] = next((i.poll for i in inputs if out.frames and i.index == out.frames[0]),
                           None)
        rows.append(row)
    work = [p for p in polls if p.work]
    return Observed(rows, [int(p.work or 0) for p in work], [int(p.budget or 0) for p in work],
                    [i.verdict for i in inputs], len(inputs))


# --- the prediction -----------------------------------------------------------------------------

Frames = Sequence[tuple[bytes, bytes]]  # (the virtio-net header written, the Ethernet frame)
Predict = Callable[[KernelProfile, str, Frames, Sequence[int], "list[str] | None"],
                   list[dict[str, Any]]]
# napi_gro_receive_exit's ret, as vnetrx.live.observe_gro names it, per GroResult
VERDICTS = {"merged": "MERGED", "merged_free": "MERGED_FREE", "held": "HELD",
            "normal": "NORMAL"}


def replay_predict(k: KernelProfile, mode: str, frames: Frames, polls: Sequence[int],
                   verdicts: list[str] | None = None, mtu: int | None = None,
                   ) -> list[dict[str, Any]]:
    """What ``vnetrx replay --from FILE.json [--mergeable] [--guest-gso] [--mtu N] --gro
    --polls N1,N2,... --jsonl`` prints for the boot's frames (``mtu``: host_mtu, big mode's): the same Stream and replay_gro the CLI
    runs (rows vnetrx.replay-gro-row/1). ``verdicts`` gets each input's gro_result, as
    napi_gro_receive_exit names it."""
    from vnetrx.codec import delivered_row
    from vnetrx.paths.gro import GroStep, read_frame
    from vnetrx.paths.virtio_net_hdr import VnetHdr
    from vnetrx.replay import RingConfig, Stream
    from vnetrx.replay.gro import replay_gro

    config = RingConfig(_device(mode, frames, mtu), polls=tuple(polls))
    # the whole frames: the TCP checksum is summed (GRO validates a CHECKSUM_NONE skb's)
    reads = {i: read_frame(frame, len(frame), whole=True) for i, (_, frame) in enumerate(frames)}
    items = [(len(frame), VnetHdr.from_bytes(hdr[:10]) if any(hdr[:10]) else None)
             for hdr, frame in frames]
    stream = Stream(k, config, iter(items), rings=False, frags=True)
    steps: list[GroStep] = []
    rows = [delivered_row(poll, d) for poll, d in replay_gro(k, config, stream.records,
                                                            reads.pop, steps=steps)]
    _verdicts(steps, verdicts)
    return rows


def _verdicts(steps: Sequence[Any], into: list[str] | None) -> None:
    """Each input's gro_result in input order (the steps come poll by poll, in order)."""
    if into is not None:
        into.extend(VERDICTS[str(step.result)]
                    for step in sorted(steps, key=lambda step: step.frame))


def _device(mode: str, frames: Frames, mtu: int | None = None) -> VirtioRxSetup:
    """The boot's device: the mode's features, ``mtu`` (host_mtu; None: not offered, 1500),
    the header its frames carry."""
    from vnetrx.paths.virtio_net import VirtioRxSetup

    mergeable, guest_gso = MODES[mode]
    return VirtioRxSetup(mergeable=mergeable, guest_gso=guest_gso, mtu=mtu or ETH_DATA_LEN,
                         hdr_len=len(frames[0][0]) if frames and frames[0][0] else 12)


def predictor(mtu: int | None = None) -> Predict:
    """replay --gro's code (every mode's: its device is the prediction's ``mode`` argument) with
    ``mtu`` (host_mtu; None: not offered, 1500)."""
    import functools

    return functools.partial(replay_predict, mtu=mtu)


def replay_args(mode: str, mtu: int | None = None) -> list[str]:
    """The device options of ``vnetrx replay`` for a mode's boot (``mtu``: host_mtu)."""
    mergeable, guest_gso = MODES[mode]
    return [*(["--mergeable"] if mergeable else []), *(["--guest-gso"] if guest_gso else []),
            *(["--mtu", str(mtu)] if mtu else [])]


def input_objects(frames: Frames) -> list[dict[str, str]]:
    """The boot's frames as ``replay --from FILE.json`` objects {"frame": HEX, "hdr": HEX}."""
    return [{"frame": frame.hex(), "hdr": hdr.hex()} for hdr, frame in frames]


# --- the comparison -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SkbCheck:
    index: int  # delivery order
    burst: str
    observed: dict[str, Any] | None
    predicted: dict[str, Any] | None
    differ: tuple[str, ...]

    @property
    def match(self) -> bool:
        return self.observed is not None and self.predicted is not None and not self.differ


@dataclass(frozen=True)
class BurstCheck:
    name: str
    first: int
    count: int
    polls: tuple[int, ...]  # the observed work of the polls that took its frames
    skbs: tuple[SkbCheck, ...]

    @property
    def match(self) -> bool:
        return bool(self.skbs) and all(s.match for s in self.skbs)


@dataclass
class GroReport:
    kernel: str
    release: str
    mode: str
    polls: list[int]
    bursts: list[BurstCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # inputs whose napi_gro_receive_exit verdict is not the model's: (input, guest, model)
    verdicts_differ: list[tuple[int, str | None, str | None]] = field(default_factory=list)
    mtu: int | None = None  # host_mtu offered (big mode); None: not offered

    @property
    def match(self) -> bool:
        return all(b.match for b in self.bursts) and not self.verdicts_differ


def verdict_differences(observed: Sequence[str | None], predicted: Sequence[str],
                        ) -> list[tuple[int, str | None, str | None]]:
    """Each input whose gro_result (napi_gro_receive_exit) differs from the model's."""
    out = []
    for i in range(max(len(observed), len(predicted))):
        o = observed[i] if i < len(observed) else None
        p = predicted[i] if i < len(predicted) else None
        if o != p:
            out.append((i, o, p))
    return out


def burst_ranges(names: Sequence[str], counts: Sequence[int]) -> list[tuple[str, int, int]]:
    out, first = [], 0
    for name, count in zip(names, counts, strict=True):
        out.append((name, first, count))
        first += count
    return out


def compare(observed: Observed, predicted: Sequence[dict[str, Any]],
            ranges: Sequence[tuple[str, int, int]]) -> list[BurstCheck]:
    """Every delivered skb, in delivery order, observed against predicted (FIELDS), grouped
    by the burst of its first frame."""
    def owner(row: dict[str, Any] | None) -> str:
        if row is None or not row["frames"]:
            return "?"
        first = row["frames"][0]
        return next((n for n, a, c in ranges if a <= first < a + c), "?")

    # aligned burst by burst (a burst whose skbs differ in number does not shift the next)
    mine: dict[str, list[dict[str, Any]]] = {}
    theirs: dict[str, list[dict[str, Any]]] = {}
    for row in observed.rows:
        theirs.setdefault(owner(row), []).append(row)
    for row in predicted:
        mine.setdefault(owner(row), []).append(
            {**{f: row[f] for f in FIELDS if f != "frag_list"},
             "frag_list": row["frag_list"]["count"], "poll": row["poll"]})
    checks: list[SkbCheck] = []
    for name in [n for n, _, _ in ranges] + ["?"]:
        obs, pre = theirs.get(name, []), mine.get(name, [])
        for i in range(max(len(obs), len(pre))):
            o = obs[i] if i < len(obs) else None
            p = pre[i] if i < len(pre) else None
            differ = () if o is None or p is None else tuple(f for f in FIELDS if o[f] != p[f])
            checks.append(SkbCheck(len(checks), name, o, p, differ))
    # the polls each burst's frames were received in
    poll_of: list[int] = []
    for n, size in enumerate(observed.polls):
        poll_of += [n] * size
    out = []
    for name, first, count in ranges:
        taken = sorted({poll_of[j] for j in range(first, first + count) if j < len(poll_of)})
        out.append(BurstCheck(name, first, count, tuple(observed.polls[n] for n in taken),
                              tuple(c for c in checks if c.burst == name)))
    stray = [c for c in checks if c.burst == "?"]
    if stray:
        out.append(BurstCheck("?", 0, 0, (), tuple(stray)))
    return out


def report_to_dict(r: GroReport) -> dict[str, Any]:
    return {
        "schema": SCHEMA, "kernel": r.kernel, "release": r.release, "mode": r.mode,
        "mtu": r.mtu, "polls": r.polls, "match": r.match, "notes": r.notes,
        "verdicts_differ": [{"input": i, "observed": o, "predicted": p}
                            for i, o, p in r.verdicts_differ],
        "bursts": [{"name": b.name, "first": b.first, "count": b.count, "polls": list(b.polls),
                    "match": b.match,
                    "skbs": [{"index": s.index, "match": s.match, "differ": list(s.differ),
                              "observed": s.observed, "predicted": s.predicted}
                             for s in b.skbs]}
                   for b in r.bursts],
    }


# --- one boot -----------------------------------------------------------------------------------


@dataclass
class GroRun:
    report: GroReport
    observed: Observed
    guest: GuestGro
    frames: list[tuple[bytes, bytes]]  # what the backend wrote: (its header, the frame)
    bursts: tuple[Burst, ...]
    boot_s: float
    total_s: float
    serial: str
    backend_log: tuple[str, ...] = ()  # the vhost-user requests QEMU sent, in order


def run_gro(image: Path, mode: str, *, modules: Path | None = None, accel: str = "tcg",
            timeout_s: float = 120.0, on_stage: Callable[[str], None] | None = None,
            predict: Predict | None = None, mtu: int | None = None) -> GroRun:
    """Boot ``image`` once in ``mode`` (big mode: with host_mtu ``mtu``, default BIG_MTU),
    send every burst of ``bursts_for(mode, mtu)`` (and the sentinel), and compare every skb
    that left GRO with ``predict``."""
    from vnetrx.kernel.registry import lookup
    from vnetrx.lab import qemu
    from vnetrx.lab import run as lab_run
    from vnetrx.lab.initramfs import ModuleTree
    from vnetrx.lab.xdp_probe import build_static
    from vnetrx.observed.guest_log import guest_version

    stage = on_stage or (lambda _text: None)
    mtu = check_mtu(mode, mtu)
    bursts = bursts_for(mode, mtu)
    if not image.is_file():
        raise LabSetupError(f"kernel image {image} not found")
    release = lab_run.image_release(image)
    stage(f"reading the struct sk_buff offsets of Linux {release}")
    o = guest_offsets(image)
    stage("building the GRO probe")
    probe = build_static("groprobe", probe_source(), "--gro builds a small static program")
    sent = [w for b in bursts for w in b.writes()]
    tree = ModuleTree.scan(lab_run.find_modules(image, modules))
    archive, _order = build_initramfs(lab_run.find_busybox(), tree, qemu.GUEST_MAC, probe, o,
                                      len(sent) + 1, int(timeout_s))
    mergeable, guest_gso = MODES[mode]
    boot = qemu.Boot(image, mergeable=mergeable, mtu=mtu, accel=accel,
                     ready_timeout_s=timeout_s, finish_timeout_s=timeout_s * 3,
                     backend="vhost-user", guest_gso=guest_gso)
    stage(f"booting Linux {release} under QEMU ({accel}) and sending {len(bursts)} bursts")
    result = qemu.run(boot, archive, [], bursts=[b.writes() for b in bursts],
                      burst_gap_s=BURST_GAP_S)
    guest = parse_serial(result.serial, o)
    if guest.errors:
        raise qemu.GuestError("the guest reported: " + "; ".join(guest.errors))
    if not guest.complete:
        raise qemu.GuestError("the guest powered off without dumping its records")
    written = list(result.backend_written)
    if len(written) != len(sent) + 1 or any(h is None for h in written):
        raise qemu.GuestError(f"the backend wrote {sum(h is not None for h in written)} of "
                              f"{len(sent) + 1} frames (a frame larger than its chain?)")
    frames = [(h or b"", f) for h, (_, f) in zip(written, [*sent, sentinel()], strict=True)]
    stage("comparing what left GRO in the guest with the model")
    ranges = burst_ranges([b.name for b in bursts] + ["sentinel"],
                          [len(b.writes()) for b in bursts] + [1])
    observed = observe(guest.records, [f for _, f in frames], ranges)
    profile = lookup(guest_version(guest.status, guest.status.get("release", release)))
    report = GroReport(profile.name, guest.status.get("release", release), mode,
                       observed.polls, mtu=mtu)
    if mtu is not None and guest.status.get("mtu") != str(mtu):
        raise qemu.GuestError(f"the guest's device has MTU {guest.status.get('mtu')}, not the "
                              f"host_mtu {mtu} offered (VIRTIO_NET_F_MTU not negotiated?)")
    if mtu is not None and not any(line.endswith(f"NET_SET_MTU {mtu}")
                                   for line in result.backend_log):
        report.notes.append(f"QEMU never sent VHOST_USER_NET_SET_MTU {mtu} to the backend")
    if guest.lost:
        report.notes.append(f"the probe's queue refused {guest.lost} records: incomplete")
    if observed.inputs != len(frames):
        report.notes.append(f"{observed.inputs} skbs entered GRO for {len(frames)} frames")
    if sum(observed.polls) != len(frames):
        report.notes.append(f"the polls received {sum(observed.polls)} frames, not "
                            f"{len(frames)}: not replayed")
    else:
        verdicts: list[str] = []
        predicted = (predict or predictor(mtu))(profile, mode, frames, observed.polls,
                                                      verdicts)
        report.bursts = compare(observed, predicted, ranges)
        wrong = verdict_differences(observed.verdicts, verdicts)
        if wrong:
            report.verdicts_differ = wrong
        split = [b.name for b in report.bursts if len(b.polls) > 1]
        if split:
            report.notes.append("bursts the guest took in more than one poll (replayed with "
                                "the observed polls): " + ", ".join(split))
    return GroRun(report, observed, guest, frames, bursts, result.boot_s, result.total_s,
                  result.serial, result.backend_log)


# --- the recorded boots as test data (tests/data/gro/guest-linux-*.json) -----------------------

DATA_SCHEMA = "vnetrx.lab-gro-data/1"
_STATUS_KEPT = ("release", "version", "features", "mtu", "gro_normal_batch",
                "gro_flush_timeout", "napi_defer_hard_irqs", "mergeable_rx_buffer_size",
                "rx_packets", "rx_dropped", "rx_length_errors",
                *(f"count-{e}" for e in COUNTED))


def frames_digest(frames: Frames) -> str:
    import hashlib

    return hashlib.sha256(b"".join(h + f for h, f in frames)).hexdigest()


def run_to_data(run: GroRun) -> dict[str, Any]:
    """One boot as test data: the bursts (their descriptions: the frames are rebuilt from
    them), the header written before each frame, the observed polls and every skb that left
    GRO (no prediction: the test makes it)."""
    return {
        "schema": DATA_SCHEMA,
        "made_by": "vnetrx lab virtio --gro (vnetrx.lab.gro.run_gro): one boot under QEMU "
                   "(TCG), vnetrx's vhost-user backend, BPF on napi_gro_receive_entry/exit, "
                   "netif_receive_skb and napi_poll in the guest",
        "kernel": run.report.kernel,
        "mode": run.report.mode,
        "mtu": run.report.mtu,
        "guest": {key: run.guest.status.get(key) for key in _STATUS_KEPT},
        "lost": run.guest.lost,
        "bursts": [{"name": b.name, "spec": b.spec} for b in run.bursts],
        "frames_sha256": frames_digest(run.frames),
        "headers": [h.hex() for h, _ in run.frames],
        "polls": run.observed.polls,
        "budgets": run.observed.budgets,
        "verdicts": run.observed.verdicts,
        "delivered": run.observed.rows,
    }


def data_frames(doc: dict[str, Any]) -> tuple[list[tuple[bytes, bytes]], list[tuple[str, int, int]]]:
    """The boot's frames (rebuilt from the burst descriptions, behind the headers written)
    and the burst ranges; ValueError when they are not the bytes the data file recorded."""
    bursts = [Burst(b["name"], b["spec"]) for b in doc["bursts"]]
    sent = [w for b in bursts for w in b.writes()] + [sentinel()]
    headers = [bytes.fromhex(h) for h in doc["headers"]]
    if len(headers) != len(sent):
        raise ValueError(f"{len(headers)} headers for {len(sent)} frames")
    frames = [(h, f) for h, (_, f) in zip(headers, sent, strict=True)]
    if frames_digest(frames) != doc["frames_sha256"]:
        raise ValueError("the rebuilt frames are not the ones recorded")
    ranges = burst_ranges([b.name for b in bursts] + ["sentinel"],
                          [len(b.writes()) for b in bursts] + [1])
    return frames, ranges


def data_observed(doc: dict[str, Any]) -> Observed:
    return Observed(list(doc["delivered"]), list(doc["polls"]), list(doc["budgets"]),
                    list(doc["verdicts"]), len(doc["headers"]))
