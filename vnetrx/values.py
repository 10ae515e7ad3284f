"""``Value``: equality and hash by value for the plain immutable classes a replay or a sweep
makes per frame (``PostedBuffer``, ``Posted``, ``Frame``, ``Plan``, ``SkbHead``, ``Row``:
classes, not records, because mypyc compiles them to native classes, which are made far
faster; README's "Records" says where each idiom is used, benchmarks/ measures them). Each
names its fields once more in ``_values()``; two values are equal when they are of the same
class and those are equal."""

from __future__ import annotations

from typing import ClassVar, TypeVar

_V = TypeVar("_V", bound="Value")


class Value:
    __slots__ = ()
    # the fields' names in _values()'s order, for the repr (a compiled class has no __slots__
    # to read them from); a class may write its own __repr__ instead
    _names: ClassVar[tuple[str, ...]] = ()

    def _values(self) -> tuple[object, ...]:
        raise NotImplementedError

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}"
                           for name, value in zip(self._names, self._values(), strict=True))
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Value)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def _replace(self: _V, **changes: object) -> _V:
        """A copy with ``changes`` (as a record's _replace; ``__init__`` takes the fields in
        ``_names``' order)."""
        values = dict(zip(self._names, self._values(), strict=True))
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(unknown)}")
        values.update(changes)
        return type(self)(*values.values())
