"""``NamedTuple`` for vnetrx's records: typing's class syntax, made cheaply at import time.

Every record (``Skb``, ``Trace``, ``VnetHdr``, ``Plan``...) is declared as ``class X(NamedTuple)``
and the type checker sees exactly ``typing.NamedTuple``. At run time this module's
``NamedTuple`` builds the class instead, because typing's way is slow at import: it compiles
every string annotation into a ``ForwardRef`` (``from __future__ import annotations`` makes
them all strings) and ``collections.namedtuple`` compiles a ``__new__`` for each class with
``eval``; ``vnetrx trace --json`` makes dozens of records at start-up, and its start-up is
measured against pahole's (benchmarks/startup.py).

The class made here is what ``collections.namedtuple`` makes — a tuple subclass with empty
``__slots__``, ``_fields``, ``_field_defaults``, ``__match_args__``, C field getters, ``_make``,
``_replace``, ``_asdict``, ``__getnewargs__``, the same ``repr`` and the same errors — with
two differences: the annotations stay the strings the class body wrote (``typing.get_type_hints``
reads them alike), and the generic methods live once in ``Record``, its base, instead of being
made for every class. Its ``__new__`` is the same two-line function as namedtuple's (so records
are made as fast), compiled once per number of fields and renamed for each class.
``tests/test_records.py`` compares every record class of vnetrx with the class typing would
make from the same body.
"""

from __future__ import annotations

import collections
import sys
from keyword import iskeyword
from operator import itemgetter
from types import CodeType, FunctionType
from typing import TYPE_CHECKING, Any, ClassVar

__all__ = ["NamedTuple", "Record"]

# collections' C field getter (CPython); the same property namedtuple falls back to otherwise.
_tuplegetter: Any = getattr(collections, "_tuplegetter", None) or (
    lambda index, doc: property(itemgetter(index), doc=doc))

_tuple_new = tuple.__new__
_NEW_GLOBALS: dict[str, Any] = {"_tuple_new": _tuple_new, "__builtins__": {}}
_NEW_CODE: dict[int, CodeType] = {}  # number of fields → __new__'s code, placeholder names
# What typing refuses to let a class body define, and what it does not copy from the body.
_PROHIBITED = frozenset({"_source", "__init__", "__slots__", "__new__", "_make",
                         "__getnewargs__", "_fields", "_field_defaults", "_replace", "_asdict"})
_NOT_COPIED = frozenset({"__module__", "__annotations__", "__name__"})
# what namedtuple's _replace raises for a name that is not a field (TypeError from Python 3.13)
_REPLACE_ERROR = TypeError if sys.version_info >= (3, 13) else ValueError


class Record(tuple):  # type: ignore[type-arg]
    """The methods every record shares (collections.namedtuple makes them per class)."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _field_defaults: ClassVar[dict[str, Any]] = {}

    @classmethod
    def _make(cls, iterable: Any) -> Any:
        result = _tuple_new(cls, iterable)
        if len(result) != len(cls._fields):
            raise TypeError(f"Expected {len(cls._fields)} arguments, got {len(result)}")
        return result

    def _replace(self, /, **kwds: Any) -> Any:
        result = self._make(map(kwds.pop, self._fields, self))
        if kwds:
            raise _REPLACE_ERROR(f"Got unexpected field names: {list(kwds)!r}")
        return result

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}"
                           for name, value in zip(self._fields, self, strict=True))
        return f"{self.__class__.__name__}({fields})"

    __replace__ = _replace  # copy.replace() (Python 3.13 namedtuples have it too)

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self, strict=True))

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)


def _new_function(typename: str, fields: tuple[str, ...], defaults: tuple[Any, ...]) -> Any:
    code = _NEW_CODE.get(len(fields))
    if code is None:
        args = ", ".join(f"_{i}" for i in range(len(fields)))
        comma = "," if len(fields) == 1 else ""
        code = _NEW_CODE[len(fields)] = compile(
            f"lambda _cls, {args}: _tuple_new(_cls, ({args}{comma}))", "<record>",
            "eval").co_consts[0]
    # Only names change: the bytecode reads its arguments by position.
    new = FunctionType(code.replace(co_varnames=("_cls", *fields), co_name="__new__"),
                       _NEW_GLOBALS, "__new__", defaults or None)
    new.__qualname__ = f"{typename}.__new__"
    new.__doc__ = f"Create new instance of {typename}({', '.join(fields)})"
    return new


def _check_names(typename: str, fields: tuple[str, ...]) -> None:
    """collections.namedtuple's checks, with its messages."""
    for name in (typename, *fields):
        if not name.isidentifier():
            raise ValueError(f"Type names and field names must be valid identifiers: {name!r}")
        if iskeyword(name):
            raise ValueError(f"Type names and field names cannot be a keyword: {name!r}")
    for name in fields:
        if name.startswith("_"):
            raise ValueError(f"Field names cannot start with an underscore: {name!r}")


class _RecordMeta(type):
    """Makes ``class X(NamedTuple): ...`` a ``Record`` subclass (whose type is plain ``type``,
    as with typing: subclasses of a record are ordinary classes)."""

    def __new__(cls, typename: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
        if bases != (_NamedTupleBase,):
            raise TypeError("can only inherit from a NamedTuple type")
        annotations: dict[str, Any] = ns.get("__annotations__", {})
        fields = tuple(map(sys.intern, annotations))
        _check_names(typename, fields)
        default_names = []
        for name in fields:
            if name in ns:
                default_names.append(name)
            elif default_names:
                raise TypeError(f"Non-default namedtuple field {name} cannot follow default "
                                f"field{'s' if len(default_names) > 1 else ''} "
                                f"{', '.join(default_names)}")
        defaults = tuple(ns[name] for name in default_names)
        namespace: dict[str, Any] = {
            "__doc__": f"{typename}({', '.join(fields)})",
            "__slots__": (),
            "_fields": fields,
            "_field_defaults": dict(zip(default_names, defaults, strict=True)),
            "__new__": _new_function(typename, fields, defaults),
            "__match_args__": fields,
            "__annotations__": annotations,
        }
        for index, name in enumerate(fields):
            namespace[name] = _tuplegetter(index, f"Alias for field number {index}")
        for key, value in ns.items():  # the body's docstring, methods, properties...
            if key in _PROHIBITED:
                raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
            if key not in _NOT_COPIED and key not in fields:
                namespace[key] = value
        # the module given to type() rather than set after: setting __module__ on a class
        # drops its __firstlineno__ (Python 3.13), which inspect.getsource reads
        namespace["__module__"] = ns["__module__"]
        return type(typename, (Record,), namespace)


# What ``class X(NamedTuple)`` names as its base (typing's ``_NamedTuple``); made without
# _RecordMeta.__new__, which makes records.
_NamedTupleBase = type.__new__(_RecordMeta, "NamedTuple", (), {})


if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:

    def NamedTuple(*_args, **_kwargs):  # typing's name; typing's functional form is not offered
        raise TypeError("use the class syntax: class Name(NamedTuple): ...")

    NamedTuple.__mro_entries__ = lambda _bases: (_NamedTupleBase,)
