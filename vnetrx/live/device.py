"""What a network device negotiated, read from this machine into a ``DeviceInfo``
(vnetrx.observed.negotiated): its driver, MTU, virtio feature bits and
``mergeable_rx_buffer_size``. Reads only (sysfs and two read-only ioctls).

Sysfs shows the devices of the network namespace it was mounted in, while ioctls on a socket see
the caller's namespace; so for the running system (``root == ""``) the device's existence, driver
(ETHTOOL_GDRVINFO, the driver's own ``get_drvinfo``) and MTU come from ioctls, and only the virtio
attributes come from sysfs (``/sys/class/net/NAME/device/features`` is the virtio device's
``features`` file, the one under ``/sys/bus/virtio/devices/virtioN/``). A non-empty ``root``
prefixes every path and reads everything from that tree (tests use a fake one).
"""

from __future__ import annotations

import array
import fcntl
import os
import socket
import struct
from pathlib import Path

from vnetrx.errors import VnetrxError
from vnetrx.observed.negotiated import DeviceInfo

# include/uapi/linux/sockios.h, ethtool.h
SIOCGIFINDEX = 0x8933
SIOCGIFMTU = 0x8921
SIOCETHTOOL = 0x8946
ETHTOOL_GDRVINFO = 0x00000003
IFNAMSIZ = 16
_DRVINFO_SIZE = 196  # struct ethtool_drvinfo: cmd, driver[32], version[32], fw[32], bus[32], …


def check_name(name: str) -> None:
    if (
        not name
        or len(name) >= IFNAMSIZ
        or "/" in name
        or name in (".", "..")
        or name != name.strip()
    ):
        raise VnetrxError(f"{name!r} is not a network device name")


def read_device(name: str, root: str = "") -> DeviceInfo:
    """The device's driver, MTU and (virtio) negotiated features. Raises VnetrxError when the
    device does not exist here or its driver cannot be read."""
    check_name(name)
    if root:
        return _from_sysfs(name, root)
    ifindex = _ifindex(name)
    driver = _ethtool_driver(name)
    mtu = _ioctl_int(name, SIOCGIFMTU)
    if driver is None:
        raise VnetrxError(
            f"{name} reports no driver (ETHTOOL_GDRVINFO failed): observe models virtio_net "
            "and tun/tap devices only"
        )
    sys_dir = Path(f"/sys/class/net/{name}")
    if driver != "virtio_net" or not _same_device(sys_dir, ifindex):
        return DeviceInfo(name, driver, mtu, ifindex=ifindex)
    bits, buf = _virtio_attrs(sys_dir)
    return DeviceInfo(name, driver, mtu, bits, buf, ifindex)


def _from_sysfs(name: str, root: str) -> DeviceInfo:
    sys_dir = Path(f"{root}/sys/class/net/{name}")
    if not sys_dir.is_dir():
        raise VnetrxError(f"no network device {name} (no {sys_dir})")
    driver_link = sys_dir / "device" / "driver"
    if driver_link.exists():
        driver = os.path.basename(os.path.realpath(driver_link))
    elif (sys_dir / "tun_flags").exists():
        driver = "tun"
    else:
        raise VnetrxError(f"cannot read the driver of {name} (no {driver_link})")
    mtu_text = _read(sys_dir / "mtu")
    if mtu_text is None or not mtu_text.isdigit():
        raise VnetrxError(f"cannot read the MTU of {name} ({sys_dir / 'mtu'})")
    bits, buf = _virtio_attrs(sys_dir) if driver == "virtio_net" else (None, None)
    index = _read(sys_dir / "ifindex")
    return DeviceInfo(
        name, driver, int(mtu_text), bits, buf, int(index) if index and index.isdigit() else None
    )


def _virtio_attrs(sys_dir: Path) -> tuple[str | None, int | None]:
    bits = _read(sys_dir / "device" / "features")
    buf = _read(sys_dir / "queues" / "rx-0" / "virtio_net" / "mergeable_rx_buffer_size")
    return bits or None, int(buf) if buf and buf.isdigit() else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _same_device(sys_dir: Path, ifindex: int) -> bool:
    """Sysfs shows the namespace it was mounted in: trust it only for the same ifindex."""
    return _read(sys_dir / "ifindex") == str(ifindex)


def _ifreq(name: str, value: int = 0) -> bytes:
    return struct.pack("16si20x", name.encode(), value)


def _ifindex(name: str) -> int:
    try:
        return _ioctl_int(name, SIOCGIFINDEX)
    except VnetrxError:
        raise VnetrxError(f"no network device {name} in this network namespace") from None


def _ioctl_int(name: str, request: int) -> int:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            out = fcntl.ioctl(sock, request, _ifreq(name))
    except OSError as exc:
        raise VnetrxError(f"{name}: {exc.strerror}") from None
    value: int = struct.unpack("16si20x", out)[1]
    return value


def _ethtool_driver(name: str) -> str | None:
    """ETHTOOL_GDRVINFO's driver name ("virtio_net", "tun"), or None."""
    info = array.array("B", struct.pack("I", ETHTOOL_GDRVINFO) + bytes(_DRVINFO_SIZE - 4))
    address, _ = info.buffer_info()
    ifr = struct.pack("16sP", name.encode(), address)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            fcntl.ioctl(sock, SIOCETHTOOL, ifr + bytes(40 - len(ifr)))
    except OSError:
        return None
    driver = info.tobytes()[4:36].split(b"\0", 1)[0].decode(errors="replace")
    return driver or None
