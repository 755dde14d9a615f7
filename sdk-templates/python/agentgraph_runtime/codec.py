"""JSON <-> the generated dataclasses. Generated models and inputs are plain dataclasses with snake_case field
names; a field whose name differs from its GraphQL (wire) name carries it as ``metadata={"graphql": name}``
(``room_id`` <- ``roomId``, ``from_`` <- ``from``), so both directions are mapped here; ``decode(cls, json)``
builds them from a response by their type hints, ``encode(value)`` turns inputs back into JSON (None fields of
inputs are left out, so an optional input field is absent rather than null)."""
from __future__ import annotations

import dataclasses
import enum
import sys
import typing
from typing import Any, Dict, Type, TypeVar

T = TypeVar("T")
_HINTS: Dict[type, Dict[str, Any]] = {}


def _graphql_name(f: dataclasses.Field) -> str:
    return f.metadata.get("graphql", f.name)


def _hints(cls: type) -> Dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        module = sys.modules[cls.__module__]
        hints = typing.get_type_hints(cls, vars(module))
        _HINTS[cls] = hints
    return hints


def decode(tp: Any, value: Any) -> Any:
    """``value`` (parsed JSON) as ``tp``: dataclasses, Optional, List, Enum, Any and scalars."""
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return decode(args[0], value) if len(args) == 1 else value
    if origin in (list, typing.List):
        (item,) = typing.get_args(tp) or (Any,)
        return [decode(item, v) for v in value]
    if origin is typing.Literal:
        return value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            name = _graphql_name(f)
            kwargs[f.name] = decode(hints[f.name], value.get(name)) if name in value else None
        return tp(**kwargs)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            return value  # a value added to the schema after this SDK was generated
    if tp is float and isinstance(value, int):
        return float(value)
    return value


def encode(value: Any) -> Any:
    """A dataclass input (or list, enum, scalar) as JSON; None fields of dataclasses are omitted."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if item is not None:
                out[_graphql_name(f)] = encode(item)
        return out
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


def decode_as(cls: Type[T], value: Any) -> T:
    return typing.cast(T, decode(cls, value))
