"""vnetrx.records.NamedTuple makes the class typing.NamedTuple would make from the same body.

Each module that declares records is executed a second time with ``typing.NamedTuple`` in
place of vnetrx's, and every record class of the two runs is compared: fields, defaults,
docstring, what the body defined, and instances (construction by position and keyword, repr,
equality, hash, _replace, _asdict, _make and the errors of each).
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import pickle
import pkgutil
import sys
import types
import typing
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

import pytest

import vnetrx
from vnetrx.records import NamedTuple, Record

# Executed twice would register their click commands twice on the one `cli` group.
SKIPPED_PACKAGES = ("vnetrx.cli",)
GENERATED = {"__new__", "__doc__", "__slots__", "_fields", "_field_defaults", "__match_args__",
             "__annotations__", "__module__", "_make", "_replace", "_asdict", "__getnewargs__",
             "__repr__", "__orig_bases__", "__replace__"}


def source_file(module_name: str) -> Path:
    """The module's .py file (next to its C extension when setup.py compiled it)."""
    spec = importlib.util.find_spec(module_name)
    assert spec is not None and spec.origin is not None, module_name
    origin = spec.origin
    for suffix in EXTENSION_SUFFIXES:
        if origin.endswith(suffix):
            return Path(origin[: -len(suffix)] + ".py")
    return Path(origin)


def record_modules() -> list[str]:
    return [info.name for info in pkgutil.walk_packages(vnetrx.__path__, "vnetrx.")
            if "from vnetrx.records import NamedTuple" in source_file(info.name).read_text()]


MODULES = record_modules()


def records_of(namespace: dict[str, Any], module: str) -> dict[str, Any]:
    return {name: value for name, value in namespace.items()
            if isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields")
            and value.__module__ == module}


def typing_twin(module_name: str) -> dict[str, Any]:
    """The module's records as typing.NamedTuple makes them from the same source."""
    module = importlib.import_module(module_name)
    source = source_file(module_name).read_text().replace("from vnetrx.records import NamedTuple",
                                               "from typing import NamedTuple")
    twin = types.ModuleType(module_name + "_typing_twin")
    twin.__file__ = module.__file__
    twin.__package__ = module.__package__
    sys.modules[twin.__name__] = twin  # dataclasses look their module up while they are made
    try:
        exec(compile(source, str(source_file(module_name)), "exec"), twin.__dict__)
    finally:
        del sys.modules[twin.__name__]
    return records_of(twin.__dict__, twin.__name__)


def sample_values(record: Any) -> tuple[int, ...]:
    return tuple(range(100, 100 + len(record._fields)))


def outcome(call: Any) -> tuple[str, Any]:
    try:
        return "value", call()
    except Exception as error:  # the same kind and words from both
        return type(error).__name__, str(error)


def test_every_record_module_is_compared() -> None:
    # a guard against the walk finding nothing (then every comparison would pass vacuously)
    assert {"vnetrx.model", "vnetrx.paths.virtio_net_hdr", "vnetrx.replay.state"} <= set(MODULES)


@pytest.mark.parametrize("module_name", [m for m in MODULES if not m.startswith(SKIPPED_PACKAGES)])
def test_records_are_what_typing_would_make(module_name: str) -> None:
    module = importlib.import_module(module_name)
    ours = records_of(vars(module), module_name)
    theirs = typing_twin(module_name)
    assert ours, f"{module_name} imports vnetrx.records but defines no record"
    assert set(ours) == set(theirs)
    compiled = str(module.__file__).endswith(tuple(EXTENSION_SUFFIXES))
    for name, record in ours.items():
        twin = theirs[name]
        # mypyc makes a compiled module's records (vnetrx/compiled.py) with typing's own
        # NamedTupleMeta, and gives them a placeholder docstring
        assert issubclass(record, Record) != compiled
        assert record._fields == twin._fields
        assert record._field_defaults == twin._field_defaults
        assert record.__match_args__ == twin.__match_args__
        assert record.__doc__ == (twin.__doc__ if not compiled else "mypyc filler docstring")
        assert record.__qualname__ == twin.__qualname__
        assert record.__slots__ == twin.__slots__ == ()
        assert set(record.__annotations__) == set(twin.__annotations__)
        body = {k for k in vars(twin) if k not in GENERATED and k not in twin._fields}
        assert {k for k in vars(record) if k not in GENERATED and k not in record._fields} == body
        compare_instances(record, twin)


def compare_instances(record: Any, twin: Any) -> None:
    values = sample_values(record)
    fields: tuple[str, ...] = record._fields
    required = len(fields) - len(record._field_defaults)
    ours, theirs = record(*values), twin(*values)
    assert tuple(ours) == tuple(theirs) == values
    assert hash(ours) == hash(values)
    assert ours == values
    for index, field in enumerate(fields):
        assert getattr(ours, field) == values[index]
    assert record(**dict(zip(fields, values, strict=True))) == values
    assert record(*values[:required]) == twin(*values[:required])
    assert outcome(lambda: repr(ours)) == outcome(lambda: repr(theirs))
    assert ours._asdict() == theirs._asdict()
    assert ours._replace(**{fields[0]: -1}) == theirs._replace(**{fields[0]: -1})
    assert type(ours._replace(**{fields[0]: -1})) is record
    assert type(record._make(values)) is record
    assert pickle.loads(pickle.dumps(ours)) == ours
    assert copy.copy(ours) == ours and copy.deepcopy(ours) == ours
    # the errors, word for word (the class names are the same in both)
    for call_ours, call_theirs in [
        (lambda: record(*values[:required - 1]), lambda: twin(*values[:required - 1])),
        (lambda: record(*values, 0), lambda: twin(*values, 0)),
        (lambda: record(*values, bogus=1), lambda: twin(*values, bogus=1)),
        (lambda: ours._replace(bogus=1), lambda: theirs._replace(bogus=1)),
        (lambda: record._make(values[1:]), lambda: twin._make(values[1:])),
    ]:
        assert outcome(call_ours) == outcome(call_theirs)


def _both(body: str) -> tuple[tuple[str, Any], tuple[str, Any]]:
    """Defining a class from ``body`` with each NamedTuple: what happens."""
    def define(base: Any) -> tuple[str, Any]:
        def make() -> Any:
            namespace: dict[str, Any] = {"NamedTuple": base, "__name__": "example"}
            exec(f"class Example(NamedTuple):\n{body}", namespace)
            return namespace["Example"]._fields
        return outcome(make)
    return define(NamedTuple), define(typing.NamedTuple)


@pytest.mark.parametrize("body", [
    "    a: int\n    b: int = 1\n",
    "    a: int = 1\n    b: int\n",  # a field without a default after one with
    "    a: int = 1\n    b: int = 2\n    c: int\n",
    "    _a: int\n",  # no underscore names
    "    a: int\n    def _replace(self): pass\n",  # a generated method may not be redefined
    "    a: int\n    _fields = ()\n",
    "    pass\n",  # no fields
])
def test_definitions_succeed_and_fail_alike(body: str) -> None:
    ours, theirs = _both(body)
    assert ours == theirs


def test_the_body_can_override_what_namedtuple_generates() -> None:
    class Shown(NamedTuple):
        a: int

        def __repr__(self) -> str:
            return f"<{self.a}>"

    assert repr(Shown(1)) == "<1>"


def test_a_record_has_no_instance_dict() -> None:
    class Point(NamedTuple):
        x: int

    with pytest.raises(AttributeError):
        Point(1).y = 2  # type: ignore[attr-defined]
    assert type(Point) is type  # subclasses of a record are ordinary classes


def test_only_the_class_syntax_is_offered() -> None:
    with pytest.raises(TypeError, match="class syntax"):
        NamedTuple("Point", [("x", int)])
