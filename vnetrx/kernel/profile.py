"""A kernel profile: one version plus one build configuration, and the constants derived from them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vnetrx.kernel.build import BuildConfig
from vnetrx.kernel.changes import CHANGES, MAX_SKB_FRAGS_CONFIGURABLE, Change
from vnetrx.kernel.constants import CONSTANTS, Constant
from vnetrx.kernel.version import KernelVersion

_DEFAULT_BUILD = BuildConfig()


def align(x: int, a: int) -> int:
    """Round ``x`` up to a multiple of ``a`` (the kernel's ALIGN())."""
    return (x + a - 1) // a * a


class KernelProfile:
    """Which upstream code runs (``version``) on which build (``build``). Immutable; equal and
    hashed by its four fields (what it derives from them is computed once, here).

    A plain class, not a frozen dataclass: making a dataclass costs ~1 ms at import and the
    dataclasses module another ~1.2 ms, on every command's start-up (issue 15)."""

    __slots__ = ("_changes", "_hash", "_name", "_present", "_values", "build", "notes",
                 "source", "version")
    version: KernelVersion
    build: BuildConfig
    source: str  # how the profile was chosen, e.g. "uname -r: 6.18.44-fc-v782"
    notes: tuple[str, ...]  # what resolving the version left uncertain
    # derived once, by __init__
    _present: frozenset[str]
    _changes: tuple[Change, ...]
    _name: str
    _values: dict[str, int]
    _hash: int

    def __init__(self, version: KernelVersion, build: BuildConfig = _DEFAULT_BUILD,
                 source: str = "", notes: tuple[str, ...] = ()) -> None:
        init = object.__setattr__
        init(self, "version", version)
        init(self, "source", source)
        init(self, "notes", notes)
        init(self, "build", build)
        present = frozenset(c.key for c in CHANGES if self._carries(c))
        init(self, "_present", present)  # has() is then a set lookup
        init(self, "_changes", tuple(c for c in CHANGES if c.key in present))  # table order
        init(self, "_name", str(version))
        init(self, "_values", {c.name: self._value_of(c) for c in CONSTANTS})  # value(): a lookup
        if build.max_skb_frags == 0:  # resolve "the kernel's default" once, here
            init(self, "build", build._replace(max_skb_frags=self.default_max_skb_frags()))
        # a profile keys every per-kernel cache (ring_config, layouts, ...): hash it once
        init(self, "_hash", hash(self._key()))

    def _key(self) -> tuple[KernelVersion, BuildConfig, str, tuple[str, ...]]:
        return (self.version, self.build, self.source, self.notes)

    if not TYPE_CHECKING:  # hidden from mypy, which would then accept any attribute's name

        def __setattr__(self, name: str, value: object) -> None:
            raise AttributeError(f"cannot assign to field {name!r}: a KernelProfile is immutable")

        def __delattr__(self, name: str) -> None:
            raise AttributeError(f"cannot delete field {name!r}: a KernelProfile is immutable")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, KernelProfile)
        return self._key() == other._key()

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return (f"KernelProfile(version={self.version!r}, build={self.build!r}, "
                f"source={self.source!r}, notes={self.notes!r})")

    def default_max_skb_frags(self) -> int:
        """MAX_SKB_FRAGS when .config does not say: include/linux/skbuff.h."""
        if self.has(MAX_SKB_FRAGS_CONFIGURABLE):
            return 17  # CONFIG_MAX_SKB_FRAGS default (net/Kconfig: range 17..45)
        return max(16, 65536 // self.build.page_size + 1)

    @property
    def name(self) -> str:
        return self._name

    def has(self, change: Change) -> bool:
        """Does this kernel carry ``change`` (mainline since/until, or a known stable backport)?"""
        return change.key in self._present

    def _carries(self, change: Change) -> bool:
        ver = self.version.key()
        exact = False  # this series' history was read release by release
        for first, end in change.windows():
            if first.series == self.version.series:
                if ver >= first.key() and (end is None or ver < end.key()):
                    return True
                exact = exact or (first, end) in change.stable
        if exact or change.since is None:
            return False
        if change.until is not None and ver >= change.until.key():
            return False
        return ver >= change.since.key()

    def value(self, constant: Constant) -> int:
        """The value ``constant`` has in this kernel (vnetrx.kernel.constants)."""
        return self._values[constant.name]

    def _value_of(self, constant: Constant) -> int:
        value = constant.default
        for since, later in constant.since:
            if isinstance(since, Change):
                if since.key in self._present:
                    value = later
            elif self.version.key() >= since.key():
                value = later
        return value

    def present(self, *changes: Change) -> tuple[Change, ...]:
        """The subset of ``changes`` this kernel carries (for a step's ``because``)."""
        return tuple(c for c in changes if self.has(c))

    def changes(self) -> tuple[Change, ...]:
        return self._changes

    @property
    def change_keys(self) -> frozenset[str]:
        """The keys of ``changes()``."""
        return self._present

    # --- constants every path uses (include/linux/skbuff.h, include/linux/cache.h) ---------
    @property
    def smp_cache_bytes(self) -> int:
        """SMP_CACHE_BYTES, which defaults to L1_CACHE_BYTES."""
        return self.build.l1_cache_bytes

    @property
    def net_skb_pad(self) -> int:
        """NET_SKB_PAD = max(32, L1_CACHE_BYTES)."""
        return max(32, self.build.l1_cache_bytes)

    def skb_data_align(self, x: int) -> int:
        """SKB_DATA_ALIGN(X) = ALIGN(X, SMP_CACHE_BYTES)."""
        return align(x, self.smp_cache_bytes)

    @property
    def sk_buff_aligned(self) -> int:
        """SKB_DATA_ALIGN(sizeof(struct sk_buff)): the sk_buff's share of every truesize."""
        return self.skb_data_align(self.build.sk_buff_size)
