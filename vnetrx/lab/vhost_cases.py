"""The cases ``vnetrx lab vhost`` runs in the guest against the kernel's own vhost-net, and the
case file its static probe (data/vhostprobe.c) reads. Pure: no I/O.

TX (a guest's frames → vhost → the host's tap): frames of chosen lengths behind chosen
virtio_net_hdrs on the tx ring, with the tap's default sk_sndbuf (INT_MAX: vhost batches them
into tun_sendmsg(TUN_MSG_PTR)) and with a finite TUNSETSNDBUF (every frame through
tun_get_user). RX (the host's tap → vhost → the guest's ring): frames sent on the tap from an
AF_PACKET socket with PACKET_VNET_HDR, into buffers the probe posted (mergeable or not)."""

from __future__ import annotations

from dataclasses import dataclass

from vnetrx.packet import GSO_TYPES, build_frame, headers_of, offload_header
from vnetrx.paths.virtio_net_hdr import DATA_VALID, NEEDS_CSUM, VnetHdr

NO_HDR = VnetHdr(0, 0, 0, 0, 0, 0)
TEST_ETHERTYPE = 0x88B5  # IEEE 802 local experimental: the stack has no handler for it
FINITE_SNDBUF = 1 << 20  # any value but INT_MAX stops vhost's batching (sock_can_batch)
# TUNSETOFFLOAD flags (include/uapi/linux/if_tun.h) QEMU sets for a guest that offers csum and
# TSO: the tap then transmits GSO and CHECKSUM_PARTIAL skbs to vhost unsegmented.
TUN_F_CSUM, TUN_F_TSO4, TUN_F_TSO6, TUN_F_TSO_ECN = 0x01, 0x02, 0x04, 0x08
TAP_OFFLOADS = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN
# What the probe negotiates with VHOST_SET_FEATURES for an rx case; its header size
FEATURES = {"mrg": 12, "v1": 12, "legacy": 10}
# vnetrx replay --path vhost-rx's mode for each: mergeable buffers, or one chain per packet
REPLAY_MODE = {"mrg": "mergeable", "v1": "neither", "legacy": "neither"}
MAX_FRAMES = 128  # the probe's limit per case


@dataclass(frozen=True)
class Frame:
    """One frame with the virtio_net_hdr in front of it. ``l4``: "tcp4" … for a frame with real
    headers (packet.build_frame), None for a raw Ethernet frame of EtherType 0x88B5."""

    length: int
    l4: str | None = None
    hdr: VnetHdr = NO_HDR

    def data(self, seq: int = 0) -> bytes:
        if self.l4 is not None:
            return build_frame(self.length, self.l4)
        head = bytes.fromhex("525400123456" "020000000001") + TEST_ETHERTYPE.to_bytes(2, "big")
        body = seq.to_bytes(4, "big") + bytes((i * 7 + seq) & 0xFF for i in range(self.length))
        return (head + body)[: self.length]

    def hdr_hex(self, size: int = 10) -> str:
        return self.hdr.to_bytes(size).hex()

    def to_dict(self) -> dict[str, object]:
        return {"len": self.length, "l4": self.l4, "hdr": self.hdr_hex()}


@dataclass(frozen=True)
class TxCase:
    name: str
    frames: tuple[Frame, ...]
    sndbuf: int | None = None  # None: the tap's default, INT_MAX
    what: str = ""
    xdp: bool = False  # an XDP_PASS program on the tap (vhost adds XDP_PACKET_HEADROOM)
    offset: int = 0  # where each chain starts in its page of the probe's memory


@dataclass(frozen=True)
class RxCase:
    name: str
    frames: tuple[Frame, ...]
    features: str  # "mrg" | "v1" | "legacy"
    buf_len: int
    nbufs: int
    tap_offload: bool = True  # TUNSETOFFLOAD csum + TSO4/6 + ECN, as QEMU sets for such a guest
    what: str = ""
    late: bool = False  # the frames wait in the tap's ring until the buffers are posted

    @property
    def hdr_size(self) -> int:
        return FEATURES[self.features]


def _gso(length: int, l4: str, gso: str, csum: str = "partial") -> Frame:
    name, size = gso.split(":")
    return Frame(length, l4, offload_header(headers_of(l4), csum, (GSO_TYPES[name], int(size))))


def _csum(length: int, l4: str = "tcp4", csum: str = "partial") -> Frame:
    return Frame(length, l4, offload_header(headers_of(l4), csum, None))


TX_LENGTHS = (0, 13, 14, 60, 1000, 1514, 3636, 3637, 4000, 9000)
TX_SNDBUF_LENGTHS = (14, 1000, 1514, 3636, 3637, 9000)
TX_XDP_LENGTHS = (1000, 1514, 3380, 3381)  # 3380: the last batched frame with tun XDP (sheet)


def tx_cases() -> tuple[TxCase, ...]:
    """Lengths around vhost_net_build_xdp's 4096-byte limit (3636 is the last batched frame by
    the reference sheet), the same with a finite sndbuf, offload headers, refused headers, an
    XDP_PASS program on the tap (3380 the last batched frame by the sheet), and two bursts (one
    kick, several chains)."""
    gso = _gso(3000, "tcp4", "tcpv4:1448")
    bad: list[tuple[str, Frame, str]] = [
        ("bad-gsotype-3000", Frame(3000, "tcp4", gso.hdr._replace(gso_type=7)),
         "unknown gso_type 7"),
        ("bad-gsosize0-3000", Frame(3000, "tcp4", gso.hdr._replace(gso_size=0)), "gso_size 0"),
        ("bad-hdrlen-1000", Frame(1000, "tcp4", VnetHdr(0, 0, 2000, 0, 0, 0)),
         "hdr_len 2000 > len, no NEEDS_CSUM"),
        ("bad-csum-100", Frame(100, "tcp4", VnetHdr(NEEDS_CSUM, 0, 0, 0, 1000, 16)),
         "NEEDS_CSUM, csum_start + csum_offset + 2 > len"),
    ]
    cases = [TxCase(f"tx-{n}", (Frame(n),), None, "raw frame") for n in TX_LENGTHS]
    cases += [TxCase(f"tx-sndbuf-{n}", (Frame(n),), FINITE_SNDBUF, "raw frame, finite sndbuf")
              for n in TX_SNDBUF_LENGTHS]
    cases += [
        TxCase("tx-csum-1000", (_csum(1000),), None, "TCPv4 NEEDS_CSUM"),
        TxCase("tx-sndbuf-csum-1000", (_csum(1000),), FINITE_SNDBUF, "TCPv4 NEEDS_CSUM"),
        TxCase("tx-valid-1000", (Frame(1000, "tcp4", VnetHdr(DATA_VALID, 0, 0, 0, 0, 0)),),
               None, "TCPv4 DATA_VALID"),
        TxCase("tx-gso-3000", (gso,), None, "TCPv4 GSO 1448"),
        TxCase("tx-sndbuf-gso-3000", (gso,), FINITE_SNDBUF, "TCPv4 GSO 1448"),
        TxCase("tx-gso-9014", (_gso(9014, "tcp4", "tcpv4:1448"),), None, "TCPv4 GSO 1448"),
    ]
    for name, frame, what in bad:
        cases.append(TxCase(f"tx-{name}", (frame,), None, what))
        cases.append(TxCase(f"tx-sndbuf-{name}", (frame,), FINITE_SNDBUF, what))
    cases += [TxCase(f"tx-xdp-{n}", (Frame(n),), None, "raw frame, XDP_PASS on the tap", True)
              for n in TX_XDP_LENGTHS]
    cases.append(TxCase("tx-xdp-gso-3000", (gso,), None, "TCPv4 GSO, XDP_PASS on the tap", True))
    cases += [
        TxCase("tx-burst-1000x3", (Frame(1000),) * 3, None, "three chains, one kick"),
        TxCase("tx-burst-1000x100", (Frame(1000),) * 100, None,
               "100 chains, one kick: VHOST_NET_BATCH is 64"),
        TxCase("tx-burst-1000-4000-1000", (Frame(1000), Frame(4000), Frame(1000)), None,
               "a frame over the buffer between two batched ones"),
    ]
    return tuple(cases)


def rx_cases() -> tuple[RxCase, ...]:
    """Mergeable 1536-byte buffers (frames, a CHECKSUM_PARTIAL skb, GSO skbs of 9014 and 65000
    bytes), the same without tap offloads (the stack checksums and segments), small mergeable
    buffers, and one-chain-per-packet buffers where a frame that does not fit is discarded."""
    gso9014 = _gso(9014, "tcp4", "tcpv4:1448")
    return (
        RxCase("rx-mrg-1536", (Frame(60), Frame(1000), Frame(1514), _csum(1000),
                               _csum(1002, "udp4"), gso9014,
                               _gso(65000, "tcp4", "tcpv4:1448")),
               "mrg", 1536, 64, True, "mergeable 1536-byte buffers, tap offloads on"),
        RxCase("rx-mrg-1536-nooffload", (_csum(1000), gso9014), "mrg", 1536, 64, False,
               "no tap offloads: the checksum and the segmentation happen before the tap"),
        RxCase("rx-mrg-1536-burst", tuple(Frame(60 + i) for i in range(64)), "mrg", 1536, 64,
               True, "64 frames sent one by one as the buffers wait: the used-ring updates"),
        RxCase("rx-mrg-1536-queued-64", tuple(Frame(60 + i) for i in range(64)), "mrg", 1536,
               64, True, "64 frames queued on the tap before the buffers come", late=True),
        RxCase("rx-mrg-1536-queued-100", tuple(Frame(60 + i) for i in range(100)), "mrg", 1536,
               128, True, "100 frames queued on the tap before the buffers come", late=True),
        RxCase("rx-mrg-256", (Frame(60), Frame(244), Frame(245), Frame(1514)), "mrg", 256, 32,
               True, "mergeable 256-byte buffers"),
        RxCase("rx-v1-1024", (Frame(60), Frame(1012), Frame(1013), Frame(1514), Frame(100)),
               "v1", 1024, 16, True, "VERSION_1 without MRG_RXBUF: one buffer per packet"),
        RxCase("rx-legacy-1024", (Frame(1014), Frame(1015), Frame(100)), "legacy", 1024, 16,
               True, "neither: a 10-byte header, one buffer per packet"),
        RxCase("rx-v1-65562", (_csum(1000), gso9014, _gso(65000, "tcp4", "tcpv4:1448")),
               "v1", 65562, 4, True, "one 65562-byte buffer per packet"),
    )


ZCOPY_LENGTHS = (60, 243, 244, 245, 1000, 1514, 3636, 4000, 9000, 65000)
ZCOPY_OFFSET = 3900  # a chain that starts 196 bytes before its page ends


def zcopy_tx_cases() -> tuple[TxCase, ...]:
    """The cases of a boot whose vhost_net was loaded with experimental_zcopytx=1: chains of
    VHOST_GOODCOPY_LEN (256) - 1, 256 and 257 bytes with the 12-byte header (frames of 243, 244
    and 245 bytes), longer ones pinned as frags from their page offset 140 (header 12 + the
    128 bytes tun_get_user copies) or from 3900 + 140, a NEEDS_CSUM and a GSO header (their
    hdr_len is what tun_get_user copies), a finite sndbuf (zerocopy does not care) and bursts
    mixing copied and pinned frames (the used ring's order)."""
    cases = [TxCase(f"zc-{n}", (Frame(n),), None, "raw frame, zerocopy module")
             for n in ZCOPY_LENGTHS]
    cases += [TxCase(f"zc-off{ZCOPY_OFFSET}-{n}", (Frame(n),), None,
                     f"raw frame at page offset {ZCOPY_OFFSET}", offset=ZCOPY_OFFSET)
              for n in (244, 1000, 9000)]
    cases += [
        TxCase("zc-csum-1000", (_csum(1000),), None, "TCPv4 NEEDS_CSUM: hdr_len 52 copied"),
        TxCase("zc-gso-3000", (_gso(3000, "tcp4", "tcpv4:1448"),), None,
               "TCPv4 GSO 1448: hdr_len 54 copied"),
        TxCase("zc-sndbuf-1000", (Frame(1000),), FINITE_SNDBUF, "raw frame, finite sndbuf"),
        TxCase("zc-burst-1000x3", (Frame(1000),) * 3, None, "three pinned chains, one kick"),
        TxCase("zc-burst-100-1000-100", (Frame(100), Frame(1000), Frame(100)), None,
               "copied, pinned, copied: one kick"),
    ]
    return tuple(cases)


def uses_xdp(txs: tuple[TxCase, ...]) -> bool:
    return any(tx.xdp for tx in txs)


def case_file(txs: tuple[TxCase, ...], rxs: tuple[RxCase, ...]) -> str:
    """The probe's input (see data/vhostprobe.c)."""
    lines: list[str] = []
    for tx in txs:
        lines.append(f"tx {tx.name} {tx.sndbuf or 0} - {'pass' if tx.xdp else '-'}"
                     + (f" {tx.offset}" if tx.offset else ""))
        lines += [f"f {f.hdr_hex(12)} {f.data(i).hex() or '-'}" for i, f in enumerate(tx.frames)]
        lines.append("end")
    for rx in rxs:
        offload = f"{TAP_OFFLOADS:x}" if rx.tap_offload else "-"
        lines.append(f"rx {rx.name} {rx.features} {rx.buf_len} {rx.nbufs} {offload} "
                     f"{'late' if rx.late else '-'}")
        lines += [f"f {f.hdr_hex(10)} {f.data(i).hex()}" for i, f in enumerate(rx.frames)]
        lines.append("end")
    return "\n".join(lines) + "\n"
